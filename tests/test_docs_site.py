"""The documentation site builds with ``mkdocs build --strict`` and shows the project's own pictures."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("mkdocstrings")
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site once into a temporary folder; the build must finish without a warning."""
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed (apt-get install graphviz)")
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    warnings = [line for line in r.stderr.splitlines() if line.startswith("WARNING")]
    assert not warnings, "\n".join(warnings)
    return out


def _nav_pages():
    import yaml

    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    found = []

    def walk(items):
        for it in items:
            for v in it.values():
                walk(v) if isinstance(v, list) else found.append(v)

    walk(cfg["nav"])
    return found


def test_every_page_is_in_the_nav():
    """No page of docs/ is left out of the site's navigation, and the nav names no missing page."""
    nav = set(_nav_pages())
    pages = set()
    for dirpath, _, files in os.walk(os.path.join(ROOT, "docs")):
        for f in files:
            if f.endswith(".md"):
                pages.add(os.path.relpath(os.path.join(dirpath, f), os.path.join(ROOT, "docs")).replace(os.sep, "/"))
    assert nav == pages


def test_every_picture_is_made_by_the_build():
    """No picture is kept in docs/: each one a page shows is made by docs/make_pictures.py or docs/perf_plot.py."""
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        import make_pictures
        import perf_plot
    finally:
        sys.path.pop(0)
    made = {f"pictures/{p.stem}.svg" for p in make_pictures.PICTURES} | {f"pictures/{perf_plot.PLOT_NAME}",
                                                                          f"pictures/{perf_plot.GRID_PLOT_NAME}"}
    shown = set()
    for dirpath, _, files in os.walk(os.path.join(ROOT, "docs")):
        for f in files:
            assert not f.endswith((".png", ".svg", ".jpg", ".gif", ".pdf")), f"{f}: a picture kept in docs/"
            if f.endswith(".md"):
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    shown |= set(re.findall(r"!\[[^\]]*\]\(([^)]+)\)", fh.read()))
    assert shown <= made, shown - made
    assert "pictures/gemm_plan.svg" in shown and "pictures/gemm_tflops.svg" in shown


def test_benchmark_json_becomes_a_run(tmp_path):
    """perf_plot turns bench_gemm.py's rows into a results.json run: the default plan of each path,
    cuBLAS and Triton once per (dtype, n), and the table and plot take it."""
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        import perf_plot
    finally:
        sys.path.pop(0)

    def row(dtype, n, path, t, cublas, triton):
        return {"device": "GPU", "dtype": dtype, "n": n, "tflops": t, "cublas_tflops": cublas,
                "triton_tflops": triton, "config": f"GemmConfig(dtype='{dtype}', bm=128, path='{path}')"}

    rows = [row("f16", 4096, "wgmma", 590.04, 750.0, 640.0), row("f16", 4096, "mma_sync", 440.0, 751.0, 641.0),
            row("f16", 4096, "mma_sync", 300.0, 752.0, 642.0), row("tf32", 2048, "mma_sync", 200.0, 330.0, None)]
    run = perf_plot.run_from_bench(rows, "r", "today", "cmd")
    got = {(r["dtype"], r["n"], r["impl"]): r["tflops"] for r in run["results"]}
    assert got == {("f16", 4096, "generated wgmma"): 590.0, ("f16", 4096, "cuBLAS"): 750.0,
                   ("f16", 4096, "Triton"): 640.0, ("f16", 4096, "generated mma.sync"): 440.0,
                   ("tf32", 2048, "generated mma.sync"): 200.0, ("tf32", 2048, "cuBLAS"): 330.0}
    results = [perf_plot.Result("r", "today", d, n, i, t) for (d, n, i), t in got.items()]
    table = perf_plot.results_table(results)
    assert "| r (today) **(current)** | f16 | 4096 |" in table and "0.79 |" in table     # 590 / 750
    pytest.importorskip("matplotlib")
    out = perf_plot.write_plot(str(tmp_path / "p.svg"), results)
    assert open(out, encoding="utf-8").read().count("<svg") == 1
    with pytest.raises(ValueError, match="lacks a field"):
        perf_plot.run_from_bench([{"dtype": "f16"}], "r", "today", "cmd")


def test_site_has_the_pages_and_pictures(site):
    """Every nav page is built, and every picture a page shows was made by the build."""
    for page in _nav_pages():
        html = site / (page[:-3] + "/index.html" if page != "index.md" else "index.html")
        assert html.exists(), page
        text = html.read_text(encoding="utf-8")
        for src in re.findall(r'<img[^>]+src="([^"]+)"', text):
            if src.startswith(("http:", "https:", "data:")):
                continue
            target = (html.parent / src).resolve()
            assert target.exists(), f"{page}: picture {src} is missing"


