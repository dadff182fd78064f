"""A GEMM plan derived with the layout algebra.

Given a :class:`GemmConfig` and the operands' majorness and alignment, build
the tiled MMA, the shared-memory layouts (swizzled), the global->shared and
shared->register tiled copies, and from their partitions every per-thread
index the kernel needs: a symbolic thread part (an expression in ``tid``)
plus constant value parts.

Conventions: A is ``(M,K)``, B is ``(N,K)`` (CuTe's TN view of ``C = A @ B``,
with ``B[n,k] = B_user[k,n]``), C is ``(M,N)``.  "K-major" means the K
coordinate is contiguous in global memory.
"""

from dataclasses import dataclass, field

import sympy

from layoutalg import (
    ComposedLayout, CopyAtom, Layout, Swizzle, composition, make_identity_layout, make_layout,
    make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma, rank, size,
    tile_to_shape,
)
from layoutalg.basis import basis_value
from layoutalg.inttuple import crd2idx, flat_tuple, idx2crd

from .config import GemmConfig
from .symbolic import coord_exprs, layout_expr, to_code

__all__ = ["GemmPlan", "OperandPlan", "make_plan", "TID"]

TID = sympy.Symbol("tid", integer=True, nonnegative=True)


def _name_bits(dtype):
    return {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64}[dtype]


# ---- shared-memory layouts ----------------------------------------------

