"""Run-time extents and strides in codegen.cute (``make_layout`` of a kernel's arguments).

* The encoding of run-time integers in layouts (:mod:`codegen.cute.dynamic`) decodes every
  linear form it makes, and refuses what a kernel cannot fold.
* Device offsets of layouts with run-time strides and extents, run on the CPU through LLVM's
  JIT with the run-time values as arguments, equal the host layout of those values at every
  coordinate; ``local_tile`` of a run-time extent gives CuTe's rounded-up tiles.
* Mistakes are compile-time errors naming the call and the run-time integers by name.
"""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutalg as la
from layoutalg import Layout

ROOT = Path(__file__).resolve().parent.parent
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
pytestmark = pytest.mark.skipif(SIM, reason="compiles PTX; the simulator runs are subprocesses")

from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402

from codegen import cute  # noqa: E402
from codegen.cute import dynamic as dy  # noqa: E402
from test_user_kernels import _jit  # noqa: E402  (LLVM on the CPU: the device offsets, run)


# ---- the encoding ------------------------------------------------------------------------------

def test_shape_placeholders_are_distinct_primes():
    assert len(set(dy.SHAPE_PRIMES)) == dy.MAX_SLOTS
    assert all(dy._is_prime(p) and p >= dy.STATIC_LIMIT for p in dy.SHAPE_PRIMES)
    assert not dy._is_prime(dy.SHAPE_PRIMES[0] * 3)


@settings(max_examples=200)
@given(st.integers(-(2 ** 39), 2 ** 39), st.dictionaries(st.integers(0, 7), st.integers(-(2 ** 30), 2 ** 30), max_size=4),
       st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=8, max_size=8))
def test_linear_forms_decode_to_their_coefficients(static, coeffs, divby):
    x = static + sum(c * dy.stride_placeholder(i, divby[i]) for i, c in coeffs.items())
    s, parts = dy.decode_linear(x)
    assert s == static
    assert parts == {i: c * divby[i] for i, c in coeffs.items() if c}
    want = abs(static)
    for i, c in parts.items():
        from math import gcd

        want = gcd(want, abs(c))
    assert dy.linear_divisor(x) == want


def test_a_runtime_extent_used_as_a_stride_or_multiplied_is_refused():
    p = dy.shape_placeholder(0)
    with pytest.raises(cute.CuteError, match="not used as a stride"):
        dy.decode_linear(p)
    with pytest.raises(cute.CuteError, match="product or quotient"):
        dy.decode_shape(p * 2)
    assert dy.decode_shape(p) == ("slot", 0) and dy.decode_shape(12) == 12
    with pytest.raises(cute.CuteError, match="reached a compile-time constant"):
        dy.check_static(dy.stride_placeholder(0), "an offset")


# ---- device offsets against the host layout ------------------------------------------------------

def _dynamic_version(shape, stride, dyn_strides, dyn_shapes):
    """The placeholder layout and slots of ``Layout(shape, stride)`` (a flat tuple of modes)
    whose strides ``dyn_strides`` and extents ``dyn_shapes`` (mode indices) are run-time."""
    slots, vals, sh, sd = [], [], [], []
    for i, (e, d) in enumerate(zip(shape, stride)):
        if i in dyn_shapes:
            slots.append(dy.DynSlot("shape"))
            vals.append(e)
            e = dy.shape_placeholder(len(slots) - 1)
        if i in dyn_strides:
            slots.append(dy.DynSlot("stride", 2))
            vals.append(d // 2)                       # a stride slot holds value / divby
            d = dy.stride_placeholder(len(slots) - 1, 2)
        sh.append(e)
        sd.append(d)
    return Layout(tuple(sh), tuple(sd)), tuple(slots), vals


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(-40, 40).map(lambda d: 2 * d)), min_size=1, max_size=3),
       st.data())
def test_device_offset_with_runtime_strides_and_extents_equals_the_layout(modes, data):
    from codegen.cute.offsets import Leaf, emit_terms, slice_spec

    shape, stride = tuple(m[0] for m in modes), tuple(m[1] for m in modes)
    r = len(shape)
    dyn_strides = data.draw(st.sets(st.integers(0, r - 1)))
    dyn_shapes = data.draw(st.sets(st.integers(0, r - 1)))
    host = Layout(shape, stride)
    lay, slots, vals = _dynamic_version(shape, stride, dyn_strides, dyn_shapes)
    _, terms = slice_spec("t[...]", lay, tuple(Leaf(slot=i) for i in range(r)))
    f = _jit(lambda b, a: emit_terms(b, terms, a[:r], None, a[r:]), r + len(vals))
    for crd in _coords(shape):
        assert f(*crd, *vals) == host(crd), (host, lay, crd)


