"""The measured-versus-predicted table of ``swizzles.md``, made from ``benchmarks/bank_results.json``.

``benchmarks/bank_conflicts.py`` writes ``bank_conflicts.json`` (its rows: case, predicted,
measured) on a GPU; copied to ``benchmarks/bank_results.json`` it is what this table shows.
Without that file, the counters of the latest full run (``benchmarks/bank_results_run2.json``)
against the current predictions; without either, the table says the measurement is still
to be made::

    python docs/bank_table.py                      # print the table
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "benchmarks", "bank_results.json")
FIRST_RUN = os.path.join(os.path.dirname(HERE), "benchmarks", "bank_results_run2.json")   # the latest full run
TABLE_MARKER = "<!-- bank-results -->"

#: The cases the page shows: the layouts it draws and their swizzled fixes.
CASES = (
    ("ldsm_x4_plain128", "ldmatrix.x4 of A, plain 128-byte rows"),
    ("ldsm_x4_swizzled", "ldmatrix.x4 of A, Sw<3,3,3>"),
    ("lds32_col_ld32", "32-bit loads down columns of 128-byte rows"),
    ("lds32_col_swizzled", "32-bit loads down columns of 128-byte rows, Sw<5,0,5>"),
    ("tut_transpose_r2s_plain", "transpose.py's stores, no swizzle"),
    ("tut_transpose_r2s", "transpose.py's stores, Sw<3,2,5>"),
)


def _fmt(values, key):
    return ", ".join(f"{v['what']} {v[key] if v[key] is not None else '-'}" for v in values)


def _bench():
    import importlib.util

    root = os.path.dirname(HERE)
    spec = importlib.util.spec_from_file_location("bank_conflicts", os.path.join(root, "benchmarks", "bank_conflicts.py"))
    mod = sys.modules.get("bank_conflicts")
    if mod is None:
        mod = importlib.util.module_from_spec(spec)
        sys.modules["bank_conflicts"] = mod          # dataclasses look their module up
        spec.loader.exec_module(mod)
    return mod


def _predictions(first_run=None):
    """The script's own rows for :data:`CASES`: nothing measured, or the counters of the
    compact file ``first_run`` (its ``meta["counters"]`` and each row's ``values``)."""
    mod = _bench()
    cases = [c for c in mod.all_cases() if c.name in dict(CASES)]
    measured = {}
    if first_run is not None:
        names = first_run["meta"]["counters"]
        by_name = {r["case"]: dict(zip(names, r["values"])) for r in first_run["rows"]}
        measured = {c.index: by_name[c.name] for c in cases if c.name in by_name}
    known = {k.rsplit(".", 1)[0] for m in measured.values() for k in m}       # the counters that run found
    return {r["case"]: r for r in mod.compare(cases, {}, measured, {}, mod.metric_candidates(known))}


def table(path: str = RESULTS, first_run: str = FIRST_RUN) -> str:
    """A markdown table of :data:`CASES` from ``path``; without it, from the first run's
    counters (``first_run``); without that, the predictions and a marked place for the
    measurements."""
    if not os.path.exists(path) and os.path.exists(first_run):
        with open(first_run, encoding="utf-8") as f:
            doc = json.load(f)
        rows = _predictions(doc)
        meta = doc["meta"]
        lines = [f"Measured on {meta['device']} ({meta['date']}), Nsight Compute counters:", "",
                 "| case | predicted | measured | exact |", "|---|---|---|---|"]
        for name, what in CASES:
            r = rows[name]
            exact = {True: "yes", False: "**no**", None: "-"}[r.get("exact")]
            lines.append(f"| {what} | {_fmt(r['values'], 'predicted')} | {_fmt(r['values'], 'measured')} | {exact} |")
        return "\n".join(lines)
    if not os.path.exists(path):
        rows = _predictions()
        return ("| case | predicted | measured on an H100 |\n|---|---|---|\n"
                + "\n".join(f"| {what} | {_fmt(rows[name]['values'], 'predicted')} | **not measured yet** |"
                             for name, what in CASES)
                + "\n\n**To be filled in**: the measured counters come from `python benchmarks/bank_conflicts.py` "
                  "on an H100 (its `bank_conflicts.json`, copied to `benchmarks/bank_results.json`).")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    rows = {r["case"]: r for r in doc["rows"]}
    meta = doc.get("meta", {})
    lines = [f"Measured on {meta.get('device', '?')} ({meta.get('date', '?')}), Nsight Compute counters:", "",
             "| case | predicted | measured | exact |", "|---|---|---|---|"]
    for name, what in CASES:
        r = rows.get(name)
        if r is None:
            lines.append(f"| {what} | - | not in the results | - |")
            continue
        exact = {True: "yes", False: "**no**", None: "-"}[r.get("exact")]
        lines.append(f"| {what} | {_fmt(r['values'], 'predicted')} | {_fmt(r['values'], 'measured')} | {exact} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(sys.argv[1] if len(sys.argv) > 1 else RESULTS))
