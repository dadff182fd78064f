"""The expression tree of an algebra expression, as a Graphviz graph.

:func:`parse_expr` reads the expressions :func:`layoutalg.evaluate` takes --
calls of the algebra's functions on layouts (``(4,3):(3,1)``, ``6:2``,
``Sw<3,3,3> o 0 o (8,64):(64,1)``), ints, tuples, ``None``/``_`` and
``Swizzle(b,m,s)`` -- into a tree of :class:`ExprNode`, each holding the exact
text of its sub-expression. :func:`expr_graph` evaluates every node with
:func:`layoutalg.evaluate` on that text and draws the tree: one node per
function call showing its result layout (and size/cosize), one per literal
argument, edges from each argument to the call that uses it, labelled with the
parameter's name. The result is at the top.

>>> g = expr_graph("logical_divide(composition((4,3):(3,1), 6:2), 2:1)")
>>> print(g.nodes["n1"]["label"])
composition
= (2,3):(6,1)
size 6, cosize 9
>>> [(s, d, a["label"]) for s, d, a in g.edges]
[('n1', 'n0', 'layout'), ('n4', 'n0', 'tiler'), ('n2', 'n1', 'lhs'), ('n3', 'n1', 'rhs')]

The tokens are :mod:`layoutalg.parse`'s; a bad expression raises
:class:`~layoutalg.errors.LayoutError` naming the sub-expression that failed.
Render with :func:`~layoutalg.draw.graphs.render_dot` (writes the ``.dot``
text and says how to install Graphviz when ``dot`` is missing).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from ..errors import LayoutError
from .graphs import DotGraph

__all__ = ["ExprNode", "parse_expr", "expr_graph", "format_value"]


@dataclass
class ExprNode:
    """One sub-expression: ``kind`` is ``"call"``, ``"layout"``, ``"tuple"``,
    ``"int"``, ``"none"``, ``"swizzle"`` or ``"name"``; ``text`` its exact source text."""

    kind: str
    text: str
    name: str | None = None
    children: list["ExprNode"] = field(default_factory=list)

    def walk(self):
        """This node and its descendants, depth first (parents before children)."""
        yield self
        for c in self.children:
            yield from c.walk()

    @property
    def literal(self) -> bool:
        """True when no function call occurs inside this node."""
        return self.kind != "call" and all(c.literal for c in self.children)


def _tokens(text: str) -> list[tuple[str, Any, int, int]]:
    """(kind, value, start, end) tokens, with parse.py's token pattern."""
    from ..parse import _TOKEN

    if not isinstance(text, str):
        raise LayoutError(f"expr_graph: expected an expression string, got {type(text).__name__} {text!r}")
    out = []
    pos = 0
    stripped = text.rstrip()
    while pos < len(stripped):
        m = _TOKEN.match(stripped, pos)
        if not m or m.end() == pos:
            raise LayoutError(f"expr_graph: unexpected character {stripped[pos]!r} at position {pos} in {text!r}")
        start = m.start(m.lastgroup)
        if m.group("num") is not None:
            out.append(("num", int(m.group("num").replace("_", "")), start, m.end()))
        elif m.group("name") is not None:
            out.append(("name", m.group("name"), start, m.end()))
        else:
            out.append(("op", m.group("op"), start, m.end()))
        pos = m.end()
    out.append(("end", None, len(stripped), len(stripped)))
    return out


