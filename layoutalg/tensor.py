"""Tensors: a layout over an engine.

Engines:

* :class:`ArrayEngine` -- host data in a numpy array (element ``k`` of its flat memory);
* :class:`RegisterEngine` -- an owned register fragment (a small numpy array);
* :class:`PointerEngine` -- a symbolic pointer, a named base plus an offset, for the code emitter;
* :class:`CoordEngine` -- coordinates: the element at an offset *is* that offset, which with
  coordinate-basis strides (``E<i>``) makes an identity tensor.

>>> import numpy as np
>>> t = make_tensor(np.arange(12), Layout((3, 4)))   # (M3,N4) -> offset
>>> int(t[1, 2])
7
>>> c = make_identity_tensor((4, 8))                 # (M4,N8) -> (m,n)
>>> c[3, 5]
(3, 5)
>>> part = local_partition(c, Layout((2, 4)), 5)     # thread 5 of a 2x4 arrangement
>>> [part[i] for i in range(4)]
[(1, 2), (3, 2), (1, 6), (3, 6)]
"""

import numpy as np

from .basis import ArithTuple, ScaledBasis, basis_value
from .errors import LayoutError, LayoutIndexError, LayoutTypeError
from .element_types import element_type
from .inttuple import crd2idx, flat_tuple, fmt, idx2crd, is_int, product, unflatten
from .layout import (
    Layout, _has_slot, make_layout, make_ordered_layout, rank, size, slice_and_offset,
)
from .swizzle import ComposedLayout
from . import algebra as _alg

__all__ = [
    "Tensor", "ArrayEngine", "RegisterEngine", "PointerEngine", "CoordEngine", "make_tensor",
    "make_identity_tensor", "make_identity_layout", "make_basis_like", "local_tile",
    "local_partition", "inner_partition", "outer_partition", "make_fragment_like", "recast",
    "group_modes", "get_flat_coord", "dice",
]


# ---- engines -------------------------------------------------------------

class ArrayEngine:
    """Host memory: a 1-D numpy array and a base offset into it.

    ``residue``: tiles that do not divide a tensor over this memory are allowed (CuTe's
    semantics, see :func:`make_tensor`); by default they are refused.
    """

    __slots__ = ("array", "offset", "residue")

    def __init__(self, array, offset=0, residue=False):
        self.array = array
        self.offset = offset
        self.residue = residue

    def __add__(self, k):
        return ArrayEngine(self.array, self.offset + k, self.residue)

    def load(self, off):
        return self.array[self.offset + off]

    def store(self, off, value):
        self.array[self.offset + off] = value

    @property
    def dtype(self):
        return self.array.dtype

    def __repr__(self):
        return f"ArrayEngine({self.array.dtype}[{self.array.size}] + {self.offset})"


class RegisterEngine(ArrayEngine):
    """An owned register fragment (a fresh zero-filled numpy array)."""

    def __init__(self, dtype, n, array=None, offset=0, residue=False):
        super().__init__(np.zeros(n, dtype=dtype) if array is None else array, offset, residue)

    def __add__(self, k):
        return RegisterEngine(self.array.dtype, 0, self.array, self.offset + k, self.residue)

    def __repr__(self):
        return f"RegisterEngine({self.array.dtype}[{self.array.size}] + {self.offset})"


class PointerEngine:
    """A symbolic pointer: a named base and an offset (an int or a symbolic expression)."""

    __slots__ = ("name", "offset", "dtype")

    def __init__(self, name, offset=0, dtype=None):
        self.name = name
        self.offset = offset
        self.dtype = dtype

    def __add__(self, k):
        return PointerEngine(self.name, self.offset + k, self.dtype)

    def load(self, off):
        return (self.name, self.offset + off)

    def store(self, off, value):
        raise LayoutError(f"PointerEngine {self.name}: a symbolic pointer holds no data")

    def __repr__(self):
        return f"PointerEngine({self.name} + {self.offset})"


class CoordEngine:
    """Coordinates: ``load(off)`` returns the offset itself (a coordinate for basis strides)."""

    __slots__ = ("origin", "rank")

    def __init__(self, origin=0, rank=None):
        self.origin = origin
        self.rank = rank

    def __add__(self, k):
        return CoordEngine(self.origin + k, self.rank)

    def load(self, off):
        return basis_value(self.origin + off, self.rank)

    def store(self, off, value):
        raise LayoutError("CoordEngine: an identity tensor is read-only")

    dtype = None

    def __repr__(self):
        return f"CoordEngine({basis_value(self.origin, self.rank)})"


