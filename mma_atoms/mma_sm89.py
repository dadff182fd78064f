"""Ada ``mma.sync`` FP8 atoms: CuTe's ``SM89_16x8x32_{F32,F16}{E4M3,E5M2}{E4M3,E5M2}{F32,F16}_TN``."""

from layoutalg import Layout

from .ops import mma_sync

__all__ = ["ENTRIES"]

WARP = Layout(32, 1)                                                     # T32 -> lane

A_16x8x32_F8 = Layout(((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256)))      # (T32,V16) -> (M16,K32)
B_16x8x32_F8 = Layout(((4, 8), (4, 2)), ((32, 1), (8, 128)))             # (T32,V8) -> (N8,K32)
C_16x8 = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))                    # (T32,V4) -> (M16,N8)

_F16_NOTE = "the f16-accumulator form needs PTX ISA 8.7 (CUDA 12.8) or newer"


def _entries():
    out = []
    for acc in ("f32", "f16"):
        regs_c = (4, "f32") if acc == "f32" else (2, "u32")
        for ta in ("e4m3", "e5m2"):
            for tb in ("e4m3", "e5m2"):
                out.append(mma_sync(
                    f"SM89_16x8x32_{acc.upper()}{ta.upper()}{tb.upper()}{acc.upper()}_TN",
                    (16, 8, 32), WARP, A_16x8x32_F8, B_16x8x32_F8, C_16x8,
                    (acc, ta, tb, acc), (regs_c, (4, "u32"), (2, "u32"), regs_c), 89,
                    f"mma.sync.aligned.m16n8k32.row.col.{acc}.{ta}.{tb}.{acc}",
                    notes=_F16_NOTE if acc == "f16" else ""))
    return tuple(out)


ENTRIES = _entries()
