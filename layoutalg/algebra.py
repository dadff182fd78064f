"""The layout algebra: coalesce, composition, complement, inverses, divides and products.

Definitions follow CuTe C++ (CUTLASS ``cute/layout.hpp``).  The loops run on the
flat shape and stride tuples every ``Layout`` carries (``_fs``, ``_fd``, built once
with it), and intermediate results are built with the trusted constructor, so a
call on fresh layouts costs a few microseconds; nothing is memoised (hashing the
arguments of a memo would cost as much as computing).

>>> from layoutalg import Layout
>>> str(composition(Layout((4, 3), (3, 1)), Layout(6, 2)))
'(2,3):(6,1)'
>>> str(complement(Layout(4, 2), 24))
'(2,3):(1,8)'
>>> str(logical_divide(Layout(16, 1), Layout(4, 1)))
'(4,4):(1,4)'
>>> str(logical_product(Layout((2, 2), (4, 1)), Layout(6, 1)))
'((2,2),(2,3)):((4,1),(2,8))'
"""

from math import gcd, prod

from .basis import ScaledBasis
from .errors import LayoutError, LayoutTypeError
from .element_types import element_type
from .inttuple import (
    ceil_div, compatible, flat_tuple, fmt, is_int, prefix_product, product, unflatten,
)
from .layout import (
    Layout, _LayoutBuilder, _build as _build_layout, _layout_of, _new, cosize, make_layout, make_ordered_layout, rank, size,
)
from .swizzle import ComposedLayout, Swizzle

__all__ = [
    "coalesce", "filter", "filter_zeros", "composition", "complement", "right_inverse",
    "left_inverse", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product",
    "raked_product", "tile_to_shape", "upcast", "downcast", "recast_layout",
    "max_common_layout", "max_common_vector", "nullspace", "with_shape", "flatten_layout",
    "append", "zip_layouts", "get_nonswizzle_portion",
]

_build = _make_flat = _build_layout      # trusted: (shape, stride, flat shape, flat stride)


def _as_layout(op, x):
    if isinstance(x, Layout):
        return x
    if isinstance(x, bool):
        raise LayoutTypeError(f"{op}: expected a layout or an int, got {x!r}")
    if is_int(x):
        return Layout(int(x))
    raise LayoutTypeError(f"{op}: expected a layout, got {x!r}")


def _layout_like(x):
    """``(x.layout, x.with_layout)`` for a layout-like object, else ``None``.

    The protocol: an object that is not a :class:`Layout` but wraps one -- a
    :class:`ComposedLayout` (``outer o offset o inner``) or a :class:`~layoutalg.Tensor`
    (an engine over a layout) -- takes part in composition, the divides and products,
    ``tile_to_shape`` and ``coalesce`` by exposing

    * ``x.layout``: the plain layout the operation acts on (a composed layout's inner one);
    * ``x.with_layout(L)``: the same kind of object over the layout ``L``;

    and the operation returns ``x.with_layout(op(x.layout, ...))``.  Objects for which
    re-wrapping is not enough define the operation as a method of the same name
    (``ComposedLayout.upcast``/``downcast`` also change the swizzle), which the
    operation calls instead.
    """
    if isinstance(x, Layout):
        return None
    lay = getattr(x, "layout", None)
    rewrap = getattr(x, "with_layout", None)
    if isinstance(lay, Layout) and callable(rewrap):
        return lay, rewrap
    return None


def _flat_modes(L):
    return L._fs, L._fd


def _from_modes(shapes, strides):
    """A layout from flat mode lists: one mode -> int-shaped, none -> ``1:0``."""
    n = len(shapes)
    if n > 1:
        s, d = tuple(shapes), tuple(strides)
        return _make_flat(s, d, s, d)
    if n == 1:
        s, d = shapes[0], strides[0]
        return _make_flat(s, d, (s,), (d,))
    return _make_flat(1, 0, (1,), (0,))


# ---- coalesce / filter ---------------------------------------------------

def _coalesce_modes(shapes, strides):
    """Flat modes merged where ``shape * stride`` of one is the next one's stride; size-1
    modes dropped.  Lists ``[], []`` when every mode has size 1."""
    rs, rd = [], []
    cs, cd = 1, 0                   # the mode being grown (cs == 1: none yet)
    for s, d in zip(shapes, strides):
        if s == 1:
            continue
        if cs == 1:
            cs, cd = s, d
        elif cs * cd == d:
            cs *= s
        else:
            rs.append(cs)
            rd.append(cd)
            cs, cd = s, d
    if cs != 1:
        rs.append(cs)
        rd.append(cd)
    return rs, rd


def _coalesced_modes(L):
    """The flat (shapes, strides) of ``coalesce(L)`` as lists (``[], []`` for ``1:0``)."""
    return _coalesce_modes(L._fs, L._fd)


def _coalesce(L):
    """``coalesce(L)`` for a trusted layout."""
    return coalesce(L)


