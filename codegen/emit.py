"""numba source of the ``mma.sync`` GEMM kernel of a :class:`~codegen.plan.GemmPlan`.

The kernel is a composition of :mod:`codegen.cute`'s pieces, written as
``examples/f16_runtime_shape.py`` writes one by hand: the plan's layouts, tiled copies and
tiled MMA are the module's constants, the global tensors are layouts of the kernel's
run-time sizes and strides (one compilation serves every ``M``, ``N``, ``K``), and the
kernel reads top to bottom as CuTe's SM80 mainloop does:

* **tile**: the tile scheduler (:class:`codegen.cute.TileScheduler`, the Hopper kernel's)
  gives the CTA its tile in the grouped raster;
* **global -> shared**: ``cp.async`` (or element-wise loads) of the tiled copies
  ``G2S_A``/``G2S_B`` into ``STAGES`` swizzled stages, with the K residue first
  (``domain_offset``), so only k-tile 0 is partial in K and only its copies test columns
  (identity-tensor predicates). Rows past ``M`` or ``N`` (:data:`RESIDUES`): in the "shift"
  variant a tile past the edge loads the last full tile instead, so the main loop has no
  predicate; in the "predicate" variant (problems under a tile) they are zero-filled under
  predicates computed once;
* **shared -> registers**: ``ldmatrix`` (or shared loads) of ``S2R_A``/``S2R_B``, one
  k-block ahead of the MMAs;
* **MMA**: ``cute.gemm`` of the tiled MMA over the k-block's fragments;
* **epilogue**: ``C = alpha * acc + beta * C`` in registers, converted to C's type; an
  interior tile of a row-major C with ``beta == 0`` is stored in pairs by ``R2G_C``, the
  rest element by element under identity-tensor predicates.

The kernel's arguments (:func:`codegen.args.mma_sync_args`, declared once) are the global
byte addresses of A, B and C, the problem size, element strides, alpha, beta and the tile
scheduler's numbers.
"""

from __future__ import annotations

from layoutalg import cosize

from .args import mma_sync_args
from .plan import CopyKind, GemmPlan, _inner, smem_layout

__all__ = ["emit_source", "KERNEL_NAME", "smem_bytes", "scheduler", "RESIDUES", "residue_for"]

KERNEL_NAME = "gemm_kernel"

#: numpy storage type of each element type in the kernel's tensors (bfloat16 as its bits).
_STORAGE = {"f16": "float16", "bf16": "uint16", "tf32": "float32", "f32": "float32", "f64": "float64"}


def scheduler(config):
    """The tile scheduler of ``config``'s kernel: one tile a CTA, in the grouped raster."""
    from .cute.scheduler import TileScheduler

    return TileScheduler(bm=config.bm, bn=config.bn, bk=config.bk, group_m=config.group_m)


def smem_bytes(plan):
    """Dynamic shared memory of ``plan``'s kernel: the stages of A, then those of B."""
    return _b_offset(plan) + cosize(_inner(_stages(plan, plan.b))) * plan.pipeline.elem_bytes


