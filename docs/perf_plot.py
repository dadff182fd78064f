"""The performance page's plot and table, made from ``benchmarks/results.json``.

``results.json`` holds benchmark runs: each has a name, a date, the command that
measured it, the device and its results (``dtype``, ``n`` for an n x n x n GEMM,
``impl``, ``tflops``). The plot draws TFLOP/s against n, one panel per dtype and
one line per implementation and run::

    python docs/perf_plot.py out.svg         # write the plot
    python docs/perf_plot.py --add bench.json --name "my run" --date "2026-11-25 10:00 UTC"
                                             # append what bench_gemm.py --json wrote
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "benchmarks", "results.json")
PLOT_NAME = "gemm_tflops.svg"
GRID_RESULTS = os.path.join(os.path.dirname(HERE), "benchmarks", "grid_results.json")
GRID_PLOT_NAME = "gemm_grid.svg"
TABLE_MARKER = "<!-- results-table -->"


@dataclass(frozen=True)
class Result:
    """One measurement: ``impl`` ran an ``n x n x n`` ``dtype`` GEMM at ``tflops``, in run ``run``."""

    run: str
    date: str
    dtype: str
    n: int
    impl: str
    tflops: float


def load(path: str = RESULTS) -> list[Result]:
    """Every measurement of ``path``; raises ``ValueError`` naming the entry that is malformed."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    out = []
    for run in doc["runs"]:
        for r in run["results"]:
            try:
                out.append(Result(run["name"], run["date"], str(r["dtype"]), int(r["n"]), str(r["impl"]), float(r["tflops"])))
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"perf_plot.load: malformed result {r!r} in run {run.get('name')!r}: {e}") from None
    return out


