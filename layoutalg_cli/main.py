"""The ``layoutalg`` command line.

    layoutalg show "(4,(2,2)):(2,(1,8))"      print a layout, its size, cosize and table
    layoutalg show "(M,K):(ldA,1)" --tile 128,64   a layout of run-time integers: formulas, tiles
    layoutalg eval "composition((4,3):(3,1), 6:2)"   evaluate an algebra expression
    layoutalg atoms [PATTERN]                 list or search the MMA and copy atom tables
    layoutalg draw ...                        render diagrams (see ``layoutalg draw -h``)
    layoutalg analyze ...                     bank conflicts, coalescing, TMA/wgmma legality of a layout
    layoutalg demo                            the tour: algebra, partitions, generated GEMM
"""

import argparse
import sys
import textwrap

from layoutalg.errors import LayoutError

#: ``show`` prints the table of layouts up to this many cells (the notebook picture's limit).
SHOW_MAX_CELLS = 65536


def _table(layout):
    try:
        from layoutalg.draw import ascii_layout
    except ImportError:  # drawing is optional for `show`
        return ""
    return ascii_layout(layout)


def _symbolic(text):
    """Whether a layout is written with names for run-time integers ("(M,K):(ldA,1)")."""
    import re

    return ":" in text and re.search(r"[A-Za-z]", text) is not None and "Sw<" not in text


def cmd_show_symbolic(args, out):
    """``show`` of a layout with names: the layout, its size and offset as formulas, and the
    tiles of ``--tile`` as CuTe rounds them up (codegen.cute's run-time layouts)."""
    from layoutalg import zipped_divide
    from layoutalg.inttuple import flat_tuple

    from codegen.cute.dynamic import describe, extent_str, offset_formula, split_residues, symbolic_layout

    try:
        layout, slots = symbolic_layout(args.layout)
    except LayoutError as e:
        raise LayoutError(f"show: {e}") from None
    names = [s.origin for s in slots]
    shape = [extent_str(e, slots) for e in flat_tuple(layout.shape)]
    print(f"layout : {describe(layout, slots)}    (run-time: {', '.join(dict.fromkeys(names))})", file=out)
    print(f"size   : {'*'.join(shape)}", file=out)
    print(f"offset : {offset_formula(layout, slots, latex=args.latex)}", file=out)
    if args.tile:
        try:
            tiler = tuple(int(t) for t in args.tile.split(","))
        except ValueError:
            raise LayoutError(f"show: --tile must be ints separated by commas, got {args.tile!r}") from None
        lay, dyn, _ = split_residues("show --tile", layout, slots, tiler, True, describe(layout, slots))
        tiled = zipped_divide(lay, tiler)
        print(f"tiles  : {describe(tiled, dyn)}    ((tile),(tiles)): local_tile by {args.tile}, the last "
              f"tiles partial", file=out)
    return 0


def cmd_show(args, out):
    from layoutalg.layout import Layout, cosize, depth, rank, size
    from layoutalg.parse import parse_layout
    from layoutalg.swizzle import ComposedLayout

    if _symbolic(args.layout):
        return cmd_show_symbolic(args, out)
    if args.tile or args.latex:
        raise LayoutError("show: --tile and --latex are for layouts with names for run-time integers, "
                          "e.g. \"(M,K):(ldA,1)\"")
    layout = parse_layout(args.layout)
    if isinstance(layout, int) and not isinstance(layout, bool):
        layout = Layout(layout)
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise LayoutError(f"show: {args.layout!r} is not a layout (write one as shape:stride, e.g. \"(4,8):(8,1)\")")
    print(f"layout : {layout}", file=out)
    print(f"size   : {size(layout)}", file=out)
    print(f"cosize : {cosize(layout)}", file=out)
    print(f"rank   : {rank(layout)}    depth: {depth(layout)}", file=out)
    n = size(layout)
    shown = min(n, 64)
    values = [layout(i) for i in range(shown)]
    tail = " ..." if n > shown else ""
    print(f"values : {' '.join(str(v) for v in values)}{tail}", file=out)
    if args.max_cells < 1:
        raise LayoutError(f"show: --max-cells must be positive, got {args.max_cells}")
    if n > args.max_cells:
        print(f"table  : not printed: {n} cells, more than --max-cells {args.max_cells} "
              f"(pass --max-cells {n} to print it)", file=out)
        return 0
    table = _table(layout)
    if table:
        print(table.rstrip("\n"), file=out)
    return 0


