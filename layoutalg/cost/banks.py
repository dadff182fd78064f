"""Shared-memory bank conflicts of a tiled copy, computed from its layouts.

The model: the documented rules, and three rules of the hardware found by
``benchmarks/bank_conflicts.py`` on an H200 (Nsight Compute's counters; ``docs/swizzles.md``
and ``benchmarks/RESULTS.md`` give the evidence):

* Shared memory has 32 banks of 4 bytes: the 4-byte word at byte address ``a`` is word
  ``a // 4``, in bank ``(a // 4) % 32`` (CUDA C++ Programming Guide, "Shared Memory" of the
  compute capabilities 5.x and later).
* A warp's access is served in **phases**: 32 threads a phase for accesses of at most 4
  bytes a thread, 16 threads (half-warps) for 8 bytes, 8 threads (quarter-warps) for 16
  bytes (128 bytes of data a phase). In each phase, the threads that read one word get it
  at once (broadcast); threads that reach *different* words of one bank are served one
  after the other. A phase takes as many **wavefronts** as the most distinct words any bank
  holds, and an instruction the sum over its phases (Nsight Compute's
  ``l1tex__data_pipe_lsu_wavefronts_mem_shared`` counts these).
* **Uniform phases of loads merge** (measured): a *load* whose phases each give one address
  is served 256 bytes of lanes at a time: where every phase of an aligned group (the warp
  for 8-byte accesses, each half-warp for 16-byte ones) gives a single address (the phases'
  addresses may differ), the group is one phase; otherwise its threads go in the phases
  above. (A 64-bit load of one address by a warp takes 1 wavefront, a 128-bit one 2, and
  so does a 128-bit load whose quarter-warps each give their own address; a half-warp that
  reads one 128-byte row in each quarter still takes 2.) Stores do not merge: a warp's
  64-bit store of one address takes 2 wavefronts and its 128-bit store 4, the documented
  phases.
* ``ldmatrix``/``stmatrix`` move 8x8 matrices of 16-bit elements: each matrix is 8 rows of
  16 bytes given by 8 lanes (lanes ``8j..8j+7`` for matrix ``j``; x1/x2/x4 move 1/2/4
  matrices) and is one phase (PTX ISA, "ldmatrix"): 8 rows x 16 bytes are 128 bytes, one
  wavefront when their 32 words fall in 32 banks.
* **cp.async writes per global line** (measured): ``cp.async`` (SASS ``LDGSTS``) writes
  shared memory as its data arrives, one 128-byte line of the *global* source at a time:
  a phase is the threads of one store phase (a quarter-warp for 16 bytes) whose source
  bytes lie in one 128-byte global line. A phase without a bank collision takes one
  wavefront for each 128-byte shared line it writes; a phase with one takes a wavefront
  for each of its threads, however few ways the collision has (measured with 2-, 4- and
  8-way collisions: 8 wavefronts for 8 threads each time). So a warp that reads 32 rows of
  a matrix writes 32 phases, swizzled or not; 8 threads reading one 128-byte row into one
  128-byte shared row take one wavefront, into two shared rows without a collision two; a
  quarter-warp whose 8 threads read 4 lines is 4 phases. The rule needs the global side: give
  ``analyze_shared`` the source (``gmem=``); without it a ``cp.async`` is analysed as a
  store of its width (the shared layout's own collisions).
* The instructions are those the compiler issues: a thread's adjacent universal accesses
  are merged into vectors of up to 16 bytes (:func:`~layoutalg.cost.access.vectorize_calls`),
  and each instruction has its own width.

``ideal`` is the fewest wavefronts the bytes of an instruction need: its distinct words
over 32, rounded up; ``conflict = wavefronts / ideal``. A bank that holds ``k`` distinct
words in a phase is a ``k``-way conflict; :attr:`SharedAnalysis.ways` is the worst.

>>> from layoutalg import CopyAtom, Layout, Swizzle, composition, make_tiled_copy
>>> cp = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 1)))
>>> rows = Layout((32, 32), (32, 1))                             # (32,32) -> offset, 128-byte rows
>>> a = analyze_shared(cp, rows, "D", vectorize=False)          # as written: a warp stores a column at a time
>>> a.instructions, a.wavefronts, a.ideal, a.conflict, a.ways     # 32 columns: 32 bank-0 words each
(32, 1024, 32, 32.0, 32)
>>> v = analyze_shared(cp, rows, "D")                             # as compiled: 4 adjacent words a st.v4
>>> v.instructions, v.wavefronts, v.ways                         # a quarter-warp's 8 rows share 4 banks
(8, 256, 8)
>>> s = analyze_shared(cp, composition(Swizzle(5, 0, 5), rows), "D")
>>> s.instructions, s.wavefronts, s.conflict                     # the swizzle spreads each column over 32 banks
(32, 32, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import LayoutError
from .access import WARP, CopyAccesses, copy_accesses

__all__ = [
    "analyze_shared", "SharedAnalysis", "WarpShared", "SharedInstruction", "BankCollision", "PerformanceWarning",
    "NUM_BANKS", "BANK_BYTES", "LINE_BYTES", "UNIFORM_BYTES", "phase_threads", "phase_groups", "shared_costs",
]

NUM_BANKS = 32
BANK_BYTES = 4
#: The global line whose data one cp.async phase writes.
LINE_BYTES = 128
#: The data one phase of threads that all give one address can take.
UNIFORM_BYTES = 256


class PerformanceWarning(UserWarning):
    """A layout that will run slower than it could: bank conflicts of a copy's shared side."""


