"""GEMM speed: generated kernels against cuBLAS (torch.matmul) and an autotuned Triton
matmul (benchmarks/triton_matmul.py), all in the same process.

    python benchmarks/bench_gemm.py [--sizes 4096] [--dtypes f16,bf16,tf32,e4m3,e5m2] [--configs SPEC]
                                    [--precompile WORKERS] [--bursts ROUNDS] [--json out.json]

Prints TFLOP/s per dtype and size and the ratios to cuBLAS and Triton: timed one library
after the other (``bench``), then interleaved in short bursts (``--bursts``, the steadier
ratios: ``bursts``).  Needs a CUDA GPU, torch and triton (``--no-triton`` leaves Triton out).

f16 and bf16 multiply row-major A and B.  tf32 and the 8-bit floats multiply a row-major A
by a column-major B (both K-major: the layout the Hopper kernel reads them in; on other GPUs
the mma.sync kernel takes it too): tf32 against cuBLAS with TF32 allowed
(``torch.backends.cuda.matmul.allow_tf32``), e4m3/e5m2 (bf16 C, scales 1) against cuBLAS fp8
through ``torch._scaled_mm`` (which takes no e5m2 x e5m2: e5m2 has no cuBLAS column there).
"""

import argparse
import json
import statistics
import time


def bench(fn, iters=20, warmup=3, reps=5, min_rep_s=0.05):
    """Median over ``reps`` of the mean time of back-to-back calls (CUDA events): ``iters``
    calls a rep, more where that takes less than ``min_rep_s`` (short kernels: a rep of a
    few milliseconds measured clock ramps as much as the kernel).

    The generated kernel is timed through ``codegen.prepare`` (launch only), and the
    per-call ``codegen.gemm`` (argument checks, array conversion, launch) separately.

    Calls are queued back to back, as in an application, so the host-side cost of a call is
    hidden when it is shorter than the kernel; both libraries are timed the same way.
    """
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    one = start.elapsed_time(end) / 1e3 / iters
    iters = max(iters, min(5000, int(min_rep_s / max(one, 1e-7)) + 1))
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / iters)
    times.sort()
    return times[len(times) // 2] / 1e3


def bursts(calls, rounds, burst_s=0.02, shuffle=False):
    """Time the callables ``calls`` interleaved: each of ``rounds`` rounds runs every call in
    turn in a burst of back-to-back launches lasting about ``burst_s`` (CUDA events). Returns,
    per call, its seconds a launch in each round.

    Under the board's power cap an H100's clock drifts over seconds and depends on what ran
    just before, so separate timings of two libraries differ by several percent from run to
    run; ratios within a round, and their median over rounds, are steadier."""
    import torch

    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]

    def burst(fn, n):
        ev[0].record()
        for _ in range(n):
            fn()
        ev[1].record()
        torch.cuda.synchronize()
        return ev[0].elapsed_time(ev[1]) / 1e3 / n

    sizes = []
    for fn in calls:
        fn()
        sizes.append(max(3, int(burst_s / burst(fn, 5))))
    out = [[] for _ in calls]
    rng = __import__("random").Random(0)
    for _ in range(rounds):
        order = list(range(len(calls)))
        if shuffle:                 # each call after each other one as often: no bias from what ran before
            rng.shuffle(order)
        for i in order:
            out[i].append(burst(calls[i], sizes[i]))
    return out


def interleaved(calls, flop, rounds=10):
    """The named callables ``calls`` (a dict) warmed up, then timed interleaved
    (:func:`bursts`): ``(TFLOP/s by name, seconds a launch per round by name)`` for ``flop``
    floating-point operations a call."""
    import statistics

    import torch

    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    times = dict(zip(calls, bursts(list(calls.values()), rounds)))
    return {k: flop / statistics.median(t) / 1e12 for k, t in times.items()}, times


def save_json(res, name, path=None):
    """``res`` as JSON at ``path`` (if given) and as ``$OUT/<name>`` (if ``$OUT`` is set)."""
    import json
    import os

    out_dir = os.environ.get("OUT")
    for p in filter(None, [path, os.path.join(out_dir, name) if out_dir else None]):
        with open(p, "w") as f:
            json.dump(res, f, indent=1)


def tflops_text(row):
    """``"name 123, ..."``: the ``<name>_tflops`` entries of a result row, rounded.

    >>> tflops_text({"ours_tflops": 612.4, "cublas_tflops": 600.0, "rel_err": 1e-3})
    'ours 612, cublas 600'
    """
    return ", ".join(f"{k[:-len('_tflops')]} {v:.0f}" for k, v in row.items() if k.endswith("_tflops"))


