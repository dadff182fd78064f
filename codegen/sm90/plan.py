"""The Hopper GEMM plan: warpgroup MMA fed by TMA, derived from layouts.

A CTA has one producer warpgroup (one thread issues the TMA loads) and ``BM / 64``
consumer warpgroups, each computing a 64 x BN slice of the CTA tile with
``wgmma.mma_async`` m64nBNk(32 bytes of K).  Everything below comes from layouts:

* the shared-memory stage of each operand is CuTe's GMMA layout atom (128-byte swizzle)
  tiled to ``(rows, BK)``, K first for MN-major operands so that each TMA box is one
  contiguous block (:mod:`mma_atoms.gmma_smem`);
* the TMA box of each operand is one swizzle row wide (128 bytes along the contiguous
  dimension) and spans the stage along the other; the box offsets in the stage are the
  stage layout at the boxes' corners;
* the descriptor of each wgmma is read off the stage layout (:func:`gmma_desc`); its
  start address moves by the stage layout's offset of the next k-block and, for A, of the
  next consumer's 64 rows;
* the accumulators' (row, column) come from the atom's C layout (``CLayout_64xN``);
* for 16-bit outputs, each consumer stages its 64 x BN slice of C in shared memory in the
  same 128-byte swizzled atom (N playing K's part), tiled to ``(64, BN)``, and one TMA store
  per 64-column box writes it out; the thread's and each register pair's offsets in that
  staging buffer are the staging layout composed with the C layout's thread and value modes.

>>> from codegen import GemmConfig
>>> plan = make_wgmma_plan(GemmConfig.default("f16", arch=(9, 0)), "K", "MN")
>>> plan.a.desc, plan.b.desc
(GmmaDesc(layout_type=1, lbo=1, sbo=64), GmmaDesc(layout_type=1, lbo=512, sbo=64))
"""

from __future__ import annotations

from dataclasses import dataclass

from layoutalg import ComposedLayout, Layout, composition, make_identity_layout, size, tile_to_shape
from layoutalg.element_types import ElementType, element_type

from ..config import GemmConfig
from ..index import Index, coord_index, layout_index

__all__ = ["WgmmaOperand", "WgmmaStore", "WgmmaPlan", "make_wgmma_plan", "ACC_TYPES"]

ACC_TYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2")


@dataclass(frozen=True)
class WgmmaOperand:
    """One operand's stage, TMA boxes and descriptor.

    ``smem``: ``(rows, BK) -> element offset`` of one stage; ``box``: the TMA box (inner,
    outer) in elements; ``boxes``: per box, (stage byte offset, row offset, k offset) of its
    corner; ``desc``: the descriptor fields; ``kblock_bytes``: the start-address step per
    instruction along K; ``consumer_bytes``: per consumer (A only: its 64 or 128 rows);
    ``mblock_bytes``: per 64-row block of a consumer (A of 256-row tiles only).
    """

    name: str
    major: str
    rows: int
    swizzle_bytes: int        # of the stage's GMMA atom, and of the TMA box that fills it
    smem: object
    stage_bytes: int
    box: tuple
    boxes: tuple
    desc: object
    kblock_bytes: int
    consumer_bytes: int
    tnsp: int
    mblock_bytes: int = 0


@dataclass(frozen=True)
class WgmmaStore:
    """The TMA-store epilogue of one consumer: its 64 x BN slice of C, one 64 x (128 bytes)
    box at a time, staged in shared memory through two box buffers.

    ``smem``: ``(64, BN) -> element offset`` of the whole slice (the 128-byte swizzled atom
    tiled to it: box j is the j-th block of ``box_elems``); ``box``: the TMA box (columns,
    rows); ``thr_off``/``pair_off``: the unswizzled element offsets of the thread's part of
    ``CLayout_64xN`` and of register pair ``p``: pair ``p`` lies in box ``p // box_pairs``
    and is staged at ``swizzle(thr_off + pair_off - box * box_elems)`` of a box buffer;
    ``stage_bytes``: one consumer's two box buffers.
    """

    smem: object
    box: tuple
    boxes: int
    box_pairs: int
    box_elems: int
    thr_off: Index
    pair_off: Index
    swizzle: object
    buffers: int
    stage_bytes: int


