"""The data path of a GEMM plan as a Graphviz graph.

global memory -> shared memory -> registers -> MMA -> accumulators -> epilogue,
one path for A and one for B, each edge labelled with the copy atom that moves
the data and the layouts that define it (the tiled copy's TV layout and tile,
the swizzled shared-memory layout, the register fragments, the accumulator
layout), and what each copy costs (``GemmPlan.cost``: wavefronts and bank conflicts of
its shared side, sectors of its global side).

>>> from codegen import GemmConfig, make_plan
>>> g = plan_graph(make_plan(GemmConfig.default("f16"), "K", "MN"))
>>> [(s, d) for s, d, _ in g.edges][:3]
[('gA', 'sA'), ('sA', 'rA'), ('rA', 'mma')]
>>> g.edges[0][2]["label"].splitlines()[0]
'cp.async: SM80_CP_ASYNC_CACHEGLOBAL_128'

Render it with :func:`layoutalg.draw.render_dot` (or ``layoutalg draw plan -o plan.svg``);
without Graphviz's ``dot`` the ``.dot`` text is written and the message says
how to install Graphviz.
"""

from layoutalg.draw.graphs import DotGraph
from layoutalg.layout import size

__all__ = ["plan_graph", "plan_dot_graph", "MEMORY_FILL"]

_KIND = (
    ("SM80_CP_ASYNC", "cp.async"),
    ("LDSM_N", "ldmatrix"),
    ("LDSM_T", "ldmatrix.trans"),
    ("UniversalCopy", "ld/st"),
)

MEMORY_FILL = {"global": "#eeeeee", "shared": "#dde8ff", "registers": "#ddf5dd", "compute": "#fff3c4"}


def _kind(atom_name):
    for key, word in _KIND:
        if key in atom_name:
            return word
    return "copy"


def _fmt(x):
    if isinstance(x, tuple):
        return "(" + ",".join(_fmt(v) for v in x) + ")"
    return str(x)


def _copy_label(stage, dtype_bits, cost=None):
    cp = stage.tiled_copy
    name = stage.atom.name
    lines = [f"{_kind(name)}: {name}"]
    vec = getattr(stage, "vec", None) or size(stage.src[1])
    nbytes = vec * dtype_bits // 8
    lines.append(f"{vec} elements ({nbytes} B) per thread per instruction")
    lines.append(f"layout_tv {cp.layout_tv}")
    lines.append(f"tiler_mn {_fmt(cp.tiler_mn)}, {cp.size} threads")
    if cost is not None:
        lines.extend(cost.lines())
    return "\n".join(lines)


def plan_dot_graph(name, rankdir, label, nodesep="0.5", ranksep="0.9"):
    """An empty :class:`DotGraph` in the plan graphs' style (titled ``label``)."""
    return DotGraph(
        name,
        graph_attrs={"rankdir": rankdir, "label": label, "labelloc": "t", "fontname": "DejaVu Sans",
                     "fontsize": "16", "nodesep": nodesep, "ranksep": ranksep},
        node_attrs={"shape": "box", "style": "rounded,filled", "fontname": "DejaVu Sans Mono", "fontsize": "11",
                    "color": "#555555"},
        edge_attrs={"fontname": "DejaVu Sans Mono", "fontsize": "10", "color": "#444444"},
    )


def _operand_nodes(g, cfg, op):
    """An operand's three places: global memory, its shared stage and its register fragments."""
    X = op.name
    mn = "M" if X == "A" else "N"
    maj = "K-major (k contiguous)" if op.major == "K" else f"{mn}-major ({mn.lower()} contiguous)"
    g.add_node(f"g{X}", "\n".join([
        f"{X} in global memory",
        f"({mn},K) {cfg.dtype}, {maj}",
        f"CTA tile {op.rows}x{cfg.bk} per k-step",
    ]), fillcolor=MEMORY_FILL["global"])
    g.add_node(f"s{X}", "\n".join([
        f"{X} in shared memory",
        f"{op.smem}",
        f"({op.rows},{cfg.bk}) -> offset, {op.stage_elems} elements x {cfg.stages} stages",
    ]), fillcolor=MEMORY_FILL["shared"])
    frag = op.s2r.frag
    g.add_node(f"r{X}", "\n".join([
        f"{X} fragments (registers)",
        f"{frag}  (FrgV,(Rest{mn},RestK))",
        f"{size(frag)} {cfg.dtype} values per thread",
    ]), fillcolor=MEMORY_FILL["registers"])