def median_ratio(times, ref):
    """The median over rounds of ``ref``'s time over ``times`` (above 1: ``times`` is faster)."""
    import statistics

    return statistics.median(r / t for t, r in zip(times, ref))


def extra_configs(spec, name):
    """Configs from ``--configs``: ``[dtype:]bm,bn,bk,wm,wn,stages[,min_blocks];...``.

    Entries without a dtype prefix apply to f16 and bf16."""
    from codegen import GemmConfig

    out = []
    for c in filter(None, spec.split(";")):
        dts, _, c = c.rpartition(":")
        if name not in (dts.split("/") if dts else ("f16", "bf16")):
            continue
        v = [int(x) for x in c.split(",")]
        bm, bn, bk, wm, wn, st = v[:6]
        out.append(GemmConfig(name, None, bm, bn, bk, wm, wn, st, 8, v[6] if len(v) > 6 else 1))
    return out


def _compile_one(job):
    """Compile (and cache on disk) the kernel of one (dtype, config) for the benchmark's operand layouts."""
    import torch
    import codegen

    name, cfg = job
    A, B = operands(torch, name, 256, 256, 256)
    codegen.gemm(A, B, config=cfg)
    torch.cuda.synchronize()
    return repr(cfg)


FP8 = ("e4m3", "e5m2")


def operands(torch, name, M, N, K):
    """A (M,K) and B (K,N): row-major both for 16-bit types; for tf32 and the 8-bit floats a
    column-major B (both operands K-major)."""
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32,
          "f64": torch.float64, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[name]
    A = torch.randn(M, K, device="cuda").to(dt)
    if name in FP8 + ("tf32",):
        return A, torch.randn(N, K, device="cuda").to(dt).t()
    return A, torch.randn(K, N, device="cuda").to(dt)


def reference(torch, name):
    """The library call to compare with: cuBLAS (torch.matmul, or torch._scaled_mm for fp8), or None."""
    if name not in FP8:
        return torch.matmul
    if name == "e5m2":
        return None
    one = torch.ones((), device="cuda")
    return lambda A, B: torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def shapes(spec):
    """``--sizes``: comma-separated ``n`` (n x n x n) or ``MxNxK``; a list of (M, N, K)."""
    out = []
    for s in filter(None, spec.split(",")):
        v = [int(x) for x in s.lower().split("x")]
        if len(v) not in (1, 3):
            raise SystemExit(f"--sizes: {s!r} is neither n nor MxNxK")
        out.append(tuple(v * 3 if len(v) == 1 else v))
    return out


def precompile(dtypes, spec, mnk, workers):
    """Compile every benchmarked kernel in ``workers`` processes first (numba caches them on
    disk), so that the timed process only loads them."""
    import multiprocessing as mp

    from codegen import GemmConfig

    import torch

    cc = torch.cuda.get_device_capability()
    jobs = set()
    for M, N, K in mnk:
        jobs |= {(d, c) for d in dtypes if d not in FP8 for c in [GemmConfig.default(d, M, N, K)] + extra_configs(spec, d)}
        jobs |= {(d, c) for d in dtypes for c in [GemmConfig.default(d, M, N, K, arch=cc)] if c.path != "mma_sync"}
    jobs = sorted(jobs, key=repr)
    with mp.get_context("spawn").Pool(min(workers, len(jobs))) as pool:
        pool.map(_compile_one, jobs)


