"""Attention kernel variants timed against the kernel ``codegen.attention`` runs, interleaved in
one run with torch's cuDNN backend (a GPU with torch).

    python benchmarks/attention_variants.py [--seqs 4096,8192] [--dims 64,128] [--bms 64,128] [--blocks 1,2,3]

A variant here is a kernel of ``bm`` queries a CTA (``--bms``: 64, or 128 as FlashAttention 2
takes them; another ``bm`` is another kernel, built by ``attention_kernel(dtype, d, causal,
bm)``) compiled with launch bounds of ``min_blocks`` CTAs an SM that ptxas must fit in the
registers (``--blocks``; three CTAs of 128 threads: at most 170 registers a thread), named
``m{bm}b{min_blocks}``. The default kernel (``codegen.flash_attention.BLOCK_M`` and
``MIN_BLOCKS``) is always one of them, and the ratios (``*_vs_default``, above 1: faster) are
against it. Each variant's output is compared with the default kernel's, bit for bit
(``same_*``): launch bounds change no instruction, and BM = 128 does each row's arithmetic in
the same order as BM = 64 (bit for bit equal in numba's simulator). A variant that pays becomes
the default (one line of ``BLOCK_M`` or ``MIN_BLOCKS``); one that does not is written down in
RESULTS.md.
"""

import argparse
import dataclasses
import os
import sys

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import codegen  # noqa: E402
from bench_attention import timed_with_cudnn  # noqa: E402
from bench_gemm import median_ratio, save_json  # noqa: E402
from codegen import flash_attention as fa  # noqa: E402


def with_variant(dtype, d, causal, bm, blocks):
    """A call of ``codegen.attention`` on the kernel of ``bm`` queries a CTA compiled for
    ``blocks`` CTAs an SM (put in the place of the default kernel for the call)."""
    key = (dtype, d, bool(causal), fa.BLOCK_M[d])                 # the kernel codegen.attention takes
    var = dataclasses.replace(fa.attention_kernel(dtype, d, causal, bm), min_blocks=blocks)

    def call(q, k, v):
        base = fa.attention_kernel(dtype, d, causal)
        fa._KERNELS[key] = var
        try:
            return codegen.attention(q, k, v, causal=causal)
        finally:
            fa._KERNELS[key] = base
    return call


def case(B, H, S, D, dtype, causal, variants, rounds=8):
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g, dtype=torch.float16) for _ in range(3))
    base = codegen.attention(q, k, v, causal=causal)
    calls = {}
    row = {"shape": [B, H, S, D], "causal": causal}
    for bm, b in variants:
        f = with_variant(dtype, D, causal, bm, b)
        row[f"same_m{bm}b{b}"] = bool(torch.equal(f(q, k, v), base))
        calls[f"m{bm}b{b}"] = (lambda f=f: f(q, k, v))
    tflops, times = timed_with_cudnn(calls, q, k, v, causal, rounds)
    row.update({f"{k}_tflops": v for k, v in tflops.items()})
    default = "m{}b{}".format(fa.BLOCK_M[D], fa.MIN_BLOCKS[D, fa.BLOCK_M[D]])
    for name in calls:
        if name not in (default, "cudnn"):
            row[f"{name}_vs_default"] = median_ratio(times[name], times[default])
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seqs", default="4096,8192")
    p.add_argument("--dims", default="64,128")
    p.add_argument("--bms", default="64,128")
    p.add_argument("--blocks", default="1,2,3")
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    bms = [int(m) for m in a.bms.split(",")]
    blocks = [int(b) for b in a.blocks.split(",")]
    res = {"device": torch.cuda.get_device_name(), "cases": []}
    for D in (int(d) for d in a.dims.split(",")):
        for S in (int(s) for s in a.seqs.split(",")):
            for causal in (False, True):
                default = (fa.BLOCK_M[D], fa.MIN_BLOCKS[D, fa.BLOCK_M[D]])
                variants = [default] + [(m, b) for m in bms for b in blocks if (D == 64 or b < 3) and (m, b) != default]
                r = case(max(1, 4 * 8192 // S), 16, S, D, "f16", causal, variants)
                res["cases"].append(r)
                print(f"d={D} seq={S} causal={causal}: " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                                                                      for k, v in r.items() if k not in ("shape", "causal")),
                      flush=True)
    save_json(res, "attention_variants.json", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
