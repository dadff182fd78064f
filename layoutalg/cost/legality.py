"""Can the hardware take this shared-memory layout? TMA boxes and wgmma operands.

Both Hopper units read or write shared memory in a few fixed patterns: rows of 16-byte
chunks, and a **swizzle** that XORs address bits ``[4, 4+B)`` with bits ``[7, 7+B)``
(``B`` = 1, 2, 3 for the 32-, 64- and 128-byte modes; in CuTe's terms ``Swizzle<B,4,3>``
on byte addresses, ``Swizzle<B, 4 - log2(bytes), 3>`` on element offsets). A layout is
legal when it *is* one of those patterns, element for element. Each check below returns a
:class:`Legality`: legal, or the first rule that fails and why.

TMA (``cp.async.bulk.tensor``, box from ``cuTensorMapEncodeTiled``), rules from the CUDA
Driver API's ``cuTensorMapEncodeTiled`` and the PTX ISA's tensor copies:

* ``rank``: 1 to 5 box dimensions; ``box``: each 1 to 256 elements;
* ``inner_bytes``: the inner (global-contiguous) box dimension is a multiple of 16 bytes;
* ``swizzle``: none, 32, 64 or 128 bytes; ``swizzle_span``: a swizzled box's inner
  dimension is at most the swizzle's width;
* ``gmem_alignment``, ``gmem_strides``: the global address 16-byte aligned, the inner
  dimension contiguous, the other strides multiples of 16 bytes below 2^40;
* ``smem_alignment``: the box's shared address 128-byte aligned, and, for a swizzled box,
  aligned to the swizzle's period (256, 512, 1024 bytes), so that the address bits the
  hardware swizzles are the layout's;
* ``layout``: TMA writes the box densely, inner dimension first, then swizzles: the
  layout must give every element that address.

wgmma operands (descriptors of the PTX ISA's "Shared Memory Matrix Layout"; CuTe's
``GmmaDescriptor`` canonical forms, in bytes, ``T`` = 16 bytes, ``x`` = swizzle width):

* K-major: core matrices of 8 rows of 16 bytes; interleaved: row ``r`` of the 8 at
  ``16 r``, the second 16-byte chunk of K at LBO, the next 8 rows at SBO; swizzled: rows
  ``x`` bytes apart, K contiguous, the next 8 rows at SBO (LBO unused);
* MN-major (16-bit types only): 16-byte chunks of MN, 8 of them along K at 16 (interleaved)
  or ``x`` bytes; interleaved: the next chunk of MN at SBO, the next 8 of K at LBO;
  swizzled: the next ``x`` bytes of MN at LBO, the next 8 of K at SBO;
* LBO and SBO multiples of 16 below 2^18 (14 bits of 16-byte units); the start address
  16-byte aligned, and aligned to the swizzle's period as for TMA.

>>> from layoutalg import Layout, Swizzle, composition, tile_to_shape
>>> atom = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))       # (8,64) f16 -> offset, 128-byte rows
>>> ok = check_wgmma(tile_to_shape(atom, (64, 64)), "f16", "K")
>>> bool(ok), ok.swizzle_bytes, ok.sbo
(True, 128, 1024)
>>> bad = check_wgmma(Layout((64, 64), (64, 1)), "f16", "K")          # plain 128-byte rows: no core matrices
>>> bad.rule, bad.message
('rows', 'the 8 rows of a core matrix are at [0, 128, 256, 384, 512, 640, 768, 896] bytes, not 16 apart')
>>> check_tma(Layout((64, 64), (64, 1)), "f16", inner=1).legal        # 128-byte rows, no swizzle
True
>>> check_tma(Layout((64, 300), (300, 1)), "f16", inner=1).rule        # a box of 300 elements
'box'
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..element_types import element_type
from ..errors import LayoutError, LayoutTypeError
from ..inttuple import is_int
from ..layout import Layout, rank, size
from ..numpy_eval import eval_layout
from ..swizzle import ComposedLayout, Swizzle

__all__ = ["Legality", "check_tma", "check_wgmma", "SWIZZLE_PERIOD"]

#: Bytes after which each swizzle mode's pattern repeats (none: 128-byte alignment).
SWIZZLE_PERIOD = {0: 128, 32: 256, 64: 512, 128: 1024}
_LAYOUT_TYPE = {0: 0, 128: 1, 64: 2, 32: 3}


@dataclass(frozen=True)
class Legality:
    """The verdict of :func:`check_tma` or :func:`check_wgmma`.

    ``legal``; ``rule``: the first rule that fails (None when legal); ``message``: why, with
    the values; ``swizzle_bytes``: the layout's swizzle mode (0: none; None: not a mode);
    for wgmma operands ``layout_type``, ``lbo`` and ``sbo`` (bytes) of the descriptor.
    ``bool(result)`` is ``legal``.
    """

    what: str
    legal: bool
    rule: str | None
    message: str
    swizzle_bytes: int | None = None
    layout_type: int | None = None
    lbo: int | None = None
    sbo: int | None = None
    details: dict = field(default_factory=dict)

    def __bool__(self):
        return self.legal

    @property
    def desc(self):
        """The descriptor's layout fields (:class:`mma_atoms.gmma_smem.GmmaDesc`, 16-byte units)."""
        if not self.legal or self.layout_type is None:
            raise LayoutError(f"Legality.desc: not a legal wgmma operand: {self.message}")
        from mma_atoms.gmma_smem import GmmaDesc

        return GmmaDesc(self.layout_type, self.lbo >> 4, self.sbo >> 4)

    def __str__(self):
        return f"{self.what}: {'legal' if self.legal else 'illegal (' + self.rule + ')'}: {self.message}"


