"""A bias and an activation fused into the Hopper GEMM's epilogue (``gemm(..., bias=,
activation=)``), without a GPU: the config's checks, the kernel's source and its offline
sm_90a PTX, the host's refusals, and the torch operator's shapes and derivatives.
``benchmarks/bench_fused.py`` and ``tests/gpu/check_torch.py`` run it on a GPU.
"""

import re
import shutil
import subprocess

import numpy as np
import pytest

from codegen import GemmConfig, GemmError
from codegen.sm90.emit import emit_wgmma_source
from codegen.sm90.plan import make_wgmma_plan


def hopper(dtype="bf16", M=4096, N=4096, K=4096, **kw):
    return GemmConfig.default(dtype, M, N, K, arch=(9, 0)).with_(**kw)


def test_config_names_the_bad_activation_and_the_path():
    with pytest.raises(ValueError, match="activation 'tanh' is not one of relu, gelu, gelu_tanh, silu"):
        hopper(activation="tanh")
    with pytest.raises(ValueError, match="bias 'f64' is not one of f16, bf16, f32"):
        hopper(bias="f64")
    with pytest.raises(ValueError, match="wgmma-path option"):
        GemmConfig.default("f16").with_(activation="relu")


def test_the_kernel_applies_the_operation_before_each_store():
    plain = emit_wgmma_source(make_wgmma_plan(hopper()), "tma")
    assert not re.search(r"\bOP\b", plain) and "EPILOGUE.pack(accs, alpha, packed)" in plain
    src = emit_wgmma_source(make_wgmma_plan(hopper(activation="gelu", bias="bf16")), "tma")
    assert re.search(r"OP = BiasActivation\(act=2, bias_bits=16, bias_bf16=True, pairs=64", src)
    assert "OP.apply(p, accs, work, c, alpha)" in src and "EPILOGUE.pack(accs, 1.0, packed)" in src
    split = hopper("f16", 256, 256, 8192, activation="relu", bias="f32")
    assert split.split_k > 1
    src = emit_wgmma_source(make_wgmma_plan(split), "registers")
    # split-K: the operation goes on the full sums, after the last part has added the others'
    assert re.search(r"if SCHEDULER\.fixup\(.*\n\s+OP\.apply\(p, accs, work, c, alpha\).*\n\s+acc = MMA\.from_array\(accs\)"
                     r"\n\s+nbox = EPILOGUE\.store_tile\(p, acc, accs, work, c, nbox, 1\.0\)", src)


@pytest.mark.parametrize("cfg, epilogue, instr", [
    (hopper(activation="gelu", bias="bf16"), "tma", "ex2.approx.ftz.f32"),
    (hopper("f16", activation="silu"), "tma", "tanh.approx.f32"),
    (hopper("f16", 256, 256, 8192, activation="relu", bias="f32"), "registers", "max.f32"),
])
def test_the_fused_kernel_compiles_for_sm90a_in_registers(cfg, epilogue, instr):
    from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx

    ptx = compile_wgmma_ptx(WgmmaKey(cfg, "K", "K", epilogue))
    assert instr in ptx and ".local" not in ptx
    if shutil.which("ptxas"):
        from codegen.driver import ptxas_cubin

        cubin, log = ptxas_cubin(ptx, "sm_90a", verbose=True)
        assert cubin is not None, log
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log


def test_the_host_refuses_what_it_cannot_fuse():
    A, B = np.ones((8, 16), np.float16), np.ones((16, 24), np.float16)
    import codegen

    with pytest.raises(GemmError, match="activation 'elu' is not one of"):
        codegen.gemm(A, B, activation="elu")
    with pytest.raises(GemmError, match="beta must be 0, got 2.0"):
        codegen.gemm(A, B, np.zeros((8, 24), np.float16), beta=2.0, activation="relu")
    with pytest.raises(GemmError, match="runs on GPU arrays .* on the Hopper kernel \\(numpy arrays in numba's "
                                        "simulator only\\)"):
        codegen.gemm(A, B, bias=np.zeros(24, np.float16))


def test_bias_is_one_a_column_or_one_a_row():
    torch = pytest.importorskip("torch")
    from codegen.host import _check_fused

    a = type("A", (), {"kind": "torch", "device": "cuda:0"})()          # A as described on a GPU
    for shape in ((2, 24), (24, 2), (1, 1, 24)):
        with pytest.raises(GemmError, match=r"bias must be N=24 elements, \(N,\) or \(1, N\), one a column, or "
                                            r"\(M, 1\), one a row, got shape"):
            _check_fused(torch.zeros(*shape), None, a, 24, 0.0, "gemm", 8)
    with pytest.raises(GemmError, match=r"a bias per row, shape \(8, 1\), takes one GEMM; got a batch"):
        _check_fused(torch.zeros(8, 1), None, a, 24, 0.0, "gemm", None)
    from codegen.host import _bias_extent, _describe

    d = lambda x: _describe(x, "gemm", "bias", ("f16", "bf16", "f32"))      # noqa: E731
    assert _bias_extent(d(np.zeros((1, 24), np.float16)), False, 8, 24, "gemm").shape == (1, 24)
    assert _bias_extent(d(np.zeros((8, 1), np.float32)), True, 8, 24, "gemm").shape == (8, 1)
    with pytest.raises(GemmError, match=r"bias must hold N=24 contiguous elements, got shape \(1, 24\), element "
                                        r"strides \(48, 2\)"):
        _bias_extent(d(np.zeros((1, 48), np.float16)[:, ::2]), False, 8, 24, "gemm")
    with pytest.raises(GemmError, match=r"bias must hold M=8 contiguous elements, got shape \(9, 1\)"):
        _bias_extent(d(np.zeros((9, 1), np.float16)), True, 8, 24, "gemm")


