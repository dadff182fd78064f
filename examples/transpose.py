"""Beside the GEMMs: a tiled transpose through swizzled shared memory, bank-conflict free.

``out (N,M) = in (M,N).T``, float32, row-major.  Each CTA moves a 32x32 tile with 64
threads.  Both global accesses are 128-bit vectors: rows of ``in`` are read four n at a
time, rows of ``out`` written four m at a time.  In between, the tile sits in shared
memory M-major, so the second read is a 128-bit vector too; the first write is four
scalar stores per vector, which would put the 8 threads of a warp that share an m on one
bank (8-way conflicts).  ``Sw<3,2,5>`` XORs the 16-byte chunk index with bits of n, so
that those 32 scalar stores hit 32 banks, and the 8 vector loads of a quarter-warp
(one column, m = 0..31) still hit 8 distinct 16-byte chunks: no conflicts either way.

Run it: ``python examples/transpose.py`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1``).
"""

from dataclasses import dataclass

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda
from layoutalg import CopyAtom, Layout, Swizzle, composition, make_tiled_copy

BM = BN = 32
THREADS = 64
ST = composition(Swizzle(3, 2, 5), Layout((BM, BN), (1, BM)))   # (BM,BN) -> smem, M-major, swizzled
# global -> registers: rows of `in`, 4 n a thread: threads (T8 along m, T8 along n), n fastest
COPY_IN = make_tiled_copy(CopyAtom("UniversalCopy_128", "f32"), Layout((8, 8), (8, 1)), Layout((1, 4)))
# registers -> shared: the same threads and values, one 32-bit store each
COPY_IN_S = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((8, 8), (8, 1)), Layout((1, 4)))
# shared -> global: columns of the tile (rows of `out`), 4 m a thread, m fastest
COPY_OUT = make_tiled_copy(CopyAtom("UniversalCopy_128", "f32"), Layout((8, 8), (1, 8)), Layout((4, 1)))


@dataclass(frozen=True)
class UserTranspose:
    kernel: object
    M: int
    N: int
    grid: tuple
    block: int


def make_transpose(M, N):
    """The kernel for an ``M x N`` input (multiples of 32)."""
    if M % BM or N % BN:
        raise ValueError(f"make_transpose: {M}x{N} is not a multiple of the {BM}x{BN} tile")
    LI = Layout((M, N), (N, 1))               # (M,N) -> offset in `in`, row-major
    LO = Layout((M, N), (1, M))               # (M,N) -> offset in `out` (N,M) row-major

    @cuda.jit
    def transpose(inp, out):
        tid = cuda.threadIdx.x
        bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
        gI = cute.local_tile(cute.make_tensor(inp, LI), (BM, BN), (bm, bn))   # (BM,BN)
        gO = cute.local_tile(cute.make_tensor(out, LO), (BM, BN), (bm, bn))   # (BM,BN)
        sT = cute.make_shared_tensor(np.float32, ST)                          # (BM,BN)

        t_in = COPY_IN.get_slice(tid)
        tIgI = t_in.partition_S(gI)           # (CPY,CPY_M,CPY_N)
        tIrI = cute.make_fragment_like(tIgI)
        cute.copy(COPY_IN, tIgI, tIrI)        # 128-bit global loads
        t_in_s = COPY_IN_S.get_slice(tid)
        tIsT = t_in_s.partition_D(sT)         # (CPY,CPY_M,CPY_N), as tIgI
        cute.copy(COPY_IN_S, t_in_s.retile_S(tIrI), tIsT)   # 32-bit shared stores, all banks
        cuda.syncthreads()

        t_out = COPY_OUT.get_slice(tid)
        tOsT = t_out.partition_S(sT)
        tOgO = t_out.partition_D(gO)
        cute.copy(COPY_OUT, tOsT, tOgO)       # 128-bit shared loads and global stores

    return UserTranspose(transpose, M, N, (M // BM, N // BN), THREADS)


def run(M=64, N=96, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((N, M), np.float32)
    t = make_transpose(M, N)
    t.kernel[t.grid, t.block](a, out)
    return out, a.T


SIGNATURE = "void(float32[:, ::1], float32[:, ::1])"
KERNEL = make_transpose(64, 96).kernel
TOLERANCE = 0.0

if __name__ == "__main__":
    require_device("examples/transpose.py")
    out, ref = run()
    err = float(np.max(np.abs(out - ref)))
    print(f"transpose: {ref.shape[1]}x{ref.shape[0]}, max abs error {err:.2e}")
    assert err <= TOLERANCE
