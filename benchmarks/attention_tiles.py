"""The Hopper attention kernel's tiles (``bm`` queries a CTA, ``bn`` keys a tile) timed against
the kernel ``codegen.attention`` runs (``tile_for``'s) and torch's cuDNN backend, interleaved in one run (an
sm_90 GPU with torch).

    python benchmarks/attention_tiles.py [--seqs 8192] [--dims 64,128] [--dtypes f16]
                                         [--tiles 64:128x128,128:128x144] [--jobs 8] [--rounds 8]

A variant ``{bm}x{bn}`` is :func:`codegen.attention_sm90.hopper_attention_kernel`'s kernel of
that tile (``bm`` 192: three consumer warpgroups of 160 registers; ``bn`` any multiple of 16);
``--tiles`` lists them by head dim (``d:bmxbn``; a head dim's list is timed causal and not).
The kernels are compiled first, ``--jobs`` processes at a time (each fills the kernel cache
that the timing process then reads). Each variant's output is compared with the default
kernel's (``diff_*``: max abs difference; other tiles sum in another order) and its
``*_vs_default`` ratio is above 1 when it is faster. A tile that pays becomes a line of
``TILES``; one that does not is written down in RESULTS.md.
"""

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def parse_tiles(spec):
    """``{d: [(bm, bn), ...]}`` of ``"64:192x128,128:128x176"``.

    >>> parse_tiles("64:192x128,64:128x192,128:128x176")
    {64: [(192, 128), (128, 192)], 128: [(128, 176)]}
    """
    out = {}
    for item in filter(None, spec.split(",")):
        d, _, tile = item.partition(":")
        bm, _, bn = tile.partition("x")
        out.setdefault(int(d), []).append((int(bm), int(bn)))
    return out


def name(bm, bn):
    return f"{bm}x{bn}"


def compile_all(kernels, jobs):
    """Each ``(dtype, d, causal, bm, bn)`` compiled and loaded in a process of its own."""
    code = ("import sys, numpy as np\n"
            "np.row_stack = getattr(np, 'row_stack', np.vstack)\n"
            "from codegen.attention_sm90 import hopper_attention_kernel\n"
            "dt, d, c, bm, bn = sys.argv[1:]\n"
            "hopper_attention_kernel(dt, int(d), c == '1', int(bm), int(bn)).function()\n")

    def one(k):
        r = subprocess.run([sys.executable, "-c", code] + [str(int(x)) if isinstance(x, bool) else str(x) for x in k],
                           capture_output=True, text=True, cwd=ROOT)
        if r.returncode:
            print(f"compile {k}: {r.stderr[-2000:]}", flush=True)
    with ThreadPoolExecutor(jobs) as ex:
        list(ex.map(one, kernels))


def case(B, H, S, D, dtype, causal, tiles, rounds=8):
    import torch

    import codegen
    from bench_attention import timed_with_cudnn
    from bench_gemm import median_ratio
    from codegen import attention_sm90 as a9

    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g, dtype=tdt) for _ in range(3))
    dbm, dbn = a9.tile_for(D, causal, S)                  # the tile codegen.attention runs at S keys
    key = (dtype, D, causal, dbm, dbn)
    default = name(dbm, dbn)
    base_kernel = a9.hopper_attention_kernel(dtype, D, causal, dbm, dbn)
    base = codegen.attention(q, k, v, causal=causal)

    def variant(bm, bn):
        kern = a9.hopper_attention_kernel(dtype, D, causal, bm, bn)

        def call():
            a9._KERNELS[key] = kern
            try:
                return codegen.attention(q, k, v, causal=causal)
            finally:
                a9._KERNELS[key] = base_kernel
        return call

    calls = {default: lambda: codegen.attention(q, k, v, causal=causal)}
    row = {"shape": [B, H, S, D], "dtype": dtype, "causal": causal}
    for t in tiles:
        if name(*t) != default:
            f = variant(*t)
            row[f"diff_{name(*t)}"] = (f().float() - base.float()).abs().max().item()
            calls[name(*t)] = f
    tflops, times = timed_with_cudnn(calls, q, k, v, causal, rounds)
    row.update({f"{n}_tflops": t for n, t in tflops.items()})
    for n in calls:
        if n != "cudnn":
            row[f"{n}_vs_cudnn"] = median_ratio(times[n], times["cudnn"])
            if n != default:
                row[f"{n}_vs_default"] = median_ratio(times[n], times[default])
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seqs", default="8192")
    p.add_argument("--dims", default="64,128")
    p.add_argument("--dtypes", default="f16")
    p.add_argument("--tiles", default="64:128x128,128:128x128,128:128x144,128:128x192")
    p.add_argument("--batch-heads", default="4x16", help="BxH at seq 8192; scaled so that B*H*seq is constant")
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    from codegen.attention_sm90 import tile_for

    tiles = parse_tiles(a.tiles)
    dims = [int(d) for d in a.dims.split(",")]
    dtypes = a.dtypes.split(",")
    seqs = [int(s) for s in a.seqs.split(",")]
    kernels = [(dt, d, c, *t) for dt in dtypes for d in dims for c in (False, True)
               for t in [tile_for(d, c, s) for s in seqs] + tiles.get(d, [])]
    compile_all(sorted(set(kernels)), a.jobs)

    import torch

    from bench_gemm import save_json

    b0, h = (int(x) for x in a.batch_heads.split("x"))
    res = {"device": torch.cuda.get_device_name(), "cases": []}
    for dt in dtypes:
        for D in dims:
            for S in seqs:
                for causal in (False, True):
                    r = case(max(1, b0 * 8192 // S), h, S, D, dt, causal, tiles.get(D, []), a.rounds)
                    res["cases"].append(r)
                    print(f"{dt} d={D} seq={S} causal={causal}: " + ", ".join(
                        f"{k} {v:.3g}" for k, v in r.items() if isinstance(v, float)), flush=True)
    save_json(res, "attention_tiles.json", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
