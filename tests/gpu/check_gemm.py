"""GPU correctness sweep of generated GEMM kernels against torch (run on a CUDA machine).

    python tests/gpu/check_gemm.py [--quick] [--shapes N] [--workers W] [--json out.json]

Random shapes up to 4096, every dtype, transposed and strided inputs; prints one line
per case and a summary line 'N passed, N failed'.  ``--workers`` runs the cases in that
many processes (each with its own CUDA context), grouped so that cases that need the same
kernel variant share a process: compiling the variants is the slow part, and it is
single-threaded per process.
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


def variant_group(case):
    """Cases likely to share a kernel variant: dtype, operand layouts and 8-alignment of M, N, K."""
    name, M, N, K, la, lb = case
    return (name, la, lb, M % 8 == 0, N % 8 == 0, K % 8 == 0)


def run_cases(cases):
    """Run ``cases`` in this process; one printed line and one result row per case."""
    import torch
    import codegen

    rows = []
    for name, M, N, K, la, lb in cases:
        try:
            err, ok = run_case(torch, codegen, name, M, N, K, la, lb)
            msg = f"err {err:.2e}"
        except Exception as e:  # report and go on
            ok, err, msg = False, None, f"{type(e).__name__}: {str(e)[:300]}"
        rows.append({"dtype": name, "M": M, "N": N, "K": K, "A": la, "B": lb, "err": err, "ok": bool(ok), "msg": msg})
        print(f"{'PASS' if ok else 'FAIL'} {name:5s} M={M:5d} N={N:5d} K={K:5d} A={la} B={lb} {msg}", flush=True)
    return rows


def run_in_workers(cases, workers, group_key, run_fn):
    """``run_fn`` over ``cases`` in ``workers`` spawned processes (each with its own CUDA
    context), cases of one ``group_key`` (likely one kernel variant) in one process, the
    groups spread so that each process compiles about as many variants; the rows of all
    processes. ``run_fn`` must be importable (a module-level function)."""
    if workers <= 1:
        return run_fn(cases)
    import multiprocessing as mp

    groups = {}
    for c in cases:
        groups.setdefault(group_key(c), []).append(c)
    buckets = [[] for _ in range(workers)]
    nvar = [0] * workers
    for g in sorted(groups.values(), key=len, reverse=True):
        i = min(range(workers), key=lambda j: (nvar[j], len(buckets[j])))  # compiles dominate
        buckets[i].extend(g)
        nvar[i] += 1
    with mp.get_context("spawn").Pool(workers) as pool:
        return [r for part in pool.map(run_fn, [b for b in buckets if b]) for r in part]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", type=int, default=120)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--dtypes", default="f16,bf16,tf32,f32,f64")
    p.add_argument("--json", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
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
    cases = [c for c in cases if c[0] in dtypes]
    rows = run_in_workers(cases, a.workers, variant_group, run_cases)
    ok_n = sum(r["ok"] for r in rows)
    bad_n = len(rows) - ok_n
    print(f"{ok_n} passed, {bad_n} failed")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return bad_n == 0


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
