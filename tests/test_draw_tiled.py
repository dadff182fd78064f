"""Pictures of MMA atoms, TiledMMAs, TiledCopies, copy atoms and partitions; expression and plan graphs.

The expected owner of each cell is computed independently of the drawing
code: from the TV layouts called one (thread, value) at a time, from each
thread's ``partition_*`` of an identity tensor, or from the PTX description
of the instruction.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET

import pytest

from layoutalg import (
    CopyAtom,
    Layout,
    LayoutError,
    MMAAtom,
    ThrMMA,
    evaluate,
    make_identity_tensor,
    make_tensor,
    make_tiled_copy,
    make_tiled_copy_A,
    make_tiled_copy_B,
    make_tiled_mma,
    size,
)
from layoutalg.draw import (
    DotGraph,
    copy_atom_figure,
    expr_graph,
    figure_of,
    mma_atom_figure,
    parse_expr,
    partition_figure,
    render_dot,
    svg_of,
    thread_color,
    tiled_copy_figure,
    tiled_mma_figure,
)
from layoutalg.draw.tiled_pictures import tv_panel

NS = "{http://www.w3.org/2000/svg}"
F16 = "SM80_16x8x16_F32F16F16F32_TN"
TF32 = "SM80_16x8x8_F32TF32TF32F32_TN"
LDSM = "SM75_U32x4_LDSM_N"


@pytest.fixture(scope="module")
def mma16():
    return make_tiled_mma(F16, (2, 2, 1), (32, 32, 16))


@pytest.fixture(scope="module")
def mma_tf32():
    return make_tiled_mma(TF32, (2, 2, 1), (32, 32, 8))


def svg_cells(svg):
    """{grid name: {(row, col): rect element}} from SVG text, checking it is well-formed."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(NS + "g"):
        if "grid" not in g.get("class", "").split():
            continue
        cells = {}
        for r in g.iter(NS + "rect"):
            if "cell" in r.get("class", "").split():
                key = (int(r.get("data-row")), int(r.get("data-col")))
                assert key not in cells, f"two cells at {key} in grid {g.get('data-name')}"
                cells[key] = r
        out[g.get("data-name")] = (int(g.get("data-rows")), int(g.get("data-cols")), cells)
    return out


