"""TMA copy atoms: a tile of a global matrix (or of one of a batch of them) to or from a
shared-memory layout.

The tensor memory accelerator copies boxes described by a *tensor map*, which the host
encodes from the global tensor (address, extents, row stride) and the box (its extents and
the swizzle of the shared layout it fills). A :class:`TmaLoad` holds what the kernel needs
at compile time, read off the shared layout by the plan: the boxes that fill one stage
(their byte offsets in the stage, their row and k offsets in the tile), the box and the
swizzle; the host side (:meth:`TmaLoad.tensor_map`) encodes the map for an array at launch,
and the kernel receives the map's device address as an argument.

Coordinates follow the operand's major order: a K-major operand ``(rows, K)`` is
``(k, row)`` innermost first, an MN-major one ``(row, k)``. Every map has a third
dimension, the batch ``l`` (CuTe's ``(M, K, L)``), of one matrix when there is no batch:
one kernel serves a GEMM and a batch of them. A map of rank 4 (:meth:`TmaLoad.tensor_map_4d`,
:meth:`TmaLoad.load_4d`) has two batch dimensions, each with a stride of its own: attention's
heads and batch, ``(batch, heads, seq, d)`` with any strides.

>>> a = TmaLoad("A", "f16", 2, "K", (64, 128), ((0, 0, 0),), 128)
>>> a.coords(128, 64)
(64, 128)
"""

from __future__ import annotations

from dataclasses import dataclass

from .objects import device, device_object, late_import

(bulk_commit_group, prefetch_tensormap, tensormap_acquire, tma_load_3d, tma_load_3d_multicast, tma_load_4d,
 tma_store_3d) = late_import("codegen.intrinsics", "bulk_commit_group", "prefetch_tensormap", "tensormap_acquire",
                             "tma_load_3d", "tma_load_3d_multicast", "tma_load_4d", "tma_store_3d")

__all__ = ["TmaLoad", "TmaStore", "make_tma_load", "tma_type", "encode_tensor_map", "MAP_BYTES"]

#: Bytes of an encoded tensor map.
MAP_BYTES = 128


def encode_tensor_map(dtype, elem_bytes, ptr, dims, strides_bytes, box, swizzle_bytes, simulated):
    """A tensor map for ``dims`` (innermost first) with the byte strides ``strides_bytes`` of
    dimensions 1 and up, at global address ``ptr``: the driver's 128 bytes on a GPU; in
    numba's simulator, a registered host array whose address stands for it (returned as
    ``(array, address)``)."""
    if simulated:
        from ..intrinsics.sim_sm90 import encode_tensor_map as encode

        arr = encode(elem_bytes, ptr, dims, strides_bytes, box, swizzle_bytes)
        return arr, int(arr.__array_interface__["data"][0])
    from .. import driver

    return driver.encode_tensor_map(dtype, ptr, dims, strides_bytes, box, swizzle_bytes)


def _batch_stride(batch, matrix_bytes):
    """The byte stride of a map's batch dimension: the batch's, or for a single matrix (whose
    stride is never used) one that TMA takes, a positive multiple of 16."""
    count, stride_bytes = batch
    return stride_bytes if count > 1 else _round16(matrix_bytes)


def tma_type(dtype):
    """The tensor-map element type that carries operands of type ``dtype``: f32 data that
    wgmma reads as tf32 travels as f32, the 8-bit floats as bytes."""
    return {"tf32": "f32", "e4m3": "u8", "e5m2": "u8"}.get(dtype, dtype)


