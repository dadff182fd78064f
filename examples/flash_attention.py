"""Step 7: attention -- a FlashAttention-2 forward kernel written with layouts.

``O = softmax(Q K^T * scale [+ causal mask]) V`` for ``Q``, ``K``, ``V`` of shape
``(batch * heads, seq, 64)`` float16 (float32 accumulation), ``seq`` a multiple of 64. Each
CTA takes 64 rows of ``Q`` (4 warps, 16 rows each) and walks the keys 64 at a time, never
writing the ``seq x seq`` scores to memory (Dao's FlashAttention):

* ``S = Q K^T`` with the ``mma.sync`` m16n8k16 atom, ``Q`` and the key tile read from
  swizzled shared memory by ``ldmatrix`` (``Q`` once, before the loop);
* the **online softmax** on ``S``'s accumulators: each row's running maximum ``m`` and sum
  ``l``; the four threads that share a row reduce over it with two ``shfl_xor``; the
  output so far is rescaled by ``exp(m_old - m_new)``;
* ``O += P V`` with the same atom, ``P`` straight from registers: the accumulator layout of
  ``S`` holds, thread by thread, the elements that the A-operand layout of the second MMA
  wants (FA2's trick). ``P_FROM_S``, found below from the two partitions for every thread,
  maps each element of ``P`` to the element of ``S`` at the same (row, key): it is the
  identity, so ``P`` is ``S``'s registers converted to f16 in order. ``V``'s tile is the B
  operand read MN-major (``ldmatrix.trans``).

Everything the kernel needs to know about who holds what -- the rows a thread's accumulators
lie in (``ROW_OF_S``), the lanes that share a row, ``P_FROM_S`` -- is derived here from the
tiled MMAs' layouts, not written down.

A first step of the attention issue: one key tile in flight, compile-time shapes, head dim
64. Run it: ``python examples/flash_attention.py`` (on a GPU, or with
``NUMBA_ENABLE_CUDASIM=1``).
"""

import math

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda, float32
from layoutalg import (
    CopyAtom, Layout, make_identity_tensor, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma,
    size,
)
from layoutalg.tiled_copy import make_tiled_copy_impl

from codegen.plan import smem_layout

D, BM, BN = 64, 64, 64                      # head dim, query rows a CTA, keys a tile
ATOM = "SM80_16x8x16_F32F16F16F32_TN"
MMA_S = make_tiled_mma(ATOM, (4, 1, 1), (BM, BN, 16))   # S = Q K^T: (BM,BN), k over D; 128 threads
MMA_O = make_tiled_mma(ATOM, (4, 1, 1), (BM, D, 16))    # O += P V: (BM,D), k over the BN keys
THREADS = MMA_S.size

SQ = smem_layout("f16", "K", BM, D)         # (BM,D) -> smem, Sw<3,3,3>
SK = smem_layout("f16", "K", BN, D)         # (BN,D) -> smem: the keys, K-major for S's B operand
SV = smem_layout("f16", "MN", D, BN)        # (D,BN) -> smem: V^T, d contiguous, for O's B operand
G2S_K = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"),
                        Layout((16, 8), (8, 1)), Layout((1, 8)))    # (T16,T8) x (V1,V8) -> 16x64 a pass
G2S_V = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"),
                        Layout((8, 16), (1, 8)), Layout((8, 1)))    # (T8,T16) x (V8,V1) -> 64x16 of V^T a pass
S2R_Q = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), MMA_S)
S2R_K = make_tiled_copy_B(CopyAtom("SM75_U32x4_LDSM_N", "f16"), MMA_S)
S2R_V = make_tiled_copy_B(CopyAtom("SM75_U16x8_LDSM_T", "f16"), MMA_O)
R2G_O = make_tiled_copy_impl(CopyAtom("UniversalCopy_32", "f16"), MMA_O.get_layoutC_TV(), (BM, D))
LOG2E = 1.4426950408889634


# ---- what each thread holds, from the layouts ------------------------------------------------

def _coords(t, part, shape):
    """Thread ``t``'s fragment of an identity tensor: fragment index -> (row, col)."""
    frag = part(t, make_identity_tensor(shape))
    return [tuple(frag[i]) for i in range(size(frag.layout))]


