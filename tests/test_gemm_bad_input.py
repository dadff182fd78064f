"""Bad arguments to the GEMM API: each a GemmError naming the argument, the value and the
choices, raised before any compilation or launch; and the arguments that must be accepted."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

import codegen  # noqa: E402
from codegen import GemmConfig, GemmError  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ab(dt=np.float16, M=8, N=8, K=8):
    return np.ones((M, K), dt), np.ones((K, N), dt)


@pytest.mark.parametrize("fn", [codegen.compile_ptx, codegen.emit_gemm_source])
@pytest.mark.parametrize("arg", ["a_major", "b_major"])
@pytest.mark.parametrize("value", ["k", "mn", "N", 0, None])
def test_majorness_must_be_K_or_MN(fn, arg, value):
    with pytest.raises(GemmError, match=rf"{arg} must be 'K' or 'MN', got {value!r}"):
        fn(GemmConfig.default("f16"), **{arg: value})


def test_make_plan_rejects_unknown_majorness():
    with pytest.raises(ValueError, match="a_major must be 'K' or 'MN', got 'k'"):
        codegen.make_plan(GemmConfig.default("f16"), "k", "K")


@pytest.mark.parametrize("precision", ["tf-32", "TF32", "fp32", 32])
def test_precision_is_named_with_its_choices(precision):
    A, B = _ab(np.float32)
    with pytest.raises(GemmError, match=r"precision .* is not one of None, 'f16', 'bf16', 'tf32', 'f32', 'f64'|"
                                        r"precision must be one of"):
        codegen.gemm(A, B, precision=precision)


def test_tf32_needs_float32_inputs():
    with pytest.raises(GemmError, match="precision='tf32' needs float32 inputs, got f16"):
        codegen.gemm(*_ab(), precision="tf32")


@pytest.mark.parametrize("out", ["float33", np.int8, "s32", 7])
def test_out_dtype_is_named_with_its_choices(out):
    with pytest.raises(GemmError, match=r"out_dtype .* is not one of f16, bf16, f32, f64"):
        codegen.gemm(*_ab(), out_dtype=out)


def test_out_dtype_and_C_must_agree():
    C = np.zeros((8, 8), np.float32)
    with pytest.raises(GemmError, match="C is f32 but out_dtype is f16"):
        codegen.gemm(*_ab(), C, out_dtype="f16")


def test_read_only_C_is_refused_before_the_launch():
    C = np.zeros((8, 8), np.float16)
    C.flags.writeable = False
    with pytest.raises(GemmError, match="C is a read-only numpy array"):
        codegen.gemm(*_ab(), C)


def test_broadcast_C_is_refused_before_the_launch():
    row = np.zeros((1, 8), np.float16)
    C = np.lib.stride_tricks.as_strided(row, shape=(8, 8), strides=(0, 2), writeable=True)
    with pytest.raises(GemmError, match=r"C has strides \(0, 1\): a stride 0"):
        codegen.gemm(*_ab(), C)


@pytest.mark.parametrize("bad", [{"config": "f16"}, {"alpha": "1"}, {"beta": None}, {"alpha": True}])
def test_other_options_are_checked(bad):
    with pytest.raises(GemmError):
        codegen.gemm(*_ab(), **bad)


def test_unsupported_arrays_and_dtypes_are_named():
    with pytest.raises(GemmError, match="A is a list"):
        codegen.gemm([[1.0]], np.ones((1, 1), np.float16))
    with pytest.raises(GemmError, match="A has dtype int32; supported: f16, bf16, f32, f64"):
        codegen.gemm(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32))
    with pytest.raises(GemmError, match="A must be 2-D"):
        codegen.gemm(np.ones(4, np.float16), np.ones((4, 2), np.float16))


@pytest.mark.parametrize("cc", [(7, 0), (7, 5), (6, 1)])
def test_compile_ptx_names_the_architectures_it_needs(cc):
    with pytest.raises(GemmError, match=r"need compute capability 8\.0 or newer; got cc="):
        codegen.compile_ptx(cc=cc)


@pytest.mark.parametrize("cc", ["sm_90", 90, (9,), None])
def test_compile_ptx_names_a_malformed_cc(cc):
    with pytest.raises(GemmError, match="cc must be a tuple"):
        codegen.compile_ptx(cc=cc)


ACCEPT = textwrap.dedent("""
    import os, sys
    sys.setswitchinterval(1e-4)
    import numpy as np
    import codegen
    from codegen import GemmConfig
    cfg = GemmConfig("f16", None, 32, 32, 32, 1, 1, 2, 1)
    A = np.arange(16 * 8, dtype=np.float16).reshape(16, 8) % 5 - 2
    B = np.arange(8 * 12, dtype=np.float16).reshape(8, 12) % 3 - 1
    ref = A.astype(np.float64) @ B.astype(np.float64)
    # out_dtype as the names and dtypes that inputs accept
    for out in ("f32", "float32", np.float32, np.dtype("float32")):
        C = codegen.gemm(A, B, config=cfg, out_dtype=out)
        assert C.dtype == np.float32 and np.abs(C - ref).max() == 0, out
    # a given C decides the output type (f16 inputs, f32 C: mixed precision as in cuBLAS)
    C = np.ones((16, 12), np.float32)
    codegen.gemm(A, B, C, beta=1.0, config=GemmConfig("f16", None, 32, 32, 32, 1, 1, 2, 1))
    assert np.abs(C - (ref + 1)).max() == 0
    # and without a config: the default plan for f16 in, f32 out
    C = np.zeros((16, 12), np.float32)
    codegen.gemm(A, B, C)
    assert np.abs(C - ref).max() == 0
    print("ACCEPT OK")
