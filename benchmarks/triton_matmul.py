"""An autotuned Triton matmul, the second reference beside cuBLAS in the benchmarks.

``matmul(A, B)`` computes ``A @ B`` for 2-D CUDA tensors (f16, bf16, f32 with tf32, fp8
e4m3/e5m2 with an f32 or bf16 result), tiled and pipelined by Triton, with grouped
rasterization.  The autotuner picks among the configurations below per (M, N, K).
Needs a CUDA GPU, torch and triton.
"""

import torch
import triton
import triton.language as tl

__all__ = ["matmul"]


def _configs():
    out = []
    for bm, bn, bk, stages, warps in [
        (128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4), (128, 128, 64, 3, 8),
        (128, 256, 32, 4, 8), (64, 256, 64, 4, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4),
        (128, 128, 128, 3, 8), (256, 128, 128, 3, 8), (128, 256, 128, 3, 8),
    ]:
        out.append(triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8}, num_stages=stages, num_warps=warps))
    return out


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                   ALLOW_TF32: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    rows = tl.minimum(num_m - first_m, GROUP_M)
    pm = first_m + (pid % group) % rows
    pn = (pid % group) // rows
    offs_m = pm * BM + tl.arange(0, BM)
    offs_n = pn * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + offs_k
        x = tl.load(a, mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tl.load(b, mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        if ALLOW_TF32:
            acc = tl.dot(x, y, acc, input_precision="tf32")
        else:
            acc = tl.dot(x, y, acc)
        a += BK * sak
        b += BK * sbk
    c = c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(A, B, out_dtype=None):
    """``A @ B`` through the autotuned Triton kernel; the result has ``out_dtype`` (default:
    A's type, or bf16 for 8-bit float inputs)."""
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise ValueError(f"triton matmul: inner dimensions differ: {tuple(A.shape)} @ {tuple(B.shape)}")
    if out_dtype is None:
        out_dtype = torch.bfloat16 if A.element_size() == 1 else A.dtype
    C = torch.empty((M, N), device=A.device, dtype=out_dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    _matmul_kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                         C.stride(0), C.stride(1), ALLOW_TF32=A.dtype == torch.float32)
    return C
