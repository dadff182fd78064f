"""The collective mainloop of a warp-specialized Hopper GEMM: TMA loads into a pipeline of
shared-memory stages, warpgroup MMAs out of it.

:class:`WgmmaMainloop` composes a :class:`~codegen.cute.pipeline.TmaPipeline`, the TMA loads
of A and B (:class:`~codegen.cute.tma.TmaLoad`) and a warpgroup MMA
(:class:`~codegen.cute.wgmma.WgmmaMMA`) over the stages of a
:class:`~codegen.cute.smem.SharedStorage`, as CUTLASS's ``CollectiveMma`` for sm90 does:

* the producer (one thread) calls :meth:`WgmmaMainloop.load` once per k-tile: it acquires a
  stage and issues both operands' boxes into it;
* each consumer warpgroup calls :meth:`WgmmaMainloop.mma_step` once per k-tile: it waits for
  the stage, issues its k-tile of MMAs, waits for the previous k-tile's MMAs and releases
  that k-tile's stage (so one group of MMAs stays in flight while the next is issued); after
  a tile's last k-tile, :meth:`WgmmaMainloop.mma_tail` waits for the last group and releases
  its stage.

An operand that TMA cannot read (:class:`~codegen.cute.gmem_copy.GmemStageCopy` in place of
its :class:`~codegen.cute.tma.TmaLoad`) is copied by the whole producer warpgroup: every
producer thread then runs :meth:`WgmmaMainloop.load_unit` over a work unit's k-tiles,
thread 0 alone issuing the TMA loads, and each commits its stores to the stage
(``pipeline.copiers`` is 128). Where one operand is copied, its next k-tile's loads are in
flight while this one's words are stored (two k-tiles of registers).

The kernel's arguments ``p`` (a ``NamedTuple``) carry ``tmap_a``, ``tmap_b`` (the tensor
maps' device addresses, or copy descriptors') and ``err`` (the error word of the bounded
waits).
"""

from __future__ import annotations

from dataclasses import dataclass

from .objects import device, device_object, late_import
from .smem import smem_base

(cuda, uint32) = late_import("numba", "cuda", "uint32")

(cluster_ctarank, mapa_shared) = late_import("codegen.intrinsics", "cluster_ctarank", "mapa_shared")

__all__ = ["WgmmaMainloop"]


