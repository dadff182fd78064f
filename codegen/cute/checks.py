"""Static checks shared by the GPU lowering and the simulator (no numba here).

>>> from layoutalg import Layout
>>> check_divides("local_tile", Layout((32, 16)), (16, 8))
>>> check_divides("local_tile", Layout((32, 16)), (12, 8))
Traceback (most recent call last):
...
codegen.cute.errors.CuteError: local_tile: tile (12, 8) does not divide the tensor's layout (32,16):(1,32): mode 0 has size 32, not a multiple of 12
"""

from __future__ import annotations

import layoutalg as la
from layoutalg import ComposedLayout, Layout, Swizzle

from .errors import CuteError

__all__ = ["check_divides", "shared_cosize"]


def check_divides(op, layout, tiler):
    """A tile must divide the tensor it tiles (CuTe's tiles have no residue either)."""
    tl = tiler if isinstance(tiler, tuple) else (tiler,)
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    if len(tl) > len(shape):
        raise CuteError(f"{op}: tiler {tiler} has more modes than the tensor's layout {layout}")
    for i, t in enumerate(tl):
        if t is None:
            continue
        n = la.size(t) if isinstance(t, Layout) else t
        m = la.product(shape[i])
        if m % n:
            raise CuteError(f"{op}: tile {tiler} does not divide the tensor's layout {layout}: "
                            f"mode {i} has size {m}, not a multiple of {n}")


def shared_cosize(layout):
    """Elements a shared tensor of ``layout`` needs (a swizzle may reach its whole atom)."""
    if isinstance(layout, ComposedLayout):
        n = la.cosize(layout.inner) + layout.offset
        if isinstance(layout.outer, Swizzle) and layout.outer.bits:
            sz = layout.outer.size()
            n = -(-n // sz) * sz
        return n
    return la.cosize(layout)
