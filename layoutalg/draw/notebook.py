"""Jupyter helpers: SVG text for ``_repr_svg_``.

A class shows itself as a picture in a notebook with one line::

    class Layout:
        def _repr_svg_(self):
            from layoutalg.draw import svg_of
            return svg_of(self)        # None (text repr) when it cannot be drawn

:func:`repr_svg` (raises on failure) and :func:`svg_of` (returns None) accept a
:class:`~layoutalg.draw.model.Figure`, a :class:`~layoutalg.draw.model.Grid`,
any kind registered with :func:`register_figure` (the hook for TiledMMA and
TiledCopy pictures), or any layout-like object (``.shape`` and callable with a
coordinate tuple), drawn with :func:`~layoutalg.draw.layout_pictures.layout_figure`.
Pictures wider than ``max_width`` pixels are shown scaled down (the SVG keeps
its full geometry).

>>> from layoutalg.draw.model import Grid
>>> svg = repr_svg(Grid.from_values([[0, 1]]))
>>> svg.lstrip().startswith("<svg")
True
"""

from __future__ import annotations

from typing import Any, Callable

from .model import Figure, Grid

__all__ = ["repr_svg", "svg_of", "SVGView", "register_figure", "figure_of", "MAX_CELLS_FOR_REPR"]

#: Larger layouts are not drawn by :func:`repr_svg` (a notebook would stall).
MAX_CELLS_FOR_REPR = 65536


_BUILDERS: list[tuple[Any, Callable[..., Figure]]] = []


def register_figure(kind: Any, builder: Callable[..., Figure]) -> None:
    """Teach :func:`repr_svg`/:func:`svg_of`/:func:`figure_of` to draw a new kind of object.

    ``kind`` is a class (matched with ``isinstance``) or a predicate
    ``obj -> bool``; ``builder(obj, **options)`` returns a
    :class:`~layoutalg.draw.model.Figure`. Later registrations win. This is the
    hook for TiledMMA / TiledCopy pictures::

        register_figure(TiledMMA, tiled_mma_figure)

    >>> class Pair: pass
    >>> register_figure(Pair, lambda p, **kw: Grid.from_values([[1, 2]]).figure())
    >>> figure_of(Pair()).grids[0].shape
    (1, 2)
    """
    if not (isinstance(kind, type) or callable(kind)):
        raise TypeError(f"register_figure: kind must be a class or a predicate, got {kind!r}")
    if not callable(builder):
        raise TypeError(f"register_figure: builder must be callable, got {builder!r}")
    _BUILDERS.append((kind, builder))


def figure_of(obj: Any, **options: Any) -> Figure:
    """The :class:`~layoutalg.draw.model.Figure` for ``obj``: a Figure itself, a
    Grid's figure, a registered kind's builder, or a layout's :func:`layout_figure`."""
    if isinstance(obj, Figure):
        if options:
            raise TypeError(f"figure_of: unexpected options for a Figure: {sorted(options)}")
        return obj
    if isinstance(obj, Grid):
        return obj.figure(**options)
    for kind, builder in reversed(_BUILDERS):
        hit = isinstance(obj, kind) if isinstance(kind, type) else bool(kind(obj))
        if hit:
            fig = builder(obj, **options)
            if not isinstance(fig, Figure):
                raise TypeError(f"figure_of: the builder for {type(obj).__name__} returned {type(fig).__name__}, not a Figure")
            return fig
    if not (hasattr(obj, "shape") and callable(obj)):
        raise TypeError(
            f"figure_of: expected a Figure, Grid, layout (with .shape, callable) or a registered kind, "
            f"got {type(obj).__name__}"
        )
    from .layout_pictures import layout_figure, layout_size

    n = layout_size(obj)
    if n > MAX_CELLS_FOR_REPR:
        raise ValueError(
            f"figure_of: layout has {n} cells, more than {MAX_CELLS_FOR_REPR}; "
            "draw it with layout_figure(...) explicitly"
        )
    return layout_figure(obj, **options)


def _strip_prolog(svg: str) -> str:
    # notebooks embed the SVG inline: the XML declaration is not wanted there
    if svg.startswith("<?xml"):
        return svg[svg.index("?>") + 2 :].lstrip()
    return svg


def repr_svg(obj: Any, *, max_width: float | None = 960, **options: Any) -> str:
    """SVG text (without XML prolog) for anything :func:`figure_of` takes.

    ``cell_size``, ``data_attrs`` and ``background`` go to ``to_svg``; other
    ``options`` go to the figure builder (for layouts: ``color=``, ``one_based=``...).
    """
    svg_opts = {k: options.pop(k) for k in ("cell_size", "data_attrs", "background", "labels") if k in options}
    obj = figure_of(obj, **options)
    scene = obj.scene()
    cells = sum(len(gi.grid.cells) for gi in scene.grids)
    if cells > LEAN_CELLS:       # a notebook keeps the SVG in the page: no data-* attributes
        svg_opts.setdefault("data_attrs", False)
    if max_width is not None:
        # show wide pictures scaled down; the geometry stays the same
        from .svg import DEFAULT_CELL_SIZE

        cs = svg_opts.get("cell_size", DEFAULT_CELL_SIZE)
        x0, _, x1, _ = scene.bounds
        if (x1 - x0) * cs > max_width:
            svg_opts["display_width"] = max_width
            if max_width / (x1 - x0) < MIN_LABEL_PX:     # cells too small to read: colours only
                svg_opts.setdefault("labels", False)
    svg = obj.to_svg(**svg_opts)
    return _strip_prolog(svg)


#: Figures of more cells are shown in notebooks without the cells' data-* attributes.
LEAN_CELLS = 4096
#: Cells shown narrower than this (pixels) are drawn without their labels in notebooks.
MIN_LABEL_PX = 8


def svg_of(obj: Any, **options: Any) -> str | None:
    """What a ``_repr_svg_`` method should return: :func:`repr_svg`'s SVG, or
    None when the object cannot be drawn (too many cells, rank 0, values that
    are not integers...), so that a notebook falls back to the text repr
    instead of printing a traceback.

    >>> svg_of(object()) is None
    True
    """
    try:
        return repr_svg(obj, **options)
    except (ValueError, TypeError, LookupError, ArithmeticError):
        return None


class SVGView:
    """Wrap SVG text (or anything :func:`repr_svg` takes) so a notebook displays it.

    >>> SVGView("<svg xmlns='http://www.w3.org/2000/svg'/>")._repr_svg_()
    "<svg xmlns='http://www.w3.org/2000/svg'/>"
    """

    def __init__(self, content: Any, **options: Any) -> None:
        self._content = content
        self._options = options

    def _repr_svg_(self) -> str:
        if isinstance(self._content, str):
            return _strip_prolog(self._content)
        return repr_svg(self._content, **self._options)

    def __str__(self) -> str:
        return self._repr_svg_()
