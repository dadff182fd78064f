"""Copies of a pipeline stage by the producer warpgroup's threads: the loads for an operand
that TMA cannot describe.

TMA reads a matrix whose address and row stride are multiples of 16 bytes. A row-major
``(K, N)`` B with an odd ``N`` (a GPT-2 LM head's 50257 columns, say) has rows that start
at every 2-byte boundary, and the Hopper GEMM would otherwise leave wgmma for it. A
:class:`GmemStageCopy` fills the same swizzled stage (:func:`codegen.cute.gmma_stage`) that
TMA boxes would, so the MMAs, descriptors and consumers do not change:

* the stage is cut into 16-byte chunks along the operand's contiguous dimension, each
  the stage layout's image of 16 bytes of one line (a row of a K-major operand, a k of an
  MN-major one; the 128-byte swizzle moves whole 16-byte chunks);
* each of the 128 producer threads copies a run of ``run`` consecutive chunks of a line
  (:attr:`GmemStageCopy.line_threads` threads a line): it reads the ``run + 1`` aligned 16-byte words
  that cover the run (``ld.global.nc.v4``), all issued before any is used, and shifts them
  into place by the line's offset in its 16-byte word (a funnel shift, the same for the
  whole run), then stores the chunks (``st.shared.v4``);
* a run whose words would leave the matrix's bytes, or (K-major) that runs past the line's
  end, takes a slower path that checks each chunk: one inside the matrix is read as above,
  one at its edges element by element, each element outside the extents a zero. So no read
  leaves the matrix's bytes. (An MN-major run may read past its line's end: those elements
  feed only rows of the stage past the operand's rows, whose results are never stored.)

The pipeline then needs every producer thread's arrival on the stage's full barrier after
a proxy fence (:meth:`codegen.cute.TmaPipeline.producer_commit`): wgmma reads shared memory
through the async proxy, and these stores are generic ones.

The host gives the kernel, in place of a tensor map, the operand's *copy descriptor*: five
int64 words (address, row stride, batch stride, contiguous extent, other extent) at a
device address (:meth:`GmemStageCopy.tensor_map`), so a kernel takes the same arguments
whichever way it loads.

>>> from codegen.cute import gmma_stage
>>> cp = make_gmem_copy("B", "f16", "MN", gmma_stage("f16", "MN", 128, 64))
>>> cp.chunk, cp.run, cp.lines, cp.line_chunks, cp.passes
(8, 8, 64, 16, 1)
>>> [cp.chunk_coords(0, t, i) for t, i in ((0, 0), (0, 1), (1, 0), (127, 7))]
[(0, 0), (8, 0), (64, 0), (120, 63)]
"""

from __future__ import annotations

from dataclasses import dataclass

from .objects import device, device_function, device_object, late_import

(cuda, int64, uint32, uint64) = late_import("numba", "cuda", "int64", "uint32", "uint64")
(ld_global_b16, ld_global_b32, ld_global_nc_b64, ld_global_nc_v4_b32, st_shared_v4_b32) = late_import(
    "codegen.intrinsics", "ld_global_b16", "ld_global_b32", "ld_global_nc_b64", "ld_global_nc_v4_b32",
    "st_shared_v4_b32")

__all__ = ["GmemStageCopy", "make_gmem_copy", "copy_ok", "DESC_WORDS"]

#: int64 words of a copy descriptor: address, row stride, batch stride, contiguous extent,
#: other extent (strides and extents in elements).
DESC_WORDS = 5

#: Threads of the producer warpgroup that copy.
THREADS = 128

#: The most chunks of a run (a run of R chunks holds 4 (R + 1) words in registers).
RUN = 8


def copy_ok(major, shape, strides, ptr, ebytes):
    """Whether a :class:`GmemStageCopy` can read an operand ``(rows, K)`` with element
    ``strides`` at ``ptr``: 2- or 4-byte elements at an address aligned to one, unit stride
    along the contiguous dimension (K for "K"-major), a positive stride along the other."""
    cont, other = (1, 0) if major == "K" else (0, 1)
    if ebytes not in (2, 4) or ptr % ebytes:
        return False
    if strides[cont] != 1 and shape[cont] != 1:
        return False
    return strides[other] > 0 or shape[other] == 1


