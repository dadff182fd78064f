"""Golden values and CuTe's own unit-test cases.

Sources (all 0-based; CuTe prints static ints as ``_4``, we print ``4``):

* ``media/docs/cpp/cute/02_layout_algebra.md`` (NVIDIA/cutlass) -- worked examples;
* ``test/unit/cute/core/*.cpp`` (NVIDIA/cutlass) -- every static case of
  composition, complement, left/right inverse, logical_divide and logical_product,
  checked with the post-conditions those files state;
* MoYe.jl ``test/layout.jl`` -- its goldens are shapes/strides, which do not depend on
  MoYe's 1-based coordinates, so they carry over unchanged.
"""

import pytest

from layoutalg import (
    Layout, LayoutError, Swizzle, blocked_product, coalesce, complement, composition,
    compatible, cosize, downcast, filter, left_inverse, logical_divide, logical_product,
    make_layout, max_common_layout, max_common_vector, nullspace, raked_product,
    recast_layout, right_inverse, size, tile_to_shape, tiled_divide, tiled_product,
    upcast, zipped_divide, zipped_product,
)
from layoutalg.basis import E

from strategies import flat, prod, ref_eval, ref_values


def L(text):
    return Layout.parse(text)


def S(x):
    return str(x)


# ---- 02_layout_algebra.md ----------------------------------------------------------------

def test_doc_coalesce():
    assert S(coalesce(L("(2,(1,6)):(1,(6,2))"))) == "12:1"
    a = L("(2,(1,6)):(1,(6,2))")
    assert S(coalesce(a, (1, 1))) == "(2,6):(1,2)"
    assert coalesce(a, (1, 1)) == make_layout(coalesce(a[0]), coalesce(a[1]))


def test_coalesce_small_cases():
    # size-1 modes go; one mode left is int-shaped; none left is 1:0 (also for the empty layout)
    assert S(coalesce(L("(2,1):(1,0)"))) == "2:1"
    assert S(coalesce(L("1:0"))) == "1:0" and S(coalesce(L("1:5"))) == "1:0"
    assert S(coalesce(L("((1),1):((7),3)"))) == "1:0"
    assert S(coalesce(Layout((), ()))) == "1:0"
    assert S(coalesce(L("(6):(2)"))) == "6:2" and S(coalesce(L("((6)):((2))"))) == "6:2"
    # merges: a mode continues the kept mode before it (across dropped size-1 modes)
    assert S(coalesce(L("(2,1,3):(1,7,2)"))) == "6:1"
    assert S(coalesce(L("(2,3):(0,0)"))) == "6:0"
    assert S(coalesce(L("(2,3,4,5):(1,2,9,36)"))) == "(6,20):(1,9)"
    assert S(coalesce(Layout((2, 3), (E(0), E(0) * 2)))) == "6:1@0"
    # nothing to merge or drop: a nested layout flattens, a flat one is itself
    assert S(coalesce(L("(2,(3,5)):(1,(7,3))"))) == "(2,3,5):(1,7,3)"
    a = L("(2,3,5):(1,7,3)")
    assert coalesce(a) is a
    b = L("6:2")
    assert coalesce(b) is b
    # an int profile is one leaf: the whole layout
    assert S(coalesce(L("(2,(1,6)):(1,(6,2))"), 1)) == "12:1"