def make_tma_load(name, dtype, major, smem, halves=False):
    """The TMA loads that fill one pipeline stage of an operand: ``smem`` ``(rows, BK) ->
    element offset`` is a GMMA shared layout (:func:`codegen.cute.gmma_stage`), ``major``
    the operand's major order in global memory ("K": its rows are K-contiguous).

    Each box is one swizzle row wide along the contiguous dimension (the TMA swizzle then
    writes what the shared layout's swizzle says): K-major, one box spans the stage's rows,
    one box a swizzle row of the k-tile; MN-major, one box per swizzle-row block of rows, each
    spanning the k-tile (the stage keeps K outermost, so each box is contiguous). The boxes'
    byte offsets in the stage are the layout at their corners. ``halves``: a cluster's
    shared operand, each CTA loading the half of the rows its rank names.

    >>> from codegen.cute import gmma_stage
    >>> make_tma_load("B", "f16", "MN", gmma_stage("f16", "MN", 256, 64)).boxes
    ((0, 0, 0), (8192, 64, 0), (16384, 128, 0), (24576, 192, 0))
    >>> make_tma_load("K", "f16", "K", gmma_stage("f16", "K", 128, 128)).boxes     # two 64-wide K blocks
    ((0, 0, 0), (16384, 0, 64))
    """
    from layoutalg import ComposedLayout, size
    from layoutalg.element_types import element_type

    ebytes = element_type(dtype, "make_tma_load").bits // 8
    inner, sw = (smem.inner, smem.outer) if isinstance(smem, ComposedLayout) else (smem, None)
    rows, bk = size(inner[0]), size(inner[1])
    swizzle_bytes = 16 << sw.bits if sw is not None and sw.bits else 0
    w = (swizzle_bytes or 16) // ebytes                  # elements of one swizzle row
    if major == "K":
        if bk % w or (halves and bk != w):
            raise ValueError(f"make_tma_load: a K-major stage {smem} takes whole swizzle rows of {w} elements a "
                             f"k-tile{' (one, for a shared half)' if halves else ''}, got BK {bk}")
        box = (w, rows // 2 if halves else rows)          # (k, rows)
        corners = [(r, k) for k in range(0, bk, w) for r in range(0, rows, box[1])]
    elif major == "MN":
        if rows % w:
            raise ValueError(f"make_tma_load: {name}'s {rows} rows are not a multiple of a swizzle row ({w})")
        box = (w, bk)                                      # (rows, k)
        corners = [(r, 0) for r in range(0, rows, w)]
    else:
        raise ValueError(f"make_tma_load: major must be 'K' or 'MN', got {major!r}")
    boxes = tuple((inner(r, k) * ebytes, r, k) for r, k in corners)
    half = (rows // 2, inner(rows // 2, 0) * ebytes) if halves else None
    if halves:
        first = [bx for bx in boxes if bx[1] < rows // 2]
        if [(o + half[1], r + half[0], k) for o, r, k in first] != [bx for bx in boxes if bx[1] >= rows // 2]:
            raise ValueError(f"make_tma_load: the boxes of {name}'s stage {boxes} do not split in two halves")
    return TmaLoad(name, tma_type(dtype), ebytes, major, box, boxes, swizzle_bytes, half)


def _round16(nbytes):
    """``nbytes`` rounded up to a positive multiple of 16 (a TMA stride)."""
    return max(16, -(-nbytes // 16) * 16)


@device_object
@dataclass(frozen=True)
class TmaLoad:
    """Loads of one operand's stage. ``major``: "K" or "MN"; ``box``: (inner, outer)
    elements; ``boxes``: per box, (byte offset in the stage, row offset, k offset);
    ``swizzle_bytes``: the shared layout's swizzle (0, 32, 64 or 128); ``map_dtype``: the
    tensor map's element type (tf32 travels as f32, 8-bit floats as u8); ``half``: for a
    cluster's shared operand, (rows of each CTA's half, byte offset of the second half),
    else None."""

    name: str
    map_dtype: str
    elem_bytes: int
    major: str
    box: tuple
    boxes: tuple
    swizzle_bytes: int
    half: tuple = None

    #: Loaded by TMA (a :class:`~codegen.cute.gmem_copy.GmemStageCopy`'s is False).
    tma = True

    @property
    def k_major(self):
        return self.major == "K"

    def coords(self, row, k):
        """The tensor map's coordinates (innermost first) of element ``(row, k)``."""
        return (k, row) if self.major == "K" else (row, k)

    @device
    def acquire(self, tmap):
        """Make the host-written map visible to the TMA unit (once per CTA, by the thread
        that issues the loads, before its first load)."""
        tensormap_acquire(tmap)

    @device
    def prefetch(self, tmap):
        """Fetch the map into the TMA unit's cache (after :meth:`acquire`)."""
        prefetch_tensormap(tmap)

    @device
    def load(self, tmap, dst, row0, k0, l, bar):
        """The stage's boxes of the tile at ``(row0, k0)`` of matrix ``l`` of the batch (0
        without one) into shared address ``dst``, their bytes counted on the mbarrier ``bar``."""
        for i in range(len(self.boxes)):
            off, r, k = self.boxes[i]
            if self.k_major:
                tma_load_3d(dst + off, tmap, k0 + k, row0 + r, l, bar)
            else:
                tma_load_3d(dst + off, tmap, row0 + r, k0 + k, l, bar)

    @device
    def load_multicast(self, tmap, dst, row0, k0, l, bar, rank):
        """A cluster's shared operand: this CTA (``rank`` 0 or 1) loads its half of the
        stage's rows into both CTAs' stages (the same offsets), signalling both CTAs'
        barriers at ``bar``."""
        rows, nbytes = self.half
        for i in range(len(self.boxes)):
            off, r, k = self.boxes[i]
            if r < rows:
                if self.k_major:
                    tma_load_3d_multicast(dst + off + nbytes * rank, tmap, k0 + k, row0 + r + rows * rank, l, bar, 3)
                else:
                    tma_load_3d_multicast(dst + off + nbytes * rank, tmap, row0 + r + rows * rank, k0 + k, l, bar, 3)

    @device
    def load_4d(self, tmap, dst, row0, k0, l1, l2, bar):
        """:meth:`load` from a map of rank 4 (:meth:`tensor_map_4d`): ``l1`` and ``l2`` the two
        batch coordinates."""
        for i in range(len(self.boxes)):
            off, r, k = self.boxes[i]
            if self.k_major:
                tma_load_4d(dst + off, tmap, k0 + k, row0 + r, l1, l2, bar)
            else:
                tma_load_4d(dst + off, tmap, row0 + r, k0 + k, l1, l2, bar)

    def tensor_map_4d(self, ptr, shape, strides, outer, simulated=False):
        """The map of ``(rows, K)`` matrices with element ``strides`` at ``ptr``, in two batch
        dimensions ``outer = ((L1, stride1), (L2, stride2))`` (extents, element strides):
        every stride, a matrix's row stride included, a positive multiple of 16 bytes where its
        extent exceeds 1 (:func:`_round16` makes up one that is never used)."""
        rows, k = shape
        eb = self.elem_bytes
        dims, stride = ((k, rows), strides[0]) if self.major == "K" else ((rows, k), strides[1])
        fit = lambda n, st: st * eb if n > 1 else _round16(st * eb)          # noqa: E731
        strides_bytes = (fit(dims[1], stride),) + tuple(fit(n, st) for n, st in outer)
        return encode_tensor_map(self.map_dtype, eb, ptr, dims + tuple(n for n, _ in outer), strides_bytes,
                                 self.box + (1, 1), self.swizzle_bytes, simulated)

    def tensor_map(self, ptr, shape, strides, simulated=False, batch=(1, 0)):
        """The map of an operand ``(rows, K)`` with element ``strides`` at ``ptr``; ``batch``:
        ``(L, element stride)`` of a batch of such matrices (one by default)."""
        rows, k = shape
        eb = self.elem_bytes
        if self.major == "K":
            dims, stride = (k, rows), strides[0] * eb
        else:
            dims, stride = (rows, k), strides[1] * eb
        if rows == 1 or k == 1:         # a single row: its stride is never used, but TMA wants a multiple of 16
            stride = _round16(stride)
        strides_bytes = (stride, _batch_stride((batch[0], batch[1] * eb), stride * dims[1]))
        return encode_tensor_map(self.map_dtype, eb, ptr, dims + (batch[0],), strides_bytes, self.box + (1,),
                                 self.swizzle_bytes, simulated)


@device_object
@dataclass(frozen=True)
class TmaStore:
    """Stores of boxes of a row-major ``(M, N)`` tensor from shared memory: ``box``
    (columns, rows) elements, unswizzled in shared memory (``swizzle_bytes`` 0) or in the
    128-byte swizzled atom."""

    map_dtype: str
    elem_bytes: int
    box: tuple
    swizzle_bytes: int = 0

    @device
    def acquire(self, tmap):
        """Make the host-written map visible to the TMA unit (before the first store)."""
        tensormap_acquire(tmap)

    @device
    def store(self, tmap, src, row0, col0, l):
        """The box at shared address ``src`` to ``(row0, col0)`` of matrix ``l`` of the
        batch (clipped to the matrix), as one bulk async-group."""
        tma_store_3d(tmap, src, col0, row0, l)
        bulk_commit_group()

    def tensor_map(self, ptr, shape, row_stride, simulated=False, batch=(1, 0)):
        """The map of ``(M, N)`` with row stride ``row_stride`` elements (columns contiguous);
        ``batch``: ``(L, element stride)`` of a batch of such matrices (one by default)."""
        M, N = shape
        eb = self.elem_bytes
        stride = row_stride * eb
        if M == 1:                      # one row: any stride will do, and TMA wants a multiple of 16
            stride = _round16(stride)
        strides_bytes = (stride, _batch_stride((batch[0], batch[1] * eb), stride * M))
        return encode_tensor_map(self.map_dtype, eb, ptr, (N, M, batch[0]), strides_bytes, self.box + (1,),
                                 self.swizzle_bytes, simulated)
