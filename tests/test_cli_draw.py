"""``layoutalg draw``: every form of the command line, in process and once as ``python -m layoutalg_cli``."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from layoutalg import CopyAtom, Layout, make_tiled_copy_A, make_tiled_mma
from layoutalg_cli import main
from layoutalg.draw import layout_ascii, layout_latex

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NS = "{http://www.w3.org/2000/svg}"
F16 = "SM80_16x8x16_F32F16F16F32_TN"


def run(*argv):
    out = io.StringIO()
    rc = main(list(argv), out=out)
    return rc, out.getvalue()


def cells(path):
    """{grid name: {(row, col): data-label}} of an SVG file (which must parse)."""
    root = ET.parse(path).getroot()
    out = {}
    for g in root.iter(NS + "g"):
        if "grid" in g.get("class", "").split():
            out[g.get("data-name")] = {
                (int(r.get("data-row")), int(r.get("data-col"))): r.get("data-label")
                for r in g.iter(NS + "rect") if "cell" in r.get("class", "").split()
            }
    return out


# ---- the forms of the issue, exactly as written ---------------------------------------------------

def test_layout_to_svg(tmp_path):
    path = tmp_path / "l.svg"
    rc, out = run("draw", "(8,8):(8,1)", "-o", str(path))
    assert rc == 0 and out.strip() == f"wrote {path}"
    g = cells(path)["layout"]
    assert len(g) == 64 and g[(1, 2)] == "10" and g[(7, 7)] == "63"


def test_mma_with_atom_layout_and_permutation(tmp_path):
    path = tmp_path / "mma.svg"
    rc, out = run("draw", "mma", F16, "--atom-layout", "2,2,1", "--permutation", "32,32,16", "-o", str(path))
    assert rc == 0
    g = cells(path)
    assert {k: len(v) for k, v in g.items()} == {"C": 32 * 32, "A": 32 * 16, "B": 16 * 32}
    mma = make_tiled_mma(F16, (2, 2, 1), (32, 32, 16))
    LC = mma.get_layoutC_TV()
    for t, v in [(0, 0), (33, 5), (127, 7)]:
        i = LC((t, v))
        assert g["C"][(i % 32, i // 32)] == f"T{t} V{v}"


def test_copy_of_an_mma_operand(tmp_path):
    path = tmp_path / "copy.svg"
    rc, _ = run("draw", "copy", "SM75_U32x4_LDSM_N", "--mma", F16, "--atom-layout", "2,2,1",
                "--operand", "A", "-o", str(path))
    assert rc == 0
    g = cells(path)
    assert set(g) == {"S", "D"} and len(g["S"]) == 32 * 16
    # the copy's element type is the MMA's A type (f16): 8 values per ldmatrix row
    cp = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), make_tiled_mma(F16, (2, 2, 1)))
    LS = cp.get_layoutS_TV()
    for t, v in [(0, 7), (16, 3), (40, 0)]:
        i = LS((t, v))
        assert g["S"][(i % 32, i // 32)] == f"T{t} V{v}"


def test_make_tiled_copy_with_threads_and_values(tmp_path):
    path = tmp_path / "g2s.svg"
    rc, _ = run("draw", "copy", "SM80_CP_ASYNC_CACHEGLOBAL_128", "--dtype", "f16", "--threads", "(16,8):(8,1)",
                "--values", "(1,8)", "-o", str(path))
    assert rc == 0
    g = cells(path)
    assert len(g["S"]) == 16 * 64
    assert g["S"][(3, 17)] == "T26 V1" and g["D"][(15, 63)] == "T127 V7"


# ---- formats ---------------------------------------------------------------------------------

def test_layout_without_output_prints_cutes_table():
    rc, out = run("draw", "(4,8):(8,1)")
    assert rc == 0 and out.rstrip("\n") == layout_ascii(Layout((4, 8), (8, 1))).rstrip("\n")
    rc, out = run("draw", "(4,8):(8,1)", "--one-based")
    assert " 1  |  1 |  2 |" in out


def test_layout_tex_is_cutes_print_latex(tmp_path):
    rc, out = run("draw", "(2,2):(1,2)", "--format", "tex")
    assert rc == 0 and out == layout_latex(Layout((2, 2), (1, 2)))
    rc, _ = run("draw", "(2,2):(1,2)", "-o", str(tmp_path / "l.tex"))
    assert (tmp_path / "l.tex").read_text() == layout_latex(Layout((2, 2), (1, 2)))


def test_bank_colours_and_formats(tmp_path):
    path = tmp_path / "banks.svg"
    rc, _ = run("draw", "Sw<3,2,3> o 0 o (8,32):(32,1)", "--color", "bank", "--dtype", "f32", "-o", str(path))
    assert rc == 0
    root = ET.parse(path).getroot()
    banks = [r.get("data-bank") for r in root.iter(NS + "rect") if r.get("data-bank") is not None]
    assert len(banks) == 256 and len(set(banks)) == 32
    rc, out = run("draw", "(2,2):(1,2)", "--format", "typ")
    assert rc == 0 and "#let color_map" in out
    rc, out = run("draw", "(2,2):(1,2)", "--format", "svg", "--no-data")
    assert rc == 0 and out.startswith("<?xml") and "data-label" not in out
    other = tmp_path / "x.out"
    rc, _ = run("draw", "(2,2):(1,2)", "--format", "svg", "-o", str(other))
    assert rc == 0 and ET.parse(other).getroot().tag == NS + "svg"


def test_png_output(tmp_path):
    pytest.importorskip("cairosvg")
    path = tmp_path / "atom.png"
    rc, _ = run("draw", "mma", F16, "-o", str(path), "--cell-size", "20")
    assert rc == 0 and path.read_bytes()[:4] == b"\x89PNG"


def test_mma_text_one_based_and_thread_partition():
    rc, out = run("draw", "mma", F16, "--one-based")
    assert rc == 0 and "|001-01|001-02|002-01|" in out               # CuTe's TTT-VV table, 1-based
    rc, out = run("draw", "mma", F16, "--thread", "5", "--operand", "A")
    assert rc == 0 and "thread 5's A elements" in out and out.count("005-") == 8
    rc, out = run("draw", "mma", F16, "--thread", "5", "--operand", "A", "--shape", "32,32")
    assert rc == 0 and "A tensor 32x32" in out and out.count("005-") == 32       # (MMA, MMA_M, MMA_K) = (8,2,2)


def test_copy_atom_alone():
    rc, out = run("draw", "copy", "SM75_U32x4_LDSM_N", "--dtype", "f16")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("SM75_U32x4_LDSM_N (f16): 32 threads x 8 values")
    assert "|000-00|000-01|000-02|000-03|000-04|000-05|000-06|000-07|" in out


def test_plan_and_expr_graphs(tmp_path, monkeypatch, capsys):
    rc, out = run("draw", "plan")
    assert rc == 0 and out.startswith('digraph "gemm_plan" {') and "SM75_U16x8_LDSM_T" in out
    rc, out = run("draw", "plan", "--dtype", "tf32", "--b-major", "K")
    assert rc == 0 and "SM80_16x8x8_F32TF32TF32F32_TN" in out
    rc, out = run("draw", "plan", "-o", str(tmp_path / "p.dot"))
    assert rc == 0 and (tmp_path / "p.dot").read_text().startswith('digraph "gemm_plan"')
    rc, out = run("draw", "expr", "complement(4:2, 24)")
    assert rc == 0 and "= (2,3):(1,8)" in out
    # without Graphviz only the .dot is written: the message says how to install Graphviz,
    # and the exit status says the asked-for file is missing
    import layoutalg.draw.graphs as graphs

    monkeypatch.setattr(graphs, "dot_available", lambda: False)
    rc, out = run("draw", "expr", "complement(4:2, 24)", "-o", str(tmp_path / "e.svg"))
    err = capsys.readouterr().err
    assert rc == 1 and "apt-get install graphviz" in err and "e.svg was not written" in err
    assert (tmp_path / "e.dot").exists() and not (tmp_path / "e.svg").exists()


@pytest.mark.skipif(not __import__("shutil").which("dot"), reason="needs Graphviz's dot")
def test_expr_graph_rendered(tmp_path):
    rc, out = run("draw", "expr", "logical_divide(composition((4,3):(3,1), 6:2), 2:1)", "-o", str(tmp_path / "e.svg"))
    assert rc == 0 and "wrote" in out
    ET.parse(tmp_path / "e.svg")


# ---- bad input: exit status 2 and a message naming the problem ----------------------------------

@pytest.mark.parametrize("argv, message", [
    (["mmx"], "'mmx' is neither a layout nor one of the words mma, copy, plan, expr"),
    (["(4,8):(8"], "parse"),
    (["mma"], "draw mma: give the atom's name"),
    (["mma", "SM80_16x8x16_F32F16F16F32_TNx"], "did you mean SM80_16x8x16_F32F16F16F32_TN"),
    (["mma", F16, "--atom-layout", "2,a"], "--atom-layout: expected comma-separated ints"),
    (["mma", F16, "--atom-layout", "3,2,1", "--permutation", "32,16,16"], "is not a multiple of"),
    (["mma", F16, "--operand", "A"], "--operand with mma needs --thread"),
    (["mma", F16, "--thread", "32"], "--thread: 32 is not a thread"),
    (["mma", F16, "--thread", "1", "--operand", "A", "--shape", "30,16"], "not a multiple of the A tile 16x16"),
    (["mma", F16, "--shape", "32,16"], "--shape goes with --thread"),
    (["copy", "UniversalCopy_32", "--mma", "UniversalFMA", "--operand", "C"], "does not fix the C element type"),
    (["(8,8):(8,1)", "--cell-size", "2", "-o", "x.svg"], "--cell-size must be at least 4"),
    (["copy", "SM75_U32x4_LDSM_N"], "give the element type with --dtype"),
    (["copy", "SM75_U32x4_LDSM_N", "--dtype", "f16", "--operand", "A"], "give --mma ATOM too"),
    (["copy", "SM75_U32x4_LDSM_N", "--mma", F16], "--mma needs --operand"),
    (["copy", "SM75_U32x4_LDSM_N", "--mma", "SM80_16x8x8_F32TF32TF32F32_TN", "--operand", "A", "--dtype", "f16"],
     "but the MMA's A operand is tf32"),
    (["(8,8):(8,1)", "--operand", "A"], "--operand does not apply to a layout"),
    (["plan", "extra"], "unexpected extra argument"),
    (["expr"], "draw expr: give the expression"),
    (["expr", "composition((4,3):(3,1)"], "expected ')'"),
    (["mma", F16, "-o", "x.foo"], "cannot tell the format from the suffix 'foo'"),
    (["mma", F16, "--format", "png"], "give a file with -o"),
    (["mma", F16, "--format", "dot"], "--format dot is for graphs"),
    (["expr", "complement(4:2, 24)", "--format", "tex"], "graphs (plan, expr) are written as"),
])
def test_errors(argv, message, capsys):
    rc, out = run("draw", *argv)
    err = capsys.readouterr().err
    assert rc == 2 and message in err, err
    assert err.startswith("layoutalg draw: ") and out == ""


def test_help_lists_the_forms(capsys):
    with pytest.raises(SystemExit) as e:
        main(["draw", "-h"], out=io.StringIO())
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "draw copy SM80_CP_ASYNC_CACHEGLOBAL_128 --dtype f16" in text and "--one-based" in text


# ---- once as a program -----------------------------------------------------------------------

def test_as_module(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    path = tmp_path / "mma.svg"
    p = subprocess.run(
        [sys.executable, "-m", "layoutalg_cli", "draw", "mma", F16, "--atom-layout", "2,2,1",
         "--permutation", "32,32,16", "-o", str(path)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"wrote {path}"
    assert len(cells(path)["C"]) == 32 * 32


def test_plan_graph_of_the_hopper_pipeline(capsys):
    pytest.importorskip("numba")
    rc, out = run("draw", "plan", "--path", "wgmma")
    assert rc == 0 and out.startswith('digraph "gemm_sm90_plan" {')
    for word in ("producer warpgroup 0", "consumer warpgroup 2", "mbarriers full[3], empty[3]", "TMA stores"):
        assert word in out, word
    capsys.readouterr()
    rc, out = run("draw", "plan", "--path", "wgmma", "--dtype", "f32")
    err = capsys.readouterr().err
    assert rc == 2 and "takes f16, bf16, tf32, e4m3, e5m2, not f32" in err and out == ""
    # tf32 and the 8-bit floats: both operands K-major (the default for them), MN-major refused
    for dt, tile, k in (("tf32", "128x256x32", 8), ("e4m3", "128x256x128", 32)):
        rc, out = run("draw", "plan", "--path", "wgmma", "--dtype", dt)
        assert rc == 0 and f"{dt} -> " in out and f"CTA tile {tile}" in out and f"wgmma m64n256k{k}" in out, dt
        assert "mbarriers full[3], empty[3]" in out
    capsys.readouterr()
    rc, out = run("draw", "plan", "--path", "wgmma", "--dtype", "tf32", "--b-major", "MN")
    assert rc == 2 and "wgmma reads tf32 operands K-major only" in capsys.readouterr().err
    rc, out = run("draw", "plan", "--dtype", "e5m2")
    assert rc == 2 and "e5m2 runs on the Hopper kernel only; pass --path wgmma" in capsys.readouterr().err
