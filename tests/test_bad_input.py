"""Invalid input: every bad call raises a clear LayoutError naming the operation.

``LayoutError`` is a ``ValueError``; ``LayoutTypeError`` is also a ``TypeError`` and
``LayoutIndexError`` also an ``IndexError``.  Never an ``AssertionError``,
``RecursionError``, raw ``IndexError``/``ZeroDivisionError``/``AttributeError``, or a
silent wrong result.
"""

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import layoutalg as la
from layoutalg import (
    ComposedLayout, Layout, LayoutError, LayoutIndexError, LayoutTypeError, Swizzle, _,
)

import strategies as S


def L(text):
    return Layout.parse(text)


def _deep(n):
    t = 2
    for _k in range(n):
        t = (t,)
    return t


def test_exception_hierarchy():
    assert issubclass(LayoutError, ValueError)
    assert issubclass(LayoutTypeError, LayoutError) and issubclass(LayoutTypeError, TypeError)
    assert issubclass(LayoutIndexError, LayoutError) and issubclass(LayoutIndexError, IndexError)


# (call, expected exception, text the message must contain -- the operation's name)
BAD_CALLS = [
    # shapes and strides
    (lambda: Layout((2, 3), (1,)), LayoutError, "not congruent"),
    (lambda: Layout((2, 3), 1), LayoutError, "not congruent"),
    (lambda: Layout(2, (1, 2)), LayoutError, "not congruent"),
    (lambda: Layout(0), LayoutError, "positive"),
    (lambda: Layout((4, -2)), LayoutError, "positive"),
    (lambda: Layout(2.0), LayoutTypeError, "Layout"),
    (lambda: Layout(float("nan")), LayoutTypeError, "Layout"),
    (lambda: Layout(True), LayoutTypeError, "Layout"),
    (lambda: Layout((2, False)), LayoutTypeError, "Layout"),
    (lambda: Layout(2, 1.5), LayoutTypeError, "Layout"),
    (lambda: Layout(2, True), LayoutTypeError, "Layout"),
    (lambda: Layout("abc"), LayoutTypeError, "Layout"),
    (lambda: Layout(None), LayoutTypeError, "Layout"),
    (lambda: Layout({}), LayoutTypeError, "Layout"),
    (lambda: Layout(((((2,),),),), (1,)), LayoutError, "congruent"),
    (lambda: Layout(_deep(3000)), LayoutError, "nested too deeply"),
    # coordinates
    (lambda: Layout((4, 2))(8), LayoutIndexError, "out of range"),
    (lambda: Layout((4, 2))(-1), LayoutIndexError, "out of range"),
    (lambda: Layout((4, 2))(4, 0), LayoutIndexError, "out of range"),
    (lambda: Layout((4, 2))((1, 1, 1)), LayoutIndexError, "congruent"),
    (lambda: Layout((4, 2))(1.0), LayoutTypeError, "Layout("),
    (lambda: Layout((4, 2))("a"), LayoutTypeError, "Layout("),
    (lambda: Layout((4, 2))(True), LayoutTypeError, "Layout("),
    (lambda: Layout((4, 2))(), LayoutError, "Layout("),
    (lambda: Layout((4, 2))[2], LayoutIndexError, "Layout["),
    (lambda: Layout((4, 2))["a"], LayoutTypeError, "Layout["),
    (lambda: la.slice_and_offset((None, 5), Layout((2, 2))), LayoutIndexError, "slice_and_offset"),
    (lambda: la.slice_and_offset((None, 1), "x"), LayoutTypeError, "slice_and_offset"),
    (lambda: la.crd2idx((1, 2, 3), (4, 4)), LayoutError, "crd2idx"),
    (lambda: la.crd2idx((1, "a"), (2, 2)), LayoutTypeError, "crd2idx"),
    (lambda: la.idx2crd("a", (2, 2)), LayoutTypeError, "idx2crd"),
    (lambda: la.idx2crd((1, 2, 3), (2, 2)), LayoutError, "idx2crd"),
    # int-tuple arithmetic
    (lambda: la.shape_div(6, 4), LayoutError, "shape_div"),
    (lambda: la.shape_div(6, 0), LayoutError, "shape_div"),
    (lambda: la.ceil_div(4, 0), LayoutError, "ceil_div"),
    (lambda: la.ceil_div("a", 2), LayoutTypeError, "ceil_div"),
    (lambda: la.product("ab"), LayoutTypeError, "product"),
    (lambda: la.product((2, None)), LayoutTypeError, "product"),
    (lambda: la.prefix_product("ab"), LayoutTypeError, "prefix_product"),
    (lambda: la.size("abc"), LayoutTypeError, "size"),
    (lambda: la.size(2.5), LayoutTypeError, "size"),
    (lambda: la.rank("abc"), LayoutTypeError, "rank"),
    (lambda: la.depth(3.5), LayoutTypeError, "depth"),
    (lambda: la.cosize("abc"), LayoutTypeError, "cosize"),
    (lambda: la.unflatten((1, 2), (0, 0, 0)), LayoutError, "unflatten"),
    # construction helpers
    (lambda: la.make_layout(Layout(2), 3), LayoutTypeError, "make_layout"),
    (lambda: la.make_layout(), LayoutError, "make_layout"),
    (lambda: la.make_ordered_layout((2, 2), (1,)), LayoutError, "make_ordered_layout"),
    (lambda: la.make_layout_like(3), LayoutTypeError, "make_layout_like"),
    # composition: CuTe's stride and shape divisibility conditions
    (lambda: la.composition(L("(4,3):(1,5)"), L("3:2")), LayoutError, "composition: shape divisibility"),
    (lambda: la.composition(L("(4,3):(1,5)"), L("3:3")), LayoutError, "composition: stride divisibility"),
    (lambda: la.composition(L("(4,3):(1,5)"), L("2:5")), LayoutError, "composition: stride divisibility"),
    (lambda: la.composition(L("(6,2):(1,7)"), L("4:4")), LayoutError, "composition: stride divisibility"),
    (lambda: la.composition(L("(4,6,2):(1,5,100)"), L("36:1")), LayoutError, "composition: shape divisibility"),
    # modes of B whose offsets carry across a mode of A: A o B is not a layout
    (lambda: la.composition(L("(4,2):(1,10)"), L("(3,2):(1,3)")), LayoutError, "composition: the modes of"),
    (lambda: la.composition(L("(2,2):(1,10)"), L("(2,2):(1,1)")), LayoutError, "composition: the modes of"),
    (lambda: la.composition(L("(4,4):(1,5)"), L("2:-1")), LayoutError, "composition: negative stride"),
    (lambda: la.composition(Layout(4), "x"), LayoutTypeError, "composition"),
    (lambda: la.composition("x", Layout(4)), LayoutTypeError, "composition"),
    (lambda: la.composition(Layout(4), 2.5), LayoutTypeError, "composition"),
    (lambda: la.composition(Layout(4), True), LayoutTypeError, "composition"),
    (lambda: la.composition(Layout(4), 0), LayoutError, "Layout"),
    (lambda: la.composition(Layout(4), (2, 2)), LayoutError, "composition: tiler"),
    (lambda: la.composition(Layout((4, 4)), ("a", 2)), LayoutTypeError, "composition"),
    (lambda: la.composition(Swizzle(1, 0, 1), 3), LayoutTypeError, "composition"),
    (lambda: la.with_shape(L("(4,3):(1,5)"), (3, 4)), LayoutError, "composition"),
    # complement
    (lambda: la.complement(L("(2,2):(1,1)")), LayoutError, "complement: layout"),
    (lambda: la.complement(L("(2,2):(2,3)")), LayoutError, "not injective"),
    (lambda: la.complement(L("((2,2),(2,2)):((1,8),(8,4))")), LayoutError, "complement"),
    (lambda: la.complement(Layout(4, -1)), LayoutError, "negative stride"),
    (lambda: la.complement(Layout(4), 0), LayoutError, "complement: cotarget"),
    (lambda: la.complement(Layout(4), -3), LayoutError, "complement: cotarget"),
    (lambda: la.complement(Layout(4), 2.5), LayoutTypeError, "complement"),
    (lambda: la.complement(Layout(4), True), LayoutTypeError, "complement"),
    (lambda: la.complement(Layout(4), (2, 0)), LayoutError, "complement"),
    (lambda: la.complement(Layout(4), (2, "a")), LayoutTypeError, "complement"),
    (lambda: la.complement("x"), LayoutTypeError, "complement"),
    # inverses
    (lambda: la.left_inverse(L("(2,2):(1,1)")), LayoutError, "left_inverse"),
    (lambda: la.left_inverse(L("(4,2):(1,0)")), LayoutError, "left_inverse: layout (4,2):(1,0) is not injective"),
    (lambda: la.left_inverse(L("(3,6):(1,10)")), LayoutError, "left_inverse"),
    (lambda: la.left_inverse(None), LayoutTypeError, "left_inverse"),
    (lambda: la.right_inverse(3.5), LayoutTypeError, "right_inverse"),
    # divides and products
    (lambda: la.logical_divide(L("(4,3):(1,5)"), L("3:2")), LayoutError, "logical_divide"),
    (lambda: la.logical_divide(Layout(4), "x"), LayoutTypeError, "logical_divide"),
    (lambda: la.logical_divide(Layout(4), (2, 2)), LayoutError, "logical_divide"),
    (lambda: la.logical_divide(L("(2,2):(1,2)"), L("(2,2):(1,1)")), LayoutError, "logical_divide"),
    (lambda: la.zipped_divide(Layout((8, 8)), (None, 2)), LayoutError, "zipped_divide"),
    (lambda: la.logical_product(L("(2,2):(1,1)"), Layout(3)), LayoutError, "logical_product"),
    (lambda: la.logical_product(Layout(4), 2.0), LayoutTypeError, "logical_product"),
    (lambda: la.logical_product(L("4:2"), L("3:1")), LayoutError, "logical_product"),
    (lambda: la.blocked_product(Layout(2), "x"), LayoutTypeError, "blocked_product"),
    (lambda: la.raked_product(L("(2,2):(1,1)"), Layout(2)), LayoutError, "raked_product"),
    (lambda: la.tile_to_shape(Layout((2, 2)), (4, 5)), LayoutError, "tile_to_shape"),
    (lambda: la.tile_to_shape(Layout((2, 2, 2)), (4, 4)), LayoutError, "tile_to_shape"),
    (lambda: la.tile_to_shape(Layout((2, 2)), "x"), LayoutTypeError, "tile_to_shape"),
    (lambda: la.tile_to_shape(Layout((2, 2)), (4, -4)), LayoutError, "tile_to_shape"),
    (lambda: la.tile_to_shape(Layout((2, 2)), (4, 4), (0,)), LayoutError, "make_ordered_layout"),
    # recasting
    (lambda: la.upcast(Layout(4), 0), LayoutTypeError, "upcast"),
    (lambda: la.upcast(Layout(4, 3), 2), LayoutError, "upcast"),
    (lambda: la.downcast(Layout(4), 0), LayoutTypeError, "downcast"),
    (lambda: la.downcast(Layout(4), 2.0), LayoutTypeError, "downcast"),
    (lambda: la.downcast(Layout(4, 2), 2), LayoutError, "downcast"),
    (lambda: la.recast_layout(Layout(4), "f16", "nonsense"), LayoutTypeError, "type_bits"),
    (lambda: la.recast_layout(Layout(4), 16, 24), LayoutError, "recast_layout"),
    (lambda: la.type_bits(-8), LayoutError, "type_bits"),
    (lambda: la.upcast(ComposedLayout(Swizzle(1, 0, 1), 0, Layout(4)), 3), LayoutError, "upcast"),
    # other algebra
    (lambda: la.coalesce("x"), LayoutTypeError, "coalesce"),
    (lambda: la.coalesce(Layout((2, 2)), (1, 1, 1)), LayoutError, "coalesce"),
    (lambda: la.filter("x"), LayoutTypeError, "filter"),
    (lambda: la.append("x", 2), LayoutTypeError, "append"),
    (lambda: la.zip_layouts(Layout(2), "x"), LayoutTypeError, "zip_layouts"),
    (lambda: la.zip_layouts(Layout((2, 2)), Layout(2)), LayoutError, "zip_layouts"),
    (lambda: la.flatten_layout("x"), LayoutTypeError, "flatten_layout"),
    (lambda: la.max_common_vector(Layout(4), "x"), LayoutTypeError, "max_common_vector"),
    (lambda: la.max_common_vector(Layout(4), Layout(6)), LayoutError, "max_common_vector"),
    (lambda: la.max_common_layout(Layout(4), Layout(6)), LayoutError, "max_common_layout"),
    (lambda: la.nullspace("x"), LayoutTypeError, "nullspace"),
    # swizzles
    (lambda: Swizzle(3, 0, 2), LayoutError, "Swizzle"),
    (lambda: Swizzle(-1, 0, 2), LayoutError, "Swizzle"),
    (lambda: Swizzle(1, -1, 2), LayoutError, "Swizzle"),
    (lambda: Swizzle(1.0, 0, 2), LayoutTypeError, "Swizzle"),
    (lambda: Swizzle(1, 0, 2)(1.5), LayoutTypeError, "Swizzle"),
    (lambda: ComposedLayout(Swizzle(1, 0, 1), 0, "x"), LayoutTypeError, "ComposedLayout"),
    (lambda: ComposedLayout("x", 0, Layout(4)), LayoutTypeError, "ComposedLayout"),
    (lambda: ComposedLayout(Swizzle(1, 0, 1), 0.5, Layout(4)), LayoutTypeError, "ComposedLayout"),
    # text
    (lambda: Layout.parse("(4,2:"), LayoutError, "parse"),
    (lambda: Layout.parse("abc"), LayoutError, "parse"),
    (lambda: Layout.parse(""), LayoutError, "parse"),
    (lambda: Layout.parse("(4,2):(1)"), LayoutError, "congruent"),
    (lambda: Layout.parse("(4,0):(1,4)"), LayoutError, "positive"),
    (lambda: Layout.parse("4:1 extra"), LayoutError, "parse"),
    (lambda: Layout.parse("4:1 $"), LayoutError, "parse"),
    (lambda: Layout.parse(None), LayoutError, "parse"),
    (lambda: Layout.parse("((((("), LayoutError, "parse"),
    (lambda: Layout.parse("(" * 5000 + "1" + ")" * 5000), LayoutError, "parse"),
    (lambda: la.evaluate("composition(4:1"), LayoutError, "parse"),
    (lambda: la.evaluate("frobnicate(4:1)"), LayoutError, "eval"),
    (lambda: la.evaluate("composition(4:1)"), LayoutError, "eval"),
    (lambda: la.evaluate("coalesce(4:1, 1, 2, 3)"), LayoutError, "eval"),
    (lambda: la.evaluate("coalesce(" * 3000 + "4:1" + ")" * 3000), LayoutError, "eval"),
    (lambda: la.evaluate("complement((2,2):(1,1))"), LayoutError, "complement"),
]


