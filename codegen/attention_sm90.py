"""Attention's forward pass on Hopper (sm_90a): FlashAttention 3's structure, composed of
:mod:`codegen.cute`'s pieces (the GEMM's TMA loads, mbarrier pipelines and ``wgmma``).

A tile is ``bm`` queries of one head (and batch), 64 a consumer warpgroup, against the
keys ``bn`` at a time (:data:`TILES`, by head dim and ``causal``). The kernel is
persistent: a CTA an SM walks its work units, its producer loading the next unit while the
consumers store O (:mod:`codegen.attention_schedule`). Without ``causal`` a unit is a tile,
or a part of a tile of a short last wave (:class:`SplitKV`), ``gridDim.x`` apart; with
``causal`` (tiles of unequal work) a CTA reads its tiles from a table planned on the host
(:class:`CausalSchedule`): at head dim 128 a head's query tiles in mirror pairs, the last
and the first, the one before the last and the second, ... (pairs of equal work, the heads
in order, so the CTAs at work share K and V in L2), at 64 the longest tiles of all heads
first, and the last rounds balanced tile by tile.
Its warpgroups:

* warpgroup 0 is the producer: one thread loads a tile's Q and then, per key tile, K
  and V by TMA (rank-4 tensor maps over ``(d, seq, heads, batch)``, any strides TMA takes),
  each into a two-stage pipeline of its own, so that ``S = Q K^T`` of a tile starts before
  its V has arrived;
* warpgroups 1 to ``bm / 64`` are consumers, 64 queries each: ``S = Q K^T`` on ``wgmma``
  with both operands in shared memory (m64n``bn``k16, ``d / 16`` instructions), the online
  softmax on ``S``'s accumulators (``CLayout_64xbn``), and ``O += P V`` on ``wgmma`` with
  ``P`` from registers (the RS form: m64n``d``k16, ``bn / 16`` instructions): the
  accumulators of columns ``16 kb .. 16 kb + 15`` of S are, in order, the A fragment
  (``ALayout_64x16``) of k-block ``kb``, checked for every thread when a kernel is built
  (:func:`derive_hopper_ownership`), so ``P`` is S's registers rounded to 16 bits, pairwise
  packed.

Each consumer overlaps the softmax of a tile with the MMAs (FlashAttention 3's
intra-warpgroup pipelining): it issues ``S(kt) = Q K(kt)^T`` and ``O += P(kt-1) V(kt-1)``
together, rescaling ``O`` to tile ``kt - 1``'s maxima between the two (under ``S``'s MMAs),
waits for ``S(kt)`` only, computes its softmax while ``P V`` runs, then waits for ``O``. And
the consumers take turns to issue their MMAs, in a ring (FlashAttention 3's ping-pong, a
named barrier each): one's softmax runs while another's MMAs do.

Rows past ``seq_q`` and keys past ``seq_k`` are zero-filled by TMA; the scores of keys past
``seq_k`` and, with ``causal``, of keys after the query (top-left aligned) are masked to
``-inf`` in the tiles that need it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import cute
from .attention_schedule import PART_MIN, SPLITS_MAX, CausalSchedule, SplitKV, causal_keys  # noqa: F401  (re-exported)
from .cute.objects import device, device_object, late_import
from .cute.params import KernelParams

(cuda, float32, int32, int64, uint32) = late_import("numba", "cuda", "float32", "int32", "int64", "uint32")
(ex2_approx_f32, cvt_f16x2_f32, cvt_bf16x2_f32, st_global_b32, st_global_v2_b32, ld_global_b32, ld_global_nc_b64,
 u32_as_f32, acc_to_array, acc_from_array, named_barrier_sync, named_barrier_arrive) = late_import(
    "codegen.intrinsics", "ex2_approx_f32", "cvt_f16x2_f32", "cvt_bf16x2_f32", "st_global_b32", "st_global_v2_b32",
    "ld_global_b32", "ld_global_nc_b64", "u32_as_f32", "acc_to_array", "acc_from_array", "named_barrier_sync",
    "named_barrier_arrive")

__all__ = ["HopperAttention", "make_hopper_attention", "derive_hopper_ownership", "check_error", "SplitKV",
           "CausalSchedule", "HOPPER_ARGS", "COMBINE_ARGS", "TILES", "BN"]

BN = 128                    # keys a tile, unless TILES says otherwise
#: The tile of a kernel by (head dim, causal): queries a CTA (``bm``, 64 a consumer
#: warpgroup) and keys a tile (``bn``).
TILES = {(64, False): (192, 128), (64, True): (192, 128), (128, False): (128, 176), (128, True): (128, 176)}
#: At ``seq_k`` up to :data:`SHORT_KEYS`, the tile by (head dim, causal) where another pays:
#: a CTA walks few key tiles, and smaller tiles balance the SMs better (H200, 512 and 1024
#: keys: 1.06-1.10x with ``causal``, 1.03-1.05x at d=128 without; ``benchmarks/RESULTS.md``).
SHORT_TILES = {(64, True): (128, 128), (128, False): (128, 128), (128, True): (128, 128)}
SHORT_KEYS = 1024
STAGES = 2                  # K and V pipelines' stages
SMEM_MAX = 227 * 1024       # dynamic shared memory a CTA (sm_90)
#: setmaxnreg by consumer warpgroups: the producer's registers a thread (it gives them up)
#: and a consumer's (they take them); 128 x (producer + consumers x consumer) <= 65536.
REGS = {2: (24, 240), 3: (24, 160)}
LOG2E = 1.4426950408889634
PARTS = 4                   # independent chains a row for the softmax's maxima and sums
TURN_BARRIER = 1            # named barriers 1, 2 (, 3): consumer 0's, 1's (, 2's) turn to issue its MMAs
_ATOMS = {"f16": "F32F16F16", "bf16": "F32BF16BF16"}

#: Head dims whose ``causal`` tiles go in mirror pairs (:meth:`CausalSchedule.plan`); the
#: others longest first across heads. At d=128, seq 8192, the order longest first reads K and V of
#: all heads at once from DRAM (42 % L2 hits, 2.5 TB/s), which holds the clock down; the
#: pairs measured 1.11-1.15x faster there (1.08x at 2048), and 0.87-0.95x at d=64
#: (``benchmarks/RESULTS.md``).
PAIRED = (128,)


#: The kernel's arguments: the device addresses of Q's, K's and V's tensor maps, of O and of
#: the log-sum-exp (0: none); the batch, sequence lengths, query heads, query heads a kv head; O's
#: element strides along batch, head and sequence; the scale times log2(e); the error word;
#: the split-KV workspace (:class:`SplitKV`: the parts' partial results; 0: none), the tiles
#: taken whole, the parts a split tile and the work units in all; with ``causal``, the
#: address of the CTAs' tiles (:class:`CausalSchedule`'s table).
HOPPER_ARGS = KernelParams("HopperAttentionArgs", tuple((n, "i64") for n in (
    "tmap_q", "tmap_k", "tmap_v", "o", "lse", "B", "Sq", "Sk", "H", "ratio", "osb", "osh", "oss")) + (
    ("qk", "f32"), ("err", "i64"), ("ws", "i64"), ("whole", "i64"), ("splits", "i64"), ("units", "i64"),
    ("sched", "i64")))

#: The combine kernel's arguments (:func:`combine_kernel`): the workspace, O and the
#: log-sum-exp (0: none); the tiles taken whole, the parts a split tile, the split tiles, the
#: query tiles a head, the query heads, ``Sq``; O's element strides along batch, head and sequence.
COMBINE_ARGS = KernelParams("AttentionCombineArgs", tuple((n, "i64") for n in (
    "ws", "o", "lse", "whole", "splits", "rest", "n_m", "H", "Sq", "osb", "osh", "oss")))


def derive_hopper_ownership(dtype, d, bn=BN):
    """What the consumers need to know of S's and O's accumulators, derived from the wgmma
    atoms' layouts and checked for every thread (:func:`codegen.flash_attention.derive_ownership`:
    the same rows a thread in S and O, P's A-operand registers S's accumulators in order, a
    row's threads a lane and its ``shfl_xor`` partners). Returns a dict of layouts (a layout
    is the sum of its modes, so ``(thread,value) -> x`` is ``x_t(thread) + x_v(value)``):
    ``slot_s``, ``slot_o``: (value) -> the thread's row slot of an accumulator of S, of O;
    ``row_t``, ``col_t``: (thread) -> the row and column of its accumulator 0 (the same in S
    and O); ``row_v``, ``col_s``, ``col_o``: (value) -> row and column offsets in S, O; and
    ``shuffles``, ``rows`` (row slots a thread), ``slot_row`` (each slot's row offset)."""
    from layoutalg import Layout, coalesce, cosize, make_tiled_mma

    from .flash_attention import derive_ownership

    mma_s = make_tiled_mma(f"SM90_64x{bn}x16_{_ATOMS[dtype]}_SS")
    mma_o = make_tiled_mma(f"SM90_64x{d}x16_{_ATOMS[dtype]}_RS")
    slot_s, slot_o, shuffles = derive_ownership(mma_s, mma_o, 64, d, bn=bn)
    rows_s = mma_s.tv_C(Layout((64, bn), (1, 0)))                     # (T128,V(bn/2)) -> row
    cols_s = mma_s.tv_C(Layout((64, bn), (0, 1)))                     # (T128,V(bn/2)) -> column
    rows_o = mma_o.tv_C(Layout((64, d), (1, 0)))                      # (T128,V(d/2)) -> row
    cols_o = mma_o.tv_C(Layout((64, d), (0, 1)))                      # (T128,V(d/2)) -> column
    ns, no = bn // 2, d // 2                                           # accumulators a thread
    if (coalesce(rows_o[0]), coalesce(cols_o[0])) != (coalesce(rows_s[0]), coalesce(cols_s[0])):
        raise ValueError("derive_hopper_ownership: S's and O's threads start at different rows or columns")
    for i in range(0, no, 2):                                          # O stored a pair of columns at a time
        if cols_o[1](i + 1) != cols_o[1](i) + 1 or rows_o[1](i + 1) != rows_o[1](i):
            raise ValueError(f"derive_hopper_ownership: O's accumulators {i}, {i + 1} are not adjacent columns")
    slot_s1, slot_o1 = (coalesce(Layout(x.shape, x.stride)) for x in (slot_s, slot_o))    # (V) -> row slot
    if any(rows_o[1](i) != rows_s[1](next(j for j in range(ns) if slot_s1(j) == slot_o1(i))) for i in range(no)):
        raise ValueError("derive_hopper_ownership: O's row slots are not S's")
    return dict(slot_s=slot_s1, slot_o=slot_o1, shuffles=tuple(shuffles), rows=cosize(slot_s),
                slot_row=tuple(rows_s[1](next(j for j in range(ns) if slot_s1(j) == r)) for r in range(cosize(slot_s))),
                row_t=coalesce(rows_s[0]), col_t=coalesce(cols_s[0]), row_v=coalesce(rows_s[1]),
                col_s=coalesce(cols_s[1]), col_o=coalesce(cols_o[1]))


def tile_for(d, causal, seq_k=None):
    """The tile ``(bm, bn)`` of the kernel that runs attention at head dim ``d`` with
    ``seq_k`` keys: :data:`SHORT_TILES` at up to :data:`SHORT_KEYS` keys, else (and for
    ``seq_k`` None) :data:`TILES`.

    >>> tile_for(128, False, 8192), tile_for(128, False, 1024), tile_for(64, False, 512)
    ((128, 176), (128, 128), (192, 128))
    """
    key = (d, bool(causal))
    if seq_k is not None and seq_k <= SHORT_KEYS and key in SHORT_TILES:
        return SHORT_TILES[key]
    return TILES.get(key, (128, BN))


def make_hopper_attention(dtype, d, causal, bm=None, bn=None):
    """The :class:`HopperAttention` of ``dtype`` ("f16" or "bf16"), head dim ``d`` (64 or 128)
    and ``causal``, of ``bm`` queries a CTA (128 or 192: two or three consumer warpgroups)
    against ``bn`` keys a tile (a multiple of 16, 64 to 256), :data:`TILES` by default:
    shared layouts, TMA loads, pipelines and MMAs from the layouts (a 192x128 tile: three
    consumers of 160 registers, 512 threads; S 64 accumulators a thread, P 32 registers)."""
    from layoutalg import cosize

    dbm, dbn = tile_for(d, causal)
    bm, bn = dbm if bm is None else bm, dbn if bn is None else bn
    if bm // 64 not in REGS or bm % 64:
        raise ValueError(f"make_hopper_attention: bm {bm} queries a CTA; it must be 64 times one of "
                         f"{', '.join(map(str, REGS))} consumer warpgroups")
    if bn % 16 or not 64 <= bn <= 256:
        raise ValueError(f"make_hopper_attention: bn {bn} keys a tile; it must be a multiple of 16 from 64 to 256")
    sq = cute.gmma_stage(dtype, "K", bm, d)                # (bm,d) -> offset: Sw<3,4,3> o 128-byte rows, d/64 blocks
    sk = cute.gmma_stage(dtype, "K", bn, d)                # (bn,d) -> offset: the same for K
    sv = cute.gmma_stage(dtype, "MN", d, bn)               # (d,bn) -> offset: V^T, d contiguous (V's rows)
    q_bytes, k_bytes, v_bytes = (2 * cosize(x.inner) for x in (sq, sk, sv))
    storage = cute.SharedStorage((
        ("q", q_bytes, 1024), ("k", STAGES * k_bytes, 1024), ("v", STAGES * v_bytes, 1024),
        ("q_full", 8, 8), ("q_empty", 8, 8),
        ("k_full", 8 * STAGES, 8), ("k_empty", 8 * STAGES, 8), ("v_full", 8 * STAGES, 8), ("v_empty", 8 * STAGES, 8)))
    if storage.nbytes > SMEM_MAX:
        raise ValueError(f"make_hopper_attention: a {bm}x{bn} tile at head dim {d} takes {storage.nbytes} bytes of "
                         f"shared memory (Q, and two stages of K and V); a CTA has {SMEM_MAX}")
    own = derive_hopper_ownership(dtype, d, bn)
    consumers = bm // 64
    return HopperAttention(
        d=d, causal=bool(causal), bf16=dtype == "bf16", bm=bm, bn=bn, consumers=consumers, regs=REGS[consumers],
        load_q=cute.make_tma_load("Q", dtype, "K", sq), load_k=cute.make_tma_load("K", dtype, "K", sk),
        load_v=cute.make_tma_load("V", dtype, "MN", sv),
        mma_s=cute.make_wgmma(dtype, dtype, bn, sq, sk, "K", "K"),
        mma_o=cute.make_wgmma_rs(dtype, d, sv, "MN", bn),
        pipe_q=cute.TmaPipeline(1, q_bytes, storage.q_full, storage.q_empty, arrivals=consumers),
        pipe_k=cute.TmaPipeline(STAGES, k_bytes, storage.k_full, storage.k_empty, arrivals=consumers),
        pipe_v=cute.TmaPipeline(STAGES, v_bytes, storage.v_full, storage.v_empty, arrivals=consumers),
        q_at=storage.q, k_at=storage.k, v_at=storage.v, k_bytes=k_bytes, v_bytes=v_bytes,
        q_rows=2 * sq.inner(64, 0), smem=storage.nbytes, s_regs=bn // 2, o_regs=d // 2, p_regs=bn // 4, **own)


@device_object
@dataclass(frozen=True)
class HopperAttention:
    """One kernel's pieces (:func:`make_hopper_attention`) and its stages as device methods.

    ``bm``/``bn``: queries a CTA and keys a tile; ``consumers``: consumer warpgroups
    (``bm / 64``); ``regs``: setmaxnreg's registers a thread, the producer's and a consumer's;
    ``load_q``/``load_k``/``load_v``: the TMA loads of a stage; ``mma_s``: ``S = Q K^T``
    (SS); ``mma_o``: ``O += P V`` (RS); ``pipe_q``/``pipe_k``/``pipe_v``: the pipelines;
    ``q_at``/``k_at``/``v_at``: the tiles' byte offsets in shared memory, ``k_bytes``/
    ``v_bytes`` a stage's; ``q_rows``: bytes from one consumer's 64 rows of Q to the next's;
    ``smem``: dynamic shared memory; ``s_regs``/``o_regs``/``p_regs``: a thread's
    accumulators of S and O and P's 32-bit registers; the rest: :func:`derive_hopper_ownership`."""

    d: int
    causal: bool
    bf16: bool                  # P and O rounded to bf16 (else f16)
    bm: int
    bn: int
    consumers: int
    regs: tuple
    load_q: object
    load_k: object
    load_v: object
    mma_s: object
    mma_o: object
    pipe_q: object
    pipe_k: object
    pipe_v: object
    q_at: int
    k_at: int
    v_at: int
    k_bytes: int
    v_bytes: int
    q_rows: int
    smem: int
    s_regs: int
    o_regs: int
    p_regs: int
    slot_s: object              # (V) -> row slot, of S's accumulators
    slot_o: object              # (V) -> row slot, of O's
    shuffles: tuple
    rows: int
    slot_row: tuple             # (ROWS) -> row offset
    row_t: object               # (T128) -> row of accumulator 0
    col_t: object               # (T128) -> column of accumulator 0
    row_v: object               # (V) -> row offset, in S
    col_s: object               # (V) -> column offset, in S
    col_o: object               # (V) -> column offset, in O

    @property
    def threads(self):
        """Threads a CTA: the producer warpgroup and the consumers."""
        return 128 * (1 + self.consumers)

    @device
    def init(self):
        self.pipe_q.init()
        self.pipe_k.init()
        self.pipe_v.init()

    @device
    def units(self, p):
        """This CTA's work units: ``range(*self.units(p))``. Without ``causal``, every
        ``gridDim.x``-th unit from ``blockIdx.x`` (:class:`SplitKV`'s); with it, the entries
        of :class:`CausalSchedule`'s table that list the CTA's tiles."""
        if self.causal:
            c = cuda.blockIdx.x
            return int64(ld_global_b32(p.sched + 4 * c)), int64(ld_global_b32(p.sched + 4 * c + 4)), 1
        return cuda.blockIdx.x, p.units, cuda.gridDim.x

    @device
    def entry(self, p, unit):
        """What :meth:`tile` reads of work unit ``unit``: with ``causal``, the tile of the
        table's entry ``unit`` (head * n_m + query tile; the loops load it a unit ahead, the
        table's padding word the last CTA's); else the unit itself."""
        if self.causal:
            return int64(ld_global_b32(p.sched + 4 * unit))
        return int64(unit)

    @device
    def tile(self, p, unit, t):
        """Work unit ``unit`` of the launch (:meth:`units`), ``t`` its :meth:`entry`: its
        tile's batch, head and first query, and the key tiles ``[kt0, kt1)`` it takes (all of
        them, or a part's). A head's query tiles are consecutive (CTAs at work together share
        its K and V in L2); with ``causal`` (none split) the tile is ``t``
        (:class:`CausalSchedule`)."""
        n_m = (p.Sq + self.bm - 1) // self.bm
        n_kt = (p.Sk + self.bn - 1) // self.bn
        kt0 = int64(0)
        kt1 = n_kt
        if not self.causal and unit >= p.whole:                          # a part of a split tile
            i = uint32(unit - p.whole) // uint32(p.splits)               # (32-bit divisions)
            part = uint32(unit - p.whole) - i * uint32(p.splits)
            t = p.whole + int64(i)
            kt0 = int64(uint32(part * n_kt) // uint32(p.splits))
            kt1 = int64(uint32((part + 1) * n_kt) // uint32(p.splits))
        if self.causal:
            bh = int64(uint32(t) // uint32(n_m))                         # (32-bit divisions)
            b = int64(uint32(bh) // uint32(p.H))
        else:
            bh = t // n_m
            b = bh // p.H
        mb = t - bh * n_m
        m0 = mb * self.bm
        if self.causal:
            kt1 = min(n_kt, (m0 + self.bm + self.bn - 1) // self.bn)    # keys up to the tile's last query
        return b, bh - b * p.H, m0, kt0, kt1

    @device
    def producer(self, p):
        """One thread: for each of the CTA's work units, Q's rows, then each of its key tiles'
        K and V, into their pipelines (the next unit's loads start while the consumers store O)."""
        self.load_q.acquire(p.tmap_q)                                   # the host-written maps, visible to TMA
        self.load_k.acquire(p.tmap_k)
        self.load_v.acquire(p.tmap_v)
        self.load_q.prefetch(p.tmap_q)
        self.load_k.prefetch(p.tmap_k)
        self.load_v.prefetch(p.tmap_v)
        base = cute.smem_base()
        sq = self.pipe_q.producer_start()
        sk = self.pipe_k.producer_start()
        sv = self.pipe_v.producer_start()
        first, end, step = self.units(p)
        t = self.entry(p, first)
        for unit in range(first, end, step):
            b, h, m0, kt0, kt1 = self.tile(p, unit, t)
            t = self.entry(p, unit + step)                               # the next unit's, in flight
            if kt1 == kt0:                                               # (never: see consumer)
                continue
            hk = h // p.ratio
            self.pipe_q.producer_acquire(sq, p.err)                      # the consumers are done with Q
            self.load_q.load_4d(p.tmap_q, base + self.q_at, m0, 0, h, b, self.pipe_q.full_barrier(sq))
            sq = self.pipe_q.advance(sq)
            for kt in range(kt0, kt1):
                self.pipe_k.producer_acquire(sk, p.err)
                self.load_k.load_4d(p.tmap_k, base + self.k_at + sk.stage * self.k_bytes, kt * self.bn, 0, hk, b,
                                    self.pipe_k.full_barrier(sk))
                sk = self.pipe_k.advance(sk)
                self.pipe_v.producer_acquire(sv, p.err)
                self.load_v.load_4d(p.tmap_v, base + self.v_at + sv.stage * self.v_bytes, 0, kt * self.bn, hk, b,
                                    self.pipe_v.full_barrier(sv))       # V^T: (d, key)
                sv = self.pipe_v.advance(sv)

    @device
    def scores(self, qa, sk):
        """Issue ``S = Q K^T`` of the stage ``sk`` (in flight on return)."""
        base = cute.smem_base()
        return self.mma_s.mma(self.mma_s.zero(), qa, base + self.k_at + sk.stage * self.k_bytes, True)

    @device(once=True)
    def softmax(self, s, m, l, alpha, kt, key0, row0, wg_row0, Sk, qk):
        """Key tile ``kt``'s scores ``s`` (S's accumulators), masked where they must be, into
        their exponentials ``2^(qk s - m)``; the rows' maxima ``m`` (scaled by ``qk`` > 0) and
        sums ``l`` (this thread's part) updated, ``alpha`` the factor that rescales O.

        Whether the tile needs masks is decided for the warpgroup (its first query
        ``wg_row0``), so the branch is uniform. The maxima and sums run in :data:`PARTS`
        independent chains a row (a chain of 32 dependent operations would wait on each);
        the scale is applied in the exponent's FFMA (``qk > 0``: the maximum of the scaled
        scores is the scaled maximum). Each loop unrolls: the accumulators stay registers."""
        neg = float32(-math.inf)
        if (kt + 1) * self.bn > Sk or (self.causal and (kt + 1) * self.bn > wg_row0 + 1):
            keys = Sk - kt * self.bn - key0                              # this thread's keys inside Sk
            diag = row0 - kt * self.bn - key0                            # its last key not after row slot 0
            lim = cuda.local.array(2, int32)                             # (ROWS) -> the row's columns kept
            for r in range(self.rows):
                x = keys
                if self.causal:
                    x = min(x, diag + self.slot_row[r] + 1)
                lim[r] = int32(max(min(x, self.bn), -1))                 # (in [-1, bn]: one 32-bit test a score)
            for g in range(self.s_regs // 4):
                for e in range(4):
                    i = 4 * g + e
                    if self.col_s(i) >= lim[self.slot_s(i)]:
                        s[i] = neg                                       # past Sk, or after the query
        part = cuda.local.array(8, float32)                              # (ROWS,PARTS) -> partial max, then sum
        for q in range(self.rows * PARTS):
            part[q] = neg
        for g in range(self.s_regs // 4):                                # (loops over S nest a group of 4
            for e in range(4):                                           # inside: NVVM unrolls them fully)
                i = 4 * g + e
                q = self.slot_s(i) * PARTS + g % PARTS
                part[q] = max(part[q], s[i])
        mx = cuda.local.array(2, float32)
        for r in range(self.rows):
            q = r * PARTS
            mx[r] = max(m[r], max(max(part[q], part[q + 1]), max(part[q + 2], part[q + 3])) * qk)
        for j in range(len(self.shuffles)):                              # the row's other threads
            for r in range(self.rows):
                mx[r] = max(mx[r], cuda.shfl_xor_sync(0xFFFFFFFF, mx[r], self.shuffles[j]))
        for r in range(self.rows):
            alpha[r] = ex2_approx_f32(m[r] - mx[r])                     # the first tile: exp2(-inf) = 0
            m[r] = mx[r]
        for q in range(self.rows * PARTS):
            part[q] = float32(0.0)
        for g in range(self.s_regs // 4):
            for e in range(4):
                i = 4 * g + e
                x = ex2_approx_f32(cuda.fma(s[i], qk, -mx[self.slot_s(i)]))   # one FFMA, one MUFU.EX2
                s[i] = x
                q = self.slot_s(i) * PARTS + g % PARTS
                part[q] += x
        for r in range(self.rows):
            q = r * PARTS
            l[r] = l[r] * alpha[r] + ((part[q] + part[q + 1]) + (part[q + 2] + part[q + 3]))

    @device
    def pack(self, s, pr):
        """P: the exponentials rounded to 16 bits, two a register (S's accumulators in order
        are the A fragments of O's MMA)."""
        for j in range(self.p_regs):
            if self.bf16:
                pr[j] = cvt_bf16x2_f32(s[2 * j], s[2 * j + 1])
            else:
                pr[j] = cvt_f16x2_f32(s[2 * j], s[2 * j + 1])

    @device
    def rescale(self, acc, o, alpha):
        """O's accumulators times their row's ``alpha`` (always: skipping it where no row's
        maximum grew measured 2-5% slower, benchmarks/RESULTS.md)."""
        acc_to_array(acc, o)
        for i in range(self.o_regs):
            o[i] *= alpha[self.slot_o(i)]
        return acc_from_array(o, self.o_regs)

    @device
    def turn_first(self, c):
        """Before the CTA's first unit, the last consumer passes the first turn to consumer 0."""
        if c == self.consumers - 1:
            named_barrier_arrive(TURN_BARRIER, 256)

    @device
    def turn_last(self, c):
        """After the CTA's last unit, consumer 0 takes the turn the last consumer passed it
        last, so that every arrival on a turn barrier is matched."""
        if c == 0:
            named_barrier_sync(TURN_BARRIER, 256)

    @device
    def turn_wait(self, c):
        """Wait until it is consumer ``c``'s turn to issue MMAs (the one before it in the ring
        passed it)."""
        named_barrier_sync(TURN_BARRIER + c, 256)

    @device
    def turn_pass(self, c):
        """Pass the turn to the next consumer in the ring. The ring runs on from one unit to
        the next (every consumer takes as many turns a unit), so consumer 0 issues a unit's
        first MMAs as soon as the last consumer has issued its last ones of the unit before,
        while that one waits for them and stores its O."""
        named_barrier_arrive(TURN_BARRIER + (c + 1) % self.consumers, 256)

    @device
    def consumer(self, p, c):
        """Consumer warpgroup ``c``: its 64 queries of each of the CTA's tiles."""
        sq = self.pipe_q.consumer_start()
        sk = self.pipe_k.consumer_start()
        sv = self.pipe_v.consumer_start()
        self.turn_first(c)                                               # consumer 0 issues first
        first, end, step = self.units(p)
        t = self.entry(p, first)
        for unit in range(first, end, step):
            b, h, m0, kt0, kt1 = self.tile(p, unit, t)
            t = self.entry(p, unit + step)                               # the next unit's, in flight
            if kt1 == kt0:                                               # (never; the test tells the compiler
                continue                                                 # so: measured 0.5-2 % faster)
            sq, sk, sv = self.attend(p, c, unit, m0, kt0, kt1, b, h, sq, sk, sv)
        self.turn_last(c)

    @device
    def attend(self, p, c, unit, m0, kt0, kt1, b, h, sq, sk, sv):
        """Consumer warpgroup ``c``'s 64 queries of work unit ``unit`` against its key tiles
        ``[kt0, kt1)``, then O (and the log-sum-exp) to global memory, or a part's partial
        result to the workspace (:meth:`store_part`). Returns the pipelines' states."""
        tid = cuda.threadIdx.x & 127
        base = cute.smem_base()
        qa = base + self.q_at + c * self.q_rows                         # this warpgroup's 64 rows of Q
        wg_row0 = m0 + c * 64                                            # the warpgroup's first query
        row0 = wg_row0 + self.row_t(tid)                 # the query of row slot 0
        key0 = self.col_t(tid)                           # the key of accumulator 0 in a tile
        s = cuda.local.array(self.s_regs, float32)                       # S's accumulators (CLayout_64xbn)
        o = cuda.local.array(self.o_regs, float32)                       # O's, to rescale
        pr = cuda.local.array(self.p_regs, uint32)                       # P: A fragments, 4 registers a k-block
        m = cuda.local.array(2, float32)
        l = cuda.local.array(2, float32)
        alpha = cuda.local.array(2, float32)
        for r in range(self.rows):
            m[r] = float32(-math.inf)
            l[r] = float32(0.0)
        self.pipe_q.consumer_wait(sq, p.err)
        self.pipe_k.consumer_wait(sk, p.err)
        self.turn_wait(c)
        acc_s = self.scores(qa, sk)                                      # S(kt0)
        self.turn_pass(c)
        acc_s = self.mma_s.wait(acc_s, 0)
        self.pipe_k.consumer_release(sk, 0)
        if kt1 == kt0 + 1:                                               # the unit's last S is done:
            self.pipe_q.consumer_release(sq, 0)                          # Q's stage is free for the next unit's
        sk = self.pipe_k.advance(sk)
        acc_to_array(acc_s, s)
        self.softmax(s, m, l, alpha, kt0, key0, row0, wg_row0, p.Sk, p.qk)
        self.pack(s, pr)
        acc_o = self.mma_o.zero()
        for kt in range(kt0 + 1, kt1):
            self.pipe_k.consumer_wait(sk, p.err)
            self.pipe_v.consumer_wait(sv, p.err)
            self.turn_wait(c)
            acc_s = self.scores(qa, sk)                                  # S(kt) = Q K(kt)^T ...
            acc_o = self.rescale(acc_o, o, alpha)                        # (O to tile kt-1's maxima, under S)
            acc_o = self.mma_o.mma(acc_o, pr, base + self.v_at + sv.stage * self.v_bytes, kt == kt0 + 1)  # ... O += P V
            self.turn_pass(c)
            acc_s = self.mma_s.wait(acc_s, 1)                           # S(kt) is done; P V may run on
            self.pipe_k.consumer_release(sk, 0)
            if kt == kt1 - 1:                                            # the unit's last S
                self.pipe_q.consumer_release(sq, 0)
            sk = self.pipe_k.advance(sk)
            acc_to_array(acc_s, s)
            self.softmax(s, m, l, alpha, kt, key0, row0, wg_row0, p.Sk, p.qk)
            acc_o = self.mma_o.wait(acc_o, 0)
            self.pipe_v.consumer_release(sv, 0)
            sv = self.pipe_v.advance(sv)
            self.pack(s, pr)
        sq = self.pipe_q.advance(sq)                                     # (released after the last S)
        self.pipe_v.consumer_wait(sv, p.err)
        self.turn_wait(c)
        acc_o = self.rescale(acc_o, o, alpha)
        acc_o = self.mma_o.mma(acc_o, pr, base + self.v_at + sv.stage * self.v_bytes, kt1 == kt0 + 1)
        self.turn_pass(c)
        acc_o = self.mma_o.wait(acc_o, 0)
        self.pipe_v.consumer_release(sv, 0)
        sv = self.pipe_v.advance(sv)
        acc_to_array(acc_o, o)
        if not self.causal and unit >= p.whole:
            self.store_part(p, unit, o, m, l, row0 - m0, key0)
        else:
            self.store(p, o, l, m, row0, key0, b, h)
        return sq, sk, sv

    @device
    def row_sums(self, l):
        """The rows' sums ``l`` across the threads that share the rows."""
        for j in range(len(self.shuffles)):
            for r in range(self.rows):
                l[r] += cuda.shfl_xor_sync(0xFFFFFFFF, l[r], self.shuffles[j])

    @device
    def store_part(self, p, unit, o, m, l, row0, col0):
        """A part of a split tile (:class:`SplitKV`): O's accumulators ``o`` as they are (not
        divided by the sums), float32 at ``(part, row, column)`` of the workspace, and each
        row's maximum and sum at ``(part, row)`` after them (by the threads of column 0);
        ``row0``: the tile's row of row slot 0."""
        self.row_sums(l)
        u = unit - p.whole                                               # the part's index among the parts
        ob = p.ws + u * (self.bm * self.d * 4)                           # (bm,d) -> float32, row-major
        for i in range(0, self.o_regs, 2):
            st_global_v2_b32(ob + 4 * ((row0 + self.row_v(i)) * self.d + col0 + self.col_o(i)), o[i], o[i + 1])
        if col0 == 0:
            mb = p.ws + (p.units - p.whole) * (self.bm * self.d * 4) + u * (self.bm * 8)   # (bm) -> (max, sum)
            for r in range(self.rows):
                st_global_v2_b32(mb + 8 * (row0 + self.slot_row[r]), m[r], l[r])

    @device
    def store(self, p, o, l, m, row0, col0, b, h):
        """O / l as 16-bit pairs into the rows inside ``Sq``; the log-sum-exp by the threads of
        column 0. Row slot by row slot: one test of the row and one address a row, the
        columns' offsets constants (a test and an address a pair of columns cost about 17
        instructions a pair, a fifth of a unit's at 512 keys)."""
        self.row_sums(l)
        ob = p.o + 2 * (b * p.osb + h * p.osh + col0)                    # (row, column) -> O's element
        for r in range(self.rows):
            row = row0 + self.slot_row[r]
            if row < p.Sq:
                inv = float32(1.0) / l[r] if l[r] > 0 else float32(0.0)
                at = ob + 2 * row * p.oss                                # the row's column col0
                for i in range(0, self.o_regs, 2):
                    if self.slot_o(i) == r:                              # (the row slot's accumulators)
                        if self.bf16:
                            w = cvt_bf16x2_f32(o[i] * inv, o[i + 1] * inv)
                        else:
                            w = cvt_f16x2_f32(o[i] * inv, o[i + 1] * inv)
                        st_global_b32(at + 2 * self.col_o(i), w)
        if p.lse != 0 and col0 == 0:
            for r in range(self.rows):
                row = row0 + self.slot_row[r]
                if row < p.Sq:
                    st_global_b32(p.lse + 4 * ((b * p.H + h) * p.Sq + row),
                                  (m[r] + math.log2(l[r])) / float32(LOG2E))


# ---- the kernel and its launch ----------------------------------------------------------

_KERNELS = {}


def hopper_attention_kernel(dtype, d, causal, bm=None, bn=None):
    """The compiled kernel (an :class:`~codegen.flash_attention.AttentionKernel`) of ``dtype``,
    head dim ``d`` and ``causal``, of ``bm`` queries a CTA and ``bn`` keys a tile (default
    :data:`TILES`), built once."""
    dbm, dbn = tile_for(d, causal)
    key = (dtype, d, bool(causal), dbm if bm is None else bm, dbn if bn is None else bn)
    hit = _KERNELS.get(key)
    if hit is None:
        hit = _KERNELS[key] = _build(*key)
    return hit


def _build(dtype, d, causal, bm, bn):
    from .flash_attention import AttentionKernel

    cute.activate()
    FA = make_hopper_attention(dtype, d, causal, bm, bn)
    Args = HOPPER_ARGS.tuple_class()
    producer_regs, consumer_regs = FA.regs

    def attention_sm90(tmap_q, tmap_k, tmap_v, o, lse, B, Sq, Sk, H, ratio, osb, osh, oss, qk, err, ws, whole, splits,
                       units, sched):
        p = Args(tmap_q, tmap_k, tmap_v, o, lse, B, Sq, Sk, H, ratio, osb, osh, oss, qk, err, ws, whole, splits, units,
                 sched)
        FA.init()                                                        # every thread waits for the barriers
        if cuda.threadIdx.x < 128:                                       # warpgroup 0: the producer
            cute.setmaxnreg_dec(producer_regs)
            if cuda.threadIdx.x == 0:
                FA.producer(p)
        else:                                                            # warpgroups 1 on: the consumers
            cute.setmaxnreg_inc(consumer_regs)
            FA.consumer(p, (cuda.threadIdx.x >> 7) - 1)

    kernel = cuda.jit(attention_sm90)
    return AttentionKernel(dtype, d, causal, bm, kernel, FA.threads, 1, FA.smem, args=HOPPER_ARGS, kind="sm90",
                           pieces=FA, arch=(9, 0, "a"), bn=bn)  # wgmma, setmaxnreg: the architecture-specific target


_COMBINE = {}
COMBINE_THREADS = 128


def combine_kernel(dtype, d, bm):
    """The compiled kernel (an :class:`~codegen.flash_attention.AttentionKernel`) that merges
    the parts of split tiles (:class:`SplitKV`) of ``bm`` queries at head dim ``d`` into O
    (``dtype``) and the log-sum-exp: a thread a (split tile, row, pair of columns), the parts'
    O weighted by ``2^(m_part - m)`` (``m`` the row's largest maximum) and divided by the
    sums weighted alike."""
    key = (dtype, d, bm)
    hit = _COMBINE.get(key)
    if hit is None:
        hit = _COMBINE[key] = _build_combine(*key)
    return hit


def _build_combine(dtype, d, bm):
    from .flash_attention import AttentionKernel

    cute.activate()
    bf16 = dtype == "bf16"
    pairs = d // 2

    def attention_combine(ws, o, lse, whole, splits, rest, n_m, H, Sq, osb, osh, oss):
        idx = cuda.blockIdx.x * COMBINE_THREADS + cuda.threadIdx.x      # (rest,bm,d/2) -> thread
        tr = idx // pairs
        j = idx - tr * pairs                                             # the pair of columns
        i = tr // bm                                                     # the split tile
        r = tr - i * bm                                                  # its row
        t = whole + i
        bh = t // n_m
        b = bh // H
        h = bh - b * H
        row = (t - bh * n_m) * bm + r
        if i < rest and row < Sq:
            first = i * splits                                           # the tile's first part
            ml = ws + rest * splits * (bm * d * 4) + 8 * (first * bm + r)    # (parts,bm) -> (max, sum): part 0's
            ob = ws + 4 * ((first * bm + r) * d + 2 * j)                 # (parts,bm,d) -> float32: part 0's
            top = float32(-math.inf)
            for k0 in range(0, splits, 4):                               # (four parts' loads at a time)
                for e in range(4):
                    if k0 + e < splits:
                        top = max(top, u32_as_f32(ld_global_nc_b64(ml + 8 * bm * (k0 + e)) & 0xFFFFFFFF))
            total = float32(0.0)
            o0 = float32(0.0)
            o1 = float32(0.0)
            for k0 in range(0, splits, 4):
                for e in range(4):
                    if k0 + e < splits:
                        w2 = ld_global_nc_b64(ml + 8 * bm * (k0 + e))
                        x = ld_global_nc_b64(ob + 4 * bm * d * (k0 + e))
                        w = ex2_approx_f32(u32_as_f32(w2 & 0xFFFFFFFF) - top)
                        total += w * u32_as_f32(w2 >> 32)
                        o0 += w * u32_as_f32(x & 0xFFFFFFFF)
                        o1 += w * u32_as_f32(x >> 32)
            inv = float32(1.0) / total if total > 0 else float32(0.0)
            if bf16:
                v = cvt_bf16x2_f32(o0 * inv, o1 * inv)
            else:
                v = cvt_f16x2_f32(o0 * inv, o1 * inv)
            st_global_b32(o + 2 * (b * osb + h * osh + row * oss + 2 * j), v)
            if lse != 0 and j == 0:
                st_global_b32(lse + 4 * ((b * H + h) * Sq + row), (top + math.log2(total)) / float32(LOG2E))

    return AttentionKernel(dtype, d, False, bm, cuda.jit(attention_combine), COMBINE_THREADS, args=COMBINE_ARGS,
                           kind="sm90-combine")


def _launch_combine(fa, dtype, split, o, lse, dims, stream_handle, sim, ws):
    """Merge the split tiles' parts in the workspace ``ws`` into O and the log-sum-exp."""
    B, H, Sq, _, _ = dims
    kern = combine_kernel(dtype, fa.d, fa.bm)
    slots = COMBINE_ARGS.slots()
    slots.set(ws=ws, o=o.ptr, lse=lse, whole=split.whole, splits=split.splits, rest=split.rest,
              n_m=(Sq + fa.bm - 1) // fa.bm, H=H, Sq=Sq, osb=o.strides[0], osh=o.strides[1], oss=o.strides[2])
    grid = -(-split.rest * fa.bm * (fa.d // 2) // COMBINE_THREADS)
    if sim:
        kern.kernel[grid, COMBINE_THREADS](*slots.python_values())
    else:
        kern.function().launch(grid, COMBINE_THREADS, 0, stream_handle, slots.pointers)


_WS = {}                    # (context, stream) -> (bytes, address): a stream's split-KV workspace


def _workspace(nbytes, stream_handle, sim, keep, capture):
    """The address of a split-KV workspace of at least ``nbytes``. On a GPU, the stream's
    own, as the GEMM's split-K keeps one (its launches run in order, so one serves them all;
    kernels on two streams may overlap), made once of the size any launch on ``sms``
    multiprocessors can need (a split launch has at most one part an SM); during a CUDA
    graph capture (``capture``, a :class:`codegen.host.GraphCapture`), memory of the
    graph's own; in the simulator a fresh one a launch. Nothing in it needs zeroing: each
    part writes all it reads."""
    from . import driver

    if capture is not None:
        return capture.alloc(nbytes)
    if sim:
        import numpy as np

        from .intrinsics.sim import register_global

        arr = np.zeros(nbytes, np.uint8)
        keep.append(arr)
        return register_global(arr)
    key = (driver.ensure_context(), stream_handle)
    hit = _WS.get(key)
    if hit is None or hit[0] < nbytes:               # (a larger one replaces it, kept: a launch may read it)
        most = _multiprocessors(False) * 64 * max(REGS) * (max(d for d, _ in TILES) + 2) * 4
        hit = _WS[key] = (max(nbytes, most), driver.mem_alloc(max(nbytes, most)))
    return hit[1]


_SCHEDULES = {}              # (context, heads, n_m, bm, bn, key tiles, sms, paired) -> (grid, table's address)


def _schedule(fa, heads, n_m, Sk, sms, sim, keep, capturing):
    """The grid and the device address of the :class:`CausalSchedule` of ``heads`` heads of
    ``n_m`` query tiles against ``Sk`` keys, made once a shape and context (as the tensor maps,
    kept: a launch may read it); a new one is not made during a CUDA graph capture
    (``capturing``), which a copy to the device would break."""
    from . import driver
    from .errors import GemmError

    n_kt = (Sk + fa.bn - 1) // fa.bn
    shape = (heads, n_m, fa.bm, fa.bn, n_kt, sms, fa.d in PAIRED)
    if sim:
        from .intrinsics.sim import register_global

        s = _plan_schedule(*shape)
        keep.append(s.table)
        return s.grid, register_global(s.table)
    key = (driver.ensure_context(),) + shape
    hit = _SCHEDULES.get(key)
    if hit is None:
        if capturing:
            raise GemmError(f"attention: the causal schedule of {heads} heads (batch x heads) of {n_m} query tiles is "
                            f"new during a CUDA graph capture, where it cannot be copied to the device; call attention "
                            f"once on this shape before capturing")
        if len(_SCHEDULES) >= _MAX_MAPS:
            _SCHEDULES.clear()             # (never freed, as the maps: a launch may read it)
        s = _plan_schedule(*shape)
        hit = _SCHEDULES[key] = (s.grid, driver.mem_alloc(s.table.nbytes))
        driver.copy_to_device(hit[1], s.table.tobytes())
    return hit


def _plan_schedule(heads, n_m, bm, bn, n_kt, sms, paired):
    """:meth:`CausalSchedule.plan` of a launch."""
    return CausalSchedule.plan(heads, n_m, causal_keys(n_m, bm, bn, n_kt), sms, paired)


_MAX_MAPS = 1024
_MAPS = {}


def _tensor_map(load, x, shape, strides, outer, sim, keep, capturing):
    """The device address of ``load``'s rank-4 map of the array described by ``x`` (cached by
    its address, shape and strides: a map encodes nothing else). A new one is not made
    during a CUDA graph capture (``capturing``), which a copy to the device would break."""
    from . import driver
    from .errors import GemmError

    key = (load, str(x.device), x.ptr, shape, strides, outer)             # a map lives on one device
    if sim:
        arr, addr = load.tensor_map_4d(x.ptr, shape, strides, outer, simulated=True)
        keep.append(arr)
        return addr
    hit = _MAPS.get(key)
    if hit is None and capturing:
        raise GemmError(f"attention: {load.name.lower()} at {x.ptr:#x} (shape {x.shape}, strides {x.strides}) is new "
                        f"during a CUDA graph capture, where its TMA map cannot be copied to the device; call "
                        f"attention once on these tensors before capturing")
    if hit is None:
        if len(_MAPS) >= _MAX_MAPS:
            _MAPS.clear()                  # (the maps' memory is small and never freed: a launch may read it)
        hit = _MAPS[key] = driver.mem_alloc(128)
        driver.copy_to_device(hit, load.tensor_map_4d(x.ptr, shape, strides, outer))
    return hit


def launch(kern, xs, o, lse, dims, scale, stream_handle, sim, capture=None):
    """Launch the Hopper kernel ``kern`` on the arrays described by ``xs`` (q, k, v), into the
    output described by ``o`` and the log-sum-exp at address ``lse`` (0: none), and, where
    tiles are split (:class:`SplitKV`), the merge kernel after it; ``capture``: the CUDA
    graph capture in progress (a :class:`codegen.host.GraphCapture`), or None."""
    from .errors import GemmError

    B, H, Sq, Sk, Hk = dims
    capturing = capture is not None
    dq, dk, dv = xs
    fa = kern.pieces
    D = fa.d
    keep = []
    err, word = _err_word(sim)
    outer = lambda x: ((x.shape[1], x.strides[1]), (B, x.strides[0]))   # noqa: E731  (heads, batch)
    slots = HOPPER_ARGS.slots()
    slots.set(tmap_q=_tensor_map(fa.load_q, dq, (Sq, D), (dq.strides[2], 1), outer(dq), sim, keep, capturing),
              tmap_k=_tensor_map(fa.load_k, dk, (Sk, D), (dk.strides[2], 1), outer(dk), sim, keep, capturing),
              tmap_v=_tensor_map(fa.load_v, dv, (D, Sk), (1, dv.strides[2]), outer(dv), sim, keep, capturing),
              o=o.ptr, lse=lse, B=B, Sq=Sq, Sk=Sk, H=H, ratio=H // Hk, osb=o.strides[0], osh=o.strides[1],
              oss=o.strides[2], qk=scale * LOG2E, err=err)
    n_m = (Sq + fa.bm - 1) // fa.bm
    tiles = B * H * n_m
    sms = _multiprocessors(sim)                                          # a CTA an SM, walking the units
    sched = 0
    if fa.causal:                                                        # (tiles of unequal work, none split)
        split = SplitKV(tiles, 1, tiles)
        grid, sched = _schedule(fa, B * H, n_m, Sk, sms, sim, keep, capturing)
    else:
        split = SplitKV.plan(tiles, sms, (Sk + fa.bn - 1) // fa.bn)
        grid = split.grid(sms)
    ws = 0
    if split.splits > 1:
        if capturing and not combine_kernel(kern.dtype, D, fa.bm).loaded():
            raise GemmError(f"attention: this shape (batch {B}, heads {H}, seq_q {Sq}, seq_k {Sk}) splits its last "
                            f"wave, and the kernel that merges the parts is not loaded yet; it cannot be during a "
                            f"CUDA graph capture: call attention once on this shape before capturing")
        ws = _workspace(split.workspace_bytes(fa.bm, D), stream_handle, sim, keep, capture)
    slots.set(ws=ws, whole=split.whole, splits=split.splits, units=split.units, sched=sched)
    if sim:
        kern.kernel[grid, kern.threads, 0, kern.smem](*slots.python_values())
        if word[0]:                                                      # the launch is done: read the word
            raise RuntimeError("attention (sm90): a wait on an mbarrier timed out in the kernel")
    else:
        kern.function().launch(grid, kern.threads, kern.smem, stream_handle, slots.pointers)
    if split.splits > 1:
        _launch_combine(fa, kern.dtype, split, o, lse, dims, stream_handle, sim, ws)


def check_error():
    """Raise if a wait in a Hopper attention kernel of the current context timed out (a lost
    mbarrier arrival: its output is wrong) since the last check, and clear the word;
    synchronises the context (the kernel writes the word, the host reads it after)."""
    from . import driver

    ptr = _ERR.get(driver.ensure_context())
    if ptr is not None and driver.read_int32(ptr):
        driver.copy_to_device(ptr, bytes(4))
        raise RuntimeError("attention (sm90): a wait on an mbarrier timed out in a kernel")


_ERR = {}


def _multiprocessors(sim):
    """Multiprocessors the persistent grid fills (the simulator's: two CTAs)."""
    if sim:
        return 2
    from .host import _multiprocessors

    return _multiprocessors()


def _err_word(sim):
    """The kernel's error word (a lost mbarrier arrival writes 1 there): its address, and in
    the simulator the host array (a word a launch), else None (a word a context, read by
    :func:`check_error`)."""
    if sim:
        import numpy as np

        from .intrinsics.sim import register_global

        w = np.zeros(1, np.int32)
        return register_global(w), w
    from . import driver

    ctx = driver.ensure_context()
    if ctx not in _ERR:
        _ERR[ctx] = driver.mem_alloc(4)
    return _ERR[ctx], None
