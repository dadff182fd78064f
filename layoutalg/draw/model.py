"""Neutral picture model: grids of labelled, coloured cells placed on a canvas.

Nothing here knows about layouts. A :class:`Grid` is a rectangle of cells; each
cell holds up to two short text lines (``"T5"``/``"V3"``, or an index), a fill
colour, an optional highlight outline and free-form ``data`` (written out as
``data-*`` attributes in SVG, used by the ASCII back-end). A :class:`Figure`
places grids on a canvas measured in *cell units* (one unit = one cell side),
with row/column index headers, titles, an optional :class:`Legend` and comment
lines.

The back-ends (:mod:`.svg`, :mod:`.tikz`, :mod:`.typst_doc`, :mod:`.ascii_table`,
:mod:`.raster`) all read a figure through :meth:`Figure.scene`, which resolves
headers, titles and the legend to positions in cell units.

Example: a 2x3 grid with a highlighted cell, as SVG

>>> from layoutalg.draw.model import Grid, Figure
>>> from layoutalg.draw.colors import thread_color
>>> g = Grid(2, 3, name="C", title="C")
>>> for r in range(2):
...     for c in range(3):
...         g.set(r, c, f"T{r}", f"V{c}", fill=thread_color(r))
>>> g.highlight(0, 0)
>>> fig = Figure(title="demo").add(g)
>>> svg = fig.to_svg()
>>> svg.count('class="cell ')
6

Coordinates: ``row`` grows downwards, ``col`` to the right, both 0-based, as
in CuTe's pictures (``x={(0cm,-1cm)},y={(1cm,0cm)}`` in its TikZ).
"""

from __future__ import annotations

import numbers
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from .colors import HIGHLIGHT, Color, as_color

__all__ = [
    "Cell",
    "Grid",
    "Legend",
    "Placement",
    "Figure",
    "Scene",
    "GridItem",
    "TextItem",
    "SwatchItem",
]

# Text metrics in cell units (1.0 = one cell side). Monospace digits are ~0.6 em wide.
_CHAR_W = 0.6
_TITLE_CHAR_W = 0.62
_CELL_FONT_1 = 0.42  # one text line
_CELL_FONT_2 = 0.34  # two text lines
_HDR_FONT = 0.46
_TITLE_FONT = 0.6
_FIG_TITLE_FONT = 0.72
_LEGEND_FONT = 0.4
_NOTE_FONT = 0.38
_MARGIN = 0.5

_SIDES_ROW = ("left", "right")
_SIDES_COL = ("top", "bottom")
_SIDES_TITLE = ("top", "bottom", "left", "right")


