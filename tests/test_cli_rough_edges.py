"""The command line as a new user meets it: help, version, the atom tables, and clear errors."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest

from layoutalg_cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*argv):
    out = io.StringIO()
    rc = main(list(argv), out=out)
    return rc, out.getvalue()


def run_module(*argv, shell_tail=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "layoutalg_cli", *argv], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def test_version(capsys):
    import layoutalg

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"layoutalg {layoutalg.__version__}"


def test_bare_command_prints_the_help():
    rc, out = run()
    assert rc == 2
    assert out.startswith("usage: layoutalg")
    for cmd in ("show", "eval", "atoms", "draw", "demo"):
        assert f"    {cmd}" in out, cmd


def test_eval_help_lists_the_functions():
    p = run_module("eval", "--help")
    assert p.returncode == 0, p.stderr
    text = " ".join(p.stdout.split())
    for name in ("composition", "complement", "logical_divide", "zipped_divide", "make_tiled_mma", "right_inverse"):
        assert f"{name}," in text or f"{name} " in text or text.endswith(name), name


def test_atoms_lists_and_searches_the_tables():
    import mma_atoms

    rc, out = run("atoms")
    assert rc == 0 and len(out.splitlines()) == len(mma_atoms.names())
    rc, out = run("atoms", "ldsm")                       # a part of the name, any case
    names = [line.split()[0] for line in out.splitlines()]
    assert rc == 0 and names == mma_atoms.names("ldsm")
    rc, out = run("atoms", "SM80_16x8x16_*_TN")          # a glob
    names = [line.split()[0] for line in out.splitlines()]
    assert rc == 0 and names and all(n.startswith("SM80_16x8x16_") and n.endswith("_TN") for n in names)
    assert "SM80_16x8x16_F32F16F16F32_TN" in names
    rc, out = run("atoms", "--kind", "wgmma", "--sm", "80")   # no wgmma runs on sm_80
    assert rc == 1 and out == ""
    rc, out = run("atoms", "--kind", "nonsense")
    assert rc == 2


def test_unknown_function_is_named_with_close_matches(capsys):
    rc, _ = run("draw", "expr", "compositon(4:1, 2:1)")
    err = capsys.readouterr().err
    assert rc == 2
    assert "unknown function 'compositon'" in err and "did you mean composition" in err
    assert "'4:1'" not in err and "known:" not in err
    rc, _ = run("eval", "logical_devide(8:1, 2:1)")
    err = capsys.readouterr().err
    assert rc == 2 and "unknown function 'logical_devide'" in err and "logical_divide" in err


def test_show_piped_into_head_ends_quietly():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = f'"{sys.executable}" -m layoutalg_cli show "(64,64)" | head -1'
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=120)
    assert p.stdout == "layout : (64,64):(1,64)\n"
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr, p.stderr
    assert p.returncode == 0


def test_show_of_a_non_layout_is_refused(capsys):
    rc, out = run("show", "_")
    assert rc == 2 and out == ""
    assert "'_' is not a layout" in capsys.readouterr().err
    rc, out = run("show", "8")                           # an int is the layout 8:1
    assert rc == 0 and out.startswith("layout : 8:1")


def test_draw_of_an_unknown_atom_names_it(capsys, tmp_path):
    rc, _ = run("draw", "copy", "SM75_LDSM", "-o", str(tmp_path / "x.svg"))
    err = capsys.readouterr().err
    assert rc == 2 and "no atom named 'SM75_LDSM'" in err and "SM75_U32x4_LDSM_N" in err
    assert "--dtype" not in err
    rc, _ = run("draw", "mma", "SM75_U32x4_LDSM_N")
    assert rc == 2 and "is a copy atom" in capsys.readouterr().err
    assert not (tmp_path / "x.svg").exists()


def test_draw_mma_with_threads_split_along_k(tmp_path):
    """Atom layout (2,2,2): the picture draws; C's two K groups hold the same elements (partial sums)."""
    from layoutalg import make_identity_tensor, make_tiled_mma
    from layoutalg.draw import tiled_mma_figure

    rc, out = run("draw", "mma", "SM80_16x8x16_F32F16F16F32_TN", "--atom-layout", "2,2,2", "-o", str(tmp_path / "k.svg"))
    assert rc == 0 and (tmp_path / "k.svg").exists()
    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", (2, 2, 2))
    fig = tiled_mma_figure(mma)
    assert any("split along K in 2 groups" in n for n in fig.notes)
    # every C cell is owned by the lowest thread whose partition_C holds it, at every element
    M, N, _ = mma.tile_size_mnk
    ident = make_identity_tensor((M, N))
    owner = {}
    for t in range(mma.size):
        part = mma.get_slice(t).partition_C(ident)
        for v in range(len(part)):
            owner.setdefault(part[v], (t, v))
    grid = fig.grid("C")
    for (m, n), (t, v) in owner.items():
        assert grid[m, n].data["thread"] == t and grid[m, n].data["value"] == v
    assert len(owner) == M * N
    assert all(t < mma.size // 2 for t, _ in owner.values())   # the K group 1 duplicates group 0


def test_draw_graph_without_graphviz_fails(monkeypatch, tmp_path, capsys):
    import layoutalg.draw.graphs as graphs

    monkeypatch.setattr(graphs, "dot_available", lambda: False)
    rc, out = run("draw", "plan", "-o", str(tmp_path / "plan.svg"))
    assert rc == 1 and out == ""
    err = capsys.readouterr().err
    assert "plan.svg was not written" in err and "apt-get install graphviz" in err
    assert (tmp_path / "plan.dot").exists() and not (tmp_path / "plan.svg").exists()


def test_demo_says_what_it_runs():
    from layoutalg_cli import build_parser

    text = build_parser().format_help()
    assert "diagrams" not in text.split("demo", 1)[1].splitlines()[0]
    import inspect

    from layoutalg_cli import demo

    src = inspect.getsource(demo)
    assert "the same generated kernel" not in src
    assert 'GemmConfig("f16", "f32", 32, 32, 32, 1, 1, 2, 1)' in src   # the plan the message names
    assert "32x32x32 CTA tile, one warp, 2 stages" in src


# ---- CuTe habits in the layoutalg namespace -------------------------------------------------------

def test_print_functions_under_cute_names(capsys):
    import layoutalg
    from layoutalg import Layout, make_tensor, print_latex, print_layout, print_tensor
    from layoutalg.draw import layout_ascii, layout_latex

    for name in ("print_layout", "print_tensor", "print_latex"):
        assert name in layoutalg.__all__
    L = Layout((4, (2, 2)), (2, (1, 8)))
    print_layout(L)
    assert capsys.readouterr().out == layout_ascii(L).rstrip("\n") + "\n"
    print_latex(L)
    assert capsys.readouterr().out == layout_latex(L)
    print_tensor(make_tensor(np.arange(6).reshape(2, 3)))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("o (2,3):(3,1):")
    assert [row.split() for row in lines[1:]] == [["0", "1", "2"], ["3", "4", "5"]]
    with pytest.raises(TypeError, match="print_tensor: expected a Tensor"):
        print_tensor(L)


def test_tensor_repr_shows_layout_and_small_values():
    from layoutalg import Layout, make_identity_tensor, make_tensor

    t = make_tensor(np.arange(8, dtype=np.int32).reshape(2, 4))
    r = repr(t)
    assert r.splitlines()[0] == "Tensor(ArrayEngine(int32[8] + 0) o (2,4):(4,1)):"
    assert [row.split() for row in r.splitlines()[1:]] == [["0", "1", "2", "3"], ["4", "5", "6", "7"]]
    c = repr(make_identity_tensor((2, 3)))
    assert "(1,2)" in c and c.startswith("Tensor(CoordEngine(0) o (2,3):(1@0,1@1)):")
    big = make_tensor(np.zeros(1000))
    assert "\n" not in repr(big) and "1000:1" in repr(big)
    # every value of a small tensor appears in its repr, at its place
    t3 = make_tensor(np.arange(24).reshape(2, 3, 4))
    rows = [row.split() for row in repr(t3).splitlines()[1:]]
    assert len(rows) == 2 and all(len(row) == 12 for row in rows)
    for i in range(24):
        assert rows[i % 2][i // 2] == str(int(t3[i]))
    del Layout


def test_tensor_python_slices_match_none_and_underscore():
    from layoutalg import _, make_tensor
    from layoutalg.errors import LayoutIndexError

    t = make_tensor(np.arange(32).reshape(4, 8))
    for r in range(4):
        a, b, c = t[r, :], t[r, None], t[r, _]
        assert str(a.layout) == str(b.layout) == str(c.layout)
        assert [int(x) for x in a] == [int(x) for x in b] == list(range(8 * r, 8 * r + 8))
    for col in range(8):
        assert [int(x) for x in t[:, col]] == [int(x) for x in t[None, col]]
    t[1, :] = 7
    assert [int(x) for x in t[1, :]] == [7] * 8
    with pytest.raises(LayoutIndexError, match="only the full slice"):
        t[1, 0:2]


# ---- huge layouts, PNG sizes, options that used to be ignored ----------------------------------

def test_show_of_a_huge_layout_prints_no_table_unless_asked(capsys):
    rc, out = run("show", "(1000000,1000000):(1,1000000)")
    assert rc == 0 and "size   : 1000000000000" in out
    assert "table  : not printed: 1000000000000 cells, more than --max-cells 65536" in out
    assert len(out) < 2000
    rc, out = run("show", "(300,300)")
    assert "not printed" in out and len(out) < 2000
    rc, out = run("show", "(300,300)", "--max-cells", "90000")
    assert rc == 0 and "not printed" not in out and out.count("\n") > 600


def test_draw_refuses_a_picture_of_more_cells_than_the_limit(tmp_path, capsys):
    path = tmp_path / "big.svg"
    rc, _ = run("draw", "(1024,1024):(1024,1)", "-o", str(path))
    err = capsys.readouterr().err
    assert rc == 2 and not path.exists()
    assert "has 1048576 cells, more than --max-cells 65536" in err and "--max-cells 1048576" in err
    rc, _ = run("draw", "(1000000,1000000):(1,1000000)")                # text: refused as fast
    assert rc == 2
    rc, _ = run("draw", "(260,260)", "-o", str(path), "--no-data", "--max-cells", "70000")
    assert rc == 0 and path.stat().st_size > 1000
    rc, _ = run("draw", "mma", "SM80_16x8x16_F32F16F16F32_TN", "--permutation", "512,512,16", "-o", str(path))
    assert rc == 2 and "tiled MMA has" in capsys.readouterr().err


def test_draw_png_too_large_for_cairo_is_refused(tmp_path, capsys):
    rc, _ = run("draw", "(8,8):(8,1)", "--scale", "100", "-o", str(tmp_path / "x.png"))
    err = capsys.readouterr().err
    assert rc == 2 and "32767 pixels a side" in err and "Traceback" not in err


@pytest.mark.parametrize("argv,message", [
    (("draw", "mma", "SM80_16x8x16_F32F16F16F32_TN", "--highlight", "0,999"), "thread 999 is not in this TiledMMA"),
    (("draw", "copy", "SM75_U32x4_LDSM_N", "--dtype", "f16", "--highlight", "32"), "thread 32 is not in the atom"),
    (("draw", "(8,8):(8,1)", "--color", "bank"), "--color bank colours pictures"),
    (("draw", "(8,8):(8,1)", "-o", "x.svg", "--format", "png"), "-o x.svg says svg but --format says png"),
    (("draw", "(8,8):(8,1)", "-o", "/nonexistent/dir/x.svg"), "the folder /nonexistent/dir does not exist"),
])
def test_draw_options_that_would_be_ignored_or_misleading_are_refused(argv, message, capsys, tmp_path):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        rc, _ = run(*argv)
    finally:
        os.chdir(cwd)
    assert rc == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x.svg").exists() and not os.path.exists("/nonexistent/dir")


def test_eval_names_the_divide_called_and_the_parameters(capsys):
    rc, out = run("eval", "logical_divide((8,8):(1,8), (2,4))")       # the demo's call, as it prints it
    assert rc == 0 and out.strip() == "((2,4),(4,2)):((1,2),(8,32))"
    for expr, message in (
            ("logical_divide((8,8), (2,4))", "logical_divide: expected a layout, got the shape (8,8); a shape is "
                                             "not a layout: write the layout, e.g. (8,8):(1,8)"),
            ("zipped_divide(4:1, (2,3))", "zipped_divide: tiler (2,3) has more modes"),
            ("flat_divide((4,4), 2)", "flat_divide: expected a layout"),
            ("composition(4:1)", "eval: composition takes (lhs, rhs), got 1 argument"),
    ):
        rc, _ = run("eval", expr)
        err = capsys.readouterr().err
        assert rc == 2 and message in err, err
        assert "positional argument" not in err
    rc, out = run("eval", "print_layout((2,2):(1,2))")
    assert rc == 0 and not out.rstrip().endswith("_")


def test_the_demo_prints_calls_that_eval_accepts():
    import re

    src = open(os.path.join(ROOT, "layoutalg_cli", "demo.py")).read()
    for call in re.findall(r'say\(f"  ((?:logical_divide|composition|complement)\([^=]*?\))\s+=', src):
        rc, _ = run("eval", call)
        assert rc == 0, call
