"""Make every picture of the documentation with the project's own ``layoutalg draw``.

The docs build runs this (``docs/hooks.py``), so the pictures always show what
the code does today; run it by hand to look at them::

    python docs/make_pictures.py OUTDIR          # every picture, as SVG, into OUTDIR
    python docs/make_pictures.py --list          # only print the commands

Each picture is one ``layoutalg draw`` command line (quoted on the page that
shows it); the SVGs leave out the cells' ``data-*`` attributes (``--no-data``)
to stay small. The GEMM-plan graph needs Graphviz's ``dot`` program; without it
:func:`make` raises instead of leaving a page without its picture.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shlex
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

TF32 = "SM80_16x8x8_F32TF32TF32F32_TN"
F16 = "SM80_16x8x16_F32F16F16F32_TN"
TF32_TILING = ["--atom-layout", "2,2,1", "--permutation", "32,32,8"]


@dataclass(frozen=True)
class Picture:
    """One picture: ``pictures/<stem>.svg`` made by ``layoutalg <args> -o ...``."""

    stem: str
    args: tuple[str, ...]
    graph: bool = False  # a Graphviz graph (no --no-data)

    def argv(self, outdir: str) -> list[str]:
        extra = [] if self.graph else ["--no-data"]
        return [*self.args, *extra, "-o", os.path.join(outdir, f"{self.stem}.svg")]


def _p(stem, *args, graph=False):
    return Picture(stem, tuple(args), graph)


PICTURES = [
    # layouts.md
    _p("layout_4x8_row_major", "draw", "(4,8):(8,1)"),
    _p("layout_nested", "draw", "(4,(2,2)):(2,(1,8))"),
    _p("layout_logical_divide", "draw", "((2,4),(4,2)):((1,2),(8,32))"),
    # swizzles.md
    _p("smem_tf32_banks", "draw", "(8,32):(32,1)", "--color", "bank", "--dtype", "tf32"),
    _p("smem_tf32_swizzled_banks", "draw", "Sw<3,2,3> o 0 o (8,32):(32,1)", "--color", "bank", "--dtype", "tf32"),
    _p("smem_f16_swizzled_banks", "draw", "Sw<3,3,3> o 0 o (8,64):(64,1)", "--color", "bank", "--dtype", "f16"),
    _p("ldsm_banks_plain", "draw", "copy", "SM75_U32x4_LDSM_N", "--mma", F16, "--operand", "A", "--banks",
       "--smem", "(16,64):(64,1)", "--instructions", "1"),
    _p("ldsm_banks_swizzled", "draw", "copy", "SM75_U32x4_LDSM_N", "--mma", F16, "--operand", "A", "--banks",
       "--smem", "Sw<3,3,3> o 0 o (16,64):(64,1)", "--instructions", "1"),
    # tutorial_atoms.md, tiled.md
    _p("tf32_mma", "draw", "mma", TF32, *TF32_TILING),
    _p("tf32_copy_A_universal", "draw", "copy", "UniversalCopy_32", "--mma", TF32, *TF32_TILING, "--operand", "A"),
    _p("tf32_copy_B_ldmatrix", "draw", "copy", "SM75_U32x4_LDSM_N", "--mma", TF32, *TF32_TILING, "--operand", "B"),
    _p("ldmatrix_x4_tf32_atom", "draw", "copy", "SM75_U32x4_LDSM_N", "--dtype", "tf32"),
    _p("tf32_thread5_A", "draw", "mma", TF32, *TF32_TILING, "--thread", "5", "--operand", "A", "--shape", "64,16"),
    _p("f16_mma_atom", "draw", "mma", F16),
    _p("f16_mma_ksplit", "draw", "mma", F16, "--atom-layout", "2,2,2"),
    _p("g2s_cp_async", "draw", "copy", "SM80_CP_ASYNC_CACHEGLOBAL_128", "--dtype", "f16",
       "--threads", "(16,8):(8,1)", "--values", "(1,8)"),
    # codegen.md: the default plan's data path
    _p("gemm_plan", "draw", "plan", "--dtype", "f16", graph=True),
    # hopper.md: the Hopper kernel's warp-specialized pipeline
    _p("gemm_sm90_plan", "draw", "plan", "--path", "wgmma", "--dtype", "f16", graph=True),
    _p("expr_tree", "draw", "expr", "logical_divide(composition((4,3):(3,1), 6:2), 2:1)", graph=True),
    # attention.md: thread 5's S accumulators and its P as the A operand of O += P V
    _p("attention_s_thread5", "draw", "mma", F16, "--atom-layout", "4,1,1", "--permutation", "64,64,16",
       "--operand", "C", "--thread", "5", "--shape", "64,64"),
    _p("attention_p_thread5", "draw", "mma", F16, "--atom-layout", "4,1,1", "--permutation", "64,64,16",
       "--operand", "A", "--thread", "5", "--shape", "64,64"),
    # attention.md, the Hopper kernel: thread 5's S (CLayout_64x128) and P (ALayout_64x16 k-block by k-block)
    _p("attention_sm90_s_thread5", "draw", "mma", "SM90_64x128x16_F32F16F16_SS", "--operand", "C", "--thread", "5",
       "--shape", "64,128"),
    _p("attention_sm90_p_thread5", "draw", "mma", "SM90_64x128x16_F32F16F16_RS", "--permutation", "64,128,128",
       "--operand", "A", "--thread", "5", "--shape", "64,128"),
]


def show(argv: list[str]) -> str:
    """The shell form of a ``layoutalg`` argument list."""
    return "layoutalg " + " ".join(shlex.quote(a) for a in argv)


def make(outdir: str, *, verbose: bool = False) -> list[str]:
    """Write every picture into ``outdir``; returns the paths written.

    Raises ``RuntimeError`` naming the command when one fails or writes no file.
    """
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from layoutalg_cli import main as cli

    os.makedirs(outdir, exist_ok=True)
    written = []
    for pic in PICTURES:
        argv = pic.argv(outdir)
        buf, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):          # the command's errors go to stderr
            rc = cli(argv, out=buf)
        path = argv[-1]
        if verbose:
            print(show(argv), "->", buf.getvalue().strip())
        if rc != 0 or not os.path.exists(path):
            why = " ".join(x for x in (err.getvalue().strip(), buf.getvalue().strip()) if x) or "no message"
            raise PictureError(f"make_pictures: `{show(argv)}` failed (exit status {rc}): {why}")
        written.append(path)
    return written


class PictureError(RuntimeError):
    """A picture of the documentation could not be made (the message says why)."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir", nargs="?", default=os.path.join("site", "pictures"), help="where to write (default site/pictures)")
    p.add_argument("--list", action="store_true", help="print the commands without running them")
    a = p.parse_args(argv)
    if a.list:
        for pic in PICTURES:
            print(show(pic.argv(a.outdir)))
        return 0
    make(a.outdir, verbose=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
