"""Shared-memory layouts of Hopper's warpgroup MMA, and the descriptors that describe them.

``wgmma.mma_async`` reads its operands from shared memory through 64-bit descriptors. The
layouts it can read are CuTe's GMMA layout atoms (``GMMA::Layout_{K,MN}_{INTER,SW32,SW64,
SW128}_Atom<T>``), here in layoutalg's terms and in elements of the operand type:

* K-major ``SWx``: ``Swizzle(B, M, 3) o (8, W):(W, 1)`` with ``W = x / bytes(T)`` elements
  per row (one row of x bytes), ``B = log2(x / 16)`` and ``M = log2(16 / bytes(T))``;
* MN-major ``SWx``: ``Swizzle(B, M, 3) o (W, 8):(1, W)``.

A stage of the pipeline is such an atom tiled to ``(MN, K)`` with ``tile_to_shape``.
:func:`gmma_desc` reads the descriptor's fields off the layout of the ``(MN, K)`` block one
instruction consumes, as CuTe's ``make_gmma_desc`` does: recast to 16-byte units, divided
into its canonical modes, the strides of the 8-row (or 8-column) groups are the stride and
leading byte offsets.

>>> from layoutalg import Swizzle
>>> atom = gmma_smem_atom("f16", "K", 128)
>>> str(atom)
'Sw<3,3,3> o 0 o (8,64):(64,1)'
>>> d = gmma_desc(tile_to_shape(atom, (64, 64)), (64, 16), "K", "f16")
>>> d.layout_type, d.lbo, d.sbo          # B128, LBO unused (1), SBO = 1024 bytes / 16
(1, 1, 64)
"""

from __future__ import annotations

from dataclasses import dataclass

from layoutalg import (
    ComposedLayout, Layout, LayoutError, Swizzle, composition, logical_divide, make_layout, size,
    tile_to_shape, upcast,
)
from layoutalg.element_types import element_type
from layoutalg.inttuple import flat_tuple

__all__ = ["gmma_smem_atom", "gmma_desc", "GmmaDesc", "LAYOUT_TYPES", "tile_to_shape"]

#: The descriptor's layout-type field (bits 62-63) by swizzle width in bytes (0: interleave).
LAYOUT_TYPES = {0: 0, 128: 1, 64: 2, 32: 3}


def gmma_smem_atom(dtype, major, swizzle_bytes=128):
    """The GMMA shared-memory layout atom for element type ``dtype``, ``major`` "K" or "MN",
    swizzled over ``swizzle_bytes`` (32, 64 or 128; 0 for the interleaved atom).

    # (8,W):(W,1) or (W,8):(1,W) -> element offset, W elements = one swizzle row
    """
    ebytes = element_type(dtype, "gmma_smem_atom").bits // 8
    if ebytes not in (1, 2, 4):
        raise LayoutError(f"gmma_smem_atom: {dtype} is not a wgmma operand type (8, 16 or 32 bits)")
    if swizzle_bytes not in LAYOUT_TYPES:
        raise LayoutError(f"gmma_smem_atom: swizzle_bytes must be 0, 32, 64 or 128, got {swizzle_bytes}")
    if major not in ("K", "MN"):
        raise LayoutError(f"gmma_smem_atom: major must be 'K' or 'MN', got {major!r}")
    row = swizzle_bytes or 16
    w = row // ebytes                                       # elements per swizzle row
    bits = (row // 16).bit_length() - 1                     # log2(row / 16)
    base = (16 // ebytes).bit_length() - 1                  # log2(elements per 16 bytes)
    lay = Layout((8, w), (w, 1)) if major == "K" else Layout((w, 8), (1, w))   # (8,W) or (W,8) -> offset
    return composition(Swizzle(bits, base, 3), lay)


@dataclass(frozen=True)
class GmmaDesc:
    """The layout fields of a wgmma shared-memory descriptor (offsets in 16-byte units)."""

    layout_type: int      # 0 interleave, 1 128B, 2 64B, 3 32B swizzle
    lbo: int              # leading byte offset >> 4
    sbo: int              # stride byte offset >> 4

    def bits(self, start_address=0):
        """The 64-bit descriptor for a block starting at shared byte address ``start_address``."""
        if start_address % 16:
            raise LayoutError(f"GmmaDesc: start address {start_address} is not 16-byte aligned")
        return (((start_address & 0x3FFFF) >> 4) | (self.lbo & 0x3FFF) << 16 | (self.sbo & 0x3FFF) << 32
                | self.layout_type << 62)


def _swizzle_bytes(sw, ebytes):
    if sw is None or sw.bits == 0:
        return 0
    return 16 << sw.bits


def gmma_desc(stage, block, major, dtype):
    """The descriptor fields of the ``block`` = ``(MN, K)`` corner of ``stage`` (an atom of
    :func:`gmma_smem_atom` tiled with ``tile_to_shape``) read by one wgmma.

    Pre: ``block[1] * bytes(dtype) == 32`` (one instruction's K); ``stage`` is a canonical
    GMMA layout. Raises :class:`LayoutError` naming the layout otherwise.
    """
    ebytes = element_type(dtype, "gmma_desc").bits // 8
    mn, k = block
    if k * ebytes != 32:
        raise LayoutError(f"gmma_desc: an instruction reads 32 bytes of K, got K = {k} of {dtype}")
    sw = stage.outer if isinstance(stage, ComposedLayout) else None
    inner = stage.inner if isinstance(stage, ComposedLayout) else stage
    swb = _swizzle_bytes(sw, ebytes)
    w = (swb or 16) // 16                                  # 16-byte units per swizzle row
    sub = make_layout(composition(inner[0], Layout(mn)), composition(inner[1], Layout(k)))   # (MN,K) block
    per = 16 // ebytes
    u = upcast(sub, per)                                   # in 16-byte units
    if major == "K":
        canon = logical_divide(u, (Layout(8), Layout(2)))  # ((8,m),(2,1))
        s00, s01 = _stride(canon, 0, 0), _stride(canon, 0, 1)
        s10 = _stride(canon, 1, 0)
        if s00 != w or (swb and s10 != 1):
            raise LayoutError(f"gmma_desc: {stage} is not a canonical K-major GMMA layout ({u})")
        return GmmaDesc(LAYOUT_TYPES[swb], s10, s01)
    canon = logical_divide(u, (Layout(w), Layout(8)))      # ((W,n),(8,k))
    s00, s01 = _stride(canon, 0, 0), _stride(canon, 0, 1)
    s10, s11 = _stride(canon, 1, 0), _stride(canon, 1, 1)
    if (swb and s00 != 1) or s10 != w:
        raise LayoutError(f"gmma_desc: {stage} is not a canonical MN-major GMMA layout ({u})")
    if swb:
        return GmmaDesc(LAYOUT_TYPES[swb], s01, s11)
    return GmmaDesc(0, s11, s01)


def _stride(lay, i, j):
    """The stride of mode (i, j) (0 for a missing or size-1 mode)."""
    m = lay[i]
    if not isinstance(m.shape, tuple):
        return m.stride if j == 0 else 0
    if j >= len(m.shape):
        return 0
    sub = m[j]
    st = flat_tuple(sub.stride)
    return st[0] if size(sub) > 1 else 0