def make_gmem_copy(name, dtype, major, smem):
    """The producer warpgroup's copy into one stage ``smem`` ``(rows, BK) -> element offset``
    (a GMMA shared layout, :func:`codegen.cute.gmma_stage`) of an operand whose global
    layout is ``major`` ("K": rows K-contiguous; "MN": K rows of contiguous rows)."""
    from layoutalg import size
    from layoutalg.element_types import element_type

    eb = element_type(dtype, "make_gmem_copy").bits // 8
    if eb not in (2, 4):
        raise ValueError(f"make_gmem_copy: {name} of {dtype}: copies take 2- or 4-byte elements")
    if major not in ("K", "MN"):
        raise ValueError(f"make_gmem_copy: major must be 'K' or 'MN', got {major!r}")
    rows, bk = size(smem.shape[0]), size(smem.shape[1])
    chunk = 16 // eb
    cont, lines = (bk, rows) if major == "K" else (rows, bk)
    line_chunks = cont // chunk
    total = line_chunks * lines
    run = min(RUN, line_chunks, total // THREADS) if total >= THREADS else 0
    if cont % chunk or not run or line_chunks % run or THREADS % (line_chunks // run) \
            or lines % (THREADS // (line_chunks // run)):
        raise ValueError(f"make_gmem_copy: {name}'s stage {rows}x{bk} does not cut into runs of 16-byte chunks, "
                         f"{THREADS} threads a pass")
    return GmemStageCopy(name, eb, major, smem, run)


@device_object
@dataclass(frozen=True)
class GmemStageCopy:
    """One operand's stage copied by the producer warpgroup. ``smem``: the stage layout
    ``(rows, BK) -> element offset`` (swizzled), evaluated in the kernel at each chunk's
    corner; ``run``: consecutive chunks of a line a thread copies in each pass."""

    name: str
    elem_bytes: int
    major: str
    smem: object
    run: int

    #: Not loaded by TMA: the producer warpgroup's threads copy it.
    tma = False

    @property
    def k_major(self):
        return self.major == "K"

    @property
    def rows(self):
        from layoutalg import size

        return size(self.smem.shape[0])

    @property
    def bk(self):
        from layoutalg import size

        return size(self.smem.shape[1])

    @property
    def chunk(self):
        """Elements of a 16-byte chunk."""
        return 16 // self.elem_bytes

    @property
    def line_chunks(self):
        """Chunks of a line (along the contiguous dimension) of the stage."""
        return (self.bk if self.k_major else self.rows) // self.chunk

    @property
    def lines(self):
        """Lines of the stage (its extent along the other dimension)."""
        return self.rows if self.k_major else self.bk

    @property
    def line_threads(self):
        """Threads that share a line, a run each."""
        return self.line_chunks // self.run

    @property
    def pass_lines(self):
        """Lines the 128 threads copy in one pass."""
        return THREADS // self.line_threads

    @property
    def passes(self):
        return self.lines // self.pass_lines

    @property
    def words(self):
        """Registers of a run: the ``run + 1`` aligned 16-byte words that cover it."""
        return 4 * (self.run + 1)

    @property
    def run_elems(self):
        return self.run * self.chunk

    def chunk_coords(self, ps, t, i):
        """``(row, k)`` in the stage of the first element of chunk ``i`` of thread ``t``'s run
        in pass ``ps`` (host twin of the kernel's arithmetic)."""
        line = ps * self.pass_lines + t // self.line_threads
        c = ((t % self.line_threads) * self.run + i) * self.chunk
        return (line, c) if self.k_major else (c, line)

    # -- device ------------------------------------------------------------------------

    @device
    def acquire(self, desc):
        """Nothing to make visible (a tensor map's counterpart)."""
        pass

    @device
    def prefetch(self, desc):
        pass

    @property
    def buf_words(self):
        """Registers of a k-tile in flight (:meth:`fetch`): each pass's run and its shift."""
        return self.passes * (self.words + 1)

    @device
    def load(self, desc, dst, row0, k0, l, bar):
        """This thread's runs of the tile at ``(row0, k0)`` of matrix ``l`` of the batch into the
        stage at shared address ``dst`` (``bar``: unused, the caller commits the stage)."""
        blk = cuda.local.array(self.buf_words, uint32)
        self.fetch(desc, row0, k0, l, blk)
        self.store(blk, dst)

    @device
    def fetch(self, desc, row0, k0, l, blk):
        """Issue the loads of this thread's runs of the tile at ``(row0, k0)`` of matrix ``l``
        into the registers ``blk`` (:attr:`buf_words`), without waiting for them: a pass's
        ``run + 1`` aligned words, then the byte offset of the run in the first."""
        eb = self.elem_bytes
        ptr = int64(ld_global_nc_b64(desc))
        ld = int64(ld_global_nc_b64(desc + 8))
        cext = int64(ld_global_nc_b64(desc + 24))
        oext = int64(ld_global_nc_b64(desc + 32))
        start = ptr + l * int64(ld_global_nc_b64(desc + 16)) * eb
        end = start + ((oext - 1) * ld + cext) * eb
        t = cuda.threadIdx.x & (THREADS - 1)
        gc = (t % self.line_threads) * self.run_elems + (k0 if self.k_major else row0)
        for ps in range(self.passes):
            at = ps * (self.words + 1)
            go = ps * self.pass_lines + t // self.line_threads + (row0 if self.k_major else k0)
            addr = start + (go * ld + gc) * eb
            a = addr & -16
            # whole words where they lie inside the matrix's bytes and the run inside its line,
            # or, MN-major, starting inside it: the elements past the line's end then feed only
            # rows of the tile past the operand's rows (columns of C past N), never stored
            inside = gc + self.run_elems <= cext or (not self.k_major and gc < cext)
            if go < oext and inside and a >= start and a + 16 * (self.run + 1) <= end:
                for i in range(self.run + 1):
                    v = ld_global_nc_v4_b32(a + 16 * i)
                    for j in range(4):
                        blk[at + 4 * i + j] = v[j]
                blk[at + self.words] = uint32(addr & 15)
            else:                                                # an edge: chunk by chunk, in place
                for i in range(self.run):
                    self.fetch_chunk(blk, at + 4 * i, start, end, addr + 16 * i, gc + i * self.chunk, go, cext, oext)
                for j in range(4):
                    blk[at + 4 * self.run + j] = uint32(0)
                blk[at + self.words] = uint32(0)

    @device
    def store(self, blk, dst):
        """The runs in ``blk`` (:meth:`fetch`), shifted into place, to the stage at shared
        address ``dst``: each chunk where the stage layout puts it."""
        eb = self.elem_bytes
        t = cuda.threadIdx.x & (THREADS - 1)
        for ps in range(self.passes):
            at = ps * (self.words + 1)
            line = ps * self.pass_lines + t // self.line_threads
            s = blk[at + self.words]
            for i in range(self.run):
                lo, hi = _shifted(blk, at + 4 * i, s)
                c = ((t % self.line_threads) * self.run + i) * self.chunk
                if self.k_major:
                    off = self.smem(line, c)
                else:
                    off = self.smem(c, line)
                st_shared_v4_b32(dst + off * eb, uint32(lo & uint64(0xFFFFFFFF)), uint32(lo >> uint64(32)),
                                 uint32(hi & uint64(0xFFFFFFFF)), uint32(hi >> uint64(32)))

    @device
    def fetch_chunk(self, blk, at, start, end, addr, gc, go, cext, oext):
        """The chunk at global address ``addr`` (``(gc, go)`` along the contiguous and the
        other dimension), in place, into ``blk[at:at + 4]``: from the aligned words that
        cover it where they lie inside the matrix, else element by element (zeros outside
        the extents)."""
        eb = self.elem_bytes
        a = addr & -16
        if go < oext and gc + self.chunk <= cext and a >= start and a + 32 <= end:
            w = cuda.local.array(8, uint32)
            v = ld_global_nc_v4_b32(a)
            u = ld_global_nc_v4_b32(a + 16)
            for j in range(4):
                w[j] = v[j]
                w[4 + j] = u[j]
            lo, hi = _shifted(w, 0, uint32(addr & 15))
            blk[at] = uint32(lo & uint64(0xFFFFFFFF))
            blk[at + 1] = uint32(lo >> uint64(32))
            blk[at + 2] = uint32(hi & uint64(0xFFFFFFFF))
            blk[at + 3] = uint32(hi >> uint64(32))
            return
        for j in range(4):
            blk[at + j] = uint32(0)
        if go < oext:
            for i in range(self.chunk):
                if gc + i < cext:
                    if eb == 2:
                        blk[at + i // 2] |= uint32(ld_global_b16(addr + 2 * i)) << uint32(16 * (i % 2))
                    else:
                        blk[at + i] = ld_global_b32(addr + 4 * i)

    def tensor_map(self, ptr, shape, strides, simulated=False, batch=(1, 0)):
        """The copy descriptor of an operand ``(rows, K)`` with element ``strides`` at
        ``ptr``, ``batch`` ``(L, element stride)`` matrices: in place of a tensor map, the
        :data:`DESC_WORDS` int64 words the kernel reads (128 bytes, as a map; in the
        simulator a registered array and its address)."""
        import numpy as np

        rows, k = shape
        if self.k_major:
            words = (ptr, strides[0], batch[1], k, rows)
        else:
            words = (ptr, strides[1], batch[1], rows, k)
        arr = np.zeros(16, dtype=np.int64)
        arr[:DESC_WORDS] = words
        if simulated:
            from ..intrinsics.sim import register_global

            return arr, register_global(arr)
        return arr.tobytes()


@device_function
def _pair(w, at, k):
    """Words ``2k`` and ``2k + 1`` of ``w[at:at + 8]`` as one uint64 (lower address low)."""
    return uint64(w[at + 2 * k]) | (uint64(w[at + 2 * k + 1]) << uint64(32))


@device_function
def _shifted(w, at, s):
    """The 16 bytes at byte ``s`` (0 to 15) of the 32 in ``w[at:at + 8]`` (the last four
    words unread where ``s`` is 0), as two uint64: a
    funnel shift of the three 8-byte words that hold them. The words are read once each and
    chosen as values (a choice between array reads would become a read at a computed
    index, which keeps the array out of registers)."""
    x0, x1, x2, x3 = _pair(w, at, 0), _pair(w, at, 1), _pair(w, at, 2), _pair(w, at, 3)
    hi8 = (s >> 3) != 0
    lo = x1 if hi8 else x0
    mid = x2 if hi8 else x1
    top = x3 if hi8 else x2
    b = uint64(8 * (s & 7))
    inv = uint64(63) - b                   # (v << 1) << (63 - b): v << (64 - b), 0 where b == 0
    return (lo >> b) | ((mid << uint64(1)) << inv), (mid >> b) | ((top << uint64(1)) << inv)
