"""``Layout``: a shape and a stride, a function from coordinates to offsets.

A layout maps an index ``i`` (or a coordinate congruent to its shape) to the
inner product of the coordinate with the stride.  Coordinates are
colexicographic, and the default stride is compact column-major, as in CuTe.

>>> L = Layout((4, (2, 2)), (2, (1, 8)))
>>> str(L)
'(4,(2,2)):(2,(1,8))'
>>> [L(i) for i in range(6)]
[0, 2, 4, 6, 1, 3]
>>> L(1, (1, 0)) == 3
True
>>> str(L(None, (1, None)))
'(4,2):(2,8)'
"""

from .basis import ScaledBasis
from .errors import LayoutError, LayoutIndexError, LayoutTypeError
from .inttuple import (
    check_int_tuple, check_shape, congruent, _crd2idx, flat_tuple, fmt, is_int, prefix_product,
    product, unflatten,
)
import math

__all__ = [
    "Layout", "make_layout", "make_ordered_layout", "make_layout_like", "size", "cosize",
    "rank", "depth", "shape", "stride", "slice_and_offset", "is_layout", "_", "Underscore",
    "compact_col_major",
]


class Underscore:
    """The slice placeholder ``_``: keeps a mode when slicing (``None`` means the same)."""

    _inst = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self):
        return "_"


_ = Underscore()


def _is_slot(c):
    return c is None or c is _


def _check_stride(op, d):
    if isinstance(d, (tuple, list)):
        return tuple(_check_stride(op, x) for x in d)
    if isinstance(d, ScaledBasis):
        return d
    if isinstance(d, bool) or not is_int(d):
        raise LayoutTypeError(f"{op}: stride must be an int or a tuple of ints, got {d!r}")
    return int(d)


def compact_col_major(shape, current=1):
    """Compact column-major strides, as CuTe's ``compact_major<LayoutLeft>``: size-1 modes get stride 0.

    >>> compact_col_major((2, (1, 3), 1)) == (1, (0, 2), 0)
    True
    """
    if isinstance(shape, tuple):
        out = []
        for s in shape:
            out.append(compact_col_major(s, current))
            current = current * product(s)
        return tuple(out)
    return 0 if shape == 1 else current


class _LayoutSlots:
    """The storage of a :class:`Layout` (see :func:`_build`)."""

    # ``_fs``/``_fd``: the flat shape and stride tuples, built once with the layout; the
    # algebra's loops run on them.  ``_hash``: computed on first use.
    __slots__ = ("shape", "stride", "_hash", "_fs", "_fd")


class _LayoutBuilder(_LayoutSlots):
    """A :class:`Layout` under construction: the same slots, without the immutability guard."""

    __slots__ = ()


