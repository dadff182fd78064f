"""A GEMM plan derived with the layout algebra: one typed stage per part of the kernel.

Given a :class:`GemmConfig` and the operands' majorness and alignment, :func:`make_plan`
builds the tiled MMA, the swizzled shared-memory layouts, the global->shared and
shared->register tiled copies, the MMA schedule and the epilogue.  Each stage is a
frozen dataclass holding its tiled copy (or MMA) and the layouts derived from it; the
emitter (:mod:`codegen.emit`) writes them into the kernel as its constants, and
:mod:`codegen.cute` partitions with them in the kernel.  The plan checks what the kernel
relies on when it is made: each copy covers its tile once, vectors are contiguous in
shared memory, the fragments' k-blocks are whole.

Conventions: A is ``(M,K)``, B is ``(N,K)`` (CuTe's TN view of ``C = A @ B``, with
``B[n,k] = B_user[k,n]``), C is ``(M,N)``.  "K-major" means the K coordinate is
contiguous in global memory.

>>> from codegen import GemmConfig
>>> plan = make_plan(GemmConfig.default("f16"), "K", "K")
>>> plan.a.g2s.copies, plan.a.g2s.nbytes, plan.mma.mma_m, plan.mma.mma_n
(4, 16, 4, 8)
>>> str(plan.a.smem)
'Sw<3,3,3> o 0 o (128,64):(64,1)'
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from layoutalg import (
    ComposedLayout, CopyAtom, Layout, Swizzle, composition, make_identity_layout, make_tiled_copy,
    make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma, size, tile_to_shape,
)
from layoutalg.basis import basis_value
from layoutalg.element_types import ElementType, element_type

from .config import GemmConfig

__all__ = [
    "GemmPlan", "OperandPlan", "GlobalToShared", "SharedToRegisters", "MmaStage", "Epilogue", "Pipeline", "CopyKind",
    "make_plan", "smem_layout",
]


class CopyKind(Enum):
    """How one copy stage moves its data."""

    CP_ASYNC = "cp.async"          # global -> shared, 4/8/16 bytes per thread, asynchronous
    ELEMENTWISE = "elementwise"    # global -> shared, one predicated element at a time
    LDMATRIX = "ldmatrix"          # shared -> registers, ldmatrix.x4 (maybe .trans)
    LDS = "ld.shared"              # shared -> registers, one ld.shared.b32/b64 per fragment register


# ---- shared-memory layouts ----------------------------------------------

def smem_layout(dtype, major, rows, bk, stages=None):
    """The swizzled per-stage shared-memory layout ``# (rows, BK) -> element offset`` (with
    ``stages``: all of them, ``# (rows, BK, PIPE) -> element offset``).

    K-major: rows of K contiguous, swizzled so that ldmatrix's 8 row reads hit 8 distinct
    16-byte bank groups; MN-major: columns of M/N contiguous, likewise.

    >>> str(smem_layout("f16", "K", 128, 64))
    'Sw<3,3,3> o 0 o (128,64):(64,1)'
    """
    bits = element_type(dtype, "smem_layout").bits
    vec = 128 // bits                        # elements per 16 bytes
    base = {16: 3, 32: 2, 64: 1}[bits]       # log2(vec): 16-byte units stay whole
    if major == "K":
        width = min(bk, 64 * 16 // bits)     # elements of one 128-byte row (or BK)
        b = max(0, min(3, (width // vec).bit_length() - 1))
        atom = composition(Swizzle(b, base, 3), Layout((8, width), (width, 1)))   # (8,W) -> offset
    else:
        width = min(rows, 64 * 16 // bits)
        b = max(0, min(3, (width // vec).bit_length() - 1))
        atom = composition(Swizzle(b, base, 3), Layout((width, 8), (1, width)))   # (W,8) -> offset
    return tile_to_shape(atom, (rows, bk) if stages is None else (rows, bk, stages))


def _inner(lay):
    return lay.inner if isinstance(lay, ComposedLayout) else lay


# ---- stages ----------------------------------------------------------------

@dataclass(frozen=True)
class GlobalToShared:
    """Global -> shared copy of one operand's ``(rows, BK)`` tile, once per k-tile.

    ``src``: ``tidfrg_S`` of the identity tile, ``(Thr,FrgV,Rest) -> (row,k)``;
    ``dst``: ``tidfrg_D`` of the smem stage, ``(Thr,FrgV,Rest) -> offset``.  Each thread
    makes ``copies`` copies of ``vec`` elements (``nbytes`` bytes) a k-tile.
    """

    operand: str
    major: str
    kind: CopyKind
    atom: object
    vec: int
    nbytes: int
    tiled_copy: object
    src: Layout
    dst: Layout
    copies: int


@dataclass(frozen=True)
class SharedToRegisters:
    """Shared -> registers: the operand's MMA fragments of one k-block.

    ``src``: ``tidfrg_S`` of the smem stage, ``(Thr,FrgV,(CpyR,CpyK)) -> offset``: a k-block
    takes ``copies`` copies; ``frag``: the thread's fragment of the whole k-tile,
    ``(FrgV,(RestR,RestK)) -> fragment element``.
    """

    operand: str
    kind: CopyKind
    atom: object
    tiled_copy: object
    src: Layout
    frag: Layout
    copies: int


@dataclass(frozen=True)
class OperandPlan:
    """One operand (A or B): its shared-memory stage layout and its two copies."""

    name: str
    major: str
    rows: int
    smem: object          # (rows, BK) -> element offset, maybe swizzled
    stage_elems: int      # cosize of one stage
    g2s: GlobalToShared
    s2r: SharedToRegisters


@dataclass(frozen=True)
class MmaStage:
    """The MMAs of one k-block: ``mma_m x mma_n`` atoms per thread; ``acc_layout``: the
    thread's accumulators ``(MMA,(MMA_M,MMA_N)) -> accumulator``."""

    atom: object
    tiled_mma: object
    kblocks: int
    mma_m: int
    mma_n: int
    acc_layout: Layout


