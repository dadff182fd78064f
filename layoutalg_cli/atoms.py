"""``layoutalg atoms [PATTERN]``: list and search the atom tables of :mod:`mma_atoms`."""

from __future__ import annotations

import fnmatch


def add_parser(sub):
    """Add the ``atoms`` sub-command to the argparse sub-parsers ``sub``."""
    p = sub.add_parser(
        "atoms",
        help="list or search the MMA and copy atom tables",
        description="List the atoms of the tables (mma_atoms), one a line: name, kind, threads, "
                    "MxNxK and D=A*B+C types (MMAs) or memory spaces and registers per thread (copies), "
                    "minimum SM, PTX. PATTERN keeps the names that contain it "
                    "(case-insensitive), or match it as a glob (SM80_*_TN).",
    )
    p.add_argument("pattern", nargs="?", metavar="PATTERN", help="a part of the name, or a glob with * ? []")
    p.add_argument("--kind", help="mma_sync, wgmma, fma, universal, cp_async, ldsm, stsm, or the groups mma, copy")
    p.add_argument("--sm", type=int, help="only atoms an sm_SM can run, e.g. 80")
    p.set_defaults(fn=run)
    return p


def _matches(name: str, pattern: str | None) -> bool:
    if not pattern:
        return True
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(name.upper(), pattern.upper())
    return pattern.upper() in name.upper()


def _line(op) -> str:
    from mma_atoms import MMAOp
    from layoutalg.layout import size

    if isinstance(op, MMAOp):
        what = "x".join(str(x) for x in op.shape_mnk)
        types = f"{op.d_type}={op.a_type}*{op.b_type}+{op.c_type}"
    else:
        what = f"{op.src_space}->{op.dst_space}"
        types = f"{op.src_regs.count}x{op.src_regs.type}->{op.dst_regs.count}x{op.dst_regs.type}"
    return f"{op.name:44s} {op.kind:9s} {size(op.thr_id):4d} thr  {what:10s} {types:22s} sm_{op.min_sm}  {op.ptx}"


def run(args, out) -> int:
    """Print the matching atoms; exit status 1 when none matches, 2 for a bad --kind or --sm."""
    import sys

    import mma_atoms

    try:
        ops = mma_atoms.all_ops(args.kind, args.sm)
    except (ValueError, TypeError) as e:
        print(f"layoutalg atoms: {e}", file=sys.stderr)
        return 2
    found = [op for op in ops if _matches(op.name, args.pattern)]
    for op in found:
        print(_line(op), file=out)
    if not found:
        print(f"layoutalg atoms: no atom matches {args.pattern!r}"
              + (f" (kind {args.kind})" if args.kind else "") + (f" (sm {args.sm})" if args.sm else ""),
              file=sys.stderr)
        return 1
    return 0
