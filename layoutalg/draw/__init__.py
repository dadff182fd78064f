"""Thread-value and layout diagrams: a neutral picture model and its back-ends.

Two layers:

* the picture model (:mod:`.model`): :class:`Grid` (cells with up to two text
  lines, a fill, an outline), :class:`Figure` (grids on a canvas with headers,
  titles, a :class:`Legend`), rendered to SVG (:mod:`.svg`), LaTeX/TikZ in
  CuTe's print_latex form (:mod:`.tikz`), Typst in MoYe.jl's print_typst form
  (:mod:`.typst_doc`), CuTe's print_layout text (:mod:`.ascii_table`), PNG via
  cairosvg (:mod:`.raster`); plus Graphviz graphs (:mod:`.graphs`) and
  notebook helpers (:mod:`.notebook`);
* adapters from layouts and thread-value mappings (:mod:`.layout_pictures`):
  :func:`layout_figure`, :func:`tv_figure`, :func:`mma_figure`, :func:`copy_figure`;
  and from the algebra's objects (:mod:`.tiled_pictures`): :func:`tiled_mma_figure`,
  :func:`mma_atom_figure`, :func:`tiled_copy_figure`, :func:`copy_atom_figure`,
  :func:`partition_figure`; :func:`expr_graph` (:mod:`.expr_graph`) draws the
  expression tree of an algebra expression as a Graphviz graph; :func:`bank_figure`
  (:mod:`.bank_pictures`) a copy's shared-memory bank use, phase by phase.

>>> from layoutalg.draw import Grid, Figure, thread_color
>>> g = Grid(1, 2, name="X")
>>> _ = g.set(0, 0, "T0", "V0", fill=thread_color(0))
>>> Figure(title="x").add(g).to_svg().count('<rect class="cell')
2

Optional packages (imported only when used): cairosvg (PNG), typst (Typst to
SVG/PDF/PNG), graphviz (rendering ``.dot``; needs Graphviz's ``dot`` program).
"""

from .ascii_table import ascii_grid_table, ascii_layout_table, ascii_tv_table, figure_to_ascii, num_digits
from .colors import (
    BANK_COLORS,
    GREY_COLORS,
    HIGHLIGHT,
    THREAD_COLORS,
    Color,
    bank_color,
    bank_of,
    grey_color,
    thread_color,
)
from .deps import MissingDependencyError
from .graphs import DotGraph, DotResult, dot_available, render_dot
from .layout_pictures import (
    TVPanel,
    copy_figure,
    layout_ascii,
    layout_figure,
    layout_grid,
    layout_latex,
    layout_size,
    layout_values,
    mma_figure,
    panel_from_mn,
    panel_from_tv,
    tv_figure,
    tv_grid,
    tensor_figure,
)

#: Same as :func:`layout_ascii` (CuTe's print_layout text), under the name the CLI uses.
ascii_layout = layout_ascii
from .model import Cell, Figure, Grid, Legend
from .notebook import SVGView, figure_of, register_figure, repr_svg, svg_of
from .output import save
from .raster import figure_to_png, svg_to_png
from .svg import figure_to_svg
from .tikz import figure_to_tikz
from .typst_doc import compile_typst, figure_to_typst

# TiledMMA / TiledCopy / copy-atom / partition pictures; importing registers
# TiledMMA, TiledCopy and MMAAtom with register_figure (their _repr_svg_ then works).
from .tiled_pictures import (
    copy_atom_figure,
    mma_atom_figure,
    partition_figure,
    tiled_copy_figure,
    tiled_mma_figure,
)
from .expr_graph import expr_graph, parse_expr
from .bank_pictures import bank_figure, bank_grid

__all__ = [
    # model
    "Cell",
    "Grid",
    "Figure",
    "Legend",
    # colours
    "Color",
    "THREAD_COLORS",
    "GREY_COLORS",
    "BANK_COLORS",
    "HIGHLIGHT",
    "thread_color",
    "grey_color",
    "bank_of",
    "bank_color",
    # back-ends
    "figure_to_svg",
    "figure_to_tikz",
    "figure_to_typst",
    "compile_typst",
    "figure_to_ascii",
    "ascii_layout_table",
    "ascii_tv_table",
    "ascii_grid_table",
    "num_digits",
    "figure_to_png",
    "svg_to_png",
    "save",
    "DotGraph",
    "DotResult",
    "render_dot",
    "dot_available",
    "repr_svg",
    "svg_of",
    "figure_of",
    "register_figure",
    "SVGView",
    "MissingDependencyError",
    # adapters
    "layout_figure",
    "layout_grid",
    "layout_values",
    "layout_size",
    "layout_ascii",
    "ascii_layout",
    "layout_latex",
    "TVPanel",
    "panel_from_tv",
    "panel_from_mn",
    "tv_grid",
    "tv_figure",
    "mma_figure",
    "copy_figure",
    "tensor_figure",
    # TiledMMA / TiledCopy pictures, expression graphs
    "print_layout",
    "print_tensor",
    "print_latex",
    "tiled_mma_figure",
    "mma_atom_figure",
    "tiled_copy_figure",
    "copy_atom_figure",
    "partition_figure",
    "expr_graph",
    "parse_expr",
    "bank_figure",
    "bank_grid",
]
from .cute_print import print_latex, print_layout, print_tensor
