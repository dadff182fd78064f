"""GEMM speed over a grid of LLM-like shapes: the generated kernels against cuBLAS
(``torch.matmul``, ``torch._scaled_mm`` for e4m3) and the autotuned Triton matmul
(benchmarks/triton_matmul.py), interleaved in the same process.

    python benchmarks/bench_grid.py [--dtypes f16,bf16,e4m3] [--ms 1,16,...] [--nks 4096x4096,...]
                                    [--rounds 5] [--no-triton] [--precompile WORKERS]
                                    [--json out.json] [--plot ratios.svg]

The grid: M in 1, 16, 64, 128, 257, 1000, 1280, 2048, 3072, 4096, 8192 times (N, K) in
(4096, 4096), (14336, 4096), (4096, 14336), (50257, 768), (1531, 4096): 55 shapes a dtype.
f16 and bf16 multiply a row-major A (M,K) by a row-major B (K,N), as ``torch.matmul`` takes
them, against cuBLAS and Triton; e4m3 multiplies a row-major A by a K-major B (stored (N,K)
row-major, used as B^T; scales 1, bf16 C) against ``torch._scaled_mm`` (no Triton column).
The generated kernel is the library's own choice (``codegen.prepare`` without a config),
timed launch only; its path (Hopper ``wgmma`` or ``mma_sync``) and tile are recorded.

Per shape, the libraries run interleaved in ``--rounds`` rounds of 20 ms bursts
(``bench_gemm.interleaved``): TFLOP/s are medians over rounds, ratios the medians of the
per-round ratios (above 1: the generated kernel is faster). The first call's result is
checked against torch's (max abs error over the reference's max magnitude). A shape that a
library refuses or fails is recorded (None, or the error's first 120 characters) and the grid
goes on. Before timing, ``--precompile`` worker processes compile every kernel (numba's and
Triton's disk caches), so the timed process only loads them.

Prints a markdown table per dtype and a summary (geometric means of the ratios, the worst
shape against the faster of cuBLAS and Triton, the shapes on the Hopper path); writes JSON to
``$OUT/bench_grid.json`` (and ``--json``). Needs a CUDA GPU (Hopper for e4m3), torch and triton
(``--no-triton`` leaves Triton out). The default grid (165 shapes) is sized for under 8 minutes
on one H200: most of it is Triton's autotuning (11 configs a shape, f16 and bf16) and the
``--rounds`` bursts (3 libraries x 20 ms a round).
"""

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
for _p in (HERE, os.path.dirname(HERE)):      # bench_gemm and triton_matmul; codegen from a checkout
    if _p not in sys.path:
        sys.path.insert(0, _p)

from bench_gemm import FP8, interleaved, median_ratio, operands, reference, save_json  # noqa: E402

MS = (1, 16, 64, 128, 257, 1000, 1280, 2048, 3072, 4096, 8192)
NKS = ((4096, 4096), (14336, 4096), (4096, 14336), (50257, 768), (1531, 4096))
DTYPES = ("f16", "bf16", "e4m3")
#: largest relative error (max |C - ref| / max |ref|) accepted, per dtype
TOL = {"f16": 1e-2, "bf16": 2e-2, "e4m3": 5e-2}
ERR_CHARS = 120
LIBS = ("cublas", "triton")
JSON_NAME = "bench_grid.json"


# ---- the grid and the command line ------------------------------------------------------

def parse_ints(spec, what):
    """``"1,16,64"`` -> (1, 16, 64); positive ints only."""
    try:
        out = tuple(int(x) for x in spec.split(",") if x.strip())
    except ValueError:
        raise SystemExit(f"{what}: {spec!r} is not a comma-separated list of ints") from None
    if not out or min(out) <= 0:
        raise SystemExit(f"{what}: {spec!r} needs positive ints")
    return out


def parse_nks(spec):
    """``"4096x4096,50257x768"`` -> ((4096, 4096), (50257, 768)): (N, K) pairs."""
    out = []
    for s in filter(None, (x.strip() for x in spec.split(","))):
        v = s.lower().split("x")
        if len(v) != 2:
            raise SystemExit(f"--nks: {s!r} is not NxK")
        out.append(parse_ints(",".join(v), "--nks"))
    if not out:
        raise SystemExit("--nks: no NxK pair given")
    return tuple(out)


