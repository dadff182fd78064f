"""Coalesce and composition.

``coalesce(L)`` is the same function on ``[0, size(L))`` with the fewest modes;
``composition(A, B)`` is the layout ``R`` with ``R(c) == A(B(c))``, computed mode by mode
of ``B`` (CuTe's ``composition_impl``) on the flat modes of ``coalesce(A)``.

>>> from layoutalg import Layout
>>> str(coalesce(Layout((2, (1, 6)), (1, (6, 2)))))
'12:1'
>>> str(composition(Layout((4, 3), (3, 1)), Layout(6, 2)))
'(2,3):(6,1)'
"""

from math import gcd

from ..basis import ScaledBasis
from ..errors import LayoutError, LayoutTypeError
from ..inttuple import fmt
from ..layout import _LayoutBuilder, Layout, make_layout, rank
from ..swizzle import ComposedLayout, Swizzle
from ._base import _as_layout, _build, _by_mode, _check_tiles, _flat_modes, _from_modes, _layout_like

__all__ = ["coalesce", "filter_zeros", "filter", "composition", "with_shape", "flatten_layout"]


def _coalesce_modes(shapes, strides):
    """Flat modes merged where one continues the kept mode before it (its stride is that
    mode's end, shape * stride); size-1 modes dropped.  Lists ``[], []`` when every mode
    has size 1."""
    rs, rd = [], []
    end = None                      # shape * stride of the last kept mode
    for s, d in zip(shapes, strides):
        if s == 1:
            continue
        if d == end:
            rs[-1] *= s
        else:
            rs.append(s)
            rd.append(d)
        end = s * d
    return rs, rd


def _coalesced_modes(L):
    """The flat (shapes, strides) of ``coalesce(L)`` as lists (``[], []`` for ``1:0``)."""
    return _coalesce_modes(L._fs, L._fd)


def _coalesce(L):
    """``coalesce(L)`` for a trusted layout."""
    return coalesce(L)


def coalesce(layout, profile=None):
    """The layout with the fewest modes that is the same function on ``[0, size)``.

    Pre: ``layout`` is a layout (or a layout-like object with a ``coalesce`` method);
    ``profile``, if a tuple, has at most ``rank(layout)`` modes.
    Post: ``R = coalesce(layout)`` has ``size(R) == size(layout)``, depth at most 1 and
    ``R(i) == layout(i)`` for every ``i`` in ``[0, size)``; with a tuple ``profile``, each
    of the first ``len(profile)`` modes is coalesced on its own (recursively) and the mode
    structure, hence the rank, is kept.  A layout that is coalesced already (an int shape,
    or a flat one with no size-1 mode and no mode continuing the one before it) is
    returned as it is.

    >>> str(coalesce(Layout((2, (1, 6)), (1, (6, 2)))))
    '12:1'
    >>> str(coalesce(Layout((2, (2, 3)), (1, (2, 4))), (1, 1)))
    '(2,6):(1,2)'
    """
    if profile is None and isinstance(layout, Layout):
        # One pass over the flat modes, inline (this is the whole cost of a call).  A mode
        # continues the kept mode before it when its stride is that mode's end, shape *
        # stride (after a merge, the end of the merged mode is the end of its last part, so
        # the test only looks at the previous kept mode); size-1 modes are dropped.
        fs = layout._fs
        fd = layout._fd
        if len(fs) < 2:                         # one mode (or none: the empty layout)
            s = fs[0] if fs else 1
            if s == 1:
                shape, stride, fs, fd = 1, 0, (1,), (0,)
            elif type(layout.shape) is not tuple:
                return layout                   # s:d is coalesced
            else:
                shape, stride = s, fd[0]        # (s,):(d,), ((s,),):((d,),), ... -> s:d
        else:
            rs = None                           # the result's modes (None: fs[:i], fd[:i])
            end = None                          # shape * stride of the last kept mode
            i = -1                              # the index, counted (cheaper than range() here)
            for s in fs:
                i += 1
                if s == 1:                      # dropped
                    if rs is None:
                        rs, rd = fs[:i], fd[:i]
                    continue
                d = fd[i]
                if d == end:                    # merged into the last kept mode
                    if rs is None:
                        rs, rd = fs[:i], fd[:i]
                    rs = rs[:-1] + (rs[-1] * s,)
                elif rs is not None:            # kept, after a change
                    rs += (s,)
                    rd += (d,)
                end = s * d
            if rs is None:                      # nothing to merge or drop
                if layout.shape is fs:
                    return layout               # flat: coalesced already
                shape, stride = fs, fd
            elif len(rs) > 1:
                shape, stride, fs, fd = rs, rd, rs, rd
            elif rs:
                shape, stride, fs, fd = rs[0], rd[0], rs, rd
            else:
                shape, stride, fs, fd = 1, 0, (1,), (0,)
        R = _LayoutBuilder()                    # _build(shape, stride, fs, fd), inline
        R.shape = shape
        R.stride = stride
        R._fs = fs
        R._fd = fd
        R._hash = None
        R.__class__ = Layout
        return R
    if not isinstance(layout, Layout):
        if hasattr(layout, "coalesce"):
            return layout.coalesce(profile)
        raise LayoutTypeError(f"coalesce: expected a layout, got {layout!r}")
    if type(profile) is not tuple:              # a leaf profile: the whole layout is one mode
        return coalesce(layout)
    r = rank(layout)
    if len(profile) > r:
        raise LayoutError(f"coalesce: profile {fmt(profile)} has more modes than layout {layout}")
    modes = []                  # a loop, not a comprehension: that would put layout and profile
    for i in range(r):          # in cells, which every call would pay for
        modes.append(coalesce(layout[i], profile[i]) if i < len(profile) else layout[i])
    return make_layout(*modes)


