"""Predication with an identity tensor: ``Y = alpha * X + Y`` on an ``M x N`` matrix whose
sides are not multiples of the tile.

The tiles cover the rounded-up shape ``(MP, NP)``; the layout of the memory is still the
matrix's own (row stride ``N``), so the elements past the edge have offsets but must not be
touched.  ``make_identity_tensor((MP, NP))`` tiled and partitioned exactly like the data
tells each thread the ``(m, n)`` of each of its elements, and ``m < M and n < N`` is the
predicate (CuTe's ``elem_less``).

Run it: ``python examples/identity_predicate.py`` (on a GPU, or with ``NUMBA_ENABLE_CUDASIM=1``).
"""

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda
from layoutalg import Layout

M, N = 50, 70
BM, BN = 32, 32
MP, NP = -(-M // BM) * BM, -(-N // BN) * BN    # rounded up to the tile
LX = Layout((MP, NP), (N, 1))                  # (MP,NP) -> offset: the matrix's row-major strides
THR = Layout((8, 8), (8, 1))                   # (ThrM,ThrN) -> thread: 64 threads, n fastest


@cuda.jit
def axpby(X, Y, alpha):
    tid = cuda.threadIdx.x
    bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
    gX = cute.local_tile(cute.make_tensor(X, LX), (BM, BN), (bm, bn))          # (BM,BN)
    gY = cute.local_tile(cute.make_tensor(Y, LX), (BM, BN), (bm, bn))
    cI = cute.local_tile(cute.make_identity_tensor((MP, NP)), (BM, BN), (bm, bn))   # (BM,BN) -> (m,n)
    tX = cute.local_partition(gX, THR, tid)     # (4,4): this thread's elements
    tY = cute.local_partition(gY, THR, tid)
    tC = cute.local_partition(cI, THR, tid)     # their coordinates
    for i in range(cute.size(tX)):
        c = tC[i]
        if c[0] < M and c[1] < N:
            tY[i] = alpha * tX[i] + tY[i]


def run(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = rng.standard_normal((M, N)).astype(np.float32)
    ref = 2.0 * x.astype(np.float64) + y
    # one guard element after Y: the predicate must keep every write inside the matrix
    y_guard = np.concatenate([y.reshape(-1), np.float32([7.0])])
    axpby[(MP // BM, NP // BN), 64](x.reshape(-1), y_guard, np.float32(2.0))
    assert y_guard[-1] == 7.0, "a write past the matrix"
    return y_guard[:-1].reshape(M, N), ref


SIGNATURE = "void(float32[::1], float32[::1], float32)"
KERNEL = axpby
TOLERANCE = 1e-5

if __name__ == "__main__":
    require_device("examples/identity_predicate.py")
    out, ref = run()
    err = float(np.max(np.abs(out - ref)))
    print(f"identity_predicate: {M}x{N} in {BM}x{BN} tiles, max abs error {err:.2e}")
    assert err < TOLERANCE
