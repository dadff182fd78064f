"""Swizzles and composed layouts (cute/swizzle.hpp, test/unit/cute/core/swizzle_layout.cpp)."""

import pytest
from hypothesis import given, settings, strategies as st

from layoutalg import (
    ComposedLayout, Layout, Swizzle, _, composition, cosize, downcast, logical_divide,
    make_composed_layout, size, tile_to_shape, upcast, zipped_divide,
)
from layoutalg.algebra import coalesce

import strategies as S


def L(text):
    return Layout.parse(text)


def test_swizzle_bit_formula():
    # 0bxxxxYYYxxxxZZZxxxx: ZZZ ^= YYY
    sw = Swizzle(3, 4, 3)
    for x in range(1 << 12):
        yyy = (x >> 7) & 0b111
        assert sw(x) == x ^ (yyy << 4)
    sw = Swizzle(2, 0, -3)                      # negative shift: YYY below ZZZ
    for x in range(1 << 8):
        assert sw(x) == x ^ ((x & 0b11) << 3)


def test_identity_swizzle_and_equality():
    assert all(Swizzle(0, 4, 3)(x) == x for x in range(256))
    assert Swizzle(3, 3, 3) == Swizzle(3, 3, 3) and hash(Swizzle(3, 3, 3)) == hash(Swizzle(3, 3, 3))
    assert Swizzle(3, 3, 3) != Swizzle(3, 4, 3)
    assert repr(Swizzle(2, 1, -3)) == "Swizzle(2, 1, -3)"
    with pytest.raises(AttributeError):
        Swizzle(1, 1, 1).bits = 2


@settings(max_examples=300)
@given(S.swizzle_args)
def test_swizzle_involution_and_bijection(args):
    sw = Swizzle(*args)
    n = sw.size()
    assert n == 1 << (sw.base + sw.bits + abs(sw.shift))
    assert sorted(sw(x) for x in range(n)) == list(range(n))
    for x in range(min(2 * n, 4096)):
        assert sw(sw(x)) == x
    # bits below the base are never touched
    for x in range(min(n, 1024)):
        assert sw(x) & ((1 << sw.base) - 1) == x & ((1 << sw.base) - 1)


SW_LAYOUTS = [
    composition(Swizzle(3, 0, 3), L("(8,8):(8,1)")),
    composition(Swizzle(3, 0, -3), L("(8,8):(8,1)")),
    composition(Swizzle(2, 1, 3), L("((2,2,2),(2,2,2)):((32,2,8),(4,1,16))")),
]


@pytest.mark.parametrize("sw_layout", SW_LAYOUTS, ids=str)
def test_swizzle_layout_slicing(sw_layout):
    # swizzle_layout.cpp: slicing a row or a column of a swizzled layout
    m, n = size(sw_layout[0]), size(sw_layout[1])
    for i in range(m):
        row = sw_layout(i, _)
        for j in range(n):
            assert sw_layout(i, j) == row(j)
    for j in range(n):
        col = sw_layout(_, j)
        for i in range(m):
            assert sw_layout(i, j) == col(i)
    # a bijection onto [0, 64)
    assert sorted(sw_layout(i) for i in range(size(sw_layout))) == list(range(64))


def test_composed_layout_text_and_structure():
    c = make_composed_layout(Swizzle(3, 3, 3), 0, L("(8,64):(64,1)"))
    assert str(c) == "Sw<3,3,3> o 0 o (8,64):(64,1)"
    assert Layout.parse(str(c)) == c
    assert Layout.parse("Sw<2,0,-3> o 5 o (4,8):(8,1)") == \
        ComposedLayout(Swizzle(2, 0, -3), 5, L("(4,8):(8,1)"))
    assert c.shape == (8, 64) and size(c) == 512 and cosize(c) == 512
    assert c[1] == ComposedLayout(Swizzle(3, 3, 3), 0, L("64:1"))
    assert [m.inner for m in c] == [L("8:64"), L("64:1")]
    assert c == make_composed_layout(Swizzle(3, 3, 3), 0, L("(8,64):(64,1)"))
    assert len({c, make_composed_layout(Swizzle(3, 3, 3), 0, L("(8,64):(64,1)"))}) == 1


@settings(max_examples=200)
@given(S.swizzle_args, S.nonneg_layouts, st.integers(0, 40))
def test_composed_evaluation_is_outer_of_offset_plus_inner(args, inner, off):
    sw = Swizzle(*args)
    c = ComposedLayout(sw, off, inner)
    for i in range(size(inner)):
        assert c(i) == sw(off + inner(i))
    # a layout as the outer function
    outer = Layout(S.ref_cosize(inner) + off + 1, 3)
    c2 = ComposedLayout(outer, off, inner)
    for i in range(size(inner)):
        assert c2(i) == 3 * (off + inner(i))


@settings(max_examples=200)
@given(S.swizzle_args, S.divide_pairs)
def test_composed_divide_and_coalesce_act_on_inner(args, pair):
    A, B = pair
    sw = Swizzle(*args)
    c = ComposedLayout(sw, 2, A)
    d = logical_divide(c, B)
    assert d == ComposedLayout(sw, 2, logical_divide(A, B))
    for i in range(size(d)):
        assert d(i) == sw(2 + logical_divide(A, B)(i))
    assert coalesce(c) == ComposedLayout(sw, 2, coalesce(A))
    assert zipped_divide(c, B).inner == zipped_divide(A, B)


def test_composed_tile_to_shape_and_slices():
    atom = composition(Swizzle(3, 3, 3), L("(8,64):(64,1)"))
    big = tile_to_shape(atom, (128, 64))
    assert str(big) == "Sw<3,3,3> o 0 o (128,64):(64,1)"
    for m in range(0, 128, 7):
        for k in range(0, 64, 5):
            assert big(m, k) == Swizzle(3, 3, 3)(64 * m + k)
    row = big(3, _)
    assert all(row(k) == big(3, k) for k in range(64))


@pytest.mark.parametrize("b,m,s", [(3, 3, 3), (2, 4, 3), (1, 2, 4), (3, 4, -3)])
@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_composed_downcast_upcast_roundtrip(b, m, s, n):
    inner = L("(8,64):(64,1)")
    c = ComposedLayout(Swizzle(b, m, s), 0, inner)
    d = downcast(c, n)
    assert d.outer == Swizzle(b, m + n.bit_length() - 1, s)
    assert upcast(d, n) == c
    # narrow element j of wide element (r, q) sits at n * c(r, q) + j
    for r in range(8):
        for q in range(0, 64, 9):
            for j in range(n):
                assert d(r, q * n + j) == n * c(r, q) + j


def test_composed_upcast_requires_alignment():
    from layoutalg import LayoutError

    c = ComposedLayout(Swizzle(3, 1, 3), 0, L("(8,64):(64,1)"))
    with pytest.raises(LayoutError, match="upcast"):
        upcast(c, 4)            # base 1 < log2(4)
    with pytest.raises(LayoutError, match="power of two"):
        downcast(c, 3)


def test_swizzle_of_a_numpy_integer_is_an_int_as_a_layouts_is():
    import numpy as np

    sw = Swizzle(3, 3, 3)
    for x in (np.int64(100), np.int32(100), np.uint16(100)):
        y = sw(x)
        assert type(y) is int and y == sw(100)
