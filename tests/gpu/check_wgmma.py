"""The Hopper (wgmma + TMA) GEMM on an H100: correctness against float64 torch (and cuBLAS fp8).

    python tests/gpu/check_wgmma.py [--quick] [--seed S] [--cases N] [--dtypes f16,bf16,tf32,e4m3,e5m2]

Shapes with residues in M, N and K; f16 and bf16 with A and B K-major and MN-major, alpha/beta;
tf32 and the 8-bit floats (e4m3, e5m2, mixed) with both operands K-major (A row-major, B
column-major), per-tensor scales and bf16/f16/f32 outputs. Each case also checks that no
mbarrier wait timed out. Two probes: whether wgmma reads f32 inputs as tf32 by truncation
(what the simulator twin and the docs say), and that an fp8 operand that is not K-major is
refused. Prints one line per case and 'N passed, N failed'.

References: float64 products of the inputs as the tensor core reads them (tf32: the f32 bits
with the low 13 mantissa bits cleared; fp8: the decoded values times their scales); for fp8
also ``torch._scaled_mm`` (cuBLAS) where it takes the case (not e5m2 x e5m2).
"""

import argparse
import random
import sys

FP8 = ("e4m3", "e5m2")


def _torch_dtype(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32,
            "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[name]


def tf32_truncated(torch, x):
    """f32 ``x`` as wgmma reads it: the low 13 mantissa bits cleared (float64)."""
    return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32).double()


def make(torch, name, r, c, lay):
    """An (r, c) operand: "N" row-major, "T" column-major (a transposed view)."""
    if lay == "T":
        return make(torch, name, c, r, "N").t()
    x = torch.randn(r, c, device="cuda")
    return x.to(_torch_dtype(torch, name)) if name != "tf32" else x


def run_16bit(torch, codegen, name, M, N, K, la, lb, beta):
    from codegen import GemmConfig

    name, _, variant = name.partition("-")      # "-cluster": clusters of two CTAs sharing B;
    #                                             "-tail": 128x256 tiles, split-K 2
    A, B = make(torch, name, M, K, la), make(torch, name, K, N, lb)
    C0 = torch.randn(M, N, device="cuda", dtype=_torch_dtype(torch, name))
    C = C0.clone()
    cfg = GemmConfig.default(name, M, N, K, arch=(9, 0))
    if variant == "cluster":
        cfg = cfg.with_(cluster_m=2, split_k=1)
    elif variant == "tail":     # 128x256 tiles, the last wave's split in two
        cfg = cfg.with_(bm=128, bn=256, stages=4, split_k=2)
    launch = codegen.prepare(A, B, C, alpha=1.5, beta=beta, config=cfg)
    ref = 1.5 * (A.double() @ B.double()) + beta * C0.double()
    errs = []
    for _ in range(2):          # twice: split-K counters are left at zero for the next launch
        C.copy_(C0)
        launch()
        torch.cuda.synchronize()
        launch._launcher.check()
        errs.append(((C.double() - ref).abs().max() / (ref.abs().max() + 1e-30)).item())
    err = max(errs)
    splits = getattr(launch._launcher, "splits", 1)
    return err, err <= (2e-2 if name == "f16" else 5e-2), f"split-K {splits}" if splits > 1 else ""


def run_tf32(torch, codegen, M, N, K, out, beta):
    """f32 inputs read as tf32 by the wgmma kernel; A row-major, B column-major."""
    from codegen import GemmConfig

    A, B = make(torch, "tf32", M, K, "N"), make(torch, "tf32", K, N, "T")
    odt = _torch_dtype(torch, out)
    C0 = torch.randn(M, N, device="cuda", dtype=odt)
    C = C0.clone()
    cfg = GemmConfig.default("tf32", M, N, K, out_dtype=out, arch=(9, 0))
    launch = codegen.prepare(A, B, C, alpha=0.75, beta=beta, config=cfg)
    launch()
    torch.cuda.synchronize()
    launch._launcher.check()
    ref = 0.75 * (tf32_truncated(torch, A) @ tf32_truncated(torch, B)) + beta * C0.double()
    err = ((C.double() - ref).abs().max() / (ref.abs().max() + 1e-30)).item()
    tol = {"f32": 1e-4, "f16": 2e-3, "bf16": 1e-2}[out]
    # beside it, cuBLAS TF32 (its own rounding of the inputs): a loose agreement
    torch.backends.cuda.matmul.allow_tf32 = True
    cub = 0.75 * (A @ B).double() + beta * C0.double()
    torch.backends.cuda.matmul.allow_tf32 = False
    err_cublas = ((C.double() - cub).abs().max() / (cub.abs().max() + 1e-30)).item()
    return err, err <= tol and err_cublas <= 1e-2, f"vs cuBLAS TF32 {err_cublas:.1e}"


