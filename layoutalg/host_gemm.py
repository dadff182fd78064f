"""A host reference executor: one CTA tile of a GEMM, thread by thread, from the partitions.

``run_cta`` computes one ``BM x BN`` tile of ``D = alpha * A @ B.T + beta * C``
(``A`` is ``(M,K)``, ``B`` is ``(N,K)``, ``C`` is ``(M,N)``: CuTe's convention) the
way a CuTe kernel does, with numpy arrays standing in for global memory, shared
memory and each thread's registers.  Every index comes from a partition:

1. gmem -> smem: per thread, ``partition_S`` of the global tile and ``partition_D``
   of the shared-memory tensor of a :class:`~layoutalg.TiledCopy` (out-of-bounds
   elements, found with ``elem_less`` on an identity tensor partitioned the same way,
   are zero-filled as ``cp.async`` with ``src-size 0`` does);
2. smem -> registers: ``make_tiled_copy_A/B(atom, mma)``, ``partition_S`` of shared
   memory and ``retile_D`` of the MMA fragments; each copy instruction is executed
   from the atom's tables (the source values of the atom's threads are placed at
   ``src_layout(t, v)``, each thread's destination value ``v`` is read at
   ``dst_layout(t, v)``), so ``ldmatrix`` is run as the table describes it;
3. the MMA atom per warp: each atom's ``A``/``B``/``C`` tiles are gathered from its
   threads' fragments through ``layout_a/b/c``, multiplied, and ``D`` is scattered back;
4. write-back: ``partition_C`` of the global C tile, predicated like step 1.

>>> import numpy as np
>>> from layoutalg import CopyAtom, Layout, make_tiled_copy, make_tiled_mma
>>> mma = make_tiled_mma("SM80_16x8x8_F32TF32TF32F32_TN", (2, 2, 1), (32, 32, 8))
>>> g2s = make_tiled_copy(CopyAtom("UniversalCopy_32", "tf32"), Layout((32, 4), (4, 1)))
>>> cfg = CtaGemm(mma, (32, 32, 8), g2s, g2s, Layout((32, 8), (8, 1)), Layout((32, 8), (8, 1)))
>>> rng = np.random.default_rng(0)
>>> A = rng.integers(-2, 3, (32, 16)).astype(np.float32)
>>> B = rng.integers(-2, 3, (32, 16)).astype(np.float32)
>>> C = run_cta(cfg, A, B, np.zeros((32, 32), np.float32))
>>> bool(np.array_equal(C, A @ B.T))
True

Lower-level pieces, also used by the tests of generated kernels: :func:`offsets`,
:func:`coords`, :func:`gather`, :func:`scatter`, :func:`run_copy`, :func:`run_mma`.
"""

from dataclasses import dataclass

import numpy as np

from .atom import CopyAtom
from .basis import ScaledBasis, basis_value
from .errors import LayoutError, LayoutTypeError
from .inttuple import flat_tuple, is_int
from .layout import Layout, rank, size
from .numpy_eval import eval_layout
from .swizzle import ComposedLayout, Swizzle
from .tensor import (
    ArrayEngine, CoordEngine, Tensor, local_tile, make_identity_tensor, make_tensor,
)
from .tiled_copy import TiledCopy, make_tiled_copy_A, make_tiled_copy_B
from .tiled_mma import TiledMMA

__all__ = [
    "CtaGemm", "run_cta", "offsets", "coords", "gather", "scatter", "run_copy", "copy_elements",
    "run_mma",
]


# ---- evaluating layouts with numpy -----------------------------------------

def _eval_layout(layout, idx):
    """``layout(i)`` for an int64 array of 1-D indices (see :func:`layoutalg.numpy_eval.eval_layout`)."""
    return eval_layout(layout, idx, "offsets")


