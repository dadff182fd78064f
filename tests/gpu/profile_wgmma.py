"""Run the default Hopper GEMM a few times (for profilers such as ncu):
python tests/gpu/profile_wgmma.py [n] [K|MN]"""
import sys

import torch

import codegen
from codegen import GemmConfig

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
A = torch.randn(n, n, device="cuda", dtype=torch.float16)
B = torch.randn(n, n, device="cuda", dtype=torch.float16)
if len(sys.argv) > 2 and sys.argv[2] == "K":
    B = B.t()
C = torch.empty(n, n, device="cuda", dtype=torch.float16)
launch = codegen.prepare(A, B, C, config=GemmConfig.default("f16", n, n, n, arch=(9, 0)))
for _ in range(3):
    launch()
torch.cuda.synchronize()
print("done")
