"""The kernel cache folder: code that runs (imported modules, loaded cubins), so it is used only
when it is the user's own and writable; otherwise a private temporary folder, said once."""

import os
import stat
import subprocess
import sys
import textwrap

import pytest

from codegen import kernel as K

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(K, "_CACHE_DIRS", {})
    return monkeypatch


def _private_temp(d):
    st = os.stat(d)
    return os.path.isdir(d) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()


def test_a_folder_that_cannot_be_made_falls_back_to_a_private_temporary_one(fresh, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    fresh.setenv("LAYOUTALG_CACHE", str(blocker / "cache"))
    d = K.cache_dir()
    assert d != str(blocker / "cache") and _private_temp(d)
    assert K.cache_dir() == d                                  # decided once
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be made" in err and d in err


def test_an_unwritable_home_without_layoutalg_cache_falls_back(fresh, tmp_path, capsys):
    blocker = tmp_path / "home_is_a_file"
    blocker.write_text("")
    fresh.delenv("LAYOUTALG_CACHE", raising=False)
    fresh.setenv("HOME", str(blocker))
    d = K.cache_dir()
    assert _private_temp(d) and not d.startswith(str(blocker))
    assert "cannot be made" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_folder_others_may_write_to_is_not_loaded_from(fresh, tmp_path, capsys):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    fresh.setenv("LAYOUTALG_CACHE", str(shared))
    d = K.cache_dir()
    assert d != str(shared) and _private_temp(d)
    assert "may be written by other users (mode 777)" in capsys.readouterr().err
    # a module planted there is not what runs: the source is written to the private folder
    src = "x = 1\n"
    assert os.path.dirname(K._module_path(src)) == d


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_folder_falls_back(fresh, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    fresh.setenv("LAYOUTALG_CACHE", str(ro))
    assert K.cache_dir() != str(ro)
    assert "not writable" in capsys.readouterr().err


def test_a_good_folder_is_used_and_made_owner_only(fresh, tmp_path, capsys):
    d = tmp_path / "new" / "cache"
    fresh.setenv("LAYOUTALG_CACHE", str(d))
    assert K.cache_dir() == str(d) and _private_temp(str(d))
    assert capsys.readouterr().err == ""


def test_entries_are_written_atomically(tmp_path):
    path = tmp_path / "entry.bin"
    K._write(str(path), b"old")
    K._write(str(path), b"new")
    assert path.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["entry.bin"]                # no temporary file left


def test_compile_and_the_simulator_work_with_an_unwritable_cache(tmp_path):
    """compile_ptx, emit_gemm_source and a simulated gemm, with HOME a file and no LAYOUTALG_CACHE."""
    blocker = tmp_path / "home"
    blocker.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "LAYOUTALG_CACHE"}
    env.update(HOME=str(blocker), NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = textwrap.dedent("""
        import numpy as np
        import codegen
        from codegen import GemmConfig
        cfg = GemmConfig("f16", None, 32, 32, 32, 1, 1, 2, 1)
        assert "mma.sync" in codegen.compile_ptx(cfg, cc=(8, 0))
        assert "def " in codegen.emit_gemm_source(cfg)
        a = np.ones((32, 32), np.float16)
        assert (codegen.gemm(a, a, config=cfg) == 32).all()
        print("OK")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
    assert r.stderr.count("caching kernels in") == 1, r.stderr
