"""Bank conflicts and coalescing predicted from layouts, against an H100's (H200's) counters.

Each case is one copy -- a ``TiledCopy`` over a shared or global layout -- performed once by
one CTA in a micro-kernel built with ``codegen.cute`` (``stmatrix`` with the intrinsics of
``codegen.intrinsics``), with no other traffic of the counted kinds: what else the kernel
touches is under a run-time flag that is never set, except that a kernel of loads stores the
sum of what it loaded (one 4-byte global store a thread, so that the loads are not removed;
no load case compares the global store counters). A kernel of shared loads has, under the
flag, a store at the index ``flag`` of its tensor, so that no load reads memory the compiler
can prove never written (the first run's ``lds32_broadcast``: with a store to the first word
only, the driver's compiler dropped the three loads of words never written, 1 instruction
where the copy has 4). ``layoutalg.analyze_shared`` / ``analyze_global`` predict the
instructions (those the compiler issues: adjacent shared accesses merged into vectors),
wavefronts (``cp.async`` by the lines of its global source), requests and sectors; Nsight
Compute measures them::

    python benchmarks/bank_conflicts.py                    # on a GPU with ncu: writes $OUT/bank_conflicts.*
    python benchmarks/bank_conflicts.py --dry-run          # anywhere: all but ncu (see below)
    python benchmarks/bank_conflicts.py --list             # the cases and their predictions

Steps: (1) every kernel is compiled to PTX in parallel processes and its static shared,
global, ldmatrix, stmatrix and cp.async instructions are counted against the prediction
(each thread runs the copy's code once, unrolled: this checks the compiler's vectorization
too), and its SASS too where ``ptxas`` and ``nvdisasm`` (or ``cuobjdump``) are at hand; (2)
one ``ncu`` run of this script with ``--launch`` launches every case once, with the counters
of ``METRICS`` that this ncu knows (``ncu --query-metrics``, saved); a case that breaks the
context is skipped and ncu runs again on the cases after it; where this ncu has no
instruction counter for an op (``stmatrix`` on the H200's), one more run counts the
instructions of each SASS opcode (the InstructionStats section's
``sass__inst_executed_per_opcode``) for those cases; (3) the counters are parsed, compared,
and the table (case, predicted, measured) written to ``--out`` (default ``$OUT``):
``bank_conflicts.md``, ``.csv``, ``.json``, the raw ncu CSVs and reports, and the logs. The
TMA boxes of ``tma_cases`` (with those of ``examples/hopper_gemm.py``) are also given to the
driver's ``cuTensorMapEncodeTiled``, which accepts or refuses them.

``--dry-run`` does (1) with the CPU's cores, runs the cases (``--sim-cases``) in numba's
simulator (``NUMBA_ENABLE_CUDASIM=1``), and feeds counters made from the predictions
through the parser and the comparison, so that everything but ncu itself is exercised.

Needs: numba-cuda 0.30.4 and the project on ``sys.path`` (this script puts the repository
root there); ncu on the PATH (or ``--ncu``), allowed to read the GPU's counters. numpy 2.5's
missing ``row_stack`` is patched here before numba is imported. Time: about a minute to
compile, then ncu; ``--ncu-timeout`` (default 420 s) bounds all ncu runs together, and
``--cases REGEX`` runs a subset.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from layoutalg import (  # noqa: E402
    CopyAtom, Layout, Swizzle, analyze_global, analyze_shared, check_tma, composition, cosize, make_tiled_copy,
    make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma, size, tile_to_shape,
)
from layoutalg.cost.banks import PerformanceWarning, phase_threads, shared_costs  # noqa: E402
from layoutalg.tiled_copy import make_tiled_copy_impl  # noqa: E402

import warnings  # noqa: E402

warnings.filterwarnings("ignore", category=PerformanceWarning)     # the cases conflict on purpose

F16_MMA = "SM80_16x8x16_F32F16F16F32_TN"
TF32_MMA = "SM80_16x8x8_F32TF32TF32F32_TN"
NP_TYPES = {"u8": np.uint8, "f16": np.float16, "bf16": np.uint16, "f32": np.float32, "tf32": np.float32,
            "f64": np.float64}
KERNEL_PREFIX = "bankcase_"


# ---------------------------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------------------------

@dataclass
class Case:
    """One copy: ``op`` is lds, sts (universal shared loads/stores), ldsm, stsm, ldgsts
    (cp.async: shared destination and global source), ldg, stg (universal global loads/stores)."""

    name: str
    group: str
    op: str
    copy: object
    dtype: str
    smem: object = None
    gmem: object = None
    mma: object = None
    operand: str = None
    note: str = ""
    index: int = -1
    pred: dict = field(default_factory=dict)

    @property
    def threads(self):
        return self.copy.size


def _thr(shape, stride=None):
    return Layout(shape, stride) if stride is not None else Layout(shape)


def _copy(atom, dtype, thr, val):
    return make_tiled_copy(CopyAtom(atom, dtype), thr, Layout(val))


def _row(m, n, ld=None):
    """(m, n) -> offset, n contiguous, rows ``ld`` apart."""
    return Layout((m, n), (n if ld is None else ld, 1))


def _col(m, n, ld=None):
    return Layout((m, n), (1, m if ld is None else ld))


def _sw(b, m, s, lay):
    return composition(Swizzle(b, m, s), lay)


def universal_cases():
    """Universal loads and stores. A thread's successive values are never adjacent in memory
    (columns 2 elements apart, or one instruction a thread): adjacent scalar accesses of one
    thread are merged into vectors by the compiler (LLVM's load/store vectorizer), and the
    kernel would no longer issue the copy's instructions (the PTX check says so)."""
    out = []
    col32 = _copy("UniversalCopy_32", "f32", _thr((32, 1)), (1, 1))          # a warp down a column
    for op in ("lds", "sts"):
        for ld, what in ((32, "32-way"), (16, "16-way"), (8, "8-way"), (2, "2-way"), (33, "padded, conflict-free"),
                         (1, "consecutive words")):
            out.append(Case(f"{op}32_col_ld{ld}", "universal", op, col32, "f32", smem=Layout((32, 4), (ld, 2)),
                            note=f"32-bit, a warp down a column of rows {ld} words apart: {what}"))
        out.append(Case(f"{op}32_col_swizzled", "universal", op, col32, "f32", smem=_sw(5, 0, 5, _row(32, 32)),
                        note="32-bit down the columns of 128-byte rows, Sw<5,0,5>: conflict-free"))
        out.append(Case(f"{op}32_broadcast", "universal", op, col32, "f32", smem=Layout((32, 4), (0, 8)),
                        note="every thread the same word (a thread's words 32 bytes apart: no vector)"))
    v2 = _copy("UniversalCopy_64", "f32", _thr((32, 1)), (1, 2))             # 8 bytes a thread, one per row
    v4 = _copy("UniversalCopy_128", "f32", _thr((32, 1)), (1, 4))            # 16 bytes a thread, one per row
    for op in ("lds", "sts"):
        for ld in (2, 8, 32):
            out.append(Case(f"{op}64_rows_ld{ld}", "universal", op, v2, "f32", smem=_row(32, 2, ld),
                            note=f"64-bit, thread t row t, rows {ld} words apart (half-warp phases)"))
        out.append(Case(f"{op}64_rows_swizzled", "universal", op, v2, "f32", smem=_sw(4, 1, 4, _row(32, 32)),
                        note="64-bit down 128-byte rows, Sw<4,1,4>: 16 distinct 8-byte chunks a half-warp"))
        for ld in (4, 8, 32, 36):
            out.append(Case(f"{op}128_rows_ld{ld}", "universal", op, v4, "f32", smem=_row(32, 8, max(ld, 8)) if ld != 4
                            else _row(32, 4, 4),
                            note=f"128-bit, thread t row t, rows {max(ld, 4)} words apart (quarter-warp phases)"))
        out.append(Case(f"{op}128_rows_swizzled", "universal", op, v4, "f32", smem=_sw(3, 2, 3, _row(32, 32)),
                        note="128-bit down 128-byte rows, Sw<3,2,3>: 8 distinct chunks a quarter-warp"))
    for op in ("lds", "sts"):
        out.append(Case(f"{op}64_broadcast", "universal", op, v2, "f32", smem=Layout((32, 2), (0, 1)),
                        note="64-bit, every thread the same 8 bytes: one address, the warp one phase"))
        out.append(Case(f"{op}128_broadcast", "universal", op, v4, "f32", smem=Layout((32, 8), (0, 1)),
                        note="128-bit, every thread the same 16 bytes: one address, a half-warp a phase"))
    out.append(Case("lds128_halves_uniform", "universal", "lds", v4, "f32", smem=Layout(((16, 2), 4), ((0, 8), 1)),
                    note="128-bit, each half-warp one address (32 bytes apart): a phase each"))
    out.append(Case("lds128_quarters_uniform", "universal", "lds", v4, "f32", smem=Layout(((8, 4), 4), ((0, 4), 1)),
                    note="128-bit, each quarter-warp one address, the four different: a phase a half-warp"))
    out.append(Case("lds64_halves_uniform", "universal", "lds", v2, "f32", smem=Layout(((16, 2), 2), ((0, 2), 1)),
                    note="64-bit, each half-warp one address, the two different: the warp one phase"))
    quarter = _copy("UniversalCopy_128", "f32", _thr((4, 8), (8, 1)), (1, 4))
    out.append(Case("lds128_quarters_same_row", "universal", "lds", quarter, "f32", smem=Layout((4, 32), (0, 1)),
                    note="128-bit, each quarter-warp the same 128 bytes: 4 phases by the rule, 1 ideal"))
    half = _copy("UniversalCopy_64", "f32", _thr((2, 16), (16, 1)), (1, 2))
    out.append(Case("lds64_halves_same_row", "universal", "lds", half, "f32", smem=Layout((2, 32), (0, 1)),
                    note="64-bit, each half-warp the same 128 bytes: 2 phases by the rule, 1 ideal"))
    h16 = _copy("UniversalCopy_16", "f16", _thr((32, 1)), (1, 1))
    for op in ("lds", "sts"):
        for ld, what in ((64, "32-way"), (2, "a word a thread"), (1, "two threads a word")):
            out.append(Case(f"{op}16_col_ld{ld}", "universal", op, h16, "f16", smem=Layout((32, 4), (ld, 4)),
                            note=f"16-bit down a column, rows {ld} halves apart: {what}"))
    b8 = _copy("UniversalCopy_8", "u8", _thr((32, 1)), (1, 1))
    for ld in (1, 4, 32, 128):
        out.append(Case(f"lds8_col_ld{ld}", "universal", "lds", b8, "u8", smem=Layout((32, 4), (ld, 2)),
                        note=f"8-bit down a column, rows {ld} bytes apart"))
    out.append(Case("sts8_col_ld4", "universal", "sts", b8, "u8", smem=Layout((32, 4), (4, 2)),
                    note="8-bit stores, rows 4 bytes apart: a word a thread"))
    wide = _copy("UniversalCopy_32", "f32", _thr((128, 1)), (1, 1))
    out.append(Case("lds32_4warps_mmajor", "universal", "lds", wide, "f32", smem=_col(128, 4),
                    note="four warps down M-major columns: conflict-free"))
    out.append(Case("lds32_4warps_rows16", "universal", "lds", wide, "f32", smem=Layout((128, 4), (4, 2)),
                    note="four warps, rows of 16 bytes: 4-way in each warp"))
    hw = _copy("UniversalCopy_32", "f32", _thr((16, 1)), (1, 1))
    out.append(Case("lds32_halfwarp_ld32", "universal", "lds", hw, "f32", smem=Layout((16, 4), (32, 2)),
                    note="16 threads (half a warp), rows 128 bytes apart: 16-way"))
    # the compiler's vectorizer (layoutalg.cost.access.vectorize_calls): the PTX check tells
    out.append(Case("sts32_rows_vec4", "universal", "sts", col32, "f32", smem=_row(32, 4),
                    note="32-bit copy, a thread's 4 adjacent words: one st.shared.v4"))
    out.append(Case("lds32_run3", "universal", "lds", col32, "f32", smem=Layout((32, 3), (8, 1)),
                    note="32-bit copy, 3 adjacent words from a 32-byte boundary: a v2 and a scalar"))
    out.append(Case("lds32_pairs_rows5", "universal", "lds", col32, "f32", smem=Layout((32, 2), (5, 1)),
                    note="32-bit copy, adjacent pairs at 20t bytes: not 8-byte aligned in every thread, 2 scalars"))
    return out


def matrix_cases():
    """ldmatrix and stmatrix, through make_tiled_copy_A/B of the f16 m16n8k16 MMA (one warp)."""
    mma = make_tiled_mma(F16_MMA)
    sw_k = _sw(3, 3, 3, _row(16, 64))                    # (16,64): K-major 128-byte rows, Sw<3,3,3>
    mn_atom = _sw(3, 3, 3, _col(64, 8))                  # (64,8): M-major 128-byte columns, Sw<3,3,3>
    out = []
    for ld_st in ("ldsm", "stsm"):
        p, w = ("SM75", "LDSM") if ld_st == "ldsm" else ("SM90", "STSM")
        for num, operand, k_layouts in (
                (4, "A", (("plain128", _row(16, 64), "8-way: 8 rows of a matrix 128 bytes apart"),
                          ("swizzled", sw_k, "Sw<3,3,3>: conflict-free"),
                          ("plain32", _row(16, 16), "2-way: rows 32 bytes apart"),
                          ("padded", _row(16, 64, 72), "rows 144 bytes apart: conflict-free"))),
                (2, "B", (("plain128", _row(8, 64), "8-way"), ("swizzled", _sw(3, 3, 3, _row(8, 64)), "conflict-free"))),
                (1, "A", (("plain128", _row(16, 64), "8-way"), ("swizzled", sw_k, "conflict-free")))):
            maker = make_tiled_copy_A if operand == "A" else make_tiled_copy_B
            cp = maker(CopyAtom(f"{p}_U32x{num}_{w}_N", "f16"), mma)
            for tag, lay, what in k_layouts:
                out.append(Case(f"{ld_st}_x{num}_{tag}", "ldmatrix" if ld_st == "ldsm" else "stmatrix", ld_st, cp,
                                "f16", smem=lay, mma=mma, operand=operand,
                                note=f"x{num}, {operand} K-major: {what}"))
        for num, operand in ((4, "A"), (2, "B"), (1, "A")):
            maker = make_tiled_copy_A if operand == "A" else make_tiled_copy_B
            cp = maker(CopyAtom(f"{p}_U16x{2 * num}_{w}_T", "f16"), mma)
            rows = 16 if operand == "A" else 8
            for tag, lay, what in (("plain128", _col(rows, 32, 64), "M-major columns 128 bytes apart: 8-way"),
                                   ("swizzled", tile_to_shape(mn_atom, (64, 32)), "Sw<3,3,3> MN-major: conflict-free")):
                if num != 4 and tag == "swizzled" and ld_st == "stsm":
                    continue
                out.append(Case(f"{ld_st}_x{num}_trans_{tag}", "ldmatrix" if ld_st == "ldsm" else "stmatrix", ld_st,
                                cp, "f16", smem=lay, mma=mma, operand=operand,
                                note=f"x{num}.trans, {operand} MN-major: {what}"))
    return out


def cp_async_cases():
    out = []
    g = Layout((32, 64), (4096, 1))
    rows16 = _copy("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16", _thr((32, 1)), (1, 8))
    out.append(Case("ldgsts16_rows_plain", "cp.async", "ldgsts", rows16, "f16", smem=_row(32, 64), gmem=g,
                    note="16 bytes a thread, thread t row t of 128-byte rows: 8-way; global 16 of 32 bytes a sector"))
    out.append(Case("ldgsts16_rows_swizzled", "cp.async", "ldgsts", rows16, "f16", smem=_sw(3, 3, 3, _row(32, 64)),
                    gmem=g, note="the same, Sw<3,3,3>: conflict-free"))
    tile16 = _copy("SM80_CP_ASYNC_CACHEALWAYS_128", "f16", _thr((4, 8), (8, 1)), (1, 8))
    out.append(Case("ldgsts16_ca_coalesced", "cp.async", "ldgsts", tile16, "f16", smem=_row(32, 64), gmem=g,
                    note="cp.async.ca 16 bytes, 8 threads a 128-byte row: coalesced, conflict-free"))
    c4 = _copy("SM80_CP_ASYNC_CACHEALWAYS_32", "f32", _thr((32, 1)), (1, 1))
    g32 = Layout((32, 32), (4096, 1))
    out.append(Case("ldgsts4_col_plain", "cp.async", "ldgsts", c4, "f32", smem=_row(32, 32), gmem=g32,
                    note="4 bytes a thread down a column of 128-byte rows: 32-way"))
    out.append(Case("ldgsts4_col_swizzled", "cp.async", "ldgsts", c4, "f32", smem=_sw(5, 0, 5, _row(32, 32)), gmem=g32,
                    note="the same, Sw<5,0,5>: conflict-free"))
    c8 = _copy("SM80_CP_ASYNC_CACHEALWAYS_64", "f32", _thr((32, 1)), (1, 2))
    out.append(Case("ldgsts8_rows_plain", "cp.async", "ldgsts", c8, "f32", smem=_row(32, 32), gmem=g32,
                    note="8 bytes a thread, 128-byte rows: 16-way a half-warp"))
    out.append(Case("ldgsts8_rows_swizzled", "cp.async", "ldgsts", c8, "f32", smem=_sw(4, 1, 4, _row(32, 32)), gmem=g32,
                    note="the same, Sw<4,1,4>: conflict-free"))
    c8r = _copy("SM80_CP_ASYNC_CACHEALWAYS_64", "f32", _thr((2, 16), (16, 1)), (1, 2))
    out.append(Case("ldgsts8_coalesced", "cp.async", "ldgsts", c8r, "f32", smem=_row(32, 32), gmem=g32,
                    note="8 bytes a thread along rows: coalesced, conflict-free"))
    # a phase per global line: which lines, and collisions within one
    out.append(Case("ldgsts16_line_into_column", "cp.async", "ldgsts", rows16, "f16",
                    smem=Layout(((8, 4), 8), ((64, 8), 1)), gmem=Layout(((8, 4), 8), ((8, 2048), 1)),
                    note="8 threads a 128-byte global line, written down 8 shared rows 128 bytes apart: 8-way in "
                         "each line"))
    for ways, smem in ((4, Layout(((4, 2, 4), 8), ((64, 8, 16), 1))), (2, Layout(((2, 4, (2, 2)), 8), ((64, 8, (32, 128)), 1)))):
        out.append(Case(f"ldgsts16_line_into_{ways}rows", "cp.async", "ldgsts", rows16, "f16", smem=smem,
                        gmem=Layout(((8, 4), 8), ((8, 2048), 1)),
                        note=f"8 threads a 128-byte global line, written to {ways} shared rows 128 bytes apart: "
                             f"{ways}-way in each line (the global sectors of a line written in several wavefronts)"))
    out.append(Case("ldgsts16_line_into_2rows_no_conflict", "cp.async", "ldgsts", rows16, "f16",
                    smem=Layout(((4, 2, 4), 8), ((8, 96, 128), 1)), gmem=Layout(((8, 4), 8), ((8, 2048), 1)),
                    note="8 threads a 128-byte global line, written to 2 shared rows without a bank conflict "
                         "(the first half of the banks in one row, the second in the next)"))
    rows16ca = _copy("SM80_CP_ASYNC_CACHEALWAYS_128", "f16", _thr((32, 1)), (1, 8))
    across_s = Layout(((4, (2, 4)), 8), ((64, (256, 8)), 1))      # thread t: shared row t % 8, chunk t // 8
    across_g = Layout(((4, (2, 4)), 8), ((2048, (8, 16)), 1))     # thread t: global line t % 4, chunk t // 4
    for name, cp in (("ldgsts16_lines_across_quarters", rows16), ("ldgsts16_ca_lines_across_quarters", rows16ca)):
        out.append(Case(name, "cp.async", "ldgsts", cp, "f16", smem=across_s, gmem=across_g,
                        note="line t % 4 of the source (threads of every quarter-warp), shared row t % 8: 2-way "
                             "in each line, 8-way in each quarter-warp"))
    return out


def global_cases():
    out = []
    rows = _copy("UniversalCopy_128", "f16", _thr((4, 8), (8, 1)), (1, 8))
    col = _copy("UniversalCopy_32", "f32", _thr((32, 1)), (1, 1))
    row32 = _copy("UniversalCopy_32", "f32", _thr((1, 32)), (1, 1))
    v2 = _copy("UniversalCopy_64", "f32", _thr((32, 1)), (1, 2))
    v4 = _copy("UniversalCopy_128", "f32", _thr((32, 1)), (1, 4))
    h16 = _copy("UniversalCopy_16", "f16", _thr((1, 32)), (1, 1))
    b8 = _copy("UniversalCopy_8", "u8", _thr((1, 32)), (1, 1))
    for op in ("ldg", "stg"):
        out += [
            Case(f"{op}128_rows", "global", op, rows, "f16", gmem=Layout((32, 64), (4096, 1)),
                 note="16 bytes a thread, 8 threads a 128-byte row: 16 sectors a request"),
            Case(f"{op}32_column", "global", op, col, "f32", gmem=Layout((32, 4), (4096, 1)),
                 note="a warp down a column: a sector a thread"),
            Case(f"{op}32_row", "global", op, row32, "f32", gmem=Layout((4, 32), (4096, 1)),
                 note="a warp along a row: 4 sectors a request"),
            Case(f"{op}64_rows", "global", op, v2, "f32", gmem=Layout((32, 4), (2, 1)),
                 note="8 bytes a thread, contiguous: 8 sectors a request"),
            Case(f"{op}128_rows_ld12", "global", op, v4, "f32", gmem=Layout((32, 4), (12, 1)),
                 note="16 bytes a thread, rows 48 bytes apart: some sectors shared"),
            Case(f"{op}16_row", "global", op, h16, "f16", gmem=Layout((4, 32), (4096, 1)),
                 note="2 bytes a thread along a row: 2 sectors a request"),
        ]
    out.append(Case("ldg8_row", "global", "ldg", b8, "u8", gmem=Layout((4, 32), (4096, 1)),
                    note="a byte a thread along a row: 1 sector a request"))
    out.append(Case("ldg32_broadcast", "global", "ldg", col, "f32", gmem=Layout((32, 4), (0, 1)),
                    note="every thread the same word: 1 sector a request"))
    return out


def gemm_sm80_cases():
    """The copies of the generated mma.sync GEMM's default plans (codegen.plan.make_plan)."""
    from codegen import GemmConfig, make_plan

    out = []
    for dtype, a_major, b_major in (("f16", "K", "MN"), ("f16", "K", "K"), ("tf32", "K", "MN"), ("f64", "K", "MN")):
        plan = make_plan(GemmConfig.default(dtype), a_major, b_major)
        mma = plan.mma.tiled_mma
        for opnd in plan.operands:
            tag = f"gemm80_{dtype}_{a_major}{b_major}_{opnd.name}"
            g2s = opnd.g2s
            rows, bk = opnd.rows, plan.config.bk
            gl = Layout((rows, bk), (4096, 1)) if opnd.major == "K" else Layout((rows, bk), (1, 4096))
            ct = "f32" if dtype == "tf32" else dtype
            if g2s.kind.value == "cp.async" and not (dtype == "f16" and a_major + b_major == "KK" and opnd.name == "A"):
                out.append(Case(f"{tag}_g2s", "gemm sm80", "ldgsts", g2s.tiled_copy, ct, smem=opnd.smem, gmem=gl,
                                note=f"{dtype} {opnd.name} {opnd.major}-major: cp.async into {opnd.smem}"))
            s2r = opnd.s2r
            op = "ldsm" if s2r.kind.value == "ldmatrix" else "lds"
            out.append(Case(f"{tag}_s2r", "gemm sm80", op, s2r.tiled_copy, dtype if dtype != "tf32" else "tf32",
                            smem=opnd.smem, mma=mma, operand=opnd.name,
                            note=f"{dtype} {opnd.name} {opnd.major}-major: {s2r.atom.name} from {opnd.smem}"))
    return out


def gemm_sm90_cases():
    """The Hopper plan's epilogue: each consumer's C slice staged in shared memory (st.shared.b32 of
    register pairs, the accumulator layout CLayout_64xN) before the TMA store."""
    from codegen import GemmConfig
    from codegen.sm90.plan import make_wgmma_plan
    from mma_atoms.mma_sm90 import clayout_64xn

    plan = make_wgmma_plan(GemmConfig.default("f16", arch=(9, 0)), "K", "MN")
    st = plan.store
    bn = plan.config.bn
    cp = make_tiled_copy_impl(CopyAtom("UniversalCopy_32", plan.out.name), clayout_64xn(bn), (64, bn))
    return [
        Case("gemm90_f16_c_staging", "gemm sm90", "sts", cp, plan.out.name, smem=st.smem,
             note=f"f16 epilogue: 128 threads store register pairs into {st.smem}"),
        Case("gemm90_f16_c_staging_plain", "gemm sm90", "sts", cp, plan.out.name, smem=_row(64, bn),
             note="the same stores into plain rows (what the swizzle avoids)"),
    ]


def _load_example(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bank_example_{name}", os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tutorial_cases():
    """The copies of the tutorial kernels in examples/."""
    out = []
    t1 = _load_example("tf32_mma")
    out += [
        Case("tut_tf32_mma_g2r_A", "tutorial", "ldg", t1.COPY_A, "f32", gmem=_row(t1.BM, t1.BK, t1.K),
             note="tf32_mma.py: A tile, 4 values a thread"),
        Case("tut_tf32_mma_r2s_A", "tutorial", "sts", t1.COPY_A, "f32", smem=t1.SA, note="tf32_mma.py: into sA"),
        Case("tut_tf32_mma_r2s_B", "tutorial", "sts", t1.COPY_B, "f32", smem=t1.SB, note="tf32_mma.py: into sB"),
        Case("tut_tf32_mma_s2r_A", "tutorial", "lds", make_tiled_copy_A(CopyAtom("UniversalCopy_32", "tf32"), t1.MMA),
             "tf32", smem=t1.SA, mma=t1.MMA, operand="A", note="tf32_mma.py: copy(tCsA, tCrA), element by element"),
        Case("tut_tf32_mma_s2r_B", "tutorial", "lds", make_tiled_copy_B(CopyAtom("UniversalCopy_32", "tf32"), t1.MMA),
             "tf32", smem=t1.SB, mma=t1.MMA, operand="B", note="tf32_mma.py: copy(tCsB, tCrB)"),
    ]
    t2 = _load_example("tf32_ldmatrix")
    out += [
        Case("tut_tf32_ldsm_r2s_A", "tutorial", "sts", t2.G2S_A, "f32", smem=t2.SA, note="tf32_ldmatrix.py: A M-major"),
        Case("tut_tf32_ldsm_r2s_B", "tutorial", "sts", t2.G2S_B, "f32", smem=t2.SB, note="tf32_ldmatrix.py: B K-major"),
        Case("tut_tf32_ldsm_s2r_A", "tutorial", "lds", t2.S2R_A, "tf32", smem=t2.SA, mma=t2.MMA, operand="A",
             note="tf32_ldmatrix.py: 32-bit loads of A's fragments from M-major sA"),
        Case("tut_tf32_ldsm_s2r_B", "tutorial", "ldsm", t2.S2R_B, "tf32", smem=t2.SB, mma=t2.MMA, operand="B",
             note="tf32_ldmatrix.py: ldmatrix.x4 of B"),
    ]
    t3 = _load_example("tf32_double_buffer")
    sa3 = Layout((t3.BM, t3.BK), (t3.BK, 1))
    out += [
        Case("tut_tf32_db_g2s_A", "tutorial", "ldgsts", t3.G2S, "f32", smem=sa3, gmem=_row(t3.BM, t3.BK, t3.K),
             note="tf32_double_buffer.py: cp.async 16 bytes into one stage"),
        Case("tut_tf32_db_s2r_A", "tutorial", "ldsm", t3.S2R_A, "tf32", smem=sa3, mma=t3.MMA, operand="A",
             note="tf32_double_buffer.py: ldmatrix.x4 of A from 64-byte rows"),
    ]
    t4 = _load_example("f16_multistage")
    sa4 = tile_to_shape(t4.SW_ATOM, (t4.BM, t4.BK))
    sb4 = tile_to_shape(t4.SW_ATOM, (t4.BN, t4.BK))
    out += [
        Case("tut_f16_g2s_A", "tutorial", "ldgsts", t4.G2S, "f16", smem=sa4, gmem=_row(t4.BM, t4.BK, 4096),
             note="f16_multistage.py: cp.async into a Sw<3,3,3> stage"),
        Case("tut_f16_s2r_A", "tutorial", "ldsm", t4.S2R_A, "f16", smem=sa4, mma=t4.MMA, operand="A",
             note="f16_multistage.py: ldmatrix.x4 of A"),
        Case("tut_f16_s2r_B", "tutorial", "ldsm", t4.S2R_B, "f16", smem=sb4, mma=t4.MMA, operand="B",
             note="f16_multistage.py: ldmatrix.x4 of B"),
        Case("tut_f16_r2g_C", "tutorial", "stg", t4.R2G_C, "f16", gmem=_row(t4.BM, t4.BN, 4096),
             note="f16_multistage.py: 32-bit stores of f16 pairs of C"),
    ]
    t5 = _load_example("transpose")
    out += [
        Case("tut_transpose_g2r", "tutorial", "ldg", t5.COPY_IN, "f32", gmem=_row(32, 32, 96),
             note="transpose.py: 128-bit loads along rows of `in`"),
        Case("tut_transpose_r2s", "tutorial", "sts", t5.COPY_IN_S, "f32", smem=t5.ST,
             note="transpose.py: 32-bit stores into the Sw<3,2,5> tile"),
        Case("tut_transpose_r2s_plain", "tutorial", "sts", t5.COPY_IN_S, "f32", smem=_col(32, 32),
             note="transpose.py without its swizzle: 8-way"),
        Case("tut_transpose_s2r", "tutorial", "lds", t5.COPY_OUT, "f32", smem=t5.ST,
             note="transpose.py: 128-bit loads down the columns"),
        Case("tut_transpose_r2g", "tutorial", "stg", t5.COPY_OUT, "f32", gmem=_col(32, 32, 64),
             note="transpose.py: 128-bit stores along rows of `out`"),
    ]
    t6 = _load_example("identity_predicate")
    out.append(Case("tut_axpby_g2r", "tutorial", "ldg", _copy("UniversalCopy_32", "f32", t6.THR, (1, 1)), "f32",
                    gmem=_row(32, 32, t6.N), note="identity_predicate.py: local_partition by (8,8) threads, rows 280 bytes"))
    return out


def all_cases():
    cases = (universal_cases() + matrix_cases() + cp_async_cases() + global_cases() + gemm_sm80_cases()
             + gemm_sm90_cases() + tutorial_cases())
    names = set()
    for i, c in enumerate(cases):
        if c.name in names:
            raise ValueError(f"bank_conflicts: two cases named {c.name}")
        names.add(c.name)
        c.index = i
        c.pred = predict(c)
    return cases


# ---------------------------------------------------------------------------------------------
# predictions
# ---------------------------------------------------------------------------------------------

SHARED_SIDE = {"lds": "S", "ldsm": "S", "sts": "D", "stsm": "D", "ldgsts": "D"}
GLOBAL_SIDE = {"ldg": "S", "stg": "D", "ldgsts": "S"}


def predict(c):
    """The analysis of the case: totals over the warps."""
    p = {"threads": c.threads}
    if c.op in SHARED_SIDE:
        src = c.gmem if c.op == "ldgsts" else None                 # cp.async writes by its source's lines
        a = analyze_shared(c.copy, c.smem, SHARED_SIDE[c.op], gmem=src)
        p.update(inst=a.total_instructions, wavefronts=a.total_wavefronts, ideal=a.total_ideal, ways=a.ways,
                 per_thread=a.access.instructions, width=a.width, summary=a.summary())
        p["models"] = alt_models(a)
    if c.op in GLOBAL_SIDE:
        g = analyze_global(c.copy, c.gmem, GLOBAL_SIDE[c.op])
        p.update(requests=g.total_requests, sectors=g.total_sectors, ideal_sectors=g.total_ideal,
                 per_thread=g.access.instructions, gwidth=g.width, gsummary=g.summary())
        p.setdefault("inst", g.total_requests)
    return p


def alt_models(a):
    """Wavefronts under other rules than the analysis' (to see which one a differing count
    follows): ``documented``, the programming guide's phases (lanes by width; a cp.async as a
    store of its width; no merged phases for one address); ``one_phase``, the whole warp as
    one phase whatever the width; ``ideal``."""
    acc = a.access
    lane = np.arange(acc.addr.shape[0])[:, None] % 32 + 0 * acc.addr
    per = np.array([phase_threads(acc.kind, int(w)) for w in acc.widths])
    documented, _, _ = shared_costs(acc.addr, acc.widths, lane // per[None, :])
    whole, _, _ = shared_costs(acc.addr, acc.widths, 0 * acc.addr)
    return {"documented": int(documented.sum()), "one_phase": int(whole.sum()), "ideal": a.total_ideal}


# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------

_HEAD = "def {name}(out, g, flag):\n    tid = cuda.threadIdx.x\n"
_BODIES = {
    "lds": """\
    s = cute.make_shared_tensor(DT, SMEM)
    thr = COPY.get_slice(tid)
    tS = thr.partition_S(s)
    tR = cute.make_fragment_like(tS)
    if flag != 0:
        s[flag] = tR[0]
    cute.copy(COPY, tS, tR)
    acc = float32(0)
    for i in range(cute.size(tR)):
        acc += float32(tR[i])
    out[tid] = acc
""",
    "lds_mma": """\
    s = cute.make_shared_tensor(DT, SMEM)
    thr_mma = MMA.get_slice(tid)
    frag = thr_mma.partition_fragment_{opnd}(s)
    thr = COPY.get_slice(tid)
    tS = thr.partition_S(s)
    tR = thr.retile_D(frag)
    if flag != 0:
        s[flag] = frag[0]
    cute.copy(COPY, tS, tR)
    acc = float32(0)
    for i in range(cute.size(frag)):
        acc += float32(frag[i])
    out[tid] = acc
""",
    "sts": """\
    s = cute.make_shared_tensor(DT, SMEM)
    thr = COPY.get_slice(tid)
    tD = thr.partition_D(s)
    tR = cute.make_fragment_like(tD)
    cute.clear(tR)
    cute.copy(COPY, tR, tD)
    if flag == 2:
        out[tid] = float32(s[tid])
""",
    "ldg": """\
    gt = cute.make_tensor(g, GMEM)
    thr = COPY.get_slice(tid)
    tG = thr.partition_S(gt)
    tR = cute.make_fragment_like(tG)
    cute.copy(COPY, tG, tR)
    acc = float32(0)
    for i in range(cute.size(tR)):
        acc += float32(tR[i])
    out[tid] = acc
""",
    "stg": """\
    gt = cute.make_tensor(g, GMEM)
    thr = COPY.get_slice(tid)
    tD = thr.partition_D(gt)
    tR = cute.make_fragment_like(tD)
    cute.clear(tR)
    cute.copy(COPY, tR, tD)
""",
    "ldgsts": """\
    s = cute.make_shared_tensor(DT, SMEM)
    gt = cute.make_tensor(g, GMEM)
    thr = COPY.get_slice(tid)
    tS = thr.partition_S(gt)
    tD = thr.partition_D(s)
    cute.copy(COPY, tS, tD)
    cute.cp_async_fence()
    cute.cp_async_wait(0)
    if flag == 2:
        out[tid] = float32(s[tid])
""",
}


def kernel_source(c):
    """The Python source of the case's kernel, named ``bankcase_<index>``."""
    name = f"{KERNEL_PREFIX}{c.index:03d}"
    if c.op == "stsm":
        return name, _stsm_source(c, name)
    key = c.op
    if c.op == "ldsm" or (c.op == "lds" and c.mma is not None):
        key = "lds_mma"
    body = _BODIES[key].replace("{opnd}", c.operand or "A")
    return name, _HEAD.format(name=name) + body


def _stsm_source(c, name):
    """stmatrix: each instruction's row address is the copy's ``tidfrg_D`` layout of the shared
    layout, evaluated in the kernel at (tid, value, rest) of the instruction's first value."""
    part = c.copy.tidfrg_D(c.smem)
    nv, nrest = size(part[1]), size(part[2])
    per = size(c.copy.atom.dst_layout[1])
    num, trans = c.copy.atom.op.num_matrices, c.copy.atom.op.transpose
    fn = f"stmatrix_x{num}{'_trans' if trans else ''}"
    regs = ", ".join(["r"] * num)
    nbytes = cosize(c.smem.inner if hasattr(c.smem, "inner") else c.smem) * 2
    lines = [_HEAD.format(name=name).rstrip("\n"),
             f"    sm = cuda.shared.array({max(nbytes, 16)}, np.uint8)",
             "    base = smem_addr(sm, 0)",
             "    r = uint32(tid)"]
    for gidx in range(nv * nrest // per):
        i = gidx * per
        lines.append(f"    {fn}(base + PART(tid, {i % nv}, {i // nv}) * 2, {regs})")
    lines += ["    if flag == 2:", "        out[tid] = sm[tid]"]
    return "\n".join(lines) + "\n"


def build_kernel(c, jit=True):
    """The case's kernel: a numba.cuda kernel (``jit``) or the plain Python function."""
    from numba import cuda, float32, uint32

    from codegen import cute
    cute.activate()                  # numba learns codegen.cute's types first (cuda.compile_ptx runs no entry points)
    from codegen.intrinsics import smem_addr
    import codegen.intrinsics as intr

    name, src = kernel_source(c)
    ns = {"cuda": cuda, "cute": cute, "np": np, "float32": float32, "uint32": uint32, "smem_addr": smem_addr,
          "COPY": c.copy, "SMEM": c.smem, "GMEM": c.gmem, "MMA": c.mma, "DT": NP_TYPES[c.dtype]}
    if c.op == "stsm":
        ns["PART"] = c.copy.tidfrg_D(c.smem)
        for k in ("stmatrix_x1", "stmatrix_x2", "stmatrix_x4", "stmatrix_x1_trans", "stmatrix_x2_trans",
                  "stmatrix_x4_trans"):
            ns[k] = getattr(intr, k)
    exec(compile(src, f"<{name} {c.name}>", "exec"), ns)
    fn = ns[name]
    return cuda.jit(fn) if jit else fn


def signature(c):
    from numba.cuda import types as nt
    from numba.cuda.np import numpy_support

    dt = numpy_support.from_dtype(np.dtype(NP_TYPES[c.dtype]))
    return (nt.float32[::1], dt[::1], nt.int32)


def gmem_elements(c):
    return cosize(c.gmem) if c.gmem is not None else 1


# PTX: per-thread static counts of the instructions each op issues
_PTX_PATTERNS = {
    "lds": r"^\s*ld\.shared(\.v\d)?\.\w+",
    "sts": r"^\s*st\.shared(\.v\d)?\.\w+",
    "ldsm": r"^\s*ldmatrix\.sync",
    "stsm": r"^\s*stmatrix\.sync",
    "ldgsts": r"^\s*cp\.async\.c[ag]\.shared\.global",
    "ldg": r"^\s*ld\.global(\.nc)?(\.v\d)?\.\w+",
    "stg": r"^\s*st\.global(\.v\d)?\.\w+",
}


def ptx_counts(ptx):
    return {op: len(re.findall(p, ptx, re.M)) for op, p in _PTX_PATTERNS.items()}


def ptx_expected(c):
    """{op: count} the case's PTX must have: the copy's instructions, and what the kernel adds
    (the never-taken branches, the ``out`` store of the loads' sum)."""
    n = c.pred["per_thread"]
    want = {c.op: n}
    extra = {"lds": {"sts": 1, "stg": 1}, "ldsm": {"sts": 1, "stg": 1}, "sts": {"lds": 1, "stg": 1},
             "stsm": {}, "ldg": {"stg": 1}, "stg": {}, "ldgsts": {"lds": 1, "stg": 1}}[c.op]
    if c.op == "stsm":
        extra = {"lds": 1, "stg": 1}                    # the never-taken read-back of a byte, and its store
    for k, v in extra.items():
        want[k] = want.get(k, 0) + v
    return {op: want.get(op, 0) for op in _PTX_PATTERNS}


_SASS_OPS = {"lds": "LDS", "sts": "STS", "ldsm": "LDSM", "stsm": "STSM", "ldgsts": "LDGSTS", "ldg": "LDG", "stg": "STG"}


def _disassembler():
    import shutil

    for tool in ("nvdisasm", "cuobjdump"):
        path = shutil.which(tool)
        for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if path is None and d and os.path.exists(os.path.join(d, "bin", tool)):
                path = os.path.join(d, "bin", tool)
        if path:
            return tool, path
    return None, None


def sass_counts(ptx):
    """Static counts of the SASS memory instructions (``ptxas`` for sm_90a, then ``nvdisasm``
    or ``cuobjdump``), by op; None where the tools are missing or their output is not read."""
    import tempfile

    from codegen.driver import ptxas_cubin

    tool, path = _disassembler()
    if tool is None:
        return None
    cubin, _ = ptxas_cubin(ptx, "sm_90a")
    if cubin is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "k.cubin")
        with open(f, "wb") as fh:
            fh.write(cubin)
        r = subprocess.run([path, "-c", f] if tool == "nvdisasm" else [path, "-sass", f], capture_output=True,
                           text=True, timeout=120)
    return sass_ops(r.stdout)


def sass_ops(text):
    """{op: count} of the memory instructions in a disassembly (``/*0080*/  @!P0 LDS.128 ...``
    lines), or None when it has no instruction lines. Instructions under ``@!PT`` (never
    true) are left out: ptxas puts three ``@!PT LDS RZ, [RZ]`` before a kernel's first
    ``LDGSTS``; they move nothing (the counters count them as executed shared-load
    instructions, 3 a warp, which no case compares)."""
    ops = re.findall(r"^\s*/\*[0-9a-f]+\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)", text, re.M)
    if not ops:
        return None
    ops = [op for pred, op in ops if pred.strip() != "@!PT"]
    return {op: ops.count(name) for op, name in _SASS_OPS.items()}


def compile_case(index):
    """Worker: compile case ``index`` to sm_90a PTX (and SASS where ptxas and a disassembler
    are at hand) and count its memory instructions; returns a JSON-able record."""
    t0 = time.time()
    try:
        from numba import cuda

        c = all_cases()[index]
        fn = build_kernel(c, jit=False)
        ptx, _ = cuda.compile_ptx(fn, signature(c), cc=(9, 0))
        got = ptx_counts(ptx)
        want = ptx_expected(c)
        bad = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        rec = {"index": index, "ok": not bad, "ptx": got, "ptx_expected": want,
               "error": f"PTX counts (got, expected): {bad}" if bad else "", "seconds": round(time.time() - t0, 2)}
        try:
            sass = sass_counts(ptx)
        except Exception as e:  # noqa: BLE001
            sass, rec["sass_error"] = None, f"{type(e).__name__}: {e}"[:300]
        if sass is not None:
            rec["sass"] = sass
            sbad = {k: (sass[k], want[k]) for k in want if sass[k] != want[k]}
            if sbad:
                rec["sass_note"] = f"SASS counts (got, expected): {sbad}"
        rec["compiled"] = True
        return rec
    except Exception as e:  # noqa: BLE001  (one case's failure is reported, the others go on)
        return {"index": index, "ok": False, "error": f"{type(e).__name__}: {e}"[:2000],
                "seconds": round(time.time() - t0, 2)}


# ---------------------------------------------------------------------------------------------
# launching (under ncu, or in the simulator)
# ---------------------------------------------------------------------------------------------

def launch(indices, progress, sim=False):
    """Launch each case once, in order; append ``start i`` / ``done i`` / ``fail i msg`` lines
    to ``progress``. A failure that leaves the context unusable ends the process."""
    from numba import cuda

    cases = all_cases()
    if sim:
        sys.setswitchinterval(1e-4)
    out_h = np.zeros(1024, np.float32)
    garrays = {}
    with open(progress, "a", encoding="utf-8") as log:
        for i in indices:
            c = cases[i]
            log.write(f"start {i}\n")
            log.flush()
            try:
                k = build_kernel(c)
                dt = np.dtype(NP_TYPES[c.dtype])
                n = max(gmem_elements(c), 1024)
                if sim:
                    g = np.zeros(n, dt)
                    out = out_h
                else:
                    key = (dt.str, n)
                    if key not in garrays:
                        garrays[key] = cuda.to_device(np.zeros(n, dt))
                    g = garrays[key]
                    if "out" not in garrays:
                        garrays["out"] = cuda.to_device(out_h)
                    out = garrays["out"]
                k[1, c.threads](out, g, np.int32(0))
                if not sim:
                    cuda.synchronize()
                log.write(f"done {i}\n")
            except Exception as e:  # noqa: BLE001
                msg = f"{type(e).__name__}: {e}".replace("\n", " ")[:500]
                log.write(f"fail {i} {msg}\n")
                log.flush()
                if not sim and _context_broken(e):
                    sys.exit(3)
            log.flush()


def _context_broken(e):
    text = str(e)
    return any(w in text for w in ("CUDA_ERROR_ILLEGAL", "CUDA_ERROR_MISALIGNED", "LAUNCH_FAILED", "ILLEGAL_ADDRESS",
                                   "CUDA_ERROR_UNKNOWN", "CUDA_ERROR_ASSERT"))


def read_progress(path):
    done, failed, started = set(), {}, []
    if not os.path.exists(path):
        return done, failed, started
    for line in open(path, encoding="utf-8"):
        parts = line.rstrip("\n").split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            continue
        i = int(parts[1])
        if parts[0] == "start":
            started.append(i)
        elif parts[0] == "done":
            done.add(i)
        elif parts[0] == "fail":
            failed[i] = parts[2] if len(parts) > 2 else ""
    return done, failed, started


# ---------------------------------------------------------------------------------------------
# ncu
# ---------------------------------------------------------------------------------------------

#: quantity -> candidate counters, in order: the first this ncu knows is compared, all it knows
#: are kept. A tuple is a sum of counters, used only when ncu knows each of them.
METRICS = {
    "lds_inst": ["smsp__inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_ld.sum"],
    "sts_inst": ["smsp__inst_executed_op_shared_st.sum", "smsp__sass_inst_executed_op_shared_st.sum"],
    "ldsm_inst": ["smsp__inst_executed_op_ldsm.sum", "smsp__sass_inst_executed_op_ldsm.sum"],
    "stsm_inst": ["smsp__inst_executed_op_stsm.sum", "smsp__sass_inst_executed_op_stsm.sum"],
    "ldgsts_inst": ["smsp__inst_executed_op_ldgsts.sum", "smsp__sass_inst_executed_op_ldgsts.sum"],
    "ldg_inst": ["smsp__inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_ld.sum"],
    "stg_inst": ["smsp__inst_executed_op_global_st.sum", "smsp__sass_inst_executed_op_global_st.sum"],
    "lds_wavefronts": ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                       "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"],
    "sts_wavefronts": ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                       "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum"],
    "ldsm_wavefronts": ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
                        "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
                        "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"],
    "stsm_wavefronts": ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_stsm.sum",
                        "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_stsm.sum",
                        "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_stsm.sum"],
    "ldgsts_wavefronts": ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
                          "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
                          "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"],
    "shared_wavefronts": ["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"],
    "ldg_requests": ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"],
    "stg_requests": ["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"],
    # cp.async's global side: its own counter, or the L1-allocating (.ca) and bypassing (.cg)
    # halves together; the H200's ncu (2026-11) has neither the first nor the .cg half, and
    # counts LDGSTS in the global-load counters (run 1: ldgsts16_rows_plain, .cg, 8 requests
    # and 256 sectors in ..._op_ld, 0 in ..._op_ldgsts_cache_access; ldgsts16_ca_coalesced
    # 8 and 128 in both), which a cp.async kernel otherwise leaves at 0 (no LDG in its PTX)
    "ldgsts_requests": ["l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
                        ("l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
                         "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum")],
    "ldg_sectors": ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"],
    "stg_sectors": ["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"],
    "ldgsts_sectors": ["l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",
                       ("l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
                        "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum")],
    "bank_conflicts": ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"],
    # from the separate run of :func:`run_opcode_counts` (SASS-patched, not in ncu's list)
    "stsm_inst_opcode": ["sass__inst_executed_per_opcode[STSM]",
                         "sass__inst_executed_per_opcode_with_modifier_all[STSM]"],
}
#: quantity -> the names this ncu may give it otherwise: any counter of its list that matches
#: is a further candidate (``ncu --query-metrics`` is saved to ``ncu_query_metrics.txt``)
DISCOVER = {
    "stsm_inst": r"^sm(sp)?__(sass_)?inst_executed_op_\w*stsm$",
    "ldgsts_requests": r"^l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts$",
    "ldgsts_sectors": r"^l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts$",
}
#: the counters of instructions that only :func:`run_opcode_counts` finds, by SASS opcode
OPCODE_METRIC = "sass__inst_executed_per_opcode"
OPCODES = {"stsm": "STSM"}
#: what is surely there when the query fails
CORE_METRICS = [
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
]
#: the quantities compared per op: (name, prediction key, quantities tried in order). The
#: fallbacks: ldmatrix's and stmatrix's wavefronts are in the shared load and store counters
#: (run 1: equal in every case), which their kernels otherwise leave at 0; cp.async's global
#: side is in the global-load counters (above). The total of all shared wavefronts is no
#: fallback: it leaves out cp.async's and holds a few more (run 1: 4 where LDGSTS took 256).
COMPARED = {
    "lds": (("inst", "inst", ["lds_inst"]), ("wavefronts", "wavefronts", ["lds_wavefronts"])),
    "sts": (("inst", "inst", ["sts_inst"]), ("wavefronts", "wavefronts", ["sts_wavefronts"])),
    "ldsm": (("inst", "inst", ["ldsm_inst"]), ("wavefronts", "wavefronts", ["ldsm_wavefronts", "lds_wavefronts"])),
    "stsm": (("inst", "inst", ["stsm_inst", "stsm_inst_opcode"]),
             ("wavefronts", "wavefronts", ["stsm_wavefronts", "sts_wavefronts"])),
    "ldgsts": (("inst", "inst", ["ldgsts_inst"]), ("wavefronts", "wavefronts", ["ldgsts_wavefronts"]),
               ("requests", "requests", ["ldgsts_requests", "ldg_requests"]),
               ("sectors", "sectors", ["ldgsts_sectors", "ldg_sectors"])),
    "ldg": (("requests", "requests", ["ldg_requests"]), ("sectors", "sectors", ["ldg_sectors"])),
    "stg": (("requests", "requests", ["stg_requests"]), ("sectors", "sectors", ["stg_sectors"])),
}