def _b_offset(plan):
    """Bytes before B's stages: A's, rounded up to 128 bytes."""
    return -(-cosize(_inner(_stages(plan, plan.a))) * plan.pipeline.elem_bytes // 128) * 128


def _stages(plan, op):
    """``(rows, BK, PIPE) -> element`` of one operand's shared stages."""
    cfg = plan.config
    return smem_layout(cfg.dtype, op.major, op.rows, cfg.bk, cfg.stages)


def _tiled_copy(tc):
    """Source of a tiled copy of the plan."""
    return (f"make_tiled_copy_impl(CopyAtom({tc.atom.name!r}, {tc.atom.dtype!r}), {tc.layout_tv!r}, "
            f"{tc.tiler_mn!r})")


def _tiled_mma(mma):
    perm = mma.permutation
    tail = f", {perm!r}" if perm is not None and any(p is not None for p in perm) else ""
    return f"make_tiled_mma({mma.atom.name!r}, {mma.atom_layout!r}{tail})"


def _global_layout(op, rows, ld_row, ld_k):
    """Source of the ``(rows, K)`` layout of an operand from the kernel's arguments: the
    contiguous mode's stride is 1, the other assumed a multiple of the copy's vector."""
    g = op.g2s
    if g.kind is CopyKind.ELEMENTWISE:
        return f"cute.make_layout(({rows}, p.K), ({ld_row}, {ld_k}))"
    if op.major == "K":
        return f"cute.make_layout(({rows}, p.K), (cute.assume({ld_row}, {g.vec}), 1))"
    return f"cute.make_layout(({rows}, p.K), (1, cute.assume({ld_k}, {g.vec})))"


def _k_divisor(plan):
    """A divisor of K the operands' vectors promise (a K-major vector never crosses K)."""
    d = 1
    for op in plan.operands:
        if op.major == "K" and op.g2s.kind is CopyKind.CP_ASYNC:
            d = max(d, op.g2s.vec)
    return d


def _row_divisor(op):
    """A divisor of the shifted corner of an operand's tile: its vector, where the vectors run
    along the rows (an MN-major operand's rows are a multiple of it, as are the tiles)."""
    return op.g2s.vec if op.major == "MN" and op.g2s.kind is CopyKind.CP_ASYNC else 1


def _pred_layout(op, plan):
    """One predicate a copy call of the operand's tile: ``(CPY_M, CPY_K)`` for vector copies,
    ``(CPY, CPY_M, CPY_K)`` for element-wise ones (a call an element)."""
    from layoutalg import make_identity_tensor

    part = op.g2s.tiled_copy.get_slice(0).partition_S(make_identity_tensor((op.rows, plan.config.bk)))
    return part.layout.shape if op.g2s.kind is CopyKind.ELEMENTWISE else part.layout.shape[1:]


def _predicates(op):
    """The device function that fills an operand's predicates."""
    return "element_predicates" if op.g2s.kind is CopyKind.ELEMENTWISE else "call_predicates"


#: How the kernel meets rows past M and N: "shift" (the problem is at least a tile in M and
#: N: a tile past the edge loads the last BM rows (BN columns) instead, all inside, so the
#: main loop has no predicate) or "predicate" (any size: rows past the edge zero-filled
#: under predicates).
RESIDUES = ("shift", "predicate")


def residue_for(config, M, N):
    """The residue variant a problem of ``M x N`` needs."""
    return "shift" if M >= config.bm and N >= config.bn else "predicate"


def emit_source(plan: GemmPlan, residue="shift", user=None):
    """Source text of the kernel module for ``plan`` and ``residue`` (:data:`RESIDUES`);
    ``user``: a user's element-wise epilogue (:class:`~codegen.epilogue_fn.EpilogueFunction`),
    applied in the element-wise epilogue to each accumulator inside C."""
    if residue not in RESIDUES:
        raise ValueError(f"emit: residue {residue!r} is not one of {', '.join(RESIDUES)}")
    if plan.pipeline.kblocks < 2:
        raise ValueError("emit: one k-block per k-tile leaves nothing to double-buffer; use a larger BK")
    cfg, p = plan.config, plan
    mma = plan.mma.tiled_mma
    et, out = plan.etype.name, cfg.out
    acc = "float64" if et == "f64" else "float32"
    sa, sb = _stages(p, p.a), _stages(p, p.b)
    tm, tn, tk = mma.tile_size_mnk
    pair = p.epilogue.pairs and out in ("f16", "bf16", "f32") and user is None
    args = mma_sync_args(cfg.dtype, user is not None)
    obits = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[out]
    subs = dict(
        dtype=cfg.dtype, out=out, acc=acc, elem=_STORAGE[et], ostore=_STORAGE[out], ebytes=p.pipeline.elem_bytes,
        obytes=obits // 8, bm=cfg.bm, bn=cfg.bn, bk=cfg.bk, stages=cfg.stages, threads=cfg.threads,
        scheduler=repr(scheduler(cfg)), kblocks=p.pipeline.kblocks, pending=cfg.stages - 2,
        mma=_tiled_mma(mma), mma_name=mma.atom.name, tm=tm, tn=tn, tk=tk,
        sa=repr(sa), sb=repr(sb), sb_offset=_b_offset(p),
        smem=smem_bytes(p), g2s_a=_tiled_copy(p.a.g2s.tiled_copy), g2s_b=_tiled_copy(p.b.g2s.tiled_copy),
        s2r_a=f"make_tiled_copy_A(CopyAtom({p.a.s2r.atom.name!r}, {p.a.s2r.atom.dtype!r}), MMA)",
        s2r_b=f"make_tiled_copy_B(CopyAtom({p.b.s2r.atom.name!r}, {p.b.s2r.atom.dtype!r}), MMA)",
        pred_a=repr(_pred_layout(p.a, p)), pred_b=repr(_pred_layout(p.b, p)),
        layout_a=_global_layout(p.a, "p.M", "p.sam", "p.sak"), layout_b=_global_layout(p.b, "p.N", "p.sbn", "p.sbk"),
        kdiv=_k_divisor(p), mdiv=_row_divisor(p.a), ndiv=_row_divisor(p.b), a_major=p.a.major, b_major=p.b.major,
        align_a=_align(p.a, p), align_b=_align(p.b, p),
        clear_a=_clear(p.a, "A"), clear_b=_clear(p.b, "B"), pred_fn_a=_predicates(p.a), pred_fn_b=_predicates(p.b),
        args=args.def_line(KERNEL_NAME), pack=args.pack_line(), args_name=args.name,
        user_flag=", True" if user is not None else "",
        oalign2=obits // 4, oalign2m1=obits // 4 - 1, residue=residue,
        user_param=", t" if user is not None else "", user_arg=", epilogue_tensors(p)" if user is not None else "",
        user_apply=_USER_APPLY.format(acc=acc) if user is not None else "",
    )
    for k, v in _RESIDUE_PARTS[residue].items():
        subs[k] = v.format(**subs)
    subs["to_out"] = _STORE_C[out].format(**subs)
    text = _HEADER.format(**subs)
    if user is not None:
        from .epilogue_fn import epilogue_source

        text += epilogue_source(user)
    if pair:
        text += _R2G.format(**subs, r2g_atom=f"UniversalCopy_{2 * obits}")
    for fn in sorted({_predicates(p.a), _predicates(p.b)}):
        text += _PREDICATES[fn]
    text += _KERNEL.format(**subs)
    text += (_EPILOGUE_PAIRS if pair else _EPILOGUE_ONE).format(**subs)
    text += _EPILOGUE_EDGE.format(**subs, load_c=_LOAD_C[out].format(**subs), store_c=_STORE_C[out].format(**subs))
    return text


def _align(op, plan):
    """Bytes the operand's address is promised to be aligned to: its vector's."""
    g = op.g2s
    return plan.pipeline.elem_bytes if g.kind is CopyKind.ELEMENTWISE else g.nbytes


def _clear(op, name):
    """Element-wise copies skip what their predicates exclude (a cp.async zero-fills it): the
    stage of k-tile 0, whose columns before the matrix must read as zeros, is cleared first."""
    if op.g2s.kind is not CopyKind.ELEMENTWISE:
        return ""
    return (f"    cute.clear(t{name}s{name}[None, None, None, 0])  # element-wise copies skip, not zero-fill: "
            f"k-tile 0's columns before K\n")


_HEADER = '''"""Generated GEMM kernel (mma.sync): C = alpha * A @ B + beta * C ({dtype} in, {acc} accumulate, {out} out).

A composition of codegen.cute's tensors, tiled copies and tiled MMA (see codegen/emit.py).
Plan: CTA tile {bm}x{bn}x{bk}, {threads} threads, {stages} shared-memory stages; tiled MMA {mma_name}
(tile {tm}x{tn}x{tk}); A {a_major}-major, B {b_major}-major; residue: {residue}.
"""
import numpy as np
from numba import cuda, float32, float64, int8, int64, uint32  # noqa: F401

from codegen import cute
from codegen.args import mma_sync_args
from codegen.cute import TileScheduler
from codegen.intrinsics import u32_as_f32  # noqa: F401
from layoutalg import ComposedLayout, CopyAtom, Layout, Swizzle, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma  # noqa: F401
from layoutalg.tiled_copy import make_tiled_copy_impl

BM, BN, BK, STAGES = {bm}, {bn}, {bk}, {stages}  # CTA tile; shared-memory stages
MMA = {mma}  # {threads} threads, tile {tm}x{tn}x{tk}
KBLOCKS = {kblocks}  # k-blocks a k-tile: BK / {tk}
PENDING = {pending}  # cp.async groups still in flight when a stage is read
SA = {sa}  # (BM,BK,PIPE) -> smem element
SB = {sb}  # (BN,BK,PIPE) -> smem element
SB_OFFSET, SMEM_BYTES = {sb_offset}, {smem}  # B's stages follow A's
G2S_A = {g2s_a}  # (Thr,Val) -> (m,k) of A's tile
G2S_B = {g2s_b}  # (Thr,Val) -> (n,k) of B's tile
S2R_A = {s2r_a}  # A's fragments from shared memory
S2R_B = {s2r_b}  # B's fragments
PRED_A = Layout({pred_a})  # one predicate a copy call of A's tile
PRED_B = Layout({pred_b})  # of B's
SCHEDULER = {scheduler}  # one tile a CTA, grouped raster
{args_name} = mma_sync_args({dtype!r}{user_flag}).tuple_class()
'''

_R2G = '''R2G_C = make_tiled_copy_impl(CopyAtom({r2g_atom!r}, {out!r}), MMA.get_layoutC_TV(), ({tm}, {tn}))  # pairs of C
'''

#: The parts of the kernel that differ between the residue variants.
_RESIDUE_PARTS = {
    "shift": dict(
        load_corner="    m_load = min(work.m0, p.M - BM)  # a tile past the edge loads the last BM rows: all inside\n"
                    "    n_load = min(work.n0, p.N - BN)",
        predicates="    pA0, pB0 = cute.make_fragment_like(PRED_A, np.int8), cute.make_fragment_like(PRED_B, np.int8)\n"
                   "    {pred_fn_a}(tAcA, pA0, p.M, True)  # k-tile 0: its columns before K\n"
                   "    {pred_fn_b}(tBcB, pB0, p.N, True)",
        load_a="cute.copy(G2S_A, ", load_b="cute.copy(G2S_B, "),
    "predicate": dict(
        load_corner="    m_load, n_load = work.m0, work.n0  # rows and columns past the edge: zero-filled",
        predicates="    pA0, pA = cute.make_fragment_like(PRED_A, np.int8), cute.make_fragment_like(PRED_A, np.int8)\n"
                   "    pB0, pB = cute.make_fragment_like(PRED_B, np.int8), cute.make_fragment_like(PRED_B, np.int8)\n"
                   "    {pred_fn_a}(tAcA, pA0, p.M, True)  # k-tile 0: rows and columns\n"
                   "    {pred_fn_a}(tAcA, pA, p.M, False)  # the others: rows only\n"
                   "    {pred_fn_b}(tBcB, pB0, p.N, True)\n"
                   "    {pred_fn_b}(tBcB, pB, p.N, False)",
        load_a="cute.copy_if(G2S_A, pA, ", load_b="cute.copy_if(G2S_B, pB, "),
}

_PREDICATES = {
    "call_predicates": '''

@cuda.jit(device=True, inline="always")
def call_predicates(tXcX, pX, rows, k_first):
    """(CPY_M,CPY_K): a vector copy's row is below ``rows`` and, in k-tile 0 (``k_first``,
    the partial one), its columns are not before the matrix."""
    for m in range(cute.size(pX, 0)):
        for k in range(cute.size(pX, 1)):
            c = tXcX[0, m, k, 0]  # (row, k) of the vector's first element in k-tile 0
            pX[m, k] = (c[0] < rows) & ((c[1] >= 0) | (not k_first))
''',
    "element_predicates": '''

@cuda.jit(device=True, inline="always")
def element_predicates(tXcX, pX, rows, k_first):
    """(CPY,CPY_M,CPY_K): an element's row is below ``rows`` and, in k-tile 0 (``k_first``),
    its column is not before the matrix."""
    for v in range(cute.size(pX, 0)):
        for m in range(cute.size(pX, 1)):
            for k in range(cute.size(pX, 2)):
                c = tXcX[v, m, k, 0]  # (row, k) of the element in k-tile 0
                pX[v, m, k] = (c[0] < rows) & ((c[1] >= 0) | (not k_first))
''',
}

_KERNEL = '''

{args}
    {pack}
    tid = cuda.threadIdx.x
    work = SCHEDULER.work(SCHEDULER.params(p), SCHEDULER.first())  # this CTA's tile
    interior = (work.m0 + BM <= p.M) & (work.n0 + BN <= p.N)  # the tile lies inside C
{load_corner}
    a_row0, b_row0 = cute.assume(m_load, {mdiv}), cute.assume(n_load, {ndiv})  # multiples of the row vectors

    # ---- tensors: (M,K), (N,K), (M,N) of the run-time sizes; the K residue first ----------
    # k-tile t covers k in [t*BK - kres, (t+1)*BK - kres): only k-tile 0 is partial
    k_shift = cute.assume(p.K - ((p.K + BK - 1) // BK) * BK, {kdiv})  # -kres
    a_addr = p.A + work.l * p.sal * {ebytes}  # matrix l of a batch
    b_addr = p.B + work.l * p.sbl * {ebytes}
    c_addr = p.C + work.l * p.scl * {obytes}
    mA = cute.make_tensor(cute.make_ptr(np.{elem}, a_addr, {align_a}), {layout_a})  # (M,K) -> A
    mB = cute.make_tensor(cute.make_ptr(np.{elem}, b_addr, {align_b}), {layout_b})  # (N,K) -> B
    gA = cute.local_tile(cute.domain_offset((a_row0, k_shift), mA), (BM, BK), (0, None))  # (BM,BK,k)
    gB = cute.local_tile(cute.domain_offset((b_row0, k_shift), mB), (BN, BK), (0, None))  # (BN,BK,k)
    cA = cute.local_tile(cute.domain_offset((m_load, k_shift), cute.make_identity_tensor((p.M, p.K))), (BM, BK), (0, None))
    cB = cute.local_tile(cute.domain_offset((n_load, k_shift), cute.make_identity_tensor((p.N, p.K))), (BN, BK), (0, None))
    sA = cute.dynamic_shared_tensor(np.{elem}, SA, 0)  # (BM,BK,PIPE)
    sB = cute.dynamic_shared_tensor(np.{elem}, SB, SB_OFFSET)  # (BN,BK,PIPE)

    # ---- global -> shared: the copies' partitions and their predicates ----------------------
    g2s_a, g2s_b = G2S_A.get_slice(tid), G2S_B.get_slice(tid)
    tAgA, tAsA, tAcA = g2s_a.partition_S(gA), g2s_a.partition_D(sA), g2s_a.partition_S(cA)  # (CPY,CPY_M,CPY_K,k|PIPE)
    tBgB, tBsB, tBcB = g2s_b.partition_S(gB), g2s_b.partition_D(sB), g2s_b.partition_S(cB)
    k_tiles = cute.size(tAgA, 3)  # ceil_div(K, BK)
{predicates}

    # ---- shared -> registers, and the accumulators --------------------------------------------
    thr_mma = MMA.get_slice(tid)
    tCrA = thr_mma.partition_fragment_A(sA[None, None, 0])  # (MMA,MMA_M,MMA_K)
    tCrB = thr_mma.partition_fragment_B(sB[None, None, 0])  # (MMA,MMA_N,MMA_K)
    tCrC = thr_mma.partition_fragment_C(cute.make_identity_tensor((BM, BN)))  # (MMA,MMA_M,MMA_N)
    cute.clear(tCrC)
    s2r_a, s2r_b = S2R_A.get_slice(tid), S2R_B.get_slice(tid)
    tXsA, tXrA = s2r_a.partition_S(sA), s2r_a.retile_D(tCrA)  # (CPY,CPY_M,CPY_K,PIPE), (CPY,CPY_M,CPY_K)
    tXsB, tXrB = s2r_b.partition_S(sB), s2r_b.retile_D(tCrB)

    # ---- prologue: STAGES-1 k-tiles in flight --------------------------------------------------
{clear_a}{clear_b}    cute.copy_if(G2S_A, pA0, tAgA[None, None, None, 0], tAsA[None, None, None, 0])
    cute.copy_if(G2S_B, pB0, tBgB[None, None, None, 0], tBsB[None, None, None, 0])
    cute.cp_async_fence()
    for s in range(1, STAGES - 1):
        if s < k_tiles:
            {load_a}tAgA[None, None, None, s], tAsA[None, None, None, s])
            {load_b}tBgB[None, None, None, s], tBsB[None, None, None, s])
        cute.cp_async_fence()
    read, write, k_next = 0, STAGES - 1, STAGES - 1
    cute.cp_async_wait(PENDING)
    cuda.syncthreads()
    tXsA_p, tXsB_p = tXsA[None, None, None, read], tXsB[None, None, None, read]
    cute.copy(S2R_A, tXsA_p[None, None, 0], tXrA[None, None, 0])
    cute.copy(S2R_B, tXsB_p[None, None, 0], tXrB[None, None, 0])

    # ---- main loop: k-tiles; k-blocks with the next one's fragments loaded during the MMAs ----
    for kt in range(k_tiles):
        for kb in range(KBLOCKS):
            if kb == KBLOCKS - 1:  # the next stage has landed: read it from here on
                tXsA_p, tXsB_p = tXsA[None, None, None, read], tXsB[None, None, None, read]
                cute.cp_async_wait(PENDING)
                cuda.syncthreads()
            kb_next = (kb + 1) % KBLOCKS
            cute.copy(S2R_A, tXsA_p[None, None, kb_next], tXrA[None, None, kb_next])
            cute.copy(S2R_B, tXsB_p[None, None, kb_next], tXrB[None, None, kb_next])
            if kb == 0:  # the next k-tile into the stage read last
                if k_next < k_tiles:
                    {load_a}tAgA[None, None, None, k_next], tAsA[None, None, None, write])
                    {load_b}tBgB[None, None, None, k_next], tBsB[None, None, None, write])
                cute.cp_async_fence()
                k_next += 1
                write = read
                read = read + 1 if read < STAGES - 1 else 0
            cute.gemm(MMA, tCrC, tCrA[None, None, kb], tCrB[None, None, kb])
    cute.cp_async_wait(0)

    # ---- epilogue: C = alpha * acc + beta * C, in C's type --------------------------------------
    for i in range(cute.size(tCrC)):
        tCrC[i] = p.alpha * tCrC[i]
'''

_EPILOGUE_PAIRS = '''    if interior & (p.beta == 0) & (p.scn == 1) & ((p.scm & 1) == 0) & ((c_addr & {oalign2m1}) == 0):
        # an interior tile of a row-major C: the pairs of adjacent columns, stored whole
        mC = cute.make_tensor(cute.make_ptr(np.{ostore}, c_addr, {oalign2}), cute.make_layout((p.M, p.N), (cute.assume(p.scm, 2), 1)))
        gC = cute.local_tile(mC, (BM, BN), (work.m0 // BM, work.n0 // BN))  # (BM,BN)
        tCrO = cute.make_fragment_like(tCrC, np.{ostore})
        {to_out}
        r2g = R2G_C.get_slice(tid)
        cute.copy(R2G_C, r2g.retile_S(tCrO), r2g.partition_D(gC))
    else:
        edge_epilogue(p, c_addr, thr_mma, tCrC, work, m_load, n_load{user_arg})
'''

_EPILOGUE_ONE = '''    edge_epilogue(p, c_addr, thr_mma, tCrC, work, m_load, n_load{user_arg})
'''

_EPILOGUE_EDGE = '''

@cuda.jit(device=True, inline="always")
def edge_epilogue(p, c_addr, thr_mma, tCrC, work, m_load, n_load{user_param}):
    """C of any strides, element by element: the accumulators of the rows and columns loaded
    from (m_load, n_load) that are the tile's own, from its corner (m0, n0) to the edge of C.
    C is read only when beta != 0 (BLAS: C may hold NaN otherwise)."""
    mC = cute.make_tensor(cute.make_ptr(np.{ostore}, c_addr, {obytes}), cute.make_layout((p.M, p.N), (p.scm, p.scn)))
    tCgC = thr_mma.partition_C(cute.local_tile(cute.domain_offset((m_load, n_load), mC), (BM, BN), (0, 0)))  # -> C
    own = cute.domain_offset((m_load - work.m0, n_load - work.n0), cute.make_identity_tensor((BM, BN)))
    tCcC = thr_mma.partition_C(own)  # (MMA,MMA_M,MMA_N) -> (m - m0, n - n0)
    pC = cute.make_fragment_like(tCrC, np.int8)
    cute.mark_in_bounds(pC, tCcC, (p.M - work.m0, p.N - work.n0))  # the tile's own, inside C
{user_apply}    if p.beta != 0:
        tCrD = cute.make_fragment_like(tCrC, np.{ostore})
        cute.copy_if(pC, tCgC, tCrD)
        for i in range(cute.size(tCrC)):
            tCrC[i] += p.beta * {load_c}
    tCrO = cute.make_fragment_like(tCrC, np.{ostore})
    {store_c}
    cute.copy_if(pC, tCrO, tCgC)
'''

#: The user's epilogue (``t``: its tensors), at each accumulator of the tile's own inside C.
_USER_APPLY = '''    for i in range(cute.size(tCrC)):  # C[m, n] = f(alpha * acc, m, n, *t) + beta * C[m, n]
        if pC[i]:
            c = tCcC[i]  # (m - m0, n - n0)
            tCrC[i] = {acc}(user_epilogue(tCrC[i], work.m0 + c[0], work.n0 + c[1], t))
'''

#: The value of C element ``i`` of the fragment ``tCrD`` as the accumulator's type.
_LOAD_C = {
    "f16": "{acc}(tCrD[i])",
    "bf16": "u32_as_f32(uint32(tCrD[i]) << 16)",
    "f32": "{acc}(tCrD[i])",
    "f64": "{acc}(tCrD[i])",
}

#: The accumulators ``tCrC`` into the fragment ``tCrO`` of C's type.
_STORE_C = {
    "f16": 'cute.convert(tCrC, tCrO, "f16")',
    "bf16": 'cute.convert(tCrC, tCrO, "bf16")',
    "f32": "cute.copy(tCrC, tCrO)",
    "f64": "cute.copy(tCrC, tCrO)",
}