def write_plot(path: str, results: list[Result] | None = None) -> str:
    """Write the plot (SVG) of TFLOP/s against n, one panel per dtype; returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = load() if results is None else results
    order = ["f16", "bf16", "tf32", "e4m3", "e5m2", "f32", "f64"]
    dtypes = sorted({r.dtype for r in results}, key=lambda d: (order.index(d) if d in order else len(order), d))
    plt.rcParams["svg.hashsalt"] = "layoutalg"   # the same SVG on every build
    palette = ["#7b3294", "#a6611a", "#d7191c", "#2c7bb6", "#1a9641", "#404040"]
    colors = {impl: palette[k % len(palette)] for k, impl in enumerate(dict.fromkeys(r.impl for r in results))}
    markers = {run: "osD^v"[k % 5] for k, run in enumerate(dict.fromkeys(r.run for r in results))}
    fig, axes = plt.subplots(1, len(dtypes), figsize=(4.2 * len(dtypes), 4.8), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        lines: dict[tuple[str, str], list[Result]] = {}
        for r in results:
            if r.dtype == dtype:
                lines.setdefault((r.impl, r.run), []).append(r)
        for (impl, run), rs in sorted(lines.items()):
            rs.sort(key=lambda r: r.n)
            style = "-" if impl.startswith("generated") else "--"
            ax.plot([r.n for r in rs], [r.tflops for r in rs], style, color=colors[impl], marker=markers[run],
                    label=f"{impl} ({run})")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r.n for r in results}))
        ax.set_xticklabels([str(n) for n in sorted({r.n for r in results})])
        ax.set_title(dtype)
        ax.set_xlabel("n (n x n x n GEMM)")
        ax.grid(True, alpha=0.3)
    for ax in axes[0]:                          # each its own scale: the 8-bit floats run at twice f16's rate
        ax.set_ylabel("TFLOP/s")
    handles, labels = axes[0][0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ax in axes[0][1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen.keys()), loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.24, 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return path


def write_grid_plot(path: str, grid: str = GRID_RESULTS) -> str:
    """Write the plot of the shapes grid (``benchmarks/bench_grid.py``'s JSON, kept as
    ``benchmarks/grid_results.json``): layoutalg against cuBLAS and Triton per shape; returns
    ``path``."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))
    try:
        import bench_grid
    finally:
        sys.path.pop(0)
    with open(grid, encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    if bench_grid.write_plot(path, rows) is None:
        raise RuntimeError(f"perf_plot.write_grid_plot: no plot of {grid} (matplotlib missing, or no rows)")
    return path


def results_table(results: list[Result] | None = None) -> str:
    """A markdown table: one row per run, dtype and n; one column per implementation."""
    results = load() if results is None else results
    impls = list(dict.fromkeys(r.impl for r in results))
    rows: dict[tuple[str, str, int], dict[str, float]] = {}
    dates = {}
    for r in results:
        rows.setdefault((r.run, r.dtype, r.n), {})[r.impl] = r.tflops
        dates[r.run] = r.date
    head = "| run | dtype | n | " + " | ".join(impls) + " | best generated / cuBLAS |"
    sep = "|---|---|---|" + "---|" * len(impls) + "---|"
    lines = [head, sep]
    current = results[-1].run if results else None
    for (run, dtype, n), vals in rows.items():
        ratio = current_ratio(vals)
        cells = [f"{vals[i]:.1f}" if i in vals else "" for i in impls]
        mark = " **(current)**" if run == current else ""
        lines.append(f"| {run} ({dates[run]}){mark} | {dtype} | {n} | " + " | ".join(cells)
                     + f" | {'' if ratio is None else f'{ratio:.2f}'} |")
    return "\n".join(lines)


def current_ratio(vals: dict[str, float]) -> float | None:
    """The best generated kernel's TFLOP/s over cuBLAS's, from one row's figures (or None)."""
    gen = max((v for k, v in vals.items() if k.startswith("generated")), default=None)
    return gen / vals["cuBLAS"] if gen is not None and vals.get("cuBLAS") else None


def current_run(results: list[Result] | None = None) -> dict[tuple[str, int], dict[str, float]]:
    """The figures of the current run (the last one in ``results.json``): (dtype, n) -> impl -> TFLOP/s."""
    results = load() if results is None else results
    last = results[-1].run
    out: dict[tuple[str, int], dict[str, float]] = {}
    for r in results:
        if r.run == last:
            out.setdefault((r.dtype, r.n), {})[r.impl] = r.tflops
    return out


def run_from_bench(rows: list[dict], name: str, date: str, command: str) -> dict:
    """A run of ``results.json`` from the rows ``benchmarks/bench_gemm.py --json`` writes.

    Per dtype and n (square problems; rows of other shapes are left out): the first row of each kernel path is "generated mma.sync" or
    "generated wgmma" (the default plans come first), and the first row's cuBLAS and
    Triton figures are theirs. Raises ``ValueError`` naming a row without those fields.

    >>> row = {"device": "H100", "n": 4096, "dtype": "f16", "tflops": 590.0, "cublas_tflops": 750.0,
    ...        "triton_tflops": None, "config": "GemmConfig(dtype='f16', path='wgmma')"}
    >>> run = run_from_bench([row], "a run", "2026-11-25", "bench_gemm.py")
    >>> [(r["impl"], r["tflops"]) for r in run["results"]]
    [('generated wgmma', 590.0), ('cuBLAS', 750.0)]
    """
    import re

    results: list[dict] = []
    seen: set[tuple[str, int, str]] = set()
    device = ""
    for row in rows:
        if "n" in row and row["n"] is None:     # a non-square shape (M, N, K): not on the plot of sizes
            continue
        try:
            dtype, n, device = str(row["dtype"]), int(row["n"]), str(row.get("device", device))
            m = re.search(r"path='(\w+)'", str(row["config"]))
            impl = "generated " + (m.group(1).replace("_", ".") if m else "mma.sync")
            figures = [(impl, row["tflops"]), ("cuBLAS", row["cublas_tflops"]), ("Triton", row.get("triton_tflops"))]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"perf_plot.run_from_bench: row {row!r} lacks a field: {e}") from None
        for who, value in figures:
            if value is None or (dtype, n, who) in seen:
                continue
            seen.add((dtype, n, who))
            results.append({"dtype": dtype, "n": n, "impl": who, "tflops": round(float(value), 1)})
    return {"name": name, "date": date, "command": command, "device": device, "results": results}


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="Draw the performance plot, or add a benchmark run to results.json.")
    p.add_argument("out", nargs="?", default=PLOT_NAME, help="the plot to write (SVG)")
    p.add_argument("--add", metavar="BENCH_JSON", help="append the run that bench_gemm.py --json wrote")
    p.add_argument("--name", help="the run's name (with --add)")
    p.add_argument("--date", help="when it ran, e.g. '2026-11-25 10:00 UTC' (with --add)")
    p.add_argument("--command", default="python benchmarks/bench_gemm.py", help="the command that measured it")
    a = p.parse_args(argv)
    if a.add:
        if not (a.name and a.date):
            p.error("--add needs --name and --date")
        with open(a.add, encoding="utf-8") as f:
            run = run_from_bench(json.load(f), a.name, a.date, a.command)
        with open(RESULTS, encoding="utf-8") as f:
            doc = json.load(f)
        doc["runs"].append(run)
        with open(RESULTS, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(f"added {len(run['results'])} figures to {RESULTS}")
        return 0
    print(write_plot(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