def offsets(t):
    """The memory offsets of tensor ``t``'s elements, in its 1-D (colexicographic) order.

    For a tensor over a numpy engine these index ``t.engine.array``.

    >>> from layoutalg import make_tensor
    >>> offsets(make_tensor(np.zeros((4, 8)))[1, None]).tolist()
    [8, 9, 10, 11, 12, 13, 14, 15]
    """
    layout = t.layout if isinstance(t, Tensor) else t
    out = _eval_layout(layout, np.arange(size(layout), dtype=np.int64))
    if isinstance(t, Tensor):
        base = getattr(t.engine, "offset", 0)
        if not is_int(base):
            raise LayoutError(f"offsets: symbolic engine offset {base!r}")
        out = out + int(base)
    return out


def coords(t):
    """The coordinates an identity tensor's elements hold: an int array ``(size(t), rank)``.

    >>> from layoutalg import make_identity_tensor
    >>> coords(make_identity_tensor((3, 4))[None, 2]).tolist()
    [[0, 2], [1, 2], [2, 2]]
    """
    if not isinstance(t, Tensor) or not isinstance(t.engine, CoordEngine):
        raise LayoutTypeError(f"coords: expected an identity (coordinate) tensor, got {t!r}")
    r = t.engine.rank or 1
    origin = basis_value(t.engine.origin, r)
    origin = origin if isinstance(origin, tuple) else (origin,)
    n = size(t.layout)
    out = np.zeros((n, r), dtype=np.int64)
    out += np.array([int(x) for x in origin], dtype=np.int64)
    idx = np.arange(n, dtype=np.int64)
    shapes, strides = flat_tuple(t.layout.shape), flat_tuple(t.layout.stride)
    div = 1
    for s, d in zip(shapes, strides):
        c = (idx // div) % s
        div *= s
        if isinstance(d, ScaledBasis):
            if len(d.mode) != 1 or not is_int(d.value):
                raise LayoutError(f"coords: nested coordinate basis {d} is not supported")
            out[:, d.mode[0]] += c * d.value
        elif d != 0:
            out[:, 0] += c * int(d)
    return out


def _array(t, op):
    if not isinstance(t, Tensor) or not isinstance(t.engine, ArrayEngine):
        raise LayoutTypeError(f"{op}: expected a tensor over host or register memory, got {t!r}")
    return t.engine.array


def gather(t, pred=None):
    """The values of tensor ``t`` in its 1-D order; where ``pred`` is False, zero (not read)."""
    arr = _array(t, "gather")
    off = offsets(t)
    if pred is None:
        _check_bounds("gather", t, off, arr.size)
        return arr[off]
    out = np.zeros(off.shape, dtype=arr.dtype)
    _check_bounds("gather", t, off[pred], arr.size)
    out[pred] = arr[off[pred]]
    return out


def scatter(t, values, pred=None, counts=None):
    """Store ``values`` (in ``t``'s 1-D order) into tensor ``t``, where ``pred`` is True.

    ``counts`` (an int array over the engine's memory) is incremented per store.
    """
    arr = _array(t, "scatter")
    off = offsets(t)
    vals = np.asarray(values)
    if vals.shape != off.shape:
        raise LayoutError(f"scatter: {vals.size} values for a tensor of size {off.size} ({t.layout})")
    if pred is not None:
        off, vals = off[pred], vals[pred]
    _check_bounds("scatter", t, off, arr.size)
    arr[off] = vals.astype(arr.dtype, copy=False)
    if counts is not None:
        np.add.at(counts, off, 1)


def _check_bounds(op, t, off, n):
    if off.size and (off.min() < 0 or off.max() >= n):
        raise LayoutError(f"{op}: tensor {t.layout} reaches offsets [{off.min()}, {off.max()}] "
                          f"outside its memory of {n} elements")


# ---- copies: each instruction executed from the atom's tables ---------------

_TABLES = {}


def _tv_table(layout):
    """``table[t, v] = layout(t, v)`` for a (thread, value) layout."""
    key = (layout.shape, layout.stride)
    tab = _TABLES.get(key)
    if tab is None:
        nt, nv = size(layout[0]), size(layout[1])
        flat = _eval_layout(layout, np.arange(nt * nv, dtype=np.int64))
        tab = flat.reshape(nv, nt).T.copy()          # colexicographic: t varies fastest
        _TABLES[key] = tab
    return tab


def _copy_instructions(atom, srcs):
    """Run the atom's instructions for one group of its threads.

    ``srcs[t]``: thread ``t``'s source values, ``(J, NumValSrc)`` for ``J`` instructions.
    Returns the destination values per thread, ``(J, NumValDst)``.  The source
    values are placed in the atom's reference space at ``src_layout(t, v)``; thread
    ``t``'s destination value ``v`` is read at ``dst_layout(t, v)``.
    """
    src_tab, dst_tab = _tv_table(atom.src_layout), _tv_table(atom.dst_layout)
    J = srcs[0].shape[0]
    if any(s.shape[0] != J for s in srcs):
        raise LayoutError(f"run_copy: the threads of one {atom.name} have different numbers of "
                          f"instructions: {[s.shape[0] for s in srcs]}")
    space = int(max(src_tab.max(), dst_tab.max())) + 1
    buf = np.zeros((space, J), dtype=srcs[0].dtype)
    written = np.zeros(space, dtype=bool)
    for t, s in enumerate(srcs):
        buf[src_tab[t]] = s.T
        written[src_tab[t]] = True
    if not written[dst_tab].all():
        raise LayoutError(f"run_copy: {atom.name} reads destination values that no source thread "
                          f"provides (src {atom.src_layout}, dst {atom.dst_layout})")
    return [buf[dst_tab[t]].T for t in range(dst_tab.shape[0])]


def run_copy(tiled_copy, src_parts, dst_parts, preds=None, counts=None):
    """Execute ``copy(tiled_copy, src, dst)`` for all threads.

    ``src_parts[t]`` / ``dst_parts[t]``: thread ``t``'s ``partition_S`` (or ``retile_S``)
    and ``partition_D`` (or ``retile_D``) tensors, mode 0 being the copy's ``CPY``
    mode (``(AtomVal, RestVal)``).  ``preds[t]`` (optional, boolean per source element)
    zero-fills the elements it excludes.  Threads run in groups of the atom's threads
    (32 consecutive threads for ``ldmatrix``, one thread for ``cp.async``).
    """
    if not isinstance(tiled_copy, TiledCopy):
        raise LayoutTypeError(f"run_copy: expected a TiledCopy, got {tiled_copy!r}")
    atom = tiled_copy.atom
    n = len(src_parts)
    if n != tiled_copy.size or len(dst_parts) != n:
        raise LayoutError(f"run_copy: {tiled_copy.atom.name} tiled over {tiled_copy.size} threads, "
                          f"given {n} source and {len(dst_parts)} destination partitions")
    ns, nd = size(atom.src_layout[1]), size(atom.dst_layout[1])
    nthr = atom.num_threads
    for g in range(0, n, nthr):
        group = range(g, g + nthr)
        srcs = []
        for t in group:
            vals = gather(src_parts[t], None if preds is None else preds[t])
            if vals.size % ns or size(dst_parts[t]) * ns != vals.size * nd:
                raise LayoutError(
                    f"run_copy: thread {t} has {vals.size} source and {size(dst_parts[t])} destination "
                    f"values; {atom.name} moves {ns} -> {nd} per instruction")
            srcs.append(vals.reshape(-1, ns))
        outs = _copy_instructions(atom, srcs)
        for t, d in zip(group, outs):
            scatter(dst_parts[t], d.reshape(-1), counts=counts)


# ---- the MMA, per atom, from the fragments -----------------------------------

def _quantize(x, type_name):
    if type_name in ("tf32", "bf16", "e4m3", "e5m2"):
        from mma_atoms.numerics import quantize

        return quantize(x, type_name)
    return x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)