def filter_zeros(layout):
    """Replace every stride-0 mode's shape with 1.

    Pre: ``layout`` is a layout (or an int ``n``, meaning ``n:1``).
    Post: same shape profile and strides; ``R(i) == layout(j)`` for the index ``j`` of the
    same coordinate with the stride-0 coordinates set to 0; ``cosize`` unchanged.

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

    Pre: ``layout`` is a layout (or an int).
    Post: ``R`` has no stride-0 or size-1 mode (except ``1:0`` when nothing is left) and
    its image is the image of ``layout``; ``size(R) <= size(layout)``.

    >>> str(filter(Layout((4, 2, 3), (0, 1, 2))))
    '6:1'
    """
    layout = _as_layout("filter", layout)
    shapes, strides = _flat_modes(layout)
    keep = [(s, d) for s, d in zip(shapes, strides) if d != 0 and s != 1]
    return _from_modes(*_coalesce_modes([s for s, _ in keep], [d for _, d in keep]))


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
    rest_stride, rest_shape = d, s
    # phase 1: divide the stride out of the lhs modes that it strides over entirely
    i = 0
    while i < n1:
        si = ls[i]
        if rest_stride % si != 0:
            break
        rest_stride //= si
        i += 1
    else:                           # the rhs lands in the last (unbounded) lhs mode
        return (rest_shape, rest_stride * ld[-1]) if rest_shape != 1 else (1, 0)
    # mode i: the stride starts inside it
    if rest_stride > si:
        raise LayoutError(
            f"{op}: stride divisibility violated: stride {rest_stride} and shape {si} "
            f"do not divide one another ({A} o {B})")
    if rest_shape == 1:
        return 1, 0
    next_shape = -(-si // rest_stride)
    if si % rest_stride != 0:
        if rest_shape > next_shape:
            raise LayoutError(
                f"{op}: stride divisibility violated: stride {rest_stride} and shape {si} "
                f"do not divide one another ({A} o {B})")
        if weak is not None:
            weak.append(si)
    new_s = next_shape if next_shape < rest_shape else rest_shape     # >= 2
    if rest_shape % new_s != 0:
        raise LayoutError(
            f"{op}: shape divisibility violated: shape {new_s} does not divide {rest_shape} "
            f"({A} o {B})")
    first_d = rest_stride * ld[i]
    rest_shape //= new_s
    if rest_shape == 1:
        return new_s, first_d
    # phase 2: the stride is 1 from here on; mod the shape out of the next modes
    res_s, res_d = [new_s], [first_d]
    _mod_out(op, A, B, ls, ld, i, rest_shape, res_s, res_d)
    # Already coalesced, with at least two modes: the first ends where mode i of the lhs
    # ends (new_s * first_d == ls[i] * ld[i]: a weak step never reaches phase 2) and the
    # lhs modes are coalesced, so no two neighbours merge; every shape is >= 2.
    return tuple(res_s), tuple(res_d)


def _mod_out(op, A, B, ls, ld, i, rest_shape, res_s, res_d):
    """Phase 2 of a leaf's composition (its stride is 1 from lhs mode ``i + 1`` on): append to
    ``res_s``/``res_d`` the lhs modes after ``i`` that ``rest_shape`` spans, the last one cut
    to what is left; raise where a mode's shape does not divide what is left."""
    n1 = len(ls) - 1
    for i in range(i + 1, n1):
        si = ls[i]
        if si < rest_shape:
            if rest_shape % si:
                raise LayoutError(
                    f"{op}: shape divisibility violated: shape {si} does not divide {rest_shape} "
                    f"({A} o {B})")
            res_s.append(si)
            res_d.append(ld[i])
            rest_shape //= si
        else:
            res_s.append(rest_shape)
            res_d.append(ld[i])
            return
    if rest_shape != 1:
        res_s.append(rest_shape)
        res_d.append(ld[-1])


def _compose_leaf_flat(op, A, B, fs, fd, s, d):
    """``_compose_leaf(op, A, B, *_coalesce_x(A), s, d)`` for an int stride ``d > 0``, from
    ``A``'s flat modes ``fs, fd`` (two or more) directly.

    One pass: ``A``'s modes are coalesced as the leaf walks them (size-1 modes dropped, a
    trailing one kept as a size-2 mode, a mode continuing the one before merged into it),
    and each coalesced mode takes its step of :func:`_compose_leaf`'s rule as soon as the
    next kept mode shows that it is complete; the walk ends with the leaf, so the modes
    past it are neither coalesced nor read.  Same results and errors as the two steps.
    """
    last = len(fs) - 1
    cs = 0                          # the coalesced mode being grown (0: none yet), cs:cd
    done = False                    # some coalesced mode has taken its step
    res_s = None                    # phase 2: the result's modes so far; rest: shape left
    j = -1
    for sj in fs:
        j += 1
        if sj == 1:
            if j != last:
                continue
            sj = 2                  # a trailing size-1 mode is kept as size 2 (coalesce_x)
        dj = fd[j]
        if cs:
            if dj == end:           # continues the mode being grown
                cs *= sj
                end = sj * dj
                continue
            # cs:cd is complete, and not the last mode: its step of the rule
            done = True
            if res_s is None:       # phase 1: divide the stride out of the modes it strides over
                if d % cs:
                    # the stride starts inside this mode
                    if d > cs:
                        raise LayoutError(
                            f"{op}: stride divisibility violated: stride {d} and shape {cs} "
                            f"do not divide one another ({A} o {B})")
                    if s == 1:
                        return 1, 0
                    if cs % d:      # a weak step: the leaf must fit in this mode
                        if s > cs // d + 1:
                            raise LayoutError(
                                f"{op}: stride divisibility violated: stride {d} and shape {cs} "
                                f"do not divide one another ({A} o {B})")
                        return s, d * cd
                    n = cs // d
                    if n >= s:      # the leaf fits in this mode
                        return s, d * cd
                    if s % n:
                        raise LayoutError(
                            f"{op}: shape divisibility violated: shape {n} does not divide {s} "
                            f"({A} o {B})")
                    res_s, res_d = [n], [d * cd]
                    rest = s // n
                else:
                    d //= cs
            elif cs < rest:         # phase 2: the stride is 1; mod the shape out of the modes
                if rest % cs:
                    raise LayoutError(
                        f"{op}: shape divisibility violated: shape {cs} does not divide {rest} "
                        f"({A} o {B})")
                res_s.append(cs)
                res_d.append(cd)
                rest //= cs
            else:
                res_s.append(rest)
                res_d.append(cd)
                return tuple(res_s), tuple(res_d)
        cs = sj
        cd = dj
        end = sj * dj
    # cs:cd is the last coalesced mode, unbounded
    if not done:                    # the only one: A is one mode a:x, so s:d -> s:(x*d)
        return s, cd * d
    if res_s is None:
        return (s, d * cd) if s != 1 else (1, 0)
    res_s.append(rest)
    res_d.append(cd)
    return tuple(res_s), tuple(res_d)


def _coalesce_x(L):
    """Flat modes of a coalesce that keeps the function *outside* the domain too (CuTe's ``coalesce_x``).

    The last mode of a layout is unbounded when it is evaluated past its size,
    so a trailing size-1 mode (e.g. the ``1:0`` cap in ``(4,3,1):(3,1,0)``) must
    not be dropped: it is kept as a size-2 mode, as in CuTe.  Used for the
    left-hand side of a composition.  Returns tuples ``(shapes, strides)``: ``L``'s own
    flat tuples when nothing is dropped or merged.
    """
    shapes, strides = L._fs, L._fd
    if len(shapes) == 1:
        return ((2,) if shapes[0] == 1 else shapes), strides
    if shapes[-1] == 1:
        shapes = shapes[:-1] + (2,)
    # coalesce's pass (see there); never empty: the last shape is > 1
    rs = None
    end = None
    i = -1
    for s in shapes:
        i += 1
        if s == 1:
            if rs is None:
                rs, rd = shapes[:i], strides[:i]
            continue
        d = strides[i]
        if d == end:
            if rs is None:
                rs, rd = shapes[:i], strides[:i]
            rs = rs[:-1] + (rs[-1] * s,)
        elif rs is not None:
            rs += (s,)
            rd += (d,)
        end = s * d
    if rs is None:
        return shapes, strides
    return rs, rd


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


def _check_additive(op, A, B, ls, leaves, weak=True):
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

    ``ls`` are the flat shapes of ``_coalesce_x(A)``; ``leaves`` the list of ``(stride,
    shape)`` of ``B``'s flat modes with an int stride other than 0 and a shape other than
    1 (it may be sorted in place); ``A`` and ``B`` name the operands in the message only.
    """
    if len(ls) < 2 or len(leaves) < 2:
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


def _unflat(it, profile):
    """The next values of the iterator ``it`` in the nesting of the tuple ``profile``."""
    n = len(profile)
    if n == 1:                                      # a common wrapper, e.g. ``((4,8),)``
        p = profile[0]
        return (_unflat(it, p) if type(p) is tuple else next(it),)
    if n == 2:                                      # the commonest pair, without a list
        p, q = profile
        p = _unflat(it, p) if type(p) is tuple else next(it)
        return (p, _unflat(it, q) if type(q) is tuple else next(it))
    out = []
    for p in profile:
        out.append(_unflat(it, p) if type(p) is tuple else next(it))
    return tuple(out)


def _put1(v, profile):
    """The tuple ``profile``, which has a single leaf, with that leaf replaced by ``v``."""
    if len(profile) == 1:                           # ``(x,)``, ``((x,),)``, ...
        p = profile[0]
        return (_put1(v, p) if type(p) is tuple else v,)
    return _unflat(iter((v,)), profile)             # empty tuples beside the leaf


def _composition(A, B):
    ls, ld = _coalesce_x(A)
    bs = B.shape
    if type(bs) is not tuple:                       # a single rhs mode: nothing to add up
        s, d = _compose_leaf("composition", A, B, ls, ld, bs, B.stride)
        if type(s) is tuple:
            return _build(s, d, s, d)
        return _build(s, d, (s,), (d,))
    return _compose(A, B, ls, ld)


def _compose_leaves(op, A, B, ls, ld, fs, fd):
    """``A o`` each flat mode ``fs[k]:fd[k]`` of ``B``, given ``ls, ld = _coalesce_x(A)``.

    Returns lists ``rs, rd`` with one entry per mode of ``B`` (an int, or a flat tuple
    when the mode's image spans several modes of ``A``), and the flat lists
    ``flat_s, flat_d`` of the result -- ``None, None`` when no entry is a tuple: then
    ``rs == fs`` (every leaf keeps its shape) and the flat strides are ``rd``.
    Raises unless the modes add up (:func:`_check_additive`); ``A`` and ``B`` name the
    operands in messages only.

    Each leaf is composed by :func:`_compose_leaf`'s rule, written out in the loop (a call
    per leaf cost as much as the rule itself); the two must agree, step for step and
    error for error.  Leaves with a stride other than an int, and a one-mode ``A``, go
    through :func:`_compose_leaf`.
    """
    n1 = len(ls) - 1
    weak = False                                    # some leaf took a weak stride step
    leaves = []                                     # (stride, shape) of the modes to add up
    rs, rd = [], []
    flat_s = flat_d = None                          # the result's flat modes, when a leaf nests
    last_d = ld[n1]
    for s, d in zip(fs, fd):
        if d == 0:
            d = 0                                   # s:0
        elif type(d) is not int or n1 == 0:
            if s != 1 and type(d) is int:
                leaves.append((d, s))
            wk = []
            s, d = _compose_leaf(op, A, B, ls, ld, s, d, wk)
            if wk:
                weak = True
            if type(s) is tuple:
                if flat_s is None:
                    flat_s, flat_d = list(rs), list(rd)
                flat_s.extend(s)
                flat_d.extend(d)
                rs.append(s)
                rd.append(d)
                continue
        else:
            if d < 0:
                raise LayoutError(
                    f"{op}: negative stride {d} in {B} needs a rank-1 left-hand side, got {A}")
            if s != 1:
                leaves.append((d, s))
            # phase 1: divide the stride out of the lhs modes that it strides over entirely
            i = 0
            while i < n1:
                si = ls[i]
                if d % si:
                    break
                d //= si
                i += 1
            else:                                   # the leaf lands in the last (unbounded) mode
                d = d * last_d if s != 1 else 0
                i = -1
            if i >= 0:
                # mode i: the stride starts inside it
                if d > si:
                    raise LayoutError(
                        f"{op}: stride divisibility violated: stride {d} and shape {si} "
                        f"do not divide one another ({A} o {B})")
                if s == 1:
                    d = 0
                else:
                    next_shape = -(-si // d)
                    if si % d:
                        if s > next_shape:
                            raise LayoutError(
                                f"{op}: stride divisibility violated: stride {d} and shape {si} "
                                f"do not divide one another ({A} o {B})")
                        weak = True
                    if next_shape >= s:             # the leaf fits in mode i
                        d *= ld[i]
                    else:
                        if s % next_shape:
                            raise LayoutError(
                                f"{op}: shape divisibility violated: shape {next_shape} does not "
                                f"divide {s} ({A} o {B})")
                        # phase 2: the stride is 1 from here on; mod the shape out of the
                        # next modes (the result is coalesced: see _compose_leaf)
                        res_s, res_d = [next_shape], [d * ld[i]]
                        _mod_out(op, A, B, ls, ld, i, s // next_shape, res_s, res_d)
                        if flat_s is None:
                            flat_s, flat_d = list(rs), list(rd)
                        flat_s += res_s
                        flat_d += res_d
                        rs.append(tuple(res_s))
                        rd.append(tuple(res_d))
                        continue
        rs.append(s)
        rd.append(d)
        if flat_s is not None:
            flat_s.append(s)
            flat_d.append(d)
    if len(leaves) > 1:
        if len(leaves) != 2 or weak or not n1:
            _check_additive(op, A, B, ls, leaves, weak)
        else:                                       # _check_additive's shortcut, for two modes
            (d0, s0), (d1, s1) = leaves
            if d1 < d0 * s0 and d0 < d1 * s1:       # they do not nest: the exact test
                _check_additive(op, A, B, ls, leaves)
    return rs, rd, flat_s, flat_d


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
        return _build(bs, _unflat(iter(rd), bs), fs, rd)
    # one leaf of B at a time, on B's flat modes, then back into B's nesting
    rs, rd, flat_s, flat_d = _compose_leaves(op, A, B, ls, ld, fs, fd)
    rd = tuple(rd)
    if flat_s is None:                              # every leaf kept its shape: R has B's shape
        if fs is bs:                                # B is flat
            return _build(bs, rd, bs, rd)
        return _build(bs, _unflat(iter(rd), bs), fs, rd)
    if fs is bs:
        return _build(tuple(rs), rd, tuple(flat_s), tuple(flat_d))
    return _build(_unflat(iter(rs), bs), _unflat(iter(rd), bs), tuple(flat_s), tuple(flat_d))


def composition(lhs, rhs):
    """``R = lhs o rhs`` with ``R(c) == lhs(rhs(c))`` for every coordinate ``c`` of ``rhs``.

    ``rhs`` may be a layout, an int ``n`` (meaning ``n:1``), or a tuple tiler whose
    entries (layouts, ints or ``None`` to keep a mode) apply to ``lhs``'s modes; as in
    CuTe, modes of ``lhs`` beyond the tiler are dropped.  A :class:`Swizzle` lhs gives a
    :class:`ComposedLayout`; a layout-like lhs (a composed layout, a tensor) is composed
    through its ``layout`` and re-wrapped.

    Pre: CuTe's divisibility conditions: each rhs stride divides out of the lhs's
    (coalesced) modes from the left, and each rhs shape then divides what remains (the
    last lhs mode is unbounded); the modes of ``rhs`` select disjoint parts of ``lhs``
    (their offsets never carry across a mode boundary of ``lhs``).  Otherwise
    ``LayoutError``.
    Post: ``compatible(rhs, R)`` for a layout ``rhs`` and ``R(c) == lhs(rhs(c))``.  An
    int-shaped ``rhs`` of stride 0 is returned as it is (``lhs o s:0`` is ``s:0``).

    >>> str(composition(Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1))))
    '((2,2),3):((24,2),8)'
    >>> str(composition(Layout((12, (4, 8)), (59, (13, 1))), (3, 8)))
    '(3,(4,2)):(59,(13,1))'
    """
    if type(lhs) is Layout and type(rhs) is Layout:
        # the common case inline (a call costs as much as a few of these lines)
        fs = lhs._fs
        bs = rhs.shape
        if len(fs) == 1:                        # lhs one (unbounded) mode a:x
            if type(bs) is not tuple:
                d = rhs.stride
                if type(d) is int:              # rhs s:d: the result is s:(x*d) (s:0 for d == 0)
                    if not d:
                        return rhs
                    R = _LayoutBuilder()
                    R.shape = bs
                    R._fs = rhs._fs
                    d = lhs._fd[0] * d
                    R.stride = d
                    R._fd = (d,)
                    R._hash = None
                    R.__class__ = Layout
                    return R
            return _compose(lhs, rhs, ((2,) if fs[0] == 1 else fs), lhs._fd)
        else:
            rfd = rhs._fd
            if len(rfd) == 1:                   # one rhs leaf s:d (int or nested shape)
                d = rfd[0]
                if type(d) is int:
                    if d > 0:                   # the lhs coalesced as the leaf walks it
                        s, d = _compose_leaf_flat("composition", lhs, rhs, fs, lhs._fd,
                                                  rhs._fs[0], d)
                        if type(bs) is not tuple:
                            R = _LayoutBuilder()
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
                        fs = rhs._fs
                        if type(s) is not tuple:    # the leaf kept its shape: R has rhs's shape
                            rd = (d,)
                            return _build(bs, rd if fs is bs else _put1(d, bs), fs, rd)
                        return _build(_put1(s, bs), _put1(d, bs), s, d)
                    if d == 0 and type(bs) is not tuple:
                        return rhs              # s:0: lhs o rhs is rhs
            # _coalesce_x(lhs), inline
            if fs[-1] == 1:
                fs = fs[:-1] + (2,)
            fd = lhs._fd
            ls = None
            end = None
            i = -1
            for s in fs:
                i += 1
                if s == 1:
                    if ls is None:
                        ls, ld = fs[:i], fd[:i]
                    continue
                d = fd[i]
                if d == end:
                    if ls is None:
                        ls, ld = fs[:i], fd[:i]
                    ls = ls[:-1] + (ls[-1] * s,)
                elif ls is not None:
                    ls += (s,)
                    ld += (d,)
                end = s * d
            if ls is None:
                ls, ld = fs, fd
        if type(bs) is not tuple:               # a negative or basis stride (positive ones: above)
            s, d = _compose_leaf("composition", lhs, rhs, ls, ld, bs, rhs.stride)
            return _build(s, d, s, d) if type(s) is tuple else _build(s, d, (s,), (d,))
        if len(ls) == 1:
            return _compose(lhs, rhs, ls, ld)
        fs = rhs._fs
        if len(fs) == 1:                        # one leaf, nested: nothing to add up
            s, d = _compose_leaf("composition", lhs, rhs, ls, ld, fs[0], rhs._fd[0])
            if type(s) is not tuple:            # the leaf kept its shape: R has rhs's shape
                rd = (d,)
                return _build(bs, rd if fs is bs else _put1(d, bs), fs, rd)
            return _build(_put1(s, bs), _put1(d, bs), s, d)
        # _compose(lhs, rhs, ls, ld) inline, from its call of _compose_leaves on
        rs, rd, flat_s, flat_d = _compose_leaves("composition", lhs, rhs, ls, ld, fs, rhs._fd)
        rd = tuple(rd)
        if flat_s is None:                      # every leaf kept its shape: R has rhs's shape
            if fs is bs:
                return _build(bs, rd, bs, rd)
            return _build(bs, _unflat(iter(rd), bs), fs, rd)
        if fs is bs:
            return _build(tuple(rs), rd, tuple(flat_s), tuple(flat_d))
        return _build(_unflat(iter(rs), bs), _unflat(iter(rd), bs), tuple(flat_s), tuple(flat_d))
    wrapped = _layout_like(lhs)
    if wrapped is not None:
        _check_tiles(lhs, "composition", rhs)
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


def with_shape(layout, shape):
    """``layout o make_layout(shape)``: the same function re-indexed by ``shape``.

    Pre: ``composition(layout, Layout(shape))`` is admissible (e.g. ``size(shape)`` divides
    into ``layout``'s modes).
    Post: ``R.shape == shape`` (up to coalesced leaves) and ``R(i) == layout(i)`` for ``i``
    in ``[0, size(shape))``.

    >>> str(with_shape(Layout(24, 1), (4, 6)))
    '(4,6):(1,4)'
    """
    return composition(layout, Layout(shape))


def flatten_layout(layout):
    """The layout with flat shape and stride.

    Pre: ``layout`` is a layout (or an int).
    Post: ``R.shape == flatten(layout.shape)``, ``R.stride == flatten(layout.stride)``, and
    ``R(i) == layout(i)`` for every ``i``.

    >>> str(flatten_layout(Layout((2, (3, 4)), (1, (2, 6)))))
    '(2,3,4):(1,2,6)'
    """
    layout = _as_layout("flatten_layout", layout)
    s, d = _flat_modes(layout)
    if not isinstance(layout.shape, tuple):
        return layout
    return Layout._make(s, d)
