"""Typst back-end in the form of MoYe.jl's ``print_typst``, and compilation via ``typst``.

Each grid becomes a Typst ``table`` whose cells carry their own fill, built
from small helper functions declared at the top, as MoYe.jl's print_typst does
(``#let color_map = (rgb(175, 175, 255), ...)``, ``#let cell(...) =
table.cell(fill: color_map.at(...))[...]``, header cells with ``stroke: none``).
The tables are then placed on one block at their figure positions::

    #set page(width: auto, height: auto, margin: 0.5em)
    #set par(leading: 0.25em)
    #let u = 24pt
    #let color_map = (
      rgb(175, 175, 255),
      ...
    )
    #let cell(ci, ..lines) = table.cell(fill: color_map.at(ci), lines.pos().join(linebreak()))
    ...
    #let table_0 = text(size: 8.16pt, table(
      columns: (u,) * 9, rows: (u,) * 5, inset: 0pt, align: center + horizon,
      corner_cell, hdr_cell("0", 11.04pt), ...,
      hdr_cell("0", 11.04pt), cell(0, "T0", "V0"), ...
    ))
    #block(width: 20.5 * u, height: 9 * u)[
      #place(top + left, dx: 1 * u, dy: 1 * u, table_0)
    ]

:func:`compile_typst` turns the source into SVG, PDF or PNG with the optional
``typst`` Python package (``pip install typst``).

>>> from layoutalg.draw.model import Grid
>>> src = figure_to_typst(Grid.from_values([[0, 1]]).figure())
>>> "#let table_0 = " in src and "plain_cell(\\"1\\")" in src
True
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from .colors import Color
from .deps import require
from .model import Figure, Scene

__all__ = ["figure_to_typst", "compile_typst", "typst_string"]

_FONTS = '("DejaVu Sans Mono", "Liberation Mono", "Courier New")'


def typst_string(text: object) -> str:
    """A Typst string literal.

    >>> typst_string('a"b\\\\c')
    '"a\\\\"b\\\\\\\\c"'
    """
    s = str(text)
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f'"{s}"'


def _n(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.3f}".rstrip("0").rstrip(".")


def figure_to_typst(fig: Figure, *, cell_size_pt: float = 24.0) -> str:
    """Render a :class:`~layoutalg.draw.model.Figure` as a Typst document.

    ``cell_size_pt`` is the side of one cell; fonts scale with it.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"figure_to_typst: expected a Figure, got {type(fig).__name__}")
    if isinstance(cell_size_pt, bool) or not isinstance(cell_size_pt, (int, float)) or not cell_size_pt > 0:
        raise ValueError(f"figure_to_typst: cell_size_pt must be a positive number, got {cell_size_pt!r}")
    scene: Scene = fig.scene()
    u = float(cell_size_pt)
    bx0, by0, bx1, by1 = scene.bounds

    colors: dict[Color, int] = {}

    def ci(c: Color) -> int:
        k = colors.get(c)
        if k is None:
            k = colors[c] = len(colors)
        return k

    for gi in scene.grids:
        for cell in gi.grid.cells:
            if cell is not None:
                if cell.fill is not None:
                    ci(cell.fill)
                if cell.border is not None:
                    ci(cell.border)
    for s in scene.swatches:
        ci(s.color)

    out: list[str] = []
    a = out.append
    for line in scene.comments:
        a(f"// {line}\n")
    a("#set page(width: auto, height: auto, margin: 0.5em)\n")
    a("#set par(leading: 0.25em)\n")
    a(f"#set text(font: {_FONTS}, fallback: true)\n")
    a(f"#let u = {_n(u)}pt\n")
    a("#let color_map = (\n")
    for c in colors:
        a(f"  {c.typst},\n")
    a(")\n")
    a(
        "#let cell(ci, ..lines) = table.cell(fill: color_map.at(ci), lines.pos().join(linebreak()))\n"
        "#let fill_cell(ci) = table.cell(fill: color_map.at(ci))[]\n"
        "#let plain_cell(..lines) = table.cell(lines.pos().join(linebreak()))\n"
        "#let mark_cell(ci, hi, ..lines) = table.cell(fill: if ci < 0 { none } else { color_map.at(ci) }, "
        "stroke: 2.5pt + color_map.at(hi), if lines.pos().len() == 0 { [] } else { lines.pos().join(linebreak()) })\n"
        "#let empty_cell = table.cell[]\n"
        "#let hdr_cell(i, s) = table.cell(stroke: none, text(size: s, fill: luma(60), i))\n"
        "#let corner_cell = table.cell(stroke: none)[]\n\n"
    )

    hdrs: dict[int, dict[str, list]] = {}
    others = []
    for t in scene.texts:
        if t.role == "hdr":
            hdrs.setdefault(t.data["slot"], {"row": [], "col": []})[t.data["axis"]].append(t.text)
        else:
            others.append(t)

    esc_cache: dict[str, str] = {}

    def q(s: str) -> str:
        e = esc_cache.get(s)
        if e is None:
            e = esc_cache[s] = typst_string(s)
        return e

    placements: list[str] = []
    stroke = _n(round(max(0.4, u / 32.0), 3))
    for slot, gi in enumerate(scene.grids):
        g = gi.grid
        h = hdrs.get(slot, {"row": [], "col": []})
        row_h = h["row"] or None
        col_h = h["col"] or None
        left = row_h is not None and g.row_header_side == "left"
        right = row_h is not None and g.row_header_side == "right"
        top = col_h is not None and g.col_header_side == "top"
        bottom = col_h is not None and g.col_header_side == "bottom"
        ncols = g.cols + left + right
        nrows = g.rows + top + bottom
        hs = f"{_n(round(gi.header_font * u, 2))}pt"
        a(f"#let table_{slot} = text(size: {_n(round(gi.font * u, 2))}pt, table(\n")
        a(f"  columns: (u,) * {ncols},\n  rows: (u,) * {nrows},\n  inset: 0pt,\n")
        a(f"  align: center + horizon,\n  stroke: {stroke}pt,\n")

        def header_row() -> None:
            parts = ["corner_cell"] if left else []
            parts += [f"hdr_cell({q(s)}, {hs})" for s in col_h]
            if right:
                parts.append("corner_cell")
            a("  " + ", ".join(parts) + ",\n")

        if top:
            header_row()
        cols = g.cols
        for r in range(g.rows):
            parts = [f"hdr_cell({q(row_h[r])}, {hs})"] if left else []
            for c in range(cols):
                cell = g.cells[r * cols + c]
                if cell is None:
                    parts.append("empty_cell")
                    continue
                args = ", ".join(q(s) for s in cell.lines)
                if cell.border is not None:
                    fi = ci(cell.fill) if cell.fill is not None else -1
                    parts.append(f"mark_cell({fi}, {ci(cell.border)}{', ' + args if args else ''})")
                elif cell.fill is not None:
                    parts.append(f"cell({ci(cell.fill)}, {args})" if args else f"fill_cell({ci(cell.fill)})")
                else:
                    parts.append(f"plain_cell({args})" if args else "empty_cell")
            if right:
                parts.append(f"hdr_cell({q(row_h[r])}, {hs})")
            a("  " + ", ".join(parts) + ",\n")
        if bottom:
            header_row()
        a("))\n")
        dx = gi.x - (1 if left else 0) - bx0
        dy = gi.y - (1 if top else 0) - by0
        placements.append(f"  #place(top + left, dx: {_n(round(dx, 3))} * u, dy: {_n(round(dy, 3))} * u, table_{slot})\n")

    for s in scene.swatches:
        placements.append(
            f"  #place(top + left, dx: {_n(round(s.x - bx0, 3))} * u, dy: {_n(round(s.y - by0, 3))} * u, "
            f"rect(width: {_n(s.size)} * u, height: {_n(s.size)} * u, fill: color_map.at({ci(s.color)}), stroke: 0.5pt))\n"
        )
    weights = {"title": "bold", "figure-title": "bold", "legend-title": "bold"}
    for t in others:
        w = max(1.0, len(t.text) * 0.62 * t.font + 0.5)
        hgt = 2 * t.font
        if t.anchor == "middle":
            x, al = t.x - w / 2, "center"
        elif t.anchor == "start":
            x, al = t.x, "left"
        else:
            x, al = t.x - w, "right"
        weight = weights.get(t.role, "regular")
        placements.append(
            f"  #place(top + left, dx: {_n(round(x - bx0, 3))} * u, dy: {_n(round(t.y - hgt / 2 - by0, 3))} * u, "
            f"box(width: {_n(round(w, 3))} * u, height: {_n(round(hgt, 3))} * u, align({al} + horizon, "
            f'text(size: {_n(round(t.font * u, 2))}pt, weight: "{weight}", {q(t.text)}))))\n'
        )
    src = "".join(out)
    body = (
        f"\n#block(width: {_n(round(bx1 - bx0, 3))} * u, height: {_n(round(by1 - by0, 3))} * u)[\n"
        + "".join(placements)
        + "]\n"
    )
    return src + body


