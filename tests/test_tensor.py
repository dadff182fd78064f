"""Tensors: indexing, slicing, tiling, partitioning, views, identity tensors and predicates.

Reference values are numpy's own indexing of the same memory, and CuTe's
semantics (0-based, colexicographic 1-D indices; ``None``/``_`` keep a mode).
"""

import itertools

import numpy as np
import pytest

from layoutalg import (
    ComposedLayout, E, Layout, LayoutError, LayoutIndexError, LayoutTypeError, Swizzle, Tensor, _,
    composition, elem_less, flat_divide, group_modes, local_partition, local_tile, logical_divide,
    make_fragment_like, make_identity_tensor, make_tensor, rank, recast, size, tile_to_shape,
    tiled_divide, zipped_divide,
)
from layoutalg.tensor import ArrayEngine, PointerEngine, RegisterEngine


def vals(t):
    """A tensor's values in its 1-D (colexicographic) order."""
    return [t[i] for i in range(size(t))]


def ints(t):
    return [int(x) for x in vals(t)]


@pytest.fixture
def rowmajor():
    a = np.arange(8 * 12).reshape(8, 12)          # (M8,N12) row-major
    return a, make_tensor(a)


# ---- indexing -------------------------------------------------------------

def test_numpy_array_keeps_its_shape_and_strides(rowmajor):
    a, t = rowmajor
    assert t.layout == Layout((8, 12), (12, 1))
    assert make_tensor(np.asfortranarray(a)).layout == Layout((8, 12), (1, 8))
    assert make_tensor(a[::2, 1::3]).layout == Layout((4, 4), (24, 3))


def test_index_by_coordinate_and_by_1d_colex_index(rowmajor):
    a, t = rowmajor
    for m, n in [(0, 0), (3, 5), (7, 11)]:
        assert t[m, n] == a[m, n] == t((m, n)) == t(m, n)
        assert t[m + 8 * n] == a[m, n]               # 1-D index: colexicographic, m fastest
    assert ints(t) == a.flatten(order="F").tolist()


def test_nested_coordinates():
    t = make_tensor(np.arange(24), Layout((4, (2, 3))))     # (M4,(N2,N3)) compact
    assert t[1, (1, 2)] == 1 + 4 * (1 + 2 * 2)
    assert t[1, 5] == t[1, (1, 2)]                           # a mode takes its own 1-D index


def test_setitem_writes_through_the_layout(rowmajor):
    a, t = rowmajor
    a = a.copy()
    t = make_tensor(a)
    t[2, 3] = -1
    assert a[2, 3] == -1
    t[None, 4] = 7                                           # a slice is assigned element-wise
    assert (a[:, 4] == 7).all()


def test_bad_indices_raise(rowmajor):
    _, t = rowmajor
    with pytest.raises(LayoutIndexError):
        t[8, 0]
    with pytest.raises(LayoutIndexError):
        t[96]
    with pytest.raises(LayoutTypeError):
        t["x"]
    with pytest.raises(LayoutTypeError):
        t[1.5]


# ---- slicing --------------------------------------------------------------

def test_slices_keep_the_offset(rowmajor):
    a, t = rowmajor
    col = t[None, 5]                                         # (M8) of column 5
    assert col.layout == Layout((8,), (12,))                 # CuTe's slice keeps a 1-tuple: (8):(12)
    assert col.engine.offset == 5
    assert ints(col) == a[:, 5].tolist()
    row = t[3, _]                                            # _ is the same as None
    assert row.layout == Layout((12,), (1,))
    assert ints(row) == a[3].tolist()
    assert ints(t[3, None]) == ints(row)


def test_slice_of_a_slice_and_of_nested_modes():
    a = np.arange(4 * 6)
    t = make_tensor(a, Layout((4, (2, 3))))                  # (M4,(N2,N3))
    sub = t[None, (1, None)]                                 # (M4,N3) at n0 = 1
    assert sub.layout == Layout((4, 3), (1, 8))
    assert sub.engine.offset == 4
    assert sub[2, 1] == t[2, (1, 1)]
    subsub = sub[None, 2]
    assert subsub.engine.offset == 4 + 16
    assert ints(subsub) == [t[m, (1, 2)] for m in range(4)]