def first_owners(tv, rows, transpose=False):
    """cell (r, c) -> first (t, v) in thread-major order, calling the TV layout pair by pair."""
    own = {}
    for t in range(size(tv[0])):
        for v in range(size(tv[1])):
            i = tv((t, v))
            cell = (i // rows, i % rows) if transpose else (i % rows, i // rows)
            own.setdefault(cell, (t, v))
    return own


def owners_from_partitions(mma, which, shape, threads=None):
    """cell -> first (t, v) from every thread's partition of an identity tensor."""
    ident = make_identity_tensor(shape)
    own = {}
    for t in threads if threads is not None else range(mma.size):
        thr = mma.get_slice(t) if threads is None else ThrMMA(mma, t)
        p = {"A": thr.partition_A, "B": thr.partition_B, "C": thr.partition_C}[which](ident)
        for v in range(size(p.layout)):
            own.setdefault(tuple(p[v]), (t, v))
    return own


# ---- MMA pictures -----------------------------------------------------------------------

def test_single_atom_is_cutes_picture():
    fig = mma_atom_figure(F16)
    C, A, B = fig.grid("C"), fig.grid("A"), fig.grid("B")
    assert (C.shape, A.shape, B.shape) == ((16, 8), (16, 16), (16, 8))
    # PTX: thread t holds c0,c1 at (t//4, 2*(t%4) + {0,1}), c2,c3 eight rows below
    for t in (0, 5, 31):
        for v in range(4):
            r, c = t // 4 + 8 * (v // 2), 2 * (t % 4) + v % 2
            assert C[r, c].lines == (f"T{t}", f"V{v}")
            assert C[r, c].fill == thread_color(t)
    # A (row major): a0,a1 at (t//4, 2*(t%4)+{0,1}); B drawn K x N: b0,b1 at k = 2*(t%4)+{0,1}, n = t//4
    assert A[0, 1].lines == ("T0", "V1") and A[8, 0].lines == ("T0", "V2") and A[0, 8].lines == ("T0", "V4")
    assert B[1, 0].lines == ("T0", "V1") and B[0, 1].lines == ("T4", "V0") and B[8, 0].lines == ("T0", "V2")
    # placement as CuTe's print_latex: A at columns -K-1.., B at rows -K-1..
    place = {p.grid.name: (p.row, p.col) for p in fig.placements}
    assert place == {"C": (0, 0), "A": (0, -17), "B": (-17, 0)}
    assert fig.title.startswith(F16) and not fig.notes          # no shared elements in one atom


def test_tiled_mma_svg_cells_match_tv_layouts(mma16):
    M, N, K = mma16.tile_size_mnk
    fig = tiled_mma_figure(mma16)
    grids = svg_cells(fig.to_svg())
    expected = {
        "C": (M, N, first_owners(mma16.get_layoutC_TV(), M)),
        "A": (M, K, first_owners(mma16.get_layoutA_TV(), M)),
        "B": (K, N, first_owners(mma16.get_layoutB_TV(), N, transpose=True)),
    }
    assert set(grids) == set(expected)
    for name, (rows, cols, own) in expected.items():
        grows, gcols, cells = grids[name]
        assert (grows, gcols) == (rows, cols)
        assert len(cells) == rows * cols                     # exactly one cell per tile element
        assert len(own) == rows * cols                       # and every element has an owner
        for (r, c), (t, v) in own.items():
            rect = cells[(r, c)]
            assert rect.get("data-label") == f"T{t} V{v}"
            assert (int(rect.get("data-thread")), int(rect.get("data-value"))) == (t, v)
    # sampled cells against the layouts called directly
    LC = mma16.get_layoutC_TV()
    for t, v in [(0, 0), (5, 3), (37, 6), (127, 7)]:
        i = LC((t, v))
        assert grids["C"][2][(i % M, i // M)].get("data-label") == f"T{t} V{v}"


def test_tiled_mma_cells_match_thread_partitions(mma16):
    M, N, K = mma16.tile_size_mnk
    fig = tiled_mma_figure(mma16)
    for which, shape, grid, flip in (("C", (M, N), "C", False), ("A", (M, K), "A", False), ("B", (N, K), "B", True)):
        own = owners_from_partitions(mma16, which, shape)
        g = fig.grid(grid)
        for (a, b), (t, v) in own.items():
            r, c = (b, a) if flip else (a, b)                # B is drawn K x N
            assert g[r, c].data == {"thread": t, "value": v}, (which, a, b)
    # A and B are shared by the atoms along N and M: the figure says so
    assert any(n.startswith("A: each element is held by up to 2") for n in fig.notes)
    assert any(n.startswith("B: each element is held by up to 2") for n in fig.notes)


def test_one_based_labels_keep_zero_based_data(mma16):
    fig = tiled_mma_figure(mma16, one_based=True)
    cell = fig.grid("C")[0, 0]
    assert cell.lines == ("T1", "V1") and cell.data == {"thread": 0, "value": 0}
    assert fig.grid("C").index_base == 1


def test_highlight_threads_and_comments(mma16):
    fig = tiled_mma_figure(mma16, highlight_threads=[5], title="")
    outlined = {(r, c) for r, c, cell in fig.grid("C").iter_cells() if cell is not None and cell.border is not None}
    assert outlined == {(r, c) for r, c, cell in fig.grid("C").iter_cells() if cell.data["thread"] == 5}
    assert len(outlined) == 8 and fig.title is None
    assert fig.comments[1] == f"LayoutC_TV: {mma16.get_layoutC_TV()}"
    tikz = fig.to_tikz()
    M, N, K = mma16.tile_size_mnk
    assert tikz.count(r"\shortstack{T") == M * N + M * K + K * N


def test_128x128x32_renders_fast_and_legibly():
    mma = make_tiled_mma(F16, (2, 4, 1), (128, 128, 32))
    assert mma.tile_size_mnk == (128, 128, 32)
    t0 = time.perf_counter()
    fig = tiled_mma_figure(mma)
    svg = fig.to_svg()
    elapsed = time.perf_counter() - t0
    assert elapsed < 10, f"128x128x32 TiledMMA took {elapsed:.2f} s"   # about 0.3 s on a laptop
    assert svg.count('<rect class="cell') == 128 * 128 + 128 * 32 + 32 * 128
    # cell text stays readable at the default 32 px cells: 4-character labels such as T255 at >= 9 px
    sizes = [float(s) for s in re.findall(r"\.g\d text\{font-size:([\d.]+)px\}", svg)]
    assert sizes and min(sizes) >= 9
    assert fig.grid("C")[127, 127].lines[0] == "T255"


def test_other_atom_families():
    # SM70 quad pair: 8 threads on lanes 0-3 and 16-19. right_inverse of (4,2):(1,16) reaches
    # only 4 threads, so the picture comes from the partitions of lanes 0-3, 16-19
    mma = make_tiled_mma("SM70_8x8x4_F32F16F16F32_NT")
    assert size(mma.get_layoutC_TV()[0]) == 4 and mma.size == 8
    lanes = [0, 1, 2, 3, 16, 17, 18, 19]
    fig = tiled_mma_figure(mma)
    for which, shape, flip in (("C", (8, 8), False), ("A", (8, 4), False), ("B", (8, 4), True)):
        own = owners_from_partitions(mma, which, shape, threads=lanes)
        g = fig.grid(which)
        assert len(own) == g.rows * g.cols
        for (a, b), (t, v) in own.items():
            assert g[(b, a) if flip else (a, b)].data == {"thread": t, "value": v}
    assert {c.data["thread"] for _, _, c in fig.grid("C").iter_cells()} == set(lanes)
    # the quad pair's second quad (lanes 16-19) holds rows 4-7 of C and of A
    assert fig.grid("C")[4, 0].lines == ("T16", "V0") and fig.grid("A")[4, 0].lines == ("T16", "V0")
    # wgmma SS: A is read from shared memory by all 128 threads (a broadcast layout)
    fig = mma_atom_figure("SM90_64x8x16_F32F16F16_SS")
    assert {c.data["thread"] for _, _, c in fig.grid("A").iter_cells()} == {0}
    assert any(n.startswith("A: each element is held by up to 128") for n in fig.notes)


# ---- copies ------------------------------------------------------------------------------

def test_ldmatrix_copy_for_A(mma16):
    cp = make_tiled_copy_A(CopyAtom(LDSM, "f16"), mma16)
    fig = tiled_copy_figure(cp)
    S, D = fig.grid("S"), fig.grid("D")
    assert S.shape == D.shape == (32, 16)
    # ldmatrix x4 source: lanes 0-15 give the rows of k 0..7, lanes 16-31 those of k 8..15, 8 values each
    for m in range(16):
        for k in range(16):
            assert S[m, k].data == {"thread": m + 16 * (k // 8), "value": k % 8}
    # the destination is the MMA's A layout
    mfig = tiled_mma_figure(mma16)
    for r, c, cell in D.iter_cells():
        assert cell.data == mfig.grid("A")[r, c].data
    place = {p.grid.name: p.col for p in fig.placements}
    assert place == {"S": 0, "D": 16 + 3}                     # CuTe: destination N + 3 columns right
    assert D.row_header_side == "right"
    # against the layouts directly
    own = first_owners(cp.get_layoutS_TV(), 32)
    for (r, c), (t, v) in own.items():
        assert S[r, c].lines == (f"T{t}", f"V{v}")


def test_tf32_seed_copies_B_ldmatrix_A_universal(mma_tf32):
    cpB = make_tiled_copy_B(CopyAtom(LDSM, "tf32"), mma_tf32)
    fig = tiled_copy_figure(cpB)
    S = fig.grid("S")
    assert S.shape == (32, 8)                                   # (N, K) tile of the B copy
    # 32-bit values: a lane's 16-byte row is 4 consecutive k of one n
    assert [S[0, k].data for k in range(4)] == [{"thread": 0, "value": v} for v in range(4)]
    cpA = make_tiled_copy_A(CopyAtom("UniversalCopy_32", "tf32"), mma_tf32)
    figA = tiled_copy_figure(cpA)
    mfig = tiled_mma_figure(mma_tf32)
    for name in ("S", "D"):
        for r, c, cell in figA.grid(name).iter_cells():
            assert cell.data == mfig.grid("A")[r, c].data     # one value per instruction: S = D = A layout


def test_make_tiled_copy_g2s():
    cp = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((16, 8), (8, 1)), Layout((1, 8)))
    fig = tiled_copy_figure(cp)
    S = fig.grid("S")
    assert S.shape == (16, 64)
    for m in (0, 3, 15):
        for n in (0, 9, 63):
            assert S[m, n].data == {"thread": 8 * m + n // 8, "value": n % 8}
    assert fig.title == "SM80_CP_ASYNC_CACHEGLOBAL_128 of f16, tile 16x64, 128 threads"


def test_ldmatrix_atom_alone():
    fig = copy_atom_figure(LDSM, "f16")
    S, D = fig.grid("S"), fig.grid("D")
    assert S.shape == D.shape == (32, 8)
    for r in range(32):
        for c in range(8):
            assert S[r, c].data == {"thread": r, "value": c}      # lane r gives the address of row r
            j, rr = divmod(r, 8)                                  # matrix j, its row rr
            assert D[r, c].data == {"thread": 4 * rr + c // 2, "value": c % 2 + 2 * j}


def test_ldmatrix_trans_atom():
    D = copy_atom_figure("SM75_U16x8_LDSM_T", "f16").grid("D")
    for t in (0, 6, 31):
        for v in range(8):
            v1, v2 = v % 2, v // 2
            assert D[2 * (t % 4) + v1 + 8 * v2, t // 4].data == {"thread": t, "value": v}


def test_cp_async_atom_and_copy_atom_objects():
    fig = copy_atom_figure(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"))
    assert fig.grid("S").shape == (1, 8)
    assert [fig.grid("D")[0, c].lines for c in range(8)] == [("T0", f"V{c}") for c in range(8)]
    assert copy_atom_figure(LDSM, "tf32").grid("S").shape == (32, 4)
    assert copy_atom_figure(LDSM, "f16", width=16).grid("S").shape == (16, 16)


def test_copy_atom_errors():
    with pytest.raises(ValueError, match="give the element type"):
        copy_atom_figure(LDSM)
    with pytest.raises(LayoutError, match="no atom named"):
        copy_atom_figure("SM75_U32x4_LDSM_X", "f16")
    with pytest.raises(ValueError, match="not a multiple of width 3"):
        copy_atom_figure(LDSM, "f16", width=3)
    with pytest.raises(ValueError, match="already has dtype"):
        copy_atom_figure(CopyAtom(LDSM, "f16"), "tf32")


def test_adapters_reject_wrong_objects():
    with pytest.raises(TypeError, match="tiled_mma_figure: expected a TiledMMA"):
        tiled_mma_figure(Layout(4))
    with pytest.raises(TypeError, match="tiled_copy_figure: expected a TiledCopy"):
        tiled_copy_figure(object())
    with pytest.raises(TypeError, match="mma_atom_figure"):
        mma_atom_figure(None)


def test_tv_panel_matches_panel_from_tv_and_checks_range():
    from layoutalg.draw import panel_from_tv

    L = Layout(((2, 2), (2, 2)), ((1, 4), (2, 0)))            # a broadcast value mode
    p, mult = tv_panel("X", 4, 2, L)
    assert p.owners() == panel_from_tv("X", 4, 2, L).owners() and mult == 2
    with pytest.raises(ValueError, match="outside the 2x2 tile"):
        tv_panel("X", 2, 2, Layout((2, 4), (1, 2)))


# ---- partitions ----------------------------------------------------------------------------

def test_partition_of_identity_tensor(mma_tf32):
    part = mma_tf32.get_slice(5).partition_A(make_identity_tensor((32, 8)))
    fig = partition_figure((32, 8), part, thread=5)
    g = fig.grid("tensor")
    marked = {(r, c): cell for r, c, cell in g.iter_cells() if cell is not None}
    coords = [tuple(part[i]) for i in range(size(part.layout))]
    assert set(marked) == set(coords)
    for v, rc in enumerate(coords):
        assert marked[rc].lines == ("T5", f"V{v}") and marked[rc].border is not None
        assert marked[rc].fill == thread_color(5)
    grids = svg_cells(fig.to_svg())
    assert len(grids["tensor"][2]) == 32 * 8


def test_partition_over_memory_located_through_the_layout(mma16):
    import numpy as np

    smem = Layout((32, 16), (16, 1))                            # K-major (row-major) A tile
    t = make_tensor(np.zeros((32, 16), np.float16))
    assert t.layout == smem
    part = mma16.get_slice(9).partition_A(t)
    ident = mma16.get_slice(9).partition_A(make_identity_tensor((32, 16)))
    fig = partition_figure(smem, part, thread=9)
    g = fig.grid("tensor")
    for v in range(size(ident.layout)):
        r, c = ident[v]
        assert g[r, c].lines == ("T9", f"V{v}") and g[r, c].data["index"] == 16 * r + c
    assert g[0, 1].lines == ("1",) and g[0, 1].fill is None   # other cells show the offset


def test_several_threads_and_errors(mma16):
    ident = make_identity_tensor((32, 32))
    parts = {t: mma16.get_slice(t).partition_C(ident) for t in (0, 1)}
    fig = partition_figure((32, 32), parts, one_based=True)
    g = fig.grid("tensor")
    assert g[0, 0].lines == ("T1", "V1") and g[0, 2].lines == ("T2", "V1")
    assert fig.legend is not None and len(fig.legend.entries) == 2
    with pytest.raises(ValueError, match="outside the 8x8 tensor"):
        partition_figure((8, 8), parts[0])
    with pytest.raises(TypeError, match="partition_figure"):
        partition_figure("8x8", parts[0])


# ---- notebooks -------------------------------------------------------------------------------

def test_registered_for_notebooks(mma16):
    svg = mma16._repr_svg_()
    assert svg is not None and svg.startswith("<svg") and 'data-name="C"' in svg
    cp = make_tiled_copy_A(CopyAtom(LDSM, "f16"), mma16)
    assert 'data-name="D"' in cp._repr_svg_()
    assert figure_of(MMAAtom(F16)).grid("C").shape == (16, 8)
    assert svg_of(mma16, one_based=True).count(">T1<") > 0


# ---- expression graphs ------------------------------------------------------------------------

EXPR = "logical_divide(composition((4,3):(3,1), 6:2), 2:1)"


def test_expr_graph_nodes_show_each_result():
    g = expr_graph(EXPR)
    assert isinstance(g, DotGraph)
    tree = parse_expr(EXPR)
    nodes = list(tree.walk())
    assert [n.text for n in nodes] == [EXPR, "composition((4,3):(3,1), 6:2)", "(4,3):(3,1)", "6:2", "2:1"]
    for k, node in enumerate(nodes):
        label = g.nodes[f"n{k}"]["label"]
        value = evaluate(node.text)
        if node.kind == "call":
            assert label.splitlines()[:2] == [node.name, f"= {value}"]
        else:
            assert label.splitlines()[0] == node.text
    assert [(s, d, a["label"]) for s, d, a in g.edges] == [
        ("n1", "n0", "layout"), ("n4", "n0", "tiler"), ("n2", "n1", "lhs"), ("n3", "n1", "rhs")]
    assert g.nodes["n0"]["penwidth"] == "2.2"
    assert g.source.startswith('digraph "expr" {')


def test_expr_graph_literals_tuples_and_swizzles():
    g = expr_graph("logical_divide((8,8):(1,8), (2:1, composition(4:2, 2:1)))")
    labels = [a["label"].splitlines()[0] for a in g.nodes.values()]
    assert labels == ["logical_divide", "(8,8):(1,8)", "tuple", "2:1", "composition", "4:2", "2:1"]
    g = expr_graph("composition(Swizzle(3,2,3), (8,32):(32,1))")
    assert g.nodes["n1"]["label"] == "Swizzle(3,2,3)\n= Sw<3,2,3>"
    g = expr_graph("zipped_divide(Sw<3,3,3> o 0 o (8,64):(64,1), (4,8))")
    assert g.nodes["n1"]["label"] == "Sw<3,3,3> o 0 o (8,64):(64,1)"


def test_expr_graph_errors_name_the_subexpression():
    with pytest.raises(LayoutError, match=r"sub-expression 'complement\(4:2, 3:1\)' failed"):
        expr_graph("composition((4,3):(3,1), complement(4:2, 3:1))")
    with pytest.raises(LayoutError, match=re.escape("expected ')' but found end of text")):
        expr_graph("composition((4,3):(3,1)")
    with pytest.raises(LayoutError, match="trailing text"):
        expr_graph("composition(4:1, 2:1) x")
    with pytest.raises(LayoutError, match="expected an expression string"):
        expr_graph(42)


def test_expr_graph_without_graphviz_writes_dot(tmp_path, monkeypatch):
    import layoutalg.draw.graphs as graphs

    monkeypatch.setattr(graphs, "dot_available", lambda: False)
    res = render_dot(expr_graph(EXPR), tmp_path / "e.svg")
    assert not res.rendered and "apt-get install graphviz" in res.message
    assert (tmp_path / "e.dot").read_text().startswith('digraph "expr"')


# ---- the GEMM plan graph -----------------------------------------------------------------------

def test_plan_graph():
    pytest.importorskip("numba")
    from codegen import GemmConfig, make_plan
    from codegen.plan_graph import plan_graph

    plan = make_plan(GemmConfig.default("f16"), "K", "MN")
    g = plan_graph(plan)
    assert list(g.nodes) == ["gA", "sA", "rA", "gB", "sB", "rB", "mma", "acc", "gC"]
    edges = {(s, d): a["label"] for s, d, a in g.edges}
    assert set(edges) == {("gA", "sA"), ("sA", "rA"), ("rA", "mma"), ("gB", "sB"), ("sB", "rB"), ("rB", "mma"),
                          ("mma", "acc"), ("acc", "gC")}
    for op in (plan.a, plan.b):
        X = op.name
        for (src, dst), cp in (((f"g{X}", f"s{X}"), op.g2s), ((f"s{X}", f"r{X}"), op.s2r)):
            label = edges[(src, dst)]
            assert cp.atom.name in label
            assert f"layout_tv {cp.tiled_copy.layout_tv}" in label
        assert str(op.smem) in g.nodes[f"s{X}"]["label"]
    assert "SM75_U16x8_LDSM_T" in edges[("sB", "rB")]            # B is MN-major: transposing ldmatrix
    assert "epilogue" in edges[("acc", "gC")]
    assert str(plan.mma.acc_layout) in g.nodes["acc"]["label"]
    with pytest.raises(TypeError, match="plan_graph: expected a GemmPlan"):
        plan_graph(object())


def test_tensors_have_a_notebook_picture_of_their_values():
    import numpy as np

    from layoutalg import make_identity_tensor, make_tensor

    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
    svg = make_tensor(a)._repr_svg_()
    assert svg is not None and svg.count('class="cell') == 12
    for v in (0.25, 2.75):
        assert f">{v:.4g}</text>" in svg
    ident = make_identity_tensor((2, 3))._repr_svg_()
    assert ">(1,2)</text>" in ident
    assert make_tensor("gA", Layout(4))._repr_svg_() is None         # a symbolic pointer: the text repr


def test_a_large_tiled_mma_is_a_lean_notebook_picture():
    """A 128x128x32 tiled MMA (24,576 cells) was a 5.4 MB SVG in a notebook: it drops the cells'
    data-* attributes, and the labels that its display size makes unreadable, not its cells."""
    from layoutalg.draw import repr_svg, tiled_mma_figure

    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", (2, 2, 1), (128, 128, 32))
    svg = repr_svg(mma)
    assert len(svg) < 2_000_000 and svg.count('class="cell') == 128 * 32 * 2 + 128 * 128
    assert len(tiled_mma_figure(mma).to_svg()) > 5_000_000          # files keep everything
    small = repr_svg(make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN"))
    assert "data-row" in small and ">T0</text>" in small              # small pictures as before
