"""Tests of the atom backends in ``codegen`` (codegen.intrinsics: ptx, sim and the picker).

* PTX text: small kernels using every intrinsic are compiled with
  ``numba.cuda.compile_ptx`` for cc 8.0 and 9.0 (no GPU needed) and the
  instruction text is checked; ``ptxas -v`` on a small multi-stage main loop
  checks that fragments stay in registers (skipped without ptxas).
* Simulator: the simulator has to be selected before numba.cuda is imported,
  so those tests run scripts in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``:
  ``tests/gpu/check_atoms.py --sim`` (the same kernels as the GPU check:
  ldmatrix + mma with one and two warps, cp.async with zero-fill and a missing
  wait, conversions) and a script of error cases.
* The pure helpers of ``codegen.intrinsics.sim`` and its fragment tables are tested here
  directly; they need no kernel.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHECK_SCRIPT = ROOT / "tests" / "gpu" / "check_atoms.py"
SIM_ENV = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")

import codegen.intrinsics.sim as S  # noqa: E402  (importable in either mode)

needs_cuda_target = pytest.mark.skipif(
    SIM_ENV, reason="compile_ptx needs numba's CUDA target, but the simulator is enabled"
)

if not SIM_ENV:
    from numba import cuda
    from numba.cuda import types as nt

    import codegen.intrinsics.ptx as P
    from codegen.intrinsics.ptx import *  # noqa: F401,F403  (every name of codegen/intrinsics/names.py)

U8 = np.dtype(np.uint8)
CCS = [(8, 0), (9, 0)]


# ---------------------------------------------------------------------------
# interface parity
# ---------------------------------------------------------------------------


@needs_cuda_target
def test_backends_export_same_names_and_signatures():
    assert S.__all__ == P.__all__
    for name in P.__all__:
        intr = getattr(P, name)
        sim = getattr(S, name)
        ptx_params = list(inspect.signature(intr).parameters)[1:]  # drop typingctx
        sim_params = list(inspect.signature(sim).parameters)
        assert ptx_params == sim_params, name
        assert intr.__doc__ and sim.__doc__, name


@needs_cuda_target
def test_atoms_selects_ptx_backend_outside_simulator():
    import codegen.intrinsics as A

    assert A.SIMULATED is False
    assert A.__all__ == P.__all__
    for name in A.__all__:
        assert getattr(A, name) is getattr(P, name)


# ---------------------------------------------------------------------------
# fragment tables of the simulator
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,operand,dims",
    [
        ("m16n8k16", "A", (16, 16)),
        ("m16n8k16", "B", (16, 8)),
        ("m16n8k16", "C", (16, 8)),
        ("m16n8k8.tf32", "A", (16, 8)),
        ("m16n8k8.tf32", "B", (8, 8)),
        ("m16n8k8.tf32", "C", (16, 8)),
        ("m8n8k4.f64", "A", (8, 4)),
        ("m8n8k4.f64", "B", (4, 8)),
        ("m8n8k4.f64", "C", (8, 8)),
    ],
)
def test_fragment_layout_covers_matrix_once(shape, operand, dims):
    rows, cols = S.FRAGMENT_LAYOUTS[shape][operand]
    count = np.zeros(dims, dtype=int)
    np.add.at(count, (rows, cols), 1)
    assert (count == 1).all()


def test_fragment_layout_spot_values():
    lay = S.FRAGMENT_LAYOUTS["m16n8k16"]
    # lane 5: group 1, thread-in-group 1
    assert (lay["A"][0][5, 0, 0], lay["A"][1][5, 0, 0]) == (1, 2)
    assert (lay["A"][0][5, 3, 1], lay["A"][1][5, 3, 1]) == (9, 11)
    assert (lay["B"][0][5, 1, 1], lay["B"][1][5, 1, 1]) == (11, 1)
    assert (lay["C"][0][31, 3], lay["C"][1][31, 3]) == (15, 7)
    tf = S.FRAGMENT_LAYOUTS["m16n8k8.tf32"]
    assert (tf["A"][0][6, 2], tf["A"][1][6, 2]) == (1, 6)
    assert (tf["B"][0][6, 1], tf["B"][1][6, 1]) == (6, 1)


# ---------------------------------------------------------------------------
# pure helpers of the simulator (no kernel needed)
# ---------------------------------------------------------------------------


def test_sim_conversions():
    bits = lambda v: int(np.float32(v).view(np.uint32))  # noqa: E731
    # f16x2: lo in bits 0-15
    assert S.cvt_f16x2_f32(1.0, -2.0) == 0x3C00 | (0xC000 << 16)
    assert S.cvt_f16x2_f32(65520.0, 0.0) & 0xFFFF == 0x7C00  # rounds to inf
    # bf16x2: round to nearest even
    tie_even = np.uint32(0x3F808000).view(np.float32)
    tie_odd = np.uint32(0x3F818000).view(np.float32)
    assert S.cvt_bf16x2_f32(tie_even, tie_odd) == 0x3F80 | (0x3F82 << 16)
    # tf32: nearest, ties away from zero
    assert S.cvt_tf32_f32(np.uint32(0x3F801000).view(np.float32)) == 0x3F802000
    assert S.cvt_tf32_f32(np.uint32(0xBF801000).view(np.float32)) == 0xBF802000
    assert S.cvt_tf32_f32(np.uint32(0x3F800FFF).view(np.float32)) == 0x3F800000
    assert S.cvt_tf32_f32(1.5) == bits(1.5)
    # packing
    p = S.pack_f16x2(np.float16(1.0), np.float16(-0.5))
    assert p == 0x3C00 | (0xB800 << 16)
    assert S.unpack_f16x2(p) == (np.float16(1.0), np.float16(-0.5))
    assert S.unpack_f16x2_f32(p) == (np.float32(1.0), np.float32(-0.5))
    assert S.pack_b16x2(0x1_3F80, 0x4000) == 0x3F80 | (0x4000 << 16)
    assert S.unpack_bf16x2_f32(0x4000_3F80) == (np.float32(1.0), np.float32(2.0))
    assert S.f32_as_u32(np.float32(1.0)) == 0x3F800000
    assert S.u32_as_f32(0x3F800000) == np.float32(1.0)


def test_sim_type_errors_name_the_atom():
    with pytest.raises(TypeError, match="pack_b16x2.*'lo'"):
        S.pack_b16x2(1.5, 0)
    with pytest.raises(RuntimeError, match="ldmatrix_x4: must be called from a kernel"):
        S.ldmatrix_x4(0)
    with pytest.raises(RuntimeError, match="cp_async_commit: must be called from a kernel"):
        S.cp_async_commit()


# ---------------------------------------------------------------------------
# PTX text (compile_ptx, no GPU)
# ---------------------------------------------------------------------------


def k_mma_all(out, r, f, d):
    a = mma_m16n8k16_f32f16(r[0], r[1], r[2], r[3], r[4], r[5], f[0], f[1], f[2], f[3])
    b = mma_m16n8k16_f32bf16(r[0], r[1], r[2], r[3], r[4], r[5], a[0], a[1], a[2], a[3])
    c = mma_m16n8k8_f32tf32(r[0], r[1], r[2], r[3], r[4], f[0], b[0], b[1], b[2], b[3])
    e = mma_m8n8k4_f64(d[0], d[1], d[2], d[3])
    out[0] = c[0] + c[1] + c[2] + c[3] + e[0] + e[1]


def k_ldmatrix_all(out):
    sm = cuda.shared.array(0, U8)
    addr = smem_addr(sm, (cuda.threadIdx.x & 31) * 16)
    x1 = ldmatrix_x1(addr)
    x2 = ldmatrix_x2(addr)
    x4 = ldmatrix_x4(addr)
    t1 = ldmatrix_x1_trans(addr)
    t2 = ldmatrix_x2_trans(addr)
    t4 = ldmatrix_x4_trans(addr)
    out[cuda.threadIdx.x] = x1[0] ^ x2[1] ^ x4[3] ^ t1[0] ^ t2[1] ^ t4[3]


def k_cp_async_all(src, n):
    sm = cuda.shared.array(0, U8)
    tid = cuda.threadIdx.x
    base = smem_addr(sm, 0)
    g = gmem_addr(src, tid * 16)
    cp_async_ca_4(base + tid * 4, g, n & 4)
    cp_async_ca_8(base + 512 + tid * 8, g, n & 8)
    cp_async_ca_16(base + 1024 + tid * 16, g, n)
    cp_async_commit()
    cp_async_cg_16(base + 2048 + tid * 16, g, 0)
    cp_async_commit()
    cp_async_wait_group(1)
    cp_async_wait_all()


def k_cvt_all(out, x, h):
    a = cvt_f16x2_f32(x[0], x[1])
    b = cvt_bf16x2_f32(x[0], x[1])
    c = cvt_tf32_f32(x[2])
    p = pack_f16x2(h[0], h[1])
    u = unpack_f16x2(p)
    v = unpack_f16x2_f32(a)
    w = unpack_bf16x2_f32(b)
    out[0] = a ^ b ^ c ^ p ^ pack_b16x2(c, a) ^ f32_as_u32(v[0] + w[1])
    out[1] = f32_as_u32(u32_as_f32(c))
    h[0] = u[1]
    h[1] = u[0]


def k_vec_all(out, src):
    sm = cuda.shared.array(0, U8)
    tid = cuda.threadIdx.x
    v = ld_global_v4_b32(gmem_addr(src, tid * 16))
    st_shared_v4_b32(smem_addr(sm, tid * 16), v[0], v[1], v[2], v[3])
    cuda.syncthreads()
    w = ld_shared_v4_b32(smem_addr(sm, (tid ^ 1) * 16))
    x = ld_shared_b32(smem_addr(sm, (tid ^ 1) * 16 + 4))  # the same word as w[1]
    st_global_v4_b32(gmem_addr(out, tid * 16), w[0], x, w[2], w[3])


def _sigs():
    arr = lambda dt, nd=1: nt.Array(dt, nd, "C")  # noqa: E731
    return {
        "mma": (k_mma_all, (arr(nt.float32), arr(nt.uint32), arr(nt.float32), arr(nt.float64))),
        "ldmatrix": (k_ldmatrix_all, (arr(nt.uint32),)),
        "cp_async": (k_cp_async_all, (arr(nt.uint8), nt.int32)),
        "cvt": (k_cvt_all, (arr(nt.uint32), arr(nt.float32), arr(nt.float16))),
        "vec": (k_vec_all, (arr(nt.uint32), arr(nt.uint32))),
    }


EXPECTED_PTX = {
    "mma": [
        r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32 \{(%f\d+,?){4}\}, \{(%r\d+,?){4}\}, \{(%r\d+,?){2}\}, \{(%f\d+,?){4}\};",
        r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32 ",
        r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32 \{(%f\d+,?){4}\}, \{(%r\d+,?){4}\}, \{(%r\d+,?){2}\}, ",
        r"mma\.sync\.aligned\.m8n8k4\.row\.col\.f64\.f64\.f64\.f64 \{%fd\d+,%fd\d+\}, \{%fd\d+\}, \{%fd\d+\}, \{%fd\d+,%fd\d+\};",
    ],
    "ldmatrix": [
        r"ldmatrix\.sync\.aligned\.m8n8\.x1\.shared\.b16 \{%r\d+\}, \[%r\d+\];",
        r"ldmatrix\.sync\.aligned\.m8n8\.x2\.shared\.b16 \{%r\d+,%r\d+\}, \[%r\d+\];",
        r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16 \{(%r\d+,?){4}\}, \[%r\d+\];",
        r"ldmatrix\.sync\.aligned\.m8n8\.x1\.trans\.shared\.b16 ",
        r"ldmatrix\.sync\.aligned\.m8n8\.x2\.trans\.shared\.b16 ",
        r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16 ",
    ],
    "cp_async": [
        r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4, %r\d+;",
        r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 8, %r\d+;",
        r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;",
        r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, (%r\d+|0);",
        r"cp\.async\.commit_group;",
        r"cp\.async\.wait_group 1;",
        r"cp\.async\.wait_all;",
    ],
    "cvt": [
        r"cvt\.rn\.f16x2\.f32 %r\d+, %f\d+, %f\d+;",
        r"cvt\.rn\.bf16x2\.f32 %r\d+, %f\d+, %f\d+;",
        r"cvt\.rna\.tf32\.f32 %r\d+, %f\d+;",
    ],
    "vec": [
        r"ld\.global\.v4\.b32 \{(%r\d+,?){4}\}, \[%rd\d+\];",
        r"st\.shared\.v4\.b32 \[%r\d+\], \{(%r\d+,?){4}\};",
        r"ld\.shared\.v4\.b32 \{(%r\d+,?){4}\}, \[%r\d+\];",
        r"ld\.shared\.b32 %r\d+, \[%r\d+\];",
        r"st\.global\.v4\.b32 \[%rd\d+\], \{(%r\d+,?){4}\};",
    ],
}


@needs_cuda_target
@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm{cc[0]}{cc[1]}")
@pytest.mark.parametrize("group", sorted(EXPECTED_PTX))
def test_ptx_contains_instructions(group, cc):
    fn, sig = _sigs()[group]
    ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
    assert f".target sm_{cc[0]}{cc[1]}" in ptx
    for pattern in EXPECTED_PTX[group]:
        assert re.search(pattern, ptx), f"{pattern!r} not in PTX of {group}"
    # shared addresses fold to the symbol: no generic->shared conversion at run time
    assert "cvta.to.shared" not in ptx
    assert ".local" not in ptx


@needs_cuda_target
def test_memory_atoms_are_not_merged_or_moved():
    """Two identical ldmatrix around a barrier must both stay, in order."""

    def k(out):
        sm = cuda.shared.array(0, U8)
        addr = smem_addr(sm, (cuda.threadIdx.x & 31) * 16)
        a = ldmatrix_x1(addr)
        cuda.syncthreads()
        b = ldmatrix_x1(addr)
        out[cuda.threadIdx.x] = a[0] + b[0]

    ptx, _ = cuda.compile_ptx(k, (nt.uint32[::1],), cc=(9, 0))
    body = ptx[ptx.index("{") :]
    ld = [m.start() for m in re.finditer(r"ldmatrix\.sync", body)]
    bar = body.index("bar.sync")
    assert len(ld) == 2 and ld[0] < bar < ld[1]


@needs_cuda_target
def test_wait_group_needs_constant():
    def bad(n):
        cp_async_wait_group(n)

    # numba reports it as its TypingError (numba.core's class, not numba.cuda's)
    with pytest.raises(Exception, match="compile-time integer constant"):
        cuda.compile_ptx(bad, (nt.int32,), cc=(9, 0))

    N = 3

    def good(n):
        cp_async_wait_group(N)

    ptx, _ = cuda.compile_ptx(good, (nt.int32,), cc=(9, 0))
    assert "cp.async.wait_group 3;" in ptx


@needs_cuda_target
def test_operand_type_errors_name_atom_and_operand():
    def bad_mma(h):
        mma_m16n8k16_f32f16(h[0], 1, 1, 1, 1, 1, 0.0, 0.0, 0.0, 0.0)

    with pytest.raises(TypeError, match=r"mma_m16n8k16_f32f16: operand 'a0'"):
        cuda.compile_ptx(bad_mma, (nt.float16[::1],), cc=(9, 0))

    def bad_addr(x):
        smem_addr(x[0], 0)

    with pytest.raises(TypeError, match=r"smem_addr: operand 'arr' must be an array"):
        cuda.compile_ptx(bad_addr, (nt.float32[::1],), cc=(9, 0))


def k_tuple_forms(c, x, y):
    sm = cuda.shared.array(0, U8)
    base = smem_addr(sm, 0)
    tid = cuda.threadIdx.x
    a = ldmatrix_x4(base + tid * 16)
    b = ldmatrix_x4_trans(base + 4096 + tid * 16)
    d = mma_m16n8k16_f32bf16(a[0], a[1], a[2], a[3], b[0], b[1], x[0], x[1], x[2], x[3])
    d = mma_m16n8k8_f32tf32(a[0], a[1], a[2], a[3], b[2], b[3], d[0], d[1], d[2], d[3])
    e = mma_m8n8k4_f64(y[0], y[1], y[2], y[3])
    for i in range(4):
        c[tid * 6 + i] = d[i]
    c[tid * 6 + 4] = e[0]
    c[tid * 6 + 5] = e[1]


def k_fragment_forms(c, x, y):
    sm = cuda.shared.array(0, U8)
    base = smem_addr(sm, 0)
    tid = cuda.threadIdx.x
    fa = cuda.local.array(4, nt.uint32)
    fb = cuda.local.array(8, nt.uint32)
    acc = cuda.local.array(4, nt.float32)
    acc64 = cuda.local.array(4, nt.float64)
    for i in range(4):
        acc[i] = x[i]
        acc64[i] = y[i]
    ldmatrix_x4_frag(fa, 0, base + tid * 16)
    ldmatrix_x4_trans_frag(fb, 4, base + 4096 + tid * 16)
    mma_m16n8k16_f32bf16_frag(acc, 0, fa, 0, fb, 4)
    mma_m16n8k8_f32tf32_frag(acc, 0, fa, 0, fb, 6)
    mma_m8n8k4_f64_frag(acc64, 2, acc64, 0, acc64, 1)
    for i in range(4):
        c[tid * 6 + i] = acc[i]
    c[tid * 6 + 4] = acc64[2]
    c[tid * 6 + 5] = acc64[3]


def _instructions(ptx):
    """The opcodes of a kernel's PTX body, in order (registers and names aside)."""
    body = ptx[ptx.index("{"):]
    return [ln.split()[0] for ln in body.splitlines()
            if ln.strip() and not ln.strip().startswith(("//", ".", "{", "}", "$", "ret"))
            and not ln.strip().endswith(":")]


