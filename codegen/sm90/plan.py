"""The Hopper GEMM plan: warpgroup MMA fed by TMA, derived from layouts.

A CTA has one producer warpgroup (one thread issues the TMA loads) and ``BM / 64``
consumer warpgroups, each computing a 64 x BN slice of the CTA tile with
``wgmma.mma_async`` m64nBNk(32 bytes of K).  The plan composes :mod:`codegen.cute`'s
pieces, each derived from layouts:

* the shared-memory stage of each operand is CuTe's GMMA layout atom tiled to ``(rows,
  BK)``, K first for MN-major operands so that each TMA box is one contiguous block
  (:func:`codegen.cute.gmma_stage`);
* the TMA box of each operand is one swizzle row wide (128 bytes along the contiguous
  dimension) and spans the stage along the other; the box offsets in the stage are the
  stage layout at the boxes' corners (:func:`codegen.cute.make_tma_load`);
* the descriptor of each wgmma is read off the stage layout (:func:`gmma_desc`); its
  start address moves by the stage layout's offset of the next k-block and, for A, of the
  next consumer's 64 rows (:func:`codegen.cute.make_wgmma`);
* the accumulators' (row, column) come from the atom's C layout (``CLayout_64xN``,
  :func:`codegen.cute.make_register_epilogue`);
* for 16-bit outputs, each consumer stages its 64 x BN slice of C in shared memory in the
  same 128-byte swizzled atom (N playing K's part), and one TMA store per 64-column box
  writes it out (:func:`codegen.cute.make_tma_store_epilogue`);
* the shared storage, the pipeline over it, the tile scheduler and the collective mainloop
  that composes the loads and the MMAs (:class:`WgmmaKernelParts`);
* an operand that TMA cannot read (``copy``: a row stride that is no multiple of 16 bytes)
  fills the same stage by the producer warpgroup's loads and stores
  (:func:`codegen.cute.make_gmem_copy`); such kernels take at most 128 columns a tile and
  keep every warpgroup at the launch's registers (the copying producer needs them).

>>> from codegen import GemmConfig
>>> plan = make_wgmma_plan(GemmConfig.default("f16", arch=(9, 0)), "K", "MN")
>>> plan.a.desc, plan.b.desc
(GmmaDesc(layout_type=1, lbo=1, sbo=64), GmmaDesc(layout_type=1, lbo=512, sbo=64))
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from layoutalg import ComposedLayout, Layout, size
from layoutalg.element_types import ElementType, element_type

from ..config import FP8_OUT, GemmConfig

__all__ = ["WgmmaOperand", "WgmmaPlan", "WgmmaKernelParts", "make_wgmma_plan", "ACC_TYPES", "producer_regs",
           "consumer_regs"]

ACC_TYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2")

#: Registers a consumer warpgroup's thread takes (``setmaxnreg.inc``) beside one consumer.
CONSUMER_REGS = 232


@dataclass(frozen=True)
class WgmmaOperand:
    """One operand's stage, TMA loads and descriptor.

    ``smem``: ``(rows, BK) -> element offset`` of one stage; ``load``: its
    :class:`~codegen.cute.TmaLoad` (``box``, ``boxes``: per box, (stage byte offset, row
    offset, k offset) of its corner), or the :class:`~codegen.cute.GmemStageCopy` of an
    operand that TMA cannot read; ``desc``: the descriptor fields; ``kblock_bytes``: the
    start-address step per instruction along K; ``consumer_bytes``: per consumer (A only:
    its 64 rows).
    """

    name: str
    major: str
    rows: int
    smem: object
    stage_bytes: int
    load: object
    desc: object
    kblock_bytes: int
    consumer_bytes: int

    @property
    def box(self):
        return self.load.box

    @property
    def boxes(self):
        return self.load.boxes

    @property
    def swizzle_bytes(self):
        return self.load.swizzle_bytes

    @property
    def tnsp(self):
        return int(self.major == "MN")

    @property
    def copied(self):
        """Whether the producer warpgroup copies it (TMA cannot read it)."""
        return not self.load.tma


@dataclass(frozen=True)
class WgmmaKernelParts:
    """The :mod:`codegen.cute` objects a Hopper GEMM kernel composes, read off the plan:
    every size, offset and layout in them is a compile-time constant of the kernel."""

    storage: object           # SharedStorage: stages of A and B, C staging, barriers, tickets
    pipeline: object          # TmaPipeline over the stages
    load_a: object            # TmaLoad of A's stage
    load_b: object            # TmaLoad of B's stage
    mma: object               # WgmmaMMA of one consumer warpgroup
    mainloop: object          # WgmmaMainloop: the above composed
    scheduler: object         # TileScheduler
    tma_epilogue: object      # TmaStoreEpilogue (16-bit C), else None
    reg_epilogue: object      # RegisterEpilogue
    producer_regs: int
    consumer_regs: int
    op: object = None         # BiasActivation (a fused bias or activation), else None
    out_scale: object = None  # OutputScale (an 8-bit float C: amax, output scale), else None


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
    smem_bytes: int           # the shared storage's bytes, with 1024 for alignment
    b_etype: ElementType      # B's type (A's unless mixed 8-bit floats)
    share: str                # the operand a cluster's two CTAs share ("B"), else None
    device: WgmmaKernelParts

    @property
    def operands(self):
        return (self.a, self.b)

    @property
    def store(self):
        """The TMA-store epilogue (16-bit outputs), else None."""
        return self.device.tma_epilogue

    @property
    def pair_row(self):
        """``(P) -> m`` of accumulator pair P (registers 2P, 2P + 1); ``pair_col``: ``-> n``."""
        return self.device.reg_epilogue.pair_row

    @property
    def pair_col(self):
        return self.device.reg_epilogue.pair_col

    @property
    def thr_row(self):
        """``(T128) -> m`` of the thread's part (tid within the warpgroup); ``thr_col``: ``-> n``."""
        return self.device.reg_epilogue.thr_row

    @property
    def thr_col(self):
        return self.device.reg_epilogue.thr_col

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