def test_doc_composition():
    assert S(composition(L("(6,2):(8,2)"), L("(4,3):(3,1)"))) == "((2,2),3):((24,2),8)"
    assert [composition(L("(6,2):(8,2)"), L("(4,3):(3,1)"))(i) for i in range(12)] == \
        [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42]
    assert S(composition(L("(6,2):(8,2)"), L("4:3"))) == "(2,2):(24,2)"
    assert S(composition(L("(6,2):(8,2)"), L("3:1"))) == "3:8"
    assert S(composition(L("20:2"), L("(5,4):(4,1)"))) == "(5,4):(8,2)"
    assert S(composition(L("(10,2):(16,4)"), L("(5,4):(1,5)"))) == "(5,(2,2)):(16,(80,4))"
    assert S(composition(L("(10,2):(16,4)"), L("5:1"))) == "5:16"
    assert S(composition(L("(10,2):(16,4)"), L("4:5"))) == "(2,2):(80,4)"
    # (3,6,2,8):(w,x,y,z) o 16:9 = (1,2,2,4):(9*w,3*x,y,z); size-1 modes are coalesced away
    w, x, y, z = 1000, 100, 10, 1
    r = composition(Layout((3, 6, 2, 8), (w, x, y, z)), Layout(16, 9))
    assert S(r) == f"(2,2,4):({3 * x},{y},{z})"
    # by-mode composition with a tiler and with a shape
    a = L("(12,(4,8)):(59,(13,1))")
    assert S(composition(a, (L("3:4"), L("8:2")))) == "(3,(2,4)):(236,(26,1))"
    assert composition(a, (L("3:4"), L("8:2"))) == \
        make_layout(composition(a[0], L("3:4")), composition(a[1], L("8:2")))
    assert S(composition(a, (3, 8))) == "(3,(4,2)):(59,(13,1))"


@pytest.mark.parametrize("layout,cotarget,expected", [
    ("4:1", 24, "6:4"),
    ("6:4", 24, "4:1"),
    ("(4,6):(1,4)", 24, "1:0"),
    ("4:2", 24, "(2,3):(1,8)"),
    ("(2,4):(1,6)", 24, "3:2"),
    ("(2,2):(1,6)", 24, "(3,2):(2,12)"),
])
def test_doc_complement(layout, cotarget, expected):
    c = complement(L(layout), cotarget)
    assert S(c) == expected
    full = make_layout(L(layout), c)
    assert cosize(full) == cotarget or expected == "1:0"
    assert len(set(ref_values(full))) == size(full)          # unique indices


def test_doc_logical_divide_1d_and_2d():
    a, b = L("(4,2,3):(2,1,8)"), L("4:2")
    assert S(complement(b, 24)) == "(2,3):(1,8)"
    assert S(logical_divide(a, b)) == "((2,2),(2,3)):((4,1),(2,8))"
    a = L("(9,(4,8)):(59,(13,1))")
    tiler = (L("3:3"), L("(2,4):(1,8)"))
    ld = logical_divide(a, tiler)
    assert S(ld[0][0]) == "3:177" and S(ld[1][0]) == "(2,4):(13,2)"
    assert S(make_layout(ld[0][0], ld[1][0])) == "(3,(2,4)):(177,(13,2))"
    assert make_layout(ld[0][0], ld[1][0]) == composition(a, tiler)
    assert [size(ld[0][0]), size(ld[0][1]), size(ld[1][0]), size(ld[1][1])] == [3, 3, 8, 4]
    zd = zipped_divide(a, tiler)
    assert [size(zd[0][0]), size(zd[0][1]), size(zd[1][0]), size(zd[1][1])] == [3, 8, 3, 4]
    assert zd[0] == composition(a, tiler)


def test_doc_logical_product():
    a, b = L("(2,2):(4,1)"), L("6:1")
    assert S(complement(a, 24)) == "(2,3):(2,8)"
    assert S(composition(complement(a, 24), b)) == "(2,3):(2,8)"
    assert S(logical_product(a, b)) == "((2,2),(2,3)):((4,1),(2,8))"
    # "the result is identical to the result of the 1-D Logical Divide example"
    assert logical_product(a, b) == logical_divide(L("(4,2,3):(2,1,8)"), L("4:2"))


def test_doc_blocked_and_raked_2d():
    # a 2x5 row-major block in a 3x4 column-major arrangement; blocked_product
    # "went ahead and coalesced mode-0 for us"
    block, tiler = L("(2,5):(5,1)"), L("(3,4):(1,3)")
    assert S(logical_product(block, tiler)) == "((2,5),(3,4)):((5,1),(10,30))"
    assert S(blocked_product(block, tiler)) == "(6,(5,4)):(5,(1,30))"
    assert S(raked_product(block, tiler)) == "((3,2),(4,5)):((10,5),(30,1))"


