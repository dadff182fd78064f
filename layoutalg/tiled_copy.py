"""``TiledCopy``: a copy atom tiled over threads and values.

``layout_tv`` maps (thread, value) to a column-major index into the ``tiler_mn``
tile.  ``tidfrg_S/D`` re-tile a tensor ``(M,N,...)`` into
``(Thr, FrgV, (RestM,RestN,...))``; a thread's slice is its partition
``(CPY, CPY_M, CPY_N, ...)``.

>>> cp = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 4), (4, 1)), Layout((1, 1)))
>>> cp.tiler_mn
(32, 4)
"""

from . import algebra as _alg
from .atom import CopyAtom
from .errors import LayoutError, LayoutTypeError
from .inttuple import is_int, product
from .layout import Layout, make_layout, rank, size
from .tensor import Tensor

__all__ = ["TiledCopy", "ThrCopy", "make_tiled_copy", "make_tiled_copy_A", "make_tiled_copy_B",
           "make_tiled_copy_C", "make_tiled_copy_impl"]


def _layout(x):
    return x.layout if isinstance(x, Tensor) else x


def _with(x, layout):
    return x.with_layout(layout) if isinstance(x, Tensor) else layout


class TiledCopy:
    """A tiled copy.  Build it with :func:`make_tiled_copy` or :func:`make_tiled_copy_A/B/C`."""

    def __init__(self, atom, layout_tv, tiler_mn):
        self.atom = atom
        self.layout_tv = layout_tv          # (tid,vid) -> (M,N) column-major index
        self.tiler_mn = tiler_mn            # tile shape (or tuple of layouts)
        self.size = size(layout_tv[0])      # threads
        nthr, nval = atom.num_threads, atom.num_values
        if size(layout_tv[0]) % nthr:
            raise LayoutError(
                f"TiledCopy: {size(layout_tv[0])} threads are not a multiple of the atom's {nthr} "
                f"({atom.name})")
        if size(layout_tv[1]) % nval:
            raise LayoutError(
                f"TiledCopy: each thread holds {size(layout_tv[1])} values, not a multiple of the "
                f"{nval} values of one {atom.name} of {atom.dtype} "
                f"({atom.vector_bits} bits per thread)")

    def __repr__(self):
        return f"TiledCopy({self.atom.name}, {self.atom.dtype}, layout_tv={self.layout_tv}, tiler={self.tiler_mn})"

    # ---- re-tiling -----------------------------------------------------------
    def _ref2(self, which):
        ref_inv = _alg.right_inverse(self.atom.ref_layout)
        return _alg.composition(ref_inv, which)

    def tile2thrfrg(self, t, ref2trg):
        """``((TileM,TileN,...),(RestM,RestN,...)) -> ((Thr),FrgV,(RestM,RestN,...))``."""
        nthr, nval = self.atom.num_threads, self.atom.num_values
        atom_tv = _alg.zipped_divide(self.layout_tv, (nthr, nval))   # ((atom_tid,atom_val),(rest_tid,rest_val)) -> (m,n)
        trg_tv = _alg.composition(atom_tv, (ref2trg, None))          # ((trg_tid,trg_val),(rest_tid,rest_val)) -> (m,n)
        zipped = _alg.zip_layouts(trg_tv[0], trg_tv[1])             # ((trg_tid,rest_tid),(trg_val,rest_val))
        thrval2mn = _alg.coalesce(zipped, (1, (1, 1)))
        tv = _alg.composition(t, (thrval2mn, None))                  # ((thr,val),(RestM,RestN,...))
        return tv((None, None), None)

    def tidfrg_S(self, t):
        return self.tile2thrfrg(_alg.zipped_divide(t, self._tiler()), self._ref2(self.atom.src_layout))

    def tidfrg_D(self, t):
        return self.tile2thrfrg(_alg.zipped_divide(t, self._tiler()), self._ref2(self.atom.dst_layout))

    def _tiler(self):
        return self.tiler_mn

    def retile(self, t):
        """Re-tile a thread's fragment ``(V, RestM, RestN, ...)`` into ``(CPY, CPY_M, CPY_N, ...)``."""
        lay = _layout(t)
        R = rank(lay)
        V = size(lay[0])
        nthr = size(self.layout_tv[0])
        shape_mn = tuple(size(m) for m in _as_tuple(self.tiler_mn))
        inv = _alg.right_inverse(self.layout_tv)
        frg_mn = _alg.upcast(_alg.with_shape(inv, shape_mn), nthr * V)           # (m,n) -> v_idx
        frg_v = _alg.zipped_divide(
            _alg.logical_product(Layout(V), _alg.right_inverse(frg_mn)), Layout(self.atom.num_values))
        tiler = (V,) + tuple(size(m) for m in _modes(frg_mn))
        tt = _alg.zipped_divide(lay, tiler)                                  # ((TileV,TileM,TileN),(1,RestM,RestN))
        vt = _with(t, _alg.composition(tt, (frg_v, None)))                   # ((atom_vals,rest_vals),(1,RM,RN))
        crd = (None, (0,) + (None,) * (rank(_layout(vt)[1]) - 1))
        return vt[crd] if isinstance(vt, Tensor) else vt(crd)

    def get_layoutS_TV(self):
        ref = Layout((_tiler_shape(self.tiler_mn), 1))
        return self.tile2thrfrg(ref, self._ref2(self.atom.src_layout))(None, None, 0)

    def get_layoutD_TV(self):
        ref = Layout((_tiler_shape(self.tiler_mn), 1))
        return self.tile2thrfrg(ref, self._ref2(self.atom.dst_layout))(None, None, 0)

    def get_slice(self, thr_idx):
        if isinstance(thr_idx, bool) or not is_int(thr_idx) or not 0 <= thr_idx < self.size:
            raise LayoutError(f"TiledCopy.get_slice: thread {thr_idx!r} out of range [0, {self.size})")
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice

    def _repr_svg_(self):
        from .draw import svg_of

        return svg_of(self)


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)