def _frag3(t, op):
    """``(values, (V, R1, R2))`` of a fragment ``(V, R1, R2...)`` (later modes folded into R2)."""
    lay = t.layout
    r = rank(lay)
    if r < 2:
        raise LayoutError(f"{op}: fragment {lay} needs at least the modes (V, Rest)")
    v, r1 = size(lay[0]), size(lay[1])
    return gather(t).reshape((v, r1, -1), order="F")


def run_mma(tiled_mma, frags_a, frags_b, frags_c, emulate_types=True):
    """``gemm(mma, tCrA, tCrB, tCrC)`` for all threads: ``C += A * B`` per MMA atom.

    ``frags_a[t]`` ``(MMA, MMA_M, MMA_K)``, ``frags_b[t]`` ``(MMA, MMA_N, MMA_K)``,
    ``frags_c[t]`` ``(MMA, MMA_M, MMA_N)``: thread ``t``'s register fragments
    (``MMA_K`` may be absent).  For every atom of the thread layout and every
    ``(k, m, n)``, the atom's ``A`` tile is gathered from its threads' fragments
    through ``layout_a`` (``A[layout_a(t, v)] = frag_a[thr(t)][v, m, k]``), likewise
    ``B`` and ``C``; ``D = A @ B.T + C`` is computed in float64 (inputs rounded to the
    atom's types when ``emulate_types``) and scattered back through ``layout_c``.
    """
    if not isinstance(tiled_mma, TiledMMA):
        raise LayoutTypeError(f"run_mma: expected a TiledMMA, got {tiled_mma!r}")
    atom = tiled_mma.atom
    if getattr(atom.op, "kind", "mma_sync") == "wgmma":
        raise LayoutError(f"run_mma: {atom.name} reads A/B through shared-memory descriptors; "
                          f"not supported by the host executor")
    nthr = tiled_mma.size
    for what, frags in (("A", frags_a), ("B", frags_b), ("C", frags_c)):
        if len(frags) != nthr:
            raise LayoutError(f"run_mma: {nthr} threads, given {len(frags)} {what} fragments")
    M, N, K = atom.shape_mnk
    la, lb, lc = _tv_table(atom.layout_a), _tv_table(atom.layout_b), _tv_table(atom.layout_c)
    for lay, tab, n_el in ((atom.layout_a, la, M * K), (atom.layout_b, lb, N * K), (atom.layout_c, lc, M * N)):
        if tab.size != n_el or np.bincount(tab.ravel(), minlength=n_el).max() != 1:
            raise LayoutError(f"run_mma: {atom.name} layout {lay} is not a bijection onto its tile")
    A = [_frag3(f, "run_mma") for f in frags_a]
    B = [_frag3(f, "run_mma") for f in frags_b]
    Cf = [_frag3(f, "run_mma") for f in frags_c]
    v = tiled_mma.thr_layout_vmnk
    nv = size(v[0])
    _, MM, KK = A[0].shape
    NN = B[0].shape[1]
    if B[0].shape[2] != KK or Cf[0].shape[1:] != (MM, NN):
        raise LayoutError(f"run_mma: fragment modes disagree: A {A[0].shape}, B {B[0].shape}, C {Cf[0].shape}")
    if size(v[3]) != 1:
        raise LayoutError(f"run_mma: atoms tiled over K ({v}) would need a reduction across threads")
    if "b1" in (atom.a_type, atom.b_type):
        raise LayoutError(f"run_mma: {atom.name} multiplies bits (XOR/AND + popc); not supported")
    c_dtype = Cf[0].dtype
    acc = np.float64 if c_dtype.kind == "f" else np.int64
    for tm in range(size(v[1])):
        for tn in range(size(v[2])):
            thr = [v((i, tm, tn, 0)) for i in range(nv)]
            a_thr = np.stack([A[t] for t in thr])                      # (T, V, MM, KK)
            b_thr = np.stack([B[t] for t in thr])                      # (T, V, NN, KK)
            c_thr = np.stack([Cf[t] for t in thr]).astype(acc)         # (T, V, MM, NN)
            for k in range(KK):
                for m in range(MM):
                    a = np.empty(M * K, dtype=a_thr.dtype)
                    a[la] = a_thr[:, :, m, k]
                    a = a.reshape((M, K), order="F")
                    for n in range(NN):
                        b = np.empty(N * K, dtype=b_thr.dtype)
                        b[lb] = b_thr[:, :, n, k]
                        b = b.reshape((N, K), order="F")
                        c = np.empty(M * N, dtype=acc)
                        c[lc] = c_thr[:, :, m, n]
                        c = c.reshape((M, N), order="F")
                        if emulate_types:
                            d = _quantize(a, atom.a_type) @ _quantize(b, atom.b_type).T + c
                        else:
                            d = a.astype(acc) @ b.astype(acc).T + c
                        d = d.astype(c_dtype).astype(acc)          # D is rounded to its type
                        c_thr[:, :, m, n] = d.reshape(-1, order="F")[lc]
            for i, t in enumerate(thr):
                Cf[t] = c_thr[i].astype(c_dtype)
    for f, vals in zip(frags_c, Cf):
        scatter(f, vals.reshape(-1, order="F"))