@pytest.mark.parametrize("call,exc,text", BAD_CALLS, ids=[f"bad{k}" for k in range(len(BAD_CALLS))])
def test_bad_call_raises_clear_error(call, exc, text):
    with pytest.raises(exc) as info:
        call()
    assert text in str(info.value), str(info.value)
    assert isinstance(info.value, LayoutError)


def test_valid_edge_cases_are_accepted():
    # things that look odd but are valid CuTe
    assert Layout(()).shape == () and la.size(Layout(())) == 1
    assert str(Layout(4, 0)) == "4:0"
    assert str(Layout(4, -2)) == "4:-2"
    assert la.composition(Layout(4), 2) == Layout(2, 1)
    assert la.composition(L("(4,3):(1,5)"), L("2:2")) == L("2:2")
    assert la.complement(L("(3,6):(1,10)")) == L("3:3")       # complement.cpp: injective, non-dividing


# ---- fuzzing -------------------------------------------------------------------------

_atoms = st.one_of(
    st.integers(-4, 40),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.just(_),
    st.just(Swizzle(2, 1, 3)),
    S.strategy(S.gen_layout, max_leaves=3, max_size=24),
)
junk = st.recursive(
    _atoms,
    lambda inner: st.one_of(st.tuples(inner), st.tuples(inner, inner), st.lists(inner, max_size=3),
                            st.tuples(inner, inner, inner)),
    max_leaves=6,
)