# ---- tensors -------------------------------------------------------------

class Tensor:
    """A layout over an engine: ``t[c] == engine[layout(c)]``.

    Indexing with ints or coordinates gives an element; a coordinate containing
    ``None``/``_`` gives a sub-tensor.  Algebra functions (divides, products,
    composition) apply to the layout and keep the engine.
    """

    __slots__ = ("engine", "layout")

    def __init__(self, engine, layout):
        if not isinstance(layout, (Layout, ComposedLayout)):
            raise LayoutTypeError(f"Tensor: layout must be a Layout or ComposedLayout, got {layout!r}")
        self.engine = engine
        self.layout = layout

    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        return self.layout.stride

    @property
    def dtype(self):
        return getattr(self.engine, "dtype", None)

    def size(self):
        return size(self.layout)

    def cosize(self):
        from .layout import cosize

        return cosize(self.layout)

    def __len__(self):
        return size(self.layout)

    #: tensors of at most this many elements show their values in ``repr``
    REPR_MAX_VALUES = 64

    def __repr__(self):
        head = f"Tensor({self.engine!r} o {self.layout})"
        if isinstance(self.engine, PointerEngine) or size(self.layout) > self.REPR_MAX_VALUES:
            return head
        try:
            body = tensor_values_text(self)
        except LayoutError:
            return head
        return head + ":\n" + body

    def _coord(self, key):
        if isinstance(key, list):
            key = tuple(key)
        return _slices_to_slots(key)

    def __getitem__(self, key):
        key = self._coord(key)
        if _has_slot(key):
            return self._slice(key)
        return self.engine.load(self._offset(key))

    def __call__(self, *args):
        return self[args[0] if len(args) == 1 else tuple(args)]

    def __setitem__(self, key, value):
        key = self._coord(key)
        if _has_slot(key):
            sub = self._slice(key)
            vals = np.broadcast_to(np.asarray(value), (size(sub),))
            for i in range(size(sub)):
                sub[i] = vals[i]
            return
        self.engine.store(self._offset(key), value)

    def _offset(self, key):
        if isinstance(key, bool) or not (is_int(key) or isinstance(key, tuple)):
            raise LayoutTypeError(f"Tensor[{key!r}]: index must be an int or a coordinate")
        return self.layout(key)

    def _slice(self, key):
        sub, off = slice_and_offset(key, self.layout)
        return Tensor(self.engine + off, sub)

    def __iter__(self):
        for i in range(size(self.layout)):
            yield self[i]

    def _repr_svg_(self):
        """The notebook picture: the values in CuTe's print_tensor layout (``tensor_figure``)."""
        from .draw import svg_of

        return svg_of(self)

    def with_layout(self, layout):
        return Tensor(self.engine, layout)

    def check_tiler(self, op, tiler, compose=False):
        """Refuse a tile that hangs over the edge of a tensor of data (``LayoutError``).

        CuTe lets a tile overhang and rounds the rest up; the elements past the edge are then
        other elements of the memory (or outside it), read and written without a word unless
        every access is predicated.  Host tensors of data refuse such tiles, unless made with
        ``make_tensor(..., residue=True)``; identity tensors (the predicates themselves) and
        symbolic pointers keep CuTe's semantics.
        """
        eng = self.engine
        if not isinstance(eng, ArrayEngine) or eng.residue:
            return
        lay = self.layout
        bad = _overhang(lay.shape, tiler, _alg.composition if compose or op == "composition" else _alg.logical_divide)
        if bad is not None:
            mode, n, t = bad
            raise LayoutError(
                f"{op}: tile {_fmt_tiler(tiler)} does not divide the tensor's shape {fmt(lay.shape)}: "
                f"{t} over a mode of size {n}{mode} leaves a partial tile, whose elements past the edge "
                f"would be other elements of the array (or outside it). Tile by a divisor of the shape; "
                f"or, for CuTe's residue semantics, make the tensor with make_tensor(..., residue=True) "
                f"and guard every access with an identity tensor partitioned the same way "
                f"(elem_less(coord, shape)), as layoutalg.host_gemm does")

    # the algebra acts on ``layout`` and re-wraps with ``with_layout`` (see layoutalg.algebra)
    def compose(self, *tilers):
        """``compose(t0, t1, ...)``: compose mode by mode (CuTe's ``tensor.compose``)."""
        tiler = tilers[0] if len(tilers) == 1 else tuple(tilers)
        return _alg.composition(self, tiler)

    def coalesce(self, profile=None):
        return self.with_layout(_alg.coalesce(self.layout, profile))

    def numpy(self):
        """The tensor's values as a numpy array of its (flattened-mode) sizes, column-major."""
        vals = [self[i] for i in range(size(self.layout))]
        shp = tuple(size(self.layout[i]) for i in range(rank(self.layout))) if isinstance(
            self.layout.shape, tuple) else (size(self.layout),)
        return np.array(vals).reshape(shp + np.array(vals).shape[1:], order="F")


