"""Turing ``mma.sync`` atoms: CuTe's ``SM75_16x8x8_F32F16F16F32_TN`` and ``SM75_8x8x16_S32S8S8S32_TN``."""

from layoutalg import Layout

from .ops import mma_sync

__all__ = ["ENTRIES"]

WARP = Layout(32, 1)                                                     # T32 -> lane

# 16x8x8 f16 -> f32
SM75_16x8x8_A = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))             # (T32,V4) -> (M16,K8)
SM75_16x8x8_B = Layout(((4, 8), 2), ((16, 1), 8))                        # (T32,V2) -> (N8,K8)
SM75_16x8x8_C = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))             # (T32,V4) -> (M16,N8)

# 8x8x16 s8 -> s32
SM75_8x8x16_A = Layout(((4, 8), 4), ((32, 1), 8))                        # (T32,V4) -> (M8,K16)
SM75_8x8x16_B = Layout(((4, 8), 4), ((32, 1), 8))                        # (T32,V4) -> (N8,K16)
SM75_8x8x16_C = Layout(((4, 8), 2), ((16, 1), 8))                        # (T32,V2) -> (M8,N8)

ENTRIES = (
    mma_sync("SM75_16x8x8_F32F16F16F32_TN", (16, 8, 8), WARP,
             SM75_16x8x8_A, SM75_16x8x8_B, SM75_16x8x8_C,
             ("f32", "f16", "f16", "f32"), ((4, "f32"), (2, "u32"), (1, "u32"), (4, "f32")), 75,
             "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"),
    mma_sync("SM75_8x8x16_S32S8S8S32_TN", (8, 8, 16), WARP,
             SM75_8x8x16_A, SM75_8x8x16_B, SM75_8x8x16_C,
             ("s32", "s8", "s8", "s32"), ((2, "u32"), (1, "u32"), (1, "u32"), (2, "u32")), 75,
             "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32"),
)