def compile_typst(
    source: str,
    path: Any = None,
    *,
    format: str | None = None,
    ppi: float | None = None,
) -> bytes:
    """Compile Typst ``source`` to SVG, PDF or PNG bytes (written to ``path`` if given).

    The format comes from ``format`` or from ``path``'s extension (default SVG).
    Needs the optional ``typst`` package; without it raises
    :class:`~layoutalg.draw.deps.MissingDependencyError` saying ``pip install typst``
    (the ``.typ`` text from :func:`figure_to_typst` also compiles with the Typst CLI:
    ``typst compile figure.typ figure.pdf``).
    """
    if not isinstance(source, str):
        raise TypeError(f"compile_typst: source must be a str, got {type(source).__name__}")
    fmt = format
    if fmt is None and path is not None:
        fmt = Path(path).suffix.lstrip(".").lower() or None
    fmt = (fmt or "svg").lower()
    if fmt not in ("svg", "pdf", "png"):
        raise ValueError(f"compile_typst: format must be 'svg', 'pdf' or 'png', got {fmt!r}")
    typst = require("typst", "Compiling Typst to " + fmt.upper(), "typst")
    with tempfile.TemporaryDirectory() as tmp:
        src_path = os.path.join(tmp, "figure.typ")
        with open(src_path, "w", encoding="utf-8") as f:
            f.write(source)
        kwargs: dict[str, Any] = {"format": fmt, "root": tmp}
        if ppi is not None and fmt == "png":
            kwargs["ppi"] = float(ppi)
        data = typst.compile(src_path, **kwargs)
    if isinstance(data, list):  # one entry per page for svg/png
        if not data:
            raise ValueError("compile_typst: Typst produced no pages")
        data = data[0]
    if path is not None:
        Path(path).write_bytes(data)
    return data
