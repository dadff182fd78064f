"""Run one generated GEMM a few times (for profilers such as ncu): python tests/gpu/profile_gemm.py bm,bn,bk,wm,wn,stages [n]"""
import sys

import torch

import codegen
from codegen import GemmConfig

bm, bn, bk, wm, wn, st = (int(x) for x in sys.argv[1].split(","))
n = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
cfg = GemmConfig("f16", None, bm, bn, bk, wm, wn, st, 8)
A = torch.randn(n, n, device="cuda", dtype=torch.float16)
B = torch.randn(n, n, device="cuda", dtype=torch.float16)
C = torch.empty(n, n, device="cuda", dtype=torch.float16)
launch = codegen.prepare(A, B, C, config=cfg)
for _ in range(3):
    launch()
torch.cuda.synchronize()
print("done")
