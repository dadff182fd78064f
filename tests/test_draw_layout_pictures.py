"""Adapters of layoutalg.draw: layout pictures and thread-value panels.

Most tests use a tiny stand-in layout (``.shape``, callable with a coordinate
tuple) so they do not depend on the algebra; a few also run against
``layoutalg.Layout`` when it is importable.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from layoutalg.draw import (
    BANK_COLORS,
    GREY_COLORS,
    THREAD_COLORS,
    TVPanel,
    bank_of,
    copy_figure,
    figure_of,
    layout_ascii,
    layout_figure,
    layout_grid,
    layout_latex,
    layout_values,
    mma_figure,
    panel_from_mn,
    panel_from_tv,
    register_figure,
    svg_of,
    tv_figure,
)

SVG_NS = "{http://www.w3.org/2000/svg}"


class StandIn:
    """Nested shape/stride, colexicographic; called with an int or a coordinate tuple."""

    def __init__(self, shape, stride):
        self.shape, self.stride = shape, stride

    @staticmethod
    def _size(s):
        if isinstance(s, tuple):
            p = 1
            for x in s:
                p *= StandIn._size(x)
            return p
        return s

    def _idx(self, crd, shape, stride):
        if isinstance(crd, tuple):
            return sum(self._idx(c, s, d) for c, s, d in zip(crd, shape, stride))
        if isinstance(shape, tuple):
            total = 0
            for s, d in zip(shape, stride):
                n = self._size(s)
                total += self._idx(crd % n, s, d)
                crd //= n
            return total
        return crd * stride

    def __call__(self, crd):
        if not isinstance(self.shape, tuple) and isinstance(crd, tuple):
            raise TypeError("rank-1 stand-in takes an int")
        return self._idx(crd, self.shape, self.stride)

    def __str__(self):
        def f(t):
            return "(" + ",".join(f(x) for x in t) + ")" if isinstance(t, tuple) else str(t)

        return f"{f(self.shape)}:{f(self.stride)}"


CUTE_4x8_8x1 = (
    "(4,8):(8,1)\n"
    "       0    1    2    3    4    5    6    7 \n"
    "    +----+----+----+----+----+----+----+----+\n"
    " 0  |  0 |  1 |  2 |  3 |  4 |  5 |  6 |  7 |\n"
    "    +----+----+----+----+----+----+----+----+\n"
    " 1  |  8 |  9 | 10 | 11 | 12 | 13 | 14 | 15 |\n"
    "    +----+----+----+----+----+----+----+----+\n"
    " 2  | 16 | 17 | 18 | 19 | 20 | 21 | 22 | 23 |\n"
    "    +----+----+----+----+----+----+----+----+\n"
    " 3  | 24 | 25 | 26 | 27 | 28 | 29 | 30 | 31 |\n"
    "    +----+----+----+----+----+----+----+----+\n"
)

# SM80 16x8x16 F16 TN thread-value layouts, (thread, value) -> tile index (CuTe's values)
SM80_C = StandIn(((4, 8), (2, 2)), ((32, 1), (16, 8)))  # -> m + 16 n over (16, 8)
SM80_A = StandIn(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))  # -> m + 16 k over (16, 16)
SM80_B = StandIn(((4, 8), (2, 2)), ((16, 1), (8, 64)))  # -> n + 8 k over (8, 16)


def svg_cells(svg, name):
    root = ET.fromstring(svg)
    for g in root.iter(SVG_NS + "g"):
        if g.get("data-name") == name:
            return {
                (int(r.get("data-row")), int(r.get("data-col"))): r
                for r in g.iter(SVG_NS + "rect")
                if "cell" in r.get("class").split()
            }
    raise KeyError(name)


# ---------------------------------------------------------------------------
# layouts
# ---------------------------------------------------------------------------
def test_layout_values_and_ascii_match_cute():
    L = StandIn((4, 8), (8, 1))
    assert layout_values(L)[1] == list(range(8, 16))
    assert layout_ascii(L) == CUTE_4x8_8x1


def test_layout_figure_cells_show_L_of_m_n():
    L = StandIn(((2, 2), (2, 4)), ((1, 16), (2, 4)))  # nested modes
    fig = layout_figure(L)
    g = fig.grid("layout")
    assert g.shape == (4, 8)
    for m in range(4):
        for n in range(8):
            idx = L((m, n))
            cell = g[m, n]
            assert cell.lines == (str(idx),)
            assert cell.fill == GREY_COLORS[idx % 8]
            assert cell.data == {"index": idx}
    assert fig.title == "((2,2),(2,4)):((1,16),(2,4))"
    assert fig.comments == ["Layout: ((2,2),(2,4)):((1,16),(2,4))"]
    cells = svg_cells(fig.to_svg(), "layout")
    assert len(cells) == 32 and cells[(2, 3)].get("data-label") == str(L((2, 3)))


def test_layout_latex_is_cutes_print_latex():
    tex = layout_latex(StandIn((2, 3), (3, 1)))
    assert tex.splitlines()[0] == "% Layout: (2,3):(3,1)"
    assert "\\node[fill=black!60] at (1,0) {3};" in tex
    assert "\\draw[color=black,thick,shift={(-0.5,-0.5)}] (0,0) grid (2,3);\n\n\\node at (0,-1) {\\Large{\\texttt{0}}};" in tex


def test_rank1_and_rank3_layouts():
    r1 = layout_grid(StandIn(8, 2))
    assert r1.shape == (8, 1) and r1[3, 0].lines == ("6",)
    r3 = layout_grid(StandIn((2, 2, 2), (1, 2, 4)))
    assert r3.shape == (2, 4)
    assert [r3[1, n].data["index"] for n in range(4)] == [1, 3, 5, 7]


def test_bank_colouring():
    L = StandIn((8, 8), (8, 1))
    fig = layout_figure(L, color="bank", dtype_bits=32)
    g = fig.grid("layout")
    assert g[1, 2].lines == ("10", "b10")
    assert g[4, 1].data == {"index": 33, "bank": 1}
    assert g[4, 1].fill == BANK_COLORS[1]
    assert fig.legend is not None and len(fig.legend.entries) == 32
    g16 = layout_grid(L, color="bank", dtype_bits=16)
    assert g16[0, 3].data["bank"] == bank_of(3, 16) == 1
    assert g16[0, 3].fill == BANK_COLORS[1]


def test_one_based_labels_and_headers():
    g = layout_grid(StandIn((4, 8), (8, 1)), one_based=True)
    assert g[0, 0].lines == ("1",) and g[3, 7].lines == ("32",)
    assert g.row_labels() == ["1", "2", "3", "4"]
    assert g[0, 0].data == {"index": 0}
    text = layout_ascii(StandIn((4, 8), (8, 1)), one_based=True)
    assert text.splitlines()[3] == " 1  |  1 |  2 |  3 |  4 |  5 |  6 |  7 |  8 |"


def test_layout_errors_are_clear():
    with pytest.raises(TypeError, match="layout_grid: expected a layout"):
        layout_grid(42)
    with pytest.raises(ValueError, match="layout_grid: color must be 'index', 'bank', 'none'"):
        layout_grid(StandIn((2, 2), (1, 2)), color="rainbow")
    with pytest.raises(ValueError, match="dtype_bits must be a positive int"):
        layout_grid(StandIn((2, 2), (1, 2)), color="bank", dtype_bits=0)

    class Floaty(StandIn):
        def __call__(self, crd):
            return 0.5

    with pytest.raises(TypeError, match=r"L\(\(0, 0\)\) returned float 0.5; expected an integer"):
        layout_grid(Floaty((2, 2), (1, 2)))
    assert svg_of(Floaty((2, 2), (1, 2))) is None


def test_custom_colour_function_and_highlight():
    g = layout_grid(StandIn((2, 2), (1, 2)), color=lambda i: (i * 60, 0, 0), highlight=[(1, 1)])
    assert g[1, 0].fill.rgb == (60, 0, 0)
    assert g[1, 1].border is not None and g[0, 0].border is None


# ---------------------------------------------------------------------------
# thread-value panels
# ---------------------------------------------------------------------------
def test_panel_from_tv_with_layout_like_tv_sm80():
    C = panel_from_tv("C", 16, 8, SM80_C)
    A = panel_from_tv("A", 16, 16, SM80_A)
    B = panel_from_tv("B", 16, 8, SM80_B, transpose=True)
    # CuTe's SM80 16x8x16: thread 0 holds C(0,0),(0,1),(8,0),(8,1)
    assert [C.owner_at(*rc) for rc in [(0, 0), (0, 1), (8, 0), (8, 1)]] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert C.owner_at(1, 0) == (4, 0) and C.owner_at(0, 2) == (1, 0)
    assert A.owner_at(0, 8) == (0, 4) and A.owner_at(8, 9) == (0, 7)
    assert B.owner_at(1, 0) == (0, 1) and B.owner_at(9, 0) == (0, 3) and B.owner_at(0, 1) == (4, 0)
    fig = mma_figure(C, A, B, title="SM80_16x8x16")
    assert fig.grid("C")[8, 1].lines == ("T0", "V3")
    assert fig.grid("C")[8, 1].fill == THREAD_COLORS[0]
    assert fig.grid("A")[0, 2].fill == THREAD_COLORS[1]
    svg = fig.to_svg()
    assert len(svg_cells(svg, "A")) == 256
    assert svg_cells(svg, "B")[(9, 0)].get("data-label") == "T0 V3"


def test_panel_from_tv_first_writer_wins_and_errors():
    p = panel_from_tv("X", 2, 2, lambda t, v: 0, num_threads=3, num_values=2)
    assert p.owner_at(0, 0) == (0, 0) and p.owner_at(1, 1) is None
    with pytest.raises(ValueError, match=r"panel_from_tv: panel 'X': tv\(0, 0\) = 9 is outside the 2x2 tile"):
        panel_from_tv("X", 2, 2, lambda t, v: 9, num_threads=1, num_values=1)
    with pytest.raises(ValueError, match="give num_threads and num_values"):
        panel_from_tv("X", 2, 2, lambda t, v: 0)
    q = panel_from_tv("Y", 2, 3, lambda t, v: (t, v), num_threads=2, num_values=3)
    assert q.owners() == [[(0, 0), (0, 1), (0, 2)], [(1, 0), (1, 1), (1, 2)]]


def test_panel_from_mn_cutes_thrid_form():
    L = StandIn((2, 4), (1, 2))  # (m, n) -> m + 2 n = tv index
    p = panel_from_mn("P", L, num_threads=4, thread_ids=lambda t: 10 + t)
    assert p.owner_at(1, 1) == (13, 0) and p.owner_at(0, 2) == (10, 1)


def test_tv_panel_validation():
    with pytest.raises(ValueError, match="owner table of panel 'S' must be 2x2"):
        TVPanel("S", 2, 2, [[(0, 0)]])
    p = TVPanel("S", 1, 1, lambda r, c: (0, -1))
    with pytest.raises(ValueError, match=r"negative \(thread, value\)"):
        p.owners()
    with pytest.raises(TypeError, match="must be a \\(thread, value\\) pair"):
        TVPanel("S", 1, 1, lambda r, c: 7).owners()
    with pytest.raises(ValueError, match="arrangement must be 'row', 'column' or 'mma'"):
        tv_figure([("S", 1, 1, lambda r, c: (0, 0))], arrangement="ring")
    with pytest.raises(ValueError, match="arrangement 'mma' needs three panels"):
        tv_figure([("S", 1, 1, lambda r, c: (0, 0))], arrangement="mma")


def test_tv_figure_labels_colours_and_one_based():
    S = TVPanel("S", 4, 8, lambda m, n: (m + 4 * (n // 2), n % 2))
    D = ("D", 4, 8, lambda m, n: (n // 2 + 4 * m, n % 2))
    fig = copy_figure(S, D, title="copy", legend=True, highlight_threads=[5])
    s, d = fig.grid("S"), fig.grid("D")
    assert s[1, 2].lines == ("T5", "V0") and s[1, 2].fill == THREAD_COLORS[5]
    assert s[1, 2].border is not None and s[0, 0].border is None
    assert d.row_header_side == "right" and s.row_header_side == "left"
    pos = {p.grid.name: (p.row, p.col) for p in fig.placements}
    assert pos == {"S": (0, 0), "D": (0, 11)}  # CuTe's N + 3
    assert [lbl for _, lbl in fig.legend.entries][:2] == ["T0, T8", "T1, T9"]
    one = copy_figure(S, D, one_based=True)
    c = one.grid("S")[1, 2]
    assert c.lines == ("T6", "V1") and c.data == {"thread": 5, "value": 0}
    assert c.fill == THREAD_COLORS[5]
    assert one.grid("S").col_labels()[0] == "1"
    col = tv_figure([S, D], arrangement="column")
    assert [(p.row, p.col) for p in col.placements] == [(0, 0), (7, 0)]


def test_mma_arrangement_picks_panels_by_name():
    B = TVPanel("B", 2, 3, lambda k, n: (n, k))
    A = TVPanel("A", 4, 2, lambda m, k: (m, k))
    C = TVPanel("C", 4, 3, lambda m, n: (m, n))
    fig = tv_figure([B, A, C], arrangement="mma")
    assert [p.grid.name for p in fig.placements] == ["C", "A", "B"]
    with pytest.raises(ValueError, match="Figure.mma: shapes do not fit"):
        mma_figure(C, A, TVPanel("B", 3, 3, lambda k, n: (0, 0)))


def test_three_panel_128_picture_builds_quickly():
    import time

    t0 = time.perf_counter()
    C = panel_from_tv("C", 128, 128, lambda t, v: t + 128 * v, num_threads=128, num_values=128)
    fig = mma_figure(C, TVPanel("A", 128, 128, lambda m, k: (m, k)), TVPanel("B", 128, 128, lambda k, n: (n, k)))
    svg = fig.to_svg()
    assert time.perf_counter() - t0 < 10.0
    assert svg.count('<rect class="cell') == 3 * 128 * 128


# ---------------------------------------------------------------------------
# notebook hook
# ---------------------------------------------------------------------------
def test_register_figure_hook_and_svg_of_for_layouts():
    class FakeTiledMMA:
        pass

    register_figure(FakeTiledMMA, lambda obj, **kw: mma_figure(
        TVPanel("C", 1, 1, lambda m, n: (0, 0)),
        TVPanel("A", 1, 1, lambda m, k: (0, 0)),
        TVPanel("B", 1, 1, lambda k, n: (0, 0)),
    ))
    assert [g.name for g in figure_of(FakeTiledMMA()).grids] == ["C", "A", "B"]
    assert svg_of(FakeTiledMMA()).startswith("<svg")
    assert svg_of(StandIn((4, 8), (8, 1))).startswith("<svg")
    assert svg_of(StandIn((1024, 1024), (1, 1024))) is None  # too large for a notebook


# ---------------------------------------------------------------------------
# against layoutalg.Layout, when the algebra is importable
# ---------------------------------------------------------------------------
def _real_layout():
    try:
        from layoutalg import Layout
    except Exception:  # the algebra is optional for these tests
        return None
    return Layout


@pytest.mark.skipif(_real_layout() is None, reason="layoutalg.Layout not importable")
def test_with_real_layout():
    Layout = _real_layout()
    L = Layout((4, 8), (8, 1))
    assert layout_ascii(L) == CUTE_4x8_8x1
    nested = Layout(((2, 2), (2, 4)), ((1, 16), (2, 4)))
    alt = StandIn(((2, 2), (2, 4)), ((1, 16), (2, 4)))
    assert layout_values(nested) == layout_values(alt)
    tv = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))
    assert panel_from_tv("C", 16, 8, tv).owners() == panel_from_tv("C", 16, 8, SM80_C).owners()
