"""Offsets of coordinates in layouts, folded at compile time, emitted as integer IR.

A *coordinate spec* describes what a kernel passes as a coordinate, from its numba type:
``None`` keeps a mode (a slice), a :class:`Leaf` is an integer (a compile-time value or a
run-time one), a tuple matches the modes of a layout.  :func:`slice_spec` checks the spec
against a layout and returns the kept sub-layout and the terms of the offset; the terms are
evaluated on the host (``Leaf.value`` known) or emitted as integer IR (``udiv``/``urem`` by
constants, which LLVM turns into shifts and masks for powers of two).

>>> from layoutalg import Layout
>>> sub, terms = slice_spec("t[...]", Layout((4, (2, 2)), (2, (1, 8))), (None, (Leaf(1), None)))
>>> str(sub)
'(4,2):(2,8)'
>>> [host_offset(terms)]
[1]
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba.cuda import types

from layoutalg import Layout, LayoutError  # noqa: F401
from layoutalg.basis import ScaledBasis
from layoutalg.inttuple import flat_tuple, product

from .errors import CuteError

__all__ = [
    "Leaf", "Term", "spec_of_type", "slice_spec", "host_offset", "emit_terms", "leaves",
    "emit_swizzle", "I64", "const64", "CuteError", "dyn_shape", "dyn_linear",
]

I64 = ir.IntType(64)


@dataclass(frozen=True)
class Leaf:
    """An integer coordinate: ``value`` when known at compile time, else run-time slot
    ``slot``, known to be a multiple of ``divby`` (``assume``)."""

    value: int | None = None
    slot: int | None = None
    divby: int = 1

    def __repr__(self):
        return str(self.value) if self.value is not None else f"<i{self.slot}>"


@dataclass(frozen=True)
class Term:
    """``leaf`` used as a 1-D (colexicographic) index into a mode ``(shape, stride)``."""

    leaf: Leaf
    shape: object
    stride: object


def spec_of_type(ty, slots=None, what="coordinate"):
    """The coordinate spec of a numba type; run-time integers get consecutive slots.

    Pre: ``ty`` is an integer, ``none`` or a (nested) tuple of those.
    """
    if slots is None:
        slots = [0]
    if isinstance(ty, types.NoneType) or ty is None:
        return None
    if isinstance(ty, types.IntegerLiteral):
        return Leaf(value=int(ty.literal_value))
    if isinstance(ty, types.BooleanLiteral) or isinstance(ty, types.Boolean):
        raise CuteError(f"{what}: a bool is not a coordinate")
    if isinstance(ty, types.Integer) or _assumed(ty):
        s = slots[0]
        slots[0] += 1
        return Leaf(slot=s, divby=getattr(ty, "divby", 1))
    if isinstance(ty, types.BaseTuple):
        return tuple(spec_of_type(t, slots, what) for t in ty.types)
    raise CuteError(f"{what}: a coordinate is made of ints, None and tuples, got {ty}")


def leaves(builder, ty, val):
    """The run-time integer leaves of a value of type ``ty``, in slot order, as i64."""
    out = []

    def go(t, v):
        if isinstance(t, types.IntegerLiteral) or isinstance(t, types.NoneType):
            return
        if _assumed(t):
            out.append(v)                            # an int64 already
            return
        if isinstance(t, types.Integer):
            out.append(_to_i64(builder, v, t))
            return
        if isinstance(t, types.BaseTuple):
            for i, tt in enumerate(t.types):
                go(tt, builder.extract_value(v, i))

    go(ty, val)
    return out


def _assumed(ty):
    from .types import AssumedIntType

    return isinstance(ty, AssumedIntType)


def _to_i64(builder, v, t):
    w = v.type.width
    if w == 64:
        return v
    if w > 64:
        return builder.trunc(v, I64)
    return builder.sext(v, I64) if t.signed else builder.zext(v, I64)


def _fmt_spec(spec):
    if spec is None:
        return "_"
    if isinstance(spec, tuple):
        return "(" + ",".join(_fmt_spec(s) for s in spec) + ")"
    return repr(spec)


def _fmt(x):
    from layoutalg.inttuple import fmt

    return fmt(x)


def slice_spec(op, layout, spec):
    """``(sub_layout or None, terms)``: the modes ``spec`` keeps and the terms of the offset.

    A :class:`Leaf` indexes its whole (sub)mode 1-D; a tuple must have the rank of the mode
    it matches.  ``sub_layout`` is ``None`` when every mode is indexed (an element).
    Raises :class:`CuteError` naming ``op``, the layout and the coordinate otherwise.
    """
    kept, terms = [], []

    def go(shape, stride, s):
        if s is None:
            kept.append((shape, stride))
            return
        if isinstance(s, Leaf):
            if s.value is not None and not 0 <= s.value < product(shape):
                raise CuteError(
                    f"{op}: coordinate {_fmt_spec(spec)} is out of range for layout {layout}: "
                    f"index {s.value} in a mode of size {product(shape)} ({_fmt(shape)})")
            terms.append(Term(s, shape, stride))
            return
        if not isinstance(shape, tuple) or len(shape) != len(s):
            r = len(shape) if isinstance(shape, tuple) else 1
            raise CuteError(
                f"{op}: coordinate {_fmt_spec(spec)} does not match layout {layout}: "
                f"{len(s)} coordinates for a mode of rank {r} ({_fmt(shape)})")
        for x, d, c in zip(shape, stride, s):
            go(x, d, c)

    go(layout.shape, layout.stride, spec)
    if not kept:
        return None, terms
    if spec is None:
        return layout, terms
    # as the host's slice: the kept modes, spliced into one tuple (a 1-tuple for one mode)
    return Layout._make(tuple(k[0] for k in kept), tuple(k[1] for k in kept)), terms


def _mode_leaves(shape, stride):
    """Flat ``[(size, prefix, stride)]`` of a mode, colexicographic."""
    out, pre = [], 1
    for s, d in zip(flat_tuple(shape), flat_tuple(stride)):
        out.append((s, pre, d))
        pre *= s
    return out


def _component(d, rank):
    """``(component, factor)`` of a stride: an int goes to component 0, ``v*E<i>`` to ``i``."""
    if isinstance(d, ScaledBasis):
        if len(d.mode) != 1 or (rank is not None and d.mode[0] >= rank):
            raise CuteError(f"coordinate stride {d} is not a flat basis of a rank-{rank} identity tensor")
        return d.mode[0], d.value
    if rank is not None and d != 0:
        raise CuteError(f"an identity tensor's layout has an integer stride {d}")
    return 0, d


def host_offset(terms, values=(), rank=None):
    """The offset (an int, or a ``rank``-tuple for coordinate strides) of evaluated terms."""
    acc = [0] * (rank or 1)
    for t in terms:
        v = t.leaf.value if t.leaf.value is not None else values[t.leaf.slot]
        leaves_ = _mode_leaves(t.shape, t.stride)
        for k, (s, pre, d) in enumerate(leaves_):
            c = v // pre if k == len(leaves_) - 1 else (v // pre) % s
            comp, f = _component(d, rank)
            acc[comp] += c * f
    return tuple(acc) if rank is not None else acc[0]


def const64(v):
    from .dynamic import check_static

    return ir.Constant(I64, int(check_static(v, "an offset")))


def _mul(b, x, k):
    if isinstance(x, int) and isinstance(k, int):
        return x * k
    if isinstance(k, int):
        if k == 0:
            return 0
        return x if k == 1 else b.mul(x, const64(k))
    if isinstance(x, int):
        return _mul(b, k, x)
    return b.mul(x, k)


def _add(b, x, y):
    if isinstance(x, int) and isinstance(y, int):
        return x + y
    if isinstance(x, int):
        x, y = y, x
    if isinstance(y, int):
        if y == 0:
            return x
        c = const64(y)
        return b.add(x, c if x.type == c.type else ir.Constant(x.type, int(c.constant)))
    return b.add(x, y)


def as_ir(x):
    return const64(x) if isinstance(x, int) else x


def dyn_shape(x, dyn):
    """An extent of a layout as an int, or (a run-time one) the i64 of its slot in ``dyn``."""
    from .dynamic import decode_shape

    d = decode_shape(x)
    return dyn[d[1]] if isinstance(d, tuple) else d


def dyn_linear(builder, x, dyn):
    """An encoded stride or offset (:mod:`codegen.cute.dynamic`) as an int or i64 IR:
    its static part plus each coefficient times its slot's value in ``dyn``."""
    from .dynamic import STATIC_LIMIT, decode_linear

    if isinstance(x, int) and abs(x) < STATIC_LIMIT:
        return x
    s, parts = decode_linear(x)
    acc = s
    for i, c in parts.items():
        acc = _add(builder, acc, _mul(builder, dyn[i], c))
    return acc