def main(argv=None):
    import torch
    import codegen
    from codegen import GemmConfig

    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4096", help="comma-separated n (square) or MxNxK")
    p.add_argument("--dtypes", default="f16,bf16,tf32")
    p.add_argument("--configs", default="", help="extra f16/bf16 configs: bm,bn,bk,wm,wn,stages[,min_blocks];...")
    p.add_argument("--json", default=None)
    p.add_argument("--precompile", type=int, default=0, help="compile the kernels in this many processes first")
    p.add_argument("--no-triton", action="store_true", help="leave the Triton matmul out")
    p.add_argument("--bursts", type=int, default=30,
                   help="then time the default kernel, cuBLAS and Triton interleaved in this many rounds of short "
                        "bursts (0: not): the median ratios of the same rounds")
    a = p.parse_args(argv)
    tri = None
    if not a.no_triton:
        import os
        import sys

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from triton_matmul import matmul as tri
    if a.precompile:
        t0 = time.time()
        precompile(a.dtypes.split(","), a.configs, shapes(a.sizes), a.precompile)
        print(f"precompiled in {time.time() - t0:.1f}s", flush=True)
    rows = []
    dev = torch.cuda.get_device_name()
    for M, N, K in shapes(a.sizes):
        for name in a.dtypes.split(","):
            A, B = operands(torch, name, M, N, K)
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            cc = torch.cuda.get_device_capability()
            cfgs = [GemmConfig.default(name, M, N, K, arch=cc)]
            if cfgs[0].path != "mma_sync" and name not in FP8:     # the mma.sync default beside the Hopper one
                cfgs.append(GemmConfig.default(name, M, N, K))
            cfgs += extra_configs(a.configs, name)
            lib = reference(torch, name)
            if lib is not None:
                ref = lib(A, B)
                t_ref = bench(lambda: lib(A, B))
            else:                               # no cuBLAS call: float32 products as the reference
                ref, t_ref = A.float() @ B.float(), None
            t_tri = None
            if tri is not None:
                try:
                    tri(A, B)                   # autotune once, outside the timing
                    t_tri = bench(lambda: tri(A, B))
                except Exception as e:          # e.g. a Triton without this fp8 dot
                    print(f"{name}: Triton matmul failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
            for cfg in cfgs:
                C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16 if name in FP8 else ref.dtype)
                t0 = time.time()
                codegen.gemm(A, B, C, config=cfg)
                torch.cuda.synchronize()
                first = time.time() - t0
                err = ((C.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                t_call = bench(lambda: codegen.gemm(A, B, C, config=cfg))
                launch = codegen.prepare(A, B, C, config=cfg)
                t = bench(launch)
                fl = 2 * M * N * K
                row = {"device": dev, "n": M if M == N == K else None, "M": M, "N": N, "K": K, "dtype": name, "config": repr(cfg), "tflops": fl / t / 1e12,
                       "tflops_per_gemm_call": fl / t_call / 1e12,
                       "cublas_tflops": fl / t_ref / 1e12 if t_ref else None,
                       "ratio": t_ref / t if t_ref else None, "rel_err": err,
                       "triton_tflops": fl / t_tri / 1e12 if t_tri else None,
                       "ratio_triton": t_tri / t if t_tri else None, "first_call_s": first}
                if a.bursts and cfg is cfgs[0]:
                    calls = {"ours": launch}
                    if t_ref:
                        calls["cuBLAS"] = lambda: lib(A, B)
                    if t_tri:
                        calls["Triton"] = lambda: tri(A, B)
                    ts = dict(zip(calls, bursts(list(calls.values()), a.bursts)))
                    row["bursts"] = a.bursts
                    row["tflops_bursts"] = fl / statistics.median(ts["ours"]) / 1e12
                    row["ratio_bursts"] = median_ratio(ts["ours"], ts["cuBLAS"]) if t_ref else None
                    row["ratio_triton_bursts"] = median_ratio(ts["ours"], ts["Triton"]) if t_tri else None
                rows.append(row)
                print(f"{name:5s} {M}x{N}x{K} {cfg.path} {cfg.bm}x{cfg.bn}x{cfg.bk} w{cfg.warps_m}x{cfg.warps_n} s{cfg.stages}"
                      + (f" split-K {cfg.split_k}" if cfg.split_k > 1 else "") + ": "
                      f"{row['tflops']:7.1f} TFLOP/s  "
                      + (f"cuBLAS {row['cublas_tflops']:7.1f}  ratio {row['ratio']:.2f}  " if t_ref else "cuBLAS n/a  ")
                      + (f"Triton {row['triton_tflops']:7.1f}  vs Triton {row['ratio_triton']:.2f}  " if t_tri else "") +
                      f"rel_err {err:.1e}  (gemm() per call: {row['tflops_per_gemm_call']:.1f})  "
                      f"first call {first:.1f}s", flush=True)
                if "bursts" in row:
                    print(f"      interleaved bursts x{a.bursts}: {row['tflops_bursts']:7.1f} TFLOP/s"
                          + (f"  ratio {row['ratio_bursts']:.3f}" if row["ratio_bursts"] else "")
                          + (f"  vs Triton {row['ratio_triton_bursts']:.3f}" if row["ratio_triton_bursts"] else ""),
                          flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
