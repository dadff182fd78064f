"""Experiment: variants of the Hopper kernel against cuBLAS, in one process.

    python tests/gpu/variants_wgmma.py [--sizes 4096,8192,4096x4096x1024] [--dtype f16]

Variants: the default plan (C staged in shared memory and stored by TMA), the same kernel
storing from registers (no map of C), and plan changes (stages, GROUP_M, clusters, tiles,
split-K, fewer CTAs). Kernels compile in parallel processes first.
"""
import argparse
import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor

import torch

from codegen import GemmConfig, driver, kernel as K
from codegen.sm90 import kernel as SK
from codegen.sm90.launch import WgmmaLauncher

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
from bench_gemm import bench, bursts, median_ratio, shapes  # noqa: E402  (the GEMM benchmark's timing)


def variants(dtype):
    """Plans that differ from the default in their configuration (the kernel composes the
    same pieces): stages, k-tile, tiles, raster group, clusters, split-K, the epilogue, and
    a launch on fewer CTAs. (The old emitter's flags for experiments inside the kernel,
    measured and written down in benchmarks/RESULTS.md, are gone with it; such a variant is
    now a kernel composed differently from codegen.cute's pieces.)"""
    base = GemmConfig.default(dtype, arch=(9, 0))
    return [  # (name, config, options, C through TMA, B's major)
        ("default", base, {}, True, "MN"),
        ("default, stores from registers", base, {}, False, "MN"),
        ("B K-major", base, {}, True, "K"),
        ("3 stages", base.with_(stages=3), {}, True, "MN"),
        ("BK 32, 8 stages (A in 64-byte swizzled stages)", base.with_(bk=32, stages=8), {}, True, "MN"),
        ("f32 out, stores from registers", base.with_(out_dtype="f32"), {}, False, "MN"),
        ("BN 128 (128x128 tiles: twice the CTAs of a small problem)", base.with_(bn=128), {}, True, "MN"),
        ("BN 128, 6 stages", base.with_(bn=128, stages=6), {}, True, "MN"),
        ("BM 64 (64x256 tiles, one consumer)", base.with_(bm=64), {}, True, "MN"),
        ("64x128 tiles, 6 stages", base.with_(bm=64, bn=128, stages=6), {}, True, "MN"),
        ("clusters of 2 sharing B (multicast)", base.with_(cluster_m=2), {}, True, "MN"),
        ("clusters of 2 sharing B (multicast), B K-major", base.with_(cluster_m=2), {}, True, "K"),
        ("clusters of 2 sharing B (multicast), GROUP_M 16", base.with_(cluster_m=2, group_m=16), {}, True, "MN"),
        ("GROUP_M 16", base.with_(group_m=16), {}, True, "MN"),
        ("GROUP_M 4", base.with_(group_m=4), {}, True, "MN"),
        ("default, the fewest CTAs that keep the number of waves of tiles", base, {"_grid": "fewest"}, True, "MN"),
        ("split-K 2 (the last wave's tiles)", base.with_(split_k=2), {}, True, "MN"),
        ("split-K 4 (the last wave's tiles)", base.with_(split_k=4), {}, True, "MN"),
        ("BN 128, 6 stages, split-K 2 (the last wave's tiles)", base.with_(bn=128, stages=6, split_k=2), {}, True, "MN"),
        ("BN 128, 6 stages, split-K 4 (the last wave's tiles)", base.with_(bn=128, stages=6, split_k=4), {}, True, "MN"),
    ]


def _plan(cfg, b_major, opts):
    return SK._base(SK.WgmmaKey(cfg, "K", b_major)).plan


