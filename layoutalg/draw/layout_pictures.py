"""Pictures of layouts and thread-value (TV) partitions, on top of the neutral model.

Layouts
-------
Anything with a ``.shape`` (int or nested tuple) that can be called with a
coordinate tuple is drawn: for a rank-2 layout ``L`` of shape ``(M, N)`` (modes
may be nested; M and N are the sizes of mode 0 and mode 1) cell ``(m, n)`` shows
``L((m, n))``. A rank-1 layout is drawn as ``(size, 1)`` and called as ``L(m)``.
Higher ranks are drawn with modes 1.. grouped into the columns (cell ``(m, n)``
shows ``L((m, n1, n2, ...))`` with ``n`` split colexicographically), where CuTe
would refuse them.

>>> class Strided:                      # a stand-in for layoutalg.Layout((4, 8), (8, 1))
...     shape = (4, 8)
...     def __call__(self, coord):
...         m, n = coord
...         return 8 * m + n
...     def __str__(self):
...         return "(4,8):(8,1)"
>>> fig = layout_figure(Strided())                  # grey by index, as CuTe's print_latex
>>> fig.grid("layout")[1, 2].lines
('10',)
>>> print(layout_ascii(Strided()).splitlines()[3])   # CuTe's print_layout text
 0  |  0 |  1 |  2 |  3 |  4 |  5 |  6 |  7 |
>>> banks = layout_figure(Strided(), color="bank", dtype_bits=32)
>>> banks.grid("layout")[1, 2].lines                 # element 10 of a 32-bit array: bank 10
('10', 'b10')

Thread-value panels
-------------------
A TV picture is a list of panels. A panel is a ``rows x cols`` tile plus, for
each cell, the ``(thread, value)`` that owns it (or None when no thread does).
Cells are labelled ``T#``/``V#`` and coloured by thread: CuTe's colour
``t % 8`` (:func:`~layoutalg.draw.colors.thread_color`).

There are three ways to make a panel:

1. :class:`TVPanel` with an owner function ``(row, col) -> (thread, value) | None``
   or a ``rows x cols`` table of such pairs::

       TVPanel("C", 8, 8, lambda m, n: (4 * (m % 8) + n // 2, n % 2))

2. :func:`panel_from_tv` from a TV mapping ``(thread, value) -> coordinate`` --
   the direction CuTe's ``layoutC_TV``, ``layoutA_TV``, ``tidfrg_S`` go. The
   coordinate may be ``(row, col)`` or a flat index into the tile
   (colexicographic: ``row = i % rows``, ``col = i // rows``). A layout-like
   object (``.shape`` of rank 2, callable with ``(t, v)``) is accepted as is,
   and supplies the thread and value counts::

       C = panel_from_tv("C", M, N, mma.layoutC_TV)            # (t, v) -> m + n*M
       A = panel_from_tv("A", M, K, mma.layoutA_TV)            # (t, v) -> m + k*M
       B = panel_from_tv("B", K, N, mma.layoutB_TV, transpose=True)   # (t, v) -> n + k*N

   As in CuTe, when several (thread, value) pairs map to one cell the first in
   (thread-major, then value) order keeps it. ``transpose=True`` is for
   mappings whose coordinates are ``(col, row)``, e.g. CuTe's B as ``(n, k)``
   drawn K x N.

3. :func:`panel_from_mn` from the inverse form ``(row, col) -> tv_index`` with
   ``thread = tv_index % num_threads`` and ``value = tv_index // num_threads``
   (CuTe's older ``print_latex(layout, thr_id)``).

Then :func:`tv_figure` (``arrangement="row"`` side by side, ``"column"``,
``"mma"``), or the shorthands :func:`mma_figure` (C middle, A left, B on top)
and :func:`copy_figure` (source and destination side by side):

>>> C = TVPanel("C", 2, 4, lambda m, n: (m + 2 * (n // 2), n % 2))
>>> A = TVPanel("A", 2, 3, lambda m, k: (m, k))
>>> B = TVPanel("B", 3, 4, lambda k, n: (n, k))
>>> fig = mma_figure(C, A, B)
>>> fig.grid("C")[1, 3].lines, fig.grid("C")[1, 3].data
(('T3', 'V1'), {'thread': 3, 'value': 1})
>>> fig1 = mma_figure(C, A, B, one_based=True)     # MoYe.jl's numbering
>>> fig1.grid("C")[1, 3].lines
('T4', 'V2')

``data`` keeps the 0-based ids whatever the numbering shown.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from .ascii_table import ascii_layout_table
from .colors import HIGHLIGHT, Color, as_color, bank_color, bank_of, grey_color, thread_color
import numpy as np

from .model import Cell, Figure, Grid, Legend

__all__ = [
    "layout_size",
    "layout_dims",
    "layout_values",
    "layout_grid",
    "layout_figure",
    "layout_ascii",
    "layout_latex",
    "TVPanel",
    "panel_from_tv",
    "panel_from_mn",
    "tv_grid",
    "tv_figure",
    "mma_figure",
    "copy_figure",
    "tensor_figure",
]

Owner = Callable[[int, int], "tuple[int, int] | None"]


# ---------------------------------------------------------------------------
# layout helpers (duck-typed: .shape and __call__)
# ---------------------------------------------------------------------------
def _prod(op: str, s: Any) -> int:
    if isinstance(s, (tuple, list)):
        p = 1
        for x in s:
            p *= _prod(op, x)
        return p
    if isinstance(s, bool):
        raise TypeError(f"{op}: shape entries must be ints, got {s!r}")
    try:
        v = operator.index(s)
    except TypeError:
        try:
            v = int(s)  # static-int wrappers
        except (TypeError, ValueError):
            raise TypeError(f"{op}: shape entries must be ints, got {type(s).__name__} {s!r}") from None
    if v < 0:
        raise ValueError(f"{op}: shape entries must be non-negative, got {v}")
    return v


def _shape_of(op: str, layout: Any) -> Any:
    if not hasattr(layout, "shape"):
        raise TypeError(f"{op}: expected a layout (an object with .shape), got {type(layout).__name__}")
    if not callable(layout):
        raise TypeError(f"{op}: the layout must be callable with a coordinate, got {type(layout).__name__}")
    return layout.shape


def layout_size(layout: Any) -> int:
    """``size(L)``: the product of all shape entries.

    >>> class L: shape = ((2, 2), 4); __call__ = lambda self, c: 0
    >>> layout_size(L())
    16
    """
    return _prod("layout_size", _shape_of("layout_size", layout))


def layout_dims(layout: Any, op: str = "layout_dims") -> tuple[int, int, int]:
    """``(rank, M, N)`` of the picture: rank-1 layouts are ``(size, 1)``, rank-2
    give their mode sizes, and higher ranks group modes 1.. into the columns.

    >>> class L: shape = ((2, 2), (4, 2)); __call__ = lambda self, c: 0
    >>> layout_dims(L())
    (2, 4, 8)
    """
    shape = _shape_of(op, layout)
    if isinstance(shape, (tuple, list)):
        rank = len(shape)
        if rank == 0:
            raise ValueError(f"{op}: cannot draw a rank-0 layout (shape {shape!r})")
        if rank == 1:
            return 1, _prod(op, shape[0]), 1
        return rank, _prod(op, shape[0]), _prod(op, tuple(shape[1:]))
    return 1, _prod(op, shape), 1


def _as_index(op: str, value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{op}: {where} returned bool {value!r}; expected an integer")
    try:
        return operator.index(value)
    except TypeError:
        try:
            if hasattr(value, "__int__") and not isinstance(value, float):
                return int(value)
        except (TypeError, ValueError):
            pass
        raise TypeError(f"{op}: {where} returned {type(value).__name__} {value!r}; expected an integer") from None


def _evaluator(op: str, layout: Any) -> tuple[int, int, Callable[[int, int], int]]:
    rank, M, N = layout_dims(layout, op)
    if rank == 2:
        def at(m: int, n: int) -> int:
            return _as_index(op, layout((m, n)), f"L(({m}, {n}))")
        return M, N, at

    if rank > 2:
        # columns enumerate modes 1.. colexicographically, as group_modes<1,R> would
        sizes = [_prod(op, s) for s in tuple(layout.shape)[1:]]

        def atr(m: int, n: int) -> int:
            crd = [m]
            for s in sizes:
                crd.append(n % s)
                n //= s
            c = tuple(crd)
            return _as_index(op, layout(c), f"L({c})")
        return M, N, atr

    state = {"tuple": False}

    def at1(m: int, n: int) -> int:
        if not state["tuple"]:
            try:
                return _as_index(op, layout(m), f"L({m})")
            except TypeError:
                state["tuple"] = True
        return _as_index(op, layout((m,)), f"L(({m},))")

    return M, N, at1


def layout_values(layout: Any) -> list[list[int]]:
    """The table ``[[L((m, n)) for n in range(N)] for m in range(M)]``.

    >>> class L: shape = (2, 3); __call__ = lambda self, c: c[0] + 2 * c[1]
    >>> layout_values(L())
    [[0, 2, 4], [1, 3, 5]]
    """
    M, N, at = _evaluator("layout_values", layout)
    return [[at(m, n) for n in range(N)] for m in range(M)]


def _cosize(values: list[list[int]]) -> int:
    # CuTe: cosize(L) = L(size(L) - 1) + 1, the last coordinate in colex order.
    return values[-1][-1] + 1


def _fill_fn(op: str, color: Any, dtype_bits: int) -> tuple[str, Callable[[int], Color | None]]:
    if callable(color) and not isinstance(color, str):
        return "custom", lambda idx: as_color(color(idx), op)
    if color == "index":
        return "index", grey_color
    if color == "bank":
        return "bank", lambda idx: bank_color(bank_of(idx, dtype_bits))
    if color in ("none", None):
        return "none", lambda idx: None
    raise ValueError(f"{op}: color must be 'index', 'bank', 'none' or a function idx -> colour, got {color!r}")


def layout_grid(
    layout: Any,
    *,
    color: Any = "index",
    dtype_bits: int = 16,
    one_based: bool = False,
    name: str = "layout",
    title: str | None = None,
    highlight: Iterable[tuple[int, int]] = (),
) -> Grid:
    """One :class:`~layoutalg.draw.model.Grid` showing ``L((m, n))`` in cell (m, n).

    ``color``: ``"index"`` (CuTe's eight greys by ``idx % 8``), ``"bank"``
    (shared-memory bank of element ``idx`` for ``dtype_bits``-bit elements; the
    cell's second line is ``b<bank>``), ``"none"``, or a function ``idx -> colour``.
    ``one_based`` adds 1 to every index label and header (banks stay 0..31).
    Cells carry ``data={"index": idx}`` (plus ``"bank"``), 0-based.
    """
    op = "layout_grid"
    bits = dtype_bits
    if isinstance(bits, bool) or not isinstance(bits, int) or bits <= 0:
        raise ValueError(f"{op}: dtype_bits must be a positive int, got {dtype_bits!r}")
    mode, fill = _fill_fn(op, color, bits)
    M, N, at = _evaluator(op, layout)
    base = 1 if one_based else 0
    g = Grid(M, N, name=name, title=title, index_base=base)
    cells = g.cells
    label_cache: dict[int, tuple[str, ...]] = {}
    fill_cache: dict[int, Color | None] = {}
    values = []
    for m in range(M):
        row = []
        for n in range(N):
            idx = at(m, n)
            row.append(idx)
            f = fill_cache.get(idx, False)
            if f is False:
                if mode == "bank" and idx < 0:
                    raise ValueError(f"{op}: L(({m}, {n})) = {idx} is negative; bank colouring needs offsets >= 0")
                f = fill_cache[idx] = fill(idx)
            if mode == "bank":
                b = bank_of(idx, bits)
                lines = label_cache.get(idx)
                if lines is None:
                    lines = label_cache[idx] = (str(idx + base), f"b{b}")
                data = {"index": idx, "bank": b}
            else:
                lines = label_cache.get(idx)
                if lines is None:
                    lines = label_cache[idx] = (str(idx + base),)
                data = {"index": idx}
            cells[m * N + n] = Cell(lines, f, None, data)
        values.append(row)
    for rc in highlight:
        try:
            r, c = rc
        except (TypeError, ValueError):
            raise TypeError(f"{op}: highlight entries must be (row, col) pairs, got {rc!r}") from None
        g.highlight(r, c)
    g.meta["cosize"] = _cosize(values)
    g.meta["layout"] = str(layout)
    g.meta["color"] = mode
    return g


def layout_figure(
    layout: Any,
    color: Any = "index",
    dtype_bits: int = 16,
    *,
    one_based: bool = False,
    title: str | None = None,
    legend: bool | None = None,
    highlight: Iterable[tuple[int, int]] = (),
) -> Figure:
    """A figure of one layout (see :func:`layout_grid` for ``color``/``one_based``).

    ``title`` defaults to ``str(layout)`` (pass ``""`` for none); ``legend``
    defaults to on for bank colouring (one swatch per bank present). The figure
    carries the comment ``Layout: <layout>`` as CuTe's print_latex writes it.
    """
    g = layout_grid(layout, color=color, dtype_bits=dtype_bits, one_based=one_based, highlight=highlight)
    fig_title = str(layout) if title is None else (title or None)
    leg = None
    if legend is None:
        legend = g.meta["color"] == "bank"
    if legend:
        if g.meta["color"] == "bank":
            present = sorted({c.data["bank"] for c in g.cells if c is not None})
            leg = Legend([(bank_color(b), f"bank {b}") for b in present], title=f"shared-memory bank ({dtype_bits}-bit elements, 32 banks x 4 B)")
        elif g.meta["color"] == "index":
            base = 1 if one_based else 0
            leg = Legend([(grey_color(i), f"idx%8={i}") for i in range(8)], title=f"index colour (idx % 8){' of 0-based idx' if base else ''}")
    return Figure(title=fig_title, legend=leg, comments=[f"Layout: {layout}"]).add(g)


def layout_ascii(layout: Any, *, one_based: bool = False) -> str:
    """CuTe's ``print_layout`` text for a layout (the first line is ``str(layout)``).

    Cell width is ``num_digits(cosize) + 2`` with ``cosize = L(last coordinate) + 1``
    as in CuTe. ``one_based`` numbers rows, columns and values from 1 (MoYe.jl).
    """
    values = layout_values(layout)
    return ascii_layout_table(values, str(layout), cosize=_cosize(values), one_based=one_based)


def layout_latex(layout: Any, color: Any = "index", dtype_bits: int = 16) -> str:
    """The LaTeX/TikZ document CuTe's ``print_latex(layout)`` writes (grey by index)."""
    fig = layout_figure(layout, color, dtype_bits, title="", legend=False)
    return fig.to_tikz(titles=False)


# ---------------------------------------------------------------------------
# thread-value panels
# ---------------------------------------------------------------------------
def _check_owner(op: str, o: Any, where: str) -> tuple[int, int] | None:
    if o is None:
        return None
    try:
        t, v = o
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {where} must be a (thread, value) pair or None, got {o!r}") from None
    t = _as_index(op, t, where + " thread")
    v = _as_index(op, v, where + " value")
    if t < 0 or v < 0:
        raise ValueError(f"{op}: {where} gave negative (thread, value) = ({t}, {v})")
    return t, v


@dataclass
class TVPanel:
    """One thread-value panel: a ``rows x cols`` tile and who owns each cell.

    ``owner`` is a function ``(row, col) -> (thread, value) | None`` or a
    ``rows x cols`` table (list of rows) of such entries. ``title`` defaults to
    ``name``.

    >>> p = TVPanel("S", 2, 2, [[(0, 0), (1, 0)], [(0, 1), None]])
    >>> p.owners()
    [[(0, 0), (1, 0)], [(0, 1), None]]
    """

    name: str
    rows: int
    cols: int
    owner: Any
    title: str | None = None

    def __post_init__(self) -> None:
        op = "TVPanel"
        self.rows = _as_index(op, self.rows, "rows")
        self.cols = _as_index(op, self.cols, "cols")
        if self.rows < 1 or self.cols < 1:
            raise ValueError(f"{op}: panel {self.name!r} needs rows, cols >= 1, got {self.rows}x{self.cols}")
        if not callable(self.owner):
            try:
                table = [list(r) for r in self.owner]
            except TypeError:
                raise TypeError(
                    f"{op}: owner of panel {self.name!r} must be a function (row, col) -> (thread, value) "
                    f"or a rows x cols table, got {type(self.owner).__name__}"
                ) from None
            if len(table) != self.rows or any(len(r) != self.cols for r in table):
                raise ValueError(
                    f"{op}: owner table of panel {self.name!r} must be {self.rows}x{self.cols}, got "
                    f"{len(table)} rows of lengths {sorted({len(r) for r in table})}"
                )
            self.owner = table

    def owner_at(self, row: int, col: int) -> tuple[int, int] | None:
        """(thread, value) owning (row, col), or None."""
        o = self.owner(row, col) if callable(self.owner) else self.owner[row][col]
        return _check_owner("TVPanel", o, f"panel {self.name!r} cell ({row}, {col})")

    def owners(self) -> list[list[tuple[int, int] | None]]:
        """The full ``rows x cols`` table of owners."""
        return [[self.owner_at(r, c) for c in range(self.cols)] for r in range(self.rows)]


def _as_panel(op: str, p: Any) -> TVPanel:
    if isinstance(p, TVPanel):
        return p
    if isinstance(p, (tuple, list)) and len(p) in (4, 5):
        return TVPanel(*p)
    raise TypeError(f"{op}: panels must be TVPanel or (name, rows, cols, owner[, title]) tuples, got {p!r}")


def panel_from_tv(
    name: str,
    rows: int,
    cols: int,
    tv: Any,
    *,
    num_threads: int | None = None,
    num_values: int | None = None,
    transpose: bool = False,
    title: str | None = None,
) -> TVPanel:
    """A panel from a mapping ``(thread, value) -> coordinate`` (CuTe's TV direction).

    ``tv`` is a layout-like object (rank-2 ``.shape`` ``(threads, values)``,
    called as ``tv((t, v))``) or a function called as ``tv(t, v)``; for a
    function give ``num_threads`` and ``num_values``. It returns ``(row, col)``
    or a flat colexicographic index ``row + col * rows``. With ``transpose=True``
    the coordinate is ``(col, row)`` and a flat index is ``col + row * cols``.
    The first ``(t, v)`` (thread-major) to reach a cell owns it.

    >>> p = panel_from_tv("C", 2, 2, lambda t, v: t + 2 * v, num_threads=2, num_values=2)
    >>> p.owners()
    [[(0, 0), (0, 1)], [(1, 0), (1, 1)]]
    """
    op = "panel_from_tv"
    rows = _as_index(op, rows, "rows")
    cols = _as_index(op, cols, "cols")
    if hasattr(tv, "shape") and callable(tv):
        rank, nt, nv = layout_dims(tv, op)
        if rank != 2:
            raise ValueError(f"{op}: a TV layout must have rank 2 (threads, values), got shape {tv.shape!r}")
        num_threads = nt if num_threads is None else num_threads
        num_values = nv if num_values is None else num_values

        def call(t: int, v: int) -> Any:
            return tv((t, v))
    elif callable(tv):
        if num_threads is None or num_values is None:
            raise ValueError(f"{op}: give num_threads and num_values when tv is a plain function")

        def call(t: int, v: int) -> Any:
            return tv(t, v)
    else:
        raise TypeError(f"{op}: tv must be a TV layout or a function (t, v) -> coordinate, got {type(tv).__name__}")
    num_threads = _as_index(op, num_threads, "num_threads")
    num_values = _as_index(op, num_values, "num_values")
    table: list[list[tuple[int, int] | None]] = [[None] * cols for _ in range(rows)]
    dr, dc = (cols, rows) if transpose else (rows, cols)
    for t in range(num_threads):
        for v in range(num_values):
            coord = call(t, v)
            if isinstance(coord, (tuple, list)):
                if len(coord) != 2:
                    raise ValueError(f"{op}: panel {name!r}: tv({t}, {v}) = {coord!r} is not a 2-D coordinate")
                a = _as_index(op, coord[0], f"tv({t}, {v})[0]")
                b = _as_index(op, coord[1], f"tv({t}, {v})[1]")
            else:
                i = _as_index(op, coord, f"tv({t}, {v})")
                if not 0 <= i < rows * cols:
                    raise ValueError(
                        f"{op}: panel {name!r}: tv({t}, {v}) = {i} is outside the {rows}x{cols} tile"
                    )
                a, b = i % dr, i // dr
            r, c = (b, a) if transpose else (a, b)
            if not (0 <= r < rows and 0 <= c < cols):
                raise ValueError(
                    f"{op}: panel {name!r}: tv({t}, {v}) = {coord!r} is outside the {rows}x{cols} tile"
                )
            if table[r][c] is None:
                table[r][c] = (t, v)
    return TVPanel(name, rows, cols, table, title)


def panel_from_mn(
    name: str,
    mn: Any,
    *,
    num_threads: int,
    thread_ids: Callable[[int], int] | None = None,
    title: str | None = None,
) -> TVPanel:
    """A panel from a layout ``(row, col) -> tv_index`` (CuTe's ``print_latex(layout, thr_id)``).

    ``thread = thread_ids(tv_index % num_threads)`` (identity by default) and
    ``value = tv_index // num_threads``.

    >>> class L: shape = (2, 2); __call__ = lambda self, c: c[0] + 2 * c[1]
    >>> panel_from_mn("X", L(), num_threads=2).owners()
    [[(0, 0), (0, 1)], [(1, 0), (1, 1)]]
    """
    op = "panel_from_mn"
    nthr = _as_index(op, num_threads, "num_threads")
    if nthr < 1:
        raise ValueError(f"{op}: num_threads must be >= 1, got {nthr}")
    M, N, at = _evaluator(op, mn)
    table = []
    for m in range(M):
        row = []
        for n in range(N):
            i = at(m, n)
            t = i % nthr
            if thread_ids is not None:
                t = _as_index(op, thread_ids(t), f"thread_ids({t})")
            row.append((t, i // nthr))
        table.append(row)
    return TVPanel(name, M, N, table, title)


def tv_grid(
    panel: Any,
    *,
    one_based: bool = False,
    highlight_threads: Iterable[int] = (),
) -> Grid:
    """A :class:`~layoutalg.draw.model.Grid` for one panel: ``T#``/``V#`` labels,
    CuTe's colour ``t % 8``, outline on cells of ``highlight_threads``.
    Cells carry ``data={"thread": t, "value": v}`` (0-based)."""
    op = "tv_grid"
    p = _as_panel(op, panel)
    base = 1 if one_based else 0
    hl = {_as_index(op, t, "highlight_threads entry") for t in highlight_threads}
    g = Grid(p.rows, p.cols, name=p.name, title=p.name if p.title is None else (p.title or None), index_base=base)
    cells = g.cells
    tlab: dict[int, str] = {}
    vlab: dict[int, str] = {}
    cols = p.cols
    for r in range(p.rows):
        for c in range(cols):
            o = p.owner_at(r, c)
            if o is None:
                continue
            t, v = o
            ts = tlab.get(t)
            if ts is None:
                ts = tlab[t] = f"T{t + base}"
            vs = vlab.get(v)
            if vs is None:
                vs = vlab[v] = f"V{v + base}"
            cells[r * cols + c] = Cell((ts, vs), thread_color(t), HIGHLIGHT if t in hl else None,
                                       {"thread": t, "value": v})
    return g


def _thread_legend(grids: Sequence[Grid], base: int) -> Legend:
    threads = sorted({c.data["thread"] for g in grids for c in g.cells if c is not None})
    classes = sorted({t % 8 for t in threads})
    entries = []
    for k in classes:
        members = [t for t in threads if t % 8 == k]
        shown = ", ".join(f"T{t + base}" for t in members[:3]) + (", ..." if len(members) > 3 else "")
        entries.append((thread_color(k), shown))
    return Legend(entries, title="thread colour (t % 8)")


def tv_figure(
    panels: Sequence[Any],
    *,
    arrangement: str = "row",
    one_based: bool = False,
    title: str | None = None,
    legend: bool = False,
    highlight_threads: Iterable[int] = (),
    comments: Iterable[str] = (),
    gap: int | None = None,
) -> Figure:
    """A thread-value figure from panels (:class:`TVPanel` or ``(name, rows, cols, owner)``).

    ``arrangement``: ``"row"`` (side by side; the first panel has its row
    numbers on the left, later ones on the right, as CuTe's copy picture),
    ``"column"`` (stacked), or ``"mma"`` (three panels C, A, B -- picked by name
    when named so, else in that order -- C in the middle, A left, B on top).
    ``one_based`` adds 1 to T/V labels and headers; colours stay CuTe's ``t % 8``.
    """
    op = "tv_figure"
    ps = [_as_panel(op, p) for p in panels]
    if not ps:
        raise ValueError(f"{op}: needs at least one panel")
    hl = list(highlight_threads)
    grids = [tv_grid(p, one_based=one_based, highlight_threads=hl) for p in ps]
    base = 1 if one_based else 0
    leg = _thread_legend(grids, base) if legend else None
    kw: dict[str, Any] = {"title": title, "legend": leg, "comments": list(comments)}
    if arrangement == "row":
        for i, g in enumerate(grids):
            g.row_header_side = "left" if i == 0 else "right"
        return Figure.side_by_side(grids, gap=3 if gap is None else gap, **kw)
    if arrangement == "column":
        return Figure.stacked(grids, gap=1 if gap is None else gap, **kw)
    if arrangement == "mma":
        if len(grids) != 3:
            raise ValueError(f"{op}: arrangement 'mma' needs three panels (C, A, B), got {len(grids)}")
        by_name = {g.name: g for g in grids}
        if set(by_name) == {"A", "B", "C"}:
            C, A, B = by_name["C"], by_name["A"], by_name["B"]
        else:
            C, A, B = grids
        return Figure.mma(C, A, B, gap=1 if gap is None else gap, **kw)
    raise ValueError(f"{op}: arrangement must be 'row', 'column' or 'mma', got {arrangement!r}")


def mma_figure(C: Any, A: Any, B: Any, **options: Any) -> Figure:
    """CuTe's MMA picture from three panels: C (M x N), A (M x K), B (K x N).

    Options as :func:`tv_figure`.
    """
    return tv_figure([C, A, B], arrangement="mma", **options)


def copy_figure(src: Any, dst: Any, **options: Any) -> Figure:
    """CuTe's copy picture: source and destination panels side by side.

    Options as :func:`tv_figure`.
    """
    return tv_figure([src, dst], arrangement="row", **options)


def tensor_figure(tensor: Any, *, title: str | None = None, max_cells: int = 65536) -> Figure:
    """A tensor's values in a grid, as CuTe's ``print_tensor`` lays them out: mode 0 down,
    the other modes across (colexicographically); integer values (offsets, bits) take
    the index greys, coordinates (identity tensors) and floats no colour.

    ``title`` defaults to ``Tensor <layout>``.  Pre: the tensor holds values (not a
    symbolic pointer) and has at most ``max_cells`` elements (``ValueError`` otherwise).

    >>> import numpy as np
    >>> from layoutalg import make_tensor
    >>> g = tensor_figure(make_tensor(np.arange(6).reshape(2, 3))).placements[0].grid
    >>> (g.rows, g.cols), g[1, 2].lines
    ((2, 3), ('5',))
    """
    from ..layout import rank, size
    from ..tensor import PointerEngine, Tensor, _value_text

    op = "tensor_figure"
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(tensor).__name__}")
    if isinstance(tensor.engine, PointerEngine):
        raise ValueError(f"{op}: a symbolic pointer holds no values to draw")
    lay = tensor.layout
    n = size(lay)
    if n > max_cells:
        raise ValueError(f"{op}: the tensor has {n} elements, more than {max_cells}")
    rows = size(lay[0]) if rank(lay) >= 2 else n
    cols = n // rows if rows else 0
    if rows == 0 or cols == 0:
        raise ValueError(f"{op}: an empty tensor has nothing to draw")
    g = Grid(rows, cols, name="tensor")
    for c in range(cols):
        for r in range(rows):
            v = tensor[r + c * rows]
            whole = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            data = {"index": int(v)} if whole else {"value": _value_text(v)}
            g.cells[r * cols + c] = Cell((_value_text(v),), grey_color(int(v)) if whole else None, None, data)
    label = f"Tensor {lay}" if title is None else (title or None)
    return Figure(title=label, comments=[f"Tensor: {tensor.engine!r} o {lay}"]).add(g)
