"""Epilogues of a warpgroup GEMM: the accumulators of a 64-row slice of C out to memory.

Each consumer warpgroup holds its 64 x BN slice of the CTA tile in ``CLayout_64xN``
``(T128,V) -> (m,n)``: thread ``t``'s registers ``2q`` and ``2q+1`` are adjacent columns.

* :class:`TmaStoreEpilogue` (16-bit C, ``beta == 0``): the slice goes out one 64 x (128
  bytes) box at a time, through two box buffers in shared memory, each staged in the
  128-byte swizzled layout the TMA store reads and written by one thread's TMA store,
  asynchronously: a buffer is refilled only once the store that read it (two boxes ago) is
  done reading. The slice's register pairs are first converted to packed 16-bit pairs
  (:meth:`TmaStoreEpilogue.pack`), so a kernel can start the next tile's MMAs before it
  stores them (:meth:`TmaStoreEpilogue.store_box` between the next tile's k-tiles).
* :class:`RegisterEpilogue` (any C): ``alpha * acc + beta * C`` stored from registers, 32
  or 64 bits a pair where the tile is inside C, predicated pair by pair at its edges; an
  8-bit float C (e4m3, e5m2) 16 bits a pair, rounded and saturated (``.satfinite``).
* :class:`OutputScale` (an 8-bit float C): the accumulators times the output scale before
  the store, and the largest ``|alpha * acc|`` inside C kept over a thread's tiles, then
  into the launch's ``amax`` (a warp's maximum, then one atomic maximum a warp).

Every offset is a layout of the plan evaluated at run time: the staging offset of the
thread's and of each pair's part of ``CLayout_64xN`` (``thr``, ``pair``), the swizzle of a
box buffer (``swizzle``), the row and column of each (``thr_row``, ``pair_col``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from .objects import device, device_function, device_object, late_import
from .smem import smem_base

(cuda, float32, int64, uint32) = late_import("numba", "cuda", "float32", "int64", "uint32")
(ex2_approx_f32, tanh_approx_f32) = late_import("codegen.intrinsics", "ex2_approx_f32", "tanh_approx_f32")
(bulk_wait_group, bulk_wait_group_read, f32_as_u32, fence_proxy_async, ld_global_b16, ld_global_b32,
 named_barrier_sync, red_global_max_u32, st_global_b8, st_global_b16, st_global_b32, st_global_v2_b32, st_shared_b16,
 st_shared_b32, u32_as_f32, unpack_f16x2_f32) = late_import(
    "codegen.intrinsics", "bulk_wait_group", "bulk_wait_group_read", "f32_as_u32", "fence_proxy_async",
    "ld_global_b16", "ld_global_b32", "named_barrier_sync", "red_global_max_u32", "st_global_b8", "st_global_b16",
    "st_global_b32", "st_global_v2_b32", "st_shared_b16", "st_shared_b32", "u32_as_f32", "unpack_f16x2_f32")

__all__ = ["TmaStoreEpilogue", "RegisterEpilogue", "BiasActivation", "ElementwiseEpilogue", "OutputScale",
           "make_tma_store_epilogue", "make_register_epilogue", "make_bias_activation", "make_elementwise_epilogue",
           "make_output_scale", "tma_store_fits", "epilogue_alpha", "group_alpha"]


@device_function
def epilogue_alpha(p):
    """``alpha`` of a launch: ``p.alpha`` times the float32 scalars at device addresses
    ``p.scale_a``, ``p.scale_b`` (per-tensor scales) and ``p.alpha_at`` (an alpha given as a
    tensor; 0: none), read by the kernel, as ``torch._scaled_mm`` reads its scales, so that a
    CUDA graph replays with their values of the moment and no host synchronization waits."""
    alpha = p.alpha
    if p.scale_a != 0:
        alpha *= u32_as_f32(ld_global_b32(p.scale_a))
    if p.scale_b != 0:
        alpha *= u32_as_f32(ld_global_b32(p.scale_b))
    if p.alpha_at != 0:
        alpha *= u32_as_f32(ld_global_b32(p.alpha_at))
    return alpha


@device_function
def group_alpha(p, g):
    """``alpha`` of group ``g``'s tiles in a grouped GEMM: ``p.alpha`` times the float32 scales
    of group ``g`` in the arrays at ``p.scale_a`` and ``p.scale_b`` (one a group: the
    dequantization of each group's 8-bit rows of A and of its matrix of B; 0: none) and the
    scalar at ``p.alpha_at`` (0: none), read by the kernel (graph-safe, as
    :func:`epilogue_alpha`)."""
    alpha = p.alpha
    if p.scale_a != 0:
        alpha *= u32_as_f32(ld_global_b32(p.scale_a + 4 * int64(g)))
    if p.scale_b != 0:
        alpha *= u32_as_f32(ld_global_b32(p.scale_b + 4 * int64(g)))
    if p.alpha_at != 0:
        alpha *= u32_as_f32(ld_global_b32(p.alpha_at))
    return alpha


def _clayout(bn):
    """``CLayout_64xN``: ``(T128,V(N/2)) -> m + 64 n`` of the wgmma accumulators."""
    from mma_atoms.mma_sm90 import clayout_64xn

    return clayout_64xn(bn)


def tma_store_fits(out, bn):
    """Whether C of type ``out`` goes out by :class:`TmaStoreEpilogue` from tiles ``bn`` wide:
    a 16-bit C, or an 8-bit float C whose tiles are whole 128-byte boxes."""
    return out in ("f16", "bf16") or (out in ("e4m3", "e5m2") and bn % 128 == 0)


def make_tma_store_epilogue(out, bn, staging, buffers=2):
    """The TMA-store epilogue of a 64 x ``bn`` slice of a 16-bit C (``out`` "f16" or
    "bf16") or an 8-bit float C ("e4m3", "e5m2"; ``bn`` a multiple of 128), staged at byte
    offset ``staging`` of the shared storage (``buffers`` box buffers a consumer warpgroup,
    ``consumer_bytes`` apart).

    The staging layout is the 128-byte swizzled atom tiled to ``(64, bn)`` (N playing K's
    part): box ``j`` (64 rows x 128 bytes) is its ``j``-th contiguous block; the thread's and
    each register pair's offsets are that layout composed with ``CLayout_64xN``'s thread and
    value modes, and :meth:`TmaStoreEpilogue.check` proves them against the layout.

    >>> e = make_tma_store_epilogue("f16", 256, 0)
    >>> e.boxes, e.box_pairs, e.store.box
    (4, 16, (64, 64))
    """
    from layoutalg import ComposedLayout, Layout, composition, size, tile_to_shape
    from layoutalg.element_types import element_type
    from mma_atoms.gmma_smem import gmma_smem_atom

    from .tma import TmaStore

    if not tma_store_fits(out, bn):
        raise ValueError(f"make_tma_store_epilogue: the staged epilogue stores a 16-bit C, or an 8-bit float C in "
                         f"tiles a multiple of 128 wide; got {out!r}, BN {bn}")
    eb = element_type(out).bits // 8
    clay = _clayout(bn)
    smem = tile_to_shape(gmma_smem_atom(out, "K", 128), (64, bn))     # (64,BN) -> offset, swizzled
    inner, sw = smem.inner, smem.outer
    w = 128 // eb                                                       # columns of a box: 128 bytes
    boxes, box_elems = bn // w, 64 * w
    if any(inner(0, j * w) != j * box_elems for j in range(boxes)):
        raise ValueError(f"make_tma_store_epilogue: the boxes of C staging {smem} are not contiguous")
    pairs = size(clay[1]) // 2
    thr = composition(inner, clay[0])                                   # (T128) -> offset
    pair = composition(composition(inner, clay[1]), Layout(pairs, 2))   # (P) -> offset
    epi = TmaStoreEpilogue(TmaStore(out, eb, (w, 64), 16 << sw.bits), out, staging, buffers * box_elems * eb,
                           boxes, pairs // boxes, box_elems, thr, pair, ComposedLayout(sw, 0, Layout(box_elems, 1)))
    epi.check(threads=(0, 1, 4, 31, 32, 127))
    return epi


def make_register_epilogue(out, bm, bn):
    """The epilogue of a ``bm x bn`` tile that stores ``CLayout_64xN``'s registers: the
    row and column of the thread's part and of each register pair, as integer layouts."""
    from layoutalg import Layout, composition, make_identity_layout

    clay = _clayout(bn)
    crd = make_identity_layout((64, bn))                                # m + 64 n -> (m, n)
    vals = composition(crd, clay[1])                                    # (V) -> (m, n)
    if vals(1) != vals(0) + crd(64) or bn % 4:                          # registers 2p, 2p + 1: adjacent columns
        raise ValueError(f"make_register_epilogue: accumulator pairs of {clay} are not adjacent columns")
    pair_row, pair_col = coordinate_layouts(composition(vals, Layout(bn // 4, 2)), 2)   # (P) -> m, n
    thr_row, thr_col = coordinate_layouts(composition(crd, clay[0]), 2)                # (T128) -> m, n
    return RegisterEpilogue(out, bm, bn, bn // 2, thr_row, thr_col, pair_row, pair_col)


def coordinate_layouts(layout, rank):
    """Integer layouts, one per coordinate, of a layout with basis strides ``v@i``:
    ``coordinate_layouts(L, r)[i](x) == L(x)[i]``.

    >>> from layoutalg import make_identity_layout
    >>> rows, cols = coordinate_layouts(make_identity_layout((4, 8)), 2)
    >>> str(rows), str(cols)
    ('(4,8):(1,0)', '(4,8):(0,1)')
    """
    from layoutalg import Layout
    from layoutalg.basis import ScaledBasis
    from layoutalg.inttuple import flat_tuple

    shape = flat_tuple(layout.shape)
    out = []
    for i in range(rank):
        strides = []
        for d in flat_tuple(layout.stride):
            if isinstance(d, ScaledBasis):
                if len(d.mode) != 1:
                    raise ValueError(f"coordinate_layouts: stride {d} of {layout} is not a flat basis")
                strides.append(d.value if d.mode[0] == i else 0)
            elif d == 0:
                strides.append(0)
            else:
                raise ValueError(f"coordinate_layouts: {layout} has an integer stride {d}")
        out.append(Layout(shape, tuple(strides)))
    return tuple(out)


@device_object
@dataclass(frozen=True)
class TmaStoreEpilogue:
    """``store``: the :class:`~codegen.cute.tma.TmaStore` of a box; ``out``: "f16", "bf16",
    "e4m3" or "e5m2" (a register pair is 32 or 16 bits staged); ``staging``: byte offset of the consumers' box buffers in the shared storage,
    ``consumer_bytes`` apart (two buffers of ``box_elems`` elements each); ``boxes`` a
    slice, ``box_pairs`` register pairs a box; ``thr``: ``(T128) -> offset`` and ``pair``:
    ``(P) -> offset`` in the slice's unswizzled staging layout, where box ``j`` is the
    ``j``-th block of ``box_elems``; ``swizzle``: a box buffer's ``offset -> offset``;
    ``grouped``: C is one matrix whatever the tile's group (a grouped GEMM)."""

    store: object
    out: str
    staging: int
    consumer_bytes: int
    boxes: int
    box_pairs: int
    box_elems: int
    thr: object
    pair: object
    swizzle: object
    grouped: bool = False

    @property
    def elem_bytes(self):
        return self.store.elem_bytes

    @property
    def bn(self):
        return self.boxes * self.store.box[0]

    @property
    def box(self):
        """The TMA box of C: (columns, rows)."""
        return self.store.box

    @property
    def buffers(self):
        """Box buffers a consumer warpgroup stages through."""
        return self.consumer_bytes // (self.box_elems * self.elem_bytes)

    @property
    def smem(self):
        """The staging layout of a consumer's slice: ``(64, BN) -> offset``, swizzled."""
        from layoutalg import tile_to_shape
        from mma_atoms.gmma_smem import gmma_smem_atom

        return tile_to_shape(gmma_smem_atom(self.out, "K", 128), (64, self.bn))

    def check(self, threads=range(128)):
        """Raise unless register pair ``P`` of each thread in ``threads`` is staged where the
        staging layout puts its (m, n): box ``P // box_pairs``, at ``swizzle(thr(t) +
        pair(P) - box * box_elems)`` of that box's buffer."""
        clay, smem = _clayout(self.bn), self.smem
        for t in threads:
            for q in range(self.pairs):
                j = q // self.box_pairs
                want = smem(clay(t, 2 * q))
                got = self.swizzle(self.thr(t) + self.pair(q) - j * self.box_elems) + j * self.box_elems
                if got != want:
                    raise ValueError(f"TmaStoreEpilogue: C staging offset of thread {t}, pair {q}: {got} != {want}")

    @property
    def pairs(self):
        return self.boxes * self.box_pairs

    @property
    def cvt(self):
        """Two float32 to a packed pair of the output type."""
        from .. import intrinsics

        return getattr(intrinsics, f"cvt_{self.out}x2_f32")

    @device
    def prepare(self, p):
        """The map of C, visible to the TMA unit (by the warpgroup's leader, which stores)."""
        if (cuda.threadIdx.x & 127) == 0:
            self.store.acquire(p.tmap_c)

    @device
    def pack(self, accs, alpha, packed):
        """``alpha * accs`` (float32) converted into pairs of the output type ``packed`` (uint32)."""
        if alpha == 1:                 # the usual case: no multiplies
            for q in range(self.pairs):
                packed[q] = self.cvt(accs[2 * q], accs[2 * q + 1])
        else:
            for q in range(self.pairs):
                packed[q] = self.cvt(alpha * accs[2 * q], alpha * accs[2 * q + 1])

    @device
    def store_box(self, p, packed, work, c, j, nbox):
        """Box ``j`` of consumer ``c``'s slice of the tile of ``work`` (rows ``m0 + 64c``,
        columns ``n0 + j * box columns`` of matrix ``l``) from ``packed``, through buffer
        ``nbox & 1`` (``nbox``: the boxes this consumer stored before). Returns ``nbox + 1``."""
        wtid = cuda.threadIdx.x & 127
        buf = smem_base() + self.staging + c * self.consumer_bytes
        if self.boxes % 2 == 0:        # consecutive boxes of a slice alternate
            buf += (j & 1) * self.box_elems * self.elem_bytes
        else:
            buf += (nbox & 1) * self.box_elems * self.elem_bytes
        t = self.thr(wtid)
        for q in range(self.box_pairs):
            o = self.swizzle(t + self.pair(self.box_pairs * j + q) - j * self.box_elems)
            if self.elem_bytes == 1:   # an 8-bit C: a pair is 16 bits
                st_shared_b16(buf + o, packed[self.box_pairs * j + q])
            else:
                st_shared_b32(buf + o * self.elem_bytes, packed[self.box_pairs * j + q])
        fence_proxy_async()            # the staged box is visible to the TMA unit
        if wtid == 0:                  # the store before has read the other buffer, which comes next
            bulk_wait_group_read(0)
        named_barrier_sync(1 + c, 128)
        if wtid == 0:                  # TMA clips rows >= M and columns >= N
            lc = work.l
            if self.grouped:           # the groups' rows are rows of one C
                lc = 0
            self.store.store(p.tmap_c, buf, work.m0 + 64 * c, work.n0 + self.store.box[0] * j, lc)
        return nbox + 1

    @device
    def store_tile(self, p, acc, accs, work, c, nbox, alpha):
        """The whole slice of the tile of ``work`` from ``alpha * accs`` (``acc``: the same as
        a tuple, unused); returns the boxes stored so far."""
        packed = cuda.local.array(self.pairs, uint32)
        self.pack(accs, alpha, packed)
        for j in range(self.boxes):
            nbox = self.store_box(p, packed, work, c, j, nbox)
        return nbox

    @device
    def drain(self):
        """Before the CTA exits: its stores have completed."""
        if (cuda.threadIdx.x & 127) == 0:
            bulk_wait_group(0)


@device_object
@dataclass(frozen=True)
class RegisterEpilogue:
    """``out``: "f16", "bf16", "f32", "e4m3" or "e5m2"; ``bm x bn``: the CTA tile; ``thr_row``/``thr_col``:
    ``(T128) -> m`` and ``-> n`` of ``CLayout_64xN``'s thread mode, ``pair_row``/``pair_col``:
    ``(P) -> m``, ``-> n`` of register pair ``P`` (registers ``2P``, ``2P+1``); ``paired``:
    a pair of columns goes out as one store (C's row stride even, its address aligned to two
    elements), else element by element (a C of any row stride)."""

    out: str
    bm: int
    bn: int
    acc_regs: int
    thr_row: object
    thr_col: object
    pair_row: object
    pair_col: object
    paired: bool = True

    @property
    def elem_bytes(self):
        return 4 if self.out == "f32" else 1 if self.fp8 else 2

    @property
    def f32(self):
        return self.out == "f32"

    @property
    def fp8(self):
        return self.out in ("e4m3", "e5m2")

    @property
    def bf16(self):
        return self.out == "bf16"

    @property
    def cvt(self):
        from .. import intrinsics

        return getattr(intrinsics, f"cvt_{self.out}x2_f32") if not self.f32 else None

    @device
    def prepare(self, p):
        """Nothing to prepare (the TMA epilogue's counterpart acquires its tensor map)."""
        pass

    @device
    def drain(self):
        """Nothing in flight at the kernel's end."""
        pass

    @device
    def load(self, addr):
        """The element of C at ``addr``, as float32 (an 8-bit float C is never read: its
        GEMMs have ``beta == 0``, which the host checks)."""
        if self.fp8:
            return float32(0.0)
        if self.f32:
            return u32_as_f32(ld_global_b32(addr))
        if self.bf16:
            return u32_as_f32(uint32(ld_global_b16(addr)) << 16)
        return unpack_f16x2_f32(ld_global_b16(addr))[0]

    @device
    def store_pair(self, addr, v0, v1):
        if not self.paired:
            self.store_one(addr, v0)
            self.store_one(addr + self.elem_bytes, v1)
        elif self.f32:
            st_global_v2_b32(addr, float32(v0), float32(v1))
        elif self.fp8:
            st_global_b16(addr, self.cvt(v0, v1))
        else:
            st_global_b32(addr, self.cvt(v0, v1))

    @device
    def store_one(self, addr, v):
        if self.f32:
            st_global_b32(addr, float32(v))
        elif self.fp8:
            st_global_b8(addr, self.cvt(v, v))
        else:
            st_global_b16(addr, self.cvt(v, v))

    @device
    def store_packed(self, p, packed, work, c):
        """Consumer ``c``'s slice of the tile of ``work`` from ``packed`` (a 16-bit C's pairs of
        columns, as :meth:`TmaStoreEpilogue.pack` packs them: the first in the low half), rows
        below ``work.rows`` and ``p.M``, columns below ``p.N``; beta 0. For a grouped GEMM's tile
        that its group's end cuts: packed first, the accumulators are free during the stores."""
        wtid = cuda.threadIdx.x & 127
        c_row = work.m0 + 64 * c + self.thr_row(wtid)
        c_col = work.n0 + self.thr_col(wtid)
        eb = self.elem_bytes
        cl = p.C + int64(work.l) * p.scl * eb
        rows = min(p.M, work.rows)
        for q in range(self.acc_regs // 2):
            row = c_row + self.pair_row(q)
            col = c_col + self.pair_col(q)
            if row < rows:
                addr = cl + (int64(row) * p.scm + col) * eb
                if col + 1 < p.N and self.paired:
                    st_global_b32(addr, packed[q])
                else:
                    if col < p.N:
                        st_global_b16(addr, packed[q])
                    if col + 1 < p.N:
                        st_global_b16(addr + eb, packed[q] >> 16)

    @device
    def store_tile(self, p, acc, accs, work, c, nbox, alpha):
        """``C = alpha * acc + beta * C`` for consumer ``c``'s slice of the tile of ``work``
        (its corner ``(m0, n0)`` in matrix ``l`` of C, ``p.scl`` elements apart, rows below
        ``work.rows`` and ``p.M``; ``accs``: the
        accumulators as an array, read with constant indices where the tile is inside C; at
        its edges the loop's branches keep it rolled, and the tuple ``acc`` is indexed at run
        time instead, which keeps it in registers); returns ``nbox`` (as the TMA epilogue's,
        which counts its boxes)."""
        wtid = cuda.threadIdx.x & 127
        m0, n0 = work.m0, work.n0
        c_row = m0 + 64 * c + self.thr_row(wtid)
        c_col = n0 + self.thr_col(wtid)
        eb = self.elem_bytes
        cl = p.C + int64(work.l) * p.scl * eb                                # matrix l of C
        rows = min(p.M, work.rows)                                           # a group's end (grouped GEMMs)
        if m0 + self.bm <= rows and n0 + self.bn <= p.N and p.beta == 0:     # an interior tile: stores only
            base = cl + (int64(c_row) * p.scm + c_col) * eb
            for q in range(self.acc_regs // 2):
                addr = base + (int64(self.pair_row(q)) * p.scm + self.pair_col(q)) * eb
                self.store_pair(addr, alpha * accs[2 * q], alpha * accs[2 * q + 1])
        else:                                                                # an edge tile or beta != 0
            for q in range(self.acc_regs // 2):
                row = c_row + self.pair_row(q)
                col = c_col + self.pair_col(q)
                if row < rows:
                    addr = cl + (int64(row) * p.scm + col) * eb
                    v0 = alpha * acc[2 * q]
                    v1 = alpha * acc[2 * q + 1]
                    if col + 1 < p.N:
                        if p.beta != 0:
                            v0 += p.beta * self.load(addr)
                            v1 += p.beta * self.load(addr + eb)
                        self.store_pair(addr, v0, v1)
                    elif col < p.N:
                        if p.beta != 0:
                            v0 += p.beta * self.load(addr)
                        self.store_one(addr, v0)
        return nbox


def make_output_scale(bm, bn):
    """The amax and output scale of an 8-bit float C, for a ``bm x bn`` tile: where in C each
    accumulator pair of ``CLayout_64xN`` lies (the register epilogue's layouts)."""
    return OutputScale(make_register_epilogue("f32", bm, bn))


@device_object
@dataclass(frozen=True)
class OutputScale:
    """An 8-bit float output, as cuBLASLt's ``D = scale_D * (alpha * A @ B)`` with ``amax_D``:
    ``at``, a :class:`RegisterEpilogue` of the tile, says where each accumulator lies in C
    (its ``(T128) -> m``, ``-> n`` and ``(P) -> m``, ``-> n``). :meth:`apply` runs after any
    fused operation and before the store."""

    at: object

    @device
    def scale(self, p):
        """The output scale: ``p.scale_d`` times the float32 at ``p.scale_d_at`` (0: none),
        read by the kernel (graph-safe, as :func:`epilogue_alpha`)."""
        s = p.scale_d
        if p.scale_d_at != 0:
            s *= u32_as_f32(ld_global_b32(p.scale_d_at))
        return s

    @device
    def apply(self, p, accs, work, c, alpha, amax):
        """``accs = scale * (alpha * accs)``; returns the running maximum ``amax`` of the
        thread's ``|alpha * acc|`` inside C (rows below ``p.M`` and ``work.rows``, columns below
        ``p.N``) with this tile's, as ``|alpha|`` times the largest ``|acc|``: one maximum an
        element where the tile is inside C, predicated pair by pair at its edges (with
        ``p.amax`` 0, none: ``amax`` unchanged)."""
        f = alpha * self.scale(p)
        at = self.at
        if p.amax != 0:
            m = float32(0.0)
            if work.m0 + at.bm <= min(p.M, work.rows) and work.n0 + at.bn <= p.N:   # an interior tile
                for i in range(at.acc_regs):
                    m = max(m, abs(accs[i]))
            else:
                m = self.edge_max(p, accs, work, c)
            amax = max(amax, abs(alpha) * m)
        for i in range(at.acc_regs):
            accs[i] = f * accs[i]
        return amax

    @device
    def edge_max(self, p, accs, work, c):
        """The largest ``|acc|`` of the thread's elements inside C, in a tile at C's edges."""
        at = self.at
        wtid = cuda.threadIdx.x & 127
        c_row = work.m0 + 64 * c + at.thr_row(wtid)
        c_col = work.n0 + at.thr_col(wtid)
        rows = min(p.M, work.rows)
        m = float32(0.0)
        for q in range(at.acc_regs // 2):
            row = c_row + at.pair_row(q)
            col = c_col + at.pair_col(q)
            if row < rows and col < p.N:
                m = max(m, abs(accs[2 * q]))
            if row < rows and col + 1 < p.N:
                m = max(m, abs(accs[2 * q + 1]))
        return m

    @device
    def publish(self, p, m):
        """``m``, the thread's maximum over its tiles, into ``p.amax`` (0: none) once the
        warp's tiles are done: the warp's maximum by butterfly shuffles, then one atomic
        maximum of its bits (non-negative float32 bits order as their values): a launch makes
        one atomic a consumer warp, not one a tile."""
        if p.amax != 0:
            for i in range(5):                  # lanes 16, 8, 4, 2, 1 apart
                m = max(m, cuda.shfl_xor_sync(0xFFFFFFFF, m, 16 >> i))
            if (cuda.threadIdx.x & 31) == 0:
                red_global_max_u32(p.amax, f32_as_u32(float32(m)))


#: ``BiasActivation.act`` codes: no activation, then :data:`codegen.config.ACTIVATIONS` in order.
ACTIVATION_CODES = {None: 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}


def make_bias_activation(bn, activation=None, bias=None, rows=False):
    """The fused epilogue operation of a 64 x ``bn`` slice of ``CLayout_64xN``:
    ``activation(alpha * acc + bias[n])`` (``bias``: the bias's element type, or None), or
    with ``rows``, ``activation(alpha * acc + bias[m])``."""
    if activation not in ACTIVATION_CODES:
        raise ValueError(f"make_bias_activation: activation {activation!r} is not one of "
                         f"{', '.join(str(k) for k in ACTIVATION_CODES if k)}")
    if bias not in (None, "f16", "bf16", "f32"):
        raise ValueError(f"make_bias_activation: bias {bias!r} is not f16, bf16 or f32")
    at = make_register_epilogue("f32", 64, bn)          # where CLayout_64xN's registers lie in C
    bits = {None: 0, "f16": 16, "bf16": 16, "f32": 32}[bias]
    offsets = sorted({at.pair_row(q) for q in range(bn // 4)})                                # a thread's rows
    if len(offsets) != 2 or offsets[0] != 0:
        raise ValueError(f"make_bias_activation: a thread's register pairs lie in rows {offsets}, not two")
    return BiasActivation(ACTIVATION_CODES[activation], bits, bias == "bf16", bn // 4, at.thr_col, at.pair_col,
                          bool(rows and bias), at.thr_row, at.pair_row, offsets[1])


@device_object
@dataclass(frozen=True)
class BiasActivation:
    """``accs = act(alpha * accs + bias[n])`` on a consumer's ``CLayout_64xN`` accumulators,
    before the epilogue stores them (with ``alpha`` 1): ``act`` (:data:`ACTIVATION_CODES`),
    ``bias_bits`` (0: no bias; 16 or 32), ``bias_bf16``; ``pairs`` register pairs a thread
    (registers ``2P``, ``2P+1``: adjacent columns); ``thr_col``: ``(T128) -> n``,
    ``pair_col``: ``(P) -> n``; ``rows``: a bias per row, ``bias[m]``, with ``thr_row``:
    ``(T128) -> m`` and ``pair_row``: ``(P) -> m`` (a pair's two columns share it), whose
    values are 0 and ``row_hi``: a thread's two rows, whose biases it loads once a tile."""

    act: int
    bias_bits: int
    bias_bf16: bool
    pairs: int
    thr_col: object
    pair_col: object
    rows: bool = False
    thr_row: object = None
    pair_row: object = None
    row_hi: int = 8

    @device
    def bias_at(self, p, col, extent):
        """``bias[col]`` as float32, 0 past ``extent``."""
        if col >= extent:
            return float32(0.0)
        if self.bias_bits == 32:
            return u32_as_f32(ld_global_b32(p.bias + int64(col) * 4))
        if self.bias_bf16:
            return u32_as_f32(uint32(ld_global_b16(p.bias + int64(col) * 2)) << 16)
        return unpack_f16x2_f32(ld_global_b16(p.bias + int64(col) * 2))[0]

    @device
    def activate(self, x):
        """The activation of one value, a few instructions each (the loop over a thread's
        values must stay small enough for NVVM to unroll, which keeps them in registers):
        tanh and 2**x on the special-function unit (``tanh.approx``: relative error about
        2**-11), erf by Abramowitz and Stegun's 7.1.26 (absolute error under 1.5e-7)."""
        if self.act == 1:
            return max(x, float32(0.0))
        if self.act == 2:                                      # x Phi(x) = x (1 + erf(x / sqrt 2)) / 2
            z = abs(x) * float32(0.7071067811865476)
            t = float32(1.0) / (float32(1.0) + float32(0.3275911) * z)
            poly = t * (float32(0.254829592) + t * (float32(-0.284496736) + t * (float32(1.421413741)
                        + t * (float32(-1.453152027) + t * float32(1.061405429)))))
            e = float32(1.0) - poly * ex2_approx_f32(-z * z * float32(1.4426950408889634))   # erf(|x| / sqrt 2)
            return float32(0.5) * x * (float32(1.0) + (e if x >= float32(0.0) else -e))
        if self.act == 3:                                      # the tanh approximation of GELU
            u = float32(0.7978845608028654) * (x + float32(0.044715) * x * x * x)
            return float32(0.5) * x * (float32(1.0) + tanh_approx_f32(u))
        if self.act == 4:                                      # x sigmoid(x) = x (1 + tanh(x / 2)) / 2
            return float32(0.5) * x * (float32(1.0) + tanh_approx_f32(float32(0.5) * x))
        return x

    @device
    def pair(self, p, accs, rb, c0, q, alpha):
        """Register pair ``q`` (columns ``c0 + pair_col(q)`` and the next; ``rb``: the biases
        of the thread's two rows, with a bias per row)."""
        b0 = float32(0.0)
        b1 = float32(0.0)
        if self.rows:
            b0 = rb[0]
            if self.pair_row(q) == self.row_hi:
                b0 = rb[1]
            b1 = b0
        elif self.bias_bits:
            col = c0 + self.pair_col(q)
            b0 = self.bias_at(p, col, p.N)
            b1 = self.bias_at(p, col + 1, p.N)
        accs[2 * q] = self.activate(alpha * accs[2 * q] + b0)
        accs[2 * q + 1] = self.activate(alpha * accs[2 * q + 1] + b1)

    @device
    def apply(self, p, accs, work, c, alpha):
        """Consumer ``c``'s accumulators of the tile of ``work`` (its corner ``(m0, n0)``), in
        place: eight loops of an eighth of the pairs each, which NVVM unrolls where it leaves
        one loop over all of them rolled (and the accumulators in local memory) once the
        activation is erf's."""
        wtid = cuda.threadIdx.x & 127
        c0 = work.n0 + self.thr_col(wtid)
        rb = (float32(0.0), float32(0.0))
        if self.rows:                   # the biases of the thread's two rows
            r0 = work.m0 + 64 * c + self.thr_row(wtid)
            rb = (self.bias_at(p, r0, p.M), self.bias_at(p, r0 + self.row_hi, p.M))
        e = self.pairs // 8
        for q in range(e):
            self.pair(p, accs, rb, c0, q, alpha)
        for q in range(e):
            self.pair(p, accs, rb, c0, q + e, alpha)
        for q in range(e):
            self.pair(p, accs, rb, c0, q + 2 * e, alpha)
        for q in range(e):
            self.pair(p, accs, rb, c0, q + 3 * e, alpha)
        for q in range(e):
            self.pair(p, accs, rb, c0, q + 4 * e, alpha)
        for q in range(e):
            self.pair(p, accs, rb, c0, q + 5 * e, alpha)
        for q in range(e):
            self.pair(p, accs, rb, c0, q + 6 * e, alpha)
        for q in range(e):
            self.pair(p, accs, rb, c0, q + 7 * e, alpha)


def make_elementwise_epilogue(bn):
    """The user's element-wise epilogue over a 64 x ``bn`` slice of ``CLayout_64xN``: the
    rows and columns of the thread's part and of each register pair, as
    :func:`make_register_epilogue` finds them."""
    reg = make_register_epilogue("f32", 64, bn)
    return ElementwiseEpilogue(bn // 4, reg.thr_row, reg.thr_col, reg.pair_row, reg.pair_col)


@device_object
@dataclass(frozen=True)
class ElementwiseEpilogue:
    """``accs[v] = fn(alpha * accs[v], m, n, tensors)`` at the position ``(m, n)`` of C of
    each accumulator of a consumer's ``CLayout_64xN`` slice (``fn``: a device function that
    calls the user's ``epilogue=`` with the tensors of the tuple ``tensors``), before the epilogue
    stores them with ``alpha`` 1. ``pairs`` register pairs a thread (registers ``2P``,
    ``2P+1``: adjacent columns); ``thr_row``/``thr_col``: ``(T128) -> m``, ``-> n``;
    ``pair_row``/``pair_col``: ``(P) -> m``, ``-> n``. ``fn`` sees the positions inside C
    only (``m < p.M``, ``n < p.N``), so it may index tensors of C's extents."""

    pairs: int
    thr_row: object
    thr_col: object
    pair_row: object
    pair_col: object

    @device
    def pair(self, p, fn, tensors, accs, m0, n0, q, alpha):
        """Register pair ``q``: row ``m0 + pair_row(q)``, columns ``n0 + pair_col(q)`` and the
        next; ``fn`` runs only where they lie inside C (the stores skip the others)."""
        m = m0 + self.pair_row(q)
        n = n0 + self.pair_col(q)
        if m < p.M:
            if n < p.N:
                accs[2 * q] = float32(fn(alpha * accs[2 * q], m, n, tensors))
            if n + 1 < p.N:
                accs[2 * q + 1] = float32(fn(alpha * accs[2 * q + 1], m, n + 1, tensors))

    @device
    def apply(self, p, fn, tensors, accs, work, c, alpha):
        """Consumer ``c``'s accumulators of the tile of ``work``, in place, in eight loops of an
        eighth of the pairs each, as :meth:`BiasActivation.apply`: NVVM unrolls them and the
        accumulators stay in registers, where the same loops nested (``for s in range(8)``)
        put them in a 512-byte stack frame (sm_90a, bf16 128x256 tile, a GELU-and-residual
        function)."""
        wtid = cuda.threadIdx.x & 127
        m0 = int64(work.m0 + 64 * c + self.thr_row(wtid))
        n0 = int64(work.n0 + self.thr_col(wtid))
        e = self.pairs // 8
        for q in range(e):
            self.pair(p, fn, tensors, accs, m0, n0, q, alpha)
        for q in range(e):
            self.pair(p, fn, tensors, accs, m0, n0, q + e, alpha)
        for q in range(e):
            self.pair(p, fn, tensors, accs, m0, n0, q + 2 * e, alpha)
        for q in range(e):
            self.pair(p, fn, tensors, accs, m0, n0, q + 3 * e, alpha)
        for q in range(e):
            self.pair(p, fn, tensors, accs, m0, n0, q + 4 * e, alpha)
        for q in range(e):
            self.pair(p, fn, tensors, accs, m0, n0, q + 5 * e, alpha)
        for q in range(e):
            self.pair(p, fn, tensors, accs, m0, n0, q + 6 * e, alpha)
        for q in range(e):
            self.pair(p, fn, tensors, accs, m0, n0, q + 7 * e, alpha)