def tf32_probe(torch, codegen):
    """Inputs +-(k + j 2^-12), k in 2..8, j in 1..7: truncated to tf32 they are the integers k
    (exact sums), rounded to nearest they are not (j >= 5 rounds up). Passes when the kernel's
    result equals the integer product exactly, i.e. wgmma reads tf32 by truncation."""
    from codegen import GemmConfig

    g = torch.Generator(device="cuda").manual_seed(5)

    def inputs(r, c):
        k = torch.randint(2, 9, (r, c), device="cuda", generator=g) \
            * (torch.randint(0, 2, (r, c), device="cuda", generator=g) * 2 - 1)
        j = torch.randint(1, 8, (r, c), device="cuda", generator=g)
        x = (k.abs().double() + j.double() * 2.0 ** -12) * k.sign().double()
        return x.float(), k.double()

    M, N, K = 200, 136, 264
    A, Aq = inputs(M, K)
    Bt, Bq = inputs(N, K)
    C = torch.empty(M, N, device="cuda", dtype=torch.float32)
    codegen.gemm(A, Bt.t(), C, config=GemmConfig.default("tf32", M, N, K, arch=(9, 0)))
    torch.cuda.synchronize()
    exact = Aq @ Bq.t()
    nearest = A.double() @ Bt.t().double()     # not what the kernel should give
    err = (C.double() - exact).abs().max().item()
    how = "truncated" if err == 0 else ("rounded or other" if err > 0 else "?")
    return err, err == 0, f"tf32 inputs read {how} (f64 of the untruncated inputs differs by " \
                          f"{(exact - nearest).abs().max().item():.3g})"


def run_fp8(torch, codegen, ta, tb, M, N, K, out, beta):
    """A (ta) row-major, B (tb) column-major, per-tensor scales; C out (bf16, f16 or f32)."""
    A, B = make(torch, ta, M, K, "N"), make(torch, tb, K, N, "T")
    sa, sb = 0.5, 0.25 if beta == 0 else 2.0
    odt = _torch_dtype(torch, out)
    ref = (A.double() * sa) @ (B.double() * sb)
    if beta == 0:
        C = codegen.gemm(A, B, scale_a=torch.tensor(sa, device="cuda"), scale_b=sb, out_dtype=out)
        C0 = None
    else:
        C0 = torch.randn(M, N, device="cuda", dtype=odt)
        C = C0.clone()
        codegen.gemm(A, B, C, beta=beta, scale_a=sa, scale_b=sb)
        ref = ref + beta * C0.double()
    torch.cuda.synchronize()
    assert C.dtype == odt and C.shape == (M, N), (C.dtype, C.shape)
    err = ((C.double() - ref).abs().max() / (ref.abs().max() + 1e-30)).item()
    # Hopper's fp8 wgmma accumulates with fewer bits than f32 (about 14 bits of mantissa were
    # reported for long K); the kernel adds nothing (no promotion to CUDA-core sums), so the
    # tolerance is that of the tensor core, not of the output type
    tol = 2e-2
    note = ""
    if beta == 0 and (ta, tb) != ("e5m2", "e5m2"):
        try:
            cub = torch._scaled_mm(A, B, scale_a=torch.tensor(sa, device="cuda"),
                                   scale_b=torch.tensor(sb, device="cuda"), out_dtype=odt)
            e2 = ((C.double() - cub.double()).abs().max() / (cub.double().abs().max() + 1e-30)).item()
            note = f"vs torch._scaled_mm {e2:.1e}"
            if e2 > tol:
                return err, False, note
        except Exception as e:  # cuBLAS refuses some shapes (e.g. N % 16): the float64 reference stands
            note = f"torch._scaled_mm n/a ({type(e).__name__})"
    return err, err <= tol, note