def coalesce(layout, profile=None):
    """The layout with the fewest modes that is the same function on ``[0, size)``.

    With a tuple ``profile``, coalesce each of the first ``rank(profile)`` modes
    on its own (recursively) and keep the mode structure.

    >>> str(coalesce(Layout((2, (1, 6)), (1, (6, 2)))))
    '12:1'
    >>> str(coalesce(Layout((2, (2, 3)), (1, (2, 4))), (1, 1)))
    '(2,6):(1,2)'
    """
    if type(profile) is not tuple and isinstance(layout, Layout):
        # one pass over the flat modes (inline: this is the whole cost of a call)
        L = layout
        fs, fd = L._fs, L._fd
        if len(fs) == 1:
            s = fs[0]
            if s == 1:
                return _build(1, 0, (1,), (0,))
            if type(L.shape) is not tuple:
                return L
            return _build(s, fd[0], fs, fd)
        rs = rd = None
        cs, cd = 1, 0                   # the mode being grown (cs == 1: none yet)
        for s, d in zip(fs, fd):
            if s == 1:
                continue
            if cs == 1:
                cs, cd = s, d
            elif cs * cd == d:
                cs *= s
            elif rs is None:
                rs, rd = [cs], [cd]
                cs, cd = s, d
            else:
                rs.append(cs)
                rd.append(cd)
                cs, cd = s, d
        if rs is None:
            return _build(cs, cd, (cs,), (cd,)) if cs != 1 else _build(1, 0, (1,), (0,))
        rs.append(cs)
        rd.append(cd)
        rs, rd = tuple(rs), tuple(rd)
        return _build(rs, rd, rs, rd)
    if not isinstance(layout, Layout):
        if hasattr(layout, "coalesce"):
            return layout.coalesce(profile)
        raise LayoutTypeError(f"coalesce: expected a layout, got {layout!r}")
    r = rank(layout)
    if len(profile) > r:
        raise LayoutError(f"coalesce: profile {fmt(profile)} has more modes than layout {layout}")
    modes = [coalesce(layout[i], profile[i]) if i < len(profile) else layout[i] for i in range(r)]
    return make_layout(*modes)


def filter_zeros(layout):
    """Replace every stride-0 mode's shape with 1.

    >>> str(filter_zeros(Layout((4, 2), (0, 1))))
    '(1,2):(0,1)'
    """
    layout = _as_layout("filter_zeros", layout)
    def fz(s, d):
        if isinstance(s, tuple):
            return tuple(fz(x, y) for x, y in zip(s, d))
        return 1 if d == 0 else s

    return Layout._make(fz(layout.shape, layout.stride), layout.stride)


def filter(layout):
    """Remove stride-0 and size-1 modes, then coalesce.

    >>> str(filter(Layout((4, 2, 3), (0, 1, 2))))
    '6:1'
    """
    layout = _as_layout("filter", layout)
    shapes, strides = _flat_modes(layout)
    keep = [(s, d) for s, d in zip(shapes, strides) if d != 0 and s != 1]
    return _from_modes(*_coalesce_modes([s for s, _ in keep], [d for _, d in keep]))


# ---- composition ---------------------------------------------------------

