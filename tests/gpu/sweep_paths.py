"""The Hopper (wgmma) path against the mma.sync path and float64, on random cases (run on an H100).

    python tests/gpu/sweep_paths.py [--cases 240] [--workers 8] [--seed S] [--max-dim 2048] [--json out.json]

Each case: a wgmma input type (f16, bf16, tf32, e4m3, e5m2, e4m3 x e5m2), M, N, K with
residues (mostly with 16-byte rows, so that TMA can read them, sometimes not), each operand
row- or column-major, C row- or column-major, alpha and beta. For each case it runs

* the default dispatch (``config=None``) and records which path it chose;
* the mma.sync kernel (an explicit ``path="mma_sync"`` plan; not for the 8-bit floats,
  which have no such kernel);
* the wgmma kernel (an explicit Hopper plan) where the operands and C allow it: a
  ``GemmError`` there is "n/a" for 16-bit and tf32 inputs, and then the default dispatch
  must not have chosen wgmma; for the 8-bit floats a layout wgmma cannot read (an operand
  that is not K-major, a C whose leading dimension is odd) must be a ``GemmError``, and the
  case passes when it is (a column-major C runs as ``C^T = B^T @ A^T``);

and checks each result against float64 (``alpha * A @ B + beta * C`` of the inputs) and the
two paths against each other, relative to the largest reference value. Compiling is the slow
part: ``--workers`` processes (see check_gemm.py), cases of one kernel variant in one.
Prints one line per case and 'N passed, N failed'.
"""

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_gemm import run_in_workers  # noqa: E402

DTYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2", "e4m3/e5m2")
FP8 = ("e4m3", "e5m2")
#: largest |error| / max |reference| against float64, and between the two paths. tf32:
#: wgmma truncates the inputs, mma.sync rounds them. fp8: Hopper's fp8 wgmma accumulates
#: with fewer bits than f32 over long K.
TOL = {"f16": 1e-2, "bf16": 3e-2, "tf32": 1e-2, "fp8": 2e-2}
OUT_TOL = {"f16": 2e-3, "bf16": 1e-2, "f32": 0.0}