def _ebytes(op, dtype):
    bits = element_type(dtype, op).bits
    if bits not in (8, 16, 32, 64):
        raise LayoutError(f"{op}: {dtype} is {bits} bits; TMA and wgmma move 8-, 16-, 32- or 64-bit elements")
    return bits // 8


def _split(op, smem):
    if isinstance(smem, ComposedLayout):
        if not isinstance(smem.outer, Swizzle):
            raise LayoutError(f"{op}: {smem} is composed with a layout, not a swizzle")
        return smem.outer, smem
    if isinstance(smem, Layout):
        return None, smem
    raise LayoutTypeError(f"{op}: expected a Layout or a swizzled ComposedLayout, got {smem!r}")


def _swizzle_bytes(sw, ebytes):
    """The TMA/GMMA swizzle mode (0, 32, 64, 128) of a swizzle on element offsets, or None."""
    if sw is None or sw.bits == 0:
        return 0
    shift = ebytes.bit_length() - 1
    if sw.base + shift == 4 and sw.shift == 3 and 1 <= sw.bits <= 3:
        return 16 << sw.bits
    return None


def _byte_swizzle(nbytes):
    return Swizzle({32: 1, 64: 2, 128: 3}[nbytes], 4, 3) if nbytes else None


def _sw(sw, x):
    if sw is None:
        return x
    return x ^ ((x & sw.yyy_mask) >> sw.shift)


def _box_offsets(smem, box):
    """``smem`` at every coordinate of ``box`` (a shape per mode), colexicographically, as
    an array of shape ``box`` (Fortran order)."""
    r = len(box)
    idx = np.indices(box, dtype=np.int64).reshape(r, -1, order="F")
    modes = [smem[i] for i in range(r)] if r > 1 else [smem]
    sw = None
    if isinstance(smem, ComposedLayout):
        sw, off = smem.outer, smem.offset
        modes = [m.inner for m in modes]
    else:
        off = 0
    tot = np.full(idx.shape[1], off, dtype=np.int64)
    for i, m in enumerate(modes):
        tot += eval_layout(m, idx[i])
    if sw is not None:
        tot = tot ^ ((tot & sw.yyy_mask) >> sw.shift) if sw.shift >= 0 else tot ^ ((tot & sw.yyy_mask) << -sw.shift)
    return tot


def _fail(what, rule, message, **kw):
    return Legality(what, False, rule, message, **kw)


def _check_int(op, name, v):
    if isinstance(v, bool) or not is_int(v) or v < 0:
        raise LayoutError(f"{op}: {name} must be a non-negative int, got {v!r}")
    return int(v)


