"""Int-tuples: goldens from CuTe's docs (01_layout.md, 02_layout_algebra.md) and properties."""

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from layoutalg import (
    LayoutError, ceil_div, colex_less, compatible, congruent, crd2crd, crd2idx, elem_less,
    flatten, idx2crd, prefix_product, product, shape_div, suffix_product, unflatten,
    weakly_congruent,
)
from layoutalg.inttuple import depth, rank, repeat_like, shape_min

from strategies import flat, prod, shapes


# ---- goldens --------------------------------------------------------------------

def test_basic_functions():
    assert product(()) == 1
    assert product(6) == 6
    assert product((3, (6, 2), 8)) == 288
    assert rank(6) == 1 and rank((2,)) == 1 and rank((4, 3)) == 2 and rank((3, (6, 2), 8)) == 3
    assert depth(6) == 0 and depth((4, 3)) == 1 and depth((3, (6, 2), 8)) == 2
    assert flatten(6) == 6
    assert flatten((3, (6, 2), 8)) == (3, 6, 2, 8)
    assert unflatten((1, 2, 3), (0, (0, 0))) == (1, (2, 3))
    assert repeat_like((1, (2, 3)), 0) == (0, (0, 0))


def test_prefix_suffix_products():
    assert prefix_product((2, (3, 4))) == (1, (2, 6))
    assert prefix_product((3, (6, 2), 8)) == (1, (3, 18), 36)
    assert prefix_product(5) == 1
    assert suffix_product((2, 3, 4)) == (12, 4, 1)
    assert suffix_product((2, (2, 2))) == (4, (2, 1))   # 01_layout.md: s2xh4 strides via LayoutRight


@pytest.mark.parametrize("a,b,expected", [
    # 02_layout_algebra.md, "dividing out" the stride from the shape
    ((6, 2), 2, (3, 2)),
    ((6, 2), 3, (2, 2)),
    ((6, 2), 6, (1, 2)),
    ((6, 2), 12, (1, 1)),
    ((3, 6, 2, 8), 3, (1, 6, 2, 8)),
    ((3, 6, 2, 8), 6, (1, 3, 2, 8)),
    ((3, 6, 2, 8), 9, (1, 2, 2, 8)),
    ((3, 6, 2, 8), 72, (1, 1, 1, 4)),
    (12, 4, 3),
    (4, 12, 1),
    ((4, 6), (2, 3), (2, 2)),
])
def test_shape_div_goldens(a, b, expected):
    assert shape_div(a, b) == expected


def test_shape_div_requires_divisibility():
    with pytest.raises(LayoutError, match="shape_div"):
        shape_div(6, 4)
    with pytest.raises(LayoutError, match="shape_div"):
        shape_div(3, 0)
    assert shape_min(3, 5) == 3


def test_ceil_div():
    assert ceil_div(7, 2) == 4
    assert ceil_div(8, 2) == 4
    assert ceil_div((6, 4), 4) == (2, 4)          # divided out from the left, as in CuTe
    assert ceil_div((6, 4), (4,)) == (2, 4)
    assert ceil_div((6, 4), (4, 3)) == (2, 2)
    assert ceil_div(24, (2, 3)) == 4
    with pytest.raises(LayoutError):
        ceil_div((2,), (1, 2))
    with pytest.raises(LayoutError):
        ceil_div(3, 0)


def test_compatible_goldens():
    # 01_layout.md, "Layout compatibility"
    assert not compatible(24, 32)
    assert compatible(24, (4, 6))
    assert compatible((4, 6), ((2, 2), 6))
    assert compatible(((2, 2), 6), ((2, 2), (3, 2)))
    assert compatible(24, ((2, 2), (3, 2)))
    assert compatible(24, ((2, 3), 4))
    assert not compatible(((2, 3), 4), ((2, 2), (3, 2)))
    assert not compatible(((2, 2), (3, 2)), ((2, 3), 4))
    assert compatible(24, (24,))
    assert not compatible((24,), 24)
    assert not compatible((24,), (4, 6))


def test_congruent_and_weakly_congruent():
    assert congruent((1, (2, 3)), (4, (5, 6)))
    assert not congruent((1, (2, 3)), (4, 5))
    assert not congruent(1, (1,))
    assert weakly_congruent(1, (2, (3, 4)))
    assert weakly_congruent((1, 2), (3, (4, 5)))
    assert not weakly_congruent((1, (2, 3)), (4, 5))