def _fmt_tiler(t):
    if isinstance(t, tuple):
        return "(" + ", ".join(_fmt_tiler(x) for x in t) + ")"
    return str(t)


def _overhang(shape, tiler, fn, where=""):
    """``(where, size, tile)`` of the first mode of ``shape`` that ``tiler`` (by mode for a
    tuple) does not cover with whole tiles, or None: ``fn`` (``logical_divide`` or
    ``composition``) of the mode's compact layout by its tile reaches past the mode's size."""
    if isinstance(tiler, tuple):
        modes = shape if isinstance(shape, tuple) else (shape,)
        for i, (s, t) in enumerate(zip(modes, tiler)):
            if t is not None:
                bad = _overhang(s, t, fn, f"{where} (mode {i})" if not where else f"{where[:-1]}, {i})")
                if bad is not None:
                    return bad
        return None
    n = product(shape)
    try:
        r = fn(Layout(n), tiler)
        reach = _cos(r) if not isinstance(r, tuple) else n
    except (LayoutError, TypeError):
        return None                      # the operation itself reports a bad tiler
    return (where, n, tiler) if reach > n else None


def _slices_to_slots(key):
    """Python's full slice ``:`` is a slot (CuTe's ``_``), as ``None`` is; other slices are errors."""
    if isinstance(key, slice):
        if key != slice(None):
            raise LayoutIndexError(f"Tensor[{key!r}]: only the full slice ':' (a whole mode, CuTe's _) is supported")
        return None
    if isinstance(key, tuple):
        return tuple(_slices_to_slots(k) for k in key)
    return key


def _value_text(v):
    if isinstance(v, tuple):
        return "(" + ",".join(_value_text(x) for x in v) + ")"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v)


def tensor_values_text(tensor):
    """The values of a tensor as a text table, CuTe's ``print_tensor`` body.

    Rank 1 prints as one column; rank 2 as rows of mode 0 and columns of mode 1;
    higher ranks put modes 1.. in the columns (colexicographically).
    Pre: the tensor's engine holds values (not a ``PointerEngine``).

    >>> import numpy as np
    >>> print(tensor_values_text(make_tensor(np.arange(6).reshape(2, 3))))
     0  1  2
     3  4  5
    """
    lay = tensor.layout
    n = size(lay)
    if rank(lay) >= 2:
        rows = size(lay[0])
        cols = n // rows if rows else 0
    else:
        rows, cols = n, 1
    cells = [[_value_text(tensor[r + c * rows]) for c in range(cols)] for r in range(rows)]
    width = max((len(x) for row in cells for x in row), default=1)
    return "\n".join(" ".join(x.rjust(width + 1) for x in row) for row in cells)


def _numpy_layout(a):
    """The layout of a numpy array in elements, and the base of its memory as a 1-D array."""
    if a.ndim == 0:
        raise LayoutError("make_tensor: a 0-d array has no layout")
    item = a.itemsize
    strides = []
    for s in a.strides:
        if s % item:
            raise LayoutError(f"make_tensor: array strides {a.strides} are not multiples of its itemsize {item}")
        strides.append(s // item)
    if any(d < 0 for d in strides):
        raise LayoutError(f"make_tensor: negative array strides {a.strides} are not supported")
    span = 1 + sum((n - 1) * d for n, d in zip(a.shape, strides))
    base = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,))
    shape = tuple(a.shape) if a.ndim > 1 else a.shape[0]
    stride = tuple(strides) if a.ndim > 1 else strides[0]
    return base, Layout(shape, stride)


