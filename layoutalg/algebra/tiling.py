"""Divides and products, and ``tile_to_shape``.

``logical_divide(A, T)`` is ``A o (T, complement(T, size(A)))``: the tile and the rest;
``logical_product(A, T)`` is ``(A, complement(A, size(A)*cosize(T)) o T)``: copies of ``A``
arranged by ``T``.  The zipped, tiled and flat variants regroup the same modes;
``blocked_product``/``raked_product`` interleave them mode by mode, and ``tile_to_shape``
repeats a block (blocked) up to a target shape.

>>> from layoutalg import Layout
>>> str(logical_divide(Layout(16, 1), Layout(4, 1)))
'(4,4):(1,4)'
>>> str(logical_product(Layout((2, 2), (4, 1)), Layout(6, 1)))
'((2,2),(2,3)):((4,1),(2,8))'
"""

from math import prod

from ..errors import LayoutError, LayoutTypeError
from ..inttuple import fmt, is_int, product
from ..layout import cosize, Layout, make_layout, make_ordered_layout, rank, size
from ._base import _as_layout, _build, _by_mode, _check_tiles, _fmt_tiler, _from_modes, _layout_like, _modes
from .compose import _coalesce_x, _coalesced_modes, _compose, _compose_leaves, _unflat, coalesce
from .inverse import _complement_modes

__all__ = ["logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product", "flat_product", "append", "zip_layouts", "blocked_product", "raked_product", "tile_to_shape"]


def _tile_layout(op, t):
    if isinstance(t, Layout):
        return t
    if isinstance(t, tuple):
        return None
    return _as_layout(op, t)


def _logical_divide_layout(A, B, op="logical_divide"):
    ls, ld = _coalesce_x(A)           # trusted internal values: no re-validation below
    # the cotarget is coalesce(A)'s shape, which coalesce_x's is unless A ends in a size-1 mode
    cot = ls if A._fs[-1] != 1 else (_coalesced_modes(A)[0] or 1)
    try:
        cs, cd = _complement_modes(B, cot)
    except LayoutError as e:
        raise LayoutError(f"{op}: tiler {B} cannot tile {A}: {e}") from None
    try:
        return _compose_tile_rest(A, B, cs, cd, ls, ld)
    except LayoutError:
        pass
    # the message names the tiler (B, rest) as a layout: build it and compose again to raise
    comp = _from_modes(cs, cd)
    T = _build((B.shape, comp.shape), (B.stride, comp.stride), B._fs + comp._fs, B._fd + comp._fd)
    try:
        return _compose(A, T, ls, ld)
    except LayoutError as e:
        raise LayoutError(f"{op}: tiler {B} is not admissible for {A}: {e}") from None


def _compose_tile_rest(A, B, cs, cd, ls, ld):
    """``A o (B, C)`` for the flat modes ``cs, cd`` of ``C = complement(B, ...)``, given
    ``ls, ld = _coalesce_x(A)``: ``_compose(A, (B, C), ls, ld)`` without building ``(B, C)``
    (whose nesting, and ``C``'s flatness, are known).  Raises ``LayoutError`` with a
    message that does not name ``(B, C)``."""
    if not cs:                          # C is 1:0
        cs, cd = [1], [0]
    nb = len(B._fs)
    fs, fd = B._fs + tuple(cs), B._fd + tuple(cd)
    if len(ls) == 1:
        # A is one (unbounded) mode a:x, so A o T scales T's strides by x
        x = ld[0]
        rd = []
        for d in fd:
            if type(d) is not int:
                raise LayoutError("basis strides")
            rd.append(x * d)
        rs, flat_s, flat_d = fs, None, None
    else:
        rs, rd, flat_s, flat_d = _compose_leaves("composition", A, None, ls, ld, fs, fd)
    bs = B.shape
    if flat_s is None:                  # every leaf kept its shape: R has (B, C)'s shape
        fd = tuple(rd)
        if len(cs) == 1:
            rest_s, rest_d = cs[0], fd[nb]
        else:
            rest_s, rest_d = fs[nb:], fd[nb:]
        if type(bs) is not tuple:
            return _build((bs, rest_s), (fd[0], rest_d), fs, fd)
        tile_d = fd[:nb] if B._fs is bs else _unflat(iter(fd), bs)
        return _build((bs, rest_s), (tile_d, rest_d), fs, fd)
    if type(bs) is not tuple:
        tile_s, tile_d = rs[0], rd[0]
    elif B._fs is bs:
        tile_s, tile_d = tuple(rs[:nb]), tuple(rd[:nb])
    else:
        tile_s, tile_d = _unflat(iter(rs), bs), _unflat(iter(rd), bs)
    if len(cs) == 1:
        rest_s, rest_d = rs[nb], rd[nb]
    else:
        rest_s, rest_d = tuple(rs[nb:]), tuple(rd[nb:])
    return _build((tile_s, rest_s), (tile_d, rest_d), tuple(flat_s), tuple(flat_d))


