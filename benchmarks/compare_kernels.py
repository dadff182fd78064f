"""A generated GEMM kernel against another build of it, and against cuBLAS, interleaved.

    # 1. on any machine, with the other build's tree first on the path: its PTX per kernel
    PYTHONPATH=OTHER_TREE python benchmarks/compare_kernels.py --write-ptx DIR [--dtypes ...] [--shapes ...]
    # 2. on the GPU, with this tree: both kernels and cuBLAS timed in interleaved bursts
    python benchmarks/compare_kernels.py --ptx DIR [--rounds 20] [--json out.json]

Both builds' kernels take their arguments by name (``codegen.sm90.args``,
``codegen.args``), so the other build's kernel is launched by this build's launcher, on the
same arrays and tensor maps, with the arguments it declares: only the kernel differs.
``--path mma_sync`` compares the ``mma.sync`` kernels (``GemmConfig.default`` without an
architecture) instead of the Hopper ones. For each shape the plan is ``GemmConfig.default`` (as ``codegen.gemm``
chooses it); f16 and bf16 multiply row-major A and B, tf32 and e4m3 a row-major A by a
column-major B (both K-major), as ``bench_gemm.py`` does. Prints, per case, TFLOP/s of each
and the ratios (median over rounds of the ratio within a round).
"""

import argparse
import json
import os
import statistics
import sys

SQUARES = (1024, 2048, 4096, 8192)
LLM = ((8192, 8192, 1024), (16384, 4096, 4096), (4096, 14336, 4096), (128, 8192, 8192), (1280, 4096, 4096),
       (3072, 3072, 3072), (64, 4096, 4096), (2176, 2048, 4096))


def shapes(spec):
    if spec:
        return [tuple(int(x) for x in s.split("x")) for s in spec.split(",")]
    return [(n, n, n) for n in SQUARES] + list(LLM)


#: "wgmma" (the Hopper kernel) or "mma_sync", set by ``--path``.
PATH = ["wgmma"]
#: B's majorness ("K" or "MN"; None: MN for f16 and bf16, else K), set by ``--b-major``.
B_MAJOR = [None]


def key_of(dtype, M, N, K):
    """The kernel ``codegen.gemm`` runs for this problem (row-major C, beta 0)."""
    from codegen import GemmConfig

    b_major = B_MAJOR[0] or ("MN" if dtype in ("f16", "bf16") else "K")
    if PATH[0] == "mma_sync":
        from codegen.kernel import KernelKey

        return KernelKey(GemmConfig.default(dtype, M, N, K), "K", b_major)
    from codegen.sm90.kernel import WgmmaKey

    cfg = GemmConfig.default(dtype, M, N, K, arch=(9, 0))
    return WgmmaKey(cfg, "K", b_major, "tma" if cfg.out in ("f16", "bf16") else "registers")


def key_name(key):
    c = key.config
    tail = getattr(key, "epilogue", None) or "sync"
    return (f"{c.dtype}-{c.out}-{c.bm}x{c.bn}x{c.bk}-s{c.stages}-g{c.group_m}-k{c.split_k}-c{c.cluster_m}-"
            f"{key.a_major}{key.b_major}-{tail}")


#: The kernel's arguments in builds that declare none (``codegen.sm90.args`` absent).
LEGACY_ARGS = ("tmap_a", "tmap_b", "tmap_c", "C", "M", "N", "K", "scm", "scn", "alpha", "beta", "err", "ws", "splits")


def _arg_names(dtype="f16"):
    if PATH[0] == "mma_sync":
        from codegen.args import mma_sync_args

        return mma_sync_args(dtype).names
    try:
        from codegen.sm90.args import GEMM_ARGS
    except ImportError:
        return LEGACY_ARGS
    return GEMM_ARGS.names


def _ptx_and_smem(key):
    if PATH[0] == "mma_sync":
        from codegen.kernel import compile_ptx_text, get_kernel

        return compile_ptx_text(key, (9, 0)), get_kernel(key, jit=False).smem_bytes
    from codegen.sm90.kernel import compile_wgmma_ptx, wgmma_plan

    return compile_wgmma_ptx(key), wgmma_plan(key).smem_bytes


