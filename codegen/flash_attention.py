"""Attention's forward pass, ``codegen.attention(q, k, v, causal=False, scale=None)``: a
FlashAttention-2 kernel composed of :mod:`codegen.cute`'s pieces.

``q``: ``(batch, heads, seq_q, d)``, ``k`` and ``v``: ``(batch, kv_heads, seq_k, d)`` (grouped-query
attention: ``heads`` a multiple of ``kv_heads``, query head ``h`` reads kv head
``h // (heads // kv_heads)``), f16 or bf16, head dim 64 or 128, any sequence lengths and
strides with the head dim contiguous and the rows 16-byte aligned. Returns ``o`` (q's
shape and type) and, with ``return_lse``, the rows' log-sum-exp (float32, natural log).

The kernel is ``examples/flash_attention.py`` (tutorial step 7) with run-time shapes: each CTA
takes ``BM`` queries of one head (:data:`BLOCK_M`: 64, or 128 as FlashAttention 2 takes them
at head dim 128; 4 warps either way), walks the keys 64 at a time (``S = Q K^T`` and ``O +=
P V`` on the m16n8k16 ``mma.sync`` atom, the online softmax on ``S``'s accumulators between
them), zero-fills the rows past ``seq_q`` and the keys past ``seq_k`` (``copy_if``), masks
those keys and, with ``causal``, the keys after each query (top-left aligned, as
``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``), and stores the rows
inside ``seq_q``. What each thread holds -- its rows (two at BM = 64, four at 128), the lanes
that share a row, the identity between ``S``'s accumulators and ``P``'s A-operand registers
-- is derived from the tiled MMAs' layouts and checked for every thread when a kernel is built.

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

BN = 64                       # keys a tile
HEAD_DIMS = (64, 128)
#: Queries a CTA (BM), by head dim: 64, or 128 as FlashAttention 2's kBlockM (the same 4 warps,
#: the tiled MMA's 64 rows repeated twice along M: four rows of S and O a thread, and each K and
#: V fragment read from shared memory serves both row blocks). On the H200 at seq 8192
#: (benchmarks/attention_variants.py, 2026-11-29): head dim 128 at BM = 128 runs 1.10x (1.15x
#: causal) BM = 64, spills and all; head dim 64 at BM = 128, 0.98x (0.94x causal) with two CTAs
#: an SM and 1.01x (0.97x) with three.
BLOCK_M = {64: 64, 128: 128}
#: CTAs an SM the registers must allow (launch bounds), by (head dim, BM): at BM = 64 ptxas fits
#: head dim 64 in 144 registers without spills for three CTAs (1.17x at seq 8192 against one,
#: non-causal, on the H200), and head dim 128 for two (1.01-1.04x). At BM = 128 (ptxas, sm_90),
#: head dim 64 spills about 90 bytes for three CTAs (168 registers) and fits two (about 230);
#: head dim 128 takes all 255 registers and spills about 100 bytes at any bound (a dozen 4-byte
#: local loads and stores a key tile, loop invariants and row sums). Timed by
#: benchmarks/attention_variants.py.
MIN_BLOCKS = {(64, 64): 3, (128, 64): 2, (64, 128): 2, (128, 128): 2}
#: How the MMAs read their fragments from shared memory, by BM: False, Q's once and K's and V's a
#: whole tile before their MMAs (the registers allow it at BM = 64); True, Q's, K's and V's a
#: k-block (16 of d, or of the keys) at a time before its MMAs, FlashAttention 2's way (its
#: Is_Q_in_regs = false), which BM = 128 at head dim 128 needs to fit 255 registers.
KBLOCK_LOADS = {64: False, 128: True}
#: The longest loop over a fragment that NVVM unrolls fully (one of 128, O's at BM = 128 and head
#: dim 128, it does not, and O goes to local memory): longer loops are nested, at most UNROLL inside.
UNROLL = 64
SMEM_STATIC = 48 * 1024       # static shared memory's limit: above it the tiles are dynamic shared memory
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


def _tv_coords(tv, rows):
    """``(row, col)`` of every ``(thread, value)`` of ``tv`` (``(thread, value) -> m + rows n``,
    a tiled MMA's whole-tile TV layout over a column-major tile of ``rows`` rows): two int64
    arrays ``(threads, values)``, each thread's values in the order of its partition
    (``tv_C`` agrees with ``get_slice(t).partition_C`` at every thread, and ``tv_A`` with
    ``partition_A``: ``tests/test_tiled_mma.py``)."""
    from layoutalg import size
    from layoutalg.numpy_eval import eval_layout

    nt, nv = size(tv[0]), size(tv[1])
    idx = eval_layout(tv, np.arange(nt * nv)).reshape(nv, nt).T        # colexicographic: thread fastest
    return idx % rows, idx // rows


def _block(a, tv, m):
    """Of ``a`` (``(threads, values)`` by :func:`_tv_coords` of ``tv``, whose value mode is
    ``(FrgV,(RestM,RestK))``), each thread's values of row block ``m``: the ``[_, m, _]``
    slice of its fragment, in its order (colexicographic: FrgV fastest)."""
    from layoutalg import size

    frg, rest_m = size(tv[1][0]), size(tv[1][1][0])
    return a.reshape(a.shape[0], -1, rest_m, frg)[:, :, m, :].reshape(a.shape[0], -1)   # (T,RestK,RestM,FrgV)


def _shuffle_masks(tv_rows):
    """The ``shfl_xor`` lane masks that reach the other threads of a row: the bits of the
    thread modes that ``tv_rows`` (thread -> row) sends to 0 (its nullspace)."""
    from layoutalg import nullspace
    from layoutalg.inttuple import flat_tuple

    null = nullspace(tv_rows)                                           # (partners) -> thread offset
    masks = []
    for s, p in zip(flat_tuple(null.shape), flat_tuple(null.stride)):
        if s == 1:
            continue
        if s & (s - 1) or p & (p - 1) or s * p > 32:
            raise ValueError(f"derive_ownership: a row's threads ({null}) are not lanes of one warp that shfl_xor "
                             f"reaches")
        masks += [p << j for j in range(s.bit_length() - 1)]
    return tuple(masks)


def derive_ownership(mma_s, mma_o, bm, d, bn=BN):
    """What the softmax needs to know of the two tiled MMAs over a tile of ``bm`` queries,
    derived with the algebra and checked for every thread: ``(slot_s, slot_o, shuffles)``.

    ``slot_s``, ``slot_o``: Layouts ``(MMA,MMA_M,MMA_N) -> row slot``, which of the thread's
    rows (0 to ``cosize(slot_s) - 1``: 2 at BM = 64, 4 at 128, in ascending order) an element
    of S (of O) lies in: the value mode of the tiled MMA's ``(thread,value) -> row`` layout
    (``tv_C`` of the row projection ``(BM,BN):(1,0)``), made compact. ``shuffles``: the
    ``shfl_xor`` lane masks that reach the other threads of a row, the bits of the thread
    mode's nullspace. Raises ``ValueError`` where the layouts lack the structure the kernel
    relies on: the same rows a thread in S and O, placed as the slots say; a slot's first
    element (``right_inverse(slot_s)``) its leftmost in the row; P's A-operand registers S's
    accumulators in order, row block by row block (``P[_,m,_]`` is ``S[_,m,_]``, FlashAttention
    2's ``convert_layout_acc_Aregs``); a row's threads a lane and its ``shfl_xor`` partners.
    ``bn``: keys a tile (S's columns)."""
    from layoutalg import Layout, cosize, make_layout, make_layout_like, right_inverse, size

    tv_s = mma_s.tv_C(Layout((bm, bn), (1, 0)))                        # (thread,(MMA,(MMA_M,MMA_N))) -> row
    tv_o = mma_o.tv_C(Layout((bm, d), (1, 0)))                         # (thread,(MMA,(MMA_M,MMA_N))) -> row
    slot_s, slot_o = (make_layout_like(make_layout(v[0], v[1][0], v[1][1]))   # (MMA,MMA_M,MMA_N) -> row slot
                      for v in (tv_s[1], tv_o[1]))
    shuffles = _shuffle_masks(tv_s[0])                                 # thread (lane) -> row: its nullspace
    first = right_inverse(slot_s)                                      # (ROWS) -> S index: a row's leftmost
    # every thread's elements at once, from the whole-tile TV layouts (column-major tiles)
    at_s = mma_s.tv_C(Layout((bm, bn)))                                # (thread,(MMA,(MMA_M,MMA_N))) -> m + bm n
    at_p = mma_o.tv_A(Layout((bm, bn)))                                # (thread,(MMA,(MMA_M,MMA_K))) -> m + bm k
    s_r, s_c = _tv_coords(at_s, bm)                                    # (T,V) -> row, key of S's accumulators
    p_r, p_c = _tv_coords(at_p, bm)                                    # (T,V) -> row, key of P's registers
    o_r, _ = _tv_coords(mma_o.tv_C(Layout((bm, d))), bm)               # (T,V) -> row of O's accumulators
    slot_vals = {id(x): np.array([x(i) for i in range(size(x))]) for x in (slot_s, slot_o, first)}
    holders = {}
    for t in range(mma_s.size):
        rows, o_rows = np.unique(s_r[t]), np.unique(o_r[t])
        if len(rows) != cosize(slot_s) or o_rows.tolist() != rows.tolist():
            raise ValueError(f"derive_ownership: thread {t} holds rows {rows.tolist()} of S and {o_rows.tolist()} of "
                             f"O; the softmax needs the same {cosize(slot_s)} rows")
        for r, slot, name in ((s_r[t], slot_s, "S"), (o_r[t], slot_o, "O")):
            if len(r) != size(slot) or not np.array_equal(np.searchsorted(rows, r), slot_vals[id(slot)]):
                raise ValueError(f"derive_ownership: thread {t}'s {name} fragment does not place its rows as "
                                 f"{slot} says")
        leftmost = [s_c[t][s_r[t] == r].min() for r in rows]           # each row's first key
        firsts = slot_vals[id(first)][:len(rows)]
        if s_r[t][firsts].tolist() != rows.tolist() or s_c[t][firsts].tolist() != leftmost:
            raise ValueError(f"derive_ownership: thread {t}'s leftmost element of a row is not {first} of the slot")
        for r in rows.tolist():
            holders.setdefault(r, set()).add(t)
    for m in range(slot_s.shape[1]):                                    # each row block: P[_,m,_] is S[_,m,_]
        same = (_block(p_r, at_p, m) == _block(s_r, at_s, m)) & (_block(p_c, at_p, m) == _block(s_c, at_s, m))
        if not same.all():
            t = int(np.argmin(same.all(axis=1)))
            raise ValueError(f"derive_ownership: thread {t}'s P (the A operand of O's MMA) is not S's registers "
                             f"in order (row block {m})")
    for r, ts in holders.items():
        t0 = min(ts)
        if ts != {t0 ^ x for x in _xor_span(shuffles)}:
            raise ValueError(f"derive_ownership: row {r} is held by threads {sorted(ts)}, not a lane and its "
                             f"shfl_xor partners {shuffles}")
    return slot_s, slot_o, shuffles


def _xor_span(masks):
    """Every xor of a subset of ``masks``."""
    span = {0}
    for m in masks:
        span |= {x ^ m for x in span}
    return span


#: The kernel's arguments, declared once (the ``def`` line's order, numba's signature, the
#: launch's slots): the addresses of q, k, v, o and the log-sum-exp (0: none); the sequence
#: lengths, the query heads and query heads a kv head; each array's element strides along
#: batch, head and sequence; the scale times log2(e).
ATTENTION_ARGS = KernelParams("AttentionArgs", tuple((n, "i64") for n in (
    "q", "k", "v", "o", "lse", "Sq", "Sk", "H", "ratio", "qsb", "qsh", "qss", "ksb", "ksh", "kss",
    "vsb", "vsh", "vss", "osb", "osh", "oss")) + (("qk", "f32"),))


@dataclass(frozen=True)
class AttentionKernel:
    """One compiled kernel: element type, head dim, causality and queries a CTA (every shape
    and stride is a run-time argument)."""

    dtype: str
    d: int
    causal: bool
    bm: int                     # queries a CTA (the grid: one CTA a tile of bm queries)
    kernel: object              # numba's dispatcher (the simulator runs it)
    threads: int
    min_blocks: int = 1         # launch bounds: CTAs an SM the registers must allow
    smem: int = 0               # bytes of dynamic shared memory (0: the tiles are static, 48 KiB at most)
    args: object = None         # the kernel's KernelParams (None: ATTENTION_ARGS)
    kind: str = "sm80"          # "sm80": this module's mma.sync kernel; "sm90": codegen.attention_sm90's (and
                                # "sm90-combine" its merge of split tiles' parts)
    pieces: object = None       # the kernel's device objects (the Hopper kernel's HopperAttention)
    arch: tuple = None          # the compute capability it compiles for (None: the device's)
    bn: int = 64                # keys a tile

    def __post_init__(self):
        import inspect

        if tuple(inspect.signature(self.kernel).parameters) != self.params.names:
            raise AssertionError("attention: the kernel's parameters are not its KernelParams'")

    @property
    def params(self):
        return self.args or ATTENTION_ARGS

    @property
    def key(self):
        return self.kind, self.dtype, self.d, self.causal, self.bm, self.bn, self.min_blocks

    @property
    def bounds(self):
        """Launch bounds: threads a CTA, and CTAs an SM that ptxas must fit in the registers."""
        return self.threads, self.min_blocks

    def ptx(self, cc):
        """The kernel's PTX for compute capability ``cc`` (codegen's short numba pipeline)."""
        from .numba_ptx import kernel_ptx

        return kernel_ptx(self.kernel.py_func, self.params.signature(), cc, self.bounds)

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
            cc = self.arch or driver.compute_capability()
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
            hit = _FUNCTIONS[(self.key, ctx)] = driver.Function(cubin, name, self.smem)
        return hit


_FUNCTIONS = {}


def _code_digest():
    """A digest of the code a kernel is built from: the attention modules, codegen.cute, the
    intrinsics and the layout library."""
    import hashlib
    import os

    import layoutalg

    if not _DIGEST:
        h = hashlib.sha256()
        here = os.path.dirname(__file__)
        dirs = [os.path.dirname(layoutalg.__file__), os.path.join(here, "cute"), os.path.join(here, "intrinsics")]
        paths = [__file__, os.path.join(here, "attention_sm90.py")] + sorted(
            os.path.join(dr, n) for dr in dirs for n in os.listdir(dr) if n.endswith(".py"))
        for path in paths:
            with open(path, "rb") as f:
                h.update(f.read())
        _DIGEST.append(h.hexdigest()[:16])
    return _DIGEST[0]


_DIGEST = []


_KERNELS = {}


def attention_kernel(dtype, d, causal, bm=None):
    """The kernel for ``dtype`` ("f16" or "bf16"), head dim ``d``, ``causal`` and ``bm``
    queries a CTA (default :data:`BLOCK_M`), built once."""
    key = (dtype, d, bool(causal), BLOCK_M[d] if bm is None else bm)
    if key[3] not in KBLOCK_LOADS:
        raise ValueError(f"attention_kernel: bm {bm} is not one of {', '.join(map(str, KBLOCK_LOADS))} queries a CTA")
    hit = _KERNELS.get(key)
    if hit is None:
        hit = _KERNELS[key] = _build(*key)
    return hit


class RowStats(NamedTuple):
    """The online softmax's running statistics of a thread's rows, ``(ROWS)`` register arrays
    indexed by row slot (:func:`derive_ownership`; two rows for BM = 64, four for 128): the
    maxima of the scaled scores (log2 units) and the sums of their exponentials."""

    m: object
    l: object


@device_object
@dataclass(frozen=True)
class FlashAttention2:
    """The layouts of one kernel (element type, head dim ``d``, ``causal``, ``bm`` queries a
    CTA) and its stages, each a device method over a CTA's tiles: ``bm`` queries (``BM``, 64
    or 128) against 64 keys (``BN``) at a time, 4 warps.

    ``mma_s``: ``S = Q K^T``, (BM,BN) over ``d``; ``mma_o``: ``O += P V``, (BM,d) over the
    keys; ``g2s_r``: cp.async of rows of ``d`` (Q, K), ``g2s_v``: of V^T's columns;
    ``s2r_q``, ``s2r_k``, ``s2r_v``: ldmatrix into the MMAs' fragments; ``r2g_o``: O's
    accumulators to global memory, 32 bits a store; ``row_slot``, ``slot_o``, ``shuffles``:
    :func:`derive_ownership`; ``s_values``, ``o_values``: a thread's elements of S and O;
    ``pred_q``, ``pred_k``, ``pred_v``: ``(CPY_M,CPY_K)`` predicate layouts of the copies,
    ``pred_o``: ``(o_calls)``, one flag a 32-bit store of O (a pair of elements); ``sq``,
    ``sk``, ``sv``: the swizzled shared layouts of Q (BM,d), K (BN,d) and V^T (d,BN);
    ``kblock_loads``: :data:`KBLOCK_LOADS`; ``o_chunk``: the inner trip count of loops over
    O's elements (:data:`UNROLL`); ``rows``: the rows a thread holds (row slots,
    ``cosize(row_slot)``); ``row_first``: each row slot's leftmost element in S's fragment
    (the right inverse of ``row_slot``, checked by :func:`derive_ownership`); ``elem``: the
    element storage type; ``smem``: bytes of dynamic shared memory, Q at 0, K at ``k_at``
    and V^T at ``v_at`` (0: static shared arrays, the tiles fit in 48 KiB).
    """

    mma_s: object
    mma_o: object
    g2s_r: object
    g2s_v: object
    s2r_q: object
    s2r_k: object
    s2r_v: object
    r2g_o: object
    row_slot: object            # (MMA,MMA_M,MMA_N) -> row slot, of S
    slot_o: object              # (MMA,MMA_M,MMA_N) -> row slot, of O
    shuffles: tuple
    s_values: int
    o_values: int
    o_calls: int
    pred_q: object              # (CPY_M,CPY_K)
    pred_k: object              # (CPY_M,CPY_K)
    pred_v: object              # (CPY_M,CPY_K)
    pred_o: object              # (o_calls)
    sq: object                  # (BM,D) -> smem
    sk: object                  # (BN,D) -> smem
    sv: object                  # (D,BN) -> smem: V^T
    d: int
    causal: bool
    bm: int
    kblock_loads: bool
    o_chunk: int
    rows: int
    row_first: object           # (ROWS) -> S's fragment index
    elem: object
    smem: int
    k_at: int
    v_at: int

    @device
    def start(self):
        """The statistics before the first key tile: maxima at -inf, sums at 0."""
        m = cuda.local.array(self.rows, float32)                           # (ROWS) -> row maximum
        l_ = cuda.local.array(self.rows, float32)                          # (ROWS) -> row sum
        for r in range(self.rows):
            m[r] = float32(-math.inf)
            l_[r] = float32(0.0)
        return RowStats(m, l_)

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
    def load_q_fragments(self, tid, sQ, tSrQ):
        """Q's fragments from shared memory into registers, once (with ``kblock_loads``,
        :meth:`scores` reads them a k-block at a time instead)."""
        if not self.kblock_loads:
            sq = self.s2r_q.get_slice(tid)
            cute.copy(self.s2r_q, sq.partition_S(sQ), sq.retile_D(tSrQ))

    @device
    def scores(self, tid, sQ, sK, tSrS, tSrQ, tSrK):
        """``S = Q K^T`` of the tiles in shared memory, into the accumulators ``tSrS``: K's
        fragments all first, or with ``kblock_loads`` K's and Q's a k-block (16 of d) at a time,
        each K fragment serving every row block of ``S``."""
        sq = self.s2r_q.get_slice(tid)
        sk = self.s2r_k.get_slice(tid)
        tSsQ, tSrQc = sq.partition_S(sQ), sq.retile_D(tSrQ)              # (CPY,CPY_M,CPY_K): k-blocks
        tSsK, tSrKc = sk.partition_S(sK), sk.retile_D(tSrK)              # (CPY,CPY_N,CPY_K)
        if not self.kblock_loads:
            cute.copy(self.s2r_k, tSsK, tSrKc)
        cute.clear(tSrS)
        for kb in range(self.d // 16):
            if self.kblock_loads:
                cute.copy(self.s2r_q, tSsQ[None, None, kb], tSrQc[None, None, kb])
                cute.copy(self.s2r_k, tSsK[None, None, kb], tSrKc[None, None, kb])
            cute.gemm(self.mma_s, tSrS, tSrQ[None, None, kb], tSrK[None, None, kb])

    @device
    def online_softmax(self, tSrS, tScS, tOrO, st, kt, Sk, first, qk):
        """Scale and mask key tile ``kt``'s scores (keys past ``Sk``; with ``causal``, keys after
        the query), raise the rows' maxima (``st``, a :class:`RowStats`, updated in place)
        across the row's threads, rescale ``O`` and the sums, and replace the scores by their
        exponentials ``P``. ``tScS``: (query, key) of each score in the tiles."""
        neg = float32(-math.inf)
        mx = cuda.local.array(self.rows, float32)                          # (ROWS) -> the new maximum
        for r in range(self.rows):
            mx[r] = st.m[r]
        keys = Sk - kt * BN                                                # keys of this tile inside Sk
        diag = first - kt * BN                                             # query - key offset of the tiles
        for i in range(self.s_values):
            c = tScS[i]
            x = tSrS[i] * qk
            if c[1] >= keys or (self.causal and c[1] > diag + c[0]):
                x = neg                                                    # past Sk, or after the query
            tSrS[i] = x
            r = self.row_slot(i)
            mx[r] = max(mx[r], x)
        for j in range(len(self.shuffles)):                                # the row's other threads
            for r in range(self.rows):
                mx[r] = max(mx[r], cuda.shfl_xor_sync(0xFFFFFFFF, mx[r], self.shuffles[j]))
        alpha = cuda.local.array(self.rows, float32)                       # (ROWS) -> exp2(old max - new)
        for r in range(self.rows):
            alpha[r] = math.exp2(st.m[r] - mx[r]) if mx[r] != neg else float32(0.0)   # no key yet: 0
            st.l[r] = st.l[r] * alpha[r]
            st.m[r] = mx[r]
        for i in range(self.s_values):
            r = self.row_slot(i)
            p = math.exp2(tSrS[i] - mx[r]) if mx[r] != neg else float32(0.0)
            st.l[r] += p
            tSrS[i] = p
        for h in range(self.o_values // self.o_chunk):                     # O's rows are S's (checked)
            for j in range(self.o_chunk):
                tOrO[h * self.o_chunk + j] *= alpha[self.slot_o(h * self.o_chunk + j)]

    @device
    def accumulate(self, tid, sV, tOrO, tOrP, tOrV):
        """``O += P V``: ``P`` (``tOrP``, the A operand, S's registers converted) times the
        values in shared memory: V's fragments all first, or with ``kblock_loads`` a k-block
        (16 keys) at a time, each serving every row block of ``O``."""
        sv = self.s2r_v.get_slice(tid)
        tOsV, tOrVc = sv.partition_S(sV), sv.retile_D(tOrV)              # (CPY,CPY_N,CPY_K): k-blocks
        if not self.kblock_loads:
            cute.copy(self.s2r_v, tOsV, tOrVc)
        for kb in range(BN // 16):
            if self.kblock_loads:
                cute.copy(self.s2r_v, tOsV[None, None, kb], tOrVc[None, None, kb])
            cute.gemm(self.mma_o, tOrO, tOrP[None, None, kb], tOrV[None, None, kb])

    @device
    def normalize(self, tOrO, st):
        """``O / l`` with the rows' sums added up across their threads (into ``st``)."""
        for j in range(len(self.shuffles)):
            for r in range(self.rows):
                st.l[r] += cuda.shfl_xor_sync(0xFFFFFFFF, st.l[r], self.shuffles[j])
        inv = cuda.local.array(self.rows, float32)                         # (ROWS) -> 1 / row sum
        for r in range(self.rows):
            inv[r] = float32(1.0) / st.l[r] if st.l[r] > 0 else float32(0.0)
        for h in range(self.o_values // self.o_chunk):
            for j in range(self.o_chunk):
                tOrO[h * self.o_chunk + j] *= inv[self.slot_o(h * self.o_chunk + j)]

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
        """Each row's log-sum-exp (natural log) into ``mL``, by the threads holding column 0
        (in a row's leftmost element of theirs: ``row_first``)."""
        for r in range(self.rows):
            c = tScS[self.row_first(r)]
            if c[1] == 0 and first + c[0] < Sq:
                mL[first + c[0]] = (st.m[r] + math.log2(st.l[r])) / float32(LOG2E)


@device_function
def static_shared(fa):
    """The tiles of Q (BM,D), K (BN,D) and V^T (D,BN) in static shared arrays (48 KiB at most)."""
    sQ = cute.make_shared_tensor(fa.elem, fa.sq)                           # (BM,D) -> smem
    sK = cute.make_shared_tensor(fa.elem, fa.sk)                           # (BN,D) -> smem
    sV = cute.make_shared_tensor(fa.elem, fa.sv)                           # (D,BN) -> smem: V^T, d contiguous
    return sQ, sK, sV


@device_function
def dynamic_shared(fa):
    """The same tiles in the launch's dynamic shared memory (``fa.smem`` bytes, above 48 KiB)."""
    sQ = cute.dynamic_shared_tensor(fa.elem, fa.sq, 0)                     # (BM,D) -> smem
    sK = cute.dynamic_shared_tensor(fa.elem, fa.sk, fa.k_at)               # (BN,D) -> smem
    sV = cute.dynamic_shared_tensor(fa.elem, fa.sv, fa.v_at)               # (D,BN) -> smem: V^T, d contiguous
    return sQ, sK, sV


def make_flash_attention2(dtype, D, causal, bm):
    """The :class:`FlashAttention2` of ``dtype`` ("f16" or "bf16"), head dim ``D``, ``causal``
    and ``bm`` queries a CTA: every layout derived from the m16n8k16 atom and the copy atoms,
    ownership checked."""
    from layoutalg import (
        CopyAtom, Layout, cosize, make_identity_tensor, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B,
        make_tiled_mma, right_inverse, size,
    )
    from layoutalg.tiled_copy import make_tiled_copy_impl

    from .cute.checks import shared_cosize
    from .plan import smem_layout

    mma_s = make_tiled_mma(_ATOMS[dtype], (4, 1, 1), (bm, BN, 16))    # S = Q K^T: (BM,BN), k over D
    mma_o = make_tiled_mma(_ATOMS[dtype], (4, 1, 1), (bm, D, 16))     # O += P V: (BM,D), k over the keys
    cp = CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", dtype)
    g2s_r = make_tiled_copy(cp, Layout((128 * 8 // D, D // 8), (D // 8, 1)), Layout((1, 8)))   # rows of d, 16 B a thread
    g2s_v = make_tiled_copy(cp, Layout((D // 8, 1024 // D), (1, D // 8)), Layout((8, 1)))     # columns of V^T
    r2g_o = make_tiled_copy_impl(CopyAtom("UniversalCopy_32", dtype), mma_o.get_layoutC_TV(), (bm, D))
    row_slot, slot_o, shuffles = derive_ownership(mma_s, mma_o, bm, D)
    sq = smem_layout(dtype, "K", bm, D)                                # (BM,D) -> smem
    sk = smem_layout(dtype, "K", BN, D)                                # (BN,D) -> smem
    sv = smem_layout(dtype, "MN", D, BN)                               # (D,BN) -> smem: V^T
    nbytes = [-(-shared_cosize(x) * 2 // 128) * 128 for x in (sq, sk, sv)]   # each tile 128-byte aligned
    k_at, v_at, end = nbytes[0], nbytes[0] + nbytes[1], sum(nbytes)

    def values(part, shape):                # a thread's elements of a partition of a (shape) tile
        return size(part(make_identity_tensor(shape)).layout)

    def pred(copy, shape):                  # (CPY_M,CPY_K): one flag a copy call
        return Layout(copy.get_slice(0).partition_S(make_identity_tensor(shape)).layout.shape[1:])

    o_calls = values(r2g_o.get_slice(0).partition_D, (bm, D)) // 2
    o_values = values(mma_o.get_slice(0).partition_C, (bm, D))
    return FlashAttention2(
        mma_s, mma_o, g2s_r, g2s_v,
        make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", dtype), mma_s),
        make_tiled_copy_B(CopyAtom("SM75_U32x4_LDSM_N", dtype), mma_s),
        make_tiled_copy_B(CopyAtom("SM75_U16x8_LDSM_T", dtype), mma_o),
        r2g_o, row_slot, slot_o, shuffles,
        values(mma_s.get_slice(0).partition_C, (bm, BN)), o_values,
        o_calls, pred(g2s_r, (bm, D)), pred(g2s_r, (BN, D)), pred(g2s_v, (D, BN)), Layout(o_calls),
        sq, sk, sv, D, causal, bm=bm, kblock_loads=KBLOCK_LOADS[bm], o_chunk=math.gcd(o_values, UNROLL),
        rows=cosize(row_slot), row_first=right_inverse(row_slot), elem=_STORAGE[dtype],
        smem=end if end > SMEM_STATIC else 0, k_at=k_at, v_at=v_at)


def _build(dtype, D, causal, bm):
    cute.activate()
    FA = make_flash_attention2(dtype, D, causal, bm)
    ELEM, BM = FA.elem, bm
    CVT = dtype                                                        # cute.convert's format of P and O
    SHARED = dynamic_shared if FA.smem else static_shared

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
        cQ = cute.local_tile(cute.make_identity_tensor((Sq, D)), (BM, D), (qt, 0))         # (BM,D) -> (query, d)
        gO = cute.local_tile(mO, (BM, D), (qt, 0))                                         # (BM,D)
        gK = cute.local_tile(mK, (BN, D), (None, 0))                                       # (BN,D,kt)
        cK = cute.local_tile(cute.make_identity_tensor((Sk, D)), (BN, D), (None, 0))       # (BN,D,kt) -> (key, d)
        gV = cute.local_tile(mV, (D, BN), (0, None))                                       # (D,BN,kt)
        cV = cute.local_tile(cute.make_identity_tensor((D, Sk)), (D, BN), (0, None))       # (D,BN,kt) -> (d, key)
        sQ, sK, sV = SHARED(FA)                                            # (BM,D), (BN,D), (D,BN) -> smem
        gr = FA.g2s_r.get_slice(tid)
        gv = FA.g2s_v.get_slice(tid)
        tKgK, tKsK, tKcK = gr.partition_S(gK), gr.partition_D(sK), gr.partition_S(cK)   # (CPY,CPY_M,CPY_K,kt)
        tVgV, tVsV, tVcV = gv.partition_S(gV), gv.partition_D(sV), gv.partition_S(cV)
        pK = cute.make_fragment_like(FA.pred_k, np.int8)                 # (CPY_M,CPY_K)
        pV = cute.make_fragment_like(FA.pred_v, np.int8)                 # (CPY_M,CPY_K)
        thr_s = FA.mma_s.get_slice(tid)
        thr_o = FA.mma_o.get_slice(tid)
        tSrQ = thr_s.partition_fragment_A(sQ)                              # (MMA,MMA_M,MMA_K): all of D
        tSrK = thr_s.partition_fragment_B(sK)                              # (MMA,MMA_N,MMA_K)
        tOrV = thr_o.partition_fragment_B(sV)                              # (MMA,MMA_N,MMA_K): k over keys
        cS = cute.make_identity_tensor((BM, BN))                          # (BM,BN) -> (query, key) in the tiles
        tSrS = thr_s.partition_fragment_C(cS)                              # (MMA,MMA_M,MMA_N)
        tScS = thr_s.partition_C(cS)                                       # (MMA,MMA_M,MMA_N) -> (query, key)
        tOrO = thr_o.partition_fragment_C(gO)                              # (MMA,MMA_M,MMA_N)
        tOrP = cute.make_fragment_like(thr_o.partition_fragment_A(cS), ELEM)   # (MMA,MMA_M,MMA_K)
        cute.clear(tOrO)
        st = FA.start()
        first = qt * BM                                                    # the tile's first query
        n_kt = (Sk + BN - 1) // BN
        if causal:
            n_kt = min(n_kt, (first + BM + BN - 1) // BN)
        FA.load_q(tid, gQ, cQ, sQ, Sq)
        FA.load_k(tKgK, tKsK, tKcK, pK, 0, Sk)
        FA.wait_loads()
        FA.load_q_fragments(tid, sQ, tSrQ)                                 # Q's fragments, once (BM = 64)
        for kt in range(n_kt):                 # K(kt) is in shared memory; V(kt) and K(kt+1) overlap MMAs
            FA.load_v(tVgV, tVsV, tVcV, pV, kt, Sk)                       # V(kt) lands during S and softmax
            FA.scores(tid, sQ, sK, tSrS, tSrQ, tSrK)                       # S = Q K^T
            FA.online_softmax(tSrS, tScS, tOrO, st, kt, Sk, first, qk)
            FA.wait_loads()                                                # V(kt) in; K(kt) read by all
            if kt + 1 < n_kt:
                FA.load_k(tKgK, tKsK, tKcK, pK, kt + 1, Sk)                # K(kt+1) lands during O += P V
            for m in range(cute.size(tSrS, 1)):                            # P[_,m,_]: S[_,m,_]'s registers
                cute.convert(tSrS[None, m, None], tOrP[None, m, None], CVT)
            FA.accumulate(tid, sV, tOrO, tOrP, tOrV)                      # O += P V
            FA.wait_loads()                                                # K(kt+1) in; V(kt) read by all
        FA.normalize(tOrO, st)
        tOrO16 = cute.make_fragment_like(tOrO, ELEM)                       # (MMA,MMA_M,MMA_N)
        cute.convert(tOrO, tOrO16, CVT)
        FA.store_o(tid, tOrO16, cQ, gO, Sq)
        if lse != 0:
            FA.store_lse(cute.make_tensor(cute.make_ptr(np.float32, lse + 4 * bh * Sq, 4),
                                          cute.make_layout((Sq,), (1,))), tScS, st, first, Sq)   # (Sq) -> lse

    return AttentionKernel(dtype, D, causal, bm, attention_fwd, FA.mma_s.size, MIN_BLOCKS[D, bm], FA.smem)


def _describe4(x, name):
    from .host import _describe

    return _describe(x, "attention", name, ("f16", "bf16"), ranks=(4,))


def attention(q, k, v, causal=False, scale=None, return_lse=False, stream=None, kernel=None):
    """``softmax(q k^T * scale [causal mask]) v`` per batch and head (module docstring);
    ``scale`` defaults to ``1/sqrt(d)``. Arrays: torch CUDA tensors, CuPy arrays or numba
    device arrays (numpy arrays in numba's simulator, or copied to the GPU and back). Returns
    ``o``, or ``(o, lse)`` with ``return_lse``. ``kernel``: "sm90", the Hopper kernel
    (:mod:`codegen.attention_sm90`: wgmma, TMA, a producer warpgroup; on an sm_90 GPU or in
    the simulator), "sm80", this module's ``mma.sync`` kernel, or None: the Hopper kernel on
    device arrays of an sm_90 GPU, else the ``mma.sync`` one."""
    op = "attention"
    if kernel not in (None, "sm80", "sm90"):
        raise GemmError(f"{op}: kernel must be None, 'sm80' or 'sm90', got {kernel!r}")
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
    hopper = _hopper(kernel, dq, scale)
    kern = _hopper_kernel(dq.etype.name, D, causal, Sk) if hopper else attention_kernel(dq.etype.name, D, causal)
    o = _new(q, dq, (B, H, Sq, D))
    lse = _new_lse(q, dq, (B, H, Sq)) if return_lse else None
    (_launch_hopper if hopper else _launch)(kern, (q, k, v, o, lse), xs, (B, H, Sq, Sk, Hk), scale, stream)
    return (o, lse) if return_lse else o


def _hopper(kernel, dq, scale):
    """Whether the Hopper kernel runs (:func:`attention`'s ``kernel``). It scales the scores in
    the exponent, which takes a positive ``scale``; another runs on the ``mma.sync`` kernel."""
    if kernel == "sm80":
        return False
    if not scale > 0:
        if kernel == "sm90":
            raise GemmError(f"attention: kernel 'sm90' takes a positive scale, got {scale}")
        return False
    if dq.kind == "numpy" and not simulating():
        if kernel == "sm90":
            raise GemmError("attention: kernel 'sm90' takes device arrays (torch, CuPy, numba) on a GPU, or numpy "
                            "arrays in numba's simulator; got numpy arrays on a GPU")
        return False
    if simulating():
        return kernel == "sm90"
    from . import driver

    with _on_device(dq):
        cc = driver.compute_capability()
    if kernel == "sm90" and cc != (9, 0):
        raise GemmError(f"attention: kernel 'sm90' needs an sm_90 GPU (H100, H200), got compute capability {cc}")
    return cc == (9, 0)


def _hopper_kernel(dtype, d, causal, seq_k):
    """The Hopper kernel of the tile that pays at ``seq_k`` keys (:func:`~codegen.attention_sm90.tile_for`)."""
    from .attention_sm90 import hopper_attention_kernel, tile_for

    return hopper_attention_kernel(dtype, d, causal, *tile_for(d, causal, seq_k))


def _launch_hopper(kern, arrays, xs, dims, scale, stream):
    """Launch the Hopper kernel: TMA maps of q, k and v, o and the log-sum-exp by address."""
    from .attention_sm90 import launch

    q, k, v, o, lse = arrays
    do = _describe4(o, "o")
    if simulating():
        from dataclasses import replace

        from .intrinsics.sim import register_global

        xs = [replace(x, ptr=register_global(a)) for x, a in zip(xs, (q, k, v))]
        launch(kern, xs, replace(do, ptr=register_global(o)), register_global(lse) if lse is not None else 0, dims,
               scale, 0, True)
        return
    from .host import _stream_handle

    with _on_device(xs[0]):
        handle = _stream_handle(stream, xs[0].kind, xs[0].device)
        capture = None
        if xs[0].kind == "torch":
            from .host import GraphCapture, _refuse_in_capture

            capture = GraphCapture.of(q, handle)
            if capture is not None and not kern.loaded():
                _refuse_in_capture(q)
        launch(kern, xs, do, _describe_lse(lse), dims, scale, handle, False, capture)


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
    """Launch ``kern``: one CTA a tile of ``kern.bm`` queries of each batch and head."""
    B, H, Sq, Sk, Hk = dims
    q, k, v, o, lse = arrays
    dq, dk, dv = xs
    do = _describe4(o, "o")
    grid = (Sq + kern.bm - 1) // kern.bm * B * H
    slots = ATTENTION_ARGS.slots()
    slots.set(Sq=Sq, Sk=Sk, H=H, ratio=H // Hk, qk=scale * LOG2E)
    if dq.kind == "numpy":
        arrays = [np.ascontiguousarray(x) if i < 3 else x for i, x in enumerate(arrays)]
        _set_strides(slots, [_estrides(x) for x in arrays[:3]] + [do.strides])
        if simulating():
            from .intrinsics.sim import register_global

            _set_addresses(slots, [register_global(x) if x is not None else 0 for x in arrays])
            kern.kernel[grid, kern.threads, 0, kern.smem](*slots.python_values())
            return
        from numba import cuda

        dev = [cuda.to_device(x) if x is not None else None for x in arrays]
        _set_addresses(slots, [int(d.__cuda_array_interface__["data"][0]) if d is not None else 0 for d in dev])
        kern.function().launch(grid, kern.threads, kern.smem, 0, slots.pointers)
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
        kern.function().launch(grid, kern.threads, kern.smem, handle, slots.pointers)


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