class Layout(_LayoutSlots):
    """An immutable, hashable (shape, stride) pair.

    Pre: ``shape`` is a positive int-tuple; ``stride`` is congruent to it (ints,
    possibly zero or negative, or coordinate bases ``E<i>``).  Without a stride
    the layout is compact column-major; as in CuTe C++, size-1 modes of a
    compact layout get stride 0 (``Layout((2, 1))`` is ``(2,1):(1,0)``).
    """

    __slots__ = ()

    def __init__(self, shape, stride=None):
        try:
            shape = check_shape("Layout", shape)
            if stride is None:
                stride = compact_col_major(shape)
            else:
                stride = _check_stride("Layout", stride)
                if not congruent(shape, stride):
                    raise LayoutError(
                        f"Layout: shape {fmt(shape)} and stride {fmt(stride)} are not congruent")
        except RecursionError:
            raise LayoutError("Layout: shape or stride is nested too deeply") from None
        _set_shape(self, shape)
        _set_stride(self, stride)
        _set_hash(self, None)
        if type(shape) is tuple:
            _set_fs(self, flat_tuple(shape))
            _set_fd(self, flat_tuple(stride))
        else:
            _set_fs(self, (shape,))
            _set_fd(self, (stride,))

    @staticmethod
    def _make(shape, stride):
        """Trusted constructor for results of the algebra (no validation)."""
        if type(shape) is tuple:
            return _build(shape, stride, flat_tuple(shape), flat_tuple(stride))
        return _build(shape, stride, (shape,), (stride,))

    @staticmethod
    def _make_flat(shape, stride, fs, fd):
        """Trusted constructor given also the flat tuples ``fs == flat_tuple(shape)``, ``fd``."""
        return _build(shape, stride, fs, fd)

    def __setattr__(self, name, value):
        raise AttributeError("Layout is immutable")

    def __reduce__(self):
        return (Layout, (self.shape, self.stride))

    # ---- identity ---------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, Layout):
            return NotImplemented
        return self.shape == other.shape and self.stride == other.stride

    def __hash__(self):
        h = self._hash
        if h is None:                   # computed on first use (most results are never hashed)
            h = hash((self.shape, self.stride))
            _set_hash(self, h)
        return h

    def __str__(self):
        return f"{fmt(self.shape)}:{fmt(self.stride)}"

    def __repr__(self):
        return f"Layout({self.shape!r}, {self.stride!r})"

    def __format__(self, spec):
        return format(str(self), spec)

    @classmethod
    def parse(cls, text):
        """Read CuTe's printed form, e.g. ``"(4,(2,2)):(2,(1,8))"`` or ``"(8,8)"`` (compact).

        >>> Layout.parse("(4,(2,2)):(2,(1,8))") == Layout((4, (2, 2)), (2, (1, 8)))
        True
        """
        from .parse import parse_layout

        result = parse_layout(text)
        return result

    # ---- modes ------------------------------------------------------------
    def __getitem__(self, i):
        """Mode ``i`` as a layout (a rank-1 layout's mode 0 is itself)."""
        if isinstance(i, bool) or not is_int(i):
            raise LayoutTypeError(f"Layout[{i!r}]: mode index must be an int")
        r = rank(self)
        if i < 0:
            i += r
        if not 0 <= i < r:
            raise LayoutIndexError(f"Layout[{i}]: mode out of range for rank-{r} layout {self}")
        if not isinstance(self.shape, tuple):
            return self
        return Layout._make(self.shape[i], self.stride[i])

    def __iter__(self):
        for i in range(rank(self)):
            yield self[i]

    def size(self):
        return product(self.shape)

    def cosize(self):
        return cosize(self)

    # ---- evaluation -------------------------------------------------------
    def __call__(self, *args):
        """``L(i)``, ``L(coord)``, ``L(c0, c1, ...)``; with ``None``/``_`` in the coordinate, a slice."""
        if len(args) == 1:
            crd = args[0]
        elif len(args) == 0:
            raise LayoutError(f"Layout({self}): call needs an index or a coordinate")
        else:
            crd = tuple(args)
        if isinstance(crd, list):
            crd = tuple(crd)
        if type(crd) is int:
            # fast path for a 1-D index: no slot search, no message formatting
            if 0 <= crd < product(self.shape):
                return _crd2idx(crd, self.shape, self.stride)
        elif _has_slot(crd):
            return slice_and_offset(crd, self)[0]
        _check_coord(self, crd, self.shape)     # the message names the layout only on failure
        return _crd2idx(crd, self.shape, self.stride)

    def _repr_svg_(self):
        from .draw import svg_of

        return svg_of(self)


_set_shape = Layout.shape.__set__          # slot descriptors: bypass the immutability guard
_set_stride = Layout.stride.__set__
_set_hash = Layout._hash.__set__
_set_fs = Layout._fs.__set__
_set_fd = Layout._fd.__set__


def _build(shape, stride, fs, fd):
    """A layout from trusted parts, as fast as Python allows.

    The slots are filled on a :class:`_LayoutBuilder` (plain attribute stores, no guard)
    and the object then becomes a :class:`Layout` (same slots, so ``__class__`` may be
    assigned); storing through the slot descriptors of a guarded object costs three times
    as much, and the algebra builds a layout for every intermediate result.  The builder
    is made by calling its class (``object.__new__(cls)`` goes through a slower, checking
    wrapper).
    """
    self = _LayoutBuilder()
    self.shape = shape
    self.stride = stride
    self._fs = fs
    self._fd = fd
    self._hash = None
    self.__class__ = Layout
    return self


def is_layout(x):
    return isinstance(x, Layout)


def _has_slot(c):
    if isinstance(c, tuple):
        return any(_has_slot(x) for x in c)
    return _is_slot(c)


def _opname(op):
    return op if isinstance(op, str) else f"Layout({op})"