def write_ptx(out_dir, dtypes, cases):
    os.makedirs(out_dir, exist_ok=True)
    for dtype in dtypes:
        for M, N, K in cases:
            key = key_of(dtype, M, N, K)
            path = os.path.join(out_dir, key_name(key) + ".ptx")
            if not os.path.exists(path):
                ptx, smem = _ptx_and_smem(key)
                with open(path, "w") as f:
                    f.write(f"// smem {smem} args {','.join(_arg_names(dtype))}\n" + ptx)
            print(dtype, M, N, K, path)


def operands(torch, dtype, M, N, K):
    """A (M,K) row-major; B (K,N) row-major (MN-major) or the transpose of a row-major (N,K)."""
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32,
          "f64": torch.float64, "e4m3": torch.float8_e4m3fn}[dtype]
    A = torch.randn(M, K, device="cuda").to(dt)
    if (B_MAJOR[0] or ("MN" if dtype in ("f16", "bf16") else "K")) == "MN":
        B = torch.randn(K, N, device="cuda").to(dt)
    else:
        B = torch.randn(N, K, device="cuda").to(dt).t()
    return A, B


def reference(torch, dtype, A, B):
    """cuBLAS on the same operands: torch.matmul, TF32 for tf32, _scaled_mm for e4m3."""
    if dtype == "e4m3":
        one = torch.ones((), device="cuda")
        return lambda: torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    return lambda: torch.matmul(A, B)


def other_launch(launch, ptx_path):
    """``launch`` with its kernel replaced by the one in ``ptx_path``: the same arrays, maps and
    argument values, passed in the order that kernel declares them."""
    import copy
    import ctypes
    from dataclasses import replace
    from types import SimpleNamespace

    from codegen import driver

    with open(ptx_path) as f:
        head, ptx = f.readline().split(), f.read()
    smem, names = int(head[2]), head[4].split(",")
    if PATH[0] == "mma_sync":
        return _other_sync(launch, ptx, smem, names)
    la = launch._launcher
    inner = getattr(la, "inner", la)
    ep = launch.kernel.key.epilogue
    assert smem == inner.smem, (smem, inner.smem)
    fn = driver.Function(driver.compile_image(ptx), driver.entry_name(ptx), smem)
    other = copy.copy(inner)
    other._kernels = {ep: replace(inner._kernels[ep], function=fn)}
    vals = [inner.slots.values[inner.slots.names.index(n)] for n in names]     # the same ctypes values
    other.slots = SimpleNamespace(pointers=(ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals]))
    out = copy.copy(launch)
    if la is inner:
        out._launcher = other
    else:
        out._launcher = copy.copy(la)
        out._launcher.inner = other
    return out


def _other_sync(launch, ptx, smem, names):
    """An ``mma.sync`` launch whose kernel is the other build's, with its own shared memory."""
    import copy
    import ctypes
    from types import SimpleNamespace

    from codegen import driver

    inner = launch._launcher
    other = copy.copy(inner)
    other.fn = driver.Function(driver.compile_image(ptx), driver.entry_name(ptx), smem)
    other.smem = smem
    vals = [inner.slots.values[inner.slots.names.index(n)] for n in names]
    other.slots = SimpleNamespace(pointers=(ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals]))
    out = copy.copy(launch)
    out._launcher = other
    return out


def _compile(args):
    key, path, b_major = args
    PATH[0], B_MAJOR[0] = path, b_major
    _ptx_and_smem(key)              # into the kernel cache on disk, for the main process


def precompile(dtypes, cases, workers):
    """This build's kernels to PTX in ``workers`` processes (numba compiles one at a time)."""
    from concurrent.futures import ProcessPoolExecutor

    keys = sorted({key_of(d, *c) for d in dtypes for c in cases}, key=key_name)
    with ProcessPoolExecutor(workers) as ex:
        list(ex.map(_compile, [(k, PATH[0], B_MAJOR[0]) for k in keys]))


