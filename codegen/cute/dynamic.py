"""Run-time extents and strides in device layouts (CuTe's dynamic integers).

A kernel may build a layout from its arguments, ``make_layout((M, K), (ldA, 1))``: ``M``,
``K`` and ``ldA`` are known only at run time, ``1`` is static.  The static parts must still
fold to constants, so the layout in the numba *type* is an ordinary :class:`Layout` of
Python ints in which each run-time integer is an **encoded placeholder**, and the host
algebra (``zipped_divide``, ``tidfrg_S``, ``thrfrg_A`` ...) runs on it unchanged.  The
tensor's run-time data carries the actual values, one per *slot* (:class:`DynSlot`).

* A run-time **stride** of slot ``i`` is ``divby << (48 * (i + 1))``: a field of its own
  above the static bits.  The algebra only multiplies strides by ints and adds them, so
  every stride or offset it derives is a linear form ``static + sum(c_i * field_i)``;
  :func:`decode_linear` reads the ``c_i`` back.  The run-time data holds ``u_i = v_i /
  divby`` (``divby``: the divisor the kernel promised with ``assume``), so the value of a
  coefficient ``c_i`` is ``c_i * u_i``, and ``gcd(static, c_i ...)`` is a divisor of the
  offset: what the vector copies check their alignment against.
* A run-time **extent** of slot ``i`` is the prime :data:`SHAPE_PRIMES`\\ ``[i]`` (about
  ``2**44``).  A mode of run-time extent is only ever kept whole, indexed by one integer, or
  tiled by ``local_tile``/``local_partition``, which split it first into ``(t, R)`` with a
  new slot ``R = ceil_div(M, t)`` (CuTe's rounding up: the last tile is partial, and a
  predicate from an identity tensor guards it).  So no product or quotient of a placeholder
  is ever a valid value: :func:`decode_shape` refuses one, loudly.

Static values stay below :data:`STATIC_LIMIT` (``2**40``), far below every placeholder, so a
run-time value that reached a constant would be caught (:func:`check_static`).

>>> from layoutalg import Layout
>>> slots = (DynSlot("shape"), DynSlot("stride", 8))
>>> L = Layout((shape_placeholder(0), 16), (stride_placeholder(1, 8), 1))
>>> describe(L, slots)
'(d0,16):(d1,1)'
>>> decode_linear(L((3, 5)))          # 3 * ldA + 5 == 3 * 8 * (ldA / 8) + 5
(5, {1: 24})
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from layoutalg.inttuple import flat_tuple

from .errors import CuteError

__all__ = [
    "DynSlot", "SHAPE_PRIMES", "STATIC_LIMIT", "shape_placeholder", "stride_placeholder",
    "decode_linear", "decode_shape", "linear_divisor", "is_dynamic_shape", "has_dynamic_shape",
    "describe", "check_static",
]

#: Static strides, offsets and extents stay below this (in magnitude).
STATIC_LIMIT = 1 << 40
_FIELD = 48
_MASK = (1 << _FIELD) - 1
#: Most run-time integers of one tensor (its own and those ``local_tile`` derives).
MAX_SLOTS = 16


def _is_prime(n):
    """Miller-Rabin with the first 12 primes as bases: exact below 3.3e24."""
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    if n < 2:
        return False
    for p in small:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _primes():
    out = []
    for i in range(MAX_SLOTS):
        x = (1 << 44) + (i << 38) + 1
        while not _is_prime(x):
            x += 2
        out.append(x)
    return tuple(out)


#: The placeholder of a run-time extent in slot ``i``: distinct primes near ``2**44``.
SHAPE_PRIMES = _primes()
_SHAPE_SLOT = {p: i for i, p in enumerate(SHAPE_PRIMES)}


@dataclass(frozen=True)
class DynSlot:
    """One run-time integer of a tensor: an extent (``"shape"``) or a stride (``"stride"``,
    known to be a multiple of ``divby``).  ``origin``: how the value came about, for
    messages (``"d0"``, ``"ceil(d0/128)"``)."""

    kind: str
    divby: int = 1
    origin: str = ""


def _check_slot(i):
    if not 0 <= i < MAX_SLOTS:
        raise CuteError(f"a tensor has at most {MAX_SLOTS} run-time extents and strides, this one needs {i + 1}")


def shape_placeholder(i):
    _check_slot(i)
    return SHAPE_PRIMES[i]


def stride_placeholder(i, divby=1):
    _check_slot(i)
    return int(divby) << (_FIELD * (i + 1))


def _balanced(x):
    r = x & _MASK
    return r - (1 << _FIELD) if r >> (_FIELD - 1) else r


def decode_linear(x, what="offset"):
    """``(static, {slot: coefficient})`` of an encoded stride or offset ``x``.

    Raises :class:`CuteError` when ``x`` is not a linear form of run-time strides (a run-time
    extent was used as a stride, or a value outgrew the static range)."""
    if isinstance(x, bool) or not isinstance(x, int):
        raise CuteError(f"a layout {what} {x!r} is not an integer")
    s = _balanced(x)
    rest, parts, i = (x - s) >> _FIELD, {}, 0
    while rest:
        c = _balanced(rest)
        if c:
            parts[i] = c
        rest, i = (rest - c) >> _FIELD, i + 1
    if abs(s) >= STATIC_LIMIT or any(abs(c) >= STATIC_LIMIT for c in parts.values()):
        raise CuteError(
            f"a layout {what} depends on a run-time extent (or exceeds 2**40): a run-time extent can be "
            f"kept whole, indexed, or tiled with local_tile, but not used as a stride (give "
            f"strides explicitly, e.g. make_layout((M, K), (ldA, 1)))")
    return s, parts


def linear_divisor(x):
    """A divisor of every run-time value of the encoded offset ``x`` (0 when ``x`` is 0)."""
    s, parts = decode_linear(x)
    g = abs(s)
    for c in parts.values():
        g = gcd(g, abs(c))
    return g


def is_dynamic_shape(s):
    return isinstance(s, int) and abs(s) >= STATIC_LIMIT


def decode_shape(x, what="extent"):
    """A static extent (an int) or ``("slot", i)`` for a run-time one; raises otherwise."""
    if not is_dynamic_shape(x):
        return x
    i = _SHAPE_SLOT.get(x)
    if i is None:
        raise CuteError(
            f"a layout {what} is a product or quotient of run-time extents, which a kernel cannot "
            f"fold: index or tile a mode of run-time extent as a whole (one integer per mode)")
    return ("slot", i)


def has_dynamic_shape(layout):
    return any(is_dynamic_shape(s) for s in flat_tuple(layout.shape))


def check_static(x, what):
    """``x`` must be a static int: no placeholder reached it."""
    if isinstance(x, int) and abs(x) >= STATIC_LIMIT:
        raise CuteError(f"{what}: a run-time extent or stride reached a compile-time constant ({x})")
    return x


def _name(slots, i):
    sl = slots[i] if i < len(slots) else None
    return sl.origin if sl is not None and sl.origin else f"d{i}"


def _fmt_stride(x, slots):
    if not isinstance(x, int):
        return str(x)
    try:
        s, parts = decode_linear(x)
    except CuteError:
        return "?"
    terms = []
    for i, c in parts.items():
        d = slots[i].divby if i < len(slots) else 1
        name = _name(slots, i)
        if c % d:
            terms.append(f"{c}*({name}/{d})")
        else:
            terms.append((f"{c // d}*" if c != d else "") + name)
    if s or not terms:
        terms.append(str(s))
    return "+".join(terms)


def _fmt_shape(x, slots):
    try:
        d = decode_shape(x)
    except CuteError:
        return "?"
    return _name(slots, d[1]) if isinstance(d, tuple) else str(d)


def _fmt(t, leaf):
    if isinstance(t, tuple):
        return "(" + ",".join(_fmt(x, leaf) for x in t) + ")"
    return leaf(t)


def describe(layout, slots):
    """The layout with its run-time integers by name: ``(d0,16):(d1,1)``."""
    if not slots:
        return str(layout)
    return (_fmt(layout.shape, lambda x: _fmt_shape(x, slots)) + ":"
            + _fmt(layout.stride, lambda x: _fmt_stride(x, slots)))
