"""Step 6: the f16 GEMM of step 4 with run-time shapes -- one compilation for every M, N, K.

``C = A @ B.T`` with ``A`` ``(M,K)`` and ``B`` ``(N,K)`` K-major float16 and ``C`` ``(M,N)``
row-major float16 (float32 accumulation), any ``M`` and ``N``, ``K`` and the leading
dimensions multiples of 8 (16-byte ``cp.async`` rows).  The kernel is step 4's -- 128x256x64
tiles, 8 warps, ``Sw<3,3,3>`` shared tiles, a 3-stage ``cp.async`` pipeline, ``ldmatrix``
one k-block ahead -- with three changes:

* The global layouts are made **in the kernel** from its arguments:
  ``make_layout((M, K), (assume(ldA, 8), 1))``.  ``M``, ``K`` and ``ldA`` stay run-time
  integers; the tile's strides fold around them (a row step is one multiply by ``ldA``).
  ``assume(ldA, 8)`` promises 16-byte rows, which ``cp.async`` needs.
* ``local_tile`` of a run-time extent rounds up, as CuTe's does: ``ceil_div(M, 128)`` tiles,
  the last one partial.  An **identity tensor** tiled and partitioned exactly like the data
  gives each copy its coordinates; ``copy_if`` issues a ``cp.async`` whose row lies past the
  edge with a source size of 0 (it fills zeros, so the MMAs need no guard), and the C store
  skips the pairs past the edge.
* The **K residue first** (CuTe's and CUTLASS's): ``domain_offset`` moves the origin of A,
  B and their identity tensors ``kres = ceil_div(K, BK) * BK - K`` columns back, so k-tile
  0 is the partial one and its columns before 0 are zero-filled; every later k-tile is
  whole in K, and its copies need only the row predicates, computed once.
* The grid and the raster are computed at run time from the tile counts.

Run it: ``python examples/f16_runtime_shape.py`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1``).
"""

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda
from layoutalg import Layout, make_identity_tensor, size

# the tiles, atoms and shared layouts are step 4's (host constants of the kernel)
from f16_multistage import (
    BK, BM, BN, G2S, GROUP_M, KBLOCKS, MMA, PENDING, R2G_C, S2R_A, S2R_B, SA, SA_BYTES, SB,
    SMEM_BYTES, STAGES,
)

# one predicate per copy call: the shapes of the calls of a thread's partitions
PRED_A = Layout(G2S.get_slice(0).partition_S(make_identity_tensor((BM, BK))).layout.shape[1:])  # (CPY_M,CPY_K)
PRED_B = Layout(G2S.get_slice(0).partition_S(make_identity_tensor((BN, BK))).layout.shape[1:])
C_CALLS = size(R2G_C.get_slice(0).partition_D(make_identity_tensor((BM, BN))).layout) // 2
PRED_C = Layout(C_CALLS)                                  # one per 32-bit store of two f16


@cuda.jit(device=True, inline="always")
def predicates(tXcX, pX, rows, k_first):
    """One flag a copy call of a k-tile: its row is below ``rows`` and, with ``k_first``
    (k-tile 0, the partial one), its columns are not before the matrix."""
    for m in range(cute.size(pX, 0)):
        for k in range(cute.size(pX, 1)):
            c = tXcX[0, m, k, 0]                          # (row, k) of the call's first element in k-tile 0
            pX[m, k] = c[0] < rows and (c[1] >= 0 or not k_first)


