"""Step 4: the fast f16 GEMM -- swizzled shared memory, a 3-stage cp.async pipeline,
``ldmatrix`` and k-block double buffering in registers.

``C = A @ B.T`` with ``A`` ``(M,K)`` and ``B`` ``(N,K)`` K-major float16, ``C`` ``(M,N)``
row-major float16 (float32 accumulation).  The CTA tile is 128x256x64 with 8 warps (2x4),
as in the generated ``mma.sync`` GEMM's plan for 4096^3: each k-tile of A and B goes
global -> shared with 16-byte ``cp.async`` into ``Sw<3,3,3>``-swizzled K-major tiles
(bank-conflict-free for ``ldmatrix``), three k-tiles in flight; each 16-deep k-block goes
shared -> registers with ``ldmatrix.x4`` one k-block ahead of the MMAs that use it.

Shared memory is 144 KiB, so it is dynamic (``dynamic_shared_tensor``); on a GPU the
kernel's dynamic shared memory limit must be raised before the launch (:func:`launch`).

Run it: ``python examples/f16_multistage.py`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1``).
"""

from dataclasses import dataclass

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda
from layoutalg.tiled_copy import make_tiled_copy_impl
from layoutalg import (
    CopyAtom, Layout, Swizzle, composition, cosize, make_tiled_copy, make_tiled_copy_A,
    make_tiled_copy_B, make_tiled_mma, tile_to_shape,
)

BM, BN, BK, STAGES = 128, 256, 64, 3
MMA = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", (2, 4, 1), (32, 64, 16))   # 256 threads
GROUP_M = 8                                                                     # CTA rasterization
KBLOCKS = BK // 16                                                              # k-blocks a k-tile
PENDING = STAGES - 2                    # cp.async groups left in flight at a wait (a constant)

SW_ATOM = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))    # (8,64) -> smem, K-major
SA = tile_to_shape(SW_ATOM, (BM, BK, STAGES))                         # (BM,BK,PIPE) -> smem
SB = tile_to_shape(SW_ATOM, (BN, BK, STAGES))                         # (BN,BK,PIPE) -> smem
SA_BYTES = cosize(SA.inner) * 2
SMEM_BYTES = SA_BYTES + cosize(SB.inner) * 2

G2S = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"),
                      Layout((32, 8), (8, 1)), Layout((1, 8)))        # (T32,T8) x (V1,V8) -> 32x64
S2R_A = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), MMA)
S2R_B = make_tiled_copy_B(CopyAtom("SM75_U32x4_LDSM_N", "f16"), MMA)
# registers -> global for the f16 result: the MMA's C thread-value layout, two adjacent f16
# (one 32-bit store) a call; make_tiled_copy_C would insist on C's own type (f32)
R2G_C = make_tiled_copy_impl(CopyAtom("UniversalCopy_32", "f16"), MMA.get_layoutC_TV(),
                             (MMA.tile_size_mnk[0], MMA.tile_size_mnk[1]))


@dataclass(frozen=True)
class UserGemm:
    """A compiled-on-first-call kernel for one problem size, and its launch shape."""

    kernel: object
    M: int
    N: int
    K: int
    grid: tuple
    block: int
    smem_bytes: int


