"""Ampere ``cp.async`` (global -> shared, asynchronous), CuTe's ``SM80_CP_ASYNC_*``.

``SM80_CP_ASYNC_CACHEALWAYS_<bits>`` is CuTe's ``SM80_CP_ASYNC_CACHEALWAYS<uint<bits>_t>``
(``cp.async.ca``, 4, 8 or 16 bytes); ``SM80_CP_ASYNC_CACHEGLOBAL_128`` is
``SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>`` (``cp.async.cg``, which only moves 16 bytes).
Source and destination must be aligned to the copy size.
"""

from .copy_universal import ONE_THREAD, one_thread_bits
from .ops import CopyOp, Regs

__all__ = ["ENTRIES"]

_NOTE = ("asynchronous: complete it with cp.async.commit_group and cp.async.wait_group; "
         "src and dst aligned to the copy size")


def _op(cache, bits):
    name = {"ca": "CACHEALWAYS", "cg": "CACHEGLOBAL"}[cache]
    return CopyOp(
        name=f"SM80_CP_ASYNC_{name}_{bits}", kind="cp_async", thr_id=ONE_THREAD,
        src_layout=one_thread_bits(bits), dst_layout=one_thread_bits(bits),
        ref_layout=one_thread_bits(bits),
        src_regs=Regs(1, f"u{bits}"), dst_regs=Regs(1, f"u{bits}"), min_sm=80,
        ptx=f"cp.async.{cache}.shared.global.L2::128B",
        ptx_operands=f"[dst], [src], {bits // 8}", ptx_target="sm_80",
        value_bits=bits, src_space="gmem", dst_space="smem",
        cute_name=f"SM80_CP_ASYNC_{name}<uint{bits}_t>", notes=_NOTE)


ENTRIES = (_op("ca", 32), _op("ca", 64), _op("ca", 128), _op("cg", 128))