def _coords(shape):
    import itertools

    return itertools.product(*(range(e) for e in shape))


def test_local_tile_of_a_runtime_extent_rounds_up_as_cute():
    """(M,N):(ld,1) tiled by (32,16) at every tile (bm, bn): the device offsets and the tile
    counts ceil_div(M,32), ceil_div(N,16) equal the host's residue tiling of the same tensor."""
    from codegen.cute.device_tensor import _tile_spec
    from codegen.cute.offsets import emit_terms
    from codegen.cute.types import TensorType

    M, N, ld = 50, 37, 40
    lay, slots, vals = _dynamic_version((M, N), (ld, 1), {0}, {0, 1})
    ty = TensorType(types.float32, "gmem", None, lay, 1, slots)
    coord = types.UniTuple(types.int64, 2)
    tiler = types.Tuple([types.IntegerLiteral(32), types.IntegerLiteral(16)])
    ts = _tile_spec("local_tile", ty, tiler, coord, None)
    assert [t for _, t in ts.new] == [32, 16] and len(ts.dyn) == len(slots) + 2
    assert dy.describe(ts.sub, ts.dyn) == "(32,16):(d1,1)"
    host = la.make_tensor(np.zeros(M * ld), Layout((M, N), (ld, 1)), residue=True)
    new = [-(-M // 32), -(-N // 16)]
    f = _jit(lambda b, a: emit_terms(b, ts.terms, a[:2], None, a[2:]), 2 + len(vals) + 2)
    for bm in range(new[0]):
        for bn in range(new[1]):
            tile = la.local_tile(host, (32, 16), (bm, bn))
            assert f(bm, bn, *vals, *new) == tile.engine.offset - host.engine.offset


def test_domain_offset_moves_the_origin_by_any_integer():
    """``domain_offset((i, j), t)`` of a (M,N):(ld,1) tensor with run-time ld adds ``i*ld + j``
    for negative i and j too (no division by the extents), and an identity tensor's
    coordinates move by (i, j)."""
    from codegen.cute.device_tensor import _offset_terms
    from codegen.cute.offsets import emit_terms
    from codegen.cute.types import CoordTensorType, TensorType

    lay, slots, vals = _dynamic_version((50, 37), (40, 1), {0}, {0, 1})
    ty = TensorType(types.float32, "gmem", None, lay, 1, slots)
    crd = types.UniTuple(types.int64, 2)
    terms = _offset_terms("domain_offset", ty, crd)
    f = _jit(lambda b, a: emit_terms(b, terms, a[:2], None, a[2:]), 2 + len(vals))
    for i, j in ((0, 0), (0, -24), (-3, 5), (7, -1)):
        assert f(i, j, *vals) == 40 * i + j
    ident = CoordTensorType(la.make_identity_layout((dy.shape_placeholder(0), dy.shape_placeholder(1))), 2,
                            (dy.DynSlot("shape"), dy.DynSlot("shape")))
    cterms = _offset_terms("domain_offset", ident, crd)
    for k in range(2):
        g = _jit(lambda b, a, k=k: emit_terms(b, cterms, a[:2], 2, a[2:])[k], 4)
        assert [g(-24, 9, 50, 37)] == [(-24, 9)[k]]
    with pytest.raises(cute.CuteError, match="several extents"):
        _offset_terms("domain_offset", TensorType(types.float32, "gmem", None, Layout(((2, 4), 8))), crd)


# ---- kernels: offline PTX and compile-time errors -------------------------------------------------

def _compile(fn, sig):
    cute.activate()
    return cuda.compile_ptx(fn, sig, cc=(8, 0))[0]


def test_runtime_tile_counts_fold_to_shifts():
    """The run-time example: tile counts ceil_div(M, 32) by a power of two are shifts, row
    steps one multiply by ld; no integer division or remainder anywhere."""
    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    import user_kernel_cases as K

    text = _compile(K.k_runtime_axpby, K.SIG_RUNTIME)
    assert not re.search(r"\b(div|rem)\.[su]", text)
    assert ".local" not in text


SIG = "void(float16[::1], float16[::1], int64, int64, int64)"
G2S = la.make_tiled_copy(la.CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((16, 2), (2, 1)), Layout((1, 8)))
SMEM = Layout((16, 16), (16, 1))


def k_copy_runtime_ld(X, Y, M, K, ld):
    g = cute.local_tile(cute.make_tensor(X, cute.make_layout((M, K), (ld, 1))), (16, 16), (0, 0))
    s = cute.make_shared_tensor(np.float16, SMEM)
    thr = G2S.get_slice(cuda.threadIdx.x)
    cute.copy(G2S, thr.partition_S(g), thr.partition_D(s))


def k_copy_assumed_ld(X, Y, M, K, ld):
    g = cute.local_tile(cute.make_tensor(X, cute.make_layout((M, K), (cute.assume(ld, 8), 1))), (16, 16), (0, 0))
    s = cute.make_shared_tensor(np.float16, SMEM)
    thr = G2S.get_slice(cuda.threadIdx.x)
    cute.copy(G2S, thr.partition_S(g), thr.partition_D(s))


def k_copy_whole_k(X, Y, M, K, ld):
    g = cute.local_tile(cute.make_tensor(X, cute.make_layout((M, K), (cute.assume(ld, 8), 1))), (16, 16), (0, None))
    s = cute.make_shared_tensor(np.float16, SMEM)
    thr = G2S.get_slice(cuda.threadIdx.x)
    cute.copy(G2S, thr.partition_S(g), thr.partition_D(s))          # (CPY,1,1,k): k is run-time


def k_no_strides(X, Y, M, K, ld):
    cute.make_tensor(X, cute.make_layout((M, K)))


def k_fragment(X, Y, M, K, ld):
    g = cute.make_tensor(X, cute.make_layout((M, 16), (ld, 1)))
    cute.make_fragment_like(g)


def k_bad_assume(X, Y, M, K, ld):
    cute.make_tensor(X, cute.make_layout((M, K), (cute.assume(12, 8), 1)))



def test_cp_async_over_a_runtime_stride_needs_assume():
    with pytest.raises(Exception, match=r"run-time offset .* a multiple of only 1 elements, not 8 .*"
                                        r"cute.assume\(ld, 8\)"):
        _compile(k_copy_runtime_ld, SIG)
    text = _compile(k_copy_assumed_ld, SIG)
    assert "cp.async.cg.shared.global" in text


@pytest.mark.parametrize("fn, message", [
    (k_copy_whole_k, r"copy: .*tensor \(\(8,1\),1,1,ceil\(d1/16\)\).* has a mode of run-time extent"),
    (k_no_strides, r"make_layout: a shape of run-time extents needs explicit strides"),
    (k_fragment, r"register fragment needs a static shape"),
    (k_bad_assume, r"assume: 12 is not a multiple of 8"),
])
def test_runtime_shape_mistakes_are_compile_time_errors(fn, message):
    with pytest.raises(Exception, match=message):
        _compile(fn, SIG)


# ---- the simulator: make_layout tensors tile with residues, constant layouts must divide ------------

def test_simulator_keeps_the_gpu_rules():
    code = textwrap.dedent("""
        import numpy as np
        from codegen import cute
        from numba import cuda
        from layoutalg import Layout

        @cuda.jit
        def k(X, M, ld, out):
            t = cute.local_tile(cute.make_tensor(X, cute.make_layout((M, 8), (ld, 1))), (32, 8), (1, 0))
            out[0] = cute.size(t)

        @cuda.jit
        def k_lie(X, ld):
            cute.make_layout((4, 8), (cute.assume(ld, 8), 1))

        @cuda.jit
        def k_static(X):
            cute.local_tile(cute.make_tensor(X, Layout((50, 8), (8, 1))), (32, 8), (1, 0))

        out = np.zeros(1, np.int64)
        k[1, 1](np.zeros(400, np.float32), 50, 8, out)
        print("size", out[0])
        for f, args in ((k_lie, (np.zeros(8), 12)), (k_static, (np.zeros(400, np.float32),))):
            try:
                f[1, 1](*args)
            except Exception as e:
                print("error", str(e).splitlines()[-1][:160])
    """)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "size 256"                   # a whole (32,8) tile, the second of ceil(50/32)
    assert "assume: 12 is not a multiple of 8" in lines[1]
    assert "does not divide" in lines[2]
