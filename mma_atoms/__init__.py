"""Tensor-core MMA and copy atoms as data, with CuTe's names and layouts.

Each entry is a frozen dataclass: :class:`MMAOp` (``mma.sync``, ``wgmma``,
``UniversalFMA``) or :class:`CopyOp` (UniversalCopy, ``cp.async``, ``ldmatrix``,
``stmatrix``).  Layouts are :class:`layoutalg.Layout` objects with CuTe's meaning:
MMA layouts map (thread, value) to a column-major index into the MxK / NxK / MxN
tile; copy layouts map (thread, value) to a bit.

>>> import mma_atoms
>>> op = mma_atoms.get("SM80_16x8x16_F32F16F16F32_TN")
>>> str(op.layout_a)                          # (T32,V8) -> (M16,K16)
'((4,8),(2,2,2)):((32,1),(16,8,128))'
>>> op.ptx
'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32'
>>> str(op.a_regs), op.min_sm
('4 x u32', 80)
>>> len(mma_atoms.names("ldsm"))
6

``mma_atoms.emulate`` runs an entry on the host (numpy) from per-thread fragments,
with the instruction's semantics taken from the PTX ISA fragment tables in
``mma_atoms.ptx_fragments``.
"""

from .ops import COPY_KINDS, MMA_KINDS, CopyOp, MMAOp, Regs
from .registry import GROUPS, KINDS, UnknownAtomError, all_ops, get, names
from .mma_universal import universal_fma

__all__ = [
    "MMAOp", "CopyOp", "Regs", "UnknownAtomError", "get", "names", "all_ops",
    "universal_fma", "KINDS", "GROUPS", "MMA_KINDS", "COPY_KINDS",
]
