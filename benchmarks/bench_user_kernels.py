"""User kernels written with codegen.cute against the library's own kernels (run on an H100).

    python benchmarks/bench_user_kernels.py [--size 4096] [--transpose 8192] [--json out.json]

In one process, on the same operands:

* the tutorial's final f16 GEMM (examples/f16_multistage.py, ``C = A @ B.T``, A and B
  K-major) against the generated ``mma.sync`` GEMM (``codegen.prepare`` on the same
  tensors) and cuBLAS (``torch.matmul``), TFLOP/s; target: the user kernel within 15% of
  the generated GEMM;
* the tutorial's Hopper GEMM (examples/hopper_gemm.py: TMA, mbarrier pipeline, wgmma,
  TMA-store epilogue, written by hand with codegen.cute's pieces) against the generated
  Hopper GEMM (``codegen.prepare``) and cuBLAS on the same operands, timed interleaved in
  bursts (``bench_gemm.bursts``); target: at least 0.95 of the generated GEMM at 4096^3 and
  8192^3 (``--hopper``);
* the swizzled transpose (examples/transpose.py) against a device-to-device copy of the
  same bytes (``dst.copy_(src)``), GB/s read + written; target: at least 85% of the copy;
* the cold compile time of one user kernel (the f16 GEMM) in a new process: typing,
  lowering, NVVM, ptxas and loading, up to the end of its first launch; target: 10 s;
* the run-time-shape f16 GEMM (examples/f16_runtime_shape.py: step 4's kernel over layouts
  of the kernel's arguments, residues by predicates) at every size of ``--runtime``, one
  compilation for all, against step 4's kernel compiled for each size (where the size is a
  multiple of its tile), the generated GEMM and cuBLAS on the same operands, interleaved in
  bursts (``--only-runtime``).

Prints a table and writes the figures as JSON to ``--json`` and to ``$OUT/bench_user_kernels.json``.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gemm import bench, bursts  # noqa: E402  (the GEMM benchmark's timing: the same for every figure)


def load(name):
    spec = importlib.util.spec_from_file_location(f"cute_example_{name}", os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def gemm_figures(n):
    import torch
    from numba import cuda

    import codegen

    f16 = load("f16_multistage")
    A = torch.randn(n, n, device="cuda", dtype=torch.float16)
    Bnk = torch.randn(n, n, device="cuda", dtype=torch.float16)        # (N,K), K-major
    C = torch.empty(n, n, device="cuda", dtype=torch.float16)
    g = f16.make_gemm(n, n, n)
    a, b, c = (cuda.as_cuda_array(t) for t in (A, Bnk, C))
    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
    f16.launch(g, a, b, c, stream)                                      # compile, raise the smem limit
    torch.cuda.synchronize()
    ref = A.float() @ Bnk.float().t()
    err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
    user = g.kernel[g.grid, g.block, stream, g.smem_bytes]
    t_user = bench(lambda: user(a, b, c))

    flop = 2.0 * n ** 3
    out = {"size": n, "user_tflops": flop / t_user / 1e12, "user_rel_err": err}
    Bkn = Bnk.t().contiguous()                                          # B row-major, the generated default
    mma_sync = codegen.GemmConfig.default("f16", n, n, n)               # the mma.sync plan (no arch: not Hopper)
    hopper = codegen.GemmConfig.default("f16", n, n, n, arch=torch.cuda.get_device_capability())
    for key, b_op, cfg in (("generated_tflops", Bnk.t(), mma_sync),      # the same operands (B K-major)
                           ("generated_b_rowmajor_tflops", Bkn, mma_sync),
                           ("generated_default_path_tflops", Bnk.t(), hopper)):   # wgmma on an H100
        try:
            gen = codegen.prepare(A, b_op, config=cfg)
            gen()
            torch.cuda.synchronize()
            out[key] = flop / bench(gen) / 1e12
        except Exception as e:                                          # keep the other figures
            out[key] = float("nan")
            out[key.replace("_tflops", "_error")] = f"{type(e).__name__}: {e}"
    out["cublas_tflops"] = flop / bench(lambda: torch.matmul(A, Bnk.t())) / 1e12
    out["user_vs_generated"] = out["user_tflops"] / out["generated_tflops"]
    out["target_user_vs_generated"] = 0.85
    return out


def hopper_figures(n, rounds=10):
    """The hand-written Hopper GEMM against the generated one and cuBLAS, interleaved."""
    import statistics

    import torch
    from numba import cuda

    import codegen

    hg = load("hopper_gemm")
    A = torch.randn(n, n, device="cuda", dtype=torch.float16)
    Bnk = torch.randn(n, n, device="cuda", dtype=torch.float16)        # (N,K), K-major
    C = torch.empty(n, n, device="cuda", dtype=torch.float16)
    g = hg.make_gemm()
    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
    user = hg.prepare(g, A, Bnk, C, stream=stream)                      # compile, raise the smem limit
    user()
    torch.cuda.synchronize()
    ref = A.float() @ Bnk.float().t()
    err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
    timed_out = hg.error_word(user)
    gen = codegen.prepare(A, Bnk.t())                                    # the same operands, B K-major
    gen()
    # a launch through numba's dispatcher costs tens of microseconds of host time, hidden
    # behind kernels of this size
    times = bursts([user, gen, lambda: torch.matmul(A, Bnk.t())], rounds)
    flop = 2.0 * n ** 3
    med = [statistics.median(t) for t in times]
    ratio = lambda j: statistics.median(a / b for a, b in zip(times[j], times[0]))     # noqa: E731
    return {"size": n, "user_tflops": flop / med[0] / 1e12, "generated_tflops": flop / med[1] / 1e12,
            "cublas_tflops": flop / med[2] / 1e12, "user_vs_generated": ratio(1), "user_vs_cublas": ratio(2),
            "user_rel_err": err, "wait_timed_out": timed_out, "target_user_vs_generated": 0.95}


def graph_times(launches, reps=20, rounds=10):
    """Kernel time of each ``launch(stream)``: ``reps`` launches captured in a CUDA graph,
    the graphs replayed in turn, ``rounds`` times (no host cost of numba's dispatch, which
    bounds the bursts of small problems).  Returns, per launch, its seconds in each round."""
    import torch

    graphs = []
    for fn in launches:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn(s)                                          # warm-up: compile, raise the smem limit
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                fn(torch.cuda.current_stream())
        graphs.append(g)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    out = [[] for _ in graphs]
    for _ in range(rounds):
        for g, times in zip(graphs, out):
            ev[0].record()
            g.replay()
            ev[1].record()
            torch.cuda.synchronize()
            times.append(ev[0].elapsed_time(ev[1]) / 1e3 / reps)
    return out


def runtime_shape_figures(shapes, rounds=10):
    """The run-time-shape f16 GEMM (one compilation) against the per-size static kernel of
    step 4, the generated GEMM and cuBLAS, interleaved, at each ``(M, N, K)``."""
    import statistics
    import time

    import torch
    from numba import cuda

    import codegen

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    rt, f16 = load("f16_runtime_shape"), load("f16_multistage")
    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
    rows = []
    for M, N, K in shapes:
        A = torch.randn(M, K, device="cuda", dtype=torch.float16)
        Bnk = torch.randn(N, K, device="cuda", dtype=torch.float16)    # (N,K), K-major
        C = torch.empty(M, N, device="cuda", dtype=torch.float16)
        a, b, c = (cuda.as_cuda_array(t) for t in (A, Bnk, C))
        t0 = time.perf_counter()
        rt.launch(a, b, c, stream)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        ref = A.float() @ Bnk.float().t()
        err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
        grid = (-(-M // rt.BM) * -(-N // rt.BN),)
        kern = rt.f16_gemm[grid, rt.MMA.size, stream, rt.SMEM_BYTES]
        args = (a, b, c, M, N, K, K, K, N)
        calls = {"runtime_shape": lambda: kern(*args)}
        if M % f16.BM == 0 and N % f16.BN == 0 and K % f16.BK == 0:
            g = f16.make_gemm(M, N, K)
            f16.launch(g, a, b, c, stream)                              # compile, raise the smem limit
            st = g.kernel[g.grid, g.block, stream, g.smem_bytes]
            calls["static_shape"] = lambda: st(a, b, c)
        gen = codegen.prepare(A, Bnk.t())
        gen()
        calls["generated"] = gen
        mma_cfg = codegen.GemmConfig.default("f16", M, N, K)          # the generated mma.sync kernel
        C2 = torch.empty_like(C)
        sync = codegen.prepare(A, Bnk.t(), C2, config=mma_cfg)
        sync()
        calls["generated_mma_sync"] = sync
        calls["cublas"] = lambda: torch.matmul(A, Bnk.t())
        torch.cuda.synchronize()
        names = list(calls)
        times = bursts([calls[k] for k in names], rounds)
        flop = 2.0 * M * N * K
        row = {"shape": [M, N, K], "first_call_s": first, "rel_err": err,
               "compilations": len(rt.f16_gemm.overloads)}
        # kernel time, without numba's dispatch: the user kernels and the generated mma.sync
        # kernel (the kernel a codegen.cute version of the generated GEMM would replace)
        ns = lambda st: cuda.external_stream(st.cuda_stream)         # noqa: E731
        launches = {"runtime": lambda st: rt.f16_gemm[grid, rt.MMA.size, ns(st), rt.SMEM_BYTES](*args),
                    "mma_sync": lambda st: codegen.gemm(A, Bnk.t(), C2, config=mma_cfg, stream=st)}
        if "static_shape" in calls:
            launches["static"] = lambda st: g.kernel[g.grid, g.block, ns(st), g.smem_bytes](a, b, c)
        gt = dict(zip(launches, graph_times(list(launches.values()))))
        for k, t in gt.items():
            row[f"graph_{k}_tflops"] = flop / statistics.median(t) / 1e12
        for x, y in (("runtime", "static"), ("runtime", "mma_sync"), ("static", "mma_sync")):
            if x in gt and y in gt:
                row[f"graph_{x}_vs_{y}"] = statistics.median(b_ / a_ for a_, b_ in zip(gt[x], gt[y]))
        for k, t in zip(names, times):
            row[f"{k}_tflops"] = flop / statistics.median(t) / 1e12
            if k != "runtime_shape":
                row[f"runtime_vs_{k}"] = statistics.median(x / y for x, y in zip(t, times[0]))
        rows.append(row)
        print(f"run-time-shape f16 GEMM {M}x{N}x{K}: " + ", ".join(
            f"{k} {row[k + '_tflops']:.0f}" for k in names) + " TFLOP/s; " + ", ".join(
            f"vs {k} {row['runtime_vs_' + k]:.3f}" for k in names[1:]) +
            f"; first call {first:.2f} s, compilations so far {row['compilations']}, rel err {err:.1e}"
            + "; CUDA graphs: " + ", ".join(f"{k} {row['graph_' + k + '_tflops']:.0f}" for k in gt)
            + "".join(f", {k[6:]} {v:.3f}" for k, v in row.items() if k.startswith("graph_") and "_vs_" in k),
            flush=True)
    return rows


def transpose_figures(n):
    import torch
    from numba import cuda

    tr = load("transpose")
    X = torch.randn(n, n, device="cuda", dtype=torch.float32)
    Y = torch.empty(n, n, device="cuda", dtype=torch.float32)
    Z = torch.empty(n, n, device="cuda", dtype=torch.float32)
    t = tr.make_transpose(n, n)
    x, y = cuda.as_cuda_array(X), cuda.as_cuda_array(Y)
    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
    k = t.kernel[t.grid, t.block, stream]
    k(x, y)
    torch.cuda.synchronize()
    ok = bool(torch.equal(Y, X.t()))
    t_tr = bench(lambda: k(x, y))
    t_cp = bench(lambda: Z.copy_(X))
    nbytes = 2.0 * X.numel() * 4
    out = {"size": n, "transpose_gbs": nbytes / t_tr / 1e9, "copy_gbs": nbytes / t_cp / 1e9, "correct": ok}
    out["transpose_vs_copy"] = out["transpose_gbs"] / out["copy_gbs"]
    out["target_transpose_vs_copy"] = 0.85
    return out


_COLD = r"""
import sys, time
import numpy as np
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from numba import cuda
cuda.current_context()
import importlib.util
spec = importlib.util.spec_from_file_location("f16", sys.argv[1] + "/examples/f16_multistage.py")
f16 = importlib.util.module_from_spec(spec); spec.loader.exec_module(f16)
t1 = time.perf_counter()
g = f16.make_gemm(1024, 1024, 1024)
a = cuda.device_array((1024, 1024), np.float16); b = cuda.device_array((1024, 1024), np.float16)
c = cuda.device_array((1024, 1024), np.float16)
f16.launch(g, a, b, c)
cuda.synchronize()
t2 = time.perf_counter()
print(f"{t1 - t0} {t2 - t1}")
"""


def cold_compile():
    import tempfile

    env = dict(os.environ, NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="cute_cold_"))   # nothing cached
    r = subprocess.run([sys.executable, "-c", _COLD, ROOT], capture_output=True, text=True, env=env, timeout=600)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    imp, first = (float(x) for x in r.stdout.split()[-2:])
    return {"import_and_layouts_s": imp, "first_launch_s": first, "target_first_launch_s": 10.0}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--transpose", type=int, default=8192)
    p.add_argument("--hopper", default="4096,8192", help="sizes of the Hopper comparison ('' to skip)")
    p.add_argument("--only-hopper", action="store_true")
    p.add_argument("--runtime", default="1000x1000x1000,1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,"
                                         "4000x3000x2056,8192x200x4096",
                   help="(M x N x K),... of the run-time-shape GEMM ('' to skip)")
    p.add_argument("--only-runtime", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import torch

    res = {"device": torch.cuda.get_device_name()}
    print(f"device: {res['device']}")
    if args.runtime:
        res["runtime_shape_f16"] = runtime_shape_figures(
            [tuple(int(x) for x in s.split("x")) for s in args.runtime.split(",")])
    if args.only_runtime:
        args.hopper, args.only_hopper = "", True
    if args.hopper:
        res["hopper_f16"] = [hopper_figures(int(n)) for n in args.hopper.split(",")]
        for h in res["hopper_f16"]:
            print(f"Hopper f16 GEMM {h['size']}^3 (TFLOP/s, bursts): user kernel {h['user_tflops']:.0f}, generated "
                  f"{h['generated_tflops']:.0f}, cuBLAS {h['cublas_tflops']:.0f}; user/generated "
                  f"{h['user_vs_generated']:.3f} (target >= 0.95), user/cuBLAS {h['user_vs_cublas']:.3f}, "
                  f"max rel error {h['user_rel_err']:.1e}, waits timed out {h['wait_timed_out']}", flush=True)
    if not args.only_hopper:
        res["cold_compile"] = cold_compile()
        res["gemm_f16"] = gemm_figures(args.size)
        res["transpose_f32"] = transpose_figures(args.transpose)
        _print_sm80(res)
    for path in filter(None, [args.json, os.path.join(os.environ["OUT"], "bench_user_kernels.json")
                              if os.environ.get("OUT") else None]):
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
    return 0


def _print_sm80(res):
    g, t, c = res["gemm_f16"], res["transpose_f32"], res["cold_compile"]
    print(f"f16 GEMM {g['size']}^3 (TFLOP/s): user kernel {g['user_tflops']:.0f}, generated mma.sync "
          f"{g['generated_tflops']:.0f} (B row-major {g['generated_b_rowmajor_tflops']:.0f}), "
          f"generated default path {g['generated_default_path_tflops']:.0f}, "
          f"cuBLAS {g['cublas_tflops']:.0f}; user/generated mma.sync {g['user_vs_generated']:.2f} "
          f"(target >= 0.85), max rel error {g['user_rel_err']:.1e}")
    print(f"transpose f32 {t['size']}^2 (GB/s): user kernel {t['transpose_gbs']:.0f}, D2D copy "
          f"{t['copy_gbs']:.0f}; ratio {t['transpose_vs_copy']:.2f} (target >= 0.85), correct {t['correct']}")
    print(f"cold compile of the f16 user kernel: first launch {c['first_launch_s']:.1f} s (target <= 10 s), "
          f"imports {c['import_and_layouts_s']:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
