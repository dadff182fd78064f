"""Experiment: variants of the Hopper kernel at n^3 against cuBLAS, in one process.

    python tests/gpu/variants_wgmma.py [--sizes 4096,8192] [--dtype f16]

Variants: the default plan (C staged in shared memory and stored by TMA), the same kernel
storing from registers (no map of C), the main loop alone (stores never run), and a few
plan changes (stages, GROUP_M). Kernels compile in parallel processes first.
"""
import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import torch

from codegen import GemmConfig, driver, kernel as K
from codegen.sm90 import kernel as SK
from codegen.sm90.emit import KERNEL_NAME, emit_wgmma_source
from codegen.sm90.plan import make_wgmma_plan
from codegen.sm90.launch import WgmmaLauncher

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
from bench_gemm import bench  # noqa: E402  (the GEMM benchmark's timing)


def variants(dtype):
    base = GemmConfig.default(dtype, arch=(9, 0))
    return [  # (name, config, emitter options, C through TMA, B's major)
        ("default", base, {}, True, "MN"),
        ("default, stores from registers", base, {}, False, "MN"),
        ("main loop alone (stores not run)", base, {"_epilogue": "cold"}, True, "MN"),
        ("B K-major", base, {}, True, "K"),
        ("B K-major, main loop alone", base, {"_epilogue": "cold"}, True, "K"),
        ("3 stages", base.with_(stages=3), {}, True, "MN"),
        ("BK 32, 8 stages (A in 64-byte swizzled stages)", base.with_(bk=32, stages=8), {}, True, "MN"),
        ("no loads after the first fill (wrong results: the MMAs and syncs alone)", base,
         {"_loads": False}, True, "MN"),
        ("no loads after the first fill, main loop alone", base, {"_loads": False, "_epilogue": "cold"}, True, "MN"),
        ("one wgmma group in flight at most (wait 0)", base, {"_in_flight": 0}, True, "MN"),
        ("two wgmma groups in flight (wait 2, release the stage of k-tile kt-2)", base, {"_in_flight": 2}, True, "MN"),
        ("f32 out, stores from registers", base.with_(out_dtype="f32"), {}, False, "MN"),
        ("BN 128 (128x128 tiles: twice the CTAs of a small problem)", base.with_(bn=128), {}, True, "MN"),
        ("BN 128, 6 stages", base.with_(bn=128, stages=6), {}, True, "MN"),
        ("BM 64 (64x256 tiles, one consumer)", base.with_(bm=64), {}, True, "MN"),
        ("clusters of 2 sharing B (multicast)", base.with_(cluster_m=2), {}, True, "MN"),
        ("clusters of 2 sharing B (multicast), B K-major", base.with_(cluster_m=2), {}, True, "K"),
        ("clusters of 2, each CTA loading all of B", base.with_(cluster_m=2), {"_multicast": False}, True, "MN"),
        ("clusters of 2, each CTA loading all of B, B K-major", base.with_(cluster_m=2), {"_multicast": False}, True,
         "K"),
        ("producer 56 / consumer 224 registers", base, {"_regs": (56, 224)}, True, "MN"),
        ("producer 56 / consumer 224 registers, B K-major", base, {"_regs": (56, 224)}, True, "K"),
        ("clusters of 2 sharing B (multicast), 40 / 232 registers", base.with_(cluster_m=2), {"_regs": (40, 232)},
         True, "MN"),
        ("clusters of 2 sharing B (multicast), 3 stages", base.with_(cluster_m=2, stages=3), {}, True, "MN"),
        ("clusters of 2 sharing B (multicast), GROUP_M 16", base.with_(cluster_m=2, group_m=16), {}, True, "MN"),
        ("clusters of 2 sharing B (multicast), GROUP_M 4", base.with_(cluster_m=2, group_m=4), {}, True, "MN"),
        ("GROUP_M 16", base.with_(group_m=16), {}, True, "MN"),
        ("GROUP_M 4", base.with_(group_m=4), {}, True, "MN"),
        ("256x128 tiles (two consumers of two 64-row blocks)", base.with_(bm=256, bn=128), {}, True, "MN"),
        ("256x128 tiles, B K-major", base.with_(bm=256, bn=128), {}, True, "K"),
        ("256x128 tiles, GROUP_M 4", base.with_(bm=256, bn=128, group_m=4), {}, True, "MN"),
        ("256x128 tiles, clusters of 2 sharing A (multicast)", base.with_(bm=256, bn=128, cluster_m=2),
         {"_share": "A"}, True, "MN"),
        ("256x128 tiles, clusters of 2 sharing A, B K-major", base.with_(bm=256, bn=128, cluster_m=2),
         {"_share": "A"}, True, "K"),
        ("128x256 tiles, clusters of 2 sharing A (multicast)", base.with_(cluster_m=2), {"_share": "A"}, True, "MN"),
    ]


