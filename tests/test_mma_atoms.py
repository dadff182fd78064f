"""MMA atom tables: structure, registers, and agreement with the PTX ISA (emulation)."""

import re
import zlib
from pathlib import Path

import numpy as np
import pytest

import mma_atoms
from layoutalg import Layout, size
from mma_atoms import emulate as E
from mma_atoms import ptx_fragments as P
from mma_atoms.numerics import decode, encode, quantize, type_bits

MMA_NAMES = mma_atoms.names("mma")
PTX_NAMES = [n for n in MMA_NAMES if mma_atoms.get(n).kind != "fma"]


def _types(ts):
    return [t.lower() for t in re.findall(r"F16|BF16|TF32|F32|F64|S8|U8|S32|U1|E4M3|E5M2", ts)]


# ---- the required entries exist, with CuTe's names ----------------------------

REQUIRED = (
    [f"SM70_8x8x4_{t}_{s}" for t in ("F16F16F16F16", "F32F16F16F32") for s in ("TN", "NT", "NN", "TT")]
    + ["SM75_16x8x8_F32F16F16F32_TN", "SM75_8x8x16_S32S8S8S32_TN",
       "SM80_16x8x8_F16F16F16F16_TN", "SM80_16x8x8_F32F16F16F32_TN", "SM80_16x8x8_F32BF16BF16F32_TN",
       "SM80_16x8x16_F16F16F16F16_TN", "SM80_16x8x16_F32F16F16F32_TN", "SM80_16x8x16_F32BF16BF16F32_TN",
       "SM80_16x8x4_F32TF32TF32F32_TN", "SM80_16x8x8_F32TF32TF32F32_TN", "SM80_8x8x4_F64F64F64F64_TN",
       "SM80_16x8x256_S32U1U1S32_TN_XORPOPC", "SM80_16x8x256_S32U1U1S32_TN_ANDPOPC",
       "SM89_16x8x32_F32E4M3E4M3F32_TN", "SM89_16x8x32_F32E4M3E5M2F32_TN",
       "SM89_16x8x32_F32E5M2E4M3F32_TN", "SM89_16x8x32_F32E5M2E5M2F32_TN", "UniversalFMA"]
    + [f"SM80_{mk}_S32{a}{b}S32_TN{sat}" for mk in ("8x8x16", "16x8x16", "16x8x32")
       for a in ("S8", "U8") for b in ("S8", "U8") for sat in ("", "_SATURATE")]
    + [f"SM90_64x{n}x16_{t}_{m}" for n in range(8, 257, 8)
       for t in ("F32F16F16", "F32BF16BF16", "F16F16F16") for m in ("SS", "RS")]
    + [f"SM90_64x{n}x8_F32TF32TF32_{m}_TN" for n in range(8, 257, 8) for m in ("SS", "RS")]
    + [f"SM90_64x{n}x32_F32{a}{b}_{m}_TN" for n in range(8, 257, 8)
       for a in ("E4M3", "E5M2") for b in ("E4M3", "E5M2") for m in ("SS", "RS")]
)


def test_required_entries_present():
    missing = [n for n in REQUIRED if n not in MMA_NAMES]
    assert not missing


def test_names_unique_and_get_roundtrip():
    allnames = mma_atoms.names()
    assert len(allnames) == len(set(allnames))
    for n in allnames:
        assert mma_atoms.get(n).name == n


def test_names_filters():
    assert set(mma_atoms.names("mma")) | set(mma_atoms.names("copy")) == set(mma_atoms.names())
    assert all(mma_atoms.get(n).kind == "wgmma" for n in mma_atoms.names("wgmma"))
    assert len(mma_atoms.names("wgmma")) == 32 * 8 * 2      # N 8..256; f16/bf16 (3), tf32, 4 fp8 pairs; SS, RS
    sm80 = mma_atoms.names(sm=80)
    assert "SM80_16x8x16_F32F16F16F32_TN" in sm80
    assert not any(n.startswith(("SM89", "SM90")) for n in sm80)
    with pytest.raises(ValueError, match="unknown kind"):
        mma_atoms.names("tensor")
    with pytest.raises(TypeError):
        mma_atoms.names(sm="80")