def test_symbolic_pointer_slices_add_offsets():
    t = make_tensor("smem", Layout((4, 8), (8, 1)))
    s = t[2, None]
    assert isinstance(s.engine, PointerEngine)
    assert (s.engine.name, s.engine.offset) == ("smem", 16)
    assert s[3] == ("smem", 19)


def test_swizzled_tensor_indexing_and_slicing():
    sw = tile_to_shape(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (16, 64))
    assert isinstance(sw, ComposedLayout)
    mem = np.arange(16 * 64)
    t = make_tensor(mem, sw)
    swz = Swizzle(3, 3, 3)
    for m, k in [(0, 0), (1, 9), (7, 63), (15, 17)]:
        assert t[m, k] == mem[swz(64 * m + k)]
    row = t[1, None]                                         # the offset moves inside the swizzle
    assert ints(row) == [mem[swz(64 + k)] for k in range(64)]
    assert sorted(ints(t)) == list(range(16 * 64))           # a bijection onto the buffer


# ---- tiling -----------------------------------------------------------------

@pytest.fixture
def colmajor():
    a = np.asfortranarray(np.arange(16 * 24).reshape(16, 24))   # (M16,N24) column-major
    return a, make_tensor(a)


def test_local_tile_without_projection(colmajor):
    a, t = colmajor
    g = local_tile(t, (4, 8), (1, 2))                         # (BM4,BN8) tile at (1,2)
    assert g.layout == Layout((4, 8), (1, 16))
    assert np.array_equal(g.numpy(), a[4:8, 16:24])
    gk = local_tile(t, (4, 8), (1, None))                     # keep the tile index in N
    assert gk.layout == Layout((4, 8, 3), (1, 16, 128))
    for n in range(3):
        assert np.array_equal(gk[None, None, n].numpy(), a[4:8, 8 * n: 8 * n + 8])


def test_local_tile_with_projection_like_cute_step():
    A = np.arange(16 * 32).reshape(16, 32)                   # (M,K) K-major
    B = np.arange(24 * 32).reshape(24, 32)                   # (N,K)
    C = np.arange(16 * 24).reshape(16, 24)                   # (M,N)
    tiler, coord = (8, 4, 16), (1, 3, None)                  # (BM,BN,BK), (m,n,_)
    gA = local_tile(make_tensor(A), tiler, coord, proj=(1, None, 1))   # Step<_1, X,_1>: (BM,BK,k)
    gB = local_tile(make_tensor(B), tiler, coord, proj=(None, 1, 1))   # Step< X,_1,_1>: (BN,BK,k)
    gC = local_tile(make_tensor(C), tiler, coord, proj=(1, 1, None))   # Step<_1,_1, X>: (BM,BN)
    assert [size(gA.layout[i]) for i in range(3)] == [8, 16, 2]
    assert [size(gB.layout[i]) for i in range(3)] == [4, 16, 2]
    assert rank(gC.layout) == 2
    for k in range(2):
        assert np.array_equal(gA[None, None, k].numpy(), A[8:16, 16 * k: 16 * k + 16])
        assert np.array_equal(gB[None, None, k].numpy(), B[12:16, 16 * k: 16 * k + 16])
    assert np.array_equal(gC.numpy(), C[8:16, 12:16])
    # the projection is the same as dropping the modes by hand
    assert local_tile(make_tensor(A), (8, 16), (1, None)).layout == gA.layout


def test_divides_on_tensors_keep_the_engine(colmajor):
    a, t = colmajor
    z = zipped_divide(t, (4, 8))                               # ((TileM,TileN),(RestM,RestN))
    assert isinstance(z, Tensor) and z.engine is t.engine
    assert z.layout == Layout(((4, 8), (4, 3)), ((1, 16), (4, 128)))
    blk = z[None, (1, 2)]
    assert ints(blk) == a[4:8, 16:24].flatten(order="F").tolist()
    td = tiled_divide(t, (4, 8))                               # ((TileM,TileN),RestM,RestN)
    assert td.layout == Layout(((4, 8), 4, 3), ((1, 16), 4, 128))
    assert ints(td[None, 1, 2]) == ints(blk)
    fd = flat_divide(t, (4, 8))                                # (TileM,TileN,RestM,RestN)
    assert fd.layout == Layout((4, 8, 4, 3), (1, 16, 4, 128))
    assert np.array_equal(fd[None, None, 1, 2].numpy(), a[4:8, 16:24])
    ld = logical_divide(t, (4, 8))                             # ((TileM,RestM),(TileN,RestN))
    assert ld[(2, 1), (5, 2)] == a[4 + 2, 16 + 5]