class _TreeParser:
    """Recursive descent over parse.py's grammar (with an environment), keeping spans."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def at(self, kind: str, value: Any = None) -> bool:
        k, v, _, _ = self.toks[self.i]
        return k == kind and (value is None or v == value)

    def take(self, kind: str | None = None, value: Any = None):
        tok = self.toks[self.i]
        if (kind and tok[0] != kind) or (value is not None and tok[1] != value):
            want = value if value is not None else kind
            found = "end of text" if tok[0] == "end" else repr(tok[1])
            raise LayoutError(f"expr_graph: expected {want!r} but found {found} at position {tok[2]} in {self.text!r}")
        self.i += 1
        return tok

    def span(self, start: int) -> str:
        end = self.toks[self.i - 1][3]
        return self.text[start:end]

    # expression := primary [':' primary] ['o' num 'o' expression]
    def expr(self) -> ExprNode:
        start = self.peek()[2]
        left = self.primary()
        if self.at("op", ":"):
            self.take()
            right = self.primary()
            for side in (left, right):
                if not side.literal or side.kind not in ("int", "tuple"):
                    raise LayoutError(f"expr_graph: a layout's shape and stride must be int-tuples in {self.span(start)!r}")
            left = ExprNode("layout", self.span(start))
        if self.at("name", "o"):
            self.take()
            self.take("num")
            self.take("name", "o")
            inner = self.expr()
            kids = [c for c in (left, inner) if not c.literal]
            return ExprNode("layout", self.span(start), children=kids)
        return left

    def item(self) -> ExprNode:
        start = self.peek()[2]
        left = self.primary()
        if self.at("op", ":"):
            self.take()
            self.primary()
            return ExprNode("layout", self.span(start))
        return left

    def primary(self) -> ExprNode:
        kind, val, start, _ = self.peek()
        if kind == "num":
            self.take()
            return ExprNode("int", self.span(start))
        if kind == "op" and val == "(":
            self.take()
            items = []
            if not self.at("op", ")"):
                items.append(self.item())
                while self.at("op", ","):
                    self.take()
                    items.append(self.item())
            self.take("op", ")")
            node = ExprNode("tuple", self.span(start), children=items)
            if node.literal:
                node.children = []
            return node
        if kind == "name":
            self.take()
            if val == "Sw" and self.at("op", "<"):
                self.take()
                self.take("num")
                self.take("op", ",")
                self.take("num")
                self.take("op", ",")
                self.take("num")
                self.take("op", ">")
                return ExprNode("swizzle", self.span(start))
            if val in ("_", "None"):
                return ExprNode("none", self.span(start))
            if not self.at("op", "("):
                return ExprNode("name", self.span(start), name=val)
            self.take()
            args = []
            if not self.at("op", ")"):
                args.append(self.expr())
                while self.at("op", ","):
                    self.take()
                    args.append(self.expr())
            self.take("op", ")")
            if val == "Swizzle" and args and all(a.kind == "int" for a in args):
                return ExprNode("swizzle", self.span(start))       # a literal, as Sw<b,m,s>
            return ExprNode("call", self.span(start), name=val, children=args)
        found = "end of text" if kind == "end" else repr(val)
        raise LayoutError(f"expr_graph: unexpected {found} at position {start} in {self.text!r}")


def parse_expr(text: str) -> ExprNode:
    """The expression tree of ``text`` (nothing is evaluated).

    >>> t = parse_expr("complement(4:2, 24)")
    >>> t.kind, t.name, [c.text for c in t.children]
    ('call', 'complement', ['4:2', '24'])
    """
    p = _TreeParser(text)
    try:
        node = p.expr()
    except RecursionError:
        raise LayoutError("expr_graph: expression is nested too deeply") from None
    if not p.at("end"):
        raise LayoutError(f"expr_graph: trailing text at position {p.peek()[2]} in {text!r}")
    return node


def format_value(x: Any) -> str:
    """CuTe's text for a result: layouts as ``shape:stride``, tuples as ``(a,b)``, None as ``_``.

    >>> from layoutalg import Layout
    >>> format_value((Layout(2, 1), None, 3))
    '(2:1,_,3)'
    """
    if isinstance(x, tuple):
        return "(" + ",".join(format_value(v) for v in x) + ")"
    if x is None:
        return "_"
    if callable(x) and hasattr(x, "__name__") and not hasattr(x, "shape"):
        return x.__name__
    return str(x)


def _size_line(x: Any) -> str | None:
    try:
        from ..layout import Layout, cosize, size
        from ..swizzle import ComposedLayout

        if isinstance(x, (Layout, ComposedLayout)):
            s = size(x)
            try:
                return f"size {s}, cosize {cosize(x)}"
            except Exception:  # cosize undefined for some composed layouts
                return f"size {s}"
    except Exception:
        return None
    return None


def _param_names(name: str | None, n: int) -> list[str]:
    from ..parse import _env

    fn = _env().get(name) if name else None
    names: list[str] = []
    if fn is not None:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL,):
                names.extend(f"{p.name}[{k}]" for k in range(n - len(names)))
                break
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                names.append(p.name)
    names = names[:n]
    names += [f"arg{k}" for k in range(len(names), n)]
    return names


_NORM = str.maketrans("", "", " \t\n")


def expr_graph(text: str, *, name: str = "expr", rankdir: str = "BT") -> DotGraph:
    """A :class:`~layoutalg.draw.graphs.DotGraph` of ``text``'s expression tree with every
    sub-expression's value.

    Call nodes (rounded, blue) read ``function`` / ``= result`` / ``size, cosize``;
    literal arguments (grey) show their text (and their value when it reads
    differently, e.g. ``Swizzle(3,3,3)``); the whole expression's node has a bold
    outline. Edges go from an argument to the call using it, labelled with the
    parameter's name (``lhs``, ``rhs``, ``tiler``...). ``rankdir="BT"`` puts
    the result at the top. Node ids are ``n0`` (the root), ``n1``, ... depth first.
    """
    from ..parse import evaluate

    tree = parse_expr(text)
    g = DotGraph(
        name,
        graph_attrs={"rankdir": rankdir, "label": text.strip(), "labelloc": "t", "fontname": "DejaVu Sans Mono",
                     "fontsize": "14", "nodesep": "0.35", "ranksep": "0.45"},
        node_attrs={"shape": "box", "fontname": "DejaVu Sans Mono", "fontsize": "12", "style": "filled",
                    "fillcolor": "#eeeeee", "color": "#666666"},
        edge_attrs={"fontname": "DejaVu Sans", "fontsize": "10", "color": "#555555", "fontcolor": "#333333"},
    )
    ids: dict[int, str] = {}
    order = list(tree.walk())
    for k, node in enumerate(order):
        ids[id(node)] = f"n{k}"
    # evaluate children first so that the innermost failure is the one reported
    values: dict[int, Any] = {}
    for node in reversed(order):
        if node.kind == "name":
            values[id(node)] = node.name
            continue
        try:
            values[id(node)] = evaluate(node.text)
        except LayoutError as e:
            msg = str(e)
            if node is tree:
                raise LayoutError(f"expr_graph: {msg}") from None
            raise LayoutError(f"expr_graph: sub-expression {node.text!r} failed: {msg}") from None
        except RecursionError:
            raise LayoutError(f"expr_graph: sub-expression {node.text!r} is nested too deeply") from None
    for node in order:
        nid = ids[id(node)]
        val = values[id(node)]
        shown = format_value(val)
        attrs: dict[str, Any] = {}
        if node.kind == "call":
            lines = [node.name or "?", f"= {shown}"]
            extra = _size_line(val)
            if extra:
                lines.append(extra)
            attrs.update(style="rounded,filled", fillcolor="#dde8ff", color="#3355aa")
        elif node.kind == "tuple" and node.children:
            lines = ["tuple", f"= {shown}"]
            attrs.update(style="rounded,filled", fillcolor="#f4f4ff")
        else:
            lines = [node.text.strip()]
            if shown.translate(_NORM) != node.text.translate(_NORM):
                lines.append(f"= {shown}")
        if node is tree:
            attrs.update(penwidth="2.2")
        g.add_node(nid, "\n".join(lines), **attrs)
    for node in order:
        if not node.children:
            continue
        labels = _param_names(node.name, len(node.children)) if node.kind == "call" else [
            f"[{k}]" for k in range(len(node.children))]
        for child, lab in zip(node.children, labels):
            g.add_edge(ids[id(child)], ids[id(node)], label=lab)
    return g