def _parts(cand):
    return cand if isinstance(cand, tuple) else (cand,)


def metric_candidates(known=None):
    """:data:`METRICS` with the counters :data:`DISCOVER` finds in ``known`` (base names)
    added to their quantities."""
    out = {q: list(c) for q, c in METRICS.items()}
    for q, rx in DISCOVER.items():
        for name in sorted(known or ()):
            m = f"{name}.sum"
            if re.match(rx, name) and m not in out[q]:
                out[q].append(m)
    return out


def query_metrics(ncu, log, out=None):
    """The base names of the metrics this ncu knows for the GPU, or None; the listing is
    saved to ``out/ncu_query_metrics.txt``."""
    try:
        r = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except Exception as e:  # noqa: BLE001
        log(f"ncu --query-metrics failed: {e}")
        return None
    if out:
        with open(os.path.join(out, "ncu_query_metrics.txt"), "w", encoding="utf-8") as f:
            f.write(r.stdout + ("\n--- stderr ---\n" + r.stderr if r.stderr else ""))
    names = set(re.findall(r"^([a-z0-9]+__[a-z0-9_]+)", r.stdout, re.M))
    if not names:
        log(f"ncu --query-metrics listed nothing (status {r.returncode}): {r.stdout[-500:]} {r.stderr[-500:]}")
        return None
    return names