def test_unknown_name_lists_close_matches():
    with pytest.raises(mma_atoms.UnknownAtomError) as ei:
        mma_atoms.get("SM80_16x8x16_F32F16F16F32_NT")
    err = ei.value
    assert isinstance(err, KeyError) and isinstance(err, LookupError)
    assert "SM80_16x8x16_F32F16F16F32_TN" in str(err)
    assert "SM80_16x8x16_F32F16F16F32_TN" in err.suggestions
    with pytest.raises(LookupError, match="SM75_U32x4_LDSM_N"):
        mma_atoms.get("sm75_u32x4_ldsm_n")
    with pytest.raises(LookupError, match="names()"):
        mma_atoms.get("zzzzzz")
    with pytest.raises(TypeError):
        mma_atoms.get(42)


# ---- a few entries spelled out (CuTe's printed form) --------------------------

@pytest.mark.parametrize("name,which,text", [
    ("SM80_16x8x16_F32F16F16F32_TN", "layout_a", "((4,8),(2,2,2)):((32,1),(16,8,128))"),
    ("SM80_16x8x16_F32F16F16F32_TN", "layout_b", "((4,8),(2,2)):((16,1),(8,64))"),
    ("SM80_16x8x16_F32F16F16F32_TN", "layout_c", "((4,8),(2,2)):((32,1),(16,8))"),
    ("SM80_8x8x4_F64F64F64F64_TN", "layout_a", "((4,8),1):((8,1),0)"),
    ("SM70_8x8x4_F32F16F16F32_TN", "thr_id", "(4,2):(1,16)"),
    ("SM70_8x8x4_F32F16F16F32_TN", "layout_c", "((2,2,2),(2,2,2)):((1,16,4),(8,2,32))"),
    ("SM70_8x8x4_F16F16F16F16_NT", "layout_a", "((4,2),4):((8,4),1)"),
    ("SM90_64x128x16_F32F16F16_SS", "layout_c", "((4,8,4),(2,2,16)):((128,1,16),(64,8,512))"),
    ("SM90_64x128x16_F32F16F16_SS", "layout_a", "(128,(64,16)):(0,(1,64))"),
    ("SM90_64x8x16_F16F16F16_RS", "layout_c", "((4,8,4),(2,2,1)):((128,1,16),(64,8,512))"),
    ("SM90_64x128x16_F32BF16BF16_RS", "layout_a", "((4,8,4),(2,2,2)):((128,1,16),(64,8,512))"),
    ("SM90_64x64x8_F32TF32TF32_RS_TN", "layout_a", "((4,8,4),(2,2)):((64,1,16),(8,256))"),
    ("SM90_64x256x8_F32TF32TF32_SS_TN", "layout_b", "(128,(256,8)):(0,(1,256))"),
    ("SM90_64x32x32_F32E4M3E5M2_RS_TN", "layout_a", "((4,8,4),(4,2,2)):((256,1,16),(64,8,1024))"),
    ("SM90_64x256x32_F32E5M2E5M2_SS_TN", "layout_c", "((4,8,4),(2,2,32)):((128,1,16),(64,8,512))"),
    ("SM80_16x8x256_S32U1U1S32_TN_XORPOPC", "layout_a", "((4,8),(32,2,2)):((512,1),(16,8,2048))"),
])
def test_known_layouts(name, which, text):
    lay = getattr(mma_atoms.get(name), which)
    assert str(lay) == text
    assert Layout.parse(text) == lay


def test_fields_and_ptx_text():
    op = mma_atoms.get("SM80_16x8x16_F32F16F16F32_TN")
    assert op.shape_mnk == (16, 8, 16) and op.num_threads == 32 and op.min_sm == 80
    assert (op.a_type, op.b_type, op.c_type, op.d_type) == ("f16", "f16", "f32", "f32")
    assert str(op.a_regs) == "4 x u32" and str(op.b_regs) == "2 x u32" and str(op.d_regs) == "4 x f32"
    assert op.ptx == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    assert op.ptx_operands == "{d0, d1, d2, d3}, {a0, a1, a2, a3}, {b0, b1}, {c0, c1, c2, c3}"
    with pytest.raises(Exception):
        op.name = "x"                                   # frozen
    sat = mma_atoms.get("SM80_16x8x32_S32S8U8S32_TN_SATURATE")
    assert sat.ptx == "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32"
    assert "SM90" in mma_atoms.get("SM90_64x64x16_F16F16F16_SS").summary()


