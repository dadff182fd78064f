#!/usr/bin/env python3
"""Check every atom of ``codegen.intrinsics`` against numpy, on a GPU or in the simulator.

Usage::

    python tests/gpu/check_atoms.py            # real GPU (inline-PTX atoms)
    python tests/gpu/check_atoms.py --sim      # numba's CUDA simulator (sim atoms)
    python tests/gpu/check_atoms.py --only mma_f16,cp_async
    python tests/gpu/check_atoms.py --list

Prints ``PASS name`` or ``FAIL name: why`` per item and exits with status 1 if
any item failed.  The fragment index formulas in these kernels are written out
from the PTX ISA independently of the simulator's tables, so a GPU run checks
both the intrinsics and the layouts the simulator assumes.
"""

from __future__ import annotations

import os
import sys
import traceback

if __name__ == "__main__" and "--sim" in sys.argv[1:]:
    # The simulator must be selected before numba.cuda is imported.
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import warnings  # noqa: E402

import numpy as np  # noqa: E402

# Tiny one-block launches with host arrays: numba's performance hints are noise here.
warnings.filterwarnings("ignore", message=".*(under-utilization|copy overhead).*")
from numba import cuda  # noqa: E402

# every atom of the selected backend (the names of codegen/intrinsics/names.py), and SIMULATED
from codegen.intrinsics import *  # noqa: E402,F401,F403
from codegen.intrinsics import SIMULATED  # noqa: E402

U8 = np.dtype(np.uint8)
U16 = np.dtype(np.uint16)


# ---------------------------------------------------------------------------
# numpy references for the number formats
# ---------------------------------------------------------------------------


