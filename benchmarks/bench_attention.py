"""Attention's forward pass: ``codegen.attention`` against torch's ``scaled_dot_product_attention``
backends (cuDNN, flash, efficient), interleaved in the same run (a GPU with torch).

    python benchmarks/bench_attention.py [--seqs 512,1024,2048,4096,8192,16384] [--dims 64,128]
                                         [--batch-heads 4x16] [--dtypes f16,bf16] [--json out.json]

Each case: ``q``, ``k``, ``v`` of ``(batch, heads, seq, d)``, causal and not; TFLOP/s as
``4 * batch * heads * seq^2 * d`` (halved for causal). Targets (the attention issue): at
d=128, seq 8192, at least 1.0 of the cuDNN backend and 1.5x the flash backend; at d=64 at
least 1.0 of cuDNN. Each case is checked against the float32 math backend on its first batch
and head (max abs error, beside the flash backend's own). On an sm_90 GPU "ours" is the Hopper
kernel (wgmma, TMA) and "sm80" the ``mma.sync`` one, timed in the same rounds. Writes
``$OUT/bench_attention.json``.
"""

import argparse
import os
import sys

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import codegen  # noqa: E402
from bench_gemm import interleaved, median_ratio, save_json  # noqa: E402

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}


def _sdpa(backend, q, k, v, causal):
    def call():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return call


def flop(B, H, S, D, causal):
    """Floating-point operations of one attention call (``4 B H S^2 d``, halved for causal)."""
    return 4.0 * B * H * S * S * D / (2 if causal else 1)


def timed_with_cudnn(calls, q, k, v, causal, rounds):
    """The named callables ``calls`` and torch's cuDNN backend (``"cudnn"``) on ``q``, ``k``,
    ``v``, timed interleaved (:func:`bench_gemm.interleaved`): ``(TFLOP/s, times)`` by name."""
    B, H, S, D = q.shape
    calls = dict(calls, cudnn=_sdpa(BACKENDS["cudnn"], q, k, v, causal))
    return interleaved(calls, flop(B, H, S, D, causal), rounds)


def case(B, H, S, D, dtype, causal, rounds=8):
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=g, dtype=dtype) for _ in range(3))
    calls = {"ours": lambda: codegen.attention(q, k, v, causal=causal)}
    if torch.cuda.get_device_capability() == (9, 0):              # the mma.sync kernel beside the Hopper one
        calls["sm80"] = lambda: codegen.attention(q, k, v, causal=causal, kernel="sm80")
    for name, be in BACKENDS.items():
        try:
            _sdpa(be, q, k, v, causal)()
            calls[name] = _sdpa(be, q, k, v, causal)
        except Exception as e:                        # a backend that does not take the case
            print(f"  {name}: {type(e).__name__}: {str(e)[:100]}", flush=True)
    # the float32 reference of one batch and head (all of them at seq 16384: 34 GB of scores)
    ref = _sdpa(SDPBackend.MATH, q[:1, :1].float(), k[:1, :1].float(), v[:1, :1].float(), causal)()
    row = {"shape": [B, H, S, D], "dtype": str(dtype), "causal": causal,
           "err_ours": (codegen.attention(q, k, v, causal=causal)[:1, :1].float() - ref).abs().max().item()}
    if "flash" in calls:
        row["err_flash"] = (calls["flash"]()[:1, :1].float() - ref).abs().max().item()
    tflops, times = interleaved(calls, flop(B, H, S, D, causal), rounds)
    row.update({f"{k}_tflops": v for k, v in tflops.items()})
    for name in BACKENDS:
        if name in times:
            row[f"ours_vs_{name}"] = median_ratio(times["ours"], times[name])
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seqs", default="512,1024,2048,4096,8192,16384")
    p.add_argument("--dims", default="64,128")
    p.add_argument("--batch-heads", default="4x16", help="BxH at seq 8192; scaled so that B*H*seq is constant")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    B0, H = (int(x) for x in a.batch_heads.split("x"))
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": []}
    for dt in a.dtypes.split(","):
        for D in (int(d) for d in a.dims.split(",")):
            for S in (int(s) for s in a.seqs.split(",")):
                B = max(1, B0 * 8192 // S)
                for causal in (False, True):
                    r = case(B, H, S, D, DTYPES[dt], causal)
                    res["cases"].append(r)
                    print(f"{dt} d={D} seq={S} B={B} H={H} causal={causal}: "
                          + ", ".join(f"{k[:-7]} {v:.0f}" for k, v in r.items() if k.endswith("_tflops"))
                          + " TFLOP/s; " + ", ".join(f"{k} {v:.2f}" for k, v in r.items() if k.startswith("ours_vs"))
                          + f"; max abs err {r['err_ours']:.1e}"
                          + (f" (flash {r['err_flash']:.1e})" if "err_flash" in r else ""), flush=True)
    save_json(res, "bench_attention.json", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
