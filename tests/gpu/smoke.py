"""A quick GPU check of the generated GEMM: one f16 problem on torch tensors, its error,
the first-call time and the host time per call (run first on a new GPU machine)."""

import time

import torch

import codegen

t0 = time.perf_counter()
A = torch.randn(1000, 900, device="cuda", dtype=torch.float16)
B = torch.randn(900, 700, device="cuda", dtype=torch.float16)
C = codegen.gemm(A, B)
torch.cuda.synchronize()
t1 = time.perf_counter()
ref = A.double() @ B.double()
err = ((C.double() - ref).abs().max() / ref.abs().max()).item()
print(f"f16 1000x700x900: rel err {err:.2e}, first call {t1 - t0:.2f}s", flush=True)
n = 2048
A = torch.randn(n, n, device="cuda", dtype=torch.float16)
B = torch.randn(n, n, device="cuda", dtype=torch.float16)
C = codegen.gemm(A, B)
ref = A.float() @ B.float()
print(f"f16 {n}^3 rel err {((C.float() - ref).abs().max() / ref.abs().max()).item():.2e}", flush=True)
for _ in range(10):
    codegen.gemm(A, B, C)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(50):
    codegen.gemm(A, B, C)
torch.cuda.synchronize()
t = (time.perf_counter() - t0) / 50
print(f"f16 {n}^3: {2 * n ** 3 / t / 1e12:.1f} TFLOP/s through gemm()", flush=True)
