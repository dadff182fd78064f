"""Directed graphs as Graphviz ``.dot`` text, rendered when Graphviz is present.

:class:`DotGraph` collects labelled nodes and edges and writes ``.dot`` text
itself; :func:`render_dot` turns it into SVG/PNG/PDF through the ``graphviz``
Python package or the ``dot`` program. When ``dot`` is missing nothing fails:
the ``.dot`` file is written and the returned :class:`DotResult` says how to
install Graphviz.

>>> g = DotGraph("tv")
>>> g.add_node("t0", "thread 0", shape="box")
>>> g.add_node("m0", "(0,0)")
>>> g.add_edge("t0", "m0", label="v0")
>>> print(g.source, end="")
digraph "tv" {
  "t0" [label="thread 0", shape="box"];
  "m0" [label="(0,0)"];
  "t0" -> "m0" [label="v0"];
}
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .deps import available

__all__ = ["DotGraph", "DotResult", "render_dot", "dot_available", "dot_quote", "INSTALL_HINT"]

INSTALL_HINT = (
    "Graphviz's 'dot' program was not found; install Graphviz to render "
    "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
    "conda: conda install graphviz) and run: dot -T{fmt} {dot} -o {out}"
)

_FORMATS = ("svg", "png", "pdf")


def dot_quote(text: Any) -> str:
    """A double-quoted DOT ID with ``"`` and backslashes escaped (newlines become ``\\n``).

    >>> dot_quote('a "b"')
    '"a \\\\"b\\\\""'
    """
    s = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return f'"{s}"'


def _attrs(attrs: dict[str, Any]) -> str:
    if not attrs:
        return ""
    return " [" + ", ".join(f"{k}={dot_quote(v)}" for k, v in attrs.items()) + "]"


class DotGraph:
    """A directed graph with labelled nodes and edges.

    ``graph_attrs``, ``node_attrs`` and ``edge_attrs`` set defaults
    (``rankdir="LR"``, ``shape="box"``...).
    """

    def __init__(
        self,
        name: str = "G",
        *,
        graph_attrs: dict[str, Any] | None = None,
        node_attrs: dict[str, Any] | None = None,
        edge_attrs: dict[str, Any] | None = None,
    ) -> None:
        self.name = str(name)
        self.graph_attrs = dict(graph_attrs or {})
        self.node_attrs = dict(node_attrs or {})
        self.edge_attrs = dict(edge_attrs or {})
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: list[tuple[str, str, dict[str, Any]]] = []

    def add_node(self, node_id: Any, label: Any = None, **attrs: Any) -> None:
        """Add (or update) a node; ``label`` defaults to the id."""
        nid = str(node_id)
        a = dict(self.nodes.get(nid, {}))
        if label is not None:
            a["label"] = str(label)
        a.update(attrs)
        self.nodes[nid] = a

    def add_edge(self, src: Any, dst: Any, label: Any = None, **attrs: Any) -> None:
        """Add an edge ``src -> dst`` (missing endpoints are added as plain nodes)."""
        s, d = str(src), str(dst)
        for n in (s, d):
            self.nodes.setdefault(n, {})
        a = {}
        if label is not None:
            a["label"] = str(label)
        a.update(attrs)
        self.edges.append((s, d, a))

    @property
    def source(self) -> str:
        """The DOT text."""
        out = [f"digraph {dot_quote(self.name)} {{\n"]
        if self.graph_attrs:
            out.append("  graph" + _attrs(self.graph_attrs) + ";\n")
        if self.node_attrs:
            out.append("  node" + _attrs(self.node_attrs) + ";\n")
        if self.edge_attrs:
            out.append("  edge" + _attrs(self.edge_attrs) + ";\n")
        for nid, a in self.nodes.items():
            out.append(f"  {dot_quote(nid)}{_attrs(a)};\n")
        for s, d, a in self.edges:
            out.append(f"  {dot_quote(s)} -> {dot_quote(d)}{_attrs(a)};\n")
        out.append("}\n")
        return "".join(out)

    def render(self, path: Any, *, format: str | None = None) -> "DotResult":
        """Shorthand for :func:`render_dot`."""
        return render_dot(self, path, format=format)

    def _repr_svg_(self) -> str | None:
        """SVG for notebooks when Graphviz is installed (None otherwise: the text repr shows)."""
        return _run_dot(self.source, "svg").decode("utf-8") if dot_available() else None

    def __repr__(self) -> str:
        return f"DotGraph({self.name!r}, nodes={len(self.nodes)}, edges={len(self.edges)})"


@dataclass
class DotResult:
    """What :func:`render_dot` did: the ``.dot`` file always, the rendering if possible."""

    dot_path: Path
    output_path: Path | None
    rendered: bool
    message: str

    def __bool__(self) -> bool:
        return self.rendered


def dot_available() -> bool:
    """True when Graphviz's ``dot`` program is on PATH."""
    return shutil.which("dot") is not None


def _run_dot(source: str, fmt: str) -> bytes:
    if available("graphviz"):
        import graphviz

        return graphviz.Source(source).pipe(format=fmt)
    proc = subprocess.run(["dot", f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dot -T{fmt} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout


def render_dot(graph: "DotGraph | str", path: Any, *, format: str | None = None) -> DotResult:
    """Write ``graph`` (a :class:`DotGraph` or DOT text) and render it when Graphviz is there.

    ``path`` names the rendered file (``out/tv.svg``); the ``.dot`` text is written
    next to it (``out/tv.dot``). The format comes from ``format`` or the extension
    (svg, png, pdf; a ``.dot`` path writes only the text). Never raises for a
    missing Graphviz: the result has ``rendered=False`` and a ``message`` saying
    how to install it (``apt-get install graphviz``).
    """
    if isinstance(graph, DotGraph):
        source = graph.source
    elif isinstance(graph, str):
        source = graph
    else:
        raise TypeError(f"render_dot: graph must be a DotGraph or DOT text, got {type(graph).__name__}")
    target = Path(path)
    fmt = (format or target.suffix.lstrip(".") or "svg").lower()
    if fmt != "dot" and fmt not in _FORMATS:
        raise ValueError(f"render_dot: format must be one of {_FORMATS} or 'dot', got {fmt!r}")
    dot_path = target.with_suffix(".dot")
    dot_path.parent.mkdir(parents=True, exist_ok=True)
    dot_path.write_text(source, encoding="utf-8")
    if fmt == "dot":
        return DotResult(dot_path, None, False, f"wrote {dot_path}")
    out_path = target if target.suffix.lstrip(".").lower() == fmt else target.with_suffix("." + fmt)
    if not dot_available():
        msg = INSTALL_HINT.format(fmt=fmt, dot=dot_path, out=out_path) + f"; wrote {dot_path}"
        return DotResult(dot_path, None, False, msg)
    try:
        data = _run_dot(source, fmt)
    except Exception as exc:  # a broken Graphviz install must not stop the caller
        return DotResult(dot_path, None, False, f"Graphviz failed to render {dot_path}: {exc}")
    out_path.write_bytes(data)
    return DotResult(dot_path, out_path, True, f"wrote {dot_path} and {out_path}")