def logical_divide(layout, tiler):
    """Split ``layout`` into (tile, rest): ``layout o (tiler, complement(tiler, shape(layout)))``.

    A tuple ``tiler`` divides mode by mode (entries layouts, ints or ``None`` to keep a
    mode); an int ``n`` means ``n:1``; a layout-like ``layout`` (composed layout, tensor)
    is divided through its ``layout`` and re-wrapped.

    Pre: ``tiler`` is injective and its modes nest (a valid ``complement``), and the
    composition with ``layout`` is admissible; otherwise ``LayoutError``.  Residue tiles
    are allowed, as in CuTe: the rest mode rounds up.
    Post: ``R`` has rank 2 (for a layout tiler); ``R[0] == layout o tiler`` and
    ``size(R) >= size(layout)``; ``R(i) == layout(i)`` for every ``i`` in
    ``[0, size(layout))`` when ``tiler`` and its complement cover ``layout`` exactly.

    >>> str(logical_divide(Layout((4, 2, 3), (2, 1, 8)), Layout(4, 2)))
    '((2,2),(2,3)):((4,1),(2,8))'
    >>> str(logical_divide(Layout((8, 8)), (2, 4)))
    '((2,4),(4,2)):((1,2),(8,32))'
    """
    if type(layout) is Layout and type(tiler) is Layout:
        return _logical_divide_layout(layout, tiler)
    wrapped = _layout_like(layout)
    if wrapped is not None:
        _check_tiles(layout, "logical_divide", tiler)
        return wrapped[1](logical_divide(wrapped[0], tiler))
    return _divide("logical_divide", layout, tiler)


def _divide(op, layout, tiler):
    """``logical_divide`` of a plain layout, its errors named ``op`` (the divide the caller called)."""
    layout = _as_layout(op, layout)
    if isinstance(tiler, tuple):
        return _by_mode(op, layout, tiler, lambda m, t: _divide(op, m, t))
    return _logical_divide_layout(layout, _as_layout(op, tiler), op)


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
    """``logical_divide`` with the tiles gathered into mode 0: ``((tile modes...), (rest modes...))``.

    Pre: as :func:`logical_divide`.
    Post: rank 2; the same function as ``logical_divide(layout, tiler)`` up to the order of
    modes; ``R[0]`` is the tile (``size(R[0]) == size(tiler)``).

    >>> str(zipped_divide(Layout((8, 8)), (2, 4)))
    '((2,4),(4,2)):((1,8),(2,32))'
    """
    wrapped = _layout_like(layout)
    if wrapped is not None:
        _check_tiles(layout, "zipped_divide", tiler)
        return wrapped[1](zipped_divide(wrapped[0], tiler))
    return _tile_unzip("zipped_divide", _divide("zipped_divide", layout, tiler), tiler)


def tiled_divide(layout, tiler):
    """``((tile modes...), rest_0, rest_1, ...)``: :func:`zipped_divide` with the rest unpacked.

    Pre: as :func:`logical_divide`.
    Post: ``R[0] == zipped_divide(layout, tiler)[0]``; ``rank(R) == 1 + rank of the rest``.

    >>> str(tiled_divide(Layout((8, 8)), (2, 4)))
    '((2,4),4,2):((1,8),2,32)'
    """
    wrapped = _layout_like(layout)
    if wrapped is not None:
        _check_tiles(layout, "tiled_divide", tiler)
        return wrapped[1](tiled_divide(wrapped[0], tiler))
    z = _tile_unzip("tiled_divide", _divide("tiled_divide", layout, tiler), tiler)
    return make_layout(z[0], *_modes(z[1]))


def flat_divide(layout, tiler):
    """``(tile_0, tile_1, ..., rest_0, rest_1, ...)``: :func:`zipped_divide` with both modes unpacked.

    Pre: as :func:`logical_divide`.
    Post: the modes of ``zipped_divide(layout, tiler)[0]`` then those of ``[1]``.

    >>> str(flat_divide(Layout((8, 8)), (2, 4)))
    '(2,4,4,2):(1,8,2,32)'
    """
    wrapped = _layout_like(layout)
    if wrapped is not None:
        _check_tiles(layout, "flat_divide", tiler)
        return wrapped[1](flat_divide(wrapped[0], tiler))
    z = _tile_unzip("flat_divide", _divide("flat_divide", layout, tiler), tiler)
    return make_layout(*_modes(z[0]), *_modes(z[1]))


def _logical_product_layout(A, B):
    try:
        cos = 1                                         # cosize(B)
        for s, d in zip(B._fs, B._fd):
            if type(d) is not int:
                cosize(B)                               # raises the message for basis strides
            cos += (s - 1) * abs(d)
        cs, cd = _complement_modes(A, prod(A._fs) * cos)
        comp = _from_modes(cs, cd)
        # the complement's modes are coalesced, with shapes >= 2: they are _coalesce_x(comp)
        ls, ld = (cs, cd) if cs else ((2,), (0,))
        R = _compose(comp, B, ls, ld)
        return _build((A.shape, R.shape), (A.stride, R.stride), A._fs + R._fs, A._fd + R._fd)
    except LayoutError as e:
        raise LayoutError(f"logical_product: {A} and {B}: {e}") from None