def test_idx2crd_goldens():
    # 01_layout.md, "Coordinate Mapping" for shape (3,(2,3))
    shape = (3, (2, 3))
    assert idx2crd(16, shape) == (1, (1, 2))
    assert idx2crd((1, 5), shape) == (1, (1, 2))
    assert idx2crd((1, (1, 2)), shape) == (1, (1, 2))
    table = {0: (0, 0), 1: (1, 0), 3: (0, 1), 8: (2, 2), 9: (0, 3), 13: (1, 4), 17: (2, 5)}
    for i, two_d in table.items():
        assert idx2crd(i, shape) == idx2crd(two_d, shape)
    assert idx2crd(5, 3) == 5                      # an int is already natural for an int shape


def test_crd2idx_goldens():
    # 01_layout.md, "Index Mapping": (3,(2,3)):(3,(12,1))
    shape, stride = (3, (2, 3)), (3, (12, 1))
    assert crd2idx(16, shape, stride) == 17
    assert crd2idx((1, 5), shape, stride) == 17
    assert crd2idx((1, (1, 2)), shape, stride) == 17
    rows = [[0, 12, 1, 13, 2, 14], [3, 15, 4, 16, 5, 17], [6, 18, 7, 19, 8, 20]]
    for i in range(3):
        for j in range(6):
            assert crd2idx((i, j), shape, stride) == rows[i][j]
    assert crd2idx((1, 2), (4, 4)) == 9             # default: compact column-major


def test_crd2idx_mismatch_raises():
    with pytest.raises(LayoutError, match="crd2idx"):
        crd2idx((1, 2, 3), (4, 4), (1, 4))
    with pytest.raises(LayoutError, match="idx2crd"):
        idx2crd((1, 2, 3), (4, 4))


def test_crd2crd():
    assert crd2crd((1, 5), (3, 6), (3, (2, 3))) == (1, (1, 2))
    assert crd2crd(7, 12, (4, 3)) == (3, 1)
    with pytest.raises(LayoutError):
        crd2crd(1, 12, (4, 4))


def test_elem_less_and_colex_less():
    assert elem_less((1, 2), (2, 3))
    assert not elem_less((1, 3), (2, 3))
    assert elem_less((1,), (2, 3))                  # missing modes count as 0
    with pytest.raises(LayoutError):
        elem_less((1, 2, 3), (2, 3))
    assert colex_less((3, 0), (0, 1))               # rightmost mode is most significant
    assert not colex_less((0, 1), (3, 0))
    assert not colex_less((1, 1), (1, 1))


# ---- properties -----------------------------------------------------------------

def ref_idx2crd(i, shape):
    """Independent colexicographic split (the last mode wraps, like CuTe's idx2crd)."""
    leaves = flat(shape)
    out = []
    for s in leaves:
        out.append(i % s)
        i //= s
    return out


@settings(max_examples=300)
@given(shapes)
def test_idx2crd_crd2idx_roundtrip(shape):
    n = prod(flat(shape))
    seen = set()
    for i in range(n):
        c = idx2crd(i, shape)
        assert congruent(c, shape)
        assert flat(c) == ref_idx2crd(i, shape)
        assert elem_less(c, shape)
        assert crd2idx(c, shape) == i
        assert crd2idx(i, shape) == i
        assert idx2crd(c, shape) == c
        seen.add(c)
    assert len(seen) == n


@settings(max_examples=200)
@given(shapes)
def test_colex_order_matches_index_order(shape):
    n = prod(flat(shape))
    crds = [idx2crd(i, shape) for i in range(n)]
    for a, b in zip(crds, crds[1:]):
        assert colex_less(a, b)
        assert not colex_less(b, a)


@settings(max_examples=200)
@given(shapes, st.data())
def test_prefix_product_is_compact_column_major(shape, data):
    strides = prefix_product(shape)
    assert congruent(strides, shape)
    fs, fd = flat(shape), flat(strides)
    acc = 1
    for s, d in zip(fs, fd):
        assert d == acc
        acc *= s
    sp = suffix_product(shape)
    acc = 1
    for s, d in zip(reversed(fs), reversed(flat(sp))):
        assert d == acc
        acc *= s
    # compatible(size, shape) always; compatible(shape, shape) reflexive
    assert compatible(product(shape), shape)
    assert compatible(shape, shape)


@settings(max_examples=200)
@given(st.integers(1, 500), st.integers(1, 60))
def test_ceil_div_int(n, d):
    q = ceil_div(n, d)
    assert q * d >= n > (q - 1) * d
    # a tuple whose leading modes the divisor divides: the rest is divided exactly
    assert ceil_div((d, n), d) == (1, n)


@settings(max_examples=100)
@given(shapes)
def test_crd2crd_roundtrip_between_compatible_shapes(shape):
    n = prod(flat(shape))
    for i in itertools.islice(range(n), 64):
        c = idx2crd(i, shape)
        assert crd2crd(c, shape, n) == i
        assert crd2crd(i, n, shape) == c
