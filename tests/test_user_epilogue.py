"""A user's Python function as the Hopper GEMM's epilogue (``gemm(..., epilogue=f,
epilogue_args=...)``, :mod:`codegen.epilogue_fn`): the checks before any work, the kernel's
source and its offline sm_90a PTX, a clear error for a function numba cannot compile, and
the kernel in numba's simulator, exact against numpy. ``tests/gpu/check_torch.py`` runs it
on a GPU."""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import codegen
from codegen import GemmConfig, GemmError
from codegen.epilogue_fn import EpilogueFunction, check_epilogue
from codegen.sm90.emit import emit_wgmma_source
from codegen.sm90.plan import make_wgmma_plan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALE = 2.0


def residual(acc, m, n, bias, res):
    return acc + bias[n] + 0.5 * res[m, n]


def scaled(acc, m, n):
    return acc * SCALE


def hopper(dtype="bf16", M=4096, N=4096, K=4096, **kw):
    return GemmConfig.default(dtype, M, N, K, arch=(9, 0)).with_(**kw)


def _describe(x, name):
    from codegen.host import _describe as d
    from codegen.epilogue_fn import TENSOR_DTYPES

    return d(x, "gemm", name, TENSOR_DTYPES, ranks=(1, 2))


NUMPY_A = type("A", (), {"kind": "numpy", "device": "host"})()


def test_the_function_and_its_arrays_are_checked_before_any_work():
    A, B = np.ones((8, 16), np.float16), np.ones((16, 24), np.float16)
    bias = np.zeros(24, np.float16)
    with pytest.raises(GemmError, match="epilogue must be a Python function f\\(acc, m, n, \\*epilogue_args\\), got str"):
        codegen.gemm(A, B, epilogue="relu")
    with pytest.raises(GemmError, match=r"epilogue residual\(acc, m, n, bias, res\) cannot take the 4 arguments "
                                        r"\(acc, m, n, t0\)"):
        codegen.gemm(A, B, epilogue=residual, epilogue_args=(bias,))
    with pytest.raises(GemmError, match="epilogue_args given \\(1 arrays\\) without an epilogue function"):
        codegen.gemm(A, B, epilogue_args=(bias,))
    with pytest.raises(GemmError, match="epilogue_args holds 5 arrays; an epilogue reads at most 4"):
        codegen.gemm(A, B, epilogue=lambda acc, m, n, *t: acc, epilogue_args=(bias,) * 5)
    with pytest.raises(GemmError, match=r"epilogue_args\[1\] is a float, not an array"):
        codegen.gemm(A, B, epilogue=residual, epilogue_args=(bias, 0.5))
    with pytest.raises(GemmError, match=r"epilogue_args\[0\] has dtype complex64"):
        codegen.gemm(A, B, epilogue=residual, epilogue_args=(bias.astype(np.complex64), bias))
    with pytest.raises(GemmError, match=r"epilogue_args\[1\] must be 1-D or 2-D, got shape \(1, 8, 24\)"):
        codegen.gemm(A, B, epilogue=residual, epilogue_args=(bias, np.zeros((1, 8, 24), np.float32)))
    with pytest.raises(GemmError, match="epilogue= and bias=/activation= exclude each other"):
        codegen.gemm(A, B, epilogue=scaled, activation="relu")
    with pytest.raises(GemmError, match="K is 0: no kernel runs, so the epilogue function would not be applied"):
        codegen.gemm(np.ones((8, 0), np.float16), np.ones((0, 24), np.float16), epilogue=scaled)
    with pytest.raises(GemmError, match="a user epilogue runs on one GEMM"):
        codegen.gemm(np.ones((2, 8, 16), np.float16), np.ones((2, 16, 24), np.float16), epilogue=scaled)


def test_arrays_in_the_functions_globals_are_refused_and_numbers_are_part_of_its_identity():
    table = np.arange(4.0)

    def reads_array(acc, m, n):
        return acc + table[n]

    with pytest.raises(GemmError, match="epilogue .*reads_array reads the array 'table' from its closure; the "
                                        "kernel would compile in a copy of it: pass it in epilogue_args"):
        check_epilogue(reads_array, (), _describe, NUMPY_A, "gemm")
    global SCALE
    first, _ = check_epilogue(scaled, (), _describe, NUMPY_A, "gemm")
    assert first.constants == (("SCALE", "float", "2.0"),)
    try:
        SCALE = 3.0
        second, _ = check_epilogue(scaled, (), _describe, NUMPY_A, "gemm")
    finally:
        SCALE = 2.0
    assert second != first and second.token != first.token      # another kernel
    again, _ = check_epilogue(scaled, (), _describe, NUMPY_A, "gemm")
    assert again == first and again.token == first.token


