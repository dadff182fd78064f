"""Ampere ``mma.sync`` atoms, CuTe's ``SM80_*`` names.

f16/bf16/tf32 -> f16/f32, f64, s8/u8 -> s32 (each also ``_SATURATE``, PTX
``.satfinite``) and b1 -> s32 (``XORPOPC``/``ANDPOPC``).
"""

from layoutalg import Layout

from .ops import mma_sync

__all__ = ["ENTRIES"]

WARP = Layout(32, 1)                                                     # T32 -> lane

# ---- shared layouts (thread = (threadID_in_group, groupID)) -------------------
SM80_8x4 = Layout(((4, 8), 1), ((8, 1), 0))                              # (T32,V1) -> (M8,K4)
SM80_8x8_ROW = Layout(((4, 8), 2), ((16, 1), 8))                         # (T32,V2) -> (M8,N8)
SM80_8x16_ROW = Layout(((4, 8), 4), ((32, 1), 8))                        # (T32,V4) -> (M8,K16)
SM80_16x8_ROW = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))             # (T32,V4) -> (M16,N8)

# ---- 16-bit floating point inputs ------------------------------------------
A_16x8x16_F16 = Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))     # (T32,V8) -> (M16,K16)
B_16x8x16_F16 = Layout(((4, 8), (2, 2)), ((16, 1), (8, 64)))             # (T32,V4) -> (N8,K16)
A_16x8x8_F16 = SM80_16x8_ROW                                             # (T32,V4) -> (M16,K8)
B_16x8x8_F16 = SM80_8x8_ROW                                              # (T32,V2) -> (N8,K8)

# ---- tf32 inputs -------------------------------------------------------------
A_16x8x4_TF32 = Layout(((4, 8), 2), ((16, 1), 8))                        # (T32,V2) -> (M16,K4)
B_16x8x4_TF32 = SM80_8x4                                                 # (T32,V1) -> (N8,K4)
A_16x8x8_TF32 = Layout(((4, 8), (2, 2)), ((16, 1), (8, 64)))             # (T32,V4) -> (M16,K8)
B_16x8x8_TF32 = Layout(((4, 8), 2), ((8, 1), 32))                        # (T32,V2) -> (N8,K8)

# ---- 8-bit integer inputs ----------------------------------------------------
A_16x8x16_I8 = Layout(((4, 8), (4, 2)), ((64, 1), (16, 8)))              # (T32,V8) -> (M16,K16)
A_16x8x32_I8 = Layout(((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256)))      # (T32,V16) -> (M16,K32)
B_16x8x32_I8 = Layout(((4, 8), (4, 2)), ((32, 1), (8, 128)))             # (T32,V8) -> (N8,K32)

# ---- 1-bit inputs ------------------------------------------------------------
AB_8x8x128_B1 = Layout(((4, 8), 32), ((256, 1), 8))                      # (T32,V32) -> (M8|N8,K128)
A_16x8x128_B1 = Layout(((4, 8), (32, 2)), ((512, 1), (16, 8)))           # (T32,V64) -> (M16,K128)
A_16x8x256_B1 = Layout(((4, 8), (32, 2, 2)), ((512, 1), (16, 8, 2048)))  # (T32,V128) -> (M16,K256)
B_16x8x256_B1 = Layout(((4, 8), (32, 2)), ((256, 1), (8, 1024)))         # (T32,V64) -> (N8,K256)


def _u32(n):
    return (n, "u32")


