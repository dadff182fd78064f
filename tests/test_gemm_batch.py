"""Operands of more than two dimensions, as ``torch.matmul`` takes them: ``(..., M, K) @ (K, N)``
is one GEMM of all the rows (``codegen.batch.fold_batch``), ``(..., M, K) @ (..., K, N)`` a
batch of GEMMs (``codegen.batch.batch_operands``: one launch, of the Hopper kernel or of the
mma.sync kernels, whose tile scheduler walks every matrix's tiles); in the simulator against numpy, on torch ``meta`` tensors
through the operator and autograd, and the cases that are refused."""

import os
import subprocess
import sys

import numpy as np
import pytest

import codegen
from codegen import GemmError
from codegen.batch import batch_operands, fold_batch

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


BMM_SCRIPT = r"""
import sys
sys.setswitchinterval(1e-4)
import numpy as np
import codegen
from codegen import GemmConfig

rng = np.random.default_rng(4)
ints = lambda shape, dt=np.float16: rng.integers(-3, 4, shape).astype(dt)     # exact in f16 and f32
f64 = lambda x: x.astype(np.float64)
# the mma.sync kernels: one launch, 2 x 2 tiles a matrix
cfg = GemmConfig('f16', None, 32, 32, 32, 1, 1, 2, 1)
A, B = ints((3, 40, 24)), ints((3, 24, 36))
assert codegen.prepare(A, B, config=cfg)._launcher.grid == 3 * 4, "one launch of every matrix's tiles"
out = codegen.gemm(A, B, config=cfg)
assert out.shape == (3, 40, 36) and (out == f64(A) @ f64(B)).all(), "mma.sync batch"
A2 = ints((2, 1, 40, 24))                              # broadcast against B's 3: copied per matrix
out = codegen.gemm(A2, B, config=cfg)
assert out.shape == (2, 3, 40, 36) and (out == f64(A2) @ f64(B)).all(), "mma.sync broadcast"
C = ints((6, 40, 36))[::2]                             # matrices of C 2 apart: a strided batch mode
ref = f64(A) @ f64(B) - C
assert codegen.gemm(A, B, C, beta=-1.0, config=cfg) is C and (C == ref).all(), "mma.sync C given"
Ab = ints((2, 20, 13))                                 # an odd K: A copied element by element, a batch
Bb = ints((2, 13, 40))
assert (codegen.gemm(Ab, Bb, config=cfg) == f64(Ab) @ f64(Bb)).all(), "mma.sync element-wise batch"
# the Hopper kernel: one launch, the batch in the tile scheduler and the TMA maps' third mode
W = dict(bm=64, bn=64, bk=32, stages=2, path="wgmma")
for out_t, L, M, N, K, lb, lc, beta, split in (
        ("f16", 2, 40, 64, 32, "N", "row", 0.0, 1),    # TMA store of C, a 3-D map
        ("f32", 2, 40, 72, 64, "T", "row", 0.5, 1),    # C from registers, its batch stride; B K-major
        ("f16", 2, 72, 40, 32, "N", "col", 0.0, 1),    # column-major C: C^T = B^T @ A^T, batches swapped
        ("f32", 3, 40, 40, 64, "N", "row", 0.0, 2)):   # split-K over the batch's tiles (three: one split)
    cfgw = GemmConfig("f16", out_t, split_k=split, **W)
    A, B = ints((L, M, K)), ints((L, K, N))
    if lb == "T":
        B = np.ascontiguousarray(B.transpose(0, 2, 1)).transpose(0, 2, 1)
    dt = np.float16 if out_t == "f16" else np.float32
    C0 = ints((L, M, N), dt)
    C = C0.copy() if lc == "row" else np.ascontiguousarray(C0.transpose(0, 2, 1)).transpose(0, 2, 1)
    launch = codegen.prepare(A, B, C, beta=beta, config=cfgw)
    la = getattr(launch._launcher, "inner", launch._launcher)
    assert la.batch.count == L and la.grid == 2, (la.batch, la.grid)
    launch()
    la.check()
    err = float(np.abs(f64(launch.C) - (f64(A) @ f64(B) + beta * C0)).max())
    print(out_t, L, M, N, K, lb, lc, beta, split, err)
    assert err == 0.0, (out_t, L, M, N, K, lb, lc, err)
print("BMM OK")
"""


