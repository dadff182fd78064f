"""Step 2: the seed's TF32 tiled MMA, with ``ldmatrix`` for B through ``make_tiled_copy_B``.

Four 16x8x8 atoms (2x2 warps, 128 threads) and a permutation make a 32x32x8 tile.
Shared memory keeps A M-major and B K-major, as the seed does.  The copies from shared
memory to registers are built from the MMA (``make_tiled_copy_A/B``), so each thread
receives exactly its MMA fragment: ``ldmatrix.x4`` for B (four consecutive k of one n are
one 16-byte row), one 32-bit load per value for A (``ldmatrix`` cannot read M-major A).

Run it: ``python examples/tf32_ldmatrix.py`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1``).
"""

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda
from layoutalg import (
    CopyAtom, Layout, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma,
)

M, N, K = 64, 32, 16
BM, BN, BK = 32, 32, 8

LA = Layout((M, K), (K, 1))               # (M,K) -> offset, row-major (K-major)
LB = Layout((N, K), (K, 1))               # (N,K) -> offset, K-major
LC = Layout((M, N), (N, 1))               # (M,N) -> offset
SA = Layout((BM, BK), (1, BM))            # (BM,BK) -> smem, M-major (the seed's)
SB = Layout((BN, BK), (BK, 1))            # (BN,BK) -> smem, K-major

MMA = make_tiled_mma("SM80_16x8x8_F32TF32TF32F32_TN", (2, 2, 1), (32, 32, 8))   # 128 threads
G2S_A = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"),
                        Layout((32, 4), (1, 32)), Layout((1, 2)))   # (T32,T4) x (V1,V2) -> 32x8
G2S_B = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"),
                        Layout((32, 4), (4, 1)), Layout((1, 2)))
S2R_A = make_tiled_copy_A(CopyAtom("UniversalCopy_32", "tf32"), MMA)
S2R_B = make_tiled_copy_B(CopyAtom("SM75_U32x4_LDSM_N", "tf32"), MMA)


@cuda.jit
def tf32_ldmatrix_gemm(A, B, C):
    tid = cuda.threadIdx.x
    bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
    gA = cute.local_tile(cute.make_tensor(A, LA), (BM, BK), (bm, None))   # (BM,BK,k)
    gB = cute.local_tile(cute.make_tensor(B, LB), (BN, BK), (bn, None))   # (BN,BK,k)
    gC = cute.local_tile(cute.make_tensor(C, LC), (BM, BN), (bm, bn))     # (BM,BN)
    sA = cute.make_shared_tensor(np.float32, SA)
    sB = cute.make_shared_tensor(np.float32, SB)

    g2s_a = G2S_A.get_slice(tid)
    tAgA = g2s_a.partition_S(gA)                  # (CPY,CPY_M,CPY_K,k)
    tAsA = g2s_a.partition_D(sA)
    g2s_b = G2S_B.get_slice(tid)
    tBgB = g2s_b.partition_S(gB)
    tBsB = g2s_b.partition_D(sB)

    thr_mma = MMA.get_slice(tid)
    tCrA = thr_mma.partition_fragment_A(sA)       # (MMA,MMA_M,MMA_K)
    tCrB = thr_mma.partition_fragment_B(sB)       # (MMA,MMA_N,MMA_K)
    tCgC = thr_mma.partition_C(gC)                # (MMA,MMA_M,MMA_N)
    tCrC = thr_mma.partition_fragment_C(gC)
    cute.clear(tCrC)

    s2r_a = S2R_A.get_slice(tid)
    tXsA = s2r_a.partition_S(sA)                  # (CPY,CPY_M,CPY_K)
    tXrA = s2r_a.retile_D(tCrA)                   # the MMA fragment, seen by the copy
    s2r_b = S2R_B.get_slice(tid)
    tXsB = s2r_b.partition_S(sB)
    tXrB = s2r_b.retile_D(tCrB)

    for k in range(cute.size(gA, 2)):
        cute.copy(G2S_A, tAgA[None, None, None, k], tAsA)
        cute.copy(G2S_B, tBgB[None, None, None, k], tBsB)
        cuda.syncthreads()
        cute.copy(S2R_A, tXsA, tXrA)
        cute.copy(S2R_B, tXsB, tXrB)              # ldmatrix.x4
        cute.gemm(MMA, tCrC, tCrA, tCrB)
        cuda.syncthreads()
    cute.copy(tCrC, tCgC)


def run(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    tf32_ldmatrix_gemm[(M // BM, N // BN), MMA.size](a, b, c)
    return c, a.astype(np.float64) @ b.astype(np.float64).T


SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
KERNEL = tf32_ldmatrix_gemm
TOLERANCE = 2e-2

if __name__ == "__main__":
    require_device("examples/tf32_ldmatrix.py")
    out, ref = run()
    err = float(np.max(np.abs(out - ref)))
    print(f"tf32_ldmatrix: {M}x{N}x{K}, max abs error {err:.2e}")
    assert err < TOLERANCE