# ---- one CTA tile ------------------------------------------------------------

@dataclass(frozen=True)
class CtaGemm:
    """What a CTA of a CuTe-style GEMM kernel is made of.

    * ``tiled_mma`` -- the :class:`~layoutalg.TiledMMA`; its threads are the CTA's threads.
    * ``tile_mnk`` -- ``(BM, BN, BK)``, the CTA tile.
    * ``copy_a`` / ``copy_b`` -- gmem -> smem :class:`~layoutalg.TiledCopy` of A ``(BM,BK)``
      and B ``(BN,BK)``.
    * ``smem_a`` / ``smem_b`` -- ``(BM,BK) -> offset`` and ``(BN,BK) -> offset`` shared-memory
      layouts (a :class:`~layoutalg.Layout` or a swizzled :class:`~layoutalg.ComposedLayout`).
    * ``s2r_a`` / ``s2r_b`` -- smem -> register :class:`~layoutalg.CopyAtom` (made into
      ``make_tiled_copy_A/B(atom, tiled_mma)``), or ``None`` for CuTe's plain element copy
      of ``partition_A(sA)`` into the fragment.
    """

    tiled_mma: TiledMMA
    tile_mnk: tuple
    copy_a: TiledCopy
    copy_b: TiledCopy
    smem_a: object
    smem_b: object
    s2r_a: object = None
    s2r_b: object = None

    def __post_init__(self):
        op = "CtaGemm"
        mma = self.tiled_mma
        if not isinstance(mma, TiledMMA):
            raise LayoutTypeError(f"{op}: tiled_mma must be a TiledMMA, got {mma!r}")
        t = self.tile_mnk
        if not (isinstance(t, tuple) and len(t) == 3 and all(is_int(x) and x > 0 for x in t)):
            raise LayoutTypeError(f"{op}: tile_mnk must be three positive ints (BM, BN, BK), got {t!r}")
        for i, (b, m) in enumerate(zip(t, mma.tile_size_mnk)):
            if b % m:
                raise LayoutError(f"{op}: CTA tile {'MNK'[i]} = {b} is not a multiple of the TiledMMA "
                                  f"tile {mma.tile_size_mnk[i]} ({mma.atom.name})")
        for name, cp, (r, c) in (("copy_a", self.copy_a, (t[0], t[2])), ("copy_b", self.copy_b, (t[1], t[2]))):
            if not isinstance(cp, TiledCopy):
                raise LayoutTypeError(f"{op}: {name} must be a TiledCopy, got {cp!r}")
            if cp.size != mma.size:
                raise LayoutError(f"{op}: {name} ({cp.atom.name}) uses {cp.size} threads but the "
                                  f"TiledMMA has {mma.size}")
            tiler = cp.tiler_mn if isinstance(cp.tiler_mn, tuple) else (cp.tiler_mn,)
            tsz = tuple(size(x) if isinstance(x, Layout) else x for x in tiler)
            if len(tsz) != 2 or r % tsz[0] or c % tsz[1]:
                raise LayoutError(f"{op}: {name} tile {tsz} does not divide the ({r},{c}) CTA tile")
        for name, lay, (r, c) in (("smem_a", self.smem_a, (t[0], t[2])), ("smem_b", self.smem_b, (t[1], t[2]))):
            if not isinstance(lay, (Layout, ComposedLayout)):
                raise LayoutTypeError(f"{op}: {name} must be a Layout or ComposedLayout, got {lay!r}")
            if rank(lay) != 2 or size(lay[0]) != r or size(lay[1]) != c:
                raise LayoutError(f"{op}: {name} {lay} is not a ({r},{c}) layout")
        for name, atom, make in (("s2r_a", self.s2r_a, make_tiled_copy_A), ("s2r_b", self.s2r_b, make_tiled_copy_B)):
            if atom is not None and not isinstance(atom, CopyAtom):
                raise LayoutTypeError(f"{op}: {name} must be a CopyAtom or None, got {atom!r}")
            if atom is not None:
                make(atom, mma)                      # checks the value width against the operand

    @property
    def num_threads(self):
        return self.tiled_mma.size


