"""Which matrix element each thread's fragment element holds, from the PTX ISA.

These are the per-lane formulas of the PTX ISA sections "Matrix Fragments for
mma.m8n8k4 / m16n8k8 / m16n8k16 / ..." and the wgmma register-fragment figures,
written here directly from the ISA and *not* derived from the CuTe tables, so
that the two can be checked against each other.

Conventions (the ISA's): ``groupID = lane >> 2``, ``threadID_in_group = lane % 4``;
element ``i`` is ``a_i`` / ``b_i`` / ``c_i`` (low to high in the registers).
Coordinates are ``(row, col)`` of the PTX matrices: A is MxK ``(m, k)``, B is KxN
``(k, n)``, C and D are MxN ``(m, n)``.

>>> import numpy as np
>>> c = mma_coords("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "a", np.arange(32))
>>> c.shape, tuple(int(x) for x in c[5, 6])     # lane 5 (group 1, tig 1), a6 -> (1+8, 2+8)
((32, 8, 2), (9, 10))
"""

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["PtxMma", "parse_mma_ptx", "mma_coords", "element_count", "ldmatrix_source",
           "FAMILIES"]


@dataclass(frozen=True)
class PtxMma:
    """The parts of an ``mma.sync`` / ``wgmma.mma_async`` instruction string."""

    warpgroup: bool
    m: int
    n: int
    k: int
    alayout: str     # "row" / "col" (mma.sync) or "" (wgmma)
    blayout: str
    dtype: str
    atype: str
    btype: str
    ctype: str
    satfinite: bool
    bitop: str       # "xor" / "and" / ""

    @property
    def family(self):
        """Which fragment table applies, e.g. ``"m16n8k16.f16"``."""
        t = self.atype
        cls = ("f16" if t in ("f16", "bf16") else "tf32" if t == "tf32" else "f64" if t == "f64"
               else "i8" if t in ("s8", "u8", "e4m3", "e5m2") else "b1" if t == "b1" else t)
        if self.warpgroup:
            return f"wgmma.m64nNk{self.k}.{cls}"
        return f"m{self.m}n{self.n}k{self.k}.{cls}"


_MMA_RE = re.compile(
    r"^mma\.sync\.aligned\.m(\d+)n(\d+)k(\d+)\.(row|col)\.(row|col)"
    r"(\.satfinite)?\.(\w+)\.(\w+)\.(\w+)\.(\w+)(\.satfinite)?(?:\.(xor|and)\.popc)?$")
_WGMMA_RE = re.compile(r"^wgmma\.mma_async\.sync\.aligned\.m(\d+)n(\d+)k(\d+)\.(\w+)\.(\w+)\.(\w+)$")


def parse_mma_ptx(ptx):
    """Split an MMA instruction string into its shape, layouts and types.

    Raises ``ValueError`` for a string of another form.
    """
    m = _MMA_RE.match(ptx)
    if m:
        M, N, K = (int(x) for x in m.group(1, 2, 3))
        return PtxMma(False, M, N, K, m.group(4), m.group(5), m.group(7), m.group(8), m.group(9),
                      m.group(10), bool(m.group(6) or m.group(11)), m.group(12) or "")
    m = _WGMMA_RE.match(ptx)
    if m:
        M, N, K = (int(x) for x in m.group(1, 2, 3))
        d = m.group(4)
        return PtxMma(True, M, N, K, "", "", d, m.group(5), m.group(6), d, False, "")
    raise ValueError(f"parse_mma_ptx: not an mma.sync / wgmma.mma_async instruction: {ptx!r}")


# ---- the fragment tables ---------------------------------------------------------
# Each function takes lane (int array, shape (T, 1)) and i (shape (1, E)) and returns
# (row, col) arrays of shape (T, E).

def _gt(lane):
    return lane >> 2, lane % 4


def _c_m16n8(lane, i):
    # c0,c1: row groupID; c2,c3: row groupID + 8; col = 2*tig + (i & 1)
    g, t = _gt(lane)
    return g + 8 * (i >= 2), 2 * t + (i & 1)


def _c_m8n8(lane, i):
    g, t = _gt(lane)
    return g + 0 * i, 2 * t + i


# m8n8k4 with .f16: four products per warp; a thread's "high" half is lanes 16..31.
def _m884_f16(p, operand):
    def a_row(lane, i):      # row-major A
        return lane % 4 + 4 * (lane >= 16) + 0 * i, i + 0 * lane

    def a_col(lane, i):      # column-major A
        return i % 4 + 4 * (lane >= 16), lane % 4 + 0 * i

    def b_row(lane, i):      # row-major B (K x N)
        return lane % 4 + 0 * i, i + 4 * (lane >= 16)

    def b_col(lane, i):      # column-major B
        return i + 0 * lane, lane % 4 + 4 * (lane >= 16) + 0 * i

    def c_f16(lane, i):
        return lane % 4 + 4 * (lane >= 16) + 0 * i, i + 0 * lane

    def c_f32(lane, i):
        x = (lane & 1) + (i & 2)
        return x + 4 * (lane >= 16), (i & 4) + (lane & 2) + (i & 1)

    if operand == "a":
        return (a_row if p.alayout == "row" else a_col), 4
    if operand == "b":
        return (b_row if p.blayout == "row" else b_col), 4
    return (c_f16 if p.ctype == "f16" else c_f32), 8