@device_object
@dataclass(frozen=True)
class WgmmaMainloop:
    """``a``/``b``: the operands' stage regions (byte offsets in the shared storage) and
    ``a_stage``/``b_stage`` the bytes of one stage; ``a_rows``: bytes between two consumer
    warpgroups' rows of A (each multiplies its own 64 rows); ``bk``: the k-tile;
    ``share``: the operand a cluster's two CTAs share (each loads half, multicast), or None;
    ``grouped``: a grouped GEMM, whose A is one matrix (the groups' rows) and B one matrix a
    group (:attr:`WorkTile.l`)."""

    pipeline: object
    load_a: object
    load_b: object
    mma: object
    a: int
    b: int
    a_stage: int
    b_stage: int
    a_rows: int
    bk: int
    share: str = None
    grouped: bool = False

    @property
    def multicast_b(self):
        return self.share == "B"

    @property
    def copies(self):
        """Whether the producer warpgroup copies an operand (every producer thread loads)."""
        return self.pipeline.copiers > 0

    @device
    def prepare_maps(self, p):
        """Producer, before its first load: both operands' tensor maps made visible to the
        TMA unit, then fetched (the fences first, so that the fetches overlap)."""
        if cuda.threadIdx.x == 0:
            self.load_a.acquire(p.tmap_a)
            self.load_b.acquire(p.tmap_b)
            self.load_a.prefetch(p.tmap_a)
            self.load_b.prefetch(p.tmap_b)

    @device
    def load(self, p, state, work, kt):
        """Producer: k-tile ``kt`` of the tile of ``work`` (a :class:`WorkTile`: its corner
        and matrix of the batch) into the stage of ``state``; returns the next state."""
        base = smem_base()
        k0 = kt * self.bk
        la = work.l
        if self.grouped:               # every group's rows are rows of one A
            la = 0
        sa = base + self.a + state.stage * self.a_stage
        sb = base + self.b + state.stage * self.b_stage
        bar = self.pipeline.full_barrier(state)
        if self.copies:                # every producer thread: TMA from thread 0, copies from all
            self.pipeline.producer_wait(state, p.err)
            if cuda.threadIdx.x == 0:
                self.pipeline.producer_expect(state)
                if self.load_a.tma:
                    self.load_a.load(p.tmap_a, sa, work.m0, k0, la, bar)
                if self.load_b.tma:
                    self.load_b.load(p.tmap_b, sb, work.n0, k0, work.l, bar)
            if not self.load_a.tma:
                self.load_a.load(p.tmap_a, sa, work.m0, k0, la, bar)
            if not self.load_b.tma:
                self.load_b.load(p.tmap_b, sb, work.n0, k0, work.l, bar)
            self.pipeline.producer_commit(state)
            return self.pipeline.advance(state)
        self.pipeline.producer_acquire(state, p.err)
        self.load_a.load(p.tmap_a, sa, work.m0, k0, la, bar)
        if self.multicast_b:
            self.load_b.load_multicast(p.tmap_b, sb, work.n0, k0, work.l, bar, cluster_ctarank())
        else:
            self.load_b.load(p.tmap_b, sb, work.n0, k0, work.l, bar)
        return self.pipeline.advance(state)

    @property
    def copy_b(self):
        """In a kernel that copies one operand: whether it is B (else A)."""
        return not self.load_b.tma

    @property
    def copied(self):
        """The copied operand's :class:`~codegen.cute.gmem_copy.GmemStageCopy` (one operand copied)."""
        return self.load_b if self.copy_b else self.load_a

    @property
    def pipelined_copy(self):
        """Whether exactly one operand is copied (its k-tiles are then fetched one ahead)."""
        return self.load_a.tma != self.load_b.tma

    @device
    def load_unit(self, p, state, work):
        """Producer warpgroup of a kernel that copies an operand: every k-tile of the unit of
        ``work``; returns the next state. With one operand copied, the loads of k-tile
        ``kt + 1`` are issued before k-tile ``kt`` waits for its stage and is stored."""
        if not self.pipelined_copy:
            for kt in range(work.kt0, work.kt1):
                state = self.load(p, state, work, kt)
            return state
        ra = cuda.local.array(self.copied.buf_words, uint32)   # k-tiles kt0, kt0 + 2, ...
        rb = cuda.local.array(self.copied.buf_words, uint32)   # k-tiles kt0 + 1, kt0 + 3, ...
        self.fetch_copy(p, work, work.kt0, ra)
        for kt in range(work.kt0, work.kt1, 2):
            if kt + 1 < work.kt1:
                self.fetch_copy(p, work, kt + 1, rb)
            state = self.fill(p, state, work, kt, ra)
            if kt + 1 < work.kt1:
                if kt + 2 < work.kt1:
                    self.fetch_copy(p, work, kt + 2, ra)
                state = self.fill(p, state, work, kt + 1, rb)
        return state

    @device
    def fetch_copy(self, p, work, kt, regs):
        """Issue the copied operand's loads of k-tile ``kt`` of ``work`` into ``regs``."""
        if self.copy_b:
            self.copied.fetch(p.tmap_b, work.n0, kt * self.bk, work.l, regs)
        else:
            self.copied.fetch(p.tmap_a, work.m0, kt * self.bk, 0 if self.grouped else work.l, regs)

    @device
    def fill(self, p, state, work, kt, regs):
        """k-tile ``kt`` into the stage of ``state``: once it is empty, thread 0 issues the other
        operand's TMA loads and every thread stores its part of the copied one from ``regs``;
        returns the next state."""
        self.pipeline.producer_wait(state, p.err)
        base = smem_base()
        bar = self.pipeline.full_barrier(state)
        if cuda.threadIdx.x == 0:
            self.pipeline.producer_expect(state)
            if self.copy_b:
                self.load_a.load(p.tmap_a, base + self.a + state.stage * self.a_stage, work.m0, kt * self.bk,
                                 0 if self.grouped else work.l, bar)
            else:
                self.load_b.load(p.tmap_b, base + self.b + state.stage * self.b_stage, work.n0, kt * self.bk,
                                 work.l, bar)
        if self.copy_b:
            self.copied.store(regs, base + self.b + state.stage * self.b_stage)
        else:
            self.copied.store(regs, base + self.a + state.stage * self.a_stage)
        self.pipeline.producer_commit(state)
        return self.pipeline.advance(state)

    @device
    def peer_empty(self):
        """The cluster peer's empty barriers (shared::cluster address; 0 without a cluster)."""
        if self.pipeline.cluster > 1:
            return mapa_shared(smem_base() + self.pipeline.empty, cluster_ctarank() ^ 1)
        return 0

    @device
    def mma_step(self, p, acc, state, prev, c, first, peer):
        """Consumer ``c``: the MMAs of the k-tile in stage ``state`` (``first``: the tile's
        first k-tile, whose MMAs ignore ``acc``); then, once the k-tile before has finished,
        its stage ``prev`` is released. Returns ``(acc, next state, state)``."""
        self.pipeline.consumer_wait(state, p.err)
        base = smem_base()
        acc = self.mma.mma(acc, base + self.a + state.stage * self.a_stage + c * self.a_rows,
                           base + self.b + state.stage * self.b_stage, first)
        acc = self.mma.wait(acc, 1)
        if not first:
            self.pipeline.consumer_release(prev, peer)
        return acc, self.pipeline.advance(state), state

    @device
    def mma_tail(self, acc, prev, peer):
        """After a tile's last k-tile: wait for its MMAs and release its stage ``prev``."""
        acc = self.mma.wait(acc, 0)
        self.pipeline.consumer_release(prev, peer)
        return acc
