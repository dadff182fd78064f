"""Reading CuTe's text forms back, and evaluating small algebra expressions.

Layouts: ``(4,(2,2)):(2,(1,8))``, ``8:1``, ``(8,8)`` (compact column-major),
static-int spellings ``(_4,_2):(_1,_4)``, and swizzled layouts as CuTe prints
them, ``Sw<3,3,3> o 0 o (8,64):(64,1)``.

Expressions (for the command line) are calls of functions on layouts, ints,
tuples, ``None``/``_`` and ``Swizzle(b,m,s)``; this module parses them, and
:mod:`layoutalg.expressions` evaluates them over the package's public functions:

>>> node = parse_expr("composition((4,3):(3,1), 6:2)")
>>> node.name, len(node.args)
('composition', 2)
>>> str(evaluate_tree(node, {"composition": lambda a, b: f"{a} o {b}"}))
'(4,3):(3,1) o 6:2'
>>> str(parse_layout("(4,(2,2)):(2,(1,8))"))
'(4,(2,2)):(2,(1,8))'

Both go through one parser, :func:`parse_expr`, which builds an
:class:`ExprNode` tree keeping each sub-expression's source text, and
:func:`evaluate_tree`, which evaluates it bottom-up (optionally recording every
node's value, as the expression graphs of :mod:`layoutalg.draw` do).
"""

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import LayoutError

_TOKEN = re.compile(r"\s*(?:(?P<num>-?_?\d+)|(?P<name>[A-Za-z][A-Za-z0-9_]*|_)|(?P<op><|>|[(),:@]))")

__all__ = ["ExprNode", "parse_expr", "evaluate_tree", "parse_layout", "format_value"]


@dataclass
class ExprNode:
    """One sub-expression.

    ``kind``: ``"int"``, ``"none"``, ``"name"``, ``"tuple"``, ``"layout"`` (``shape:stride``),
    ``"composed"`` (``outer o offset o inner``), ``"swizzle"`` (``Sw<b,m,s>`` or
    ``Swizzle(b,m,s)`` of ints) or ``"call"``; ``text``: its exact source text; ``name``: the
    function or name; ``args``: the operand nodes; ``value``: an int literal or an offset.
    """

    kind: str
    text: str
    name: str = None
    args: list = field(default_factory=list)
    value: Any = None

    @property
    def literal(self):
        """True when no function call occurs inside this node."""
        return self.kind == "swizzle" or (self.kind != "call" and all(a.literal for a in self.args))

    @property
    def children(self):
        """The sub-expressions worth showing: a literal layout, tuple or swizzle is one leaf."""
        if self.kind == "call":
            return list(self.args)
        if self.kind == "tuple" and not self.literal:
            return list(self.args)
        if self.kind == "composed":
            return [a for a in self.args if not a.literal]
        return []

    def walk(self):
        """This node and its shown descendants, depth first (parents before children)."""
        yield self
        for c in self.children:
            yield from c.walk()


def _tokenize(text, op):
    if not isinstance(text, str):
        raise LayoutError(f"{op}: expected a string, got {text!r}")
    out = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise LayoutError(f"parse: unexpected character {text[pos]!r} at position {pos} in {text!r}")
        start = m.start(m.lastgroup)
        if m.group("num") is not None:
            out.append(("num", int(m.group("num").replace("_", "")), start, m.end()))
        elif m.group("name") is not None:
            out.append(("name", m.group("name"), start, m.end()))
        else:
            out.append(("op", m.group("op"), start, m.end()))
        pos = m.end()
    out.append(("end", None, len(text), len(text)))
    return out


class _Parser:
    """Recursive descent; ``calls`` allows function calls and ``s:d`` layouts inside tuples."""

    def __init__(self, text, calls, op):
        self.text = text
        self.calls = calls
        self.toks = _tokenize(text, op)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def at(self, kind, value=None):
        tok = self.toks[self.i]
        return tok[0] == kind and (value is None or tok[1] == value)

    def take(self, kind=None, value=None):
        tok = self.toks[self.i]
        if (kind and tok[0] != kind) or (value is not None and tok[1] != value):
            want = value if value is not None else kind
            found = "end of text" if tok[0] == "end" else repr(tok[1])
            raise LayoutError(f"parse: expected {want!r} but found {found} at position {tok[2]} in {self.text!r}")
        self.i += 1
        return tok

    def node(self, kind, start, **kw):
        return ExprNode(kind, self.text[start:self.toks[self.i - 1][3]], **kw)

    # expression := primary [':' primary] ['o' num 'o' expression]
    def expr(self):
        start = self.peek()[2]
        left = self.primary()
        if self.at("op", ":"):
            left = self.layout(start, left)
        elif not self.calls and left.kind in ("int", "tuple"):
            left = self.node("layout", start, args=[left])          # a bare shape: compact
        if self.at("name", "o"):
            self.take()
            offset = self.take("num")[1]
            self.take("name", "o")
            inner = self.expr()
            return self.node("composed", start, args=[left, inner], value=offset)
        return left

    def layout(self, start, shape):
        self.take("op", ":")
        stride = self.primary()
        for side in (shape, stride):
            if side.kind not in ("int", "tuple") or not side.literal:
                raise LayoutError(f"parse: a layout's shape and stride must be int-tuples in "
                                  f"{self.text[start:self.toks[self.i - 1][3]]!r}")
        return self.node("layout", start, args=[shape, stride])

    def item(self):
        start = self.peek()[2]
        left = self.primary()
        if self.calls and self.at("op", ":"):
            return self.layout(start, left)
        return left

    def primary(self):
        kind, val, start, _ = self.peek()
        if kind == "num":
            self.take()
            return self.node("int", start, value=val)
        if kind == "op" and val == "(":
            self.take()
            items = []
            if not self.at("op", ")"):
                items.append(self.item())
                while self.at("op", ","):
                    self.take()
                    items.append(self.item())
            self.take("op", ")")
            return self.node("tuple", start, args=items)
        if kind == "name":
            self.take()
            if val == "Sw" and self.at("op", "<"):
                self.take()
                bms = [self.take("num")[1]]
                for _ in range(2):
                    self.take("op", ",")
                    bms.append(self.take("num")[1])
                self.take("op", ">")
                return self.node("swizzle", start, value=tuple(bms))
            if val in ("_", "None"):
                return self.node("none", start)
            if not self.calls:
                raise LayoutError(f"parse: unexpected name {val!r} in {self.text!r}")
            if not self.at("op", "("):
                return self.node("name", start, name=val)
            self.take()
            args = []
            if not self.at("op", ")"):
                args.append(self.expr())
                while self.at("op", ","):
                    self.take()
                    args.append(self.expr())
            self.take("op", ")")
            if val == "Swizzle" and len(args) == 3 and all(a.kind == "int" for a in args):
                return self.node("swizzle", start, value=tuple(a.value for a in args))
            return self.node("call", start, name=val, args=args)
        found = "end of text" if kind == "end" else repr(val)
        raise LayoutError(f"parse: unexpected {found} at position {start} in {self.text!r}")


