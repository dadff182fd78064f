"""Rendering layer of layoutalg.draw: model, SVG, TikZ, Typst, ASCII, PNG, Graphviz, notebook."""

from __future__ import annotations

import gzip
import io
import re
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from layoutalg.draw import (
    BANK_COLORS,
    GREY_COLORS,
    THREAD_COLORS,
    Cell,
    Color,
    DotGraph,
    Figure,
    Grid,
    Legend,
    MissingDependencyError,
    SVGView,
    TVPanel,
    ascii_grid_table,
    ascii_layout_table,
    ascii_tv_table,
    bank_color,
    bank_of,
    compile_typst,
    figure_to_png,
    grey_color,
    mma_figure,
    num_digits,
    render_dot,
    repr_svg,
    save,
    svg_of,
    thread_color,
)
from layoutalg.draw import graphs as graphs_mod
from layoutalg.draw.deps import available

SVG_NS = "{http://www.w3.org/2000/svg}"


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def parse_svg(svg: str) -> ET.Element:
    return ET.fromstring(svg.encode("utf-8"))


def grid_groups(root: ET.Element) -> dict[str, ET.Element]:
    return {
        g.get("data-name"): g
        for g in root.iter(SVG_NS + "g")
        if "grid" in (g.get("class") or "").split()
    }


def cells_of(group: ET.Element) -> list[ET.Element]:
    return [r for r in group.iter(SVG_NS + "rect") if "cell" in (r.get("class") or "").split()]


def css_fills(root: ET.Element) -> dict[str, str]:
    style = "".join(s.text or "" for s in root.iter(SVG_NS + "style"))
    return dict(re.findall(r"\.(f\d+)\{fill:(#[0-9a-f]{6})\}", style))


def tv_grid_fixture(rows: int, cols: int, name: str, title: str | None = None) -> Grid:
    g = Grid(rows, cols, name=name, title=title)
    for r in range(rows):
        for c in range(cols):
            t, v = (r * cols + c) % 32, (r * cols + c) // 32
            g.set(r, c, f"T{t}", f"V{v}", fill=thread_color(t), data={"thread": t, "value": v})
    return g


