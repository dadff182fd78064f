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

The kernel's arguments ``p`` (a ``NamedTuple``) carry ``tmap_a``, ``tmap_b`` (the tensor
maps' device addresses) and ``err`` (the error word of the bounded waits).
"""

from __future__ import annotations

from dataclasses import dataclass

from .objects import device, device_object, late_import
from .smem import smem_base

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

    @device
    def prepare_maps(self, p):
        """Producer, before its first load: both operands' tensor maps made visible to the
        TMA unit, then fetched (the fences first, so that the fetches overlap)."""
        self.load_a.acquire(p.tmap_a)
        self.load_b.acquire(p.tmap_b)
        self.load_a.prefetch(p.tmap_a)
        self.load_b.prefetch(p.tmap_b)

    @device
    def load(self, p, state, work, kt):
        """Producer: k-tile ``kt`` of the tile of ``work`` (a :class:`WorkTile`: its corner
        and matrix of the batch) into the stage of ``state``; returns the next state."""
        self.pipeline.producer_acquire(state, p.err)
        bar = self.pipeline.full_barrier(state)
        base = smem_base()
        k0 = kt * self.bk
        la = work.l
        if self.grouped:               # every group's rows are rows of one A
            la = 0
        self.load_a.load(p.tmap_a, base + self.a + state.stage * self.a_stage, work.m0, k0, la, bar)
        if self.multicast_b:
            self.load_b.load_multicast(p.tmap_b, base + self.b + state.stage * self.b_stage, work.n0, k0, work.l,
                                       bar, cluster_ctarank())
        else:
            self.load_b.load(p.tmap_b, base + self.b + state.stage * self.b_stage, work.n0, k0, work.l, bar)
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
