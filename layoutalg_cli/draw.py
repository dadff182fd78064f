"""``layoutalg draw``: pictures of layouts, MMAs and copies; graphs of a GEMM plan and of expressions.

The first argument is a layout, or one of the words ``mma``, ``copy``, ``plan``, ``expr``::

    layoutalg draw "(8,8):(8,1)" -o l.svg
    layoutalg draw "Sw<3,3,3> o 0 o (8,64):(64,1)" --color bank --dtype f16 -o banks.png
    layoutalg draw mma SM80_16x8x16_F32F16F16F32_TN --atom-layout 2,2,1 --permutation 32,32,16 -o mma.svg
    layoutalg draw mma SM80_16x8x16_F32F16F16F32_TN --thread 5 --operand A --shape 32,32   # thread 5's A elements
    layoutalg draw copy SM75_U32x4_LDSM_N --mma SM80_16x8x16_F32F16F16F32_TN --atom-layout 2,2,1 --operand A -o copy.svg
    layoutalg draw copy SM80_CP_ASYNC_CACHEGLOBAL_128 --dtype f16 --threads "(16,8):(8,1)" --values "(1,8)" -o g2s.svg
    layoutalg draw copy SM75_U32x4_LDSM_N --dtype f16 -o ldsm.png                # the atom alone
    layoutalg draw copy SM75_U32x4_LDSM_N --mma SM80_16x8x16_F32F16F16F32_TN --operand A --banks --smem "(16,64):(64,1)" -o banks.svg
    layoutalg draw plan --dtype f16 -o plan.svg
    layoutalg draw expr "logical_divide(composition((4,3):(3,1), 6:2), 2:1)" -o expr.svg

``--format svg|png|tex|typ|dot|txt|pdf`` (default: the suffix of ``-o``).
Without ``-o`` pictures print as text (CuTe's print_layout tables) and graphs
as DOT; ``--format svg|tex|typ`` without ``-o`` prints that text instead.
Graphs (plan, expr) render through Graphviz's ``dot`` program; without it only the
``.dot`` file is written, the message says how to install Graphviz, and the exit
status is 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MODES = ("mma", "copy", "plan", "expr")
FIGURE_FORMATS = ("svg", "svgz", "png", "tex", "typ", "txt", "pdf")
GRAPH_FORMATS = ("svg", "png", "pdf", "dot")
FORMATS = ("svg", "png", "tex", "typ", "dot", "txt", "pdf")

# option -> the modes it applies to ("layout" is a layout text)
_APPLIES = {
    "color": ("layout",),
    "dtype": ("layout", "copy", "plan"),
    "atom_layout": ("mma", "copy"),
    "permutation": ("mma", "copy"),
    "mma": ("copy",),
    "operand": ("mma", "copy"),
    "threads": ("copy",),
    "values": ("copy",),
    "thread": ("mma",),
    "shape": ("mma",),
    "highlight": ("mma", "copy"),
    "a_major": ("plan",),
    "b_major": ("plan",),
    "path": ("plan",),
    "width": ("copy",),
    "banks": ("copy",),
    "smem": ("copy",),
    "side": ("copy",),
    "warp": ("copy",),
    "instructions": ("copy",),
    "one_based": ("layout", "mma", "copy"),
    "cell_size": ("layout", "mma", "copy"),
    "scale": ("layout", "mma", "copy"),
    "title": ("layout", "mma", "copy"),
    "no_data": ("layout", "mma", "copy"),
    "max_cells": ("layout", "mma", "copy"),
}

_EPILOG = __doc__.split("::", 1)[1].split("``--format", 1)[0]

#: Pictures of more cells are refused unless ``--max-cells`` says otherwise (the notebook's
#: limit, ``layoutalg.draw.notebook.MAX_CELLS_FOR_REPR``).
MAX_CELLS = 65536


class DrawError(ValueError):
    """A ``layoutalg draw`` command line that cannot be carried out."""


def add_parser(sub):
    """Add the ``draw`` sub-command to the argparse sub-parsers ``sub``."""
    d = sub.add_parser(
        "draw",
        help="render diagrams: a layout, an MMA, a copy, the GEMM plan, an expression tree",
        description="Draw a layout (first argument a layout text), or: mma ATOM, copy ATOM, plan, expr EXPRESSION.",
        epilog="examples:" + _EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d.add_argument("what", metavar="LAYOUT|mma|copy|plan|expr",
                   help='a layout in CuTe form ("(8,8):(8,1)") or one of the words mma, copy, plan, expr')
    d.add_argument("name", nargs="?", metavar="ATOM|EXPRESSION",
                   help="the MMA or copy atom's name (mma, copy) or the algebra expression (expr)")
    d.add_argument("-o", "--output", metavar="PATH", help="write here (format from the suffix); else print text")
    d.add_argument("--format", choices=FORMATS, help="output format (default: from the -o suffix)")
    d.add_argument("--one-based", action="store_true", help="number labels and headers from 1 (MoYe.jl)")
    d.add_argument("--color", choices=("index", "bank", "none"), help="layout cell colours (default index)")
    d.add_argument("--dtype", help="element type: bank width for --color bank (default f16), "
                                   "copy element type, GEMM plan type (default f16)")
    d.add_argument("--atom-layout", metavar="M,N,K", help="atoms of the tiled MMA along M, N, K (e.g. 2,2,1)")
    d.add_argument("--permutation", metavar="M,N,K", help="tile sizes of the tiled MMA (e.g. 32,32,16; _ for none)")
    d.add_argument("--mma", metavar="ATOM", help="copy: make_tiled_copy_A/B/C of this MMA (with --operand)")
    d.add_argument("--operand", choices=("A", "B", "C"), help="copy: the MMA operand; mma --thread: the tensor")
    d.add_argument("--threads", metavar="LAYOUT", help='copy: thread layout, e.g. "(16,8):(8,1)"')
    d.add_argument("--values", metavar="LAYOUT", help='copy: value layout, e.g. "(1,8)"')
    d.add_argument("--width", type=int, help="copy atom alone: elements per drawn row")
    d.add_argument("--banks", action="store_true",
                   help="copy: the bank use of its shared side over --smem, phase by phase (conflicts in red)")
    d.add_argument("--smem", metavar="LAYOUT", help='copy --banks: the shared layout, e.g. "Sw<3,3,3> o 0 o (16,64):(64,1)"')
    d.add_argument("--side", choices=("S", "D"), help="copy --banks: shared memory is the copy's source (S) or "
                                                      "destination (D) (default: from the atom)")
    d.add_argument("--warp", type=int, metavar="W", help="copy --banks: the warp drawn (default 0)")
    d.add_argument("--instructions", type=int, metavar="N", help="copy --banks: instructions drawn (default all, at most 8)")
    d.add_argument("--thread", type=int, metavar="T", help="mma: draw thread T's partition of the --operand tile")
    d.add_argument("--shape", metavar="R,C", help="mma --thread: the tensor partitioned (default the operand's tile)")
    d.add_argument("--highlight", metavar="T,T,...", help="outline the cells of these threads")
    d.add_argument("--a-major", choices=("K", "MN"), help="plan: A's major mode (default K)")
    d.add_argument("--b-major", choices=("K", "MN"), help="plan: B's major mode (default MN)")
    d.add_argument("--path", choices=("mma_sync", "wgmma"),
                   help="plan: the kernel family (default mma_sync; wgmma: the Hopper pipeline, "
                        "f16/bf16/tf32/e4m3/e5m2)")
    d.add_argument("--cell-size", type=int, metavar="PX", help="svg/png: pixels per cell (default 32)")
    d.add_argument("--scale", type=float, help="png: scale factor (default 1)")
    d.add_argument("--no-data", action="store_true",
                   help="svg: leave out the data-* attributes of the cells (smaller files)")
    d.add_argument("--title", help='picture title ("" for none)')
    d.add_argument("--max-cells", type=int, default=MAX_CELLS, metavar="N",
                   help=f"refuse pictures of more than N cells (default {MAX_CELLS}, as in notebooks): "
                        f"a 1024x1024 layout is a 188 MB SVG")
    d.set_defaults(fn=run)
    return d


# ---------------------------------------------------------------------------
# argument helpers
# ---------------------------------------------------------------------------
def _ints(op, text, allow_none=False):
    """``"2,2,1"``, ``"(2,2,1)"``, ``"2x2x1"`` -> (2, 2, 1); ``_`` -> None when allowed."""
    s = text.strip()
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
    parts = [p for p in re.split(r"[,x\s]+", s) if p]
    out = []
    for p in parts:
        if allow_none and p in ("_", "None"):
            out.append(None)
            continue
        try:
            v = int(p)
        except ValueError:
            raise DrawError(f"{op}: expected comma-separated ints{' or _' if allow_none else ''}, got {text!r}") from None
        if v <= 0:
            raise DrawError(f"{op}: entries must be positive, got {text!r}")
        out.append(v)
    if not 1 <= len(out) <= 3:
        raise DrawError(f"{op}: expected 1 to 3 entries (M,N,K), got {text!r}")
    return tuple(out)


def _atom_layout(text):
    if text is None:
        return (1, 1, 1)
    if ":" in text:
        from layoutalg.parse import parse_layout

        return parse_layout(text)
    return _ints("--atom-layout", text)


def _permutation(text):
    if text is None:
        return (None, None, None)
    return _ints("--permutation", text, allow_none=True)


def _layout_arg(op, text):
    from layoutalg.errors import LayoutError
    from layoutalg.layout import Layout
    from layoutalg.parse import parse_layout

    try:
        lay = parse_layout(text)
    except LayoutError as e:
        if op == "draw":
            raise
        raise DrawError(f"{op}: {e}") from None
    if isinstance(lay, int):
        lay = Layout(lay)
    return lay


def _threads_list(text):
    if text is None:
        return ()
    out = []
    for p in re.split(r"[,\s]+", text.strip().strip("()")):
        if not p:
            continue
        try:
            out.append(int(p))
        except ValueError:
            raise DrawError(f"--highlight: expected thread numbers like 0,5, got {text!r}") from None
    return tuple(out)


def _make_mma(args, atom_name):
    from layoutalg.tiled_mma import make_tiled_mma

    return make_tiled_mma(atom_name, _atom_layout(args.atom_layout), _permutation(args.permutation))


def _bits(dtype):
    from layoutalg.algebra import type_bits

    try:
        return type_bits(dtype)
    except Exception:
        raise DrawError(f"--dtype: unknown element type {dtype!r} (e.g. f16, bf16, tf32, f32, f64, s8)") from None


# ---------------------------------------------------------------------------
# builders
# ---------------------------------------------------------------------------
def _check_cells(args, n, what):
    """Refuse a picture of ``n`` cells above ``--max-cells``, before anything is built."""
    if args.max_cells < 1:
        raise DrawError(f"--max-cells must be positive, got {args.max_cells}")
    if n > args.max_cells:
        raise DrawError(f"{what} has {n} cells, more than --max-cells {args.max_cells} (a picture of that many cells "
                        f"is megabytes to gigabytes and slow to make); draw a smaller layout, or pass "
                        f"--max-cells {n} to draw it anyway")


def _layout_figure(args, text):
    from layoutalg.draw import layout_figure
    from layoutalg.layout import size

    lay = _layout_arg("draw", text)
    _check_cells(args, size(lay), f"layout {lay}")
    color = args.color or "index"
    bits = _bits(args.dtype or "f16")
    kw = {"one_based": args.one_based}
    if args.title is not None:
        kw["title"] = args.title
    return lay, layout_figure(lay, color, bits, **kw)


def _atom_entry(mode, name):
    """The table entry of atom ``name``, checked to be of the kind ``mode`` (mma or copy) draws."""
    import mma_atoms

    try:
        op = mma_atoms.get(name)
    except LookupError as e:
        close = getattr(e, "suggestions", ())
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise DrawError(f"draw {mode}: no atom named {name!r}{hint} (`layoutalg atoms` lists them)") from None
    if (mode == "mma") != isinstance(op, mma_atoms.MMAOp):
        other = "copy" if mode == "mma" else "mma"
        raise DrawError(f"draw {mode}: {name} is a{'n MMA' if other == 'mma' else ' copy'} atom: draw it with draw {other}")
    return op


def _mma_figure(args):
    from layoutalg.draw import partition_figure, tiled_mma_figure
    from layoutalg.tensor import make_identity_tensor

    _atom_entry("mma", args.name)

    mma = _make_mma(args, args.name)
    M, N, K = mma.tile_size_mnk
    _check_cells(args, M * K + N * K + M * N, f"the {M}x{N}x{K} tiled MMA")
    _check_threads(args, mma.size, "this TiledMMA")
    kw = {"one_based": args.one_based}
    if args.title is not None:
        kw["title"] = args.title
    if args.thread is not None:
        if not 0 <= args.thread < mma.size:
            raise DrawError(f"--thread: {args.thread} is not a thread of this TiledMMA (0..{mma.size - 1})")
        op = args.operand or "C"
        M, N, K = mma.tile_size_mnk
        tile = {"A": (M, K), "B": (N, K), "C": (M, N)}[op]
        if args.shape is None:
            shape = tile
        else:
            shape = _ints("--shape", args.shape)
            if len(shape) != 2:
                raise DrawError(f"--shape: expected the two extents of {op} ({'MK' if op == 'A' else 'NK' if op == 'B' else 'MN'}), "
                                f"got {args.shape!r}")
            if shape[0] % tile[0] or shape[1] % tile[1]:
                raise DrawError(f"--shape: {shape[0]}x{shape[1]} is not a multiple of the {op} tile {tile[0]}x{tile[1]}")
        thr = mma.get_slice(args.thread)
        part = {"A": thr.partition_A, "B": thr.partition_B, "C": thr.partition_C}[op](make_identity_tensor(shape))
        if "title" not in kw:
            what = "tile" if shape == tile else "tensor"
            kw["title"] = (f"{mma.atom.name}: thread {args.thread + int(args.one_based)}'s {op} elements, "
                           f"{op} {what} {shape[0]}x{shape[1]}")
        return partition_figure(shape, part, thread=args.thread, **kw)
    if args.operand:
        raise DrawError("--operand with mma needs --thread T (it picks the tensor whose partition is drawn)")
    if args.shape:
        raise DrawError("--shape goes with --thread T (the tensor whose partition is drawn)")
    return tiled_mma_figure(mma, highlight_threads=_threads_list(args.highlight), **kw)


def tiled_copy_from_args(args, mode="draw copy"):
    """The TiledCopy of ``draw copy`` / ``analyze copy`` options, or None for the atom alone
    (no --threads, no --mma); ``args.name`` is the atom's name."""
    from layoutalg.atom import CopyAtom
    from layoutalg.tiled_copy import make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_copy_C

    _atom_entry("copy", args.name)
    if args.mma:
        for opt in ("threads", "values", "width"):
            if getattr(args, opt, None) is not None:
                raise DrawError(f"--{opt} does not go with --mma (the MMA's {args.operand or 'operand'} layout sets the copy)")
        if not args.operand:
            raise DrawError("--mma needs --operand A, B or C (make_tiled_copy_A/B/C)")
        mma = _make_mma(args, args.mma)
        dtype = args.dtype or getattr(mma.atom, {"A": "a_type", "B": "b_type", "C": "c_type"}[args.operand])
        if dtype in (None, "any"):
            raise DrawError(f"--dtype: {mma.atom.name} does not fix the {args.operand} element type; give --dtype")
        maker = {"A": make_tiled_copy_A, "B": make_tiled_copy_B, "C": make_tiled_copy_C}[args.operand]
        return maker(CopyAtom(args.name, dtype), mma)
    for opt in ("atom_layout", "permutation", "operand"):
        if getattr(args, opt, None) is not None:
            raise DrawError(f"--{opt.replace('_', '-')} applies to copies of an MMA: give --mma ATOM too")
    if not args.dtype:
        raise DrawError(f"{mode} {args.name}: give the element type with --dtype (e.g. --dtype f16)")
    _bits(args.dtype)
    if args.threads is None:
        if args.values is not None:
            raise DrawError("--values needs --threads (make_tiled_copy(atom, threads, values))")
        return None
    thr = _layout_arg("--threads", args.threads)
    val = _layout_arg("--values", args.values) if args.values is not None else None
    return make_tiled_copy(CopyAtom(args.name, args.dtype), thr, val)


