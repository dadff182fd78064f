"""Warpgroup MMA (``wgmma.mma_async``, sm_90a) with both operands in shared memory.

A :class:`WgmmaMMA` is one warpgroup's tiled MMA over a k-tile: ``kblocks`` instructions
m64nNk(32 bytes of K), each reading A and B through 64-bit shared-memory descriptors. The
descriptors' layout fields come from the operands' GMMA shared layouts
(:func:`mma_atoms.gmma_smem.gmma_desc`); only the start address varies, by the layout's
offset of the next k-block. The accumulators are a tuple of ``acc_regs`` float32 per thread
in CuTe's ``CLayout_64xN`` ``(T128,V(N/2)) -> (m,n)``.

The instructions of a k-tile are one wgmma group: :meth:`WgmmaMMA.mma` fences the
accumulators, issues the group and commits it; :meth:`WgmmaMMA.wait` waits until at most
``n`` groups are in flight. Between them the accumulators belong to the tensor cores.

>>> from mma_atoms.gmma_smem import GmmaDesc
>>> desc_hi(GmmaDesc(1, 1, 64)) == (1 << 16) | (64 << 32) | (1 << 62)
True
"""

from __future__ import annotations

from dataclasses import dataclass

from .objects import device, device_object, late_import

(acc_fence, acc_from_array, acc_to_array, f32x_zero, wgmma_commit, wgmma_fence, wgmma_wait) = late_import(
    "codegen.intrinsics", "acc_fence", "acc_from_array", "acc_to_array", "f32x_zero", "wgmma_commit", "wgmma_fence",
    "wgmma_wait")

__all__ = ["WgmmaMMA", "desc_hi", "gmma_stage", "make_wgmma"]


def gmma_stage(dtype, major, rows, bk):
    """One pipeline stage of a wgmma operand, ``(rows, BK) -> element offset``: CuTe's GMMA
    layout atom tiled to it. K-major, the atom whose swizzle row is the k-tile (BK elements:
    128, 64 or 32 bytes); MN-major, the 128-byte atom with K outermost (each 128-byte block of
    rows is then contiguous: one TMA box).

    >>> str(gmma_stage("f16", "K", 128, 64))
    'Sw<3,3,3> o 0 o (128,64):(64,1)'
    """
    from layoutalg import tile_to_shape
    from layoutalg.element_types import element_type
    from mma_atoms.gmma_smem import gmma_smem_atom

    ebytes = element_type(dtype, "gmma_stage").bits // 8
    sw = bk * ebytes if major == "K" else 128
    if sw not in (32, 64, 128):
        raise ValueError(f"gmma_stage: a K-major k-tile of {bk} {dtype} is {sw} bytes; it must be 32, 64 or 128")
    atom = gmma_smem_atom(dtype, major, sw)
    if major == "K":
        return tile_to_shape(atom, (rows, bk))                  # (rows,BK) -> offset
    return tile_to_shape(atom, (rows, bk), (1, 0))              # K first: each 128-byte column block is one box


