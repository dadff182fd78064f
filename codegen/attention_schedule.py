"""Which query tiles a persistent CTA of the Hopper attention kernel takes
(:mod:`codegen.attention_sm90`), planned on the host once per shape.

* Without ``causal`` the tiles are equal work: a CTA walks the units ``gridDim.x`` apart,
  and a short last wave is cut along its keys (:class:`SplitKV`).
* With ``causal`` a tile's work grows with its position in its head, and the kernel reads
  each CTA's list of tiles from a table in device memory (:class:`CausalSchedule`): whole
  rounds of equal units in a fixed order, then the rest balanced tile by tile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SplitKV", "CausalSchedule", "causal_keys", "SPLITS_MAX", "PART_MIN", "UNIT_COST", "TAIL_ROUNDS"]

#: Split-KV of a short last wave (:class:`SplitKV`): at most this many parts a tile, and at
#: least this many key tiles a part.
SPLITS_MAX = 16
PART_MIN = 2

#: What a work unit's start and end (Q's load, the first S not under a softmax, O's store)
#: cost a CTA, in key tiles: :meth:`CausalSchedule.plan`'s model of a tile is its key tiles
#: plus this.
UNIT_COST = 1
#: Rounds of units before the last partial one that :meth:`CausalSchedule.plan` balances
#: tile by tile, with the partial round.
TAIL_ROUNDS = 1


@dataclass(frozen=True)
class SplitKV:
    """How a launch of ``tiles`` query tiles of ``key_tiles`` key tiles each runs on
    ``sms`` multiprocessors, a CTA each: tiles ``[0, whole)`` are a work unit each (the full
    waves of the persistent kernel); each of the ``rest`` tiles after them, a last wave at
    most a third full, is cut along its keys into ``splits`` parts (at least three, at most
    :data:`SPLITS_MAX`, of at least :data:`PART_MIN` key tiles), a unit each, so that the
    last wave fills the GPU: ``units`` in all. A part writes its unnormalised O, its rows'
    maxima and sums to a workspace, and :func:`~codegen.attention_sm90.combine_kernel`
    merges a tile's parts (FlashAttention's split-KV and combine). ``splits == 1``: nothing
    is split.

    A last wave half full is not split in two: measured on an H200, the halves' partial
    results and the merge cost what the shorter wave saves (``benchmarks/RESULTS.md``).

    >>> SplitKV.plan(4096, 132, 47)            # 31 full waves and 4 tiles: 4 x 16 parts
    SplitKV(whole=4092, splits=16, units=4156)
    >>> SplitKV.plan(4, 132, 47).units, SplitKV.plan(2176, 132, 12).splits, SplitKV.plan(3, 2, 3).splits
    (64, 1, 1)
    """

    whole: int
    splits: int
    units: int

    @classmethod
    def plan(cls, tiles, sms, key_tiles):
        whole = tiles // sms * sms
        rest = tiles - whole
        splits = min(sms // rest, key_tiles // PART_MIN, SPLITS_MAX) if rest else 1
        if splits < 3:
            return cls(tiles, 1, tiles)
        return cls(whole, splits, whole + rest * splits)

    @property
    def rest(self):
        """Tiles split."""
        return (self.units - self.whole) // self.splits

    def grid(self, sms):
        """CTAs of the persistent launch."""
        return min(self.units, sms)

    def workspace_bytes(self, bm, d):
        """Bytes of the parts' partial results: ``(parts,bm,d) -> float32`` O, then
        ``(parts,bm) -> float32 x 2`` maxima and sums (:meth:`HopperAttention.store_part`)."""
        return 0 if self.splits == 1 else (self.units - self.whole) * bm * (d + 2) * 4


@dataclass(frozen=True, eq=False)
class CausalSchedule:
    """The ``causal`` tiles of a launch on ``grid`` persistent CTAs: ``table``, ``int32``,
    is ``grid + 1`` offsets into itself, then the tiles (``head * n_m + m``: query tile
    ``m`` of a head of all batches), then a word of padding (the kernel loads the entry after
    each of a CTA's while that one runs); CTA ``c`` takes ``table[table[c]:table[c + 1]]``
    in order. Every tile is in it once.

    >>> s = CausalSchedule.plan(heads=1, n_m=4, keys=(1, 2, 3, 4), sms=2, paired=True)
    >>> s.grid, [s.tiles(c) for c in range(2)]
    (2, [[3, 0], [2, 1]])
    """

    grid: int
    table: np.ndarray

    @classmethod
    def plan(cls, heads, n_m, keys, sms, paired):
        """The schedule of ``heads`` heads of ``n_m`` query tiles, tile ``m`` of ``keys[m]``
        key tiles, on at most ``sms`` CTAs (one a tile at most).

        The units, in order: with ``paired``, a head's tiles in *mirror pairs* (the last and
        the first, the one before the last and the second, ...: every pair the same work),
        heads in order, so the CTAs at work share K and V in L2; else single tiles, longest
        first across heads. The whole rounds of ``grid`` units but the last
        :data:`TAIL_ROUNDS` (where the last round is partial) go a unit a CTA, a round's
        longest to the CTA least loaded so far, and so on (a tile costs its key tiles and
        :data:`UNIT_COST`). The rest, split into tiles, go longest first, each to the CTA
        least loaded so far, and then move between CTAs while that evens them out
        (:func:`_even_out`), so that the CTAs finish together: a partial last round of pairs
        would leave up to half the GPU idle for a pair's time.
        """
        if heads < 1 or n_m < 1 or len(keys) != n_m or sms < 1:
            raise ValueError(f"CausalSchedule.plan: heads {heads}, n_m {n_m}, {len(keys)} key counts, sms {sms}")
        if heads * n_m + sms + 1 >= 2 ** 31:
            raise ValueError(f"CausalSchedule.plan: {heads} heads of {n_m} query tiles do not fit an int32 table")
        cost = np.asarray(keys, np.int64) + UNIT_COST                # (n_m) -> a tile's cost
        head0 = (np.arange(heads, dtype=np.int64) * n_m)[:, None]
        if paired:
            i = np.arange((n_m + 1) // 2)                               # a head's pairs
            twin = np.where(i != n_m - 1 - i, i, -1)                    # (a middle tile alone)
            units = np.stack([np.broadcast_to(head0 + (n_m - 1 - i), (heads, len(i))),
                              np.where(twin >= 0, head0 + twin, -1)], -1).reshape(-1, 2)   # (heads*pairs, 2)
        else:
            m = np.arange(n_m - 1, -1, -1)                               # longest first, heads inside
            units = np.stack([(head0.T + m[:, None]).reshape(-1), np.full(heads * n_m, -1)], -1)
        grid = min(sms, heads * n_m)
        rounds = len(units) // grid
        if len(units) % grid:                                            # a partial last round
            rounds = max(rounds - TAIL_ROUNDS, 0)
        ucost = np.where(units >= 0, cost[units % n_m], 0).sum(1)       # (unit) -> its cost
        walk = np.empty((rounds, grid, 2), np.int64)                     # (round, CTA, unit's tiles) -> tile or -1
        load = np.zeros(grid, np.int64)
        for r in range(rounds):                                          # a round's longest unit to the CTA
            at = slice(r * grid, (r + 1) * grid)                         # least loaded so far, and so on
            big, low = np.argsort(-ucost[at], kind="stable"), np.argsort(load, kind="stable")
            walk[r, low] = units[at][big]
            load[low] += ucost[at][big]
        walk = walk.transpose(1, 0, 2).reshape(grid, -1)                 # (CTA, its tiles in order) -> tile or -1
        rest = units[rounds * grid:].reshape(-1)
        rest = rest[rest >= 0]
        rest = rest[np.argsort(-cost[rest % n_m], kind="stable")]        # longest first
        load = load.tolist()
        extra = [[] for _ in range(grid)]
        for t in rest.tolist():
            c = min(range(grid), key=load.__getitem__)
            extra[c].append(t)
            load[c] += int(cost[t % n_m])
        _even_out(load, extra, lambda t: int(cost[t % n_m]))
        lists = [np.concatenate([walk[c][walk[c] >= 0], np.asarray(extra[c], np.int64)]) for c in range(grid)]
        offsets = grid + 1 + np.concatenate([[0], np.cumsum([len(x) for x in lists])])
        return cls(grid, np.concatenate([offsets] + lists + [[0]]).astype(np.int32))

    def tiles(self, c):
        """CTA ``c``'s tiles in order."""
        return self.table[self.table[c]:self.table[c + 1]].tolist()


