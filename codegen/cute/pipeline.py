"""Pipelines over mbarriers: a ring of shared-memory stages between a producer and consumers.

Each stage has a "full" barrier (the producer's bytes arrived) and an "empty" one (every
consumer is done reading the stage). A :class:`PipelineState` says where a producer or a
consumer is: the ``stage`` and the ``phase`` (parity) of that stage's barriers it
waits for. As in CUTLASS's ``PipelineTmaAsync``:

* the producer calls :meth:`TmaPipeline.producer_acquire` before it fills a stage (it waits
  until the stage is empty, then tells the full barrier how many bytes TMA will deliver),
  issues the TMA loads on :meth:`TmaPipeline.full_barrier`, and advances;
* a consumer calls :meth:`TmaPipeline.consumer_wait` (until the bytes arrived), reads the
  stage, :meth:`TmaPipeline.consumer_release` it, and advances.

The producer starts at phase 1 (:meth:`TmaPipeline.producer_start`), as the phase before a
fresh barrier's first, which is complete; it fills the first ``stages`` stages without
asking (a wait that is sure to succeed still costs the time of one on the critical path
of a kernel's start). Where the producer warpgroup's threads also fill a stage with ordinary
stores (an operand TMA cannot read, :class:`~codegen.cute.gmem_copy.GmemStageCopy`), the
full barrier waits for those ``copiers`` too: each waits for the empty stage
(:meth:`TmaPipeline.producer_wait`), one expects the TMA bytes
(:meth:`TmaPipeline.producer_expect`), and each commits its stores
(:meth:`TmaPipeline.producer_commit`). Every wait is bounded (:func:`mbarrier_wait`): a lost arrival writes 1 to the
kernel's error word after :data:`WAIT_TIMEOUT_NS` and goes on, instead of hanging the GPU.

>>> pipe = TmaPipeline(stages=3, tx_bytes=49152, full=0, empty=24, arrivals=2)
>>> s = pipe.consumer_start()
>>> [tuple(s := pipe.advance(s))[:2] for _ in range(4)]
[(1, 0), (2, 0), (0, 1), (1, 1)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .objects import device, device_function, device_object, late_import
from .smem import smem_base

(cuda,) = late_import("numba", "cuda")
(cluster_sync, fence_mbarrier_init, fence_proxy_async, globaltimer, mbarrier_arrive, mbarrier_arrive_cluster,
 mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_try_wait, st_global_b32) = late_import(
    "codegen.intrinsics", "cluster_sync", "fence_mbarrier_init", "fence_proxy_async", "globaltimer", "mbarrier_arrive",
    "mbarrier_arrive_cluster", "mbarrier_arrive_expect_tx", "mbarrier_init", "mbarrier_try_wait", "st_global_b32")

__all__ = ["PipelineState", "TmaPipeline", "mbarrier_wait", "WAIT_TIMEOUT_NS"]

#: How long a wait on an mbarrier spins before it reports a lost arrival (2 s).
WAIT_TIMEOUT_NS = 2_000_000_000


class PipelineState(NamedTuple):
    """A producer's or consumer's place in a pipeline: the stage, its barriers' parity, and
    how many stages it has passed (the producer fills the first ``stages`` without waiting)."""

    stage: int
    phase: int
    count: int


@device_function(once=True)
def mbarrier_wait(addr, phase, err):
    """Wait until the phase of parity ``phase`` of the mbarrier at shared address ``addr`` has
    completed; after :data:`WAIT_TIMEOUT_NS` write 1 to the int32 at global address ``err``
    and return (a lost arrival is reported, not hung on)."""
    if mbarrier_try_wait(addr, phase) == 0:
        t0 = globaltimer()
        while mbarrier_try_wait(addr, phase) == 0:
            if globaltimer() - t0 > WAIT_TIMEOUT_NS:
                st_global_b32(err, 1)
                break


@device_object
@dataclass(frozen=True)
class TmaPipeline:
    """``stages`` stages filled by TMA, ``tx_bytes`` a stage; barriers at byte offsets
    ``full`` and ``empty`` of the shared storage (8 bytes a stage each); ``arrivals``:
    the consumer arrivals that empty a stage (one per consumer warpgroup, times the CTAs of
    a cluster that share it); ``cluster``: CTAs whose consumers release each other's stages
    (2: each consumer arrives on its own CTA's empty barrier and the peer's); ``copiers``:
    producer threads that also fill each stage with ordinary stores (0: TMA fills it)."""

    stages: int
    tx_bytes: int
    full: int
    empty: int
    arrivals: int
    cluster: int = 1
    copiers: int = 0

    @device
    def init(self):
        """Thread 0 initialises the barriers; then every thread of the CTA (of the
        cluster) waits until they exist."""
        if cuda.threadIdx.x == 0:
            base = smem_base()
            for s in range(self.stages):
                mbarrier_init(base + self.full + 8 * s, 1 + self.copiers)
                mbarrier_init(base + self.empty + 8 * s, self.arrivals)
            fence_mbarrier_init()
        if self.cluster > 1:
            cluster_sync()
        else:
            cuda.syncthreads()

    @device
    def finish(self):
        """At the kernel's end: in a cluster, no CTA exits while its peer may still write to
        its stages or arrive on its barriers."""
        if self.cluster > 1:
            cluster_sync()

    @device
    def producer_start(self):
        return PipelineState(0, 1, 0)

    @device
    def consumer_start(self):
        return PipelineState(0, 0, 0)

    @device
    def advance(self, state):
        """The next stage (its phase flips after the last)."""
        if state.stage == self.stages - 1:
            return PipelineState(0, state.phase ^ 1, state.count + 1)
        return PipelineState(state.stage + 1, state.phase, state.count + 1)

    @device
    def full_barrier(self, state):
        """Shared address of the stage's full barrier (the one TMA loads signal)."""
        return smem_base() + self.full + 8 * state.stage

    @device
    def producer_acquire(self, state, err):
        """Wait until the stage is empty (the first ``stages`` fills are: no wait); then expect
        ``tx_bytes`` on its full barrier."""
        self.producer_wait(state, err)
        self.producer_expect(state)

    @device
    def producer_wait(self, state, err):
        """Wait until the stage is empty (the first ``stages`` fills are: no wait)."""
        if state.count >= self.stages:
            mbarrier_wait(smem_base() + self.empty + 8 * state.stage, state.phase, err)

    @device
    def producer_expect(self, state):
        """Expect ``tx_bytes`` of TMA on the stage's full barrier (one arrival)."""
        mbarrier_arrive_expect_tx(smem_base() + self.full + 8 * state.stage, self.tx_bytes)

    @device
    def producer_commit(self, state):
        """A copier is done storing its part of the stage: its stores are made visible to
        the async proxy (wgmma reads through it), then it arrives on the full barrier."""
        fence_proxy_async()
        mbarrier_arrive(smem_base() + self.full + 8 * state.stage)

    @device
    def consumer_wait(self, state, err):
        """Wait until the stage's bytes have arrived."""
        mbarrier_wait(smem_base() + self.full + 8 * state.stage, state.phase, err)

    @device
    def consumer_release(self, state, peer_empty):
        """The calling warpgroup is done with the stage: its leader arrives on the empty
        barrier (and on the cluster peer's, at shared::cluster address ``peer_empty``)."""
        if (cuda.threadIdx.x & 127) == 0:
            mbarrier_arrive(smem_base() + self.empty + 8 * state.stage)
            if self.cluster > 1:
                mbarrier_arrive_cluster(peer_empty + 8 * state.stage)