def make_wgmma(a_type, b_type, bn, sa, sb, a_major, b_major):
    """One warpgroup's wgmma over a k-tile: m64n``bn``k(32 bytes) instructions reading A's
    64 rows from stage ``sa`` ``(rows_A, BK) -> offset`` and B from ``sb`` ``(BN, BK) ->
    offset`` (:func:`gmma_stage`). The descriptors' fields are read off the layouts
    (:func:`mma_atoms.gmma_smem.gmma_desc`), the start address's step per instruction is the
    layouts' offset of the next 32 bytes of K.

    >>> m = make_wgmma("f16", "f16", 256, gmma_stage("f16", "K", 128, 64), gmma_stage("f16", "K", 256, 64), "K", "K")
    >>> m.instr, m.kblocks, m.a_kblock
    ('wgmma_m64n256k16_f32_f16', 4, 32)
    """
    from layoutalg import ComposedLayout, size
    from layoutalg.element_types import element_type
    from mma_atoms.gmma_smem import gmma_desc

    from ..atom_intrinsics import wgmma_input_name, wgmma_name

    ea, eb = element_type(a_type, "make_wgmma"), element_type(b_type, "make_wgmma")
    if ea.bits != 16 and "MN" in (a_major, b_major):
        raise ValueError(f"make_wgmma: wgmma reads {a_type} operands K-major only; got A {a_major}-major, "
                         f"B {b_major}-major")
    instr_k = 32 // (ea.bits // 8)                             # one instruction reads 32 bytes of K
    inner_a = sa.inner if isinstance(sa, ComposedLayout) else sa
    inner_b = sb.inner if isinstance(sb, ComposedLayout) else sb
    bk = size(inner_a[1])
    da = gmma_desc(sa, (64, instr_k), a_major, a_type)
    db = gmma_desc(sb, (bn, instr_k), b_major, b_type)
    step = lambda inner, et: inner(0, instr_k) * (et.bits // 8) if bk > instr_k else 0   # noqa: E731
    return WgmmaMMA(wgmma_name(bn, wgmma_input_name(a_type, b_type), instr_k), bn // 2, bk // instr_k,
                    desc_hi(da), desc_hi(db),
                    step(inner_a, ea), step(inner_b, eb), int(a_major == "MN"), int(b_major == "MN"))


def desc_hi(desc):
    """A descriptor's fields other than the start address (:class:`GmmaDesc`, whose ``bits``
    encodes them), as a signed 64-bit integer (the kernel adds the start address)."""
    v = desc.bits(0)
    return v - (1 << 64) if v >= 1 << 63 else v


@device_object
@dataclass(frozen=True)
class WgmmaMMA:
    """``instr``: the wgmma intrinsic's name (:mod:`codegen.intrinsics`); ``acc_regs``:
    accumulators a thread; ``kblocks``: instructions a k-tile; ``desc_a``/``desc_b``: the
    descriptors' constant fields (:func:`desc_hi`); ``a_kblock``/``b_kblock``: the start
    address's step (bytes) from one instruction to the next; ``tnsp_a``/``tnsp_b``: 1 for
    an MN-major operand."""

    instr: str
    acc_regs: int
    kblocks: int
    desc_a: int
    desc_b: int
    a_kblock: int
    b_kblock: int
    tnsp_a: int = 0
    tnsp_b: int = 0

    @property
    def op(self):
        """The intrinsic itself."""
        from .. import intrinsics

        return getattr(intrinsics, self.instr)

    @device
    def zero(self):
        """Accumulators of zeros (a value for the compiler; each tile's first instruction
        ignores them, see :meth:`mma`)."""
        return f32x_zero(self.acc_regs)

    @device
    def mma(self, acc, a, b, first):
        """``acc += A @ B`` over one k-tile: A's rows at shared address ``a``, B's at ``b``;
        where ``first`` the k-tile's first instruction ignores ``acc`` (scale-d 0: D = A*B),
        so a tile never zeroes its accumulators. Returns the accumulators, in flight."""
        acc = acc_fence(acc)
        wgmma_fence()
        for kb in range(self.kblocks):
            da = self.desc_a + (((a + kb * self.a_kblock) & 0x3FFFF) >> 4)   # start: 16-byte units, 14 bits
            db = self.desc_b + (((b + kb * self.b_kblock) & 0x3FFFF) >> 4)
            scale = 0 if first and kb == 0 else 1
            acc = self.op(acc, da, db, scale, self.tnsp_a, self.tnsp_b)
        wgmma_commit()
        return acc

    @device
    def wait(self, acc, n):
        """Wait until at most ``n`` (a constant) wgmma groups are in flight; the
        accumulators are the registers' again."""
        wgmma_wait(n)
        return acc_fence(acc)

    @device
    def to_array(self, acc, accs):
        """The accumulators into the local float32 array ``accs`` (constant indices)."""
        acc_to_array(acc, accs)

    @device
    def from_array(self, accs):
        """The accumulators back from ``accs`` (after a split-K fix-up added to them)."""
        return acc_from_array(accs, self.acc_regs)
