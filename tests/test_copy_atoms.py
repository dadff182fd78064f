"""Copy atom tables: bit layouts, registers, and agreement with the PTX ISA (emulation)."""

import numpy as np
import pytest

import mma_atoms
from layoutalg import size
from mma_atoms import emulate as E

COPY_NAMES = mma_atoms.names("copy")

REQUIRED = (
    [f"UniversalCopy_{b}" for b in (8, 16, 32, 64, 128)]
    + [f"SM80_CP_ASYNC_CACHEALWAYS_{b}" for b in (32, 64, 128)] + ["SM80_CP_ASYNC_CACHEGLOBAL_128"]
    + [f"SM75_U32x{n}_LDSM_N" for n in (1, 2, 4)] + [f"SM75_U16x{n}_LDSM_T" for n in (2, 4, 8)]
    + [f"SM90_U32x{n}_STSM_N" for n in (1, 2, 4)] + [f"SM90_U16x{n}_STSM_T" for n in (2, 4, 8)]
)
MATRIX_NAMES = mma_atoms.names("ldsm") + mma_atoms.names("stsm")


def test_required_entries_present():
    assert sorted(COPY_NAMES) == sorted(REQUIRED)


@pytest.mark.parametrize("name,which,text", [
    ("SM75_U32x1_LDSM_N", "src_layout", "((8,4),128):((128,0),1)"),
    ("SM75_U32x2_LDSM_N", "dst_layout", "(32,(32,2)):(32,(1,1024))"),
    ("SM75_U16x4_LDSM_T", "dst_layout", "((4,8),(16,2,2)):((256,16),(1,128,1024))"),
    ("SM90_U16x8_STSM_T", "src_layout", "((4,8),(16,2,4)):((256,16),(1,128,1024))"),
    ("SM90_U32x4_STSM_N", "dst_layout", "(32,128):(128,1)"),
    ("SM80_CP_ASYNC_CACHEGLOBAL_128", "src_layout", "(1,128):(0,1)"),
    ("UniversalCopy_16", "thr_id", "1:0"),
])
def test_known_layouts(name, which, text):
    assert str(getattr(mma_atoms.get(name), which)) == text


def test_fields():
    op = mma_atoms.get("SM75_U32x4_LDSM_N")
    assert op.kind == "ldsm" and op.num_threads == 32 and op.min_sm == 75 and op.num_matrices == 4
    assert op.ptx == "ldmatrix.sync.aligned.m8n8.x4.shared.b16" and str(op.dst_regs) == "4 x u32"
    st = mma_atoms.get("SM90_U16x2_STSM_T")
    assert st.ptx == "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16" and st.transpose and st.min_sm == 90
    assert st.ref_layout == st.src_layout
    ca = mma_atoms.get("SM80_CP_ASYNC_CACHEALWAYS_64")
    assert ca.value_bits == 64 and ca.ptx_operands.endswith(", 8") and ca.src_space == "gmem"
    assert mma_atoms.get("SM80_CP_ASYNC_CACHEGLOBAL_128").ptx.startswith("cp.async.cg.shared.global")
    assert mma_atoms.get("UniversalCopy_32").value_bits == 32
    assert "ldsm" in mma_atoms.get("SM75_U16x8_LDSM_T").summary()


@pytest.mark.parametrize("name", COPY_NAMES)
def test_bit_layouts(name):
    op = mma_atoms.get(name)
    nbits = op.num_bits
    assert nbits == (1024 * op.num_matrices if op.num_matrices else op.value_bits)
    for which in ("src_layout", "dst_layout", "ref_layout"):
        lay = getattr(op, which)
        tab = E.layout_table(lay)
        assert tab.shape[0] == op.num_threads
        hits = np.bincount(tab.reshape(-1), minlength=nbits)
        assert hits.size == nbits                              # nothing outside the bit range
        # every bit is reached; a register-side layout is a bijection, an address-side one
        # may broadcast (lanes whose address is ignored repeat lower lanes: stride 0)
        assert np.all(hits == hits[0]) and hits[0] >= 1
        if hits[0] > 1:
            assert op.kind in ("ldsm", "stsm") and lay.shape[0][1] == hits[0] and lay.stride[0][1] == 0
        else:
            assert size(lay) == nbits