def _div(b, x, k):
    if isinstance(x, int) and isinstance(k, int):
        return x // k
    if isinstance(k, int) and k == 1:
        return x
    return b.udiv(as_ir(x), as_ir(k))


def _rem(b, x, k):
    if isinstance(x, int) and isinstance(k, int):
        return x % k
    return b.urem(as_ir(x), as_ir(k))


def emit_terms(builder, terms, values, rank=None, dyn=()):
    """The offset of ``terms`` as i64 IR (or Python ints where everything is known).

    ``values[slot]`` are the run-time leaves (i64); ``dyn`` the values of the tensor's
    run-time extents and strides.  Returns one value, or a list of ``rank`` values for
    coordinate (basis) strides.
    """
    acc = [0] * (rank or 1)
    for t in terms:
        v = t.leaf.value if t.leaf.value is not None else values[t.leaf.slot]
        leaves_ = _mode_leaves(t.shape, t.stride)
        for k, (s, pre, d) in enumerate(leaves_):
            comp, f = _component(d, rank)
            if f == 0 or s == 1:
                continue
            f = dyn_linear(builder, f, dyn)
            last = k == len(leaves_) - 1
            c = _div(builder, v, dyn_shape(pre, dyn))
            if not last:
                c = _rem(builder, c, dyn_shape(s, dyn))
            acc[comp] = _add(builder, acc[comp], _mul(builder, c, f))
    return acc if rank is not None else acc[0]


def add_offset(builder, x, y):
    return _add(builder, x, y)


def emit_swizzle(builder, sw, x):
    """``sw(x)`` for an i64 (or int) offset ``x``: ``x ^ ((x & yyy_mask) >> shift)``."""
    if sw is None:
        return x
    if isinstance(x, int):
        return sw(x)
    c = lambda v: ir.Constant(x.type, v)      # noqa: E731  (i64 offsets, i32 shared addresses)
    y = builder.and_(x, c(sw.yyy_mask))
    y = builder.lshr(y, c(sw.shift)) if sw.shift >= 0 else builder.shl(y, c(-sw.shift))
    return builder.xor(x, y)