@dataclass(frozen=True)
class WgmmaPlan:
    config: GemmConfig
    etype: ElementType
    out: ElementType
    a: WgmmaOperand
    b: WgmmaOperand
    atom: object              # the mma_atoms wgmma entry (SS)
    intrinsic: str
    instr_k: int              # K of one instruction
    kblocks: int              # instructions per k-tile
    consumers: int
    threads: int
    acc_regs: int             # accumulator registers per thread (N / 2)
    pair_row: Index           # row / column of accumulator pair p (registers 2p, 2p + 1)
    pair_col: Index
    thr_row: Index            # the thread's part (tid within the warpgroup)
    thr_col: Index
    smem_bytes: int           # stages + C staging + barriers and tickets + 1024 for alignment
    store: WgmmaStore = None  # the TMA-store epilogue (16-bit outputs), else None
    b_etype: ElementType = None  # B's type (A's unless mixed 8-bit floats)
    share: str = None         # the operand a cluster's two CTAs share ("B"; "A" in experiments), else None

    @property
    def operands(self):
        return (self.a, self.b)

    @property
    def mblocks(self):
        """64-row blocks of A a consumer multiplies (2 in a 256-row tile: two accumulators)."""
        return self.config.bm // 64 // self.consumers

    @property
    def cluster(self):
        """CTAs in a cluster (``config.cluster_m``): 2 share B, each loading half of it."""
        return self.config.cluster_m

    @property
    def split(self):
        """Whether the kernel splits K (``config.split_k > 1``): partial sums handed over."""
        return self.config.split_k > 1

    @property
    def part_bytes(self):
        """Bytes of one consumer's partial sums in the split-K workspace: (T128, V) f32."""
        return 128 * self.acc_regs * 4


