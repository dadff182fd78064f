"""How long a user waits: compile times of generated kernels and the host cost of a call.

    python benchmarks/compile_time.py            # on a GPU machine (torch, triton)
    python benchmarks/compile_time.py --cpu      # no GPU: codegen.compile_ptx only
    [--dtypes f16,bf16,tf32,f32,f64,e4m3] [--json out.json]
    [--path mma.sync]   # GPU: the mma.sync kernels even where the Hopper path would run
    [--as-gpu]          # --cpu: the GPU run's kernels (1024^3 plan, B MN-major) instead of the defaults
    [--hopper]          # --cpu: the defaults for an H100 (Hopper kernels for sm_90a where they apply)
    [--repeat N]        # --cpu: N cold processes per dtype; CPU seconds min and median

Every cold figure runs in a new process with empty caches (a fresh ``LAYOUTALG_CACHE``,
which holds the generated modules and numba's cache of their binaries); "cached" runs a
second new process on the same caches.  Reported per case: the import time of codegen
and the first call (emission, compilation, loading and one run).  Beside them, the same
for a Triton matmul (a fresh ``TRITON_CACHE_DIR``), and the host time per call of
``codegen.gemm``, of a prepared launch and of ``torch.matmul`` at 512^3 (calls queued
back to back: the host, not the GPU, is the limit there).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))

_GPU_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import torch
torch.ones(1, device="cuda")
t1 = time.perf_counter()
import codegen
t2 = time.perf_counter()
name = sys.argv[1]
tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32,
       "f64": torch.float64, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[name]
A = torch.randn(1024, 1024, device="cuda").to(tdt)
B = torch.randn(1024, 1024, device="cuda").to(tdt)
if name in ("e4m3", "e5m2"):        # 8-bit floats: B column-major (K-major), as wgmma reads them
    B = B.t()
cfg = codegen.GemmConfig.default(name, 1024, 1024, 1024) if sys.argv[2] == "mma.sync" else None
C = codegen.gemm(A, B, precision="tf32" if name == "tf32" else None, config=cfg)
torch.cuda.synchronize()
t3 = time.perf_counter()
ref = A.double() @ B.double() if A.dtype.itemsize > 1 else A.float().double() @ B.float().double()
err = ((C.double() - ref).abs().max() / ref.abs().max()).item()
print(json.dumps({"import_torch_s": t1 - t0, "import_codegen_s": t2 - t1, "first_call_s": t3 - t2, "rel_err": err}))
"""

_TRITON_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
torch.ones(1, device="cuda")
t0 = time.perf_counter()
import triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0) // tl.cdiv(N, BN)
    pn = tl.program_id(0) % tl.cdiv(N, BN)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))