def bf16_bits_rne(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even (no NaN in inputs)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def tf32_bits_rna(x: np.ndarray) -> np.ndarray:
    """float32 -> tf32 bits, round to nearest, ties away from zero (no NaN)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x1000) & 0xFFFFE000).astype(np.uint32)


def tf32_trunc(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def _close(name, got, want, rtol, atol):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    ok = bool(np.allclose(got, want, rtol=rtol, atol=atol))
    return ok, f"{name} max abs err {err:.3g}"


def _fmt(v) -> str:
    return hex(int(v)) if np.issubdtype(np.asarray(v).dtype, np.integer) else repr(v)


def _equal(name, got, want, inputs=None):
    """Exact comparison; on mismatch lists the first few (with ``inputs(i)`` if given)."""
    got = np.asarray(got)
    want = np.asarray(want)
    bad = np.argwhere(got != want)
    if bad.size == 0:
        return True, f"{name} exact"
    shown = []
    for idx in bad[:4]:
        i = tuple(int(j) for j in idx)
        extra = f" for {inputs(i)}" if inputs is not None else ""
        shown.append(f"at {i}: got {_fmt(got[i])} want {_fmt(want[i])}{extra}")
    return False, f"{name}: {len(bad)} mismatches, " + ", ".join(shown)


# ---------------------------------------------------------------------------
# kernels (fragment formulas from the PTX ISA; g = lane >> 2, t = lane & 3)
# ---------------------------------------------------------------------------


@cuda.jit
def k_mma_f16(a, b, c, d):
    lane = cuda.threadIdx.x & 31
    g = lane >> 2
    t = lane & 3
    a0 = pack_f16x2(a[g, 2 * t], a[g, 2 * t + 1])
    a1 = pack_f16x2(a[g + 8, 2 * t], a[g + 8, 2 * t + 1])
    a2 = pack_f16x2(a[g, 2 * t + 8], a[g, 2 * t + 9])
    a3 = pack_f16x2(a[g + 8, 2 * t + 8], a[g + 8, 2 * t + 9])
    b0 = pack_f16x2(b[2 * t, g], b[2 * t + 1, g])
    b1 = pack_f16x2(b[2 * t + 8, g], b[2 * t + 9, g])
    r = mma_m16n8k16_f32f16(
        a0, a1, a2, a3, b0, b1,
        c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1],
    )
    d[g, 2 * t] = r[0]
    d[g, 2 * t + 1] = r[1]
    d[g + 8, 2 * t] = r[2]
    d[g + 8, 2 * t + 1] = r[3]


@cuda.jit
def k_mma_bf16(a, b, c, d):
    lane = cuda.threadIdx.x & 31
    g = lane >> 2
    t = lane & 3
    a0 = pack_b16x2(a[g, 2 * t], a[g, 2 * t + 1])
    a1 = pack_b16x2(a[g + 8, 2 * t], a[g + 8, 2 * t + 1])
    a2 = pack_b16x2(a[g, 2 * t + 8], a[g, 2 * t + 9])
    a3 = pack_b16x2(a[g + 8, 2 * t + 8], a[g + 8, 2 * t + 9])
    b0 = pack_b16x2(b[2 * t, g], b[2 * t + 1, g])
    b1 = pack_b16x2(b[2 * t + 8, g], b[2 * t + 9, g])
    r = mma_m16n8k16_f32bf16(
        a0, a1, a2, a3, b0, b1,
        c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1],
    )
    d[g, 2 * t] = r[0]
    d[g, 2 * t + 1] = r[1]
    d[g + 8, 2 * t] = r[2]
    d[g + 8, 2 * t + 1] = r[3]


@cuda.jit
def k_mma_tf32(a, b, c, d, d_raw):
    lane = cuda.threadIdx.x & 31
    g = lane >> 2
    t = lane & 3
    r = mma_m16n8k8_f32tf32(
        cvt_tf32_f32(a[g, t]), cvt_tf32_f32(a[g + 8, t]),
        cvt_tf32_f32(a[g, t + 4]), cvt_tf32_f32(a[g + 8, t + 4]),
        cvt_tf32_f32(b[t, g]), cvt_tf32_f32(b[t + 4, g]),
        c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1],
    )
    d[g, 2 * t] = r[0]
    d[g, 2 * t + 1] = r[1]
    d[g + 8, 2 * t] = r[2]
    d[g + 8, 2 * t + 1] = r[3]
    # float32 operands passed as raw bits
    s = mma_m16n8k8_f32tf32(
        a[g, t], a[g + 8, t], a[g, t + 4], a[g + 8, t + 4], b[t, g], b[t + 4, g],
        c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1],
    )
    d_raw[g, 2 * t] = s[0]
    d_raw[g, 2 * t + 1] = s[1]
    d_raw[g + 8, 2 * t] = s[2]
    d_raw[g + 8, 2 * t + 1] = s[3]


@cuda.jit
def k_mma_f64(a, b, c, d):
    lane = cuda.threadIdx.x & 31
    g = lane >> 2
    t = lane & 3
    r = mma_m8n8k4_f64(a[g, t], b[t, g], c[g, 2 * t], c[g, 2 * t + 1])
    d[g, 2 * t] = r[0]
    d[g, 2 * t + 1] = r[1]


# ldmatrix: four 8x8 uint16 matrices in shared memory, rows 48 bytes apart
_LDSM_ROW_BYTES = 48


@cuda.jit
def k_ldmatrix(src, o1, o2, o4, o1t, o2t, o4t):
    sm = cuda.shared.array(0, U16)
    lane = cuda.threadIdx.x
    for e in range(lane, 256, 32):
        sm[((e >> 3) * (_LDSM_ROW_BYTES >> 1)) + (e & 7)] = src[e >> 6, (e >> 3) & 7, e & 7]
    cuda.syncthreads()
    # lane 8i + r points at row r of matrix i
    addr = smem_addr(sm, 0) + lane * _LDSM_ROW_BYTES
    r1 = ldmatrix_x1(addr)
    o1[lane, 0] = r1[0]
    r2 = ldmatrix_x2(addr)
    o2[lane, 0] = r2[0]
    o2[lane, 1] = r2[1]
    r4 = ldmatrix_x4(addr)
    for i in range(4):
        o4[lane, i] = r4[i]
    t1 = ldmatrix_x1_trans(addr)
    o1t[lane, 0] = t1[0]
    t2 = ldmatrix_x2_trans(addr)
    o2t[lane, 0] = t2[0]
    o2t[lane, 1] = t2[1]
    t4 = ldmatrix_x4_trans(addr)
    for i in range(4):
        o4t[lane, i] = t4[i]


@cuda.jit
def k_ldsm_mma(a, b, bt, c, d, d2):
    """W warps: cp.async A (16x16), B (16 x 8W, K x N) and Bt (8W x 16) to shared;
    warp w computes D[:, 8w:8w+8] = A @ B + C via ldmatrix_x4 (A) and
    ldmatrix_x2_trans (B), and D2 = A @ B via ldmatrix_x2 on Bt."""
    sm = cuda.shared.array(0, U8)
    tid = cuda.threadIdx.x
    nthr = cuda.blockDim.x
    nw = nthr >> 5
    lane = tid & 31
    w = tid >> 5
    base = smem_addr(sm, 0)
    sa = 0
    sb = 512
    sbt = 512 + 256 * nw
    for ch in range(tid, 32, nthr):
        cp_async_cg_16(base + sa + ch * 16, gmem_addr(a, ch * 16), 16)
    for ch in range(tid, 16 * nw, nthr):
        cp_async_cg_16(base + sb + ch * 16, gmem_addr(b, ch * 16), 16)
    for ch in range(tid, 16 * nw, nthr):
        cp_async_ca_16(base + sbt + ch * 16, gmem_addr(bt, ch * 16), 16)
    cp_async_commit()
    cp_async_wait_group(0)
    cuda.syncthreads()
    ra = ldmatrix_x4(base + sa + (lane & 15) * 32 + (lane >> 4) * 16)
    rb = ldmatrix_x2_trans(base + sb + (lane & 15) * (16 * nw) + w * 16)
    rbt = ldmatrix_x2(base + sbt + (w * 8 + (lane & 7)) * 32 + ((lane >> 3) & 1) * 16)
    g = lane >> 2
    n0 = w * 8 + 2 * (lane & 3)
    r = mma_m16n8k16_f32f16(
        ra[0], ra[1], ra[2], ra[3], rb[0], rb[1],
        c[g, n0], c[g, n0 + 1], c[g + 8, n0], c[g + 8, n0 + 1],
    )
    r2 = mma_m16n8k16_f32f16(
        ra[0], ra[1], ra[2], ra[3], rbt[0], rbt[1], 0.0, 0.0, 0.0, 0.0
    )
    d[g, n0] = r[0]
    d[g, n0 + 1] = r[1]
    d[g + 8, n0] = r[2]
    d[g + 8, n0 + 1] = r[3]
    d2[g, n0] = r2[0]
    d2[g, n0 + 1] = r2[1]
    d2[g + 8, n0] = r2[2]
    d2[g + 8, n0 + 1] = r2[3]


@cuda.jit
def k_cp_async(src, out_mid, out_end, out_nowait):
    """Two groups of copies (with zero-fill), wait_group 1 then 0, then a copy
    that is read back before its wait (stale in the simulator)."""
    sm = cuda.shared.array(0, U8)
    lane = cuda.threadIdx.x
    for e in range(lane, 2560, 32):
        sm[e] = 0xAB
    cuda.syncthreads()
    base = smem_addr(sm, 0)
    # group 1: cg.16 into [0, 512), ca.16 into [512, 1024)
    n16 = 16
    if (lane & 3) == 3:
        n16 = 0
    if lane == 5:
        n16 = 8
    cp_async_cg_16(base + lane * 16, gmem_addr(src, lane * 16), n16)
    cp_async_ca_16(base + 512 + lane * 16, gmem_addr(src, 512 + lane * 16), 16 - (lane & 1) * 16)
    cp_async_commit()
    # group 2: ca.8 into [1024, 1280), ca.4 into [1536, 1664)
    n8 = 8
    if (lane & 7) == 2:
        n8 = 0
    if lane == 9:
        n8 = 4
    cp_async_ca_8(base + 1024 + lane * 8, gmem_addr(src, 1024 + lane * 8), n8)
    n4 = 4
    if (lane & 3) == 1:
        n4 = 0
    cp_async_ca_4(base + 1536 + lane * 4, gmem_addr(src, 1536 + lane * 4), n4)
    cp_async_commit()
    cp_async_wait_group(1)
    cuda.syncthreads()
    for e in range(lane, 1024, 32):
        out_mid[e] = sm[e]
    cuda.syncthreads()
    cp_async_wait_group(0)
    cuda.syncthreads()
    for e in range(lane, 2048, 32):
        out_end[e] = sm[e]
    cuda.syncthreads()
    cp_async_cg_16(base + 2048 + lane * 16, gmem_addr(src, lane * 16), 16)
    cp_async_commit()
    cuda.syncthreads()
    for e in range(lane, 512, 32):
        out_nowait[e] = sm[2048 + e]
    cuda.syncthreads()
    cp_async_wait_all()


@cuda.jit
def k_cvt(x, h, hb, o_f16x2, o_bf16x2, o_tf32, o_packh, o_unh, o_unf, o_unbf, o_bits, o_back, o_packb):
    i = cuda.grid(1)
    if i < (x.shape[0] >> 1):
        x0 = x[2 * i]
        x1 = x[2 * i + 1]
        o_f16x2[i] = cvt_f16x2_f32(x0, x1)
        bf = cvt_bf16x2_f32(x0, x1)
        o_bf16x2[i] = bf
        o_tf32[2 * i] = cvt_tf32_f32(x0)
        o_tf32[2 * i + 1] = cvt_tf32_f32(x1)
        p = pack_f16x2(h[2 * i], h[2 * i + 1])
        o_packh[i] = p
        u = unpack_f16x2(p)
        o_unh[2 * i] = u[0]
        o_unh[2 * i + 1] = u[1]
        uf = unpack_f16x2_f32(p)
        o_unf[2 * i] = uf[0]
        o_unf[2 * i + 1] = uf[1]
        ub = unpack_bf16x2_f32(bf)
        o_unbf[2 * i] = ub[0]
        o_unbf[2 * i + 1] = ub[1]
        bits = f32_as_u32(x0)
        o_bits[i] = bits
        o_back[i] = u32_as_f32(bits)
        o_packb[i] = pack_b16x2(hb[2 * i], hb[2 * i + 1])


@cuda.jit
def k_vec(src, dst):
    sm = cuda.shared.array(0, U8)
    lane = cuda.threadIdx.x
    v = ld_global_v4_b32(gmem_addr(src, lane * 16))
    st_shared_v4_b32(smem_addr(sm, lane * 16), v[0], v[1], v[2], v[3])
    cuda.syncthreads()
    w = ld_shared_v4_b32(smem_addr(sm, ((lane + 1) & 31) * 16))
    x = ld_shared_b32(smem_addr(sm, ((lane + 1) & 31) * 16 + 8))  # the same word as w[2]
    st_global_v4_b32(gmem_addr(dst, lane * 16), u32_as_f32(w[3]), x, w[1], w[0])


@cuda.jit
def k_static_dynamic(a, b, d):
    """Per block: A tile via cp.async into a static shared array, B tile into the
    dynamic one, then ldmatrix + mma; checks smem_addr of both kinds."""
    st = cuda.shared.array(512, U8)
    dy = cuda.shared.array(0, U8)
    lane = cuda.threadIdx.x
    blk = cuda.blockIdx.x
    sa = smem_addr(st, 0)
    sb = smem_addr(dy, 0)
    cp_async_cg_16(sa + lane * 16, gmem_addr(a, (blk * 32 + lane) * 16), 16)
    if lane < 16:
        cp_async_ca_16(sb + lane * 16, gmem_addr(b, (blk * 16 + lane) * 16), 16)
    cp_async_wait_all()
    cuda.syncthreads()
    fa = ldmatrix_x4(sa + (lane & 15) * 32 + (lane >> 4) * 16)
    fb = ldmatrix_x2_trans(sb + (lane & 15) * 16)
    r = mma_m16n8k16_f32f16(fa[0], fa[1], fa[2], fa[3], fb[0], fb[1], 0.0, 0.0, 0.0, 0.0)
    g = lane >> 2
    t = lane & 3
    d[blk, g, 2 * t] = r[0]
    d[blk, g, 2 * t + 1] = r[1]
    d[blk, g + 8, 2 * t] = r[2]
    d[blk, g + 8, 2 * t + 1] = r[3]


def make_pipeline_kernel(stages: int):
    """A multi-stage cp.async pipeline, one warp: D (16 x 32) = A (16 x K) @ B (K x 32).

    Each k-tile (A 16x16, B 16x32, f16) goes to one of ``stages`` shared-memory
    buffers; the loop waits with ``cp_async_wait_group(stages - 2)``, reads the
    tile with ldmatrix, runs four m16n8k16 MMAs and prefetches the tile
    ``stages - 1`` ahead.  Prefetches past the end are predicated off
    (src_size 0, clamped address).
    """
    wait_n = stages - 2
    stage_bytes = 1536  # A tile 512 B (rows of 32 B) + B tile 1024 B (rows of 64 B)

    @cuda.jit(device=True, inline="always")
    def load_tile(base, a, b, kt, k_tiles, stage, lane):
        sbase = base + stage * stage_bytes
        n = 16
        ktc = kt
        if kt >= k_tiles:
            n = 0
            ktc = 0
        r = lane >> 1
        cp_async_cg_16(sbase + r * 32 + (lane & 1) * 16,
                       gmem_addr(a, r * (32 * k_tiles) + ktc * 32 + (lane & 1) * 16), n)
        for i in range(2):
            ch = lane + 32 * i
            r = ch >> 2
            cp_async_cg_16(sbase + 512 + r * 64 + (ch & 3) * 16,
                           gmem_addr(b, (ktc * 16 + r) * 64 + (ch & 3) * 16), n)

    @cuda.jit
    def k_pipeline(a, b, d, k_tiles):
        sm = cuda.shared.array(0, U8)
        lane = cuda.threadIdx.x
        base = smem_addr(sm, 0)
        acc = cuda.local.array(16, np.float32)
        for i in range(16):
            acc[i] = 0.0
        for s in range(stages - 1):
            load_tile(base, a, b, s, k_tiles, s, lane)
            cp_async_commit()
        rd = 0
        wr = stages - 1
        for kt in range(k_tiles):
            cp_async_wait_group(wait_n)
            cuda.syncthreads()
            sbase = base + rd * stage_bytes
            fa = ldmatrix_x4(sbase + (lane & 15) * 32 + (lane >> 4) * 16)
            for j in range(4):
                fb = ldmatrix_x2_trans(sbase + 512 + (lane & 15) * 64 + j * 16)
                r = mma_m16n8k16_f32f16(
                    fa[0], fa[1], fa[2], fa[3], fb[0], fb[1],
                    acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3],
                )
                for i in range(4):
                    acc[4 * j + i] = r[i]
            load_tile(base, a, b, kt + stages - 1, k_tiles, wr, lane)
            cp_async_commit()
            rd += 1
            if rd == stages:
                rd = 0
            wr += 1
            if wr == stages:
                wr = 0
        cp_async_wait_all()
        g = lane >> 2
        t = lane & 3
        for j in range(4):
            n0 = j * 8 + 2 * t
            d[g, n0] = acc[4 * j]
            d[g, n0 + 1] = acc[4 * j + 1]
            d[g + 8, n0] = acc[4 * j + 2]
            d[g + 8, n0 + 1] = acc[4 * j + 3]

    return k_pipeline, stage_bytes


# ---------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------

RNG = np.random.default_rng(1234)


def check_mma_f16():
    a = RNG.standard_normal((16, 16)).astype(np.float16)
    b = RNG.standard_normal((16, 8)).astype(np.float16)
    c = RNG.standard_normal((16, 8)).astype(np.float32)
    d = np.zeros((16, 8), np.float32)
    k_mma_f16[1, 32](a, b, c, d)
    ref = a.astype(np.float64) @ b.astype(np.float64) + c
    return _close("D", d, ref, 1e-4, 1e-4)


def check_mma_bf16():
    a = bf16_bits_rne(RNG.standard_normal((16, 16)).astype(np.float32))
    b = bf16_bits_rne(RNG.standard_normal((16, 8)).astype(np.float32))
    c = RNG.standard_normal((16, 8)).astype(np.float32)
    d = np.zeros((16, 8), np.float32)
    k_mma_bf16[1, 32](a, b, c, d)
    ref = bf16_to_f32(a).astype(np.float64) @ bf16_to_f32(b).astype(np.float64) + c
    return _close("D", d, ref, 1e-4, 1e-4)


def check_mma_tf32():
    a = RNG.standard_normal((16, 8)).astype(np.float32)
    b = RNG.standard_normal((8, 8)).astype(np.float32)
    c = RNG.standard_normal((16, 8)).astype(np.float32)
    d = np.zeros((16, 8), np.float32)
    d_raw = np.zeros((16, 8), np.float32)
    k_mma_tf32[1, 32](a, b, c, d, d_raw)
    at = tf32_bits_rna(a).view(np.float32).astype(np.float64)
    bt = tf32_bits_rna(b).view(np.float32).astype(np.float64)
    ok1, m1 = _close("D(cvt.rna)", d, at @ bt + c, 1e-4, 1e-4)
    # Informational: how the tensor core treats full float32 bit patterns.
    ref_trunc = tf32_trunc(a).astype(np.float64) @ tf32_trunc(b).astype(np.float64) + c
    ok2, m2 = _close("raw f32 operands vs truncated-tf32 reference", d_raw, ref_trunc, 1e-5, 1e-5)
    _, m3 = _close("vs rna-tf32 reference", d_raw, at @ bt + c, 1, 1)
    full = a.astype(np.float64) @ b.astype(np.float64) + c
    _, m4 = _close("vs float32 reference", d_raw, full, 1, 1)
    verdict = "matches truncation" if ok2 else "does NOT match truncation"
    return ok1, f"{m1}; info: {m2} ({verdict}), {m3}, {m4}"


def check_mma_f64():
    a = RNG.standard_normal((8, 4))
    b = RNG.standard_normal((4, 8))
    c = RNG.standard_normal((8, 8))
    d = np.zeros((8, 8))
    k_mma_f64[1, 32](a, b, c, d)
    return _close("D", d, a @ b + c, 1e-12, 1e-12)


def _ldsm_expected(m: np.ndarray, n: int, trans: bool) -> np.ndarray:
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    out = np.zeros((32, n), np.uint32)
    for i in range(n):
        mi = m[i].T if trans else m[i]
        out[:, i] = mi[g, 2 * t].astype(np.uint32) | (mi[g, 2 * t + 1].astype(np.uint32) << 16)
    return out


def check_ldmatrix():
    m = RNG.integers(0, 1 << 16, size=(4, 8, 8), dtype=np.uint16)
    outs = [np.zeros((32, n), np.uint32) for n in (1, 2, 4, 1, 2, 4)]
    k_ldmatrix[1, 32, 0, 32 * _LDSM_ROW_BYTES](m, *outs)
    msgs = []
    ok = True
    for out, n, trans in zip(outs, (1, 2, 4, 1, 2, 4), (False,) * 3 + (True,) * 3):
        good, msg = _equal(f"x{n}{'.trans' if trans else ''}", out, _ldsm_expected(m, n, trans))
        ok &= good
        msgs.append(msg)
    return ok, "; ".join(msgs)


def _ldsm_mma(nw: int):
    a = RNG.standard_normal((16, 16)).astype(np.float16)
    b = RNG.standard_normal((16, 8 * nw)).astype(np.float16)
    bt = np.ascontiguousarray(b.T)
    c = RNG.standard_normal((16, 8 * nw)).astype(np.float32)
    d = np.zeros((16, 8 * nw), np.float32)
    d2 = np.zeros((16, 8 * nw), np.float32)
    k_ldsm_mma[1, 32 * nw, 0, 512 + 512 * nw](a, b, bt, c, d, d2)
    ab = a.astype(np.float64) @ b.astype(np.float64)
    ok1, m1 = _close("A@B+C (x4, x2.trans)", d, ab + c, 1e-4, 1e-4)
    ok2, m2 = _close("A@B (x4, x2 on B^T)", d2, ab, 1e-4, 1e-4)
    return ok1 and ok2, f"{m1}; {m2}"


def check_ldsm_mma_1warp():
    return _ldsm_mma(1)


def check_ldsm_mma_2warps():
    return _ldsm_mma(2)


def check_cp_async():
    src = RNG.integers(0, 256, size=2048, dtype=np.uint8)
    out_mid = np.zeros(1024, np.uint8)
    out_end = np.zeros(2048, np.uint8)
    out_nowait = np.zeros(512, np.uint8)
    k_cp_async[1, 32, 0, 2560](src, out_mid, out_end, out_nowait)

    want = np.full(2048, 0xAB, np.uint8)
    for lane in range(32):
        n16 = 0 if (lane & 3) == 3 else 16
        if lane == 5:
            n16 = 8
        o = lane * 16
        want[o : o + 16] = 0
        want[o : o + n16] = src[o : o + n16]
        o = 512 + lane * 16
        n = 16 - (lane & 1) * 16
        want[o : o + 16] = 0
        want[o : o + n] = src[o : o + n]
        n8 = 0 if (lane & 7) == 2 else 8
        if lane == 9:
            n8 = 4
        o = 1024 + lane * 8
        want[o : o + 8] = 0
        want[o : o + n8] = src[o : o + n8]
        n4 = 0 if (lane & 3) == 1 else 4
        o = 1536 + lane * 4
        want[o : o + 4] = 0
        want[o : o + n4] = src[o : o + n4]
    ok1, m1 = _equal("after wait_group 1 (group 1)", out_mid, want[:1024])
    ok2, m2 = _equal("after wait_group 0 (all)", out_end, want)
    stale = bool(np.all(out_nowait == 0xAB))
    landed = bool(np.array_equal(out_nowait, src[:512]))
    if SIMULATED:
        ok3 = stale
        m3 = "no-wait copy stale as modelled" if stale else "no-wait copy visible before its wait"
    else:
        ok3 = True
        m3 = f"info: no-wait read saw {'stale' if stale else 'landed' if landed else 'mixed'} data"
    return ok1 and ok2 and ok3, f"{m1}; {m2}; {m3}"


def check_cvt():
    specials = np.array(
        [
            1.0, -1.0, 0.0, -0.0, 65504.0, 65520.0, 1e-8, -3.0e38, 3.4e38, np.inf, -np.inf,
            1e-40, -2.5e-39,
        ],
        np.float32,
    )
    ties = np.array(
        [0x3F808000, 0x3F818000, 0xBF808000, 0x3F801000, 0xBF801000, 0x3F803000,
         0x3F800FFF, 0x7F7FFFFF, 0x00001000, 0x3F80FFFF],
        np.uint32,
    ).view(np.float32)
    rnd = (RNG.standard_normal(256 - specials.size - ties.size) * 100).astype(np.float32)
    x = np.concatenate([specials, ties, rnd]).astype(np.float32)
    n = x.size // 2
    h = RNG.standard_normal(x.size).astype(np.float16)
    hb = RNG.integers(0, 1 << 16, size=x.size, dtype=np.uint16)
    o_f16x2 = np.zeros(n, np.uint32)
    o_bf16x2 = np.zeros(n, np.uint32)
    o_tf32 = np.zeros(x.size, np.uint32)
    o_packh = np.zeros(n, np.uint32)
    o_unh = np.zeros(x.size, np.float16)
    o_unf = np.zeros(x.size, np.float32)
    o_unbf = np.zeros(x.size, np.float32)
    o_bits = np.zeros(n, np.uint32)
    o_back = np.zeros(n, np.float32)
    o_packb = np.zeros(n, np.uint32)
    k_cvt[(n + 31) // 32, 32](
        x, h, hb, o_f16x2, o_bf16x2, o_tf32, o_packh, o_unh, o_unf, o_unbf, o_bits, o_back, o_packb
    )
    with np.errstate(over="ignore"):
        f16 = x.astype(np.float16).view(np.uint16).astype(np.uint32)
    want_f16x2 = f16[0::2] | (f16[1::2] << 16)
    bfb = bf16_bits_rne(x).astype(np.uint32)
    want_bf16x2 = bfb[0::2] | (bfb[1::2] << 16)
    hbits = h.view(np.uint16).astype(np.uint32)
    want_packh = hbits[0::2] | (hbits[1::2] << 16)
    hbb = hb.astype(np.uint32)
    xb = x.view(np.uint32)

    def pair(i):
        return f"x=({hex(int(xb[2 * i[0]]))}, {hex(int(xb[2 * i[0] + 1]))})"

    def one(i):
        return f"x={hex(int(xb[i[0]]))}"

    results = [
        _equal("cvt_f16x2_f32", o_f16x2, want_f16x2, pair),
        _equal("cvt_bf16x2_f32", o_bf16x2, want_bf16x2, pair),
        _equal("cvt_tf32_f32", o_tf32, tf32_bits_rna(x), one),
        _equal("pack_f16x2", o_packh, want_packh),
        _equal("unpack_f16x2", o_unh.view(np.uint16), h.view(np.uint16)),
        _equal("unpack_f16x2_f32", o_unf, h.astype(np.float32)),
        _equal("unpack_bf16x2_f32", o_unbf.view(np.uint32), bf16_to_f32(bfb).view(np.uint32)),
        _equal("f32_as_u32", o_bits, x[0::2].view(np.uint32)),
        _equal("u32_as_f32", o_back.view(np.uint32), x[0::2].view(np.uint32)),
        _equal("pack_b16x2", o_packb, hbb[0::2] | (hbb[1::2] << 16)),
    ]
    return all(r[0] for r in results), "; ".join(r[1] for r in results)


def check_vector_ldst():
    src = RNG.integers(0, 1 << 32, size=128, dtype=np.uint32)
    dst = np.zeros(128, np.uint32)
    k_vec[1, 32, 0, 512](src, dst)
    want = np.zeros(128, np.uint32)
    for lane in range(32):
        s = ((lane + 1) & 31) * 4
        want[lane * 4 : lane * 4 + 4] = src[s : s + 4][::-1]
    return _equal("ld/st global+shared v4", dst, want)


def _pipeline(stages: int):
    k_tiles = 8
    a = RNG.standard_normal((16, 16 * k_tiles)).astype(np.float16)
    b = RNG.standard_normal((16 * k_tiles, 32)).astype(np.float16)
    d = np.zeros((16, 32), np.float32)
    kernel, stage_bytes = make_pipeline_kernel(stages)
    kernel[1, 32, 0, stages * stage_bytes](a, b, d, k_tiles)
    return _close(f"{stages}-stage A@B (K={16 * k_tiles})", d, a.astype(np.float64) @ b.astype(np.float64), 1e-4, 1e-4)


def check_static_dynamic_smem():
    nblk = 3
    a = RNG.standard_normal((nblk, 16, 16)).astype(np.float16)
    b = RNG.standard_normal((nblk, 16, 8)).astype(np.float16)
    d = np.zeros((nblk, 16, 8), np.float32)
    k_static_dynamic[nblk, 32, 0, 256](a, b, d)
    ref = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
    return _close(f"{nblk} blocks, static A + dynamic B", d, ref, 1e-4, 1e-4)


def check_pipeline_2stage():
    return _pipeline(2)


def check_pipeline_3stage():
    return _pipeline(3)


def check_pipeline_4stage():
    return _pipeline(4)


CHECKS = {
    "mma_f16": check_mma_f16,
    "mma_bf16": check_mma_bf16,
    "mma_tf32": check_mma_tf32,
    "mma_f64": check_mma_f64,
    "ldmatrix": check_ldmatrix,
    "ldsm_mma_1warp": check_ldsm_mma_1warp,
    "ldsm_mma_2warps": check_ldsm_mma_2warps,
    "cp_async": check_cp_async,
    "cvt": check_cvt,
    "vector_ldst": check_vector_ldst,
    "static_dynamic_smem": check_static_dynamic_smem,
    "pipeline_2stage": check_pipeline_2stage,
    "pipeline_3stage": check_pipeline_3stage,
    "pipeline_4stage": check_pipeline_4stage,
}


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", action="store_true", help="run in numba's CUDA simulator")
    ap.add_argument("--only", default="", help="comma-separated check names")
    ap.add_argument("--list", action="store_true", help="list the checks and exit")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(CHECKS))
        return 0
    if args.sim and not SIMULATED:
        print("FAIL setup: --sim given but the simulator was not selected before numba was imported")
        return 1
    names = [n for n in args.only.split(",") if n] or list(CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        print(f"unknown checks: {unknown}; known: {list(CHECKS)}")
        return 2
    if SIMULATED:
        sys.setswitchinterval(1e-4)  # simulated threads hand over the GIL sooner
    print(f"backend: {'simulator' if SIMULATED else 'gpu'}")
    failed = 0
    for name in names:
        try:
            ok, msg = CHECKS[name]()
        except Exception as e:  # report and go on with the other checks
            ok, msg = False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: {msg}", flush=True)
    print(f"{len(names) - failed}/{len(names)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