@dataclass(frozen=True)
class Epilogue:
    """``C = alpha * acc + beta * C``: ``cid``, ``tv_C`` of the identity ``(BM,BN)``,
    ``(Thr,(FrgV,(RestM,RestN))) -> (m,n)``; ``pairs``: each two consecutive accumulators are
    adjacent columns of one row (stored as one vector where C is row-major)."""

    out: ElementType
    cid: Layout
    acc_size: int
    pairs: bool


@dataclass(frozen=True)
class Pipeline:
    """The shared-memory ring: ``stages`` stages of A then B, and k-blocks per k-tile."""

    stages: int
    bk: int
    kblocks: int
    a_stage: int          # elements of one A stage
    b_stage: int
    elem_bytes: int


@dataclass(frozen=True)
class GemmPlan:
    config: GemmConfig
    etype: ElementType
    a: OperandPlan
    b: OperandPlan
    mma: MmaStage
    epilogue: Epilogue
    pipeline: Pipeline

    @property
    def operands(self):
        return (self.a, self.b)

    @cached_property
    def cost(self):
        """The bank conflicts and coalescing of each copy (:func:`codegen.plan_cost.plan_cost`),
        computed when first asked for."""
        from .plan_cost import plan_cost

        return plan_cost(self)


# ---- derivation ------------------------------------------------------------