def check_tma(smem, dtype, gmem=None, *, inner=None, box=None, smem_base=0, gmem_base=0):
    """Can TMA copy a box into (or out of) shared memory laid out as ``smem``?

    ``smem``: ``(D0, D1, ...) -> element offset`` of ``dtype`` elements, one mode per box
    dimension (a plain layout or a swizzled ``ComposedLayout``); ``box``: the box's extent
    per mode, at the layout's origin (default: the layout's own mode sizes); ``inner``: the
    mode that is contiguous in global memory (default: ``gmem``'s stride-1 mode, else 0);
    ``gmem``: the global tensor's layout in the same modes (its strides are checked; None:
    not checked); ``smem_base``, ``gmem_base``: byte addresses of element offset 0.

    Returns a :class:`Legality` (rules in the module's docstring, checked in that order).
    """
    op, what = "check_tma", "TMA box"
    sw, _ = _split(op, smem)
    eb = _ebytes(op, dtype)
    smem_base = _check_int(op, "smem_base", smem_base)
    gmem_base = _check_int(op, "gmem_base", gmem_base)
    r = rank(smem)
    if box is None:
        box = tuple(size(smem[i]) for i in range(r)) if r > 1 else (size(smem),)
    box = tuple(box)
    if any(isinstance(b, bool) or not is_int(b) for b in box):
        raise LayoutError(f"{op}: box must be ints, got {box!r}")
    if gmem is not None:
        if not isinstance(gmem, Layout):
            raise LayoutTypeError(f"{op}: gmem must be a Layout (M,N,...) -> element offset, got {gmem!r}")
        if rank(gmem) != len(box):
            raise LayoutError(f"{op}: gmem {gmem} has {rank(gmem)} modes, the box {len(box)}")
    if inner is None:
        inner = 0
        if gmem is not None:
            ones = [i for i in range(len(box)) if _mode_stride(gmem, i) == 1]
            inner = ones[0] if ones else 0
    if not (is_int(inner) and 0 <= inner < len(box)):
        raise LayoutError(f"{op}: inner must name one of the {len(box)} modes, got {inner!r}")
    if not 1 <= len(box) <= 5:
        return _fail(what, "rank", f"a TMA box has 1 to 5 dimensions, this one {len(box)} ({box})")
    for i, b in enumerate(box):
        if not 1 <= b <= 256:
            return _fail(what, "box", f"box dimension {i} is {b} elements; each must be 1 to 256 ({box})")
    if len(box) > 1 and any(box[i] > size(smem[i]) for i in range(len(box))) or (
            len(box) == 1 and box[0] > size(smem)):
        raise LayoutError(f"{op}: box {box} is larger than the layout {smem}")
    inner_bytes = box[inner] * eb
    swb = _swizzle_bytes(sw, eb)
    kw = {"swizzle_bytes": swb, "details": {"box": box, "inner": inner, "inner_bytes": inner_bytes}}
    if inner_bytes % 16:
        return _fail(what, "inner_bytes", f"the inner box dimension is {box[inner]} x {eb} = {inner_bytes} bytes, "
                                          f"not a multiple of 16", **kw)
    if swb is None:
        return _fail(what, "swizzle", f"the layout's swizzle {sw} on {eb}-byte elements is "
                                      f"{_bytes_text(sw, eb)} on bytes; TMA swizzles are Sw<1,4,3>, Sw<2,4,3> "
                                      f"and Sw<3,4,3> on bytes (32, 64, 128 bytes)", **kw)
    if swb and inner_bytes > swb:
        return _fail(what, "swizzle_span", f"the inner box dimension is {inner_bytes} bytes, more than the "
                                           f"{swb}-byte swizzle", **kw)
    if gmem is not None:
        if gmem_base % 16:
            return _fail(what, "gmem_alignment", f"the global address {gmem_base} is not 16-byte aligned", **kw)
        if _mode_stride(gmem, inner) != 1:
            return _fail(what, "gmem_strides", f"the inner mode {inner} of {gmem} has stride "
                                               f"{_mode_stride(gmem, inner)}, not 1 (TMA needs it contiguous)", **kw)
        for i in range(len(box)):
            if i == inner:
                continue
            d = _mode_stride(gmem, i)
            if d is None or (d * eb) % 16 or not 0 < d * eb < 1 << 40:
                return _fail(what, "gmem_strides", f"mode {i} of {gmem} has stride {d} elements = "
                                                   f"{None if d is None else d * eb} bytes; TMA needs a multiple "
                                                   f"of 16 bytes below 2^40", **kw)
    need = SWIZZLE_PERIOD[swb]
    if smem_base % need:
        why = "128-byte aligned" if not swb else f"aligned to the {swb}-byte swizzle's period of {need} bytes"
        return _fail(what, "smem_alignment", f"the shared address {smem_base} is not {why}", **kw)
    got = smem_base + _box_offsets(smem, box) * eb
    order = [inner] + [i for i in range(len(box)) if i != inner]
    idx = np.indices(box, dtype=np.int64).reshape(len(box), -1, order="F")
    dense = np.zeros(idx.shape[1], dtype=np.int64)
    pitch = eb
    for i in order:
        dense += idx[i] * pitch
        pitch *= box[i]
    want = _sw(_byte_swizzle(swb), smem_base + dense)
    bad = np.nonzero(got != want)[0]
    if bad.size:
        k = int(bad[0])
        crd = tuple(int(idx[i, k]) for i in range(len(box)))
        return _fail(what, "layout", f"TMA writes box element {crd} at shared byte {int(want[k])} (dense, mode "
                                     f"{inner} first{', swizzled' if swb else ''}), the layout puts it at "
                                     f"{int(got[k])}", **kw)
    return Legality(what, True, None, f"box {box} of {dtype}, inner mode {inner} ({inner_bytes} bytes), "
                                      f"{'swizzle ' + str(swb) + ' bytes' if swb else 'no swizzle'}", **kw)


