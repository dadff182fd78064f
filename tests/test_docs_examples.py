"""Every code block of the documentation runs, and shows what the project prints.

The rules (languages, ``<!-- docs-test: ... -->`` markers) are in ``tests/docs_blocks.py``
and on the docs page ``docs_tests.md``. One test per page runs its CPU blocks in order;
each GPU block marked ``cudasim`` runs in its own process in numba's simulator.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import subprocess
import sys

import pytest

from docs_blocks import OUTPUT_LANGS, ROOT, Block, blocks, commands, pages

ALL = {page: blocks(page) for page in pages()}
SIM = [b for bs in ALL.values() for b in bs if b.mark == "cudasim"]
GPU = [b for bs in ALL.values() for b in bs if b.mark == "gpu"]


def _gpu_present() -> bool:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:
        return False


def _run_python(block: Block, ns: dict) -> None:
    if ">>>" in block.text:
        parser = doctest.DocTestParser()
        test = parser.get_doctest(block.text, ns, block.where, block.page, block.line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        out = io.StringIO()
        runner.run(test, out=out.write, clear_globs=False)
        ns.update(test.globs)                         # DocTest works on a copy of the namespace
        if runner.failures:
            pytest.fail(f"{block.where}: doctest failed:\n{out.getvalue()}", pytrace=False)
        return
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block.text, block.where, "exec"), ns)
    except Exception as e:
        pytest.fail(f"{block.where}: the example raised {type(e).__name__}: {e}", pytrace=False)


def _run_console(block: Block) -> None:
    from layoutalg_cli import main

    for cmd in commands(block):
        if not cmd.argv or cmd.argv[0] != "layoutalg":
            pytest.fail(f"{block.where}: console commands run `layoutalg ...`; mark others with "
                        f"<!-- docs-test: skip (REASON) -->: {' '.join(cmd.argv)}", pytrace=False)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                rc = main(list(cmd.argv[1:]), out=out)
            except SystemExit as e:                   # argparse's --help and --version
                rc = e.code or 0
        if rc != 0:
            pytest.fail(f"{block.where}: `{' '.join(cmd.argv)}` exited {rc}: {err.getvalue()}", pytrace=False)
        if cmd.expected:
            got = [line.rstrip() for line in out.getvalue().rstrip("\n").splitlines()]
            want = list(cmd.expected)
            while want and not want[-1]:
                want.pop()
            assert got == want, f"{block.where}: `{' '.join(cmd.argv)}` printed\n" + "\n".join(got)


def _run_excerpt(block: Block, ns: dict) -> None:
    import importlib

    env = dict(ns)
    for mod in ("codegen", "codegen.sm90", "layoutalg", "mma_atoms"):
        env.setdefault(mod.split(".")[0], importlib.import_module(mod))
    text = eval(block.arg, env)  # noqa: S307 -- the docs' own expression
    have = {line.strip() for line in text.splitlines()}
    missing = [line for line in block.text.splitlines() if line.strip() and line.strip() not in have]
    assert not missing, f"{block.where}: lines not in {block.arg}: {missing}"


@pytest.mark.parametrize("page", sorted(ALL))
def test_page_examples(page, tmp_path, monkeypatch):
    """The CPU blocks of ``page`` run in order in one namespace, in a fresh folder."""
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "__docs__"}
    for block in ALL[page]:
        if block.mark in ("skip", "cudasim", "gpu"):
            continue
        if block.mark == "excerpt":
            _run_excerpt(block, ns)
        elif block.lang == "python":
            _run_python(block, ns)
        elif block.lang == "console":
            _run_console(block)
        elif block.lang not in OUTPUT_LANGS:
            pytest.fail(f"{block.where}: a {block.lang!r} block is neither run nor output; mark it "
                        f"<!-- docs-test: skip (REASON) --> or use python/console", pytrace=False)


def _run_in_process(block: Block, tmp_path, sim: bool) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    r = subprocess.run([sys.executable, "-c", block.text], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, f"{block.where}: exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"


@pytest.mark.parametrize("block", SIM, ids=[b.where for b in SIM])
def test_simulator_examples(block, tmp_path):
    """GPU examples marked ``cudasim`` run in numba's CUDA simulator, each in a new process."""
    pytest.importorskip("numba")
    _run_in_process(block, tmp_path, sim=True)


@pytest.mark.gpu
@pytest.mark.parametrize("block", GPU, ids=[b.where for b in GPU])
def test_gpu_examples(block, tmp_path):
    """GPU examples marked ``gpu`` run on the GPU, where there is one."""
    if not _gpu_present():
        pytest.skip("no CUDA GPU")
    _run_in_process(block, tmp_path, sim=False)


def test_every_block_is_accounted_for():
    """No block is silently untested: each is run, output, or skipped with a reason."""
    for page, bs in ALL.items():
        for b in bs:
            assert b.lang in ("python", "console") + OUTPUT_LANGS or b.mark == "skip", (
                f"{b.where}: a {b.lang!r} block must be marked <!-- docs-test: skip (REASON) -->")
            if b.mark in ("cudasim", "gpu"):
                assert b.lang == "python", f"{b.where}: {b.mark} blocks are python"