def phase_threads(kind, width):
    """Threads served together in one phase when their addresses differ: 8 per
    ``ldmatrix``/``stmatrix`` matrix, else 32 for accesses of at most 4 bytes, 16 for 8
    bytes, 8 for 16 bytes.

    >>> phase_threads("universal", 2), phase_threads("universal", 8), phase_threads("cp_async", 16), phase_threads("ldsm", 16)
    (32, 16, 8, 8)
    """
    if kind in ("ldsm", "stsm"):
        return 8
    return WARP // max(1, width // BANK_BYTES)


def phase_groups(kind, addr, widths, gaddr=None, load=True):
    """The phase of each lane in each instruction: ``(warps*32, instructions)`` ints, equal
    for the lanes of one phase of one instruction (-1 where a lane gives no address).

    ``addr``: the shared byte addresses; ``widths``: the bytes of each instruction;
    ``gaddr``: for ``cp.async``, the global byte addresses of the same accesses (a phase per
    128-byte global line in each store phase), else None; ``load``: whether the accesses
    read shared memory (only loads merge uniform phases). The rules are the module's.

    >>> a = np.zeros((32, 1), dtype=np.int64)                       # a warp, one address
    >>> phase_groups("universal", a, [16])[::8, 0].tolist()          # a 16-byte load: a phase a half-warp
    [32, 32, 33, 33]
    >>> phase_groups("universal", a, [16], load=False)[::8, 0].tolist()   # a store: a quarter-warp
    [0, 1, 2, 3]
    >>> phase_groups("universal", a + np.arange(32)[:, None] // 8 * 16, [16])[::8, 0].tolist()
    [32, 32, 33, 33]
    >>> phase_groups("universal", a + np.arange(32)[:, None] * 16, [16])[::8, 0].tolist()
    [0, 1, 2, 3]
    """
    addr = np.asarray(addr)
    nlanes, calls = addr.shape
    widths = np.broadcast_to(np.asarray(widths, dtype=np.int64), (calls,))
    lane = np.broadcast_to((np.arange(nlanes) % WARP)[:, None], addr.shape)
    ok = addr >= 0
    base = np.maximum(1, WARP // np.maximum(1, widths // BANK_BYTES))          # lanes a phase
    if kind in ("ldsm", "stsm"):
        out = lane // 8
    elif kind == "cp_async" and gaddr is not None:
        line = np.asarray(gaddr) // LINE_BYTES
        out = np.zeros(addr.shape, dtype=np.int64)
        warp = np.arange(nlanes)[:, None] // WARP + 0 * addr
        inst = np.arange(calls)[None, :] + 0 * addr
        key = np.stack([warp[ok], inst[ok], (lane // base[None, :])[ok], line[ok]])
        _, inv = np.unique(key, axis=1, return_inverse=True)
        out[ok] = inv.reshape(-1)
    else:
        out = lane // base[None, :]
        if load:
            block = np.minimum(WARP, np.maximum(base, UNIFORM_BYTES // np.maximum(widths, 1)))   # lanes that may merge
            for g in range(calls):
                if block[g] > base[g]:
                    _merge_uniform(out[:, g], addr[:, g], ok[:, g], int(base[g]), int(block[g]))
    return np.where(ok, out, -1)


def _merge_uniform(out, addr, ok, base, block):
    """Make each ``block`` of lanes whose phases (of ``base`` lanes) each give one address
    one phase (numbered from ``WARP`` up), in place."""
    lanes = out.size
    a = addr.reshape(-1, block // base, base)
    o = ok.reshape(a.shape)
    hi = np.where(o, a, np.iinfo(np.int64).min).max(axis=2)
    lo = np.where(o, a, np.iinfo(np.int64).max).min(axis=2)
    single = (hi == lo) | ~o.any(axis=2)                                   # each phase: one address or none
    uniform = single.all(axis=1) & o.reshape(-1, block).any(axis=1)       # (warps * blocks,)
    uni_lane = np.repeat(uniform, block)
    blk = (np.arange(lanes) % WARP) // block
    out[uni_lane] = WARP + blk[uni_lane]


def _access_words(addr, widths, ok):
    """The words each access touches: (access index, word) pairs of the accesses ``ok``."""
    calls = addr.shape[1]
    w = np.broadcast_to(np.asarray(widths, dtype=np.int64)[None, :], addr.shape)[ok]
    a = addr[ok]
    first = a // BANK_BYTES
    n = (a + w + BANK_BYTES - 1) // BANK_BYTES - first
    idx = np.repeat(np.arange(a.size), n)
    start = np.repeat(np.cumsum(n) - n, n)
    words = np.repeat(first, n) + (np.arange(idx.size) - start)
    return idx, words


def shared_costs(addr, widths, groups, lines=False):
    """Wavefronts, ideal wavefronts and worst bank collision of each instruction of each warp.

    ``addr``: ``(warps*32, instructions)`` byte addresses (-1: no address); ``widths``: the
    bytes each address starts (one per instruction, or one for all); ``groups``: the phase
    of each lane (:func:`phase_groups`); ``lines``: the phases are a ``cp.async``'s global
    lines (a phase with a bank collision takes a wavefront a thread, one without a
    wavefront per 128-byte shared line it writes). Returns int arrays ``(warps,
    instructions)``: wavefronts, ideal, ways.
    """
    addr = np.asarray(addr)
    nlanes, calls = addr.shape
    warps = nlanes // WARP
    ok = addr >= 0
    inst = (np.arange(nlanes)[:, None] // WARP * calls + np.arange(calls)[None, :] + 0 * addr)[ok]
    grp = np.asarray(groups)[ok]
    idx, wd = _access_words(addr, widths, ok)
    n = warps * calls
    wavefronts = np.zeros(n, dtype=np.int64)
    ideal = np.zeros(n, dtype=np.int64)
    ways = np.zeros(n, dtype=np.int64)
    if wd.size:
        ii, gg = inst[idx], grp[idx]
        _, phase = np.unique(np.stack([ii, gg]), axis=1, return_inverse=True)   # phase id over all instructions
        phase = phase.reshape(-1)
        nph = int(phase.max()) + 1
        ph_inst = np.zeros(nph, dtype=np.int64)
        ph_inst[phase] = ii
        uniq = np.unique(np.stack([phase, wd]), axis=1)                          # distinct (phase, word)
        bk, per_bank = np.unique(np.stack([uniq[0], uniq[1] % NUM_BANKS]), axis=1, return_counts=True)
        phase_max = np.zeros(nph, dtype=np.int64)
        np.maximum.at(phase_max, bk[0], per_bank)
        cost = phase_max
        if lines:
            threads = np.bincount(np.unique(np.stack([phase, idx]), axis=1)[0], minlength=nph)
            seg = np.bincount(np.unique(np.stack([uniq[0], uniq[1] * BANK_BYTES // LINE_BYTES]), axis=1)[0],
                              minlength=nph)
            cost = np.where(phase_max > 1, threads, seg)
        np.add.at(wavefronts, ph_inst, cost)
        np.maximum.at(ways, ph_inst, phase_max)
        iw = np.unique(np.stack([ii, wd]), axis=1)[0]                            # distinct words per instruction
        counts = np.bincount(iw, minlength=n)
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
    ``phase_threads[p]``: the threads (of the tiled copy) of phase ``p``, in order;
    ``width``: the bytes a thread moves.
    """

    warp: int
    index: int
    wavefronts: int
    ideal: int
    banks: tuple
    phase_threads: tuple = ()
    width: int = 0

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
    ``source``: for a ``cp.async`` given its global source, that side's
    :class:`~layoutalg.cost.access.CopyAccesses` (its phases are the source's 128-byte
    lines), else None.
    """

    def __init__(self, acc: CopyAccesses, source: CopyAccesses | None = None):
        self.access = acc
        self.source = source
        self.copy = acc.copy
        self.layout = acc.layout
        self.side = acc.side
        self.kind = acc.kind
        self.width = acc.width
        self.widths = acc.widths
        self.lanes_per_phase = phase_threads(acc.kind, acc.width)
        gaddr = source.addr if source is not None else None
        load = acc.side == "S" and acc.kind != "cp_async"       # the copy reads shared memory
        self.groups = phase_groups(acc.kind, acc.addr, acc.widths, gaddr, load)
        wf, ideal, ways = shared_costs(acc.addr, acc.widths, self.groups, lines=gaddr is not None)
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
        """Phases of an instruction of the atom's width when its threads' addresses differ
        (``cp.async`` given its source: a phase per global line, see :meth:`instruction`)."""
        return WARP // self.lanes_per_phase

    @property
    def rule(self):
        """How the phases are formed: "lines" (``cp.async`` by its source's 128-byte lines),
        "matrices" (``ldmatrix``/``stmatrix``) or "threads" (lanes, by the access width)."""
        if self.source is not None:
            return "lines"
        return "matrices" if self.kind in ("ldsm", "stsm") else "threads"

    def instruction(self, warp, index):
        """Instruction ``index`` of warp ``warp``: its bank use phase by phase."""
        acc = self.access
        if not 0 <= warp < acc.warps or not 0 <= index < acc.instructions:
            raise IndexError(f"SharedAnalysis.instruction: ({warp}, {index}) out of range "
                             f"({acc.warps} warps, {acc.instructions} instructions)")
        width = int(acc.widths[index])
        lanes = range(warp * WARP, (warp + 1) * WARP)
        order = []                                          # phases by their first lane
        members = {}
        for t in lanes:
            a = int(acc.addr[t, index])
            if a < 0:
                continue
            p = int(self.groups[t, index])
            if p not in members:
                order.append(p)
                members[p] = []
            members[p].append(t)
        banks = []
        for p in order:
            ph = [{} for _ in range(NUM_BANKS)]
            for t in members[p]:
                a = int(acc.addr[t, index])
                for word in range(a // BANK_BYTES, (a + width + BANK_BYTES - 1) // BANK_BYTES):
                    ph[word % NUM_BANKS].setdefault(word * BANK_BYTES, []).append(t)
            banks.append(tuple(tuple((w, tuple(ts)) for w, ts in sorted(b.items())) for b in ph))
        return SharedInstruction(warp, index, int(self.per_instruction["wavefronts"][warp, index]),
                                 int(self.per_instruction["ideal"][warp, index]), tuple(banks),
                                 tuple(tuple(members[p]) for p in order), width)

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

    def _excess(self):
        """Why the wavefronts exceed the ideal without a bank collision."""
        if self.source is not None:
            return "from the global lines it reads (a phase per 128-byte line)"
        widths = sorted({int(w) for w in self.widths})
        return f"from the phases of {'/'.join(map(str, widths))}-byte accesses"

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
            return f"{head}: no bank conflict; {extra:.2f}x the ideal {self._excess()}"
        return f"{head}: conflict-free"

    def __repr__(self):
        return f"SharedAnalysis({self.describe()})"

    def _how(self):
        acc = self.access
        if self.source is not None:
            return (f"  cp.async of {self.width} bytes a thread: a phase per 128-byte line of the global source "
                    f"{self.source.layout}")
        if self.kind in ("ldsm", "stsm"):
            return f"  {self.kind}: a phase per 8x8 matrix (8 rows of 16 bytes)"
        text = (f"  {self.kind} access of {self.width} bytes a thread: {self.phases} phase(s) of "
                f"{self.lanes_per_phase} threads an instruction")
        if acc.vectorized:
            widths = ", ".join(f"{int((acc.widths == w).sum())} of {int(w)} bytes" for w in sorted(set(acc.widths)))
            text += (f"; the compiler merges a thread's {acc.calls} adjacent calls into {acc.instructions} "
                     f"instructions ({widths})")
        return text

    def report(self, limit=8):
        """A text report: the summary, the warps (one line for warps that agree), and the
        first ``limit`` bank collisions with the threads that collide."""
        lines = [self.describe(), self._how()]
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


def analyze_shared(copy, smem, side="D", *, base=0, gmem=None, gmem_base=0, vectorize=True):
    """The bank conflicts of ``copy``'s shared side over the shared tensor ``smem``.

    ``copy``: a :class:`~layoutalg.TiledCopy` (universal loads and stores of 8 to 128 bits,
    ``ldmatrix``/``stmatrix`` x1/x2/x4 and transposed, ``cp.async`` of 4/8/16 bytes);
    ``smem``: a layout ``(M,N,...) -> element offset`` of the copy's element type (a
    swizzled ``ComposedLayout`` or a plain ``Layout``), or a tensor; ``side``: "S" when
    shared memory is the copy's source, "D" when it is its destination; ``base``: the byte
    address of element offset 0 (a multiple of 128 by default, as ``make_shared_tensor``
    gives). ``gmem`` (``cp.async`` only): the global source, a layout or tensor of the same
    shape, at byte ``gmem_base``; the shared writes then go by its 128-byte lines, as the
    hardware does them (this module's rules), else as stores of the copy's width.
    ``vectorize``: the instructions the compiler makes of a universal copy (adjacent calls
    merged, :func:`~layoutalg.cost.access.vectorize_calls`); False: one per atom call.

    The copy is repeated over the whole tensor as ``partition_S``/``partition_D`` of it
    gives; each thread's instruction ``g`` is the ``g``-th atom call of its partition (or
    the ``g``-th merged access). Pre: the copy tiles ``smem``; the side is in shared memory
    (``ldmatrix`` reads it, ``stmatrix`` and ``cp.async`` write it). Raises
    :class:`~layoutalg.LayoutError` naming the values otherwise. Post: see
    :class:`SharedAnalysis`; the model is this module's.

    >>> from layoutalg import CopyAtom, Layout, Swizzle, composition, make_tiled_copy_A, make_tiled_mma, tile_to_shape
    >>> mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN")
    >>> ldsm = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), mma)
    >>> plain = analyze_shared(ldsm, Layout((16, 64), (64, 1)), "S")         # (M16,K64) -> offset, 128-byte rows
    >>> plain.instructions, plain.wavefronts, plain.ideal, plain.ways       # 8 rows of a matrix in 4 banks
    (4, 128, 16, 8)
    >>> sw = tile_to_shape(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (16, 64))
    >>> analyze_shared(ldsm, sw, "S").wavefronts                            # Sw<3,3,3>: one wavefront a matrix
    16

    ``cp.async`` by its source's lines: a thread a row of a wide matrix is a line a thread,
    32 phases an instruction, with or without a swizzle; 8 threads a row, 4.

    >>> from layoutalg import CopyAtom, make_tiled_copy
    >>> rows = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((32, 1)), Layout((1, 8)))
    >>> g = Layout((32, 64), (4096, 1))                                     # (32,64) rows 8 KiB apart
    >>> s32 = tile_to_shape(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (32, 64))
    >>> a = analyze_shared(rows, s32, "D", gmem=g)                          # thread t: row t, 16 bytes
    >>> a.instructions, a.wavefronts, a.ideal, a.ways
    (8, 256, 32, 1)
    >>> tile = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((4, 8), (8, 1)), Layout((1, 8)))
    >>> analyze_shared(tile, Layout((32, 64), (64, 1)), "D", gmem=g).wavefronts
    32
    """
    op = "analyze_shared"
    acc = copy_accesses(op, copy, smem, side, base, space="smem", vectorize=vectorize)
    source = None
    if gmem is not None:
        if acc.kind != "cp_async":
            raise LayoutError(f"{op}: gmem= is the global source of a cp.async; {copy.atom.name} is not one")
        source = copy_accesses(op, copy, gmem, "S", gmem_base, space="gmem", vectorize=False)
        if source.addr.shape != acc.addr.shape:
            raise LayoutError(f"{op}: the global source {source.layout} gives {source.addr.shape[1]} instructions a "
                              f"thread, the shared side {acc.layout} {acc.addr.shape[1]}: not one copy")
    return SharedAnalysis(acc, source)
