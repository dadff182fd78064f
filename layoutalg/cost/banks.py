"""Shared-memory bank conflicts of a tiled copy, computed from its layouts.

The model (the documented rules; ``benchmarks/bank_conflicts.py`` checks each one against
an H100's counters, and ``benchmarks/RESULTS.md`` says what it found):

* Shared memory has 32 banks of 4 bytes: the 4-byte word at byte address ``a`` is word
  ``a // 4``, in bank ``(a // 4) % 32`` (CUDA C++ Programming Guide, "Shared Memory" of the
  compute capabilities 5.x and later).
* A warp's access is served in **phases**: 32 threads a phase for accesses of at most 4
  bytes a thread, 16 threads (half-warps) for 8 bytes, 8 threads (quarter-warps) for 16
  bytes. In each phase, the threads that read one word get it at once (broadcast); threads
  that reach *different* words of one bank are served one after the other. A phase takes
  as many **wavefronts** as the most distinct words any bank holds, and an instruction the
  sum over its phases (Nsight Compute's ``l1tex__data_pipe_lsu_wavefronts_mem_shared``
  counts these).
* ``ldmatrix``/``stmatrix`` move 8x8 matrices of 16-bit elements: each matrix is 8 rows of
  16 bytes given by 8 lanes (lanes ``8j..8j+7`` for matrix ``j``; x1/x2/x4 move 1/2/4
  matrices) and is one phase (PTX ISA, "ldmatrix"): 8 rows x 16 bytes are 128 bytes, one
  wavefront when their 32 words fall in 32 banks.
* ``cp.async`` of 4, 8 or 16 bytes writes shared memory as a store of that width.

``ideal`` is the fewest wavefronts the bytes of an instruction need: its distinct words
over 32, rounded up; ``conflict = wavefronts / ideal``. A bank that holds ``k`` distinct
words in a phase is a ``k``-way conflict; :attr:`SharedAnalysis.ways` is the worst.

>>> from layoutalg import CopyAtom, Layout, Swizzle, composition, make_tiled_copy
>>> cp = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 1)))
>>> a = analyze_shared(cp, Layout((32, 32), (32, 1)), "D")   # a warp writes a column of a row-major tile
>>> a.instructions, a.wavefronts, a.ideal, a.conflict, a.ways     # 32 copies of one column: 32 bank-0 words each
(32, 1024, 32, 32.0, 32)
>>> s = analyze_shared(cp, composition(Swizzle(5, 0, 5), Layout((32, 32), (32, 1))), "D")
>>> s.wavefronts, s.conflict                                     # the swizzle spreads each column over 32 banks
(32, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .access import WARP, CopyAccesses, copy_accesses

__all__ = [
    "analyze_shared", "SharedAnalysis", "WarpShared", "SharedInstruction", "BankCollision", "PerformanceWarning",
    "NUM_BANKS", "BANK_BYTES", "phase_threads", "shared_costs",
]

NUM_BANKS = 32
BANK_BYTES = 4


class PerformanceWarning(UserWarning):
    """A layout that will run slower than it could: bank conflicts of a copy's shared side."""


def phase_threads(kind, width):
    """Threads served together in one phase: 8 per ``ldmatrix``/``stmatrix`` matrix, else 32
    for accesses of at most 4 bytes, 16 for 8 bytes, 8 for 16 bytes.

    >>> phase_threads("universal", 2), phase_threads("universal", 8), phase_threads("cp_async", 16), phase_threads("ldsm", 16)
    (32, 16, 8, 8)
    """
    if kind in ("ldsm", "stsm"):
        return 8
    return WARP // max(1, width // BANK_BYTES)