# ---- MoYe.jl test/layout.jl ------------------------------------------------------------

def test_moye_goldens():
    assert composition(L("20:2"), L("(4,5):(1,4)")) == L("(4,5):(2,8)")
    assert composition(L("20:2"), L("(4,5):(5,1)")) == L("(4,5):(10,2)")
    assert complement(L("4:1"), 24) == L("6:4")
    assert complement(L("6:4"), 24) == L("4:1")
    tile, mot = L("(2,2):(1,2)"), L("(3,4):(4,1)")
    assert logical_product(tile, mot) == L("((2,2),(3,4)):((1,2),(16,4))")
    assert blocked_product(tile, mot) == L("((2,3),8):((1,16),2)")
    assert raked_product(tile, mot) == L("((3,2),(4,2)):((16,1),(4,2))")
    assert zipped_product(tile, mot) == L("((2,2),(3,4)):((1,2),(16,4))")
    assert tiled_product(tile, mot) == L("((2,2),3,4):((1,2),16,4)")
    assert logical_divide(L("16:3"), L("4:1")) == L("(4,4):(3,12)")
    assert logical_divide(L("16:3"), L("4:4")) == L("(4,4):(12,3)")
    assert logical_divide(L("16:3"), L("4:2")) == L("(4,(2,2)):(6,(3,24))")
    assert logical_divide(L("16:3"), L("(2,2):(4,1)")) == L("((2,2),(2,2)):((12,3),(6,24))")
    raked = raked_product(tile, mot)
    subtile = (L("2:3"), L("2:4"))
    assert logical_divide(raked, subtile) == L("((2,3),(2,4)):((1,16),(2,4))")
    assert zipped_divide(raked, subtile) == L("((2,2),(3,4)):((1,2),(16,4))")
    assert tiled_divide(raked, subtile) == L("((2,2),3,4):((1,2),16,4)")


MOYE_RIGHT_INVERSE = ["1:0", "1:1", "(4):(0)", "(4):(1)", "(4):(2)", "(1,1):(0,0)", "(3,7):(0,0)",
                      "(1):(1)", "(2,4):(0,2)", "(8,4):(1,8)", "(8,4):(4,1)", "(2,4,6):(1,2,8)",
                      "(2,4,6):(4,1,8)", "(2,4,4,6):(4,1,0,8)", "(4,2):(1,16)", "(4,2):(1,5)"]


@pytest.mark.parametrize("text", MOYE_RIGHT_INVERSE)
def test_moye_right_inverse_cases(text):
    lay = L(text)
    inv = right_inverse(lay)
    for i in range(size(inv)):
        assert lay(inv(i)) == i


# ---- CuTe unit tests (test/unit/cute/core) ------------------------------------------------

