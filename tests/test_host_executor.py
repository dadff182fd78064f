"""The host reference executor (layoutalg.host_gemm) against numpy, and its pieces against
the PTX-ISA emulation of the atoms (mma_atoms.emulate).

Every configuration runs in well under a few seconds: the executor evaluates each
thread's partitions with numpy, and runs one numpy product per MMA atom.
"""

import numpy as np
import pytest

from layoutalg import (
    CopyAtom, Layout, LayoutError, LayoutTypeError, Swizzle, composition, make_identity_tensor,
    make_tensor, make_tiled_copy, make_tiled_copy_A, make_tiled_mma, tile_to_shape,
)
from layoutalg.host_gemm import (
    CtaGemm, coords, gather, offsets, run_copy, run_cta, run_mma, scatter,
)
from layoutalg.tiled_copy import make_tiled_copy_impl
from mma_atoms import emulate
from mma_atoms.numerics import quantize

F16 = "SM80_16x8x16_F32F16F16F32_TN"
TF32 = "SM80_16x8x8_F32TF32TF32F32_TN"
LDSM = "SM75_U32x4_LDSM_N"
RNG = np.random.default_rng(2024)


def f16_config(BM, BN, BK=64, swizzle=False, ldsm=True):
    """sgemm_sm80.cu's half-precision setup: 2x2 atoms, 32x32x16 tile, 16x8 k-major cp.async of 1x8."""
    mma = make_tiled_mma(F16, (2, 2, 1), (32, 32, 16))
    g2s = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((16, 8), (8, 1)), Layout((1, 8)))
    if swizzle:
        atom = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))      # (M8,K64) -> offset, swizzled
        sA, sB = tile_to_shape(atom, (BM, BK)), tile_to_shape(atom, (BN, BK))
    else:
        sA, sB = Layout((BM, BK), (BK, 1)), Layout((BN, BK), (BK, 1))
    s2r = CopyAtom(LDSM, "f16") if ldsm else None
    return CtaGemm(mma, (BM, BN, BK), g2s, g2s, sA, sB, s2r, s2r)