def choose_metrics(known):
    """Every candidate counter that ``known`` (base names) has; the core list without a query."""
    if known is None:
        return list(CORE_METRICS)
    out = []
    for cands in metric_candidates(known).values():
        for cand in cands:
            for m in _parts(cand):
                base = m.rsplit(".", 1)[0]
                if base in known and m not in out:
                    out.append(m)
    return out


def parse_ncu_csv(text):
    """{case index: {metric: value}} from ``ncu --csv`` output, raw (one row a kernel, a
    column a metric, a row of units) or details (a row a metric) page."""
    rows = list(csv.reader(io.StringIO(text)))
    head_i = next((i for i, r in enumerate(rows) if "ID" in r and any(h in r for h in ("Kernel Name", "Function Name"))),
                  None)
    if head_i is None:
        return {}
    head = rows[head_i]
    name_col = head.index("Kernel Name") if "Kernel Name" in head else head.index("Function Name")
    out = {}
    long = "Metric Name" in head and "Metric Value" in head
    for r in rows[head_i + 1:]:
        if len(r) < len(head) or not r[0].strip().isdigit():
            continue                                     # the units row, blank lines
        m = re.search(KERNEL_PREFIX + r"(\d+)", r[name_col])
        if not m:
            continue
        rec = out.setdefault(int(m.group(1)), {})
        if long:
            _put(rec, r[head.index("Metric Name")], r[head.index("Metric Value")])
        else:
            for h, v in zip(head, r):
                if "__" in h:
                    _put(rec, h, v)
    return out


