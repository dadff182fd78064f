"""An 8-bit float C (``gemm(..., out_dtype="e4m3", scale_out=, amax=)``) against a bf16 C and
against ``torch._scaled_mm`` with the same outputs, interleaved in one run (a Hopper GPU with torch).

    python benchmarks/bench_fp8_out.py [--sizes 4096,8192,8192x8192x1024] [--json out.json]

e4m3 inputs (B K-major, as ``torch._scaled_mm`` takes them), float32 tensor scales; ours
writes the amax too (``torch._scaled_mm`` on this torch does not return one). TFLOP/s as
``2 M N K``. Writes ``$OUT/bench_fp8_out.json``.
"""

import argparse
import os
import sys

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import codegen  # noqa: E402
from bench_gemm import interleaved, median_ratio, save_json  # noqa: E402


def case(M, N, K, rounds=10):
    e4 = torch.float8_e4m3fn
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    A = torch.randn(M, K, device="cuda", generator=g).to(e4)
    B = torch.randn(N, K, device="cuda", generator=g).to(e4).t()
    one = torch.ones(1, device="cuda")
    scale, amax = torch.tensor([0.05], device="cuda"), torch.zeros(1, device="cuda")
    c16 = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    c8 = torch.empty(M, N, device="cuda", dtype=e4)
    calls = {
        "ours_bf16": lambda: codegen.gemm(A, B, c16, scale_a=one, scale_b=one),
        "ours_e4m3": lambda: codegen.gemm(A, B, c8, scale_a=one, scale_b=one, scale_out=scale, amax=amax),
        "ours_e4m3_no_amax": lambda: codegen.gemm(A, B, c8, scale_a=one, scale_b=one, scale_out=scale),
        "torch_bf16": lambda: torch._scaled_mm(A, B, one, one, out_dtype=torch.bfloat16),
        "torch_e4m3": lambda: torch._scaled_mm(A, B, one, one, out_dtype=e4, scale_result=scale),
    }
    tflops, times = interleaved(calls, 2.0 * M * N * K, rounds)
    row = {"shape": [M, N, K], **{f"{k}_tflops": v for k, v in tflops.items()},
           "e4m3_vs_bf16": median_ratio(times["ours_e4m3"], times["ours_bf16"]),
           "e4m3_vs_torch_e4m3": median_ratio(times["ours_e4m3"], times["torch_e4m3"])}
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4096,8192,8192x8192x1024")
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": []}
    for size in a.sizes.split(","):
        M, N, K = (int(x) for x in size.split("x")) if "x" in size else (int(size),) * 3
        r = case(M, N, K)
        res["cases"].append(r)
        print(f"{M}x{N}x{K}: " + ", ".join(f"{k} {v:.3g}" for k, v in r.items() if k != "shape"), flush=True)
    save_json(res, "bench_fp8_out.json", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
