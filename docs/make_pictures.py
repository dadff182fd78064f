"""Generate the pictures of docs/tutorial_atoms.md into docs/pictures/.

Run from the repository root::

    python docs/make_pictures.py            # every picture, as SVG and PNG
    python docs/make_pictures.py --list     # only print the commands

Each picture is made by one ``layoutalg draw`` command line (printed as it
runs, and quoted in the tutorial), written once as SVG and once as PNG; the
SVGs leave out the cells' ``data-*`` attributes (``--no-data``) to stay small.
PNG needs ``cairosvg``; the GEMM-plan graph needs Graphviz's ``dot`` (without
it only its ``.dot`` text is written).
"""

from __future__ import annotations

import argparse
import io
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "pictures")

TF32 = "SM80_16x8x8_F32TF32TF32F32_TN"
F16 = "SM80_16x8x16_F32F16F16F32_TN"
TF32_TILING = ["--atom-layout", "2,2,1", "--permutation", "32,32,8"]

#: (file stem, `layoutalg` arguments) of each picture
PICTURES = [
    ("tf32_mma", ["draw", "mma", TF32, *TF32_TILING]),
    ("tf32_copy_A_universal", ["draw", "copy", "UniversalCopy_32", "--mma", TF32, *TF32_TILING, "--operand", "A"]),
    ("tf32_copy_B_ldmatrix", ["draw", "copy", "SM75_U32x4_LDSM_N", "--mma", TF32, *TF32_TILING, "--operand", "B"]),
    ("ldmatrix_x4_tf32_atom", ["draw", "copy", "SM75_U32x4_LDSM_N", "--dtype", "tf32"]),
    ("tf32_thread5_A", ["draw", "mma", TF32, *TF32_TILING, "--thread", "5", "--operand", "A", "--shape", "64,16"]),
    ("f16_mma_atom", ["draw", "mma", F16]),
    ("smem_tf32_banks", ["draw", "(8,32):(32,1)", "--color", "bank", "--dtype", "tf32"]),
    ("smem_tf32_swizzled_banks", ["draw", "Sw<3,2,3> o 0 o (8,32):(32,1)", "--color", "bank", "--dtype", "tf32"]),
]

#: Graphviz graphs: (file stem, arguments)
GRAPHS = [
    ("gemm_plan", ["draw", "plan", "--dtype", "f16"]),
]


def command(args: list[str], stem: str, suffix: str, no_data: bool) -> list[str]:
    """The full argument list writing ``docs/pictures/<stem>.<suffix>``."""
    extra = ["--no-data"] if no_data else []
    return [*args, *extra, "-o", f"docs/pictures/{stem}.{suffix}"]


def show(argv: list[str]) -> str:
    return "layoutalg " + " ".join(shlex.quote(a) for a in argv)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", action="store_true", help="print the commands without running them")
    p.add_argument("--no-png", action="store_true", help="write only the SVGs (and .dot)")
    a = p.parse_args(argv)
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from layoutalg_cli import main as cli

    os.chdir(ROOT)
    os.makedirs(OUT, exist_ok=True)
    jobs = []
    for stem, args in PICTURES:
        jobs.append(command(args, stem, "svg", True))
        if not a.no_png:
            jobs.append(command(args, stem, "png", True))
    for stem, args in GRAPHS:
        jobs.append(command(args, stem, "svg", False))
        if not a.no_png:
            jobs.append(command(args, stem, "png", False))
    failed = 0
    for job in jobs:
        print(show(job))
        if a.list:
            continue
        buf = io.StringIO()
        rc = cli(job, out=buf)
        msg = buf.getvalue().strip()
        if msg:
            print("   ", msg)
        if rc:
            failed += 1
    if not a.list:
        total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
        print(f"{len(os.listdir(OUT))} files in docs/pictures, {total / 1e6:.2f} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
