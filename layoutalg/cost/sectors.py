"""Global-memory coalescing of a tiled copy, computed from its layouts.

The model (checked against an H100's counters by ``benchmarks/bank_conflicts.py``):

* a warp's global load or store instruction is one **request** to the L1/TEX unit
  (Nsight Compute's ``l1tex__t_requests_pipe_lsu_mem_global_op_ld/st``);
* the request touches the 32-byte **sectors** that hold its threads' bytes, each once
  however many threads read it (``l1tex__t_sectors_pipe_lsu_mem_global_op_ld/st``);
* the fewest sectors those bytes need (``ideal``) is their number of distinct bytes over
  32, rounded up, instruction by instruction; ``efficiency = ideal / sectors``;
* the instructions are the copy's atom calls: the compiler knows a global array's address
  only to its element's alignment, so it does not merge a thread's adjacent scalar global
  accesses into vectors (``vectorize=True`` models a base it knows to be 16-byte aligned;
  shared memory's is, see :func:`~layoutalg.cost.access.vectorize_calls`).

>>> from layoutalg import CopyAtom, Layout, make_tiled_copy
>>> rows = make_tiled_copy(CopyAtom("UniversalCopy_128", "f32"), Layout((4, 8), (8, 1)), Layout((1, 4)))
>>> g = analyze_global(rows, Layout((4, 32), (1024, 1)), "S")   # 4 rows of 32 f32 in a wide matrix
>>> g.requests, g.sectors, g.ideal, g.efficiency
(1, 16, 16, 1.0)
>>> cols = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 1)))
>>> c = analyze_global(cols, Layout((32, 8), (1024, 1)), "S")   # a warp reads a column: 32 rows apart
>>> c.requests, c.sectors, c.ideal, c.efficiency
(8, 256, 32, 0.125)
>>> v = analyze_global(cols, Layout((32, 8), (1024, 1)), "S", vectorize=True)   # were the array 16-byte aligned
>>> v.requests, v.sectors, v.ideal, v.access.widths.tolist()                    # ld.global.v4: half of each sector
(2, 64, 32, [16, 16])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .access import WARP, CopyAccesses, copy_accesses

__all__ = ["analyze_global", "GlobalAnalysis", "WarpGlobal", "SECTOR_BYTES", "global_costs"]

SECTOR_BYTES = 32


def global_costs(addr, widths):
    """Requests, sectors and ideal sectors of each instruction of each warp.

    ``addr``: ``(warps*32, instructions)`` byte addresses (-1: none), each the start of
    ``widths[g]`` bytes aligned to ``widths[g]`` (one width per instruction, or one for
    all). Returns int arrays ``(warps, instructions)``.
    """
    nlanes, calls = addr.shape
    warps = nlanes // WARP
    a = addr.reshape(warps, WARP, calls)
    ok = a >= 0
    inst = np.broadcast_to(np.arange(warps)[:, None, None] * calls + np.arange(calls)[None, None, :], a.shape)[ok]
    start = a[ok]
    width = np.broadcast_to(np.broadcast_to(np.asarray(widths, dtype=np.int64), (calls,))[None, None, :], a.shape)[ok]
    n = warps * calls
    requests = np.bincount(inst, minlength=n) > 0
    sectors = np.zeros(n, dtype=np.int64)
    ideal = np.zeros(n, dtype=np.int64)
    if start.size:
        nsec = np.maximum(1, width // SECTOR_BYTES)       # an aligned vector of up to 16 bytes lies in one sector
        secs = np.repeat(start // SECTOR_BYTES, nsec) + (np.arange(nsec.sum()) - np.repeat(np.cumsum(nsec) - nsec, nsec))
        us = np.unique(np.stack([np.repeat(inst, nsec), secs]), axis=1)[0]
        sectors = np.bincount(us, minlength=n)
        ua = np.unique(np.stack([inst, start, width]), axis=1)     # distinct vectors (aligned: equal or disjoint)
        nbytes = np.bincount(ua[0], weights=ua[2], minlength=n).astype(np.int64)
        ideal = -(-nbytes // SECTOR_BYTES)
    return (requests.astype(np.int64).reshape(warps, calls), sectors.reshape(warps, calls),
            ideal.reshape(warps, calls))


@dataclass(frozen=True)
class WarpGlobal:
    """One warp's totals over the whole tensor."""

    warp: int
    requests: int
    sectors: int
    ideal: int

    @property
    def efficiency(self):
        return self.ideal / self.sectors if self.sectors else 1.0