COMPOSITION_CASES = [
    # composition.cpp, "Simple tests"
    ("1:0", "1:0"), ("1:0", "1:1"), ("1:1", "1:0"), ("1:1", "1:1"),
    ("4:1", "4:1"), ("4:2", "4:1"), ("4:0", "4:1"), ("4:1", "4:0"), ("4:1", "1:0"),
    ("4:1", "2:1"), ("4:2", "2:1"), ("4:1", "2:2"), ("4:2", "2:2"),
    ("(4,3):(1,4)", "12:1"), ("12:1", "(4,3):(1,4)"), ("12:2", "(4,3):(1,4)"),
    ("12:1", "(4,3):(3,1)"), ("12:2", "(4,3):(3,1)"), ("12:1", "(2,3):(2,4)"),
    ("(4,3):(1,4)", "(4,3):(1,4)"), ("(4,3):(1,4)", "6:1"), ("(4,3):(1,4)", "6:2"),
    ("(4,3):(1,4)", "(6,2):(2,1)"), ("(4,3):(1,4)", "(4,3):(3,1)"),
    ("(4,3):(3,1)", "(4,3):(1,4)"), ("(4,3):(3,1)", "12:1"), ("(4,3):(3,1)", "6:2"),
    ("(4,3):(3,1)", "(6,2):(2,1)"),
    ("(8,8):(1,8)", "((2,2,2),(2,2,2)):((1,16,4),(8,2,32))"),
    ("(8,8):(8,1)", "((2,2,2),(2,2,2)):((1,16,4),(8,2,32))"),
    ("((4,2)):((1,16))", "(4,2):(2,1)"),
    ("(2,2):(2,1)", "(2,2):(2,1)"),
    ("(4,8,2):(1,4,32)", "(2,2,2):(2,8,1)"),
    ("(4,8,2):(2,8,1)", "(2,2,2):(1,8,2)"),
    ("(4,8,2):(2,8,1)", "(4,2,2):(2,8,1)"),
    # "Dynamic shapes/strides"
    ("12:1", "4:1"), ("(12,3):(1,24)", "4:1"), ("16:2", "4:2"),
    ("(128,24,5):(1,128,3072)", "64:2"), ("(128,24,5):(1,128,3072)", "480:32"),
    # "cosize(b) > size(a) and divisibility"
    ("1:0", "4:1"), ("1:1", "4:1"), ("4:1", "4:2"),
    ("(4,3):(3,1)", "24:1"),                 # last mode gets extended
    ("(4,3):(3,1)", "8:1"),                  # ... even without last-mode divisibility
    ("(4,3,1):(3,1,0)", "24:1"),             # capping with 1:0 forces divisibility, extends in stride 0
    ("3:1", "4:1"),
    ("(48,24,5):(1,128,3072)", "32:1"),
    # "BETA: Negative strides" with a rank-1 left-hand side
    ("4:-1", "4:1"), ("4:1", "4:-1"), ("4:-1", "4:-1"), ("4:1", "4:-2"),
    # MoYe.jl
    ("(4,3):(1,4)", "(6,2):(2,1)"),
]


@pytest.mark.parametrize("a,b", COMPOSITION_CASES)
def test_cute_composition_cases(a, b):
    A, B = L(a), L(b)
    R = composition(A, B)
    # composition.cpp: compatible(B, R) and R(c) == A(B(c)) for all c < size(B)
    # (A is evaluated as CuTe does on an int: the last mode is unbounded)
    assert compatible(B.shape, R.shape)
    for c in range(size(B)):
        assert ref_eval(R, c) == ref_eval(A, ref_eval(B, c))


def test_cute_composition_beta_cases_are_rejected_cleanly():
    # CuTe's "BETA" negative-stride cases with a multi-mode lhs evaluate A at negative
    # indices with C++'s truncating division; layoutalg does not support them and says so.
    with pytest.raises(LayoutError, match="negative stride"):
        composition(L("(1,(2,4)):(0,(-1,512))"), L("2:-1"))
    # "BETA: Tuple strides" (coordinate-basis strides in the rhs)
    with pytest.raises(LayoutError, match="coordinate-basis"):
        composition(L("(4,4):(4,1)"), Layout((4, 4), (E(1), E(0))))


def test_cute_negative_stride_lhs_multimode_positive_rhs():
    # (4,4):(-1,1) o (2,4,2) is in composition.cpp's BETA section with only positive rhs strides
    A = L("(4,4):(-1,1)")
    for b in ("(2,4,2):(1,2,8)", "(2,4,2):(1,4,2)"):
        B = L(b)
        R = composition(A, B)
        for c in range(size(B)):
            assert ref_eval(R, c) == ref_eval(A, ref_eval(B, c))


