"""Coordinate bases: CuTe's ``E<i>`` strides (ScaledBasis) and the coordinates they sum to.

A layout whose strides are scaled basis elements maps a coordinate to another
coordinate instead of an offset.  The identity layout of shape ``(M, N)`` is
``(M,N):(1@0,1@1)``: coordinate ``(m, n)`` maps to ``m*E<0> + n*E<1> == (m, n)``.
Partitioning an identity tensor therefore says which global coordinates a
thread touches.

>>> E(0) * 3 + E(1) * 2
ArithTuple((3, 2))
>>> str(E(1) * 4)
'4@1'
"""

from .errors import LayoutError


class ScaledBasis:
    """``value * E<mode...>``: ``value`` in coordinate position ``mode`` (a path of ints)."""

    __slots__ = ("value", "mode", "_hash")

    def __init__(self, value, mode):
        if isinstance(mode, int):
            mode = (mode,)
        self.value = value
        self.mode = tuple(mode)
        self._hash = hash(("E", self.value, self.mode))

    def __mul__(self, k):
        if isinstance(k, bool) or not isinstance(k, int):
            return NotImplemented
        return ScaledBasis(self.value * k, self.mode)

    __rmul__ = __mul__

    def __floordiv__(self, k):
        if isinstance(k, int) and not isinstance(k, bool) and k != 0 and self.value % k == 0:
            return ScaledBasis(self.value // k, self.mode)
        return NotImplemented

    def __add__(self, other):
        if isinstance(other, int) and other == 0:
            return self
        return ArithTuple.of(self) + other

    __radd__ = __add__

    def __neg__(self):
        return ScaledBasis(-self.value, self.mode)

    def __eq__(self, other):
        if isinstance(other, ScaledBasis):
            return self.value == other.value and self.mode == other.mode
        if isinstance(other, int) and not isinstance(other, bool):
            return self.value == 0 and other == 0
        return NotImplemented

    def __hash__(self):
        return self._hash

    def __str__(self):
        return f"{self.value}@" + ",".join(str(m) for m in self.mode)

    __repr__ = __str__


def E(*mode):
    """The unit basis element ``E<mode...>``: ``E(0)``, ``E(1)``, ``E(1, 0)``."""
    return ScaledBasis(1, mode)


def _set(t, path, value):
    """Add ``value`` at ``path`` in the nested int-tuple ``t`` (extending it with zeros)."""
    i, rest = path[0], path[1:]
    t = list(t) if isinstance(t, tuple) else ([t] if t else [])
    while len(t) <= i:
        t.append(0)
    if rest:
        t[i] = _set(t[i] if isinstance(t[i], tuple) else (), rest, value) if not isinstance(t[i], int) or t[i] == 0 else _bad(path)
    else:
        if isinstance(t[i], tuple):
            _bad(path)
        t[i] = t[i] + value
    return tuple(t)


def _bad(path):
    raise LayoutError(f"ArithTuple: inconsistent basis modes at {path}")


class ArithTuple:
    """A coordinate built by adding scaled basis elements (CuTe's ArithmeticTuple)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = tuple(value)

    @staticmethod
    def of(sb):
        return ArithTuple(_set((), sb.mode, sb.value))

    def __add__(self, other):
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        if isinstance(other, ScaledBasis):
            return ArithTuple(_set(self.value, other.mode, other.value))
        if isinstance(other, ArithTuple):
            return ArithTuple(_add(self.value, other.value))
        return NotImplemented

    __radd__ = __add__

    def __eq__(self, other):
        if isinstance(other, ArithTuple):
            other = other.value
        if isinstance(other, tuple):
            return _pad_eq(self.value, other)
        return NotImplemented

    def __hash__(self):
        return hash(_strip(self.value))

    def __iter__(self):
        return iter(self.value)

    def __getitem__(self, i):
        return self.value[i]

    def __len__(self):
        return len(self.value)

    def __repr__(self):
        return f"ArithTuple({self.value!r})"

    def __str__(self):
        from .inttuple import fmt

        return fmt(self.value)


def _add(a, b):
    n = max(len(a), len(b))
    a = a + (0,) * (n - len(a))
    b = b + (0,) * (n - len(b))
    out = []
    for x, y in zip(a, b):
        if isinstance(x, tuple) or isinstance(y, tuple):
            out.append(_add(x if isinstance(x, tuple) else (), y if isinstance(y, tuple) else ()))
        else:
            out.append(x + y)
    return tuple(out)


def _strip(t):
    t = tuple(_strip(x) if isinstance(x, tuple) else x for x in t)
    while t and t[-1] == 0:
        t = t[:-1]
    return t


def _pad_eq(a, b):
    return _strip(a) == _strip(b)


def basis_value(x, shape_rank=None):
    """The plain coordinate of an evaluation result: ``ArithTuple`` -> tuple padded to ``shape_rank``."""
    if isinstance(x, ArithTuple):
        v = x.value
        if shape_rank is not None and len(v) < shape_rank:
            v = v + (0,) * (shape_rank - len(v))
        return v
    if isinstance(x, ScaledBasis):
        return basis_value(ArithTuple.of(x), shape_rank)
    return x