class GlobalAnalysis:
    """What :func:`analyze_global` found: per warp (:attr:`warps`) ``requests``, ``sectors``,
    ``ideal`` and ``efficiency``; plain numbers for a copy of one warp, tuples otherwise;
    ``total_*`` over the warps; :attr:`per_instruction` the arrays ``(warps, instructions)``."""

    def __init__(self, acc: CopyAccesses):
        self.access = acc
        self.copy = acc.copy
        self.layout = acc.layout
        self.side = acc.side
        self.width = acc.width
        self.widths = acc.widths
        req, sec, ideal = global_costs(acc.addr, acc.widths)
        self.per_instruction = {"requests": req, "sectors": sec, "ideal": ideal}
        self.warps = tuple(WarpGlobal(w, int(req[w].sum()), int(sec[w].sum()), int(ideal[w].sum()))
                           for w in range(acc.warps))

    def _per_warp(self, name):
        vals = tuple(getattr(w, name) for w in self.warps)
        return vals[0] if len(vals) == 1 else vals

    @property
    def instructions(self):
        return self.access.instructions

    @property
    def requests(self):
        return self._per_warp("requests")

    @property
    def sectors(self):
        return self._per_warp("sectors")

    @property
    def ideal(self):
        return self._per_warp("ideal")

    @property
    def efficiency(self):
        return self._per_warp("efficiency")

    @property
    def total_requests(self):
        return sum(w.requests for w in self.warps)

    @property
    def total_sectors(self):
        return sum(w.sectors for w in self.warps)

    @property
    def total_ideal(self):
        return sum(w.ideal for w in self.warps)

    def summary(self):
        eff = self.total_ideal / self.total_sectors if self.total_sectors else 1.0
        return (f"{self.total_requests} requests, {self.total_sectors} sectors (ideal {self.total_ideal}) "
                f"over {len(self.warps)} warp(s): {eff:.0%} of the bytes fetched are used")

    def describe(self):
        return f"{self.access.describe()}: {self.summary()}"

    def __repr__(self):
        return f"GlobalAnalysis({self.describe()})"

    def report(self):
        """The summary and the warps (one line for warps that agree)."""
        from .banks import _runs

        lines = [self.describe()]
        for ws in _runs(self.warps, lambda w: (w.requests, w.sectors, w.ideal)):
            w = ws[0]
            who = f"warp {w.warp}" if len(ws) == 1 else f"warps {w.warp}-{ws[-1].warp}, each"
            lines.append(f"  {who}: {w.requests} requests, {w.sectors} sectors, ideal {w.ideal}, "
                         f"efficiency {w.efficiency:.2f}")
        return "\n".join(lines)


def analyze_global(copy, gmem, side="S", *, base=0, vectorize=False):
    """The coalescing of ``copy``'s global side over the global tensor ``gmem``.

    ``copy``: a :class:`~layoutalg.TiledCopy` (universal loads and stores, ``cp.async``);
    ``gmem``: a layout ``(M,N,...) -> element offset`` or a tensor; ``side``: "S" for loads
    (and ``cp.async``), "D" for stores; ``base``: the byte address of element offset 0
    (default 0: a well-aligned allocation); ``vectorize``: False (default), one instruction
    per atom call, as the compiler issues them for an array it knows only to be
    element-aligned; True, adjacent calls merged as for a 16-byte aligned base. The copy is
    repeated over the whole tensor as for :func:`~layoutalg.cost.banks.analyze_shared`.

    Pre: the side is not the atom's registers or shared memory (``ldmatrix``'s source is
    shared). Post: see :class:`GlobalAnalysis`.
    """
    acc = copy_accesses("analyze_global", copy, gmem, side, base, space="gmem", vectorize=vectorize)
    return GlobalAnalysis(acc)