#: The registers a thread of a kernel whose producer warpgroup copies an operand: every
#: warpgroup keeps what the launch gives (no ``setmaxnreg``).
COPY_REGS = 0


def producer_regs(consumers, cluster=1):
    """The producer warpgroup's registers a thread (``setmaxnreg.dec``): 40 beside two
    consumer warpgroups (128 x (40 + 2 x 232) is what a CTA of 384 threads at 168 registers
    holds); 56 beside one, where the split-K producer's unit arithmetic spilled at 40, and
    in cluster kernels (their consumers then take 224)."""
    return 56 if consumers == 1 or cluster > 1 else 40


def consumer_regs(consumers, cluster=1):
    """The consumer warpgroups' registers a thread (``setmaxnreg.inc``): :data:`CONSUMER_REGS`,
    or beside two consumers what the producer leaves of the 504 a thread that three
    warpgroups at 168 registers hold, in multiples of 8."""
    if consumers == 1:
        return CONSUMER_REGS
    return min(CONSUMER_REGS, (504 - producer_regs(consumers, cluster)) // consumers // 8 * 8)


def _operand(name, major, rows, bk, et, instr_k, halves=False, copy=False):
    from mma_atoms.gmma_smem import gmma_desc

    from ..cute import gmma_stage, make_gmem_copy, make_tma_load

    smem = gmma_stage(et.name, major, rows, bk)                   # (rows,BK) -> offset
    inner = smem.inner if isinstance(smem, ComposedLayout) else smem
    ebytes = et.bits // 8
    load = make_gmem_copy(name, et.name, major, smem) if copy else make_tma_load(name, et.name, major, smem, halves)
    desc = gmma_desc(smem, (64 if name == "A" else rows, instr_k), major, et.name)
    kblock_bytes = inner(0, instr_k) * ebytes if bk > instr_k else 0    # one instruction per k-tile: no step
    consumer_bytes = inner(64, 0) * ebytes if name == "A" and rows > 64 else 0
    return WgmmaOperand(name, major, rows, smem, size(inner) * ebytes, load, desc, kblock_bytes, consumer_bytes)


def make_wgmma_plan(cfg, a_major="K", b_major="K", copy=""):
    """Derive the Hopper plan of ``cfg`` (``cfg.path == "wgmma"``); ``copy``: the operands
    ("A", "B", "AB") that the producer warpgroup copies, TMA being unable to read them."""
    from mma_atoms import get

    from ..cute import (make_bias_activation, make_output_scale, make_register_epilogue, make_tma_store_epilogue,
                        make_wgmma, tma_store_fits)

    if not isinstance(cfg, GemmConfig) or cfg.path != "wgmma":
        raise ValueError(f"make_wgmma_plan: expected a GemmConfig with path='wgmma', got {cfg!r}")
    et, etb = element_type(cfg.dtype), element_type(cfg.b_type)
    if et.name not in ACC_TYPES or etb.name not in ACC_TYPES:
        raise ValueError(f"make_wgmma_plan: no wgmma kernel for {et.name} x {etb.name}")
    if et.bits != 16 and "MN" in (a_major, b_major):
        raise ValueError(f"make_wgmma_plan: wgmma reads {et.name} operands K-major only; got A {a_major}-major, "
                         f"B {b_major}-major")
    if copy and (set(copy) - set("AB") or cfg.bn > 128 or cfg.cluster_m > 1 or cfg.grouped):
        raise ValueError(f"make_wgmma_plan: copy={copy!r}: the producer warpgroup copies 'A', 'B' or 'AB', in tiles "
                         f"of at most 128 columns, without clusters or groups; got {cfg.bm}x{cfg.bn} tiles, "
                         f"cluster_m {cfg.cluster_m}, grouped {cfg.grouped}")
    instr_k = 32 // (et.bits // 8)                           # one instruction reads 32 bytes of K
    consumers = cfg.bm // 64                                 # a consumer warpgroup per 64 rows
    share = "B" if cfg.cluster_m > 1 else None               # a cluster's two CTAs: vertical neighbours
    a = _operand("A", a_major, cfg.bm, cfg.bk, et, instr_k, copy="A" in copy)
    b = _operand("B", b_major, cfg.bn, cfg.bk, etb, instr_k, halves=share == "B", copy="B" in copy)
    atom = get(_atom_name(cfg.bn, instr_k, et.name, etb.name))
    if atom.shape_mnk != (64, cfg.bn, instr_k) or (atom.a_type, atom.b_type) != (et.name, etb.name):
        raise ValueError(f"wgmma plan: atom {atom.name} does not multiply {et.name} x {etb.name} 64x{cfg.bn}x{instr_k}")
    mma = make_wgmma(et.name, etb.name, cfg.bn, a.smem, b.smem, a_major, b_major)
    out = element_type(cfg.out)
    tma_epi = make_tma_store_epilogue(out.name, cfg.bn, 0) if tma_store_fits(out.name, cfg.bn) else None
    if tma_epi is not None and cfg.grouped:
        tma_epi = replace(tma_epi, grouped=True)
    parts = _kernel_parts(cfg, a, b, mma, consumers, share, tma_epi, make_register_epilogue(out.name, cfg.bm, cfg.bn))
    if cfg.activation or cfg.bias:
        parts = replace(parts, op=make_bias_activation(cfg.bn, cfg.activation, cfg.bias, cfg.bias_rows))
    if out.name in FP8_OUT:
        parts = replace(parts, out_scale=make_output_scale(cfg.bm, cfg.bn))
    smem = parts.storage.nbytes
    if smem > 227 * 1024:
        raise ValueError(f"wgmma plan: {cfg.stages} stages need {smem} bytes of shared memory, more than 227 KiB")
    return WgmmaPlan(cfg, et, out, a, b, atom, mma.instr, instr_k, mma.kblocks, consumers, 128 * (consumers + 1),
                     mma.acc_regs, smem, etb, share, parts)


def _atom_name(n, k, a, b):
    """The SS atom of :mod:`mma_atoms.mma_sm90` for f32 += ``a`` x ``b``, m64n{n}k{k}."""
    if a in ("f16", "bf16"):
        return f"SM90_64x{n}x{k}_F32{a.upper()}{b.upper()}_SS"
    return f"SM90_64x{n}x{k}_F32{a.upper()}{b.upper()}_SS_TN"     # K-major only


def _kernel_parts(cfg, a, b, mma, consumers, share, tma_epi, reg_epi):
    """The :class:`WgmmaKernelParts`: the shared storage carved once, the pipeline over its
    stages, the mainloop composing the loads and the MMAs, the scheduler, the epilogues."""
    from ..cute import SharedStorage, TileScheduler, TmaPipeline, WgmmaMainloop

    S, cluster = cfg.stages, cfg.cluster_m
    regions = [("a", S * a.stage_bytes, 1024), ("b", S * b.stage_bytes, 1024)]
    if tma_epi is not None:
        regions.append(("c", consumers * tma_epi.consumer_bytes, 1024))
    regions += [("full", 8 * S, 8), ("empty", 8 * S, 8), ("tickets", 16, 4)]
    storage = SharedStorage(tuple(regions))
    tx = sum(x.stage_bytes for x in (a, b) if not x.copied)         # the bytes TMA brings a stage
    copiers = 128 if a.copied or b.copied else 0                      # the producer warpgroup's threads
    pipeline = TmaPipeline(S, tx, storage.full, storage.empty, consumers * cluster, cluster, copiers)
    mainloop = WgmmaMainloop(pipeline, a.load, b.load, mma, storage.a, storage.b, a.stage_bytes, b.stage_bytes,
                             a.consumer_bytes, cfg.bk, share, cfg.grouped)
    scheduler = TileScheduler(cfg.bm, cfg.bn, cfg.bk, cfg.group_m, cfg.split_k > 1, consumers, mma.acc_regs,
                              storage.tickets, cluster, cfg.grouped)
    if tma_epi is not None:
        tma_epi = replace(tma_epi, staging=storage.c)
    regs = (COPY_REGS, COPY_REGS) if copiers else (producer_regs(consumers, cluster), consumer_regs(consumers, cluster))
    return WgmmaKernelParts(storage, pipeline, a.load, b.load, mma, mainloop, scheduler, tma_epi, reg_epi, *regs)