def _put(rec, name, text):
    """A counter's value into ``rec``; an instanced one printed with its correlation ids
    (``"7 (STSM: 4; EXIT: 3)"``, or only ``"STSM: 4; EXIT: 3"``) also as ``name[KEY]`` (the
    instances of one opcode summed over its modifiers)."""
    rec[name] = _number(text)
    m = re.fullmatch(r"\s*([\d.,]+)\s*\((.*)\)\s*", text or "")
    if m is not None:
        rec[name], items = _number(m.group(1)), m.group(2)
    elif re.fullmatch(r"\s*[A-Za-z_][\w.]*\s*:\s*[\d.,]+\s*(;\s*[A-Za-z_][\w.]*\s*:\s*[\d.,]+\s*)*;?\s*", text or ""):
        items = text
    else:
        return
    for item in items.split(";"):
        key, sep, val = item.rpartition(":")
        v = _number(val)
        if sep and v is not None:
            k = f"{name}[{key.strip().split('.')[0]}]"
            rec[k] = rec.get(k, 0) + v


def _number(v):
    v = (v or "").strip().replace(",", "")
    try:
        x = float(v)
    except ValueError:
        return None
    return int(x) if x == int(x) else x


def _run_killable(cmd, timeout, **kw):
    """``subprocess.run`` whose timeout kills the whole process group (ncu and its child)."""
    import signal

    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = p.communicate()
        return None, out, err, True


