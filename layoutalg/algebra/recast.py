"""Recasting: a layout over elements of one width seen over elements of another.

``upcast(L, n)`` groups ``n`` narrow elements into one wide element, ``downcast(L, n)``
splits one into ``n``; ``recast_layout(L, old_type, new_type)`` picks one from the types'
bit widths (``type_bits``).

>>> from layoutalg import Layout
>>> str(recast_layout(Layout((4, 8), (8, 1)), "f16", "f32"))
'(4,4):(4,1)'
"""

from ..element_types import element_type
from ..errors import LayoutError, LayoutTypeError
from ..inttuple import flat_tuple, is_int
from ..layout import Layout
from ._base import _as_layout

__all__ = ["upcast", "downcast", "type_bits", "recast_layout", "get_nonswizzle_portion"]


def _upcast_leaf(op, s, d, n):
    if d == 0:
        return s, 0
    sign = -1 if d < 0 else 1
    a = abs(d)
    if a % n == 0:
        return s, sign * (a // n)
    if n % a != 0:
        raise LayoutError(f"{op}: stride {d} and factor {n} do not divide one another")
    k = n // a
    # CuTe: shape ceil_div(s, n / |d|) -- a partial group counts as one wide element
    return -(-s // k), sign


def upcast(layout, n):
    """View a layout of ``n`` narrow elements per wide element as a layout of wide elements.

    Pre: ``n`` is a positive int; every non-zero stride ``d`` divides or is divided by
    ``n``; a composed (swizzled) layout's swizzle base and offset are multiples of
    ``log2(n)`` and ``n``.  Otherwise ``LayoutError``.
    Post: strides that are multiples of ``n`` are divided by it; a mode of stride
    ``d`` dividing ``n`` keeps stride ``sign(d)`` and its shape shrinks to
    ``ceil(shape / (n / |d|))`` (a partial group counts as one wide element, as in CuTe).

    >>> str(upcast(Layout((4, 8), (8, 1)), 2))
    '(4,4):(4,1)'
    >>> str(upcast(Layout((3, 8), (1, 4)), 2))
    '(2,8):(1,2)'
    """
    if not isinstance(layout, Layout) and callable(getattr(layout, "upcast", None)):
        return layout.upcast(n)
    layout = _as_layout("upcast", layout)
    _check_factor("upcast", n)

    def go(s, d):
        if isinstance(s, tuple):
            parts = [go(x, y) for x, y in zip(s, d)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        return _upcast_leaf("upcast", s, d, n)

    return Layout._make(*go(layout.shape, layout.stride))


def downcast(layout, n):
    """View a layout of wide elements as a layout of ``n`` times narrower elements.

    Pre: ``n`` is a positive int; ``layout`` has a stride-1 (or -1) mode, which the
    narrow elements of a wide one extend (CuTe: "downcast requires adjacent elements").
    Post: the stride-1 modes' shapes are multiplied by ``n``, the other strides by ``n``;
    ``upcast(downcast(L, n), n) == L`` for such a layout.

    >>> str(downcast(Layout((4, 4), (4, 1)), 2))
    '(4,8):(8,1)'
    """
    if not isinstance(layout, Layout) and callable(getattr(layout, "downcast", None)):
        return layout.downcast(n)
    layout = _as_layout("downcast", layout)
    _check_factor("downcast", n)
    if n != 1 and not any(d == 1 or d == -1 for d in flat_tuple(layout.stride) if is_int(d)):
        # CuTe: static_assert(has_int1<Stride>) -- "Downcast requires adjacent elements";
        # without a unit-stride mode the narrow elements inside a wide one are lost.
        raise LayoutError(f"downcast: layout {layout} has no stride-1 mode (downcast requires adjacent elements)")

    def go(s, d):
        if isinstance(s, tuple):
            parts = [go(x, y) for x, y in zip(s, d)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        if d == 1 or d == -1:
            return s * n, d
        return s, d * n

    return Layout._make(*go(layout.shape, layout.stride))


def _check_factor(op, n):
    if isinstance(n, bool) or not is_int(n) or n <= 0:
        raise LayoutTypeError(f"{op}: factor must be a positive int, got {n!r}")


def type_bits(t):
    """Bit width of a type given as bits (int), a registered name (``"f16"``), a numpy dtype
    or a torch dtype (see :mod:`layoutalg.element_types`).

    Pre: ``t`` is a positive int, a registered element-type name, or a dtype numpy knows.
    Post: a positive int.

    >>> type_bits("bf16"), type_bits(8), type_bits("u128")
    (16, 8, 128)
    """
    if isinstance(t, bool):
        raise LayoutTypeError(f"type_bits: expected a type, got {t!r}")
    if is_int(t):
        if t <= 0:
            raise LayoutError(f"type_bits: bit width must be positive, got {t}")
        return int(t)
    if t is None:
        raise LayoutTypeError("type_bits: expected a type, got None")
    try:
        return element_type(t, "type_bits").bits
    except LayoutTypeError:
        pass
    try:
        import numpy as np

        bits = np.dtype(t).itemsize * 8
    except Exception:
        raise LayoutTypeError(f"type_bits: unknown type {t!r}") from None
    if bits <= 0:
        raise LayoutTypeError(f"type_bits: type {t!r} has no size")
    return bits


def recast_layout(layout, old_type, new_type):
    """Re-express ``layout`` over elements of ``old_type`` in elements of ``new_type``.

    Pre: one bit width is a multiple of the other; the :func:`upcast` (wider) or
    :func:`downcast` (narrower) it reduces to is defined.
    Post: ``recast_layout(L, t, t) is L``; wider types give ``upcast(L, new/old)``,
    narrower ones ``downcast(L, old/new)``.

    >>> str(recast_layout(Layout((4, 8), (8, 1)), "f16", "f32"))
    '(4,4):(4,1)'
    """
    if not (isinstance(layout, Layout) or callable(getattr(layout, "upcast", None))):
        raise LayoutTypeError(f"recast_layout: expected a layout, got {layout!r}")
    ob, nb = type_bits(old_type), type_bits(new_type)
    if ob == nb:
        return layout
    if nb > ob:
        if nb % ob:
            raise LayoutError(f"recast_layout: {nb} bits is not a multiple of {ob} bits")
        return upcast(layout, nb // ob)
    if ob % nb:
        raise LayoutError(f"recast_layout: {ob} bits is not a multiple of {nb} bits")
    return downcast(layout, ob // nb)


def get_nonswizzle_portion(layout):
    """The plain layout part: a composed layout's inner layout, a layout itself.

    Post: a :class:`Layout` for a layout or a composed layout.

    >>> from layoutalg import Swizzle, composition
    >>> str(get_nonswizzle_portion(composition(Swizzle(1, 0, 1), Layout(4, 1))))
    '4:1'
    """
    return getattr(layout, "inner", layout)