def _m884_f64(p, operand):
    def a(lane, i):
        return (lane >> 2) + 0 * i, lane % 4 + 0 * i

    def b(lane, i):
        return lane % 4 + 0 * i, (lane >> 2) + 0 * i

    return {"a": (a, 1), "b": (b, 1)}.get(operand, (_c_m8n8, 2))


def _m1684_tf32(p, operand):
    def a(lane, i):          # a0: row g, a1: row g+8; col = tig
        g, t = _gt(lane)
        return g + 8 * i, t + 0 * i

    def b(lane, i):
        g, t = _gt(lane)
        return t + 0 * i, g + 0 * i

    return {"a": (a, 2), "b": (b, 1)}.get(operand, (_c_m16n8, 4))


def _m1688_f16(p, operand):
    def a(lane, i):          # a0,a1: row g; a2,a3: row g+8; col = 2*tig + (i & 1)
        g, t = _gt(lane)
        return g + 8 * (i >= 2), 2 * t + (i & 1)

    def b(lane, i):          # row = 2*tig + i, col = g
        g, t = _gt(lane)
        return 2 * t + i, g + 0 * i

    return {"a": (a, 4), "b": (b, 2)}.get(operand, (_c_m16n8, 4))


def _m1688_tf32(p, operand):
    def a(lane, i):          # a0,a2: row g; a1,a3: row g+8; a0,a1: col tig; a2,a3: col tig+4
        g, t = _gt(lane)
        return g + 8 * (i & 1), t + 4 * (i >= 2)

    def b(lane, i):          # b0: row tig, b1: row tig+4; col g
        g, t = _gt(lane)
        return t + 4 * i, g + 0 * i

    return {"a": (a, 4), "b": (b, 2)}.get(operand, (_c_m16n8, 4))


def _m16816_f16(p, operand):
    def a(lane, i):          # rows: g for a0,a1,a4,a5, g+8 otherwise; cols + 8 for i >= 4
        g, t = _gt(lane)
        return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >= 4)

    def b(lane, i):          # row = 2*tig + (i & 1) (+8 for i >= 2), col = g
        g, t = _gt(lane)
        return 2 * t + (i & 1) + 8 * (i >= 2), g + 0 * i

    return {"a": (a, 8), "b": (b, 4)}.get(operand, (_c_m16n8, 4))


def _m8816_i8(p, operand):
    def a(lane, i):
        g, t = _gt(lane)
        return g + 0 * i, 4 * t + i

    def b(lane, i):
        g, t = _gt(lane)
        return 4 * t + i, g + 0 * i

    return {"a": (a, 4), "b": (b, 4)}.get(operand, (_c_m8n8, 2))


def _m16816_i8(p, operand):
    def a(lane, i):          # a0..a3: row g, a4..a7: row g+8; col = 4*tig + (i & 3)
        g, t = _gt(lane)
        return g + 8 * (i >= 4), 4 * t + (i & 3)

    def b(lane, i):
        g, t = _gt(lane)
        return 4 * t + i, g + 0 * i

    return {"a": (a, 8), "b": (b, 4)}.get(operand, (_c_m16n8, 4))


def _m16832_i8(p, operand):
    def a(lane, i):          # rows g for i in [0,4) u [8,12), g+8 otherwise; cols +16 for i >= 8
        g, t = _gt(lane)
        return g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >= 8)

    def b(lane, i):          # row = 4*tig + (i & 3) (+16 for i >= 4), col = g
        g, t = _gt(lane)
        return 4 * t + (i & 3) + 16 * (i >= 4), g + 0 * i

    return {"a": (a, 16), "b": (b, 8)}.get(operand, (_c_m16n8, 4))


def _m88128_b1(p, operand):
    def a(lane, i):
        g, t = _gt(lane)
        return g + 0 * i, 32 * t + i

    def b(lane, i):
        g, t = _gt(lane)
        return 32 * t + i, g + 0 * i

    return {"a": (a, 32), "b": (b, 32)}.get(operand, (_c_m8n8, 2))


def _m168128_b1(p, operand):
    def a(lane, i):          # a0..a31: row g, a32..a63: row g+8; col = 32*tig + (i & 31)
        g, t = _gt(lane)
        return g + 8 * (i >= 32), 32 * t + (i & 31)

    def b(lane, i):
        g, t = _gt(lane)
        return 32 * t + i, g + 0 * i

    return {"a": (a, 64), "b": (b, 32)}.get(operand, (_c_m16n8, 4))


