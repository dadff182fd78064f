"""Pictures of MMA atoms, TiledMMAs, TiledCopies, copy atoms and thread partitions.

These adapters turn the algebra's objects into :class:`~layoutalg.draw.model.Figure`
objects through the thread-value panel interface of
:mod:`~layoutalg.draw.layout_pictures`, the way CuTe's ``print_latex`` draws them:

* :func:`tiled_mma_figure` -- C (``M x N``) in the middle, A (``M x K``) on its
  left, B on top drawn ``K x N`` (k down, n across), from
  ``mma.get_layoutC_TV()``, ``get_layoutA_TV()`` and ``get_layoutB_TV()`` over
  the tile ``mma.tile_size_mnk``;
* :func:`mma_atom_figure` -- one atom, i.e. ``make_tiled_mma(atom)``;
* :func:`tiled_copy_figure` -- source and destination side by side, from
  ``copy.get_layoutS_TV()`` / ``get_layoutD_TV()`` over ``copy.tiler_mn``;
* :func:`copy_atom_figure` -- one copy instruction (``ldmatrix``, ``cp.async``...)
  for elements of a given type, its elements drawn row by row;
* :func:`partition_figure` -- one thread's partition of a tensor, highlighted
  in the whole tensor (e.g. ``mma.get_slice(t).partition_A(make_identity_tensor((M, K)))``).

Each cell reads ``T#`` over ``V#`` and is coloured by thread with CuTe's eight
pastels (``t % 8``). Labels are 0-based as in CuTe; ``one_based=True`` gives
MoYe.jl's numbering (cell ``data`` stays 0-based). As in CuTe, when several
``(thread, value)`` pairs hold one element (A and B of an MMA are shared by
the atoms along N and M), the first in thread-major order is shown; the
figure's notes say so.

>>> from layoutalg import make_tiled_mma
>>> fig = tiled_mma_figure(make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN"))
>>> fig.grid("C")[0, 1].lines, fig.grid("C")[8, 0].lines     # thread 0 holds C(0,1) and C(8,0)
(('T0', 'V1'), ('T0', 'V2'))
>>> [fig.grid(n).shape for n in "CAB"]
[(16, 8), (16, 16), (16, 8)]

Importing :mod:`layoutalg.draw` registers these builders with
:func:`~layoutalg.draw.notebook.register_figure`, so a ``TiledMMA`` or
``TiledCopy`` shows itself as a picture in Jupyter.
"""

from __future__ import annotations

import operator
from typing import Any, Iterable, Mapping

from .colors import HIGHLIGHT, thread_color
from .layout_pictures import TVPanel, panel_from_tv, tv_figure
from .model import Cell, Figure, Grid, Legend

__all__ = [
    "tiled_mma_figure",
    "mma_atom_figure",
    "tiled_copy_figure",
    "copy_atom_figure",
    "copy_atom_as_tiled_copy",
    "partition_figure",
    "tv_panel",
]


# ---------------------------------------------------------------------------
# fast TV -> owner tables for integer-strided layouts
# ---------------------------------------------------------------------------
def _int_flat(layout: Any) -> tuple[list[int], list[int]] | None:
    """Flat (shapes, strides) of a :class:`~layoutalg.layout.Layout` with integer strides, else None."""
    from ..inttuple import flat_tuple, is_int
    from ..layout import Layout

    if type(layout) is not Layout:
        return None
    shapes, strides = flat_tuple(layout.shape), flat_tuple(layout.stride)
    if not all(is_int(s) for s in shapes) or not all(is_int(d) and not isinstance(d, bool) for d in strides):
        return None
    return [int(s) for s in shapes], [int(d) for d in strides]


