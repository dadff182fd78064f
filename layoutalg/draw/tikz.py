r"""LaTeX/TikZ back-end in the form of CuTe's ``print_latex``.

The document is a ``standalone`` page with one ``tikzpicture`` whose axes are
turned so that the first coordinate is the row (down) and the second the column
(right), exactly as CuTe writes it::

    % Layout: (4,8):(8,1)
    \documentclass[convert]{standalone}
    \usepackage{tikz}

    \begin{document}
    \begin{tikzpicture}[x={(0cm,-1cm)},y={(1cm,0cm)},every node/.style={minimum size=1cm, outer sep=0pt}]

    \node[fill=black!00] at (0,0) {0};
    ...
    \draw[color=black,thick,shift={(-0.5,-0.5)}] (0,0) grid (4,8);

    \node at (0,-1) {\Large{\texttt{0}}};
    ...
    \end{tikzpicture}
    \end{document}

Cells are ``\node[fill=COLOUR] at (row,col) {TEXT};`` with CuTe's inline colour
spelling (``{rgb,255:red,175;green,175;blue,255}`` or ``black!40``); two-line
cells use ``\shortstack{T5 \\ V3}``; headers are ``\Large{\texttt{i}}`` nodes.
Titles, highlights and the legend are extra nodes/draws in the same style.

>>> from layoutalg.draw.model import Grid
>>> g = Grid.from_values([[0, 1]])
>>> print(figure_to_tikz(g.figure()).splitlines()[6])
\node at (0,0) {0};
"""

from __future__ import annotations

from .model import Figure, Scene

__all__ = ["figure_to_tikz", "latex_escape", "TIKZ_PICTURE_OPTIONS"]

TIKZ_PICTURE_OPTIONS = "x={(0cm,-1cm)},y={(1cm,0cm)},every node/.style={minimum size=1cm, outer sep=0pt}"

_LATEX_ESC = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def latex_escape(text: object) -> str:
    r"""Escape LaTeX special characters.

    >>> latex_escape("T_0 & 50%")
    'T\\_0 \\& 50\\%'
    """
    s = str(text)
    if not any(ch in _LATEX_ESC for ch in s):
        return s
    return "".join(_LATEX_ESC.get(ch, ch) for ch in s)


def _n(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.3f}".rstrip("0").rstrip(".")


def figure_to_tikz(fig: Figure, *, titles: bool = True) -> str:
    """Render a :class:`~layoutalg.draw.model.Figure` as a standalone LaTeX/TikZ document.

    With ``titles=False`` the figure and grid titles, legend and notes are left
    out; a single layout grid then comes out exactly as CuTe's print_latex
    writes it. Figure comments become ``%`` lines at the top.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"figure_to_tikz: expected a Figure, got {type(fig).__name__}")
    scene: Scene = fig.scene()
    out: list[str] = []
    a = out.append
    for line in scene.comments:
        a(f"% {line}\n")
    a(
        "\\documentclass[convert]{standalone}\n"
        "\\usepackage{tikz}\n\n"
        "\\begin{document}\n"
        f"\\begin{{tikzpicture}}[{TIKZ_PICTURE_OPTIONS}]\n\n"
    )
    esc_cache: dict[str, str] = {}

    def esc(s: str) -> str:
        e = esc_cache.get(s)
        if e is None:
            e = esc_cache[s] = latex_escape(s)
        return e

    hdrs: dict[int, list] = {}
    others = []
    for t in scene.texts:
        if t.role == "hdr":
            hdrs.setdefault(t.data["slot"], []).append(t)
        else:
            others.append(t)

    for slot, gi in enumerate(scene.grids):
        g = gi.grid
        r0, c0 = gi.y, gi.x
        borders = []
        cols = g.cols
        for off, cell in enumerate(g.cells):
            if cell is None:
                continue
            r, c = divmod(off, cols)
            lines = cell.lines
            if len(lines) == 2:
                text = f"\\shortstack{{{esc(lines[0])} \\\\ {esc(lines[1])}}}"
            elif len(lines) == 1:
                text = esc(lines[0])
            else:
                text = ""
            if cell.fill is not None:
                a(f"\\node[fill={cell.fill.tikz}] at ({_n(r0 + r)},{_n(c0 + c)}) {{{text}}};\n")
            elif text:
                a(f"\\node at ({_n(r0 + r)},{_n(c0 + c)}) {{{text}}};\n")
            if cell.border is not None:
                borders.append((r, c, cell.border))
        a(
            f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] ({_n(r0)},{_n(c0)}) grid "
            f"({_n(r0 + g.rows)},{_n(c0 + g.cols)});\n"
        )
        for r, c, color in borders:
            a(
                f"\\draw[color={color.tikz},ultra thick,shift={{(-0.5,-0.5)}}] ({_n(r0 + r)},{_n(c0 + c)}) "
                f"rectangle ({_n(r0 + r + 1)},{_n(c0 + c + 1)});\n"
            )
        a("\n")
        for t in hdrs.get(slot, ()):
            # scene positions are cell corners + 0.5; TikZ nodes sit on cell centres
            a(f"\\node at ({_n(t.y - 0.5)},{_n(t.x - 0.5)}) {{\\Large{{\\texttt{{{esc(t.text)}}}}}}};\n")

    if not titles:
        a("\\end{tikzpicture}\n\\end{document}\n")
        return "".join(out)
    for s in scene.swatches:
        a(
            f"\\node[fill={s.color.tikz},draw=black,minimum size={_n(s.size)}cm] at "
            f"({_n(s.y + s.size / 2 - 0.5)},{_n(s.x + s.size / 2 - 0.5)}) {{}};\n"
        )
    anchors = {"middle": "", "start": "anchor=west,", "end": "anchor=east,"}
    fonts = {
        "title": "\\Large\\bfseries",
        "figure-title": "\\LARGE\\bfseries",
        "legend-title": "\\bfseries",
        "legend": "\\small",
        "note": "\\small",
    }
    for t in others:
        opt = f"[{anchors[t.anchor]}minimum size=0pt,font={fonts.get(t.role, '')}]"
        a(f"\\node{opt} at ({_n(t.y - 0.5)},{_n(t.x - 0.5)}) {{{esc(t.text)}}};\n")
    a("\\end{tikzpicture}\n\\end{document}\n")
    return "".join(out)
