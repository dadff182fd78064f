"""Reading CuTe's text forms back, and evaluating small algebra expressions.

Layouts: ``(4,(2,2)):(2,(1,8))``, ``8:1``, ``(8,8)`` (compact column-major),
static-int spellings ``(_4,_2):(_1,_4)``, and swizzled layouts as CuTe prints
them, ``Sw<3,3,3> o 0 o (8,64):(64,1)``.

Expressions (for the command line) are calls of the algebra's functions on
layouts, ints, tuples, ``None``/``_`` and ``Swizzle(b,m,s)``:

>>> str(evaluate("composition((4,3):(3,1), 6:2)"))
'(2,3):(6,1)'
>>> str(evaluate("logical_divide((8,8):(1,8), (2:1, 4:1))"))
'((2,4),(4,2)):((1,2),(8,32))'
"""

import re

from .errors import LayoutError

_TOKEN = re.compile(r"\s*(?:(?P<num>-?_?\d+)|(?P<name>[A-Za-z][A-Za-z0-9_]*|_)|(?P<op><|>|[(),:@]))")


def _tokenize(text):
    if not isinstance(text, str):
        raise LayoutError(f"parse: expected a string, got {text!r}")
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise LayoutError(f"parse: unexpected character {text[pos]!r} at position {pos} in {text!r}")
        pos = m.end()
        if m.group("num") is not None:
            out.append(("num", int(m.group("num").replace("_", ""))))
        elif m.group("name") is not None:
            out.append(("name", m.group("name")))
        else:
            out.append(("op", m.group("op")))
    out.append(("end", None))
    return out


class _Parser:
    def __init__(self, text, env=None):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.env = env

    def peek(self):
        return self.toks[self.i]

    def take(self, kind=None, value=None):
        tok = self.toks[self.i]
        if (kind and tok[0] != kind) or (value is not None and tok[1] != value):
            want = value if value is not None else kind
            raise LayoutError(f"parse: expected {want!r} but found {tok[1]!r} in {self.text!r}")
        self.i += 1
        return tok

    def at(self, kind, value=None):
        tok = self.toks[self.i]
        return tok[0] == kind and (value is None or tok[1] == value)

    # expression := primary [':' primary] [ 'o' ... composed ]
    def expr(self):
        left = self.primary()
        if self.at("op", ":"):
            self.take()
            right = self.primary()
            from .layout import Layout

            left = Layout(_plain(left, self.text), _plain(right, self.text))
        elif self.env is None and isinstance(left, (int, tuple)):
            from .layout import Layout

            left = Layout(_plain(left, self.text))
        if self.at("name", "o"):
            return self.composed(left)
        return left

    def composed(self, outer):
        from .swizzle import ComposedLayout

        self.take("name", "o")
        offset = self.take("num")[1]
        self.take("name", "o")
        inner = self.expr()
        return ComposedLayout(outer, offset, inner)

    def primary(self):
        kind, val = self.peek()
        if kind == "num":
            self.take()
            return val
        if kind == "op" and val == "(":
            self.take()
            items = []
            if not self.at("op", ")"):
                items.append(self.item())
                while self.at("op", ","):
                    self.take()
                    items.append(self.item())
            self.take("op", ")")
            return tuple(items)
        if kind == "name":
            self.take()
            if val == "Sw" and self.at("op", "<"):
                self.take()
                b = self.take("num")[1]
                self.take("op", ",")
                m = self.take("num")[1]
                self.take("op", ",")
                s = self.take("num")[1]
                self.take("op", ">")
                from .swizzle import Swizzle

                return Swizzle(b, m, s)
            if val in ("_", "None"):
                return None
            if self.env is None:
                raise LayoutError(f"parse: unexpected name {val!r} in {self.text!r}")
            if val not in self.env:
                raise LayoutError(f"eval: unknown function or name {val!r}; known: {', '.join(sorted(self.env))}")
            fn = self.env[val]
            if not self.at("op", "("):
                return fn
            self.take()
            args = []
            if not self.at("op", ")"):
                args.append(self.expr())
                while self.at("op", ","):
                    self.take()
                    args.append(self.expr())
            self.take("op", ")")
            try:
                return fn(*args)
            except TypeError as e:
                if isinstance(e, LayoutError):
                    raise
                raise LayoutError(f"eval: {val}{tuple(args)!r}: {e}") from None
        raise LayoutError(f"parse: unexpected {val!r} in {self.text!r}")

    def item(self):
        if self.env is None:
            return self.primary()
        return self.expr_in_tuple()

    def expr_in_tuple(self):
        # Inside a tuple an int stays an int (a tiler entry), a ``s:d`` pair becomes a layout.
        left = self.primary()
        if self.at("op", ":"):
            self.take()
            right = self.primary()
            from .layout import Layout

            return Layout(_plain(left, self.text), _plain(right, self.text))
        return left


def _plain(x, text):
    if isinstance(x, tuple):
        return tuple(_plain(v, text) for v in x)
    if isinstance(x, int):
        return x
    raise LayoutError(f"parse: expected an int-tuple in {text!r}, got {x!r}")


def parse_layout(text):
    """Parse a layout (or swizzled layout) in CuTe's printed form."""
    p = _Parser(text)
    try:
        result = p.expr()
    except RecursionError:
        raise LayoutError("parse: text is nested too deeply") from None
    if not p.at("end"):
        raise LayoutError(f"parse: trailing text after layout in {text!r}")
    return result


def _env():
    import layoutalg

    env = {name: getattr(layoutalg, name) for name in layoutalg.__all__ if callable(getattr(layoutalg, name))}
    env["None"] = None
    return env


def evaluate(text):
    """Evaluate an algebra expression such as ``"complement(4:2, 24)"``."""
    p = _Parser(text, env=_env())
    try:
        result = p.expr()
    except RecursionError:
        raise LayoutError("eval: expression is nested too deeply") from None
    if not p.at("end"):
        raise LayoutError(f"eval: trailing text in {text!r}")
    return result