def run_ncu(args, indices, known, log, deadline=None):
    """Profile the cases with ncu: one run for all, another past a case that breaks the
    context (at most 4 runs), one with the core counters if ncu refuses the chosen ones; all
    before ``deadline`` (default: ``--ncu-timeout`` from now).
    Returns ({index: {metric: value}}, {index: failure}, metrics)."""
    metrics = choose_metrics(known)
    measured, failed = {}, {}
    pending = list(indices)
    part = 0
    retried_core = False
    deadline = deadline or time.time() + args.ncu_timeout
    while pending and part < 5:
        left = deadline - time.time()
        if left < 30:
            for i in pending:
                failed[i] = "not profiled: out of time"
            break
        progress = os.path.join(args.out, f"progress_{part}.txt")
        rep = os.path.join(args.out, f"bank_conflicts_{part}")
        if os.path.exists(progress):
            os.remove(progress)
        cmd = [args.ncu, "--metrics", ",".join(metrics), "-k", f"regex:{KERNEL_PREFIX}", "--export", rep,
               "--force-overwrite", sys.executable, os.path.abspath(__file__), "--launch", ",".join(map(str, pending)),
               "--progress", progress]
        log(f"ncu run {part}: {len(pending)} cases, {len(metrics)} counters, {left:.0f} s left")
        status, out, err, timed_out = _run_killable(cmd, left)
        with open(os.path.join(args.out, f"ncu_{part}.log"), "w", encoding="utf-8") as f:
            f.write(" ".join(cmd) + "\n\n" + (out or "") + "\n--- stderr ---\n" + (err or ""))
        log(f"ncu run {part}: " + ("timed out" if timed_out else f"status {status}"))
        done, fails, started = read_progress(progress)
        if not started and not retried_core and metrics != CORE_METRICS:
            log("ncu launched nothing; once more with the core counters (see ncu_0.log)")
            metrics, retried_core = list(CORE_METRICS), True
            part += 1
            continue
        failed.update(fails)
        if os.path.exists(rep + ".ncu-rep"):
            got = import_report(args, rep, str(part))
            measured.update(got)
            log(f"ncu run {part}: counters of {len(got)} kernels")
        else:
            log(f"ncu run {part}: no report {rep}.ncu-rep")
        last = started[-1] if started else None
        if last is not None and last not in done and last not in fails:
            failed[last] = "the launch did not return (context lost, or killed)"
        if last is None:
            break
        after = pending[pending.index(last) + 1:]
        pending = [i for i in after if i not in done and i not in failed]
        part += 1
    for i in pending:
        failed.setdefault(i, "not profiled")
    return measured, failed, metrics


