"""Where a first call of ``codegen.gemm`` spends its time, stage by stage.

    python tests/gpu/profile_compile.py [DTYPE] [--profile]

Run it twice with the same (initially empty) ``LAYOUTALG_CACHE``: the first run shows a
cold compile, the second a cached load.  ``--profile`` adds cProfile's top entries.
"""

import cProfile
import pstats
import sys
import time

T = [("start", time.perf_counter())]


def mark(what):
    T.append((what, time.perf_counter()))


import torch  # noqa: E402

torch.ones(1, device="cuda")
mark("import torch, CUDA init")
import codegen  # noqa: E402
from codegen import driver, kernel  # noqa: E402
from codegen.config import GemmConfig  # noqa: E402

mark("import codegen")
name = next((a for a in sys.argv[1:] if not a.startswith("-")), "f16")
pr = cProfile.Profile() if "--profile" in sys.argv else None
if pr:
    pr.enable()
key = kernel.KernelKey(GemmConfig.default(name), "K", "MN", 8 if name in ("f16", "bf16") else 4,
                       8 if name in ("f16", "bf16") else 4)
base = kernel.get_kernel(key, jit=False)
mark("plan + emit + module file")
cc = driver.compute_capability()
tag = kernel._tag(base.source, cc, kernel._launch_bounds(key.config))
import os  # noqa: E402

cached = os.path.exists(os.path.join(kernel.cache_dir(), f"cubin_{tag}.cubin"))
if not cached:
    ptx = kernel.compile_ptx_text(key, cc)
    mark("numba: source -> PTX")
    cubin = driver.compile_image(ptx)
    mark("driver: PTX -> cubin")
    kernel._write(os.path.join(kernel.cache_dir(), f"cubin_{tag}.cubin"),
                  driver.entry_name(ptx).encode() + b"\n" + cubin)
k = kernel.get_kernel(key)
mark("load cubin")
if pr:
    pr.disable()
for (a, t0), (b, t1) in zip(T, T[1:]):
    print(f"{b:32s} {t1 - t0:7.3f} s")
print(f"{'cached' if cached else 'cold'} total after imports: {T[-1][1] - T[2][1]:.3f} s; registers {k.function.num_regs}")
if pr:
    pstats.Stats(pr).sort_stats("cumulative").print_stats(30)
