"""Hopper kernel variants at one size, cuBLAS beside: which plan and operand layout is fastest.

    python tests/gpu/sweep_wgmma.py [n] [--ncu]
"""

import sys
import time

import torch

import codegen
from codegen import GemmConfig

n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 4096


def bench(fn, iters=20, reps=5):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / iters / 1e3)
    return sorted(ts)[len(ts) // 2]


fl = 2 * n ** 3
A = torch.randn(n, n, device="cuda", dtype=torch.float16)
Bn = torch.randn(n, n, device="cuda", dtype=torch.float16)          # row-major: MN-major B
Bk = torch.randn(n, n, device="cuda", dtype=torch.float16).t()      # column-major: K-major B
C = torch.empty(n, n, device="cuda", dtype=torch.float16)
t = bench(lambda: torch.matmul(A, Bn))
print(f"cuBLAS {fl / t / 1e12:.1f}", flush=True)
base = GemmConfig.default("f16", n, n, n, arch=(9, 0))
for name, B in (("B MN-major", Bn), ("B K-major", Bk)):
    for cfg in (base, base.with_(stages=3), base.with_(group_m=16), base.with_(group_m=4), base.with_(bn=128)):
        try:
            t0 = time.time()
            launch = codegen.prepare(A, B, C, config=cfg)
            launch()
            torch.cuda.synchronize()
            first = time.time() - t0
            t = bench(launch)
            ref = A.float() @ B.float()
            err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
            print(f"{name} {cfg.bm}x{cfg.bn}x{cfg.bk} s{cfg.stages} g{cfg.group_m}: {fl / t / 1e12:.1f} TFLOP/s "
                  f"err {err:.1e} (first call {first:.1f}s)", flush=True)
        except Exception as e:
            print(f"{name} {cfg}: {type(e).__name__}: {str(e)[:200]}", flush=True)
