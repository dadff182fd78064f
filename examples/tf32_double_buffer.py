"""Step 3: double buffering -- two shared-memory stages filled by ``cp.async`` while the
tensor cores work on the other, and two k-blocks of register fragments (``ldmatrix`` of
the next k-block before the MMAs of this one).

The seed's TF32 tiled MMA (2x2 warps, 32x32x8) on 32x32x16 CTA tiles.  A and B are
K-major in shared memory now, so both go global -> shared as 16-byte ``cp.async`` (four
tf32) and shared -> registers as ``ldmatrix.x4``.

Run it: ``python examples/tf32_double_buffer.py`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1``).
"""

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda
from layoutalg import (
    CopyAtom, Layout, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma,
)

M, N, K = 64, 32, 64
BM, BN, BK = 32, 32, 16
KBLOCKS = BK // 8                          # k-blocks of the MMA per k-tile
K_TILES = K // BK

LA = Layout((M, K), (K, 1))                # (M,K) -> offset
LB = Layout((N, K), (K, 1))                # (N,K) -> offset
LC = Layout((M, N), (N, 1))                # (M,N) -> offset
SA = Layout((BM, BK, 2), (BK, 1, BM * BK))   # (BM,BK,PIPE) -> smem, K-major, two stages
SB = Layout((BN, BK, 2), (BK, 1, BN * BK))   # (BN,BK,PIPE) -> smem

MMA = make_tiled_mma("SM80_16x8x8_F32TF32TF32F32_TN", (2, 2, 1), (32, 32, 8))   # 128 threads
G2S = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f32"),
                      Layout((32, 4), (4, 1)), Layout((1, 4)))       # (T32,T4) x (V1,V4) -> 32x16
S2R_A = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "tf32"), MMA)
S2R_B = make_tiled_copy_B(CopyAtom("SM75_U32x4_LDSM_N", "tf32"), MMA)


@cuda.jit
def tf32_double_buffer_gemm(A, B, C):
    tid = cuda.threadIdx.x
    bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
    gA = cute.local_tile(cute.make_tensor(A, LA), (BM, BK), (bm, None))   # (BM,BK,k)
    gB = cute.local_tile(cute.make_tensor(B, LB), (BN, BK), (bn, None))   # (BN,BK,k)
    gC = cute.local_tile(cute.make_tensor(C, LC), (BM, BN), (bm, bn))     # (BM,BN)
    sA = cute.make_shared_tensor(np.float32, SA)                          # (BM,BK,PIPE)
    sB = cute.make_shared_tensor(np.float32, SB)                          # (BN,BK,PIPE)

    g2s = G2S.get_slice(tid)
    tAgA = g2s.partition_S(gA)                # (CPY,CPY_M,CPY_K,k)
    tAsA = g2s.partition_D(sA)                # (CPY,CPY_M,CPY_K,PIPE)
    tBgB = g2s.partition_S(gB)
    tBsB = g2s.partition_D(sB)

    thr_mma = MMA.get_slice(tid)
    tCrA = thr_mma.partition_fragment_A(sA[None, None, 0])   # (MMA,MMA_M,MMA_K)
    tCrB = thr_mma.partition_fragment_B(sB[None, None, 0])   # (MMA,MMA_N,MMA_K)
    tCgC = thr_mma.partition_C(gC)
    tCrC = thr_mma.partition_fragment_C(gC)
    cute.clear(tCrC)

    s2r_a = S2R_A.get_slice(tid)
    tXsA = s2r_a.partition_S(sA)              # (CPY,CPY_M,CPY_K,PIPE)
    tXrA = s2r_a.retile_D(tCrA)
    s2r_b = S2R_B.get_slice(tid)
    tXsB = s2r_b.partition_S(sB)
    tXrB = s2r_b.retile_D(tCrB)

    # k-tile 0 into stage 0
    cute.copy(G2S, tAgA[None, None, None, 0], tAsA[None, None, None, 0])
    cute.copy(G2S, tBgB[None, None, None, 0], tBsB[None, None, None, 0])
    cute.cp_async_fence()
    for kt in range(K_TILES):
        stage = kt & 1
        if kt + 1 < K_TILES:                   # k-tile kt+1 into the other stage, in flight
            cute.copy(G2S, tAgA[None, None, None, kt + 1], tAsA[None, None, None, 1 - stage])
            cute.copy(G2S, tBgB[None, None, None, kt + 1], tBsB[None, None, None, 1 - stage])
        cute.cp_async_fence()
        cute.cp_async_wait(1)                  # k-tile kt has landed
        cuda.syncthreads()
        tXsA_p = tXsA[None, None, None, stage]
        tXsB_p = tXsB[None, None, None, stage]
        cute.copy(S2R_A, tXsA_p[None, None, 0], tXrA[None, None, 0])
        cute.copy(S2R_B, tXsB_p[None, None, 0], tXrB[None, None, 0])
        for kb in range(KBLOCKS):
            if kb + 1 < KBLOCKS:               # the next k-block's registers
                cute.copy(S2R_A, tXsA_p[None, None, kb + 1], tXrA[None, None, kb + 1])
                cute.copy(S2R_B, tXsB_p[None, None, kb + 1], tXrB[None, None, kb + 1])
            cute.gemm(MMA, tCrC, tCrA[None, None, kb], tCrB[None, None, kb])
        cuda.syncthreads()                     # every warp is done with this stage
    cute.copy(tCrC, tCgC)


def run(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    tf32_double_buffer_gemm[(M // BM, N // BN), MMA.size](a, b, c)
    return c, a.astype(np.float64) @ b.astype(np.float64).T


SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
KERNEL = tf32_double_buffer_gemm
TOLERANCE = 5e-2                           # tf32 inputs, K = 64

if __name__ == "__main__":
    require_device("examples/tf32_double_buffer.py")
    out, ref = run()
    err = float(np.max(np.abs(out - ref)))
    print(f"tf32_double_buffer: {M}x{N}x{K}, max abs error {err:.2e}")
    assert err < TOLERANCE