def _plan(cfg, b_major, opts):
    """The variant's plan: the kernel's own, or (option ``_share``) one whose cluster shares A."""
    if "_share" in opts:
        return make_wgmma_plan(cfg, "K", b_major, _share=opts["_share"])
    return SK._base(SK.WgmmaKey(cfg, "K", b_major)).plan


def _ptx(job):
    cfg, opts, b_major, tma = job
    from numba import cuda

    plan = _plan(cfg, b_major, opts)
    src = emit_wgmma_source(plan, "tma" if tma else "registers", **{k: v for k, v in opts.items() if k != "_share"})
    ptx, _ = cuda.compile_ptx(getattr(K._load_module(src), KERNEL_NAME), SK.wgmma_signature(), cc=(9, 0, "a"),
                              launch_bounds=(plan.threads, 1))
    return src, ptx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--rounds", type=int, default=1, help="time every variant this many times, interleaved")
    ap.add_argument("--only", default="", help="comma-separated variant numbers (0-based) to run; default all")
    args = ap.parse_args()
    vs = variants(args.dtype)
    if args.only:
        vs = [vs[int(i)] for i in args.only.split(",")]
    with ProcessPoolExecutor(min(len(vs), os.cpu_count() or 1)) as ex:
        built = list(ex.map(_ptx, [(cfg, opts, bm, tma) for _, cfg, opts, tma, bm in vs]))
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    for n in map(int, args.sizes.split(",")):
        A = torch.randn(n, n, device="cuda", dtype=tdt)
        B = torch.randn(n, n, device="cuda", dtype=tdt)
        fl = 2 * n ** 3
        print(f"{args.dtype} {n}^3: cuBLAS {fl / bench(lambda: torch.matmul(A, B)) / 1e12:.1f} TFLOP/s", flush=True)
        refs = {"MN": A.float() @ B.float(), "K": A.float() @ B.float().t()}   # B's memory as (K,N) or (N,K)
        runs = []
        for (name, cfg, opts, tma, b_major), (src, ptx) in zip(vs, built):
            key = SK.WgmmaKey(cfg, "K", b_major, "tma" if tma else "registers")
            plan = _plan(cfg, b_major, opts)
            C = torch.zeros(n, n, device="cuda", dtype=torch.float32 if cfg.out == "f32" else tdt)
            fn = driver.Function(driver.compile_image(ptx), driver.entry_name(ptx), plan.smem_bytes)
            comp = SK.CompiledWgmma(key, plan, src, K._module_path(src), fn)
            b_strides = (1, n) if b_major == "MN" else (n, 1)          # B as (N,K)
            la = WgmmaLauncher(comp, n, n, n, ((n, n), (n, 1)), ((n, n), b_strides), (n, 1))
            if not tma:                 # no map of C: the launcher runs the registers kernel given here
                la._c_map = lambda c: 0
            runs.append((name, la, C, refs[b_major], []))
        for r in range(args.rounds):
            if r:
                print(f"  cuBLAS again: {fl / bench(lambda: torch.matmul(A, B)) / 1e12:.1f} TFLOP/s", flush=True)
            for name, la, C, ref, tf in runs:
                t = bench(lambda: la(A.data_ptr(), B.data_ptr(), C.data_ptr(), 1.0, 0.0, 0))
                la.check()
                tf.append(fl / t / 1e12)
                err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
                print(f"  {name}: {tf[-1]:.1f} TFLOP/s (max rel err {err:.1e})", flush=True)
        if args.rounds > 1:
            for name, la, C, ref, tf in runs:
                print(f"  best of {args.rounds}: {max(tf):.1f}  {name}")

if __name__ == "__main__":
    sys.exit(main())