# ---- partitioning ---------------------------------------------------------

def test_local_partition_matches_strided_numpy_slices(colmajor):
    a, t = colmajor
    thr = Layout((2, 4))                                       # 8 threads, m fastest
    seen = []
    for idx in range(8):
        p = local_partition(t, thr, idx)
        m, n = idx % 2, idx // 2
        assert p.layout.shape == (8, 6)
        assert np.array_equal(p.numpy(), a[m::2, n::4])
        seen += ints(p)
    assert sorted(seen) == sorted(a.ravel().tolist())          # each element exactly once


def test_local_partition_with_a_row_major_thread_layout(colmajor):
    a, t = colmajor
    thr = Layout((2, 4), (4, 1))                               # n fastest
    p = local_partition(t, thr, 5)                             # thread 5 = (m 1, n 1)
    assert np.array_equal(p.numpy(), a[1::2, 1::4])


def test_local_partition_with_projection():
    # CuTe's example: thr_layout (2,16,1):(16,1,0) over (M,N,K); A drops N, B drops M, C drops K
    thr = Layout((2, 16, 1), (16, 1, 0))
    A = np.arange(8 * 4).reshape(8, 4)
    B = np.arange(32 * 4).reshape(32, 4)
    C = np.arange(8 * 32).reshape(8, 32)
    for idx in (0, 5, 17, 31):
        m, n = idx // 16, idx % 16
        pA = local_partition(make_tensor(A), thr, idx, proj=(1, None, 1))     # (M/2,K/1)
        pB = local_partition(make_tensor(B), thr, idx, proj=(None, 1, 1))     # (N/16,K/1)
        pC = local_partition(make_tensor(C), thr, idx, proj=(1, 1, None))     # (M/2,N/16)
        assert np.array_equal(pA.numpy(), A[m::2, :])
        assert np.array_equal(pB.numpy(), B[n::16, :])
        assert np.array_equal(pC.numpy(), C[m::2, n::16])


def test_local_partition_rejects_bad_threads(colmajor):
    _, t = colmajor
    with pytest.raises(LayoutError, match="out of range"):
        local_partition(t, Layout((2, 4)), 8)
    with pytest.raises(LayoutTypeError):
        local_partition(t, (2, 4), 0)


# ---- views and fragments --------------------------------------------------

def test_recast_views_the_same_memory():
    h = np.arange(16, dtype=np.float16)
    t = make_tensor(h, Layout((4, 4), (4, 1)))                 # (M4,N4) row-major f16
    r = recast(t, np.float32)                                  # two f16 per f32
    assert r.layout == Layout((4, 2), (2, 1))
    assert r.engine.array.dtype == np.float32
    assert r[1, 1].tobytes() == h[6:8].tobytes()
    r[0, 0] = np.float32(1.0)                                  # writes go to the same bytes
    assert h[0:2].tobytes() == np.float32(1.0).tobytes()
    back = recast(r, np.float16)
    assert back.layout == t.layout
    assert ints(back[2, None]) == [8, 9, 10, 11]


def test_recast_rejects_misaligned_views():
    t = make_tensor(np.zeros(8, np.float16), Layout(8))
    shifted = Tensor(t.engine + 1, Layout(6))                  # starts at f16 element 1
    with pytest.raises(LayoutError, match="not aligned"):
        recast(shifted, np.float32)