@pytest.mark.parametrize("name", COPY_NAMES)
def test_register_counts(name):
    op = mma_atoms.get(name)
    src_vals = size(op.src_layout) // op.num_threads
    dst_vals = size(op.dst_layout) // op.num_threads
    assert op.src_regs.bits == src_vals            # values are bits
    assert op.dst_regs.bits == dst_vals


def _ldsm_setup(op, rng, nbytes=2048):
    """Random shared memory, and lane addresses chosen through the CuTe address-side layout."""
    smem = rng.integers(0, 256, nbytes, dtype=np.uint8)
    side = op.src_layout if op.kind == "ldsm" else op.dst_layout   # (T32,V128) -> bit
    tab = E.layout_table(side)
    rows = tab[:, 0] // 128                                      # which row each lane addresses
    assert np.all(tab == tab[:, :1] + np.arange(128))            # a lane's 128 bits are one row
    slots = rng.permutation(nbytes // 16)[: 8 * op.num_matrices] * 16
    return smem, slots[rows], tab


def _row_bits(smem, addr):
    return np.unpackbits(smem[addr: addr + 16], bitorder="little")


@pytest.mark.parametrize("name", mma_atoms.names("ldsm"))
def test_ldmatrix_emulation_matches_tables(name):
    op = mma_atoms.get(name)
    rng = np.random.default_rng(11)
    smem, addrs, src = _ldsm_setup(op, rng)
    # the abstract bit tile, filled through the source layout
    tile = np.full(op.num_bits, -1, dtype=np.int64)
    for t in range(32):
        bits = _row_bits(smem, addrs[t])
        prev = tile[src[t]]
        assert np.all((prev == -1) | (prev == bits))
        tile[src[t]] = bits
    assert np.all(tile >= 0)
    expected = tile[E.layout_table(op.dst_layout)]              # (T32, V) bits
    regs = E.ldmatrix(op, smem, addrs)
    assert regs.shape == (32, op.num_matrices) and regs.dtype == np.uint32
    assert np.array_equal(E.regs_to_bits(regs), expected)


@pytest.mark.parametrize("name", mma_atoms.names("stsm"))
def test_stmatrix_emulation_matches_tables(name):
    op = mma_atoms.get(name)
    rng = np.random.default_rng(12)
    smem, addrs, dst = _ldsm_setup(op, rng)
    regs = rng.integers(0, 2**32, (32, op.num_matrices), dtype=np.uint64)
    tile = np.full(op.num_bits, -1, dtype=np.int64)
    tile[E.layout_table(op.src_layout)] = E.regs_to_bits(regs)
    assert np.all(tile >= 0)
    out = E.stmatrix(op, smem, addrs, regs)
    for t in range(32):
        assert np.array_equal(_row_bits(out, addrs[t]), tile[dst[t]])
    untouched = np.ones(smem.size, dtype=bool)
    for a in set(addrs.tolist()):
        untouched[a: a + 16] = False
    assert np.array_equal(out[untouched], smem[untouched])


@pytest.mark.parametrize("num,trans", [(n, t) for n in (1, 2, 4) for t in (False, True)])
def test_stmatrix_inverts_ldmatrix(num, trans):
    ld = mma_atoms.get(f"SM75_U16x{2 * num}_LDSM_T" if trans else f"SM75_U32x{num}_LDSM_N")
    st = mma_atoms.get(f"SM90_U16x{2 * num}_STSM_T" if trans else f"SM90_U32x{num}_STSM_N")
    assert st.src_layout == ld.dst_layout and st.dst_layout == ld.src_layout
    rng = np.random.default_rng(num)
    smem = rng.integers(0, 256, 1024, dtype=np.uint8)
    addrs = np.zeros(32, dtype=np.int64)
    addrs[: 8 * num] = rng.permutation(64)[: 8 * num] * 16
    regs = E.ldmatrix(ld, smem, addrs)
    assert np.array_equal(E.stmatrix(st, np.zeros_like(smem), addrs, regs)[addrs[0]: addrs[0] + 16],
                          smem[addrs[0]: addrs[0] + 16])
    assert np.array_equal(E.ldmatrix(ld, E.stmatrix(st, smem, addrs, regs), addrs), regs)


def test_ldmatrix_known_values():
    # an 8x8 matrix of 16-bit values 8*r + c, row r at byte 16*r
    smem = np.arange(64, dtype="<u2").view(np.uint8).copy()
    addrs = np.array([16 * (t % 8) for t in range(32)])
    n = E.ldmatrix("SM75_U32x1_LDSM_N", smem, addrs)
    t = E.ldmatrix("SM75_U16x2_LDSM_T", smem, addrs)
    lane = 5                                          # row 1, columns 2 and 3; transposed: rows 2,3 of column 1
    assert int(n[lane, 0]) == (8 * 1 + 2) | ((8 * 1 + 3) << 16)
    assert int(t[lane, 0]) == (8 * 2 + 1) | ((8 * 3 + 1) << 16)


def test_ldmatrix_errors():
    op = mma_atoms.get("SM75_U32x2_LDSM_N")
    smem = np.zeros(512, dtype=np.uint8)
    addrs = np.arange(32) * 16
    with pytest.raises(ValueError, match="aligned"):
        E.ldmatrix(op, smem, addrs + 4)
    with pytest.raises(ValueError, match="out of"):
        E.ldmatrix(op, np.zeros(64, dtype=np.uint8), addrs)
    with pytest.raises(ValueError, match="32 row addresses"):
        E.ldmatrix(op, smem, addrs[:16])
    with pytest.raises(ValueError, match="uint8"):
        E.ldmatrix(op, smem.astype(np.int32), addrs)
    with pytest.raises(TypeError, match="ldsm"):
        E.ldmatrix("SM90_U32x2_STSM_N", smem, addrs)
    with pytest.raises(ValueError, match="overlap"):
        E.stmatrix("SM90_U32x2_STSM_N", smem, np.zeros(32, dtype=np.int64), np.zeros((32, 2)))


@pytest.mark.parametrize("name", mma_atoms.names("universal") + mma_atoms.names("cp_async"))
def test_copy_emulation(name):
    op = mma_atoms.get(name)
    n = op.value_bits // 8
    rng = np.random.default_rng(n)
    src = rng.integers(0, 256, 64, dtype=np.uint8)
    dst = np.zeros(64, dtype=np.uint8)
    out = E.copy(op, src, 2 * n, dst, 3 * n)
    assert np.array_equal(out[3 * n: 4 * n], src[2 * n: 3 * n])
    assert not out[: 3 * n].any() and not out[4 * n:].any()
    # in the table's terms: the one thread's bits, src layout -> dst layout
    bits = np.unpackbits(src[2 * n: 3 * n], bitorder="little")
    tile = np.zeros(op.num_bits, dtype=np.uint8)
    tile[E.layout_table(op.src_layout)] = bits[None, :]
    assert np.array_equal(tile[E.layout_table(op.dst_layout)][0],
                          np.unpackbits(out[3 * n: 4 * n], bitorder="little"))
    if op.kind == "cp_async":
        with pytest.raises(ValueError, match="aligned"):
            E.copy(op, src, 1, dst, 0)
    with pytest.raises(ValueError, match="out of range"):
        E.copy(op, src, 64, dst, 0)


def test_copy_dataclass_validation():
    op = mma_atoms.get("SM75_U32x1_LDSM_N")
    with pytest.raises(ValueError, match="kind"):
        mma_atoms.CopyOp(**{**op.__dict__, "kind": "tma"})
    with pytest.raises(ValueError, match="space"):
        mma_atoms.CopyOp(**{**op.__dict__, "src_space": "tmem"})


def test_regs_bits_roundtrip():
    rng = np.random.default_rng(0)
    regs = rng.integers(0, 2**32, (32, 4), dtype=np.uint64)
    assert np.array_equal(E.bits_to_regs(E.regs_to_bits(regs)), regs)
