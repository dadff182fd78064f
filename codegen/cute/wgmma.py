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

from .objects import device, device_function, device_object, late_import

(acc_fence, acc_from_array, acc_to_array, f32x_zero, wgmma_commit, wgmma_fence, wgmma_wait) = late_import(
    "codegen.intrinsics", "acc_fence", "acc_from_array", "acc_to_array", "f32x_zero", "wgmma_commit", "wgmma_fence",
    "wgmma_wait")

__all__ = ["WgmmaMMA", "WgmmaRS", "desc_hi", "gmma_stage", "kblock_offsets", "make_wgmma", "make_wgmma_rs"]

#: Instructions a loop of a k-tile's group issues: :meth:`WgmmaMMA.mma` is up to four such
#: loops, of at most 16 instructions in all, each after the first only where ``kblocks`` needs
#: it (a constant condition: the kernel is not built with the others, which cost compile
#: time). NVVM unrolls one loop over all of them only while the loop is small (8 m64n128
#: instructions, not 8 m64n176: their 88 accumulators each way make the body long); a loop
#: left rolled indexes the offsets at run time and ptxas serializes the wgmma (C7517: the
#: accumulators are not the same registers in every iteration).
ISSUE = 4


def gmma_stage(dtype, major, rows, bk):
    """One pipeline stage of a wgmma operand, ``(rows, BK) -> element offset``: CuTe's GMMA
    layout atom tiled to it. K-major, the atom whose swizzle row is the k-tile (BK elements:
    128, 64 or 32 bytes), or for a longer k-tile the 128-byte atom, each 128 bytes of K a
    block of all the rows after the one before (one TMA box each); MN-major, the 128-byte atom with K outermost (each 128-byte block of
    rows is then contiguous: one TMA box).

    >>> str(gmma_stage("f16", "K", 128, 64))
    'Sw<3,3,3> o 0 o (128,64):(64,1)'
    >>> str(gmma_stage("f16", "K", 128, 128))                  # head dim 128: two 64-wide K blocks
    'Sw<3,3,3> o 0 o (128,(64,2)):(64,(1,8192))'
    """
    from layoutalg import tile_to_shape
    from layoutalg.element_types import element_type
    from mma_atoms.gmma_smem import gmma_smem_atom

    ebytes = element_type(dtype, "gmma_stage").bits // 8
    sw = bk * ebytes if major == "K" else 128
    if major == "K" and sw > 128 and sw % 128 == 0:
        sw = 128                                                # several swizzle rows: K blocks one after another
    if sw not in (32, 64, 128):
        raise ValueError(f"gmma_stage: a K-major k-tile of {bk} {dtype} is {sw} bytes; it must be 32, 64, 128 or a "
                         f"multiple of 128")
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
    >>> m.instr, m.kblocks, m.a_offs
    ('wgmma_m64n256k16_f32_f16', 4, (0, 32, 64, 96))
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
    _check_kblocks("make_wgmma", bk // instr_k)
    da = gmma_desc(sa, (64, instr_k), a_major, a_type)
    db = gmma_desc(sb, (bn, instr_k), b_major, b_type)
    return WgmmaMMA(wgmma_name(bn, wgmma_input_name(a_type, b_type), instr_k), bn // 2, bk // instr_k,
                    desc_hi(da), desc_hi(db), kblock_offsets(inner_a, ea, instr_k, bk),
                    kblock_offsets(inner_b, eb, instr_k, bk), int(a_major == "MN"), int(b_major == "MN"))


@device_function
def wgmma_group(mma, acc, a, b, first):
    """One k-tile's wgmma group of ``mma`` (a :class:`WgmmaMMA` or :class:`WgmmaRS`): the
    accumulators fenced, its ``kblocks`` instructions issued by ``mma.issue`` in loops of at
    most :data:`ISSUE` (each after the first only where ``kblocks`` needs it), the group
    committed. Returns the accumulators, in flight."""
    acc = acc_fence(acc)
    wgmma_fence()
    acc = mma.issue(acc, a, b, first, 0)
    if mma.kblocks > ISSUE:
        acc = mma.issue(acc, a, b, first, ISSUE)
    if mma.kblocks > 2 * ISSUE:
        acc = mma.issue(acc, a, b, first, 2 * ISSUE)
    if mma.kblocks > 3 * ISSUE:
        acc = mma.issue(acc, a, b, first, 3 * ISSUE)
    wgmma_commit()
    return acc


def _check_kblocks(op, kblocks):
    if kblocks > 4 * ISSUE:
        raise ValueError(f"{op}: a k-tile of {kblocks} instructions; one wgmma group issues at most {4 * ISSUE}")


def kblock_offsets(inner, etype, instr_k, bk):
    """Byte offsets in a stage ``inner`` ``(rows, BK) -> element`` (unswizzled) of the K
    blocks of ``instr_k`` elements that one wgmma each reads: the layout at ``(0, k)``.

    >>> from layoutalg.element_types import element_type
    >>> kblock_offsets(gmma_stage("f16", "K", 64, 128).inner, element_type("f16"), 16, 128)
    (0, 32, 64, 96, 8192, 8224, 8256, 8288)
    """
    return tuple(inner(0, k) * (etype.bits // 8) for k in range(0, bk, instr_k))


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
    descriptors' constant fields (:func:`desc_hi`); ``a_offs``/``b_offs``: each
    instruction's start address (bytes) from the operand's (:func:`kblock_offsets`);
    ``tnsp_a``/``tnsp_b``: 1 for an MN-major operand."""

    instr: str
    acc_regs: int
    kblocks: int
    desc_a: int
    desc_b: int
    a_offs: tuple
    b_offs: tuple
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

    @device(once=True)
    def mma(self, acc, a, b, first):
        """``acc += A @ B`` over one k-tile: A's rows at shared address ``a``, B's at ``b``;
        where ``first`` the k-tile's first instruction ignores ``acc`` (scale-d 0: D = A*B),
        so a tile never zeroes its accumulators. Returns the accumulators, in flight."""
        return wgmma_group(self, acc, a, b, first)

    @device
    def issue(self, acc, a, b, first, k0):
        """Instructions ``k0`` to ``k0 + ISSUE - 1`` of :meth:`mma` (those below ``kblocks``)."""
        for kb in range(k0, min(k0 + ISSUE, self.kblocks)):
            da = self.desc_a + (((a + self.a_offs[kb]) & 0x3FFFF) >> 4)   # start: 16-byte units, 14 bits
            db = self.desc_b + (((b + self.b_offs[kb]) & 0x3FFFF) >> 4)
            scale = 0 if first and kb == 0 else 1
            acc = self.op(acc, da, db, scale, self.tnsp_a, self.tnsp_b)
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


def make_wgmma_rs(a_type, bn, sb, b_major, bk):
    """One warpgroup's wgmma over ``bk`` of K with A from registers (the RS form; 16-bit A
    only): m64n``bn``k16 instructions, A the ``4 * bk // 16`` 32-bit registers a thread of
    CuTe's ``ALayout_64x16`` ``(T128,V8) -> (m,k)`` per instruction (two 16-bit values
    each), B from stage ``sb`` ``(BN, BK) -> offset`` (:func:`gmma_stage`) through
    descriptors, as :func:`make_wgmma`.

    >>> m = make_wgmma_rs("f16", 128, gmma_stage("f16", "MN", 128, 128), "MN", 128)
    >>> m.instr, m.kblocks, m.b_offs[:3], m.tnsp_b
    ('wgmma_rs_m64n128k16_f32_f16', 8, (0, 1024, 2048), 1)
    """
    from layoutalg import ComposedLayout
    from layoutalg.element_types import element_type
    from mma_atoms.gmma_smem import gmma_desc

    from ..atom_intrinsics import wgmma_rs_name

    et = element_type(a_type, "make_wgmma_rs")
    if et.bits != 16:
        raise ValueError(f"make_wgmma_rs: A from registers is 16-bit here (f16, bf16), got {a_type}")
    inner_b = sb.inner if isinstance(sb, ComposedLayout) else sb
    _check_kblocks("make_wgmma_rs", bk // 16)
    db = gmma_desc(sb, (bn, 16), b_major, a_type)
    return WgmmaRS(wgmma_rs_name(bn, a_type), bn // 2, bk // 16, desc_hi(db),
                   kblock_offsets(inner_b, et, 16, bk), int(b_major == "MN"))


@device_object
@dataclass(frozen=True)
class WgmmaRS:
    """``instr``: the RS wgmma intrinsic's name; ``acc_regs``: accumulators a thread
    (``CLayout_64xN``); ``kblocks``: instructions; ``desc_b``, ``b_offs``, ``tnsp_b``: B's
    descriptor fields, each instruction's start (bytes), 1 for an MN-major B."""

    instr: str
    acc_regs: int
    kblocks: int
    desc_b: int
    b_offs: tuple
    tnsp_b: int = 0

    @property
    def op(self):
        from .. import intrinsics

        return getattr(intrinsics, self.instr)

    @device
    def zero(self):
        return f32x_zero(self.acc_regs)

    @device(once=True)
    def mma(self, acc, a, b, first):
        """``acc += A @ B``: A the uint32 array ``a`` (instruction ``kb``'s four registers at
        ``4 kb``), B's rows at shared address ``b``; ``first``: the first instruction ignores
        ``acc``. One wgmma group, committed; the accumulators are in flight."""
        return wgmma_group(self, acc, a, b, first)

    @device
    def issue(self, acc, a, b, first, k0):
        """Instructions ``k0`` to ``k0 + ISSUE - 1`` of :meth:`mma` (those below ``kblocks``)."""
        for kb in range(k0, min(k0 + ISSUE, self.kblocks)):
            db = self.desc_b + (((b + self.b_offs[kb]) & 0x3FFFF) >> 4)
            scale = 0 if first and kb == 0 else 1
            acc = self.op(acc, a[4 * kb], a[4 * kb + 1], a[4 * kb + 2], a[4 * kb + 3], db, scale, self.tnsp_b)
        return acc

    @device
    def wait(self, acc, n):
        wgmma_wait(n)
        return acc_fence(acc)