def _parse(text, calls, op):
    p = _Parser(text, calls, op)
    try:
        node = p.expr()
    except RecursionError:
        raise LayoutError(f"{op}: text is nested too deeply") from None
    if not p.at("end"):
        raise LayoutError(f"parse: trailing text at position {p.peek()[2]} in {text!r}")
    return node


def parse_expr(text):
    """The expression tree of an algebra expression (nothing is evaluated).

    >>> t = parse_expr("complement(4:2, 24)")
    >>> t.kind, t.name, [c.text for c in t.children]
    ('call', 'complement', ['4:2', '24'])
    """
    return _parse(text, True, "eval")


def _plain(node, text):
    if node.kind == "int":
        return node.value
    if node.kind == "tuple":
        return tuple(_plain(a, text) for a in node.args)
    raise LayoutError(f"parse: expected an int-tuple in {text!r}, got {node.text!r}")


def evaluate_tree(node, env=None, values=None):
    """The value of ``node``; ``values`` (a dict), when given, receives ``id(n) -> value`` for every node.

    With ``env`` None only literals are allowed (CuTe's printed forms).
    """
    def ev(n):
        v = _eval(n, env, ev)
        if values is not None:
            values[id(n)] = v
        return v

    try:
        return ev(node)
    except RecursionError:
        raise LayoutError("eval: expression is nested too deeply") from None


def _eval(n, env, ev):
    from .layout import Layout
    from .swizzle import ComposedLayout, Swizzle

    k = n.kind
    if k == "int":
        return n.value
    if k == "none":
        return None
    if k == "swizzle":
        return Swizzle(*n.value)
    if k == "layout":
        return Layout(*(_plain(a, n.text) for a in n.args))
    if k == "tuple":
        return tuple(ev(a) for a in n.args)
    if k == "composed":
        return ComposedLayout(ev(n.args[0]), n.value, ev(n.args[1]))
    if n.name not in env:
        raise unknown_name_error(n.name, env)
    fn = env[n.name]
    if k == "name":
        return fn
    args = [ev(a) for a in n.args]
    _check_arity(n.name, fn, args)
    try:
        return fn(*args)
    except TypeError as e:
        if isinstance(e, LayoutError):
            raise
        raise LayoutError(f"eval: {n.name}{tuple(args)!r}: {e}") from None


def _check_arity(name, fn, args):
    """A ``LayoutError`` naming the function's parameters when ``args`` do not fit them
    (rather than Python's "missing 1 required positional argument").

    >>> from layoutalg import composition
    >>> _check_arity("composition", composition, [4])
    Traceback (most recent call last):
    ...
    layoutalg.errors.LayoutError: eval: composition takes (lhs, rhs), got 1 argument
    """
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):      # builtins without a signature: let the call decide
        return
    try:
        sig.bind(*args)
    except TypeError:
        shown = []
        for p in sig.parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                shown.append(f"*{p.name}")
            elif p.kind is p.KEYWORD_ONLY or p.kind is p.VAR_KEYWORD:
                continue
            else:
                shown.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
        raise LayoutError(f"eval: {name} takes ({', '.join(shown)}), got {len(args)} argument"
                          f"{'' if len(args) == 1 else 's'}") from None


def unknown_name_error(name, env):
    """The ``LayoutError`` for a name that is not in ``env`` (name -> function), with the
    closest names that are.

    >>> str(unknown_name_error("compositon", {"composition": None, "complement": None}))
    "eval: unknown function 'compositon'; did you mean composition? (layoutalg eval --help lists the functions)"
    """
    import difflib

    known = sorted(env)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return LayoutError(f"eval: unknown function {name!r}{hint} (layoutalg eval --help lists the functions)")


def parse_layout(text):
    """Parse a layout (or swizzled layout) in CuTe's printed form; a bare shape is compact."""
    return evaluate_tree(_parse(text, False, "parse"))


def format_value(x):
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
