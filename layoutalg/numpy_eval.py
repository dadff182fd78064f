"""Layouts evaluated over numpy arrays of indices: many ``layout(i)`` at once.

``eval_layout(L, idx)`` is ``[L(i) for i in idx]`` as an int64 array, with the
last mode unbounded (CuTe's ``crd2idx`` on an int), for a :class:`Layout` with
integer strides or a :class:`ComposedLayout` (swizzles included).

>>> import numpy as np
>>> from layoutalg import Layout
>>> eval_layout(Layout((4, 2), (2, 1)), np.arange(8)).tolist()
[0, 2, 4, 6, 1, 3, 5, 7]
>>> eval_layout(Layout(4, 3), np.array([5])).tolist()      # past the size: last mode unbounded
[15]
"""

import numpy as np

from .errors import LayoutError, LayoutTypeError
from .inttuple import flat_tuple, is_int
from .layout import Layout
from .swizzle import ComposedLayout, Swizzle

__all__ = ["eval_layout"]


def eval_layout(layout, idx, op="eval_layout"):
    """``layout(i)`` for every ``i`` of the integer array ``idx`` (any shape), as int64.

    Pre: ``layout`` is a :class:`Layout` with integer strides (no coordinate bases) or a
    :class:`ComposedLayout`; ``idx`` holds non-negative integers.  ``op`` names the caller
    in error messages.
    Post: ``eval_layout(L, idx)[k] == L(int(idx[k]))`` for ``0 <= idx[k] < size(L)``; past
    the size the last mode is unbounded.

    >>> from layoutalg import Swizzle, composition
    >>> eval_layout(composition(Swizzle(1, 0, 1), Layout(4, 1)), np.arange(4)).tolist()
    [0, 1, 3, 2]
    """
    idx = np.asarray(idx, dtype=np.int64)
    if isinstance(layout, ComposedLayout):
        inner = eval_layout(layout.inner, idx, op) + layout.offset
        outer = layout.outer
        if isinstance(outer, Swizzle):
            if outer.shift >= 0:
                return inner ^ ((inner & outer.yyy_mask) >> outer.shift)
            return inner ^ ((inner & outer.yyy_mask) << -outer.shift)
        return eval_layout(outer, inner, op)
    if not isinstance(layout, Layout):
        raise LayoutTypeError(f"{op}: expected a Layout or ComposedLayout, got {layout!r}")
    shapes, strides = flat_tuple(layout.shape), flat_tuple(layout.stride)
    for d in strides:
        if not is_int(d):
            raise LayoutError(f"{op}: layout {layout} has coordinate strides; use coords()")
    out = np.zeros(idx.shape, dtype=np.int64)
    div = 1
    for i, (s, d) in enumerate(zip(shapes, strides)):
        c = idx // div if i == len(shapes) - 1 else (idx // div) % s
        out += c * int(d)
        div *= s
    return out
