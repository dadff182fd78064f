"""Property tests of the layout algebra, evaluated at every index.

The post-conditions are stated as in CuTe's own unit tests
(``test/unit/cute/core/{composition,complement,inverse_left,inverse_right,
logical_divide,logical_product,coalesce,nullspace}.cpp``) and the checked
post-conditions quoted in ``02_layout_algebra.md``.  Inputs come from the
admissible-pair strategies in ``strategies.py``; a layout is evaluated with the
library-independent ``ref_eval`` (colexicographic, last mode unbounded, as CuTe's
``crd2idx`` on an int).
"""

from hypothesis import given, settings, strategies as st

from layoutalg import (
    Layout, Swizzle, blocked_product, coalesce, complement, composition, compatible, cosize,
    depth, downcast, filter, flat_divide, flat_product, left_inverse, logical_divide,
    logical_product, make_composed_layout, make_layout, make_ordered_layout, max_common_layout,
    max_common_vector, nullspace, raked_product, right_inverse, size, tile_to_shape,
    tiled_divide, tiled_product, upcast, zipped_divide, zipped_product,
)
from layoutalg.algebra import append
from layoutalg.inttuple import idx2crd

import strategies as S
from strategies import flat, prod, ref_cosize, ref_eval, ref_size, ref_values

N = 250   # examples per property (derandomized; see conftest.py)


def modes(lay):
    return list(lay) if isinstance(lay.shape, tuple) else [lay]


# ---- composition -------------------------------------------------------------------

@settings(max_examples=2 * N)
@given(S.composition_pairs)
def test_composition(pair):
    A, B = pair
    R = composition(A, B)
    # composition.cpp: compatible(B, R), and R(c) == A(B(c)) for all c in B's domain
    assert compatible(B.shape, R.shape)
    for c in range(ref_size(B)):
        assert ref_eval(R, c) == ref_eval(A, ref_eval(B, c)), (A, B, R, c)
        assert R(c) == ref_eval(R, c)


@settings(max_examples=N)
@given(S.strategy(S.gen_composition_pair, overflow=False, weak=False, a_strides="nonneg"))
def test_composition_inside_domain_uses_layout_call(pair):
    A, B = pair
    R = composition(A, B)
    n = ref_size(A)
    for c in range(ref_size(B)):
        b = B(c)
        if 0 <= b < n:
            assert R(c) == A(b)
        # hierarchical coordinates of B are coordinates of R
        crd = idx2crd(c, B.shape)
        assert R(crd) == ref_eval(R, c)


@st.composite
def _by_mode_tiler(draw):
    src = S.DrawSource(draw)
    A = S.gen_layout(src)
    ms = modes(A)
    tiler = []
    for m in ms[:src.int(1, len(ms))]:
        kind = src.int(0, 2)
        if kind == 0:
            tiler.append(None)
        elif kind == 1:
            fs, _, _ = S.factor_sequence(src, flat(m.shape))
            tiler.append(prod(fs[:src.int(0, len(fs))]))
        else:
            tiler.append(S.layout_from_leaves(src, S.gen_rhs_leaves(src, m, overflow=False), 1))
    return A, tuple(tiler)


@settings(max_examples=N)
@given(_by_mode_tiler())
def test_composition_by_mode(pair):
    A, T = pair
    R = composition(A, T)
    # CuTe: by-mode composition; None (CuTe's _) keeps a mode, modes beyond the tiler are dropped
    assert len(modes(R)) == len(T)
    for i, t in enumerate(T):
        m = modes(A)[i]
        expect = m if t is None else composition(m, t)
        assert modes(R)[i] == expect
        for c in range(ref_size(expect)):
            assert ref_eval(modes(R)[i], c) == ref_eval(expect, c)


# ---- complement --------------------------------------------------------------------

@st.composite
def _complement_case(draw):
    src = S.DrawSource(draw)
    divisible = src.bool()
    Lay = S.gen_injective(src, divisible=divisible, zeros=src.bool())
    kind = src.int(0, 2)
    if kind == 0:
        cot = None
    elif kind == 1:
        cot = src.int(1, 4 * ref_cosize(Lay) + 3)
    else:
        # a shape cotarget (CuTe keeps it static-friendly): ceil_div(cotarget, extent) divides
        # from the left, so lead with a multiple of the layout's extent (as (_32,_4,_4) for 64:1)
        ext = 1
        for s, d in sorted(((s, d) for s, d in zip(flat(Lay.shape), flat(Lay.stride))
                            if d != 0 and s != 1), key=lambda m: m[1]):
            ext = s * d
        cot = (ext * src.int(1, 3),) + tuple(src.int(1, 4) for _ in range(src.int(0, 2)))
    return Lay, cot, divisible


