"""GEMM on every array kind and C layout, against numpy in float64 (run on a CUDA machine).

    python tests/gpu/check_array_kinds.py [--workers W]

torch tensors, CuPy arrays, numpy arrays (copied; strided views packed first) and numba
device arrays; C row-major, column-major and a strided view, with beta = 0 (the
epilogue's unpredicated store path on interior tiles) and beta != 0; and C sharing memory
with A or B (an in-place ``Y = Y @ X``, twice, so torch's cached launch meets the overlap
too).  Prints one line per case and 'N passed, N failed'.
"""

import argparse
import sys

import numpy as np

TOL = {"f16": 2e-2, "bf16": 5e-2, "tf32": 2e-2, "f32": 1e-4, "f64": 1e-10}
SHAPES = [(1000, 700, 300), (2048, 2304, 256)]   # the 128x128 and the 128x256 plan for f16


def _host(x):
    mod = type(x).__module__
    if mod.startswith("torch"):
        return x.detach().double().cpu().numpy()
    if mod.startswith("cupy"):
        return x.get().astype(np.float64)
    if isinstance(x, np.ndarray):
        return x.astype(np.float64)
    return x.copy_to_host().astype(np.float64)


def case(i):
    """Run case ``i``; returns (name, ok, message)."""
    import codegen

    kind, dt, clay, beta, (M, N, K) = CASES[i]
    rng = np.random.default_rng(i)
    npdt = {"f16": np.float16, "tf32": np.float32, "f32": np.float32, "f64": np.float64}[dt]
    cdt = np.float32 if dt == "tf32" else npdt
    a = rng.standard_normal((M, K)).astype(npdt)
    b = rng.standard_normal((K, N)).astype(npdt)
    c_big = rng.standard_normal((M, 2 * N + 1)).astype(cdt)

    def c_of(xp_big):   # "row": the first N columns of a wider array; "view": every other column
        return xp_big[:, :N] if clay == "row" else xp_big[:, 1:2 * N:2]

    c_before = c_big.copy()

    if kind == "torch":
        import torch

        A, B, Cb = (torch.from_numpy(np.ascontiguousarray(x)).cuda() for x in (a, b, c_big))
        if clay == "col":
            C = Cb[:, :N].t().contiguous().t()
        else:
            C = c_of(Cb)
    elif kind == "cupy":
        import cupy

        A, B, Cb = cupy.asarray(a), cupy.asarray(b).T.copy().T, cupy.asarray(c_big)   # B column-major
        C = cupy.asfortranarray(Cb[:, :N]) if clay == "col" else c_of(Cb)
    elif kind == "numpy":
        a2 = np.zeros((M, 2 * K), npdt)
        a2[:, ::2] = a
        A, B = a2[:, ::2], b                                                           # A a strided view
        C = np.asfortranarray(c_big[:, :N]) if clay == "col" else c_of(c_big)
    else:  # numba device arrays
        from numba import cuda

        A, B = cuda.to_device(a), cuda.to_device(b)
        C = cuda.to_device(np.ascontiguousarray(c_big[:, :N]) if clay == "row" else np.asfortranarray(c_big[:, :N]))
    C0 = _host(C)
    alpha = 1.5
    codegen.gemm(A, B, C, alpha=alpha, beta=beta, precision="tf32" if dt == "tf32" else None)
    ref = alpha * (a.astype(np.float64) @ b.astype(np.float64)) + beta * C0
    got = _host(C)
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    ok = err <= TOL[dt]
    if clay != "col" and kind != "cuda":   # the columns around C's are untouched
        big = {"torch": lambda: Cb.cpu().numpy(), "cupy": lambda: Cb.get(), "numpy": lambda: c_big}[kind]()
        inside = np.zeros(2 * N + 1, bool)
        inside[:N] = clay == "row"
        inside[1:2 * N:2] |= clay == "view"
        ok = ok and np.array_equal(big[:, ~inside], c_before[:, ~inside])
    return f"{kind:5s} {dt:4s} C={clay:4s} beta={beta} {M}x{N}x{K}", ok, f"err {err:.2e}"


CASES = [(kind, dt, clay, beta, shape)
         for kind, dt in (("torch", "f16"), ("cupy", "f16"), ("numpy", "f16"), ("torch", "tf32"),
                          ("cuda", "f32"), ("cupy", "f64"))
         for clay in (("row", "col") if kind == "cuda" else ("row", "col", "view"))
         for beta in (0.0, 0.5)
         for shape in (SHAPES if dt in ("f16", "tf32") else SHAPES[:1])]


def overlap_case(i):
    """C is A (``gemm(Y, X, Y)``) or C is B (``gemm(X, Y, Y)``), twice; returns (name, ok, message)."""
    import codegen

    kind, dt, which, beta, n = OVERLAP_CASES[i]
    rng = np.random.default_rng(100 + i)
    npdt = {"f16": np.float16, "f32": np.float32}[dt]
    x = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(npdt)
    y = rng.standard_normal((n, n)).astype(npdt)
    if kind == "torch":
        import torch

        X, Y = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    elif kind == "cupy":
        import cupy

        X, Y = cupy.asarray(x), cupy.asarray(y)
    elif kind == "numpy":
        X, Y = x, y.copy()
    else:
        from numba import cuda

        X, Y = cuda.to_device(x), cuda.to_device(y)
    # a call of the same signature without the overlap first: torch's cached launch then meets it
    codegen.gemm(X, X, X.copy() if kind == "numpy" else _like(X), beta=beta)
    ref = y.astype(np.float64)
    for _ in range(2):
        if which == "A":
            codegen.gemm(Y, X, Y, beta=beta)
            ref = ref @ x.astype(np.float64) + beta * ref
        else:
            codegen.gemm(X, Y, Y, beta=beta)
            ref = x.astype(np.float64) @ ref + beta * ref
    got = _host(Y)
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    return f"{kind:5s} {dt:4s} C is {which} beta={beta} {n}^3 x2", err <= TOL[dt], f"err {err:.2e}"


def _like(X):
    mod = type(X).__module__
    if mod.startswith("torch") or mod.startswith("cupy"):
        return X.clone() if mod.startswith("torch") else X.copy()
    from numba import cuda

    return cuda.to_device(X.copy_to_host())


OVERLAP_CASES = [(kind, dt, which, beta, n)
                 for kind, dt in (("torch", "f16"), ("torch", "f32"), ("cupy", "f16"), ("numpy", "f16"),
                                  ("cuda", "f32"))
                 for which in ("A", "B")
                 for beta in (0.0, 1.0)
                 for n in ((1024, 4096) if kind == "torch" and dt == "f16" else (1024,))]


def _run(i):
    return case(i) if i < len(CASES) else overlap_case(i - len(CASES))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=1)
    a = p.parse_args(argv)
    if a.workers > 1:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(a.workers) as pool:
            rows = pool.map(_run, range(len(CASES) + len(OVERLAP_CASES)))
    else:
        rows = [_run(i) for i in range(len(CASES) + len(OVERLAP_CASES))]
    for name, ok, msg in rows:
        print(f"{'PASS' if ok else 'FAIL'} {name} {msg}")
    n = sum(ok for _, ok, _ in rows)
    print(f"{n} passed, {len(rows) - n} failed")
    return n == len(rows)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