def _bytes_text(sw, eb):
    shift = eb.bit_length() - 1
    return f"Sw<{sw.bits},{sw.base + shift},{sw.shift}>"


def _mode_stride(lay, i):
    m = lay[i] if rank(lay) > 1 else lay
    from ..inttuple import flat_tuple

    sh, st = flat_tuple(m.shape), flat_tuple(m.stride)
    live = [d for s, d in zip(sh, st) if s > 1]
    if not live:
        return 0
    if len(live) > 1:
        return None
    return live[0]


def check_wgmma(smem, dtype, major, *, block=None, smem_base=0):
    """Can ``wgmma`` read an operand laid out as ``smem`` through a descriptor?

    ``smem``: ``(MN, K) -> element offset`` of ``dtype`` elements (a stage, or the block
    itself; a plain layout or a swizzled ``ComposedLayout``); ``major``: "K" or "MN";
    ``block``: the ``(MN, K)`` one instruction reads from the origin (default: all of mode
    0, and the 32 bytes of K an instruction takes); ``smem_base``: the byte address of
    offset 0.

    Returns a :class:`Legality` with the descriptor's ``layout_type``, ``lbo`` and ``sbo``
    (bytes) when legal, else the first failing rule: ``dtype``, ``major``, ``block``,
    ``swizzle``, ``chunks`` (16 contiguous bytes), ``rows`` (the 8 rows of a core matrix),
    ``lbo``, ``sbo`` (even, 16-byte multiples that fit), ``alignment``, ``layout``.
    """
    op, what = "check_wgmma", "wgmma operand"
    sw, _ = _split(op, smem)
    bits = element_type(dtype, op).bits
    if rank(smem) != 2:
        raise LayoutError(f"{op}: expected an (MN, K) layout, got {smem} of rank {rank(smem)}")
    if major not in ("K", "MN"):
        raise LayoutError(f"{op}: major must be 'K' or 'MN', got {major!r}")
    smem_base = _check_int(op, "smem_base", smem_base)
    if bits not in (8, 16, 32):
        return _fail(what, "dtype", f"wgmma reads 8-, 16- and 32-bit operands from shared memory, not {dtype}")
    eb = bits // 8
    if major == "MN" and eb != 2:
        return _fail(what, "major", f"wgmma reads {dtype} operands K-major only (the transpose is for 16-bit types)")
    T = 16 // eb                                          # elements of a 16-byte chunk
    kblock = 32 // eb
    if block is None:
        block = (size(smem[0]), kblock)
    mn, k = block
    if mn > size(smem[0]) or k > size(smem[1]):
        raise LayoutError(f"{op}: block {block} is larger than the layout {smem}")
    if k != kblock or mn % 8 or not 8 <= mn <= 256:
        return _fail(what, "block", f"one wgmma reads (MN, K) = (8..256 by 8, {kblock}) of {dtype}, not {block}")
    swb = _swizzle_bytes(sw, eb)
    kw = {"swizzle_bytes": swb, "details": {"block": (mn, k)}}
    if swb is None:
        return _fail(what, "swizzle", f"the layout's swizzle {sw} on {eb}-byte elements is {_bytes_text(sw, eb)} on "
                                      f"bytes; wgmma reads Sw<1,4,3>, Sw<2,4,3>, Sw<3,4,3> on bytes or none", **kw)
    kw["layout_type"] = _LAYOUT_TYPE[swb]
    A = smem_base + _box_offsets(smem, (mn, k)).reshape((mn, k), order="F") * eb     # byte address of (mn, k)
    U = _sw(_byte_swizzle(swb), A) - smem_base                                      # before the swizzle
    x = swb or 16                                                                   # bytes of a row
    if major == "K":
        if np.any(U[:, :T] != U[:, :1] + np.arange(T) * eb):
            return _fail(what, "chunks", "along K, 16 bytes of a row are not contiguous", **kw)
        if np.any(U[:8, 0] != U[0, 0] + np.arange(8) * x):
            return _fail(what, "rows", f"the 8 rows of a core matrix are at {(U[:8, 0] - U[0, 0]).tolist()} bytes, "
                                       f"not {x} apart", **kw)
        lbo = int(U[0, T] - U[0, 0]) if not swb else 16
        if swb and np.any(U[:, T:] != U[:, :T] + 16):
            return _fail(what, "chunks", "a swizzled row's two 16-byte chunks of K are not adjacent", **kw)
        sbo = int(U[8, 0] - U[0, 0]) if mn > 8 else 0
        groups = np.arange(mn) // 8
        want = (U[0, 0] + (np.arange(mn) % 8)[:, None] * x + groups[:, None] * sbo
                + (np.arange(k) % T)[None, :] * eb + (np.arange(k) // T)[None, :] * lbo)
        sbo_rule = "sbo"
    else:
        w = x // eb                                                                 # MN elements of a row
        if np.any(U[:T, :] != U[:1, :] + np.arange(T)[:, None] * eb):
            return _fail(what, "chunks", "along MN, 16 bytes are not contiguous", **kw)
        if np.any(U[0, :8] != U[0, 0] + np.arange(8) * x):
            return _fail(what, "rows", f"the 8 K-rows of a core matrix are at {(U[0, :8] - U[0, 0]).tolist()} "
                                       f"bytes, not {x} apart", **kw)
        if swb and mn >= w and np.any(U[:w, :] != U[:1, :] + np.arange(w)[:, None] * eb):
            return _fail(what, "chunks", f"along MN, a {swb}-byte swizzle row is not contiguous", **kw)
        mstep = int(U[w, 0] - U[0, 0]) if mn > w else 0                             # next MN group
        kstep = int(U[0, 8] - U[0, 0]) if k > 8 else 0                              # next 8 of K
        lbo, sbo = (mstep, kstep) if swb else (kstep, mstep)
        want = (U[0, 0] + (np.arange(mn) % w)[:, None] * eb + (np.arange(mn) // w)[:, None] * mstep
                + (np.arange(k) % 8)[None, :] * x + (np.arange(k) // 8)[None, :] * kstep)
        sbo_rule = "sbo" if swb else "lbo"
    if np.any(U != want):
        i, j = (int(v[0]) for v in np.nonzero(U != want))
        rule = sbo_rule if (major == "K" and i >= 8) or (major == "MN" and i >= (x // eb)) else "layout"
        return _fail(what, rule, f"element ({i}, {j}) is at byte {int(U[i, j])} before the swizzle; the canonical "
                                 f"{major}-major layout with LBO {lbo}, SBO {sbo} puts it at {int(want[i, j])}", **kw)
    for name, v in (("lbo", lbo), ("sbo", sbo)):
        if v % 16 or not 0 <= v < 1 << 18:
            return _fail(what, name, f"{name.upper()} = {v} bytes; it must be a multiple of 16 below 2^18", **kw)
    start = smem_base + int(U[0, 0])
    if start % 16:
        return _fail(what, "alignment", f"the block starts at shared byte {start}, not 16-byte aligned", **kw)
    if swb and smem_base % SWIZZLE_PERIOD[swb]:
        return _fail(what, "alignment", f"the layout's origin is at shared byte {smem_base}, not aligned to the "
                                        f"{swb}-byte swizzle's period of {SWIZZLE_PERIOD[swb]} bytes", **kw)
    kw.update(lbo=lbo, sbo=sbo)
    return Legality(what, True, None, f"{major}-major, {'swizzle ' + str(swb) + ' bytes' if swb else 'interleaved'}, "
                                      f"LBO {lbo} bytes, SBO {sbo} bytes", **kw)