@pytest.mark.parametrize("name", PTX_NAMES)
def test_ptx_matches_name(name):
    op = mma_atoms.get(name)
    p = P.parse_mma_ptx(op.ptx)
    assert (p.m, p.n, p.k) == op.shape_mnk
    m = re.match(r"SM\d+_\d+x\d+x\d+_([A-Z0-9]+)_", name)
    types = _types(m.group(1))
    types = ["b1" if t == "u1" else t for t in types]
    if op.kind == "wgmma":                              # D, A, B (C = D)
        assert types == [op.d_type, op.a_type, op.b_type]
        assert op.ptx_target == "sm_90a"
    else:                                               # D, A, B, C
        assert types == [op.d_type, op.a_type, op.b_type, op.c_type]
        assert (p.dtype, p.atype, p.btype, p.ctype) == (op.d_type, op.a_type, op.b_type, op.c_type)
        counts = [len(g.split(",")) for g in re.findall(r"\{([^}]*)\}", op.ptx_operands)]
        assert counts == [op.d_regs.count, op.a_regs.count, op.b_regs.count, op.c_regs.count]
    assert p.satfinite == name.endswith("_SATURATE")
    assert p.bitop == ("xor" if name.endswith("XORPOPC") else "and" if name.endswith("ANDPOPC") else "")


def test_shape_comment_on_every_layout():
    root = Path(mma_atoms.__file__).parent
    missing = []
    for f in sorted(root.glob("*.py")):
        for no, line in enumerate(f.read_text().splitlines(), 1):
            if re.search(r"=\s*Layout\(", line) or re.search(r"return Layout\(", line):
                if not re.search(r"#\s*\(?T?\d*.*->", line):
                    missing.append(f"{f.name}:{no}")
    assert not missing


# ---- TV layouts are bijections onto their tiles --------------------------------

@pytest.mark.parametrize("name", MMA_NAMES)
def test_thr_id_and_tv_layouts(name):
    op = mma_atoms.get(name)
    lanes = E.layout_table(op.thr_id, tv=False)
    assert len(set(lanes.tolist())) == op.num_threads
    assert lanes.min() >= 0 and lanes.max() < {"mma_sync": 32, "wgmma": 128, "fma": 1}[op.kind]
    for operand, (r, c) in (("a", op.tile_a), ("b", op.tile_b), ("c", op.tile_c)):
        lay = op.layout(operand)
        tab = E.layout_table(lay)
        assert tab.shape[0] == op.num_threads
        if op.source(operand) == "smem_desc":
            # the documented property: a broadcast; every thread sees the whole tile, column-major
            assert np.all(tab == tab[0])
            assert np.array_equal(tab[0], np.arange(r * c))
            assert lay.stride[0] == 0
            continue
        assert size(lay) == op.num_threads * op.values_per_thread(operand)
        assert size(lay) == r * c
        assert np.array_equal(np.sort(tab.reshape(-1)), np.arange(r * c))


@pytest.mark.parametrize("name", MMA_NAMES)
def test_register_counts(name):
    op = mma_atoms.get(name)
    if op.a_type == "any":
        assert all(op.regs(x).count == 1 for x in "abcd")
        return
    for operand in "abcd":
        regs = op.regs(operand)
        if op.source(operand) == "smem_desc":
            assert str(regs) == "1 x u64"
            continue
        bits = op.values_per_thread(operand) * type_bits(op.elem_type(operand))
        assert regs.bits == bits, (operand, regs, bits)
    assert op.c_regs == op.d_regs or op.c_type != op.d_type


# ---- the tables against the PTX ISA fragment formulas --------------------------