def tf32_config(BM=128, BN=128, BK=16, swizzle=False):
    """The seed: tf32 atom, 2x2 atoms, 32x32x8 tile; A M-major through UniversalCopy, B K-major
    through ldmatrix (tf32 values are 32 bits: x4 moves 4 per thread)."""
    mma = make_tiled_mma(TF32, (2, 2, 1), (32, 32, 8))
    cp = CopyAtom("SM80_CP_ASYNC_CACHEALWAYS_128", "tf32")
    tm = BM // 4                                                                  # threads along M
    gA = make_tiled_copy(cp, Layout((tm, 128 // tm)), Layout((4, 1)))             # m-major, 4 along M
    gB = make_tiled_copy(cp, Layout((32, 4), (4, 1)), Layout((1, 4)))             # k-major, 4 along K
    if swizzle:
        sA = tile_to_shape(composition(Swizzle(3, 2, 3), Layout((32, 8), (1, 32))), (BM, BK))
        sB = tile_to_shape(composition(Swizzle(3, 2, 3), Layout((8, 32), (32, 1))), (BN, BK))
    else:
        sA, sB = Layout((BM, BK)), Layout((BN, BK), (BK, 1))
    return CtaGemm(mma, (BM, BN, BK), gA, gB, sA, sB,
                   CopyAtom("UniversalCopy_32", "tf32"), CopyAtom(LDSM, "tf32"))


def f16_operands(M, N, K):
    A = RNG.standard_normal((M, K)).astype(np.float16)              # K-major
    B = RNG.standard_normal((N, K)).astype(np.float16)
    return A, B, A.astype(np.float64) @ B.astype(np.float64).T


def tf32_operands(M, N, K):
    A = np.asfortranarray(RNG.standard_normal((M, K)).astype(np.float32))   # M-major
    B = RNG.standard_normal((N, K)).astype(np.float32)                      # K-major
    return A, B, quantize(A, "tf32") @ quantize(B, "tf32").T


# ---- whole CTA tiles against numpy ---------------------------------------------------

@pytest.mark.parametrize("swizzle", [False, True])
def test_f16_ldmatrix_gemm(swizzle):
    A, B, ref = f16_operands(64, 64, 128)                            # two k-tiles of 64
    C = run_cta(f16_config(64, 64, swizzle=swizzle), A, B, np.zeros((64, 64), np.float32))
    assert np.allclose(C, ref, rtol=1e-5, atol=1e-4)


def test_f16_plain_register_copies():
    A, B, ref = f16_operands(32, 64, 64)
    C = run_cta(f16_config(32, 64, ldsm=False), A, B, np.zeros((32, 64), np.float32))
    assert np.allclose(C, ref, rtol=1e-5, atol=1e-4)


def test_tf32_seed_configuration():
    A, B, ref = tf32_operands(128, 128, 32)                          # 128x128x16 block, 2 k-tiles
    C = run_cta(tf32_config(), A, B, np.zeros((128, 128), np.float32))
    assert np.allclose(C, ref, rtol=1e-5, atol=1e-4)
    # the inputs really are rounded to tf32 (the full-precision product differs)
    assert not np.allclose(C, A.astype(np.float64) @ B.T, rtol=1e-6, atol=1e-6)


def test_tf32_swizzled_smem():
    A, B, ref = tf32_operands(64, 64, 64)
    C = run_cta(tf32_config(64, 64, 32, swizzle=True), A, B, np.zeros((64, 64), np.float32))
    assert np.allclose(C, ref, rtol=1e-5, atol=1e-4)


def test_m_major_a_through_transposing_ldmatrix():
    """A M-major in gmem and (swizzled) smem, read with ldmatrix.trans (SM75_U16x8_LDSM_T)."""
    mma = make_tiled_mma(F16, (2, 2, 1), (32, 32, 16))
    gA = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEALWAYS_128", "f16"), Layout((8, 16)), Layout((8, 1)))
    gB = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((32, 4), (4, 1)), Layout((1, 8)))
    sA = tile_to_shape(composition(Swizzle(3, 3, 3), Layout((64, 8), (1, 64))), (64, 32))   # (M64,K8) atom
    cfg = CtaGemm(mma, (64, 64, 32), gA, gB, sA, Layout((64, 32), (32, 1)),
                  CopyAtom("SM75_U16x8_LDSM_T", "f16"), CopyAtom(LDSM, "f16"))
    A, B, ref = f16_operands(64, 64, 64)
    C = run_cta(cfg, np.asfortranarray(A), B, np.zeros((64, 64), np.float32))
    assert np.allclose(C, ref, rtol=1e-5, atol=1e-4)


def test_exact_small_integers():
    """With small integers every product and sum is exact: C must equal A @ B.T bit for bit."""
    A = RNG.integers(-4, 5, (64, 128)).astype(np.float16)
    B = RNG.integers(-4, 5, (64, 128)).astype(np.float16)
    C = run_cta(f16_config(64, 64, swizzle=True), A, B, np.zeros((64, 64), np.float32))
    assert np.array_equal(C, (A.astype(np.float32) @ B.astype(np.float32).T))


def test_int8_gemm_is_exact():
    """s8 x s8 -> s32 (mma.m16n8k32): 16 values per 128-bit cp.async and per ldmatrix row."""
    mma = make_tiled_mma("SM80_16x8x32_S32S8S8S32_TN", (2, 2, 1), (32, 32, 32))
    g2s = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "s8"), Layout((16, 8), (8, 1)), Layout((1, 16)))
    smem = Layout((32, 128), (128, 1))
    s2r = CopyAtom(LDSM, "s8")
    cfg = CtaGemm(mma, (32, 32, 128), g2s, g2s, smem, smem, s2r, s2r)
    A = RNG.integers(-128, 128, (32, 256)).astype(np.int8)
    B = RNG.integers(-128, 128, (32, 256)).astype(np.int8)
    C = run_cta(cfg, A, B, np.zeros((32, 32), np.int32))
    assert np.array_equal(C, A.astype(np.int64) @ B.astype(np.int64).T)


def test_every_cta_of_a_larger_problem_and_alpha_beta():
    A, B, ref = f16_operands(64, 96, 64)
    C0 = RNG.standard_normal((64, 96)).astype(np.float32)
    C = C0.copy()
    cfg = f16_config(32, 32)
    for bm in range(2):
        for bn in range(3):
            run_cta(cfg, A, B, C, (bm, bn), alpha=2.0, beta=0.5)
    assert np.allclose(C, 2.0 * ref + 0.5 * C0, rtol=1e-5, atol=1e-4)


