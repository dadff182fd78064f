"""Plain-text tables: CuTe's ``print_layout`` form, character for character.

For an integer grid (a rank-2 layout's values, ``values[m][n] = L(m, n)``)
:func:`ascii_layout_table` prints what CuTe's ``print_layout`` prints: an
optional first line (CuTe prints the layout, ``(4,8):(8,1)``), a line of column
numbers, then for each row a ``+----+`` separator and a ``| v |`` line led by
the row number; cells are ``num_digits(cosize) + 2`` wide. Like CuTe's, the column-number line
ends in a space.

>>> print(ascii_layout_table([[0, 2], [1, 3]], "(2,2):(1,2)"), end="")  # doctest: +NORMALIZE_WHITESPACE
(2,2):(1,2)
      0   1
    +---+---+
 0  | 0 | 2 |
    +---+---+
 1  | 1 | 3 |
    +---+---+

:func:`ascii_tv_table` prints CuTe's thread-value table (``|TTT-VV`` per cell).
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

from .model import Figure, Grid

__all__ = ["num_digits", "ascii_layout_table", "ascii_tv_table", "ascii_grid_table", "figure_to_ascii"]


def num_digits(x: int) -> int:
    """Number of decimal digits as CuTe counts them (1 for anything below 10).

    >>> [num_digits(v) for v in (0, 9, 10, 99, 100, 12345)]
    [1, 1, 2, 2, 3, 5]
    """
    n = 1
    limit = 10
    while x >= limit and n < 10:
        n += 1
        limit *= 10
    return n


def _table(op: str, values: Sequence[Sequence[Any]]) -> list[list[Any]]:
    try:
        rows = [list(r) for r in values]
    except TypeError:
        raise TypeError(f"{op}: values must be a 2-D table (a sequence of rows)") from None
    if not rows or not rows[0]:
        raise ValueError(f"{op}: values must be a non-empty 2-D table")
    n = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != n:
            raise ValueError(f"{op}: row {i} has {len(r)} entries, row 0 has {n}")
    return rows


def ascii_layout_table(
    values: Sequence[Sequence[int | None]],
    header: str | None = None,
    *,
    cosize: int | None = None,
    one_based: bool = False,
) -> str:
    """CuTe's print_layout text for the integer table ``values[m][n]``.

    ``header`` is the first line (CuTe prints the layout there); ``cosize``
    sets the cell width as in CuTe (``num_digits(cosize) + 2``) and defaults to
    ``max(values) + 1``. With ``one_based=True`` row/column numbers and values
    are shown plus one (MoYe.jl's convention). ``None`` entries print blank.
    """
    op = "ascii_layout_table"
    rows = _table(op, values)
    ints: list[list[int | None]] = []
    for r in rows:
        out_r = []
        for v in r:
            if v is None:
                out_r.append(None)
                continue
            if isinstance(v, bool):
                raise TypeError(f"{op}: values must be ints, got bool {v!r}")
            try:
                out_r.append(operator.index(v))
            except TypeError:
                raise TypeError(f"{op}: values must be ints, got {type(v).__name__} {v!r}") from None
        ints.append(out_r)
    present = [v for r in ints for v in r if v is not None]
    if cosize is None:
        cosize = (max(present) + 1) if present else 1
    else:
        cosize = operator.index(cosize)
    base = 1 if one_based else 0
    w = num_digits(cosize) + 2
    M, N = len(ints), len(ints[0])
    lines: list[str] = []
    if header is not None:
        lines.append(str(header))
    lines.append("    " + "".join(f"  {n + base:>{w - 2}d} " for n in range(N)))
    sep = "    " + ("+" + "-" * w) * N + "+"
    for m in range(M):
        lines.append(sep)
        cells = "".join(
            f"| {' ' * (w - 2)} " if v is None else f"| {v + base:>{w - 2}d} " for v in ints[m]
        )
        lines.append(f"{m + base:2d}  {cells}|")
    lines.append(sep)
    return "\n".join(lines) + "\n"


def ascii_tv_table(
    owners: Sequence[Sequence[tuple[int, int] | None]],
    header: str | None = None,
    *,
    one_based: bool = False,
) -> str:
    """CuTe's thread-value print_layout text: ``|TTT-VV`` per cell (``%03d-%02d``).

    ``owners[m][n]`` is the ``(thread, value)`` owning cell (m, n), or None.

    >>> print(ascii_tv_table([[(0, 0), (1, 0)], [(0, 1), (1, 1)]]), end="")
    +------+------+
    |000-00|001-00|
    +------+------+
    |000-01|001-01|
    +------+------+
    """
    op = "ascii_tv_table"
    rows = _table(op, owners)
    base = 1 if one_based else 0
    N = len(rows[0])
    sep = "+------" * N + "+"
    lines: list[str] = []
    if header is not None:
        lines.append(str(header))
    for r in rows:
        lines.append(sep)
        parts = []
        for o in r:
            if o is None:
                parts.append("|      ")
            else:
                t, v = o
                parts.append(f"|{t + base:03d}-{v + base:02d}")
        lines.append("".join(parts) + "|")
    lines.append(sep)
    return "\n".join(lines) + "\n"


def ascii_grid_table(grid: Grid, header: str | None = None) -> str:
    """Any :class:`Grid` as a boxed text table (cell lines joined with ``/``).

    >>> g = Grid(1, 2)
    >>> _ = g.set(0, 0, "T0", "V1")
    >>> print(ascii_grid_table(g), end="")  # doctest: +NORMALIZE_WHITESPACE
              0       1
        +-------+-------+
     0  | T0/V1 |       |
        +-------+-------+
    """
    if not isinstance(grid, Grid):
        raise TypeError(f"ascii_grid_table: expected a Grid, got {type(grid).__name__}")
    texts = ["" if c is None else "/".join(c.lines) for c in grid.cells]
    rl = grid.row_labels() or [""] * grid.rows
    cl = grid.col_labels() or [""] * grid.cols
    w = max([len(t) for t in texts] + [len(s) for s in cl] + [1]) + 2
    rw = max([len(s) for s in rl] + [2])
    lines: list[str] = []
    if header is not None:
        lines.append(str(header))
    pad = " " * (rw + 2)
    lines.append(pad + "".join(f"  {s:>{w - 2}} " for s in cl))
    sep = pad + ("+" + "-" * w) * grid.cols + "+"
    for r in range(grid.rows):
        lines.append(sep)
        row = texts[r * grid.cols : (r + 1) * grid.cols]
        lines.append(f"{rl[r]:>{rw}}  " + "".join(f"| {t:>{w - 2}} " for t in row) + "|")
    lines.append(sep)
    return "\n".join(lines) + "\n"


def _all_have(grid: Grid, keys: tuple[str, ...]) -> bool:
    seen = False
    for c in grid.cells:
        if c is None:
            continue
        if not c.data or any(k not in c.data for k in keys):
            return False
        seen = True
    return seen


def figure_to_ascii(fig: Figure) -> str:
    """Every grid of a figure as text: CuTe's layout table when cells carry
    ``data["index"]``, CuTe's thread-value table when they carry ``thread`` and
    ``value``, a generic boxed table otherwise.

    A single-grid figure takes the figure title as its first line, so a layout
    picture prints exactly as CuTe's print_layout.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"figure_to_ascii: expected a Figure, got {type(fig).__name__}")
    if not fig.placements:
        raise ValueError("figure_to_ascii: the figure has no grids")
    single = len(fig.placements) == 1
    sections: list[str] = []
    if not single and fig.title:
        sections.append(fig.title + "\n")
    for p in fig.placements:
        g = p.grid
        head = g.title or (fig.title if single else None) or (g.name or None)
        one_based = g.index_base == 1
        if _all_have(g, ("thread", "value")):
            owners = [
                [
                    None if (c := g.cells[r * g.cols + k]) is None else (c.data["thread"], c.data["value"])
                    for k in range(g.cols)
                ]
                for r in range(g.rows)
            ]
            sections.append(ascii_tv_table(owners, head, one_based=one_based))
        elif _all_have(g, ("index",)):
            vals = [
                [None if (c := g.cells[r * g.cols + k]) is None else c.data["index"] for k in range(g.cols)]
                for r in range(g.rows)
            ]
            cos = g.meta.get("cosize")
            sections.append(ascii_layout_table(vals, head, cosize=cos, one_based=one_based))
        else:
            sections.append(ascii_grid_table(g, head))
    return "\n".join(sections)