def shared_side(copy, side):
    """The side of ``copy`` in shared memory: ``side`` if given, else the one the atom's table
    says (ldmatrix reads shared memory, stmatrix and cp.async write it)."""
    if side is not None:
        return side
    op = copy.atom.op
    if op.src_space == "smem":
        return "S"
    if op.dst_space == "smem":
        return "D"
    raise DrawError(f"{op.name} reads and writes any memory: give --side S (shared memory is its source) "
                    f"or --side D (its destination)")


def _copy_figure(args):
    from layoutalg.atom import CopyAtom
    from layoutalg.draw import copy_atom_figure, tiled_copy_figure

    kw = {"one_based": args.one_based, "highlight_threads": _threads_list(args.highlight)}
    if args.title is not None:
        kw["title"] = args.title
    cp = tiled_copy_from_args(args)
    if args.banks:
        return _bank_figure(args, cp)
    for opt in ("smem", "side", "warp", "instructions"):
        if getattr(args, opt) is not None:
            raise DrawError(f"--{opt} goes with --banks (the bank use of the copy's shared side)")
    if cp is None:
        atom = CopyAtom(args.name, args.dtype)
        _check_threads(args, atom.num_threads, f"the atom {atom.name}")
        return copy_atom_figure(atom, width=args.width, **kw)
    if args.width is not None:
        raise DrawError("--width applies to a copy atom drawn alone (without --threads)")
    _check_copy(args, cp)
    return tiled_copy_figure(cp, **kw)


