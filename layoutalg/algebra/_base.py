"""Shared pieces of the algebra: argument checks, flat modes, the layout-like protocol, by-mode application."""

from ..errors import LayoutError, LayoutTypeError
from ..inttuple import is_int
from ..layout import _build as _build_layout, Layout, make_layout, rank


_build = _make_flat = _build_layout      # trusted: (shape, stride, flat shape, flat stride)


def _as_layout(op, x):
    if isinstance(x, Layout):
        return x
    if isinstance(x, bool):
        raise LayoutTypeError(f"{op}: expected a layout or an int, got {x!r}")
    if is_int(x):
        return Layout(int(x))
    if isinstance(x, tuple):
        from ..inttuple import fmt

        try:
            shape = fmt(x)
        except Exception:
            shape = repr(x)
        raise LayoutTypeError(f"{op}: expected a layout, got the shape {shape}; a shape is not a layout: write the "
                              f"layout, e.g. {Layout(x) if _is_shape(x) else '(8,8):(1,8)'}, or Layout({shape})")
    raise LayoutTypeError(f"{op}: expected a layout, got {x!r}")


def _is_shape(x):
    if isinstance(x, tuple):
        return bool(x) and all(_is_shape(v) for v in x)
    return is_int(x) and not isinstance(x, bool) and x > 0


def _layout_like(x):
    """``(x.layout, x.with_layout)`` for a layout-like object, else ``None``.

    The protocol: an object that is not a :class:`Layout` but wraps one -- a
    :class:`ComposedLayout` (``outer o offset o inner``) or a :class:`~layoutalg.Tensor`
    (an engine over a layout) -- takes part in composition, the divides and products,
    ``tile_to_shape`` and ``coalesce`` by exposing

    * ``x.layout``: the plain layout the operation acts on (a composed layout's inner one);
    * ``x.with_layout(L)``: the same kind of object over the layout ``L``;

    and the operation returns ``x.with_layout(op(x.layout, ...))``.  Objects for which
    re-wrapping is not enough define the operation as a method of the same name
    (``ComposedLayout.upcast``/``downcast`` also change the swizzle), which the
    operation calls instead.
    """
    if isinstance(x, Layout):
        return None
    lay = getattr(x, "layout", None)
    rewrap = getattr(x, "with_layout", None)
    if isinstance(lay, Layout) and callable(rewrap):
        return lay, rewrap
    return None


def _check_tiles(x, op, tiler):
    """Let a layout-like ``x`` refuse ``tiler`` before ``op`` tiles it: a tensor of data
    refuses a tile that hangs over its edge (``Tensor.check_tiler``)."""
    check = getattr(x, "check_tiler", None)
    if check is not None:
        check(op, tiler)


def _flat_modes(L):
    return L._fs, L._fd


def _from_modes(shapes, strides):
    """A layout from flat mode lists: one mode -> int-shaped, none -> ``1:0``."""
    n = len(shapes)
    if n > 1:
        s, d = tuple(shapes), tuple(strides)
        return _build(s, d, s, d)
    if n == 1:
        s, d = shapes[0], strides[0]
        return _build(s, d, (s,), (d,))
    return _build(1, 0, (1,), (0,))


def _by_mode(op, layout, tiler, fn, keep_rest=True):
    """Apply ``fn(mode_i, tiler_i)`` to the first ``len(tiler)`` modes; ``None`` keeps a mode.

    Modes beyond the tiler are kept (divides, products) or, with ``keep_rest=False``,
    dropped -- CuTe's by-mode ``composition`` drops the modes the tiler does not hit.
    """
    r = rank(layout)
    if len(tiler) > r:
        raise LayoutError(f"{op}: tiler {_fmt_tiler(tiler)} has more modes than layout {layout}")
    modes = []
    for i in range(r if keep_rest else len(tiler)):
        m = layout[i]
        if i < len(tiler) and tiler[i] is not None:
            t = tiler[i]
            if isinstance(t, bool) or not (isinstance(t, (Layout, tuple)) or is_int(t)):
                raise LayoutTypeError(f"{op}: tiler entries must be layouts, ints, tuples or None, got {t!r}")
            m = fn(m, t)
        modes.append(m)
    if not modes:
        return Layout._make((), ())
    return make_layout(*modes)


def _fmt_tiler(t):
    if isinstance(t, tuple):
        return "(" + ",".join(_fmt_tiler(x) for x in t) + ")"
    return "_" if t is None else str(t)


def _modes(L):
    return list(L) if isinstance(L.shape, tuple) else [L]


def _mode0(L):
    return Layout._make(L.shape[0], L.stride[0]) if isinstance(L.shape, tuple) else L
