"""Complement and inverses.

``complement(L, M)`` fills the holes of ``L`` up to ``M``; ``right_inverse`` and
``left_inverse`` invert a layout on its domain or its image; ``nullspace`` and the
common vectors (``max_common_layout``/``max_common_vector``) are built from them.

>>> from layoutalg import Layout
>>> str(complement(Layout(4, 2), 24))
'(2,3):(1,8)'
>>> str(right_inverse(Layout((4, 2), (2, 1))))
'(2,4):(4,1)'
"""

from ..errors import LayoutError, LayoutTypeError
from ..inttuple import flat_tuple, is_int, prefix_product
from ..layout import _layout_of, cosize, Layout, make_layout, size
from ._base import _as_layout, _build, _flat_modes, _from_modes, _mode0
from .compose import coalesce, composition, filter

__all__ = ["complement", "right_inverse", "left_inverse", "max_common_layout", "max_common_vector", "nullspace"]


def _complement(L, cotarget):
    """``complement(L, cotarget)`` for a trusted layout and a valid (int or shape) cotarget."""
    return _from_modes(*_complement_modes(L, cotarget if type(cotarget) is int else flat_tuple(cotarget)))


def _complement_modes(L, cotarget):
    """The flat modes ``rs, rd`` (lists) of ``complement(L, cotarget)``, given an int
    ``cotarget`` or the flat modes of a shape (a tuple or list of ints)."""
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
    # CuTe: coalesce(ceil_div(cotarget, cur)) -- the shape is divided from the left;
    # its compact modes coalesce into one
    if type(cotarget) is int:
        rest = -(-cotarget // cur)
    else:
        rest, b = 1, cur
        for a in cotarget:
            rest *= -(-a // b)
            b = -(-b // a)
    if rest != 1:
        rs.append(rest)
        rd.append(cur)
    return rs, rd


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
        return _from_modes(*_complement_modes(layout, cotarget))
    if not isinstance(layout, Layout):
        layout = _as_layout("complement", layout)
    if cotarget is None:
        cotarget = cosize(filter(layout))
    elif isinstance(cotarget, bool) or not (is_int(cotarget) or isinstance(cotarget, tuple)):
        raise LayoutTypeError(f"complement: cotarget must be an int or a shape, got {cotarget!r}")
    elif isinstance(cotarget, tuple):
        from ..inttuple import check_shape
        cotarget = check_shape("complement", cotarget)
    else:
        cotarget = int(cotarget)
        if cotarget <= 0:
            raise LayoutError(f"complement: cotarget must be positive, got {cotarget}")
    return _complement(layout, cotarget)


def _right_inverse(L):
    fs, fd = L._fs, L._fd
    if len(fs) == 1:
        s, d = fs[0], fd[0]
        if s != 1 and d == 1 and type(d) is int:
            return _build(s, 1, (s,), (1,))
        return _build(1, 0, (1,), (0,))
    # stride -> (prefix product of the shape, shape) of the modes of coalesce(L), for the
    # int strides, in coalesce's pass: a mode whose stride is the end (shape * stride) of
    # the last kept mode merges into it; size-1 modes are dropped
    where = {}
    p = 1
    end = None
    last = None                     # the key of the last kept mode's entry (None: it has none)
    for s, d in zip(fs, fd):
        if s == 1:
            continue
        if d == end:
            if last is not None:
                q, t = where[last]
                where[last] = (q, t * s)
        elif type(d) is int and d not in where:    # the first mode of a repeated stride wins
            where[d] = (p, s)
            last = d
        else:
            last = None
        p *= s
        end = s * d
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
    """The largest ``R`` with ``layout(R(i)) == i`` for every ``i`` in ``[0, size(R))``.

    Pre: ``layout`` is a layout (or a layout-like object with a ``right_inverse`` method).
    Post: ``R`` is compact (``cosize(R) <= size(layout)``), and ``layout(R(i)) == i`` on
    ``[0, size(R))``; ``size(R) == size(layout)`` when ``layout`` is a bijection onto its
    codomain; ``1:0`` when no offset ``1`` is reachable.

    >>> str(right_inverse(Layout((4, 2), (2, 1))))
    '(2,4):(4,1)'
    >>> str(right_inverse(Layout((2, 3), (1, 4))))
    '2:1'
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

    Pre: ``layout`` is injective and its strides divide one another when sorted (so that
    ``(layout, complement(layout))`` is contiguous); otherwise ``LayoutError``.
    Post: ``R(layout(i)) == i`` for every ``i``; ``size(R) >= cosize(layout)``.

    >>> str(left_inverse(Layout((4, 2), (2, 1))))
    '(2,4):(4,1)'
    >>> str(left_inverse(Layout((2, 2), (1, 4))))
    '(2,2,2):(1,4,2)'
    """
    layout = _as_layout("left_inverse", layout)
    return _left_inverse(layout)


def _check_same_size(op, a, b):
    # The result indexes both layouts' domains (a(R(i)) == i and b(R(i)) == i), so they
    # must have the same size; otherwise the vector runs past the smaller one.
    if size(a) != size(b):
        raise LayoutError(f"{op}: layouts {a} and {b} have different sizes")


def max_common_layout(a, b):
    """The largest layout ``C`` such that ``a o C`` and ``b o C`` are both ``n:1``.

    Pre: ``a`` and ``b`` (layouts or tensors) have the same size.
    Post: ``a(C(i)) == i`` and ``b(C(i)) == i`` for every ``i`` in ``[0, size(C))``: the
    first ``size(C)`` elements are contiguous in both; ``1:0`` when not even two are.

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

    Pre: ``a`` and ``b`` (layouts or tensors) have the same size.
    Post: ``n >= 1``; ``a o right_inverse(b)`` maps ``[0, n)`` to itself with stride 1.

    >>> max_common_vector(Layout((4, 8), (8, 1)), Layout((4, 8), (1, 4)))
    1
    >>> max_common_vector(Layout((4, 8), (1, 4)), Layout((4, 8), (1, 4)))
    32
    """
    a = _layout_of(a) or _as_layout("max_common_vector", a)
    b = _layout_of(b) or _as_layout("max_common_vector", b)
    _check_same_size("max_common_vector", a, b)
    common = coalesce(composition(a, right_inverse(b)))
    m = _mode0(common)
    return m.shape if m.stride == 1 else 1


def nullspace(layout):
    """The layout of the domain positions that ``layout`` sends to 0 (its stride-0 modes).

    Pre: ``layout`` is a layout (or an int).
    Post: ``layout(R(i)) == 0`` for every ``i`` in ``[0, size(R))``; ``size(R)`` is the
    product of the stride-0 modes' shapes (``1:0`` when there are none).

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