def _check_coord(op, crd, shp):
    """Validate a coordinate; ``op`` is the operation's name or the layout being called."""
    if isinstance(crd, tuple):
        if not isinstance(shp, tuple) or len(crd) != len(shp):
            raise LayoutIndexError(
                f"{_opname(op)}: coordinate {_fmt_crd(crd)} is not congruent to shape {fmt(shp)}")
        for c, s in zip(crd, shp):
            _check_coord(op, c, s)
        return
    if isinstance(crd, bool) or not is_int(crd):
        raise LayoutTypeError(f"{_opname(op)}: coordinate entries must be ints, got {crd!r}")
    n = product(shp)
    if not 0 <= crd < n:
        raise LayoutIndexError(f"{_opname(op)}: coordinate {crd} out of range [0, {n}) for shape {fmt(shp)}")


# ---- construction --------------------------------------------------------

def make_layout(*args, stride=None):
    """``make_layout(shape, stride=None)`` or ``make_layout(L0, L1, ...)`` (concatenate modes).

    >>> str(make_layout((2, 3)))
    '(2,3):(1,2)'
    >>> str(make_layout(Layout(2, 3), Layout(4, 1)))
    '(2,4):(3,1)'
    """
    if args and all(isinstance(a, Layout) for a in args):
        if stride is not None:
            raise LayoutError("make_layout: a stride cannot be given with layout arguments")
        return Layout._make(tuple(a.shape for a in args), tuple(a.stride for a in args))
    if any(isinstance(a, Layout) for a in args):
        raise LayoutTypeError(f"make_layout: mixes layouts and non-layouts: {args!r}")
    if len(args) == 2 and stride is None:
        return Layout(args[0], args[1])
    if len(args) != 1:
        raise LayoutError(f"make_layout: expected (shape, stride=None) or layouts, got {len(args)} arguments")
    return Layout(args[0], stride)


def make_ordered_layout(shape, order=None):
    """A compact layout whose strides increase in the given order of modes.

    ``order`` is congruent to ``shape``; the mode with the smallest order value
    gets stride 1 (ties broken left to right).

    >>> str(make_ordered_layout((2, 3, 4), (1, 2, 0)))
    '(2,3,4):(4,8,1)'
    """
    shape = check_shape("make_ordered_layout", shape)
    if order is None:
        return Layout(shape)
    if not congruent(shape, order) and not (
            len(flat_tuple(order)) == len(flat_tuple(shape))):
        raise LayoutError(f"make_ordered_layout: order {fmt(order)} does not match shape {fmt(shape)}")
    fs, fo = flat_tuple(shape), flat_tuple(order)
    strides = [0] * len(fs)
    cur = 1
    for i in sorted(range(len(fs)), key=lambda k: (fo[k], k)):
        strides[i] = 0 if fs[i] == 1 else cur
        cur *= fs[i]
    return Layout._make(shape, unflatten(tuple(strides), shape) if isinstance(shape, tuple) else strides[0])


def make_layout_like(layout):
    """A compact layout of the same shape whose strides follow ``layout``'s stride order.

    Stride-0 (broadcast) modes stay stride 0, as for register fragments.

    >>> str(make_layout_like(Layout((2, 3), (3, 1))))
    '(2,3):(3,1)'
    """
    if not isinstance(layout, Layout):
        raise LayoutTypeError(f"make_layout_like: expected a layout, got {layout!r}")
    fs, fd = flat_tuple(layout.shape), flat_tuple(layout.stride)
    strides = [0] * len(fs)
    cur = 1
    for i in sorted(range(len(fs)), key=lambda k: (abs(fd[k]) if isinstance(fd[k], int) else 0, k)):
        if fd[i] == 0 or fs[i] == 1:
            continue
        strides[i] = cur
        cur *= fs[i]
    return Layout._make(layout.shape,
                        unflatten(tuple(strides), layout.shape) if isinstance(layout.shape, tuple) else strides[0])


# ---- accessors -----------------------------------------------------------

def _layout_of(x):
    if isinstance(x, Layout):
        return x
    lay = getattr(x, "layout", None)
    if isinstance(lay, Layout):
        return lay
    return None


def size(x, mode=None):
    """Number of elements: of a layout's domain, or the product of an int-tuple."""
    if mode is not None:
        if isinstance(x, Layout):
            return product(x[mode].shape)
        lay = _layout_of(x)
        if lay is not None:                     # a layout-like object: a tensor, a composed layout
            return product(lay[mode].shape)
        return product(x[mode] if isinstance(x, tuple) else x)
    if isinstance(x, Layout):
        return product(x.shape)
    if hasattr(x, "size") and callable(x.size):
        return x.size()
    return product(check_int_tuple("size", x))