def _modes(L):
    return list(L) if isinstance(L.shape, tuple) else [L]


def _tiler_shape(tiler):
    if isinstance(tiler, tuple):
        return tuple(size(t) if isinstance(t, Layout) else t for t in tiler)
    return size(tiler) if isinstance(tiler, Layout) else tiler


class ThrCopy:
    """One thread's view of a :class:`TiledCopy`."""

    def __init__(self, tiled_copy, thr_idx):
        self.tiled_copy = tiled_copy
        self.thr_idx = thr_idx

    def _part(self, t, fn, op="partition"):
        _check_rank("partition", t, self.tiled_copy.tiler_mn)
        if isinstance(t, Tensor):
            t.check_tiler(op, self.tiled_copy.tiler_mn)
        thr = _with(t, fn(_layout(t)))                 # (Thr, FrgV, (RestM,RestN,...))
        rest = _layout(thr)[2]
        return thr[self.thr_idx, None, (None,) * rank(rest) if isinstance(rest.shape, tuple) else None]

    def partition_S(self, t):
        """``(M,N,...) -> (CPY, CPY_M, CPY_N, ...)``: this thread's source elements.

        Raises :class:`LayoutError` when the atom moves vectors (e.g. 8 f16 for a 128-bit
        ``cp.async``) that are not contiguous and aligned in ``t``.
        """
        part = self._part(t, self.tiled_copy.tidfrg_S, "partition_S")
        _check_vectors("partition_S", self.tiled_copy.atom, self.tiled_copy.atom.src_layout, part,
                       self.thr_idx)
        return part

    def partition_D(self, t):
        """``(M,N,...) -> (CPY, CPY_M, CPY_N, ...)``: this thread's destination elements."""
        part = self._part(t, self.tiled_copy.tidfrg_D, "partition_D")
        _check_vectors("partition_D", self.tiled_copy.atom, self.tiled_copy.atom.dst_layout, part,
                       self.thr_idx)
        return part

    def retile_S(self, t):
        """A thread's fragment ``(V, RestM, ...)`` re-tiled as ``(CPY, CPY_M, ...)`` of this copy."""
        return self.tiled_copy.retile(t)

    def retile_D(self, t):
        return self.tiled_copy.retile(t)


def vector_width(atom_tv):
    """Values one thread moves as one contiguous vector: the leading stride-1 run of the
    value mode of an atom's ``(thread, value)`` layout (in elements).

    >>> vector_width(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16").src_layout)
    8
    >>> vector_width(CopyAtom("SM75_U32x4_LDSM_N", "f16").dst_layout)   # 32-bit registers
    2
    """
    from .inttuple import flat_tuple

    vals = _alg.coalesce(atom_tv[1])
    shape, stride = flat_tuple(vals.shape), flat_tuple(vals.stride)
    return shape[0] if stride[0] == 1 else 1


