"""The ``layoutalg`` command line.

    layoutalg show "(4,(2,2)):(2,(1,8))"      print a layout, its size, cosize and table
    layoutalg eval "composition((4,3):(3,1), 6:2)"   evaluate an algebra expression
    layoutalg draw ...                        render diagrams (see ``layoutalg draw -h``)
    layoutalg demo                            the tour: algebra, partitions, generated GEMM
"""

import argparse
import sys

from layoutalg.errors import LayoutError


def _table(layout):
    from layoutalg.layout import Layout, rank, size

    try:
        from layoutalg.draw import ascii_layout
    except ImportError:  # drawing is optional for `show`
        ascii_layout = None
    if ascii_layout is not None:
        return ascii_layout(layout)
    return ""


def cmd_show(args, out):
    from layoutalg.layout import cosize, depth, rank, size
    from layoutalg.parse import parse_layout

    layout = parse_layout(args.layout)
    print(f"layout : {layout}", file=out)
    print(f"size   : {size(layout)}", file=out)
    print(f"cosize : {cosize(layout)}", file=out)
    print(f"rank   : {rank(layout)}    depth: {depth(layout)}", file=out)
    n = size(layout)
    shown = min(n, 64)
    values = [layout(i) for i in range(shown)]
    tail = " ..." if n > shown else ""
    print(f"values : {' '.join(str(v) for v in values)}{tail}", file=out)
    table = _table(layout)
    if table:
        print(table, file=out)
    return 0


def cmd_eval(args, out):
    from layoutalg.expressions import evaluate
    from layoutalg.parse import format_value

    print(format_value(evaluate(args.expression)), file=out)
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="layoutalg", description="CuTe's layout algebra from the command line.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("show", help="print a layout, its size, cosize and table")
    s.add_argument("layout", help='a layout in CuTe form, e.g. "(4,(2,2)):(2,(1,8))"')
    s.set_defaults(fn=cmd_show)
    e = sub.add_parser("eval", help="evaluate an algebra expression")
    e.add_argument("expression", help='e.g. "composition((4,3):(3,1), 6:2)"')
    e.set_defaults(fn=cmd_eval)
    try:
        from . import draw as cli_draw

        cli_draw.add_parser(sub)
    except ImportError:
        pass
    try:
        from . import demo as cli_demo

        cli_demo.add_parser(sub)
    except ImportError:
        pass
    return p


def main(argv=None, out=None):
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args, out)
    except LayoutError as e:
        print(f"layoutalg: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
