"""Tile schedulers: which output tiles (and which parts of K) a persistent CTA works on.

A persistent kernel launches about one CTA per multiprocessor; each walks *work units*
``blockIdx.x, blockIdx.x + gridDim.x, ...`` (:meth:`TileScheduler.units`) and turns each
into a :class:`WorkTile` (:meth:`TileScheduler.work`): the corner ``(m0, n0)`` of its
``bm x bn`` tile of C, the matrix ``l`` of a batch it belongs to, and the k-tiles
``[kt0, kt1)`` it multiplies.

* **Batches**: a batch of ``L`` GEMMs of one shape (CuTe's mode ``L``) is ``L`` times the
  tiles of one, numbered matrix after matrix, so a batch is one launch whose CTAs run
  tiles of several matrices at once.

* **Grouped raster**: tiles are numbered ``group_m`` tile rows at a time, column by column
  within the group (Triton's ``GROUP_M``), so the CTAs running at once share rows of A and
  columns of B in L2.
* **Split-K** (``split``): the tiles of the full waves (as many as ``gridDim.x`` divides)
  are a unit each; each later tile, of the short last wave, is cut into ``splits`` parts of
  whole k-tiles, consecutive units, so the last wave spreads over more CTAs. Each part
  hands its partial sums over through a workspace in global memory; the part that arrives
  last adds the others' and finishes the tile (:meth:`TileScheduler.fixup`). No part waits
  for another, so any number of CTAs is safe.
* **Groups** (``grouped``): a grouped GEMM (mixture-of-experts layers) splits the rows of A
  and C into groups at offsets the kernel reads from device memory (``p.offs``: the ``int32``
  end row of each of ``p.groups`` groups), each group multiplied by its own matrix ``l`` of B.
  A group's rows are whole tiles from its first row, the last one cut at the group's end
  (:attr:`WorkTile.rows`); the units of a group are consecutive, its tiles rastered as a
  matrix's (the groups share no operand: on the H200, 128 groups of 128 rows ran at 0.92 of
  ``torch._grouped_mm`` with all groups' tile rows rastered together, 8 at a time, and at
  1.00 with one tile row at a time, 2026-11-29).
* **Clusters** (``cluster`` 2): a unit is a pair of vertically adjacent tiles, one a CTA of
  the cluster (``cluster_ctarank``), which share B.

The kernel's arguments ``p`` carry what :meth:`TileScheduler.host_params` computes for the
launch and, for split-K, ``ws`` (the workspace's address: zeroed counters, then the partial
sums).

>>> s = TileScheduler(bm=128, bn=256, bk=64, group_m=8)
>>> [s.corner(t, num_m=4, num_n=3) for t in range(5)]
[(0, 0), (128, 0), (256, 0), (384, 0), (0, 256)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .objects import device, device_object, late_import
from .smem import smem_base

(cuda, int64) = late_import("numba", "cuda", "int64")
(atom_add_acq_rel_gpu, cluster_ctarank, ld_global_b32, ld_global_cg_v2_b32, ld_shared_b32, named_barrier_sync,
 st_global_b32, st_global_v2_b32, st_shared_b32, u32_as_f32) = late_import(
    "codegen.intrinsics", "atom_add_acq_rel_gpu", "cluster_ctarank", "ld_global_b32", "ld_global_cg_v2_b32",
    "ld_shared_b32", "named_barrier_sync", "st_global_b32", "st_global_v2_b32", "st_shared_b32", "u32_as_f32")

__all__ = ["WorkTile", "SchedulerParams", "TileScheduler", "NO_ROW_LIMIT"]


class SchedulerParams(NamedTuple):
    """What a scheduler derives from the problem once: tile rows (pairs of them in a
    cluster), units of a raster group, k-tiles, tiles of the full waves, parts of K, units,
    tiles (of the whole batch), units of one matrix of the batch."""

    rows_m: int
    group: int
    ktiles: int
    whole: int
    splits: int
    units: int
    tiles: int
    batch_units: int
    offs: int = 0
    groups: int = 0
    m: int = 0


#: The row limit of a tile that only its matrix's extent bounds.
NO_ROW_LIMIT = 0x7FFFFFFF


class WorkTile(NamedTuple):
    """A unit of work: the tile's corner, its k-tiles ``[kt0, kt1)``, the tile's index,
    (split-K) the part of K, the matrix of the batch (0 without one; a grouped GEMM's group),
    and the row its matrix ends at (a group's end; :data:`NO_ROW_LIMIT` where only the
    matrix's extent bounds it)."""

    m0: int
    n0: int
    kt0: int
    kt1: int
    tile: int
    part: int
    l: int
    rows: int


@device_object
@dataclass(frozen=True)
class TileScheduler:
    """``bm x bn`` tiles of C, ``bk`` deep k-tiles, rastered ``group_m`` tile rows at a
    time; ``split``: split-K units (with ``consumers`` warpgroups' partial sums of
    ``acc_regs`` float32 a thread, and a ticket word each at ``tickets`` in the shared
    storage); ``cluster``: CTAs a unit (2: a pair of tiles sharing B)."""

    #: The kernel arguments :meth:`params` reads (:class:`~codegen.cute.KernelParams` fields),
    #: with the values :meth:`host_params` gives them.
    ARGS = (("rows_m", "i32"), ("group", "i32"), ("ktiles", "i32"), ("whole", "i32"), ("splits", "i32"),
            ("units", "i32"), ("tiles", "i32"), ("batch_units", "i32"))

    bm: int
    bn: int
    bk: int
    group_m: int
    split: bool = False
    consumers: int = 1
    acc_regs: int = 0
    tickets: int = 0
    cluster: int = 1
    grouped: bool = False

    def corner(self, tile, num_m, num_n):
        """The corner of tile ``tile`` in the grouped raster (host twin of :meth:`work`)."""
        group = self.group_m * num_n
        first_m = (tile // group) * self.group_m
        rows = min(num_m - first_m, self.group_m)
        return (first_m + (tile % group) % rows) * self.bm, ((tile % group) // rows) * self.bn

    @property
    def group_rows(self):
        """Rows of units a raster group: ``group_m`` tile rows (pairs of them in a cluster)."""
        return max(1, self.group_m // self.cluster)

    @property
    def part_bytes(self):
        """Bytes of one consumer's partial sums: ``(T128,V) -> 8 B`` pairs of float32."""
        return 128 * self.acc_regs * 4

    def host_params(self, M, N, K, grid, splits=1, batch=1):
        """What the kernel's scheduler needs of ``batch`` ``M x N x K`` problems on ``grid``
        CTAs, computed on the host once per launch configuration and passed as kernel
        arguments (``rows_m``, ``group``, ``ktiles``, ``whole``, ``splits``, ``units``,
        ``tiles``, ``batch_units``): constants of the launch, which the kernel reads where it
        uses them instead of keeping them in registers (as CUTLASS's tile schedulers take
        their ``Params``)."""
        num_m, num_n = -(-M // self.bm), -(-N // self.bn)
        rows_m = -(-num_m // 2) if self.cluster > 1 else num_m
        batch_units = rows_m * num_n                      # a matrix's units (tiles, pairs of them in clusters)
        tiles = batch_units * batch
        whole, units = tiles, tiles
        if self.split:
            whole = tiles // grid * grid
            units = whole + (tiles - whole) * splits
        else:
            splits = 1
        return dict(rows_m=rows_m, group=self.group_rows * num_n, ktiles=-(-K // self.bk), whole=whole, splits=splits,
                    units=units, tiles=tiles, batch_units=batch_units)

    @device
    def params(self, p):
        """The :class:`SchedulerParams` of the kernel's arguments ``p`` (:meth:`host_params`);
        a grouped GEMM's tile rows and units are counted here from the groups' offsets."""
        if self.grouped:
            return self.grouped_params(p)
        return SchedulerParams(int64(p.rows_m), int64(p.group), int64(p.ktiles), int64(p.whole), int64(p.splits),
                               int64(p.units), int64(p.tiles), int64(p.batch_units), 0, 0, 0)

    @device
    def grouped_params(self, p):
        """A grouped GEMM's :class:`SchedulerParams`: every group's tile rows, summed."""
        rows_m = int64(0)
        lo = int64(0)
        for h in range(p.groups):
            hi = self.group_end(p.offs, h, lo, p.M)
            rows_m += self.unit_rows(hi - lo)
            lo = hi
        units = rows_m * (int64(p.group) // self.group_rows)          # tile rows x tile columns
        return SchedulerParams(rows_m, int64(p.group), int64(p.ktiles), units, int64(1), units, units, units,
                               int64(p.offs), int64(p.groups), int64(p.M))

    @device
    def unit_rows(self, rows):
        """Rows of units of a group of ``rows`` rows: its tile rows (pairs of them in a cluster)."""
        return (rows + self.bm * self.cluster - 1) // (self.bm * self.cluster)

    @device
    def group_end(self, offs, h, lo, m):
        """The end row of group ``h`` (after ``lo``, the previous one's), read at ``offs`` and
        kept within ``[lo, m]``: offsets that decrease or pass A's ``m`` rows make empty or
        shorter groups, never rows outside A and C."""
        return min(max(int64(ld_global_b32(offs + 4 * h)), lo), int64(m))

    @device
    def first(self):
        """This CTA's first unit (a cluster's two CTAs share theirs)."""
        return cuda.blockIdx.x // self.cluster

    @device
    def stride(self):
        """Units between two of this CTA's."""
        return cuda.gridDim.x // self.cluster

    @device
    def units(self, sp):
        """This CTA's work units."""
        return range(self.first(), sp.units, self.stride())

    @device
    def work_at(self, sp, unit):
        """The :class:`WorkTile` of ``unit``, or an empty one (no k-tiles) past the last."""
        if unit < sp.units:
            return self.work(sp, unit)
        return WorkTile(0, 0, 0, 0, 0, 0, 0, 0)

    @device
    def work(self, sp, unit):
        """The :class:`WorkTile` of ``unit``."""
        tile = unit
        part = 0
        kt0 = 0
        kt1 = sp.ktiles
        if self.split:
            if unit >= sp.whole:       # a part of a tile of the last wave: k-tiles [kt0, kt1) of it
                tile = sp.whole + (unit - sp.whole) // sp.splits
                part = unit - sp.whole - (tile - sp.whole) * sp.splits
                kt0 = part * sp.ktiles // sp.splits
                kt1 = (part + 1) * sp.ktiles // sp.splits
        l = tile // sp.batch_units     # the matrix of the batch; t: the tile in it
        t = tile - l * sp.batch_units
        rows_m = sp.rows_m
        lo = 0                         # the first row of the matrix (a group's)
        end = NO_ROW_LIMIT
        if self.grouped:               # the tile's group l, rows [lo, end): its tiles rastered as a matrix's
            num_n = sp.group // self.group_rows
            first = int64(0)           # the group's first tile row among all groups'
            lo = int64(0)
            end = int64(0)
            rows_m = int64(0)
            for h in range(sp.groups):
                end = self.group_end(sp.offs, h, lo, sp.m)
                rows_m = self.unit_rows(end - lo)
                if tile < (first + rows_m) * num_n:
                    l = h
                    break
                first += rows_m
                lo = end
            t = tile - first * num_n
        first_m = (t // sp.group) * self.group_rows
        band = min(rows_m - first_m, self.group_rows)
        m0 = (first_m + (t % sp.group) % band) * self.bm
        n0 = ((t % sp.group) // band) * self.bn
        if self.cluster > 1:           # this CTA's tile of the pair (rows >= M or the group's end: never stored)
            m0 = 2 * m0 + cluster_ctarank() * self.bm
        m0 += lo
        return WorkTile(m0, n0, kt0, kt1, tile, part, l, end)

    @device
    def fixup(self, p, sp, work, accs, c):
        """Split-K: hand this part's sums (the float32 array ``accs`` of consumer ``c``) over;
        True where this part finishes the tile (every other part's sums are added to
        ``accs``), False where another part will. Always True without split-K."""
        if not self.split:
            return True
        whole = sp.whole
        tiles = sp.tiles
        if sp.splits == 1 or work.tile < whole:
            return True
        wtid = cuda.threadIdx.x & 127
        leader = wtid == 0
        counts = p.ws                                                # tiles x consumers uint32
        parts = p.ws + ((tiles * self.consumers * 4 + 255) & -256)   # split units x consumers partial sums
        slot = ((work.tile - whole) * sp.splits + work.part) * self.consumers + c
        mine = parts + slot * self.part_bytes                        # (T128,P) -> 8 B: stride (1,128)
        for q in range(self.acc_regs // 2):
            st_global_v2_b32(mine + (q * 128 + wtid) * 8, accs[2 * q], accs[2 * q + 1])
        named_barrier_sync(1 + c, 128)                               # the warpgroup's sums are written
        ticket = smem_base() + self.tickets + 4 * c
        if leader:                                                   # release them; learn how many came before
            st_shared_b32(ticket, atom_add_acq_rel_gpu(counts + (work.tile * self.consumers + c) * 4, 1))
        named_barrier_sync(1 + c, 128)
        finish = ld_shared_b32(ticket) == sp.splits - 1               # the last part: the others are written
        if finish:
            if leader:                                               # ready for the next launch
                st_global_b32(counts + (work.tile * self.consumers + c) * 4, 0)
            for r in range(sp.splits):
                if r != work.part:
                    theirs = parts + (((work.tile - whole) * sp.splits + r) * self.consumers + c) * self.part_bytes
                    for q in range(self.acc_regs // 2):
                        v0, v1 = ld_global_cg_v2_b32(theirs + (q * 128 + wtid) * 8)
                        accs[2 * q] += u32_as_f32(v0)
                        accs[2 * q + 1] += u32_as_f32(v1)
        return finish
