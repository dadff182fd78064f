"""Experiment: variants of the Hopper kernel (emitter options) at 4096^3 against cuBLAS."""
import sys

import torch

import codegen
from codegen import GemmConfig, driver, kernel as K
from codegen.sm90 import kernel as SK
from codegen.sm90.emit import KERNEL_NAME, emit_wgmma_source
from codegen.sm90.launch import WgmmaLauncher

n = 4096


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


A = torch.randn(n, n, device="cuda", dtype=torch.float16)
B = torch.randn(n, n, device="cuda", dtype=torch.float16)
C = torch.empty(n, n, device="cuda", dtype=torch.float16)
fl = 2 * n ** 3
print(f"cuBLAS {fl / bench(lambda: torch.matmul(A, B)) / 1e12:.1f}", flush=True)
cfg = GemmConfig.default("f16", n, n, n, arch=(9, 0))
for opts in ({}, {"_epilogue": "cold"}, {"_epilogue": "cold", "_in_flight": 0}):
    key = SK.WgmmaKey(cfg, "K", "MN")
    base = SK._base(key)
    src = emit_wgmma_source(base.plan, **opts)
    mod = K._load_module(src)
    from numba import cuda

    ptx, _ = cuda.compile_ptx(getattr(mod, KERNEL_NAME), SK.wgmma_signature(), cc=(9, 0, "a"),
                              launch_bounds=(base.plan.threads, 1))
    fn = driver.Function(driver.link_ptx(ptx), driver.entry_name(ptx), base.plan.smem_bytes)
    comp = SK.CompiledWgmma(key, base.plan, src, base.module, fn)
    la = WgmmaLauncher(comp, n, n, n, ((n, n), (n, 1)), ((n, n), (1, n)), (n, 1))
    t = bench(lambda: la(A.data_ptr(), B.data_ptr(), C.data_ptr(), 1.0, 0.0, 0))
    print(f"{opts}: {fl / t / 1e12:.1f} TFLOP/s", flush=True)