@needs_cuda_target
def test_fragment_forms_compile_to_the_tuple_forms_instructions():
    """The fragment forms (register arrays in and out) give the instructions of the tuple
    forms: the same MMAs and ldmatrix, and no local memory."""
    sig = (nt.float64[::1], nt.float32[::1], nt.float64[::1])
    want, _ = cuda.compile_ptx(k_tuple_forms, sig, cc=(9, 0))
    got, _ = cuda.compile_ptx(k_fragment_forms, sig, cc=(9, 0))
    assert ".local" not in got
    for op in ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32",
               "mma.sync.aligned.m8n8k4.row.col.f64", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
               "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"):
        assert got.count(op) == want.count(op) == 1, op
    assert sorted(_instructions(got)) == sorted(_instructions(want))


@needs_cuda_target
def test_fragment_forms_want_register_arrays():
    def two_d(c):
        acc = cuda.local.array((2, 4), nt.float32)
        fa = cuda.local.array(4, nt.uint32)
        mma_m16n8k16_f32f16_frag(acc, 0, fa, 0, fa, 0)

    with pytest.raises(TypeError, match=r"mma_m16n8k16_f32f16_frag: operand 'acc' must be a 1-D register array"):
        cuda.compile_ptx(two_d, (nt.float32[::1],), cc=(9, 0))

    def f16_acc(c):
        acc = cuda.local.array(4, nt.float64)
        fa = cuda.local.array(4, nt.uint32)
        mma_m16n8k16_f32f16_frag(acc, 0, fa, 0, fa, 0)

    with pytest.raises(TypeError, match=r"mma_m16n8k16_f32f16_frag: operand 'acc' must hold float32"):
        cuda.compile_ptx(f16_acc, (nt.float32[::1],), cc=(9, 0))

    def float_frag(c):
        f = cuda.local.array(4, nt.float32)
        ldmatrix_x4_frag(f, 0, 0)

    with pytest.raises(TypeError, match=r"ldmatrix_x4_frag: operand 'frag' must be a 1-D register array"):
        cuda.compile_ptx(float_frag, (nt.float32[::1],), cc=(9, 0))


