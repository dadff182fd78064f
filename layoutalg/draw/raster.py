"""PNG output: a figure drawn straight onto a cairo image (``cairocffi``, which the optional
``cairosvg`` package brings), with the geometry, colours and fonts of the SVG back-end.

Drawing the scene directly is tens of times faster than rasterising the SVG text (whose
per-element styling and text layout dominate: a 128x128 layout took about 12 s through
``cairosvg``).

>>> from layoutalg.draw.model import Grid
>>> from layoutalg.draw.deps import available
>>> fig = Grid.from_values([[0, 1], [2, 3]]).figure()
>>> png = figure_to_png(fig) if available("cairocffi") else b"\\x89PNG"
>>> png[:4]
b'\\x89PNG'

Without cairocffi this raises :class:`~layoutalg.draw.deps.MissingDependencyError`
whose message says ``pip install cairosvg``.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from .deps import require
from .model import Figure

__all__ = ["svg_to_png", "figure_to_png", "MAX_PNG_SIDE"]

#: The largest width or height (pixels) of an image cairo makes.
MAX_PNG_SIDE = 32767


def svg_to_png(svg: str, path: Any = None, *, scale: float = 1.0) -> bytes:
    """Rasterise SVG text to PNG bytes (and write them to ``path`` when given), through cairosvg."""
    if not isinstance(svg, str):
        raise TypeError(f"svg_to_png: svg must be a str, got {type(svg).__name__}")
    _check_scale("svg_to_png", scale)
    cairosvg = require("cairosvg", "PNG output", "cairosvg")
    data = cairosvg.svg2png(bytestring=svg.encode("utf-8"), scale=float(scale))
    if path is not None:
        Path(path).write_bytes(data)
    return data


def _check_scale(op, scale):
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
        raise ValueError(f"{op}: scale must be a positive number, got {scale!r}")


def _family(css: str) -> str:
    return css.split(",")[0].strip().strip("'\"")


def figure_to_png(fig: Figure, path: Any = None, *, scale: float = 1.0, cell_size: float | None = None,
                  background: str | None = "#ffffff", data_attrs: bool = True,
                  display_width: float | None = None) -> bytes:
    """Render a figure to PNG bytes (and ``path`` when given): the picture ``to_svg`` draws,
    ``cell_size`` pixels a cell (default 32) times ``scale``.

    Pre: the image is at most :data:`MAX_PNG_SIDE` pixels on each side (``ValueError``
    naming its size otherwise: lower ``scale`` or ``cell_size``, or write SVG).
    ``data_attrs`` and ``display_width`` are SVG options, accepted and unused.
    """
    from .svg import DEFAULT_CELL_SIZE, MONO, SANS

    if not isinstance(fig, Figure):
        raise TypeError(f"figure_to_png: expected a Figure, got {type(fig).__name__}")
    _check_scale("figure_to_png", scale)
    cs = float(DEFAULT_CELL_SIZE if cell_size is None else cell_size)
    if not cs > 0:
        raise ValueError(f"figure_to_png: cell_size must be a positive number, got {cell_size!r}")
    scene = fig.scene()
    bx0, by0, bx1, by1 = scene.bounds
    W, H = math.ceil((bx1 - bx0) * cs), math.ceil((by1 - by0) * cs)
    pw, ph = math.ceil(W * scale), math.ceil(H * scale)
    if pw > MAX_PNG_SIDE or ph > MAX_PNG_SIDE:
        raise ValueError(f"figure_to_png: the image would be {pw} x {ph} pixels ({W} x {H} at cell size {cs:g}, "
                         f"times scale {scale:g}); cairo makes images of at most {MAX_PNG_SIDE} pixels a side: "
                         f"lower the scale or the cell size, or write SVG")
    cairo = require("cairocffi", "PNG output", "cairosvg")
    surface = cairo.ImageSurface(cairo.FORMAT_ARGB32, max(pw, 1), max(ph, 1))
    ctx = cairo.Context(surface)
    ctx.scale(scale, scale)
    if background:
        ctx.set_source_rgb(*_rgb(background))
        ctx.paint()
    mono, sans = _family(MONO), _family(SANS)
    sw = max(0.5, cs / 32.0)

    def text(x, y_mid, s, size, anchor="middle", family=mono, bold=False, rgb=(0, 0, 0)):
        ctx.select_font_face(family, cairo.FONT_SLANT_NORMAL,
                             cairo.FONT_WEIGHT_BOLD if bold else cairo.FONT_WEIGHT_NORMAL)
        ctx.set_font_size(size)
        adv = ctx.text_extents(s)[4]
        dx = {"middle": adv / 2, "end": adv}.get(anchor, 0.0)
        ctx.set_source_rgb(*rgb)
        ctx.move_to(x - dx, y_mid)
        ctx.show_text(s)

    hdr_by_grid: dict[int, list] = {}
    others = []
    for t in scene.texts:
        if t.role == "hdr":
            hdr_by_grid.setdefault(t.data["slot"], []).append(t)
        else:
            others.append(t)
    for i, gi in enumerate(scene.grids):
        g = gi.grid
        gx, gy = (gi.x - bx0) * cs, (gi.y - by0) * cs
        fs = gi.font * cs
        base = 0.35 * fs
        ctx.select_font_face(mono, cairo.FONT_SLANT_NORMAL, cairo.FONT_WEIGHT_NORMAL)
        ctx.set_font_size(fs)
        ctx.set_line_width(sw)
        borders = []
        for off, cell in enumerate(g.cells):
            r, c = divmod(off, g.cols)
            x, y = gx + c * cs, gy + r * cs
            ctx.rectangle(x, y, cs, cs)
            fill = None if cell is None else cell.fill
            ctx.set_source_rgb(*(_color_rgb(fill) if fill is not None else (1, 1, 1)))
            ctx.fill_preserve()
            ctx.set_source_rgb(0, 0, 0)
            ctx.stroke()
            if cell is None:
                continue
            rgb = (1, 1, 1) if (fill is not None and fill.is_dark) else (0, 0, 0)
            lines = cell.lines
            ys = ([y + cs / 2 + base] if len(lines) == 1 else
                  [y + 0.30 * cs + base, y + 0.70 * cs + base] if len(lines) == 2 else [])
            if ys:
                ctx.set_source_rgb(*rgb)
                for s, ty in zip(lines, ys):
                    adv = ctx.text_extents(s)[4]
                    ctx.move_to(x + cs / 2 - adv / 2, ty)
                    ctx.show_text(s)
            if cell.border is not None:
                borders.append((x, y, cell.border))
        ctx.set_line_width(2 * sw)
        ctx.set_source_rgb(0, 0, 0)
        ctx.rectangle(gx, gy, g.cols * cs, g.rows * cs)
        ctx.stroke()
        ctx.set_line_width(3 * sw)
        for x, y, color in borders:
            ctx.set_source_rgb(*_color_rgb(color))
            ctx.rectangle(x, y, cs, cs)
            ctx.stroke()
        hfs = gi.header_font * cs
        for t in hdr_by_grid.get(i, ()):
            text((t.x - bx0) * cs, (t.y - by0) * cs + 0.35 * hfs, t.text, hfs, rgb=(0x44 / 255,) * 3)
    for t in others:
        fsz = t.font * cs
        bold = t.role in ("title", "figure-title", "legend-title")
        family = sans if t.role in ("title", "figure-title", "legend-title", "legend", "note") else mono
        text((t.x - bx0) * cs, (t.y - by0) * cs + 0.35 * fsz, t.text, fsz, t.anchor, family, bold)
    ctx.set_line_width(sw)
    for s in scene.swatches:
        ctx.rectangle((s.x - bx0) * cs, (s.y - by0) * cs, s.size * cs, s.size * cs)
        ctx.set_source_rgb(*_color_rgb(s.color))
        ctx.fill_preserve()
        ctx.set_source_rgb(0, 0, 0)
        ctx.stroke()
    buf = io.BytesIO()
    surface.write_to_png(buf)
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def _rgb(hex_color: str) -> tuple[float, float, float]:
    h = hex_color.lstrip("#")
    if len(h) == 3:
        h = "".join(ch * 2 for ch in h)
    return tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))


def _color_rgb(color) -> tuple[float, float, float]:
    return tuple(v / 255 for v in color.rgb)