def _operand(x, name, ndim=2):
    a = np.asarray(x)
    if a.ndim != ndim:
        raise LayoutError(f"run_cta: {name} must be a {ndim}-D array, got shape {a.shape}")
    return a


def run_cta(cfg, A, B, C, cta_coord=(0, 0), *, alpha=1.0, beta=0.0, emulate_types=True, check=True):
    """Compute CTA tile ``cta_coord = (m_blk, n_blk)`` of ``C = alpha * A @ B.T + beta * C``.

    ``A`` ``(M,K)``, ``B`` ``(N,K)`` and ``C`` ``(M,N)`` are numpy arrays of any strides
    (a row-major ``A`` is K-major, ``np.asfortranarray(A)`` is M-major); ``C`` is updated
    in place and returned.  Shapes need not be multiples of the tile: elements outside
    are zero-filled on load and not stored.  All ``K`` tiles are accumulated.

    With ``check``, every shared-memory element of the tile must be written exactly once
    per k-tile, and every in-bounds element of the C tile exactly once (LayoutError
    otherwise).  ``emulate_types`` rounds MMA inputs to the atom's types (tf32, bf16).
    """
    if not isinstance(cfg, CtaGemm):
        raise LayoutTypeError(f"run_cta: expected a CtaGemm, got {cfg!r}")
    A, B = _operand(A, "A"), _operand(B, "B")
    if not isinstance(C, np.ndarray) or C.ndim != 2:
        raise LayoutTypeError(f"run_cta: C must be a 2-D numpy array (updated in place), got {type(C)}")
    M, K = A.shape
    N = B.shape[0]
    if B.shape[1] != K or C.shape != (M, N):
        raise LayoutError(f"run_cta: shapes do not match: A {A.shape}, B {B.shape}, C {C.shape}")
    mma = cfg.tiled_mma
    BM, BN, BK = cfg.tile_mnk
    bm, bn = cta_coord
    if not (0 <= bm * BM < M and 0 <= bn * BN < N):
        raise LayoutError(f"run_cta: CTA {cta_coord} of {BM}x{BN} tiles lies outside the {M}x{N} problem")
    nthr = mma.size
    coord = (bm, bn, None)

    # CuTe's residue tiles: every access below is predicated with the identity tensors cA, cB, cC
    mA, mB, mC = (make_tensor(x, residue=True) for x in (A, B, C))          # (M,K) (N,K) (M,N)
    gA = local_tile(mA, cfg.tile_mnk, coord, proj=(1, None, 1))               # (BM,BK,k)
    gB = local_tile(mB, cfg.tile_mnk, coord, proj=(None, 1, 1))               # (BN,BK,k)
    gC = local_tile(mC, cfg.tile_mnk, coord, proj=(1, 1, None))               # (BM,BN)
    cA = local_tile(make_identity_tensor((M, K)), cfg.tile_mnk, coord, proj=(1, None, 1))
    cB = local_tile(make_identity_tensor((N, K)), cfg.tile_mnk, coord, proj=(None, 1, 1))
    cC = local_tile(make_identity_tensor((M, N)), cfg.tile_mnk, coord, proj=(1, 1, None))
    k_tiles = size(gA.layout[2])

    smem = {}
    for name, lay, dt in (("A", cfg.smem_a, A.dtype), ("B", cfg.smem_b, B.dtype)):
        image = _eval_layout(lay, np.arange(size(lay), dtype=np.int64))
        if image.min() < 0:
            raise LayoutError(f"run_cta: smem_{name.lower()} {lay} has negative offsets")
        smem[name] = (make_tensor(np.zeros(int(image.max()) + 1, dt), lay), image)
    sA, sB = smem["A"][0], smem["B"][0]

    # per-thread partitions, as each thread of the kernel computes them
    s2r_a = make_tiled_copy_A(cfg.s2r_a, mma) if cfg.s2r_a is not None else None
    s2r_b = make_tiled_copy_B(cfg.s2r_b, mma) if cfg.s2r_b is not None else None
    P = {k: [] for k in ("tAgA", "tAcA", "tAsA", "tBgB", "tBcB", "tBsB", "tCrA", "tCrB", "tCrC",
                         "tXsA", "tXrA", "tXsB", "tXrB", "tCgC", "tCcC")}
    for t in range(nthr):
        ca, cb = cfg.copy_a.get_slice(t), cfg.copy_b.get_slice(t)
        P["tAgA"].append(ca.partition_S(gA))                                   # (CPY,CPY_M,CPY_K,k)
        P["tAcA"].append(ca.partition_S(cA))
        P["tAsA"].append(ca.partition_D(sA))                                   # (CPY,CPY_M,CPY_K)
        P["tBgB"].append(cb.partition_S(gB))
        P["tBcB"].append(cb.partition_S(cB))
        P["tBsB"].append(cb.partition_D(sB))
        thr = mma.get_slice(t)
        P["tCrA"].append(thr.partition_fragment_A(sA))                        # (MMA,MMA_M,MMA_K)
        P["tCrB"].append(thr.partition_fragment_B(sB))                        # (MMA,MMA_N,MMA_K)
        frag_c = thr.partition_fragment_C(gC)                                  # (MMA,MMA_M,MMA_N)
        P["tCrC"].append(frag_c)
        P["tCgC"].append(thr.partition_C(gC))
        P["tCcC"].append(thr.partition_C(cC))
        for X, s2r, s, frag, part in (("A", s2r_a, sA, P["tCrA"][-1], thr.partition_A),
                                      ("B", s2r_b, sB, P["tCrB"][-1], thr.partition_B)):
            if s2r is not None:
                xt = s2r.get_slice(t)
                P["tXs" + X].append(xt.partition_S(s))                         # (CPY,CPY_M,CPY_K)
                P["tXr" + X].append(xt.retile_D(frag))                         # (CPY,CPY_M,CPY_K)
            else:
                P["tXs" + X].append(part(s))                                   # (MMA,MMA_M,MMA_K)
                P["tXr" + X].append(frag)
    _check_modes(P)
    k_blocks = size(P["tCrA"][0].layout[2])

    for kt in range(k_tiles):
        for X, cp, g, c, s in (("A", cfg.copy_a, "tAgA", "tAcA", "tAsA"), ("B", cfg.copy_b, "tBgB", "tBcB", "tBsB")):
            sten, image = smem[X]
            counts = np.zeros(sten.engine.array.size, dtype=np.int64) if check else None
            shp = (M, K) if X == "A" else (N, K)
            src = [p[(None,) * (rank(p.layout) - 1) + (kt,)] for p in P[g]]
            crd = [p[(None,) * (rank(p.layout) - 1) + (kt,)] for p in P[c]]
            preds = [np.all(coords(x) < np.array(shp), axis=1) for x in crd]
            run_copy(cp, src, P[s], preds=preds, counts=counts)
            if check and not np.all(counts[image] == 1):
                bad = int(np.count_nonzero(counts[image] != 1))
                raise LayoutError(f"run_cta: the gmem->smem copy of {X} ({cp.atom.name}) does not write "
                                  f"each of the {image.size} smem elements exactly once ({bad} do not)")
        for kb in range(k_blocks):
            for X, s2r in (("A", s2r_a), ("B", s2r_b)):
                src = [p[None, None, kb] for p in P["tXs" + X]]
                dst = [p[None, None, kb] for p in P["tXr" + X]]
                if s2r is not None:
                    run_copy(s2r, src, dst)
                else:
                    copy_elements(src, dst)
            run_mma(mma, [p[None, None, kb] for p in P["tCrA"]], [p[None, None, kb] for p in P["tCrB"]],
                    P["tCrC"], emulate_types=emulate_types)

    counts = np.zeros(mC.engine.array.size, dtype=np.int64) if check else None
    for t in range(nthr):
        pred = np.all(coords(P["tCcC"][t]) < np.array((M, N)), axis=1)
        acc = gather(P["tCrC"][t]).astype(np.float64)
        old = gather(P["tCgC"][t], pred).astype(np.float64)
        out = alpha * acc + (beta * old if beta else 0.0)
        scatter(P["tCgC"][t], out.astype(C.dtype), pred, counts=counts)
    if check:
        rows = np.arange(bm * BM, min(M, (bm + 1) * BM))
        cols = np.arange(bn * BN, min(N, (bn + 1) * BN))
        inb = offsets(mC)[(rows[:, None] + M * cols[None, :]).ravel()]
        if not np.all(counts[inb] == 1) or counts.sum() != inb.size:
            raise LayoutError("run_cta: partition_C does not write each element of the C tile exactly once")
    return C