def make_tensor(engine, layout=None, residue=False):
    """A tensor of ``engine`` (a numpy array, an engine, or a name for a symbolic pointer).

    A numpy array without a layout keeps its own shape and strides (in elements):
    ``make_tensor(np.zeros((4, 8)))`` has layout ``(4,8):(8,1)``.  With a layout,
    the array's flat (C-order) memory is indexed by the layout's offsets.
    A dtype (e.g. ``np.float32`` or ``"f16"``) with a layout makes a register fragment.

    Tiles that do not divide a tensor of a numpy array are refused (``LayoutError``): the
    elements past the edge of a partial tile would be other elements of the array.
    ``residue=True`` allows them, with CuTe's semantics: the caller then guards every
    access with an identity tensor partitioned the same way (``elem_less(coord, shape)``).

    >>> t = make_tensor(np.arange(100).reshape(10, 10))
    >>> local_tile(t, (16, 16), (0, 0))
    Traceback (most recent call last):
    ...
    layoutalg.errors.LayoutError: local_tile: tile (16, 16) does not divide the tensor's shape (10,10): 16 over a mode of size 10 (mode 0) leaves a partial tile, whose elements past the edge would be other elements of the array (or outside it). Tile by a divisor of the shape; or, for CuTe's residue semantics, make the tensor with make_tensor(..., residue=True) and guard every access with an identity tensor partitioned the same way (elem_less(coord, shape)), as layoutalg.host_gemm does
    >>> str(local_tile(make_tensor(np.zeros((10, 10)), residue=True), (16, 16), (0, 0)).layout)
    '(16,16):(10,1)'
    """
    if isinstance(layout, tuple) or is_int(layout):
        layout = Layout(layout)
    if isinstance(engine, np.ndarray):
        if layout is None:
            base, layout = _numpy_layout(engine)
            return Tensor(ArrayEngine(base, 0, residue), layout)
        flat = engine.reshape(-1)
        if _cos(layout) > flat.size:
            raise LayoutError(
                f"make_tensor: layout {layout} needs {_cos(layout)} elements, array has {flat.size}")
        return Tensor(ArrayEngine(flat, 0, residue), layout)
    if isinstance(engine, (ArrayEngine, PointerEngine, CoordEngine)):
        if layout is None:
            raise LayoutError("make_tensor: an engine needs a layout")
        return Tensor(engine, layout)
    if isinstance(engine, str) and layout is not None and not _is_dtype_name(engine):
        return Tensor(PointerEngine(engine), layout)
    if layout is not None:
        dt = _dtype(engine)
        return Tensor(RegisterEngine(dt, _cos(layout)), layout)
    raise LayoutTypeError(f"make_tensor: cannot make a tensor of {engine!r}")


def _is_dtype_name(x):
    try:
        _dtype(x)
        return True
    except LayoutTypeError:
        return False


def _dtype(x):
    if isinstance(x, str):
        try:
            e = element_type(x, "make_tensor")
        except LayoutTypeError:
            e = None
        if e is not None and e.host:
            return np.dtype(e.host)
    try:
        return np.dtype(x)
    except TypeError:
        raise LayoutTypeError(f"make_tensor: unknown element type {x!r}") from None


def _cos(layout):
    from .layout import cosize

    if isinstance(layout, ComposedLayout):
        return cosize(layout.inner)
    return cosize(layout)


# ---- identity tensors ----------------------------------------------------

def make_basis_like(shape):
    """Coordinate-basis strides for ``shape``: ``(M,(N0,N1))`` gives ``(E<0>,(E<1,0>,E<1,1>))``."""
    def go(s, path):
        if isinstance(s, tuple):
            return tuple(go(x, path + (i,)) for i, x in enumerate(s))
        return ScaledBasis(1, path)

    if not isinstance(shape, tuple):
        return 1
    return tuple(go(x, (i,)) for i, x in enumerate(shape))


def make_identity_layout(shape):
    """``(shape):(E<0>,E<1>,...)``: maps a coordinate to itself."""
    from .inttuple import check_shape

    shape = check_shape("make_identity_layout", shape)
    return Layout._make(shape, make_basis_like(shape))


