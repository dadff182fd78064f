"""The performance page's plot and table, made from ``benchmarks/results.json``.

``results.json`` holds benchmark runs: each has a name, a date, the command that
measured it, the device and its results (``dtype``, ``n`` for an n x n x n GEMM,
``impl``, ``tflops``). The plot draws TFLOP/s against n, one panel per dtype and
one line per implementation and run::

    python docs/perf_plot.py out.svg         # write the plot
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "benchmarks", "results.json")
PLOT_NAME = "gemm_tflops.svg"
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
    dtypes = sorted({r.dtype for r in results}, key=["f16", "bf16", "tf32", "f32", "f64"].index)
    plt.rcParams["svg.hashsalt"] = "layoutalg"   # the same SVG on every build
    palette = ["#7b3294", "#a6611a", "#d7191c", "#2c7bb6", "#1a9641", "#404040"]
    colors = {impl: palette[k % len(palette)] for k, impl in enumerate(dict.fromkeys(r.impl for r in results))}
    markers = {run: "osD^v"[k % 5] for k, run in enumerate(dict.fromkeys(r.run for r in results))}
    fig, axes = plt.subplots(1, len(dtypes), figsize=(4.2 * len(dtypes), 3.8), sharey=True, squeeze=False)
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
    axes[0][0].set_ylabel("TFLOP/s")
    handles, labels = axes[0][0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ax in axes[0][1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen.keys()), loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
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
    for (run, dtype, n), vals in rows.items():
        gen = max((v for k, v in vals.items() if k.startswith("generated")), default=None)
        ratio = f"{gen / vals['cuBLAS']:.2f}" if gen is not None and vals.get("cuBLAS") else ""
        cells = [f"{vals[i]:.1f}" if i in vals else "" for i in impls]
        lines.append(f"| {run} ({dates[run]}) | {dtype} | {n} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(write_plot(sys.argv[1] if len(sys.argv) > 1 else PLOT_NAME))