def _m168256_b1(p, operand):
    # The ISA writes the A column as "(threadID_in_group * 32) + i for i < 64", which
    # would run past K for i >= 32; the figure (and the row rule, g+8 for 32 <= i < 64)
    # give (i & 0x1F), as for i >= 64.
    def a(lane, i):          # rows g for i in [0,32) u [64,96), g+8 otherwise; cols +128 for i >= 64
        g, t = _gt(lane)
        return g + 8 * ((i >> 5) & 1), 32 * t + (i & 31) + 128 * (i >= 64)

    def b(lane, i):          # row = 32*tig + (i & 31) (+128 for i >= 32), col = g
        g, t = _gt(lane)
        return 32 * t + (i & 31) + 128 * (i >= 32), g + 0 * i

    return {"a": (a, 128), "b": (b, 64)}.get(operand, (_c_m16n8, 4))


def _wgmma(p, operand):
    # Warpgroup thread tid: warp w = tid // 32 owns rows 16w .. 16w+15; within the warp
    # the register A and the accumulator follow the mma.sync m16n8 patterns of the same
    # input width, the accumulator repeating every 8 columns (ISA figures "WGMMA .m64nNk16 /
    # .m64nNk8 / .m64nNk32 register fragment layout").
    def a16(tid, i):         # .f16/.bf16, K 16: a0,a1 row g; a2,a3 row g+8; cols 2t + (i & 1), +8 for i >= 4
        w, lane = tid // 32, tid % 32
        g, t = _gt(lane)
        return 16 * w + g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >= 4)

    def a8(tid, i):          # .tf32, K 8: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
        w, lane = tid // 32, tid % 32
        g, t = _gt(lane)
        return 16 * w + g + 8 * (i & 1), t + 4 * (i >> 1)

    def a32(tid, i):         # .e4m3/.e5m2, K 32: rows g for i in [0,4) u [8,12), g+8 otherwise;
        w, lane = tid // 32, tid % 32      # cols 4t + (i & 3), +16 for i >= 8
        g, t = _gt(lane)
        return 16 * w + g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >= 8)

    def d(tid, i):
        w, lane = tid // 32, tid % 32
        g, t = _gt(lane)
        return 16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)

    if operand == "a":
        return {16: (a16, 8), 8: (a8, 4), 32: (a32, 16)}[p.k]
    if operand == "b":
        raise ValueError("mma_coords: wgmma's B is always a shared-memory descriptor, "
                         "it has no register fragment")
    return d, p.n // 2


FAMILIES = {
    "m8n8k4.f16": _m884_f16, "m8n8k4.f64": _m884_f64, "m16n8k4.tf32": _m1684_tf32,
    "m16n8k8.f16": _m1688_f16, "m16n8k8.tf32": _m1688_tf32, "m16n8k16.f16": _m16816_f16,
    "m8n8k16.i8": _m8816_i8, "m16n8k16.i8": _m16816_i8, "m16n8k32.i8": _m16832_i8,
    "m8n8k128.b1": _m88128_b1, "m16n8k128.b1": _m168128_b1, "m16n8k256.b1": _m168256_b1,
    "wgmma.m64nNk16.f16": _wgmma, "wgmma.m64nNk8.tf32": _wgmma, "wgmma.m64nNk32.i8": _wgmma,
}


def _formula(ptx, operand):
    if operand not in ("a", "b", "c", "d"):
        raise ValueError(f"mma_coords: operand must be 'a', 'b', 'c' or 'd', got {operand!r}")
    p = parse_mma_ptx(ptx) if isinstance(ptx, str) else ptx
    fam = FAMILIES.get(p.family)
    if fam is None:
        raise ValueError(f"mma_coords: no PTX fragment table for {p.family} ({ptx!r})")
    return p, fam(p, operand)


def element_count(ptx, operand):
    """Elements of ``operand`` each thread holds for this instruction."""
    _, (_, count) = _formula(ptx, operand)
    return count


def mma_coords(ptx, operand, lanes):
    """``(row, col)`` of every (thread, element) of ``operand``, shape ``(T, E, 2)``.

    ``lanes`` are the physical thread indices: ``%laneid`` for ``mma.sync`` (for the
    SM70 quad-pair instruction, lanes of one quad pair), or the thread index within
    the warpgroup (0..127) for ``wgmma``.
    """
    _, (fn, count) = _formula(ptx, operand)
    lane = np.asarray(lanes, dtype=np.int64).reshape(-1, 1)
    i = np.arange(count, dtype=np.int64).reshape(1, -1)
    row, col = fn(lane, i)
    row = np.broadcast_to(row, (lane.shape[0], count))
    col = np.broadcast_to(col, (lane.shape[0], count))
    return np.stack([row, col], axis=-1)


def ldmatrix_source(lane, num):
    """``(matrix, row)`` whose address lane ``lane`` gives to ``ldmatrix``/``stmatrix``
    with ``.num = num`` matrices, or ``None`` when that lane's address is unused."""
    if lane < 8 * num:
        return lane // 8, lane % 8
    return None