def parse_dtypes(spec):
    out = tuple(d.strip() for d in spec.split(",") if d.strip())
    bad = [d for d in out if d not in DTYPES]
    if bad or not out:
        raise SystemExit(f"--dtypes: {', '.join(bad) or spec!r}: choose from {', '.join(DTYPES)}")
    return out


def grid_shapes(ms=MS, nks=NKS):
    """The (M, N, K) of the grid, grouped by (N, K), M ascending within a group."""
    return [(M, N, K) for N, K in nks for M in ms]


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated, of f16, bf16, e4m3 (default all)")
    p.add_argument("--ms", default=",".join(map(str, MS)), help="comma-separated M values")
    p.add_argument("--nks", default=",".join(f"{n}x{k}" for n, k in NKS), help="comma-separated NxK pairs")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per shape (20 ms bursts of each library)")
    p.add_argument("--no-triton", action="store_true", help="leave the Triton matmul out")
    p.add_argument("--precompile", type=int, default=min(16, os.cpu_count() or 1),
                   help="compile the kernels in this many processes first (0: compile on first use)")
    p.add_argument("--json", default=None, help=f"also write the JSON here (always $OUT/{JSON_NAME} if $OUT is set)")
    p.add_argument("--plot", default=None, metavar="PATH",
                   help="write a plot of the ratios per shape (.png for PNG, else SVG; needs matplotlib)")
    return p


# ---- summaries and output (pure) ---------------------------------------------------------

def error_text(e):
    """An exception as ``"Type: message"``, one line, at most :data:`ERR_CHARS` characters."""
    return " ".join(f"{type(e).__name__}: {e}".split())[:ERR_CHARS]


def finite(x):
    """``x`` as a float, or None when it is None, NaN or infinite (JSON has no NaN)."""
    return float(x) if x is not None and math.isfinite(x) else None