def test_a_closure_made_at_each_call_is_one_kernel_while_its_numbers_are_the_same():
    def make(shift):
        def f(acc, m, n):
            return acc + shift
        return f

    a, b, c = (check_epilogue(make(x), (), _describe, NUMPY_A, "gemm")[0] for x in (1.0, 1.0, 2.0))
    assert a == b and a.token == b.token and hash(a) == hash(b)
    assert c != a and c.token != a.token and c.constants == (("shift", "float", "2.0"),)


def test_tensors_pass_their_extents_and_strides():
    res = np.asfortranarray(np.zeros((5, 7), np.float32))
    user, (tb, tr) = check_epilogue(residual, (np.zeros(7, np.float16), res), _describe, NUMPY_A, "gemm")
    assert user.tensors == (("f16", 1), ("f32", 2))
    assert (tb.dims, tb.strides) == ((7, 1), (1, 0)) and (tr.dims, tr.strides) == ((5, 7), (1, 5))
    assert tr.slot_values(1) == {"t1": 0, "t1_d0": 5, "t1_d1": 7, "t1_s0": 1, "t1_s1": 5}
    ml = pytest.importorskip("ml_dtypes")
    res16 = np.asfortranarray(np.zeros((5, 7), ml.bfloat16))      # bf16: element strides, as any type's
    user, (tb, tr) = check_epilogue(residual, (np.zeros(7, ml.bfloat16), res16), _describe, NUMPY_A, "gemm")
    assert user.tensors == (("bf16", 1), ("bf16", 2)) and tr.strides == (1, 5)


def _user(fn=residual, tensors=(("f16", 1), ("f32", 2))):
    return EpilogueFunction(fn, tensors, ())


def test_the_kernel_applies_the_function_before_the_store():
    plan = make_wgmma_plan(hopper())
    plain = emit_wgmma_source(plan, "tma")
    assert "user_epilogue" not in plain and "epilogue_function" not in plain
    src = emit_wgmma_source(plan, "tma", _user())
    assert re.search(r"user_function = cuda\.jit\(device=True, inline=\"always\"\)\(epilogue_function\('residual#\d+'\)\)", src)
    assert "return user_function(acc, m, n, t[0], t[1])" in src
    assert ("t1 = cute.make_tensor(cute.make_ptr(np.float32, p.t1, 4), "
            "cute.make_layout((p.t1_d0, p.t1_d1), (p.t1_s0, p.t1_s1)))") in src
    # alpha goes into the function; the store multiplies by 1
    assert re.search(r"USER\.apply\(p, user_epilogue, epilogue_tensors\(p\), accs, work, c, alpha\).*\n"
                     r"\s+EPILOGUE\.pack\(accs, 1\.0, packed\)", src)
    with pytest.raises(ValueError, match="exclude each other"):
        emit_wgmma_source(make_wgmma_plan(hopper(activation="relu")), "tma", _user())


def test_bf16_tensors_are_made_of_cute_bfloat16():
    """A bf16 tensor's elements read as float32 (codegen.cute.bfloat16), never as the uint16
    integers of their bits."""
    src = emit_wgmma_source(make_wgmma_plan(hopper()), "registers", _user(tensors=(("bf16", 1), ("bf16", 2))))
    assert "t0 = cute.make_tensor(cute.make_ptr(cute.bfloat16, p.t0, 2), cute.make_layout((p.t0_d0,), (p.t0_s0,)))" in src
    assert "t1 = cute.make_tensor(cute.make_ptr(cute.bfloat16, p.t1, 2), " in src and "np.uint16" not in src


@pytest.mark.parametrize("epilogue, tensors", [("tma", (("f16", 1), ("f32", 2))),
                                              ("registers", (("f16", 1), ("f32", 2))),
                                              ("registers", (("bf16", 1), ("bf16", 2)))])