def _linear(op, operand, coords):
    M, N, _ = op.shape_mnk
    if operand == "a":                          # (m, k) -> m + M*k
        return coords[..., 0] + M * coords[..., 1]
    if operand == "b":                          # PTX (k, n) -> n + N*k
        return coords[..., 1] + N * coords[..., 0]
    return coords[..., 0] + M * coords[..., 1]  # (m, n) -> m + M*n


@pytest.mark.parametrize("name", PTX_NAMES)
def test_layouts_equal_ptx_fragment_tables(name):
    op = mma_atoms.get(name)
    lanes = E.layout_table(op.thr_id, tv=False)
    for operand in "abc":
        if op.source(operand) == "smem_desc":
            continue
        coords = P.mma_coords(op.ptx, "d" if operand == "c" else operand, lanes)
        assert P.element_count(op.ptx, operand) == op.values_per_thread(operand)
        assert np.array_equal(E.layout_table(op.layout(operand)), _linear(op, operand, coords)), operand


def _random_operands(op, rng):
    M, N, K = op.shape_mnk
    if op.a_type == "b1":
        return (rng.integers(0, 2, (M, K)), rng.integers(0, 2, (N, K)), rng.integers(-500, 500, (M, N)))
    if op.a_type in ("s8", "u8"):
        def ints(t, shape):
            return rng.integers(-128, 128, shape) if t == "s8" else rng.integers(0, 256, shape)
        return ints(op.a_type, (M, K)), ints(op.b_type, (N, K)), rng.integers(-10**6, 10**6, (M, N))
    # small integers: exact in every float type (e5m2 included) and in every sum
    return (rng.integers(-4, 5, (M, K)).astype(float), rng.integers(-4, 5, (N, K)).astype(float),
            rng.integers(-16, 17, (M, N)).astype(float))


def _reference(op, A, B, C):
    if op.a_type == "b1":
        bits = (A[:, None, :] ^ B[None, :, :]) if op.name.endswith("XORPOPC") else (A[:, None, :] & B[None, :, :])
        return bits.sum(axis=-1) + C
    return A @ B.T + C


@pytest.mark.parametrize("name", MMA_NAMES)
def test_emulation_matches_numpy(name):
    op = mma_atoms.get(name)
    if op.kind == "fma":
        d = E.mma(op, np.array([[3.0]]), np.array([[-2.0]]), np.array([[1.5]]))
        assert d.shape == (1, 1) and float(d[0, 0]) == -4.5
        return
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    A, B, C = _random_operands(op, rng)
    d = E.mma(op, E.scatter(op, "a", A), E.scatter(op, "b", B), E.scatter(op, "c", C))
    assert d.shape == (op.num_threads, op.values_per_thread("d"))
    assert np.array_equal(E.gather(op, "d", d), _reference(op, A, B, C))


@pytest.mark.parametrize("name", [n for n in PTX_NAMES if "S8" in n or "U8" in n][:24])
def test_integer_overflow_wraps_or_saturates(name):
    op = mma_atoms.get(name)
    M, N, K = op.shape_mnk
    A = np.full((M, K), 100)
    B = np.full((N, K), 100)
    C = np.full((M, N), 2**31 - 1000)
    d = E.gather(op, "d", E.mma(op, E.scatter(op, "a", A), E.scatter(op, "b", B), E.scatter(op, "c", C)))
    exact = 2**31 - 1000 + 10000 * K
    if name.endswith("_SATURATE"):
        assert np.all(d == 2**31 - 1)
    else:
        assert np.all(d == exact - 2**32)