def shared_costs(addr, width, lanes_per_phase):
    """Wavefronts, ideal wavefronts and worst bank collision of each instruction of each warp.

    ``addr``: ``(warps*32, instructions)`` byte addresses (-1: no address); each starts
    ``width`` bytes. Returns int arrays ``(warps, instructions)``: wavefronts, ideal, ways.
    """
    nlanes, calls = addr.shape
    warps = nlanes // WARP
    nwords = max(1, width // BANK_BYTES)
    a = addr.reshape(warps, WARP, calls)
    lane = np.arange(WARP)[None, :, None]
    phase = np.broadcast_to(lane // lanes_per_phase, a.shape)
    w = np.broadcast_to(np.arange(warps)[:, None, None], a.shape)
    c = np.broadcast_to(np.arange(calls)[None, None, :], a.shape)
    ok = a >= 0
    words = (a[ok] // BANK_BYTES)[:, None] + np.arange(nwords)[None, :]        # (accesses, nwords)
    nphase = WARP // lanes_per_phase
    inst = (w[ok] * calls + c[ok])                                            # instruction id
    ph = inst * nphase + phase[ok]                                            # phase id
    ph = np.repeat(ph, nwords)
    wd = words.reshape(-1)
    wavefronts = np.zeros(warps * calls, dtype=np.int64)
    ideal = np.zeros(warps * calls, dtype=np.int64)
    ways = np.zeros(warps * calls, dtype=np.int64)
    if wd.size:
        span = int(wd.max()) + 1
        uniq = np.unique(ph * span + wd)                                      # distinct (phase, word)
        uph, uwd = uniq // span, uniq % span
        bank_key = uph * NUM_BANKS + uwd % NUM_BANKS
        bk, per_bank = np.unique(bank_key, return_counts=True)               # distinct words per bank
        phase_max = np.zeros(warps * calls * nphase, dtype=np.int64)
        np.maximum.at(phase_max, bk // NUM_BANKS, per_bank)
        wavefronts = phase_max.reshape(warps * calls, nphase).sum(axis=1)
        ways = phase_max.reshape(warps * calls, nphase).max(axis=1)
        iw = np.unique(np.repeat(inst, nwords) * span + wd) // span           # distinct words per instruction
        counts = np.bincount(iw, minlength=warps * calls)
        ideal = -(-counts // NUM_BANKS)
    return (wavefronts.reshape(warps, calls), ideal.reshape(warps, calls), ways.reshape(warps, calls))


@dataclass(frozen=True)
class BankCollision:
    """Distinct words that meet in one bank in one phase of an instruction.

    ``words``: their byte addresses (multiples of 4); ``threads[i]``: the threads (of the
    tiled copy) that reach ``words[i]``.
    """

    phase: int
    bank: int
    words: tuple
    threads: tuple

    @property
    def ways(self):
        return len(self.words)


@dataclass(frozen=True)
class SharedInstruction:
    """One instruction of one warp: its phases' bank use, wavefronts and collisions.

    ``banks[p][b]``: for phase ``p`` and bank ``b``, a tuple of ``(word byte address,
    threads)`` pairs, one per distinct word (empty: the bank is not used).
    """

    warp: int
    index: int
    wavefronts: int
    ideal: int
    banks: tuple

    @property
    def phases(self):
        return len(self.banks)

    @property
    def collisions(self):
        """Every bank of a phase holding more than one distinct word."""
        return tuple(BankCollision(p, b, tuple(w for w, _ in use), tuple(t for _, t in use))
                     for p, ph in enumerate(self.banks) for b, use in enumerate(ph) if len(use) > 1)

    @property
    def ways(self):
        return max((len(use) for ph in self.banks for use in ph), default=0)


@dataclass(frozen=True)
class WarpShared:
    """One warp's totals over the whole tensor."""

    warp: int
    instructions: int
    wavefronts: int
    ideal: int
    ways: int

    @property
    def conflict(self):
        return self.wavefronts / self.ideal if self.ideal else 1.0


class SharedAnalysis:
    """What :func:`analyze_shared` found.

    Per warp (:attr:`warps`, a tuple of :class:`WarpShared`): ``instructions``,
    ``wavefronts``, ``ideal``, ``conflict = wavefronts / ideal``. The attributes of the same
    names are plain numbers for a copy of one warp, tuples (one entry per warp) otherwise;
    ``total_*`` sum over the warps. :meth:`instruction` gives one instruction's bank use
    and :attr:`collisions` every bank collision, with the threads that collide.
    """

    def __init__(self, acc: CopyAccesses):
        self.access = acc
        self.copy = acc.copy
        self.layout = acc.layout
        self.side = acc.side
        self.kind = acc.kind
        self.width = acc.width
        self.lanes_per_phase = phase_threads(acc.kind, acc.width)
        wf, ideal, ways = shared_costs(acc.addr, acc.width, self.lanes_per_phase)
        self.per_instruction = {"wavefronts": wf, "ideal": ideal, "ways": ways}   # (warps, instructions)
        self.warps = tuple(WarpShared(w, acc.instructions, int(wf[w].sum()), int(ideal[w].sum()),
                                      int(ways[w].max(initial=0))) for w in range(acc.warps))

    def _per_warp(self, name):
        vals = tuple(getattr(w, name) for w in self.warps)
        return vals[0] if len(vals) == 1 else vals

    @property
    def instructions(self):
        return self._per_warp("instructions")

    @property
    def wavefronts(self):
        return self._per_warp("wavefronts")

    @property
    def ideal(self):
        return self._per_warp("ideal")

    @property
    def conflict(self):
        return self._per_warp("conflict")

    @property
    def total_instructions(self):
        return sum(w.instructions for w in self.warps)

    @property
    def total_wavefronts(self):
        return sum(w.wavefronts for w in self.warps)

    @property
    def total_ideal(self):
        return sum(w.ideal for w in self.warps)

    @property
    def ways(self):
        """The worst bank collision: the most distinct words one bank holds in one phase."""
        return max(w.ways for w in self.warps)

    @property
    def conflicts(self):
        """True when some phase has a bank collision (``ways > 1``)."""
        return self.ways > 1

    @property
    def phases(self):
        """Phases of one instruction."""
        return WARP // self.lanes_per_phase

    def instruction(self, warp, index):
        """Instruction ``index`` of warp ``warp``: its bank use phase by phase."""
        acc = self.access
        if not 0 <= warp < acc.warps or not 0 <= index < acc.instructions:
            raise IndexError(f"SharedAnalysis.instruction: ({warp}, {index}) out of range "
                             f"({acc.warps} warps, {acc.instructions} instructions)")
        nwords = max(1, self.width // BANK_BYTES)
        banks = [[{} for _ in range(NUM_BANKS)] for _ in range(self.phases)]
        for lane in range(WARP):
            a = int(acc.addr[warp * WARP + lane, index])
            if a < 0:
                continue
            p = lane // self.lanes_per_phase
            for k in range(nwords):
                word = a // BANK_BYTES + k
                banks[p][word % NUM_BANKS].setdefault(word * BANK_BYTES, []).append(warp * WARP + lane)
        table = tuple(tuple(tuple((w, tuple(ts)) for w, ts in sorted(b.items())) for b in ph) for ph in banks)
        return SharedInstruction(warp, index, int(self.per_instruction["wavefronts"][warp, index]),
                                 int(self.per_instruction["ideal"][warp, index]), table)

    @cached_property
    def collisions(self):
        """``(warp, instruction, BankCollision)`` for every collision (first warp's first)."""
        ways = self.per_instruction["ways"]
        out = []
        for w, g in zip(*np.nonzero(ways > 1)):
            out.extend((int(w), int(g), c) for c in self.instruction(int(w), int(g)).collisions)
        return tuple(out)

    def describe(self):
        """One line: what the copy does and what it costs."""
        return f"{self.access.describe()}: {self.summary()}"

    def summary(self):
        """``"4 instructions, 16 wavefronts (ideal 4): 4-way bank conflicts"`` (per warp
        when all warps agree, else totals over the warps)."""
        ws = self.warps
        same = all((w.instructions, w.wavefronts, w.ideal) == (ws[0].instructions, ws[0].wavefronts, ws[0].ideal)
                   for w in ws)
        if same:
            head = (f"{ws[0].instructions} instructions, {ws[0].wavefronts} wavefronts (ideal {ws[0].ideal})"
                    + (f" per warp, {len(ws)} warps" if len(ws) > 1 else ""))
        else:
            head = (f"{self.total_instructions} instructions, {self.total_wavefronts} wavefronts "
                    f"(ideal {self.total_ideal}) over {len(ws)} warps")
        if self.ways > 1:
            return f"{head}: {self.ways}-way bank conflicts, {self.total_wavefronts / self.total_ideal:.2f}x the ideal"
        extra = self.total_wavefronts / self.total_ideal if self.total_ideal else 1.0
        if extra > 1:
            return f"{head}: no bank conflict; {extra:.2f}x the ideal from the phases of {self.width}-byte accesses"
        return f"{head}: conflict-free"

    def __repr__(self):
        return f"SharedAnalysis({self.describe()})"

    def report(self, limit=8):
        """A text report: the summary, the warps (one line for warps that agree), and the
        first ``limit`` bank collisions with the threads that collide."""
        lines = [self.describe()]
        lines.append(f"  {self.kind} access of {self.width} bytes a thread: {self.phases} phase(s) of "
                     f"{self.lanes_per_phase} threads an instruction")
        for ws in _runs(self.warps, lambda w: (w.instructions, w.wavefronts, w.ideal, w.ways)):
            w = ws[0]
            who = f"warp {w.warp}" if len(ws) == 1 else f"warps {w.warp}-{ws[-1].warp}, each"
            lines.append(f"  {who}: {w.instructions} instructions, {w.wavefronts} wavefronts, ideal {w.ideal}, "
                         f"conflict {w.conflict:.2f}" + (f", worst {w.ways}-way" if w.ways > 1 else ""))
        for w, g, c in self.collisions[:limit]:
            parts = "; ".join(f"byte {a} <- {','.join(f'T{t}' for t in ts)}" for a, ts in zip(c.words, c.threads))
            lines.append(f"  warp {w} instruction {g} phase {c.phase} bank {c.bank}: {c.ways} words: {parts}")
        if len(self.collisions) > limit:
            lines.append(f"  ... {len(self.collisions) - limit} more bank collisions")
        return "\n".join(lines)


def _runs(items, key):
    """Consecutive items with equal ``key``, grouped."""
    out = []
    for it in items:
        if out and key(out[-1][-1]) == key(it):
            out[-1].append(it)
        else:
            out.append([it])
    return out


def analyze_shared(copy, smem, side="D", *, base=0):
    """The bank conflicts of ``copy``'s shared side over the shared tensor ``smem``.

    ``copy``: a :class:`~layoutalg.TiledCopy` (universal loads and stores of 8 to 128 bits,
    ``ldmatrix``/``stmatrix`` x1/x2/x4 and transposed, ``cp.async`` of 4/8/16 bytes);
    ``smem``: a layout ``(M,N,...) -> element offset`` of the copy's element type (a
    swizzled ``ComposedLayout`` or a plain ``Layout``), or a tensor; ``side``: "S" when
    shared memory is the copy's source, "D" when it is its destination; ``base``: the byte
    address of element offset 0 (a multiple of 128 by default, as ``make_shared_tensor``
    gives).

    The copy is repeated over the whole tensor as ``partition_S``/``partition_D`` of it
    gives; each thread's instruction ``g`` is the ``g``-th atom call of its partition.
    Pre: the copy tiles ``smem``; the side is in shared memory (``ldmatrix`` reads it,
    ``stmatrix`` and ``cp.async`` write it). Raises :class:`~layoutalg.LayoutError` naming the
    values otherwise. Post: see :class:`SharedAnalysis`; the model is this module's.

    >>> from layoutalg import CopyAtom, Layout, Swizzle, composition, make_tiled_copy_A, make_tiled_mma, tile_to_shape
    >>> mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN")
    >>> ldsm = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), mma)
    >>> plain = analyze_shared(ldsm, Layout((16, 64), (64, 1)), "S")         # (M16,K64) -> offset, 128-byte rows
    >>> plain.instructions, plain.wavefronts, plain.ideal, plain.ways       # 8 rows of a matrix in 4 banks
    (4, 128, 16, 8)
    >>> sw = tile_to_shape(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (16, 64))
    >>> analyze_shared(ldsm, sw, "S").wavefronts                            # Sw<3,3,3>: one wavefront a matrix
    16
    """
    acc = copy_accesses("analyze_shared", copy, smem, side, base, space="smem")
    return SharedAnalysis(acc)