def geomean(values):
    """The geometric mean of the positive numbers in ``values`` (None and others skipped), or None."""
    v = [x for x in values if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else None


def best_ratio(row):
    """(ratio, library) of the row against the fastest library that ran (the smallest ratio:
    ratios are the libraries' times over ours), or (None, None)."""
    got = [(row.get(f"ratio_{lib}"), lib) for lib in LIBS if row.get(f"ratio_{lib}") is not None]
    return min(got) if got else (None, None)


def ref_label(dtype):
    """What the ``cublas`` column is for ``dtype``."""
    return "_scaled_mm" if dtype in FP8 else "cuBLAS"


def summarize(rows, dtype):
    """The summary of one dtype's rows: geometric means of the ratios, the worst shape against
    the faster library, the Hopper-path count, errors and failed checks."""
    rows = [r for r in rows if r["dtype"] == dtype]
    shape = lambda r: {"M": r["M"], "N": r["N"], "K": r["K"]}  # noqa: E731
    s = {"dtype": dtype, "reference": ref_label(dtype), "shapes": len(rows),
         "ran": sum(r.get("layoutalg_tflops") is not None for r in rows)}
    for lib in LIBS:
        got = [r.get(f"ratio_{lib}") for r in rows if r.get(f"ratio_{lib}") is not None]
        s[f"geomean_ratio_{lib}"], s[f"n_ratio_{lib}"] = geomean(got), len(got)
        s[f"{lib}_missing"] = sum(r.get(f"{lib}_tflops") is None for r in rows)
    worst = None
    for r in rows:
        ratio, lib = best_ratio(r)
        if ratio is not None and (worst is None or ratio < worst["ratio"]):
            worst = {**shape(r), "ratio": ratio, "against": lib}
    s["worst"] = worst
    best = [best_ratio(r)[0] for r in rows]
    s["geomean_ratio_best"] = geomean(best)
    s["at_least_best"] = sum(b is not None and b >= 1.0 for b in best)
    ran = [r for r in rows if r.get("layoutalg_tflops") is not None]
    s["hopper_path"] = sum(r.get("path") == "wgmma" for r in ran)          # shapes that ran on each path
    s["mma_sync_path"] = sum(r.get("path") == "mma_sync" for r in ran)
    s["errors"] = [{**shape(r), "error": r["error"]} for r in rows if r.get("error")]
    s["check_failed"] = [{**shape(r), "rel_err": r.get("rel_err")} for r in rows if r.get("err_ok") is False]
    return s


def _f(x, fmt):
    return "-" if x is None else format(x, fmt)


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows, dtype, triton=True):
    """One dtype's rows as a markdown table (one line a shape)."""
    libs = LIBS if triton and dtype not in FP8 else LIBS[:1]
    names = {"cublas": ref_label(dtype), "triton": "Triton"}
    head = (["M", "N", "K", "path", "tile", "layoutalg TFLOP/s"] + [f"{names[x]} TFLOP/s" for x in libs]
            + [f"/ {names[x]}" for x in libs] + ["rel err", "note"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in (r for r in rows if r["dtype"] == dtype):
        notes = [f"layoutalg: {r['error']}"] if r.get("error") else []
        notes += ["CHECK FAILED"] if r.get("err_ok") is False else []
        notes += [f"{names[x]}: {r[f'{x}_error']}" for x in libs if r.get(f"{x}_error")]
        cells = ([r["M"], r["N"], r["K"], r.get("path") or "-", r.get("tile") or "-"]
                 + [_f(r.get(f"{x}_tflops"), ".1f") for x in ("layoutalg",) + libs]
                 + [_f(r.get(f"ratio_{x}"), ".3f") for x in libs] + [_f(r.get("rel_err"), ".1e"), "; ".join(notes)])
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def summary_text(s, triton=True):
    """A few lines of markdown for a :func:`summarize` result."""
    tri = triton and s["dtype"] not in FP8
    out = [f"**{s['dtype']}**: {s['ran']} of {s['shapes']} shapes ran; "
           f"{s['hopper_path']} on the Hopper (wgmma) path, {s['mma_sync_path']} on mma_sync.",
           f"- geomean vs {s['reference']}: {_f(s['geomean_ratio_cublas'], '.3f')} ({s['n_ratio_cublas']} shapes)"]
    if tri:
        out.append(f"- geomean vs Triton: {_f(s['geomean_ratio_triton'], '.3f')} ({s['n_ratio_triton']} shapes)")
    out.append(f"- geomean vs the faster library: {_f(s['geomean_ratio_best'], '.3f')}; "
               f"at least as fast as it on {s['at_least_best']} shapes")
    w = s["worst"]
    if w:
        out.append(f"- worst: {w['M']}x{w['N']}x{w['K']} at {w['ratio']:.3f} of "
                   f"{s['reference'] if w['against'] == 'cublas' else 'Triton'}")
    if s["cublas_missing"]:
        out.append(f"- {s['reference']} gave no figure on {s['cublas_missing']} shapes")
    for e in s["errors"]:
        out.append(f"- error {e['M']}x{e['N']}x{e['K']}: {e['error']}")
    for e in s["check_failed"]:
        out.append(f"- CHECK FAILED {e['M']}x{e['N']}x{e['K']}: rel err {_f(e['rel_err'], '.2e')}")
    return "\n".join(out)


def write_plot(path, rows, triton=True):
    """Plot layoutalg / cuBLAS and layoutalg / Triton per shape, one panel per dtype (x: the
    shapes grouped by (N, K), M along each group; a line at 1.0). Returns ``path``, or None
    (with a message) without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        print(f"--plot: matplotlib is not importable; no plot written to {path}", flush=True)
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    if not dtypes:
        print("--plot: no rows; no plot written", flush=True)
        return None
    plt.rcParams["svg.hashsalt"] = "layoutalg"      # as docs/perf_plot.py: the same SVG on every run
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(max(8.0, 0.22 * len(rows) / len(dtypes) + 3), 3.6 * len(dtypes)),
                             squeeze=False)
    for ax, dtype in zip(axes[:, 0], dtypes):
        _plot_panel(ax, [r for r in rows if r["dtype"] == dtype], dtype, triton)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    png = path.lower().endswith(".png")
    fig.savefig(path, format="png" if png else "svg", **({"dpi": 120} if png else {"metadata": {"Date": None}}))
    plt.close(fig)
    return path


def _plot_panel(ax, rows, dtype, triton):
    groups = list(dict.fromkeys((r["N"], r["K"]) for r in rows))
    xs, ticks, x = {}, [], 0
    for g in groups:
        for r in (r for r in rows if (r["N"], r["K"]) == g):
            xs[id(r)] = x
            ticks.append((x, str(r["M"])))
            x += 1
        x += 1                                      # a gap between (N, K) groups
    series = [("cublas", f"layoutalg / {ref_label(dtype)}", "#2c7bb6")]
    if triton and dtype not in FP8:
        series.append(("triton", "layoutalg / Triton", "#d7191c"))
    for lib, label, color in series:
        for path, marker in (("wgmma", "o"), ("mma_sync", "s"), (None, "x")):
            pts = [(xs[id(r)], r[f"ratio_{lib}"]) for r in rows
                   if r.get(f"ratio_{lib}") is not None and r.get("path") == path]
            if pts:
                ax.plot(*zip(*pts), marker, color=color, label=f"{label} ({path or 'path unknown'})",
                        fillstyle="full" if path == "wgmma" else "none")
    ax.axhline(1.0, color="#404040", linewidth=1)
    for g in groups[1:]:                            # separators between the (N, K) groups
        ax.axvline(min(xs[id(r)] for r in rows if (r["N"], r["K"]) == g) - 1, color="#cccccc", linewidth=0.8)
    ax.set_xticks([t for t, _ in ticks])
    ax.set_xticklabels([s for _, s in ticks], rotation=90, fontsize=7)
    for g in groups:
        gx = [xs[id(r)] for r in rows if (r["N"], r["K"]) == g]
        ax.text(sum(gx) / len(gx), 1.02, f"N={g[0]} K={g[1]}", transform=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=8)
    ax.set_title(dtype, pad=16)
    ax.set_xlabel("M (shapes grouped by N, K)")
    ax.set_ylabel("ratio (above 1: layoutalg faster)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="best")


# ---- measuring (a GPU) -------------------------------------------------------------------

@dataclass
class Env:
    """What a measurement uses: torch, codegen, the Triton matmul (or None), the benchmark's
    operands and reference call, the timer (:func:`bench_gemm.interleaved`), the device and a
    synchronization (replaceable, so the bookkeeping runs without a GPU in the tests)."""

    torch: object
    codegen: object
    tri: object = None
    operands: object = operands
    reference: object = reference
    timer: object = interleaved
    device: str = "cuda"
    sync: object = None
    device_name: str = ""
    versions: dict = None

    @classmethod
    def cuda(cls, triton=True):
        import torch

        import codegen

        if not torch.cuda.is_available():
            raise SystemExit("bench_grid: needs a CUDA GPU (torch.cuda.is_available() is False)")
        tri, versions = None, {"torch": torch.__version__, "triton": None}
        if triton:
            import triton as _triton
            from triton_matmul import matmul as tri

            versions["triton"] = _triton.__version__
        return cls(torch, codegen, tri, sync=torch.cuda.synchronize, device_name=torch.cuda.get_device_name(),
                   versions=versions)

    def synchronize(self):
        if self.sync is not None:
            self.sync()


def new_row(name, M, N, K):
    return {"M": M, "N": N, "K": K, "dtype": name, "flop": 2 * M * N * K, "reference": reference_name(name),
            "layoutalg_tflops": None, "cublas_tflops": None, "triton_tflops": None,
            "ratio_cublas": None, "ratio_triton": None, "path": None, "tile": None,
            "rel_err": None, "err_ok": None, "error": None, "cublas_error": None, "triton_error": None}


def reference_name(name):
    return "torch._scaled_mm" if name in FP8 else "torch.matmul"


def tile_text(cfg):
    """``"128x256x64 s4"`` (`` split-K n`` where it splits)."""
    return f"{cfg.bm}x{cfg.bn}x{cfg.bk} s{cfg.stages}" + (f" split-K {cfg.split_k}" if cfg.split_k > 1 else "")


def _libraries(env, name, A, B, row):
    """The library calls that run on this shape ({label: callable}) and their first results;
    the others' errors go into ``row`` (``<lib>_error``)."""
    calls, outs = {}, {}
    lib = env.reference(env.torch, name)
    cands = [("cublas", lib)] + ([("triton", env.tri)] if env.tri is not None and name not in FP8 else [])
    for label, f in cands:
        if f is None:
            row[f"{label}_error"] = "no such call for this dtype"
            continue
        fn = (lambda f=f: f(A, B))
        try:
            outs[label] = fn()              # Triton autotunes here, outside the timing
            env.synchronize()
            calls[label] = fn
        except Exception as e:              # e.g. _scaled_mm's size rules, a Triton without this dot
            row[f"{label}_error"] = error_text(e)
    return calls, outs


def _ours(env, name, A, B, M, N, row):
    """The prepared launch (the library's own plan) after one checked call, or None (the
    error in ``row``)."""
    torch = env.torch
    try:
        C = torch.empty(M, N, device=env.device, dtype=torch.bfloat16 if name in FP8 else A.dtype)
        launch = env.codegen.prepare(A, B, C)
        cfg = launch.kernel.config
        row["path"], row["tile"] = cfg.path, tile_text(cfg)
        launch()
        env.synchronize()
        return launch, C
    except Exception as e:
        row["error"] = error_text(e)
        return None, None


def rel_err(torch, C, ref):
    """max |C - ref| over max |ref| (float32), or None where it is not finite."""
    d = (C.float() - ref.float()).abs().max()
    scale = ref.float().abs().max().clamp_min(torch.finfo(torch.float32).tiny)
    return finite((d / scale).item())


def measure_shape(env, name, M, N, K, rounds):
    """One row of the grid: every library's TFLOP/s, our ratios to them, path, tile and check."""
    torch = env.torch
    row = new_row(name, M, N, K)
    try:
        A, B = env.operands(torch, name, M, N, K)
    except Exception as e:                  # out of memory, or a CUDA error left by an earlier shape
        row["error"] = "operands: " + error_text(e)
        return row
    calls, outs = _libraries(env, name, A, B, row)
    launch, C = _ours(env, name, A, B, M, N, row)
    if launch is not None:
        try:
            ref = outs["cublas"] if "cublas" in outs else A.float() @ B.float()
            row["rel_err"] = rel_err(torch, C, ref)
            row["err_ok"] = row["rel_err"] is not None and row["rel_err"] <= TOL[name]
        except Exception as e:
            row["error"] = "check: " + error_text(e)
        calls = {"layoutalg": launch, **calls}
    outs = ref = C = None                   # free the first results before timing
    if not calls:
        return row
    try:
        tflops, times = env.timer(calls, row["flop"], rounds)
    except Exception as e:                  # the grid goes on; a sticky CUDA error shows in the rows after
        row["error"] = row["error"] or "timing: " + error_text(e)
        return row
    for label, t in tflops.items():
        row[f"{label}_tflops"] = finite(t)
        if label != "layoutalg" and "layoutalg" in times:
            row[f"ratio_{label}"] = finite(median_ratio(times["layoutalg"], times[label]))
    return row


def progress_line(r):
    ratios = "  ".join(f"/{lib} {r[f'ratio_{lib}']:.3f}" for lib in LIBS if r.get(f"ratio_{lib}") is not None)
    return (f"{r['dtype']:5s} {r['M']:5d}x{r['N']}x{r['K']}: {r.get('path') or '-':8s} {r.get('tile') or '':22s} "
            f"{_f(r.get('layoutalg_tflops'), '7.1f')} TFLOP/s  {ratios}  err {_f(r.get('rel_err'), '.1e')}"
            + (f"  ERROR {r['error']}" if r.get("error") else ""))


def run_dtype(env, name, shapes, rounds):
    rows = []
    for M, N, K in shapes:
        row = measure_shape(env, name, M, N, K, rounds)
        rows.append(row)
        print(progress_line(row), flush=True)
    return rows


# ---- compiling ahead (worker processes) --------------------------------------------------

def _class(x):
    """What Triton specializes an int argument on: 1, a multiple of 16, or neither."""
    return 1 if x == 1 else 32 if x % 16 == 0 else 17


def compile_jobs(dtypes, shapes, triton=True):
    """The precompile jobs: ``("triton", dtype, [shape])`` per specialization class of Triton's
    integer arguments (f16/bf16), then ``("layoutalg", dtype, shapes)``: shapes grouped by what
    likely selects the same kernel (the default Hopper plan, alignment, tile residues), so one
    worker compiles a group's kernel once and the others load it."""
    from codegen.config import GemmConfig

    jobs = []
    if triton:
        for name in (d for d in dtypes if d not in FP8):
            reps = sorted({(_class(M), _class(N), _class(K)) for M, N, K in shapes})
            jobs += [("triton", name, [rep]) for rep in reps]
    groups = {}
    for name in dtypes:
        for M, N, K in shapes:
            cfg = GemmConfig.default(name, M, N, K, arch=(9, 0))
            key = (name, cfg, N % 16, K % 16, M < cfg.bm, N < cfg.bn)
            groups.setdefault(key, []).append((M, N, K))
    jobs += [("layoutalg", key[0], shapes) for key, shapes in groups.items()]
    return jobs


def _compile_job(job):
    """Run one job in a worker process: the first calls compile and cache the kernels."""
    import torch

    import codegen

    kind, name, shapes = job
    t0, errors = time.time(), []
    for M, N, K in shapes:
        try:
            A, B = operands(torch, name, M, N, K)
            if kind == "triton":
                from triton_matmul import matmul

                matmul(A, B)
            else:
                C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16 if name in FP8 else A.dtype)
                codegen.prepare(A, B, C)
            torch.cuda.synchronize()
        except Exception as e:              # the timed process records it
            errors.append(f"{M}x{N}x{K}: {error_text(e)}")
    return kind, name, len(shapes), time.time() - t0, errors


def precompile_grid(jobs, workers):
    """Run ``jobs`` (:func:`compile_jobs`) in ``workers`` spawned processes; a crashed worker
    only costs compile time later."""
    import concurrent.futures as cf
    import multiprocessing as mp

    t0, done = time.time(), 0
    try:
        with cf.ProcessPoolExecutor(min(workers, len(jobs)), mp_context=mp.get_context("spawn")) as pool:
            for kind, name, n, secs, errors in pool.map(_compile_job, jobs):
                done += 1
                for e in errors[:2]:
                    print(f"  precompile {kind} {name} {e}", flush=True)
    except Exception as e:                  # BrokenProcessPool and the like: compile on first use
        print(f"precompile stopped after {done} of {len(jobs)} jobs: {error_text(e)}", flush=True)
    print(f"precompiled {done} jobs in {time.time() - t0:.1f}s ({workers} workers)", flush=True)


# ---- main --------------------------------------------------------------------------------

def _header(env, a, dtypes, ms, nks):
    return {"device": env.device_name, **(env.versions or {}), "dtypes": list(dtypes), "ms": list(ms),
            "nks": [list(x) for x in nks], "rounds": a.rounds, "tolerance": {d: TOL[d] for d in dtypes},
            "rows": [], "summary": {}}


def main(argv=None):
    a = build_parser().parse_args(argv)
    dtypes, ms, nks = parse_dtypes(a.dtypes), parse_ints(a.ms, "--ms"), parse_nks(a.nks)
    if a.rounds < 1:
        raise SystemExit("--rounds: at least 1")
    shapes = grid_shapes(ms, nks)
    t0 = time.time()
    env = Env.cuda(triton=not a.no_triton)
    triton = env.tri is not None
    if a.precompile > 0:
        precompile_grid(compile_jobs(dtypes, shapes, triton), a.precompile)
    res = _header(env, a, dtypes, ms, nks)
    for name in dtypes:
        t1 = time.time()
        rows = run_dtype(env, name, shapes, a.rounds)
        res["rows"] += rows
        res["summary"][name] = s = summarize(rows, name)
        print(f"\n### {name} ({len(rows)} shapes, {time.time() - t1:.0f}s)\n\n{markdown_table(rows, name, triton)}\n\n"
              f"{summary_text(s, triton)}\n", flush=True)
        res["wall_s"] = time.time() - t0
        save_json(res, JSON_NAME, a.json)     # after every dtype: a stopped run keeps what it measured
    print("## summary\n\n" + "\n\n".join(summary_text(res["summary"][d], triton) for d in dtypes), flush=True)
    if a.plot:
        write_plot(a.plot, res["rows"], triton)
    print(f"\ntotal {time.time() - t0:.0f}s", flush=True)
    return res


if __name__ == "__main__":
    main()