def _bank_figure(args, cp):
    from layoutalg.cost import analyze_shared
    from layoutalg.draw import bank_figure

    if cp is None:
        raise DrawError("--banks needs a tiled copy: give --threads (and --values) or --mma with --operand")
    if args.smem is None:
        raise DrawError('--banks needs the shared layout: --smem LAYOUT, e.g. --smem "Sw<3,3,3> o 0 o (16,64):(64,1)"')
    for opt in ("width", "highlight"):
        if getattr(args, opt) is not None:
            raise DrawError(f"--{opt} does not go with --banks")
    smem = _layout_arg("--smem", args.smem)
    a = analyze_shared(cp, smem, shared_side(cp, args.side))
    kw = {"one_based": args.one_based, "warp": args.warp or 0, "instructions": args.instructions}
    if args.title is not None:
        kw["title"] = args.title
    return bank_figure(a, **kw)


def _check_copy(args, cp):
    from layoutalg.layout import size

    tile = cp.tiler_mn if isinstance(cp.tiler_mn, tuple) else (cp.tiler_mn,)
    n = 1
    for t in tile:
        n *= size(t) if not isinstance(t, int) else t
    _check_cells(args, 2 * n, f"the tiled copy of tile {tile}")      # source and destination
    _check_threads(args, cp.size, "this TiledCopy")