def logical_product(block, tiler):
    """``(block, complement(block, size(block)*cosize(tiler)) o tiler)``: ``tiler`` copies of ``block``.

    An int ``tiler`` ``n`` means ``n:1``; a tuple multiplies mode by mode; a layout-like
    ``block`` is multiplied through its ``layout`` and re-wrapped.

    Pre: ``block`` has a complement (non-negative strides, injective, nesting modes) and
    the composition of that complement with ``tiler`` is admissible; otherwise
    ``LayoutError``.
    Post: ``R[0] == block``; ``size(R) == size(block) * size(tiler)``; ``R[1](j)`` is the
    offset of copy ``j`` and never falls inside ``block``'s image except at 0.

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
    """``logical_product`` regrouped: ``((block modes...), (tiler modes...))``.

    Pre: as :func:`logical_product`.
    Post: rank 2; the same function as ``logical_product(block, tiler)`` up to the order
    of modes.

    >>> str(zipped_product(Layout((2, 2)), (3, 2)))
    '((2,2),(3,2)):((1,2),(2,1))'
    """
    wrapped = _layout_like(block)
    if wrapped is not None:
        return wrapped[1](zipped_product(wrapped[0], tiler))
    return _tile_unzip("zipped_product", logical_product(block, tiler), tiler)


def tiled_product(block, tiler):
    """``((block modes...), tiler_0, tiler_1, ...)``: :func:`zipped_product` with the tiler unpacked.

    Pre: as :func:`logical_product`.
    Post: ``R[0] == zipped_product(block, tiler)[0]``.

    >>> str(tiled_product(Layout((2, 2)), (3, 2)))
    '((2,2),3,2):((1,2),2,1)'
    """
    wrapped = _layout_like(block)
    if wrapped is not None:
        return wrapped[1](tiled_product(wrapped[0], tiler))
    z = zipped_product(block, tiler)
    return make_layout(z[0], *_modes(z[1]))


def flat_product(block, tiler):
    """``(block_0, block_1, ..., tiler_0, tiler_1, ...)``: :func:`zipped_product` unpacked.

    Pre: as :func:`logical_product`.
    Post: the modes of ``zipped_product(block, tiler)[0]`` then those of ``[1]``.

    >>> str(flat_product(Layout((2, 2)), (3, 2)))
    '(2,2,3,2):(1,2,2,1)'
    """
    wrapped = _layout_like(block)
    if wrapped is not None:
        return wrapped[1](flat_product(wrapped[0], tiler))
    z = zipped_product(block, tiler)
    return make_layout(*_modes(z[0]), *_modes(z[1]))


def append(layout, n, fill=None):
    """Pad ``layout`` with ``1:0`` modes (or ``fill``) up to rank ``n``.

    Pre: ``n`` is an int; ``fill``, if given, is a layout.
    Post: ``rank(R) == max(n, rank(layout))``; the first modes are ``layout``'s; the
    function on ``[0, size(layout))`` is unchanged when ``fill`` has size 1.

    >>> str(append(Layout(4, 1), 3))
    '(4,1,1):(1,0,0)'
    """
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
    """``((a_0, b_0), (a_1, b_1), ...)`` for layouts of equal rank.

    Pre: ``rank(a) == rank(b)``.
    Post: ``rank(R) == rank(a)``; ``R[i] == make_layout(a[i], b[i])``.

    >>> str(zip_layouts(Layout((2, 3), (1, 2)), Layout((4, 5), (6, 24))))
    '((2,4),(3,5)):((1,6),(2,24))'
    """
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

    Pre: as :func:`logical_product` of ``block`` and ``tiler`` padded to a common rank.
    Post: ``rank(R) == max(rank(block), rank(tiler))``; mode ``i`` has size
    ``size(block[i]) * size(tiler[i])``; ``R`` restricted to the first block is ``block``.

    >>> str(blocked_product(Layout((2, 2), (1, 2)), Layout((3, 4), (4, 1))))
    '((2,3),8):((1,16),2)'
    >>> str(blocked_product(Layout(2, 1), Layout(3, 1)))
    '(6):(1)'
    """
    return _block_or_raked("blocked_product", block, tiler, False)


def raked_product(block, tiler):
    """Interleave copies of ``block`` in ``tiler``'s arrangement: tiler elements vary fastest.

    Pre: as :func:`blocked_product`.
    Post: ``rank(R) == max(rank(block), rank(tiler))``; mode ``i`` has size
    ``size(block[i]) * size(tiler[i])``; the same set of offsets as ``blocked_product``.

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

    Raises ``LayoutError`` where the repetitions cannot fill the gaps of a non-compact
    block without landing on its own offsets (the complement of the block, composed with
    the repetitions, would carry across one of its modes): there the CuTe DSL 4.8.1 returns
    a layout whose tiles overlap (``tests/test_tile_to_shape_dsl.py``; on 600 random cases
    it agrees with this function on every other one).

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
    from ..inttuple import check_shape

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
