"""Batches of GEMMs on the ``mma.sync`` kernels, one launch each, against float64 (run on a GPU).

    python tests/gpu/check_batches.py

f16 and bf16 (with the ``mma.sync`` plan asked for), f32 on CUDA cores, tf32 and f64; batches
whose matrices are contiguous, strided (a view of every other matrix), broadcast, or a number
of elements apart that allows only narrower copies; odd sizes, C given with beta. Prints a
line per case and 'N passed, N failed'.
"""

import sys

import torch

import codegen
from codegen import GemmConfig

torch.manual_seed(0)
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "tf32": torch.float32, "f64": torch.float64}
TOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 1e-5, "tf32": 2e-3, "f64": 1e-12}


def operand(shape, dt, layout):
    L, R, C = shape
    if layout == "strided":                     # every other matrix of a larger batch
        return torch.randn(2 * L, R, C, device="cuda").to(dt)[::2]
    if layout == "offset":                      # matrices R*C + 4 elements apart
        flat = torch.randn(L * (R * C + 4), device="cuda").to(dt)
        return flat.as_strided((L, R, C), (R * C + 4, C, 1))
    if layout == "broadcast":
        return torch.randn(1, R, C, device="cuda").to(dt).expand(L, R, C)
    return torch.randn(L, R, C, device="cuda").to(dt)


def case(d, L, M, N, K, la, lb, beta):
    dt = DT[d]
    A, B = operand((L, M, K), dt, la), operand((L, K, N), dt, lb)
    C0 = torch.randn(L, M, N, device="cuda").to(dt)
    C = C0.clone()
    cfg = GemmConfig.default(d, M, N, K, batch=L) if d in ("f16", "bf16") else None
    codegen.gemm(A, B, C, beta=beta, config=cfg, precision=d)
    ref = torch.matmul(A.double(), B.double()) + beta * C0.double()
    err = float((C.double() - ref).abs().max() / ref.abs().max())
    return err <= TOL[d], err


def main():
    cases = [("f16", 3, 300, 260, 136, "contig", "contig", 0.0), ("f16", 4, 129, 77, 64, "strided", "contig", 1.0),
             ("bf16", 2, 1000, 520, 72, "offset", "contig", 0.0), ("bf16", 3, 64, 300, 40, "contig", "broadcast", 0.5),
             ("f32", 3, 200, 130, 50, "contig", "strided", 0.0), ("tf32", 2, 257, 129, 96, "offset", "offset", 1.0),
             ("f64", 5, 70, 65, 33, "strided", "contig", -1.0), ("f64", 2, 7, 9, 5, "contig", "contig", 0.0)]
    ok = 0
    for c in cases:
        good, err = case(*c)
        ok += good
        print("PASS" if good else "FAIL", *c, f"relative error {err:.2e}", flush=True)
    print(f"{ok} passed, {len(cases) - ok} failed")
    return 0 if ok == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main())