def _tdt(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32,
            "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[name]


def make_case(rnd, dt, max_dim):
    ta, _, tb = dt.partition("/")
    tb = tb or ta
    fp8 = ta in FP8
    eb = {"f16": 2, "bf16": 2, "tf32": 4}.get(ta, 1)
    row = 16 // eb                                   # elements of a 16-byte row

    def dim(align):
        d = rnd.choice([rnd.randint(1, 64), rnd.randint(1, max_dim // 4), rnd.randint(1, max_dim)])
        return -(-d // align) * align if rnd.random() < 0.85 else d

    M, N, K = dim(row), dim(2), dim(row)            # residues w.r.t. the tiles; N even for most wgmma C
    if fp8 and rnd.random() < 0.9:                   # fp8: mostly what wgmma takes
        la, lb, lc = "N", "T", "N"
        K = -(-K // 16) * 16
        N += N % 2
    elif ta == "tf32" and rnd.random() < 0.6:       # tf32: mostly what wgmma takes (K-major both)
        la, lb, lc = "N", "T", rnd.choice("NNNT")
    else:
        la, lb, lc = rnd.choice("NT"), rnd.choice("NT"), rnd.choice("NNNT")
        if fp8:               # a single row or column is K-major whatever its strides say
            M, N = max(M, 2), max(N, 2)
    out = rnd.choice({"f16": ["f16", "f32"], "bf16": ["bf16", "f32"], "tf32": ["f32", "f32", "bf16"]}.get(
        ta, ["bf16", "bf16", "f16", "f32"]))
    alpha, beta = rnd.choice([(1.0, 0.0), (1.5, 0.0), (1.0, 1.0), (-0.5, 2.0)])
    return (ta, tb, M, N, K, la, lb, lc, out, alpha, beta)


def variant_group(case):
    ta, tb, M, N, K, la, lb, lc, out, alpha, beta = case
    return (ta, tb, la, lb, lc, out, beta == 0, M % 8 == 0, N % 8 == 0, K % 16 == 0)


def _operand(torch, t, r, c, lay):
    x = torch.randn(c, r, device="cuda").t() if lay == "T" else torch.randn(r, c, device="cuda")
    return x if t == "tf32" else x.to(_tdt(torch, t))


def _c(torch, out, M, N, lay, like=None):
    C = torch.empty(N, M, device="cuda", dtype=_tdt(torch, out)).t() if lay == "T" else \
        torch.empty(M, N, device="cuda", dtype=_tdt(torch, out))
    if like is not None:
        C.copy_(like)
    return C


def run_one(torch, codegen, case):
    """(ok, message) for one case."""
    from codegen import GemmConfig, GemmError

    ta, tb, M, N, K, la, lb, lc, out, alpha, beta = case
    fp8 = ta in FP8
    A, B = _operand(torch, ta, M, K, la), _operand(torch, tb, K, N, lb)
    C0 = torch.randn(M, N, device="cuda").to(_tdt(torch, out))
    ref = alpha * (A.double() @ B.double()) + beta * C0.double()
    scale = ref.abs().max().item() + 1e-30
    prec = "tf32" if ta == "tf32" else None
    bdt = tb if fp8 else None
    tol = TOL["fp8" if fp8 else ta] + OUT_TOL[out]

    def run(config):
        C = _c(torch, out, M, N, lc, C0)
        launch = codegen.prepare(A, B, C, alpha=alpha, beta=beta, config=config, precision=prec)
        launch()
        torch.cuda.synchronize()
        if hasattr(launch._launcher, "check"):
            launch._launcher.check()
        return C.double(), launch.kernel.config.path

    notes, ok = [], True
    wg_cfg = GemmConfig.default(ta, M, N, K, out, arch=(9, 0), b_dtype=bdt)
    try:
        try:
            wg, _ = run(wg_cfg)
        except GemmError as e:          # an operand TMA cannot read is copied, in tiles of 128 columns
            if "copies" not in str(e) or wg_cfg.bn <= 128:
                raise
            wg_cfg = wg_cfg.with_(bn=128, stages=6)
            wg, _ = run(wg_cfg)
    except GemmError as e:
        wg = None
        notes.append(f"wgmma n/a ({str(e)[:90]})")
    if fp8:
        # what wgmma reads: K-major operands with 16-byte rows, a row- or column-major C of even
        # leading dimension (N for a row-major C, M for a column-major one)
        wgmma_ok = la == "N" and lb == "T" and K % 16 == 0 and (N if lc == "N" else M) % 2 == 0
        if wg is None:
            return (not wgmma_ok), " ".join(notes) + ("" if not wgmma_ok else " UNEXPECTED")
        if not wgmma_ok:
            return False, "wgmma ran on a layout it cannot read"
        err = (wg - ref).abs().max().item() / scale
        return err <= tol, f"wgmma err {err:.1e}"
    default, path = run(None)
    notes.insert(0, f"default={path}")
    if path == "wgmma" and wg is None:
        ok, notes = False, notes + ["default chose wgmma where an explicit wgmma plan was refused"]
    mma, _ = run(GemmConfig.default(ta, M, N, K, out))
    e_mma = (mma - ref).abs().max().item() / scale
    e_def = (default - ref).abs().max().item() / scale
    notes.append(f"mma.sync err {e_mma:.1e}")
    ok = ok and e_mma <= tol and e_def <= tol
    if wg is not None:
        e_wg = (wg - ref).abs().max().item() / scale
        e_x = (wg - mma).abs().max().item() / scale
        notes.append(f"wgmma err {e_wg:.1e} wgmma-vs-mma.sync {e_x:.1e}")
        ok = ok and e_wg <= tol and e_x <= tol
    return ok, " ".join(notes)


def run_cases(cases):
    import torch

    import codegen

    rows = []
    for case in cases:
        try:
            ok, msg = run_one(torch, codegen, case)
        except Exception as e:  # report and go on
            ok, msg = False, f"{type(e).__name__}: {str(e)[:300]}"
        ta, tb, M, N, K, la, lb, lc, out, alpha, beta = case
        rows.append({"case": list(case), "ok": bool(ok), "msg": msg})
        print(f"{'PASS' if ok else 'FAIL'} {ta}x{tb}->{out} M={M} N={N} K={K} A={la} B={lb} C={lc} "
              f"alpha={alpha} beta={beta}: {msg}", flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--cases", type=int, default=240)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-dim", type=int, default=2048)
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    rnd = random.Random(a.seed)
    dtypes = a.dtypes.split(",")
    cases = [make_case(rnd, dtypes[i % len(dtypes)], a.max_dim) for i in range(a.cases)]
    rows = run_in_workers(cases, a.workers, variant_group, run_cases)
    ok_n = sum(r["ok"] for r in rows)
    print(f"{ok_n} passed, {len(rows) - ok_n} failed")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return ok_n == len(rows)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
