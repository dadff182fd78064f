"""TiledMMA partitioning against reference facts.

References: CuTe's printed values (``ThrLayoutVMNK``), the CuTe MMA-atom
tutorial (media/docs/cpp/cute/0t_mma_atom.md, the SM70 2x2 example), and the
PTX ISA's fragment formulas for ``mma.m16n8k16`` / ``mma.m16n8k8`` (written out
below, independently of the atom tables), combined with the warp tiling.
"""

import itertools
from collections import Counter

import numpy as np
import pytest

from layoutalg import (
    Layout, LayoutError, LayoutTypeError, MMAAtom, make_identity_tensor, make_tensor,
    make_tiled_mma, size,
)

F16 = "SM80_16x8x16_F32F16F16F32_TN"
TF32 = "SM80_16x8x8_F32TF32TF32F32_TN"


@pytest.fixture(scope="module")
def mma16():
    return make_tiled_mma(F16, (2, 2, 1), (32, 32, 16))


@pytest.fixture(scope="module")
def mma_tf32():
    return make_tiled_mma(TF32, (2, 2, 1), (32, 32, 8))


def vals(t):
    return [tuple(t[i]) for i in range(size(t))]


# ---- the PTX ISA's fragments (groupID = lane >> 2, threadID_in_group = lane % 4) ----

def ptx_m16n8k16_a(lane, i):            # A is MxK, a0..a7
    g, t = lane >> 2, lane % 4
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def ptx_m16n8k16_b(lane, i):            # B is KxN, b0..b3; returned as (n, k) like CuTe's NxK
    g, t = lane >> 2, lane % 4
    return g, 2 * t + (i & 1) + 8 * (i >> 1)


def ptx_m16n8_c(lane, i):               # C/D is MxN, c0..c3
    g, t = lane >> 2, lane % 4
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def ptx_m16n8k8_tf32_a(lane, i):        # a0..a3
    g, t = lane >> 2, lane % 4
    return g + 8 * (i & 1), t + 4 * (i >> 1)


def ptx_m16n8k8_tf32_b(lane, i):        # b0..b1, as (n, k)
    g, t = lane >> 2, lane % 4
    return g, t + 4 * i


# ---- CuTe's printed facts -------------------------------------------------------

def test_thread_layout_and_tile_size(mma16):
    assert mma16.thr_layout_vmnk == Layout((32, 2, 2, 1), (1, 32, 64, 0))   # (ThrV,ThrM,ThrN,ThrK) -> thr
    assert mma16.tile_size_mnk == (32, 32, 16)
    assert mma16.size == 128
    assert make_tiled_mma(F16).tile_size_mnk == (16, 8, 16)                 # one atom
    assert make_tiled_mma(F16, (2, 2, 1)).tile_size_mnk == (32, 16, 16)      # no permutation


def test_partition_A_of_thread_5(mma16):
    A = make_identity_tensor((64, 32))                                     # (M,K) coordinates
    p = mma16.get_slice(5).partition_A(A)                                  # (MMA,MMA_M,MMA_K)
    assert [size(p.layout[i]) for i in range(3)] == [8, 2, 2]
    assert vals(p)[:4] == [(1, 2), (1, 3), (9, 2), (9, 3)]


def test_atom_tables_match_the_ptx_isa():
    atom = MMAAtom(F16)
    for lane, i in itertools.product(range(32), range(8)):
        m, k = ptx_m16n8k16_a(lane, i)
        assert atom.layout_a((lane, i)) == m + 16 * k                      # (T32,V8) -> (M16,K16)
    for lane, i in itertools.product(range(32), range(4)):
        n, k = ptx_m16n8k16_b(lane, i)
        assert atom.layout_b((lane, i)) == n + 8 * k                       # (T32,V4) -> (N8,K16)
        m, n = ptx_m16n8_c(lane, i)
        assert atom.layout_c((lane, i)) == m + 16 * n                      # (T32,V4) -> (M16,N8)


# ---- partitions of every thread vs the PTX fragments + warp tiling -------------------

