"""The swizzle split of device tensors (codegen/cute/device_tensor.py): ``offset_bits`` and
``swizzled_offset``, on ints, at every value; and the kernels' types that carry the bits.

A shared tensor's run-time offset (a partition's thread part, a stage) is known to have only
some bits; where a constant offset has none of them, ``sw(off + c) == sw(off) ^ sw(c)``, and
an access costs an XOR or an add instead of a swizzle. Both functions must be exact at every
run-time value the bits allow."""

import itertools

from hypothesis import given, settings, strategies as st

from layoutalg import Layout, Swizzle
from codegen.cute.device_tensor import offset_bits, swizzled_offset
from codegen.cute.offsets import Leaf, Term

import strategies as S


def _subsets(mask, limit=256):
    """Values whose bits lie in ``mask`` (every one, or ``limit`` spread over them)."""
    bits = [1 << i for i in range(mask.bit_length()) if mask >> i & 1]
    out = [sum(c) for n in range(len(bits) + 1) for c in itertools.combinations(bits, n)]
    return out if len(out) <= limit else out[:: len(out) // limit + 1]


@settings(max_examples=400, deadline=None)
@given(S.strategy(S.gen_swizzle_args), st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 15) - 1))
def test_swizzled_offset_exact(args, bits, const):
    sw = Swizzle(*args)
    for off in _subsets(bits):
        assert swizzled_offset(None, sw, bits, off, const) == sw(off + const)
    assert swizzled_offset(None, sw, None, 5, const) == sw(5 + const)     # bits unknown: plain
    assert swizzled_offset(None, None, bits, 5, const) == 5 + const         # no swizzle


@settings(max_examples=300, deadline=None)
@given(S.strategy(S.gen_layout, max_leaves=3, max_size=48, strides="nonneg"), st.data())
def test_offset_bits_cover_every_sum(lay, data):
    """After ``offset_bits``, every in-range index gives an offset within the bits, and the
    sum of the parts has no carries (it equals their OR)."""
    base = data.draw(st.sampled_from([0, 1, 8, 64, 4096, 0b1010000000]))
    terms = [Term(Leaf(slot=0), lay.shape, lay.stride)]
    if data.draw(st.booleans()):
        terms.append(Term(Leaf(value=data.draw(st.integers(0, 3))), 4, 1 << data.draw(st.integers(0, 12))))
    bits = offset_bits(base, terms)
    if bits is None:
        return
    fixed = sum(t.leaf.value * t.stride for t in terms[1:])
    for i in range(S.ref_size(lay)):
        v = lay(i)
        assert v & base == 0 and (base + v) & fixed == 0
        assert (base + v + fixed) & ~bits == 0


def test_offset_bits_refuse_overlap_and_negative():
    assert offset_bits(0, [Term(Leaf(slot=0), (8, 4), (8, 1024))]) == 0b111000 | 0b11 << 10
    assert offset_bits(0b111000, [Term(Leaf(slot=0), 4, 8)]) is None          # shares bit 3..5
    assert offset_bits(0, [Term(Leaf(value=1), 4, -8)]) is None               # a negative offset
    assert offset_bits(None, [Term(Leaf(value=1), 4, 8)]) is None             # unknown stays unknown
    assert offset_bits(64, []) == 64


def test_tensor_types_carry_bits_and_unify():
    from numba.cuda import types

    from codegen.cute.types import TensorType

    sw = Swizzle(3, 3, 3)
    a = TensorType(types.float16, "smem", sw, Layout((8, 4)), 8, (), 0b111000)
    b = TensorType(types.float16, "smem", sw, Layout((8, 4)), 8, (), 0b11 << 13)
    assert a != b and a.name != b.name                                        # distinct specializations
    u = a.unify(None, b)
    assert u.bits == a.bits | b.bits and u.align == 8
    assert a.can_convert_to(None, u) is not None and u.can_convert_to(None, a) is None
    plain = TensorType(types.float16, "smem", None, Layout((8, 4)), 8, (), 0b111000)
    assert plain.bits is None                                                 # bits only for swizzles
    c = TensorType(types.float16, "smem", sw, Layout((8, 4)), 8, (), None)
    assert a.unify(None, c).bits is None
    assert a.unify(None, TensorType(types.float32, "smem", sw, Layout((8, 4)), 8, (), 0)) is None


