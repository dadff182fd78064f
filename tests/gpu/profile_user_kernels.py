"""Step 4 (static shapes), step 6 (run-time shapes) and the generated mma.sync GEMM, one
launch each inside a profiler range (for ``ncu --profile-from-start off``), after a warm-up.

    ncu --profile-from-start off --section SpeedOfLight --section WarpStateStats \\
        python tests/gpu/profile_user_kernels.py [n]
"""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))

from numba import cuda  # noqa: E402  (after the examples' path)

import codegen  # noqa: E402
import f16_multistage as static  # noqa: E402
import f16_runtime_shape as runtime  # noqa: E402


def main(n=4096):
    A = torch.randn(n, n, device="cuda", dtype=torch.float16)
    B = torch.randn(n, n, device="cuda", dtype=torch.float16)        # (N,K), K-major
    C = torch.empty(n, n, device="cuda", dtype=torch.float16)
    a, b, c = (cuda.as_cuda_array(t) for t in (A, B, C))
    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
    g = static.make_gemm(n, n, n)
    launches = [lambda: static.launch(g, a, b, c, stream), lambda: runtime.launch(a, b, c, stream),
                codegen.prepare(A, B.t(), C, config=codegen.GemmConfig.default("f16", n, n, n))]
    for fn in launches:                                    # compile, raise the smem limits
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn in launches:
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("profiled: step 4 (static), step 6 (run-time), generated mma.sync")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096)