def _check_vectors(op, atom, atom_tv, part, thr_idx):
    """The atom's vectors must be contiguous (and aligned) in the partitioned tensor.

    CuTe recasts each thread's values to the instruction's register type (e.g. one
    ``uint128_t`` for eight f16), which requires exactly this.
    """
    from .tensor import CoordEngine

    vec = vector_width(atom_tv)
    if vec <= 1 or not isinstance(part, Tensor) or isinstance(part.engine, CoordEngine):
        return
    import numpy as np

    from .numpy_eval import eval_layout

    n = size(part.layout)
    try:
        off = eval_layout(part.layout, np.arange(n, dtype=np.int64), op)
    except LayoutError:
        return                                              # not an offset layout
    base = getattr(part.engine, "offset", 0)
    what = f"{atom.name} moves {vec} {atom.dtype} values ({vec * atom.value_bits} bits) as one vector"
    if n % vec:
        raise LayoutError(f"{op}: {what}, but thread {thr_idx} has {n} values ({part.layout})")
    groups = off.reshape(-1, vec)
    bad = np.nonzero(np.any(groups != groups[:, :1] + np.arange(vec), axis=1))[0]
    if bad.size:
        g = groups[bad[0]].tolist()
        raise LayoutError(
            f"{op}: {what}, but the tensor holds thread {thr_idx}'s values at offsets {g}: the "
            f"vector width exceeds the layout's contiguity ({part.layout})")
    if is_int(base):
        starts = groups[:, 0] + int(base)
        bad = np.nonzero(starts % vec)[0]
        if bad.size:
            raise LayoutError(
                f"{op}: {what}, but thread {thr_idx}'s vector starts at element offset "
                f"{int(starts[bad[0]])}, not a multiple of {vec} (misaligned)")


def _check_rank(op, t, tiler):
    n = len(tiler) if isinstance(tiler, tuple) else 1
    if rank(_layout(t)) < n:
        raise LayoutError(f"{op}: tensor {_layout(t)} has fewer modes than the copy tile {tiler}")


def make_tiled_copy_impl(atom, layout_tv, tiler):
    return TiledCopy(atom, layout_tv, tiler)


def make_tiled_copy(atom, thr_layout, val_layout=None):
    """Tile ``atom`` with ``thr_layout`` threads ``# (ThrM,ThrN) -> thr_idx`` each moving
    ``val_layout`` values ``# (ValM,ValN) -> val_idx``.

    Pre: ``size(val_layout)`` is a multiple of the atom's values per thread, and the values of one
    atom are contiguous in the tensor the copy partitions.
    """
    if not isinstance(atom, CopyAtom):
        raise LayoutTypeError(f"make_tiled_copy: expected a CopyAtom, got {atom!r}")
    if not isinstance(thr_layout, Layout):
        thr_layout = Layout(thr_layout)
    if val_layout is None:
        val_layout = Layout(1)
    elif not isinstance(val_layout, Layout):
        val_layout = Layout(val_layout)
    if size(val_layout) % atom.num_values:
        raise LayoutError(
            f"make_tiled_copy: {size(val_layout)} values per thread ({val_layout}) is not a multiple of "
            f"the {atom.num_values} {atom.dtype} values one {atom.name} moves")
    layout_mn = _alg.raked_product(thr_layout, val_layout)                    # (M,N) -> (thr_idx,val_idx)
    layout_tv = _alg.with_shape(_alg.right_inverse(layout_mn), (size(thr_layout), size(val_layout)))
    tiler = tuple(size(m) for m in _modes(layout_mn))
    if len(tiler) == 1:
        tiler = tiler[0]
    return TiledCopy(atom, layout_tv, tiler)


def _mma_copy(op, atom, mma, tv, a, b):
    if not isinstance(atom, CopyAtom):
        raise LayoutTypeError(f"{op}: expected a CopyAtom, got {atom!r}")
    operand = {"make_tiled_copy_A": "a_type", "make_tiled_copy_B": "b_type", "make_tiled_copy_C": "c_type"}[op]
    from .algebra import type_bits

    mma_type = getattr(mma.atom, operand, None)
    if mma_type not in (None, "any") and atom.value_bits != type_bits(mma_type):
        raise LayoutError(
            f"{op}: copy atom moves {atom.value_bits}-bit values ({atom.dtype}) but the MMA's "
            f"{operand[0].upper()} operand is {mma_type} ({type_bits(mma_type)} bits)")
    return TiledCopy(atom, tv, (mma.tile_size_mnk[a], mma.tile_size_mnk[b]))


def make_tiled_copy_A(atom, mma):
    """The copy that fills ``mma``'s A fragments: its TV layout is ``mma.get_layoutA_TV()``."""
    return _mma_copy("make_tiled_copy_A", atom, mma, mma.get_layoutA_TV(), 0, 2)


def make_tiled_copy_B(atom, mma):
    return _mma_copy("make_tiled_copy_B", atom, mma, mma.get_layoutB_TV(), 1, 2)


def make_tiled_copy_C(atom, mma):
    return _mma_copy("make_tiled_copy_C", atom, mma, mma.get_layoutC_TV(), 0, 1)