# ---------------------------------------------------------------------------
# ptxas: a small multi-stage main loop keeps its fragments in registers
# ---------------------------------------------------------------------------


def k_mainloop(a, b, c, k_tiles):
    sm = cuda.shared.array(0, U8)
    tid = cuda.threadIdx.x
    lane = tid & 31
    base = smem_addr(sm, 0)
    acc = cuda.local.array(16, nt.float32)
    for i in range(16):
        acc[i] = 0.0
    for s in range(2):  # prologue: stages 0 and 1
        cp_async_cg_16(base + s * 4096 + tid * 16, gmem_addr(a, (s * 128 + tid) * 16), 16)
        cp_async_cg_16(base + s * 4096 + 2048 + tid * 16, gmem_addr(b, (s * 128 + tid) * 16), 16)
        cp_async_commit()
    for kt in range(k_tiles):
        cp_async_wait_group(1)
        cuda.syncthreads()
        st = (kt & 1) * 4096
        fa = ldmatrix_x4(base + st + (lane & 15) * 32 + (lane >> 4) * 16)
        for j in range(4):
            fb = ldmatrix_x2_trans(base + st + 2048 + (lane & 15) * 64 + j * 16)
            r = mma_m16n8k16_f32f16(
                fa[0], fa[1], fa[2], fa[3], fb[0], fb[1],
                acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3],
            )
            for i in range(4):
                acc[4 * j + i] = r[i]
        cuda.syncthreads()
        nxt = kt + 2
        src = nxt * 128 + tid
        n = 16 if nxt < k_tiles else 0  # predicated-off copies zero-fill
        cp_async_cg_16(base + st + tid * 16, gmem_addr(a, (src & 1023) * 16), n)
        cp_async_cg_16(base + st + 2048 + tid * 16, gmem_addr(b, (src & 1023) * 16), n)
        cp_async_commit()
    cp_async_wait_all()
    for i in range(16):
        c[tid * 16 + i] = acc[i]