def graphed(calls, n, stream):
    """Each callable ``n`` times back to back, captured in a CUDA graph on ``stream``; returns
    the graphs' replays (the GPU's time alone: no host cost between launches)."""
    import torch

    out = []
    for fn in calls:
        with torch.cuda.stream(stream):
            fn()                                   # warm up (cuBLAS picks its kernel) outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            for _ in range(n):
                fn()
        out.append(g.replay)
    return out


def run(ptx_dir, dtypes, cases, rounds, as_json, graph=0):
    import torch

    import codegen
    from bench_gemm import bursts

    rows = []
    for dtype in dtypes:
        for M, N, K in cases:
            key = key_of(dtype, M, N, K)
            A, B = operands(torch, dtype, M, N, K)
            kw = (dict(out_dtype=torch.bfloat16) if dtype == "e4m3" else dict(precision=dtype) if dtype in ("tf32", "f32")
                  else {})
            stream = torch.cuda.Stream() if graph else None
            if PATH[0] == "mma_sync":
                kw["config"] = key.config
            launch = codegen.prepare(A, B, stream=stream, **kw)
            assert key_name(launch.kernel.key) == key_name(key), (launch.kernel.key, key)
            old = other_launch(launch, os.path.join(ptx_dir, key_name(key) + ".ptx"))
            ref = reference(torch, dtype, A, B)
            launch()
            want = launch.C.float().clone()
            old()
            same = torch.equal(launch.C.float(), want)
            calls = [launch, old, ref]
            per = 1
            if graph:                     # graphs of `graph` launches: time a launch's GPU time alone
                calls, per = graphed(calls, graph, stream), graph
            times = [[t / per for t in ts] for ts in bursts(calls, rounds, shuffle=True)]
            flops = 2.0 * M * N * K
            ratio = [statistics.median(a / b for a, b in zip(times[j], times[0])) for j in (1, 2)]
            row = dict(dtype=dtype, M=M, N=N, K=K, kernel=key_name(key),
                       tflops=[flops / statistics.median(t) / 1e12 for t in times],
                       new_over_old=ratio[0], new_over_cublas=ratio[1], identical=same)
            rows.append(row)
            print(f"{dtype:5s} {M}x{N}x{K:<6d} new {row['tflops'][0]:7.1f}  old {row['tflops'][1]:7.1f}  "
                  f"cuBLAS {row['tflops'][2]:7.1f}  new/old {ratio[0]:.3f}  new/cuBLAS {ratio[1]:.3f}  "
                  f"{'same C' if same else 'C DIFFERS'}  [{key_name(key)}]", flush=True)
    if as_json:
        with open(as_json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write-ptx", metavar="DIR", help="write the importable build's PTX per kernel and stop")
    ap.add_argument("--ptx", metavar="DIR", help="the other build's PTX (from --write-ptx)")
    ap.add_argument("--dtypes", default="f16,bf16,tf32,e4m3")
    ap.add_argument("--shapes", default="", help="MxNxK,... (default: squares 1024-8192 and LLM shapes)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--precompile", type=int, default=0, metavar="WORKERS")
    ap.add_argument("--graph", type=int, default=0, metavar="N",
                    help="time CUDA graphs of N launches each (the GPU's time, without the host's)")
    ap.add_argument("--path", choices=("wgmma", "mma_sync"), default="wgmma")
    ap.add_argument("--b-major", choices=("K", "MN"), default=None,
                    help="B's majorness (default: MN for f16 and bf16, K for the others)")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    PATH[0] = a.path
    B_MAJOR[0] = a.b_major
    dtypes, cases = a.dtypes.split(","), shapes(a.shapes)
    if a.write_ptx:
        write_ptx(a.write_ptx, dtypes, cases)
        return 0
    if not a.ptx:
        ap.error("--ptx DIR (or --write-ptx DIR) is needed")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if a.precompile:
        precompile(dtypes, cases, a.precompile)
    run(a.ptx, dtypes, cases, a.rounds, a.json, a.graph)
    return 0


if __name__ == "__main__":
    sys.exit(main())