def _check_threads(args, nthreads, what):
    bad = [t for t in _threads_list(args.highlight) if not 0 <= t < nthreads]
    if bad:
        raise DrawError(f"--highlight: thread{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} "
                        f"{'are' if len(bad) > 1 else 'is'} not in {what} (threads 0..{nthreads - 1})")


def _plan_graph(args):
    try:
        from codegen import GemmConfig, make_plan
        from codegen.plan_graph import plan_graph
    except ImportError as e:
        raise DrawError(f"draw plan needs the codegen package and its dependencies "
                        f"(pip install 'layoutalg[cuda]'): {e}") from None
    from codegen.config import FP8, KMAJOR_ONLY, WGMMA_DTYPES

    dtype = args.dtype or "f16"
    if args.path == "wgmma":
        from codegen.sm90.plan import make_wgmma_plan
        from codegen.sm90.plan_graph import wgmma_plan_graph

        try:
            cfg = GemmConfig.default(dtype, arch=(9, 0))
        except ValueError as e:
            raise DrawError(f"draw plan --path wgmma: {e}") from None
        if cfg.path != "wgmma":
            raise DrawError(f"draw plan --path wgmma: the Hopper kernel takes {', '.join(WGMMA_DTYPES)}, not {dtype}")
        b_major = args.b_major or ("K" if dtype in KMAJOR_ONLY else "MN")    # tf32, fp8: K-major only
        try:
            plan = make_wgmma_plan(cfg, args.a_major or "K", b_major)
        except ValueError as e:
            raise DrawError(f"draw plan --path wgmma: {e}") from None
        return wgmma_plan_graph(plan)
    if dtype in FP8:
        raise DrawError(f"draw plan: {dtype} runs on the Hopper kernel only; pass --path wgmma")
    cfg = GemmConfig.default(dtype)
    plan = make_plan(cfg, args.a_major or "K", args.b_major or "MN")
    return plan_graph(plan)