@cuda.jit
def f16_gemm(A, B, C, M, N, K, ldA, ldB, ldC):
    tid = cuda.threadIdx.x
    # block -> (bm, bn): runs of GROUP_M tiles down M, so that concurrent CTAs share B in L2
    nbm = (M + BM - 1) // BM
    nbn = (N + BN - 1) // BN
    per_group = GROUP_M * nbn
    first_m = (cuda.blockIdx.x // per_group) * GROUP_M
    rows = min(nbm - first_m, GROUP_M)
    bm = first_m + cuda.blockIdx.x % rows
    bn = (cuda.blockIdx.x % per_group) // rows

    # the K residue first: k-tile t covers k in [t*BK - kres, (t+1)*BK - kres), so only k-tile 0
    # is partial (its columns before 0 are zero-filled) and the others need row predicates only
    k_shift = cute.assume(K - ((K + BK - 1) // BK) * BK, 8)      # -kres: a multiple of 8, as K is
    mA = cute.make_tensor(A, cute.make_layout((M, K), (cute.assume(ldA, 8), 1)))     # (M,K) -> offset
    mB = cute.make_tensor(B, cute.make_layout((N, K), (cute.assume(ldB, 8), 1)))     # (N,K) -> offset
    mC = cute.make_tensor(C, cute.make_layout((M, N), (cute.assume(ldC, 2), 1)))     # (M,N) -> offset
    gA = cute.local_tile(cute.domain_offset((0, k_shift), mA), (BM, BK), (bm, None))    # (BM,BK,k): ceil_div(K, BK)
    gB = cute.local_tile(cute.domain_offset((0, k_shift), mB), (BN, BK), (bn, None))    # (BN,BK,k)
    gC = cute.local_tile(mC, (BM, BN), (bm, bn))                  # (BM,BN)
    cA = cute.local_tile(cute.domain_offset((0, k_shift), cute.make_identity_tensor((M, K))), (BM, BK), (bm, None))
    cB = cute.local_tile(cute.domain_offset((0, k_shift), cute.make_identity_tensor((N, K))), (BN, BK), (bn, None))
    cC = cute.local_tile(cute.make_identity_tensor((M, N)), (BM, BN), (bm, bn))      # (BM,BN) -> (m,n)
    sA = cute.dynamic_shared_tensor(np.float16, SA, 0)            # (BM,BK,PIPE)
    sB = cute.dynamic_shared_tensor(np.float16, SB, SA_BYTES)     # (BN,BK,PIPE)

    g2s = G2S.get_slice(tid)
    tAgA, tAsA, tAcA = g2s.partition_S(gA), g2s.partition_D(sA), g2s.partition_S(cA)   # (CPY,CPY_M,CPY_K,k|PIPE)
    tBgB, tBsB, tBcB = g2s.partition_S(gB), g2s.partition_D(sB), g2s.partition_S(cB)
    k_tiles = cute.size(tAgA, 3)                                  # ceil_div(K, BK), at run time
    pA0, pA = cute.make_fragment_like(PRED_A, np.int8), cute.make_fragment_like(PRED_A, np.int8)
    pB0, pB = cute.make_fragment_like(PRED_B, np.int8), cute.make_fragment_like(PRED_B, np.int8)
    predicates(tAcA, pA0, M, True)                                # (CPY_M,CPY_K) of k-tile 0
    predicates(tAcA, pA, M, False)                                # of every other k-tile: rows only
    predicates(tBcB, pB0, N, True)
    predicates(tBcB, pB, N, False)

    thr_mma = MMA.get_slice(tid)
    tCrA = thr_mma.partition_fragment_A(sA[None, None, 0])        # (MMA,MMA_M,MMA_K)
    tCrB = thr_mma.partition_fragment_B(sB[None, None, 0])        # (MMA,MMA_N,MMA_K)
    tCrC = thr_mma.partition_fragment_C(gC)                       # (MMA,MMA_M,MMA_N)
    cute.clear(tCrC)
    s2r_a, s2r_b = S2R_A.get_slice(tid), S2R_B.get_slice(tid)
    tXsA, tXrA = s2r_a.partition_S(sA), s2r_a.retile_D(tCrA)      # (CPY,CPY_M,CPY_K,PIPE), (CPY,CPY_M,CPY_K)
    tXsB, tXrB = s2r_b.partition_S(sB), s2r_b.retile_D(tCrB)

    # prologue: STAGES-1 k-tiles in flight
    cute.copy_if(G2S, pA0, tAgA[None, None, None, 0], tAsA[None, None, None, 0])
    cute.copy_if(G2S, pB0, tBgB[None, None, None, 0], tBsB[None, None, None, 0])
    cute.cp_async_fence()
    for s in range(1, STAGES - 1):
        if s < k_tiles:
            cute.copy_if(G2S, pA, tAgA[None, None, None, s], tAsA[None, None, None, s])
            cute.copy_if(G2S, pB, tBgB[None, None, None, s], tBsB[None, None, None, s])
        cute.cp_async_fence()
    read, write, k_next = 0, STAGES - 1, STAGES - 1
    cute.cp_async_wait(PENDING)
    cuda.syncthreads()
    tXsA_p, tXsB_p = tXsA[None, None, None, read], tXsB[None, None, None, read]
    cute.copy(S2R_A, tXsA_p[None, None, 0], tXrA[None, None, 0])
    cute.copy(S2R_B, tXsB_p[None, None, 0], tXrB[None, None, 0])

    # mainloop: step 4's, with the k-tile count and the loads' predicates at run time
    for kt in range(k_tiles):
        for kb in range(KBLOCKS):
            if kb == KBLOCKS - 1:                                 # the next stage: wait for it
                tXsA_p, tXsB_p = tXsA[None, None, None, read], tXsB[None, None, None, read]
                cute.cp_async_wait(PENDING)
                cuda.syncthreads()
            kb_next = (kb + 1) % KBLOCKS                          # registers one k-block ahead
            cute.copy(S2R_A, tXsA_p[None, None, kb_next], tXrA[None, None, kb_next])
            cute.copy(S2R_B, tXsB_p[None, None, kb_next], tXrB[None, None, kb_next])
            if kb == 0:                                           # the next k-tile into the stage just freed
                if k_next < k_tiles:
                    cute.copy_if(G2S, pA, tAgA[None, None, None, k_next], tAsA[None, None, None, write])
                    cute.copy_if(G2S, pB, tBgB[None, None, None, k_next], tBsB[None, None, None, write])
                cute.cp_async_fence()
                k_next += 1
                write = read
                read = read + 1 if read < STAGES - 1 else 0
            cute.gemm(MMA, tCrC, tCrA[None, None, kb], tCrB[None, None, kb])

    # epilogue: f16 in registers, then the 32-bit stores of pairs inside (M, N)
    tCrC16 = cute.make_fragment_like(tCrC, np.float16)
    cute.convert(tCrC, tCrC16, "f16")
    r2g = R2G_C.get_slice(tid)
    tDcC = r2g.partition_D(cC)                                    # (CPY,CPY_M,CPY_N) -> (m,n)
    pC = cute.make_fragment_like(PRED_C, np.int8)
    for g in range(C_CALLS):
        c = tDcC[2 * g]                                           # the pair's first element
        pC[g] = c[0] < M and c[1] < N
    cute.copy_if(R2G_C, pC, r2g.retile_S(tCrC16), r2g.partition_D(gC))


SIGNATURE = "void(float16[:, :], float16[:, :], float16[:, :], int64, int64, int64, int64, int64, int64)"
KERNEL = f16_gemm


def _row_stride(x, name):
    """Elements between rows of a 2-D array (numpy, numba device array) with unit column stride."""
    s0, s1 = x.strides
    item = x.dtype.itemsize
    if s1 != item:
        raise ValueError(f"f16_gemm: {name} must have unit stride along K (columns), got strides {x.strides}")
    return s0 // item


def launch(a, b, c, stream=0):
    """``c[:] = a @ b.T`` for float16 arrays of any shape; ``K`` and the row strides of ``a``
    and ``b`` multiples of 8, ``N`` and ``c``'s row stride even (checked here: the kernel
    trusts them)."""
    (M, K), (N, Kb) = a.shape, b.shape
    lda, ldb, ldc = _row_stride(a, "A"), _row_stride(b, "B"), _row_stride(c, "C")
    if Kb != K or c.shape != (M, N):
        raise ValueError(f"f16_gemm: shapes A {a.shape}, B {b.shape}, C {c.shape} do not make C = A @ B.T")
    if K % 8 or lda % 8 or ldb % 8 or N % 2 or ldc % 2:
        raise ValueError(f"f16_gemm: K={K} and the row strides of A ({lda}) and B ({ldb}) must be multiples "
                         f"of 8 (16-byte cp.async rows); N={N} and C's row stride ({ldc}) even (32-bit stores)")
    grid = (-(-M // BM) * -(-N // BN),)
    kern = f16_gemm
    if not cute.SIMULATED:
        from codegen.cute.launch import allow_dynamic_shared

        kern = allow_dynamic_shared(kern, a, b, c, M, N, K, lda, ldb, ldc, nbytes=SMEM_BYTES)
    kern[grid, MMA.size, stream, SMEM_BYTES](a, b, c, M, N, K, lda, ldb, ldc)


#: (M, N, K) of the run: partial tiles in M and N, a partial last k-tile, whole tiles; the
#: simulator (a Python thread per CUDA thread) runs the smallest with partial tiles everywhere
SHAPES = [(200, 260, 136), (128, 256, 64), (1000, 1000, 1000), (4096, 4096, 4096)]
SIM_SHAPES = [(100, 24, 72)]
TOLERANCE = 0.5                               # f16 output of sums of up to 4096 products


def run(M=100, N=24, K=72, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.full((M, N), 7.0, np.float16)
    if cute.SIMULATED:
        launch(a, b, c)
    else:
        da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(c)
        launch(da, db, dc)
        c = dc.copy_to_host()
    return c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64).T


if __name__ == "__main__":
    require_device("examples/f16_runtime_shape.py")
    err = 0.0
    shapes = SIM_SHAPES if cute.SIMULATED else SHAPES
    for M, N, K in shapes:
        out, ref = run(M, N, K)
        err = max(err, float(np.max(np.abs(out - ref))))
    print(f"f16_runtime_shape: {', '.join('x'.join(map(str, s)) for s in shapes)} with one kernel, "
          f"max abs error {err:.2e}")
    assert err < TOLERANCE