def test_partitions_of_every_thread_follow_the_ptx_fragments(mma16):
    """Warp w is atom (w % 2, w // 2) of the 2x2 layout; the 32x32 tile repeats over the tensor."""
    M, N, K = 64, 64, 32
    cA, cB, cC = (make_identity_tensor(s) for s in ((M, K), (N, K), (M, N)))
    for thr in range(128):
        lane, w = thr % 32, thr // 32
        wm, wn = w % 2, w // 2
        s = mma16.get_slice(thr)
        pA, pB, pC = s.partition_A(cA), s.partition_B(cB), s.partition_C(cC)
        exp_a = [(16 * (wm + 2 * rm) + ptx_m16n8k16_a(lane, i)[0], 16 * rk + ptx_m16n8k16_a(lane, i)[1])
                 for rk in range(K // 16) for rm in range(M // 32) for i in range(8)]
        exp_b = [(8 * (wn + 2 * rn) + ptx_m16n8k16_b(lane, i)[0], 16 * rk + ptx_m16n8k16_b(lane, i)[1])
                 for rk in range(K // 16) for rn in range(N // 16) for i in range(4)]
        exp_c = [(16 * (wm + 2 * rm) + ptx_m16n8_c(lane, i)[0], 8 * (wn + 2 * rn) + ptx_m16n8_c(lane, i)[1])
                 for rn in range(N // 16) for rm in range(M // 32) for i in range(4)]
        assert vals(pA) == exp_a, thr
        assert vals(pB) == exp_b, thr
        assert vals(pC) == exp_c, thr


def test_tf32_partitions_follow_the_ptx_fragments(mma_tf32):
    assert mma_tf32.thr_layout_vmnk == Layout((32, 2, 2, 1), (1, 32, 64, 0))
    assert mma_tf32.tile_size_mnk == (32, 32, 8)
    cA, cB = make_identity_tensor((32, 16)), make_identity_tensor((32, 16))
    for thr in (0, 5, 37, 70, 127):
        lane, w = thr % 32, thr // 32
        wm, wn = w % 2, w // 2
        s = mma_tf32.get_slice(thr)
        exp_a = [(16 * wm + ptx_m16n8k8_tf32_a(lane, i)[0], 8 * rk + ptx_m16n8k8_tf32_a(lane, i)[1])
                 for rk in range(2) for i in range(4)]
        exp_b = [(8 * (wn + 2 * rn) + ptx_m16n8k8_tf32_b(lane, i)[0], 8 * rk + ptx_m16n8k8_tf32_b(lane, i)[1])
                 for rk in range(2) for rn in range(2) for i in range(2)]
        assert vals(s.partition_A(cA)) == exp_a
        assert vals(s.partition_B(cB)) == exp_b


# ---- whole-tile TV layouts ----------------------------------------------------------

@pytest.mark.parametrize("name,perm", [(F16, (32, 32, 16)), (TF32, (32, 32, 8)),
                                       (F16, (64, 32, 16)), (F16, (32, Layout((8, 2, 2), (1, 16, 8)), 16))])
def test_tv_layouts_cover_the_tile(name, perm):
    mma = make_tiled_mma(name, (2, 2, 1), perm)
    TM, TN, TK = mma.tile_size_mnk
    nthr = mma.size
    tvC = mma.get_layoutC_TV()                                   # (thr,val) -> m + TM*n
    assert size(tvC[0]) == nthr
    assert sorted(tvC(i) for i in range(size(tvC))) == list(range(TM * TN))   # a bijection
    for tv, extent, bcast in ((mma.get_layoutA_TV(), TM * TK, 2), (mma.get_layoutB_TV(), TN * TK, 2)):
        assert size(tv[0]) == nthr
        hits = Counter(tv(i) for i in range(size(tv)))
        assert set(hits) == set(range(extent))
        assert set(hits.values()) == {bcast}                     # each element in size(ThrN) (resp. ThrM) threads


def test_tv_layouts_agree_with_the_partitions(mma16):
    TM, TN, TK = mma16.tile_size_mnk
    tvA, tvB, tvC = mma16.get_layoutA_TV(), mma16.get_layoutB_TV(), mma16.get_layoutC_TV()
    cA, cB, cC = (make_identity_tensor(s) for s in ((TM, TK), (TN, TK), (TM, TN)))
    for thr in (0, 1, 33, 64, 127):
        s = mma16.get_slice(thr)
        for tv, part, rows in ((tvA, s.partition_A(cA), TM), (tvB, s.partition_B(cB), TN),
                               (tvC, s.partition_C(cC), TM)):
            got = [tv((thr, v)) for v in range(size(tv[1]))]
            assert got == [m + rows * n for m, n in vals(part)]


def test_partition_C_covers_the_tensor_exactly_once(mma16):
    cC = make_identity_tensor((64, 96))
    owners = Counter()
    for thr in range(mma16.size):
        owners.update(vals(mma16.get_slice(thr).partition_C(cC)))
    assert set(owners) == set(itertools.product(range(64), range(96)))
    assert set(owners.values()) == {1}


def test_partition_A_broadcasts_over_the_N_threads(mma16):
    cA = make_identity_tensor((32, 16))
    owners = Counter()
    for thr in range(mma16.size):
        owners.update(vals(mma16.get_slice(thr).partition_A(cA)))
    assert set(owners.values()) == {2}
    # threads t and t + 64 (the other N atom) hold the same A elements in the same order
    assert vals(mma16.get_slice(7).partition_A(cA)) == vals(mma16.get_slice(7 + 64).partition_A(cA))


def test_an_N_permutation_makes_each_warp_own_16_contiguous_columns():
    mma = make_tiled_mma(F16, (2, 2, 1), (32, Layout((8, 2, 2), (1, 16, 8)), 16))
    cB = make_identity_tensor((32, 16))
    n_of = {thr: sorted({n for n, _ in vals(mma.get_slice(thr).partition_B(cB))}) for thr in (0, 64)}
    assert n_of[0] == [0, 8]                     # without the permutation: [0, 16]
    assert n_of[64] == [16, 24]
    warp0 = {n for thr in range(32) for n, _ in vals(mma.get_slice(thr).partition_B(cB))}
    assert warp0 == set(range(16))


# ---- the CuTe MMA-atom tutorial's SM70 example --------------------------------------

def test_cute_tutorial_sm70_2x2_32x32x4():
    mma = make_tiled_mma("SM70_8x8x4_F32F16F16F32_NT", Layout((2, 2), (2, 1)), (32, 32, 4))
    cA = make_identity_tensor((32, 4))
    assert vals(mma.get_slice(0).partition_A(cA)) == [
        (0, 0), (1, 0), (2, 0), (3, 0), (16, 0), (17, 0), (18, 0), (19, 0)]           # T0V0..T0V7
    permuted = make_tiled_mma("SM70_8x8x4_F32F16F16F32_NT", Layout((2, 2), (2, 1)),
                              (Layout((4, 4, 2), (1, 8, 4)), 32, 4))
    assert vals(permuted.get_slice(0).partition_A(cA)) == [(m, 0) for m in range(8)]  # now contiguous


# ---- fragments ----------------------------------------------------------------------

def test_partition_fragments_have_the_partition_shapes_and_atom_types(mma16):
    sA = make_tensor(np.zeros((64, 32), np.float16))            # K-major
    sB = make_tensor(np.zeros((64, 32), np.float16))
    gC = make_tensor(np.zeros((64, 64), np.float32))
    s = mma16.get_slice(9)
    fA, fB, fC = s.partition_fragment_A(sA), s.partition_fragment_B(sB), s.partition_fragment_C(gC)
    assert fA.layout.shape == s.partition_A(sA).layout.shape == ((2, 2, 2), 2, 2)
    assert fB.layout.shape == s.partition_B(sB).layout.shape == ((2, 2), 4, 2)
    assert fC.layout.shape == s.partition_C(gC).layout.shape == ((2, 2), 2, 4)
    assert (fA.dtype, fB.dtype, fC.dtype) == (np.float16, np.float16, np.float32)
    assert fA.layout[0] == Layout((2, 2, 2), (1, 2, 4))          # one atom's values are contiguous


# ---- bad input ----------------------------------------------------------------------

def test_unknown_atom_names_list_close_matches():
    with pytest.raises(LayoutError, match="close matches: SM80_16x8x16_F32F16F16F32_TN"):
        make_tiled_mma("SM80_16x8x16_F32F16F16F32", (2, 2, 1))
    with pytest.raises(LayoutError, match="no atom named"):
        MMAAtom("SM81_16x8x16_F32F16F16F32_TN")


def test_a_copy_entry_is_not_an_mma():
    with pytest.raises(LayoutTypeError, match="not an MMA entry"):
        MMAAtom("SM75_U32x4_LDSM_N")
    with pytest.raises(LayoutTypeError):
        MMAAtom(42)


def test_atom_layouts_that_do_not_tile():
    with pytest.raises(LayoutError, match="atoms 0..3 once each"):
        make_tiled_mma(F16, Layout((2, 2), (1, 1)))             # two atoms share threads
    with pytest.raises(LayoutError, match="atoms 0..3 once each"):
        make_tiled_mma(F16, Layout((2, 2), (1, 4)))             # thread numbers with gaps
    with pytest.raises(LayoutError, match="more than 3 modes"):
        make_tiled_mma(F16, (1, 1, 1, 2))
    with pytest.raises(LayoutTypeError):
        make_tiled_mma(F16, (2.0, 2, 1))


def test_permutations_that_do_not_tile():
    with pytest.raises(LayoutError, match=r"permutation size 48 in mode M is not a multiple of atom size 16 x 2"):
        make_tiled_mma(F16, (2, 2, 1), (48, 32, 16))
    with pytest.raises(LayoutError, match="mode K"):
        make_tiled_mma(F16, (2, 2, 1), (32, 32, 8))             # K atom is 16
    with pytest.raises(LayoutError, match="injective"):
        make_tiled_mma(F16, (2, 2, 1), (Layout(32, 0), 32, 16))
    with pytest.raises(LayoutTypeError):
        make_tiled_mma(F16, (2, 2, 1), ("32", 32, 16))
    with pytest.raises(LayoutError, match="more than 3"):
        make_tiled_mma(F16, (2, 2, 1), (32, 32, 16, 1))


def test_thread_index_out_of_range(mma16):
    with pytest.raises(LayoutError, match=r"out of range \[0, 128\)"):
        mma16.get_slice(128)
    with pytest.raises(LayoutError):
        mma16.get_slice(True)