@needs_cuda_target
@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_ptxas_no_spills_no_stack(tmp_path):
    sig = (nt.float16[::1], nt.float16[::1], nt.float32[::1], nt.int32)
    ptx, _ = cuda.compile_ptx(k_mainloop, sig, cc=(9, 0))
    assert ".local" not in ptx
    path = tmp_path / "mainloop.ptx"
    path.write_text(ptx)
    res = subprocess.run(
        ["ptxas", "-v", "-arch=sm_90", str(path), "-o", str(tmp_path / "mainloop.cubin")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    info = res.stderr + res.stdout
    assert "0 bytes stack frame" in info, info
    assert "0 bytes spill stores" in info and "0 bytes spill loads" in info, info


# ---------------------------------------------------------------------------
# simulator (subprocesses with NUMBA_ENABLE_CUDASIM=1)
# ---------------------------------------------------------------------------


def _run_sim(args, timeout=600):
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
    )


def test_sim_check_script_passes():
    """ldmatrix + mma with 32 and 64 threads, cp.async incl. zero-fill and a
    missing wait, conversions and vector accesses, all against numpy."""
    res = _run_sim([str(CHECK_SCRIPT), "--sim"])
    out = res.stdout
    assert res.returncode == 0, out + res.stderr
    assert "backend: simulator" in out
    for name in (
        "mma_f16", "mma_bf16", "mma_tf32", "mma_f64", "ldmatrix", "ldsm_mma_1warp",
        "ldsm_mma_2warps", "cp_async", "cvt", "vector_ldst", "static_dynamic_smem",
        "pipeline_2stage", "pipeline_3stage", "pipeline_4stage",
    ):
        assert re.search(rf"^PASS {name}:", out, re.M), out
    assert "no-wait copy stale as modelled" in out


_STATIC_SHARED_SCRIPT = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from numba import cuda
    import codegen.intrinsics  # noqa: F401  (the simulator's fixes are installed on import)

    # A thread switch between numba's lookup of a static shared array and its store used to
    # let two threads of a block each allocate one (check_atoms' static_dynamic_smem tile
    # then held garbage or NaN now and then).  A slow allocation makes that switch certain.
    _empty = np.empty
    def slow_empty(*args, **kwargs):
        time.sleep(0.002)
        return _empty(*args, **kwargs)
    np.empty = slow_empty

    @cuda.jit
    def k(out):
        st = cuda.shared.array(64, np.int32)
        t = cuda.threadIdx.x
        st[t] = 100 + t
        cuda.syncthreads()
        out[cuda.blockIdx.x, t] = st[(t + 1) % 64]

    want = 100 + (np.arange(64) + 1) % 64
    bad = 0
    for launch in range(4):     # each launch allocates its static arrays afresh
        out = np.zeros((2, 64), np.int64)
        k[2, 64](out)
        bad += int(np.sum(out != want))
    print("BAD", bad)
    sys.exit(1 if bad else 0)
    """
)


def test_sim_static_shared_array_is_one_per_block(tmp_path):
    """Every thread of a block sees the same static shared array, however the threads are
    scheduled (the cause of the intermittent garbage in check_atoms' static_dynamic_smem)."""
    script = tmp_path / "static_shared.py"
    script.write_text(_STATIC_SHARED_SCRIPT)
    res = _run_sim([str(script)], timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "BAD 0" in res.stdout


_SIM_SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.setswitchinterval(1e-4)
    import numpy as np
    from numba import cuda
    import codegen.intrinsics.sim as S
    from codegen.intrinsics import *
    import codegen.intrinsics as A

    S.SIM_COLLECTIVE_TIMEOUT_S = 1.0
    U8 = np.dtype(np.uint8)
    results = {"simulated": A.SIMULATED}

    @cuda.jit
    def k_divergent(out):
        sm = cuda.shared.array(0, U8)
        if cuda.threadIdx.x < 16:
            ldmatrix_x4(smem_addr(sm, 0))
        else:
            mma_m16n8k16_f32f16(0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0)

    @cuda.jit
    def k_missing_lane(out):
        sm = cuda.shared.array(0, U8)
        if cuda.threadIdx.x == 7:
            return
        ldmatrix_x1(smem_addr(sm, 0))

    @cuda.jit
    def k_misaligned(out):
        sm = cuda.shared.array(0, U8)
        ldmatrix_x1(smem_addr(sm, 8))

    @cuda.jit
    def k_out_of_bounds(src):
        sm = cuda.shared.array(0, U8)
        cp_async_cg_16(smem_addr(sm, 0), gmem_addr(src, 64), 16)

    @cuda.jit
    def k_partial_warp(out):
        sm = cuda.shared.array(0, U8)
        ldmatrix_x1(smem_addr(sm, 0))

    @cuda.jit
    def k_bad_src_size(src):
        sm = cuda.shared.array(0, U8)
        cp_async_ca_8(smem_addr(sm, 0), gmem_addr(src, 0), 9)

    @cuda.jit
    def k_faulting_lane(out):
        sm = cuda.shared.array(0, U8)
        t = cuda.threadIdx.x
        if t == 5:
            out[100] = 1.0          # an IndexError in lane 5
        ldmatrix_x4(smem_addr(sm, (t & 15) * 16))

    @cuda.jit
    def k_stuck_lane(out):
        sm = cuda.shared.array(0, U8)
        if cuda.threadIdx.x == 3:
            cuda.syncthreads()      # waits for the other lanes, which wait at the collective
        else:
            ldmatrix_x1(smem_addr(sm, 0))

    import time
    t0 = time.perf_counter()
    try:
        k_faulting_lane[1, 32, 0, 512](np.zeros(4))
        results["faulting_lane"] = ["no error", ""]
    except Exception as e:
        results["faulting_lane"] = [type(e).__name__, str(e)]
    results["faulting_lane_seconds"] = time.perf_counter() - t0

    cases = [
        ("stuck_lane", k_stuck_lane, (np.zeros(1),), 32),
        ("divergent", k_divergent, (np.zeros(1),), 32),
        ("missing_lane", k_missing_lane, (np.zeros(1),), 32),
        ("misaligned", k_misaligned, (np.zeros(1),), 32),
        ("out_of_bounds", k_out_of_bounds, (np.zeros(64, np.uint8),), 32),
        ("partial_warp", k_partial_warp, (np.zeros(1),), 48),
        ("bad_src_size", k_bad_src_size, (np.zeros(64, np.uint8),), 32),
    ]
    for name, k, args, nthr in cases:
        try:
            k[1, nthr, 0, 512](*args)
            results[name] = ["no error", ""]
        except Exception as e:
            results[name] = [type(e).__name__, str(e)]

    # Several blocks (run one after another) each doing ldmatrix + mma, with a
    # static shared array next to the dynamic one: check_atoms.py's kernel; and where
    # the simulator places the two arrays.
    sys.path.insert(0, "tests/gpu")
    from check_atoms import k_static_dynamic as k_blocks

    @cuda.jit
    def k_addrs(d):
        st = cuda.shared.array(512, U8)
        dy = cuda.shared.array(0, U8)
        st[0] = 0
        d[0] = smem_addr(st, 0)
        d[1] = smem_addr(dy, 0)

    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 16, 16)).astype(np.float16)
    b = rng.standard_normal((3, 16, 8)).astype(np.float16)
    d = np.zeros((3, 16, 8), np.float32)
    k_blocks[3, 32, 0, 256](a, b, d)
    ref = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
    results["blocks_max_err"] = float(np.max(np.abs(d - ref)))
    # the fragment forms against the tuple forms, one warp, random registers
    @cuda.jit
    def k_frags(regs, accs, y, out):
        t = cuda.threadIdx.x
        fa = cuda.local.array(6, np.uint32)
        fb = cuda.local.array(4, np.uint32)
        acc = cuda.local.array(8, np.float32)
        acc64 = cuda.local.array(4, np.float64)
        for i in range(4):
            fa[2 + i] = regs[t, i]
            acc[4 + i] = accs[t, i]
            acc64[i] = y[t, i]
        fb[1] = regs[t, 4]
        fb[2] = regs[t, 5]
        d = mma_m16n8k16_f32bf16(regs[t, 0], regs[t, 1], regs[t, 2], regs[t, 3], regs[t, 4], regs[t, 5],
                                 accs[t, 0], accs[t, 1], accs[t, 2], accs[t, 3])
        d = mma_m16n8k8_f32tf32(regs[t, 0], regs[t, 1], regs[t, 2], regs[t, 3], regs[t, 4], regs[t, 5],
                                d[0], d[1], d[2], d[3])
        e = mma_m8n8k4_f64(y[t, 0], y[t, 1], y[t, 2], y[t, 3])
        mma_m16n8k16_f32bf16_frag(acc, 4, fa, 2, fb, 1)
        mma_m16n8k8_f32tf32_frag(acc, 4, fa, 2, fb, 1)
        mma_m8n8k4_f64_frag(acc64, 2, acc64, 0, acc64, 1)
        for i in range(4):
            out[t, i] = d[i] - acc[4 + i]
        out[t, 4] = e[0] - acc64[2]
        out[t, 5] = e[1] - acc64[3]
        try:
            mma_m16n8k16_f32f16_frag(acc, 6, fa, 0, fb, 0)
        except IndexError as err:
            if t == 0:
                out[0, 6] = 1.0 if "outside its 8 words" in str(err) else 2.0

    regs = rng.integers(0, 1 << 32, (32, 6), dtype=np.uint64).astype(np.uint32) & np.uint32(0x3C7F3C7F)
    accs = rng.standard_normal((32, 4)).astype(np.float32)
    y = rng.standard_normal((32, 4))
    fout = np.full((32, 7), np.nan)
    k_frags[1, 32](regs, accs, y, fout)
    results["frag_forms_max_diff"] = float(np.max(np.abs(fout[:, :6])))
    results["frag_forms_range_error"] = float(fout[0, 6])
    addrs = np.zeros(2, np.float32)
    k_addrs[1, 1, 0, 256](addrs)
    results["static_addr"] = float(addrs[0])
    results["dynamic_addr"] = float(addrs[1])
    print("RESULTS " + json.dumps(results))
    """
)


def test_sim_errors_and_multi_block(tmp_path):
    script = tmp_path / "sim_cases.py"
    script.write_text(_SIM_SCRIPT)
    res = _run_sim([str(script)])
    assert res.returncode == 0, res.stdout + res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULTS "))
    r = json.loads(line[len("RESULTS ") :])
    assert r["simulated"] is True
    assert r["divergent"][0] == "RuntimeError" and "divergent warp collective" in r["divergent"][1]
    assert r["missing_lane"][0] == "RuntimeError" and "lane 7 of warp 0 ended without reaching" in r["missing_lane"][1]
    # a lane that fails before a collective: the others report its error at once
    assert r["faulting_lane"][0] == "IndexError", r["faulting_lane"]
    # lane 5's own error: as numba reports it, or relayed by a waiting lane, which says where
    msg = r["faulting_lane"][1]
    assert "tid=[5, 0, 0]" in msg and "index 100 is out of bounds" in msg, msg
    assert "lane 5 of warp 0 raised IndexError at " not in msg or "sim_cases.py:" in msg, msg
    assert r["faulting_lane_seconds"] < 0.5                   # not the collective's timeout (1 s here)
    # a lane waiting past the timeout, when no lane ended: the timeout's message
    assert r["stuck_lane"][0] == "RuntimeError" and "did not complete within" in r["stuck_lane"][1]
    assert r["misaligned"][0] == "ValueError" and "not 16-byte aligned" in r["misaligned"][1]
    assert r["out_of_bounds"][0] == "ValueError" and "outside every array" in r["out_of_bounds"][1]
    assert r["partial_warp"][0] == "ValueError" and "needs all 32 lanes" in r["partial_warp"][1]
    assert r["bad_src_size"][0] == "ValueError" and "src_size must be in [0, 8]" in r["bad_src_size"][1]
    assert r["blocks_max_err"] < 1e-4
    assert r["dynamic_addr"] == 0.0 and r["static_addr"] == 1024.0
    assert r["frag_forms_max_diff"] == 0.0          # the same products, bit for bit
    assert r["frag_forms_range_error"] == 1.0       # words past the array: an IndexError naming them


# ---------------------------------------------------------------------------
# stmatrix (sm_90): PTX text, and the simulator's twin as ldmatrix's inverse
# ---------------------------------------------------------------------------


def k_stmatrix_all(regs):
    sm = cuda.shared.array(0, U8)
    lane = cuda.threadIdx.x & 31
    addr = smem_addr(sm, lane * 16)
    r = regs[lane]
    stmatrix_x1(addr, r)
    stmatrix_x2(addr, r, r + 1)
    stmatrix_x4(addr, r, r + 1, r + 2, r + 3)
    stmatrix_x1_trans(addr, r)
    stmatrix_x2_trans(addr, r, r + 1)
    stmatrix_x4_trans(addr, r, r + 1, r + 2, r + 3)


@needs_cuda_target
def test_stmatrix_ptx():
    ptx, _ = cuda.compile_ptx(k_stmatrix_all, (nt.uint32[::1],), cc=(9, 0))
    for n in (1, 2, 4):
        regs = ", ".join([r"%r\d+"] * n)
        for t in ("", r"\.trans"):
            pattern = rf"stmatrix\.sync\.aligned\.m8n8\.x{n}{t}\.shared\.b16 \[%r\d+\], \{{{regs}\}};"
            assert re.search(pattern, ptx), pattern
    assert ".local" not in ptx


_STSM_SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.setswitchinterval(1e-4)
    import numpy as np
    from numba import cuda
    from codegen.intrinsics import *

    U8 = np.dtype(np.uint8)

    @cuda.jit
    def k(regs, out, trans):
        sm = cuda.shared.array(0, U8)
        lane = cuda.threadIdx.x
        addr = smem_addr(sm, ((lane * 5) % 32) * 16)        # rows in a scrambled order
        if trans == 0:
            stmatrix_x4(addr, regs[lane, 0], regs[lane, 1], regs[lane, 2], regs[lane, 3])
            cuda.syncthreads()
            r = ldmatrix_x4(addr)
        else:
            stmatrix_x4_trans(addr, regs[lane, 0], regs[lane, 1], regs[lane, 2], regs[lane, 3])
            cuda.syncthreads()
            r = ldmatrix_x4_trans(addr)
        for i in range(4):
            out[lane, i] = r[i]
        cuda.syncthreads()
        s = ldmatrix_x4(addr)                               # plain rows: the transpose shows
        for i in range(4):
            out[lane, 4 + i] = s[i]

    rng = np.random.default_rng(3)
    regs = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint64).astype(np.uint32)
    res = {}
    for trans in (0, 1):
        out = np.zeros((32, 8), np.uint32)
        k[1, 32, 0, 512](regs, out, trans)
        res[trans] = [bool(np.array_equal(out[:, :4], regs)), bool(np.array_equal(out[:, 4:], regs))]
    print("RESULTS " + json.dumps(res))
    """
)


def test_sim_stmatrix_is_the_inverse_of_ldmatrix(tmp_path):
    script = tmp_path / "stsm.py"
    script.write_text(_STSM_SCRIPT)
    res = _run_sim([str(script)])
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads(next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULTS "))[len("RESULTS "):])
    assert r["0"] == [True, True]           # stored and loaded back, the same layout
    assert r["1"] == [True, False]          # .trans both ways: the same; read back plain: transposed
