"""An 8-bit float C (``gemm(..., out_dtype="e4m3", scale_out=, amax=)``) without a GPU: the
conversion atoms' simulator twins against torch's casts, the Hopper kernel in numba's
simulator against numpy (bit for bit, with the amax), the kernel's offline sm_90a PTX, and the
refusals. ``tests/gpu/check_torch.py`` runs it on a GPU.
"""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import codegen
from codegen import GemmConfig, GemmError
from codegen.sm90.emit import emit_wgmma_source
from codegen.sm90.plan import make_wgmma_plan

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX = {"e4m3": 448.0, "e5m2": 57344.0}
TORCH = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def fp8_bits(x, kind):
    """torch's rounding of float32 ``x`` to ``kind``, saturated as ``.satfinite`` (torch's cast
    makes NaN of what lies past the largest value)."""
    x = np.asarray(x, np.float32)
    sat = np.where(np.isnan(x), x, np.clip(x, -MAX[kind], MAX[kind]))
    return torch.from_numpy(sat).to(TORCH[kind]).view(torch.uint8).numpy()


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_the_conversion_twins_round_as_torch_and_saturate(kind):
    from codegen.intrinsics import sim as S

    rng = np.random.default_rng(3)
    xs = np.concatenate([rng.standard_normal(3000).astype(np.float32) * s for s in (1e-3, 0.3, 20, 3000)]
                        + [np.float32([0.0, -0.0, 448, 449, 464, 480, -1e30, np.inf, -np.inf, 57344, 61440, 2 ** -9,
                                       2 ** -10, 3 * 2 ** -10, 2 ** -17, 1.5 * 2 ** -16])])
    cvt = getattr(S, f"cvt_{kind}x2_f32")
    got = np.array([cvt(x, -x) for x in xs])
    assert np.array_equal(got & 0xFF, fp8_bits(xs, kind))
    assert np.array_equal(got >> 8, fp8_bits(-xs, kind))
    nan = cvt(np.float32("nan"), 0.0) & 0x7F
    assert nan == 0x7F                     # a NaN stays a NaN (e4m3: S.1111.111; e5m2: a quiet NaN)


SCRIPT = r"""
import sys
sys.setswitchinterval(1e-4)
import numpy as np, torch, codegen
rng = np.random.default_rng(9)
MAX = {"e4m3": 448.0, "e5m2": 57344.0}
T = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
def bits(x, kind):
    return torch.from_numpy(np.clip(x.astype(np.float32), -MAX[kind], MAX[kind])).to(T[kind]).view(torch.uint8).numpy()
# f16 in, e4m3 out, a number scale, rows past a tile
M, N, K = 70, 96, 64
A = rng.standard_normal((M, K)).astype(np.float16); B = rng.standard_normal((K, N)).astype(np.float16)
amax = np.full(1, 123.0, np.float32)
C = codegen.gemm(A, B, out_dtype="e4m3", scale_out=0.5, amax=amax)
val = A.astype(np.float32) @ B.astype(np.float32)
assert C.dtype == np.uint8 and C.shape == (M, N)
assert np.array_equal(C, bits(val * 0.5, "e4m3")), "f16 -> e4m3"
assert amax[0] == np.float32(np.abs(val).max()), ("amax", amax[0], np.abs(val).max())
# e4m3 in (bits, K-major B), an odd N (element stores), e5m2 out into a given C, alpha, saturation
M, N, K = 64, 131, 128
a8 = torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32)).to(T["e4m3"])
b8 = torch.from_numpy(rng.standard_normal((N, K)).astype(np.float32)).to(T["e4m3"])
A, B = a8.view(torch.uint8).numpy(), a8.new_empty(0)
B = b8.view(torch.uint8).numpy().T
C = np.full((M, N), 7, np.uint8)
amax = np.zeros(1, np.float32)
codegen.gemm(A, B, C, precision="e4m3", alpha=2.0, out_dtype="e5m2", scale_out=3000.0, amax=amax)
val = 2.0 * (a8.float().numpy() @ b8.float().numpy().T)
assert np.array_equal(C, bits(val * 3000.0, "e5m2")), "e4m3 -> e5m2"
assert (C & 0x7F == 0x7B).any(), "some values saturate"
assert amax[0] == np.float32(np.abs(val).max())
# several tiles a CTA: the 8-bit C staged in shared memory and stored by TMA during the next
# tile's MMAs; rows past the last tile; bf16 inputs
import ml_dtypes
M, N, K = 200, 256, 128
A = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16); B = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
amax = np.zeros(1, np.float32)
cfg = codegen.GemmConfig.default("bf16", M, N, K, "e4m3", arch=(9, 0)).with_(bm=64, bn=128)
launch = codegen.prepare(A, B, out_dtype="e4m3", scale_out=2.0, amax=amax, config=cfg)
assert launch.kernel.key.epilogue == "tma", launch.kernel.key
C = launch()
val = A.astype(np.float32) @ B.astype(np.float32)
assert np.array_equal(C, bits(val * 2.0, "e4m3")), "bf16 -> e4m3 by TMA"
assert amax[0] == np.float32(np.abs(val).max())
print("ok")
"""