def import_report(args, rep, tag, extra=()):
    """``{case index: {metric: value}}`` of the report ``rep.ncu-rep`` (raw page, then the
    details page), each CSV saved as ``ncu_<page>_<tag>.csv``; ``extra``: import options
    tried first (dropped if this ncu refuses them)."""
    got = {}
    tries = [("raw", list(extra) + ["--print-units", "base"]), ("raw", list(extra)), ("raw", ["--print-units", "base"]),
             ("raw", []), ("details", ["--print-units", "base"]), ("details", [])]
    for page, opts in tries:
        st, text, err, _ = _run_killable([args.ncu, "--import", rep + ".ncu-rep", "--csv", "--page", page] + opts, 300)
        with open(os.path.join(args.out, f"ncu_{page}_{tag}.csv"), "w", encoding="utf-8") as f:
            f.write((text or "") + ("\n--- stderr ---\n" + err if err else ""))
        got = parse_ncu_csv(text or "")
        if got:
            break
    return got


def run_opcode_counts(args, indices, log, deadline):
    """The executed instructions of each SASS opcode (:data:`OPCODE_METRIC`, counted by
    patching the kernel's SASS, the InstructionStats section's chart) for ``indices``: one
    more ncu run, for the ops whose instruction counter this ncu does not have (``stmatrix``
    on the H200's, 2026-11). Its failure costs the other counters nothing. Returns
    ``{index: {"sass__inst_executed_per_opcode[OPCODE]": n, ...}}``."""
    if not indices:
        return {}
    progress = os.path.join(args.out, "progress_opcodes.txt")
    rep = os.path.join(args.out, "bank_conflicts_opcodes")
    got = {}
    for n, how in enumerate((["--section", "InstructionStats"], ["--metrics", OPCODE_METRIC])):
        left = deadline - time.time()
        if left < 30:
            break
        cmd = [args.ncu] + how + ["-k", f"regex:{KERNEL_PREFIX}", "--export", f"{rep}_{n}", "--force-overwrite",
                                  sys.executable, os.path.abspath(__file__), "--launch", ",".join(map(str, indices)),
                                  "--progress", progress]
        log(f"ncu opcode counts ({' '.join(how)}): {len(indices)} cases, {left:.0f} s left")
        status, out, err, timed_out = _run_killable(cmd, left)
        with open(os.path.join(args.out, f"ncu_opcodes_{n}.log"), "w", encoding="utf-8") as f:
            f.write(" ".join(cmd) + "\n\n" + (out or "") + "\n--- stderr ---\n" + (err or ""))
        log("ncu opcode counts: " + ("timed out" if timed_out else f"status {status}"))
        if os.path.exists(f"{rep}_{n}.ncu-rep"):
            got = import_report(args, f"{rep}_{n}", f"opcodes_{n}", ["--print-metric-instances", "details"])
            if any(k.startswith(OPCODE_METRIC + "[") for r in got.values() for k in r):
                break
        else:
            log(f"ncu opcode counts: no report {rep}_{n}.ncu-rep (see ncu_opcodes_{n}.log)")
    keep = {i: {k: v for k, v in rec.items() if k.startswith(OPCODE_METRIC)} for i, rec in got.items()}
    log(f"ncu opcode counts: {sum(any('[' in k for k in r) for r in keep.values())} of {len(indices)} kernels "
        f"with per-opcode counts")
    return keep


