"""The ``show`` and ``eval`` sub-commands, in process and as ``python -m layoutalg_cli``."""

import io
import os
import subprocess
import sys

import pytest

from layoutalg_cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_main(*argv):
    out = io.StringIO()
    rc = main(list(argv), out=out)
    return rc, out.getvalue()


def run_module(*argv):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-m", "layoutalg_cli", *argv], capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=120)
    return p.returncode, p.stdout, p.stderr


SHOW_LINES = [
    "layout : (4,(2,2)):(2,(1,8))",
    "size   : 16",
    "cosize : 16",
    "values : 0 2 4 6 1 3 5 7 8 10 12 14 9 11 13 15",
]


def test_show_in_process():
    rc, out = run_main("show", "(4,(2,2)):(2,(1,8))")
    assert rc == 0
    lines = out.splitlines()
    for expected in SHOW_LINES:
        assert expected in lines
    assert any(line.startswith("rank   : 2") and "depth: 2" in line for line in lines)
    # the 2-D table, rows m and columns n: L(m, n)
    assert " 0  |  0 |  1 |  8 |  9 |" in lines
    assert " 3  |  6 |  7 | 14 | 15 |" in lines


def test_eval_in_process():
    rc, out = run_main("eval", "composition((4,3):(3,1), 6:2)")
    assert rc == 0
    assert out.strip() == "(2,3):(6,1)"
    for expr, expected in [
        ("complement(4:2, 24)", "(2,3):(1,8)"),
        ("logical_divide((8,8):(1,8), (2:1, 4:1))", "((2,4),(4,2)):((1,2),(8,32))"),
        ("logical_product((2,2):(1,2), (3,4):(4,1))", "((2,2),(3,4)):((1,2),(16,4))"),
        ("blocked_product((2,2):(1,2), (3,4):(4,1))", "((2,3),8):((1,16),2)"),
        ("right_inverse((4,2):(2,1))", "(2,4):(4,1)"),
        ("coalesce((2,(1,6)):(1,(6,2)))", "12:1"),
        ("composition(Sw<3,3,3> o 0 o (8,64):(64,1), (8,8))", "Sw<3,3,3> o 0 o (8,8):(64,1)"),
        ("size((3,(2,3)):(3,(12,1)))", "18"),
    ]:
        rc, out = run_main("eval", expr)
        assert rc == 0, expr
        assert out.strip() == expected, expr


def test_eval_prints_nested_int_tuples_in_cute_form():
    rc, out = run_main("eval", "idx2crd(16, (3,(2,3)))")
    assert rc == 0 and out.strip() == "(1,(1,2))"


def test_errors_exit_2_with_message(capsys):
    rc, out = run_main("eval", "complement((2,2):(1,1))")
    assert rc == 2 and out == ""
    err = capsys.readouterr().err
    assert err.startswith("layoutalg: complement:")
    rc, _ = run_main("show", "(4,2")
    assert rc == 2
    assert "parse" in capsys.readouterr().err
    rc, _ = run_main("eval", "frobnicate(4:1)")
    assert rc == 2
    assert "unknown function" in capsys.readouterr().err


def test_usage_errors_exit_nonzero():
    with pytest.raises(SystemExit) as info:
        main(["show"], out=io.StringIO())
    assert info.value.code != 0


def test_show_via_python_m():
    rc, out, err = run_module("show", "(4,(2,2)):(2,(1,8))")
    assert rc == 0, err
    lines = out.splitlines()
    for expected in SHOW_LINES:
        assert expected in lines


def test_eval_via_python_m():
    rc, out, err = run_module("eval", "composition((4,3):(3,1), 6:2)")
    assert rc == 0, err
    assert out.strip() == "(2,3):(6,1)"
    rc, out, err = run_module("eval", "composition((4,3):(1,5), 3:3)")
    assert rc == 2
    assert "composition: stride divisibility" in err


def test_demo_runs_the_tour_and_a_gemm(tmp_path):
    """The README's main job: the tour, the kernel's main loop, and a GEMM (simulated here)."""
    env = dict(os.environ, LAYOUTALG_CACHE=str(tmp_path))
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-m", "layoutalg_cli", "demo"], capture_output=True,
                       text=True, cwd=str(tmp_path), env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    i = next(k for k, s in enumerate(lines) if "its main loop begins" in s)
    assert lines[i + 1].strip().startswith("# ---- main loop")
    last = [s for s in lines if "GEMM, max |C - numpy| =" in s]
    assert last, p.stdout[-2000:]
    assert float(last[-1].rsplit("=", 1)[1]) < 1e-2


# ---- show of a layout with names for run-time integers ------------------------------------------

def test_show_with_names_prints_formulas_and_the_tiles_local_tile_makes():
    rc, text = run_main("show", "(M,K):(ldA,1)", "--tile", "128,64")
    assert rc == 0, text
    lines = text.splitlines()
    assert lines[0].startswith("layout : (M,K):(ldA,1)") and "run-time: M, K, ldA" in lines[0]
    assert lines[1] == "size   : M*K"
    assert lines[2] == "offset : (i, j) -> i*ldA + j"
    assert lines[3].startswith("tiles  : ((128,64),(ceil(M/128),ceil(K/64))):((ldA,1),(128*ldA,64))")


def test_show_with_names_in_latex_and_nested_modes():
    rc, text = run_main("show", "(M,(2,K)):(ldA,(1,2))", "--latex")
    assert rc == 0 and "offset : (i, j, k) \\mapsto i \\cdot \\mathit{ldA} + j + 2 k" in text, text


def test_show_options_for_names_are_refused_without_them(capsys):
    rc, _ = run_main("show", "(8,4):(1,8)", "--tile", "2,2")
    assert rc == 2 and "--tile and --latex are for layouts with names" in capsys.readouterr().err
