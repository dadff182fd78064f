"""``Layout``: construction, printing, evaluation, modes, slicing; goldens from 01_layout.md."""

import pickle

import pytest
from hypothesis import given, settings, strategies as st

from layoutalg import (
    Layout, LayoutError, LayoutIndexError, _, cosize, depth, idx2crd, make_layout,
    make_layout_like, make_ordered_layout, rank, size, slice_and_offset,
)
from layoutalg.layout import compact_col_major

from strategies import layouts, ref_cosize, ref_eval, ref_size


def L(text):
    return Layout.parse(text)


# ---- construction and printing (01_layout.md; CuTe's leading "_" on static ints dropped) ----

def test_printing_goldens():
    assert str(Layout(8)) == "8:1"
    assert str(Layout((2, 4))) == "(2,4):(1,2)"
    assert str(Layout((2, 4), (12, 1))) == "(2,4):(12,1)"
    assert str(Layout((2, (2, 2)), (4, (2, 1)))) == "(2,(2,2)):(4,(2,1))"
    assert str(Layout((2, (2, 2)))) == "(2,(2,2)):(1,(2,4))"          # s2xh4_col
    assert repr(Layout((2, 4))) == "Layout((2, 4), (1, 2))"


def test_compact_strides_size_one_modes_get_stride_zero():
    # CuTe's compact_major: size-1 modes get stride 0
    assert compact_col_major((2, (1, 3), 1)) == (1, (0, 2), 0)
    assert str(Layout((2, 1, 3))) == "(2,1,3):(1,0,2)"
    assert str(Layout(1)) == "1:0"


def test_equality_hash_immutability_pickle():
    a = Layout((4, 2), (2, 1))
    b = Layout([4, 2], [2, 1])
    assert a == b and hash(a) == hash(b)
    assert a != Layout((4, 2))
    assert len({a, b, Layout((4, 2))}) == 2
    with pytest.raises(AttributeError):
        a.shape = 3
    assert pickle.loads(pickle.dumps(a)) == a
    assert (a == 3) is False


def test_sizes():
    a = Layout((4, (3, 6)))
    assert size(a) == 72 and a.size() == 72
    assert rank(a) == 2 and depth(a) == 2
    assert rank(Layout(8)) == 1 and depth(Layout(8)) == 0
    assert size(a, 1) == 18
    assert cosize(Layout((4, 2), (2, 1))) == 8
    assert cosize(Layout((2, 4), (12, 1))) == 16


def test_cosize_negative_strides_follow_cute():
    # CuTe measures the codomain with |stride| (coshape "protects against negative strides");
    # pycute's layout(size-1)+1 gives -5 here.
    assert cosize(Layout(4, -2)) == 7
    assert cosize(Layout((4, 2), (-2, 0))) == 7
    assert cosize(Layout((4, 4), (-1, 1))) == 7
    assert cosize(Layout((3, 2), (0, 0))) == 1


# ---- evaluation ---------------------------------------------------------------------

def test_evaluation_goldens():
    # print1D / print2D from 01_layout.md
    assert [L("(2,4):(1,2)")(i) for i in range(8)] == list(range(8))
    assert [L("(2,4):(12,1)")(i) for i in range(8)] == [0, 12, 1, 13, 2, 14, 3, 15]
    assert [L("(2,(2,2)):(1,(2,4))")(i) for i in range(8)] == list(range(8))
    s2xh4 = L("(2,(2,2)):(4,(2,1))")
    assert [s2xh4(i) for i in range(8)] == [0, 4, 2, 6, 1, 5, 3, 7]
    assert [[s2xh4(m, n) for n in range(4)] for m in range(2)] == [[0, 2, 1, 3], [4, 6, 5, 7]]
    assert [L("(2,4):(12,1)")(m, n) for m in range(2) for n in range(4)] == \
        [0, 1, 2, 3, 12, 13, 14, 15]
    # vector layouts
    assert [L("((4,2)):((2,1))")(i) for i in range(8)] == [0, 2, 4, 6, 1, 3, 5, 7]
    assert [L("((4,2)):((1,4))")(i) for i in range(8)] == list(range(8))
    assert [L("8:2")(i) for i in range(8)] == [0, 2, 4, 6, 8, 10, 12, 14]
    # matrix ((2,2),2):((4,1),2)
    m = L("((2,2),2):((4,1),2)")
    assert [[m(i, j) for j in range(2)] for i in range(4)] == [[0, 2], [4, 6], [1, 3], [5, 7]]
    # index mapping example (3,(2,3)):(3,(12,1))
    t = L("(3,(2,3)):(3,(12,1))")
    assert t(16) == t(1, 5) == t((1, (1, 2))) == 17


