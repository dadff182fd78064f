"""Attention's forward pass, ``codegen.attention(q, k, v, causal=False, scale=None)``: a
FlashAttention-2 kernel composed of :mod:`codegen.cute`'s pieces.

``q``: ``(batch, heads, seq_q, d)``, ``k`` and ``v``: ``(batch, kv_heads, seq_k, d)`` (grouped-query
attention: ``heads`` a multiple of ``kv_heads``, query head ``h`` reads kv head
``h // (heads // kv_heads)``), f16 or bf16, head dim 64 or 128, any sequence lengths and
strides with the head dim contiguous and the rows 16-byte aligned. Returns ``o`` (q's
shape and type) and, with ``return_lse``, the rows' log-sum-exp (float32, natural log).

The kernel is ``examples/flash_attention.py`` (tutorial step 7) with run-time shapes: each CTA
takes 64 queries of one head (4 warps), walks the keys 64 at a time (``S = Q K^T`` and ``O +=
P V`` on the m16n8k16 ``mma.sync`` atom, the online softmax on ``S``'s accumulators between
them), zero-fills the rows past ``seq_q`` and the keys past ``seq_k`` (``copy_if``), masks
those keys and, with ``causal``, the keys after each query (top-left aligned, as
``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``), and stores the rows
inside ``seq_q``. What each thread holds -- its two rows, the lanes that share a row, the
identity between ``S``'s accumulators and ``P``'s A-operand registers -- is derived from the
tiled MMAs' layouts and checked for every thread when a kernel is built.

The loads overlap the MMAs as in FlashAttention 2: a tile's values ``V`` are copied while its
scores ``S`` and their softmax are computed, and the next tile's keys while ``O += P V`` runs
(one buffer each for K and V). The ``mma.sync`` atom and cp.async: the wgmma/TMA kernel with a
producer warp (the speed targets of the attention issue) is still to come.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import cute
from .cute.objects import device, device_function, device_object, late_import
from .cute.params import KernelParams
from .errors import GemmError
from .simulation import simulating

(cuda, float32) = late_import("numba", "cuda", "float32")   # bound when a kernel is built

__all__ = ["attention", "AttentionKernel", "HEAD_DIMS"]

BM = BN = 64                  # queries a CTA, keys a tile
HEAD_DIMS = (64, 128)
#: CTAs an SM the registers must allow (launch bounds), by head dim: ptxas fits head dim 64 in
#: 144 registers without spills for three CTAs (1.17x at seq 8192 against one, non-causal, on
#: the H200), and head dim 128 for two (1.01-1.04x). benchmarks/attention_variants.py times them.
MIN_BLOCKS = {64: 3, 128: 2}
_ATOMS = {"f16": "SM80_16x8x16_F32F16F16F32_TN", "bf16": "SM80_16x8x16_F32BF16BF16F32_TN"}
_STORAGE = {"f16": np.float16, "bf16": np.uint16}           # bfloat16 as its bits
LOG2E = 1.4426950408889634


@device_function
def rows_below(tXc, pX, extent):
    """One flag a copy call of a ``(CPY,CPY_M,CPY_K)`` partition: the row of its first element
    (``tXc``: the partition of an identity tensor) below ``extent``."""
    for m in range(cute.size(pX, 0)):
        for k in range(cute.size(pX, 1)):
            c = tXc[0, m, k]
            pX[m, k] = c[0] < extent


@device_function
def columns_below(tXc, pX, extent):
    """As :func:`rows_below`, for the column."""
    for m in range(cute.size(pX, 0)):
        for k in range(cute.size(pX, 1)):
            c = tXc[0, m, k]
            pX[m, k] = c[1] < extent


def _coords(part, t, shape):
    """Thread ``t``'s fragment of an identity tensor under ``part``: index -> (row, col)."""
    from layoutalg import make_identity_tensor, size

    frag = part(t, make_identity_tensor(shape))
    return [tuple(frag[i]) for i in range(size(frag.layout))]