def make_identity_tensor(shape):
    """The coordinate tensor of ``shape``: ``t[c] == c``.

    Partitioning it the same way as a data tensor tells which coordinates a
    thread touches; ``elem_less(t[i], shape)`` is then the residue predicate.
    """
    lay = make_identity_layout(shape)
    r = len(shape) if isinstance(shape, tuple) else None
    return Tensor(CoordEngine(0, r), lay)


# ---- tiling and partitioning ---------------------------------------------

def dice(proj, t):
    """Keep the modes of ``t`` where ``proj`` is not ``None`` (CuTe's ``dice`` with ``X`` as ``None``)."""
    if not isinstance(proj, tuple):
        return t
    items = list(t) if isinstance(t, tuple) else [t]
    if len(proj) != len(items):
        raise LayoutError(f"dice: projection {proj!r} does not match {t!r}")
    kept = tuple(x for p, x in zip(proj, items) if p is not None)
    return kept


def get_flat_coord(layout, idx):
    """The rank-``R`` coordinate of index ``idx`` in ``layout``'s arrangement (CuTe's ``get_flat_coord``).

    Each leaf is ``(idx // stride) % shape``; each mode is then collapsed to its own 1-D coordinate.
    """
    def hier(s, d):
        if isinstance(s, tuple):
            return tuple(hier(x, y) for x, y in zip(s, d))
        if s == 1 or d == 0:
            return 0
        return (idx // d) % s

    crd = hier(layout.shape, layout.stride)
    if not isinstance(layout.shape, tuple):
        return crd
    return tuple(crd2idx(c, s) if isinstance(s, tuple) else c for c, s in zip(crd, layout.shape))


def _repeat_slots(n):
    return (None,) * n


def inner_partition(tensor, tiler, coord):
    """The tile at ``coord`` of ``zipped_divide(tensor, tiler)``: ``tiled(repeat(_), coord)``."""
    t = _alg.zipped_divide(tensor, tiler)
    lay = t.layout if isinstance(t, Tensor) else t
    r0 = rank(lay[0])
    if isinstance(coord, tuple):
        r1 = rank(lay[1])
        coord = coord + (None,) * (r1 - len(coord))
    return t[(_repeat_slots(r0) if r0 > 1 or isinstance(lay[0].shape, tuple) else None, coord)]


def outer_partition(tensor, tiler, coord):
    """Element ``coord`` of every tile of ``zipped_divide(tensor, tiler)``: ``tiled(coord, repeat(_))``."""
    t = _alg.zipped_divide(tensor, tiler)
    lay = t.layout if isinstance(t, Tensor) else t
    r1 = rank(lay[1])
    if isinstance(coord, tuple):
        r0 = rank(lay[0])
        coord = coord + (None,) * (r0 - len(coord))
    rest = _repeat_slots(r1) if isinstance(lay[1].shape, tuple) else None
    return t[(coord, rest)]


def local_tile(tensor, tiler, coord, proj=None):
    """The CTA tile at ``coord``: ``inner_partition(tensor, tiler, coord)``.

    ``proj`` (e.g. ``(1, None, 1)``) selects the tiler and coordinate modes that apply.
    """
    if proj is not None:
        tiler = dice(proj, tiler)
        coord = dice(proj, coord)
    if isinstance(tensor, Tensor):
        tensor.check_tiler("local_tile", tiler)
    return inner_partition(tensor, tiler, coord)


def local_partition(tensor, thr_layout, idx, proj=None):
    """Thread ``idx``'s elements when ``thr_layout``'s threads tile ``tensor`` (outer partition)."""
    if not isinstance(thr_layout, Layout):
        raise LayoutTypeError(f"local_partition: thread layout must be a Layout, got {thr_layout!r}")
    n = size(thr_layout)         # the index runs over all threads, also with a projection
    if isinstance(idx, bool) or not is_int(idx) or not 0 <= idx < n:
        raise LayoutError(f"local_partition: thread index {idx!r} out of range [0, {n}) for {thr_layout}")
    if proj is not None:
        thr_layout = make_layout(*[thr_layout[i] for i, p in enumerate(proj) if p is not None])
    tiler = tuple(size(m) for m in thr_layout) if isinstance(thr_layout.shape, tuple) else size(thr_layout)
    if isinstance(tensor, Tensor):
        tensor.check_tiler("local_partition", tiler)
    return outer_partition(tensor, tiler, get_flat_coord(thr_layout, idx))


# ---- fragments and views -------------------------------------------------

def make_fragment_like(x, dtype=None):
    """A register tensor shaped like ``x`` (a tensor or a layout).

    Mode 0 is compact column-major (stride-0 sub-modes stay 0); the other modes are
    compact in ``x``'s stride order, as CuTe's ``make_fragment_like``.
    """
    layout = x.layout if isinstance(x, Tensor) else x
    if isinstance(layout, ComposedLayout):
        layout = layout.inner
    if dtype is None:
        dtype = getattr(x, "dtype", None) or np.float32
    frag = _fragment_layout(layout)
    return Tensor(RegisterEngine(_dtype(dtype), _cos(frag)), frag)


def _fragment_layout(layout):
    """CuTe's ``make_fragment_like(layout)``: mode 0 column-major keeping its stride-0
    (broadcast) sub-modes, then the other modes compact in the order of their strides
    (``make_ordered_layout``), after mode 0.

    >>> str(_fragment_layout(Layout((4, 3, 5), (15, 5, 1))))
    '(4,3,5):(1,20,4)'
    >>> str(_fragment_layout(Layout(((2, 2), 3), ((0, 1), 0))))     # stride 0 in mode 0 kept
    '((2,2),3):((0,1),2)'
    """
    r = rank(layout)
    if r <= 1 or not isinstance(layout.shape, tuple):
        return Layout(layout.shape)
    s0, d0 = layout.shape[0], layout.stride[0]
    fs, fd = flat_tuple(s0), flat_tuple(d0)
    strides, cur = [], 1
    for s, d in zip(fs, fd):
        if s == 1 or (is_int(d) and d == 0):
            strides.append(0)
        else:
            strides.append(cur)
            cur *= s
    d0 = unflatten(tuple(strides), s0) if isinstance(s0, tuple) else strides[0]
    rest = make_ordered_layout(tuple(layout.shape[1:]), tuple(_abs_stride(d) for d in layout.stride[1:]))
    return Layout._make((s0,) + tuple(rest.shape), (d0,) + tuple(_scale(rest.stride, cur)))


def _abs_stride(d):
    if isinstance(d, tuple):
        return tuple(_abs_stride(x) for x in d)
    return abs(d) if isinstance(d, int) else 1


def _scale(d, k):
    if isinstance(d, tuple):
        return tuple(_scale(x, k) for x in d)
    return d * k


def recast(tensor, dtype):
    """View a host/register tensor as another element type (layout via ``recast_layout``)."""
    if not isinstance(tensor.engine, ArrayEngine):
        raise LayoutError(f"recast: needs a tensor over host or register memory, got {tensor.engine!r}")
    old = tensor.engine.array.dtype
    new = np.dtype(dtype)
    lay = _alg.recast_layout(tensor.layout, old.itemsize * 8, new.itemsize * 8)
    arr = tensor.engine.array
    off_bytes = tensor.engine.offset * old.itemsize
    if off_bytes % new.itemsize:
        raise LayoutError(f"recast: offset {tensor.engine.offset} is not aligned to {new}")
    nbytes = arr.size * old.itemsize
    view = arr.view(np.uint8)[: nbytes - nbytes % new.itemsize].view(new)
    eng = type(tensor.engine).__new__(type(tensor.engine))
    ArrayEngine.__init__(eng, view, off_bytes // new.itemsize)
    return Tensor(eng, lay)


def group_modes(x, begin, end=None):
    """Group modes ``[begin, end)`` into one mode (of a tensor or a layout)."""
    layout = x.layout if isinstance(x, Tensor) else x
    r = rank(layout)
    if end is None:
        end = r
    if not 0 <= begin <= end <= r:
        raise LayoutError(f"group_modes: range [{begin}, {end}) out of range for rank {r}")
    modes = list(layout) if isinstance(layout.shape, tuple) else [layout]
    grouped = modes[:begin] + [make_layout(*modes[begin:end])] + modes[end:]
    new = make_layout(*grouped)
    return x.with_layout(new) if isinstance(x, Tensor) else new
