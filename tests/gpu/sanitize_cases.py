"""A few edge-tile GEMM cases for ``compute-sanitizer --tool memcheck`` (run on a CUDA machine).

    compute-sanitizer --tool memcheck --report-api-errors no python tests/gpu/sanitize_cases.py [N]

(``--report-api-errors no`` hides the driver-symbol probes of the CUDA bindings at start-up,
which fail by design; memory errors in kernels are still reported.)

Residue tiles in M, N and K, transposed and strided operands, every dtype; each case is
also checked against a float64 reference.  Prints 'N passed, N failed'.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from check_gemm import run_cases  # noqa: E402

CASES = [
    ("f16", 2000, 2104, 72, "N", "N"),     # the 128x256 plan, residues in M, N and K
    ("bf16", 1928, 2296, 136, "N", "T"),
    ("tf32", 2000, 2104, 44, "N", "N"),
    ("f16", 208, 1912, 1168, "N", "N"),
    ("f16", 184, 992, 2216, "N", "N"),
    ("f16", 1000, 513, 7, "T", "S"),
    ("f16", 7, 2789, 1168, "T", "T"),
    ("bf16", 100, 33, 100, "S", "T"),
    ("bf16", 3854, 1, 323, "N", "N"),
    ("tf32", 571, 33, 283, "N", "N"),
    ("tf32", 1000, 100, 255, "T", "T"),
    ("f32", 7, 900, 102, "T", "N"),
    ("f64", 7, 7, 100, "S", "N"),
]

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else len(CASES)    # the first n cases (racecheck is slow)
    rows = run_cases(CASES[:n])
    ok = sum(r["ok"] for r in rows)
    print(f"{ok} passed, {len(rows) - ok} failed")
    sys.exit(0 if ok == len(rows) else 1)