def copy_elements(src_parts, dst_parts):
    """CuTe's plain ``copy(src, dst)`` per thread: element ``i`` of ``dst_parts[t]`` from ``src_parts[t]``."""
    if len(src_parts) != len(dst_parts):
        raise LayoutError(f"copy_elements: {len(src_parts)} source and {len(dst_parts)} destination partitions")
    for t, (s, d) in enumerate(zip(src_parts, dst_parts)):
        if size(s) != size(d):
            raise LayoutError(f"copy_elements: thread {t}: source {s.layout} and destination {d.layout} "
                              f"differ in size")
        scatter(d, gather(s))


def _mode_sizes(t, drop_last=False):
    lay = t.layout
    sizes = tuple(size(lay[i]) for i in range(rank(lay)))
    return sizes[:-1] if drop_last else sizes


def _check_modes(P):
    for t in range(len(P["tCrA"])):
        for a, b, drop in (("tAgA", "tAsA", True), ("tBgB", "tBsB", True), ("tXsA", "tXrA", False),
                           ("tXsB", "tXrB", False), ("tCgC", "tCrC", False)):
            if _mode_sizes(P[a][t], drop) != _mode_sizes(P[b][t]):
                raise LayoutError(f"run_cta: thread {t}: {a} {P[a][t].layout} and {b} {P[b][t].layout} "
                                  f"do not match mode by mode")
