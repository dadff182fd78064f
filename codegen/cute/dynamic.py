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
    "describe", "extent_str", "linear_str", "check_static", "split_residues", "symbolic_layout", "offset_formula",
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


def linear_str(x, slots=()):
    """An encoded stride or offset with its run-time strides by name: ``3*d1+5``."""
    return _fmt_stride(x, slots)


def _fmt_shape(x, slots):
    try:
        d = decode_shape(x)
    except CuteError:
        return "?"
    return _name(slots, d[1]) if isinstance(d, tuple) else str(d)


def extent_str(x, slots):
    """An extent by name (a run-time one) or value."""
    return _fmt_shape(x, slots)


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


def split_residues(op, layout, dyn, tiler, residue, what):
    """``(layout, dyn, new)``: ``layout`` with each single-extent mode that ``tiler`` tiles
    with a remainder split into ``(tile, ceil_div(extent, tile))`` first, as CuTe's
    ``logical_divide`` rounds up.  A run-time extent is always split, into a new slot of
    ``dyn``, and ``new`` lists ``(source slot, tile)`` of each; a static extent only with
    ``residue`` (CuTe's residue semantics); other static tiles must divide.  ``what``: the
    tensor, for messages.

    >>> from layoutalg import Layout
    >>> lay = Layout((shape_placeholder(0), 16), (stride_placeholder(1), 1))
    >>> out, dyn, new = split_residues("local_tile", lay, (DynSlot("shape", 1, "M"), DynSlot("stride", 1, "ld")),
    ...                                (128, 16), True, "a tensor")
    >>> describe(out, dyn), new
    ('((128,ceil(M/128)),16):((ld,128*ld),1)', ((0, 128),))
    """
    from layoutalg import Layout, size

    dyn, new = list(dyn), []
    tl = tiler if isinstance(tiler, tuple) else (tiler,)
    one = not isinstance(layout.shape, tuple)
    shapes = [layout.shape] if one else list(layout.shape)
    strides = [layout.stride] if one else list(layout.stride)
    for i, t in enumerate(tl[:len(shapes)]):
        e, d = shapes[i], strides[i]
        if t is None:
            continue
        if isinstance(e, tuple):
            if any(is_dynamic_shape(x) for x in flat_tuple(e)):
                raise CuteError(f"{op}: mode {i} of {what} nests a run-time extent; tile modes of one run-time "
                                f"extent each")
            continue
        dynamic = is_dynamic_shape(e)
        if not dynamic and (not residue or e % (t if isinstance(t, int) else size(t)) == 0):
            continue
        if not isinstance(t, int):
            raise CuteError(f"{op}: tile {tiler} over the mode {i} of run-time extent of {what}: tile such a "
                            f"mode by an int")
        if dynamic:
            src = decode_shape(e)[1]
            dyn.append(DynSlot("shape", 1, f"ceil({_name(dyn, src)}/{t})"))
            new.append((src, t))
            rest = shape_placeholder(len(dyn) - 1)
        else:
            rest = -(-e // t)
        shapes[i], strides[i] = (t, rest), (d, d * t)
    if not new and not residue:
        return layout, tuple(dyn), ()
    out = Layout._make(shapes[0], strides[0]) if one else Layout._make(tuple(shapes), tuple(strides))
    return out, tuple(dyn), tuple(new)


_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def symbolic_layout(text):
    """``(layout, slots)`` of a layout written with names for run-time integers:
    ``"(M,K):(ldA,1)"``.  A name in the shape is a run-time extent, in the stride a run-time
    stride (the same name in both is two slots that print alike).

    >>> lay, slots = symbolic_layout("(M,(4,K)):(ldA,(1,4))")
    >>> describe(lay, slots)
    '(M,(4,K)):(ldA,(1,4))'
    """
    import re

    from layoutalg.parse import parse_layout

    depth, cut = 0, None
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == ":" and depth == 0:
            cut = i
            break
    if cut is None:
        raise CuteError(f"symbolic layout {text!r}: write it as shape:stride, e.g. \"(M,K):(ldA,1)\"")
    slots, names = [], {}

    def sub(part, kind):
        def repl(m):
            key = (kind, m.group(0))
            if key not in names:
                names[key] = len(slots)
                slots.append(DynSlot(kind, 1, m.group(0)))
            i = names[key]
            return str(shape_placeholder(i) if kind == "shape" else stride_placeholder(i))
        return re.sub(_NAME, repl, part)

    lay = parse_layout(sub(text[:cut], "shape") + ":" + sub(text[cut + 1:], "stride"))
    return lay, tuple(slots)


def offset_formula(layout, slots, latex=False):
    """The offset of a coordinate of ``layout``, one index per leaf (``i, j, k, ...``):
    ``"i*ldA + j"``.  ``latex``: as a LaTeX formula.

    >>> lay, slots = symbolic_layout("(M,K):(ldA,1)")
    >>> offset_formula(lay, slots)
    '(i, j) -> i*ldA + j'
    >>> print(offset_formula(*symbolic_layout("(M,(2,K)):(ldA,(1,2))"), latex=True))
    (i, j, k) \\mapsto i \\cdot \\mathit{ldA} + j + 2 k
    """
    shapes, strides = flat_tuple(layout.shape), flat_tuple(layout.stride)
    idx = [("ijklmnpq"[k] if len(shapes) <= 8 else f"x{k}") for k in range(len(shapes))]
    terms = []
    for x, e, d in zip(idx, shapes, strides):
        if e == 1:
            continue
        s, parts = decode_linear(d, "stride")
        factors = [(_name(slots, i), c) for i, c in parts.items()] + ([("", s)] if s else [])
        for name, c in factors:
            terms.append(_term(x, name, c, latex))
    arrow = "\\mapsto" if latex else "->"
    return "(" + ", ".join(idx) + ") " + arrow + " " + (" + ".join(terms) if terms else "0")


def _term(x, name, c, latex):
    """``c * x * name`` (``name`` "" for a static stride), as text or LaTeX."""
    if latex:
        parts = ([str(c)] if c != 1 else []) + [x] + ([f"\\mathit{{{name}}}"] if name else [])
        return parts[0] + "".join((" \\cdot " if p.startswith("\\") else " ") + p for p in parts[1:])
    return ("" if c == 1 else f"{c}*") + x + (f"*{name}" if name else "")