def test_the_torch_operator_takes_the_bias_and_differentiates_through_the_activation():
    torch = pytest.importorskip("torch")
    import codegen

    A = torch.empty(64, 32, device="meta", dtype=torch.bfloat16, requires_grad=True)
    B = torch.empty(32, 48, device="meta", dtype=torch.bfloat16, requires_grad=True)
    b = torch.empty(48, device="meta", dtype=torch.bfloat16, requires_grad=True)
    y = codegen.mm(A, B, bias=b, activation="gelu")
    assert y.shape == (64, 48) and y.dtype == torch.bfloat16
    y.sum().backward()
    assert (A.grad.shape, B.grad.shape, b.grad.shape) == (A.shape, B.shape, b.shape)
    assert b.grad.dtype == torch.bfloat16
    for shape in ((64, 1), (1, 48)):                    # one a row; one a column, as a row vector
        b = torch.empty(*shape, device="meta", dtype=torch.float32, requires_grad=True)
        codegen.mm(A, B, bias=b, activation="relu").sum().backward()
        assert b.grad.shape == shape
    with pytest.raises(GemmError, match=r"bias has shape \(64, 2\), expected \(48,\) or \(1, 48\), one a column, "
                                        r"or \(64, 1\), one a row"):
        codegen.mm(A, B, bias=torch.empty(64, 2, device="meta"))


@pytest.mark.parametrize("name", ["relu", "gelu", "gelu_tanh", "silu"])
def test_activation_derivatives_equal_torch_autograd(name):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    from codegen.torch_ops import activation_grad

    fn = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"), "silu": F.silu}[name]
    z = torch.linspace(-6, 6, 1001, dtype=torch.float64)
    z = z[z.abs() > 1e-6].requires_grad_()            # relu has no derivative at 0
    (want,) = torch.autograd.grad(fn(z).sum(), z)
    assert torch.allclose(activation_grad(z.detach(), name), want, atol=1e-12)


def test_the_epilogue_activations_match_their_definitions():
    """BiasActivation.activate run by the simulator's twins (numba's simulator, a new process)
    against exact GELU, tanh-GELU and SiLU: erf to 1.5e-7, the others exact there (the
    simulator's tanh.approx and ex2.approx are exact)."""
    import os
    import sys
    import textwrap
    from pathlib import Path

    code = textwrap.dedent("""
        import math
        import numpy as np
        from codegen.cute import make_bias_activation
        xs = np.linspace(-8, 8, 401, dtype=np.float32)
        exact = {
            "relu": lambda x: max(x, 0.0),
            "gelu": lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))),
            "gelu_tanh": lambda x: 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
            "silu": lambda x: x / (1 + math.exp(-x)),
        }
        for name, fn in exact.items():
            op = make_bias_activation(256, name, None)
            err = max(abs(float(op.activate(np.float32(x))) - fn(float(x))) / max(1.0, abs(fn(float(x)))) for x in xs)
            print(name, op.act, f"{err:.2e}")
    """)
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(root)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = [line.split() for line in res.stdout.splitlines()]
    assert [r[:2] for r in rows] == [["relu", "1"], ["gelu", "2"], ["gelu_tanh", "3"], ["silu", "4"]]
    assert all(float(r[2]) < 1e-6 for r in rows), rows


SIM_SCRIPT = r"""
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
rng = np.random.default_rng(4)
ints = lambda shape: rng.integers(-3, 4, shape).astype(np.float16)      # exact in f16 and f32
M, N, K = 70, 136, 64                                                    # a partial tile in M and N
A, B = ints((M, K)), ints((K, N))
z = A.astype(np.float64) @ B.astype(np.float64)
br = ints((M, 1))                                                        # one a row, with ReLU
C = codegen.gemm(A, B, bias=br, activation="relu", out_dtype="f32")
assert np.array_equal(C, np.maximum(z + br, 0)), "a bias per row"
bc = ints((N,)).astype(np.float32)                                       # one a column, into a column-major C:
Ct = np.zeros((N, M), np.float32).T                                      # run as C^T = B^T @ A^T, one a row there
codegen.gemm(A, B, Ct, bias=bc)
assert np.array_equal(Ct, z + bc), "a bias per column into a column-major C"
print("ok")
"""


def test_simulator_runs_a_bias_per_row_and_one_per_column_into_a_column_major_c_exactly():
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", SIM_SCRIPT], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-4000:]