def causal_keys(n_m, bm, bn, key_tiles):
    """The key tiles each of ``n_m`` query tiles of ``bm`` queries takes with ``causal`` (top
    left aligned: the keys up to its last query, ``bn`` a tile), at most ``key_tiles``; the
    host's count of what :meth:`codegen.attention_sm90.HopperAttention.tile` walks.

    >>> causal_keys(4, 128, 176, 3)
    [1, 2, 3, 3]
    """
    return [min(key_tiles, -(-(m + 1) * bm // bn)) for m in range(n_m)]


def _even_out(load, extra, cost):
    """Move tiles of ``extra`` (a list of tiles a CTA, ``load`` the CTAs' costs, ``cost`` a
    tile's) from the most loaded CTA to another, or swap one of its tiles for a cheaper one
    of another's, whichever brings the two nearest to even, until no move or swap lowers the
    most loaded CTA's cost below where it was and keeps the other's under it. The largest
    cost never rises and the smallest never falls; each step lowers the sum of the squares
    of the costs, so it ends. Changes ``load`` and ``extra``."""
    ctas = range(len(load))
    while True:
        top = max(ctas, key=load.__getitem__)
        best = None
        for m in sorted(ctas, key=load.__getitem__):
            gap = load[top] - load[m]
            if gap <= 1:
                break
            for i, a in enumerate(extra[top]):
                for j, b in enumerate([None] + extra[m]):
                    d = cost(a) - (0 if b is None else cost(b))
                    if 0 < d < gap and (best is None or abs(gap - 2 * d) < best[0]):
                        best = (abs(gap - 2 * d), m, i, j - 1, d)
            if best is not None:
                break
        if best is None:
            return
        _, m, i, j, d = best
        extra[m].append(extra[top].pop(i))
        if j >= 0:
            extra[top].append(extra[m].pop(j))
        load[top] -= d
        load[m] += d
