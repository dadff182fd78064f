"""A fused bias and activation against the plain GEMM, torch and torch.compile (a GPU with torch).

    python benchmarks/bench_fused.py [--sizes 8192,4096] [--dtype bf16] [--json out.json]

At each size ``M = N = K``, interleaved in bursts (``bench_gemm.bursts``) on the same operands:
``codegen.gemm(A, B)``; ``codegen.gemm(A, B, bias=b, activation="gelu")`` (the epilogue
fused); ``torch.nn.functional.gelu(torch.addmm(b, A, B))`` (two kernels); the same function
under ``torch.compile``; and ``torch.matmul`` alone. Targets (the torch-model issue): the
fused GEMM at least 0.97 of the plain one, and faster than ``torch.compile``'s. Also checks
every activation and bias type against torch at a small size. Writes ``$OUT/bench_fused.json``.
"""

import argparse
import os
import statistics
import sys

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import codegen  # noqa: E402
from bench_gemm import bursts, save_json, tflops_text  # noqa: E402

ACTS = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu}


def correctness(dtype):
    """Each activation with a bias of the inputs' type, a bias alone of each other type, and an
    activation alone at 300x512x200; bias + GELU at 256x512x4096 (split-K): against torch in float32."""
    cases = [((300, 512, 200), act, dtype) for act in ACTS]
    cases += [((300, 512, 200), None, bt) for bt in (torch.float32, torch.float16 if dtype != torch.float16 else
                                                       torch.bfloat16)]
    cases += [((300, 512, 200), "silu", None), ((256, 512, 4096), "gelu", dtype)]
    out = []
    for (M, N, K), act, bt in cases:
        A = torch.randn(M, K, device="cuda", dtype=dtype)
        B = torch.randn(K, N, device="cuda", dtype=dtype) / K ** 0.5
        bias = None if bt is None else torch.randn(N, device="cuda", dtype=bt)
        C = codegen.gemm(A, B, bias=bias, activation=act, alpha=0.5)
        z = 0.5 * (A.float() @ B.float()) + (bias.float() if bias is not None else 0)
        ref = ACTS[act](z) if act else z
        err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
        out.append({"shape": [M, N, K], "activation": act, "bias": str(bt), "rel_err": err})
    return out


def speed(n, dtype, rounds=10):
    A = torch.randn(n, n, device="cuda", dtype=dtype)
    B = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, device="cuda", dtype=dtype)
    C = torch.empty(n, n, device="cuda", dtype=dtype)
    plain = codegen.prepare(A, B, C)
    fused = codegen.prepare(A, B, C, bias=b, activation="gelu")

    def eager():
        return F.gelu(torch.addmm(b, A, B))

    compiled = torch.compile(eager)
    for fn in (plain, fused, eager, compiled):
        fn()
    torch.cuda.synchronize()
    calls = {"plain": plain, "fused_gelu": fused, "torch_addmm_gelu": eager, "torch_compile": compiled,
             "torch_matmul": lambda: torch.matmul(A, B)}
    names = list(calls)
    times = bursts([calls[k] for k in names], rounds)
    flop = 2.0 * n ** 3
    row = {"size": n, "dtype": str(dtype)}
    for k, t in zip(names, times):
        row[f"{k}_tflops"] = flop / statistics.median(t) / 1e12
    row["fused_vs_plain"] = statistics.median(p / f for p, f in zip(times[0], times[1]))
    row["fused_vs_torch_compile"] = statistics.median(c / f for c, f in zip(times[3], times[1]))
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="8192,4096")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "f16"))
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "correctness": correctness(dtype)}
    worst = max(r["rel_err"] for r in res["correctness"])
    print(f"correctness: {len(res['correctness'])} cases, worst relative error {worst:.2e}: "
          + ", ".join(f"{r['activation']}/{r['bias'][6:]} {r['rel_err']:.1e}" for r in res["correctness"]), flush=True)
    res["speed"] = []
    for n in (int(x) for x in args.sizes.split(",")):
        r = speed(n, dtype)
        res["speed"].append(r)
        print(f"{n}^3 {args.dtype} TFLOP/s: " + tflops_text(r)
              + f"; fused/plain {r['fused_vs_plain']:.3f} (target >= 0.97), fused vs torch.compile "
              f"{r['fused_vs_torch_compile']:.3f}x", flush=True)
    save_json(res, "bench_fused.json", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