def test_simulator_runs_a_batch_of_gemms_on_both_kernels(tmp_path):
    """A batch of GEMMs: the mma.sync kernels (one launch; broadcast batch modes, a strided
    batch of C with beta, element-wise copies) and the Hopper kernel (one launch of two CTAs walking every
    matrix's tiles: the TMA-store and register epilogues, a column-major C run transposed,
    split-K), exact on small integers."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               LAYOUTALG_CACHE=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", BMM_SCRIPT], capture_output=True, text=True, env=env, timeout=1200)
    assert "BMM OK" in r.stdout, r.stdout + r.stderr[-4000:]


def test_batch_operands_broadcast_and_fold_the_batch_modes():
    A, B = np.zeros((2, 1, 4, 5), np.float16), np.zeros((3, 5, 6), np.float16)
    bt = batch_operands(A, B, None, "gemm")
    assert bt.A.shape == (6, 4, 5) and bt.B.shape == (6, 5, 6) and bt.shape == (2, 3, 4, 6)
    assert bt.A.strides[0] == 20 * 2 and bt.B.strides[0] == 30 * 2        # broadcast modes copied
    C = np.zeros((2, 3, 4, 6), np.float32)
    assert np.shares_memory(batch_operands(A, B, C, "gemm").C, C)
    assert batch_operands(A, np.zeros((5, 6), np.float16), None, "gemm") is None     # folded instead
    assert fold_batch(A, B, None, "gemm") is None


def test_refused_batches_name_the_operands():
    A, B = np.zeros((2, 4, 5), np.float16), np.zeros((5, 6), np.float16)
    with pytest.raises(GemmError, match=r"batch modes of A \(2, 4, 5\) and B \(3, 5, 6\) do not broadcast"):
        codegen.gemm(A, np.zeros((3, 5, 6), np.float16))
    with pytest.raises(GemmError, match=r"inner dimensions differ"):
        codegen.gemm(A, np.zeros((2, 6, 6), np.float16))
    Cb = np.zeros((2, 4, 6), np.float16)
    with pytest.raises(GemmError, match=r"batch modes do not fold"):
        codegen.gemm(np.zeros((2, 2, 4, 5), np.float16), np.zeros((2, 2, 5, 6), np.float16),
                     np.zeros((2, 2, 4, 6), np.float16).transpose(1, 0, 2, 3))
    with pytest.raises(GemmError, match=r"matrices of 4x6 share memory"):
        codegen.prepare(A, np.zeros((2, 5, 6), np.float16), np.lib.stride_tricks.as_strided(Cb, strides=(2, 12, 2)))
    with pytest.raises(GemmError, match=r"batches of 2 .* and 3 .* matrices differ"):
        codegen.prepare(A, np.zeros((3, 5, 6), np.float16))
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
    with pytest.raises(GemmError, match="do not broadcast"):
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


def test_torch_operator_takes_a_batch_of_gemms_with_autograd():
    """``(L,M,K) @ (L,K,N)`` (and broadcast batch modes) through the operator: the result's
    shape and the gradients' shapes, on ``meta`` tensors (the fake implementation)."""
    torch = pytest.importorskip("torch")
    x = torch.empty(2, 3, 40, 24, device="meta", dtype=torch.bfloat16, requires_grad=True)
    w = torch.empty(3, 24, 56, device="meta", dtype=torch.bfloat16, requires_grad=True)
    b = torch.empty(56, device="meta", dtype=torch.bfloat16, requires_grad=True)
    y = codegen.mm(x, w, bias=b, activation="gelu")
    assert tuple(y.shape) == (2, 3, 40, 56) and y.grad_fn is not None
    y.sum().backward()
    assert x.grad.shape == x.shape and w.grad.shape == w.shape and b.grad.shape == b.shape