def _operand(name, major, rows, bk, et, instr_k, consumers, halves=False, mblocks=1):
    from mma_atoms.gmma_smem import gmma_desc, gmma_smem_atom

    ebytes = et.bits // 8
    # K-major: one swizzle row holds the k-tile's BK elements (128, 64 or 32 bytes);
    # MN-major: 128-byte rows along MN
    sw = bk * ebytes if major == "K" else 128
    if sw not in (32, 64, 128):
        raise ValueError(f"wgmma plan: a K-major k-tile of {bk} {et.name} is {sw} bytes; it must be 32, 64 or 128")
    atom = gmma_smem_atom(et.name, major, sw)
    w = sw // ebytes                                         # elements per swizzle row
    if major == "K":
        smem = tile_to_shape(atom, (rows, bk))              # (rows,BK) -> offset
        box = (w, rows // 2 if halves else rows)            # (k, rows): halves for a cluster's two loads
        corners = [(r, 0) for r in range(0, rows, box[1])]
    else:
        if rows % w:
            raise ValueError(f"wgmma plan: {name} rows {rows} are not a multiple of {w}")
        smem = tile_to_shape(atom, (rows, bk), (1, 0))      # K first: each 128-byte column block is one box
        box = (w, bk)                                        # (rows, k)
        corners = [(r, 0) for r in range(0, rows, w)]
    inner = smem.inner if isinstance(smem, ComposedLayout) else smem
    boxes = tuple((inner(r, k) * ebytes, r, k) for r, k in corners)
    mn = 64 if name == "A" else rows
    desc = gmma_desc(smem, (mn, instr_k), major, et.name)
    kblock_bytes = inner(0, instr_k) * ebytes if bk > instr_k else 0    # one instruction per k-tile: no step
    consumer_bytes = inner(64 * mblocks, 0) * ebytes if name == "A" and rows > 64 else 0
    mblock_bytes = inner(64, 0) * ebytes if name == "A" and mblocks > 1 else 0
    return WgmmaOperand(name, major, rows, sw, smem, size(inner) * ebytes, box, boxes, desc, kblock_bytes,
                        consumer_bytes, 1 if major == "MN" else 0, mblock_bytes)


def make_wgmma_plan(cfg, a_major="K", b_major="K", _share="B"):
    """Derive the Hopper plan of ``cfg`` (``cfg.path == "wgmma"``). (``_share``, for
    experiments: the operand a cluster of two shares, "B" (vertically adjacent tiles, the
    kernel ``cluster_m`` names) or "A" (horizontally adjacent ones).)"""
    from mma_atoms import get
    from mma_atoms.mma_sm90 import clayout_64xn

    from ..atom_intrinsics import wgmma_input_name, wgmma_name

    if not isinstance(cfg, GemmConfig) or cfg.path != "wgmma":
        raise ValueError(f"make_wgmma_plan: expected a GemmConfig with path='wgmma', got {cfg!r}")
    et, etb = element_type(cfg.dtype), element_type(cfg.b_type)
    if et.name not in ACC_TYPES or etb.name not in ACC_TYPES:
        raise ValueError(f"make_wgmma_plan: no wgmma kernel for {et.name} x {etb.name}")
    if et.bits != 16 and "MN" in (a_major, b_major):
        raise ValueError(f"make_wgmma_plan: wgmma reads {et.name} operands K-major only; got A {a_major}-major, "
                         f"B {b_major}-major")
    instr_k = 32 // (et.bits // 8)                           # one instruction reads 32 bytes of K
    consumers = min(cfg.bm // 64, 2)
    mblocks = cfg.bm // 64 // consumers                      # 64-row blocks a consumer: 2 of a 256-row tile
    share = _share if cfg.cluster_m > 1 else None
    a = _operand("A", a_major, cfg.bm, cfg.bk, et, instr_k, consumers, halves=share == "A", mblocks=mblocks)
    b = _operand("B", b_major, cfg.bn, cfg.bk, etb, instr_k, consumers, halves=share == "B")
    if share:
        _check_halves(a if share == "A" else b)
    atom = get(_atom_name(cfg.bn, instr_k, et.name, etb.name))
    if atom.shape_mnk != (64, cfg.bn, instr_k) or (atom.a_type, atom.b_type) != (et.name, etb.name):
        raise ValueError(f"wgmma plan: atom {atom.name} does not multiply {et.name} x {etb.name} 64x{cfg.bn}x{instr_k}")
    clay = clayout_64xn(cfg.bn)                              # (T128,V(N/2)) -> m + 64 n
    nreg = cfg.bn // 2
    crd = make_identity_layout((64, cfg.bn))                 # m + 64 n -> (m, n)
    vals = composition(crd, clay[1])                         # V -> (m, n)
    if vals(1) != vals(0) + crd(64) or size(vals) % 2:      # registers 2p, 2p + 1: adjacent columns
        raise ValueError(f"wgmma plan: accumulator pairs of {clay} are not adjacent columns")
    pair_row, pair_col = coord_index(composition(vals, Layout(nreg // 2, 2)), "p", 2)   # p -> (m, n) of 2p
    thr_row, thr_col = coord_index(composition(crd, clay[0]), "wtid", 2, 128)          # T128 -> (m, n)
    for ix in (pair_row, pair_col, thr_row, thr_col):
        ix.check()
    out = element_type(cfg.out)
    store = _store(out, cfg.bn, clay) if out.bits == 16 else None
    bars = 2 * cfg.stages * 8 + 16       # full and empty per stage; a split-K ticket word per consumer
    staging = consumers * store.stage_bytes if store else 0
    smem = 1024 + cfg.stages * (a.stage_bytes + b.stage_bytes) + staging + bars
    if smem > 227 * 1024:
        raise ValueError(f"wgmma plan: {cfg.stages} stages need {smem} bytes of shared memory, more than 227 KiB")
    return WgmmaPlan(cfg, et, out, a, b, atom, wgmma_name(cfg.bn, wgmma_input_name(et.name, etb.name), instr_k),
                     instr_k,
                     cfg.bk // instr_k, consumers, 128 * (consumers + 1), nreg, pair_row, pair_col, thr_row,
                     thr_col, smem, store, etb, share)


def _check_halves(op):
    """Raise unless the second half of ``op``'s boxes (by rows) is the first half moved by
    half the rows and :func:`half_bytes` (then each CTA of a cluster issues the first
    half's loads, moved by its rank)."""
    half = op.rows // 2
    first = [bx for bx in op.boxes if bx[1] < half]
    second = [bx for bx in op.boxes if bx[1] >= half]
    moved = [(off + half_bytes(op), r + half, k) for off, r, k in first]
    if moved != second:
        raise ValueError(f"wgmma plan: the boxes of {op.name}'s stage {op.boxes} do not split in two halves")


def half_bytes(op):
    """The stage offset of the operand's row ``rows / 2`` (where the second half of a
    cluster's shared operand lands)."""
    inner = op.smem.inner if isinstance(op.smem, ComposedLayout) else op.smem
    return inner(op.rows // 2, 0) * (op.stage_bytes // size(inner))


def _atom_name(n, k, a, b):
    """The SS atom of :mod:`mma_atoms.mma_sm90` for f32 += ``a`` x ``b``, m64n{n}k{k}."""
    if a in ("f16", "bf16"):
        return f"SM90_64x{n}x{k}_F32{a.upper()}{b.upper()}_SS"
    return f"SM90_64x{n}x{k}_F32{a.upper()}{b.upper()}_SS_TN"     # K-major only


def _store(out, bn, clay):
    """The staging of one consumer's (64, BN) slice of C for the TMA store (16-bit ``out``)."""
    from mma_atoms.gmma_smem import gmma_smem_atom

    ebytes = out.bits // 8
    smem = tile_to_shape(gmma_smem_atom(out.name, "K", 128), (64, bn))     # (64,BN) -> offset, swizzled
    inner, sw = smem.inner, smem.outer
    w = 128 // ebytes                                                      # columns of one box
    boxes, box_elems = bn // w, 64 * w
    if any(inner(0, j * w) != j * box_elems for j in range(boxes)):
        raise ValueError(f"wgmma plan: the boxes of C staging {smem} are not contiguous")
    nreg = size(clay[1])
    pairs = nreg // 2
    thr_off = layout_index(composition(inner, clay[0]), "wtid", 128)       # T128 -> offset
    pair_off = layout_index(composition(composition(inner, clay[1]), Layout(pairs, 2)), "p")   # p -> offset
    for ix in (thr_off, pair_off):
        ix.check()
    buffers = 2
    store = WgmmaStore(smem, (w, 64), boxes, pairs // boxes, box_elems, thr_off, pair_off, sw, buffers,
                       buffers * box_elems * ebytes)
    check_store(store, clay, threads=(0, 1, 4, 31, 32, 127))   # every thread: tests/test_sm90.py
    return store


def check_store(store, clay, threads=range(128)):
    """Raise unless register pair ``p`` of each thread in ``threads`` is staged where the
    staging layout puts its (m, n): box ``p // box_pairs``, at ``swizzle(thr_off + pair_off
    - box * box_elems)`` of that box's buffer."""
    for t in threads:
        for p in range(store.boxes * store.box_pairs):
            j = p // store.box_pairs
            want = store.smem(clay(t, 2 * p))
            got = store.swizzle(store.thr_off.value(t) + store.pair_off.value(p) - j * store.box_elems) \
                + j * store.box_elems
            if got != want:
                raise ValueError(f"wgmma plan: C staging offset of thread {t}, pair {p}: {got} != {want}")
