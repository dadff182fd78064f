"""Operands of more than two dimensions, as ``torch.matmul`` takes them: ``(..., M, K) @ (K, N)``
is one GEMM of all the rows (``codegen.host.fold_batch``), in the simulator against numpy, on
torch ``meta`` tensors through the operator and autograd, and the cases that are refused."""

import os
import subprocess
import sys

import numpy as np
import pytest

import codegen
from codegen import GemmError
from codegen.host import fold_batch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r"""
import numpy as np
import codegen
from codegen import GemmConfig

cfg = GemmConfig('f16', None, 32, 32, 32, 1, 1, 2, 1)
rng = np.random.default_rng(3)
ints = lambda shape: rng.integers(-3, 4, shape).astype(np.float16)      # exact in f16 and f32
A, B = ints((2, 2, 8, 24)), ints((24, 40))          # 32 rows of A: one tile row
ref = A.astype(np.float64) @ B.astype(np.float64)
out = codegen.gemm(A, B, config=cfg)
assert out.shape == (2, 2, 8, 40) and (out == ref).all(), "new C"
C = np.full((2, 2, 8, 40), 7, np.float16)
assert codegen.gemm(A, B, C, beta=1.0, config=cfg) is C and (C == ref + 7).all(), "C given, beta"
out = codegen.gemm(A, B[None, None], config=cfg)                     # B with batch modes of 1
assert out.shape == (2, 2, 8, 40) and (out == ref).all(), "broadcast B"
out = codegen.gemm(A[:, 1], B.reshape(1, 1, 24, 40), config=cfg)    # the batch modes broadcast
assert out.shape == (1, 2, 8, 40) and (out[0] == ref[:, 1]).all(), "broadcast shape"
At = np.ascontiguousarray(A.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)   # rows that do not fold: copied
assert (codegen.gemm(At, B, config=cfg) == ref).all(), "A copied"
print("BATCH OK")
"""


def test_simulator_folds_the_batch_into_one_gemm(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               LAYOUTALG_CACHE=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=900)
    assert "BATCH OK" in r.stdout, r.stdout + r.stderr


def test_fold_is_a_view_of_c_and_none_for_matrices():
    A, B = np.zeros((2, 3, 4, 5), np.float16), np.zeros((5, 6), np.float16)
    C = np.zeros((2, 3, 4, 6), np.float16)
    f = fold_batch(A, B, C, "gemm")
    assert f.A.shape == (24, 5) and f.B.shape == (5, 6) and f.shape == (2, 3, 4, 6)
    assert f.C.shape == (24, 6) and np.shares_memory(f.C, C)
    assert fold_batch(A[0, 0], B, None, "gemm") is None
    # a mode of one with any stride still folds
    C1 = np.zeros((4, 1, 6), np.float16)[:, :, :]
    assert fold_batch(np.zeros((1, 4, 5), np.float16), B, C1.transpose(1, 0, 2), "gemm").C.shape == (4, 6)


def test_refused_batches_name_the_operands():
    A, B = np.zeros((2, 4, 5), np.float16), np.zeros((5, 6), np.float16)
    with pytest.raises(GemmError, match=r"B of shape \(2, 5, 6\) is a batch of matrices"):
        codegen.gemm(A, np.zeros((2, 5, 6), np.float16))
    with pytest.raises(GemmError, match=r"C has shape \(8, 6\), expected \(2, 4, 6\)"):
        codegen.gemm(A, B, np.zeros((8, 6), np.float16))
    Ct = np.zeros((4, 2, 6), np.float16).transpose(1, 0, 2)             # rows of batch 0 and 1 interleave
    with pytest.raises(GemmError, match=r"does not fold into one matrix of 6 columns without a copy"):
        codegen.gemm(A, B, Ct)
    with pytest.raises(GemmError, match=r"must have 2 or more dimensions"):
        codegen.gemm(np.zeros(5, np.float16), np.zeros((2, 5, 6), np.float16))


def test_torch_operator_takes_3d_inputs_with_autograd():
    torch = pytest.importorskip("torch")
    x = torch.empty(2, 3, 40, 24, device="meta", dtype=torch.bfloat16, requires_grad=True)
    w = torch.empty(24, 56, device="meta", dtype=torch.bfloat16, requires_grad=True)
    b = torch.empty(56, device="meta", dtype=torch.bfloat16, requires_grad=True)
    y = codegen.mm(x, w, bias=b, activation="relu")
    assert tuple(y.shape) == (2, 3, 40, 56) and y.grad_fn is not None
    y.sum().backward()
    assert x.grad.shape == x.shape and w.grad.shape == w.shape and b.grad.shape == b.shape
    with pytest.raises(GemmError, match="is a batch of matrices"):
        codegen.mm(x, torch.empty(2, 24, 56, device="meta", dtype=torch.bfloat16))


def test_empty_batches_and_bad_scales_of_empty_problems():
    """K or N of 0 folds too (no ambiguous -1 reshape); an empty problem still checks alpha
    and the scales, though it reads none."""
    out = codegen.gemm(np.zeros((2, 3, 0), np.float16), np.zeros((0, 4), np.float16))
    assert out.shape == (2, 3, 4) and not out.any()
    assert codegen.gemm(np.ones((2, 3, 5), np.float16), np.ones((5, 0), np.float16)).shape == (2, 3, 0)
    with pytest.raises(GemmError, match=r"alpha must be one scale for the whole operand .* shape \(2,\)"):
        codegen.gemm(np.zeros((0, 4), np.float16), np.zeros((4, 3), np.float16), alpha=np.zeros(2))
    with pytest.raises(GemmError, match=r"scale_a must be a real number or a 1-element tensor, got str"):
        codegen.gemm(np.zeros((0, 4), np.float16), np.zeros((4, 3), np.float16), scale_a="2")
