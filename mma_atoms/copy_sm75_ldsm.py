"""``ldmatrix`` (shared memory -> registers, 8x8 matrices of 16-bit elements).

CuTe's ``SM75_U32x{1,2,4}_LDSM_N`` and ``SM75_U16x{2,4,8}_LDSM_T``.  The bit
numbering of the layouts is the traits' own: matrix ``j`` occupies bits
``1024*j .. 1024*j+1023``, its row ``r`` bits ``128*r ..`` (16-bit element ``c`` at
``+16*c``).  Each of the first ``8*num`` lanes gives the shared-memory address of
one 16-byte row; the other lanes' addresses are ignored (their source layout
stride is 0: a broadcast).
"""

from layoutalg import Layout

from .ops import CopyOp, Regs

__all__ = ["ENTRIES", "LDSM_SRC", "LDSM_DST_N", "LDSM_DST_T"]

WARP = Layout(32, 1)                                                     # T32 -> lane

# Source: lane t gives row t (t < 8*num) as 128 bits.
LDSM_SRC = {
    1: Layout(((8, 4), 128), ((128, 0), 1)),                             # (T32,V128) -> bit (8 rows)
    2: Layout(((16, 2), 128), ((128, 0), 1)),                            # (T32,V128) -> bit (16 rows)
    4: Layout((32, 128), (128, 1)),                                      # (T32,V128) -> bit (32 rows)
}
# Destination, no transpose: register j of lane t = elements 2*(t%4), +1 of row t/4 of matrix j.
LDSM_DST_N = {
    1: Layout((32, 32), (32, 1)),                                        # (T32,V32) -> bit
    2: Layout((32, (32, 2)), (32, (1, 1024))),                           # (T32,V64) -> bit
    4: Layout((32, (32, 4)), (32, (1, 1024))),                           # (T32,V128) -> bit
}
# Destination, transposed: element e of register j of lane t = row 2*(t%4)+e, column t/4.
LDSM_DST_T = {
    1: Layout(((4, 8), (16, 2)), ((256, 16), (1, 128))),                 # (T32,V32) -> bit
    2: Layout(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024))),        # (T32,V64) -> bit
    4: Layout(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024))),        # (T32,V128) -> bit
}

_NOTE = ("lanes 0..8*num-1 each address one 16-byte row (16-byte aligned); "
         "CuTe writes the qualifiers as ldmatrix.sync.aligned.xN{.trans}.m8n8.shared.b16")


def _op(num, trans):
    name = f"SM75_U16x{2 * num}_LDSM_T" if trans else f"SM75_U32x{num}_LDSM_N"
    dst = (LDSM_DST_T if trans else LDSM_DST_N)[num]
    regs = ", ".join(f"d{i}" for i in range(num))
    return CopyOp(
        name=name, kind="ldsm", thr_id=WARP, src_layout=LDSM_SRC[num], dst_layout=dst,
        ref_layout=dst, src_regs=Regs(1, "u128"), dst_regs=Regs(num, "u32"), min_sm=75,
        ptx=f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16",
        ptx_operands=f"{{{regs}}}, [addr]", ptx_target="sm_75", elem_bits=16,
        num_matrices=num, transpose=trans, src_space="smem", dst_space="rmem", notes=_NOTE)


ENTRIES = tuple(_op(num, trans) for trans in (False, True) for num in (1, 2, 4))
