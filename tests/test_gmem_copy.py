"""Operands TMA cannot read, copied by the Hopper kernel's producer warpgroup
(:mod:`codegen.cute.gmem_copy`): the copy's chunks against the stage layout, the host's
choice of what to copy, the kernel in the simulator, its PTX."""

import os
import shutil
import subprocess

import numpy as np
import pytest
from test_sm90 import _simulate

from codegen import GemmConfig
from codegen.cute import copy_ok, gmma_stage, make_gmem_copy


@pytest.mark.parametrize("dtype,major,rows,bk", [
    ("f16", "MN", 64, 64), ("f16", "MN", 128, 64), ("bf16", "MN", 256, 64), ("f16", "K", 64, 64),
    ("bf16", "K", 128, 64), ("f16", "K", 256, 64), ("tf32", "K", 128, 32), ("f16", "K", 128, 128)])
def test_every_chunk_goes_where_the_stage_layout_puts_it_once(dtype, major, rows, bk):
    """Each thread's run of 16-byte chunks: 16 contiguous bytes of the stage layout, every
    element of the stage covered exactly once, a run's chunks consecutive along one line."""
    stage = gmma_stage(dtype, major, rows, bk)
    cp = make_gmem_copy("B", dtype, major, stage)
    assert cp.passes * 128 * cp.run == cp.line_chunks * cp.lines
    seen = np.zeros(rows * bk, dtype=int)
    for ps in range(cp.passes):
        for t in range(128):
            line0 = None
            for i in range(cp.run):
                r, k = cp.chunk_coords(ps, t, i)
                line = r if major == "K" else k
                line0 = line if line0 is None else line0
                assert line == line0                      # one line a run
                elems = [stage(r, k + e) if major == "K" else stage(r + e, k) for e in range(cp.chunk)]
                off = cp.smem(r, k)
                assert elems == list(range(off, off + cp.chunk)) and off % cp.chunk == 0
                seen[off:off + cp.chunk] += 1
    assert (seen == 1).all()


def test_copy_ok_takes_aligned_elements_with_a_unit_stride():
    assert copy_ok("MN", (1531, 4096), (1, 1531), 2 * 12345, 2)          # row-major B, odd N
    assert copy_ok("K", (70, 71), (71, 1), 1026, 2)                       # odd K, address off 16 bytes
    assert not copy_ok("K", (70, 71), (71, 1), 1025, 2)                   # not aligned to an element
    assert not copy_ok("K", (70, 71), (71, 2), 1024, 2)                   # no unit stride
    assert not copy_ok("K", (70, 64), (64, 1), 1024, 1)                   # 8-bit elements
    assert not copy_ok("MN", (70, 64), (1, 0), 1024, 2)                   # a broadcast row


def test_descriptor_words_name_the_operand():
    cp = make_gmem_copy("B", "f16", "MN", gmma_stage("f16", "MN", 128, 64))
    words = np.frombuffer(cp.tensor_map(4096, (1531, 768), (1, 1531), batch=(3, 2_000_000)), dtype=np.int64)
    assert list(words[:5]) == [4096, 1531, 2_000_000, 1531, 768] and not words[5:].any()
    ka = make_gmem_copy("A", "bf16", "K", gmma_stage("bf16", "K", 128, 64))
    words = np.frombuffer(ka.tensor_map(8192, (100, 71), (71, 1)), dtype=np.int64)
    assert list(words[:5]) == [8192, 71, 0, 71, 100]


def test_plan_copies_what_it_is_told_and_refuses_wide_tiles():
    from codegen.sm90 import make_wgmma_plan

    cfg = GemmConfig("f16", "f16", 128, 128, 64, 2, 4, 6, 8, 1, "wgmma")
    plan = make_wgmma_plan(cfg, "K", "MN", "B")
    assert not plan.a.copied and plan.b.copied
    pipe = plan.device.pipeline
    assert pipe.copiers == 128 and pipe.tx_bytes == plan.a.stage_bytes      # TMA brings A only
    assert make_wgmma_plan(cfg, "K", "K", "").device.pipeline.copiers == 0
    with pytest.raises(ValueError, match="at most 128 columns"):
        make_wgmma_plan(cfg.with_(bn=256, stages=4), "K", "MN", "B")


def test_emitted_kernel_has_every_producer_thread_copy():
    from codegen.sm90 import emit_source

    cfg = GemmConfig("f16", "f16", 128, 128, 64, 2, 4, 6, 8, 1, "wgmma")
    src = emit_source(cfg, "K", "MN", "elements", copy="B")
    assert "MAINLOOP.load_unit(p, state, work)" in src and "every thread copies B" in src
    assert "setmaxnreg" not in src.split("def gemm_sm90_kernel")[1]
    assert "GmemStageCopy(" in src and "B copied by the producer warpgroup" in src
    plain = emit_source(cfg, "K", "MN", "elements")
    assert "setmaxnreg_dec(" in plain and "load_unit" not in plain


SIM_COPY = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import GemmConfig, GemmError
rng = np.random.default_rng(5)
cfg = GemmConfig("f16", "f32", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma")
# B row-major with 45 columns (90-byte rows): B copied, two k-tiles (the second fetched ahead)
# and a last one of 8; A read by TMA. Then A of 71 columns and B column-major: both copied.
for M, N, K, lb, copy in ((40, 45, 72, "N", "B"), (33, 24, 71, "T", "AB")):
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, N)).astype(np.float16)
    if lb == "T":
        B = np.asfortranarray(B)
    C0 = rng.integers(-3, 4, (M, N)).astype(np.float32)
    C = C0.copy()
    launch = codegen.prepare(A, B, C, beta=0.5, config=cfg)
    assert launch._launcher.compiled.key.copy == copy, launch._launcher.compiled.key
    launch()
    launch._launcher.check()
    err = float(np.abs(C - (A.astype(np.float64) @ B.astype(np.float64) + 0.5 * C0)).max())
    print(M, N, K, copy, err)
    assert err == 0.0
try:
    codegen.prepare(A, B, C, config=cfg.with_(bn=256))
    raise SystemExit("a 256-column tile that copies an operand was not refused")
except GemmError as e:
    assert "copies A and B" in str(e) and "128 columns" in str(e), e
print("SIM COPY OK")
"""


def test_copied_operands_run_in_the_simulator_exactly(tmp_path):
    """An odd N (B copied) and an odd K (A and B copied): exact small integers."""
    pytest.importorskip("numba")
    r = _simulate(SIM_COPY, tmp_path)
    assert "SIM COPY OK" in r.stdout, r.stdout + r.stderr[-3000:]


def test_ptx_of_a_copying_kernel_keeps_its_registers(tmp_path):
    """The copy's words stay in registers (no local memory), and ptxas spills nothing."""
    pytest.importorskip("numba")
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("no ptxas")
    from codegen.sm90 import compile_ptx

    cfg = GemmConfig("f16", "f16", 128, 128, 64, 2, 4, 6, 8, 1, "wgmma")
    ptx = compile_ptx(cfg, "K", "MN", "elements", copy="B")
    assert "ld.global.nc.v4.b32" in ptx and ".local" not in ptx
    p = os.path.join(tmp_path, "k.ptx")
    with open(p, "w") as f:
        f.write(ptx)
    out = subprocess.run([ptxas, "-v", "-arch=sm_90a", p, "-o", os.path.join(tmp_path, "k.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "0 bytes spill stores" in out.stdout + out.stderr
