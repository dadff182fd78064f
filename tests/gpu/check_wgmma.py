"""The Hopper (wgmma + TMA) GEMM on an H100: correctness against float64 torch.

    python tests/gpu/check_wgmma.py [--quick] [--seed S]

Shapes with residues in M, N and K, A K-major and MN-major, B K-major and MN-major, f16 and
bf16, alpha/beta; each case also checks that no mbarrier wait timed out. Prints one line per
case and 'N passed, N failed'.
"""

import argparse
import random
import sys


def run_case(torch, codegen, name, M, N, K, la, lb, beta):
    from codegen import GemmConfig

    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[name]

    def make(r, c, lay):
        return torch.randn(c, r, device="cuda", dtype=tdt).t() if lay == "T" else \
            torch.randn(r, c, device="cuda", dtype=tdt)

    A, B = make(M, K, la), make(K, N, lb)
    C0 = torch.randn(M, N, device="cuda", dtype=tdt)
    C = C0.clone()
    cfg = GemmConfig.default(name, M, N, K, arch=(9, 0))
    launch = codegen.prepare(A, B, C, alpha=1.5, beta=beta, config=cfg)
    launch()
    torch.cuda.synchronize()
    launch._launcher.check()
    ref = 1.5 * (A.double() @ B.double()) + beta * C0.double()
    err = ((C.double() - ref).abs().max() / (ref.abs().max() + 1e-30)).item()
    return err, err <= (2e-2 if name == "f16" else 5e-2)


def main(argv=None):
    import torch

    import codegen

    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cases", type=int, default=40)
    p.add_argument("--max-dim", type=int, default=1 << 30, help="skip cases with a larger M, N or K")
    a = p.parse_args(argv)
    rnd = random.Random(a.seed)
    # TMA reads rows whose stride is a multiple of 16 bytes: transposed operands get sizes
    # that are multiples of 8 along their rows
    cases = [("f16", 128, 256, 64, "N", "N", 0.0), ("f16", 4096, 4096, 4096, "N", "N", 0.0),
             ("bf16", 1000, 1000, 1000, "N", "N", 0.0), ("f16", 300, 712, 520, "N", "T", 0.5),
             ("f16", 264, 136, 72, "T", "N", -1.0), ("bf16", 40, 8, 8, "T", "T", 0.0),
             ("f16", 1, 8, 1000, "N", "N", 0.0), ("bf16", 129, 264, 8, "N", "N", 1.0)]
    for _ in range(0 if a.quick else a.cases):
        la, lb = rnd.choice("NT"), rnd.choice("NT")
        M = 8 * rnd.randint(1, 400) if la == "T" else rnd.randint(1, 3000)
        K = 8 * rnd.randint(1, 400)
        N = 8 * rnd.randint(1, 400)
        cases.append((rnd.choice(["f16", "bf16"]), M, N, K, la, lb, rnd.choice([0.0, 0.0, 0.5])))
    cases = [c for c in cases if max(c[1:4]) <= a.max_dim]
    ok_n = 0
    for case in cases:
        try:
            err, ok = run_case(torch, codegen, *case)
            msg = f"err {err:.2e}"
        except Exception as e:  # report and go on
            ok, msg = False, f"{type(e).__name__}: {str(e)[:300]}"
        ok_n += ok
        print(f"{'PASS' if ok else 'FAIL'} {case[0]:5s} M={case[1]:5d} N={case[2]:5d} K={case[3]:5d} "
              f"A={case[4]} B={case[5]} beta={case[6]} {msg}", flush=True)
    print(f"{ok_n} passed, {len(cases) - ok_n} failed")
    return ok_n == len(cases)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