def test_float_rounding_of_inputs_and_result():
    op = mma_atoms.get("SM80_16x8x8_F16F16F16F16_TN")
    M, N, K = op.shape_mnk
    A = np.zeros((M, K)); B = np.zeros((N, K)); C = np.zeros((M, N))
    A[0, 0] = 1 + 2**-11           # ties to even -> 1.0 in f16
    B[0, 0] = 1.0
    C[0, 0] = 2**11                # 2048 + 1 is not an f16: rounds to 2048
    d = E.gather(op, "d", E.mma(op, E.scatter(op, "a", A), E.scatter(op, "b", B), E.scatter(op, "c", C)))
    assert d[0, 0] == 2048.0
    op = mma_atoms.get("SM80_16x8x8_F32BF16BF16F32_TN")
    A[0, 0] = 1 + 2**-9            # bf16 keeps 7 mantissa bits -> 1.0
    C[0, 0] = 0.25
    d = E.gather(op, "d", E.mma(op, E.scatter(op, "a", A), E.scatter(op, "b", B), E.scatter(op, "c", C)))
    assert d[0, 0] == 1.25
    assert float(quantize(1 + 2**-10 + 2**-12, "tf32")) == 1 + 2**-10      # tf32 drops the low 13 bits
    assert float(quantize(1000.0, "e4m3")) == 448.0 and np.isinf(quantize(1e6, "e5m2"))


def test_wgmma_tf32_and_fp8_read_their_inputs_as_the_hardware_does():
    """tf32: the low 13 mantissa bits of an f32 are ignored (truncation, not rounding);
    e4m3 saturates at 448 and e5m2 keeps 2 mantissa bits; mixed e4m3 x e5m2 reads each
    operand in its own type."""
    op = mma_atoms.get("SM90_64x8x8_F32TF32TF32_SS_TN")
    A = np.zeros((64, 8)); B = np.zeros((8, 8)); C = np.zeros((64, 8))
    A[0, 0] = 1 + 3 * 2**-12       # nearest tf32 is 1 + 2**-10; truncated: 1.0
    B[0, 0] = 1.0
    d = E.gather(op, "d", E.mma(op, A, B, E.scatter(op, "c", C)))
    assert d[0, 0] == 1.0
    op = mma_atoms.get("SM90_64x8x32_F32E4M3E5M2_SS_TN")
    A = np.zeros((64, 32)); B = np.zeros((8, 32))
    A[0, 0], B[0, 0] = 1000.0, 1.0 + 2**-3      # e4m3: 448; e5m2: 1.125 is between 1 and 1.25 -> 1.0
    A[0, 1], B[0, 1] = 1.0, 3.5
    d = E.gather(op, "d", E.mma(op, A, B, E.scatter(op, "c", np.zeros((64, 8)))))
    assert d[0, 0] == 448.0 + 3.5


@pytest.mark.parametrize("t", ["f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2", "s8", "u8", "s32", "b1"])
def test_encode_decode_roundtrip(t):
    rng = np.random.default_rng(7)
    if t in ("s8", "u8", "s32", "b1"):
        lo, hi = {"s8": (-128, 128), "u8": (0, 256), "s32": (-2**31, 2**31), "b1": (0, 2)}[t]
        x = rng.integers(lo, hi, 64)
    else:
        x = quantize(rng.normal(0, 3, 64), t)
    assert np.array_equal(decode(encode(x, t), t), x)


@pytest.mark.parametrize("name", ["SM80_16x8x16_F32BF16BF16F32_TN", "SM70_8x8x4_F16F16F16F16_NT",
                                  "SM80_16x8x256_S32U1U1S32_TN_ANDPOPC", "SM89_16x8x32_F16E5M2E4M3F16_TN",
                                  "SM80_8x8x4_F64F64F64F64_TN", "SM80_16x8x8_F32TF32TF32F32_TN",
                                  "SM90_64x24x16_F16F16F16_RS"])
def test_registers_pack_unpack(name):
    op = mma_atoms.get(name)
    rng = np.random.default_rng(3)
    A, B, C = _random_operands(op, rng)
    fr = {x: E.scatter(op, x, m) for x, m in zip("abc", (A, B, C))}
    regs = {x: (fr[x] if op.source(x) == "smem_desc" else E.pack(op, x, fr[x])) for x in "abc"}
    for x in "abc":
        if op.source(x) == "rmem":
            assert regs[x].shape == (op.num_threads, op.regs(x).count)
            assert np.array_equal(E.unpack(op, x, regs[x]), fr[x])
    d_regs = E.mma_registers(op, regs["a"], regs["b"], regs["c"])
    assert np.array_equal(d_regs, E.pack(op, "d", E.mma(op, fr["a"], fr["b"], fr["c"])))


