"""The Hopper kernel with operands TMA cannot read, against float64 (run on an H100 or H200).

    python tests/gpu/check_copy_operands.py [--cases 60] [--seed 0]

Each case takes f16 or bf16 operands of which at least one has a row stride that is no
multiple of 16 bytes (an odd N for a row-major B, an odd K for a row-major A or a column-major
B) or starts off a 16-byte boundary (a slice one element in), sometimes a batch of them, any
alpha and beta, a row- or column-major C. The library's own dispatch must run it on the
Hopper path with the producer warpgroup copying those operands (``copy`` of the kernel's key),
and the result must be within the tolerance of check_gemm.py against float64. Prints a line
a case and 'N passed, N failed'.
"""

import argparse
import random
import sys

TOL = {"f16": 2e-2, "bf16": 4e-2}


def make_case(rnd):
    dt = rnd.choice(["f16", "bf16"])
    M = rnd.choice([1, 7, 64, 100, 257, 1000, 1536])
    N = rnd.choice([9, 45, 129, 1531, 2047, 4001])
    K = rnd.choice([8, 24, 71, 200, 768, 1000])
    la, lb, lc = rnd.choice("NT"), rnd.choice("NT"), rnd.choice("NNNT")
    shift = rnd.random() < 0.25                       # operands one element into a larger array
    batch = rnd.choice([1, 1, 1, 3])
    alpha, beta = rnd.choice([(1.0, 0.0), (1.5, 0.0), (1.0, 1.0), (-0.5, 2.0)])
    return dt, M, N, K, la, lb, lc, shift, batch, alpha, beta


def _matrix(torch, dt, r, c, lay, shift, batch):
    """A (batch,) r x c matrix of layout lay ("N" row-major, "T" column-major), one element
    into a larger array when shift."""
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dt]
    lead = (batch,) if batch > 1 else ()
    if lay == "N":
        x = torch.randn(*lead, r, c + shift, device="cuda").to(tdt)[..., shift:]
    else:
        x = torch.randn(*lead, c, r + shift, device="cuda").to(tdt)[..., shift:].transpose(-1, -2)
    return x


def run_one(torch, codegen, case):
    dt, M, N, K, la, lb, lc, shift, batch, alpha, beta = case
    A = _matrix(torch, dt, M, K, la, int(shift), batch)
    B = _matrix(torch, dt, K, N, lb, 0, batch)
    C = _matrix(torch, dt, M, N, lc, 0, batch)
    C.copy_(torch.randn_like(C, dtype=torch.float32))
    ref = alpha * (A.double() @ B.double()) + beta * C.double()
    launch = codegen.prepare(A, B, C, alpha=alpha, beta=beta)
    launch()
    torch.cuda.synchronize()
    inner = getattr(launch._launcher, "inner", launch._launcher)
    key = getattr(getattr(inner, "compiled", None), "key", None)
    path = launch.kernel.config.path
    if hasattr(inner, "check"):
        inner.check()
    err = ((C.double() - ref).abs().max() / (ref.abs().max() + 1e-30)).item()
    copy = getattr(key, "copy", None)
    ok = err <= TOL[dt] and path == "wgmma"
    return ok, f"path={path} copy={copy!r} tile={launch.kernel.config.bm}x{launch.kernel.config.bn} err {err:.1e}"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--cases", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    import torch

    import codegen

    rnd = random.Random(a.seed)
    ok_n = 0
    for _ in range(a.cases):
        case = make_case(rnd)
        try:
            ok, msg = run_one(torch, codegen, case)
        except Exception as e:  # report and go on
            ok, msg = False, f"{type(e).__name__}: {str(e)[:300]}"
        ok_n += ok
        print(f"{'PASS' if ok else 'FAIL'} {case}: {msg}", flush=True)
    print(f"{ok_n} passed, {a.cases - ok_n} failed")
    return ok_n == a.cases


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