def _expr_graph(args):
    from layoutalg.draw import expr_graph

    return expr_graph(args.name)


# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------
def _format(args):
    if args.format and args.output:
        suffix = Path(args.output).suffix.lstrip(".").lower()
        suffix = "tex" if suffix == "latex" else suffix
        known = suffix in FIGURE_FORMATS + GRAPH_FORMATS           # x.out --format svg is fine
        if known and suffix != args.format and not (suffix == "svgz" and args.format == "svg"):
            raise DrawError(f"-o {args.output} says {suffix} but --format says {args.format}: the file would hold "
                            f"{args.format} under a .{suffix} name; make them agree")
    if args.output:
        folder = Path(args.output).parent
        if not folder.is_dir():
            raise DrawError(f"-o {args.output}: the folder {folder} does not exist")
    if args.format:
        return args.format
    if args.output:
        suffix = Path(args.output).suffix.lstrip(".").lower()
        if suffix == "latex":
            suffix = "tex"
        if suffix not in FIGURE_FORMATS + GRAPH_FORMATS:
            raise DrawError(f"-o {args.output}: cannot tell the format from the suffix {suffix!r}; "
                            f"use --format with one of {', '.join(FORMATS)}")
        return suffix
    return None


def _write_figure(args, fig, out, layout=None):
    from layoutalg.draw import layout_ascii, layout_latex, save

    fmt = _format(args)
    svg_opts = {}
    if args.cell_size is not None:
        if args.cell_size < 4:
            raise DrawError(f"--cell-size must be at least 4 pixels, got {args.cell_size}")
        svg_opts["cell_size"] = args.cell_size
    if args.no_data:
        if fmt not in (None, "svg", "svgz", "png"):
            raise DrawError(f"--no-data applies to svg and png output, not {fmt}")
        svg_opts["data_attrs"] = False
    if fmt == "dot":
        raise DrawError("--format dot is for graphs (draw plan, draw expr); pictures are svg, png, tex, typ, txt or pdf")
    cute_latex = layout is not None and (args.color or "index") == "index" and not args.one_based and args.title is None
    if fmt in (None, "txt") and args.color not in (None, "index"):
        raise DrawError(f"--color {args.color} colours pictures (svg, png, tex, typ, pdf); text output has no "
                        f"colours: give -o FILE.svg or --format svg")
    if not args.output:
        if fmt in (None, "txt"):
            text = layout_ascii(layout, one_based=args.one_based) if layout is not None else fig.to_ascii()
        elif fmt == "svg":
            text = fig.to_svg(**svg_opts)
        elif fmt == "tex":
            text = layout_latex(layout) if cute_latex else fig.to_tikz()
        elif fmt == "typ":
            text = fig.to_typst()
        else:
            raise DrawError(f"--format {fmt} writes binary data: give a file with -o")
        out.write(text if text.endswith("\n") else text + "\n")
        return 0
    path = Path(args.output)
    if fmt in ("svg", "svgz"):
        save(fig, path, format=fmt, **svg_opts)
    elif fmt == "png":
        if args.scale is not None:
            if not args.scale > 0:
                raise DrawError(f"--scale must be positive, got {args.scale}")
            svg_opts["scale"] = args.scale
        save(fig, path, format="png", **svg_opts)
    elif fmt == "tex" and cute_latex:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(layout_latex(layout), encoding="utf-8")
    elif fmt == "txt" and layout is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(layout_ascii(layout, one_based=args.one_based) + "\n", encoding="utf-8")
    else:
        save(fig, path, format=fmt)
    print(f"wrote {path}", file=out)
    return 0


