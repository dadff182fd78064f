"""Step 1: a minimal TF32 GEMM with one 16x8x8 tensor-core atom and universal copies.

``C = A @ B.T`` with ``A`` ``(M,K)``, ``B`` ``(N,K)`` and ``C`` ``(M,N)``, all row-major
float32.  One warp per 16x8 tile of C; each k-tile of 8 goes global -> shared
(``UniversalCopy_32``, four values a thread) -> registers (element-wise) -> ``mma.sync``.

Run it: ``python examples/tf32_mma.py`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1``).
"""

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda
from layoutalg import CopyAtom, Layout, make_tiled_copy, make_tiled_mma

M, N, K = 32, 16, 16                      # the problem (a compile-time constant of the kernel)
BM, BN, BK = 16, 8, 8                     # the CTA tile

LA = Layout((M, K), (K, 1))               # (M,K) -> offset, row-major
LB = Layout((N, K), (K, 1))               # (N,K) -> offset
LC = Layout((M, N), (N, 1))               # (M,N) -> offset
SA = Layout((BM, BK), (BK, 1))            # (BM,BK) -> smem offset
SB = Layout((BN, BK), (BK, 1))            # (BN,BK) -> smem offset

MMA = make_tiled_mma("SM80_16x8x8_F32TF32TF32F32_TN")        # 32 threads, 16x8x8
COPY_A = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"),
                         Layout((16, 2), (2, 1)), Layout((1, 4)))   # (T16,T2) x (V1,V4) -> 16x8
COPY_B = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"),
                         Layout((8, 4), (4, 1)), Layout((1, 2)))    # (T8,T4) x (V1,V2) -> 8x8


@cuda.jit
def tf32_gemm(A, B, C):
    tid = cuda.threadIdx.x
    bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
    gA = cute.local_tile(cute.make_tensor(A, LA), (BM, BK), (bm, None))   # (BM,BK,k)
    gB = cute.local_tile(cute.make_tensor(B, LB), (BN, BK), (bn, None))   # (BN,BK,k)
    gC = cute.local_tile(cute.make_tensor(C, LC), (BM, BN), (bm, bn))     # (BM,BN)
    sA = cute.make_shared_tensor(np.float32, SA)                          # (BM,BK)
    sB = cute.make_shared_tensor(np.float32, SB)                          # (BN,BK)

    thr_a = COPY_A.get_slice(tid)
    tAgA = thr_a.partition_S(gA)                  # (CPY,CPY_M,CPY_K,k)
    tAsA = thr_a.partition_D(sA)                  # (CPY,CPY_M,CPY_K)
    thr_b = COPY_B.get_slice(tid)
    tBgB = thr_b.partition_S(gB)
    tBsB = thr_b.partition_D(sB)

    thr_mma = MMA.get_slice(tid)
    tCsA = thr_mma.partition_A(sA)                # (MMA,MMA_M,MMA_K)
    tCsB = thr_mma.partition_B(sB)                # (MMA,MMA_N,MMA_K)
    tCgC = thr_mma.partition_C(gC)                # (MMA,MMA_M,MMA_N)
    tCrA = cute.make_fragment_A(thr_mma, tCsA)     # registers shaped like tCsA (MoYe's name)
    tCrB = cute.make_fragment_B(thr_mma, tCsB)
    tCrC = cute.make_fragment_C(thr_mma, tCgC)
    cute.clear(tCrC)

    for k in range(cute.size(gA, 2)):
        cute.copy(COPY_A, tAgA[None, None, None, k], tAsA)
        cute.copy(COPY_B, tBgB[None, None, None, k], tBsB)
        cuda.syncthreads()
        cute.copy(tCsA, tCrA)
        cute.copy(tCsB, tCrB)
        cute.gemm(MMA, tCrC, tCrA, tCrB)
        cuda.syncthreads()
    cute.copy(tCrC, tCgC)


def run(seed=0):
    """Run the kernel on random data; returns (C, reference)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    tf32_gemm[(M // BM, N // BN), MMA.size](a, b, c)
    return c, a.astype(np.float64) @ b.astype(np.float64).T


SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
KERNEL = tf32_gemm
TOLERANCE = 2e-2                           # tf32 inputs (10-bit mantissa), K = 16

if __name__ == "__main__":
    require_device("examples/tf32_mma.py")
    out, ref = run()
    err = float(np.max(np.abs(out - ref)))
    print(f"tf32_mma: {M}x{N}x{K}, max abs error {err:.2e}")
    assert err < TOLERANCE
