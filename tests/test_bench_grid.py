"""benchmarks/bench_grid.py without a GPU: the grid and its command line, the summary math on
synthetic rows, the table, JSON and plot writers, and one shape's bookkeeping with torch on the
CPU standing in for the GPU (a fake codegen and timer)."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bg():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_grid
    finally:
        sys.path.pop(0)
    return bench_grid


def row(bg, dtype="f16", M=128, N=4096, K=4096, **kw):
    r = bg.new_row(dtype, M, N, K)
    r.update(kw)
    return r


# ---- the grid and the command line ----

def test_the_default_grid_is_55_shapes_a_dtype_grouped_by_n_k(bg):
    shapes = bg.grid_shapes()
    assert len(shapes) == 55 == len(set(shapes))
    assert shapes[:2] == [(1, 4096, 4096), (16, 4096, 4096)]
    assert shapes[10] == (8192, 4096, 4096) and shapes[11] == (1, 14336, 4096)
    assert shapes[-1] == (8192, 1531, 4096)
    assert {(n, k) for _, n, k in shapes} == {(4096, 4096), (14336, 4096), (4096, 14336), (50257, 768), (1531, 4096)}
    assert sorted({m for m, _, _ in shapes}) == [1, 16, 64, 128, 257, 1000, 1280, 2048, 3072, 4096, 8192]


def test_the_defaults_of_the_command_line_give_the_grid(bg):
    a = bg.build_parser().parse_args([])
    assert bg.parse_dtypes(a.dtypes) == ("f16", "bf16", "e4m3")
    assert bg.grid_shapes(bg.parse_ints(a.ms, "--ms"), bg.parse_nks(a.nks)) == bg.grid_shapes()
    assert a.rounds == 5 and not a.no_triton and a.plot is None and a.json is None


def test_overrides_parse(bg):
    a = bg.build_parser().parse_args(["--ms", "128,4096", "--nks", "4096x4096", "--dtypes", "bf16",
                                      "--rounds", "3", "--no-triton", "--plot", "p.svg"])
    assert bg.grid_shapes(bg.parse_ints(a.ms, "--ms"), bg.parse_nks(a.nks)) == [(128, 4096, 4096), (4096, 4096, 4096)]
    assert bg.parse_dtypes(a.dtypes) == ("bf16",) and a.rounds == 3 and a.no_triton and a.plot == "p.svg"
    assert bg.parse_nks("50257X768, 1531x4096") == ((50257, 768), (1531, 4096))


@pytest.mark.parametrize("call", [
    lambda bg: bg.parse_ints("1,x", "--ms"), lambda bg: bg.parse_ints("0,4", "--ms"),
    lambda bg: bg.parse_ints("", "--ms"),
    lambda bg: bg.parse_nks("4096"), lambda bg: bg.parse_nks("4x4x4"), lambda bg: bg.parse_nks(""),
    lambda bg: bg.parse_dtypes("f16,tf32"), lambda bg: bg.parse_dtypes(""),
])
def test_bad_overrides_stop_with_a_message(bg, call):
    with pytest.raises(SystemExit) as e:
        call(bg)
    assert isinstance(e.value.code, str) and e.value.code.startswith("--")


def test_help_and_import_need_no_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['triton'] = None; "
            f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench_grid; "
            "assert len(bench_grid.grid_shapes()) == 55; bench_grid.main(['--help'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--dtypes" in r.stdout and "--no-triton" in r.stdout and "--plot" in r.stdout


def test_the_precompile_jobs_cover_every_shape_once(bg):
    shapes = bg.grid_shapes()
    jobs = bg.compile_jobs(("f16", "e4m3"), shapes, triton=True)
    ours = [(name, s) for kind, name, group in jobs if kind == "layoutalg" for s in group]
    assert sorted(ours) == sorted((d, s) for d in ("f16", "e4m3") for s in shapes)
    tri = [(name, s) for kind, name, group in jobs if kind == "triton" for s in group]
    assert {name for name, _ in tri} == {"f16"}            # no Triton column for e4m3
    assert jobs[0][0] == "triton"                          # the slow ones first
    # one representative per class of Triton's integer specialization (1, multiple of 16, neither)
    assert sorted(s for _, s in tri) == sorted({(bg._class(m), bg._class(n), bg._class(k)) for m, n, k in shapes})
    assert bg._class(1) == 1 and bg._class(4096) % 16 == 0 and bg._class(257) != 1 and bg._class(257) % 16 != 0
    assert not any(kind == "triton" for kind, _, _ in bg.compile_jobs(("f16",), shapes, triton=False))


# ---- the summary math ----

def test_geomean_skips_missing_and_non_positive(bg):
    assert bg.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert bg.geomean([None, 0.5, 2.0, 0.0, float("nan")]) == pytest.approx(1.0)
    assert bg.geomean([]) is None and bg.geomean([None]) is None


def test_best_ratio_is_against_the_faster_library(bg):
    assert bg.best_ratio(row(bg, ratio_cublas=0.9, ratio_triton=1.2)) == (0.9, "cublas")
    assert bg.best_ratio(row(bg, ratio_cublas=1.1, ratio_triton=0.8)) == (0.8, "triton")
    assert bg.best_ratio(row(bg, ratio_cublas=None, ratio_triton=0.7)) == (0.7, "triton")
    assert bg.best_ratio(row(bg)) == (None, None)


def synthetic(bg):
    return [
        row(bg, M=1, layoutalg_tflops=1.0, cublas_tflops=1.0, triton_tflops=2.0, ratio_cublas=1.0, ratio_triton=0.5,
            path="wgmma", rel_err=1e-3, err_ok=True),
        row(bg, M=16, layoutalg_tflops=4.0, cublas_tflops=1.0, triton_tflops=1.0, ratio_cublas=4.0, ratio_triton=2.0,
            path="wgmma", rel_err=1e-3, err_ok=True),
        row(bg, M=64, N=1531, layoutalg_tflops=3.0, cublas_tflops=4.0, triton_tflops=1.0, ratio_cublas=0.25,
            ratio_triton=3.0, path="mma_sync", rel_err=0.5, err_ok=False),
        row(bg, M=128, N=50257, K=768, cublas_tflops=5.0, triton_tflops=4.0, path="wgmma",
            error="GemmError: launch failed"),                                # planned, but did not run
        row(bg, "bf16", M=128, ratio_cublas=0.01, ratio_triton=0.01, path="wgmma"),   # another dtype: not counted
    ]


def test_summary_on_synthetic_rows(bg):
    s = bg.summarize(synthetic(bg), "f16")
    assert s["shapes"] == 4 and s["ran"] == 3 and s["reference"] == "cuBLAS"
    assert s["geomean_ratio_cublas"] == pytest.approx((1.0 * 4.0 * 0.25) ** (1 / 3)) and s["n_ratio_cublas"] == 3
    assert s["geomean_ratio_triton"] == pytest.approx((0.5 * 2.0 * 3.0) ** (1 / 3)) and s["n_ratio_triton"] == 3
    assert s["geomean_ratio_best"] == pytest.approx((0.5 * 2.0 * 0.25) ** (1 / 3))
    assert s["worst"] == {"M": 64, "N": 1531, "K": 4096, "ratio": 0.25, "against": "cublas"}
    assert s["at_least_best"] == 1
    assert s["hopper_path"] == 2 and s["mma_sync_path"] == 1
    assert s["errors"] == [{"M": 128, "N": 50257, "K": 768, "error": "GemmError: launch failed"}]
    assert s["check_failed"] == [{"M": 64, "N": 1531, "K": 4096, "rel_err": 0.5}]
    assert s["cublas_missing"] == 0 and s["triton_missing"] == 0


def test_summary_of_e4m3_where_scaled_mm_refuses_and_of_nothing(bg):
    rows = [row(bg, "e4m3", M=128, N=1531, layoutalg_tflops=900.0, path="wgmma", cublas_error="RuntimeError: x"),
            row(bg, "e4m3", M=128, N=4096, layoutalg_tflops=900.0, cublas_tflops=1000.0, ratio_cublas=0.9,
                path="wgmma")]
    s = bg.summarize(rows, "e4m3")
    assert s["reference"] == "_scaled_mm" and s["cublas_missing"] == 1 and s["n_ratio_cublas"] == 1
    assert s["geomean_ratio_cublas"] == pytest.approx(0.9) and s["geomean_ratio_triton"] is None
    assert s["worst"]["N"] == 4096 and s["hopper_path"] == 2
    empty = bg.summarize([], "bf16")
    assert empty["shapes"] == 0 and empty["worst"] is None and empty["geomean_ratio_cublas"] is None
    bg.summary_text(empty)                                 # writes without figures


def test_error_text_is_one_line_of_at_most_120_characters(bg):
    t = bg.error_text(ValueError("a\nb " + "x" * 300))
    assert t.startswith("ValueError: a b x") and len(t) == 120 and "\n" not in t
    assert bg.finite(float("nan")) is None and bg.finite(None) is None and bg.finite(2) == 2.0


# ---- the writers ----

def test_markdown_table(bg):
    rows = synthetic(bg)
    rows[3]["error"] = "GemmError: a | pipe"
    t = bg.markdown_table(rows, "f16").splitlines()
    assert len(t) == 2 + 4
    assert t[0].split(" | ")[5:10] == ["layoutalg TFLOP/s", "cuBLAS TFLOP/s", "Triton TFLOP/s", "/ cuBLAS", "/ Triton"]
    assert t[1] == "|" + "---|" * t[0].count(" | ") + "---|"
    assert all(line.count(" | ") == t[0].count(" | ") for line in t[2:])      # the pipe in the error is escaped
    assert "| 16 | 4096 | 4096 | wgmma |" in t[3] and "| 4.000 | 2.000 |" in t[3]
    assert "CHECK FAILED" in t[4] and "layoutalg: GemmError: a \\| pipe" in t[5] and "| - |" in t[5]
    no_tri = bg.markdown_table(rows, "f16", triton=False).splitlines()[0]
    assert "Triton" not in no_tri
    e4 = bg.markdown_table([row(bg, "e4m3", cublas_error="RuntimeError: refused")], "e4m3").splitlines()
    assert "_scaled_mm TFLOP/s" in e4[0] and "Triton" not in e4[0] and "_scaled_mm: RuntimeError: refused" in e4[2]


def test_summary_text(bg):
    text = bg.summary_text(bg.summarize(synthetic(bg), "f16"))
    assert "3 of 4 shapes ran; 2 on the Hopper (wgmma) path, 1 on mma_sync" in text
    assert "geomean vs cuBLAS: 1.000 (3 shapes)" in text and "geomean vs Triton: 1.442" in text
    assert "worst: 64x1531x4096 at 0.250 of cuBLAS" in text
    assert "error 128x50257x768: GemmError: launch failed" in text and "CHECK FAILED 64x1531x4096" in text
    assert "Triton" not in bg.summary_text(bg.summarize(synthetic(bg), "f16"), triton=False)


def test_the_json_writer(bg, tmp_path, monkeypatch):
    res = {"rows": synthetic(bg), "summary": {"f16": bg.summarize(synthetic(bg), "f16")}}
    monkeypatch.setenv("OUT", str(tmp_path))
    bg.save_json(res, bg.JSON_NAME, str(tmp_path / "also.json"))
    for p in (tmp_path / "bench_grid.json", tmp_path / "also.json"):
        back = json.loads(p.read_text())
        assert back["summary"]["f16"]["worst"]["ratio"] == 0.25 and len(back["rows"]) == 5


def test_the_plot(bg, tmp_path):
    pytest.importorskip("matplotlib")
    rows = synthetic(bg)
    svg = tmp_path / "ratios.svg"
    assert bg.write_plot(str(svg), rows) == str(svg)
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "N=4096 K=4096" in text and "layoutalg / Triton" in text
    png = tmp_path / "sub" / "ratios.png"
    assert bg.write_plot(str(png), rows, triton=False) == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_plot_without_matplotlib(bg, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert bg.write_plot(str(tmp_path / "x.svg"), synthetic(bg)) is None
    assert "matplotlib is not importable" in capsys.readouterr().out and not (tmp_path / "x.svg").exists()


# ---- one shape's bookkeeping, torch on the CPU ----

class FakeLaunch:
    def __init__(self, A, B, C, cfg, wrong=False):
        self.A, self.B, self.C, self.wrong = A, B, C, wrong
        self.kernel = SimpleNamespace(config=cfg)

    def __call__(self):
        self.C.copy_((self.A.float() @ self.B.float()).to(self.C.dtype))
        if self.wrong:
            self.C.add_(100)
        return self.C


def fake_env(bg, torch, refuse=(), fail=(), times=None, wrong=False):
    """An Env on the CPU: codegen.prepare fails for the shapes (M, N, K) in ``fail``, the
    reference refuses those in ``refuse``, every call takes ``times[label]`` seconds."""
    from codegen.config import GemmConfig

    times = times or {"layoutalg": 1e-3, "cublas": 2e-3, "triton": 4e-3}

    def ops(torch, name, M, N, K):
        dt = {"f16": torch.float16, "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn}[name]
        A = torch.randn(M, K).to(dt)
        return (A, torch.randn(N, K).to(dt).t()) if name == "e4m3" else (A, torch.randn(K, N).to(dt))

    def reference(torch, name):
        def call(A, B):
            if (A.shape[0], B.shape[1], A.shape[1]) in refuse:
                raise RuntimeError("Expected trailing dimension of mat2 to be divisible by 16")
            return (A.float() @ B.float()).to(torch.bfloat16 if name == "e4m3" else A.dtype)
        return call

    def prepare(A, B, C):
        M, K = A.shape
        if (M, B.shape[1], K) in fail:
            raise ValueError("no plan for this shape " + "y" * 200)
        path = "mma_sync" if B.shape[1] % 8 else "wgmma"
        name = {torch.float16: "f16", torch.bfloat16: "bf16"}.get(A.dtype, "e4m3")
        cfg = GemmConfig.default(name, M, B.shape[1], K, arch=(9, 0) if path == "wgmma" else None)
        return FakeLaunch(A, B, C, cfg, wrong)

    def timer(calls, flop, rounds):
        for fn in calls.values():
            fn()
        t = {k: [times[k]] * rounds for k in calls}
        return {k: flop / v[0] / 1e12 for k, v in t.items()}, t

    tri = lambda A, B: (A.float() @ B.float()).to(A.dtype)  # noqa: E731
    return bg.Env(torch, SimpleNamespace(prepare=prepare), tri, ops, reference, timer, "cpu")


def test_a_shape_measured(bg):
    torch = pytest.importorskip("torch")
    r = bg.measure_shape(fake_env(bg, torch), "f16", 64, 128, 96, rounds=3)
    assert r["ratio_cublas"] == pytest.approx(2.0) and r["ratio_triton"] == pytest.approx(4.0)
    flop = 2 * 64 * 128 * 96
    assert r["layoutalg_tflops"] == pytest.approx(flop / 1e-3 / 1e12) and r["flop"] == flop
    assert r["path"] == "wgmma" and r["tile"].startswith("64x128x64") and r["reference"] == "torch.matmul"
    assert r["err_ok"] is True and r["rel_err"] < 1e-2 and r["error"] is None
    odd = bg.measure_shape(fake_env(bg, torch), "bf16", 16, 1531, 64, rounds=2)
    assert odd["path"] == "mma_sync" and odd["ratio_cublas"] == pytest.approx(2.0)


def test_a_refused_reference_and_a_failing_shape_are_recorded(bg):
    torch = pytest.importorskip("torch")
    env = fake_env(bg, torch, refuse={(32, 1531, 64)}, fail={(16, 64, 64)})
    e4 = bg.measure_shape(env, "e4m3", 32, 1531, 64, rounds=2)
    assert e4["cublas_tflops"] is None and e4["ratio_cublas"] is None and "divisible by 16" in e4["cublas_error"]
    assert e4["triton_tflops"] is None and e4["triton_error"] is None        # no Triton column for e4m3
    assert e4["layoutalg_tflops"] is not None and e4["err_ok"] is True       # checked against float32 products
    assert e4["reference"] == "torch._scaled_mm"
    bad = bg.measure_shape(env, "f16", 16, 64, 64, rounds=2)
    assert bad["error"].startswith("ValueError: no plan") and len(bad["error"]) == 120
    assert bad["layoutalg_tflops"] is None and bad["ratio_cublas"] is None and bad["cublas_tflops"] is not None
    env.operands = lambda *a: (_ for _ in ()).throw(RuntimeError("CUDA error: an illegal memory access"))
    none = bg.measure_shape(env, "bf16", 16, 64, 64, rounds=2)
    assert none["error"] == "operands: RuntimeError: CUDA error: an illegal memory access"
    assert none["cublas_tflops"] is None and none["layoutalg_tflops"] is None
    wrong = bg.measure_shape(fake_env(bg, torch, wrong=True), "f16", 16, 64, 64, rounds=2)
    assert wrong["err_ok"] is False and wrong["rel_err"] > 0.1


def test_main_runs_the_grid_and_writes_its_outputs(bg, tmp_path, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    env = fake_env(bg, torch, fail={(16, 64, 32)})
    env.device_name, env.versions = "fake", {"torch": torch.__version__, "triton": None}
    monkeypatch.setattr(bg.Env, "cuda", classmethod(lambda cls, triton=True: env))
    monkeypatch.setenv("OUT", str(tmp_path))
    plot = tmp_path / "r.svg"
    res = bg.main(["--dtypes", "f16,e4m3", "--ms", "16,32", "--nks", "64x32,24x48", "--rounds", "2",
                   "--precompile", "0", "--plot", str(plot)])
    back = json.loads((tmp_path / "bench_grid.json").read_text())
    assert back["device"] == "fake" and back["dtypes"] == ["f16", "e4m3"] and back["nks"] == [[64, 32], [24, 48]]
    assert len(back["rows"]) == 8 == len(res["rows"]) and set(back["summary"]) == {"f16", "e4m3"}
    assert back["summary"]["f16"]["errors"][0]["M"] == 16 and back["summary"]["e4m3"]["geomean_ratio_cublas"] == 2.0
    assert math.isclose(back["summary"]["f16"]["geomean_ratio_triton"], 4.0)
    out = capsys.readouterr().out
    assert "### f16 (4 shapes" in out and "### e4m3 (4 shapes" in out and "## summary" in out
    assert plot.exists() or "matplotlib is not importable" in out
    assert os.path.getsize(tmp_path / "bench_grid.json") > 0
