"""Hopper GEMM tiles and split-K, one shape at a time: every candidate plan interleaved with
cuBLAS (``torch.matmul``) in the same rounds, against the default plan. The measurement
behind ``codegen.config.hopper_tile``'s rules (benchmarks/RESULTS.md). On an sm_90 GPU with torch.

    python benchmarks/hopper_tiles.py [--shapes 1x14336x4096,257x4096x4096] [--dtype f16]
                                      [--candidates 64x128s6k1,128x128s6k2,...] [--rounds 8] [--json out.json]

A candidate ``BMxBNsSTAGESkSPLITS`` is a wgmma plan: a BM x BN CTA tile (BM 64: one consumer
warpgroup, 128: two), STAGES pipeline stages and K split in SPLITS parts.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = "1x14336x4096,16x14336x4096,64x14336x4096,257x4096x4096,257x4096x14336,257x14336x4096,1280x4096x14336,1280x4096x4096"
CANDIDATES = "64x128s6k1,64x128s6k2,64x128s6k4,128x128s6k1,128x128s6k2,128x128s6k4,128x256s4k1,128x256s4k2"
BK = {"f16": 64, "bf16": 64}


def candidate(spec, dtype):
    """``BMxBNsSTAGESkSPLITS`` -> GemmConfig of the wgmma path."""
    from codegen import GemmConfig

    try:
        tile, rest = spec.split("s")
        stages, splits = (int(x) for x in rest.split("k"))
        bm, bn = (int(x) for x in tile.split("x"))
    except ValueError:
        raise SystemExit(f"--candidates: {spec!r} is not BMxBNsSTAGESkSPLITS (e.g. 64x128s6k1)") from None
    return GemmConfig(dtype, None, bm, bn, BK[dtype], 2, 4, stages, 8, 1, "wgmma", None, splits)


def one_shape(torch, codegen, M, N, K, dtype, cands, rounds):
    from bench_gemm import interleaved, median_ratio

    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    A, B = torch.randn(M, K, device="cuda", dtype=dt), torch.randn(K, N, device="cuda", dtype=dt)
    C = torch.empty(M, N, device="cuda", dtype=dt)
    default = codegen.prepare(A, B, C)
    calls = {"cublas": lambda: torch.matmul(A, B, out=C), "default": default}
    for spec in cands:
        try:
            launch = codegen.prepare(A, B, C, config=candidate(spec, dtype))
            launch()
            calls[spec] = launch
        except Exception as e:              # a plan the shape cannot take
            print(f"  {M}x{N}x{K} {spec}: {type(e).__name__}: {str(e)[:100]}", flush=True)
    tflops, times = interleaved(calls, 2.0 * M * N * K, rounds)
    cfg = default.kernel.config
    return {"shape": [M, N, K], "dtype": dtype, "default": f"{cfg.bm}x{cfg.bn}s{cfg.stages}k{cfg.split_k}",
            "cublas_tflops": tflops["cublas"],
            "of_cublas": {k: median_ratio(times[k], times["cublas"]) for k in calls if k != "cublas"}}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--dtype", default="f16", choices=sorted(BK))
    p.add_argument("--candidates", default=CANDIDATES)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    import torch

    import codegen

    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",") if s]
    cands = [s for s in a.candidates.split(",") if s]
    rows = []
    for M, N, K in shapes:
        r = one_shape(torch, codegen, M, N, K, a.dtype, cands, a.rounds)
        rows.append(r)
        best = max(r["of_cublas"], key=r["of_cublas"].get)
        print(f"{M}x{N}x{K} (default {r['default']}): "
              + " ".join(f"{k} {v:.2f}" for k, v in r["of_cublas"].items()) + f"; best {best}", flush=True)
    path = a.json or os.path.join(os.environ.get("OUT", "."), "hopper_tiles.json")
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
