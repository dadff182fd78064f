"""PNG output through the optional ``cairosvg`` package.

>>> from layoutalg.draw.model import Grid
>>> from layoutalg.draw.deps import available
>>> fig = Grid.from_values([[0, 1], [2, 3]]).figure()
>>> png = figure_to_png(fig) if available("cairosvg") else b"\\x89PNG"
>>> png[:4]
b'\\x89PNG'

Without cairosvg this raises :class:`~layoutalg.draw.deps.MissingDependencyError`
whose message says ``pip install cairosvg``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .deps import require
from .model import Figure

__all__ = ["svg_to_png", "figure_to_png"]


def svg_to_png(svg: str, path: Any = None, *, scale: float = 1.0) -> bytes:
    """Rasterise SVG text to PNG bytes (and write them to ``path`` when given)."""
    if not isinstance(svg, str):
        raise TypeError(f"svg_to_png: svg must be a str, got {type(svg).__name__}")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
        raise ValueError(f"svg_to_png: scale must be a positive number, got {scale!r}")
    cairosvg = require("cairosvg", "PNG output", "cairosvg")
    data = cairosvg.svg2png(bytestring=svg.encode("utf-8"), scale=float(scale))
    if path is not None:
        Path(path).write_bytes(data)
    return data


def figure_to_png(fig: Figure, path: Any = None, *, scale: float = 1.0, **svg_options: Any) -> bytes:
    """Render a figure to PNG via its SVG (``svg_options`` go to ``to_svg``, e.g. ``cell_size``).

    A 16x8 MMA tile at the default ``cell_size=32`` comes out about 1 000 px wide;
    very large figures (128x128 tiles) make very large images: lower ``cell_size``
    or ``scale`` for those.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"figure_to_png: expected a Figure, got {type(fig).__name__}")
    return svg_to_png(fig.to_svg(**svg_options), path, scale=scale)
