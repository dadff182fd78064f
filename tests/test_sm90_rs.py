"""Hopper intrinsics for attention: ``wgmma`` with A from registers (the RS form) and rank-4/5
TMA loads; their layouts, their PTX for sm_90a (no GPU) and their simulator twins.

The simulator tests run in a child process (``NUMBA_ENABLE_CUDASIM`` must be set before numba
is imported), as in tests/test_sm90.py.
"""

import doctest
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

SIM_ENV = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
needs_cuda_target = pytest.mark.skipif(SIM_ENV, reason="compile_ptx needs numba's CUDA target")


def _isa_a(t, v):
    """(m, k) of value ``v`` of thread ``t`` of the RS form's A fragment, as the PTX ISA draws it."""
    t0, t1, t2 = t % 4, (t // 4) % 8, t // 32
    v0, v1, v2 = v % 2, (v // 2) % 2, v // 4
    return t1 + 16 * t2 + 8 * v1, 2 * t0 + v0 + 8 * v2


def test_alayout_64x16_is_the_isa_fragment_and_a_bijection():
    from mma_atoms.mma_sm90 import alayout_64x16

    lay = alayout_64x16()
    seen = set()
    for t in range(128):
        for v in range(8):
            m, k = _isa_a(t, v)
            assert lay(t, v) == m + 64 * k, (t, v)
            seen.add(lay(t, v))
    assert seen == set(range(64 * 16))


@pytest.mark.parametrize("n", [64, 128, 256])
def test_accumulators_of_a_k_block_are_an_a_fragment(n):
    """The layout identity attention relies on: the accumulators of C's columns 16 kb .. 16 kb + 15
    are, in order, the RS form's A fragment of k-block kb (P = softmax(S) feeds P @ V)."""
    from mma_atoms.mma_sm90 import alayout_64x16, clayout_64xn

    clay, alay = clayout_64xn(n), alayout_64x16()
    for t in range(128):
        for kb in range(n // 16):
            for v in range(8):
                assert clay(t, 8 * kb + v) == alay(t, v) + 64 * 16 * kb, (t, kb, v)


@pytest.mark.parametrize("module", ["mma_atoms.mma_sm90", "codegen.atom_intrinsics"])
def test_doc_examples(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0, result


def test_names_are_in_every_backend():
    from codegen.atom_intrinsics import WGMMA_RS_SHAPES, wgmma_rs_name
    from codegen.intrinsics import names, sim_sm90

    want = {wgmma_rs_name(n, t) for n, t, _, _ in WGMMA_RS_SHAPES} | {"tma_load_4d", "tma_load_5d"}
    assert len(want) == 8 and want <= set(names.SM90_NAMES) and want <= set(sim_sm90.__all__)
    assert [(n, t) for n, t, _, _ in WGMMA_RS_SHAPES] == [(n, t) for n in (64, 128, 256) for t in ("f16", "bf16")]
    assert wgmma_rs_name(64, "f16") == "wgmma_rs_m64n64k16_f32_f16"


def test_simulated_rs_twin_and_tensor_maps_refuse_bad_arguments():
    from codegen.intrinsics import sim_sm90 as S

    acc = (np.float32(0),) * 32
    with pytest.raises(ValueError, match=r"tnsp_b must be one of \[0, 1\], got 2"):
        S.wgmma_rs_m64n64k16_f32_f16(acc, 0, 0, 0, 0, 0, 0, 2)
    ptr = S.register_global(np.zeros(64, np.float32))
    for dims in ((64,), (2,) * 6):
        with pytest.raises(ValueError, match=r"as many box sides as dims \(2 to 5\)"):
            S.encode_tensor_map(4, ptr, dims, (16,) * (len(dims) - 1), (4,) * len(dims), 0)
    with pytest.raises(ValueError, match="strides .* are not positive multiples of 16"):
        S.encode_tensor_map(2, ptr, (8, 2, 2, 2), (16, 40, 64), (8, 1, 1, 1), 0)


@needs_cuda_target
def test_ptx_of_rs_wgmma_and_4d_5d_loads_assembles_for_sm90a(tmp_path):
    pytest.importorskip("numba")
    import re

    from numba import cuda
    from numba.cuda import types as nt

    from codegen.intrinsics import (acc_fence, acc_to_array, f32x_zero, smem_addr, tma_load_4d, tma_load_5d,
                                    wgmma_commit, wgmma_fence, wgmma_rs_m64n64k16_f32_bf16,
                                    wgmma_rs_m64n128k16_f32_f16, wgmma_wait)

    def k(aregs, out, desc, tmap, c):
        buf = cuda.shared.array(4096, nt.uint8)
        bar = cuda.shared.array(1, nt.uint64)
        t = cuda.threadIdx.x
        tma_load_4d(smem_addr(buf, 0), tmap, c, c + 1, c + 2, c + 3, smem_addr(bar, 0))
        tma_load_5d(smem_addr(buf, 0), tmap, c, c + 1, c + 2, c + 3, c + 4, smem_addr(bar, 0))
        a0, a1, a2, a3 = aregs[t, 0], aregs[t, 1], aregs[t, 2], aregs[t, 3]
        acc = acc_fence(f32x_zero(32))
        wide = acc_fence(f32x_zero(64))
        wgmma_fence()
        acc = wgmma_rs_m64n64k16_f32_bf16(acc, a0, a1, a2, a3, desc, c, 1)
        acc = wgmma_rs_m64n64k16_f32_bf16(acc, a0, a1, a2, a3, desc + 2, 1, 0)
        wide = wgmma_rs_m64n128k16_f32_f16(wide, a0, a1, a2, a3, desc + 4, 0, 1)
        wgmma_commit()
        wgmma_wait(0)
        acc, wide = acc_fence(acc), acc_fence(wide)
        loc = cuda.local.array(64, nt.float32)
        acc_to_array(acc, loc)
        for i in range(32):
            out[t, i] = loc[i]
        acc_to_array(wide, loc)
        for i in range(64):
            out[t, 32 + i] = loc[i]

    ptx, _ = cuda.compile_ptx(k, (nt.uint32[:, ::1], nt.float32[:, ::1], nt.int64, nt.int64, nt.int32),
                              cc=(9, 0, "a"))
    assert ".target sm_90a" in ptx
    rs = re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\S+) \{[^}]*\}, (\{[^}]*\}), %rd\d+, p, 1, 1, (\d);", ptx)
    assert [(s, tb) for s, _, tb in rs] == [("m64n64k16.f32.bf16.bf16", "1"), ("m64n64k16.f32.bf16.bf16", "0"),
                                            ("m64n128k16.f32.f16.f16", "1")], rs
    assert all(re.fullmatch(r"\{%r\d+, %r\d+, %r\d+, %r\d+\}", regs) for _, regs, _ in rs)
    for r in (4, 5):
        coords = ", ".join([r"%r\d+"] * r)
        assert re.search(rf"cp\.async\.bulk\.tensor\.{r}d\.shared::cluster\.global\.mbarrier::complete_tx::bytes "
                         rf"\[%r\d+\], \[%rd\d+, \{{{coords}\}}\], \[%r\d+\];", ptx), r
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not on PATH")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    out = subprocess.run([ptxas, "-v", "-arch=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@needs_cuda_target
def test_rs_wgmma_wants_a_constant_transpose():
    from numba import cuda
    from numba.cuda import types as nt

    from codegen.intrinsics import f32x_zero, wgmma_rs_m64n64k16_f32_f16

    def bad(x, tb):
        wgmma_rs_m64n64k16_f32_f16(f32x_zero(32), x, x, x, x, 0, 1, tb)

    with pytest.raises(Exception, match="tnsp_b must be a compile-time integer constant"):
        cuda.compile_ptx(bad, (nt.uint32, nt.int32), cc=(9, 0, "a"))


def _simulate(prog, tmp_path, timeout=900):
    """Run ``prog`` in a child process with numba's simulator on; its completed process."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", LAYOUTALG_CACHE=str(tmp_path),
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=timeout)


SIM_RS = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np
from numba import cuda, float32, uint16
import codegen.intrinsics as I
from codegen.cute.wgmma import gmma_stage
from mma_atoms.gmma_smem import gmma_desc
from mma_atoms.mma_sm90 import clayout_64xn
from mma_atoms.numerics import encode
assert I.SIMULATED
rng = np.random.default_rng(7)


def isa_a(t, v):            # the PTX ISA's A fragment of the RS form, (m, k) of (thread, value)
    t0, t1, t2 = t % 4, (t // 4) % 8, t // 32
    v0, v1, v2 = v % 2, (v // 2) % 2, v // 4
    return t1 + 16 * t2 + 8 * v1, 2 * t0 + v0 + 8 * v2


def a_registers(bits):      # (64, 16) 16-bit patterns -> (128, 4) uint32, value 2j in a_j's low half
    regs = np.zeros((128, 4), np.uint32)
    for t in range(128):
        for j in range(4):
            lo, hi = bits[isa_a(t, 2 * j)], bits[isa_a(t, 2 * j + 1)]
            regs[t, j] = int(lo) | int(hi) << 16
    return regs


def run(t, n, major):
    bk = 64 if major == "K" else 16                 # K-major: the 128-byte swizzle, k-block 1 of 4
    kb = 1 if major == "K" else 0
    stage = gmma_stage(t, major, n, bk)
    desc = gmma_desc(stage, (n, 16), major, t)
    start = stage.inner(0, 16 * kb) * 2
    B = rng.integers(-8, 9, (n, bk)) / 4
    img = np.zeros(n * bk, np.uint16)
    bbits = encode(B, t)
    for r in range(n):
        for k in range(bk):
            img[stage(r, k)] = bbits[r, k]
    As = [rng.integers(-8, 9, (64, 16)) / 8 for _ in range(2)]          # one A a warpgroup
    aregs = np.concatenate([a_registers(encode(A, t)) for A in As]).astype(np.uint32)
    op = getattr(I, f"wgmma_rs_m64n{n}k16_f32_{t}")
    nacc, words, tnsp, d0 = n // 2, n * bk, int(major == "MN"), desc.bits(0)

    @cuda.jit
    def kernel(aregs, img, out):
        sh = cuda.shared.array(words, uint16)
        t = cuda.threadIdx.x
        for i in range(t, words, 256):
            sh[i] = img[i]
        cuda.syncthreads()
        d = d0 + ((I.smem_addr(sh, 0) + start) >> 4)
        loc = cuda.local.array(nacc, float32)
        for i in range(nacc):
            loc[i] = 7.0
        acc = I.acc_from_array(loc, nacc)
        a0, a1, a2, a3 = aregs[t, 0], aregs[t, 1], aregs[t, 2], aregs[t, 3]
        acc = op(acc, a0, a1, a2, a3, d, 0, tnsp)              # D = A B^T: the 7s ignored
        I.acc_to_array(acc, loc)
        for i in range(nacc):
            out[0, t, i] = loc[i]
        acc = op(acc, a0, a1, a2, a3, d, 1, tnsp)              # D += A B^T
        I.acc_to_array(acc, loc)
        for i in range(nacc):
            out[1, t, i] = loc[i]

    out = np.zeros((2, 256, nacc), np.float32)
    kernel[1, 256](aregs, img, out)
    clay = clayout_64xn(n)
    Bk = B[:, 16 * kb:16 * kb + 16]
    for w, A in enumerate(As):
        ref = A @ Bk.T
        got = np.zeros((2, 64, n))
        for th in range(128):
            for v in range(nacc):
                idx = clay(th, v)
                got[:, idx % 64, idx // 64] = out[:, 128 * w + th, v]
        assert np.allclose(got[0], ref, rtol=1e-6, atol=0) and np.allclose(got[1], 2 * ref, rtol=1e-6, atol=0), \\
            (t, n, major, w, np.abs(got[0] - ref).max(), np.abs(got[1] - 2 * ref).max())
        assert np.abs(ref).max() > 0
    print(t, n, major, "ok")


for t in ("f16", "bf16"):
    for n in (64, 128):
        for major in ("K", "MN"):
            run(t, n, major)
run("f16", 256, "MN")
run("bf16", 256, "K")
print("SIM RS OK")
"""


def test_rs_wgmma_twin_computes_a_times_b_of_two_warpgroups(tmp_path):
    """The RS twin of two warpgroups at once (each its own A, exchanged per warpgroup): f16 and
    bf16, B K-major (the 128-byte swizzle, a k-block past the stage's start) and MN-major, N 64,
    128 and 256; scale_d 0 ignores the accumulators, 1 adds to them."""
    pytest.importorskip("numba")
    r = _simulate(SIM_RS, tmp_path)
    assert "SIM RS OK" in r.stdout, r.stdout + r.stderr[-3000:]


SIM_TMA = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np
from numba import cuda, uint8, uint64
import codegen.intrinsics as I
from codegen.intrinsics.sim import register_global
from codegen.intrinsics.sim_sm90 import encode_tensor_map
assert I.SIMULATED
rng = np.random.default_rng(3)


def expected(arr, coords, box):
    # the box (innermost first) at coords of arr (numpy order: outermost first), zeros outside
    ref = np.zeros(box[::-1], arr.dtype)
    src, dst = [], []
    for c, b, d in zip(coords[::-1], box[::-1], arr.shape):
        lo, hi = max(c, 0), min(c + b, d)
        if hi <= lo:
            return ref
        src.append(slice(lo, hi))
        dst.append(slice(lo - c, hi - c))
    ref[tuple(dst)] = arr[tuple(src)]
    return ref


def unswizzle(phys, sw):
    # the hardware's swizzle: 16-byte chunk c of 128-byte line r lands at chunk c ^ (r % 8) (128 B)
    if not sw:
        return phys
    bits = {32: 1, 64: 2, 128: 3}[sw]
    off = np.arange(phys.size)
    return phys[off ^ (((off >> 7) & ((1 << bits) - 1)) << 4)]


def run(big, dims, box, sw, cases):
    eb = big.itemsize
    strides = tuple(int(s) for s in big.strides[::-1][1:])
    assert strides[0] == big.shape[-1] * eb
    register_global(big)
    tmap = encode_tensor_map(eb, big.__array_interface__["data"][0], dims, strides, box, sw)
    taddr = int(tmap.__array_interface__["data"][0])
    nbytes = int(np.prod(box)) * eb
    view = big[(slice(None),) * (big.ndim - 1) + (slice(0, dims[0]),)]       # the tensor the map describes
    rank = len(dims)

    @cuda.jit
    def kernel(coords, out):
        buf = cuda.shared.array(nbytes, uint8)
        bar = cuda.shared.array(1, uint64)
        dst, b = I.smem_addr(buf, 0), I.smem_addr(bar, 0)
        I.mbarrier_init(b, 1)
        I.fence_mbarrier_init()
        I.mbarrier_arrive_expect_tx(b, nbytes)
        if rank == 4:
            I.tma_load_4d(dst, taddr, coords[0], coords[1], coords[2], coords[3], b)
        else:
            I.tma_load_5d(dst, taddr, coords[0], coords[1], coords[2], coords[3], coords[4], b)
        while I.mbarrier_try_wait(b, 0) == 0:
            pass
        for i in range(nbytes):
            out[i] = buf[i]

    for coords in cases:
        out = np.zeros(nbytes, np.uint8)
        kernel[1, 1](np.array(coords, np.int32), out)
        got = unswizzle(out, sw).view(big.dtype).reshape(box[::-1])
        ref = expected(view, coords, box)
        assert np.array_equal(got, ref), (dims, box, coords)
        print(rank, coords, "ok", int(np.count_nonzero(ref)))


# rank 4: f16 (3, 5, 40, 80) with the innermost extent 72 of 80 (a padded row stride), 128-byte rows
# swizzled; the box partly outside in every dimension, inside, and wholly outside
big = rng.integers(1, 100, (3, 5, 40, 80)).astype(np.float16)
run(big, (72, 40, 5, 3), (64, 8, 2, 2), 128, [(40, 36, 4, -1), (0, 0, 0, 0), (8, 30, 1, 1), (-16, -3, 3, 2),
                                              (0, 0, 5, 0)])
# rank 5: f32 (2, 3, 4, 6, 12) of extent 10 innermost, unswizzled 32-byte box rows
big = rng.integers(1, 100, (2, 3, 4, 6, 12)).astype(np.float32)
run(big, (10, 6, 4, 3, 2), (8, 4, 2, 2, 2), 0, [(4, 3, 3, 2, 1), (0, 0, 0, 0, 0), (-2, 5, -1, 1, 0)])
print("SIM TMA OK")
"""


def test_4d_and_5d_tma_loads_in_the_simulator_match_numpy_slices(tmp_path):
    """A box of a strided rank-4 f16 tensor (128-byte swizzle decoded as the hardware swizzles)
    and of a rank-5 f32 tensor, partly outside in each dimension (zero-filled), against numpy."""
    pytest.importorskip("numba")
    r = _simulate(SIM_TMA, tmp_path)
    assert "SIM TMA OK" in r.stdout, r.stdout + r.stderr[-3000:]