def test_residues_are_predicated():
    """M, N, K not multiples of the tile: loads are zero-filled, stores masked (elem_less)."""
    M, N, K = 40, 50, 72                                             # K rows stay 16-byte aligned
    A, B, ref = f16_operands(M, N, K)
    C0 = np.full((M, N), 7.0, np.float32)
    C = C0.copy()
    cfg = f16_config(32, 32)
    run_cta(cfg, A, B, C, (1, 1))                                    # the tile at rows 32.., cols 32..
    assert np.allclose(C[32:, 32:], ref[32:, 32:], rtol=1e-5, atol=1e-4)
    outside = np.ones((M, N), bool)
    outside[32:, 32:] = False
    assert (C[outside] == 7.0).all()
    with pytest.raises(LayoutError, match="outside the 40x50 problem"):
        run_cta(cfg, A, B, C, (2, 0))


def test_column_major_c_and_transposed_views():
    A, B, ref = f16_operands(64, 32, 64)
    C = np.asfortranarray(np.zeros((64, 32), np.float32))
    run_cta(f16_config(64, 32), A, B, C)
    assert C.flags.f_contiguous and np.allclose(C, ref, rtol=1e-5, atol=1e-4)


# ---- the pieces -----------------------------------------------------------------------

def test_gmem_to_swizzled_smem_lands_at_swizzled_offsets():
    cfg = f16_config(64, 64, swizzle=True)
    A = RNG.standard_normal((64, 64)).astype(np.float16)
    smem = np.zeros(64 * 64, np.float16)
    sA = make_tensor(smem, cfg.smem_a)
    gA = make_tensor(A)
    run_copy(cfg.copy_a, [cfg.copy_a.get_slice(t).partition_S(gA) for t in range(128)],
             [cfg.copy_a.get_slice(t).partition_D(sA) for t in range(128)])
    sw = Swizzle(3, 3, 3)
    for m, k in [(0, 0), (1, 8), (5, 17), (63, 63)]:
        assert smem[sw(64 * m + k)] == A[m, k]
    assert smem[64 + 8] == A[1, 0]                                   # row 1's first 8 moved to chunk 1


def test_ldmatrix_execution_agrees_with_the_ptx_emulation():
    """run_copy executes ldmatrix from the atom's tables; mma_atoms.emulate.ldmatrix from the PTX ISA.
    Feed both the same shared memory and the row addresses the partition gives each lane."""
    mma = make_tiled_mma(F16, (2, 2, 1), (32, 32, 16))
    cp = make_tiled_copy_A(CopyAtom(LDSM, "f16"), mma)
    smem = RNG.standard_normal(32 * 16).astype(np.float16)
    sA = make_tensor(smem, Layout((32, 16), (16, 1)))                   # (M,K) K-major
    srcs = [cp.get_slice(t).partition_S(sA) for t in range(128)]
    frags = [mma.get_slice(t).partition_fragment_A(sA) for t in range(128)]
    run_copy(cp, srcs, [cp.get_slice(t).retile_D(f) for t, f in enumerate(frags)])
    for w in range(4):
        addrs = [2 * int(offsets(srcs[32 * w + l])[0]) for l in range(32)]   # byte address of each row
        regs = emulate.ldmatrix(LDSM, smem.view(np.uint8), addrs)           # (32 lanes, 4 registers)
        for l in range(32):
            got = gather(cp.get_slice(32 * w + l).retile_D(frags[32 * w + l]))  # in register order
            assert got.view(np.uint16).tolist() == regs[l].view(np.uint16).tolist()


def test_mma_execution_agrees_with_the_ptx_emulation():
    """One atom: run_mma (through layout_a/b/c) vs emulate.mma (PTX fragment formulas)."""
    mma = make_tiled_mma(F16)
    A = RNG.standard_normal((16, 16)).astype(np.float16)
    B = RNG.standard_normal((8, 16)).astype(np.float16)
    C = RNG.standard_normal((16, 8)).astype(np.float32)
    tA, tB, tC = make_tensor(A), make_tensor(B), make_tensor(C)
    th = [mma.get_slice(t) for t in range(32)]
    fa = [s.partition_fragment_A(tA) for s in th]
    fb = [s.partition_fragment_B(tB) for s in th]
    fc = [s.partition_fragment_C(tC) for s in th]
    for s, f, src in zip(th, fa, (s.partition_A(tA) for s in th)):
        scatter(f, gather(src))
    for s, f in zip(th, fb):
        scatter(f, gather(s.partition_B(tB)))
    for s, f in zip(th, fc):
        scatter(f, gather(s.partition_C(tC)))
    a = np.stack([gather(f) for f in fa])
    b = np.stack([gather(f) for f in fb])
    c = np.stack([gather(f) for f in fc])
    run_mma(mma, fa, fb, fc)
    d = emulate.mma(F16, a.astype(np.float64), b.astype(np.float64), c.astype(np.float64))
    assert np.array_equal(np.stack([gather(f) for f in fc]), d.astype(np.float32))


