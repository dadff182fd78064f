"""Where the host time of a cached ``codegen.mm`` call goes, by parts (torch tensors, a GPU).

    python benchmarks/host_parts.py [--n 64]

Times, with :func:`compile_time.host_times` (medians of interleaved runs of 200 calls): the
driver's ``cuLaunchKernel`` through the kernel's ctypes function, a prepared launch
(``codegen.prepare``), ``codegen.mm``, ``codegen.gemm`` into a given C, ``torch.matmul``
(new and given out) and ``torch.empty``; then the same calls with the launch replaced by a
no-op, which leaves their Python.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=64, help="M = N = K (f16)")
    a = p.parse_args(argv)

    import torch

    import codegen
    from compile_time import host_times

    n = a.n
    A = torch.randn(n, n, device="cuda", dtype=torch.float16)
    B = torch.randn(n, n, device="cuda", dtype=torch.float16)
    C = torch.empty(n, n, device="cuda", dtype=torch.float16)
    codegen.mm(A, B)
    launch = codegen.prepare(A, B, C)
    launch()                                   # the launcher's argument slots hold this call's values
    torch.cuda.synchronize()
    L = launch._launcher
    fn = L._kernel("registers").function
    stream = torch.cuda.current_stream().cuda_stream

    def show(times):
        for name, (best, median) in times.items():
            print(f"{name:40s} median {median:6.2f} us  (best {best:6.2f})", flush=True)

    empty = lambda: torch.empty(n, n, device="cuda", dtype=torch.float16)       # noqa: E731
    show(host_times({
        "cuLaunchKernel (ctypes)": lambda: fn.launch(L.grid, L.threads, L.smem, stream, L.slots.pointers),
        "prepared launch": launch, "codegen.mm": lambda: codegen.mm(A, B),
        "codegen.gemm into C": lambda: codegen.gemm(A, B, C), "torch.matmul": lambda: torch.matmul(A, B),
        "torch.matmul(out=C)": lambda: torch.matmul(A, B, out=C), "torch.empty": empty}))
    type(fn).launch = lambda self, *args: None                                   # the Python alone
    show(host_times({"prepared launch, launch a no-op": launch,
                     "codegen.mm, launch a no-op": lambda: codegen.mm(A, B),
                     "codegen.gemm into C, launch a no-op": lambda: codegen.gemm(A, B, C), "torch.empty": empty}))


if __name__ == "__main__":
    main()