# public callables with the number of positional arguments they take
FUZZED = [
    (la.Layout, 1), (la.Layout, 2), (la.make_layout, 1), (la.make_layout, 2),
    (la.make_ordered_layout, 2), (la.make_layout_like, 1),
    (la.composition, 2), (la.complement, 1), (la.complement, 2), (la.right_inverse, 1),
    (la.left_inverse, 1), (la.logical_divide, 2), (la.zipped_divide, 2), (la.tiled_divide, 2),
    (la.flat_divide, 2), (la.logical_product, 2), (la.zipped_product, 2), (la.tiled_product, 2),
    (la.flat_product, 2), (la.blocked_product, 2), (la.raked_product, 2), (la.tile_to_shape, 2),
    (la.tile_to_shape, 3), (la.coalesce, 1), (la.coalesce, 2), (la.filter, 1), (la.filter_zeros, 1),
    (la.upcast, 2), (la.downcast, 2), (la.recast_layout, 3), (la.max_common_layout, 2),
    (la.max_common_vector, 2), (la.nullspace, 1), (la.with_shape, 2), (la.append, 2),
    (la.zip_layouts, 2), (la.flatten_layout, 1), (la.size, 1), (la.cosize, 1), (la.rank, 1),
    (la.depth, 1), (la.slice_and_offset, 2), (la.idx2crd, 2), (la.crd2idx, 2), (la.crd2idx, 3),
    (la.shape_div, 2), (la.ceil_div, 2), (la.product, 1), (la.prefix_product, 1),
    (la.suffix_product, 1), (la.crd2crd, 3), (la.Swizzle, 3), (la.make_composed_layout, 3),
    (la.type_bits, 1),
]


