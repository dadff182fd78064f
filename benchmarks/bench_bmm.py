"""A batch of GEMMs in one launch against ``torch.bmm`` (a GPU with torch).

    python benchmarks/bench_bmm.py [--shapes 64x1024x1024x1024,8x4096x4096x4096] [--dtypes f16,bf16]
                                   [--json out.json]

Each shape is ``LxMxNxK``: ``(L,M,K) @ (L,K,N)``. At each, interleaved in bursts
(``bench_gemm.bursts``) on the same operands: ``codegen.prepare(A, B, C)`` (the Hopper kernel
with the batch in its tile scheduler: one launch), ``torch.bmm(A, B, out=C)`` (cuBLAS's
strided batched GEMM) and ``codegen.gemm`` of one matrix of the batch, ``L`` times (what a
loop over the batch costs). Target (the torch-model issue): at least 1.0 of ``torch.bmm`` at
64x1024^3 and 8x4096^3. First checks correctness against torch in float32 over layouts,
broadcast batch modes, a given C with beta and both dtypes. Writes ``$OUT/bench_bmm.json``.
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
from bench_gemm import interleaved, median_ratio, save_json, tflops_text  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}


def _rel(x, ref):
    return ((x.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def correctness(dtype):
    """Batches against torch in float32: odd sizes (residues in M, N, K), B transposed per
    matrix, broadcast batch modes, a column-major C, a C given with beta, split batch strides."""
    g = torch.Generator(device="cuda").manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, device="cuda", generator=g).to(dtype)

    out = []
    cases = [
        ("plain 5x300x200x136", rnd(5, 300, 136), rnd(5, 136, 200), None, 0.0),
        ("B K-major", rnd(3, 256, 128), rnd(3, 384, 128).transpose(1, 2), None, 0.0),
        ("broadcast (2,1)x(3)", rnd(2, 1, 128, 64), rnd(3, 64, 192), None, 0.0),
        ("C column-major", rnd(4, 200, 96), rnd(4, 96, 136), torch.empty(4, 136, 200, device="cuda",
                                                                        dtype=dtype).transpose(1, 2), 0.0),
        ("C given, beta 0.5", rnd(3, 130, 64), rnd(3, 64, 72), rnd(3, 130, 72), 0.5),
        ("strided batch of A", rnd(6, 128, 64)[::2], rnd(3, 64, 128), None, 0.0),
        ("f32 C", rnd(3, 100, 64), rnd(3, 64, 80), torch.empty(3, 100, 80, device="cuda"), 0.0),
    ]
    for name, A, B, C, beta in cases:
        C0 = C.clone() if C is not None else None
        ref = A.float() @ B.float() + (beta * C0.float() if C0 is not None and beta else 0)
        got = codegen.gemm(A, B, C, beta=beta)
        out.append({"case": name, "rel_err": _rel(got, ref), "shape": list(got.shape)})
    return out


def speed(L, M, N, K, dtype, rounds=10):
    A = torch.randn(L, M, K, device="cuda", dtype=dtype)
    B = torch.randn(L, K, N, device="cuda", dtype=dtype) / K ** 0.5
    C = torch.empty(L, M, N, device="cuda", dtype=dtype)
    ours = codegen.prepare(A, B, C)
    one = codegen.prepare(A[0], B[0], C[0])

    def loop():
        for _ in range(L):
            one()

    calls = {"ours": ours, "torch_bmm": lambda: torch.bmm(A, B, out=C), "loop_of_gemm": loop}
    tflops, times = interleaved(calls, 2.0 * L * M * N * K, rounds)
    row = {"shape": [L, M, N, K], "dtype": str(dtype)}
    row.update({f"{k}_tflops": v for k, v in tflops.items()})
    row["ours_vs_bmm"] = median_ratio(times["ours"], times["torch_bmm"])
    row["ours_vs_loop"] = median_ratio(times["ours"], times["loop_of_gemm"])
    ours()
    ref = torch.bmm(A, B)
    row["rel_err"] = _rel(C, ref.float())
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="64x1024x1024x1024,8x4096x4096x4096,32x512x512x64,16x2048x2048x2048")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "correctness": [], "speed": []}
    for d in args.dtypes.split(","):
        c = correctness(DTYPES[d])
        res["correctness"] += [dict(r, dtype=d) for r in c]
        print(f"correctness {d}: " + ", ".join(f"{r['case']} {r['rel_err']:.1e}" for r in c), flush=True)
    for d in args.dtypes.split(","):
        for s in args.shapes.split(","):
            L, M, N, K = (int(x) for x in s.split("x"))
            r = speed(L, M, N, K, DTYPES[d])
            res["speed"].append(r)
            print(f"{s} {d} TFLOP/s: " + tflops_text(r)
                  + f"; ours/bmm {r['ours_vs_bmm']:.3f} (target >= 1.0), ours/loop {r['ours_vs_loop']:.2f}x, "
                  f"rel err {r['rel_err']:.1e}", flush=True)
    save_json(res, "bench_bmm.json", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