COMPLEMENT_CASES = [
    # complement.cpp (static and dynamic cases); None means the default cotarget cosize(L)
    ("1:0", None), ("1:0", 2), ("1:0", 5), ("1:0", (2, 2)),
    ("1:1", None), ("1:1", 2), ("1:1", 5), ("1:1", (2, 2)),
    ("1:2", 1), ("1:2", 2), ("1:2", 8), ("1:2", 5), ("1:2", (2, 2)),
    ("4:0", 1), ("4:0", 2), ("4:0", 8),
    ("4:1", 1), ("4:1", 2), ("4:1", 8),
    ("4:2", 1), ("4:2", None), ("4:2", 16), ("4:2", 19), ("4:2", (2, 2)),
    ("4:4", 1), ("4:4", None), ("4:4", 17), ("4:4", (2, 2)),
    ("(2,4):(1,2)", None), ("(2,3):(1,2)", None), ("(2,4):(1,4)", None), ("(2,4):(1,6)", None),
    ("(2,4,8):(8,1,64)", None), ("(2,4,8):(8,1,0)", None), ("(2,4,8):(8,1,0)", 460),
    ("((2,2),(2,2)):((1,4),(8,32))", None), ("((2,2),(2,2)):((1,32),(8,4))", None),
    ("(4,6):(1,6)", None), ("(4,2):(1,10)", None), ("(4,2):(1,16)", None),
    ("12:1", 1), ("12:1", None), ("12:1", 53), ("12:1", 128),
    ("12:2", 1), ("12:2", None), ("12:2", 53), ("12:2", 128),
    ("(3,6):(1,3)", None), ("(3,6):(1,9)", None), ("(3,6):(1,10)", None),
    ("64:1", (32, 4, 4)),
]


