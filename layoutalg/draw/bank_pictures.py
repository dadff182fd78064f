"""Pictures of a copy's shared-memory bank use, phase by phase (from :func:`layoutalg.analyze_shared`).

One grid per instruction of a warp: a row per phase (the threads served together: the whole
warp for accesses of up to 4 bytes, half-warps for 8, quarter-warps for 16, one matrix for
``ldmatrix``/``stmatrix``, one 128-byte line of the global source for ``cp.async``; see
:mod:`layoutalg.cost.banks`), a column per bank. A cell names the threads that reach that bank
in that phase and the word they reach; a bank that holds several distinct words in one
phase is a conflict, drawn red and outlined with the number of words (the phase takes that
many wavefronts). Other used banks are coloured by bank, as ``layoutalg draw --color bank`` does.

>>> from layoutalg import CopyAtom, Layout, analyze_shared, make_tiled_copy
>>> cp = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 1)))
>>> fig = bank_figure(analyze_shared(cp, Layout((32, 4), (8, 2)), "S"), instructions=1)
>>> g = fig.grids[0]
>>> g.shape, g[0, 0].lines, g[0, 1].lines                 # rows 32 bytes apart: banks 0, 8, 16, 24 hold 8 words each
((1, 32), ('T0+7', '8 words'), ())
>>> g.title
'warp 0, instruction 0: 8 wavefronts (ideal 1), 8-way'
"""

from __future__ import annotations

from typing import Any

from .colors import HIGHLIGHT, Color, bank_color
from .model import Cell, Figure, Grid, Legend

__all__ = ["bank_figure", "bank_grid", "CONFLICT"]

#: Fill of a bank that holds several distinct words in one phase.
CONFLICT = Color(120, 0, 0)


def _threads_text(threads, base):
    ts = sorted(threads)
    first = ts[0] + base
    return f"T{first}" if len(ts) == 1 else f"T{first}+{len(ts) - 1}"


def _phase_label(threads, base):
    """``T0-7`` for a run of threads, ``T0,4,8,..(8)`` otherwise."""
    ts = sorted(threads)
    if ts == list(range(ts[0], ts[-1] + 1)):
        return f"T{ts[0] + base}" if len(ts) == 1 else f"T{ts[0] + base}-{ts[-1] + base}"
    head = ",".join(str(t + base) for t in ts[:3])
    return f"T{head},..({len(ts)})" if len(ts) > 3 else f"T{head}"


def bank_grid(analysis: Any, warp: int, index: int, *, one_based: bool = False) -> Grid:
    """The grid of instruction ``index`` of ``warp``: phases by banks."""
    inst = analysis.instruction(warp, index)
    base = 1 if one_based else 0
    ways = inst.ways
    title = (f"warp {warp + base}, instruction {index + base}: {inst.wavefronts} wavefront"
             f"{'s' if inst.wavefronts != 1 else ''} (ideal {inst.ideal})" + (f", {ways}-way" if ways > 1 else ""))
    labels = [_phase_label(ts, base) for ts in inst.phase_threads]
    g = Grid(inst.phases, 32, name=f"w{warp}i{index}", title=title, row_headers=labels, col_headers="index",
             index_base=0)
    for p, phase in enumerate(inst.banks):
        for b, use in enumerate(phase):
            if not use:
                g[p, b] = Cell((), data={"bank": b, "phase": p, "threads": [], "words": []})
                continue
            threads = [t for _, ts in use for t in ts]
            data = {"bank": b, "phase": p, "threads": threads, "words": [w for w, _ in use]}
            if len(use) > 1:
                g[p, b] = Cell((_threads_text(threads, base), f"{len(use)} words"), fill=CONFLICT, border=HIGHLIGHT,
                               data=data)
            else:
                g[p, b] = Cell((_threads_text(threads, base), f"w{use[0][0] // 4}"), fill=bank_color(b), data=data)
    g.meta["phases"] = inst.phases
    return g


def bank_figure(analysis: Any, *, warp: int = 0, instructions: int | None = None, title: str | None = None,
                one_based: bool = False) -> Figure:
    """The bank use of ``analysis`` (a :class:`~layoutalg.cost.banks.SharedAnalysis`): one grid
    per instruction of ``warp``, the first ``instructions`` of them (default: all, at most 8),
    stacked. ``title`` defaults to the analysis' one-line description.

    Cells read ``T<first thread>+<more threads>`` over ``w<word>`` (the 4-byte word, byte
    address / 4) or, for a conflict, ``<k> words``.
    """
    op = "bank_figure"
    acc = getattr(analysis, "access", None)
    if acc is None or not hasattr(analysis, "instruction"):
        raise TypeError(f"{op}: expected the result of layoutalg.analyze_shared, got {type(analysis).__name__}")
    if isinstance(warp, bool) or not isinstance(warp, int) or not 0 <= warp < acc.warps:
        raise ValueError(f"{op}: warp must be in [0, {acc.warps}), got {warp!r}")
    n = acc.instructions if instructions is None else instructions
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{op}: instructions must be a positive int, got {instructions!r}")
    if instructions is None:
        n = min(n, 8)
    n = min(n, acc.instructions)
    grids = [bank_grid(analysis, warp, i, one_based=one_based) for i in range(n)]
    legend = Legend([(CONFLICT, "bank conflict: several distinct words in one bank, served one after the other")],
                    title="32 banks x 4 bytes (a column each, coloured by bank); a row per phase (threads served together)")
    fig = Figure.stacked(grids, gap=1.5, title=analysis.describe() if title is None else (title or None), legend=legend)
    if n < acc.instructions:
        fig.notes.append(f"instructions {n + int(one_based)}..{acc.instructions - 1 + int(one_based)} of warp "
                         f"{warp + int(one_based)} not drawn (instructions=...)")
    fig.comments.append(analysis.summary())
    return fig