def _ptx(job):
    cfg, opts, b_major, tma = job
    key = SK.WgmmaKey(cfg, "K", b_major, "tma" if tma else "registers")
    return SK._base(key).source, SK.compile_wgmma_ptx(key)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--rounds", type=int, default=1, help="time every variant this many times, interleaved")
    ap.add_argument("--only", default="", help="comma-separated variant numbers (0-based) to run; default all")
    ap.add_argument("--bursts", type=int, default=0,
                    help="then time cuBLAS and every variant in this many interleaved rounds of short bursts "
                         "(about 20 ms each): medians, and the median ratio to cuBLAS in the same round")
    ap.add_argument("--power", type=float, default=0,
                    help="then run cuBLAS and every variant alone for this many seconds each (twice): "
                         "TFLOP/s, the median SM clock and power draw (nvidia-smi), and TFLOP/s per GHz")
    args = ap.parse_args()
    vs = variants(args.dtype)
    if args.only:
        vs = [vs[int(i)] for i in args.only.split(",")]
    with ProcessPoolExecutor(min(len(vs), os.cpu_count() or 1)) as ex:
        built = list(ex.map(_ptx, [(cfg, opts, bm, tma) for _, cfg, opts, tma, bm in vs]))
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    for M, N, Kd in shapes(args.sizes):
        A = torch.randn(M, Kd, device="cuda", dtype=tdt)
        B = torch.randn(Kd, N, device="cuda", dtype=tdt)
        Bt = torch.randn(N, Kd, device="cuda", dtype=tdt)     # the K-major variants' B, as (N,K)
        fl = 2 * M * N * Kd
        print(f"{args.dtype} {M}x{N}x{Kd}: cuBLAS {fl / bench(lambda: torch.matmul(A, B)) / 1e12:.1f} TFLOP/s",
              flush=True)
        refs = {"MN": A.float() @ B.float(), "K": A.float() @ Bt.float().t()}
        runs = []
        for (name, cfg, opts, tma, b_major), (src, ptx) in zip(vs, built):
            key = SK.WgmmaKey(cfg, "K", b_major, "tma" if tma else "registers")
            plan = _plan(cfg, b_major, opts)
            C = torch.zeros(M, N, device="cuda", dtype=torch.float32 if cfg.out == "f32" else tdt)
            fn = driver.Function(driver.compile_image(ptx), driver.entry_name(ptx), plan.smem_bytes)
            comp = SK.CompiledWgmma(key, plan, src, K._module_path(src), fn)
            b_desc = ((N, Kd), (1, N)) if b_major == "MN" else ((N, Kd), (Kd, 1))     # B as (N,K)
            la = WgmmaLauncher(comp, M, N, Kd, ((M, Kd), (Kd, 1)), b_desc, (N, 1))
            la.b = B if b_major == "MN" else Bt
            if opts.get("_grid") == "fewest":     # as many waves of tiles on fewer CTAs (non-cluster kernels)
                tiles = -(-M // cfg.bm) * -(-N // cfg.bn)
                la.grid = -(-tiles // -(-tiles // la.grid))
            if not tma:                 # no map of C: the launcher runs the registers kernel given here
                la._c_map = lambda c: 0
            runs.append((name, la, C, refs[b_major], []))
        for r in range(args.rounds):
            if r:
                print(f"  cuBLAS again: {fl / bench(lambda: torch.matmul(A, B)) / 1e12:.1f} TFLOP/s", flush=True)
            for name, la, C, ref, tf in runs:
                t = bench(lambda: la(A.data_ptr(), la.b.data_ptr(), C.data_ptr(), 1.0, 0.0, 0))
                la.check()
                tf.append(fl / t / 1e12)
                err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
                print(f"  {name}: {tf[-1]:.1f} TFLOP/s (max rel err {err:.1e})", flush=True)
        if args.rounds > 1:
            for name, la, C, ref, tf in runs:
                print(f"  best of {args.rounds}: {max(tf):.1f}  {name}")
        if args.bursts:
            Bk = B.t().contiguous().t()             # the same B, K-major: what the "B K-major" variants read
            calls = [("cuBLAS", lambda: torch.matmul(A, B)), ("cuBLAS, B K-major", lambda: torch.matmul(A, Bk))] + [
                (name, lambda la=la, C=C: la(A.data_ptr(), la.b.data_ptr(), C.data_ptr(), 1.0, 0.0, 0))
                for name, la, C, ref, tf in runs]
            _bursts(calls, fl, args.bursts)
        if args.power:
            calls = [("cuBLAS", lambda: torch.matmul(A, B))] + [
                (name, lambda la=la, C=C: la(A.data_ptr(), la.b.data_ptr(), C.data_ptr(), 1.0, 0.0, 0))
                for name, la, C, ref, tf in runs]
            for _ in range(2):
                for name, fn in calls:
                    tfs, mhz, watts = _alone(fn, fl, args.power)
                    print(f"  alone {args.power:.0f} s: {tfs:.1f} TFLOP/s at {mhz:.0f} MHz, {watts:.0f} W: "
                          f"{tfs / mhz * 1e3:.1f} TFLOP/s per GHz  {name}", flush=True)


def _alone(fn, flops, seconds):
    """``fn`` back to back for ``seconds`` after a 1 s rest: its TFLOP/s, and the median SM
    clock (MHz) and board power (W) that nvidia-smi samples over the last two thirds. Under a
    power cap the clock is what a kernel's energy per operation leaves."""
    import statistics
    import subprocess
    import threading
    import time

    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    time.sleep(1.0)
    samples, stop = [], threading.Event()

    def sample():
        p = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                              "-lms", "20"], stdout=subprocess.PIPE, text=True)
        while not stop.is_set():
            line = p.stdout.readline()
            if line:
                samples.append(tuple(float(x) for x in line.split(",")))
        p.kill()

    th = threading.Thread(target=sample)
    th.start()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    n, end = 0, time.time() + seconds
    ev[0].record()
    while time.time() < end:
        for _ in range(20):
            fn()
        n += 20
        torch.cuda.synchronize()
    ev[1].record()
    torch.cuda.synchronize()
    stop.set()
    th.join()
    tail = samples[len(samples) // 3:] or [(float("nan"), float("nan"))]
    return (flops / (ev[0].elapsed_time(ev[1]) / 1e3 / n) / 1e12, statistics.median(c for c, _ in tail),
            statistics.median(w for _, w in tail))


def _bursts(calls, flops, rounds):
    """Prints each call's median TFLOP/s over interleaved bursts (``bench_gemm.bursts``) and
    its median ratio to the first call's in the same round."""
    ts = bursts([fn for _, fn in calls], rounds)
    for (name, _), t in zip(calls, ts):
        print(f"  bursts x{rounds}: median {flops / statistics.median(t) / 1e12:.1f} TFLOP/s, "
              f"{median_ratio(t, ts[0]):.3f} of cuBLAS  {name}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