def _bounded(x):
    """Skip inputs whose *valid* interpretation is merely huge (not a correctness question)."""
    if isinstance(x, Layout):
        return la.size(x) <= 4096
    if isinstance(x, (tuple, list)):
        n = 1
        for v in x:
            if isinstance(v, int) and not isinstance(v, bool):
                n *= max(1, abs(v))
            if not _bounded(v):
                return False
        return n <= 4096
    return True


def _expect_only_layout_errors(fn, args):
    try:
        fn(*args)
    except LayoutError:
        pass
    except Exception as e:   # noqa: BLE001 -- this is exactly what we are testing
        raise AssertionError(f"{fn.__name__}{tuple(args)!r} raised {type(e).__name__}: {e}") from e


@settings(max_examples=1500, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(FUZZED), st.lists(junk, min_size=3, max_size=3))
def test_fuzz_public_functions_raise_only_layout_errors(fn_arity, args):
    fn, arity = fn_arity
    args = args[:arity]
    if not all(_bounded(a) for a in args):
        return
    _expect_only_layout_errors(fn, args)


@settings(max_examples=400, suppress_health_check=list(HealthCheck))
@given(S.strategy(S.gen_layout, max_leaves=3, max_size=24), junk)
def test_fuzz_layout_call_and_index(lay, arg):
    _expect_only_layout_errors(lay, [arg])
    _expect_only_layout_errors(lambda a: lay[a], [arg])
    sw = Swizzle(2, 1, 3)
    _expect_only_layout_errors(sw, [arg])
    cl = ComposedLayout(sw, 0, lay)
    _expect_only_layout_errors(cl, [arg])