def _g2s(cfg, et, name, major, rows, vec, smem, elementwise):
    """Global -> shared: threads tile the (rows, BK) tile with ``vec``-element vectors."""
    nthr = cfg.threads
    bk = cfg.bk
    if major == "K":
        tc = max(1, min(bk // vec, nthr))
        thr = Layout((nthr // tc, tc), (tc, 1))             # (ThrRow,ThrK) -> thr_idx
        val = Layout((1, vec))                              # (1,Vec) -> val_idx
    else:
        tc = max(1, min(rows // vec, nthr))
        thr = Layout((tc, nthr // tc), (1, tc))             # (ThrRow,ThrK) -> thr_idx
        val = Layout((vec, 1))                              # (Vec,1) -> val_idx
    tile_r, tile_k = (nthr // tc, tc * vec) if major == "K" else (tc * vec, nthr // tc)
    if rows % tile_r or bk % tile_k:
        raise ValueError(f"g2s {name}: {nthr} threads copying {vec}-element vectors tile {tile_r}x{tile_k}, "
                         f"which does not divide the ({rows},{bk}) tile; use fewer threads or a larger tile")
    nbytes = vec * et.bits // 8
    if elementwise or nbytes < 4:
        kind, atom_name = CopyKind.ELEMENTWISE, f"UniversalCopy_{et.bits}"
    else:
        kind = CopyKind.CP_ASYNC
        atom_name = {16: "SM80_CP_ASYNC_CACHEGLOBAL_128", 8: "SM80_CP_ASYNC_CACHEALWAYS_64",
                     4: "SM80_CP_ASYNC_CACHEALWAYS_32"}[nbytes]
    cp = make_tiled_copy(CopyAtom(atom_name, _copy_type(et)), thr, val)
    src = cp.tidfrg_S(make_identity_layout((rows, bk)))    # (Thr,FrgV,(RestR,RestK)) -> (row,k)
    dst = cp.tidfrg_D(_inner(smem))                         # (Thr,FrgV,(RestR,RestK)) -> smem offset
    if size(src[0]) != nthr:
        raise ValueError(f"g2s {name}: the copy uses {size(src[0])} threads, the CTA has {nthr}")
    for v in range(size(dst[1])):
        if dst[1](v) != v:
            raise ValueError(f"g2s {name}: a vector of {vec} is not contiguous in shared memory layout {smem}")
    if size(src) != rows * bk:        # (each element once: the threads' tiles divide the tile, checked above)
        raise ValueError(f"g2s {name}: the copy {src} does not cover the ({rows},{bk}) tile")
    return GlobalToShared(name, major, kind, cp.atom, vec, nbytes, cp, src, dst, size(src[2]))


def _copy_type(et):
    return "f32" if et.name == "tf32" else et.name


def _crd2(x):
    """A rank-2 coordinate from a basis-strided layout's value (an int 0, E<i> or a sum of them)."""
    v = basis_value(x, 2)
    if isinstance(v, int):
        if v != 0:
            raise ValueError(f"expected a coordinate, got offset {v}")
        return (0, 0)
    return tuple(v)[:2]


def _s2r(cfg, et, mma, name, major, rows, smem, kblocks):
    """Shared -> registers: ldmatrix (or scalar loads) into the MMA fragments, per k-block."""
    bits = et.bits
    if bits == 16 or (et.name == "tf32" and major == "K"):
        kind = CopyKind.LDMATRIX
        atom_name = "SM75_U32x4_LDSM_N" if major == "K" else "SM75_U16x8_LDSM_T"
    else:
        kind = CopyKind.LDS
        atom_name = f"UniversalCopy_{bits}"
    maker = make_tiled_copy_A if name == "A" else make_tiled_copy_B
    cp = maker(CopyAtom(atom_name, _copy_type(et)), mma)
    src = cp.tidfrg_S(_inner(smem))                        # (Thr,FrgV,(CpyR,CpyK)) -> smem offset
    part = (mma.tv_A if name == "A" else mma.tv_B)(Layout((rows, cfg.bk)))
    frag = Layout(part[1].shape)                            # (FrgV,(RestR,RestK)) -> fragment element
    rest = src[2]
    if not isinstance(rest.shape, tuple) or len(rest.shape) != 2:
        raise ValueError(f"s2r {name}: copy rest {rest} is not (CpyR,CpyK)")
    if size(rest[1]) != kblocks:
        raise ValueError(f"s2r {name}: {size(rest[1])} copies along K, expected one per k-block ({kblocks})")
    return SharedToRegisters(name, kind, cp.atom, cp, src, frag, size(rest[0]))


def _epilogue(cfg, out, mma):
    cid = mma.tv_C(make_identity_layout((cfg.bm, cfg.bn)))  # (Thr,(FrgV,(RestM,RestN))) -> (m,n)
    vals = cid[1]                                            # (FrgV,(RestM,RestN)) -> (m,n)
    n = size(vals)
    crd = [_crd2(vals(e)) for e in range(n)]
    pairs = n % 2 == 0 and all(crd[2 * p + 1] == (crd[2 * p][0], crd[2 * p][1] + 1) for p in range(n // 2))
    return Epilogue(out, cid, n, pairs)


def make_plan(cfg, a_major="K", b_major="K", a_vec=None, b_vec=None, a_elementwise=False, b_elementwise=False):
    """Derive the whole plan.

    ``x_major``: "K" or "MN"; ``x_vec``: elements per global->shared vector (default: 16
    bytes); ``x_elementwise``: copy that operand element by element (unaligned or strided).
    """
    if not isinstance(cfg, GemmConfig):
        raise TypeError(f"make_plan: expected a GemmConfig, got {cfg!r}")
    for arg, v in (("a_major", a_major), ("b_major", b_major)):
        if v not in ("K", "MN"):
            raise ValueError(f"make_plan: {arg} must be 'K' or 'MN', got {v!r}")
    et = element_type(cfg.dtype)
    full = 128 // et.bits
    a_vec = a_vec or full
    b_vec = b_vec or full
    if cfg.dtype == "f32":
        mma = make_tiled_mma(cfg.mma_atom, (16, cfg.threads // 16, 1))
    else:
        am, an, ak = mma_atom_mnk(cfg.mma_atom)
        perm = (cfg.warps_m * am, cfg.warps_n * an * (2 if et.bits < 64 else 1), ak)
        mma = make_tiled_mma(cfg.mma_atom, (cfg.warps_m, cfg.warps_n, 1), perm)
    tm, tn, tk = mma.tile_size_mnk
    if cfg.bm % tm or cfg.bn % tn or cfg.bk % tk:
        raise ValueError(f"make_plan: CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk} is not a multiple of the "
                         f"tiled MMA's {tm}x{tn}x{tk}")
    kblocks = cfg.bk // tk
    ops = []
    for name, major, rows, vec, ew in (("A", a_major, cfg.bm, a_vec, a_elementwise),
                                       ("B", b_major, cfg.bn, b_vec, b_elementwise)):
        sm = smem_layout(cfg.dtype, major, rows, cfg.bk)
        g2s = _g2s(cfg, et, name, major, rows, vec, sm, ew)
        s2r = _s2r(cfg, et, mma, name, major, rows, sm, kblocks)
        ops.append(OperandPlan(name, major, rows, sm, size(_inner(sm)), g2s, s2r))
    a, b = ops
    cpart = mma.tv_C(Layout((cfg.bm, cfg.bn)))              # (Thr,(FrgV,(RestM,RestN))) -> (M,N) index
    acc = Layout(cpart[1].shape)                            # (MMA,(MMA_M,MMA_N)) -> accumulator
    stage = MmaStage(mma.atom, mma, kblocks, size(acc[1][0]), size(acc[1][1]), acc)
    epi = _epilogue(cfg, element_type(cfg.out), mma)
    pipe = Pipeline(cfg.stages, cfg.bk, kblocks, a.stage_elems, b.stage_elems, et.bits // 8)
    return GemmPlan(cfg, et, a, b, stage, epi, pipe)


def mma_atom_mnk(name):
    """The (M, N, K) of an MMA atom of the tables."""
    from mma_atoms import get

    return get(name).shape_mnk