def test_offsets_and_coords_helpers():
    t = make_tensor(np.zeros((4, 6)))
    assert offsets(t[2, None]).tolist() == [12, 13, 14, 15, 16, 17]
    sw = composition(Swizzle(1, 0, 2), Layout(8))
    assert offsets(sw).tolist() == [Swizzle(1, 0, 2)(i) for i in range(8)]
    c = make_identity_tensor((3, 5))
    assert coords(c[None, 4]).tolist() == [[0, 4], [1, 4], [2, 4]]
    with pytest.raises(LayoutTypeError):
        coords(t)


# ---- bad configurations -------------------------------------------------------------

def test_mismatched_thread_counts():
    cfg = f16_config(64, 64)
    g64 = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((8, 8), (8, 1)), Layout((1, 8)))
    with pytest.raises(LayoutError, match="copy_a .* uses 64 threads but the TiledMMA has 128"):
        CtaGemm(cfg.tiled_mma, cfg.tile_mnk, g64, cfg.copy_b, cfg.smem_a, cfg.smem_b)


def test_tile_shapes_must_fit():
    cfg = f16_config(64, 64)
    with pytest.raises(LayoutError, match="CTA tile M = 48 is not a multiple of the TiledMMA tile 32"):
        CtaGemm(cfg.tiled_mma, (48, 64, 64), cfg.copy_a, cfg.copy_b, cfg.smem_a, cfg.smem_b)
    with pytest.raises(LayoutError, match=r"copy_a tile \(16, 64\) does not divide the \(64,32\) CTA tile"):
        CtaGemm(cfg.tiled_mma, (64, 64, 32), cfg.copy_a, cfg.copy_b, Layout((64, 32)), Layout((64, 32)))
    with pytest.raises(LayoutError, match="smem_b .* is not a \\(64,64\\) layout"):
        CtaGemm(cfg.tiled_mma, (64, 64, 64), cfg.copy_a, cfg.copy_b, cfg.smem_a, Layout((32, 64)))
    with pytest.raises(LayoutTypeError, match="s2r_a must be a CopyAtom"):
        CtaGemm(cfg.tiled_mma, (64, 64, 64), cfg.copy_a, cfg.copy_b, cfg.smem_a, cfg.smem_b, LDSM)
    with pytest.raises(LayoutError, match="A operand is f16"):          # CUTLASS issue 1988
        CtaGemm(cfg.tiled_mma, (64, 64, 64), cfg.copy_a, cfg.copy_b, cfg.smem_a, cfg.smem_b,
                CopyAtom(LDSM, "tf32"))


def test_operand_shapes_must_agree():
    A, B, _ = f16_operands(64, 64, 64)
    with pytest.raises(LayoutError, match="shapes do not match"):
        run_cta(f16_config(64, 64), A, B[:, :32], np.zeros((64, 64), np.float32))
    with pytest.raises(LayoutTypeError):
        run_cta(f16_config(64, 64), A, B, [[0.0]])


def test_a_copy_that_does_not_cover_smem_is_caught():
    cfg = f16_config(32, 32)
    atom = CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16")
    # every thread copies the same 8 elements: (tid,vid) -> (m,k) with stride 0 over threads
    lazy = make_tiled_copy_impl(atom, Layout((128, 8), (0, 16)), (16, 64))
    bad = CtaGemm(cfg.tiled_mma, cfg.tile_mnk, lazy, cfg.copy_b, cfg.smem_a, cfg.smem_b)
    A, B, _ = f16_operands(32, 32, 64)
    with pytest.raises(LayoutError, match="does not write each of the 2048 smem elements exactly once"):
        run_cta(bad, A, B, np.zeros((32, 32), np.float32))


def test_vector_copies_need_contiguous_global_rows():
    A = np.asfortranarray(RNG.standard_normal((64, 64)).astype(np.float16))   # M-major A
    B = RNG.standard_normal((64, 64)).astype(np.float16)
    with pytest.raises(LayoutError, match="vector width exceeds the layout's contiguity"):
        run_cta(f16_config(64, 64), A, B, np.zeros((64, 64), np.float32))


def test_the_partitioning_guide_runs():
    import doctest
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "partitioning.md")
    result = doctest.testfile(path, module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 30