@settings(max_examples=600, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet="()_:,-0123456789 oSw<>abcdefghijklmnopqrstuvwxyz", max_size=40))
def test_fuzz_parse_and_evaluate(text):
    _expect_only_layout_errors(Layout.parse, [text])
    _expect_only_layout_errors(la.evaluate, [text])


@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(S.layouts, S.layouts)
def test_fuzz_algebra_on_random_layout_pairs(a, b):
    # arbitrary (mostly inadmissible) pairs: each op either works or raises LayoutError
    for fn in (la.composition, la.logical_divide, la.logical_product, la.blocked_product,
               la.raked_product, la.zipped_divide, la.max_common_vector, la.complement):
        if fn is la.complement:
            _expect_only_layout_errors(fn, [a, la.size(b)])
        else:
            _expect_only_layout_errors(fn, [a, b])
    for fn in (la.left_inverse, la.right_inverse, la.coalesce, la.filter, la.nullspace):
        _expect_only_layout_errors(fn, [a])


@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(S.composition_pairs)
def test_successful_compositions_are_never_silently_wrong(pair):
    # composition either raises or returns A o B; mutate B to make most pairs inadmissible
    A, B = pair
    fs = S.flat(B.shape)
    ds = S.flat(B.stride)
    for k in range(len(ds)):
        ds2 = list(ds)
        ds2[k] = ds2[k] + 1
        B2 = Layout(B.shape, S.unflatten_like(ds2, B.shape))
        try:
            R = la.composition(A, B2)
        except LayoutError:
            continue
        for c in range(S.prod(fs)):
            assert S.ref_eval(R, c) == S.ref_eval(A, S.ref_eval(B2, c)), (A, B2, R)


def test_nan_and_inf_are_rejected():
    for v in (math.nan, math.inf, -math.inf):
        with pytest.raises(LayoutTypeError):
            Layout(v)
        with pytest.raises(LayoutTypeError):
            Layout(4)(v)