# ---------------------------------------------------------------------------------------------
# comparison and output
# ---------------------------------------------------------------------------------------------

def measured_value(rec, quantities, cands=None):
    """The first quantity with a measured counter (a sum where the candidate is one, if every
    part is measured), and the counter names used."""
    cands = cands or METRICS
    for q in quantities:
        for cand in cands.get(q, METRICS.get(q, ())):
            parts = _parts(cand)
            if all(rec.get(m) is not None for m in parts):
                return sum(rec[m] for m in parts), "+".join(parts)
    return None, None


def compare(cases, compiled, measured, failed, cands=None):
    """A row per case: predicted and measured values, exact or not (None: not measured).
    ``cands``: the counters per quantity (:func:`metric_candidates`), default :data:`METRICS`."""
    rows = []
    for c in cases:
        rec = measured.get(c.index)
        row = {"case": c.name, "group": c.group, "op": c.op, "threads": c.threads, "note": c.note,
               "ptx_ok": compiled.get(c.index, {}).get("ok"), "error": compiled.get(c.index, {}).get("error", ""),
               "sass": compiled.get(c.index, {}).get("sass"), "sass_note": compiled.get(c.index, {}).get("sass_note", ""),
               "summary": c.pred.get("summary") or c.pred.get("gsummary", ""), "values": []}
        if c.index in failed:
            row["error"] = (row["error"] + " " + failed[c.index]).strip()
        exact = True if rec is not None else None
        for what, key, quantities in COMPARED[c.op]:
            pred = c.pred.get(key)
            meas, metric = measured_value(rec, quantities, cands) if rec is not None else (None, None)
            row["values"].append({"what": what, "predicted": pred, "measured": meas, "metric": metric})
            if rec is not None and meas != pred:
                exact = False
        if rec is not None and "models" in c.pred:
            meas, _ = measured_value(rec, COMPARED[c.op][1][2], cands)
            row["models_matching"] = [k for k, v in c.pred["models"].items() if v == meas]
            row["models"] = c.pred["models"]
        row["exact"] = exact
        row["counters"] = rec or {}
        rows.append(row)
    return rows


