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

The tree is :mod:`layoutalg.parse`'s, evaluated once bottom-up; a bad expression raises
:class:`~layoutalg.errors.LayoutError` naming the sub-expression that failed.
Render with :func:`~layoutalg.draw.graphs.render_dot` (writes the ``.dot``
text and says how to install Graphviz when ``dot`` is missing).
"""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import LayoutError
from ..parse import ExprNode, evaluate_tree, format_value, parse_expr
from .graphs import DotGraph

__all__ = ["ExprNode", "parse_expr", "expr_graph", "format_value"]


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
    from ..expressions import public_env as _env

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


def _post_order(node):
    for c in node.children:
        yield from _post_order(c)
    yield node


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
    from ..expressions import public_env as _env
    from ..parse import unknown_name_error

    if not isinstance(text, str):
        raise LayoutError(f"expr_graph: expected an expression string, got {type(text).__name__} {text!r}")
    try:
        tree = parse_expr(text)
    except LayoutError as e:
        raise LayoutError(f"expr_graph: {e}") from None
    g = DotGraph(
        name,
        graph_attrs={"rankdir": rankdir, "label": text.strip(), "labelloc": "t", "fontname": "DejaVu Sans Mono",
                     "fontsize": "14", "nodesep": "0.35", "ranksep": "0.45"},
        node_attrs={"shape": "box", "fontname": "DejaVu Sans Mono", "fontsize": "12", "style": "filled",
                    "fillcolor": "#eeeeee", "color": "#666666"},
        edge_attrs={"fontname": "DejaVu Sans", "fontsize": "10", "color": "#555555", "fontcolor": "#333333"},
    )
    order = list(tree.walk())
    ids = {id(node): f"n{k}" for k, node in enumerate(order)}
    values: dict[int, Any] = {}
    env = _env()
    for node in order:                                # an unknown function is named as such
        if node.kind in ("call", "name") and node.name not in env:
            raise LayoutError(f"expr_graph: {unknown_name_error(node.name, env)}")
    try:
        evaluate_tree(tree, env, values)
    except LayoutError as e:
        # arguments are evaluated before their call, so the failed node is the first,
        # in post-order, that has no value
        failed = next(n for n in _post_order(tree) if id(n) not in values)
        if failed is tree:
            raise LayoutError(f"expr_graph: {e}") from None
        raise LayoutError(f"expr_graph: sub-expression {failed.text!r} failed: {e}") from None
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