def test_plan_picture_shows_the_default_plan(site):
    """gemm_plan.svg is drawn from today's default f16 plan (CTA tile, stages), not a stale file."""
    from codegen import GemmConfig

    cfg = GemmConfig.default("f16")
    import html

    svg = html.unescape((site / "pictures" / "gemm_plan.svg").read_text(encoding="utf-8"))
    assert f"CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk}" in svg
    assert f"{cfg.stages} shared-memory stages" in svg


def test_performance_page_is_made_from_the_json(site):
    """The performance page's table holds the figures of benchmarks/results.json, and the plot exists."""
    import json

    with open(os.path.join(ROOT, "benchmarks", "results.json"), encoding="utf-8") as f:
        doc = json.load(f)
    html = (site / "performance" / "index.html").read_text(encoding="utf-8")
    for run in doc["runs"]:
        for r in run["results"]:
            assert f"{r['tflops']:.1f}" in html, r
    svg = (site / "pictures" / "gemm_tflops.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "TFLOP/s" in svg


def test_docstring_examples_are_fenced():
    """The API reference's griffe extension puts docstring examples in code fences."""
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        from griffe_doctests import fence_doctests
    finally:
        sys.path.pop(0)
    text = "Sum.\n\n>>> [1,\n... 2]\n[1, 2]\n\nMore.\n```python\n>>> x\n```"
    assert fence_doctests(text).splitlines() == [
        "Sum.", "", "```pycon", ">>> [1,", "... 2]", "[1, 2]", "```", "", "More.", "```python", ">>> x", "```"]


def test_api_reference_documents_the_namespaces(site):
    """The API reference pages carry the docstrings of the public names."""
    html = (site / "api" / "layoutalg" / "index.html").read_text(encoding="utf-8")
    for name in ("composition", "logical_divide", "make_tiled_mma"):
        assert f'id="layoutalg.{name}"' in html, name
    for name in ("print_layout", "print_tensor", "print_latex"):      # reached through layoutalg's __getattr__
        assert f'id="layoutalg.draw.cute_print.{name}"' in html, name
    html = (site / "api" / "codegen" / "index.html").read_text(encoding="utf-8")
    assert 'id="codegen.gemm"' in html


def test_pictures_without_graphviz_fail_with_the_reason(tmp_path, monkeypatch):
    """Without Graphviz's dot the docs build stops with the command and why (the CLI's message
    on stderr), not an empty reason."""
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    import make_pictures

    monkeypatch.setenv("PATH", str(tmp_path))                 # no dot on it
    with pytest.raises(make_pictures.PictureError, match=r"draw plan .* failed \(exit status 1\): .*Graphviz's "
                                                         r"'dot' program was not found"):
        make_pictures.make(str(tmp_path / "pictures"))


def _perf():
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    import perf_plot

    return perf_plot


def test_the_performance_table_marks_the_current_run_and_the_readme_quotes_it():
    """The README's and the page's figures are the current run's (the table's ratios), and the
    page says which run that is; the 1024^3 ranges it explains are the table's."""
    import re

    P = _perf()
    table = P.results_table()
    last = P.load()[-1].run
    marked = {line.split(" | ")[0] for line in table.splitlines() if "**(current)**" in line}
    assert marked and all(last in m for m in marked)
    cur = P.current_run()
    want = {n: f"{P.current_ratio(cur[('f16', n)]):.2f}" for n in (4096, 8192)}
    readme = open(os.path.join(ROOT, "README.md")).read().replace("\n", " ")
    page = open(os.path.join(ROOT, "docs", "performance.md")).read().replace("\n", " ")
    assert f"fp16 at {want[4096]} of cuBLAS at 4096^3 and {want[8192]} at 8192^3 timed separately" in readme
    assert f"separate timings say {want[4096]} and {want[8192]}" in page
    lo, hi = (float(x) for x in re.search(r"at ([\d.]+) to ([\d.]+) times cuBLAS in the current run", page).groups())
    at1024 = [P.current_ratio(v) for (d, n), v in cur.items() if n == 1024 and P.current_ratio(v)]
    assert (lo, hi) == (round(min(at1024), 2), round(max(at1024), 2))


def test_migration_guide_moye_indices_are_one_more_than_cutes():
    """``L(1, 2)  # MoYe.jl: L(2, 3) == X + 1``: X is the 0-based result printed below it."""
    import re

    lines = open(os.path.join(ROOT, "docs", "migration.md")).read().splitlines()
    found = 0
    for i, line in enumerate(lines):
        m = re.search(r">>> L\((\d+), (\d+)\)\s+# MoYe\.jl: L\((\d+), (\d+)\) == (\d+) \+ 1", line)
        if m:
            a, b, ma, mb, x = map(int, m.groups())
            assert (ma, mb) == (a + 1, b + 1) and int(lines[i + 1]) == x, line
            found += 1
    assert found