def test_sm70_other_quad_pairs():
    op = mma_atoms.get("SM70_8x8x4_F32F16F16F32_TT")
    rng = np.random.default_rng(5)
    A, B, C = _random_operands(op, rng)
    fr = [E.scatter(op, x, m) for x, m in zip("abc", (A, B, C))]
    base = E.layout_table(op.thr_id, tv=False)
    assert sorted(base.tolist()) == [0, 1, 2, 3, 16, 17, 18, 19]
    for q in range(4):
        assert np.array_equal(E.gather(op, "d", E.mma(op, *fr, lanes=base + 4 * q)), A @ B.T + C)
    with pytest.raises(ValueError, match="lanes"):
        E.mma(op, *fr, lanes=base[:4])


def test_f16_register_packing_low_element_first():
    op = mma_atoms.get("SM80_16x8x8_F16F16F16F16_TN")
    frags = np.zeros((32, 4))
    frags[0, 0], frags[0, 1] = 1.0, 2.0            # a0 low half, a1 high half of register 0
    regs = E.pack(op, "a", frags)
    assert int(regs[0, 0]) == 0x3C00 | (0x4000 << 16)


def test_universal_fma_typed():
    op = mma_atoms.universal_fma("f32", "f16", "f16", "f32")
    assert op.name == "UniversalFMA<f32,f16,f16,f32>" and op.num_threads == 1
    d = E.mma(op, [[1 + 2**-12]], [[2.0]], [[0.5]])
    assert float(d[0, 0]) == 2.5                     # f16 input rounds to 1.0
    assert mma_atoms.universal_fma("f64").ptx == "fma.rn.f64"
    with pytest.raises(ValueError, match="universal_fma"):
        mma_atoms.universal_fma("c64")


def test_emulate_errors():
    op = mma_atoms.get("SM80_16x8x8_F32F16F16F32_TN")
    a = np.zeros((32, 4)); b = np.zeros((32, 2)); c = np.zeros((32, 4))
    with pytest.raises(ValueError, match="fragments must be"):
        E.mma(op, a[:, :3], b, c)
    with pytest.raises(ValueError, match=r"\(16, 8\) matrix"):
        E.scatter(op, "a", np.zeros((8, 8)))
    with pytest.raises(TypeError, match="copy entry"):
        E.mma("SM75_U32x1_LDSM_N", a, b, c)
    ss = mma_atoms.get("SM90_64x8x16_F32F16F16_SS")
    with pytest.raises(ValueError, match="descriptor"):
        E.mma(ss, np.zeros((128, 8)), np.zeros((8, 16)), np.zeros((128, 4)))
    with pytest.raises(ValueError, match="descriptor"):
        E.pack(ss, "a", np.zeros((64, 16)))
    with pytest.raises(ValueError, match="not an mma"):
        P.parse_mma_ptx("ld.global.b32")
    with pytest.raises(ValueError, match="operand"):
        op.layout("e")
    bad = Layout(((4, 8), 2), ((16, 1), 0))      # not a bijection
    with pytest.raises(ValueError, match="bijection"):
        E.gather(op.__class__(**{**op.__dict__, "layout_b": bad}), "b", np.zeros((32, 2)))


def test_dataclass_validation():
    op = mma_atoms.get("SM80_16x8x8_F32F16F16F32_TN")
    fields = dict(op.__dict__)
    with pytest.raises(ValueError, match="kind"):
        mma_atoms.MMAOp(**{**fields, "kind": "tensor"})
    with pytest.raises(ValueError, match="element type"):
        mma_atoms.MMAOp(**{**fields, "a_type": "f8"})
    with pytest.raises(TypeError, match="Layout"):
        mma_atoms.MMAOp(**{**fields, "layout_a": "((4,8),2)"})
    with pytest.raises(ValueError, match="threads"):
        mma_atoms.MMAOp(**{**fields, "layout_a": Layout((16, 4))})
    with pytest.raises(ValueError, match="register type"):
        mma_atoms.Regs(2, "f17")
