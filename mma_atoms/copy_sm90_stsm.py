"""``stmatrix`` (registers -> shared memory, 8x8 matrices of 16-bit elements).

CuTe's ``SM90_U32x{1,2,4}_STSM_N`` and ``SM90_U16x{2,4,8}_STSM_T``: the inverse of
``ldmatrix``, so the source layout is LDSM's destination layout and the destination
layout is LDSM's source layout (lanes ``8*num..31`` give no address: broadcast).
"""

from layoutalg import Layout

from .copy_sm75_ldsm import LDSM_DST_N, LDSM_DST_T, LDSM_SRC
from .ops import CopyOp, Regs

__all__ = ["ENTRIES"]

WARP = Layout(32, 1)                                                     # T32 -> lane

_NOTE = ("lanes 0..8*num-1 each address one 16-byte row (16-byte aligned); "
         "CuTe writes the qualifiers as stmatrix.sync.aligned.xN{.trans}.m8n8.shared.b16")


def _op(num, trans):
    name = f"SM90_U16x{2 * num}_STSM_T" if trans else f"SM90_U32x{num}_STSM_N"
    src = (LDSM_DST_T if trans else LDSM_DST_N)[num]                     # (T32,V) -> bit
    dst = LDSM_SRC[num]                                                  # (T32,V128) -> bit
    regs = ", ".join(f"r{i}" for i in range(num))
    return CopyOp(
        name=name, kind="stsm", thr_id=WARP, src_layout=src, dst_layout=dst, ref_layout=src,
        src_regs=Regs(num, "u32"), dst_regs=Regs(1, "u128"), min_sm=90,
        ptx=f"stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16",
        ptx_operands=f"[addr], {{{regs}}}", ptx_target="sm_90", elem_bits=16,
        num_matrices=num, transpose=trans, src_space="rmem", dst_space="smem", notes=_NOTE)


ENTRIES = tuple(_op(num, trans) for trans in (False, True) for num in (1, 2, 4))