""")


def test_output_types_are_accepted_as_inputs_are_and_C_decides_the_output():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", ACCEPT], capture_output=True, text=True, env=env, timeout=900)
    assert "ACCEPT OK" in r.stdout, r.stdout + r.stderr


def test_compile_ptx_works_with_the_simulator_switched_on(tmp_path):
    prog = "import codegen; p = codegen.compile_ptx(); print('mma.sync' in p, '.target sm_90' in p)"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", LAYOUTALG_CACHE=str(tmp_path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=900)
    assert r.stdout.split() == ["True", "True"], r.stdout + r.stderr


# ---- 8-bit floats and per-tensor scales ------------------------------------------

def _fp8(M=8, N=8, K=32):
    """uint8 bits of e4m3/e5m2 (numpy has no fp8 dtype): A row-major, B column-major (K-major both)."""
    return np.zeros((M, K), np.uint8), np.asfortranarray(np.zeros((K, N), np.uint8))


def test_fp8_operands_must_be_k_major_as_scaled_mm_requires():
    A, B = _fp8()
    with pytest.raises(GemmError, match=r"A \(e4m3\) has shape \(8, 32\) and strides \(1, 8\): 8-bit float operands "
                                        r"must be K-major, A row-major \(M,K\)"):
        codegen.gemm(np.asfortranarray(A), B, precision="e4m3")
    with pytest.raises(GemmError, match=r"B \(e5m2\) has shape \(32, 8\) and strides \(8, 1\): .* B column-major "
                                        r"\(K,N\) with strides \(1, K'\), i.e. B.T contiguous"):
        codegen.gemm(A, np.ascontiguousarray(B), precision="e5m2")
    A, B = _fp8(K=24)                     # rows of 24 bytes: TMA needs multiples of 16
    with pytest.raises(GemmError, match=r"A \(e4m3\) has shape \(8, 24\) and strides \(24, 1\): .* K' a multiple "
                                        r"of 16"):
        codegen.gemm(A, B, precision="e4m3")


def test_fp8_bits_need_a_type_and_an_f16_bf16_or_f32_output():
    A, B = _fp8()
    with pytest.raises(GemmError, match=r"A is uint8: integer GEMMs are not supported; .* precision='e4m3' or 'e5m2'"):
        codegen.gemm(A, B)
    with pytest.raises(GemmError, match="8-bit float inputs give an f16, bf16, f32, e4m3 or e5m2 C .*, got f64"):
        codegen.gemm(A, B, precision="e4m3", out_dtype="f64")
    with pytest.raises(GemmError, match="A is f16 but the 8-bit float bits of the other operand are read as e4m3"):
        codegen.gemm(A.astype(np.float16), B, precision="e4m3")
    with pytest.raises(GemmError, match=r"precision='e4m3' needs e4m3 \(or uint8 arrays of its bits\) inputs, got f16"):
        codegen.gemm(*_ab(), precision="e4m3")


@pytest.mark.parametrize("scale,match", [
    (np.ones(2), r"scale_a must be one scale for the whole operand .* got shape \(2,\); per-row"),
    ("2", "scale_a must be a real number or a 1-element tensor, got str '2'"),
    (True, "scale_a must be a real number or a 1-element tensor, got True")])
def test_scales_are_one_real_number_per_operand(scale, match):
    with pytest.raises(GemmError, match=match):
        codegen.gemm(*_fp8(), precision="e4m3", scale_a=scale)


def _pretend_hopper(monkeypatch, wgmma_launcher, mma_sync_launcher):
    """Make the host believe it runs on a compute capability 9.0 GPU with 132
    multiprocessors; kernels are ("mma_sync" | "wgmma", key) pairs, launchers the given
    callables."""
    import codegen.host as H
    import codegen.sm90.kernel as SK
    import codegen.sm90.launch as SL

    monkeypatch.setattr(H, "simulating", lambda: False)
    monkeypatch.setattr(H, "_check_gpu", lambda: None)
    monkeypatch.setattr(H, "_device_cc", lambda: (9, 0))
    monkeypatch.setattr(H, "_multiprocessors", lambda: 132)
    monkeypatch.setattr(H, "get_kernel", lambda key: ("mma_sync", key))
    monkeypatch.setattr(SK, "get_wgmma_kernel", lambda key: ("wgmma", key))
    monkeypatch.setattr(SL, "WgmmaLauncher", wgmma_launcher)
    monkeypatch.setattr(H, "_Launcher", mma_sync_launcher)


def test_routing_on_hopper_tf32_k_major_to_wgmma_mn_major_to_mma_sync_fp8_only_wgmma(monkeypatch):
    """On a (pretended) compute capability 9.0 GPU: tf32 with both operands K-major runs the
    wgmma kernel, tf32 with an MN-major operand the mma.sync kernel (wgmma reads tf32 K-major
    only; no hidden copy); 8-bit floats run the wgmma kernel, and on 8.9 are an error."""
    import codegen.host as H

    _pretend_hopper(monkeypatch, lambda compiled, *a: compiled, lambda compiled, *a: compiled)

    def route(A, B, precision, out=None):
        a, b = H._describe(A, "gemm", "A"), H._describe(B, "gemm", "B")
        path, key = H._setup(A, B, None, a, b, None, None, out, precision).launcher
        return path, key.config.dtype, key.config.path

    A32 = np.zeros((64, 32), np.float32)
    B32 = np.zeros((32, 48), np.float32)
    assert route(A32, np.asfortranarray(B32), "tf32") == ("wgmma", "tf32", "wgmma")
    assert route(A32, B32, "tf32") == ("mma_sync", "tf32", "mma_sync")
    assert route(np.asfortranarray(A32), np.asfortranarray(B32), "tf32") == ("mma_sync", "tf32", "mma_sync")
    assert route(A32, B32, None) == ("mma_sync", "f32", "mma_sync")           # f32 stays on CUDA cores
    assert route(*_fp8(), "e5m2") == ("wgmma", "e5m2", "wgmma")
    assert route(*_ab(), None) == ("wgmma", "f16", "wgmma")
    assert route(*_ab(), None, "f64") == ("mma_sync", "f16", "mma_sync")      # wgmma writes no f64 C
    monkeypatch.setattr(H, "_device_cc", lambda: (8, 9))
    with pytest.raises(GemmError, match=r"e4m3 inputs run on the wgmma path only, which needs a GPU of compute "
                                        r"capability 9.0 \(this one is 8.9\)"):
        route(*_fp8(), "e4m3")


def test_column_major_c_on_hopper_runs_the_transposed_gemm_and_other_cs_do_not(monkeypatch):
    """On a (pretended) compute capability 9.0 GPU, a column-major C runs the wgmma kernel on
    C^T = B^T @ A^T: M and N, the operands (with their majorness and mixed 8-bit types) trade
    places, C^T is row-major, the default plan is the one for the transposed sizes, and a
    launch passes B's address as the kernel's A; an odd leading dimension stores C^T element
    by element. A C neither row- nor column-major takes the mma.sync kernel, or is a
    GemmError with a wgmma config or 8-bit float inputs."""
    import codegen.host as H

    class Launcher:
        def __init__(self, compiled, *args):
            self.compiled, self.args, self.calls = compiled, args, []

        def __call__(self, *call, out=None):           # the launchers' protocol
            self.calls.append(call)

    _pretend_hopper(monkeypatch, Launcher, lambda compiled, *a: Launcher(compiled, *a))

    def setup(A, B, C, config=None, precision=None):
        a, b, c = H._describe(A, "gemm", "A"), H._describe(B, "gemm", "B"), H._describe(C, "gemm", "C", H.OUT_DTYPES)
        return H._setup(A, B, C, a, b, c, config, None, precision)

    A, B = np.ones((40, 24), np.float16), np.ones((24, 72), np.float16)
    st = setup(A, B, np.zeros((40, 72), np.float16, order="F"))
    inner = st.launcher.inner
    (path, key), (M, N, K, a_desc, b_desc, c_strides, batch) = inner.compiled, inner.args
    assert (st.M, st.N, path, key.a_major, key.b_major, batch) == (40, 72, "wgmma", "MN", "K", None)
    assert (M, N, K, a_desc, b_desc, c_strides) == (72, 40, 24, ((72, 24), (1, 72)), ((40, 24), (24, 1)), (40, 1))
    st.launcher(1, 2, 3, 1.0, 0.0)
    assert inner.calls == [(2, 1, 3, 1.0, 0.0, 0, None, 0, (0, 0, 0))]   # (..., stream, capture, bias, scales)
    assert not isinstance(setup(A, B, np.zeros((40, 72), np.float16)).launcher, H._SwappedLauncher)
    # the default plan is the one for C^T: 128 x 16384 has 64 tiles of 128x256 (BN 128), 16384 x 128 has 128
    A, B = np.ones((16384, 8), np.float16), np.ones((8, 128), np.float16)
    assert setup(A, B, np.zeros((16384, 128), np.float16, order="F")).launcher.inner.compiled[1].config.bn == 128
    assert setup(A, B, np.zeros((16384, 128), np.float16)).launcher.compiled[1].config.bn == 256
    # e4m3 A x e5m2 B: the kernel reads e5m2 x e4m3
    A8, B8 = _fp8()
    C8 = np.zeros((8, 8), np.float32, order="F")
    cfg = GemmConfig("e4m3", "f32", 64, 64, 128, 2, 4, 2, 8, 1, "wgmma", "e5m2")
    kc = setup(A8, B8, C8, cfg).launcher.inner.compiled[1].config
    assert (kc.dtype, kc.b_type, kc.bm, kc.bn) == ("e5m2", "e4m3", 64, 64)
    assert setup(A8, B8, C8, precision="e4m3").launcher.inner.compiled[1].config.dtype == "e4m3"
    # strides (2, 80): neither row- nor column-major
    A, B = np.ones((40, 16), np.float16), np.ones((16, 24), np.float16)
    C = np.zeros((80, 24), np.float16, order="F")[::2]
    assert setup(A, B, C).launcher.compiled[0] == "mma_sync"
    with pytest.raises(GemmError, match=r"config.path='wgmma' needs a row- or column-major C \(C strides \(2, 80\)\)"):
        setup(A, B, C, GemmConfig("f16", "f16", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"))
    # an odd leading dimension (41): the transposed GEMM, its C^T stored element by element
    st = setup(A, B, np.zeros((41, 24), np.float16, order="F")[:40])
    (path, key), (M, N, _, _, _, c_strides, _) = st.launcher.inner.compiled, st.launcher.inner.args
    assert (path, key.epilogue, M, N, c_strides) == ("wgmma", "elements", 24, 40, (41, 1))
    with pytest.raises(GemmError, match=r"e4m3 inputs run on the wgmma path only, which needs a row- or column-major "
                                        r"C \(C strides \(2, 16\)\)"):
        setup(A8, B8, np.zeros((16, 8), np.float32, order="F")[::2], precision="e4m3")


@pytest.mark.parametrize("M,N,K", [(0, 4, 3), (4, 0, 3), (4, 5, 0), (0, 0, 0)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_empty_problems_give_numpys_result(M, N, K, dtype):
    """M, N or K = 0: numpy's A @ B (an empty C, or zeros for K = 0), and beta * C with a C."""
    A, B = np.ones((M, K), dtype), np.ones((K, N), dtype)
    C = codegen.gemm(A, B)
    assert C.shape == (M, N) and C.dtype == (A @ B).dtype and np.array_equal(C, A @ B)
    C0 = np.arange(M * N, dtype=np.float32).reshape(M, N)
    C = C0.copy()
    assert codegen.gemm(A, B, C, alpha=2.0, beta=-1.5) is C
    np.testing.assert_array_equal(C, -1.5 * C0 if K == 0 else C0)
    C = np.full((M, N), np.nan, np.float32)
    codegen.gemm(A, B, C)                            # beta = 0: C is not read, as in BLAS
    assert not np.isnan(C).any()