def _write_graph(args, graph, out):
    from layoutalg.draw import render_dot

    fmt = _format(args)
    if fmt is not None and fmt not in GRAPH_FORMATS:
        raise DrawError(f"--format {fmt}: graphs (plan, expr) are written as {', '.join(GRAPH_FORMATS)}")
    if not args.output:
        if fmt not in (None, "dot"):
            raise DrawError(f"--format {fmt} renders through Graphviz: give a file with -o (without -o the DOT text prints)")
        out.write(graph.source)
        return 0
    path = Path(args.output)
    if fmt == "dot":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(graph.source, encoding="utf-8")
        print(f"wrote {path}", file=out)
        return 0
    result = render_dot(graph, path, format=fmt)
    if not result.rendered:
        # only the .dot text was written: the asked-for file is missing, so this is a failure
        print(f"layoutalg draw: {path} was not written: {result.message}", file=sys.stderr)
        return 1
    print(result.message, file=out)
    return 0


def _check_options(args, mode):
    for opt, modes in _APPLIES.items():
        val = getattr(args, opt)
        given = val is not None and val is not False and not (opt == "max_cells" and val == MAX_CELLS)
        if given and mode not in modes:
            flag = "--" + opt.replace("_", "-")
            where = ", ".join("a layout" if m == "layout" else f"draw {m}" for m in modes)
            raise DrawError(f"{flag} does not apply to {'a layout' if mode == 'layout' else 'draw ' + mode} "
                            f"(it applies to {where})")