def smem_layout(dtype, major, rows, bk):
    """The swizzled per-stage shared-memory layout ``# (rows, BK) -> element offset``.

    K-major: rows of K contiguous, swizzled so that ldmatrix's 8 row reads hit 8 distinct
    16-byte bank groups; MN-major: columns of M/N contiguous, likewise.
    """
    bits = _name_bits(dtype)
    vec = 128 // bits                        # elements per 16 bytes
    base = {16: 3, 32: 2, 64: 1}[bits]       # log2(vec): 16-byte units stay whole
    if major == "K":
        width = min(bk, 64 * 16 // bits)     # elements of one 128-byte row (or BK)
        units = width // vec                 # 16-byte units in a row
        b = max(0, min(3, units.bit_length() - 1))
        atom = composition(Swizzle(b, base, 3), Layout((8, width), (width, 1)))   # (8,W) -> offset
        return tile_to_shape(atom, (rows, bk))
    width = min(rows, 64 * 16 // bits)
    units = width // vec
    b = max(0, min(3, units.bit_length() - 1))
    atom = composition(Swizzle(b, base, 3), Layout((width, 8), (1, width)))       # (W,8) -> offset
    return tile_to_shape(atom, (rows, bk))


# ---- per-thread index extraction -----------------------------------------

def _inner(lay):
    return lay.inner if isinstance(lay, ComposedLayout) else lay


def _swizzle_of(lay):
    return lay.outer if isinstance(lay, ComposedLayout) else None


def _val_offsets(layout_modes, coords):
    return [sum(m(c) for m, c in zip(layout_modes, cs)) for cs in coords]


def _all_coords(shape):
    n = size(Layout(shape)) if not isinstance(shape, int) else shape
    return [idx2crd(i, shape) for i in range(n)]


@dataclass
class CopyPlan:
    """A per-thread copy schedule.

    ``thr``: code for the thread's part (offset or coordinates); ``vals``: per copy instruction,
    the constant part of the source and destination and the tile coordinate it covers.
    """

    atom: str
    vec: int                       # elements per instruction per thread
    items: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)


@dataclass
class OperandPlan:
    name: str                      # "A" or "B"
    major: str                     # "K" or "MN"
    rows: int                      # BM or BN
    smem: object                   # per-stage smem layout (maybe swizzled)
    smem_words: int                # cosize of one stage in elements
    g2s: CopyPlan = None
    s2r: CopyPlan = None
    frag_words: int = 0


@dataclass
class GemmPlan:
    config: GemmConfig
    a: OperandPlan
    b: OperandPlan
    mma: object                    # TiledMMA
    mma_calls: list                # per k-block: list of (a words, b words, c words)
    acc_size: int
    epilogue: list                 # per accumulator: (row const, col const)
    epi_thr: tuple                 # code for (row, col) thread part
    kblocks: int
    notes: dict = field(default_factory=dict)


def _g2s(cfg, op, major, vec, smem):
    """Global -> shared: threads tile the (rows, BK) tile with ``vec``-element vectors."""
    nthr = cfg.threads
    rows, bk = op.rows, cfg.bk
    if major == "K":
        tc = max(1, min(bk // vec, nthr))
        to = nthr // tc
        thr = Layout((to, tc), (tc, 1))                    # (ThrRow,ThrK) -> thr_idx
        val = Layout((1, vec))                             # (1,Vec) -> val_idx
    else:
        tc = max(1, min(rows // vec, nthr))
        to = nthr // tc
        thr = Layout((tc, to), (1, tc))
        val = Layout((vec, 1))
    bits = cfg.bits if cfg.dtype != "tf32" else 32
    nbytes = vec * bits // 8
    if nbytes >= 4 and cfg.dtype != "f32" or (cfg.dtype == "f32" and nbytes >= 4):
        atom_name = {16: "SM80_CP_ASYNC_CACHEGLOBAL_128", 8: "SM80_CP_ASYNC_CACHEALWAYS_64",
                     4: "SM80_CP_ASYNC_CACHEALWAYS_32"}[nbytes]
    else:
        atom_name = f"UniversalCopy_{nbytes * 8}"
    cp = make_tiled_copy(CopyAtom(atom_name, _copy_dtype(cfg.dtype)), thr, val)
    ident = make_identity_layout((rows, bk))               # (rows,BK) -> (row,k)
    src = cp.tidfrg_S(ident)                                # (Thr,FrgV,(RestR,RestK)) -> (row,k)
    dst = cp.tidfrg_D(_inner(smem))                        # (Thr,FrgV,(RestR,RestK)) -> smem offset
    if size(src[0]) != nthr:
        raise ValueError(f"g2s: copy uses {size(src[0])} threads, CTA has {nthr}")
    thr_rc = coord_exprs(src[0], TID, 2, nthr)
    thr_s = layout_expr(dst[0], TID, nthr)
    items = []
    rest_shape = src[2].shape
    for r in _all_coords(rest_shape):
        rc = _crd2(src[2](r))
        v0 = _crd2(src[1](0))
        s_off = dst[2](r) + dst[1](0)
        items.append(((rc[0] + v0[0], rc[1] + v0[1]), s_off))
    # every vector must be contiguous in smem
    for v in range(size(dst[1])):
        if dst[1](v) != dst[1](0) + v * (1 if True else 0):
            raise ValueError(f"g2s: vector of {vec} is not contiguous in shared memory layout {smem}")
    return CopyPlan(atom_name, vec, items, {
        "thr_row": to_code(thr_rc[0]), "thr_k": to_code(thr_rc[1]), "thr_smem": to_code(thr_s),
        "thr_vals": [dst[0](t) for t in range(nthr)],
        "tiled_copy": cp, "src": src, "dst": dst, "nbytes": nbytes})


def _crd2(x):
    """A rank-2 coordinate from a basis-strided layout's value (an int 0, E<i> or a sum of them)."""
    v = basis_value(x, 2)
    if isinstance(v, int):
        if v != 0:
            raise ValueError(f"expected a coordinate, got offset {v}")
        return (0, 0)
    return tuple(v)[:2]


def _copy_dtype(d):
    return {"tf32": "f32"}.get(d, d)


def _s2r(cfg, mma, op, smem, kblocks):
    """Shared -> registers: ldmatrix (or scalar loads) into the MMA fragments, per k-block."""
    bits = cfg.bits
    k_major = op.major == "K"
    if cfg.dtype in ("f16", "bf16"):
        atom_name = "SM75_U32x4_LDSM_N" if k_major else "SM75_U16x8_LDSM_T"
    elif cfg.dtype == "tf32" and k_major:
        atom_name = "SM75_U32x4_LDSM_N"
    else:
        atom_name = f"UniversalCopy_{bits}"
    atom = CopyAtom(atom_name, _copy_dtype(cfg.dtype))
    maker = make_tiled_copy_A if op.name == "A" else make_tiled_copy_B
    cp = maker(atom, mma)
    src = cp.tidfrg_S(_inner(smem))                         # (Thr,FrgV,(CpyR,CpyK)) -> smem offset
    nthr = cfg.threads
    thr_s = layout_expr(src[0], TID, nthr)
    # register fragment: (MMA, MMA_R, MMA_K) compact; the copy's destination view of it
    part = (mma.tv_A if op.name == "A" else mma.tv_B)(Layout((op.rows, cfg.bk)))
    frg_shape = part[1].shape                               # (FrgV,(RestR,RestK))
    frag = Layout(frg_shape)                                # fragment element offsets
    nfrag = size(frag)
    retiled = cp.retile(_fragment_view(frag))               # (CPY,(CpyR,CpyK)) -> fragment offset
    items = []
    per = 32 // bits if bits < 32 else 1
    rest = src[2]
    ret_rest = retiled[1] if rank(retiled) == 2 else None
    ncpy = size(rest)
    for j in range(ncpy):
        crd = idx2crd(j, rest.shape)
        s_off = rest(crd) + src[1](0)
        rcrd = tuple(crd2idx(c, sh) for c, sh in zip(crd, rest.shape)) if isinstance(crd, tuple) else (crd,)
        if rank(retiled) != 1 + len(rcrd):
            raise ValueError(f"s2r: retiled fragment {retiled} does not match copy rest {rest}")
        vals = [retiled(v, *rcrd) for v in range(size(src[1]))]
        k_of = _k_of_fragment(frag, vals[0])
        s_offs = [rest(crd) + src[1](v) for v in range(size(src[1]))]
        items.append((s_off, vals, k_of, s_offs))
    return CopyPlan(atom_name, size(src[1]), items, {
        "thr_smem": to_code(thr_s), "tiled_copy": cp, "frag": frag, "nfrag": nfrag, "per_word": per,
        "thr_vals": [src[0](t) for t in range(nthr)], "src": src})


def _flat_idx(j, lay):
    return (j,)


def _fragment_view(frag):
    """The fragment as (V, Rest...) for ``retile``: mode 0 the atom values, then the rest."""
    return make_layout(frag[0], *list(frag[1])) if isinstance(frag[1].shape, tuple) else frag


def _k_of_fragment(frag, off):
    """The k-block of a fragment element offset (its RestK coordinate)."""
    crd = idx2crd(off, frag.shape)
    return crd[1][1] if isinstance(crd[1], tuple) else 0


def make_plan(cfg, a_major="K", b_major="K", a_vec=None, b_vec=None):
    """Derive the whole plan.  ``x_vec``: elements per global->shared vector (default: 16 bytes)."""
    if not isinstance(cfg, GemmConfig):
        raise TypeError(f"make_plan: expected a GemmConfig, got {cfg!r}")
    full = 128 // cfg.bits
    a_vec = a_vec or full
    b_vec = b_vec or full
    if cfg.dtype == "f32":
        mma = make_tiled_mma("UniversalFMA", (16, cfg.threads // 16, 1))
    else:
        wm, wn = cfg.warps_m, cfg.warps_n
        am, an, ak = _atom_mnk(cfg)
        perm = (wm * am, wn * an * (2 if cfg.dtype != "f64" else 1), ak)
        mma = make_tiled_mma(cfg.mma_atom, (wm, wn, 1), perm)
    tm, tn, tk = mma.tile_size_mnk
    if cfg.bm % tm or cfg.bn % tn or cfg.bk % tk:
        raise ValueError(f"make_plan: CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk} is not a multiple of the "
                         f"tiled MMA's {tm}x{tn}x{tk}")
    ops = []
    for name, major, rows, vec in (("A", a_major, cfg.bm, a_vec), ("B", b_major, cfg.bn, b_vec)):
        sm = smem_layout(cfg.dtype, "K" if major == "K" else "MN", rows, cfg.bk)
        op = OperandPlan(name, "K" if major == "K" else "MN", rows, sm, size(_inner(sm)))
        op.g2s = _g2s(cfg, op, op.major, vec, sm)
        ops.append(op)
    kblocks = cfg.bk // tk
    for op in ops:
        op.s2r = _s2r(cfg, mma, op, op.smem, kblocks)
    a, b = ops
    # accumulators and MMA calls
    cpart = mma.tv_C(Layout((cfg.bm, cfg.bn)))             # (thr,(FrgV,(RestM,RestN))) -> (M,N) idx
    acc = Layout(cpart[1].shape)
    acc_size = size(acc)
    fa, fb = a.s2r.notes["frag"], b.s2r.notes["frag"]
    calls = _mma_calls(cfg, fa, fb, acc, kblocks)
    ident = make_identity_layout((cfg.bm, cfg.bn))
    cid = mma.tv_C(ident)                                   # (thr,(FrgV,(RestM,RestN))) -> (m,n)
    thr_rc = coord_exprs(cid[0], TID, 2, cfg.threads)
    epi = []
    for e in range(acc_size):
        crd = idx2crd(e, acc.shape)
        epi.append(_crd2(cid[1](crd)))
    return GemmPlan(cfg, a, b, mma, calls, acc_size, epi, (to_code(thr_rc[0]), to_code(thr_rc[1])),
                    kblocks, {"acc_layout": acc})


def _atom_mnk(cfg):
    return {"f16": (16, 8, 16), "bf16": (16, 8, 16), "tf32": (16, 8, 8), "f64": (8, 8, 4)}[cfg.dtype]


def _mma_calls(cfg, fa, fb, acc, kblocks):
    """For each k-block, the MMA instructions: fragment element offsets of A, B and C operands."""
    ra = fa[1].shape                                        # (RestM, RestK)
    rb = fb[1].shape
    rc = acc[1].shape                                       # (RestM, RestN)
    mm = ra[0] if isinstance(ra, tuple) else ra
    nn = rb[0] if isinstance(rb, tuple) else rb
    nva, nvb, nvc = size(fa[0]), size(fb[0]), size(acc[0])
    out = []
    for kb in range(kblocks):
        calls = []
        for n in range(nn):
            for m in range(mm) if n % 2 == 0 else reversed(range(mm)):   # serpentine: reuse B
                aoff = [fa(v, (m, kb)) for v in range(nva)]
                boff = [fb(v, (n, kb)) for v in range(nvb)]
                coff = [acc(v, (m, n)) for v in range(nvc)]
                calls.append((aoff, boff, coff))
        out.append(calls)
    return out