def _derive():
    """``(ROW_OF_S, P_FROM_S, SHUFFLES)``, checked for every thread:

    * ``ROW_OF_S``: S fragment index -> which of the thread's two rows it lies in (0, 1);
    * ``P_FROM_S``: P fragment index (MMA_O's A operand, (MMA,MMA_M,MMA_K)) -> the S fragment
      index (MMA_S's accumulator, (MMA,MMA_M,MMA_N)) holding the same (row, key);
    * ``SHUFFLES``: the lane masks whose ``shfl_xor`` partners hold the other columns of a row.
    """
    s_part = lambda t, x: MMA_S.get_slice(t).partition_C(x)          # noqa: E731
    p_part = lambda t, x: MMA_O.get_slice(t).partition_A(x)          # noqa: E731
    o_part = lambda t, x: MMA_O.get_slice(t).partition_C(x)          # noqa: E731
    row_of = p_from = None
    holders = {}
    for t in range(THREADS):
        s = _coords(t, s_part, (BM, BN))
        rows = sorted({r for r, _ in s})
        assert len(rows) == 2, f"thread {t} holds rows {rows} of S, not two"
        mine = [rows.index(r) for r, _ in s]
        o_rows = sorted({r for r, _ in _coords(t, o_part, (BM, D))})
        assert o_rows == rows, f"thread {t}: rows of O {o_rows} are not those of S {rows}"
        where = {c: j for j, c in enumerate(s)}
        perm = [where[c] for c in _coords(t, p_part, (BM, BN))]     # P's (row, key) in S
        assert row_of in (None, mine) and p_from in (None, perm), f"thread {t} holds S differently"
        row_of, p_from = mine, perm
        for r in rows:
            holders.setdefault(r, set()).add(t)
    masks = (1, 2)
    for r, ts in holders.items():     # a row's threads: one lane and its shfl_xor partners
        t0 = min(ts)
        assert ts == {t0 ^ x for x in (0, 1, 2, 3)} and all(t // 32 == t0 // 32 for t in ts), (r, ts)
    n_s = size(MMA_S.get_slice(0).partition_C(make_identity_tensor((BM, BN))).layout)
    return Layout(len(row_of)), tuple(row_of), tuple(p_from), masks, n_s


_FRAG, ROW_OF_S, P_FROM_S, SHUFFLES, S_VALUES = _derive()
# the row slot as a layout (an affine map of the (MMA,MMA_M,MMA_N) index), checked element by element
ROW_OF_S_L = Layout(((2, 2), 1, BN // 8), ((0, 1), 0, 0))            # S index -> row slot
assert tuple(ROW_OF_S_L(i) for i in range(S_VALUES)) == ROW_OF_S, ROW_OF_S
# P's registers are S's, in the same order: the A layout of m16n8k16, k-block by k-block,
# lists a thread's (row, key) pairs as the accumulator layout of two m16n8 tiles does
assert P_FROM_S == tuple(range(S_VALUES)), P_FROM_S


def make_attention(BH, S, causal=False, scale=None):
    """The kernel for ``BH`` (batch x heads) sequences of ``S`` queries and keys (multiples of
    64), head dim 64; layouts are its constants."""
    if S % BM or S % BN:
        raise ValueError(f"make_attention: seq {S} is not a multiple of {BM}")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    qk = float32(scale * LOG2E)                 # scores in log2 units: exp(x) = 2**(x log2 e)
    L = Layout((BH * S, D), (D, 1))             # (row, d) -> offset of Q, K, V and O
    LT = Layout((D, BH * S), (1, D))            # (d, row) -> offset: V^T
    KT = S // BN

    @cuda.jit
    def attention(Q, K, V, O, LSE):
        tid = cuda.threadIdx.x
        qt, bh = cuda.blockIdx.x, cuda.blockIdx.y
        q0 = bh * (S // BM) + qt                          # the tile of rows of Q and O
        gQ = cute.local_tile(cute.make_tensor(Q, L), (BM, D), (q0, 0))       # (BM,D)
        gO = cute.local_tile(cute.make_tensor(O, L), (BM, D), (q0, 0))       # (BM,D)
        sQ = cute.make_shared_tensor(np.float16, SQ)
        sK = cute.make_shared_tensor(np.float16, SK)
        sV = cute.make_shared_tensor(np.float16, SV)
        gk = G2S_K.get_slice(tid)
        gv = G2S_V.get_slice(tid)
        cute.copy(G2S_K, gk.partition_S(gQ), gk.partition_D(sQ))
        cute.cp_async_fence()

        thr_s = MMA_S.get_slice(tid)
        thr_o = MMA_O.get_slice(tid)
        tSrQ = thr_s.partition_fragment_A(sQ)            # (MMA,MMA_M,MMA_K): all of D
        tSrK = thr_s.partition_fragment_B(sK)            # (MMA,MMA_N,MMA_K)
        tOrV = thr_o.partition_fragment_B(sV)            # (MMA,MMA_N,MMA_K): k over the keys
        tSrS = thr_s.partition_fragment_C(cute.make_identity_tensor((BM, BN)))   # (MMA,MMA_M,MMA_N)
        tScS = thr_s.partition_C(cute.make_identity_tensor((BM, BN)))            # -> (row, key) in the tile
        tOrO = thr_o.partition_fragment_C(gO)            # (MMA,MMA_M,MMA_N) of O
        tOrP = thr_o.partition_fragment_A(cute.make_identity_tensor((BM, BN)))   # P as O's A operand
        tOrP16 = cute.make_fragment_like(tOrP, np.float16)
        cute.clear(tOrO)
        # the thread's two rows (ROW_OF_S slots 0 and 1): running max (log2 units) and sum
        m0, m1 = float32(-math.inf), float32(-math.inf)
        l0, l1 = float32(0.0), float32(0.0)

        sq = S2R_Q.get_slice(tid)
        sk = S2R_K.get_slice(tid)
        sv = S2R_V.get_slice(tid)
        cute.cp_async_wait(0)
        cuda.syncthreads()
        cute.copy(S2R_Q, sq.partition_S(sQ), sq.retile_D(tSrQ))      # Q's fragments, once
        first = qt * BM                                               # this tile's first query
        for kt in range(KT if not causal else min(KT, (first + BM + BN - 1) // BN)):
            # ---- the key tile and its values into shared memory -----------------------------
            cuda.syncthreads()                                       # the last tile's reads are done
            kt_g = bh * KT + kt
            gKt = cute.local_tile(cute.make_tensor(K, L), (BN, D), (kt_g, 0))     # (BN,D): the keys
            gVt = cute.local_tile(cute.make_tensor(V, LT), (D, BN), (0, kt_g))    # (D,BN): their values^T
            cute.copy(G2S_K, gk.partition_S(gKt), gk.partition_D(sK))
            cute.copy(G2S_V, gv.partition_S(gVt), gv.partition_D(sV))
            cute.cp_async_fence()
            cute.cp_async_wait(0)
            cuda.syncthreads()
            # ---- S = Q K^T ------------------------------------------------------------------
            cute.copy(S2R_K, sk.partition_S(sK), sk.retile_D(tSrK))
            cute.clear(tSrS)
            for kb in range(D // 16):
                cute.gemm(MMA_S, tSrS, tSrQ[None, None, kb], tSrK[None, None, kb])
            # ---- online softmax over the thread's two rows ----------------------------------
            n0, n1 = m0, m1
            for i in range(S_VALUES):
                c = tScS[i]
                x = tSrS[i] * qk
                if causal and kt * BN + c[1] > first + c[0]:
                    x = float32(-math.inf)                     # a key after the query
                tSrS[i] = x
                if ROW_OF_S_L(i) == 0:
                    n0 = max(n0, x)
                else:
                    n1 = max(n1, x)
            for mask in SHUFFLES:                              # the row's other three threads
                n0 = max(n0, cuda.shfl_xor_sync(0xFFFFFFFF, n0, mask))
                n1 = max(n1, cuda.shfl_xor_sync(0xFFFFFFFF, n1, mask))
            # rows with no key yet (all masked) keep m = -inf: their scale and p are 0
            a0 = math.exp2(m0 - n0) if n0 != -math.inf else float32(0.0)
            a1 = math.exp2(m1 - n1) if n1 != -math.inf else float32(0.0)
            m0, m1 = n0, n1
            l0 *= a0
            l1 *= a1
            for i in range(S_VALUES):
                if ROW_OF_S_L(i) == 0:
                    p = math.exp2(tSrS[i] - m0) if m0 != -math.inf else float32(0.0)
                    l0 += p                                    # this thread's part of the row sum
                    tOrO[i] *= a0                              # O's rows are S's (checked above)
                else:
                    p = math.exp2(tSrS[i] - m1) if m1 != -math.inf else float32(0.0)
                    l1 += p
                    tOrO[i] *= a1
                tSrS[i] = p
            # ---- O += P V, P from S's registers --------------------------------------------
            cute.convert(tSrS, tOrP16, "f16")                  # P_FROM_S: element i of S is element i of P
            cute.copy(S2R_V, sv.partition_S(sV), sv.retile_D(tOrV))
            for kb in range(BN // 16):
                cute.gemm(MMA_O, tOrO, tOrP16[None, None, kb], tOrV[None, None, kb])
        # ---- O / l, the rows' log-sum-exp, out ------------------------------------------------
        for mask in SHUFFLES:
            l0 += cuda.shfl_xor_sync(0xFFFFFFFF, l0, mask)
            l1 += cuda.shfl_xor_sync(0xFFFFFFFF, l1, mask)
        for i in range(S_VALUES):
            tOrO[i] /= l0 if ROW_OF_S_L(i) == 0 else l1
        tOrO16 = cute.make_fragment_like(tOrO, np.float16)
        cute.copy(tOrO, tOrO16)
        r2g = R2G_O.get_slice(tid)
        cute.copy(R2G_O, r2g.retile_S(tOrO16), r2g.partition_D(gO))
        for i in range(S_VALUES):                              # column 0's owners write each row's
            c = tScS[i]
            if c[1] == 0:
                m, l_ = (m0, l0) if ROW_OF_S_L(i) == 0 else (m1, l1)
                LSE[q0 * BM + c[0]] = (m + math.log2(l_)) / float32(LOG2E)

    return attention


def attention(q, k, v, causal=False):
    """``q``, ``k``, ``v``: ``(BH, S, 64)`` float16 numpy arrays -> ``(O, lse)``."""
    BH, S, _ = q.shape
    kern = make_attention(BH, S, causal)
    Q, K, V = (np.ascontiguousarray(x).reshape(BH * S, D) for x in (q, k, v))
    O = np.zeros((BH * S, D), np.float16)
    lse = np.zeros(BH * S, np.float32)
    grid = (S // BM, BH)
    if cute.SIMULATED:
        kern[grid, THREADS](Q, K, V, O, lse)
    else:
        d = [cuda.to_device(x) for x in (Q, K, V, O, lse)]
        kern[grid, THREADS](*d)
        O, lse = d[3].copy_to_host(), d[4].copy_to_host()
    return O.reshape(BH, S, D), lse.reshape(BH, S)


def reference(q, k, v, causal=False):
    """float64 attention and log-sum-exp."""
    s = np.einsum("bqd,bkd->bqk", q.astype(np.float64), k.astype(np.float64)) / math.sqrt(D)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    lse = (m + np.log(e.sum(-1, keepdims=True)))[..., 0]
    return np.einsum("bqk,bkd->bqd", e / e.sum(-1, keepdims=True), v.astype(np.float64)), lse


def run(BH=2, S=128, causal=False, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((BH, S, D)).astype(np.float16) for _ in range(3))
    (o, lse), (ref, ref_lse) = attention(q, k, v, causal), reference(q, k, v, causal)
    return float(np.abs(o - ref).max()), float(np.abs(lse - ref_lse).max())


SIGNATURE = "void(float16[:, ::1], float16[:, ::1], float16[:, ::1], float16[:, ::1], float32[::1])"
KERNEL = make_attention(2, 128, causal=True)
TOLERANCE = 2e-3                    # f16 output of convex combinations of f16 values

if __name__ == "__main__":
    require_device("examples/flash_attention.py")
    err, err_lse = run(BH=1, S=128, causal=True)      # two query tiles; the second walks two key tiles
    print(f"flash_attention: 128 x 128 x 64, causal: max abs error {err:.2e} (log-sum-exp {err_lse:.2e})")
    assert err < TOLERANCE and err_lse < 1e-3