def test_make_fragment_like_is_compact_and_follows_stride_order():
    a = np.arange(16 * 24).reshape(16, 24)                     # row-major: N has the small stride
    p = local_partition(make_tensor(a), Layout((2, 4)), 3)     # (8,6):(48,4)
    f = make_fragment_like(p)
    assert isinstance(f.engine, RegisterEngine)
    assert f.layout.shape == p.layout.shape
    assert f.layout == Layout((8, 6), (1, 8))                  # mode 0 compact, then the rest
    q = make_tensor(np.zeros((4, 3, 5)))                       # (4,3,5):(15,5,1)
    assert make_fragment_like(q).layout == Layout((4, 3, 5), (1, 20, 4))
    assert make_fragment_like(q, np.float16).dtype == np.float16
    f[0] = 99                                                  # registers are owned, not a view
    assert a[1, 3] != 99 and p[0] != 99


def test_make_fragment_like_owns_a_register_per_element_of_broadcast_modes():
    # CuTe: mode 0 keeps its stride-0 sub-modes, the other modes are made compact
    bcast = make_tensor(np.arange(4.0), Layout((4, 3), (1, 0)))    # a column broadcast over 3
    assert make_fragment_like(bcast).layout == Layout((4, 3), (1, 4))
    assert make_fragment_like(Layout(((2, 2), 3), ((0, 1), 0))).layout == Layout(((2, 2), 3), ((0, 1), 2))


def test_make_fragment_like_of_a_swizzled_tensor_uses_its_shape():
    sw = tile_to_shape(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (16, 64))
    f = make_fragment_like(make_tensor(np.zeros(1024, np.float16), sw))
    assert f.layout.shape == (16, 64) and size(f) == 1024 and f.dtype == np.float16


def test_group_modes_keeps_values():
    a = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    t = make_tensor(a)                                         # (2,3,4):(12,4,1)
    g = group_modes(t, 1)                                      # (2,(3,4))
    assert g.layout == Layout((2, (3, 4)), (12, (4, 1)))
    assert ints(g) == ints(t)
    g0 = group_modes(t, 0, 2)                                  # ((2,3),4)
    assert g0.layout == Layout(((2, 3), 4), ((12, 4), 1))
    assert g0[(1, 2), 3] == a[1, 2, 3]
    assert group_modes(t.layout, 1, 3) == g.layout             # layouts too
    with pytest.raises(LayoutError):
        group_modes(t, 2, 5)


# ---- identity tensors and predicates -------------------------------------

def test_identity_tensor_maps_coordinates_to_themselves():
    c = make_identity_tensor((6, 5))
    assert c.layout == Layout((6, 5), (E(0), E(1)))
    assert all(c[m, n] == (m, n) for m, n in itertools.product(range(6), range(5)))
    assert c[7] == (1, 1)                                      # 1-D index, colexicographic
    assert c[None, 3][2] == (2, 3)                             # slices keep the origin
    blk = zipped_divide(c, (2, 2))[None, (1, 2)]
    assert vals(blk) == [(2, 4), (3, 4), (2, 5), (3, 5)]


def test_residue_predicates_on_a_non_divisible_shape():
    """Tiles of (10,7) by (4,4) hang over the edge; elem_less(coord, shape) masks the rest."""
    shape = (10, 7)
    c = make_identity_tensor(shape)
    thr = Layout((2, 2))
    owned = {}
    total = 0
    for bm, bn in itertools.product(range(3), range(2)):       # ceil(10/4), ceil(7/4)
        tile = local_tile(c, (4, 4), (bm, bn))                 # (4,4) of coordinates
        for idx in range(size(thr)):
            part = local_partition(tile, thr, idx)             # (2,2) per thread
            for crd in vals(part):
                total += 1
                if elem_less(crd, shape):
                    assert crd not in owned
                    owned[crd] = (bm, bn, idx)
                else:
                    assert crd[0] >= 10 or crd[1] >= 7
    assert total == 12 * 8                                     # every tile is full-size
    assert set(owned) == set(itertools.product(range(10), range(7)))


