"""TiledCopy partitioning against reference facts and the PTX ``ldmatrix`` semantics.

References: CuTe's printed ``TiledLayout_TV``/``Tiler_MN`` for the sgemm_sm80
tutorial's 16x8 k-major cp.async copy, the PTX ISA's ``ldmatrix`` description
(lanes 8j..8j+7 give the rows of matrix j; lane l receives row l/4, elements
2(l%4) and 2(l%4)+1 of matrix j in register j), and coverage properties.
"""

import itertools
from collections import Counter

import numpy as np
import pytest

from layoutalg import (
    CopyAtom, Layout, LayoutError, LayoutTypeError, make_identity_tensor, make_tensor,
    make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_copy_C, make_tiled_mma,
    size,
)
from layoutalg.host_gemm import offsets
from layoutalg.tiled_copy import vector_width

F16 = "SM80_16x8x16_F32F16F16F32_TN"
TF32 = "SM80_16x8x8_F32TF32TF32F32_TN"
LDSM = "SM75_U32x4_LDSM_N"


@pytest.fixture(scope="module")
def mma16():
    return make_tiled_mma(F16, (2, 2, 1), (32, 32, 16))


@pytest.fixture(scope="module")
def mma_tf32():
    return make_tiled_mma(TF32, (2, 2, 1), (32, 32, 8))


@pytest.fixture(scope="module")
def g2s():
    # sgemm_sm80.cu: 16x8 k-major threads, 1x8 values, 128-bit cp.async of f16
    return make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"),
                           Layout((16, 8), (8, 1)), Layout((1, 8)))


def vals(t):
    return [tuple(t[i]) for i in range(size(t))]


# ---- make_tiled_copy ------------------------------------------------------------------

def test_cp_async_tiled_copy_matches_cutes_print(g2s):
    # CuTe: Tiler_MN (_16,_64), TiledLayout_TV ((_8,_16),_8):((_128,_1),_16)
    assert g2s.tiler_mn == (16, 64)
    assert g2s.layout_tv == Layout(((8, 16), 8), ((128, 1), 16))
    assert g2s.size == 128
    assert g2s.get_layoutS_TV() == g2s.get_layoutD_TV()


def test_cp_async_partition_gives_each_thread_8_contiguous_elements(g2s):
    a = np.arange(128 * 64, dtype=np.float16).reshape(128, 64)       # (M,K) K-major tile
    t = make_tensor(a)
    owned = Counter()
    for thr in range(128):
        p = g2s.get_slice(thr).partition_S(t)                        # (CPY,CPY_M,CPY_K)
        assert p.layout.shape == ((8, 1), 8, 1)
        off = offsets(p).reshape(-1, 8)                              # one row per cp.async
        assert (off == off[:, :1] + np.arange(8)).all()              # 8 contiguous f16 = 128 bits
        assert (off[:, 0] % 8 == 0).all()                            # 16-byte aligned
        m, k = thr // 8, 8 * (thr % 8)                               # thread layout (16,8):(8,1)
        assert off[0, 0] == 64 * m + k
        assert (np.diff(off[:, 0]) == 16 * 64).all()                 # then every 16 rows
        owned.update(off.ravel().tolist())
    assert sorted(owned) == list(range(128 * 64)) and set(owned.values()) == {1}


def test_partition_S_and_D_agree_for_a_one_thread_atom(g2s):
    cT = make_identity_tensor((128, 64))
    for thr in (0, 77):
        s = g2s.get_slice(thr)
        assert vals(s.partition_S(cT)) == vals(s.partition_D(cT))