def fp8_layout_probe(torch, codegen):
    """An fp8 A that is not row-major and a B that is not column-major: GemmErrors naming them."""
    from codegen import GemmError

    A, B = make(torch, "e4m3", 64, 32, "T"), make(torch, "e4m3", 32, 48, "T")
    msgs = []
    for args, who in (((A, B), "A (e4m3)"), ((make(torch, "e4m3", 64, 32, "N"), make(torch, "e4m3", 32, 48, "N")),
                                             "B (e4m3)")):
        try:
            codegen.gemm(*args)
            return 1.0, False, f"no error for a non-K-major {who}"
        except GemmError as e:
            if who not in str(e) or "K-major" not in str(e):
                return 1.0, False, f"unclear error: {e}"
            msgs.append(who)
    return 0.0, True, "refused: " + ", ".join(msgs)


def run(torch, codegen, case):
    kind = case[0]
    if kind.partition("-")[0] in ("f16", "bf16"):
        return run_16bit(torch, codegen, *case)
    if kind == "tf32":
        return run_tf32(torch, codegen, *case[1:])
    if kind == "tf32-probe":
        return tf32_probe(torch, codegen)
    if kind == "fp8-layout-probe":
        return fp8_layout_probe(torch, codegen)
    return run_fp8(torch, codegen, *case)