def test_the_kernel_compiles_for_sm90a_in_registers(epilogue, tensors):
    pytest.importorskip("numba")
    from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx

    ptx = compile_wgmma_ptx(WgmmaKey(hopper(), "K", "K", epilogue, _user(tensors=tensors)))
    assert "ld.global.u16" in ptx and ".local" not in ptx          # the 16-bit bias, read by the kernel
    if shutil.which("ptxas"):
        from codegen.driver import ptxas_cubin

        cubin, log = ptxas_cubin(ptx, "sm_90a", verbose=True)
        assert cubin is not None, log
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log


def test_the_mma_sync_kernel_applies_the_function_in_its_elementwise_epilogue():
    """Where the Hopper kernel cannot run (operands TMA cannot read, a column-major C, other
    GPUs), the mma.sync kernel applies the function to each accumulator inside C before beta."""
    pytest.importorskip("numba")
    from codegen.emit import emit_source
    from codegen.kernel import KernelKey, compile_ptx_text
    from codegen.plan import make_plan

    cfg = GemmConfig.default("f16", 1000, 1531, 520, aligned=False)
    plain = emit_source(make_plan(cfg))
    src = emit_source(make_plan(cfg), "shift", _user())
    assert "user_epilogue" not in plain and "epilogue_tensors" not in plain
    assert "edge_epilogue(p, c_addr, thr_mma, tCrC, work, m_load, n_load, epilogue_tensors(p))" in src
    assert "R2G_C" not in src                     # every tile through the element-wise epilogue
    assert src.index("user_epilogue(tCrC[i]") < src.index("if p.beta != 0:")
    ptx = compile_ptx_text(KernelKey(cfg, user=_user()), (8, 0))
    assert "ld.global.u16" in ptx and "mma.sync" in ptx                 # the f16 bias, read by the kernel


def test_a_function_numba_cannot_compile_is_a_clear_error():
    pytest.importorskip("numba")
    from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx

    def wrong(acc, m, n):
        return acc + "one"

    with pytest.raises(GemmError, match=r"the epilogue .*wrong\(acc: f32, m: i64, n: i64\) \(File .*\) does not compile as a "
                                        r"numba device function") as e:
        compile_wgmma_ptx(WgmmaKey(hopper(), "K", "K", "tma", EpilogueFunction(wrong, (), ())))
    assert f'(File "{__file__}", line' in str(e.value)
    assert "unicode_type" in str(e.value) and "\x1b[" not in str(e.value)     # numba's words, without colours


SIM = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import GemmConfig, GemmError
rng = np.random.default_rng(0)
SHIFT = 2.0

def residual(acc, m, n, bias, res):
    return acc + bias[n] + 0.5 * res[m, n]

def lower(acc, m, n):          # a causal mask: m and n are C's coordinates
    return acc * SHIFT if n <= m else -1.0

cases = [  # f32 C from registers, alpha; a 16-bit C by TMA, overlapping the next tile; beta
    (GemmConfig("f16", "f32", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 40, 72, 64, 0.5, 0.0, True),
    (GemmConfig("f16", "f16", 64, 64, 64, 2, 4, 3, 8, 1, "wgmma"), 100, 72, 72, 1.0, 0.0, False),
    # B of 41 columns (82-byte rows): the producer warpgroup copies it; C of odd row stride
    (GemmConfig("f16", "f32", 128, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 70, 41, 64, 1.0, -1.0, False)]
for cfg, M, N, K, alpha, beta, mask in cases:
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, N)).astype(np.float16)
    bias = rng.integers(-4, 5, N).astype(np.float16)
    res = np.asfortranarray(rng.integers(-4, 5, (M, N)).astype(np.float32))   # any strides
    C0 = rng.integers(-3, 4, (M, N)).astype(np.float32 if cfg.out == "f32" else np.float16)
    C = C0.copy()
    launch = codegen.prepare(A, B, C, alpha=alpha, beta=beta, config=cfg, epilogue=residual,
                             epilogue_args=(bias, res))
    launch()
    launch._launcher.check()
    prod = alpha * (A.astype(np.float64) @ B.astype(np.float64))
    ref = prod + bias.astype(np.float64)[None, :] + 0.5 * res + beta * C0
    err = float(np.abs(C.astype(np.float64) - ref).max())
    print("residual", cfg.out, M, N, K, beta, err)
    assert err == 0.0, (cfg, M, N, K, err)
    if mask:
        C = codegen.gemm(A, B, config=cfg.with_(out_dtype="f32"), epilogue=lower)
        m, n = np.indices((M, N))
        err = float(np.abs(C - np.where(n <= m, 2.0 * prod / alpha, -1.0)).max())
        print("lower", M, N, K, err)
        assert err == 0.0, err