def cosize(x):
    """The size of the codomain: as CuTe's ``cosize``, ``size(coshape(layout))``.

    For non-negative strides this is one past the largest offset.  CuTe protects
    against negative strides by measuring the layout with ``|stride|``, so the
    result is the extent of the offsets in either direction plus one.

    >>> cosize(Layout((4, 2), (2, 1)))
    8
    >>> cosize(Layout((4, 2), (-2, 0)))
    7
    """
    if not isinstance(x, Layout):
        if hasattr(x, "cosize"):
            return x.cosize()
        raise LayoutTypeError(f"cosize: expected a layout, got {x!r}")
    top = 0
    for s, d in zip(flat_tuple(x.shape), flat_tuple(x.stride)):
        if not isinstance(d, int):
            raise LayoutError(f"cosize: layout {x} has coordinate-basis strides; use its shape instead")
        top += (s - 1) * abs(d)
    return top + 1


def rank(x):
    """Number of top-level modes."""
    if isinstance(x, Layout):
        return len(x.shape) if isinstance(x.shape, tuple) else 1
    lay = _layout_of(x)
    if lay is not None:                         # a layout-like object: a tensor, a composed layout
        return rank(lay)
    if not isinstance(x, tuple) and (isinstance(x, bool) or not is_int(x)):
        raise LayoutTypeError(f"rank: expected a layout or an int-tuple, got {x!r}")
    return len(x) if isinstance(x, tuple) else 1


def depth(x):
    from .inttuple import depth as _depth

    if isinstance(x, Layout):
        return _depth(x.shape)
    if hasattr(x, "shape") and not isinstance(x, tuple):
        return _depth(x.shape)
    return _depth(check_int_tuple("depth", x))


def shape(x):
    if isinstance(x, (int, tuple)):
        return x
    return x.shape


def stride(x):
    return x.stride


# ---- slicing -------------------------------------------------------------

def _slice(crd, t):
    """Keep the parts of ``t`` selected by slots in ``crd``; nested results are spliced (CuTe's slice)."""
    if isinstance(crd, tuple):
        out = []
        for c, x in zip(crd, t):
            if isinstance(c, tuple):
                out.extend(_slice(c, x))
            elif _is_slot(c):
                out.append(x)
        return tuple(out)
    return (t,) if _is_slot(crd) else ()


def _offset(op, crd, shp, strd):
    if isinstance(crd, tuple):
        if not isinstance(shp, tuple) or len(crd) != len(shp):
            raise LayoutIndexError(f"{op}: coordinate {_fmt_crd(crd)} is not congruent to shape {fmt(shp)}")
        r = 0
        for c, s, d in zip(crd, shp, strd):
            r = r + _offset(op, c, s, d)
        return r
    if _is_slot(crd):
        return 0
    _check_coord(op, crd, shp)
    return _crd2idx(crd, shp, strd)


def _fmt_crd(c):
    if isinstance(c, tuple):
        return "(" + ",".join(_fmt_crd(x) for x in c) + ")"
    return "_" if _is_slot(c) else str(c)


def slice_and_offset(crd, layout):
    """The sub-layout selected by the slots (``None``/``_``) of ``crd``, and the offset of the rest.

    >>> L = Layout((4, 8), (8, 1))
    >>> sub, off = slice_and_offset((None, 3), L)
    >>> str(sub), off
    ('(4):(8)', 3)
    """
    if isinstance(crd, list):
        crd = tuple(crd)
    if not isinstance(layout, Layout):
        if hasattr(layout, "slice_and_offset"):
            return layout.slice_and_offset(crd)
        raise LayoutTypeError(f"slice_and_offset: expected a layout, got {layout!r}")
    op = f"slice_and_offset({_fmt_crd(crd)}, {layout})"
    off = _offset(op, crd, layout.shape, layout.stride)
    if not isinstance(crd, tuple):
        return (layout, off) if _is_slot(crd) else (Layout._make((), ()), off)
    shp = _slice(crd, layout.shape)
    std = _slice(crd, layout.stride)
    return Layout._make(shp, std), off