def plan_graph(plan, *, name="gemm_plan", rankdir="TB"):
    """A :class:`~layoutalg.draw.graphs.DotGraph` of ``plan``'s data path.

    ``plan`` is a :class:`codegen.plan.GemmPlan` (``make_plan(cfg, a_major, b_major)``).
    Nodes are the places data lives (global, shared, registers; coloured by
    memory space) and the MMA; edges carry the copy atom and its tiled copy's
    ``layout_tv``/``tiler_mn``, the operand fragments and the epilogue.
    Node ids: ``gA sA rA gB sB rB mma acc gC``.
    """
    from .plan import GemmPlan

    if not isinstance(plan, GemmPlan):
        raise TypeError(f"plan_graph: expected a GemmPlan (codegen.make_plan(...)), got {type(plan).__name__}")
    cfg = plan.config
    bits = cfg.bits
    mma = plan.mma.tiled_mma
    tm, tn, tk = mma.tile_size_mnk
    acc_type = getattr(mma.atom, "c_type", None) or "f32"
    if acc_type == "any":
        acc_type = cfg.dtype
    g = plan_dot_graph(name, rankdir,
                       f"GEMM plan: {cfg.dtype} -> {cfg.out}, CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk}, "
                       f"{cfg.threads} threads, {cfg.stages} shared-memory stages")
    for op in (plan.a, plan.b):
        _operand_nodes(g, cfg, op)
    calls = plan.mma.kblocks * plan.mma.mma_m * plan.mma.mma_n
    g.add_node("mma", "\n".join([
        f"TiledMMA {mma.atom.name}",
        f"thr_layout_vmnk {mma.thr_layout_vmnk}",
        f"tile {tm}x{tn}x{tk}; {plan.mma.kblocks} k-blocks per k-step",
        f"{calls} mma per thread per k-step",
    ]), fillcolor=MEMORY_FILL["compute"], style="filled", penwidth="2")
    acc = plan.mma.acc_layout
    g.add_node("acc", "\n".join([
        "accumulators (registers)",
        f"{acc}  (FrgV,(RestM,RestN))" if acc is not None else "",
        f"{plan.epilogue.acc_size} {acc_type} values per thread",
    ]).rstrip("\n"), fillcolor=MEMORY_FILL["registers"])
    g.add_node("gC", "\n".join([
        "C / D in global memory",
        f"(M,N) {cfg.out}",
        f"CTA tile {cfg.bm}x{cfg.bn}",
    ]), fillcolor=MEMORY_FILL["global"])
    for op in (plan.a, plan.b):
        X = op.name
        g.add_edge(f"g{X}", f"s{X}", _copy_label(op.g2s, bits, plan.cost[f"{X} g2s"]))
        g.add_edge(f"s{X}", f"r{X}", _copy_label(op.s2r, bits, plan.cost[f"{X} s2r"]))
        lay = mma.get_layoutA_TV() if X == "A" else mma.get_layoutB_TV()
        g.add_edge(f"r{X}", "mma", "\n".join([
            f"operand {X}",
            f"layout{X}_TV {lay}",
        ]))
    g.add_edge("mma", "acc", "\n".join([
        "D = A*B + C",
        f"layoutC_TV {mma.get_layoutC_TV()}",
    ]))
    g.add_edge("acc", "gC", "\n".join([
        "epilogue: D = alpha*acc + beta*C",
        f"{acc_type} -> {cfg.out}, predicated stores",
        f"tv_C(identity) {plan.epilogue.cid}",
    ]))
    return g
