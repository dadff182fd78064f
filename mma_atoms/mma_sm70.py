"""Volta ``mma.sync.aligned.m8n8k4`` (f16 inputs), CuTe's ``SM70_8x8x4_*`` atoms.

A warp runs four independent 8x8x4 products, one per *quad pair*: quad pair ``q``
is lanes ``4q..4q+3`` and ``16+4q..16+4q+3``.  An atom is one of them: its eight
logical threads map to lanes by ``thr_id = (4,2):(1,16)`` (quad pair 0); a TiledMMA
places the other three.  The suffix gives the operands' majorness in BLAS terms:
``T`` is K-major (PTX ``.row`` for A, ``.col`` for B), ``N`` is M/N-major.
"""

from layoutalg import Layout

from .ops import mma_sync

__all__ = ["ENTRIES"]

# Logical thread -> lane: the quad pair 0 (lanes 0-3 and 16-19).
QUAD_PAIR = Layout((4, 2), (1, 16))                                      # T8 -> lane

# (T8,V4) -> (M8,K4): thread t holds row t, values run along K (K-major operand).
SM70_8x4_ROW = Layout((8, 4), (1, 8))                                     # (T8,V4) -> (M8,K4)
# (T8,V4) -> (M8,K4): thread (t0,t1) holds column k=t0, rows 4*t1 + v (M-major operand).
SM70_8x4_COL = Layout(((4, 2), 4), ((8, 4), 1))                           # (T8,V4) -> (M8,K4)
# (T8,V8) -> (M8,N8): f16 accumulator, thread t holds row t.
SM70_8x8_16B = Layout((8, 8), (1, 8))                                     # (T8,V8) -> (M8,N8)
# (T8,V8) -> (M8,N8): f32 accumulator, 2x2 blocks spread over the quad pair.
SM70_8x8_32B = Layout(((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32)))  # (T8,V8) -> (M8,N8)

_LAYOUTS = {  # suffix -> (A layout, B layout, PTX .alayout.blayout)
    "TN": (SM70_8x4_ROW, SM70_8x4_ROW, "row.col"),
    "NT": (SM70_8x4_COL, SM70_8x4_COL, "col.row"),
    "NN": (SM70_8x4_COL, SM70_8x4_ROW, "col.col"),
    "TT": (SM70_8x4_ROW, SM70_8x4_COL, "row.row"),
}

_NOTE = ("one of the four 8x8x4 products a warp computes; thr_id maps the atom's 8 threads "
         "to quad pair 0 (lanes 0-3, 16-19)")


def _entries():
    out = []
    for suffix, (la, lb, majors) in _LAYOUTS.items():
        out.append(mma_sync(
            f"SM70_8x8x4_F16F16F16F16_{suffix}", (8, 8, 4), QUAD_PAIR, la, lb, SM70_8x8_16B,
            ("f16", "f16", "f16", "f16"), ((4, "u32"), (2, "u32"), (2, "u32"), (4, "u32")), 70,
            f"mma.sync.aligned.m8n8k4.{majors}.f16.f16.f16.f16", notes=_NOTE))
        out.append(mma_sync(
            f"SM70_8x8x4_F32F16F16F32_{suffix}", (8, 8, 4), QUAD_PAIR, la, lb, SM70_8x8_32B,
            ("f32", "f16", "f16", "f32"), ((8, "f32"), (2, "u32"), (2, "u32"), (8, "f32")), 70,
            f"mma.sync.aligned.m8n8k4.{majors}.f32.f16.f16.f32", notes=_NOTE))
    return tuple(out)


ENTRIES = _entries()