def _as_int(op: str, name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be an int, got bool {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__} {value!r}") from None


class Cell:
    """One cell: up to two text lines, a fill, an optional outline, free ``data``.

    >>> c = Cell(("T5", "V3"), fill=(175, 175, 255), data={"thread": 5, "value": 3})
    >>> c.label, c.fill.hex
    ('T5 V3', '#afafff')
    """

    __slots__ = ("lines", "fill", "border", "data")

    def __init__(
        self,
        lines: Sequence[Any] = (),
        fill: Any = None,
        border: Any = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        if isinstance(lines, str):
            lines = (lines,)
        lines = tuple(str(x) for x in lines)
        if len(lines) > 2:
            raise ValueError(f"Cell: at most two text lines, got {len(lines)}: {lines!r}")
        self.lines: tuple[str, ...] = lines
        self.fill: Color | None = as_color(fill, "Cell fill")
        self.border: Color | None = as_color(border, "Cell border")
        if data is not None and not isinstance(data, dict):
            raise TypeError(f"Cell: data must be a dict or None, got {type(data).__name__}")
        self.data: dict[str, Any] | None = data

    @property
    def label(self) -> str:
        """The text lines joined by a space (what SVG writes as ``data-label``)."""
        return " ".join(self.lines)

    def __repr__(self) -> str:
        return f"Cell({self.lines!r}, fill={self.fill}, border={self.border}, data={self.data!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cell):
            return NotImplemented
        return (self.lines, self.fill, self.border, self.data) == (
            other.lines,
            other.fill,
            other.border,
            other.data,
        )


def _header_list(op: str, spec: Any, n: int, base: int) -> list[str] | None:
    if spec is None or spec is False:
        return None
    if spec is True or spec == "index":
        return [str(i + base) for i in range(n)]
    if isinstance(spec, str):
        raise ValueError(f"{op}: headers must be 'index', None or a sequence of {n} labels, got {spec!r}")
    labels = [str(x) for x in spec]
    if len(labels) != n:
        raise ValueError(f"{op}: expected {n} header labels, got {len(labels)}")
    return labels


class Grid:
    """A ``rows x cols`` rectangle of :class:`Cell` (or empty) entries.

    Parameters
    ----------
    rows, cols:
        Size of the grid (both >= 1).
    name:
        Short identifier (``"A"``, ``"C"``, ``"S"``); written as ``data-name`` in SVG.
    title:
        Text drawn next to the grid (``title_side``: top, bottom, left or right).
    row_headers, col_headers:
        ``"index"`` (default: ``index_base, index_base+1, ...``), ``None`` for none,
        or an explicit sequence of labels.
    row_header_side, col_header_side:
        ``"left"``/``"right"`` and ``"top"``/``"bottom"``.
    index_base:
        0 (CuTe) or 1 (MoYe.jl) -- the first header number.

    >>> g = Grid(2, 2, index_base=1)
    >>> g.set(0, 1, "7", fill="#cccccc")
    >>> g[0, 1].lines, g[1, 1] is None, g.row_labels()
    (('7',), True, ['1', '2'])
    """

    def __init__(
        self,
        rows: int,
        cols: int,
        *,
        name: str = "",
        title: str | None = None,
        row_headers: Any = "index",
        col_headers: Any = "index",
        row_header_side: str = "left",
        col_header_side: str = "top",
        title_side: str = "top",
        index_base: int = 0,
    ) -> None:
        rows = _as_int("Grid", "rows", rows)
        cols = _as_int("Grid", "cols", cols)
        if rows < 1 or cols < 1:
            raise ValueError(f"Grid: rows and cols must be >= 1, got {rows}x{cols}")
        if row_header_side not in _SIDES_ROW:
            raise ValueError(f"Grid: row_header_side must be 'left' or 'right', got {row_header_side!r}")
        if col_header_side not in _SIDES_COL:
            raise ValueError(f"Grid: col_header_side must be 'top' or 'bottom', got {col_header_side!r}")
        if title_side not in _SIDES_TITLE:
            raise ValueError(f"Grid: title_side must be one of {_SIDES_TITLE}, got {title_side!r}")
        index_base = _as_int("Grid", "index_base", index_base)
        self.rows = rows
        self.cols = cols
        self.name = str(name)
        self.title = None if title is None else str(title)
        self.index_base = index_base
        self.row_headers = row_headers
        self.col_headers = col_headers
        self.row_header_side = row_header_side
        self.col_header_side = col_header_side
        self.title_side = title_side
        # validate header specs early
        _header_list("Grid", row_headers, rows, index_base)
        _header_list("Grid", col_headers, cols, index_base)
        self.cells: list[Cell | None] = [None] * (rows * cols)
        #: Free-form facts about the whole grid, e.g. ``{"cosize": 32}`` (read by
        #: the ASCII back-end for CuTe's cell width) or the layout it shows.
        self.meta: dict[str, Any] = {}

    # -- access -------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def _offset(self, op: str, key: Any) -> int:
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError(f"Grid.{op}: index with grid[row, col], got {key!r}")
        r = _as_int(f"Grid.{op}", "row", key[0])
        c = _as_int(f"Grid.{op}", "col", key[1])
        if not (0 <= r < self.rows and 0 <= c < self.cols):
            raise ValueError(
                f"Grid.{op}: cell ({r}, {c}) is outside the {self.rows}x{self.cols} grid {self.name!r}"
            )
        return r * self.cols + c

    def __getitem__(self, key: tuple[int, int]) -> Cell | None:
        return self.cells[self._offset("__getitem__", key)]

    def __setitem__(self, key: tuple[int, int], cell: Cell | None) -> None:
        if cell is not None and not isinstance(cell, Cell):
            raise TypeError(f"Grid.__setitem__: expected a Cell or None, got {type(cell).__name__}")
        self.cells[self._offset("__setitem__", key)] = cell

    def set(
        self,
        row: int,
        col: int,
        *lines: Any,
        fill: Any = None,
        border: Any = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Fill cell ``(row, col)`` with up to two text lines (replacing what was there)."""
        self.cells[self._offset("set", (row, col))] = Cell(lines, fill, border, data)

    def highlight(self, row: int, col: int, color: Any = HIGHLIGHT) -> None:
        """Outline cell ``(row, col)`` (an empty cell becomes an unlabelled one)."""
        off = self._offset("highlight", (row, col))
        cell = self.cells[off]
        if cell is None:
            cell = self.cells[off] = Cell()
        cell.border = as_color(color, "Grid.highlight")

    def iter_cells(self) -> Iterator[tuple[int, int, Cell | None]]:
        """Yield ``(row, col, cell)`` in row-major order."""
        cols = self.cols
        for off, cell in enumerate(self.cells):
            yield off // cols, off % cols, cell

    def row_labels(self) -> list[str] | None:
        """Row header labels, or None when the grid has no row headers."""
        return _header_list("Grid", self.row_headers, self.rows, self.index_base)

    def col_labels(self) -> list[str] | None:
        """Column header labels, or None when the grid has no column headers."""
        return _header_list("Grid", self.col_headers, self.cols, self.index_base)

    @classmethod
    def from_values(
        cls,
        values: Sequence[Sequence[Any]],
        *,
        fill: Callable[[Any], Any] | None = None,
        label: Callable[[Any], Any] | None = None,
        **kwargs: Any,
    ) -> "Grid":
        """Grid from a row-major table; ``fill(v)`` picks colours, ``label(v)`` text.

        ``label`` may return a string or a tuple of up to two strings; by default
        the value itself is the label. Integer values are also kept as
        ``data={"index": v}`` so the ASCII back-end can print CuTe's table.

        >>> from layoutalg.draw.colors import grey_color
        >>> g = Grid.from_values([[0, 2], [1, 3]], fill=grey_color)
        >>> g[1, 0].lines, g[1, 0].fill.tikz
        (('1',), 'black!40')
        """
        rows = [list(r) for r in values]
        if not rows or not rows[0]:
            raise ValueError("Grid.from_values: values must be a non-empty 2-D table")
        ncols = len(rows[0])
        for i, r in enumerate(rows):
            if len(r) != ncols:
                raise ValueError(
                    f"Grid.from_values: row {i} has {len(r)} entries, row 0 has {ncols}"
                )
        g = cls(len(rows), ncols, **kwargs)
        for r, row in enumerate(rows):
            for c, v in enumerate(row):
                if v is None:
                    continue
                text = label(v) if label is not None else v
                lines = (text,) if isinstance(text, (str, int)) else tuple(text)
                data = None
                if isinstance(v, int) and not isinstance(v, bool):
                    data = {"index": v}
                g.cells[r * ncols + c] = Cell(lines, fill(v) if fill else None, None, data)
        return g

    # -- geometry -----------------------------------------------------------
    def _title_width(self) -> float:
        return len(self.title or "") * _TITLE_CHAR_W * _TITLE_FONT

    def extent(self) -> tuple[float, float, float, float]:
        """Space (top, left, bottom, right) in cell units that headers and title take."""
        top = left = bottom = right = 0.0
        if self.row_labels() is not None:
            if self.row_header_side == "left":
                left += 1
            else:
                right += 1
        if self.col_labels() is not None:
            if self.col_header_side == "top":
                top += 1
            else:
                bottom += 1
        if self.title:
            if self.title_side == "top":
                top += 1
            elif self.title_side == "bottom":
                bottom += 1
            elif self.title_side == "left":
                left += self._title_width() + 0.4
            else:
                right += self._title_width() + 0.4
        return top, left, bottom, right

    # -- output -------------------------------------------------------------
    def figure(self, title: str | None = None) -> "Figure":
        """A :class:`Figure` holding just this grid."""
        return Figure(title=title).add(self)

    def to_svg(self, **kwargs: Any) -> str:
        return self.figure().to_svg(**kwargs)

    def _repr_svg_(self) -> str:
        return self.to_svg()

    def __repr__(self) -> str:
        filled = sum(c is not None for c in self.cells)
        return f"Grid({self.rows}x{self.cols}, name={self.name!r}, filled={filled})"


@dataclass
class Legend:
    """Colour swatches with labels, drawn below the grids.

    >>> from layoutalg.draw.colors import THREAD_COLORS
    >>> leg = Legend([(c, f"T{i}") for i, c in enumerate(THREAD_COLORS[:2])], title="threads")
    >>> len(leg.entries)
    2
    """

    entries: list[tuple[Color, str]] = field(default_factory=list)
    title: str | None = None

    def __post_init__(self) -> None:
        fixed = []
        for i, entry in enumerate(self.entries):
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise TypeError(f"Legend: entry {i} must be a (colour, label) pair, got {entry!r}")
            fixed.append((as_color(entry[0], "Legend"), str(entry[1])))
        self.entries = fixed


@dataclass
class Placement:
    """A grid placed with its cell (0, 0) at canvas position (row, col), in cell units."""

    grid: Grid
    row: float
    col: float


class GridItem(NamedTuple):
    grid: Grid
    x: float  # column of cell (0, 0), cell units
    y: float  # row of cell (0, 0), cell units
    font: float  # cell text font size, cell units
    header_font: float


class TextItem(NamedTuple):
    x: float
    y: float  # vertical centre of the text
    text: str
    role: str  # "hdr", "title", "figure-title", "legend-title", "legend", "note"
    anchor: str  # "middle", "start", "end"
    font: float
    data: dict[str, Any] | None


class SwatchItem(NamedTuple):
    x: float
    y: float
    size: float
    color: Color


@dataclass
class Scene:
    """A figure resolved to positions in cell units; ``bounds`` = (x0, y0, x1, y1)."""

    grids: list[GridItem]
    texts: list[TextItem]
    swatches: list[SwatchItem]
    bounds: tuple[float, float, float, float]
    comments: list[str]
    title: str | None


def _cell_font(grid: Grid) -> float:
    maxlen = 1
    nlines = 1
    for cell in grid.cells:
        if cell is not None and cell.lines:
            if len(cell.lines) > nlines:
                nlines = len(cell.lines)
            for s in cell.lines:
                if len(s) > maxlen:
                    maxlen = len(s)
    base = _CELL_FONT_2 if nlines > 1 else _CELL_FONT_1
    return min(base, 0.9 / (_CHAR_W * maxlen))


def _text_box(t: TextItem, char_w: float = _CHAR_W) -> tuple[float, float, float, float]:
    w = len(t.text) * char_w * t.font
    if t.anchor == "middle":
        x0, x1 = t.x - w / 2, t.x + w / 2
    elif t.anchor == "start":
        x0, x1 = t.x, t.x + w
    else:
        x0, x1 = t.x - w, t.x
    h = 0.6 * t.font
    return x0, t.y - h, x1, t.y + h


class Figure:
    """Several grids on one canvas, with an optional title, legend and comments.

    Build one by hand with :meth:`add`, or with an arrangement:
    :meth:`mma` (A left, B on top, C in the middle, as CuTe draws an MMA),
    :meth:`side_by_side` (copy pictures: source and destination) or :meth:`stacked`.

    >>> a, b = Grid(2, 2, name="S"), Grid(2, 2, name="D")
    >>> fig = Figure.side_by_side([a, b], title="copy")
    >>> [(p.grid.name, p.row, p.col) for p in fig.placements]
    [('S', 0, 0), ('D', 0, 6)]
    """

    def __init__(
        self,
        title: str | None = None,
        *,
        legend: Legend | None = None,
        comments: Iterable[str] = (),
        notes: Iterable[str] = (),
    ) -> None:
        self.title = None if title is None else str(title)
        if legend is not None and not isinstance(legend, Legend):
            raise TypeError(f"Figure: legend must be a Legend or None, got {type(legend).__name__}")
        self.legend = legend
        #: Lines written as comments at the top of SVG/TikZ/Typst output (not drawn).
        self.comments: list[str] = [str(c) for c in comments]
        #: Lines drawn as a caption under the figure.
        self.notes: list[str] = [str(n) for n in notes]
        self.placements: list[Placement] = []

    def add(self, grid: Grid, row: float = 0, col: float = 0) -> "Figure":
        """Place ``grid`` with its cell (0, 0) at (row, col); returns the figure."""
        if not isinstance(grid, Grid):
            raise TypeError(f"Figure.add: expected a Grid, got {type(grid).__name__}")
        for name, v in (("row", row), ("col", col)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"Figure.add: {name} must be a number, got {v!r}")
        self.placements.append(Placement(grid, _tidy(float(row)), _tidy(float(col))))
        return self

    @property
    def grids(self) -> list[Grid]:
        return [p.grid for p in self.placements]

    def grid(self, name: str) -> Grid:
        """The placed grid called ``name``."""
        for p in self.placements:
            if p.grid.name == name:
                return p.grid
        raise KeyError(f"Figure.grid: no grid named {name!r}; have {[p.grid.name for p in self.placements]}")

    # -- arrangements ---------------------------------------------------------
    @classmethod
    def side_by_side(cls, grids: Sequence[Grid], *, gap: float = 3, title: str | None = None, **kwargs: Any) -> "Figure":
        """Grids left to right, ``gap`` empty columns apart (CuTe's copy picture uses 3)."""
        grids = list(grids)
        if not grids:
            raise ValueError("Figure.side_by_side: needs at least one grid")
        fig = cls(title=title, **kwargs)
        x = 0.0
        for i, g in enumerate(grids):
            top, left, bottom, right = g.extent()
            if i > 0:
                x += left
            fig.add(g, 0, _tidy(x))
            x += g.cols + right + gap
        return fig

    @classmethod
    def stacked(cls, grids: Sequence[Grid], *, gap: float = 1, title: str | None = None, **kwargs: Any) -> "Figure":
        """Grids top to bottom, ``gap`` empty rows apart."""
        grids = list(grids)
        if not grids:
            raise ValueError("Figure.stacked: needs at least one grid")
        fig = cls(title=title, **kwargs)
        y = 0.0
        for i, g in enumerate(grids):
            top, left, bottom, right = g.extent()
            if i > 0:
                y += top
            fig.add(g, _tidy(y), 0)
            y += g.rows + bottom + gap
        return fig

    @classmethod
    def mma(cls, C: Grid, A: Grid, B: Grid, *, gap: int = 1, title: str | None = None, **kwargs: Any) -> "Figure":
        """CuTe's MMA picture: C (M x N) in the middle, A (M x K) left, B (K x N) on top.

        B is drawn K x N (k down, n across), as CuTe's print_latex does. Header
        and title sides are set here: A and B have headers left/top, C right/bottom.

        >>> C, A, B = Grid(4, 2, name="C"), Grid(4, 3, name="A"), Grid(3, 2, name="B")
        >>> fig = Figure.mma(C, A, B)
        >>> [(p.grid.name, p.row, p.col) for p in fig.placements]
        [('C', 0, 0), ('A', 0, -4), ('B', -4, 0)]
        """
        for name, g in (("C", C), ("A", A), ("B", B)):
            if not isinstance(g, Grid):
                raise TypeError(f"Figure.mma: {name} must be a Grid, got {type(g).__name__}")
        M, N = C.shape
        if A.rows != M or B.cols != N or A.cols != B.rows:
            raise ValueError(
                "Figure.mma: shapes do not fit: need C (M x N), A (M x K), B (K x N); got "
                f"C {C.rows}x{C.cols}, A {A.rows}x{A.cols}, B {B.rows}x{B.cols}"
            )
        K = A.cols
        A.row_header_side, A.col_header_side, A.title_side = "left", "top", "top"
        B.row_header_side, B.col_header_side, B.title_side = "left", "top", "top"
        C.row_header_side, C.col_header_side, C.title_side = "right", "bottom", "bottom"
        fig = cls(title=title, **kwargs)
        fig.add(C, 0, 0)
        fig.add(A, 0, -K - gap)
        fig.add(B, -K - gap, 0)
        return fig

    # -- resolution -------------------------------------------------------------
    def scene(self) -> Scene:
        """Resolve headers, titles, legend and notes to positions in cell units."""
        if not self.placements:
            raise ValueError("Figure.scene: the figure has no grids; add one with Figure.add(grid)")
        grids: list[GridItem] = []
        texts: list[TextItem] = []
        swatches: list[SwatchItem] = []
        for slot, p in enumerate(self.placements):
            g = p.grid
            x, y = p.col, p.row
            rl, cl = g.row_labels(), g.col_labels()
            hlen = max([len(s) for s in (rl or []) + (cl or [])] + [1])
            hfont = min(_HDR_FONT, 0.92 / (_CHAR_W * hlen))
            grids.append(GridItem(g, x, y, _cell_font(g), hfont))
            if rl is not None:
                hx = x - 0.5 if g.row_header_side == "left" else x + g.cols + 0.5
                for r, s in enumerate(rl):
                    texts.append(TextItem(hx, y + r + 0.5, s, "hdr", "middle", hfont,
                                          {"axis": "row", "index": r, "grid": g.name, "slot": slot}))
            if cl is not None:
                hy = y - 0.5 if g.col_header_side == "top" else y + g.rows + 0.5
                for c, s in enumerate(cl):
                    texts.append(TextItem(x + c + 0.5, hy, s, "hdr", "middle", hfont,
                                          {"axis": "col", "index": c, "grid": g.name, "slot": slot}))
            if g.title:
                top, left, bottom, right = g.extent()
                side = g.title_side
                if side == "top":
                    hdr = 1 if (cl is not None and g.col_header_side == "top") else 0
                    t = TextItem(x + g.cols / 2, y - hdr - 0.5, g.title, "title", "middle", _TITLE_FONT, {"grid": g.name, "slot": slot})
                elif side == "bottom":
                    hdr = 1 if (cl is not None and g.col_header_side == "bottom") else 0
                    t = TextItem(x + g.cols / 2, y + g.rows + hdr + 0.5, g.title, "title", "middle", _TITLE_FONT, {"grid": g.name, "slot": slot})
                elif side == "left":
                    hdr = 1 if (rl is not None and g.row_header_side == "left") else 0
                    t = TextItem(x - hdr - 0.3, y + g.rows / 2, g.title, "title", "end", _TITLE_FONT, {"grid": g.name, "slot": slot})
                else:
                    hdr = 1 if (rl is not None and g.row_header_side == "right") else 0
                    t = TextItem(x + g.cols + hdr + 0.3, y + g.rows / 2, g.title, "title", "start", _TITLE_FONT, {"grid": g.name, "slot": slot})
                texts.append(t)

        # bounds of grids + texts so far
        x0 = min(gi.x for gi in grids)
        y0 = min(gi.y for gi in grids)
        x1 = max(gi.x + gi.grid.cols for gi in grids)
        y1 = max(gi.y + gi.grid.rows for gi in grids)
        for t in texts:
            bx0, by0, bx1, by1 = _text_box(t, _TITLE_CHAR_W if t.role == "title" else _CHAR_W)
            x0, y0, x1, y1 = min(x0, bx0), min(y0, by0), max(x1, bx1), max(y1, by1)

        if self.title:
            t = TextItem((x0 + x1) / 2, y0 - 0.75, self.title, "figure-title", "middle", _FIG_TITLE_FONT, None)
            texts.append(t)
            bx0, by0, bx1, by1 = _text_box(t, _TITLE_CHAR_W)
            x0, y0, x1 = min(x0, bx0), min(y0, by0), max(x1, bx1)

        if self.legend is not None and (self.legend.entries or self.legend.title):
            width = max(x1 - x0, 12.0)
            cy = y1 + 0.9
            if self.legend.title:
                t = TextItem(x0, cy, self.legend.title, "legend-title", "start", _LEGEND_FONT * 1.1, None)
                texts.append(t)
                x1 = max(x1, _text_box(t, _TITLE_CHAR_W)[2])
                cy += 0.8
            cx = x0
            sw = 0.6
            for color, label in self.legend.entries:
                w = sw + 0.2 + len(label) * _CHAR_W * _LEGEND_FONT + 0.5
                if cx > x0 and cx + w > x0 + width:
                    cx = x0
                    cy += 0.8
                swatches.append(SwatchItem(cx, cy - sw / 2, sw, color))
                texts.append(TextItem(cx + sw + 0.2, cy, label, "legend", "start", _LEGEND_FONT, None))
                x1 = max(x1, cx + w)
                cx += w
            y1 = cy + 0.5

        if self.notes:
            cy = y1 + 0.6
            for line in self.notes:
                t = TextItem(x0, cy, line, "note", "start", _NOTE_FONT, None)
                texts.append(t)
                x1 = max(x1, _text_box(t)[2])
                cy += 0.6
            y1 = cy - 0.2

        bounds = (x0 - _MARGIN, y0 - _MARGIN, x1 + _MARGIN, y1 + _MARGIN)
        return Scene(grids, texts, swatches, bounds, list(self.comments), self.title)

    # -- back-ends ----------------------------------------------------------------
    def to_svg(self, **kwargs: Any) -> str:
        """SVG text; see :func:`layoutalg.draw.svg.figure_to_svg` for options."""
        from .svg import figure_to_svg

        return figure_to_svg(self, **kwargs)

    def to_tikz(self, **kwargs: Any) -> str:
        """Standalone LaTeX/TikZ document in the form of CuTe's print_latex."""
        from .tikz import figure_to_tikz

        return figure_to_tikz(self, **kwargs)

    def to_typst(self, **kwargs: Any) -> str:
        """Typst source in the form of MoYe.jl's print_typst."""
        from .typst_doc import figure_to_typst

        return figure_to_typst(self, **kwargs)

    def to_ascii(self, **kwargs: Any) -> str:
        """Plain text tables (CuTe's print_layout form where cells hold indices)."""
        from .ascii_table import figure_to_ascii

        return figure_to_ascii(self, **kwargs)

    def to_png(self, path: Any = None, **kwargs: Any) -> bytes:
        """PNG bytes (and file when ``path`` is given) via cairosvg."""
        from .raster import figure_to_png

        return figure_to_png(self, path, **kwargs)

    def save(self, path: Any, **kwargs: Any) -> Any:
        """Write by extension: .svg .png .tex .typ .txt .pdf (see :func:`layoutalg.draw.save`)."""
        from .output import save

        return save(self, path, **kwargs)

    def _repr_svg_(self) -> str:
        from .notebook import repr_svg

        return repr_svg(self)

    def __repr__(self) -> str:
        names = ", ".join(f"{p.grid.name or '?'}@({p.row},{p.col})" for p in self.placements)
        return f"Figure(title={self.title!r}, grids=[{names}])"


def _tidy(v: float) -> float:
    """Return ints for whole numbers so positions print as ``5`` rather than ``5.0``."""
    return int(v) if float(v).is_integer() else v