@pytest.mark.parametrize("layout,cotarget", COMPLEMENT_CASES)
def test_cute_complement_cases(layout, cotarget):
    lay = L(layout)
    res = complement(lay) if cotarget is None else complement(lay, cotarget)
    target = cosize(lay) if cotarget is None else prod(flat(cotarget))
    completed = make_layout(lay, res)
    # complement.cpp post-conditions, verbatim
    assert cosize(completed) >= target                                         # (1)
    assert cosize(res) <= -(-target // cosize(lay)) * cosize(lay)               # (2)
    vals, lvals = ref_values(res), ref_values(lay)
    for i in range(1, size(res)):
        assert vals[i - 1] < vals[i]                                            # (3)
        assert vals[i] not in lvals                                             # (4)
    assert size(res) <= cosize(res)
    assert size(res) >= target // size(filter(lay))
    assert cosize(completed) <= cosize(res) + cosize(lay)
    assert cosize(res) >= target // size(filter(lay))
    assert size(complement(completed)) == 1


@pytest.mark.parametrize("layout", ["((2,2),(2,2)):((1,8),(8,4))", "(2,2):(2,3)"])
def test_cute_complement_non_injective_cases_raise(layout):
    # complement.cpp: "Fails due to non-injective layout" (commented out there)
    with pytest.raises(LayoutError, match="complement"):
        complement(L(layout))


LEFT_INVERSE_CASES = ["1:0", "((1,1)):((0,0))", "1:1", "4:1", "4:2", "(8,4):(1,8)",
                      "(8,4):(4,1)", "(2,4,6):(1,2,8)", "(2,4,6):(4,1,8)", "(4,2):(1,16)"]


@pytest.mark.parametrize("text", LEFT_INVERSE_CASES)
def test_cute_left_inverse_cases(text):
    lay = L(text)
    if text == "(8,4):(4,1)":
        lay = filter(lay)       # inverse_left.cpp tests filter(layout) for this one
    inv = left_inverse(lay)
    # inverse_left.cpp: inv(layout(i)) == i for all i < size(layout)
    for i in range(size(lay)):
        assert inv(lay(i)) == i


def test_left_inverse_goldens():
    assert S(left_inverse(L("(4,2):(2,1)"))) == "(2,4):(4,1)"
    assert S(right_inverse(L("(4,2):(2,1)"))) == "(2,4):(4,1)"
    assert S(left_inverse(L("4:2"))) == "(2,4):(0,1)" or \
        all(left_inverse(L("4:2"))(2 * i) == i for i in range(4))


RIGHT_INVERSE_CASES = MOYE_RIGHT_INVERSE + ["(2,4):(4,1)", "((2,2),4):((8,1),2)", "(4,2):(-1,4)"]


@pytest.mark.parametrize("text", RIGHT_INVERSE_CASES)
def test_cute_right_inverse_cases(text):
    lay = L(text)
    inv = right_inverse(lay)
    for i in range(size(inv)):
        assert ref_eval(lay, ref_eval(inv, i)) == i


LOGICAL_DIVIDE_CASES = [
    ("1:0", "1:0"), ("1:0", "1:1"), ("1:1", "1:0"), ("1:1", "1:1"),
    ("6:1", "2:1"), ("6:1", "2:3"), ("6:1", "(2,3):(3,1)"),
    ("6:2", "2:1"), ("6:2", "2:3"), ("6:2", "(2,3):(3,1)"),
    ("(6,6):(1,12)", "(6,3):(3,1)"), ("(6,6):(12,1)", "(6,3):(3,1)"),
    ("32:1", "2:8"), ("(4,1):(1,1)", "2:1"), ("(4,1):(1,1)", "2:2"),
    ("(8,8):(1,8)", "32:2"), ("(8,8):(8,1)", "32:2"),
    ("2:1", "32:1"), ("48:1", "32:1"), ("96:1", "32:2"), ("32:1", "48:1"),
]


@pytest.mark.parametrize("a,b", LOGICAL_DIVIDE_CASES)
def test_cute_logical_divide_cases(a, b):
    A, B = L(a), L(b)
    R = logical_divide(A, B)
    # logical_divide.cpp: rank 2 and compatible(B, layout<0>(R))
    assert len(R.shape) == 2
    assert compatible(B.shape, R[0].shape)


def test_cute_logical_divide_dynamic_enforcement():
    # logical_divide.cpp "Enforcement for dynamic cases" (shapes; strides where not size-1)
    r = logical_divide(L("2:1"), L("32:1"))
    assert r[0] == L("32:1") and size(r[1]) == 1
    r = logical_divide(L("48:1"), L("32:1"))
    assert r == L("(32,2):(1,32)")
    r = logical_divide(L("32:1"), L("48:1"))
    assert r[0] == L("48:1") and size(r[1]) == 1


LOGICAL_PRODUCT_CASES = [
    ("1:0", "1:0"), ("1:1", "1:0"), ("1:0", "1:1"), ("1:1", "1:1"),
    ("3:1", "4:0"), ("3:0", "4:1"), ("3:0", "4:0"), ("3:2", "4:1"),
    ("(3):(1)", "(2,4):(1,2)"), ("(2,4):(1,2)", "(3):(1)"),
    ("(8,(2,2)):(1,(8,16))", "4:2"), ("(2,2):(1,2)", "(3,3):(3,1)"),
    ("3:32", "32:1"), ("3:2", "4:1"), ("3:32", "128:1"), ("3:32", "(8,8):(1,8)"),
    ("3:32", "(8,8):(8,1)"), ("((4,2)):((1,16))", "(4,4):(1,4)"),
    ("((4,2)):((1,16))", "(4,2):(2,1)"),
    ("((2,2),(2,2)):((1,4),(8,32))", "(2,2):(1,2)"),
    ("((2,2),(2,2)):((1,4),(8,32))", "(2,2):(2,1)"),
    ("((4,6)):((1,6))", "3:1"),
]


@pytest.mark.parametrize("a,b", LOGICAL_PRODUCT_CASES)
def test_cute_logical_product_cases(a, b):
    A, B = L(a), L(b)
    R = logical_product(A, B)
    # logical_product.cpp: rank 2, layout<0>(R) == A, compatible(B, layout<1>(R))
    assert len(R.shape) == 2
    assert R[0] == A
    assert compatible(B.shape, R[1].shape)


# ---- other goldens --------------------------------------------------------------------------

def test_tile_to_shape_goldens():
    assert S(tile_to_shape(L("(2,2):(1,2)"), (4, 6))) == "((2,2),(2,3)):((1,4),(2,8))"
    # CuTe coalesces the blocked product by the target's profile: a tuple target keeps its rank
    assert S(tile_to_shape(L("2:2"), (4,))) == "((2,2)):((2,1))"
    assert S(tile_to_shape(L("2:2"), 4)) == "(2,2):(2,1)"
    assert S(tile_to_shape(L("(2,2):(1,2)"), ((2, 2), 6))) == "((2,2),(2,3)):((1,4),(2,8))"
    assert S(tile_to_shape(L("4:1"), (8,))) == "(8):(1)"
    # a row-major 8x8 atom tiled to 16x32: rows first (default order), then columns
    # (the row mode (8,2):(8,64) coalesces to 16:8)
    assert S(tile_to_shape(L("(8,8):(8,1)"), (16, 32))) == "(16,(8,4)):(8,(1,128))"
    assert S(tile_to_shape(L("(8,8):(8,1)"), (16, 32), (1, 0))) == "((8,2),(8,4)):((8,256),(1,64))"
    with pytest.raises(LayoutError, match="tile_to_shape"):
        tile_to_shape(L("(2,2):(1,2)"), (4, 5))


def test_recast_goldens():
    assert S(upcast(L("(4,8):(8,1)"), 2)) == "(4,4):(4,1)"
    assert S(downcast(L("(4,4):(4,1)"), 2)) == "(4,8):(8,1)"
    assert S(recast_layout(L("(4,8):(8,1)"), "f16", "f32")) == "(4,4):(4,1)"
    assert S(recast_layout(L("(4,4):(4,1)"), "f32", "f16")) == "(4,8):(8,1)"
    assert S(upcast(L("6:1"), 4)) == "2:1"            # CuTe: shape ceil_div(6, 4/1)
    assert S(upcast(L("(2,8):(0,4)"), 4)) == "(2,8):(0,1)"
    with pytest.raises(LayoutError, match="downcast"):
        downcast(L("4:2"), 2)                          # CuTe: "Downcast requires adjacent elements"


def test_common_vector_and_nullspace_goldens():
    a = L("(4,8):(8,1)")
    assert S(max_common_layout(a, a)) == "(8,4):(4,1)"
    assert max_common_vector(a, a) == 32
    assert max_common_vector(a, L("(4,8):(1,4)")) == 1
    assert max_common_vector(L("(4,8):(1,4)"), L("(4,(2,4)):(1,(4,8))")) == 32
    assert S(nullspace(L("(2,4,3):(0,1,0)"))) == "(2,3):(1,8)"
    assert S(nullspace(L("(2,4):(1,2)"))) == "1:0"


def test_swizzle_goldens():
    sw = Swizzle(3, 3, 3)
    assert [sw(i) for i in (0, 8, 64, 72, 448)] == [0, 8, 72, 64, 504]
    # swizzle.hpp: make_swizzle<0b1000, 0b0100>() -> Swizzle<1,2,1>; <0b11000000, 0b110> -> <2,1,5>
    assert (Swizzle(1, 2, 1).yyy_mask, Swizzle(1, 2, 1).zzz_mask) == (0b1000, 0b0100)
    assert (Swizzle(2, 1, 5).yyy_mask, Swizzle(2, 1, 5).zzz_mask) == (0b11000000, 0b110)
    assert (Swizzle(2, 0, -3).yyy_mask, Swizzle(2, 0, -3).zzz_mask) == (0b11, 0b11000)
    assert Swizzle(2, 0, -3)(0b01) == 0b01001
    assert Swizzle(2, 0, -3).size() == 32
    assert Swizzle(3, 4, 3).size() == 1024
    assert str(Swizzle(3, 3, 3)) == "Sw<3,3,3>"
    atom = composition(Swizzle(3, 3, 3), L("(8,64):(64,1)"))
    assert str(atom) == "Sw<3,3,3> o 0 o (8,64):(64,1)"
    assert str(tile_to_shape(atom, (128, 64))) == "Sw<3,3,3> o 0 o (128,64):(64,1)"
    # every row of the swizzled 8x64 atom is a permutation of its 8 16-byte chunks
    for m in range(8):
        chunks = sorted(atom(m, k) // 8 for k in range(0, 64, 8))
        assert chunks == sorted((m * 64 + k) // 8 for k in range(0, 64, 8))