def markdown_table(rows):
    lines = ["| case | op | thr | predicted | measured | exact | note |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        pred = ", ".join(f"{v['what']} {v['predicted']}" for v in r["values"])
        meas = ", ".join(f"{v['what']} {v['measured'] if v['measured'] is not None else '-'}" for v in r["values"])
        ok = {True: "yes", False: "**no**", None: "-"}[r["exact"]]
        note = r["note"] + (f" ({r['error']})" if r["error"] else "") + (f" ({r['sass_note']})" if r.get("sass_note") else "")
        if r["exact"] is False and r.get("models_matching"):
            note += f"; matches: {', '.join(r['models_matching'])}"
        lines.append(f"| {r['case']} | {r['op']} | {r['threads']} | {pred} | {meas} | {ok} | {note} |")
    return "\n".join(lines)


def _yes(x):
    return {True: "yes", False: "**no**", None: "-"}[x]


def _driver_text(t):
    if "driver_accepts" not in t:
        return "-"
    return "accepts" if t["driver_accepts"] else f"refuses ({t.get('driver_message', '')[:80]})"


def write_outputs(out, rows, meta):
    os.makedirs(out, exist_ok=True)
    n_exact = sum(r["exact"] is True for r in rows)
    n_meas = sum(r["exact"] is not None for r in rows)
    head = (f"# Bank conflicts and coalescing: predicted (layoutalg.cost) and measured (ncu)\n\n"
            f"{meta.get('device', '?')}, {meta.get('date', '')}; {len(rows)} cases, {n_meas} measured, "
            f"{n_exact} exact.\n\n" + (f"Recompared {meta['recompared']}.\n\n" if meta.get("recompared") else ""))
    tma = meta.get("tma") or []
    tail = ""
    if tma:
        tail = ("\n## TMA boxes: `check_tma` against the driver's `cuTensorMapEncodeTiled`\n\n"
                "| box | predicted | driver | exact |\n|---|---|---|---|\n"
                + "\n".join(f"| {t['case']} | {'legal' if t['predicted'] else 'illegal (' + str(t['rule']) + ')'} | "
                            f"{_driver_text(t)} | {_yes(t.get('exact'))} |" for t in tma) + "\n")
    with open(os.path.join(out, "bank_conflicts.md"), "w", encoding="utf-8") as f:
        f.write(head + markdown_table(rows) + "\n" + tail)
    with open(os.path.join(out, "bank_conflicts.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1, default=str)
    with open(os.path.join(out, "bank_conflicts.csv"), "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "group", "op", "threads", "quantity", "predicted", "measured", "metric", "exact", "note",
                    "error"])
        for r in rows:
            for v in r["values"]:
                w.writerow([r["case"], r["group"], r["op"], r["threads"], v["what"], v["predicted"], v["measured"],
                            v["metric"], r["exact"], r["note"], r["error"]])
    return n_meas, n_exact


def synthetic_csv(cases, metrics, skew=None):
    """An ``ncu --csv --page raw`` text whose counters are the predictions (dry runs): every
    counter of each compared quantity (a sum's first part; its other parts 0), and
    :data:`OPCODE_METRIC` as ncu prints an instanced metric with its correlation ids."""
    head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC"] + metrics
    units = [""] * 11 + ["" for _ in metrics]
    lines = [head, units]
    for n, c in enumerate(cases):
        vals = {}
        for what, key, quantities in COMPARED[c.op]:
            for q in quantities:
                for cand in METRICS[q]:
                    parts = _parts(cand)
                    vals.setdefault(parts[0], c.pred.get(key))
                    for m in parts[1:]:
                        vals.setdefault(m, 0)
        if "wavefronts" in c.pred:
            vals["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] = c.pred["wavefronts"]
        if c.op in OPCODES and c.pred.get("inst") is not None:
            n_inst = c.pred["inst"]
            vals[OPCODE_METRIC] = f"{n_inst + 2} ({OPCODES[c.op]}: {n_inst}; EXIT: 2)"
        row = [str(n), "1", "python3", "localhost", f"_ZN8__main__12{KERNEL_PREFIX}{c.index:03d}B2v3", "1", "7",
               f"({c.threads}, 1, 1)", "(1, 1, 1)", "0", "9.0"]
        row += ["" if vals.get(m) is None else vals[m] if isinstance(vals[m], str) else f"{vals[m]:,}" for m in metrics]
        lines.append(row)
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL).writerows(lines)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# TMA boxes: the analysis against the driver's cuTensorMapEncodeTiled
# ---------------------------------------------------------------------------------------------

def tma_cases():
    """(name, dtype, box (inner, outer), row stride bytes, global address offset, swizzle bytes,
    shared layout of the box or None for dense rows swizzled on bytes)."""
    out = [
        ("f16_128B_sw128", "f16", (64, 64), 8192, 0, 128),
        ("f16_64B_sw64", "f16", (32, 128), 8192, 0, 64),
        ("f16_32B_sw32", "f16", (16, 256), 8192, 0, 32),
        ("f16_none", "f16", (8, 8), 8192, 0, 0),
        ("f16_box_257_rows", "f16", (64, 257), 8192, 0, 128),
        ("f16_inner_8B", "f16", (4, 64), 8192, 0, 0),
        ("f16_inner_256B_sw128", "f16", (128, 64), 8192, 0, 128),
        ("f16_stride_8200", "f16", (64, 64), 8200, 0, 128),
        ("f16_address_plus_8", "f16", (64, 64), 8192, 8, 128),
        ("f32_128B_sw128", "f32", (32, 64), 8192, 0, 128),
        ("f32_inner_256B_none", "f32", (64, 8), 8192, 0, 0),
        ("u8_128B_sw128", "u8", (128, 32), 8192, 0, 128),
    ]
    return [t + (None,) for t in out] + hopper_gemm_boxes()


def hopper_gemm_boxes():
    """The TMA boxes of ``examples/hopper_gemm.py``: its loads of A and B into their pipeline
    stages (``gmma_stage`` layouts) and its epilogue's stores of C from the swizzled staging,
    over K-major A and B and row-major C of 8192 columns."""
    t = _load_example("hopper_gemm")
    out = []
    for name, load, smem in (("A", t.LOAD_A, t.SA), ("B", t.LOAD_B, t.SB)):
        inner, outer = load.box
        out.append((f"hopper_gemm_load_{name}", load.map_dtype, (inner, outer), 8192 * load.elem_bytes, 0,
                    load.swizzle_bytes, smem))
    st = t.EPILOGUE.store
    inner, outer = st.box
    staging = t.EPILOGUE.swizzle.with_layout(Layout((outer, inner), (inner, 1)))   # a box buffer: (rows, inner)
    out.append(("hopper_gemm_store_C", st.map_dtype, (inner, outer), 8192 * st.elem_bytes, 0, st.swizzle_bytes,
                staging))
    return out


def tma_predictions():
    """Each TMA case with its box's shared layout (given, or dense rows with the swizzle on
    bytes) checked by :func:`layoutalg.check_tma` against a global tensor of 4096 x 4096
    (rows ``stride`` bytes apart)."""
    out = []
    for name, dtype, (inner, outer), stride, off, swb, lay in tma_cases():
        eb = {"f16": 2, "bf16": 2, "f32": 4, "u8": 1}[dtype]
        if lay is None:
            lay = Layout((outer, inner), (inner, 1))                  # (rows, inner) -> offset
            if swb:
                lay = composition(Swizzle({32: 1, 64: 2, 128: 3}[swb], 4 - (eb.bit_length() - 1), 3), lay)
        r = check_tma(lay, dtype, Layout((4096, 4096), (stride // eb, 1)), inner=1, box=(outer, inner), gmem_base=off)
        out.append((name, dtype, (inner, outer), stride, off, swb, r))
    return out


def run_tma(log):
    """Each TMA case through the driver's encoder: accepted or refused, against the prediction."""
    from codegen import driver

    rows = []
    driver.ensure_context()
    base = driver.mem_alloc(1 << 20)           # the encoder reads only the address's alignment
    for name, dtype, box, stride, off, swb, r in tma_predictions():
        try:
            driver.encode_tensor_map_2d(dtype, base + off, (4096, 4096), stride, box, swb)
            got, why = True, ""
        except Exception as e:  # noqa: BLE001
            got, why = False, str(e)[:200]
        rows.append({"case": name, "predicted": r.legal, "rule": r.rule, "driver_accepts": got, "driver_message": why,
                     "exact": r.legal == got})
    return rows


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------

def compile_all(indices, jobs, log):
    """Compile every case in ``jobs`` processes; a worker that dies leaves its cases unchecked
    (``ok`` None: launched anyway), the others go on."""
    from concurrent.futures import as_completed

    t0 = time.time()
    out = {}
    try:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            futs = {ex.submit(compile_case, i): i for i in indices}
            for f in as_completed(futs):
                i = futs[f]
                try:
                    out[i] = f.result()
                except Exception as e:  # noqa: BLE001  (a worker died)
                    out[i] = {"index": i, "ok": None, "error": f"not checked: {type(e).__name__}: {e}"[:300]}
    except Exception as e:  # noqa: BLE001
        log(f"the compile processes failed: {type(e).__name__}: {e}")
    for i in indices:
        out.setdefault(i, {"index": i, "ok": None, "error": "not checked"})
    bad = [out[i] for i in indices if not out[i]["ok"]]
    nsass = sum("sass" in out[i] for i in indices)
    log(f"compiled {len(indices)} kernels to PTX in {time.time() - t0:.0f} s with {jobs} processes; "
        f"{len(bad)} not as predicted or not checked; SASS counted for {nsass}")
    for r in bad:
        log(f"  case {r['index']}: {r['error'][:300]}")
    for i in indices:
        if out[i].get("sass_note"):
            log(f"  case {i}: {out[i]['sass_note']}")
    return out


def sim_run(indices, out, log):
    """The cases' kernels in numba's simulator (a subprocess with NUMBA_ENABLE_CUDASIM=1)."""
    progress = os.path.join(out, "progress_sim.txt")
    if os.path.exists(progress):
        os.remove(progress)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    t0 = time.time()
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--launch", ",".join(map(str, indices)),
                        "--progress", progress, "--sim"], capture_output=True, text=True, env=env, timeout=1800)
    done, failed, _ = read_progress(progress)
    log(f"simulator: {len(done)} of {len(indices)} cases ran in {time.time() - t0:.0f} s (status {r.returncode})")
    for i, msg in failed.items():
        log(f"  case {i}: {msg}")
    if r.returncode:
        log(r.stderr[-2000:])
    return done, failed


def select(cases, pattern):
    if not pattern:
        return [c.index for c in cases]
    rx = re.compile(pattern)
    return [c.index for c in cases if rx.search(c.name) or rx.search(c.group)]


def _case_list(cases, text):
    """Case indices from ``"3,lds32_col_ld32,..."`` (indices or names)."""
    by_name = {c.name: c.index for c in cases}
    out = []
    for tok in (t.strip() for t in text.split(",") if t.strip()):
        if tok.isdigit():
            out.append(int(tok))
        elif tok in by_name:
            out.append(by_name[tok])
        else:
            raise SystemExit(f"bank_conflicts: no case {tok!r} (--list lists them)")
    return out


def default_sim_cases(cases):
    """Every case: small kernels of one CTA run in the simulator in well under a second each."""
    return [c.index for c in cases]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT") or "bank_conflicts_out", help="output folder (default $OUT)")
    p.add_argument("--dry-run", action="store_true", help="all but ncu: PTX checks, simulator runs, synthetic counters")
    p.add_argument("--list", action="store_true", help="print the cases and their predictions")
    p.add_argument("--cases", help="a regex: only the cases (or groups) it matches")
    p.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1), help="compiling processes")
    p.add_argument("--ncu", default="ncu", help="the ncu program")
    p.add_argument("--ncu-timeout", type=float, default=420, help="seconds for all ncu runs together")
    p.add_argument("--sim-cases", help="dry run: the cases to simulate, indices or names (default: all; 'none' for "
                                       "none)")
    p.add_argument("--recompare", metavar="JSON", help="compare the counters of an earlier run (its "
                                                           "bank_conflicts.json) with the current predictions; no GPU")
    p.add_argument("--launch", help=argparse.SUPPRESS)
    p.add_argument("--progress", help=argparse.SUPPRESS)
    p.add_argument("--sim", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.launch is not None:                  # the process ncu (or the simulator) runs
        launch([int(x) for x in args.launch.split(",") if x], args.progress, sim=args.sim)
        return 0

    t_start = time.time()
    cases = all_cases()
    indices = select(cases, args.cases)
    if args.list:
        for i in indices:
            c = cases[i]
            print(f"{c.index:3d} {c.name:34s} {c.op:6s} {c.threads:4d}  {c.pred.get('summary') or ''} "
                  f"{c.pred.get('gsummary') or ''}")
        print(f"{len(indices)} cases")
        return 0
    os.makedirs(args.out, exist_ok=True)
    if args.recompare:
        return recompare(args.recompare, [cases[i] for i in indices], args.out)
    logf = open(os.path.join(args.out, "bank_conflicts.log"), "w", encoding="utf-8")

    def log(msg):
        line = f"[{time.time() - t_start:6.1f} s] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    log(f"{len(indices)} cases; out {args.out}")
    sims = []
    if args.dry_run:
        sims = default_sim_cases([cases[i] for i in indices]) if args.sim_cases is None else (
            [] if args.sim_cases == "none" else _case_list(cases, args.sim_cases))
    compiled = compile_all(indices, args.jobs, log)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}
    if args.dry_run:
        failed = {}
        if sims:
            _, failed = sim_run(sims, args.out, log)
        metrics = choose_metrics({m.rsplit(".", 1)[0] for names in METRICS.values() for c in names for m in _parts(c)})
        text = synthetic_csv([cases[i] for i in indices if compiled[i]["ok"]], metrics)
        with open(os.path.join(args.out, "ncu_raw_dry_run.csv"), "w", encoding="utf-8") as f:
            f.write(text)
        measured = parse_ncu_csv(text)
        cands = metric_candidates()
        meta["device"] = "dry run: counters made from the predictions"
        tma = [{"case": n, "predicted": r.legal, "rule": r.rule} for n, _, _, _, _, _, r in tma_predictions()]
    else:
        runnable = [i for i in indices if compiled[i]["ok"] is not False or compiled[i].get("compiled")]
        known = query_metrics(args.ncu, log, args.out)
        cands = metric_candidates(known)
        deadline = time.time() + args.ncu_timeout
        measured, failed, metrics = run_ncu(args, runnable, known, log, deadline)
        need = [i for i in runnable if i in measured and cases[i].op in OPCODES
                and measured_value(measured[i], [f"{cases[i].op}_inst"], cands)[0] is None]
        for i, rec in run_opcode_counts(args, need, log, deadline).items():
            if i in measured:
                measured[i].update(rec)
        for i in indices:
            if i not in runnable:
                failed[i] = "not launched: " + compiled[i]["error"][:200]
        meta["device"] = _device_name()
        meta["metrics"] = metrics
        meta["candidates"] = {q: [list(_parts(c)) for c in cs] for q, cs in cands.items()}
        try:
            tma = run_tma(log)
        except Exception as e:  # noqa: BLE001
            log(f"TMA encode check failed: {type(e).__name__}: {e}")
            tma = []
    rows = compare([cases[i] for i in indices], compiled, measured, failed, cands)
    meta["tma"] = tma
    n_meas, n_exact = write_outputs(args.out, rows, meta)
    log(f"{n_meas} of {len(rows)} cases measured, {n_exact} exact; table: {os.path.join(args.out, 'bank_conflicts.md')}")
    for r in rows:
        if r["exact"] is False:
            vals = "; ".join(f"{v['what']} {v['predicted']} vs {v['measured']}" for v in r["values"])
            log(f"  differs: {r['case']}: {vals}" + (f" (matches {r.get('models_matching')})" if r.get("models") else ""))
    if tma:
        ok = sum(t.get("exact") is True for t in tma)
        log(f"TMA boxes: {ok} of {len(tma)} as predicted by the driver" if not args.dry_run else
            f"TMA boxes: {len(tma)} predicted (the driver is asked on a GPU)")
    logf.close()
    return 0


def recompare(path, cases, out):
    """The counters of an earlier run (``path``: its ``bank_conflicts.json``, rows with a
    case name and its counters, or a compact file whose rows list the values of
    ``meta["counters"]``, as ``benchmarks/bank_results_run1.json``) against the current
    predictions, by case name: writes the table to ``out`` and prints the cases that differ."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    names = doc.get("meta", {}).get("counters")              # a compact file: values in that order
    by_name = {r["case"]: (dict(zip(names, r["values"])) if names and "values" in r else r.get("counters")) or None
               for r in doc["rows"]}
    measured = {c.index: by_name[c.name] for c in cases if by_name.get(c.name)}
    meta = dict(doc.get("meta", {}))
    known = {k.rsplit(".", 1)[0] for m in measured.values() if isinstance(m, dict) for k in m}
    rows = compare(cases, {}, measured, {}, metric_candidates(known))      # the counters that run found too
    for r in rows:
        r["error"] = "" if r["exact"] is not None else "not in the earlier run"
    meta["recompared"] = f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: the counters of {path} against " \
                         f"the predictions of this version"
    n_meas, n_exact = write_outputs(out, rows, meta)
    print(f"{n_meas} of {len(rows)} cases in {path}; {n_exact} exact; table: {os.path.join(out, 'bank_conflicts.md')}")
    for r in rows:
        if r["exact"] is False:
            vals = "; ".join(f"{v['what']} {v['predicted']} vs {v['measured']}" for v in r["values"])
            print(f"  differs: {r['case']}: {vals}")
    return 0


def _device_name():
    try:
        from numba import cuda

        d = cuda.get_current_device()
        return d.name.decode() if isinstance(d.name, bytes) else str(d.name)
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())