def main(argv=None):
    import torch

    import codegen

    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cases", type=int, default=40, help="random cases (spread over the dtypes)")
    p.add_argument("--dtypes", default="f16,bf16,tf32,e4m3,e5m2")
    p.add_argument("--max-dim", type=int, default=1 << 30, help="skip cases with a larger M, N or K")
    a = p.parse_args(argv)
    rnd = random.Random(a.seed)
    dtypes = a.dtypes.split(",")
    # TMA reads rows whose stride is a multiple of 16 bytes: transposed operands get sizes
    # that are multiples of 8 along their rows (16-bit), K multiples of 4 (tf32) or 16 (fp8);
    # the wgmma epilogue stores pairs of columns where C's row stride is even, single elements
    # where it is odd: N any for tf32 and fp8 (K-major B), even for 16-bit (B MN-major or K-major)
    cases = [("f16", 128, 256, 64, "N", "N", 0.0), ("f16", 4096, 4096, 4096, "N", "N", 0.0),
             ("bf16", 1000, 1000, 1000, "N", "N", 0.0), ("f16", 300, 712, 520, "N", "T", 0.5),
             ("f16", 264, 136, 72, "T", "N", -1.0), ("bf16", 40, 8, 8, "T", "T", 0.0),
             ("f16", 1, 8, 1000, "N", "N", 0.0), ("bf16", 129, 264, 8, "N", "N", 1.0),
             # few tiles, long K: split-K (2-4 parts) on both epilogues
             ("f16", 128, 8192, 8192, "N", "N", 0.0), ("f16", 200, 1000, 3000, "T", "N", 0.5),
             ("bf16", 64, 64, 4096, "N", "T", 0.0), ("f16", 136, 520, 2056, "N", "T", 0.0),
             ("tf32", 100, 300, 2000, "f32", 0.5), ("e4m3", "e4m3", 128, 512, 4096, "bf16", 0.0),
             # a short last wave of 128x256 tiles: 128x128 tiles instead (a very short last
             # wave of theirs split in parts, the full waves' tiles whole)
             ("f16", 1280, 4096, 4096, "N", "N", 0.0), ("bf16", 2560, 4096, 4096, "T", "N", 0.5),
             ("f16", 2176, 2048, 4096, "N", "T", 0.0), ("bf16", 2440, 1800, 2056, "T", "T", -1.0),
             ("tf32", 1280, 4096, 4096, "f32", 0.0), ("e4m3", "e4m3", 1280, 4096, 4096, "bf16", 0.0),
             ("f16-tail", 1280, 4096, 4096, "N", "N", 0.0), ("bf16-tail", 5120, 5128, 2056, "T", "N", 0.5),
             # clusters of two CTAs sharing B: an odd number of tile rows, both B majors, beta
             ("f16-cluster", 3900, 1000, 520, "N", "N", 0.0), ("f16-cluster", 300, 712, 4096, "N", "T", 0.5),
             ("bf16-cluster", 136, 264, 72, "T", "N", 1.0), ("f16-cluster", 4096, 4096, 4096, "N", "N", 0.0),
             ("bf16-cluster", 1, 256, 64, "N", "T", 0.0),
             ("tf32", 128, 256, 32, "f32", 0.0), ("tf32", 4096, 4096, 4096, "f32", 0.0),
             ("tf32", 1000, 1000, 1000, "f32", 0.5), ("tf32", 300, 712, 524, "bf16", 0.0),
             ("tf32", 1, 10, 4, "f16", -1.0), ("tf32-probe",),
             ("e4m3", "e4m3", 128, 256, 128, "bf16", 0.0), ("e4m3", "e4m3", 4096, 4096, 4096, "bf16", 0.0),
             ("e5m2", "e5m2", 1000, 1000, 1008, "f16", 0.0), ("e4m3", "e5m2", 300, 712, 528, "f32", 0.0),
             ("e5m2", "e4m3", 264, 136, 16, "bf16", 1.0), ("e4m3", "e4m3", 1, 8, 4096, "f32", -1.0),
             ("e4m3", "e4m3", 129, 264, 144, "bf16", 0.0), ("fp8-layout-probe",),
             # an odd N: C's rows (odd stride) stored element by element ("elements"), each output
             # type, C given (beta) or new; the 74x1531x1840
             ("e4m3", "e4m3", 74, 1531, 1840, "bf16", 0.0), ("e4m3", "e4m3", 1000, 1531, 4096, "f16", 0.5),
             ("e5m2", "e4m3", 333, 50257, 768, "f32", 0.0), ("e4m3", "e4m3", 8192, 4095, 1024, "bf16", -1.0),
             ("tf32", 300, 711, 524, "f32", 0.5), ("tf32", 77, 4095, 1024, "bf16", 0.0)]
    for i in range(0 if a.quick else a.cases):
        name = dtypes[i % len(dtypes)]
        M = rnd.randint(1, 3000)
        if name in ("f16", "bf16"):
            la, lb = rnd.choice("NT"), rnd.choice("NT")
            M = 8 * rnd.randint(1, 400) if la == "T" else M
            cases.append((name, M, 8 * rnd.randint(1, 400), 8 * rnd.randint(1, 400), la, lb, rnd.choice([0.0, 0.0, 0.5])))
        elif name == "tf32":
            cases.append((name, M, rnd.randint(1, 3000), 4 * rnd.randint(1, 800), rnd.choice(["f32", "f32", "bf16"]),
                          rnd.choice([0.0, 0.0, 0.5])))
        else:
            tb = rnd.choice(FP8) if rnd.random() < 0.3 else name
            cases.append((name, tb, M, rnd.randint(1, 3000), 16 * rnd.randint(1, 200),
                          rnd.choice(["bf16", "bf16", "f16", "f32"]), rnd.choice([0.0, 0.0, 0.5])))

    def kind(c):
        return ("tf32" if c[0] == "tf32-probe" else "e4m3" if c[0] == "fp8-layout-probe"
                else c[0].partition("-")[0])

    def dims(c):
        return [x for x in c[1:] if isinstance(x, int)][:3]

    cases = [c for c in cases if kind(c) in dtypes and max(dims(c) or [0]) <= a.max_dim]
    ok_n = 0
    for case in cases:
        try:
            err, ok, note = run(torch, codegen, case)
            msg = f"err {err:.2e} {note}"
        except Exception as e:  # report and go on
            ok, msg = False, f"{type(e).__name__}: {str(e)[:300]}"
        ok_n += ok
        print(f"{'PASS' if ok else 'FAIL'} {' '.join(str(x) for x in case)}: {msg}", flush=True)
    print(f"{ok_n} passed, {len(cases) - ok_n} failed")
    return ok_n == len(cases)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