def _float_entries():
    out = []
    for k, la, lb, ra, rb in ((8, A_16x8x8_F16, B_16x8x8_F16, 2, 1),
                              (16, A_16x8x16_F16, B_16x8x16_F16, 4, 2)):
        shape = (16, 8, k)
        out.append(mma_sync(
            f"SM80_16x8x{k}_F16F16F16F16_TN", shape, WARP, la, lb, SM80_16x8_ROW,
            ("f16", "f16", "f16", "f16"), (_u32(2), _u32(ra), _u32(rb), _u32(2)), 80,
            f"mma.sync.aligned.m16n8k{k}.row.col.f16.f16.f16.f16"))
        for ab, AB in (("f16", "F16"), ("bf16", "BF16")):
            out.append(mma_sync(
                f"SM80_16x8x{k}_F32{AB}{AB}F32_TN", shape, WARP, la, lb, SM80_16x8_ROW,
                ("f32", ab, ab, "f32"), ((4, "f32"), _u32(ra), _u32(rb), (4, "f32")), 80,
                f"mma.sync.aligned.m16n8k{k}.row.col.f32.{ab}.{ab}.f32"))
    for k, la, lb, ra, rb in ((4, A_16x8x4_TF32, B_16x8x4_TF32, 2, 1),
                              (8, A_16x8x8_TF32, B_16x8x8_TF32, 4, 2)):
        out.append(mma_sync(
            f"SM80_16x8x{k}_F32TF32TF32F32_TN", (16, 8, k), WARP, la, lb, SM80_16x8_ROW,
            ("f32", "tf32", "tf32", "f32"), ((4, "f32"), _u32(ra), _u32(rb), (4, "f32")), 80,
            f"mma.sync.aligned.m16n8k{k}.row.col.f32.tf32.tf32.f32"))
    out.append(mma_sync(
        "SM80_8x8x4_F64F64F64F64_TN", (8, 8, 4), WARP, SM80_8x4, SM80_8x4, SM80_8x8_ROW,
        ("f64", "f64", "f64", "f64"), ((2, "f64"), (1, "f64"), (1, "f64"), (2, "f64")), 80,
        "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"))
    return out


_SAT_NOTE = ("PTX .satfinite: the s32 result is clamped to [-2^31, 2^31-1] instead of wrapping; "
             "CuTe writes the qualifier after the types (...s32.s8.s8.s32.satfinite)")


def _int_entries():
    out = []
    shapes = (  # K, M, A layout, B layout, C layout, A regs, B regs, C regs
        (16, 8, SM80_8x16_ROW, SM80_8x16_ROW, SM80_8x8_ROW, 1, 1, 2),
        (16, 16, A_16x8x16_I8, SM80_8x16_ROW, SM80_16x8_ROW, 2, 1, 4),
        (32, 16, A_16x8x32_I8, B_16x8x32_I8, SM80_16x8_ROW, 4, 2, 4),
    )
    for k, m, la, lb, lc, ra, rb, rc in shapes:
        for ta in ("s8", "u8"):
            for tb in ("s8", "u8"):
                base = f"SM80_{m}x8x{k}_S32{ta.upper()}{tb.upper()}S32_TN"
                for sat in (False, True):
                    out.append(mma_sync(
                        base + ("_SATURATE" if sat else ""), (m, 8, k), WARP, la, lb, lc,
                        ("s32", ta, tb, "s32"), (_u32(rc), _u32(ra), _u32(rb), _u32(rc)), 80,
                        f"mma.sync.aligned.m{m}n8k{k}.row.col{'.satfinite' if sat else ''}"
                        f".s32.{ta}.{tb}.s32",
                        notes=_SAT_NOTE if sat else ""))
    return out


_XOR_NOTE = "CuTe enables the .xor.popc form only when compiling for sm_80..sm_89"
_K128_NOTE = ("CuTe's header spells this ALayout's value stride as Stride<Stride<_16,_8>> "
              "(not congruent with its shape); this entry uses ((512,1),(16,8)), the layout "
              "the PTX m16n8k128 fragment table gives")


def _b1_entries():
    out = []
    shapes = (  # M, K, A layout, B layout, C layout, A regs, B regs, C regs
        (8, 128, AB_8x8x128_B1, AB_8x8x128_B1, SM80_8x8_ROW, 1, 1, 2),
        (16, 128, A_16x8x128_B1, AB_8x8x128_B1, SM80_16x8_ROW, 2, 1, 4),
        (16, 256, A_16x8x256_B1, B_16x8x256_B1, SM80_16x8_ROW, 4, 2, 4),
    )
    for m, k, la, lb, lc, ra, rb, rc in shapes:
        for op in ("XOR", "AND"):
            notes = [n for n in ((_XOR_NOTE if op == "XOR" else ""),
                                 (_K128_NOTE if (m, k) == (16, 128) else "")) if n]
            out.append(mma_sync(
                f"SM80_{m}x8x{k}_S32U1U1S32_TN_{op}POPC", (m, 8, k), WARP, la, lb, lc,
                ("s32", "b1", "b1", "s32"), (_u32(rc), _u32(ra), _u32(rb), _u32(rc)), 80,
                f"mma.sync.aligned.m{m}n8k{k}.row.col.s32.b1.b1.s32.{op.lower()}.popc",
                notes="; ".join(notes)))
    return out


ENTRIES = tuple(_float_entries() + _int_entries() + _b1_entries())
