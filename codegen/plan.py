"""A GEMM plan derived with the layout algebra: one typed stage per part of the kernel.

Given a :class:`GemmConfig` and the operands' majorness and alignment, :func:`make_plan`
builds the tiled MMA, the swizzled shared-memory layouts, the global->shared and
shared->register tiled copies, the MMA schedule and the epilogue.  Each stage is a
frozen dataclass holding the layouts it was derived from and the index expressions
(:class:`codegen.index.Index`) derived from them: a thread part in ``tid`` and loop
parts in the kernel's loop counters.  The emitter (:mod:`codegen.emit`) only reads a
plan.  Every index expression is checked against its layout when the plan is made.

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
    ComposedLayout, CopyAtom, Layout, Swizzle, composition, make_identity_layout, make_layout,
    make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma, rank, size, tile_to_shape,
)
from layoutalg.basis import basis_value
from layoutalg.element_types import ElementType, element_type
from layoutalg.inttuple import flat_tuple

from .config import GemmConfig
from .index import Index, coord_index, layout_index, mode_terms, paren, sum_code, swizzle_code
from .atom_intrinsics import COPY_INTRINSICS, MMA_INTRINSICS

__all__ = [
    "GemmPlan", "OperandPlan", "GlobalToShared", "SharedToRegisters", "MmaStage", "Epilogue", "Pipeline", "SwizzledOffset", "CopyKind", "make_plan", "smem_layout",
]


class CopyKind(Enum):
    """How one copy stage moves its data."""

    CP_ASYNC = "cp.async"          # global -> shared, 4/8/16 bytes per thread, asynchronous
    ELEMENTWISE = "elementwise"    # global -> shared, one predicated element at a time
    LDMATRIX = "ldmatrix"          # shared -> registers, ldmatrix.x4 (maybe .trans)
    LDS = "ld.shared"              # shared -> registers, one ld.shared.b32/b64 per fragment register


# ---- shared-memory layouts ----------------------------------------------

def smem_layout(dtype, major, rows, bk):
    """The swizzled per-stage shared-memory layout ``# (rows, BK) -> element offset``.

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
        return tile_to_shape(atom, (rows, bk))
    width = min(rows, 64 * 16 // bits)
    b = max(0, min(3, (width // vec).bit_length() - 1))
    atom = composition(Swizzle(b, base, 3), Layout((width, 8), (1, width)))       # (W,8) -> offset
    return tile_to_shape(atom, (rows, bk))


def _inner(lay):
    return lay.inner if isinstance(lay, ComposedLayout) else lay


def _swizzle(lay):
    sw = lay.outer if isinstance(lay, ComposedLayout) else None
    return sw if sw is not None and sw.bits else None


# ---- swizzled offsets -------------------------------------------------------

@dataclass(frozen=True)
class SwizzledOffset:
    """Shared-memory offsets ``sw(thr + c)`` of one copy, with ``c`` a sum of loop parts.

    A swizzle is linear over XOR.  Where no ``c`` shares a bit with any thread part
    (``thr + c == thr ^ c``), ``sw(thr + c) == sw(thr) ^ sw(c)``; where moreover each loop
    part is left alone by the swizzle, its bits either lie among those some ``sw(thr)`` may
    have (``xmask``: they are XORed) or among none (they are added).  Then ``sw(thr)`` is
    computed once (``base``) and each offset is ``(base ^ X) + Y``, and after the loops are
    unrolled ``X`` and ``Y`` are constants.  ``to_xor`` None: no such split holds, and the
    code recomputes ``sw(thr + c)``.

    ``thr``: the thread part (an Index in ``tid``); ``parts``: the loop parts (Indexes in
    loop counters); ``to_xor``: per part, XORed (True) or added (False).
    """

    swizzle: Swizzle | None
    thr: Index
    parts: tuple
    xmask: int
    to_xor: tuple | None

    def code(self, base, const=0, thr=None):
        """Code for the offset, given the variables ``base`` = ``sw(thr)`` and ``thr`` (the
        unswizzled thread part; its code when None) and a constant part."""
        if self.to_xor is None:
            return swizzle_code(sum_code([thr or self.thr.code, *[p.code for p in self.parts],
                                          str(const) if const else ""]), self.swizzle)
        sc = _sw(self.swizzle, const)
        xc, yc = sc & self.xmask, sc & ~self.xmask
        xs = [self._part_code(p) for p, t in zip(self.parts, self.to_xor) if t] + ([str(xc)] if xc else [])
        ys = [self._part_code(p) for p, t in zip(self.parts, self.to_xor) if not t] + ([str(yc)] if yc else [])
        x = " ^ ".join(xs) if xs else "0"
        y = " + ".join(ys) if ys else "0"
        e = base if x == "0" else f"({base} ^ {paren(x)})"
        return e if y == "0" else f"{e} + {y}"

    def _part_code(self, p):
        """A loop part's code: ``sw(part)`` where the swizzle moves its bits (a constant once
        the loop is unrolled), the part itself where it does not."""
        if all(_sw(self.swizzle, p.value(v)) == p.value(v) for v in range(p.bound)):
            return p.code
        return swizzle_code(p.code, self.swizzle)

    def check(self, consts=(0,)):
        """Evaluate :meth:`code` for every thread, loop value and constant against the layouts."""
        import itertools

        base_fn = eval(f"lambda tid: {swizzle_code(self.thr.code, self.swizzle)}")  # noqa: S307
        names = sorted({p.var for p in self.parts})
        points = [dict(zip(names, v)) for v in itertools.product(*[range(self._bound(n)) for n in names])]
        offs = [sum(p.value(pt[p.var]) for p in self.parts) for pt in points]
        for const in consts:
            fn = eval(f"lambda base, {', '.join(['thr', *names])}: {self.code('base', const, 'thr')}")  # noqa: S307
            for t in range(self.thr.bound):
                b, thr = base_fn(t), self.thr.value(t)
                for pt, off in zip(points, offs):
                    vals = [pt[n] for n in names]
                    want = _sw(self.swizzle, thr + const + off)
                    got = fn(b, thr, *vals)
                    if got != want:
                        raise AssertionError(f"swizzled offset {self.code('base', const)!r} at tid={t}, "
                                             f"{pt}, const {const}: {got} != {want}")

    def _bound(self, var):
        return next(p.bound for p in self.parts if p.var == var)


def _sw(sw, x):
    return sw(x) if sw is not None else x


def _swizzled_offset(sw, thr, parts, consts=(0,)):
    """Build a :class:`SwizzledOffset` (split form where it holds) and check it exhaustively."""
    xmask = 0
    for t in range(thr.bound):
        xmask |= _sw(sw, thr.value(t))
    parts = [t for p in parts for t in mode_terms(p)]       # one part per flat mode
    # XOR the parts whose swizzled values touch bits some sw(thr) has; add the others (the
    # exhaustive check below decides whether that split holds)
    bits = [0] * len(parts)
    for i, p in enumerate(parts):
        for v in range(p.bound):
            bits[i] |= _sw(sw, p.value(v))
    to_xor = [False] * len(parts)
    touched, grown = xmask, True
    while grown:             # a part whose bits meet an XORed one's is XORed too
        grown = False
        for i, b in enumerate(bits):
            if not to_xor[i] and b & touched:
                to_xor[i], touched, grown = True, touched | b, True
    off = SwizzledOffset(sw, thr, tuple(parts), xmask, tuple(to_xor))
    try:
        off.check(consts)
    except AssertionError:
        off = SwizzledOffset(sw, thr, tuple(parts), xmask, None)
        off.check(consts)
    return off


# ---- stages ----------------------------------------------------------------

@dataclass(frozen=True)
class GlobalToShared:
    """Global -> shared copy of one operand's ``(rows, BK)`` tile, once per k-tile.

    ``src``: ``tidfrg_S`` of the identity tile, ``(Thr,FrgV,Rest) -> (row,k)``;
    ``dst``: ``tidfrg_D`` of the smem stage, ``(Thr,FrgV,Rest) -> offset``.  Thread ``tid``
    copies ``copies`` vectors of ``vec`` elements: copy ``i`` starts at tile coordinate
    ``(thr_row + row(i), thr_k + k(i))`` and smem offset ``smem(tid, i)``.
    """

    operand: str
    major: str
    kind: CopyKind
    atom: object
    intrinsic: str | None
    vec: int
    nbytes: int
    tiled_copy: object
    src: Layout
    dst: Layout
    thr_row: Index
    thr_k: Index
    copies: int
    row: Index
    k: Index
    smem: SwizzledOffset


@dataclass(frozen=True)
class SharedToRegisters:
    """Shared -> registers: the operand's MMA fragments of one k-block.

    ``src``: ``tidfrg_S`` of the smem stage, ``(Thr,FrgV,(CpyR,CpyK)) -> offset``; the k-block
    ``kb`` takes the copies ``(r, kb)``, ``r < copies``.  Copy ``r`` writes the fragment words
    ``word(r) + value_words[j]``; for element-wise kinds value ``j`` reads smem offset
    ``smem(tid, r, kb) + value_offsets[j]``.
    """

    operand: str
    kind: CopyKind
    atom: object
    intrinsic: str | None
    tiled_copy: object
    src: Layout
    frag: Layout
    copies: int
    smem: SwizzledOffset
    word: Index
    value_words: tuple
    value_offsets: tuple
    words: int            # fragment words (registers) per k-block


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
    """The MMAs of one k-block: ``mma_m x mma_n`` atoms per thread, serpentine over M.

    Atom ``(m, n)`` reads A words ``a_word(m) + a_regs[j]``, B words ``b_word(n) + b_regs[j]``
    and accumulates into ``acc(m, n) + acc_regs[j]`` (``acc``: ``(MMA,MMA_M,MMA_N)`` compact).
    """

    atom: object
    intrinsic: str | None     # None: a scalar fused multiply-add on CUDA cores
    tiled_mma: object
    kblocks: int
    mma_m: int
    mma_n: int
    a_word: Index
    a_regs: tuple
    b_word: Index
    b_regs: tuple
    acc_layout: Layout
    acc_m: Index
    acc_n: Index
    acc_regs: tuple


@dataclass(frozen=True)
class Epilogue:
    """``C = alpha * acc + beta * C``: each thread's accumulators and their (row, col).

    ``cid``: ``tv_C`` of the identity ``(BM,BN)``, ``(Thr,(FrgV,(RestM,RestN))) -> (m,n)``;
    accumulator ``e`` (the compact index of the value mode) is C element
    ``(thr_row + row(e), thr_col + col(e))``.  Where the value mode starts with two adjacent
    columns, ``pair_row(p)``/``pair_col(p)`` give the first of the pair ``(2p, 2p + 1)``.
    """

    out: ElementType
    cid: Layout
    thr_row: Index
    thr_col: Index
    row: Index
    col: Index
    pair_row: Index | None
    pair_col: Index | None
    acc_size: int


@dataclass(frozen=True)
class Pipeline:
    """The shared-memory ring: ``stages`` stages of A then B, and k-blocks per k-tile."""

    stages: int
    bk: int
    kblocks: int
    a_stage: int          # elements of one A stage
    b_stage: int
    b_offset: int         # elements before the first B stage
    elem_bytes: int
    smem_bytes: int       # the stages, or the accumulators staged by the edge epilogue if larger


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

def _crd2(x):
    """A rank-2 coordinate from a basis-strided layout's value (an int 0, E<i> or a sum of them)."""
    v = basis_value(x, 2)
    if isinstance(v, int):
        if v != 0:
            raise ValueError(f"expected a coordinate, got offset {v}")
        return (0, 0)
    return tuple(v)[:2]


def _mode_index(mode, var):
    """Index of a (possibly nested) mode evaluated on ``var``."""
    return layout_index(mode, var, size(mode))


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
        cp = make_tiled_copy(CopyAtom(atom_name, _copy_type(et)), thr, val)
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
    thr_row, thr_k = coord_index(src[0], "tid", 2, nthr)
    row, k = coord_index(src[2], "i", 2)
    thr_s = layout_index(dst[0], "tid", nthr)
    sm = _swizzled_offset(_swizzle(smem), thr_s, (layout_index(dst[2], "i"),))
    for ix in (thr_row, thr_k, row, k):
        ix.check()
    intrinsic = COPY_INTRINSICS.get(atom_name) if kind is CopyKind.CP_ASYNC else None
    return GlobalToShared(name, major, kind, cp.atom, intrinsic, vec, nbytes, cp, src, dst, thr_row, thr_k,
                          size(src[2]), row, k, sm)


def _copy_type(et):
    return "f32" if et.name == "tf32" else et.name


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
    nthr = cfg.threads
    part = (mma.tv_A if name == "A" else mma.tv_B)(Layout((rows, cfg.bk)))
    frag = Layout(part[1].shape)                            # (FrgV,(RestR,RestK)) -> fragment element
    retiled = cp.retile(_fragment_view(frag))               # (CPY,(CpyR,CpyK)) -> fragment element
    rest = src[2]
    if len(flat_tuple(rest.shape)) < 1 or not isinstance(rest.shape, tuple) or len(rest.shape) != 2:
        raise ValueError(f"s2r {name}: copy rest {rest} is not (CpyR,CpyK)")
    cpy_r, cpy_k = rest[0], rest[1]
    if size(cpy_k) != kblocks:
        raise ValueError(f"s2r {name}: {size(cpy_k)} copies along K, expected one per k-block ({kblocks})")
    per = 32 // bits if bits < 32 else 1                    # fragment elements per register
    nkb = size(frag) // kblocks                             # fragment elements per k-block
    rest_modes = [retiled[i] for i in range(1, rank(retiled))]      # CpyR, CpyK (maybe nested once)
    if len(rest_modes) == 1 and isinstance(rest_modes[0].shape, tuple) and len(rest_modes[0].shape) == 2:
        rest_modes = [rest_modes[0][0], rest_modes[0][1]]
    if len(rest_modes) != 2:
        raise ValueError(f"s2r {name}: retiled fragment {retiled} is not (CPY,CpyR,CpyK)")
    r_ret, k_ret = rest_modes
    # copy (r, kb) writes fragment elements retiled(v, (r, kb)); kb is the outermost fragment mode
    for kb in range(kblocks):
        if k_ret(kb) != kb * nkb:
            raise ValueError(f"s2r {name}: k-block {kb} of {retiled} is not fragment block {kb}")
    nval = size(src[1])
    vals = [retiled[0](v) for v in range(nval)]                     # value part of copy (0, 0)
    if kind is CopyKind.LDMATRIX and per > 1:
        for v in range(0, nval, per):
            if vals[v] % per or any(vals[v + j] != vals[v] + j for j in range(per)):
                raise ValueError(f"s2r {name}: ldmatrix register {v // per} does not hold a fragment pair")
        value_words = tuple(vals[v] // per for v in range(0, nval, per))
    else:
        value_words = tuple(vals)
    if any(d % per for d in flat_tuple(r_ret.stride) if isinstance(d, int)):
        raise ValueError(f"s2r {name}: copy stride of {r_ret} splits a fragment register")
    word = layout_index(Layout(r_ret.shape, tuple(_div(d, per) for d in flat_tuple(r_ret.stride))
                               if isinstance(r_ret.shape, tuple) else _div(r_ret.stride, per)), "r")
    word.check()
    thr_s = layout_index(src[0], "tid", nthr)
    value_offsets = tuple(src[1](v) for v in range(nval))
    consts = (0,) if kind is CopyKind.LDMATRIX else value_offsets
    sm = _swizzled_offset(_swizzle(smem), thr_s, (_mode_index(cpy_r, "r"), _mode_index(cpy_k, "kb")), consts)
    intrinsic = COPY_INTRINSICS.get(atom_name) if kind is CopyKind.LDMATRIX else (
        f"ld_shared_b{max(bits, 32)}")
    return SharedToRegisters(name, kind, cp.atom, intrinsic, cp, src, frag, size(cpy_r), sm, word,
                             value_words, value_offsets, nkb // per)


def _div(d, per):
    return d // per if isinstance(d, int) else d


def _fragment_view(frag):
    """The fragment as (V, Rest...) for ``retile``: mode 0 the atom values, then the rest."""
    return make_layout(frag[0], *list(frag[1])) if isinstance(frag[1].shape, tuple) else frag


def _mma(cfg, et, mma, fa, fb, acc, kblocks, per):
    """The per-k-block MMA schedule from the fragment layouts."""
    ra, rb, rc = fa[1], fb[1], acc[1]                       # (RestM,RestK), (RestN,RestK), (RestM,RestN)
    mm, nn = size(rc[0]), size(rc[1])
    if size(ra[0]) != mm or size(rb[0]) != nn:
        raise ValueError(f"mma: fragments {fa}, {fb} do not match the accumulators {acc}")

    def words(frag_mode, var):
        lay = Layout(frag_mode.shape, tuple(_div(d, per) for d in flat_tuple(frag_mode.stride))) \
            if isinstance(frag_mode.shape, tuple) else Layout(frag_mode.shape, _div(frag_mode.stride, per))
        ix = layout_index(lay, var)
        ix.check()
        return ix

    a_regs = tuple(fa(v, 0) // per for v in range(0, size(fa[0]), per))
    b_regs = tuple(fb(v, 0) // per for v in range(0, size(fb[0]), per))
    acc_regs = tuple(acc(v, 0) for v in range(size(acc[0])))
    atom_name = mma.atom.name
    return MmaStage(mma.atom, MMA_INTRINSICS.get(atom_name), mma, kblocks, mm, nn,
                    words(ra[0], "m"), a_regs, words(rb[0], "n"), b_regs, acc,
                    layout_index(rc[0], "m"), layout_index(rc[1], "n"), acc_regs)


def _epilogue(cfg, out, mma):
    cid = mma.tv_C(make_identity_layout((cfg.bm, cfg.bn)))  # (Thr,(FrgV,(RestM,RestN))) -> (m,n)
    thr_row, thr_col = coord_index(cid[0], "tid", 2, cfg.threads)
    vals = cid[1]                                            # (FrgV,(RestM,RestN)) -> (m,n)
    n = size(vals)
    row, col = coord_index(vals, "e", 2)
    pair_row = pair_col = None
    first = flat_tuple(vals.shape)[0]
    if first == 2 and n % 2 == 0 and col.value(1) == col.value(0) + 1 and row.value(1) == row.value(0):
        pairs = composition(vals, Layout(n // 2, 2))         # p -> (m,n) of accumulator 2p
        pair_row, pair_col = coord_index(pairs, "p", 2)
    for ix in (thr_row, thr_col, row, col, pair_row, pair_col):
        if ix is not None:
            ix.check()
    return Epilogue(out, cid, thr_row, thr_col, row, col, pair_row, pair_col, n)


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
    per = 32 // et.bits if et.bits < 32 else 1
    stage = _mma(cfg, et, mma, a.s2r.frag, b.s2r.frag, acc, kblocks, per)
    epi = _epilogue(cfg, element_type(cfg.out), mma)
    eb = et.bits // 8
    acc_bytes = epi.acc_size * cfg.threads * (8 if et.name == "f64" else 4)
    pipe = Pipeline(cfg.stages, cfg.bk, kblocks, a.stage_elems, b.stage_elems, a.stage_elems * cfg.stages, eb,
                    max((a.stage_elems + b.stage_elems) * cfg.stages * eb, acc_bytes))
    return GemmPlan(cfg, et, a, b, stage, epi, pipe)


def mma_atom_mnk(name):
    """The (M, N, K) of an MMA atom of the tables."""
    from mma_atoms import get

    return get(name).shape_mnk