@settings(max_examples=2 * N)
@given(_complement_case())
def test_complement(case):
    Lay, cot, divisible = case
    C = complement(Lay) if cot is None else complement(Lay, cot)
    target = ref_cosize(Lay) if cot is None else prod(flat(cot))
    completed = make_layout(Lay, C)
    vals = ref_values(C)
    lay_vals = set(ref_values(Lay))
    filt = ref_size(filter(Lay))
    # complement.cpp post-conditions.  (2) is stated there as
    # cosize(C) <= round_up(size(cotarget), cosize(L)); it holds in CuTe's cases, where the
    # extent of L's largest mode (s*d) is cosize(L).  In general (e.g. (2,2):(2,16), 65,
    # for which CuTe computes the same C) the bound is round_up(size(cotarget), extent).
    ext = 1
    for s_, d_ in sorted(((s_, d_) for s_, d_ in zip(flat(Lay.shape), flat(Lay.stride))
                          if d_ != 0 and s_ != 1), key=lambda m: m[1]):
        ext = s_ * d_
    assert cosize(C) <= -(-target // ext) * ext                              # (2)
    if ext == cosize(Lay):
        assert cosize(C) <= -(-target // cosize(Lay)) * cosize(Lay)
    for i in range(1, len(vals)):
        assert vals[i - 1] < vals[i]                                         # (3) ordered
        assert vals[i] not in lay_vals                                       # (4) disjoint
    assert size(C) <= cosize(C)
    assert cosize(completed) <= cosize(C) + cosize(Lay)
    assert size(complement(completed)) == 1                                  # nothing left over
    if divisible:
        # With strides that do not divide the extent below them (CuTe accepts these, e.g.
        # (3,6):(1,10)), the truncating division can leave the codomain short of the
        # cotarget, in CuTe as here; the lower bounds hold for the divisible layouts.
        assert cosize(completed) >= target                                  # (1)
        assert size(C) >= target // filt
        assert cosize(C) >= target // filt
    if isinstance(cot, tuple):       # a shape cotarget means its size
        assert ref_values(C) == ref_values(complement(Lay, target))
    # and, as "02_layout_algebra.md" states, (L, C) is injective
    allv = ref_values(make_layout(filter(Lay), C))
    assert len(set(allv)) == len(allv)


# ---- inverses ----------------------------------------------------------------------

@settings(max_examples=2 * N)
@given(st.one_of(S.layouts, S.compact_layouts, S.injective_layouts))
def test_right_inverse(lay):
    R = right_inverse(lay)
    # inverse_right.cpp: layout(R(i)) == i for i < size(R)
    for i in range(ref_size(R)):
        assert ref_eval(lay, ref_eval(R, i)) == i
        assert 0 <= ref_eval(R, i) < ref_size(lay)
    assert depth(R) <= 1


@settings(max_examples=N)
@given(S.compact_layouts)
def test_right_inverse_of_compact_is_total(lay):
    R = right_inverse(lay)
    assert size(R) == size(lay)
    comp = composition(lay, R)        # "composition(layout, result) is identical to make_layout(shape(result))"
    assert ref_values(comp) == list(range(size(R)))


@settings(max_examples=2 * N)
@given(S.injective_layouts)
def test_left_inverse(lay):
    R = left_inverse(lay)
    # inverse_left.cpp: R(layout(i)) == i for all i < size(layout)
    for i in range(ref_size(lay)):
        assert ref_eval(R, ref_eval(lay, i)) == i
    comp = composition(R, lay)
    assert ref_values(comp) == list(range(size(lay)))


# ---- divides ------------------------------------------------------------------------

@settings(max_examples=2 * N)
@given(S.divide_pairs)
def test_logical_divide(pair):
    A, B = pair
    R = logical_divide(A, B)
    # logical_divide.cpp: rank 2 and compatible(B, layout<0>(R))
    assert len(modes(R)) == 2
    assert compatible(B.shape, R[0].shape)
    # definition: A o (B, complement(B, shape(coalesce(A))))
    cshape = coalesce(A).shape
    BB = make_layout(B, complement(B, cshape if isinstance(cshape, int) else tuple(cshape)))
    assert compatible(BB.shape, R.shape)
    for i in range(ref_size(R)):
        assert ref_eval(R, i) == ref_eval(A, ref_eval(BB, i))
    # "layout<0>(zipped_divide(a, b)) == composition(a, b)"
    assert zipped_divide(A, B)[0] == composition(A, B)
    assert R[0] == composition(A, B)


@st.composite
def _tuple_divide_case(draw):
    src = S.DrawSource(draw)
    A = S.gen_layout(src)
    ms = modes(A)
    tiler = []
    for m in ms[:src.int(1, len(ms))]:
        if src.int(0, 1):
            fs, _, _ = S.factor_sequence(src, flat(m.shape))
            tiler.append(prod(fs[:src.int(0, len(fs))]))
        else:
            tiler.append(S.gen_divide_pair_for(src, m))
    return A, tuple(tiler)


@settings(max_examples=N)
@given(_tuple_divide_case())
def test_divides_by_mode(pair):
    A, T = pair
    R = logical_divide(A, T)
    ms, rs = modes(A), modes(R)
    n = len(T)
    assert len(rs) == len(ms)
    for i in range(len(ms)):
        assert rs[i] == (logical_divide(ms[i], T[i]) if i < n else ms[i])
    # zipped: ((tiles), (rests..., untouched modes...)); tiled and flat unpack it
    z = zipped_divide(A, T)
    tiles = [rs[i][0] for i in range(n)]
    rests = [rs[i][1] for i in range(n)] + ms[n:]
    assert z == make_layout(make_layout(*tiles), make_layout(*rests))
    assert tiled_divide(A, T) == make_layout(make_layout(*tiles), *rests)
    assert flat_divide(A, T) == make_layout(*tiles, *rests)
    assert z[0] == composition(A, T)
    # every element of A appears exactly once (a divide permutes A's domain)
    assert sorted(ref_values(z)) == sorted(ref_values(A))


# ---- products -----------------------------------------------------------------------

@settings(max_examples=2 * N)
@given(S.product_pairs)
def test_logical_product(pair):
    A, B = pair
    R = logical_product(A, B)
    # logical_product.cpp: rank 2, layout<0>(R) == A, compatible(B, layout<1>(R))
    assert len(modes(R)) == 2
    assert R[0] == A
    assert compatible(B.shape, R[1].shape)
    # definition: (A, complement(A, size(A)*cosize(B)) o B)
    comp = complement(A, size(A) * cosize(B))
    for j in range(ref_size(B)):
        assert ref_eval(R[1], j) == ref_eval(comp, ref_eval(B, j))
    # copies of A do not overlap when B is injective (on A's non-broadcast part)
    Af, Bv = filter(A), ref_values(B)
    if len(set(Bv)) == len(Bv):
        vals = ref_values(make_layout(Af, R[1]))
        assert len(set(vals)) == len(vals)
    z = zipped_product(A, B)
    assert z == R


@st.composite
def _tuple_product_case(draw):
    src = S.DrawSource(draw)
    pairs = [S.gen_product_pair(src, max_depth=1) for _ in range(src.int(1, 3))]
    A = make_layout(*[a for a, _ in pairs])
    extra = src.int(0, 1)
    if extra:
        A = make_layout(*modes(A), S.gen_layout(src, max_leaves=2, max_size=8))
    return A, tuple(b for _, b in pairs)


@settings(max_examples=N)
@given(_tuple_product_case())
def test_products_by_mode(pair):
    A, T = pair
    R = logical_product(A, T)
    ms, rs = modes(A), modes(R)
    n = len(T)
    for i in range(len(ms)):
        assert rs[i] == (logical_product(ms[i], T[i]) if i < n else ms[i])
    z = zipped_product(A, T)
    tiles = [rs[i][0] for i in range(n)]
    rests = [rs[i][1] for i in range(n)] + ms[n:]
    assert z == make_layout(make_layout(*tiles), make_layout(*rests))
    assert tiled_product(A, T) == make_layout(make_layout(*tiles), *rests)
    assert flat_product(A, T) == make_layout(*tiles, *rests)


def _check_blocked_or_raked(A, B, raked):
    R = (raked_product if raked else blocked_product)(A, B)
    rk = max(len(modes(A)), len(modes(B)))
    Ap, Bp = append(A, rk), append(B, rk)
    P = logical_product(Ap, Bp)
    sa = [size(m) for m in modes(Ap)]
    sb = [size(m) for m in modes(Bp)]
    rm = modes(R)
    assert len(rm) == rk                         # @post rank(result) == max(rank(block), rank(tiler))
    assert [size(m) for m in rm] == [x * y for x, y in zip(sa, sb)]
    mode_sizes = tuple(size(m) for m in rm)
    for i in range(size(R)):
        x = idx2crd(i, mode_sizes) if rk > 1 else (i,)
        if raked:
            a = [xk // nb for xk, nb in zip(x, sb)]
            b = [xk % nb for xk, nb in zip(x, sb)]
        else:
            a = [xk % na for xk, na in zip(x, sa)]
            b = [xk // na for xk, na in zip(x, sa)]
        if rk == 1:
            expect = P((a[0], b[0]))
        else:
            expect = P((tuple(a), tuple(b)))
        assert R(i) == expect
        assert ref_eval(R, i) == expect


@st.composite
def _blocked_case(draw):
    src = S.DrawSource(draw)
    A, B = S.gen_product_pair(src, max_depth=1, max_a=16, max_b=12)
    return A, B


@settings(max_examples=N)
@given(_blocked_case())
def test_blocked_product(pair):
    _check_blocked_or_raked(*pair, raked=False)


@settings(max_examples=N)
@given(_blocked_case())
def test_raked_product(pair):
    _check_blocked_or_raked(*pair, raked=True)


@st.composite
def _tile_to_shape_case(draw):
    src = S.DrawSource(draw)
    block = S.gen_compact(src, max_leaves=3, max_size=16, max_depth=1, zeros=src.bool())
    rb = len(modes(block))
    r = src.int(rb, rb + 1)
    bs = [size(m) for m in modes(block)] + [1] * (r - rb)
    target = tuple(b * src.int(1, 3) for b in bs)
    order = None
    if src.bool():
        order = tuple(src.permutation(range(r)))
    # a rank-1 target is given as an int or as a 1-tuple (CuTe keeps a tuple target's rank)
    return block, target if r > 1 or src.bool() else target[0], order


@settings(max_examples=N)
@given(_tile_to_shape_case())
def test_tile_to_shape(case):
    block, target, order = case
    R = tile_to_shape(block, target, order)
    # @post compatible(target_shape, shape(result))
    assert compatible(target, R.shape)
    if isinstance(target, tuple):
        # the result has the target's rank, mode i of size product(target[i])
        assert isinstance(R.shape, tuple) and len(R.shape) == len(target), (block, target, R)
        assert [size(m) for m in modes(R)] == list(target)
    trg = target if isinstance(target, tuple) else (target,)
    r = len(trg)
    padded = append(block, r)
    reps = tuple(t // size(m) for t, m in zip(trg, modes(padded)))
    ordered = make_ordered_layout(reps if r > 1 else reps[0], order)
    expect = blocked_product(padded, ordered)
    assert [size(m) for m in modes(expect)] == list(trg)
    for i in range(size(R)):
        assert ref_eval(R, i) == ref_eval(expect, i)
    # the first block of the result is the block itself
    bsz = tuple(size(m) for m in modes(padded))
    for j in range(size(block)):
        c = idx2crd(j, bsz) if r > 1 else j
        assert R(c) == padded(c)
        if isinstance(target, tuple) and r == 1:
            assert R((j,)) == padded(j)


# ---- coalesce / filter ----------------------------------------------------------------

@settings(max_examples=2 * N)
@given(S.layouts)
def test_coalesce(lay):
    C = coalesce(lay)
    # coalesce.cpp: size equal, depth <= 1, same function on [0, size)
    assert size(C) == size(lay)
    assert depth(C) <= 1
    assert ref_values(C) == ref_values(lay)
    assert coalesce(C) == C
    fs, fd = flat(C.shape), flat(C.stride)
    if C != Layout(1, 0):
        assert all(s != 1 for s in fs)
    for k in range(len(fs) - 1):
        assert fs[k] * fd[k] != fd[k + 1]               # nothing left to merge
    # by-mode coalesce keeps the rank and coalesces each mode
    if isinstance(lay.shape, tuple) and len(lay.shape) > 0:
        Cm = coalesce(lay, (1,) * len(lay.shape))
        assert len(modes(Cm)) == len(lay.shape)
        for m, cm in zip(modes(lay), modes(Cm)):
            assert cm == coalesce(m)
            assert ref_values(cm) == ref_values(m)


@settings(max_examples=N)
@given(S.layouts)
def test_filter(lay):
    F = filter(lay)
    assert set(ref_values(F)) == set(ref_values(lay))
    nz = prod(s for s, d in zip(flat(lay.shape), flat(lay.stride)) if d != 0)
    assert size(F) == nz
    assert all(d != 0 for d in flat(F.stride)) or F == Layout(1, 0)
    assert depth(F) <= 1


# ---- recasting -------------------------------------------------------------------------

@st.composite
def _unit_stride_layout(draw):
    src = S.DrawSource(draw)
    lay = S.gen_layout(src)
    ds = flat(lay.stride)
    k = src.int(0, len(ds) - 1)
    ds[k] = src.choice((1, 1, -1))
    return Layout(lay.shape, S.unflatten_like(ds, lay.shape)), src.choice((1, 2, 4, 8))


@settings(max_examples=N)
@given(_unit_stride_layout())
def test_downcast_then_upcast_roundtrip(case):
    lay, n = case
    D = downcast(lay, n)
    assert upcast(D, n) == lay
    assert size(D) == size(lay) * n ** sum(1 for d in flat(lay.stride) if abs(d) == 1)


@settings(max_examples=N)
@given(_unit_stride_layout())
def test_upcast_then_downcast_roundtrip(case):
    lay, n = case
    # make it groupable: unit-stride modes a multiple of n, other strides multiples of n
    fs, fd = flat(lay.shape), flat(lay.stride)
    fs = [s * n if abs(d) == 1 else s for s, d in zip(fs, fd)]
    fd = [d if abs(d) == 1 else d * n for d in fd]
    lay = Layout(S.unflatten_like(fs, lay.shape), S.unflatten_like(fd, lay.shape))
    assert downcast(upcast(lay, n), n) == lay


# ---- common vectors, nullspace ---------------------------------------------------------

@st.composite
def _same_shape_compact_pair(draw):
    src = S.DrawSource(draw)
    a = S.gen_compact(src)
    leaves = flat(a.shape)
    order = src.permutation(range(len(leaves)))
    ds = [0] * len(leaves)
    cur = 1
    for k in order:
        ds[k] = cur
        cur *= leaves[k]
    b = Layout(a.shape, S.unflatten_like(ds, a.shape))
    return (a, b) if src.bool() else (b, a)


@settings(max_examples=N)
@given(_same_shape_compact_pair())
def test_max_common_layout_and_vector(pair):
    a, b = pair
    R = max_common_layout(a, b)
    n = max_common_vector(a, b)
    # layout.hpp: for all 0 <= i < size(R), a(R(i)) == i and b(R(i)) == i
    assert size(R) == n
    for i in range(size(R)):
        assert a(R(i)) == i and b(R(i)) == i
    # maximal: element n (if any) is not contiguous in both
    if n < size(a):
        j = right_inverse(b)(n) if n < size(right_inverse(b)) else None
        assert j is None or a(j) != n or any(a(right_inverse(b)(k)) != k for k in range(n))
    assert max_common_vector(a, a) == size(right_inverse(a))


@settings(max_examples=N)
@given(S.layouts)
def test_nullspace(lay):
    K = nullspace(lay)
    # nullspace.cpp / layout.hpp: layout(result(i)) == 0, size == size(layout) / size(filter(layout))
    for i in range(size(K)):
        assert ref_eval(lay, ref_eval(K, i)) == 0
    assert size(K) == size(lay) // size(filter(lay)) or all(d == 0 for d in flat(lay.stride))
    assert size(K) == prod(s for s, d in zip(flat(lay.shape), flat(lay.stride)) if d == 0)
    # the nullspace is injective into the domain
    vals = ref_values(K)
    assert len(set(vals)) == len(vals)


# ---- swizzles ------------------------------------------------------------------------

@settings(max_examples=N)
@given(S.swizzle_args)
def test_swizzle_is_an_involutive_bijection(args):
    sw = Swizzle(*args)
    n = sw.size()
    img = [sw(x) for x in range(n)]
    assert sorted(img) == list(range(n))                 # a bijection on [0, size)
    for x in range(min(4 * n, 1 << 12)):
        assert sw(sw(x)) == x                            # an involution everywhere
        assert sw(x) >> sw.bits + sw.base + abs(sw.shift) == x >> sw.bits + sw.base + abs(sw.shift)


@settings(max_examples=N)
@given(S.swizzle_args, S.nonneg_layouts, st.integers(0, 64))
def test_composed_layout_evaluation(args, inner, offset):
    sw = Swizzle(*args)
    for outer in (sw, Layout(4 * ref_cosize(inner) + offset + 1, 1)):
        C = make_composed_layout(outer, offset, inner)
        for i in range(size(inner)):
            assert C(i) == outer(offset + inner(i))
            assert C(idx2crd(i, inner.shape)) == outer(offset + inner(i))
    C = composition(sw, inner)
    for i in range(size(inner)):
        assert C(i) == sw(inner(i))


@settings(max_examples=N)
@given(S.swizzle_args, S.composition_pairs)
def test_composed_layout_algebra_acts_on_inner(args, pair):
    A, B = pair
    sw = Swizzle(*args)
    C = make_composed_layout(sw, 3, A)
    R = composition(C, B)
    for c in range(ref_size(B)):
        assert ref_eval(R.inner, c) == ref_eval(A, ref_eval(B, c))
        assert R.outer == sw and R.offset == 3
