"""Write a figure to a file, the format chosen by the file's extension.

========  =====================================================  ==============
suffix    what                                                   needs
========  =====================================================  ==============
.svg      :func:`~layoutalg.draw.svg.figure_to_svg`              --
.svgz     the same, gzip-compressed (large figures shrink ~10x)  --
.png      SVG rasterised by cairosvg                             cairosvg
.tex      :func:`~layoutalg.draw.tikz.figure_to_tikz`            --
.typ      :func:`~layoutalg.draw.typst_doc.figure_to_typst`      --
.pdf      the Typst source compiled by the ``typst`` package     typst
.txt      :func:`~layoutalg.draw.ascii_table.figure_to_ascii`    --
========  =====================================================  ==============

>>> import tempfile, os
>>> from layoutalg.draw.model import Grid
>>> d = tempfile.mkdtemp()
>>> p = save(Grid.from_values([[0, 1]]).figure(), os.path.join(d, "x.txt"))
>>> p.read_text().splitlines()[1]
'    +---+---+'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .model import Figure, Grid

__all__ = ["save", "FORMATS"]

FORMATS = ("svg", "svgz", "png", "tex", "typ", "pdf", "txt")


def save(fig: Figure | Grid, path: Any, *, format: str | None = None, **options: Any) -> Path:
    """Write ``fig`` to ``path``; returns the path. ``options`` go to the back-end.

    The format comes from ``format`` or the extension (see the module table).
    """
    if isinstance(fig, Grid):
        fig = fig.figure()
    if not isinstance(fig, Figure):
        raise TypeError(f"save: expected a Figure or Grid, got {type(fig).__name__}")
    target = Path(path)
    fmt = (format or target.suffix.lstrip(".")).lower()
    if fmt == "latex":
        fmt = "tex"
    if fmt not in FORMATS:
        raise ValueError(f"save: unknown format {fmt!r} for {str(target)!r}; use one of {FORMATS}")
    if target.parent and not target.parent.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "svg":
        target.write_text(fig.to_svg(**options), encoding="utf-8")
    elif fmt == "svgz":
        import gzip

        target.write_bytes(gzip.compress(fig.to_svg(**options).encode("utf-8"), mtime=0))
    elif fmt == "png":
        fig.to_png(target, **options)
    elif fmt == "tex":
        target.write_text(fig.to_tikz(**options), encoding="utf-8")
    elif fmt == "typ":
        target.write_text(fig.to_typst(**options), encoding="utf-8")
    elif fmt == "pdf":
        from .typst_doc import compile_typst

        compile_typst(fig.to_typst(**options), target, format="pdf")
    else:
        target.write_text(fig.to_ascii(**options), encoding="utf-8")
    return target