def test_simulator_writes_fp8_c_and_amax_exactly():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-4000:]


def hopper(dtype="bf16", out="e4m3", **kw):
    return GemmConfig.default(dtype, 4096, 4096, 4096, out, arch=(9, 0)).with_(**kw)


def test_the_kernel_takes_the_amax_after_the_fused_operation_and_before_the_store():
    src = emit_wgmma_source(make_wgmma_plan(hopper(activation="gelu", bias="bf16")), "registers")
    op, scale, store = (src.index(s) for s in ("OP.apply(p, accs, work, c, alpha)",
                                               "amax = SCALE_OUT.apply(p, accs, work, c, 1.0, amax)",
                                               "EPILOGUE.store_tile(p, acc, accs, work, c, nbox, 1.0)"))
    assert op < scale < store
    staged = emit_wgmma_source(make_wgmma_plan(hopper()), "tma")
    assert re.search(r"TmaStore\(map_dtype='e4m3', elem_bytes=1, box=\(128, 64\)", staged)
    assert staged.index("SCALE_OUT.apply(p, accs, work, c, alpha, amax)") < staged.index("EPILOGUE.pack(accs, 1.0, packed)")
    plain = emit_wgmma_source(make_wgmma_plan(hopper()), "elements")
    assert "amax = SCALE_OUT.apply(p, accs, work, c, alpha, amax)" in plain and "paired=False" in plain
    assert plain.index("SCALE_OUT.publish(p, amax)") > plain.index("for unit in SCHEDULER.units(sched)")
    assert "SCALE_OUT" not in emit_wgmma_source(make_wgmma_plan(hopper(out="bf16")), "registers")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_the_fp8_output_kernel_compiles_for_sm90a(tmp_path):
    from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx

    cfg = GemmConfig("e4m3", "e4m3", 128, 128, 128, 2, 4, 4, 8, 1, "wgmma")
    ptx = compile_wgmma_ptx(WgmmaKey(cfg, epilogue="registers"))
    assert re.search(r"cvt\.rn\.satfinite\.e4m3x2\.f32", ptx) and "red.global.max.u32" in ptx
    assert re.search(r"shfl\.sync\.bfly", ptx)
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    r = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(path), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "0 bytes spill stores" in r.stderr


def test_refusals_name_the_argument():
    A = np.zeros((64, 64), np.float16)
    B = np.zeros((64, 64), np.float16)
    with pytest.raises(GemmError, match=r"scale_out and amax are for an 8-bit float C.*got the default C \(out_dtype None\)"):
        codegen.prepare(A, B, scale_out=2.0)
    with pytest.raises(GemmError, match="scale_out and amax are for an 8-bit float C.*got an f32 C"):
        codegen.prepare(A, B, out_dtype="f32", amax=np.zeros(1, np.float32))
    with pytest.raises(GemmError, match="amax must be a 1-element float32 array"):
        codegen.prepare(A, B, out_dtype="e4m3", amax=np.zeros(1, np.float64))
    with pytest.raises(GemmError, match="amax must be a 1-element float32 array"):
        codegen.prepare(A, B, out_dtype="e4m3", amax=np.zeros(2, np.float32))
    with pytest.raises(GemmError, match="a numpy amax is written in numba's simulator only"):
        codegen.prepare(A, B, out_dtype="e4m3", amax=np.zeros(1, np.float32))      # (this process: no simulator)
    with pytest.raises(GemmError, match="an e4m3 C is written, not read: beta must be 0, got 0.5"):
        codegen.prepare(A, B, np.zeros((64, 64), np.uint8), beta=0.5, out_dtype="e4m3")
    with pytest.raises(GemmError, match="C is uint8: an 8-bit float C holds its bits in uint8 with out_dtype"):
        codegen.prepare(A, B, np.zeros((64, 64), np.uint8))
    with pytest.raises(GemmError, match="an e5m2 C is written by the Hopper kernel, which takes f16, bf16, tf32"):
        codegen.prepare(A.astype(np.float64), B.astype(np.float64), out_dtype="e5m2")
    with pytest.raises(ValueError, match="an e4m3 C is written by the wgmma path's epilogue only"):
        GemmConfig("f16", "e4m3", 128, 128, 64, 2, 4, 3, 8)