def _layout_values(shapes: list[int], strides: list[int]):
    """``L(i)`` for every 1-D index ``i`` (colexicographic), as a numpy array."""
    import numpy as np

    n = 1
    for s in shapes:
        n *= s
    idx = np.arange(n, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    div = 1
    for s, d in zip(shapes, strides):
        if d and s > 1:
            out += ((idx // div) % s) * d
        div *= s
    return out


def tv_panel(
    name: str,
    rows: int,
    cols: int,
    tv: Any,
    *,
    transpose: bool = False,
    title: str | None = None,
) -> tuple[TVPanel, int]:
    """A panel from a TV layout ``(thread, value) -> flat index`` and the most
    ``(thread, value)`` pairs that reach one cell (1 when no element is shared;
    always 1 for TV mappings that are not integer-strided layouts).

    Same rules as :func:`~layoutalg.draw.layout_pictures.panel_from_tv` (first
    pair in thread-major order owns a cell; ``transpose=True`` reads the index as
    ``col + row * cols``), computed with numpy for integer-strided layouts.

    >>> from layoutalg import Layout
    >>> p, mult = tv_panel("X", 2, 2, Layout((2, 2), (1, 2)))
    >>> p.owners(), mult
    ([[(0, 0), (0, 1)], [(1, 0), (1, 1)]], 1)
    """
    op = "tv_panel"
    from ..layout import rank, size

    flat = _int_flat(tv)
    if flat is None or rank(tv) != 2:
        p = panel_from_tv(name, rows, cols, tv, transpose=transpose, title=title)
        return p, 1
    import numpy as np

    nt, nv = size(tv[0]), size(tv[1])
    vals = _layout_values(*flat)                      # j = t + v * nt -> flat index
    ncell = rows * cols
    bad = np.nonzero((vals < 0) | (vals >= ncell))[0]
    if bad.size:
        j = int(bad[0])
        raise ValueError(
            f"{op}: panel {name!r}: tv({j % nt}, {j // nt}) = {int(vals[j])} is outside the {rows}x{cols} tile "
            f"(TV layout {tv})"
        )
    if transpose:                                     # index col + row*cols
        r, c = vals // cols, vals % cols
    else:
        r, c = vals % rows, vals // rows
    cell = r * cols + c
    j = np.arange(nt * nv, dtype=np.int64)
    key = (j % nt) * nv + (j // nt)                   # thread-major order
    big = np.iinfo(np.int64).max
    best = np.full(ncell, big, dtype=np.int64)
    np.minimum.at(best, cell, key)
    mult = int(np.bincount(cell, minlength=ncell).max()) if ncell else 0
    flat_owner: list[tuple[int, int] | None] = [
        None if k == big else (k // nv, k % nv) for k in best.tolist()
    ]
    table = [flat_owner[r0 * cols:(r0 + 1) * cols] for r0 in range(rows)]
    return TVPanel(name, rows, cols, table, title), mult


def _shared_note(name: str, mult: int) -> list[str]:
    if mult <= 1:
        return []
    return [f"{name}: each element is held by up to {mult} (thread, value) pairs; the first (lowest thread) is shown"]


def _tile_dims(op: str, tile: Any) -> tuple[int, int]:
    from ..layout import Layout, size

    def one(x: Any) -> int:
        if isinstance(x, Layout):
            return int(size(x))
        if isinstance(x, tuple):
            p = 1
            for y in x:
                p *= one(y)
            return p
        if isinstance(x, bool):
            raise TypeError(f"{op}: tile entries must be ints or layouts, got {x!r}")
        try:
            return operator.index(x)
        except TypeError:
            raise TypeError(f"{op}: tile entries must be ints or layouts, got {x!r}") from None

    if isinstance(tile, tuple):
        if len(tile) == 0:
            raise ValueError(f"{op}: empty tile {tile!r}")
        if len(tile) == 1:
            return one(tile[0]), 1
        rows = one(tile[0])
        cols = 1
        for x in tile[1:]:
            cols *= one(x)
        return rows, cols
    return one(tile), 1


def _fmt(x: Any) -> str:
    if isinstance(x, tuple):
        return "(" + ",".join(_fmt(v) for v in x) + ")"
    if x is None:
        return "_"
    return str(x)


# ---------------------------------------------------------------------------
# MMAs
# ---------------------------------------------------------------------------
def _is_tiled_mma(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("get_layoutC_TV", "get_layoutA_TV", "get_layoutB_TV", "tile_size_mnk"))


def _mma_title(mma: Any) -> str:
    from ..layout import size

    atom = getattr(mma, "atom", None)
    name = getattr(atom, "name", type(mma).__name__)
    M, N, K = mma.tile_size_mnk
    parts = [name]
    lay = getattr(mma, "atom_layout", None)
    if lay is not None:
        try:
            shape = lay.shape if isinstance(lay.shape, tuple) else (lay.shape,)
            if size(lay) > 1:
                parts.append("atoms " + "x".join(str(size(lay[i])) for i in range(len(shape))))
        except Exception:
            pass
    parts.append(f"tile {M}x{N}x{K}")
    parts.append(f"{getattr(mma, 'size', '?')} threads")
    return ", ".join(parts)


def _k_threads(mma: Any) -> int:
    """The number of thread groups along K (mode 3 of ``thr_layout_vmnk``), 1 when unknown."""
    from ..layout import rank, size

    lay = getattr(mma, "thr_layout_vmnk", None)
    try:
        return int(size(lay[3])) if lay is not None and rank(lay) == 4 else 1
    except Exception:
        return 1


def _mma_panel(mma: Any, which: str, rows: int, cols: int, tv: Any, *, title: str) -> tuple[TVPanel, int]:
    """The panel of operand ``which`` from its TV layout, or -- when the layout's thread
    mode does not reach every thread of the MMA -- from each thread's partition."""
    from ..layout import size

    nthr = getattr(mma, "size", None)
    try:
        short = nthr is not None and size(tv[0]) < nthr and hasattr(mma, "get_slice")
    except Exception:  # not a layoutalg Layout
        short = False
    if not short:
        try:
            return tv_panel(which, rows, cols, tv, transpose=(which == "B"), title=title)
        except ValueError:
            # Threads split along K (an atom layout (2,2,2)): CuTe's layoutC_TV sends the
            # second K group of threads past the M x N tile, since C has no K mode. Those
            # threads hold partial sums of the same C elements; draw each thread's partition.
            if not (which == "C" and nthr is not None and hasattr(mma, "get_slice")):
                raise
    # CuTe's get_layout*_TV composes with right_inverse(thr_layout_vmnk), which stops at
    # the first gap in the thread ids (an SM70 quad pair alone, (4,2):(1,16), gives 4 of its
    # 8 threads). The threads are then the ids thr_layout_vmnk reaches (lanes 0-3 and 16-19),
    # each drawn from its ThrMMA partition of an identity tensor, as CuTe's get_slice(id) has it.
    from ..tensor import make_identity_tensor
    from ..tiled_mma import ThrMMA

    shape = (cols, rows) if which == "B" else (rows, cols)            # B is (N,K), drawn K x N
    ident = make_identity_tensor(shape)
    thr_ids = sorted({int(mma.thr_layout_vmnk(i)) for i in range(nthr)})
    table: list[list[tuple[int, int] | None]] = [[None] * cols for _ in range(rows)]
    count: dict[tuple[int, int], int] = {}
    for t in thr_ids:
        thr = ThrMMA(mma, t)
        part = {"A": thr.partition_A, "B": thr.partition_B, "C": thr.partition_C}[which](ident)
        for v in range(size(part.layout)):
            a, b = part[v]
            r, c = (b, a) if which == "B" else (a, b)
            count[(r, c)] = count.get((r, c), 0) + 1
            if table[r][c] is None:
                table[r][c] = (t, v)
    return TVPanel(which, rows, cols, table, title), max(count.values(), default=0)


def tiled_mma_figure(
    mma: Any,
    *,
    one_based: bool = False,
    title: str | None = None,
    legend: bool = False,
    highlight_threads: Iterable[int] = (),
    notes: bool = True,
) -> Figure:
    """CuTe's picture of a TiledMMA: C in the middle, A on the left, B on top (``K x N``).

    ``mma`` is a :class:`~layoutalg.tiled_mma.TiledMMA` (anything with
    ``get_layoutC_TV/A_TV/B_TV`` and ``tile_size_mnk``). Its TV layouts map
    ``(thread, value)`` to column-major indices ``m + n*M`` (C), ``m + k*M``
    (A) and ``n + k*N`` (B) of the tile ``(M, N, K) = mma.tile_size_mnk``.

    ``title`` defaults to the atom, the atom arrangement, the tile and the
    thread count (``""`` for none); ``highlight_threads`` outlines the cells of
    those threads; ``notes=False`` drops the caption about shared elements.
    The figure's comments carry the three TV layouts, as CuTe's print_latex.
    Where a TV layout's thread mode does not reach all ``mma.size`` threads (an
    SM70 quad-pair atom alone: ``right_inverse((4,2):(1,16))`` is ``4:1``), that
    operand is drawn from the partitions of the thread ids ``thr_layout_vmnk``
    reaches (lanes 0-3 and 16-19), each through ``ThrMMA(mma, id)`` as CuTe's
    ``get_slice(threadIdx)``.
    """
    op = "tiled_mma_figure"
    if not _is_tiled_mma(mma):
        raise TypeError(f"{op}: expected a TiledMMA (with get_layoutC_TV/A_TV/B_TV and tile_size_mnk), got {type(mma).__name__}")
    M, N, K = (int(x) for x in mma.tile_size_mnk)
    LC, LA, LB = mma.get_layoutC_TV(), mma.get_layoutA_TV(), mma.get_layoutB_TV()
    C, mc = _mma_panel(mma, "C", M, N, LC, title=f"C  {M}x{N}")
    A, ma = _mma_panel(mma, "A", M, K, LA, title=f"A  {M}x{K}")
    B, mb = _mma_panel(mma, "B", K, N, LB, title=f"B  {K}x{N}")
    fig = tv_figure(
        [C, A, B],
        arrangement="mma",
        one_based=one_based,
        title=_mma_title(mma) if title is None else (title or None),
        legend=legend,
        highlight_threads=highlight_threads,
        comments=[f"TiledMMA: {mma!r}", f"LayoutC_TV: {LC}", f"LayoutA_TV: {LA}", f"LayoutB_TV: {LB}"],
    )
    if notes:
        fig.notes.extend(_shared_note("C", mc) + _shared_note("A", ma) + _shared_note("B", mb))
        ksplit = _k_threads(mma)
        if ksplit > 1:
            fig.notes.append(f"threads split along K in {ksplit} groups: each group holds partial sums "
                             f"of the same C elements (reduce them before the epilogue)")
    return fig


def mma_atom_figure(atom_or_name: Any, **options: Any) -> Figure:
    """The picture of one MMA atom: :func:`tiled_mma_figure` of ``make_tiled_mma(atom)``.

    ``atom_or_name`` is an :class:`~layoutalg.atom.MMAAtom`, an ``mma_atoms``
    entry or its name (``"SM80_16x8x16_F32F16F16F32_TN"``). Options as
    :func:`tiled_mma_figure`.
    """
    from ..tiled_mma import make_tiled_mma

    if isinstance(atom_or_name, bool) or atom_or_name is None:
        raise TypeError(f"mma_atom_figure: expected an MMA atom or its name, got {atom_or_name!r}")
    mma = make_tiled_mma(atom_or_name)
    if "title" not in options:
        M, N, K = mma.tile_size_mnk
        options["title"] = f"{mma.atom.name}  ({M}x{N}x{K}, {mma.size} threads)"
    return tiled_mma_figure(mma, **options)


# ---------------------------------------------------------------------------
# copies
# ---------------------------------------------------------------------------
def _is_tiled_copy(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("get_layoutS_TV", "get_layoutD_TV", "tiler_mn"))


def tiled_copy_figure(
    copy: Any,
    *,
    one_based: bool = False,
    title: str | None = None,
    legend: bool = False,
    highlight_threads: Iterable[int] = (),
    notes: bool = True,
    names: tuple[str, str] = ("S", "D"),
) -> Figure:
    """CuTe's picture of a TiledCopy: source (left) and destination (right) over the tile.

    ``copy`` is a :class:`~layoutalg.tiled_copy.TiledCopy` (anything with
    ``get_layoutS_TV``, ``get_layoutD_TV`` and ``tiler_mn``); the TV layouts map
    ``(thread, value)`` to the column-major index ``m + n*M`` of the
    ``M x N`` tile ``tiler_mn`` (a 1-D tiler is drawn ``M x 1``). The
    destination sits ``N + 3`` columns right of the source with its row numbers
    on the right. Options as :func:`tiled_mma_figure`; ``names`` are the panel
    names (titles ``S (source)``/``D (destination)`` for the default names, else the names).
    """
    op = "tiled_copy_figure"
    if not _is_tiled_copy(copy):
        raise TypeError(f"{op}: expected a TiledCopy (with get_layoutS_TV, get_layoutD_TV and tiler_mn), got {type(copy).__name__}")
    M, N = _tile_dims(op, copy.tiler_mn)
    LS, LD = copy.get_layoutS_TV(), copy.get_layoutD_TV()
    s_name, d_name = names
    s_label, d_label = ("S (source)", "D (destination)") if tuple(names) == ("S", "D") else (s_name, d_name)
    S, ms = tv_panel(s_name, M, N, LS, title=f"{s_label}  {M}x{N}")
    D, md = tv_panel(d_name, M, N, LD, title=f"{d_label}  {M}x{N}")
    if title is None:
        atom = getattr(copy, "atom", None)
        name = getattr(atom, "name", type(copy).__name__)
        dtype = getattr(atom, "dtype", None)
        title = f"{name}" + (f" of {dtype}" if dtype else "") + f", tile {M}x{N}, {getattr(copy, 'size', '?')} threads"
    fig = tv_figure(
        [S, D],
        arrangement="row",
        gap=_copy_gap(N, S.title, D.title),
        one_based=one_based,
        title=title or None,
        legend=legend,
        highlight_threads=highlight_threads,
        comments=[f"TiledCopy: {copy!r}", f"Layout S TV: {LS}", f"Layout D TV: {LD}"],
    )
    if notes:
        fig.notes.extend(_shared_note(s_name, ms) + _shared_note(d_name, md))
    return fig


def _copy_gap(cols: int, left_title: str | None, right_title: str | None) -> int:
    """CuTe's 3 empty columns between source and destination, more when the panel
    titles are wider than narrow panels and would run into each other."""
    import math

    from . import model

    per_char = model._TITLE_CHAR_W * model._TITLE_FONT        # title width per character, in cells
    over = sum(max(0.0, (len(t or "") * per_char - cols) / 2) for t in (left_title, right_title))
    return max(3, math.ceil(over + 0.8))


def _row_width(atom: Any) -> int:
    from ..tiled_copy import vector_width

    return max(1, vector_width(atom.src_layout), vector_width(atom.dst_layout))


def copy_atom_as_tiled_copy(atom: Any, width: int | None = None) -> Any:
    """One copy atom as a TiledCopy whose tile is the atom's elements in rows of ``width``.

    Element ``e`` of the atom (its ``ref_layout``'s codomain) is drawn at row
    ``e // width``, column ``e % width``: the TiledCopy's TV layout is
    ``(e -> e // width + (e % width) * rows) o ref_layout`` over the tile
    ``(rows, width)``. ``width`` defaults to the longest contiguous run one
    thread moves (8 f16 = one 16-byte row for ``ldmatrix``; the whole vector
    for ``cp.async``), so an ldmatrix source shows one shared-memory row per thread.
    """
    from ..algebra import composition
    from ..layout import Layout, cosize
    from ..tiled_copy import TiledCopy

    op = "copy_atom_figure"
    w = _row_width(atom) if width is None else width
    if isinstance(w, bool) or not isinstance(w, int) or w < 1:
        raise ValueError(f"{op}: width must be a positive int, got {width!r}")
    n = int(cosize(atom.ref_layout))
    if n % w:
        raise ValueError(f"{op}: {atom.name} of {atom.dtype} covers {n} elements, not a multiple of width {w}")
    rows = n // w
    to_tile = Layout((w, rows), (rows, 1))                  # e = c + w*r -> r + c*rows
    return TiledCopy(atom, composition(to_tile, atom.ref_layout), (rows, w))


def copy_atom_figure(name: Any, dtype: str | None = None, *, width: int | None = None, **options: Any) -> Figure:
    """The picture of one copy instruction moving ``dtype`` elements: source and destination.

    ``name`` is a copy atom's name (``"SM75_U32x4_LDSM_N"``), an ``mma_atoms``
    entry or a :class:`~layoutalg.atom.CopyAtom` (then ``dtype`` may be omitted).
    The atom's elements are drawn row by row, ``width`` per row (see
    :func:`copy_atom_as_tiled_copy`): for ``SM75_U32x4_LDSM_N`` of f16 the source
    shows thread ``t`` reading row ``t`` (8 elements, 16 bytes) of four stacked
    8x8 matrices and the destination the registers each thread receives
    (thread ``t`` gets elements ``2*(t%4), 2*(t%4)+1`` of row ``t//4`` of each matrix).
    Options as :func:`tiled_copy_figure`.
    """
    from ..atom import CopyAtom

    op = "copy_atom_figure"
    if isinstance(name, CopyAtom):
        atom = name
        if dtype is not None and dtype != atom.dtype:
            raise ValueError(f"{op}: atom {atom!r} already has dtype {atom.dtype!r}, got dtype={dtype!r}")
    else:
        if dtype is None:
            raise ValueError(f"{op}: give the element type, e.g. copy_atom_figure({name!r}, 'f16')")
        atom = CopyAtom(name, dtype)
    cp = copy_atom_as_tiled_copy(atom, width)
    M, N = cp.tiler_mn
    if "title" not in options:
        nt = atom.num_threads
        options["title"] = f"{atom.name} ({atom.dtype}): {nt} thread{'s' if nt != 1 else ''} x {atom.num_values} values"
    return tiled_copy_figure(cp, **options)


# ---------------------------------------------------------------------------
# one thread's partition of a tensor
# ---------------------------------------------------------------------------
def _shape_and_layout(op: str, x: Any) -> tuple[Any, Any]:
    """(shape, layout or None) of the whole tensor argument."""
    from ..layout import Layout
    from ..swizzle import ComposedLayout
    from ..tensor import CoordEngine, Tensor

    if isinstance(x, Tensor):
        if isinstance(x.engine, CoordEngine):
            return x.layout.shape, None
        return x.layout.shape, x.layout
    if isinstance(x, (Layout, ComposedLayout)):
        return x.shape, x
    if isinstance(x, bool):
        raise TypeError(f"{op}: expected a layout, tensor or shape, got {x!r}")
    if isinstance(x, (int, tuple)):
        from ..inttuple import check_shape

        check_shape(op, x)
        return x, None
    raise TypeError(f"{op}: expected a layout, tensor or shape for the whole tensor, got {type(x).__name__}")


def _dims(shape: Any) -> tuple[int, int, list[Any]]:
    """Picture rows, cols and the mode shapes (rank-1: size x 1; rank > 2: modes 1.. in columns)."""
    from ..inttuple import product

    if isinstance(shape, tuple):
        if len(shape) == 0:
            raise ValueError("partition_figure: cannot draw a rank-0 tensor")
        modes = list(shape)
    else:
        modes = [shape]
    rows = product(modes[0])
    cols = 1
    for m in modes[1:]:
        cols *= product(m)
    return rows, cols, modes


def _cell_of_coord(op: str, crd: Any, modes: list[Any], rows: int) -> tuple[int, int]:
    from ..inttuple import crd2idx, product

    if not isinstance(crd, tuple):
        crd = (crd,)
    if len(modes) == 1 and len(crd) != 1:
        crd = (crd,)
    if len(crd) != len(modes):
        raise ValueError(f"{op}: coordinate {crd!r} does not match the tensor's {len(modes)} modes")
    idx = [crd2idx(c, m) if isinstance(m, tuple) else c for c, m in zip(crd, modes)]
    r = idx[0]
    col, mul = 0, 1
    for i, m in zip(idx[1:], modes[1:]):
        col += i * mul
        mul *= product(m)
    return r, col


def _part_elements(op: str, part: Any) -> list[Any]:
    from ..layout import Layout, size
    from ..tensor import Tensor

    if isinstance(part, Tensor):
        return [part[i] for i in range(size(part.layout))]
    if isinstance(part, Layout):
        return [part(i) for i in range(size(part))]
    raise TypeError(f"{op}: a partition must be a Tensor or a Layout, got {type(part).__name__}")


def _part_offsets(op: str, part: Any) -> list[int] | None:
    """Memory offsets of a partition over memory (engine offset + layout), None for coordinates."""
    from ..inttuple import is_int
    from ..layout import Layout, size
    from ..tensor import CoordEngine, Tensor

    if isinstance(part, Tensor):
        if isinstance(part.engine, CoordEngine):
            return None
        base = getattr(part.engine, "offset", 0)
        if not is_int(base):
            raise ValueError(f"{op}: the partition's engine offset {base!r} is not an integer")
        return [int(base) + int(part.layout(i)) for i in range(size(part.layout))]
    if isinstance(part, Layout):
        vals = [part(i) for i in range(size(part))]
        if all(is_int(v) for v in vals):
            return [int(v) for v in vals]
        return None
    raise TypeError(f"{op}: a partition must be a Tensor or a Layout, got {type(part).__name__}")


def partition_figure(
    tensor: Any,
    partition: Any,
    *,
    thread: int | None = None,
    one_based: bool = False,
    title: str | None = None,
    show_index: bool = True,
) -> Figure:
    """The whole tensor with one thread's partition highlighted.

    ``tensor`` is the whole tensor's shape (``(M, K)``), its layout, or the
    tensor itself; ``partition`` is what a ``partition_*`` call returned for
    one thread -- best over an identity tensor, whose elements are coordinates::

        coords = make_identity_tensor((M, K))
        part = mma.get_slice(5).partition_A(coords)      # (MMA, MMA_M, MMA_K) of coordinates
        partition_figure((M, K), part, thread=5)

    A partition over memory (a layout, or a tensor over an array/pointer) is
    located through ``tensor``'s layout (its offsets must be distinct); with only a
    shape its offsets are read as column-major indices. ``partition`` may also
    be a mapping ``{thread: partition}`` to show several threads at once.

    Each element of the partition is outlined and filled with the thread's
    colour, labelled ``T#`` over ``V#`` (``V#`` = its position in the
    partition, colexicographic); the other cells show the tensor's offset
    (``show_index``) when a layout is given, else nothing.
    """
    op = "partition_figure"
    shape, layout = _shape_and_layout(op, tensor)
    rows, cols, modes = _dims(shape)
    if isinstance(partition, Mapping):
        parts = list(partition.items())
        if not parts:
            raise ValueError(f"{op}: the mapping of partitions is empty")
    else:
        parts = [(thread, partition)]
    base = 1 if one_based else 0
    g = Grid(rows, cols, name="tensor", index_base=base)
    offsets_grid: list[list[int]] | None = None
    inverse: dict[int, tuple[int, int]] | None = None
    if layout is not None:
        from .layout_pictures import layout_values

        offsets_grid = layout_values(layout)
        inverse = {}
        for r in range(rows):
            for c in range(cols):
                inverse.setdefault(offsets_grid[r][c], (r, c))
        if show_index:
            for r in range(rows):
                for c in range(cols):
                    g.cells[r * cols + c] = Cell((str(offsets_grid[r][c] + base),), None, None,
                                                 {"index": offsets_grid[r][c]})
    legend_entries = []
    counts = []
    for t, part in parts:
        if t is not None:
            if isinstance(t, bool):
                raise TypeError(f"{op}: thread must be an int, got {t!r}")
            t = operator.index(t)
        offs = _part_offsets(op, part)
        if offs is None:
            cells = [_cell_of_coord(op, crd, modes, rows) for crd in _part_elements(op, part)]
        else:
            cells = []
            for o in offs:
                if inverse is not None:
                    if o not in inverse:
                        raise ValueError(f"{op}: offset {o} of the partition is not in the tensor's layout {layout}")
                    cells.append(inverse[o])
                else:
                    if not 0 <= o < rows * cols:
                        raise ValueError(f"{op}: offset {o} of the partition is outside the {rows}x{cols} tensor")
                    cells.append((o % rows, o // rows))
        fill = thread_color(t if t is not None else 0)
        for v, (r, c) in enumerate(cells):
            if not (0 <= r < rows and 0 <= c < cols):
                raise ValueError(f"{op}: element {v} of the partition, at ({r}, {c}), is outside the {rows}x{cols} tensor")
            lines = (f"T{t + base}", f"V{v + base}") if t is not None else (f"V{v + base}",)
            data = {"value": v}
            if t is not None:
                data["thread"] = t
            if offsets_grid is not None:
                data["index"] = offsets_grid[r][c]
            g.cells[r * cols + c] = Cell(lines, fill, HIGHLIGHT, data)
        counts.append(len(cells))
        if t is not None:
            legend_entries.append((fill, f"T{t + base}: {len(cells)} elements"))
    if title is None:
        who = ", ".join(f"thread {t + base}" for t, _ in parts if t is not None) or "the partition"
        title = f"{who} of a {rows}x{cols} tensor" + (f" {layout}" if layout is not None else "")
    comments = [f"Tensor: {shape if layout is None else layout}"] + [
        f"Partition{'' if t is None else f' of thread {t}'}: {getattr(p, 'layout', p)}" for t, p in parts
    ]
    leg = Legend(legend_entries) if len(legend_entries) > 1 else None
    fig = Figure(title=title or None, legend=leg, comments=comments).add(g)
    return fig


# ---------------------------------------------------------------------------
# registration for notebooks
# ---------------------------------------------------------------------------
def _register() -> None:
    from ..atom import MMAAtom
    from ..tiled_copy import TiledCopy
    from ..tiled_mma import TiledMMA
    from .notebook import register_figure

    from ..tensor import Tensor
    from .layout_pictures import tensor_figure

    register_figure(TiledMMA, tiled_mma_figure)
    register_figure(TiledCopy, tiled_copy_figure)
    register_figure(MMAAtom, mma_atom_figure)
    register_figure(Tensor, tensor_figure)


_register()
