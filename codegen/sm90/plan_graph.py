"""The Hopper GEMM plan as a Graphviz graph: the warp-specialized pipeline.

global A, B -> (the producer's TMA loads) -> a ring of shared-memory stages, each with its
"full" and "empty" mbarrier -> (wgmma, through descriptors) -> each consumer warpgroup's
accumulators -> its C staging buffers -> (TMA stores) -> global C; where the kernel
overlaps the epilogue with the next tile's MMAs, the staging edge says so. The edges carry
what the layouts cost: whether the TMA unit takes each box (:func:`layoutalg.check_tma`) and
the bank conflicts of the staging stores (:func:`layoutalg.analyze_shared`).

>>> from codegen import GemmConfig
>>> from codegen.sm90.plan import make_wgmma_plan
>>> g = wgmma_plan_graph(make_wgmma_plan(GemmConfig.default("f16", arch=(9, 0)), "K", "MN"))
>>> sorted(n for n in g.nodes if n.startswith("stage"))
['stage0', 'stage1', 'stage2', 'stage3']
>>> ("producer", "stage0") in [(s, d) for s, d, _ in g.edges]
True
>>> [a["label"].splitlines()[-1] for s, d, a in g.edges if d == "producer"]
['check_tma: legal, swizzle 128 bytes', 'check_tma: legal, swizzle 128 bytes']
>>> [a["label"].splitlines()[-1] for s, d, a in g.edges if d == "staging1"]
['smem: 64 instr., 64 wavefronts a warp (ideal 64): conflict-free']
"""

from layoutalg import CopyAtom, analyze_shared, check_tma
from layoutalg.tiled_copy import make_tiled_copy_impl
from mma_atoms.mma_sm90 import clayout_64xn

from ..plan_graph import MEMORY_FILL, plan_dot_graph
from .emit import overlaps_epilogue
from .plan import WgmmaPlan


def _tma_line(op, dtype):
    """Whether the TMA unit takes the operand's box (its stage layout, inner mode K or MN)."""
    box = (op.box[1], op.box[0]) if op.major == "K" else op.box
    r = check_tma(op.smem, dtype, inner=1 if op.major == "K" else 0, box=box)
    return f"check_tma: legal, swizzle {r.swizzle_bytes} bytes" if r.legal else f"check_tma: illegal ({r.rule})"


def _staging_line(plan):
    """The bank conflicts of a consumer's stores of its register pairs (CLayout_64xN, 32 bits
    each) into the C staging layout."""
    cp = make_tiled_copy_impl(CopyAtom("UniversalCopy_32", plan.out.name), clayout_64xn(plan.config.bn),
                              (64, plan.config.bn))
    a = analyze_shared(cp, plan.store.smem, "D")
    w = a.warps[0]
    return (f"smem: {w.instructions} instr., {w.wavefronts} wavefronts a warp (ideal {w.ideal}): "
            + (f"{a.ways}-way bank conflicts" if a.ways > 1 else "conflict-free"))

__all__ = ["wgmma_plan_graph"]


def wgmma_plan_graph(plan, *, name="gemm_sm90_plan", rankdir="LR"):
    """A :class:`~layoutalg.draw.graphs.DotGraph` of a :class:`WgmmaPlan`'s pipeline.

    Node ids: ``gA gB producer stage0.. consumer1.. staging1.. gC``; the edges carry the
    TMA boxes, the mbarrier protocol, the wgmma descriptors and the epilogue.
    """
    if not isinstance(plan, WgmmaPlan):
        raise TypeError(f"wgmma_plan_graph: expected a WgmmaPlan (codegen.sm90.make_wgmma_plan(...)), "
                        f"got {type(plan).__name__}")
    cfg, a, b, st = plan.config, plan.a, plan.b, plan.store
    g = plan_dot_graph(name, rankdir,
                       f"Hopper GEMM plan: {cfg.dtype} -> {cfg.out}, CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk}, "
                       f"1 producer + {plan.consumers} consumer warpgroups, {cfg.stages} stages, persistent CTAs",
                       nodesep="0.4", ranksep="1.0")
    for op in (a, b):
        mn = "M" if op.name == "A" else "N"
        g.add_node(f"g{op.name}", f"{op.name} in global memory\n({mn},K) {cfg.dtype}, {op.major}-major",
                   fillcolor=MEMORY_FILL["global"])
        g.add_edge(f"g{op.name}", "producer", f"tensor map: box {op.box[0]}x{op.box[1]}, "
                                              f"{op.swizzle_bytes}-byte swizzle\n{_tma_line(op, cfg.dtype)}")
    g.add_node("producer", "\n".join([
        "producer warpgroup 0",
        "one thread issues the TMA loads",
        "waits empty[s], arrive.expect_tx(full[s], "
        f"{a.stage_bytes + b.stage_bytes} B)",
    ]), fillcolor=MEMORY_FILL["compute"])
    for s in range(cfg.stages):
        g.add_node(f"stage{s}", "\n".join([
            f"stage {s} (shared memory)",
            f"A {a.smem}",
            f"B {b.smem}",
            f"mbarriers full[{s}], empty[{s}]",
        ]), fillcolor=MEMORY_FILL["shared"])
        boxes = len(a.boxes) + len(b.boxes)
        g.add_edge("producer", f"stage{s}", f"{boxes} TMA boxes -> full[{s}]")
    for c in range(1, plan.consumers + 1):
        cid = f"consumer{c}"
        g.add_node(cid, "\n".join([
            f"consumer warpgroup {c}: rows {64 * (c - 1)}..{64 * c - 1}",
            f"{plan.kblocks} x wgmma m64n{cfg.bn}k{plan.instr_k} per stage",
            f"descriptors A {a.desc}",
            f"            B {b.desc}",
            f"accumulators CLayout_64x{cfg.bn}: {plan.acc_regs} f32 per thread",
        ]), fillcolor=MEMORY_FILL["registers"])
        for s in range(cfg.stages):
            g.add_edge(f"stage{s}", cid, f"wait full[{s}]; release empty[{s}]" if c == 1 and s == 0 else "",
                       style="dashed" if s else "solid")
        if st is not None:
            sid = f"staging{c}"
            g.add_node(sid, "\n".join([
                f"C staging of consumer {c} ({st.buffers} x {st.box[0]}x{st.box[1]} boxes)",
                f"{st.smem}",
            ]), fillcolor=MEMORY_FILL["shared"])
            cost = _staging_line(plan)
            if overlaps_epilogue(plan, "tma"):
                g.add_edge(cid, sid, f"alpha*acc -> {cfg.out} pairs kept in registers; st.shared at the staging "
                                     f"layout, a box after each of the next tile's first k-tiles\n{cost}")
            else:
                g.add_edge(cid, sid, f"alpha*acc -> {cfg.out}, st.shared at the staging layout\n{cost}")
            g.add_edge(sid, "gC", f"{st.boxes} TMA stores per tile (beta = 0)")
        else:
            g.add_edge(cid, "gC", f"alpha*acc + beta*C -> {cfg.out}, stores from registers")
    g.add_node("gC", f"C in global memory\n(M,N) {cfg.out}", fillcolor=MEMORY_FILL["global"])
    return g