def test_swizzled_offset_ir_equals_host_through_llvm():
    """The IR path (an XOR and an add of constants after the swizzle of the run-time part),
    run by LLVM's JIT on the CPU, at every run-time value the bits allow."""
    from test_user_kernels import _jit

    for sw, bits, consts in ((Swizzle(3, 3, 3), 0b11111000 | 0b11 << 13, (0, 16, 48, 2048, 4096 + 32, 1 << 12)),
                             (Swizzle(2, 4, 3), 0b1111 << 4 | 1 << 10, (0, 1, 7, 512, 2048 + 3)),
                             (Swizzle(1, 4, -3), 0b10010000, (0, 1, 32, 2 | 64))):
        for c in consts:
            f = _jit(lambda b, a, c=c: swizzled_offset(b, sw, bits, a[0], c), 1)
            xs = _subsets(bits)
            assert [f(x) for x in xs] == [sw(x + c) for x in xs], (sw, bits, c)


@settings(max_examples=200, deadline=None)
@given(S.strategy(S.gen_swizzle_args), st.integers(0, 6), st.integers(1, 4), st.integers(10, 15),
       S.strategy(S.gen_layout, max_leaves=2, max_size=32, strides="nonneg"))
def test_pointer_terms_move_only_what_the_swizzle_leaves_alone(args, bits_log, stages, stage_log, sub):
    """A stage index moves into the pointer only where, for every offset ``x`` the sub-tensor
    can reach, ``sw(x + t) == sw(x) + t`` at every stage offset ``t``."""
    from numba.cuda import types

    from codegen.cute.device_tensor import pointer_terms
    from codegen.cute.types import TensorType

    sw = Swizzle(*args)
    bits = (1 << bits_log) - 1 << 3 if bits_log else 0
    ty = TensorType(types.float16, "smem", sw, Layout((sub.shape, stages), (sub.stride, 1 << stage_log)), 8, (), bits)
    term = Term(Leaf(slot=0), stages, 1 << stage_log)
    kept, moved = pointer_terms(ty, sub, [term])
    if not moved:
        return
    assert kept == [] and moved == [term]
    reach = [x + sub(i) for x in _subsets(bits, 64) for i in range(S.ref_size(sub))]
    for t in range(stages):
        off = t << stage_log
        assert all(sw(x + off) == sw(x) + off for x in reach), (sw, bits, sub, off)


def test_pointer_terms_examples():
    """Step 4's stage slice moves; one whose sub-tensor reaches the stage's bit, or whose
    stage bits the swizzle reads, does not."""
    from numba.cuda import types

    from codegen.cute.device_tensor import pointer_terms
    from codegen.cute.types import TensorType

    sw = Swizzle(3, 3, 3)
    sub = Layout(((8, 1), 4, 4), ((1, 0), 2048, 16))                       # (CPY,CPY_M,CPY_K) of step 4
    stage = Term(Leaf(slot=0), 3, 8192)
    ty = TensorType(types.float16, "smem", sw, Layout((((8, 1), 4, 4), 3), (((1, 0), 2048, 16), 8192)), 8, (), 1992)
    assert pointer_terms(ty, sub, [stage]) == ([], [stage])
    assert pointer_terms(ty, Layout(4, 4096), [stage])[1] == ()             # reaches bit 13
    assert pointer_terms(ty, sub, [Term(Leaf(slot=0), 3, 64)])[1] == ()      # bits the swizzle reads
    assert pointer_terms(ty.with_layout(ty.layout, bits=None), sub, [stage])[1] == ()


def test_domain_offset_by_a_run_time_coordinate_forgets_the_bits():
    """A run-time origin may lie anywhere (negative, past the extent), so the shifted tensor's
    offset has no known bits, and nothing of it moves into the pointer; a constant origin
    inside keeps them."""
    import numpy as np
    from numba import cuda
    from numba.core.sigutils import normalize_signature
    from numba.cuda.compiler import compile_cuda

    from codegen import cute
    from layoutalg import ComposedLayout, Layout

    SW = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1)))

    def k(X, i):
        s = cute.make_shared_tensor(np.float32, SW)
        moved = cute.domain_offset((i, 0), s)      # noqa: F841
        fixed = cute.domain_offset((1, 0), s)      # noqa: F841
        X[0] = moved[0, 0] + fixed[0, 0]

    args, _ = normalize_signature("void(float32[::1], int64)")
    res = compile_cuda(k, None, args, cc=(8, 0))
    tm = res.type_annotation.typemap
    assert tm["moved"].bits is None and tm["fixed"].bits == 64
    assert cuda  # (numba.cuda is imported for its typing registry)