def test_m_major_four_value_copy_of_the_tutorial():
    # sgemm_sm80.cu (NT): Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, float>, thr 32x8 m-major, val 4x1
    cp = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEALWAYS_128", "f32"), Layout((32, 8)), Layout((4, 1)))
    assert cp.tiler_mn == (128, 8)
    c = make_identity_tensor((128, 8))
    for thr in (0, 1, 31, 32, 255):
        assert vals(cp.get_slice(thr).partition_S(c)) == [(4 * (thr % 32) + v, thr // 32) for v in range(4)]


# ---- make_tiled_copy_A/B with ldmatrix -------------------------------------------------

def test_ldsm_copy_A_uses_the_mma_layout(mma16):
    cp = make_tiled_copy_A(CopyAtom(LDSM, "f16"), mma16)
    assert cp.layout_tv == mma16.get_layoutA_TV()
    assert cp.tiler_mn == (32, 16)
    d, a = cp.get_layoutD_TV(), mma16.get_layoutA_TV()             # ldmatrix's ref layout is its dst
    assert size(d) == size(a) and all(d(i) == a(i) for i in range(size(a)))


def test_ldsm_source_rows_follow_the_ptx_isa(mma16):
    """Lane l of warp w provides row (l % 8) of 8x8 matrix l // 8: x4 covers a 16x16 block of A."""
    cp = make_tiled_copy_A(CopyAtom(LDSM, "f16"), mma16)
    cA = make_identity_tensor((32, 16))
    for thr in range(128):
        l, wm = thr % 32, (thr // 32) % 2
        j = l // 8
        m0, k0 = 16 * wm + 8 * (j % 2) + l % 8, 8 * (j // 2)
        assert vals(cp.get_slice(thr).partition_S(cA)) == [(m0, k0 + v) for v in range(8)]


@pytest.mark.parametrize("which", ["A", "B"])
def test_ldsm_destination_registers_follow_the_ptx_isa(mma16, which):
    """Register j of lane l holds elements 2(l%4), 2(l%4)+1 of row l/4 of matrix j, the matrix
    whose rows lanes 8j..8j+7 provided: checked on coordinates for every thread."""
    make = make_tiled_copy_A if which == "A" else make_tiled_copy_B
    cp = make(CopyAtom(LDSM, "f16"), mma16)
    shape = (32, 32)
    c = make_identity_tensor(shape)
    src = {t: vals(cp.get_slice(t).partition_S(c)) for t in range(128)}
    part = (lambda s: s.partition_A(c)) if which == "A" else (lambda s: s.partition_B(c))
    for t in range(128):
        dst = vals(cp.get_slice(t).retile_D(part(mma16.get_slice(t))))   # the MMA fragment, as copied
        w, l = t // 32, t % 32
        n_instr = len(dst) // 8
        for i in range(n_instr):
            for j, half in itertools.product(range(4), range(2)):
                src_lane = 32 * w + 8 * j + l // 4
                assert dst[8 * i + 2 * j + half] == src[src_lane][8 * i + 2 * (l % 4) + half]


def test_retile_matches_partition_modes(mma16):
    sA = make_tensor(np.zeros((64, 32), np.float16))                 # (M,K) K-major smem
    cp = make_tiled_copy_A(CopyAtom(LDSM, "f16"), mma16)
    for thr in (0, 100):
        s = cp.get_slice(thr)
        frag = mma16.get_slice(thr).partition_fragment_A(sA)        # ((2,2,2),2,2)
        src, dst = s.partition_S(sA), s.retile_D(frag)
        assert [size(src.layout[i]) for i in range(3)] == [size(dst.layout[i]) for i in range(3)] == [8, 2, 2]
        assert sorted(offsets(dst).tolist()) == list(range(size(frag)))   # a re-indexing of the fragment


def test_tf32_seed_copies(mma_tf32):
    """A M-major through UniversalCopy (one 32-bit value per instruction), B K-major through ldmatrix
    (x4 moves four 32-bit values per thread: four consecutive k of one row of B)."""
    cpB = make_tiled_copy_B(CopyAtom(LDSM, "tf32"), mma_tf32)
    cpA = make_tiled_copy_A(CopyAtom("UniversalCopy_32", "tf32"), mma_tf32)
    assert cpB.layout_tv == mma_tf32.get_layoutB_TV() and cpB.tiler_mn == (32, 8)
    assert cpA.layout_tv == mma_tf32.get_layoutA_TV()
    sB = make_tensor(np.zeros((128, 16), np.float32))                # K-major
    sA = make_tensor(np.asfortranarray(np.zeros((128, 16), np.float32)))   # M-major
    cB = make_identity_tensor((128, 16))
    for thr in (0, 9, 45, 127):
        l = thr % 32
        p = cpB.get_slice(thr).partition_S(sB)
        off = offsets(p).reshape(-1, 4)
        assert (off == off[:, :1] + np.arange(4)).all()
        crd = vals(cpB.get_slice(thr).partition_S(cB))[:4]
        assert [k for _, k in crd] == [4 * (l // 8) % 8 + v for v in range(4)]
        assert cpA.get_slice(thr).partition_S(sA).layout.shape[1:] == (4, 2)
    with pytest.raises(LayoutError, match="vector width exceeds the layout's contiguity"):
        make_tiled_copy_A(CopyAtom(LDSM, "tf32"), mma_tf32).get_slice(0).partition_S(sA)


def test_copy_C_covers_the_tile_once(mma16):
    cp = make_tiled_copy_C(CopyAtom("UniversalCopy_32", "f32"), mma16)
    assert cp.layout_tv == mma16.get_layoutC_TV()
    c = make_identity_tensor((64, 64))
    owned = Counter()
    for thr in range(128):
        owned.update(vals(cp.get_slice(thr).partition_D(c)))
    assert len(owned) == 64 * 64 and set(owned.values()) == {1}


def test_vector_widths_of_the_atoms():
    assert vector_width(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16").src_layout) == 8
    assert vector_width(CopyAtom(LDSM, "f16").src_layout) == 8
    assert vector_width(CopyAtom(LDSM, "f16").dst_layout) == 2
    assert vector_width(CopyAtom(LDSM, "tf32").src_layout) == 4
    assert vector_width(CopyAtom("UniversalCopy_32", "tf32").src_layout) == 1


# ---- bad input ------------------------------------------------------------------------

def test_mismatched_thread_counts():
    with pytest.raises(LayoutError, match="16 threads are not a multiple of the atom's 32"):
        make_tiled_copy(CopyAtom(LDSM, "f16"), Layout(16), Layout(8))


def test_values_per_thread_must_fill_the_atom():
    with pytest.raises(LayoutError, match="is not a multiple of the 8 f16 values"):
        make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((16, 8), (8, 1)), Layout((1, 4)))


def test_value_width_mismatch_between_copy_and_mma(mma_tf32, mma16):
    # CUTLASS issue 1988: an ldmatrix atom typed for 16-bit values feeding a 32-bit (tf32) operand
    with pytest.raises(LayoutError, match=r"16-bit values \(f16\) but the MMA's B operand is tf32 \(32 bits\)"):
        make_tiled_copy_B(CopyAtom(LDSM, "f16"), mma_tf32)
    with pytest.raises(LayoutError, match="A operand is f16"):
        make_tiled_copy_A(CopyAtom(LDSM, "tf32"), mma16)
    with pytest.raises(LayoutError, match="C operand is f32"):
        make_tiled_copy_C(CopyAtom("UniversalCopy_16", "f16"), mma16)


def test_vector_width_exceeding_contiguity(g2s):
    m_major = make_tensor(np.asfortranarray(np.zeros((128, 64), np.float16)))
    with pytest.raises(LayoutError, match="vector width exceeds the layout's contiguity"):
        g2s.get_slice(0).partition_S(m_major)
    with pytest.raises(LayoutError, match="partition_D"):
        g2s.get_slice(0).partition_D(m_major)
    padded = make_tensor(np.zeros((128, 68), np.float16)[:, :64])   # rows start every 68 elements
    with pytest.raises(LayoutError, match="misaligned"):
        g2s.get_slice(8).partition_S(padded)                        # thread 8 starts row 1 at 68
    g2s.get_slice(0).partition_S(padded)                             # row 0 is fine


def test_ldsm_on_an_m_major_operand_is_rejected(mma16):
    sA = make_tensor(np.asfortranarray(np.zeros((64, 32), np.float16)))
    with pytest.raises(LayoutError, match="SM75_U32x4_LDSM_N moves 8 f16 values"):
        make_tiled_copy_A(CopyAtom(LDSM, "f16"), mma16).get_slice(0).partition_S(sA)


def test_unknown_copy_atoms_and_types():
    with pytest.raises(LayoutError, match="close matches: SM75_U32x4_LDSM_N"):
        CopyAtom("SM75_U32x4_LDSM", "f16")
    with pytest.raises(LayoutError, match="not valid for f64"):
        CopyAtom(LDSM, "f64")                                       # a 32-bit register holds no f64
    with pytest.raises(LayoutTypeError, match="not a copy entry"):
        CopyAtom(F16, "f16")
    with pytest.raises(LayoutTypeError, match="expected a CopyAtom"):
        make_tiled_copy(LDSM, Layout(32))


def test_partition_needs_enough_modes_and_threads(g2s):
    with pytest.raises(LayoutError, match="fewer modes"):
        g2s.get_slice(0).partition_S(make_tensor(np.zeros(64, np.float16)))
    with pytest.raises(LayoutError, match=r"out of range \[0, 128\)"):
        g2s.get_slice(128)
