"""SVG back-end, written by hand (no plotting library).

The output is compact and easy to inspect:

* one ``<g class="grid gI">`` per grid, translated to its place, holding its
  cells, headers and outline; fonts are set per grid in a ``<style>`` block and
  scale with ``cell_size``;
* one ``<rect class="cell fK">`` per tile of the grid -- exactly one per cell,
  empty cells included -- carrying ``data-row``, ``data-col`` and ``data-label``
  (the cell's text lines joined by a space) plus ``data-KEY`` for each entry of
  the cell's ``data`` (e.g. ``data-thread``, ``data-value``, ``data-index``);
  the fill comes from the CSS class ``fK`` (one class per distinct colour);
* one ``<text>`` per text line, after its rect;
* headers are ``<text class="hdr" data-axis="row|col" data-index="i">``.

>>> from layoutalg.draw.model import Grid
>>> g = Grid(1, 2, name="X")
>>> _ = g.set(0, 0, "a<b", fill="#ff0000")
>>> svg = figure_to_svg(g.figure(), cell_size=20)
>>> 'data-label="a&lt;b"' in svg, svg.count('class="cell')
(True, 2)
"""

from __future__ import annotations

import math
from typing import Any

from .colors import Color
from .model import Figure, Grid, Scene

__all__ = ["figure_to_svg", "xml_escape", "DEFAULT_CELL_SIZE"]

DEFAULT_CELL_SIZE = 32
MONO = "'DejaVu Sans Mono',Menlo,Consolas,'Liberation Mono',monospace"
SANS = "'DejaVu Sans',Helvetica,Arial,sans-serif"

_ESC = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})


def xml_escape(text: Any) -> str:
    """Escape text for XML content and double-quoted attributes.

    >>> xml_escape('<a & "b">')
    '&lt;a &amp; &quot;b&quot;&gt;'
    """
    s = str(text)
    # drop characters XML 1.0 forbids (control characters other than tab/newline/cr)
    if any(ord(ch) < 32 and ch not in "\t\n\r" for ch in s):
        s = "".join(ch for ch in s if ord(ch) >= 32 or ch in "\t\n\r")
    return s.translate(_ESC)


