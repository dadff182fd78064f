"""Environments outside the happy path: numpy 2.5 (no numpy.row_stack, which numba-cuda 0.30
still names), and the examples run without a GPU and without the simulator switch."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _env(**kw):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env.update(kw)
    return env


def test_codegen_works_where_numpy_has_no_row_stack():
    """numpy 2.5 removed numpy.row_stack; numba-cuda 0.30's import of numba.cuda names it.
    Importing codegen first puts numpy's alias back, and kernels compile."""
    code = textwrap.dedent("""
        import numpy as np
        if hasattr(np, "row_stack"):
            del np.row_stack                      # as numpy 2.5 has it
        import codegen
        from numba import cuda
        assert np.row_stack is np.vstack
        from codegen import GemmConfig
        assert "mma.sync" in codegen.compile_ptx(GemmConfig("f16", None, 32, 32, 32, 1, 1, 2, 1), cc=(8, 0))
        print("OK")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr


def _gpu():
    code = "from numba import cuda; print(cuda.is_available())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    return r.stdout.strip() == "True"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_without_a_gpu_says_so_in_one_line(path):
    if _gpu():
        pytest.skip("a GPU is present: the example runs")
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=_env(), timeout=300,
                       cwd=ROOT)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
    assert f"examples/{path.name}: no usable CUDA GPU" in r.stderr and "NUMBA_ENABLE_CUDASIM=1" in r.stderr
