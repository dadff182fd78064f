"""GPU correctness sweep of generated GEMM kernels against torch (run on a CUDA machine).

    python tests/gpu/check_gemm.py [--quick] [--shapes N] [--json out.json]

Random shapes up to 4096, every dtype, transposed and strided inputs; prints one line
per case and a summary line 'N passed, N failed'.
"""

import argparse
import json
import random
import sys


def ref_tol(name, K):
    return {"f16": 2e-2, "bf16": 5e-2, "tf32": 2e-2, "f32": 1e-4, "f64": 1e-10}[name]


def run_case(torch, codegen, name, M, N, K, layout_a, layout_b, cfg=None):
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32,
           "f64": torch.float64}[name]

    def make(r, c, lay):
        if lay == "T":          # column-major (a transposed view)
            return torch.randn(c, r, device="cuda", dtype=tdt).t()
        if lay == "S":          # strided: every other column of a wider array
            return torch.randn(r, 2 * c + 1, device="cuda", dtype=tdt)[:, 1::2]
        return torch.randn(r, c, device="cuda", dtype=tdt)

    A = make(M, K, layout_a)
    B = make(K, N, layout_b)
    C0 = torch.randn(M, N, device="cuda", dtype=tdt if name != "tf32" else torch.float32)
    alpha, beta = 1.5, -0.5
    C = C0.clone()
    codegen.gemm(A, B, C, alpha=alpha, beta=beta, config=cfg, precision="tf32" if name == "tf32" else None)
    ref = alpha * (A.double() @ B.double()) + beta * C0.double()
    err = ((C.double() - ref).abs().max() / (ref.abs().max() + 1e-30)).item()
    return err, err <= ref_tol(name, K)


def main(argv=None):
    import torch
    import codegen

    p = argparse.ArgumentParser()
    p.add_argument("--shapes", type=int, default=120)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--dtypes", default="f16,bf16,tf32,f32,f64")
    p.add_argument("--json", default=None)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    rnd = random.Random(a.seed)
    cases = [("f16", 32, 32, 32, "N", "N"), ("f16", 256, 256, 256, "N", "N"), ("f16", 4096, 4096, 4096, "N", "N")]
    dtypes = a.dtypes.split(",")
    for i in range(a.shapes if not a.quick else 10):
        name = dtypes[i % len(dtypes)]
        big = 4096 if name in ("f16", "bf16") else 1024
        if rnd.random() < 0.6:
            # row-major operands with 8-aligned sizes: the common case (one kernel per dtype)
            dims = [8 * rnd.randint(1, big // 8) for _ in range(3)]
            cases.append((name, *dims, "N", "N"))
        else:
            # anything: odd sizes, transposed and strided operands (other kernel variants)
            dims = [rnd.choice([1, 7, 33, 100, 255, 513, 1000]) if rnd.random() < 0.5 else rnd.randint(1, big)
                    for _ in range(3)]
            cases.append((name, *dims, rnd.choice("NTS"), rnd.choice("NTS")))
    rows, ok_n, bad_n = [], 0, 0
    for name, M, N, K, la, lb in cases:
        if name not in dtypes:
            continue
        try:
            err, ok = run_case(torch, codegen, name, M, N, K, la, lb)
            msg = f"err {err:.2e}"
        except Exception as e:  # report and go on
            ok, err, msg = False, None, f"{type(e).__name__}: {str(e)[:300]}"
        ok_n += ok
        bad_n += not ok
        rows.append({"dtype": name, "M": M, "N": N, "K": K, "A": la, "B": lb, "err": err, "ok": ok, "msg": msg})
        print(f"{'PASS' if ok else 'FAIL'} {name:5s} M={M:5d} N={N:5d} K={K:5d} A={la} B={lb} {msg}", flush=True)
    print(f"{ok_n} passed, {bad_n} failed")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return bad_n == 0


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