t1 = time.perf_counter()
A = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
B = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
C = torch.empty(1024, 1024, device="cuda", dtype=torch.float16)
mm[(64,)](A, B, C, 1024, 1024, 1024, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
torch.cuda.synchronize()
t2 = time.perf_counter()
print(json.dumps({"import_triton_s": t1 - t0, "first_call_s": t2 - t1}))
"""

_CPU_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import codegen
from codegen import GemmConfig
t1 = time.perf_counter()
as_gpu = sys.argv[2] == "as-gpu"
cfg = (GemmConfig.default(sys.argv[1], 1024, 1024, 1024) if as_gpu
       else GemmConfig.default(sys.argv[1], arch=(9, 0) if sys.argv[2] == "hopper" else None))
b_major = "MN" if as_gpu else "K"
cc = (9, 0, "a") if cfg.path == "wgmma" else (9, 0)      # wgmma needs sm_90a
c0 = time.process_time()
ptx = codegen.compile_ptx(cfg, cc=cc, b_major=b_major)
c1 = time.process_time()
t2 = time.perf_counter()
codegen.compile_ptx(cfg, cc=cc, b_major=b_major)
t3 = time.perf_counter()
print(json.dumps({"import_codegen_s": t1 - t0, "compile_ptx_s": t2 - t1, "compile_ptx_cpu_s": c1 - c0,
                  "again_same_process_s": t3 - t2, "ptx_chars": len(ptx),
                  "source_lines": len(codegen.emit_gemm_source(cfg, b_major=b_major).splitlines())}))
"""


def _child(code, args, env):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:   # Triton reads the source file
        f.write(code)
    try:
        p = subprocess.run([sys.executable, f.name, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    finally:
        os.unlink(f.name)
    if p.returncode:
        raise RuntimeError(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def _env(cache):
    env = dict(os.environ)
    env["LAYOUTALG_CACHE"] = cache
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env.setdefault("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "1")
    return env


def cold_and_cached(code, name, variant, repeat=1):
    """The first process's figures on empty caches and a second's on the same caches; with
    ``repeat`` > 1 the cold figures hold, per number, the list of ``repeat`` cold runs."""
    colds = []
    for i in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            env = _env(cache)
            colds.append(_child(code, [name, variant], env))
            if i == 0:
                cached = _child(code, [name, variant], env)
    cold = colds[0] if repeat == 1 else {k: [c[k] for c in colds] for k in colds[0]}
    return cold, cached


def host_times(fns, rounds=21, iters=200):
    """``{name: (best, median)}``: host microseconds a call of each of ``fns`` (a dict of
    callables), queued back to back, over ``rounds`` runs of ``iters`` calls each, the
    functions taking turns within a round (so that a slow stretch of the host costs them
    alike). ``iters`` stays below the depth of the GPU's launch queue, so that the enqueues
    do not wait for the kernels; each run starts on an idle GPU."""
    import statistics

    import torch

    for fn in fns.values():
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    runs = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            runs[name].append((t1 - t0) / iters * 1e6)
    return {name: (min(v), statistics.median(v)) for name, v in runs.items()}


def host_costs():
    """Host microseconds per call at 512^3 (queued back to back; the median of
    :func:`host_times`), torch tensors."""
    import torch

    import codegen

    n = 512
    A = torch.randn(n, n, device="cuda", dtype=torch.float16)
    B = torch.randn(n, n, device="cuda", dtype=torch.float16)
    C = torch.empty(n, n, device="cuda", dtype=torch.float16)
    launch = codegen.prepare(A, B, C)
    times = host_times({
        "gemm_with_C_us": lambda: codegen.gemm(A, B, C),
        "gemm_new_C_us": lambda: codegen.gemm(A, B),
        "mm_us": lambda: codegen.mm(A, B),
        "prepared_launch_us": launch,
        "torch_matmul_us": lambda: torch.matmul(A, B),
        "torch_matmul_out_us": lambda: torch.matmul(A, B, out=C),
    })
    return {name: median for name, (_, median) in times.items()}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--cpu", action="store_true", help="no GPU: time codegen.compile_ptx only")
    p.add_argument("--dtypes", default="f16,bf16,tf32,f32,f64,e4m3", help="(e4m3/e5m2: GPU only)")
    p.add_argument("--json", default=None)
    p.add_argument("--path", default="default", choices=("default", "mma.sync"),
                   help="GPU: 'mma.sync' passes the mma.sync plan as config (no Hopper kernel)")
    p.add_argument("--hopper", action="store_true", help="--cpu: the default plans for an H100 "
                   "(GemmConfig.default(dtype, arch=(9, 0)): Hopper kernels for sm_90a where they apply)")
    p.add_argument("--repeat", type=int, default=1, help="--cpu: cold processes per dtype (min and median)")
    p.add_argument("--as-gpu", action="store_true", help="--cpu: the kernels the GPU run compiles "
                   "(the 1024^3 plan, B MN-major) instead of the default plans with K-major B")
    a = p.parse_args(argv)
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cases": []}
    if a.cpu:
        variant = "as-gpu" if a.as_gpu else "hopper" if a.hopper else "default"
        for name in a.dtypes.split(","):
            cold, cached = cold_and_cached(_CPU_CHILD, name, variant, a.repeat)
            out["cases"].append({"dtype": name, "cold": cold, "cached": cached})
            if a.repeat > 1:
                import statistics

                def mm(key, scale=1.0):
                    v = cold[key]
                    return f"{min(v) * scale:.2f} / {statistics.median(v) * scale:.2f}"

                print(f"{name:5s} compile_ptx cold, {a.repeat} processes, min / median: CPU "
                      f"{mm('compile_ptx_cpu_s')} s, wall {mm('compile_ptx_s')} s (import {mm('import_codegen_s')} s, "
                      f"{cold['source_lines'][0]} source lines); cached in a new process {cached['compile_ptx_s']:.2f}s",
                      flush=True)
                continue
            print(f"{name:5s} compile_ptx cold {cold['compile_ptx_s']:.2f}s, CPU {cold['compile_ptx_cpu_s']:.2f}s "
                  f"(import {cold['import_codegen_s']:.2f}s, "
                  f"again in-process {cold['again_same_process_s'] * 1e3:.1f} ms, {cold['source_lines']} source lines); "
                  f"cached in a new process {cached['compile_ptx_s']:.2f}s", flush=True)
    else:
        import torch

        out["device"] = torch.cuda.get_device_name()
        for name in a.dtypes.split(","):
            cold, cached = cold_and_cached(_GPU_CHILD, name, a.path)
            out["cases"].append({"dtype": name, "cold": cold, "cached": cached})
            print(f"{name:5s} first call cold {cold['first_call_s']:.2f}s (import codegen {cold['import_codegen_s']:.2f}s), "
                  f"cached {cached['first_call_s']:.2f}s; rel_err {cold['rel_err']:.1e}", flush=True)
        with tempfile.TemporaryDirectory() as tc:
            env = _env(tc)
            env["TRITON_CACHE_DIR"] = tc
            cold = _child(_TRITON_CHILD, [HERE], env)
            cached = _child(_TRITON_CHILD, [HERE], env)
        out["triton"] = {"cold": cold, "cached": cached}
        print(f"triton first call cold {cold['first_call_s']:.2f}s, cached {cached['first_call_s']:.2f}s "
              f"(import triton {cold['import_triton_s']:.2f}s)", flush=True)
        out["host_us"] = host_costs()
        print("host time per call, 512^3 f16: " + ", ".join(f"{k} {v:.1f}" for k, v in out["host_us"].items()),
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
