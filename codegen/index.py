"""Index expressions: a layout evaluated on a variable, printed as integer code.

Every index in a generated kernel is a layout of the plan evaluated on a thread
index (``tid``) or on a loop counter.  A layout with integer strides is a sum of
one term per flat mode: the variable's coordinate in that mode times the stride.
:func:`layout_index` prints that sum with shifts and masks where the shapes and
strides are powers of two, and leaves out the modulo where the variable never
reaches past the mode.  A layout with coordinate strides (``E<i>``, from an
identity tensor) gives one such sum per coordinate (:func:`coord_index`).

Each :class:`Index` keeps the layout it was printed from, so it can be checked:
:meth:`Index.check` evaluates the code at every value of the variable and
compares it with the layout.

>>> from layoutalg import Layout
>>> ix = layout_index(Layout((4, 32), (8, 1)), "tid", 128)       # (T4,T32) -> offset
>>> ix.code
'((tid & 3) << 3) + (tid >> 2)'
>>> ix.check() == 128
True
"""

from __future__ import annotations

from dataclasses import dataclass

from layoutalg.basis import ScaledBasis, basis_value
from layoutalg.inttuple import flat_tuple

__all__ = ["Index", "layout_index", "coord_index", "mode_terms", "paren", "sum_code", "swizzle_code", "pow2", "log2"]


def pow2(n):
    """True for a positive power of two."""
    return n > 0 and n & (n - 1) == 0


def log2(n):
    return n.bit_length() - 1


@dataclass(frozen=True)
class Index:
    """Code for ``layout(var)``, ``var`` in ``[0, bound)``.

    ``layout``: what was printed (integer strides); ``var``: the variable's name;
    ``code``: the expression; ``axis``: for a coordinate, which one (else None).
    """

    layout: object
    var: str
    bound: int
    code: str
    axis: int = None

    def value(self, x):
        """The exact value at ``x``, from the layout."""
        v = self.layout(x)
        if self.axis is None:
            return v
        return _basis_axis(v, self.axis)

    def check(self):
        """Evaluate ``code`` at every value of the variable; raise on any difference.

        Returns the number of points checked.
        """
        fn = eval(f"lambda {self.var}: {self.code}")  # noqa: S307 - code printed above
        for x in range(self.bound):
            got, want = fn(x), self.value(x)
            if got != want:
                raise AssertionError(f"index code {self.code!r} of {self.layout} at {self.var}={x}: "
                                     f"{got} != {want}")
        return self.bound

    @property
    def is_zero(self):
        return self.code == "0"

    def __str__(self):
        return self.code


def _basis_axis(v, axis):
    """Coordinate ``axis`` of a value of a layout with coordinate strides."""
    if isinstance(v, int):
        if v:
            raise ValueError(f"index: expected a coordinate, got offset {v}")
        return 0
    crd = basis_value(v, axis + 1)
    return crd if isinstance(crd, int) else tuple(crd)[axis]


def _terms(layout, var, bound):
    """(coordinate code, stride) for every flat mode of ``layout`` that varies."""
    shapes = flat_tuple(layout.shape)
    strides = flat_tuple(layout.stride)
    pos = 1
    out = []
    for s, d in zip(shapes, strides):
        if s != 1 and d != 0:
            c = var if pos == 1 else (f"({var} >> {log2(pos)})" if pow2(pos) else f"({var} // {pos})")
            if bound is None or pos * s < bound:
                c = f"({c} & {s - 1})" if pow2(s) else f"({c} % {s})"
            out.append((c, d))
        pos *= s
    return out


def _scaled(c, d):
    if d == 1:
        return c
    if d < 0:
        raise ValueError(f"index: negative stride {d} is not supported")
    return f"({c} << {log2(d)})" if pow2(d) else f"{c} * {d}"


def sum_code(parts):
    """``a + b + ...`` of code strings, leaving out zeros ("0" when nothing remains)."""
    parts = [p for p in parts if p and p != "0"]
    return " + ".join(parts) if parts else "0"


def layout_index(layout, var, bound=None):
    """An :class:`Index` printing ``layout(var)`` (integer strides)."""
    bound = bound if bound is not None else _size(layout)
    parts = []
    for c, d in _terms(layout, var, bound):
        if isinstance(d, ScaledBasis):
            raise ValueError(f"layout_index: layout {layout} has coordinate strides; use coord_index")
        parts.append(_scaled(c, d))
    return Index(layout, var, bound, sum_code(parts))


def coord_index(layout, var, rank, bound=None):
    """One :class:`Index` per coordinate of a layout with strides ``k@i`` (an identity partition)."""
    parts = [[] for _ in range(rank)]
    bound = bound if bound is not None else _size(layout)
    for c, d in _terms(layout, var, bound):
        if not isinstance(d, ScaledBasis):
            raise ValueError(f"coord_index: layout {layout} has a plain stride {d}")
        parts[d.mode[0]].append(_scaled(c, d.value))
    return tuple(Index(layout, var, bound, sum_code(p), axis=i) for i, p in enumerate(parts))


def mode_terms(ix):
    """An :class:`Index` ``ix`` split into one Index per varying flat mode (same variable).

    ``sum(t.value(x) for t in mode_terms(ix)) == ix.value(x)`` for every ``x``.
    """
    from layoutalg import Layout

    shapes = flat_tuple(ix.layout.shape)
    strides = flat_tuple(ix.layout.stride)
    pos = 1
    out = []
    for s, d in zip(shapes, strides):
        if s != 1 and d != 0:
            rest = -(-ix.bound // (pos * s))             # the modes above: stride 0
            out.append(layout_index(Layout((pos, s, rest), (0, d, 0)), ix.var, ix.bound))
        pos *= s
    return out


def swizzle_code(x, sw):
    """Code applying ``Swizzle`` ``sw`` to the integer code ``x`` (``x`` itself for no swizzle)."""
    if sw is None or sw.bits == 0:
        return x
    x = paren(x)
    if sw.shift >= 0:
        return f"{x} ^ (({x} & {sw.yyy_mask}) >> {sw.shift})"
    return f"{x} ^ (({x} & {sw.yyy_mask}) << {-sw.shift})"


def paren(x):
    """``x`` as one operand: parenthesized unless it already is one."""
    if x.replace("_", "").isalnum():
        return x
    if x.startswith("(") and x.endswith(")"):
        depth = 0
        for ch in x[:-1]:
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                break
        else:
            return x
    return f"({x})"


def _size(layout):
    n = 1
    for s in flat_tuple(layout.shape):
        n *= s
    return n
