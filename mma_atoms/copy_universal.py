"""CuTe's ``UniversalCopy<uint{8,16,32,64,128}_t>``: one thread copies one value.

Named ``UniversalCopy_<bits>`` here.  The copy is a plain C++ assignment: the
compiler emits a load and a store of that width in whatever state spaces the
pointers are in.
"""

from layoutalg import Layout

from .ops import CopyOp, Regs

__all__ = ["ENTRIES", "one_thread_bits"]

ONE_THREAD = Layout(1, 0)                                                # T1 -> thread
UNIVERSAL_BITS = (8, 16, 32, 64, 128)


def one_thread_bits(bits):
    """``(1,bits):(0,1)``: one thread's value is ``bits`` consecutive bits."""
    return Layout((1, bits), (0, 1))                                     # (T1,V bits) -> bit


def _ptx(bits):
    if bits == 128:
        return "ld.v4.b32 + st.v4.b32"
    return f"ld.b{bits} + st.b{bits}"


ENTRIES = tuple(
    CopyOp(name=f"UniversalCopy_{bits}", kind="universal", thr_id=ONE_THREAD,
           src_layout=one_thread_bits(bits), dst_layout=one_thread_bits(bits),
           ref_layout=one_thread_bits(bits),
           src_regs=Regs(1, f"u{bits}"), dst_regs=Regs(1, f"u{bits}"), min_sm=0,
           ptx=_ptx(bits), ptx_operands="dst <- src", value_bits=bits,
           cute_name=f"UniversalCopy<uint{bits}_t>",
           notes="plain C++ assignment; the compiler picks the load/store and their state spaces")
    for bits in UNIVERSAL_BITS)
