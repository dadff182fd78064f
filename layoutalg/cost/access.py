"""Every address a tiled copy issues over a tensor, instruction by instruction.

The cost models (:mod:`layoutalg.cost.banks`, :mod:`layoutalg.cost.sectors`) read the
byte addresses that each thread gives each instruction of ``copy(tiled_copy, src, dst)``
when the copy is repeated over a whole tensor. They come from the copy's own
partitioning: ``tidfrg_S``/``tidfrg_D`` of the tensor's layout, the ``(Thr, FrgV, Rest)``
layout that ``partition_S``/``partition_D`` slice at a thread, evaluated for every thread
at once. Thread ``t``'s values, in the order of its partition ``(CPY, CPY_M, CPY_N, ...)``,
are grouped by the atom's values per call: group ``g`` is atom call ``g`` of every
thread, as :func:`codegen.cute.atom_plan.copy_plan` issues them.

**What the compiler makes of them** (``vectorize=True``): the calls of a universal copy
are plain loads and stores, and the compiler's load/store vectorizer (LLVM's, which NVVM
runs for numba and nvcc alike) merges a thread's accesses to adjacent addresses into one
vector access of up to 16 bytes (``ld.shared.v4.b32``, ...) where it can prove the vector
aligned: in shared memory, whose allocation it places (``analyze_shared`` merges by
default); not in a global array, which it knows only to be element-aligned
(``analyze_global`` does not, by default).
The rule, as :func:`vectorize_calls` applies it: two calls can merge when the distance
between their addresses is the same in every thread (one base, constant offsets); the calls
of such a family, sorted by address, split into runs of adjacent ones, and each run from its
lowest address into the longest power-of-two groups (at most 16 bytes) whose first address
is a multiple of the group's size in every thread, else single calls; a load run of an odd
number of calls becomes one vector of the next power of two, where that is aligned (it
reads a few bytes more). ``ldmatrix``,
``stmatrix`` and ``cp.async`` are instructions of their own and are never merged. The
project's GPU check (``benchmarks/bank_conflicts.py``) compares the merged counts with the
instructions in each kernel's PTX.

>>> from layoutalg import CopyAtom, Layout, make_tiled_copy
>>> cp = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 4)))
>>> acc = copy_accesses("demo", cp, Layout((32, 4), (4, 1)), "D")  # (M32,N4) -> offset, as written
>>> acc.instructions, acc.width, acc.addr[:3, 0].tolist()           # 4 scalar stores, 16 bytes apart
(4, 4, [0, 16, 32])
>>> v = copy_accesses("demo", cp, Layout((32, 4), (4, 1)), "D", vectorize=True)   # the compiler: one st.v4
>>> v.instructions, v.widths.tolist(), v.addr[:3, 0].tolist()
(1, [16], [0, 16, 32])
>>> c = copy_accesses("demo", cp, Layout((32, 4), (1, 32)), "D", vectorize=True)  # values 128 bytes apart
>>> c.instructions, c.widths.tolist()
(4, [4, 4, 4, 4])
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

__all__ = ["CopyAccesses", "copy_accesses", "vectorize_calls", "WARP", "MAX_VECTOR_BYTES"]

#: Threads of a warp.
WARP = 32
#: The widest access one thread makes in one instruction (``.v4.b32``, ``.v2.b64``).
MAX_VECTOR_BYTES = 16


@dataclass(frozen=True, eq=False)
class CopyAccesses:
    """The byte addresses of one side of a tiled copy repeated over a tensor.

    ``addr[t, g]`` is the byte address thread ``t`` gives instruction ``g`` (-1: the thread
    gives none: a lane past the rows of an ``ldmatrix``/``stmatrix``, or a thread past the
    copy's last one in its warp; rows are padded to whole warps). Instruction ``g`` moves
    ``widths[g]`` contiguous bytes a thread from that address: ``width``, the bytes of one
    atom call (one 16-byte row for ``ldmatrix``/``stmatrix``), or a multiple of it where the
    compiler merges adjacent calls (``vectorized``). ``rows``: lanes of a warp that give a
    row address (``8 * matrices``) for ``ldmatrix``/``stmatrix``, else None.
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
    widths: np.ndarray = None     # (instructions,) bytes a thread of each instruction; None: all `width`
    calls: int = None             # atom calls a thread (instructions before merging); None: `instructions`

    def __post_init__(self):
        if self.widths is None:
            object.__setattr__(self, "widths", np.full(self.addr.shape[1], self.width, dtype=np.int64))
        if self.calls is None:
            object.__setattr__(self, "calls", self.addr.shape[1])

    @property
    def vectorized(self):
        """True when the compiler merges some of a thread's calls into wider accesses."""
        return self.calls != self.instructions

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


def copy_accesses(op, copy, tensor, side, base=0, space=None, vectorize=False):
    """The :class:`CopyAccesses` of side ``side`` ("S" or "D") of ``copy`` over ``tensor``.

    ``tensor``: a layout ``(M,N,...) -> element offset`` (maybe swizzled) or a tensor (its
    layout and integer offset); ``base``: the byte address of element offset 0. ``space``:
    "smem" or "gmem", the memory the caller models; the side must be one the atom reads or
    writes there. ``vectorize``: merge a universal copy's adjacent calls as the compiler does
    (:func:`vectorize_calls`); False: one instruction per atom call, as written. ``op``
    names the caller in errors.

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
    widths = None
    if vectorize and kind == "universal":
        addr, widths = vectorize_calls(addr, width, load=side == "S")
    return CopyAccesses(copy, layout, side, kind, bits, width, addr, nthr, rows, base, widths, calls)


def vectorize_calls(addr, width, load=False):
    """The instructions the compiler makes of calls of ``width`` bytes at ``addr``
    (``(lanes, calls)`` byte addresses, -1 where a lane gives none): ``(addr', widths')``,
    one column and one width per instruction, in the order of each one's first call.
    ``load``: the calls read (loads may read a few bytes more than asked, stores may not).

    Calls ``g`` and ``h`` are one family when ``addr[:, h] - addr[:, g]`` is the same in every
    lane that gives an address (LLVM sees one base and two constant offsets). A family's
    calls, sorted by address, split into runs of adjacent ones (each starts where the last
    ends), and each run, from its lowest address, into vectors of a power of two calls of at
    most :data:`MAX_VECTOR_BYTES`, each aligned to its size in every lane (the compiler must
    prove it): the longest such vector at each step, else a single call. A load run of an
    odd number of calls (more than one) becomes instead one vector of the next power of two
    calls, reading past its end, where that vector fits and is aligned. The rules are those
    NVVM (CUDA 13) follows for shared memory, found by compiling runs of 2 to 16 adjacent
    8-, 16- and 32-bit calls at several alignments (``benchmarks/bank_conflicts.py`` checks
    them in every kernel's PTX):

    >>> a = np.array([[0, 4, 8, 12, 64], [16, 20, 24, 28, 80]])     # two lanes, five 4-byte calls
    >>> v, w = vectorize_calls(a, 4)
    >>> v.tolist(), w.tolist()                                      # a v4 and the call 64 bytes on
    ([[0, 64], [16, 80]], [16, 4])
    >>> three = np.array([[0, 4, 8], [32, 36, 40]])                  # 3 words from 32-byte boundaries
    >>> vectorize_calls(three, 4)[1].tolist(), vectorize_calls(three, 4, load=True)[1].tolist()
    ([8, 4], [16])
    >>> six = np.arange(6)[None, :] + np.array([[0], [16]])          # 6 bytes: 4 + 2, loads and stores
    >>> vectorize_calls(six, 1, load=True)[1].tolist()
    [4, 2]
    """
    nl, calls = addr.shape
    if calls < 2 or width >= MAX_VECTOR_BYTES:
        return addr, np.full(calls, width, dtype=np.int64)
    lanes = np.nonzero(np.all(addr >= 0, axis=1))[0]
    if lanes.size == 0 or np.any(addr[np.setdiff1d(np.arange(nl), lanes)] >= 0):
        return addr, np.full(calls, width, dtype=np.int64)      # lanes that skip some calls: not merged
    a = addr[lanes]
    rel = a - a[:1]                                             # each call's addresses, relative to lane 0's
    kmax = MAX_VECTOR_BYTES // width
    families = {}
    for g in range(calls):
        families.setdefault(rel[:, g].tobytes(), []).append(g)
    out = []                                                    # (first call, lowest-address call, bytes)
    for fam in families.values():
        fam = sorted(fam, key=lambda g: (int(a[0, g]), g))
        runs, cur = [], [fam[0]]
        for g in fam[1:]:
            if a[0, g] == a[0, cur[-1]] + width:
                cur.append(g)
            else:
                runs.append(cur)
                cur = [g]
        runs.append(cur)
        for run in runs:
            i = 0
            while i < len(run):
                rest = len(run) - i
                start = a[:, run[i]]
                pad = 1 << (rest - 1).bit_length()              # the next power of two
                if load and rest > 1 and rest % 2 and pad <= kmax and np.all(start % (pad * width) == 0):
                    out.append((min(run[i:]), run[i], pad * width))
                    break
                k = 1 << (min(rest, kmax).bit_length() - 1)     # the largest power of two that fits
                while k > 1 and np.any(start % (k * width)):
                    k //= 2
                out.append((min(run[i:i + k]), run[i], k * width))
                i += k
    out.sort()
    cols = [g for _, g, _ in out]
    return addr[:, cols], np.array([nb for _, _, nb in out], dtype=np.int64)


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
