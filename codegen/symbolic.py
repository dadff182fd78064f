"""Index expressions: a layout evaluated on a symbolic index, simplified with sympy.

A partitioned tensor's offset splits exactly into a thread part and a value
part (they are different modes).  The thread part is evaluated here on the
symbol ``tid`` (known to lie in ``[0, nthreads)``) and printed as C-like
integer code with shifts and masks for powers of two.

>>> from layoutalg import Layout
>>> import sympy
>>> t = sympy.Symbol("tid", integer=True, nonnegative=True)
>>> e = layout_expr(Layout((4, 32), (8, 1)), t, 128)       # (T4,T32) -> offset
>>> to_code(e)
'((tid & 3) << 3) + (tid >> 2)'
"""

import sympy

from layoutalg.basis import ScaledBasis
from layoutalg.inttuple import flat_tuple

__all__ = ["layout_expr", "coord_exprs", "to_code", "pow2"]


def pow2(n):
    return n > 0 and n & (n - 1) == 0


def _leaf_terms(layout, idx, bound):
    """Yield (coordinate expression, stride) for each flat mode of ``layout`` at index ``idx``."""
    shapes = flat_tuple(layout.shape)
    strides = flat_tuple(layout.stride)
    p = 1
    for k, (s, d) in enumerate(zip(shapes, strides)):
        if s == 1 or d == 0:
            p *= s
            continue
        c = idx if p == 1 else sympy.floor(idx / p)
        if bound is None or p * s < bound:   # no modulo where the index never reaches past this mode
            c = sympy.Mod(c, s)
        yield c, d
        p *= s


def layout_expr(layout, idx, bound=None):
    """``layout(idx)`` for a symbolic ``idx`` in ``[0, bound)``; int strides only."""
    total = sympy.Integer(0)
    for c, d in _leaf_terms(layout, idx, bound):
        if isinstance(d, ScaledBasis):
            raise ValueError(f"layout_expr: layout {layout} has coordinate-basis strides; use coord_exprs")
        total += c * d
    return total


def coord_exprs(layout, idx, rank, bound=None):
    """The coordinate ``layout(idx)`` of a layout with basis strides ``E<i>``: a tuple of ``rank`` expressions."""
    out = [sympy.Integer(0)] * rank
    for c, d in _leaf_terms(layout, idx, bound):
        if isinstance(d, ScaledBasis):
            out[d.mode[0]] += c * d.value
        else:
            raise ValueError(f"coord_exprs: layout {layout} has a plain stride {d}")
    return tuple(out)


def to_code(expr):
    """Print ``expr`` as Python integer code: ``floor(x/2^k)`` -> ``x >> k``, ``Mod(x, 2^k)`` -> ``x & (2^k-1)``."""
    return _p(sympy.expand(expr) if not expr.has(sympy.floor, sympy.Mod) else expr)


def _p(e):
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    if isinstance(e, sympy.Add):
        terms = sorted(e.args, key=lambda a: (a.is_Integer, str(a)))
        out = _p(terms[0])
        for t in terms[1:]:
            if t.is_Integer and int(t) < 0:
                out += f" - {-int(t)}"
            else:
                out += f" + {_p(t)}"
        return out
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        inner = _p(rest)
        if coeff == 1:
            return inner
        c = int(coeff)
        if pow2(c):
            return f"({_wrap(inner)} << {c.bit_length() - 1})"
        return f"{_wrap(inner)} * {c}"
    if isinstance(e, sympy.floor):
        arg = e.args[0]
        num, den = arg.as_numer_denom()
        if den.is_Integer and pow2(int(den)):
            return f"({_wrap(_p(num))} >> {int(den).bit_length() - 1})"
        return f"({_wrap(_p(num))} // {_p(den)})"
    if isinstance(e, sympy.Mod):
        x, m = e.args
        if m.is_Integer and pow2(int(m)):
            return f"({_wrap(_p(x))} & {int(m) - 1})"
        return f"({_wrap(_p(x))} % {_p(m)})"
    raise ValueError(f"to_code: cannot print {e!r}")


def _wrap(s):
    if s.startswith("(") and s.endswith(")") and _balanced(s[1:-1]):
        return s
    return s if s.replace("_", "").isalnum() else f"({s})"


def _balanced(s):
    d = 0
    for ch in s:
        d += ch == "("
        d -= ch == ")"
        if d < 0:
            return False
    return d == 0