def derive_ownership(mma_s, mma_o, d):
    """What the softmax needs to know of the two tiled MMAs, checked for every thread:
    ``(slot_s, slot_o, shuffles)``. ``slot_s``, ``slot_o``: Layouts, S's (O's) fragment index
    -> which of the thread's two rows (0 or 1) the element lies in; ``shuffles``: the
    ``shfl_xor`` lane masks that reach the other threads of a row. Raises ``ValueError``
    where the layouts lack the structure the kernel relies on: two rows a thread, O's rows
    S's, P's A-operand registers S's accumulators in order, a row's threads a lane and its
    partners at 1, 2 and 3."""
    from layoutalg import Layout

    s_part = lambda t, x: mma_s.get_slice(t).partition_C(x)          # noqa: E731
    p_part = lambda t, x: mma_o.get_slice(t).partition_A(x)          # noqa: E731
    o_part = lambda t, x: mma_o.get_slice(t).partition_C(x)          # noqa: E731
    slot_s = Layout(((2, 2), 1, BN // 8), ((0, 1), 0, 0))              # (MMA,MMA_M,MMA_N) -> row slot
    slot_o = Layout(((2, 2), 1, d // 8), ((0, 1), 0, 0))
    holders = {}
    for t in range(mma_s.size):
        s = _coords(s_part, t, (BM, BN))
        o = _coords(o_part, t, (BM, d))
        rows = sorted({r for r, _ in s})
        if len(rows) != 2 or sorted({r for r, _ in o}) != rows:
            raise ValueError(f"derive_ownership: thread {t} holds rows {rows} of S and {sorted({r for r, _ in o})} "
                             f"of O; the softmax needs the same two")
        for frag, slot, name in ((s, slot_s, "S"), (o, slot_o, "O")):
            if [rows.index(r) for r, _ in frag] != [slot(i) for i in range(len(frag))]:
                raise ValueError(f"derive_ownership: thread {t}'s {name} fragment does not place its rows as "
                                 f"{slot} says")
        where = {c: j for j, c in enumerate(s)}
        if [where[c] for c in _coords(p_part, t, (BM, BN))] != list(range(len(s))):
            raise ValueError(f"derive_ownership: thread {t}'s P (the A operand of O's MMA) is not S's registers "
                             f"in order")
        for r in rows:
            holders.setdefault(r, set()).add(t)
    for r, ts in holders.items():
        t0 = min(ts)
        if ts != {t0 ^ x for x in (0, 1, 2, 3)}:
            raise ValueError(f"derive_ownership: row {r} is held by threads {sorted(ts)}, not a lane and its "
                             f"shfl_xor partners 1, 2, 3")
    return slot_s, slot_o, (1, 2)


#: The kernel's arguments, declared once (the ``def`` line's order, numba's signature, the
#: launch's slots): the addresses of q, k, v, o and the log-sum-exp (0: none); the sequence
#: lengths, the query heads and query heads a kv head; each array's element strides along
#: batch, head and sequence; the scale times log2(e).
ATTENTION_ARGS = KernelParams("AttentionArgs", tuple((n, "i64") for n in (
    "q", "k", "v", "o", "lse", "Sq", "Sk", "H", "ratio", "qsb", "qsh", "qss", "ksb", "ksh", "kss",
    "vsb", "vsh", "vss", "osb", "osh", "oss")) + (("qk", "f32"),))


@dataclass(frozen=True)
class AttentionKernel:
    """One compiled kernel: element type, head dim and causality (every shape and stride is
    a run-time argument)."""

    dtype: str
    d: int
    causal: bool
    kernel: object              # numba's dispatcher (the simulator runs it)
    threads: int
    min_blocks: int = 1         # launch bounds: CTAs an SM the registers must allow

    def __post_init__(self):
        import inspect

        if tuple(inspect.signature(self.kernel).parameters) != ATTENTION_ARGS.names:
            raise AssertionError("attention: the kernel's parameters are not ATTENTION_ARGS")

    @property
    def key(self):
        return self.dtype, self.d, self.causal, self.min_blocks

    @property
    def bounds(self):
        """Launch bounds: threads a CTA, and CTAs an SM that ptxas must fit in the registers."""
        return self.threads, self.min_blocks

    def ptx(self, cc):
        """The kernel's PTX for compute capability ``cc`` (codegen's short numba pipeline)."""
        from .numba_ptx import kernel_ptx

        return kernel_ptx(self.kernel.py_func, ATTENTION_ARGS.signature(), cc, self.bounds)

    def loaded(self):
        """Whether the kernel is loaded into the current context already."""
        from . import driver

        return (self.key, driver.ensure_context()) in _FUNCTIONS

    def function(self):
        """The kernel loaded into the current context (memoised): its cubin from the disk cache
        (keyed by this module's and the layout library's code, the key and the compilers), or
        compiled to PTX by numba and to a cubin by the driver, and cached."""
        import os

        from . import driver
        from . import kernel as K

        ctx = driver.ensure_context()
        hit = _FUNCTIONS.get((self.key, ctx))
        if hit is None:
            cc = driver.compute_capability()
            tag = K._tag((_code_digest(), self.key), cc, self.bounds)
            path = os.path.join(K.cache_dir(), f"image_{tag}.bin")
            try:
                with open(path, "rb") as f:
                    name, _, cubin = f.read().partition(b"\n")
                name = name.decode()
            except OSError:
                ptx = self.ptx(cc)
                name = driver.entry_name(ptx)
                cubin = driver.compile_image(ptx)
                K._write(path, name.encode() + b"\n" + cubin)
            hit = _FUNCTIONS[(self.key, ctx)] = driver.Function(cubin, name, 0)
        return hit


_FUNCTIONS = {}


def _code_digest():
    """A digest of the code a kernel is built from: this module and the layout library."""
    import hashlib
    import os

    import layoutalg

    if not _DIGEST:
        h = hashlib.sha256()
        paths = [__file__] + sorted(os.path.join(os.path.dirname(layoutalg.__file__), n)
                                    for n in os.listdir(os.path.dirname(layoutalg.__file__)) if n.endswith(".py"))
        for path in paths:
            with open(path, "rb") as f:
                h.update(f.read())
        _DIGEST.append(h.hexdigest()[:16])
    return _DIGEST[0]


_DIGEST = []


_KERNELS = {}


def attention_kernel(dtype, d, causal):
    """The kernel for ``dtype`` ("f16" or "bf16"), head dim ``d`` and ``causal``, built once."""
    key = (dtype, d, bool(causal))
    hit = _KERNELS.get(key)
    if hit is None:
        hit = _KERNELS[key] = _build(dtype, d, bool(causal))
    return hit


class RowStats(NamedTuple):
    """The online softmax's running statistics of a thread's two rows (its row slots 0 and
    1): the maxima of the scaled scores (log2 units) and the sums of their exponentials."""

    m0: float
    m1: float
    l0: float
    l1: float


@device_object
@dataclass(frozen=True)
class FlashAttention2:
    """The layouts of one kernel (element type, head dim ``d``, ``causal``) and its stages,
    each a device method over a CTA's tiles: 64 queries (``BM``) against 64 keys (``BN``) at a
    time, 4 warps.

    ``mma_s``: ``S = Q K^T``, (BM,BN) over ``d``; ``mma_o``: ``O += P V``, (BM,d) over the
    keys; ``g2s_r``: cp.async of rows of ``d`` (Q, K), ``g2s_v``: of V^T's columns;
    ``s2r_q``, ``s2r_k``, ``s2r_v``: ldmatrix into the MMAs' fragments; ``r2g_o``: O's
    accumulators to global memory, 32 bits a store; ``row_slot``, ``slot_o``, ``shuffles``:
    :func:`derive_ownership`; ``s_values``, ``o_values``: a thread's elements of S and O;
    ``pred_q``, ``pred_k``, ``pred_v``: ``(CPY_M,CPY_K)`` predicate layouts of the copies,
    ``pred_o``: ``(o_calls)``, one flag a 32-bit store of O (a pair of elements); ``sq``,
    ``sk``, ``sv``: the swizzled shared layouts of Q (BM,d), K (BN,d) and V^T (d,BN).
    """

    mma_s: object
    mma_o: object
    g2s_r: object
    g2s_v: object
    s2r_q: object
    s2r_k: object
    s2r_v: object
    r2g_o: object
    row_slot: object
    slot_o: object
    shuffles: tuple
    s_values: int
    o_values: int
    o_calls: int
    pred_q: object
    pred_k: object
    pred_v: object
    pred_o: object
    sq: object
    sk: object
    sv: object
    d: int
    causal: bool

    @device
    def start(self):
        """The statistics before the first key tile: maxima at -inf, sums at 0."""
        return RowStats(float32(-math.inf), float32(-math.inf), float32(0.0), float32(0.0))

    @device
    def load_q(self, tid, gQ, cQ, sQ, Sq):
        """Issue the copy of the CTA's queries into shared memory (cp.async, zeros past ``Sq``)."""
        gr = self.g2s_r.get_slice(tid)
        pQ = cute.make_fragment_like(self.pred_q, np.int8)
        rows_below(gr.partition_S(cQ), pQ, Sq)
        cute.copy_if(self.g2s_r, pQ, gr.partition_S(gQ), gr.partition_D(sQ))
        cute.cp_async_fence()

    @device
    def load_k(self, tKgK, tKsK, tKcK, pK, kt, Sk):
        """Issue the copy of key tile ``kt`` into shared memory, zeros past ``Sk``. ``tK*``: the
        copy's ``(CPY,CPY_M,CPY_K,kt)`` partitions of K (g: global, s: shared, c: identity)."""
        rows_below(tKcK[None, None, None, kt], pK, Sk)
        cute.copy_if(self.g2s_r, pK, tKgK[None, None, None, kt], tKsK)
        cute.cp_async_fence()

    @device
    def load_v(self, tVgV, tVsV, tVcV, pV, kt, Sk):
        """Issue the copy of key tile ``kt``'s values (V^T's columns) into shared memory, zeros
        past ``Sk``."""
        columns_below(tVcV[None, None, None, kt], pV, Sk)
        cute.copy_if(self.g2s_v, pV, tVgV[None, None, None, kt], tVsV)
        cute.cp_async_fence()

    @device
    def wait_loads(self):
        """Every copy issued has landed and every thread is past its reads of shared memory."""
        cute.cp_async_wait(0)
        cuda.syncthreads()

    @device
    def scores(self, tid, sK, tSrS, tSrQ, tSrK):
        """``S = Q K^T`` of the tile in shared memory, into the accumulators ``tSrS``."""
        sk = self.s2r_k.get_slice(tid)
        cute.copy(self.s2r_k, sk.partition_S(sK), sk.retile_D(tSrK))
        cute.clear(tSrS)
        for kb in range(self.d // 16):
            cute.gemm(self.mma_s, tSrS, tSrQ[None, None, kb], tSrK[None, None, kb])

    @device
    def online_softmax(self, tSrS, tScS, tOrO, st, kt, Sk, first, qk):
        """Scale and mask key tile ``kt``'s scores (keys past ``Sk``; with ``causal``, keys after
        the query), raise the rows' maxima (``st``, a :class:`RowStats`) across the row's
        threads, rescale ``O`` and the sums, and replace the scores by their exponentials
        ``P``; returns the new statistics. ``tScS``: (query, key) of each score in the tiles."""
        neg = float32(-math.inf)
        n0, n1 = st.m0, st.m1
        for i in range(self.s_values):
            c = tScS[i]
            key = kt * BN + c[1]
            x = tSrS[i] * qk
            if key >= Sk or (self.causal and key > first + c[0]):
                x = neg                                                    # past Sk, or after the query
            tSrS[i] = x
            if self.row_slot(i) == 0:
                n0 = max(n0, x)
            else:
                n1 = max(n1, x)
        for mask in self.shuffles:                                         # the row's other three threads
            n0 = max(n0, cuda.shfl_xor_sync(0xFFFFFFFF, n0, mask))
            n1 = max(n1, cuda.shfl_xor_sync(0xFFFFFFFF, n1, mask))
        a0 = math.exp2(st.m0 - n0) if n0 != neg else float32(0.0)         # rows with no key yet stay at 0
        a1 = math.exp2(st.m1 - n1) if n1 != neg else float32(0.0)
        l0, l1 = st.l0 * a0, st.l1 * a1
        for i in range(self.s_values):
            if self.row_slot(i) == 0:
                p = math.exp2(tSrS[i] - n0) if n0 != neg else float32(0.0)
                l0 += p
            else:
                p = math.exp2(tSrS[i] - n1) if n1 != neg else float32(0.0)
                l1 += p
            tSrS[i] = p
        for i in range(self.o_values):                                     # O's rows are S's (checked)
            tOrO[i] *= a0 if self.slot_o(i) == 0 else a1
        return RowStats(n0, n1, l0, l1)

    @device
    def accumulate(self, tid, sV, tOrO, tOrP, tOrV):
        """``O += P V``: ``P`` (``tOrP``, the A operand, S's registers converted) times the
        values in shared memory."""
        sv = self.s2r_v.get_slice(tid)
        cute.copy(self.s2r_v, sv.partition_S(sV), sv.retile_D(tOrV))
        for kb in range(BN // 16):
            cute.gemm(self.mma_o, tOrO, tOrP[None, None, kb], tOrV[None, None, kb])

    @device
    def normalize(self, tOrO, st):
        """``O / l`` with the rows' sums added up across their threads; returns the statistics
        with the whole rows' sums."""
        l0, l1 = st.l0, st.l1
        for mask in self.shuffles:
            l0 += cuda.shfl_xor_sync(0xFFFFFFFF, l0, mask)
            l1 += cuda.shfl_xor_sync(0xFFFFFFFF, l1, mask)
        r0 = float32(1.0) / l0 if l0 > 0 else float32(0.0)
        r1 = float32(1.0) / l1 if l1 > 0 else float32(0.0)
        for i in range(self.o_values):
            tOrO[i] *= r0 if self.slot_o(i) == 0 else r1
        return RowStats(st.m0, st.m1, l0, l1)

    @device
    def store_o(self, tid, tOrO16, cQ, gO, Sq):
        """The output's rows inside ``Sq``, 32 bits a store, from ``O``'s converted accumulators."""
        r2g = self.r2g_o.get_slice(tid)
        tDcO = r2g.partition_D(cQ)                                         # (CPY,CPY_M,CPY_N) -> (query, d)
        pO = cute.make_fragment_like(self.pred_o, np.int8)
        for g in range(self.o_calls):
            pO[g] = tDcO[2 * g][0] < Sq
        cute.copy_if(self.r2g_o, pO, r2g.retile_S(tOrO16), r2g.partition_D(gO))

    @device
    def store_lse(self, mL, tScS, st, first, Sq):
        """Each row's log-sum-exp (natural log) into ``mL``, by the threads holding column 0."""
        for i in range(self.s_values):
            c = tScS[i]
            if c[1] == 0 and first + c[0] < Sq:
                m, l_ = (st.m0, st.l0) if self.row_slot(i) == 0 else (st.m1, st.l1)
                mL[first + c[0]] = (m + math.log2(l_)) / float32(LOG2E)


def make_flash_attention2(dtype, D, causal):
    """The :class:`FlashAttention2` of ``dtype`` ("f16" or "bf16"), head dim ``D``, ``causal``:
    every layout derived from the m16n8k16 atom and the copy atoms, ownership checked."""
    from layoutalg import (
        CopyAtom, Layout, make_identity_tensor, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B,
        make_tiled_mma, size,
    )
    from layoutalg.tiled_copy import make_tiled_copy_impl

    from .plan import smem_layout

    mma_s = make_tiled_mma(_ATOMS[dtype], (4, 1, 1), (BM, BN, 16))    # S = Q K^T: (BM,BN), k over D
    mma_o = make_tiled_mma(_ATOMS[dtype], (4, 1, 1), (BM, D, 16))     # O += P V: (BM,D), k over the keys
    cp = CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", dtype)
    g2s_r = make_tiled_copy(cp, Layout((128 * 8 // D, D // 8), (D // 8, 1)), Layout((1, 8)))   # rows of d, 16 B a thread
    g2s_v = make_tiled_copy(cp, Layout((D // 8, 1024 // D), (1, D // 8)), Layout((8, 1)))     # columns of V^T
    r2g_o = make_tiled_copy_impl(CopyAtom("UniversalCopy_32", dtype), mma_o.get_layoutC_TV(), (BM, D))
    row_slot, slot_o, shuffles = derive_ownership(mma_s, mma_o, D)

    def values(part, shape):                # a thread's elements of a partition of a (shape) tile
        return size(part(make_identity_tensor(shape)).layout)

    def pred(copy, shape):                  # (CPY_M,CPY_K): one flag a copy call
        return Layout(copy.get_slice(0).partition_S(make_identity_tensor(shape)).layout.shape[1:])

    o_calls = values(r2g_o.get_slice(0).partition_D, (BM, D)) // 2
    return FlashAttention2(
        mma_s, mma_o, g2s_r, g2s_v,
        make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", dtype), mma_s),
        make_tiled_copy_B(CopyAtom("SM75_U32x4_LDSM_N", dtype), mma_s),
        make_tiled_copy_B(CopyAtom("SM75_U16x8_LDSM_T", dtype), mma_o),
        r2g_o, row_slot, slot_o, shuffles,
        values(mma_s.get_slice(0).partition_C, (BM, BN)), values(mma_o.get_slice(0).partition_C, (BM, D)),
        o_calls, pred(g2s_r, (BM, D)), pred(g2s_r, (BN, D)), pred(g2s_v, (D, BN)), Layout(o_calls),
        smem_layout(dtype, "K", BM, D), smem_layout(dtype, "K", BN, D), smem_layout(dtype, "MN", D, BN), D, causal)


def _build(dtype, D, causal):
    cute.activate()
    FA = make_flash_attention2(dtype, D, causal)
    ELEM = _STORAGE[dtype]
    CVT = dtype                                                        # cute.convert's format of P and O

    @cuda.jit
    def attention_fwd(q, k, v, o, lse, Sq, Sk, H, ratio, qsb, qsh, qss, ksb, ksh, kss, vsb, vsh, vss,
                      osb, osh, oss, qk):
        tid = cuda.threadIdx.x
        n_qt = (Sq + BM - 1) // BM
        qt = cuda.blockIdx.x % n_qt                                      # the tile of queries
        bh = cuda.blockIdx.x // n_qt                                     # batch x heads
        b = bh // H
        h = bh - b * H
        hk = h // ratio                                                  # the kv head (grouped-query)
        mQ = cute.make_tensor(cute.make_ptr(ELEM, q + 2 * (b * qsb + h * qsh), 16),
                              cute.make_layout((Sq, D), (cute.assume(qss, 8), 1)))        # (Sq,D) -> q
        mK = cute.make_tensor(cute.make_ptr(ELEM, k + 2 * (b * ksb + hk * ksh), 16),
                              cute.make_layout((Sk, D), (cute.assume(kss, 8), 1)))        # (Sk,D) -> k
        mV = cute.make_tensor(cute.make_ptr(ELEM, v + 2 * (b * vsb + hk * vsh), 16),
                              cute.make_layout((D, Sk), (1, cute.assume(vss, 8))))        # (D,Sk) -> v: V^T
        mO = cute.make_tensor(cute.make_ptr(ELEM, o + 2 * (b * osb + h * osh), 16),
                              cute.make_layout((Sq, D), (cute.assume(oss, 2), 1)))        # (Sq,D) -> o
        gQ = cute.local_tile(mQ, (BM, D), (qt, 0))                                         # (BM,D)
        cQ = cute.local_tile(cute.make_identity_tensor((Sq, D)), (BM, D), (qt, 0))         # -> (query, d)
        gO = cute.local_tile(mO, (BM, D), (qt, 0))
        gK = cute.local_tile(mK, (BN, D), (None, 0))                                       # (BN,D,kt)
        cK = cute.local_tile(cute.make_identity_tensor((Sk, D)), (BN, D), (None, 0))       # -> (key, d)
        gV = cute.local_tile(mV, (D, BN), (0, None))                                       # (D,BN,kt)
        cV = cute.local_tile(cute.make_identity_tensor((D, Sk)), (D, BN), (0, None))       # -> (d, key)
        sQ = cute.make_shared_tensor(ELEM, FA.sq)                        # (BM,D) -> smem
        sK = cute.make_shared_tensor(ELEM, FA.sk)                        # (BN,D) -> smem
        sV = cute.make_shared_tensor(ELEM, FA.sv)                        # (D,BN) -> smem: V^T, d contiguous
        gr = FA.g2s_r.get_slice(tid)
        gv = FA.g2s_v.get_slice(tid)
        tKgK, tKsK, tKcK = gr.partition_S(gK), gr.partition_D(sK), gr.partition_S(cK)   # (CPY,CPY_M,CPY_K,kt)
        tVgV, tVsV, tVcV = gv.partition_S(gV), gv.partition_D(sV), gv.partition_S(cV)
        pK = cute.make_fragment_like(FA.pred_k, np.int8)
        pV = cute.make_fragment_like(FA.pred_v, np.int8)
        thr_s = FA.mma_s.get_slice(tid)
        thr_o = FA.mma_o.get_slice(tid)
        tSrQ = thr_s.partition_fragment_A(sQ)                              # (MMA,MMA_M,MMA_K): all of D
        tSrK = thr_s.partition_fragment_B(sK)                              # (MMA,MMA_N,MMA_K)
        tOrV = thr_o.partition_fragment_B(sV)                              # (MMA,MMA_N,MMA_K): k over keys
        tSrS = thr_s.partition_fragment_C(cute.make_identity_tensor((BM, BN)))   # (MMA,MMA_M,MMA_N)
        tScS = thr_s.partition_C(cute.make_identity_tensor((BM, BN)))     # -> (query, key) in the tiles
        tOrO = thr_o.partition_fragment_C(gO)                              # (MMA,MMA_M,MMA_N)
        tOrP = cute.make_fragment_like(thr_o.partition_fragment_A(cute.make_identity_tensor((BM, BN))), ELEM)
        cute.clear(tOrO)
        st = FA.start()
        first = qt * BM                                                    # the tile's first query
        n_kt = (Sk + BN - 1) // BN
        if causal:
            n_kt = min(n_kt, (first + BM + BN - 1) // BN)
        FA.load_q(tid, gQ, cQ, sQ, Sq)
        FA.load_k(tKgK, tKsK, tKcK, pK, 0, Sk)
        FA.wait_loads()
        sq = FA.s2r_q.get_slice(tid)
        cute.copy(FA.s2r_q, sq.partition_S(sQ), sq.retile_D(tSrQ))       # Q's fragments, once
        for kt in range(n_kt):                 # K(kt) is in shared memory; V(kt) and K(kt+1) overlap MMAs
            FA.load_v(tVgV, tVsV, tVcV, pV, kt, Sk)                       # V(kt) lands during S and softmax
            FA.scores(tid, sK, tSrS, tSrQ, tSrK)                           # S = Q K^T
            st = FA.online_softmax(tSrS, tScS, tOrO, st, kt, Sk, first, qk)
            FA.wait_loads()                                                # V(kt) in; K(kt) read by all
            if kt + 1 < n_kt:
                FA.load_k(tKgK, tKsK, tKcK, pK, kt + 1, Sk)                # K(kt+1) lands during O += P V
            cute.convert(tSrS, tOrP, CVT)                                  # P: S's registers, as the A operand
            FA.accumulate(tid, sV, tOrO, tOrP, tOrV)                      # O += P V
            FA.wait_loads()                                                # K(kt+1) in; V(kt) read by all
        st = FA.normalize(tOrO, st)
        tOrO16 = cute.make_fragment_like(tOrO, ELEM)
        cute.convert(tOrO, tOrO16, CVT)
        FA.store_o(tid, tOrO16, cQ, gO, Sq)
        if lse != 0:
            FA.store_lse(cute.make_tensor(cute.make_ptr(np.float32, lse + 4 * bh * Sq, 4),
                                          cute.make_layout((Sq,), (1,))), tScS, st, first, Sq)   # (Sq) -> lse

    return AttentionKernel(dtype, D, causal, attention_fwd, FA.mma_s.size, MIN_BLOCKS[D])


def _describe4(x, name):
    from .host import _describe

    return _describe(x, "attention", name, ("f16", "bf16"), ranks=(4,))


def attention(q, k, v, causal=False, scale=None, return_lse=False, stream=None):
    """``softmax(q k^T * scale [causal mask]) v`` per batch and head (module docstring);
    ``scale`` defaults to ``1/sqrt(d)``. Arrays: torch CUDA tensors, CuPy arrays or numba
    device arrays (numpy arrays in numba's simulator, or copied to the GPU and back). Returns
    ``o``, or ``(o, lse)`` with ``return_lse``."""
    op = "attention"
    xs = [_describe4(x, n) for x, n in ((q, "q"), (k, "k"), (v, "v"))]
    dq, dk, dv = xs
    if len({x.kind for x in xs}) != 1 or len({str(x.device) for x in xs}) != 1:
        raise GemmError(f"{op}: q, k and v must be arrays of one kind on one device, got "
                        + ", ".join(f"{n} {x.kind} on {x.device}" for n, x in zip("qkv", xs)))
    if len({x.etype.name for x in xs}) != 1:
        raise GemmError(f"{op}: q, k and v must have one dtype (f16 or bf16), got "
                        + ", ".join(x.etype.name for x in xs))
    B, H, Sq, D = dq.shape
    Bk, Hk, Sk, Dk = dk.shape
    if dv.shape != dk.shape or Bk != B or Dk != D:
        raise GemmError(f"{op}: q {dq.shape}, k {dk.shape}, v {dv.shape} are not (batch, heads, seq_q, d), "
                        f"(batch, kv_heads, seq_k, d) and the same for v")
    if D not in HEAD_DIMS:
        raise GemmError(f"{op}: head dim {D} is not one of {', '.join(map(str, HEAD_DIMS))}")
    if Hk == 0 or H % Hk:
        raise GemmError(f"{op}: {H} query heads do not divide into {Hk} kv heads (grouped-query attention needs "
                        f"heads a multiple of kv_heads)")
    if 0 in (B, H, Sq):
        return (_new(q, dq, (B, H, Sq, D)), _new_lse(q, dq, (B, H, Sq))) if return_lse else _new(q, dq, (B, H, Sq, D))
    if Sk == 0:
        raise GemmError(f"{op}: k and v have no keys (seq_k 0): the softmax of nothing is undefined")
    for x, n in zip(xs, "qkv"):
        steps = [st for st, e in zip(x.strides[:3], x.shape[:3]) if e > 1]
        if x.strides[3] != 1 or any(st % 8 for st in steps) or (x.kind != "numpy" and x.ptr % 16):
            raise GemmError(f"{op}: {n} must have a contiguous head dim and every row 16-byte aligned (batch, "
                            f"head and sequence strides multiples of 8 elements, a 16-byte aligned address): got "
                            f"strides {x.strides}")
    if dq.kind == "torch" and any(getattr(t, "requires_grad", False) for t in (q, k, v)):
        import torch

        if torch.is_grad_enabled():
            raise GemmError(f"{op}: q, k or v requires a gradient, and this forward pass has no backward yet; call "
                            f"it under torch.no_grad() or on detached tensors")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    kern = attention_kernel(dq.etype.name, D, causal)
    o = _new(q, dq, (B, H, Sq, D))
    lse = _new_lse(q, dq, (B, H, Sq)) if return_lse else None
    _launch(kern, (q, k, v, o, lse), xs, (B, H, Sq, Sk, Hk), scale, stream)
    return (o, lse) if return_lse else o


def _new(like, d, shape):
    from .host import _new_out

    if d.kind == "numpy":
        return np.zeros(shape, like.dtype)        # (bfloat16: ml_dtypes' type, as the caller's)
    return _new_out(like, d.kind, shape, d.etype)


def _new_lse(like, d, shape):
    from layoutalg.element_types import element_type

    from .host import _new_out

    return _new_out(like, d.kind, shape, element_type("f32"))


def _launch(kern, arrays, xs, dims, scale, stream):
    """Launch ``kern``: one CTA a tile of 64 queries of each batch and head."""
    B, H, Sq, Sk, Hk = dims
    q, k, v, o, lse = arrays
    dq, dk, dv = xs
    do = _describe4(o, "o")
    grid = (Sq + BM - 1) // BM * B * H
    slots = ATTENTION_ARGS.slots()
    slots.set(Sq=Sq, Sk=Sk, H=H, ratio=H // Hk, qk=scale * LOG2E)
    if dq.kind == "numpy":
        arrays = [np.ascontiguousarray(x) if i < 3 else x for i, x in enumerate(arrays)]
        _set_strides(slots, [_estrides(x) for x in arrays[:3]] + [do.strides])
        if simulating():
            from .intrinsics.sim import register_global

            _set_addresses(slots, [register_global(x) if x is not None else 0 for x in arrays])
            kern.kernel[grid, kern.threads](*slots.python_values())
            return
        from numba import cuda

        dev = [cuda.to_device(x) if x is not None else None for x in arrays]
        _set_addresses(slots, [int(d.__cuda_array_interface__["data"][0]) if d is not None else 0 for d in dev])
        kern.function().launch(grid, kern.threads, 0, 0, slots.pointers)
        dev[3].copy_to_host(o)
        if lse is not None:
            dev[4].copy_to_host(lse)
        return
    from .host import _stream_handle

    _set_strides(slots, [x.strides for x in (dq, dk, dv, do)])
    _set_addresses(slots, [x.ptr for x in (dq, dk, dv, do)] + [_describe_lse(lse)])
    with _on_device(dq):                      # the arrays' device current: its context, its stream
        handle = _stream_handle(stream, dq.kind, dq.device)
        if not kern.loaded() and dq.kind == "torch":
            from .host import _refuse_in_capture

            _refuse_in_capture(q)             # a first call compiles and loads: not in a graph capture
        kern.function().launch(grid, kern.threads, 0, handle, slots.pointers)


def _on_device(d):
    """The device of a torch or CuPy array made current for the duration."""
    import contextlib

    if d.kind == "torch":
        import torch

        return torch.cuda.device(d.device)
    if d.kind == "cupy":
        import cupy

        return cupy.cuda.Device(d.device)
    return contextlib.nullcontext()


def _set_strides(slots, strides):
    """Each array's element strides along batch, head and sequence into the kernel's slots."""
    for name, st in zip("qkvo", strides):
        slots.set(**{f"{name}sb": st[0], f"{name}sh": st[1], f"{name}ss": st[2]})


def _set_addresses(slots, addrs):
    slots.set(**dict(zip(("q", "k", "v", "o", "lse"), addrs)))


def _estrides(x):
    return tuple(int(s) // x.itemsize for s in x.strides)


def _describe_lse(lse):
    if lse is None:
        return 0
    if type(lse).__module__.startswith("torch"):
        return int(lse.data_ptr())
    if type(lse).__module__.startswith("cupy"):
        return int(lse.data.ptr)
    return int(lse.__cuda_array_interface__["data"][0])