def test_evaluation_out_of_range_raises():
    a = Layout((4, 2))
    with pytest.raises(LayoutIndexError, match="out of range"):
        a(8)
    with pytest.raises(LayoutIndexError):
        a(4, 0)
    with pytest.raises(LayoutIndexError):
        a(-1)
    with pytest.raises(LayoutIndexError, match="congruent"):
        a((1, 1, 1))
    with pytest.raises(LayoutError):
        a()


# ---- modes and concatenation ------------------------------------------------------------

def test_sublayouts_and_concatenation():
    a = Layout((4, (3, 6)))
    assert str(a) == "(4,(3,6)):(1,(4,12))"
    assert str(a[0]) == "4:1"
    assert str(a[1]) == "(3,6):(4,12)"
    assert str(a[1][0]) == "3:4" and str(a[1][1]) == "6:12"
    assert str(a[-1]) == "(3,6):(4,12)"
    with pytest.raises(LayoutIndexError):
        a[2]
    x, y = Layout(3, 1), Layout(4, 3)
    row, col = make_layout(x, y), make_layout(y, x)
    assert str(row) == "(3,4):(1,3)" and str(col) == "(4,3):(3,1)"
    assert str(make_layout(row, col)) == "((3,4),(4,3)):((1,3),(3,1))"
    aa = make_layout(x)
    assert str(aa) == "(3):(1)"
    assert str(make_layout(aa)) == "((3)):((1))"
    assert str(make_layout(x, make_layout(x), x)) == "(3,(3),3):(1,(1),1)"
    assert list(Layout((2, 3))) == [Layout(2, 1), Layout(3, 2)]
    assert list(Layout(5, 2)) == [Layout(5, 2)]


def test_make_ordered_layout_and_like():
    # cute/layout.hpp examples
    assert str(make_ordered_layout((2, 2, 2, 2), (0, 2, 3, 1))) == "(2,2,2,2):(1,4,8,2)"
    assert str(make_ordered_layout((2, 3, 4), (1, 2, 0))) == "(2,3,4):(4,8,1)"
    assert str(make_layout_like(Layout((2, 2, 2, 2), (0, 2, 4, 1)))) == "(2,2,2,2):(0,2,4,1)"
    assert str(make_layout_like(Layout((2, 3, 4, 5), (0, 42, 1, 0)))) == "(2,3,4,5):(0,4,1,0)"


# ---- slicing -------------------------------------------------------------------------

def test_slicing():
    a = Layout((4, 8), (8, 1))
    sub, off = slice_and_offset((None, 3), a)
    assert str(sub) == "(4):(8)" and off == 3
    assert a(_, 3) == Layout((4,), (8,))
    b = Layout((4, (2, 2)), (2, (1, 8)))
    assert str(b(None, (1, None))) == "(4,2):(2,8)"
    assert slice_and_offset((2, (1, None)), b) == (Layout((2,), (8,)), 5)
    assert slice_and_offset(_, b) == (b, 0)


# ---- properties --------------------------------------------------------------------------

@settings(max_examples=300)
@given(layouts)
def test_evaluation_matches_reference(lay):
    n = ref_size(lay)
    assert size(lay) == n
    assert cosize(lay) == ref_cosize(lay)
    for i in range(n):
        v = lay(i)
        assert v == ref_eval(lay, i)
        assert lay(idx2crd(i, lay.shape)) == v


@settings(max_examples=300)
@given(layouts)
def test_parse_str_roundtrip_and_modes(lay):
    assert Layout.parse(str(lay)) == lay
    assert eval(repr(lay), {"Layout": Layout}) == lay
    if isinstance(lay.shape, tuple) and len(lay.shape) > 0:
        assert make_layout(*list(lay)) == lay


@settings(max_examples=200)
@given(layouts, st.data())
def test_slice_plus_offset_is_evaluation(lay, data):
    if not isinstance(lay.shape, tuple):
        return
    r = len(lay.shape)
    keep = data.draw(st.integers(0, r - 1))
    crd = [data.draw(st.integers(0, size(lay[k]) - 1)) for k in range(r)]
    slc = tuple(None if k == keep else crd[k] for k in range(r))
    sub, off = slice_and_offset(slc, lay)
    assert size(sub) == size(lay[keep])
    for j in range(size(sub)):
        full = tuple(j if k == keep else crd[k] for k in range(r))
        assert sub(j) + off == lay(full)
