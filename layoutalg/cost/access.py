"""Every address a tiled copy issues over a tensor, instruction by instruction.

The cost models (:mod:`layoutalg.cost.banks`, :mod:`layoutalg.cost.sectors`) read the
byte addresses that each thread gives each instruction of ``copy(tiled_copy, src, dst)``
when the copy is repeated over a whole tensor. They come from the copy's own
partitioning: ``tidfrg_S``/``tidfrg_D`` of the tensor's layout, the ``(Thr, FrgV, Rest)``
layout that ``partition_S``/``partition_D`` slice at a thread, evaluated for every thread
at once. Thread ``t``'s values, in the order of its partition ``(CPY, CPY_M, CPY_N, ...)``,
are grouped by the atom's values per call: group ``g`` is instruction ``g`` of every
thread, as :func:`codegen.cute.atom_plan.copy_plan` issues them.

>>> from layoutalg import CopyAtom, Layout, make_tiled_copy
>>> cp = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 4)))
>>> acc = copy_accesses("demo", cp, Layout((32, 4), (4, 1)), "D")   # (M32,N4) -> offset, row-major
>>> acc.instructions, acc.width, acc.addr[:3, 0].tolist()           # 4 scalar stores, 16 bytes apart
(4, 4, [0, 16, 32])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import LayoutError, LayoutTypeError
from ..inttuple import is_int
from ..layout import Layout, size
from ..numpy_eval import eval_layout
from ..swizzle import ComposedLayout
from ..tensor import ArrayEngine, PointerEngine, Tensor
from ..tiled_copy import TiledCopy

__all__ = ["CopyAccesses", "copy_accesses", "WARP"]

#: Threads of a warp.
WARP = 32


@dataclass(frozen=True, eq=False)
class CopyAccesses:
    """The byte addresses of one side of a tiled copy repeated over a tensor.

    ``addr[t, g]`` is the byte address thread ``t`` gives instruction ``g`` (-1: the thread
    gives none: a lane past the rows of an ``ldmatrix``/``stmatrix``, or a thread past the
    copy's last one in its warp; rows are padded to whole warps). Each address starts
    ``width`` contiguous bytes (one 16-byte row for ``ldmatrix``/``stmatrix``).
    ``rows``: lanes of a warp that give a row address (``8 * matrices``) for
    ``ldmatrix``/``stmatrix``, else None.
    """

    copy: TiledCopy
    layout: object            # the tensor's layout, (M,N,...) -> element offset
    side: str                 # "S" or "D"
    kind: str                 # the atom's kind: universal, cp_async, ldsm, stsm
    bits: int                 # element bits
    width: int                # bytes per address
    addr: np.ndarray          # (warps*32, instructions) int64
    threads: int              # threads of the copy
    rows: int | None
    base: int                 # byte address of element offset 0

    @property
    def instructions(self):
        """Instructions each thread (each warp) issues."""
        return self.addr.shape[1]

    @property
    def warps(self):
        return self.addr.shape[0] // WARP

    @property
    def space(self):
        """Where this side lives by the atom's table: "gmem", "smem", "rmem" or "any"."""
        op = self.copy.atom.op
        return op.src_space if self.side == "S" else op.dst_space

    def describe(self):
        """``"SM75_U32x4_LDSM_N of f16 reading Sw<3,3,3> o 0 o (128,64):(64,1)"``."""
        atom = self.copy.atom
        verb = "reading" if self.side == "S" else "writing"
        return f"{atom.name} of {atom.dtype} {verb} {self.layout}"


def _tensor_layout(op, tensor):
    """(layout, element offset of the tensor's origin) of a layout or a tensor."""
    if isinstance(tensor, Tensor):
        eng = tensor.engine
        off = getattr(eng, "offset", 0) if isinstance(eng, (ArrayEngine, PointerEngine)) else 0
        if not is_int(off):
            raise LayoutError(f"{op}: the tensor's offset {off!r} is symbolic; give its layout and a byte base")
        return tensor.layout, int(off)
    if isinstance(tensor, (Layout, ComposedLayout)):
        return tensor, 0
    raise LayoutTypeError(f"{op}: expected a Layout, a ComposedLayout or a Tensor, got {tensor!r}")


def copy_accesses(op, copy, tensor, side, base=0, space=None):
    """The :class:`CopyAccesses` of side ``side`` ("S" or "D") of ``copy`` over ``tensor``.

    ``tensor``: a layout ``(M,N,...) -> element offset`` (maybe swizzled) or a tensor (its
    layout and integer offset); ``base``: the byte address of element offset 0. ``space``:
    "smem" or "gmem", the memory the caller models; the side must be one the atom reads or
    writes there. ``op`` names the caller in errors.

    Raises :class:`LayoutError` naming the values when the side is the atom's registers,
    when the copy does not tile the tensor, or when a vector the atom moves is not
    contiguous and aligned in the tensor (as ``partition_S``/``partition_D`` do).
    """
    if not isinstance(copy, TiledCopy):
        raise LayoutTypeError(f"{op}: expected a TiledCopy (make_tiled_copy, make_tiled_copy_A/B/C), got {copy!r}")
    if side not in ("S", "D"):
        raise LayoutError(f"{op}: side must be 'S' (the copy's source) or 'D' (its destination), got {side!r}")
    if isinstance(base, bool) or not is_int(base) or base < 0:
        raise LayoutError(f"{op}: base must be a non-negative byte address, got {base!r}")
    layout, origin = _tensor_layout(op, tensor)
    atom = copy.atom
    kind = atom.op.kind
    where = atom.op.src_space if side == "S" else atom.op.dst_space
    which = "source" if side == "S" else "destination"
    if space is not None and where not in (space, "any"):
        other = "D" if side == "S" else "S"
        raise LayoutError(f"{op}: the {which} (side {side!r}) of {atom.name} is {_SPACES[where]}, not "
                          f"{_SPACES[space]}; side {other!r} is {_SPACES[_other_space(atom, other)]}")
    bits = atom.value_bits
    if bits % 8:
        raise LayoutError(f"{op}: {atom.name} of {atom.dtype} moves {bits}-bit elements; addresses need whole bytes")
    ebytes = bits // 8
    try:
        part = copy.tidfrg_S(layout) if side == "S" else copy.tidfrg_D(layout)   # (Thr,FrgV,Rest) -> offset
    except LayoutError as e:
        raise LayoutError(f"{op}: {atom.name} tiled over {copy.tiler_mn} cannot partition {layout}: {e}") from None
    nthr, nv, nrest = size(part[0]), size(part[1]), size(part[2])
    offs = eval_layout(part, np.arange(nthr * nv * nrest, dtype=np.int64), op)
    vals = offs.reshape(nrest, nv, nthr).transpose(2, 0, 1).reshape(nthr, nv * nrest) + origin   # [t, i]
    per = size(atom.src_layout[1]) if side == "S" else size(atom.dst_layout[1])   # values a call
    if (nv * nrest) % per:
        raise LayoutError(f"{op}: each thread has {nv * nrest} values of {layout}, not a multiple of the "
                          f"{per} one {atom.name} moves")
    calls = nv * nrest // per
    groups = vals.reshape(nthr, calls, per)                                      # [t, g, k]
    rows = None
    if kind in ("ldsm", "stsm"):
        rows = 8 * atom.op.num_matrices
        lane = np.arange(nthr) % WARP
        active = lane < rows
        width = 16
    else:
        active = np.ones(nthr, dtype=bool)
        width = per * ebytes
    _check_vectors(op, copy, layout, groups, active, which)
    if (base + origin * ebytes) % width and width > 1:
        raise LayoutError(f"{op}: {atom.name} moves {width}-byte vectors, but the tensor starts at byte "
                          f"{base + origin * ebytes}, not a multiple of {width}")
    warps = -(-nthr // WARP)
    addr = np.full((warps * WARP, calls), -1, dtype=np.int64)
    first = groups[:, :, 0] * ebytes + base
    addr[:nthr] = np.where(active[:, None], first, -1)
    return CopyAccesses(copy, layout, side, kind, bits, width, addr, nthr, rows, base)


_SPACES = {"gmem": "global memory", "smem": "shared memory", "rmem": "registers", "any": "any memory"}


def _other_space(atom, side):
    return atom.op.src_space if side == "S" else atom.op.dst_space


def _check_vectors(op, copy, layout, groups, active, which):
    """Each call's values must be one contiguous, aligned vector (an ldmatrix row), as the
    partitions require (``layoutalg.tiled_copy._check_vectors``)."""
    per = groups.shape[2]
    if per == 1:
        return
    g = groups[active]
    bad = np.argwhere(np.any(g != g[:, :, :1] + np.arange(per), axis=2))
    atom = copy.atom
    what = f"{atom.name} moves {per} {atom.dtype} values ({per * atom.value_bits} bits) as one vector"
    threads = np.nonzero(active)[0]
    if bad.size:
        t, c = int(threads[bad[0][0]]), int(bad[0][1])
        raise LayoutError(f"{op}: {what}, but the {which} {layout} holds thread {t}'s values of instruction {c} at "
                          f"offsets {g[bad[0][0], c].tolist()}: not contiguous")
    mis = np.argwhere(g[:, :, 0] % per)
    if mis.size:
        t, c = int(threads[mis[0][0]]), int(mis[0][1])
        raise LayoutError(f"{op}: {what}, but thread {t}'s vector of instruction {c} starts at element offset "
                          f"{int(g[mis[0][0], c, 0])} of the {which} {layout}, not a multiple of {per} (misaligned)")