def make_gemm(M, N, K):
    """The kernel for ``M x N x K`` (multiples of the CTA tile); layouts are its constants."""
    if M % BM or N % BN or K % BK:
        raise ValueError(f"make_gemm: {M}x{N}x{K} is not a multiple of the {BM}x{BN}x{BK} tile")
    LA = Layout((M, K), (K, 1))               # (M,K) -> offset
    LB = Layout((N, K), (K, 1))               # (N,K) -> offset
    LC = Layout((M, N), (N, 1))               # (M,N) -> offset
    K_TILES = K // BK
    NBM, NBN = M // BM, N // BN
    g = GROUP_M if NBM % GROUP_M == 0 else 1
    # block -> tile index bm + NBM * bn: runs of g tiles down M, then the next column of
    # tiles, so that the CTAs running at once share their A and B tiles in L2
    RASTER = Layout(((g, NBN), NBM // g), ((1, NBM), g))     # (bid) -> tile index

    @cuda.jit
    def f16_gemm(A, B, C):
        tid = cuda.threadIdx.x
        tile = RASTER(cuda.blockIdx.x)          # a layout evaluated at run time
        bm, bn = tile % NBM, tile // NBM
        gA = cute.local_tile(cute.make_tensor(A, LA), (BM, BK), (bm, None))   # (BM,BK,k)
        gB = cute.local_tile(cute.make_tensor(B, LB), (BN, BK), (bn, None))   # (BN,BK,k)
        gC = cute.local_tile(cute.make_tensor(C, LC), (BM, BN), (bm, bn))     # (BM,BN)
        sA = cute.dynamic_shared_tensor(np.float16, SA, 0)                    # (BM,BK,PIPE)
        sB = cute.dynamic_shared_tensor(np.float16, SB, SA_BYTES)             # (BN,BK,PIPE)

        g2s = G2S.get_slice(tid)
        tAgA = g2s.partition_S(gA)            # (CPY,CPY_M,CPY_K,k)
        tAsA = g2s.partition_D(sA)            # (CPY,CPY_M,CPY_K,PIPE)
        tBgB = g2s.partition_S(gB)
        tBsB = g2s.partition_D(sB)

        thr_mma = MMA.get_slice(tid)
        tCrA = thr_mma.partition_fragment_A(sA[None, None, 0])   # (MMA,MMA_M,MMA_K)
        tCrB = thr_mma.partition_fragment_B(sB[None, None, 0])   # (MMA,MMA_N,MMA_K)
        tCgC = thr_mma.partition_C(gC)                           # (MMA,MMA_M,MMA_N)
        tCrC = thr_mma.partition_fragment_C(gC)
        cute.clear(tCrC)

        s2r_a = S2R_A.get_slice(tid)
        tXsA = s2r_a.partition_S(sA)          # (CPY,CPY_M,CPY_K,PIPE)
        tXrA = s2r_a.retile_D(tCrA)           # (CPY,CPY_M,CPY_K)
        s2r_b = S2R_B.get_slice(tid)
        tXsB = s2r_b.partition_S(sB)
        tXrB = s2r_b.retile_D(tCrB)

        # prologue: STAGES-1 k-tiles in flight
        for s in range(STAGES - 1):
            if s < K_TILES:
                cute.copy(G2S, tAgA[None, None, None, s], tAsA[None, None, None, s])
                cute.copy(G2S, tBgB[None, None, None, s], tBsB[None, None, None, s])
            cute.cp_async_fence()
        read = 0
        write = STAGES - 1
        k_next = STAGES - 1
        cute.cp_async_wait(PENDING)
        cuda.syncthreads()
        tXsA_p = tXsA[None, None, None, read]
        tXsB_p = tXsB[None, None, None, read]
        cute.copy(S2R_A, tXsA_p[None, None, 0], tXrA[None, None, 0])
        cute.copy(S2R_B, tXsB_p[None, None, 0], tXrB[None, None, 0])

        for kt in range(K_TILES):
            for kb in range(KBLOCKS):
                if kb == KBLOCKS - 1:             # the next stage: wait for it
                    tXsA_p = tXsA[None, None, None, read]
                    tXsB_p = tXsB[None, None, None, read]
                    cute.cp_async_wait(PENDING)
                    cuda.syncthreads()
                kb_next = (kb + 1) % KBLOCKS      # registers one k-block ahead
                cute.copy(S2R_A, tXsA_p[None, None, kb_next], tXrA[None, None, kb_next])
                cute.copy(S2R_B, tXsB_p[None, None, kb_next], tXrB[None, None, kb_next])
                if kb == 0:                       # the next k-tile into the stage just freed
                    if k_next < K_TILES:
                        cute.copy(G2S, tAgA[None, None, None, k_next], tAsA[None, None, None, write])
                        cute.copy(G2S, tBgB[None, None, None, k_next], tBsB[None, None, None, write])
                    cute.cp_async_fence()
                    k_next += 1
                    write = read
                    read = read + 1 if read < STAGES - 1 else 0
                cute.gemm(MMA, tCrC, tCrA[None, None, kb], tCrB[None, None, kb])

        # epilogue: convert in registers, then 32-bit stores of adjacent f16 pairs
        tCrC16 = cute.make_fragment_like(tCrC, np.float16)
        cute.copy(tCrC, tCrC16)                   # f32 -> f16
        r2g = R2G_C.get_slice(tid)
        cute.copy(R2G_C, r2g.retile_S(tCrC16), r2g.partition_D(gC))

    return UserGemm(f16_gemm, M, N, K, (NBM * NBN,), MMA.size, SMEM_BYTES)


def launch(g, a, b, c, stream=0):
    """Launch ``g`` on device arrays (raising the dynamic shared memory limit on a GPU)."""
    kern = g.kernel
    if not cute.SIMULATED:
        from codegen.cute.launch import allow_dynamic_shared

        kern = allow_dynamic_shared(kern, a, b, c, nbytes=g.smem_bytes)
    kern[g.grid, g.block, stream, g.smem_bytes](a, b, c)


def run(M=BM, N=BN, K=2 * BK, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    g = make_gemm(M, N, K)
    if cute.SIMULATED:
        launch(g, a, b, c)
    else:
        da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(c)
        launch(g, da, db, dc)
        c = dc.copy_to_host()
    return c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64).T


SIGNATURE = "void(float16[:, ::1], float16[:, ::1], float16[:, ::1])"
KERNEL = make_gemm(BM, BN, 2 * BK).kernel
TOLERANCE = 0.1                               # f16 output of sums of 128 products

if __name__ == "__main__":
    require_device("examples/f16_multistage.py")
    out, ref = run()
    err = float(np.max(np.abs(out - ref)))
    print(f"f16_multistage: {out.shape[0]}x{out.shape[1]}x{2 * BK}, max abs error {err:.2e}")
    assert err < TOLERANCE