def cmd_eval(args, out):
    from layoutalg.expressions import evaluate
    from layoutalg.parse import format_value

    value = evaluate(args.expression)
    if value is not None:                  # print_layout(...) and the like print themselves
        print(format_value(value), file=out)
    return 0


def _version():
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("layoutalg")
    except Exception:  # running from a source tree that is not installed
        import layoutalg

        return layoutalg.__version__


def _eval_epilog():
    from layoutalg.expressions import function_names

    names = ", ".join(function_names())
    return ("functions and names (the layoutalg namespace):\n"
            + textwrap.fill(names, width=88, initial_indent="  ", subsequent_indent="  ")
            + "\n\nliterals: layouts (4,8):(8,1), shapes (4,8), ints, _ (None), swizzles Sw<3,3,3>, "
              "composed layouts Sw<3,3,3> o 0 o (8,64):(64,1)")


def build_parser():
    """The argument parser of ``layoutalg`` and its sub-commands."""
    p = argparse.ArgumentParser(prog="layoutalg", description="CuTe's layout algebra from the command line.",
                                epilog="`layoutalg COMMAND --help` says more about each command.")
    p.add_argument("--version", action="version", version=f"layoutalg {_version()}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    s = sub.add_parser("show", help="print a layout, its size, cosize and table",
                       description="Print a layout: its size, cosize, values and table; for a layout with names "
                                   "for run-time integers, e.g. \"(M,K):(ldA,1)\", its size and offset as "
                                   "formulas and (--tile) its tiles as local_tile rounds them up.")
    s.add_argument("layout", help='a layout in CuTe form, e.g. "(4,(2,2)):(2,(1,8))" or "(M,K):(ldA,1)"')
    s.add_argument("--tile", default=None, metavar="T0,T1,...",
                   help="with names: the tiles of local_tile by this tiler, e.g. 128,64")
    s.add_argument("--latex", action="store_true", help="with names: the offset as a LaTeX formula")
    s.add_argument("--max-cells", type=int, default=SHOW_MAX_CELLS, metavar="N",
                   help=f"print the table only for layouts of at most N cells (default {SHOW_MAX_CELLS}: "
                        f"a 2000x2000 table is 80 MB of text)")
    s.set_defaults(fn=cmd_show)
    e = sub.add_parser("eval", help="evaluate an algebra expression",
                       description="Evaluate an expression of CuTe's layout algebra and print the result in CuTe's form.",
                       epilog=_eval_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("expression", help='e.g. "composition((4,3):(3,1), 6:2)"')
    e.set_defaults(fn=cmd_eval)
    from . import atoms as cli_atoms

    cli_atoms.add_parser(sub)
    try:
        from . import draw as cli_draw

        cli_draw.add_parser(sub)
    except ImportError:
        pass
    from . import analyze as cli_analyze

    cli_analyze.add_parser(sub)
    try:
        from . import demo as cli_demo

        cli_demo.add_parser(sub)
    except ImportError:
        pass
    return p


def main(argv=None, out=None):
    """Run ``layoutalg`` with ``argv`` (default ``sys.argv[1:]``), printing to ``out``; returns the exit status.

    Without a command it prints the help and returns 2. Output cut short by a closed
    pipe (``layoutalg show ... | head -1``) ends quietly with status 0.
    """
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "fn", None) is None:
        parser.print_help(out)
        return 2
    try:
        return args.fn(args, out)
    except LayoutError as e:
        print(f"layoutalg: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 0


def _quiet_broken_pipe():
    """The reader of stdout went away: stop without a traceback, and without Python's own
    flush error at exit (point stdout at devnull, as the Python docs advise)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