def test_empty_problems_are_still_checked():
    with pytest.raises(GemmError, match="inner dimensions differ"):
        codegen.gemm(np.ones((4, 0), np.float16), np.ones((1, 5), np.float16))
    with pytest.raises(GemmError, match="A is f16 but B is f32"):
        codegen.gemm(np.ones((4, 0), np.float16), np.ones((0, 5), np.float32))
    with pytest.raises(GemmError, match=r"C has shape \(4, 4\), expected \(4, 5\)"):
        codegen.gemm(np.ones((4, 0), np.float16), np.ones((0, 5), np.float16), np.zeros((4, 4), np.float16))
    assert codegen.gemm(np.ones((4, 0), np.float32), np.ones((0, 5), np.float32), precision="tf32").dtype == np.float32


def test_config_takes_numpy_integers_as_the_algebra_does():
    c = GemmConfig("f16", None, np.int64(32), np.int32(32), np.uint8(32), 1, 1, np.int64(2), 1)
    assert c == GemmConfig("f16", None, 32, 32, 32, 1, 1, 2, 1) and type(c.bm) is int and type(c.stages) is int
    with pytest.raises(ValueError, match="bm must be a positive int, got np.True_|bm must be a positive int"):
        GemmConfig("f16", None, np.bool_(True), 32, 32, 1, 1, 2, 1)
