"""``codegen.attention`` on a GPU against torch's float32 attention (run on a CUDA machine with torch).

    python tests/gpu/check_attention.py [--cases N] [--seed S]

Fixed and random cases: f16 and bf16, head dim 64 and 128, sequence lengths with residues
(query and key lengths apart), grouped-query heads, causal and not, strided inputs (a
``(batch, seq, heads, d)`` tensor transposed), the log-sum-exp; each against
``scaled_dot_product_attention``'s math backend in float32, with the flash backend's own
error beside it as the bar (ours at most twice it, or 2e-3). Prints one line per case and
'N passed, N failed'; writes ``$OUT/check_attention.json``.
"""

import argparse
import json
import math
import os
import random
import sys

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import codegen  # noqa: E402

DT = {"f16": torch.float16, "bf16": torch.bfloat16}


def run(dt, B, H, Hk, Sq, Sk, D, causal, strided, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if strided:                                        # (B, S, H, D) memory, viewed as (B, H, S, D)
        q = torch.randn(B, Sq, H, D, device="cuda", generator=g, dtype=DT[dt]).transpose(1, 2)
        k, v = (torch.randn(B, Sk, Hk, D, device="cuda", generator=g, dtype=DT[dt]).transpose(1, 2) for _ in range(2))
    else:
        q = torch.randn(B, H, Sq, D, device="cuda", generator=g, dtype=DT[dt])
        k, v = (torch.randn(B, Hk, Sk, D, device="cuda", generator=g, dtype=DT[dt]) for _ in range(2))
    o, lse = codegen.attention(q, k, v, causal=causal, return_lse=True)
    if torch.cuda.get_device_capability() == (9, 0):
        from codegen.attention_sm90 import check_error

        check_error()                                  # no wait on an mbarrier timed out
    kk, vv = (x.repeat_interleave(H // Hk, dim=1) for x in (k, v))
    ref = F.scaled_dot_product_attention(q.float(), kk.float(), vv.float(), is_causal=causal)
    s = (q.float() @ kk.float().transpose(-1, -2)) / math.sqrt(D)
    if causal:
        s = s.masked_fill(torch.ones(Sq, Sk, device="cuda", dtype=torch.bool).triu(1), -math.inf)
    ref_lse = torch.logsumexp(s, -1)
    err = (o.float() - ref).abs().max().item()
    err_lse = (lse - ref_lse).abs().max().item()
    try:
        bar = (F.scaled_dot_product_attention(q, kk, vv, is_causal=causal).float() - ref).abs().max().item()
    except Exception:
        bar = 0.0
    ok = o.shape == q.shape and o.dtype == q.dtype and err <= max(2 * bar, 2e-3 if dt == "f16" else 1.6e-2) \
        and err_lse < 1e-3
    return ok, f"err {err:.1e} (torch's own {bar:.1e}), lse err {err_lse:.1e}"


def graph(causal):
    """A split launch (on a 132-SM GPU: 136 tiles, the last 4 in 6 parts each; causal: none
    split) recorded into a CUDA graph by torch's recipe (a warm-up call on a side stream,
    then the capture), replayed on new inputs: the same output as a direct call."""
    q = torch.randn(1, 136, 128, 128, device="cuda", dtype=torch.float16)
    k, v = (torch.randn(1, 136, 2000, 128, device="cuda", dtype=torch.float16) for _ in range(2))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        codegen.attention(q, k, v, causal=causal)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = codegen.attention(q, k, v, causal=causal)
    for x in (q, k, v):
        x.copy_(torch.randn_like(x))
    g.replay()
    want = codegen.attention(q, k, v, causal=causal)
    torch.cuda.synchronize()
    diff = (out.float() - want.float()).abs().max().item()
    return diff == 0, f"graph replay against a direct call: max abs difference {diff:.1e}"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--cases", type=int, default=24)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    rnd = random.Random(a.seed)
    cases = [("f16", 2, 8, 8, 1024, 1024, 64, False, False), ("f16", 2, 8, 8, 1024, 1024, 128, True, False),
             ("bf16", 1, 16, 4, 2000, 2000, 128, True, False), ("bf16", 1, 4, 1, 77, 300, 64, False, True),
             ("f16", 3, 2, 2, 1, 513, 64, False, False), ("f16", 1, 2, 1, 4097, 4097, 128, True, True),
             # split-KV on a 132-SM GPU (attention_sm90.SplitKV): a last wave of 4 tiles in 6 parts
             # each; of 2 tiles in 4 (grouped, strided); 4 tiles in 3 (residues); 12 tiles, all
             # split, in 5
             ("f16", 1, 136, 136, 128, 2000, 128, False, False), ("bf16", 1, 134, 67, 192, 1000, 64, False, True),
             ("f16", 2, 68, 68, 100, 700, 128, False, False), ("bf16", 1, 4, 2, 300, 1800, 128, False, False)]
    for _ in range(a.cases):
        Hk = rnd.choice([1, 2, 4])
        cases.append((rnd.choice(["f16", "bf16"]), rnd.randint(1, 3), Hk * rnd.choice([1, 2, 4]), Hk,
                      rnd.randint(1, 3000), rnd.randint(1, 3000), rnd.choice([64, 128]), rnd.random() < 0.5,
                      rnd.random() < 0.3))
    results, passed = [], 0
    for i, c in enumerate(cases):
        try:
            ok, msg = run(*c, seed=a.seed * 1000 + i)
        except Exception as e:
            ok, msg = False, f"{type(e).__name__}: {str(e)[:200]}"
        passed += ok
        print(f"{'PASS' if ok else 'FAIL'} {c}: {msg}", flush=True)
        results.append({"case": list(c), "ok": bool(ok), "message": msg})
    if torch.cuda.get_device_capability() == (9, 0):
        for causal in (False, True):
            try:
                ok, msg = graph(causal)
            except Exception as e:
                ok, msg = False, f"{type(e).__name__}: {str(e)[:200]}"
            passed += ok
            cases.append(("graph", causal))
            print(f"{'PASS' if ok else 'FAIL'} CUDA graph, causal={causal}: {msg}", flush=True)
            results.append({"case": ["graph", causal], "ok": bool(ok), "message": msg})
    print(f"{passed} passed, {len(cases) - passed} failed")
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "check_attention.json"), "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "results": results}, f, indent=1)
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main())
