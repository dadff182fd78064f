"""Every tutorial kernel of docs/user_kernels.md on the GPU, against numpy (run on a CUDA machine).

    python tests/gpu/check_user_kernels.py

Runs each ``examples/*.py`` at its own small size (as in CI's simulator) and the f16 GEMM
and the transpose also at larger sizes (many CTAs, many k-tiles); then the API cases of
``tests/gpu/user_kernel_cases.py`` and, with torch installed, a bf16 tensor passed without
``.view()``.  Prints one line per
case and 'N passed, N failed'; writes ``$OUT/check_user_kernels.json`` when ``$OUT`` is set.
"""

import importlib.util
import json
import os
import sys
import time

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))      # an example may import an earlier step
EXAMPLES = ["tf32_mma", "tf32_ldmatrix", "tf32_double_buffer", "f16_multistage", "f16_runtime_shape", "transpose",
            "identity_predicate", "hopper_gemm"]


def load(name):
    spec = importlib.util.spec_from_file_location(f"cute_example_{name}", os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def big_f16(mod, M, N, K):
    from numba import cuda

    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    g = mod.make_gemm(M, N, K)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array((M, N), np.float16)
    mod.launch(g, da, db, dc)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    out = dc.copy_to_host().astype(np.float64)
    return float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))


def big_hopper(mod, M, N, K):
    """The hand-written Hopper GEMM at a size of many tiles a CTA and residues (relative error)."""
    from numba import cuda

    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array((M, N), np.float16)
    launch = mod.prepare(mod.make_gemm(), da, db, dc)
    launch()
    cuda.synchronize()
    if mod.error_word(launch):
        raise RuntimeError("a wait on an mbarrier timed out")
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    return float(np.max(np.abs(dc.copy_to_host().astype(np.float64) - ref)) / np.max(np.abs(ref)))


def _relative(out, ref):
    return float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))


def big_transpose(mod, M, N):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((N, M), np.float32)
    t = mod.make_transpose(M, N)
    t.kernel[t.grid, t.block](a, out)
    return float(np.max(np.abs(out - a.T)))


def main():
    from numba import cuda

    if not cuda.is_available():
        print("no CUDA GPU: nothing to check")
        return 2
    results = []

    def record(name, fn, tol):
        t0 = time.perf_counter()
        try:
            err = fn()
            ok = err <= tol
            msg = f"error {err:.3e} (tolerance {tol:g})"
        except Exception as e:          # report every case, then fail
            ok, err, msg = False, None, f"{type(e).__name__}: {e}"
        dt = time.perf_counter() - t0
        print(f"{'PASS' if ok else 'FAIL'} {name}: {msg} [{dt:.1f} s]")
        results.append({"case": name, "ok": ok, "error": err, "seconds": dt, "message": msg})

    hopper = cuda.get_current_device().compute_capability >= (9, 0)
    for name in EXAMPLES:
        if name == "hopper_gemm" and not hopper:
            continue
        mod = load(name)

        def small(mod=mod):
            out, ref = mod.run()
            return float(np.max(np.abs(np.asarray(out, np.float64) - np.asarray(ref, np.float64))))

        record(name, small, mod.TOLERANCE)
    f16 = load("f16_multistage")
    for M, N, K in ((512, 768, 1024), (1024, 1024, 4096)):
        record(f"f16_multistage {M}x{N}x{K} (relative)", lambda M=M, N=N, K=K: big_f16(f16, M, N, K), 1e-2)
    rt = load("f16_runtime_shape")
    for M, N, K in rt.SHAPES:                       # one compilation for all of them
        record(f"f16_runtime_shape {M}x{N}x{K} (relative)", lambda M=M, N=N, K=K: _relative(*rt.run(M, N, K)), 1e-2)
    record("f16_runtime_shape compilations", lambda: float(len(rt.f16_gemm.overloads) - 1), 0.0)
    if hopper:
        hg = load("hopper_gemm")
        for M, N, K in ((4096, 4096, 4096), (3000, 5000, 1000), (1, 8, 64)):
            record(f"hopper_gemm {M}x{N}x{K} (relative)", lambda M=M, N=N, K=K: big_hopper(hg, M, N, K), 1e-2)
    tr = load("transpose")
    record("transpose 4096x2080", lambda: big_transpose(tr, 4096, 2080), 0.0)
    # the API cases of tests/gpu/user_kernel_cases.py (convert, copy_if, shuffles, bf16
    # fragments through ldmatrix, a global projection, a device function), and torch bf16
    # tensors through codegen.cute.launch.launch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import user_kernel_cases as cases

    checks = dict(cases.CHECKS)
    try:
        import torch  # noqa: F401

        checks["torch_bf16"] = cases.check_torch_bf16
    except ImportError:
        print("SKIP torch_bf16: torch is not installed")
    for name, check in checks.items():
        record(f"api {name}", lambda check=check: 0.0 if check()[0] else 1.0, 0.0)
    passed = sum(r["ok"] for r in results)
    print(f"{passed} passed, {len(results) - passed} failed")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "check_user_kernels.json"), "w") as f:
            json.dump({"device": cuda.get_current_device().name.decode() if isinstance(
                cuda.get_current_device().name, bytes) else str(cuda.get_current_device().name),
                "results": results}, f, indent=1)
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