def _compose_leaf(op, A, B, ls, ld, s, d, weak=None):
    """``(ls:ld) o (s:d)`` for flat coalesced lhs modes and a single rhs mode.

    Follows CuTe's ``composition_impl``: divide the stride ``d`` out of the lhs
    modes from the left, then mod the shape ``s`` out of what remains; the last
    lhs mode is unbounded.  A stride that neither divides nor is divided by a
    mode's size is accepted (as in CuTe) only when the rest of the rhs then fits
    inside that mode; otherwise the result would not be ``A(B(c))`` and we raise.
    Such a step is recorded in the list ``weak`` (see :func:`_check_additive`).
    """
    if d == 0:
        return s, 0
    if type(d) is not int and isinstance(d, ScaledBasis):
        raise LayoutError(f"{op}: right-hand side with coordinate-basis strides is not supported ({B})")
    n1 = len(ls) - 1
    if n1 == 0:
        return s, ld[0] * d
    if d < 0:
        raise LayoutError(f"{op}: negative stride {d} in {B} needs a rank-1 left-hand side, got {A}")
    res_s = res_d = None            # result modes after the first (f_s, f_d)
    f_s = f_d = 0
    rest_stride, rest_shape = d, s
    for i in range(n1):
        si = ls[i]
        if rest_stride % si == 0:
            # the whole mode is strided over
            rest_stride //= si
            continue
        if rest_stride > si:
            raise LayoutError(
                f"{op}: stride divisibility violated: stride {rest_stride} and shape {si} "
                f"do not divide one another ({A} o {B})")
        if rest_shape == 1:
            rest_stride = 1
            continue
        next_shape = -(-si // rest_stride)
        if si % rest_stride != 0:
            if rest_shape > next_shape:
                raise LayoutError(
                    f"{op}: stride divisibility violated: stride {rest_stride} and shape {si} "
                    f"do not divide one another ({A} o {B})")
            if weak is not None:
                weak.append(si)
        new_s = next_shape if next_shape < rest_shape else rest_shape
        if rest_shape % new_s != 0:
            raise LayoutError(
                f"{op}: shape divisibility violated: shape {new_s} does not divide {rest_shape} "
                f"({A} o {B})")
        if f_s == 0:
            f_s, f_d = new_s, rest_stride * ld[i]
        elif res_s is None:
            res_s, res_d = [f_s, new_s], [f_d, rest_stride * ld[i]]
        else:
            res_s.append(new_s)
            res_d.append(rest_stride * ld[i])
        rest_shape //= new_s
        rest_stride = 1
        if rest_shape == 1:
            break
    if f_s == 0:                    # no mode yet: the rest of the rhs lands in the last lhs mode
        return (rest_shape, rest_stride * ld[-1]) if rest_shape != 1 else (1, 0)
    if rest_shape != 1:
        if res_s is None:
            res_s, res_d = [f_s], [f_d]
        res_s.append(rest_shape)
        res_d.append(rest_stride * ld[-1])
    elif res_s is None:
        return (f_s, f_d) if f_s != 1 else (1, 0)
    rs, rd = _coalesce_modes(res_s, res_d)
    if not rs:
        return 1, 0
    if len(rs) == 1:
        return rs[0], rd[0]
    return tuple(rs), tuple(rd)


def _compose_tree(op, A, B, ls, ld, s, d, weak):
    if type(s) is tuple:
        rs, rd = [], []
        for x, y in zip(s, d):
            a, b = _compose_tree(op, A, B, ls, ld, x, y, weak)
            rs.append(a)
            rd.append(b)
        return tuple(rs), tuple(rd)
    return _compose_leaf(op, A, B, ls, ld, s, d, weak)


def _coalesce_x(L):
    """Flat modes of a coalesce that keeps the function *outside* the domain too (CuTe's ``coalesce_x``).

    The last mode of a layout is unbounded when it is evaluated past its size,
    so a trailing size-1 mode (e.g. the ``1:0`` cap in ``(4,3,1):(3,1,0)``) must
    not be dropped: it is kept as a size-2 mode, as in CuTe.  Used for the
    left-hand side of a composition.
    """
    shapes, strides = L._fs, L._fd
    if len(shapes) == 1:
        return ((2,) if shapes[0] == 1 else shapes), strides
    if shapes[-1] == 1:
        shapes = shapes[:-1] + (2,)
    return _coalesce_modes(shapes, strides)     # never empty: the last shape is > 1


def _max_residue(s, d, P):
    """``max((j*d) % P for j in range(s))`` for ``s >= 1``, ``d > 0``, without the loop when possible."""
    if d % P == 0:
        return 0
    if (s - 1) * d < P:
        return (s - 1) * d
    g = gcd(d, P)
    if s >= P // g:
        return P - g
    return max(j * d % P for j in range(s))


def _check_additive(op, A, B, ls, weak=True):
    """Raise unless ``A(B_0(c_0) + B_1(c_1) + ...) == A(B_0(c_0)) + A(B_1(c_1)) + ...``.

    Composition is computed mode by mode of ``B`` (CuTe's left-distributivity), which
    is exact only if adding the offsets of ``B``'s modes never carries across a mode
    boundary of the (coalesced) ``A``: a carry changes ``A``'s value.  CuTe states the
    condition as "B injective", which is not sufficient (``(4,2):(1,10) o (3,2):(1,3)``);
    the exact test is, at every inner boundary ``P`` of ``A``, that the largest
    residues ``B_k(c) mod P`` of the modes sum to less than ``P``.

    Shortcut: when no mode of ``B`` took a weak (non-dividing) stride step and the
    modes nest (sorted by stride, each starts past the extent of the smaller ones),
    every mode lands on a digit of ``A`` that the smaller ones cannot reach, so no
    sum carries and the exact test is not needed.
    """
    if len(ls) < 2:
        return
    leaves = [(d, s) for s, d in zip(B._fs, B._fd) if s != 1 and type(d) is int and d != 0]
    if len(leaves) < 2:
        return
    if not weak:
        leaves.sort()
        ext = 0
        for d, s in leaves:
            if d < ext:
                break
            ext = d * s
        else:
            return
    P = 1
    for a in ls[:-1]:
        P *= a
        total = 0
        for d, s in leaves:
            m = (s - 1) * d
            total += m if m < P else _max_residue(s, d, P)
        if total >= P:
            raise LayoutError(
                f"{op}: the modes of {B} overlap in the index space of {A}: their offsets "
                f"carry across a mode boundary ({P}), so A o B is not a layout "
                f"(CuTe's precondition: the modes of B select disjoint parts of A)")


def _unflat2(rs, rd, profile, i):
    """``rs[i:]`` and ``rd[i:]`` in the nesting of the tuple ``profile``, and the next index."""
    out_s, out_d = [], []
    for p in profile:
        if type(p) is tuple:
            x, y, i = _unflat2(rs, rd, p, i)
            out_s.append(x)
            out_d.append(y)
        else:
            out_s.append(rs[i])
            out_d.append(rd[i])
            i += 1
    return tuple(out_s), tuple(out_d), i


def _composition(A, B):
    ls, ld = _coalesce_x(A)
    bs = B.shape
    if type(bs) is not tuple:                       # a single rhs mode: nothing to add up
        s, d = _compose_leaf("composition", A, B, ls, ld, bs, B.stride)
        if type(s) is tuple:
            return _build(s, d, s, d)
        return _build(s, d, (s,), (d,))
    return _compose(A, B, ls, ld)


def _compose(A, B, ls, ld):
    """``A o B`` given ``ls, ld = _coalesce_x(A)``."""
    op = "composition"
    bs = B.shape
    if type(bs) is not tuple:                       # a single rhs mode: nothing to add up
        s, d = _compose_leaf(op, A, B, ls, ld, bs, B.stride)
        if type(s) is tuple:
            return _build(s, d, s, d)
        return _build(s, d, (s,), (d,))
    fs, fd = B._fs, B._fd
    if len(ls) == 1:
        # A is one (unbounded) mode a:x, so A o B scales B's strides by x
        x = ld[0]
        rd = []
        for d in fd:
            if type(d) is not int:
                if d == 0:
                    rd.append(0)
                    continue
                _compose_leaf(op, A, B, ls, ld, 1, d)   # raises the message for basis strides
            rd.append(x * d)
        rd = tuple(rd)
        if fs is bs:                                # B is flat
            return _build(bs, rd, bs, rd)
        _, d, _ = _unflat2(fs, rd, bs, 0)
        return _build(bs, d, fs, rd)
    # one leaf of B at a time, on B's flat modes, then back into B's nesting
    weak = []
    rs, rd = [], []
    flat_s = flat_d = None                          # the result's flat modes, when a leaf nests
    for s, d in zip(fs, fd):
        if d == 0:
            rs.append(s)
            rd.append(0)
            if flat_s is not None:
                flat_s.append(s)
                flat_d.append(0)
            continue
        s, d = _compose_leaf(op, A, B, ls, ld, s, d, weak)
        if type(s) is tuple:
            if flat_s is None:
                flat_s, flat_d = list(rs), list(rd)
            flat_s.extend(s)
            flat_d.extend(d)
        elif flat_s is not None:
            flat_s.append(s)
            flat_d.append(d)
        rs.append(s)
        rd.append(d)
    if len(rs) > 1:
        _check_additive(op, A, B, ls, weak)
    if fs is bs:                                    # B is flat
        s, d = tuple(rs), tuple(rd)
    else:
        s, d, _ = _unflat2(rs, rd, bs, 0)
    if flat_s is None:
        return _build(s, d, tuple(rs), tuple(rd))
    return _build(s, d, tuple(flat_s), tuple(flat_d))


def composition(lhs, rhs):
    """``R = lhs o rhs`` with ``R(c) == lhs(rhs(c))`` for every coordinate ``c`` of ``rhs``.

    ``rhs`` may be a layout, an int ``n`` (meaning ``n:1``), or a tuple tiler whose
    entries (layouts, ints or ``None`` to keep a mode) apply to ``lhs``'s modes;
    as in CuTe, modes of ``lhs`` beyond the tiler are dropped.
    Post: ``compatible(rhs, R)`` for a layout ``rhs``.

    >>> str(composition(Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1))))
    '((2,2),3):((24,2),8)'
    >>> str(composition(Layout((12, (4, 8)), (59, (13, 1))), (3, 8)))
    '(3,(4,2)):(59,(13,1))'
    """
    if type(lhs) is Layout and type(rhs) is Layout:
        # the common case inline (a call costs as much as a few of these lines)
        fs = lhs._fs
        if len(fs) == 1:
            ls, ld = ((2,) if fs[0] == 1 else fs), lhs._fd
        else:                                   # _coalesce_x(lhs)
            if fs[-1] == 1:
                fs = fs[:-1] + (2,)
            ls, ld = [], []
            cs, cd = 1, 0
            for s, d in zip(fs, lhs._fd):
                if s == 1:
                    continue
                if cs == 1:
                    cs, cd = s, d
                elif cs * cd == d:
                    cs *= s
                else:
                    ls.append(cs)
                    ld.append(cd)
                    cs, cd = s, d
            ls.append(cs)
            ld.append(cd)
        bs = rhs.shape
        if type(bs) is not tuple:
            s, d = _compose_leaf("composition", lhs, rhs, ls, ld, bs, rhs.stride)
            R = _new(_LayoutBuilder)
            R.shape = s
            R.stride = d
            if type(s) is tuple:
                R._fs = s
                R._fd = d
            else:
                R._fs = (s,)
                R._fd = (d,)
            R._hash = None
            R.__class__ = Layout
            return R
        return _compose(lhs, rhs, ls, ld)
    wrapped = _layout_like(lhs)
    if wrapped is not None:
        return wrapped[1](composition(wrapped[0], rhs))
    if isinstance(lhs, Swizzle):
        if isinstance(rhs, ComposedLayout) or not isinstance(rhs, Layout):
            raise LayoutTypeError(f"composition: a swizzle composes with a layout, got {rhs!r}")
        return ComposedLayout(lhs, 0, rhs)
    if not isinstance(lhs, Layout):
        raise LayoutTypeError(f"composition: left-hand side must be a layout, got {lhs!r}")
    if isinstance(rhs, tuple):
        return _by_mode("composition", lhs, rhs, composition, keep_rest=False)
    if isinstance(rhs, ComposedLayout):
        raise LayoutError(f"composition: a swizzled right-hand side {rhs} is not supported")
    rhs = _as_layout("composition", rhs)
    return _composition(lhs, rhs)


def _by_mode(op, layout, tiler, fn, keep_rest=True):
    """Apply ``fn(mode_i, tiler_i)`` to the first ``len(tiler)`` modes; ``None`` keeps a mode.

    Modes beyond the tiler are kept (divides, products) or, with ``keep_rest=False``,
    dropped -- CuTe's by-mode ``composition`` drops the modes the tiler does not hit.
    """
    r = rank(layout)
    if len(tiler) > r:
        raise LayoutError(f"{op}: tiler {_fmt_tiler(tiler)} has more modes than layout {layout}")
    modes = []
    for i in range(r if keep_rest else len(tiler)):
        m = layout[i]
        if i < len(tiler) and tiler[i] is not None:
            t = tiler[i]
            if isinstance(t, bool) or not (isinstance(t, (Layout, tuple)) or is_int(t)):
                raise LayoutTypeError(f"{op}: tiler entries must be layouts, ints, tuples or None, got {t!r}")
            m = fn(m, t)
        modes.append(m)
    if not modes:
        return Layout._make((), ())
    return make_layout(*modes)


def _fmt_tiler(t):
    if isinstance(t, tuple):
        return "(" + ",".join(_fmt_tiler(x) for x in t) + ")"
    return "_" if t is None else str(t)


# ---- complement ----------------------------------------------------------

def _complement(L, cotarget):
    op = "complement"
    shapes, strides = L._fs, L._fd
    modes = []
    for s, d in zip(shapes, strides):
        if s == 1 or d == 0:
            continue
        if type(d) is not int:
            raise LayoutError(f"{op}: layout {L} has coordinate-basis strides")
        if d < 0:
            raise LayoutError(f"{op}: layout {L} has a negative stride {d}; complement needs positive strides")
        modes.append((d, s))
    if len(modes) > 1:
        modes.sort()       # by stride (equal strides make L non-injective and raise below)
    # The gaps d // cur never merge with one another (coalesce): gap i ends at
    # (d_i // cur_i) * cur_i <= d_i < s_i * d_i = cur_{i+1}; so only size-1 gaps are dropped.
    rs, rd = [], []
    cur = 1
    for d, s in modes:
        if d < cur:
            # CuTe: static_assert(new_shape != 0, "Non-injective Layout detected in complement.")
            raise LayoutError(
                f"{op}: layout {L} is not injective or its modes interleave: stride {d} lies "
                f"inside the extent {cur} of its smaller-stride modes")
        # CuTe divides with truncation: a stride that is not a multiple of the
        # extent leaves a hole the complement does not fill (e.g. (3,6):(1,10)).
        g = d // cur
        if g != 1:
            rs.append(g)
            rd.append(cur)
        cur = s * d
    if type(cotarget) is int:
        rest = -(-cotarget // cur)
    else:
        # CuTe: coalesce(ceil_div(cotarget, cur)) -- the shape is divided from the left;
        # its compact modes coalesce into one
        rest, b = 1, cur
        for a in flat_tuple(cotarget):
            rest *= -(-a // b)
            b = -(-b // a)
    if rest != 1:
        rs.append(rest)
        rd.append(cur)
    return _from_modes(rs, rd)


def complement(layout, cotarget=None):
    """The layout ``C`` such that ``(layout, C)`` is ordered, injective and covers ``cotarget``.

    Pre: ``layout`` has non-negative strides and, sorted by stride, each mode starts
    at or beyond the extent of the smaller ones (so it is injective).
    Post: ``C`` is ordered (increasing strides), disjoint from ``layout`` except at 0,
    and ``size(C) >= ceil(cotarget / cosize(layout))``.

    >>> str(complement(Layout((2, 2), (1, 6)), 24))
    '(3,2):(2,12)'
    >>> str(complement(Layout(4, 1)))
    '1:0'
    """
    if type(cotarget) is int and cotarget > 0 and type(layout) is Layout:
        return _complement(layout, cotarget)
    if not isinstance(layout, Layout):
        layout = _as_layout("complement", layout)
    if cotarget is None:
        cotarget = cosize(filter(layout))
    elif isinstance(cotarget, bool) or not (is_int(cotarget) or isinstance(cotarget, tuple)):
        raise LayoutTypeError(f"complement: cotarget must be an int or a shape, got {cotarget!r}")
    elif isinstance(cotarget, tuple):
        from .inttuple import check_shape
        cotarget = check_shape("complement", cotarget)
    else:
        cotarget = int(cotarget)
        if cotarget <= 0:
            raise LayoutError(f"complement: cotarget must be positive, got {cotarget}")
    return _complement(layout, cotarget)


# ---- inverses ------------------------------------------------------------

def _right_inverse(L):
    fs, fd = L._fs, L._fd
    if len(fs) == 1:
        s, d = fs[0], fd[0]
        if s != 1 and d == 1 and type(d) is int:
            return _build(s, 1, (s,), (1,))
        return _build(1, 0, (1,), (0,))
    shapes, strides = _coalesce_modes(fs, fd)
    # stride -> (prefix product of the shape, shape), for the int strides
    where = {}
    p = 1
    for s, d in zip(shapes, strides):
        if type(d) is int and d not in where:      # the first mode of a repeated stride wins
            where[d] = (p, s)
        p *= s
    rs, rd = [], []
    cur = 1
    while cur in where:
        p, s = where.pop(cur)
        rs.append(s)
        rd.append(p)
        cur = s * cur
    # no two of these modes merge (coalesce): mode b follows mode a in the chain when
    # d_b == s_a * d_a, and then p_b == s_a * p_a only if b is next to a in coalesce(L),
    # where it would have been merged with a
    return _from_modes(rs, rd)


def right_inverse(layout):
    """``R`` with ``layout(R(i)) == i`` for every ``i`` in ``[0, size(R))`` (the largest such).

    >>> str(right_inverse(Layout((4, 2), (2, 1))))
    '(2,4):(4,1)'
    """
    if type(layout) is not Layout:
        if hasattr(layout, "right_inverse"):
            return layout.right_inverse()
        layout = _as_layout("right_inverse", layout)
    return _right_inverse(layout)


def _left_inverse(L):
    for s, d in zip(*_flat_modes(L)):
        if d == 0 and s != 1:
            # complement() filters stride-0 modes, so it cannot see this one
            raise LayoutError(f"left_inverse: layout {L} is not injective (mode {s}:0)")
    try:
        comp = complement(L)
    except LayoutError as e:
        raise LayoutError(f"left_inverse: layout {L} is not injective ({e})") from None
    result = _right_inverse(make_layout(L, comp))
    if size(result) < cosize(L):
        # (L, complement(L)) leaves holes when strides do not divide one another
        # (e.g. (3,6):(1,10)); no layout then inverts L on all of its image.
        raise LayoutError(
            f"left_inverse: layout {L} has no left inverse: its strides do not divide "
            f"one another, so (L, complement(L)) is not contiguous")
    return result


def left_inverse(layout):
    """``R`` with ``R(layout(i)) == i`` for every ``i`` in ``[0, size(layout))``.

    Pre: ``layout`` is injective (non-injective layouts raise ``LayoutError``).

    >>> str(left_inverse(Layout((4, 2), (2, 1))))
    '(2,4):(4,1)'
    """
    layout = _as_layout("left_inverse", layout)
    return _left_inverse(layout)


# ---- divides -------------------------------------------------------------

def _tile_layout(op, t):
    if isinstance(t, Layout):
        return t
    if isinstance(t, tuple):
        return None
    return _as_layout(op, t)


def _logical_divide_layout(A, B):
    ls, ld = _coalesce_x(A)           # trusted internal values: no re-validation below
    # the cotarget is coalesce(A)'s shape, which coalesce_x's is unless A ends in a size-1 mode
    cs = ls if A._fs[-1] != 1 else _coalesced_modes(A)[0]
    cot = cs[0] if len(cs) == 1 else (tuple(cs) if cs else 1)
    try:
        comp = _complement(B, cot)
    except LayoutError as e:
        raise LayoutError(f"logical_divide: tiler {B} cannot tile {A}: {e}") from None
    try:
        return _compose(A, _build((B.shape, comp.shape), (B.stride, comp.stride),
                                  B._fs + comp._fs, B._fd + comp._fd), ls, ld)
    except LayoutError as e:
        raise LayoutError(f"logical_divide: tiler {B} is not admissible for {A}: {e}") from None


def logical_divide(layout, tiler):
    """Split ``layout`` into (tile, rest): ``layout o (tiler, complement(tiler, shape(layout)))``.

    A tuple ``tiler`` divides mode by mode (entries layouts, ints or ``None``).
    Residue tiles are allowed, as in CuTe: the rest mode rounds up.

    >>> str(logical_divide(Layout((4, 2, 3), (2, 1, 8)), Layout(4, 2)))
    '((2,2),(2,3)):((4,1),(2,8))'
    >>> str(logical_divide(Layout((8, 8)), (2, 4)))
    '((2,4),(4,2)):((1,2),(8,32))'
    """
    if type(layout) is Layout and type(tiler) is Layout:
        return _logical_divide_layout(layout, tiler)
    wrapped = _layout_like(layout)
    if wrapped is not None:
        return wrapped[1](logical_divide(wrapped[0], tiler))
    layout = _as_layout("logical_divide", layout)
    if isinstance(tiler, tuple):
        return _by_mode("logical_divide", layout, tiler, logical_divide)
    return _logical_divide_layout(layout, _as_layout("logical_divide", tiler))


def _zip2_by(op, layout, guide):
    """CuTe's ``zip2_by``: gather the (tile, rest) pairs at the guide's terminals.

    Returns ``(tiles, rests)`` as layouts; modes beyond the guide go to the rests.
    A non-tuple guide entry (a layout, an int or ``None``) marks a mode that is
    already a (tile, rest) pair.
    """
    if not isinstance(guide, tuple):
        if rank(layout) != 2:
            raise LayoutError(f"{op}: mode {layout} is not a (tile, rest) pair")
        return layout[0], layout[1]
    r = rank(layout)
    if len(guide) > r:
        raise LayoutError(f"{op}: tiler {_fmt_tiler(guide)} has more modes than {layout}")
    split = [_zip2_by(op, layout[i], guide[i]) for i in range(len(guide))]
    tiles = make_layout(*[t for t, _ in split])
    rests = make_layout(*[x for _, x in split], *[layout[i] for i in range(len(guide), r)])
    return tiles, rests


def _tile_unzip(op, layout, tiler):
    if not isinstance(tiler, tuple):
        return layout
    tiles, rests = _zip2_by(op, layout, tiler)
    return make_layout(tiles, rests)


def zipped_divide(layout, tiler):
    """``((tile modes...), (rest modes...))``.

    >>> str(zipped_divide(Layout((8, 8)), (2, 4)))
    '((2,4),(4,2)):((1,8),(2,32))'
    """
    wrapped = _layout_like(layout)
    if wrapped is not None:
        return wrapped[1](zipped_divide(wrapped[0], tiler))
    return _tile_unzip("zipped_divide", logical_divide(layout, tiler), tiler)


def _modes(L):
    return list(L) if isinstance(L.shape, tuple) else [L]


def tiled_divide(layout, tiler):
    """``((tile modes...), rest_0, rest_1, ...)``."""
    wrapped = _layout_like(layout)
    if wrapped is not None:
        return wrapped[1](tiled_divide(wrapped[0], tiler))
    z = zipped_divide(layout, tiler)
    return make_layout(z[0], *_modes(z[1]))


def flat_divide(layout, tiler):
    """``(tile_0, tile_1, ..., rest_0, rest_1, ...)``."""
    wrapped = _layout_like(layout)
    if wrapped is not None:
        return wrapped[1](flat_divide(wrapped[0], tiler))
    z = zipped_divide(layout, tiler)
    return make_layout(*_modes(z[0]), *_modes(z[1]))


# ---- products ------------------------------------------------------------

def _cosize(L):
    """``cosize`` of a layout with int strides (trusted: no checks)."""
    return sum((s - 1) * abs(d) for s, d in zip(L._fs, L._fd)) + 1


def _logical_product_layout(A, B):
    try:
        if not all(type(d) is int for d in B._fd):
            cosize(B)                                   # raises the message for basis strides
        comp = _complement(A, prod(A._fs) * _cosize(B))
        R = _composition(comp, B)
        return _make_flat((A.shape, R.shape), (A.stride, R.stride), A._fs + R._fs, A._fd + R._fd)
    except LayoutError as e:
        raise LayoutError(f"logical_product: {A} and {B}: {e}") from None


def logical_product(block, tiler):
    """``(block, complement(block, size(block)*cosize(tiler)) o tiler)``: ``tiler`` copies of ``block``.

    An int ``tiler`` ``n`` means ``n:1``; a tuple multiplies mode by mode.

    >>> str(logical_product(Layout((2, 2), (1, 2)), Layout((3, 4), (4, 1))))
    '((2,2),(3,4)):((1,2),(16,4))'
    >>> str(logical_product(Layout(4, 1), 3))
    '(4,3):(1,4)'
    """
    if type(block) is Layout and type(tiler) is Layout:
        return _logical_product_layout(block, tiler)
    wrapped = _layout_like(block)
    if wrapped is not None:
        return wrapped[1](logical_product(wrapped[0], tiler))
    block = _as_layout("logical_product", block)
    if isinstance(tiler, tuple):
        return _by_mode("logical_product", block, tiler, logical_product)
    return _logical_product_layout(block, _as_layout("logical_product", tiler))


def zipped_product(block, tiler):
    """``((block modes...), (tiler modes...))``."""
    wrapped = _layout_like(block)
    if wrapped is not None:
        return wrapped[1](zipped_product(wrapped[0], tiler))
    return _tile_unzip("zipped_product", logical_product(block, tiler), tiler)


def tiled_product(block, tiler):
    """``((block modes...), tiler_0, tiler_1, ...)``."""
    wrapped = _layout_like(block)
    if wrapped is not None:
        return wrapped[1](tiled_product(wrapped[0], tiler))
    z = zipped_product(block, tiler)
    return make_layout(z[0], *_modes(z[1]))


def flat_product(block, tiler):
    """``(block_0, block_1, ..., tiler_0, tiler_1, ...)``."""
    wrapped = _layout_like(block)
    if wrapped is not None:
        return wrapped[1](flat_product(wrapped[0], tiler))
    z = zipped_product(block, tiler)
    return make_layout(*_modes(z[0]), *_modes(z[1]))


def append(layout, n, fill=None):
    """Pad ``layout`` with ``1:0`` modes (or ``fill``) up to rank ``n``."""
    layout = _as_layout("append", layout)
    if isinstance(n, bool) or not is_int(n):
        raise LayoutTypeError(f"append: rank must be an int, got {n!r}")
    if fill is not None and not isinstance(fill, Layout):
        raise LayoutTypeError(f"append: fill must be a layout, got {fill!r}")
    r = rank(layout)
    if r >= n:
        return layout
    modes = list(layout) if isinstance(layout.shape, tuple) else [layout]
    modes += [fill if fill is not None else Layout._make(1, 0)] * (n - r)
    return make_layout(*modes)


def zip_layouts(a, b):
    """``((a_0, b_0), (a_1, b_1), ...)`` for layouts of equal rank."""
    a, b = _as_layout("zip_layouts", a), _as_layout("zip_layouts", b)
    if rank(a) != rank(b):
        raise LayoutError(f"zip_layouts: ranks differ ({a} and {b})")
    return make_layout(*[make_layout(x, y) for x, y in zip(a, b)])


def _block_or_raked(op, block, tiler, raked):
    block = _as_layout(op, block)
    tiler = _as_layout(op, tiler) if not isinstance(tiler, Layout) else tiler
    R = max(rank(block), rank(tiler))
    b, t = append(block, R), append(tiler, R)
    try:
        p = logical_product(b, t)
    except LayoutError as e:
        raise LayoutError(f"{op}: {block} x {tiler}: {e}") from None
    first, second = (p[1], p[0]) if raked else (p[0], p[1])
    if R == 1:
        first = make_layout(first)
        second = make_layout(second)
    return coalesce(zip_layouts(first, second), (1,) * R)


def blocked_product(block, tiler):
    """Tile ``block`` in the arrangement ``tiler``, mode by mode: block elements vary fastest.

    >>> str(blocked_product(Layout((2, 2), (1, 2)), Layout((3, 4), (4, 1))))
    '((2,3),8):((1,16),2)'
    """
    return _block_or_raked("blocked_product", block, tiler, False)


def raked_product(block, tiler):
    """Interleave copies of ``block`` in ``tiler``'s arrangement: tiler elements vary fastest.

    >>> str(raked_product(Layout((2, 2), (1, 2)), Layout((3, 4), (4, 1))))
    '((3,2),(4,2)):((16,1),(4,2))'
    """
    return _block_or_raked("raked_product", block, tiler, True)


def tile_to_shape(block, target_shape, order=None):
    """Repeat ``block`` (blocked) until it covers ``target_shape``.

    Pre: ``rank(block) <= rank(target_shape)``; each mode size of ``target_shape`` is a
    multiple of the block's (padded with ``1:0`` modes) mode size; ``order``, if given,
    is congruent to the repetitions.
    Post: ``R = tile_to_shape(block, target_shape)`` has ``size(R[i]) == size(target_shape[i])``
    for each mode; as CuTe coalesces the blocked product by the repetitions' profile, a tuple
    target gives ``rank(R) == len(target_shape)`` (also for a rank-1 tuple) and an int target
    gives the fully coalesced layout.  ``R`` restricted to the first tile is ``block``.

    >>> str(tile_to_shape(Layout((2, 2), (1, 2)), (4, 6)))
    '((2,2),(2,3)):((1,4),(2,8))'
    >>> str(tile_to_shape(Layout(2, 2), (4,)))
    '((2,2)):((2,1))'
    >>> str(tile_to_shape(Layout(2, 2), 4))
    '(2,2):(2,1)'
    """
    wrapped = _layout_like(block)
    if wrapped is not None:
        return wrapped[1](tile_to_shape(wrapped[0], target_shape, order))
    block = _as_layout("tile_to_shape", block)
    from .inttuple import check_shape

    target_shape = check_shape("tile_to_shape", target_shape)
    trg = target_shape if isinstance(target_shape, tuple) else (target_shape,)
    R = len(trg)
    if rank(block) > R:
        raise LayoutError(f"tile_to_shape: block {block} has more modes than target {fmt(target_shape)}")
    padded = append(block, R)
    block_shape = tuple(size(m) for m in padded) if R > 1 else (size(padded),)
    target = tuple(product(t) for t in trg)
    for b, t in zip(block_shape, target):
        if t % b != 0:
            raise LayoutError(
                f"tile_to_shape: block {block} (mode sizes {fmt(block_shape)}) does not divide "
                f"target shape {fmt(target_shape)}")
    reps = tuple(t // b for b, t in zip(block_shape, target))
    ordered = make_ordered_layout(reps if R > 1 else reps[0], order)
    res = blocked_product(padded, ordered)
    # CuTe: coalesce(blocked_product(...), product_shape) -- by profile for a tuple target
    return coalesce(res, reps) if isinstance(target_shape, tuple) else coalesce(res)


# ---- recasting -----------------------------------------------------------

def _upcast_leaf(op, s, d, n):
    if d == 0:
        return s, 0
    sign = -1 if d < 0 else 1
    a = abs(d)
    if a % n == 0:
        return s, sign * (a // n)
    if n % a != 0:
        raise LayoutError(f"{op}: stride {d} and factor {n} do not divide one another")
    k = n // a
    # CuTe: shape ceil_div(s, n / |d|) -- a partial group counts as one wide element
    return -(-s // k), sign


def upcast(layout, n):
    """View a layout of ``n`` narrow elements per wide element as a layout of wide elements.

    >>> str(upcast(Layout((4, 8), (8, 1)), 2))
    '(4,4):(4,1)'
    """
    if not isinstance(layout, Layout) and callable(getattr(layout, "upcast", None)):
        return layout.upcast(n)
    layout = _as_layout("upcast", layout)
    _check_factor("upcast", n)

    def go(s, d):
        if isinstance(s, tuple):
            parts = [go(x, y) for x, y in zip(s, d)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        return _upcast_leaf("upcast", s, d, n)

    return Layout._make(*go(layout.shape, layout.stride))


def downcast(layout, n):
    """View a layout of wide elements as a layout of ``n`` times narrower elements.

    >>> str(downcast(Layout((4, 4), (4, 1)), 2))
    '(4,8):(8,1)'
    """
    if not isinstance(layout, Layout) and callable(getattr(layout, "downcast", None)):
        return layout.downcast(n)
    layout = _as_layout("downcast", layout)
    _check_factor("downcast", n)
    if n != 1 and not any(d == 1 or d == -1 for d in flat_tuple(layout.stride) if is_int(d)):
        # CuTe: static_assert(has_int1<Stride>) -- "Downcast requires adjacent elements";
        # without a unit-stride mode the narrow elements inside a wide one are lost.
        raise LayoutError(f"downcast: layout {layout} has no stride-1 mode (downcast requires adjacent elements)")

    def go(s, d):
        if isinstance(s, tuple):
            parts = [go(x, y) for x, y in zip(s, d)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        if d == 1 or d == -1:
            return s * n, d
        return s, d * n

    return Layout._make(*go(layout.shape, layout.stride))


def _check_factor(op, n):
    if isinstance(n, bool) or not is_int(n) or n <= 0:
        raise LayoutTypeError(f"{op}: factor must be a positive int, got {n!r}")


def type_bits(t):
    """Bit width of a type given as bits (int), a registered name (``"f16"``), a numpy dtype
    or a torch dtype (see :mod:`layoutalg.element_types`).

    >>> type_bits("bf16"), type_bits(8), type_bits("u128")
    (16, 8, 128)
    """
    if isinstance(t, bool):
        raise LayoutTypeError(f"type_bits: expected a type, got {t!r}")
    if is_int(t):
        if t <= 0:
            raise LayoutError(f"type_bits: bit width must be positive, got {t}")
        return int(t)
    if t is None:
        raise LayoutTypeError("type_bits: expected a type, got None")
    try:
        return element_type(t, "type_bits").bits
    except LayoutTypeError:
        pass
    try:
        import numpy as np

        bits = np.dtype(t).itemsize * 8
    except Exception:
        raise LayoutTypeError(f"type_bits: unknown type {t!r}") from None
    if bits <= 0:
        raise LayoutTypeError(f"type_bits: type {t!r} has no size")
    return bits


def recast_layout(layout, old_type, new_type):
    """Re-express ``layout`` over elements of ``old_type`` in elements of ``new_type``.

    >>> str(recast_layout(Layout((4, 8), (8, 1)), "f16", "f32"))
    '(4,4):(4,1)'
    """
    if not (isinstance(layout, Layout) or callable(getattr(layout, "upcast", None))):
        raise LayoutTypeError(f"recast_layout: expected a layout, got {layout!r}")
    ob, nb = type_bits(old_type), type_bits(new_type)
    if ob == nb:
        return layout
    if nb > ob:
        if nb % ob:
            raise LayoutError(f"recast_layout: {nb} bits is not a multiple of {ob} bits")
        return upcast(layout, nb // ob)
    if ob % nb:
        raise LayoutError(f"recast_layout: {ob} bits is not a multiple of {nb} bits")
    return downcast(layout, ob // nb)


# ---- common vectors ------------------------------------------------------

def _mode0(L):
    return Layout._make(L.shape[0], L.stride[0]) if isinstance(L.shape, tuple) else L


def _check_same_size(op, a, b):
    # The result indexes both layouts' domains (a(R(i)) == i and b(R(i)) == i), so they
    # must have the same size; otherwise the vector runs past the smaller one.
    if size(a) != size(b):
        raise LayoutError(f"{op}: layouts {a} and {b} have different sizes")


def max_common_layout(a, b):
    """The largest layout ``C`` such that ``a o C`` and ``b o C`` are both ``n:1`` (contiguous in both).

    >>> str(max_common_layout(Layout((4, 8), (8, 1)), Layout((4, 8), (8, 1))))
    '(8,4):(4,1)'
    """
    a = _layout_of(a) or _as_layout("max_common_layout", a)
    b = _layout_of(b) or _as_layout("max_common_layout", b)
    _check_same_size("max_common_layout", a, b)
    inv_b = right_inverse(b)
    common = coalesce(composition(a, inv_b))
    m = _mode0(common)
    if m.stride == 1:
        return composition(inv_b, Layout._make(m.shape, 1))
    return Layout._make(1, 0)


def max_common_vector(a, b):
    """The number of elements that are contiguous in both ``a`` and ``b`` starting at 0.

    >>> max_common_vector(Layout((4, 8), (8, 1)), Layout((4, 8), (1, 4)))
    1
    """
    a = _layout_of(a) or _as_layout("max_common_vector", a)
    b = _layout_of(b) or _as_layout("max_common_vector", b)
    _check_same_size("max_common_vector", a, b)
    common = coalesce(composition(a, right_inverse(b)))
    m = _mode0(common)
    return m.shape if m.stride == 1 else 1


def nullspace(layout):
    """The layout of the domain positions that ``layout`` sends to 0 (its stride-0 modes).

    >>> str(nullspace(Layout((2, 4, 3), (0, 1, 0))))
    '(2,3):(1,8)'
    """
    layout = _as_layout("nullspace", layout)
    shapes, strides = _flat_modes(layout)
    pos = flat_tuple(prefix_product(shapes)) if len(shapes) > 1 else (1,)
    zs = [(s, p) for s, d, p in zip(shapes, strides, pos) if d == 0]
    if not zs:
        return Layout._make(1, 0)
    return _from_modes([s for s, _ in zs], [p for _, p in zs])


def with_shape(layout, shape):
    """``layout o make_layout(shape)``: the same function re-indexed by ``shape``.

    >>> str(with_shape(Layout(24, 1), (4, 6)))
    '(4,6):(1,4)'
    """
    return composition(layout, Layout(shape))


def flatten_layout(layout):
    """The layout with flat shape and stride."""
    layout = _as_layout("flatten_layout", layout)
    s, d = _flat_modes(layout)
    if not isinstance(layout.shape, tuple):
        return layout
    return Layout._make(s, d)


def get_nonswizzle_portion(layout):
    """The plain layout part (for a ComposedLayout, its inner layout)."""
    return getattr(layout, "inner", layout)