# the mma.sync kernel (the simulator's default; on a GPU where an operand has no unit stride,
# or C is column-major): an odd N, a column-major f32 C and beta, in its element-wise epilogue
M, N, K = 20, 13, 24
A = rng.integers(-3, 4, (M, K)).astype(np.float16)
B = rng.integers(-3, 4, (K, N)).astype(np.float16)
bias = rng.integers(-4, 5, N).astype(np.float16)
res = np.asfortranarray(rng.integers(-4, 5, (M, N)).astype(np.float32))
C0 = np.asfortranarray(rng.integers(-3, 4, (M, N)).astype(np.float32))
C = C0.copy(order="F")
launch = codegen.prepare(A, B, C, alpha=0.5, beta=-1.0, epilogue=residual, epilogue_args=(bias, res))
assert launch.kernel.config.path == "mma_sync", launch.kernel.config
launch()
ref = 0.5 * (A.astype(np.float64) @ B.astype(np.float64)) + bias.astype(np.float64)[None, :] + 0.5 * res - C0
err = float(np.abs(C - ref).max())
print("mma.sync residual", M, N, K, err)
assert err == 0.0, err
print("SIM EPILOGUE OK")
"""


SIM_BF16 = """
import sys
sys.setswitchinterval(1e-4)
import ml_dtypes
import numpy as np, codegen
from codegen import GemmConfig
bf16 = ml_dtypes.bfloat16
rng = np.random.default_rng(0)

def residual(acc, m, n, bias, res, keep):
    keep[m, n] = acc + 0.0078125 * n          # a bf16 tensor written: rounded to nearest even
    return acc + bias[n] + 0.5 * res[m, n]

cfg = GemmConfig("bf16", "f32", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma")
M, N, K = 40, 24, 64
A = rng.integers(-3, 4, (M, K)).astype(bf16)
B = rng.integers(-3, 4, (K, N)).astype(bf16)
bias = (rng.integers(-64, 64, N) / 16).astype(bf16)            # exact in bf16; as uint16 bits 1.5 is 16320
res = np.asfortranarray((rng.integers(-64, 64, (M, N)) / 8).astype(bf16))      # column-major
keep = np.zeros((M, N), bf16)
C = codegen.gemm(A, B, config=cfg, epilogue=residual, epilogue_args=(bias, res, keep))
prod = A.astype(np.float64) @ B.astype(np.float64)
ref = prod + bias.astype(np.float64)[None, :] + 0.5 * res.astype(np.float64)
err = float(np.abs(C - ref).max())
print("bf16 residual", M, N, K, err)
assert err == 0.0, err
kept = (prod + 0.0078125 * np.arange(N)).astype(np.float32).astype(bf16)
assert not np.array_equal(kept.astype(np.float64), prod + 0.0078125 * np.arange(N))   # some were rounded
assert np.array_equal(keep.view(np.uint16), kept.view(np.uint16))
print("SIM BF16 OK")
"""


def test_bf16_tensors_read_as_float32_in_the_simulator(tmp_path):
    """A bf16 bias and a column-major bf16 residual (ml_dtypes arrays, as a bf16 model's) read
    as their float32 values, and a bf16 tensor written is rounded to nearest even, exactly."""
    pytest.importorskip("numba")
    pytest.importorskip("ml_dtypes")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", LAYOUTALG_CACHE=str(tmp_path), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", SIM_BF16], capture_output=True, text=True, env=env, timeout=600)
    assert "SIM BF16 OK" in r.stdout, r.stdout + r.stderr[-3000:]


def test_the_epilogue_runs_in_the_simulator_exactly(tmp_path):
    """Bias and a column-major residual read through tensors, alpha and beta, both epilogues
    (registers, and the TMA store that overlaps the next tile), edge tiles, and a mask from
    the coordinates with a constant from the function's globals."""
    pytest.importorskip("numba")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", LAYOUTALG_CACHE=str(tmp_path), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", SIM], capture_output=True, text=True, env=env, timeout=900)
    assert "SIM EPILOGUE OK" in r.stdout, r.stdout + r.stderr[-3000:]