def big_mma_figure(n: int = 128) -> Figure:
    C = TVPanel("C", n, n, lambda m, k: ((m % 32) + 32 * (k % 4), (m // 32) + 4 * (k // 4)))
    A = TVPanel("A", n, n, lambda m, k: (m, k))
    B = TVPanel("B", n, n, lambda k, c: (c, k))
    return mma_figure(C, A, B, title=f"{n}x{n}x{n}")


# ---------------------------------------------------------------------------
# colours
# ---------------------------------------------------------------------------
def test_thread_colours_are_cutes_eight_pastels():
    assert [c.rgb for c in THREAD_COLORS] == [
        (175, 175, 255), (175, 255, 175), (255, 255, 175), (255, 175, 175),
        (210, 210, 255), (210, 255, 210), (255, 255, 210), (255, 210, 210),
    ]
    assert THREAD_COLORS[0].tikz == "{rgb,255:red,175;green,175;blue,255}"
    assert thread_color(13) == THREAD_COLORS[5]


def test_grey_colours_follow_cutes_bw_order():
    assert [c.tikz for c in GREY_COLORS] == [
        "black!00", "black!40", "black!20", "black!60", "black!10", "black!50", "black!30", "black!70",
    ]
    assert GREY_COLORS[0].rgb == (255, 255, 255)
    assert GREY_COLORS[1].rgb == (153, 153, 153)
    assert grey_color(9) == GREY_COLORS[1]


@pytest.mark.parametrize(
    "index,bits,bank",
    [(0, 16, 0), (1, 16, 0), (2, 16, 1), (63, 16, 31), (64, 16, 0), (33, 32, 1), (16, 64, 0), (3, 64, 6), (15, 4, 1), (8, 8, 2)],
)
def test_bank_of(index, bits, bank):
    assert bank_of(index, bits) == bank


def test_bank_palette_has_32_distinct_colours():
    assert len(BANK_COLORS) == 32 and len({c.rgb for c in BANK_COLORS}) == 32
    assert bank_color(31) == BANK_COLORS[31]
    with pytest.raises(ValueError, match="bank_color: bank must be in"):
        bank_color(32)
    with pytest.raises(ValueError, match="bank_of: dtype_bits must be positive"):
        bank_of(3, 0)
    with pytest.raises(TypeError, match="bank_of: index must be an int"):
        bank_of(1.5, 16)


def test_color_validation():
    with pytest.raises(ValueError, match="Color: channel r"):
        Color(256, 0, 0)
    with pytest.raises(ValueError, match="is not a #rrggbb"):
        Color.from_hex("#12345")
    assert Color.from_hex("#AbC").hex == "#aabbcc"


# ---------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------
def test_grid_validation_messages():
    with pytest.raises(ValueError, match=r"Grid: rows and cols must be >= 1, got 0x3"):
        Grid(0, 3)
    g = Grid(2, 3, name="X")
    with pytest.raises(ValueError, match=r"Grid.set: cell \(2, 0\) is outside the 2x3 grid 'X'"):
        g.set(2, 0, "a")
    with pytest.raises(ValueError, match="at most two text lines"):
        g.set(0, 0, "a", "b", "c")
    with pytest.raises(TypeError, match="Grid.__getitem__: index with grid"):
        g[0]
    with pytest.raises(ValueError, match="expected 3 header labels, got 2"):
        Grid(2, 3, col_headers=["a", "b"])
    with pytest.raises(ValueError, match="row_header_side must be"):
        Grid(2, 3, row_header_side="top")


def test_figure_mma_shape_check():
    with pytest.raises(ValueError, match=r"C 4x2, A 4x3, B 2x2"):
        Figure.mma(Grid(4, 2, name="C"), Grid(4, 3, name="A"), Grid(2, 2, name="B"))
    with pytest.raises(ValueError, match="has no grids"):
        Figure().to_svg()


def test_mma_arrangement_follows_cute_placement():
    C, A, B = Grid(16, 8, name="C"), Grid(16, 4, name="A"), Grid(4, 8, name="B")
    fig = Figure.mma(C, A, B)
    pos = {p.grid.name: (p.row, p.col) for p in fig.placements}
    # CuTe: C at (0,0), A at columns -K-1.., B at rows -K-1..
    assert pos == {"C": (0, 0), "A": (0, -5), "B": (-5, 0)}


# ---------------------------------------------------------------------------
# SVG
# ---------------------------------------------------------------------------
def test_svg_is_well_formed_with_one_cell_element_per_tile():
    C, A, B = tv_grid_fixture(8, 4, "C", "C"), tv_grid_fixture(8, 6, "A", "A"), tv_grid_fixture(6, 4, "B", "B")
    fig = Figure.mma(C, A, B, title="demo & <test>", legend=Legend([(THREAD_COLORS[0], "T0")], title="legend"))
    root = parse_svg(fig.to_svg())
    assert root.tag == SVG_NS + "svg"
    groups = grid_groups(root)
    assert set(groups) == {"C", "A", "B"}
    for name, g in (("C", C), ("A", A), ("B", B)):
        cells = cells_of(groups[name])
        assert len(cells) == g.rows * g.cols
        coords = {(int(c.get("data-row")), int(c.get("data-col"))) for c in cells}
        assert coords == {(r, k) for r in range(g.rows) for k in range(g.cols)}
        assert groups[name].get("data-rows") == str(g.rows)
    # sampled labels, data attributes and colours
    fills = css_fills(root)
    by_rc = {(int(c.get("data-row")), int(c.get("data-col"))): c for c in cells_of(groups["A"])}
    for (r, k) in [(0, 0), (3, 5), (7, 2)]:
        e = by_rc[(r, k)]
        t, v = (r * 6 + k) % 32, (r * 6 + k) // 32
        assert e.get("data-label") == f"T{t} V{v}"
        assert e.get("data-thread") == str(t) and e.get("data-value") == str(v)
        fcls = [x for x in e.get("class").split() if x.startswith("f")][0]
        assert fills[fcls] == thread_color(t).hex
    texts = [t.text for t in root.iter(SVG_NS + "text")]
    assert "demo & <test>" in texts  # escaped in the file, intact after parsing


def test_svg_headers_and_empty_cells():
    g = Grid(3, 2, name="G", index_base=1)
    g.set(0, 0, "x")
    root = parse_svg(g.figure().to_svg())
    grp = grid_groups(root)["G"]
    cells = cells_of(grp)
    assert len(cells) == 6 and sum(c.get("data-label") == "" for c in cells) == 5
    hdrs = [t for t in grp.iter(SVG_NS + "text") if t.get("class") == "hdr"]
    rows = [t.text for t in hdrs if t.get("data-axis") == "row"]
    cols = [t.text for t in hdrs if t.get("data-axis") == "col"]
    assert rows == ["1", "2", "3"] and cols == ["1", "2"]


def test_svg_escapes_hostile_text():
    g = Grid(1, 2, name='n"<&>')
    g.set(0, 0, "<&>", "'\"")
    g.set(0, 1, "a\x01b")
    svg = Figure(title="]]> <!-- --> &amp;", comments=["a -- b", "c-"]).add(g).to_svg()
    root = parse_svg(svg)
    cells = cells_of(grid_groups(root)['n"<&>'])
    assert cells[0].get("data-label") == "<&> '\""
    assert cells[1].get("data-label") == "ab"


def test_svg_fonts_scale_with_cell_size():
    g = tv_grid_fixture(2, 2, "G")
    small = g.figure().to_svg(cell_size=16)
    large = g.figure().to_svg(cell_size=64)
    fs = lambda s: float(re.search(r"\.g0 text\{font-size:([0-9.]+)px\}", s).group(1))  # noqa: E731
    assert fs(large) == pytest.approx(4 * fs(small), rel=0.02)
    root = parse_svg(large)
    assert float(root.get("width")) > 3 * 64  # 2 cells + header + margins


def test_svg_highlight_and_dark_fill_text():
    g = Grid(1, 2, name="G")
    g.set(0, 0, "7", fill=GREY_COLORS[7])
    g.set(0, 1, "1", fill=GREY_COLORS[1])
    g.highlight(0, 1)
    root = parse_svg(g.figure().to_svg())
    hl = [r for r in root.iter(SVG_NS + "rect") if r.get("class") == "hl"]
    assert len(hl) == 1 and hl[0].get("stroke") == "#dc143c"
    dark = [t for t in root.iter(SVG_NS + "text") if t.get("class") == "d"]
    assert [t.text for t in dark] == ["7"]


def test_svg_without_data_attributes_is_smaller():
    fig = tv_grid_fixture(8, 8, "G").figure()
    with_data, without = fig.to_svg(), fig.to_svg(data_attrs=False)
    assert len(without) < len(with_data)
    assert "data-label" not in without
    assert len(cells_of(grid_groups(parse_svg(without))["G"])) == 64


def test_svg_option_validation():
    fig = Grid(1, 1).figure()
    with pytest.raises(ValueError, match="figure_to_svg: cell_size must be a positive number"):
        fig.to_svg(cell_size=0)
    with pytest.raises(TypeError, match="figure_to_svg: expected a Figure"):
        from layoutalg.draw import figure_to_svg

        figure_to_svg("x")


def test_large_three_panel_figure_is_fast(record_property):
    t0 = time.perf_counter()
    fig = big_mma_figure(128)
    svg = fig.to_svg()
    elapsed = time.perf_counter() - t0
    record_property("svg_128x128x3_seconds", round(elapsed, 3))
    record_property("svg_128x128x3_bytes", len(svg))
    print(f"\n128x128 three-panel figure: build+SVG {elapsed:.3f} s, {len(svg) / 1e6:.1f} MB", file=sys.stderr)
    # typically ~0.5 s; the bound is generous for slow CI machines
    assert elapsed < 10.0
    root = parse_svg(svg)
    groups = grid_groups(root)
    assert all(len(cells_of(groups[n])) == 128 * 128 for n in "CAB")
    # compression works well on such files
    assert len(gzip.compress(svg.encode())) < len(svg) / 4


# ---------------------------------------------------------------------------
# ASCII (CuTe's print_layout)
# ---------------------------------------------------------------------------
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


def cute_print_layout(values, header, cosize):
    """Oracle: CuTe's print_layout printf sequence, transcribed call by call."""
    def cute_num_digits(x):
        for n, lim in enumerate((10, 100, 1000, 10000, 100000, 1000000, 10**7, 10**8, 10**9), 1):
            if x < lim:
                return n
        return 10

    idx_width = cute_num_digits(cosize) + 2
    delim = "+-----------------------"
    out = header + "\n"
    out += "    "
    for n in range(len(values[0])):
        out += "  %*d " % (idx_width - 2, n)
    out += "\n"
    for m in range(len(values)):
        out += "    "
        for n in range(len(values[0])):
            out += delim[: idx_width + 1]
        out += "+\n"
        out += "%2d  " % m
        for n in range(len(values[0])):
            out += "| %*d " % (idx_width - 2, values[m][n])
        out += "|\n"
    out += "    "
    for n in range(len(values[0])):
        out += delim[: idx_width + 1]
    out += "+\n"
    return out


def test_ascii_matches_cute_print_layout_exactly():
    values = [[8 * m + n for n in range(8)] for m in range(4)]
    assert ascii_layout_table(values, "(4,8):(8,1)") == CUTE_4x8_8x1
    assert ascii_layout_table(values, "(4,8):(8,1)") == cute_print_layout(values, "(4,8):(8,1)", 32)


@pytest.mark.parametrize(
    "M,N,f,cos",
    [
        (2, 5, lambda m, n: 5 * m + n, 10),          # width grows at cosize 10
        (3, 3, lambda m, n: m + 3 * n, 9),
        (12, 2, lambda m, n: m * 100 + n, 1102),     # 4-digit cells, 2-digit rows
        (1, 1, lambda m, n: 0, 1),
    ],
)
def test_ascii_matches_oracle(M, N, f, cos):
    values = [[f(m, n) for n in range(N)] for m in range(M)]
    assert ascii_layout_table(values, "L", cosize=cos) == cute_print_layout(values, "L", cos)


def test_ascii_one_based_is_moye_numbering():
    values = [[8 * m + n for n in range(8)] for m in range(4)]
    text = ascii_layout_table(values, "(4,8):(8,1)", one_based=True)
    lines = text.splitlines()
    assert lines[1] == "       1    2    3    4    5    6    7    8 "
    assert lines[3] == " 1  |  1 |  2 |  3 |  4 |  5 |  6 |  7 |  8 |"
    assert lines[-2] == " 4  | 25 | 26 | 27 | 28 | 29 | 30 | 31 | 32 |"


def test_ascii_tv_table_is_cutes_thrval_form():
    owners = [[(m, n) for n in range(3)] for m in range(2)]
    assert ascii_tv_table(owners) == (
        "+------+------+------+\n"
        "|000-00|000-01|000-02|\n"
        "+------+------+------+\n"
        "|001-00|001-01|001-02|\n"
        "+------+------+------+\n"
    )


def test_ascii_validation_and_generic_table():
    assert num_digits(9) == 1 and num_digits(10) == 2 and num_digits(-5) == 1
    with pytest.raises(ValueError, match="ascii_layout_table: row 1 has 1 entries, row 0 has 2"):
        ascii_layout_table([[0, 1], [2]])
    with pytest.raises(TypeError, match="ascii_layout_table: values must be ints, got float"):
        ascii_layout_table([[0.5]])
    g = Grid(1, 1)
    g.set(0, 0, "T0", "V0")
    assert "| T0/V0 |" in ascii_grid_table(g)


def test_figure_to_ascii_picks_the_right_table():
    g = Grid.from_values([[0, 2], [1, 3]])
    g.meta["cosize"] = 4
    assert Figure(title="(2,2):(1,2)").add(g).to_ascii() == cute_print_layout([[0, 2], [1, 3]], "(2,2):(1,2)", 4)
    tv = Figure.side_by_side([tv_grid_fixture(1, 2, "S", "S"), tv_grid_fixture(1, 2, "D", "D")], title="copy")
    text = tv.to_ascii()
    assert text.startswith("copy\n") and "|000-00|001-00|" in text and "\nD\n" in text


# ---------------------------------------------------------------------------
# TikZ (CuTe's print_latex)
# ---------------------------------------------------------------------------
def cute_print_latex(layout_str, values):
    """Oracle: CuTe's print_latex(layout) printf sequence (TikzColor_BWx8)."""
    cmap = ["black!00", "black!40", "black!20", "black!60", "black!10", "black!50", "black!30", "black!70"]
    M, N = len(values), len(values[0])
    out = "%% Layout: %s\n" % layout_str
    out += (
        "\\documentclass[convert]{standalone}\n"
        "\\usepackage{tikz}\n\n"
        "\\begin{document}\n"
        "\\begin{tikzpicture}[x={(0cm,-1cm)},y={(1cm,0cm)},every node/.style={minimum size=1cm, outer sep=0pt}]\n\n"
    )
    for m in range(M):
        for n in range(N):
            idx = values[m][n]
            out += "\\node[fill=%s] at (%d,%d) {%d};\n" % (cmap[idx % 8], m, n, idx)
    out += "\\draw[color=black,thick,shift={(-0.5,-0.5)}] (0,0) grid (%d,%d);\n\n" % (M, N)
    for m in range(M):
        out += "\\node at (%d,%d) {\\Large{\\texttt{%d}}};\n" % (m, -1, m)
    for n in range(N):
        out += "\\node at (%d,%d) {\\Large{\\texttt{%d}}};\n" % (-1, n, n)
    out += "\\end{tikzpicture}\n\\end{document}\n"
    return out


def test_tikz_matches_cute_print_latex_for_a_layout_grid():
    values = [[8 * m + n for n in range(8)] for m in range(4)]
    g = Grid.from_values(values, fill=grey_color)
    fig = Figure(comments=["Layout: (4,8):(8,1)"]).add(g)
    assert fig.to_tikz(titles=False) == cute_print_latex("(4,8):(8,1)", values)


def test_tikz_tv_structure():
    C, A, B = tv_grid_fixture(4, 2, "C", "C"), tv_grid_fixture(4, 3, "A", "A"), tv_grid_fixture(3, 2, "B", "B")
    B.highlight(0, 0)
    tex = Figure.mma(C, A, B, title="MMA_50%_x").to_tikz()
    assert tex.startswith("\\documentclass[convert]{standalone}\n\\usepackage{tikz}\n")
    assert "\\begin{tikzpicture}[x={(0cm,-1cm)},y={(1cm,0cm)}," in tex
    assert tex.rstrip().endswith("\\end{document}")
    cells = re.findall(r"\\node\[fill=(\{rgb,255:red,\d+;green,\d+;blue,\d+\})\] at \((-?\d+),(-?\d+)\) \{\\shortstack\{T(\d+) \\\\ V(\d+)\}\};", tex)
    assert len(cells) == 4 * 2 + 4 * 3 + 3 * 2
    # A sits at columns -K-1 .. -2 (K = 3) as in CuTe's print_latex_mma
    a_cols = sorted({int(c) for _, r, c, _, _ in cells if int(c) < 0})
    assert a_cols == [-4, -3, -2]
    # B sits at rows -K-1 .. -2
    b_rows = sorted({int(r) for _, r, c, _, _ in cells if int(r) < 0})
    assert b_rows == [-4, -3, -2]
    assert tex.count("grid (") == 3
    assert "\\draw[color=black,thick,shift={(-0.5,-0.5)}] (0,-4) grid (4,-1);" in tex
    assert "MMA\\_50\\%\\_x" in tex  # escaped title
    assert "ultra thick" in tex  # highlight
    assert tex.count("{") == tex.count("}")


# ---------------------------------------------------------------------------
# Typst (MoYe.jl's print_typst)
# ---------------------------------------------------------------------------
def test_typst_structure():
    C, A, B = tv_grid_fixture(4, 2, "C", "C"), tv_grid_fixture(4, 3, "A", "A"), tv_grid_fixture(3, 2, "B", "B")
    A.highlight(1, 1)
    src = Figure.mma(C, A, B, title='t"q\\').to_typst()
    assert "#let color_map = (\n  rgb(175, 175, 255)," in src
    assert "#let cell(ci, ..lines) = table.cell(fill: color_map.at(ci)" in src
    for i in range(3):
        assert f"#let table_{i} = text(size:" in src
        assert f"table_{i})" in src
    n_cells = len(re.findall(r"\b(?:cell|mark_cell)\(\d+, ", src))
    assert n_cells == 4 * 2 + 4 * 3 + 3 * 2
    assert 'cell(0, "T0", "V0")' in src
    assert '"t\\"q\\\\"' in src  # escaped string literal
    assert src.count("(") == src.count(")") and src.count("[") == src.count("]")


@pytest.mark.skipif(not available("typst"), reason="typst package not installed")
def test_typst_compiles_to_svg_and_png(tmp_path):
    fig = mma_figure(
        TVPanel("C", 4, 4, lambda m, n: (m, n)),
        TVPanel("A", 4, 2, lambda m, k: (m, k)),
        TVPanel("B", 2, 4, lambda k, n: (n, k)),
        title="typst",
        legend=True,
        highlight_threads=[0],
    )
    svg = compile_typst(fig.to_typst(), format="svg")
    assert parse_svg(svg.decode()).tag == SVG_NS + "svg"
    out = tmp_path / "f.png"
    png = compile_typst(fig.to_typst(), out, ppi=72)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 0


def test_typst_missing_package_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "typst", None)
    with pytest.raises(MissingDependencyError, match="pip install typst"):
        compile_typst("#[hi]", format="pdf")
    with pytest.raises(ValueError, match="compile_typst: format must be"):
        compile_typst("x", format="docx")


# ---------------------------------------------------------------------------
# PNG
# ---------------------------------------------------------------------------
@pytest.mark.skipif(not available("cairosvg"), reason="cairosvg not installed")
def test_png_written_and_non_empty(tmp_path):
    fig = Figure.side_by_side([tv_grid_fixture(4, 8, "S", "S"), tv_grid_fixture(4, 8, "D", "D")], title="copy")
    out = tmp_path / "copy.png"
    data = figure_to_png(fig, out)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size == len(data) > 1000
    width = int.from_bytes(data[16:20], "big")
    height = int.from_bytes(data[20:24], "big")
    assert width > 20 * 32 and height > 4 * 32
    half = figure_to_png(fig, scale=0.5)
    assert int.from_bytes(half[16:20], "big") < width


def test_png_missing_cairo_says_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cairocffi", None)        # what cairosvg brings
    with pytest.raises(MissingDependencyError, match="pip install cairosvg"):
        Grid(1, 1).figure().to_png()


def _pixels(png):
    import cairocffi

    surf = cairocffi.ImageSurface.create_from_png(io.BytesIO(png))
    w, h, stride = surf.get_width(), surf.get_height(), surf.get_stride()
    a = np.frombuffer(bytes(surf.get_data()), np.uint8).reshape(h, stride)[:, : 4 * w].reshape(h, w, 4)
    return a[..., 2::-1].astype(int)                         # BGRA -> RGB


@pytest.mark.skipif(not available("cairosvg"), reason="cairosvg not installed")
def test_png_is_the_picture_the_svg_draws():
    """The PNG drawn straight with cairo equals cairosvg's rendering of the SVG (fonts aside):
    the same size, and nearly every pixel within a few levels; cells have their fills."""
    from layoutalg import Layout, make_tiled_mma
    from layoutalg.draw import layout_figure, tiled_mma_figure
    from layoutalg.draw.raster import svg_to_png

    for fig in (layout_figure(Layout((8, 8), (8, 1))), tiled_mma_figure(make_tiled_mma("SM80_16x8x8_F32TF32TF32F32_TN"))):
        direct, via_svg = _pixels(figure_to_png(fig)), _pixels(svg_to_png(fig.to_svg()))
        assert direct.shape == via_svg.shape
        close = np.abs(direct - via_svg).max(axis=2) <= 24
        assert close.mean() > 0.97, close.mean()
    scene = layout_figure(Layout((8, 8), (8, 1))).scene()
    gi = scene.grids[0]
    cell = gi.grid.cells[9]                                    # row 1, col 1
    x = int((gi.x - scene.bounds[0] + 1) * 32 + 3)
    y = int((gi.y - scene.bounds[1] + 1) * 32 + 3)            # a corner of the cell, away from its text
    assert tuple(_pixels(figure_to_png(layout_figure(Layout((8, 8), (8, 1)))))[y, x]) == cell.fill.rgb


def test_png_larger_than_cairo_can_make_is_refused_naming_its_size():
    fig = Grid(8, 8).figure()
    with pytest.raises(ValueError, match=r"would be \d+ x \d+ pixels .* at most 32767 pixels a side"):
        figure_to_png(fig, scale=200)


# ---------------------------------------------------------------------------
# save
# ---------------------------------------------------------------------------
def test_save_by_extension(tmp_path):
    fig = Grid.from_values([[0, 1], [2, 3]], fill=grey_color).figure(title="t")
    for ext in ("svg", "tex", "typ", "txt", "svgz"):
        p = save(fig, tmp_path / f"f.{ext}")
        assert p.stat().st_size > 0
    assert parse_svg(gzip.decompress((tmp_path / "f.svgz").read_bytes()).decode()).tag == SVG_NS + "svg"
    assert (tmp_path / "f.txt").read_text().startswith("t\n")
    with pytest.raises(ValueError, match="save: unknown format 'doc'"):
        save(fig, tmp_path / "f.doc")


# ---------------------------------------------------------------------------
# Graphviz
# ---------------------------------------------------------------------------
def test_dot_source_quotes_and_escapes():
    g = DotGraph("data path", graph_attrs={"rankdir": "LR"}, node_attrs={"shape": "box"})
    g.add_node("smem", 'shared "A"')
    g.add_edge("gmem", "smem", label="cp.async\n16B")
    src = g.source
    assert src.startswith('digraph "data path" {\n  graph [rankdir="LR"];\n  node [shape="box"];\n')
    assert '"smem" [label="shared \\"A\\""];' in src
    assert '"gmem" -> "smem" [label="cp.async\\n16B"];' in src
    assert '"gmem";' in src  # endpoint added as a plain node


def test_render_dot_without_graphviz_writes_dot_and_says_how(tmp_path, monkeypatch):
    monkeypatch.setattr(graphs_mod, "dot_available", lambda: False)
    g = DotGraph("g")
    g.add_edge("a", "b")
    res = render_dot(g, tmp_path / "out" / "g.svg")
    assert not res.rendered and res.output_path is None
    assert res.dot_path.read_text() == g.source
    assert "apt-get install graphviz" in res.message and "dot -Tsvg" in res.message
    with pytest.raises(ValueError, match="render_dot: format must be"):
        render_dot(g, tmp_path / "g.gif")


@pytest.mark.skipif(not graphs_mod.dot_available(), reason="Graphviz 'dot' not installed")
def test_render_dot_with_graphviz(tmp_path):
    g = DotGraph("g")
    g.add_edge("a", "b", label="x")
    res = render_dot(g, tmp_path / "g.svg")
    assert res.rendered and parse_svg(res.output_path.read_text()).tag == SVG_NS + "svg"


# ---------------------------------------------------------------------------
# notebook
# ---------------------------------------------------------------------------
def test_repr_svg_helpers():
    g = tv_grid_fixture(2, 2, "G")
    svg = repr_svg(g)
    assert svg.startswith("<svg") and parse_svg(svg).tag == SVG_NS + "svg"
    assert Figure().add(g)._repr_svg_().startswith("<svg")
    assert g._repr_svg_().lstrip().startswith("<?xml")
    assert SVGView(g)._repr_svg_().startswith("<svg")
    wide = repr_svg(tv_grid_fixture(2, 64, "W"), max_width=500)
    assert float(parse_svg(wide).get("width")) == 500
    assert svg_of(object()) is None
    with pytest.raises(TypeError, match="figure_of: expected a Figure, Grid, layout"):
        repr_svg(object())


def test_cell_equality_and_repr():
    a = Cell(("T1", "V2"), fill=(1, 2, 3), data={"thread": 1})
    b = Cell(["T1", "V2"], fill="#010203", data={"thread": 1})
    assert a == b and "T1" in repr(a)


# ---------------------------------------------------------------------------
# the examples in the docstrings
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "module",
    ["colors", "model", "svg", "tikz", "typst_doc", "ascii_table", "raster", "graphs", "notebook",
     "output", "deps", "layout_pictures", "bank_pictures"],
)
def test_docstring_examples(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"layoutalg.draw.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
