"""Small Hopper-kernel cases for compute-sanitizer (memcheck, racecheck, synccheck) on an H100.

    compute-sanitizer --tool racecheck --report-api-errors no python tests/gpu/sanitize_wgmma.py

Split-K (the default plan of problems of few tiles and a long K), clusters of two sharing B,
a column-major C (run as the transposed GEMM), 8-bit floats split in parts, batches of GEMMs, one C box a slice
(64-column tiles: the staging buffers alternate across tiles), CTAs of two tiles (the overlapped epilogue), a short last wave of tiles split in parts; residues in M, N and K, both epilogues. Each case is checked against float64 products; prints 'N passed, N failed'.
"""

import sys


def main():
    import torch

    import codegen
    from codegen import GemmConfig

    cases = [  # (dtype, M, N, K, B layout, C layout, beta, extra config fields)
        ("f16", 64, 520, 4104, "N", "N", 0.0, {}),              # 64x128 tiles, split-K 4, TMA store
        ("bf16", 100, 264, 2056, "T", "N", 0.5, {}),            # split-K 2, stores from registers
        ("f16", 200, 520, 136, "N", "N", 0.0, {"cluster_m": 2}),  # an odd number of tile rows
        ("f16", 72, 264, 200, "T", "N", 1.0, {"cluster_m": 2}),
        ("f16", 100, 264, 72, "N", "T", 0.0, {}),               # column-major C: C^T = B^T @ A^T
        ("bf16", 264, 40, 2048, "T", "T", -1.0, {}),            # column-major C, split-K
        ("e4m3", 64, 256, 8192, "T", "N", 0.0, {}),             # 8-bit floats, split-K 4
        ("f16", 300, 72, 136, "T", "N", 0.0, {"bm": 128, "bn": 64, "stages": 4}),   # one C box a slice: buffers alternate
        # 144 tiles of 128x256 (some CTAs run two): the overlapped epilogue stores a tile's
        # boxes during the next tile's k-tiles; 2 k-tiles, fewer than the 4 boxes
        ("f16", 2304, 2048, 72, "N", "N", 0.0, {"bn": 256, "stages": 4}),
        ("bf16", 2200, 2104, 304, "T", "N", 0.0, {"bn": 256, "stages": 4}),   # residues in M, N and K; 5 k-tiles a tile
        # more tiles than CTAs, split-K: the full wave's tiles whole, the last wave's split
        ("f16", 2432, 1792, 136, "N", "N", 0.0, {"bn": 256, "stages": 4, "split_k": 2}),  # 133 tiles: the last in
        #                                                           parts of 1 and 2 k-tiles
        ("bf16", 2440, 1800, 200, "T", "N", 0.5, {"bn": 256, "stages": 4, "split_k": 3}),  # 160 tiles, 28 in 3
        #                                                           parts; residues; beta
        # a fused bias and activation (fields "bias" and "activation" go to prepare): the bias's
        # loads past N, the overlapped epilogue, split-K's last part applying it once
        ("bf16", 2200, 2104, 304, "T", "N", 0.0, {"bn": 256, "stages": 4, "bias": "bf16", "activation": "gelu"}),
        ("f16", 300, 72, 136, "T", "N", 0.0, {"bm": 128, "bn": 64, "bias": "f32", "activation": "silu"}),
        ("f16", 64, 520, 4104, "N", "N", 0.0, {"bias": "f16", "activation": "relu"}),   # split-K 4
        # batches of GEMMs (field "batch": L matrices a operand, one launch): 3-D tensor maps
        # (loads, multicast, the TMA store), C's batch stride from registers, a batch run
        # transposed, split-K parts and clusters over the matrices' tiles, a fused bias
        ("f16", 200, 264, 136, "N", "N", 0.0, {"batch": 3}),
        ("bf16", 100, 264, 200, "T", "N", 0.5, {"batch": 4}),
        ("f16", 100, 264, 72, "N", "T", 0.0, {"batch": 3}),
        ("f16", 64, 520, 2056, "N", "N", 0.0, {"batch": 5, "split_k": 2}),
        ("f16", 300, 264, 136, "T", "N", 0.0, {"batch": 3, "cluster_m": 2}),
        ("bf16", 300, 72, 136, "T", "N", 0.0, {"batch": 2, "bias": "bf16", "activation": "gelu"}),
    ]
    ok_n = 0
    for name, M, N, K, lb, lc, beta, extra in cases:
        fp8 = name == "e4m3"
        dt = {"f16": torch.float16, "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn}[name]
        extra = dict(extra)
        L = extra.pop("batch", None)
        lead = (L,) if L else ()
        A = torch.randn(*lead, M, K, device="cuda").to(dt)
        B = (torch.randn(*lead, K, N, device="cuda").to(dt) if lb == "N"
             else torch.randn(*lead, N, K, device="cuda").to(dt).transpose(-1, -2))
        out = torch.bfloat16 if fp8 else dt
        C0 = (torch.randn(*lead, M, N, device="cuda").to(out) if lc == "N"
              else torch.randn(*lead, N, M, device="cuda").to(out).transpose(-1, -2))
        C = C0.clone()              # the same strides (a dense tensor's clone keeps them)
        assert C.stride() == C0.stride() and C.data_ptr() != C0.data_ptr()
        bias_t, act = extra.pop("bias", None), extra.pop("activation", None)
        bias = None if bias_t is None else torch.randn(N, device="cuda").to(
            {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[bias_t])
        cfg = GemmConfig.default(name, M, N, K, arch=(9, 0), batch=L or 1)
        cfg = cfg.with_(**{"split_k": 1, **extra}) if extra else cfg
        cfg = cfg.with_(activation=act, bias=bias_t) if bias_t or act else cfg
        launch = codegen.prepare(A, B, C, beta=beta, config=cfg, bias=bias, activation=act)
        launch()
        torch.cuda.synchronize()
        launch._launcher.check()
        ref = A.double() @ B.double() + beta * C0.double() if not fp8 else \
            A.float().double() @ B.float().double() + beta * C0.double()
        if bias is not None:
            ref = ref + bias.double()
        if act is not None:
            ref = {"relu": torch.relu, "silu": torch.nn.functional.silu,
                   "gelu": torch.nn.functional.gelu}[act](ref)
        err = ((C.double() - ref).abs().max() / ref.abs().max()).item()
        ok = err < 2e-2
        ok_n += ok
        print(f"{'PASS' if ok else 'FAIL'} {name} {f'{L}x' if L else ''}{M}x{N}x{K} B {lb} C {lc} beta {beta} {extra or ''} "
              f"{'bias ' + bias_t if bias_t else ''} {act or ''} split-K "
              f"{cfg.split_k}: err {err:.1e}", flush=True)
    groups = [  # grouped GEMMs: (dtype, group sizes, N, K, rows past the last group)
        ("bf16", [300, 0, 128, 1, 129, 77], 520, 264, 5),   # empty groups, groups cut inside tiles
        ("f16", [16] * 20, 256, 512, 0),
        ("bf16", [0, 700, 24], 1000, 136, 9),
        ("bf16", [600, 0, 257, 700], 520, 264, 3),          # groups of 2 tile rows and more: clusters of two
    ]
    for name, sizes, N, K, extra in groups:
        dt = {"f16": torch.float16, "bf16": torch.bfloat16}[name]
        offs = torch.tensor(__import__("numpy").cumsum(sizes), dtype=torch.int32, device="cuda")
        x = torch.randn(sum(sizes) + extra, K, device="cuda").to(dt)
        w = torch.randn(len(sizes), N, K, device="cuda").to(dt).transpose(1, 2)
        out = torch.full((sum(sizes) + extra, N), 7.0, device="cuda", dtype=dt)
        codegen.grouped_gemm(x, w, offs, out)
        torch.cuda.synchronize()
        ref = torch.full_like(out, 7.0, dtype=torch.float64)
        lo = 0
        for g, hi in enumerate(offs.tolist()):
            ref[lo:hi] = x[lo:hi].double() @ w[g].double()
            lo = hi
        err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
        ok = err < 2e-2
        ok_n += ok
        print(f"{'PASS' if ok else 'FAIL'} grouped {name} sizes {sizes[:6]} N {N} K {K}: err {err:.1e}", flush=True)
    total = len(cases) + len(groups)
    print(f"{ok_n} passed, {total - ok_n} failed")
    return ok_n == total


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