def _num(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _comment(text: str) -> str:
    body = str(text).replace("--", "- -")
    if body.endswith("-"):
        body += " "
    return f"<!-- {xml_escape(body)} -->"


def _data_key(key: str) -> str:
    k = "".join(ch if (ch.isalnum() or ch in "-_.") else "-" for ch in str(key).lower())
    return k or "x"


def figure_to_svg(
    fig: Figure,
    *,
    cell_size: float = DEFAULT_CELL_SIZE,
    data_attrs: bool = True,
    display_width: float | None = None,
    background: str | None = "#ffffff",
    labels: bool = True,
) -> str:
    """Render a :class:`~layoutalg.draw.model.Figure` to SVG text.

    Parameters
    ----------
    cell_size:
        Side of one cell in SVG user units (pixels); all fonts and line widths
        scale with it. 32 gives legible two-line ``T127``/``V63`` labels.
    data_attrs:
        Write ``data-*`` attributes on every cell (default). Turning them off
        makes very large figures about 40% smaller.
    display_width:
        When given, the ``width``/``height`` attributes are scaled so the image
        shows this many pixels wide (the viewBox keeps the full geometry).
    background:
        Canvas colour, or None for transparent.
    labels:
        Write the cells' text (default); without it a large figure shown small (its cells a
        few pixels wide, where no label can be read) is less than half the size.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"figure_to_svg: expected a Figure, got {type(fig).__name__}")
    if isinstance(cell_size, bool) or not isinstance(cell_size, (int, float)) or not cell_size > 0:
        raise ValueError(f"figure_to_svg: cell_size must be a positive number, got {cell_size!r}")
    if display_width is not None and not (isinstance(display_width, (int, float)) and display_width > 0):
        raise ValueError(f"figure_to_svg: display_width must be a positive number, got {display_width!r}")
    scene: Scene = fig.scene()
    cs = float(cell_size)
    bx0, by0, bx1, by1 = scene.bounds
    W = math.ceil((bx1 - bx0) * cs)
    H = math.ceil((by1 - by0) * cs)
    sw = max(0.5, cs / 32.0)  # base stroke width

    # ---- colour classes ------------------------------------------------------
    classes: dict[Color, str] = {}

    def cls_of(c: Color) -> str:
        k = classes.get(c)
        if k is None:
            k = classes[c] = f"f{len(classes)}"
        return k

    for gi in scene.grids:
        for cell in gi.grid.cells:
            if cell is not None and cell.fill is not None:
                cls_of(cell.fill)
    for s in scene.swatches:
        cls_of(s.color)

    out: list[str] = []
    a = out.append
    a('<?xml version="1.0" encoding="UTF-8"?>\n')
    dw, dh = W, H
    if display_width is not None:
        dw = display_width
        dh = H * display_width / W
    a(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(round(dw, 2))}" height="{_num(round(dh, 2))}" '
        f'viewBox="0 0 {W} {H}">\n'
    )
    for line in scene.comments:
        a(_comment(line) + "\n")
    if scene.title:
        a(f"<title>{xml_escape(scene.title)}</title>\n")

    # ---- style -----------------------------------------------------------------
    css = [
        f".cell{{fill:#fff;stroke:#000;stroke-width:{_num(sw)}}}",
        *(f".{k}{{fill:{c.hex}}}" for c, k in classes.items()),
        f"text{{font-family:{MONO};text-anchor:middle;fill:#000}}",
        "text.d{fill:#fff}",
        ".hdr{fill:#444}",
        f".hl{{fill:none;stroke-width:{_num(3 * sw)}}}",
        f".frame{{fill:none;stroke:#000;stroke-width:{_num(2 * sw)}}}",
        f".title,.ftitle,.ltitle{{font-family:{SANS};font-weight:bold}}",
        f".legend,.note{{font-family:{SANS}}}",
        f".swatch{{stroke:#000;stroke-width:{_num(sw)}}}",
    ]
    for i, gi in enumerate(scene.grids):
        css.append(f".g{i} text{{font-size:{_num(round(gi.font * cs, 2))}px}}")
        css.append(f".g{i} .hdr{{font-size:{_num(round(gi.header_font * cs, 2))}px}}")
    a("<style>\n" + "\n".join(css) + "\n</style>\n")
    if background:
        a(f'<rect width="{W}" height="{H}" fill="{xml_escape(background)}"/>\n')

    # ---- grids -------------------------------------------------------------------
    esc_cache: dict[str, str] = {}

    def esc(s: str) -> str:
        e = esc_cache.get(s)
        if e is None:
            e = esc_cache[s] = xml_escape(s)
        return e

    hdr_by_grid: dict[int, list] = {}
    other_texts = []
    for t in scene.texts:
        if t.role == "hdr":
            # headers are drawn inside their grid's group, in its coordinates
            hdr_by_grid.setdefault(t.data["slot"], []).append(t)
        else:
            other_texts.append(t)

    cs_s = _num(cs)
    for i, gi in enumerate(scene.grids):
        g: Grid = gi.grid
        gx, gy = (gi.x - bx0) * cs, (gi.y - by0) * cs
        a(
            f'<g class="grid g{i}" data-name="{esc(g.name)}" data-rows="{g.rows}" data-cols="{g.cols}" '
            f'transform="translate({_num(round(gx, 2))},{_num(round(gy, 2))})">\n'
        )
        fs = gi.font * cs
        base = 0.35 * fs
        xs = [_num(c * cs) for c in range(g.cols)]
        tx = [_num(c * cs + cs / 2) for c in range(g.cols)]
        ys = [_num(r * cs) for r in range(g.rows)]
        ty1 = [_num(round(r * cs + cs / 2 + base, 1)) for r in range(g.rows)]
        ty2a = [_num(round(r * cs + 0.30 * cs + base, 1)) for r in range(g.rows)]
        ty2b = [_num(round(r * cs + 0.70 * cs + base, 1)) for r in range(g.rows)]
        size_attr = f' width="{cs_s}" height="{cs_s}"'
        cols = g.cols
        borders = []
        for off, cell in enumerate(g.cells):
            r, c = divmod(off, cols)
            if cell is None:
                if data_attrs:
                    a(f'<rect class="cell" x="{xs[c]}" y="{ys[r]}"{size_attr} data-row="{r}" data-col="{c}" data-label=""/>\n')
                else:
                    a(f'<rect class="cell" x="{xs[c]}" y="{ys[r]}"{size_attr}/>\n')
                continue
            fill = cell.fill
            fcls = " " + classes[fill] if fill is not None else ""
            if data_attrs:
                extra = ""
                if cell.data:
                    extra = "".join(f' data-{_data_key(k)}="{esc(str(v))}"' for k, v in cell.data.items())
                a(
                    f'<rect class="cell{fcls}" x="{xs[c]}" y="{ys[r]}"{size_attr} data-row="{r}" data-col="{c}" '
                    f'data-label="{esc(cell.label)}"{extra}/>'
                )
            else:
                a(f'<rect class="cell{fcls}" x="{xs[c]}" y="{ys[r]}"{size_attr}/>')
            lines = cell.lines if labels else ()
            tcls = ' class="d"' if (fill is not None and fill.is_dark) else ""
            if len(lines) == 1:
                a(f'<text{tcls} x="{tx[c]}" y="{ty1[r]}">{esc(lines[0])}</text>\n')
            elif len(lines) == 2:
                a(
                    f'<text{tcls} x="{tx[c]}" y="{ty2a[r]}">{esc(lines[0])}</text>'
                    f'<text{tcls} x="{tx[c]}" y="{ty2b[r]}">{esc(lines[1])}</text>\n'
                )
            else:
                a("\n")
            if cell.border is not None:
                borders.append((r, c, cell.border))
        a(f'<rect class="frame" x="0" y="0" width="{_num(g.cols * cs)}" height="{_num(g.rows * cs)}"/>\n')
        for r, c, color in borders:
            a(f'<rect class="hl" x="{xs[c]}" y="{ys[r]}"{size_attr} stroke="{color.hex}"/>\n')
        hfs = gi.header_font * cs
        for t in hdr_by_grid.get(i, ()):
            hx = (t.x - gi.x) * cs
            hy = (t.y - gi.y) * cs + 0.35 * hfs
            a(
                f'<text class="hdr" x="{_num(round(hx, 2))}" y="{_num(round(hy, 2))}" '
                f'data-axis="{t.data["axis"]}" data-index="{t.data["index"]}">{esc(t.text)}</text>\n'
            )
        a("</g>\n")

    # ---- titles, legend, notes ---------------------------------------------------
    role_cls = {"title": "title", "figure-title": "ftitle", "legend-title": "ltitle", "legend": "legend", "note": "note", "hdr": "hdr"}
    for t in other_texts:
        fsz = t.font * cs
        x = (t.x - bx0) * cs
        y = (t.y - by0) * cs + 0.35 * fsz
        # inline style: the stylesheet's text-anchor would override a presentation attribute
        anchor = "" if t.anchor == "middle" else f";text-anchor:{t.anchor}"
        extra = ""
        if t.role == "title" and t.data:
            extra = f' data-grid="{esc(t.data.get("grid", ""))}"'
        a(
            f'<text class="{role_cls.get(t.role, t.role)}" x="{_num(round(x, 2))}" y="{_num(round(y, 2))}" '
            f'style="font-size:{_num(round(fsz, 2))}px{anchor}"{extra}>{esc(t.text)}</text>\n'
        )
    for s in scene.swatches:
        x = (s.x - bx0) * cs
        y = (s.y - by0) * cs
        a(
            f'<rect class="swatch {classes[s.color]}" x="{_num(round(x, 2))}" y="{_num(round(y, 2))}" '
            f'width="{_num(round(s.size * cs, 2))}" height="{_num(round(s.size * cs, 2))}"/>\n'
        )
    a("</svg>\n")
    return "".join(out)