def run(args, out):
    """Carry out ``layoutalg draw``; returns the exit status (2 for bad input)."""
    from layoutalg.draw import MissingDependencyError
    from layoutalg.errors import LayoutError

    try:
        what = args.what
        mode = what if what in MODES else "layout"
        _check_options(args, mode)
        if mode in ("mma", "copy") and not args.name:
            raise DrawError(f"draw {mode}: give the atom's name, e.g. draw {mode} "
                            + ("SM80_16x8x16_F32F16F16F32_TN" if mode == "mma" else "SM75_U32x4_LDSM_N --dtype f16"))
        if mode == "expr" and not args.name:
            raise DrawError('draw expr: give the expression, e.g. draw expr "complement(4:2, 24)"')
        if mode in ("plan", "layout") and args.name is not None:
            raise DrawError(f"draw {'plan' if mode == 'plan' else repr(what)}: unexpected extra argument {args.name!r}")
        if mode == "layout":
            try:
                layout, fig = _layout_figure(args, what)
            except LayoutError as e:
                if re.fullmatch(r"[A-Za-z_]\w*", what.strip()):
                    raise DrawError(f"{what!r} is neither a layout nor one of the words {', '.join(MODES)}") from None
                raise e
            return _write_figure(args, fig, out, layout)
        if mode == "mma":
            return _write_figure(args, _mma_figure(args), out)
        if mode == "copy":
            return _write_figure(args, _copy_figure(args), out)
        if mode == "plan":
            return _write_graph(args, _plan_graph(args), out)
        return _write_graph(args, _expr_graph(args), out)
    except (DrawError, LayoutError, MissingDependencyError, ValueError, TypeError, LookupError, OSError) as e:
        print(f"layoutalg draw: {e}", file=sys.stderr)
        return 2