def test_predicated_copy_touches_only_in_bounds_elements():
    shape = (10, 7)
    src = np.arange(70).reshape(shape)
    dst = np.full(shape, -1)
    mS, mD, c = make_tensor(src, residue=True), make_tensor(dst, residue=True), make_identity_tensor(shape)
    thr = Layout((4, 2))
    for bm, bn in itertools.product(range(3), range(2)):
        gS, gD, gC = (local_tile(x, (4, 4), (bm, bn)) for x in (mS, mD, c))
        for idx in range(size(thr)):
            pS, pD, pC = (local_partition(x, thr, idx) for x in (gS, gD, gC))
            for i in range(size(pC)):
                if elem_less(pC[i], shape):
                    pD[i] = pS[i]
    assert np.array_equal(dst, src)


def test_engines_have_the_expected_types(rowmajor):
    _, t = rowmajor
    assert isinstance(t.engine, ArrayEngine)
    assert isinstance(make_tensor("f16", Layout(4)).engine, RegisterEngine)
    with pytest.raises(LayoutError):
        make_tensor(np.zeros(4), Layout(8))


# ---- tiles that do not divide a tensor of data -------------------------------------------

def _refused(fn, op):
    with pytest.raises(LayoutError, match=rf"^{op}: tile .* does not divide the tensor's shape \(10,10\)"):
        fn()


def test_a_tile_that_hangs_over_a_data_tensor_is_refused_everywhere():
    from layoutalg import make_tiled_copy, make_tiled_mma, CopyAtom

    T = make_tensor(np.arange(100).reshape(10, 10))
    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN")
    copy = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((4, 8)), Layout((1, 1)))
    _refused(lambda: mma.get_slice(1).partition_A(T), "partition_A")
    _refused(lambda: mma.get_slice(31).partition_B(T), "partition_B")
    _refused(lambda: mma.get_slice(0).partition_C(T), "partition_C")
    _refused(lambda: copy.get_slice(0).partition_S(T), "partition_S")
    _refused(lambda: copy.get_slice(0).partition_D(T), "partition_D")
    _refused(lambda: local_tile(T, (16, 16), (0, 0)), "local_tile")
    _refused(lambda: local_tile(T, (4, 5, 2), (0, 0, 0), proj=(1, 1, None)), "local_tile")
    _refused(lambda: local_partition(T, Layout((4, 32), (32, 1)), 3), "local_partition")
    _refused(lambda: zipped_divide(T, (3, 5)), "zipped_divide")
    _refused(lambda: logical_divide(T, (5, Layout(4, 1))), "logical_divide")
    _refused(lambda: flat_divide(T, (20, 5)), "flat_divide")
    _refused(lambda: tiled_divide(T, (5, 3)), "tiled_divide")
    _refused(lambda: T.compose((5, Layout(12))), "composition")
    _refused(lambda: local_tile(make_fragment_like(T), (16, 16), (0, 0)), "local_tile")
    # the message says how to ask for CuTe's residue semantics
    with pytest.raises(LayoutError, match=r"make_tensor\(\.\.\., residue=True\).*identity tensor"):
        local_tile(T, (16, 16), (0, 0))


def test_tiles_that_divide_identity_tensors_and_residue_tensors_keep_cutes_semantics():
    from layoutalg import make_tiled_mma

    a = np.arange(100).reshape(10, 10)
    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN")
    # divisors are taken, at every element
    t = local_tile(make_tensor(a), (5, 2), (1, 3))
    assert [int(t[m, n]) for m in range(5) for n in range(2)] == [a[5 + m, 6 + n] for m in range(5) for n in range(2)]
    # identity tensors (the predicates) and residue tensors hang over the edge as in CuTe
    c = mma.get_slice(1).partition_A(make_identity_tensor((10, 10)))
    r = mma.get_slice(1).partition_A(make_tensor(a, residue=True))
    assert c[1] == (0, 3) and int(r[1]) == a[0, 3]
    for i in range(size(c)):                    # every in-bounds element is the right one
        if elem_less(c[i], (10, 10)):
            assert int(r[i]) == a[c[i]]
    assert str(local_tile(make_tensor(a, residue=True), (16, 16), (0, 0)).layout) == "(16,16):(10,1)"
    # the opt-in survives slicing and tiling
    assert local_tile(make_tensor(a, residue=True)[None, 2], 16, 0).engine.residue
