"""The compile-time bank-conflict check of a tiled copy's shared side.

When a kernel partitions a shared tensor for a tiled copy (``thr.partition_S(sA)`` or
``partition_D``), the copy's shared side is known whole: every thread's addresses follow from
the copy and the tensor's layout. :func:`check_partition` runs
:func:`layoutalg.analyze_shared` on them (at the tensor's offset 0; shared tensors are
128-byte aligned) and raises a :class:`layoutalg.PerformanceWarning` naming the copy, the
layout and the ways when a bank holds several distinct words in one phase.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

from layoutalg import ComposedLayout, LayoutError, PerformanceWarning, analyze_shared

__all__ = ["check_partition", "PerformanceWarning"]


@lru_cache(maxsize=1024)
def _message(tiled_copy, swizzle, layout, bits, side):
    """The warning's text for a conflicting copy, or None (also when the analysis does not apply)."""
    atom = tiled_copy.atom
    if atom.value_bits != bits:
        return None                                     # copy() will reject the element type
    smem = ComposedLayout(swizzle, 0, layout) if swizzle is not None else layout
    try:
        a = analyze_shared(tiled_copy, smem, side)
    except LayoutError:
        return None                                     # not this atom's shared side, or not a whole tiling
    if not a.conflicts:
        return None
    w, g, c = a.collisions[0]
    threads = ", ".join(f"T{t[0]}" for t in c.threads[:4]) + (", ..." if len(c.threads) > 4 else "")
    verb = "reads" if side == "S" else "writes"
    return (f"copy: {atom.name} of {atom.dtype} (layout_tv {tiled_copy.layout_tv}, tile {tiled_copy.tiler_mn}) "
            f"{verb} the shared layout {smem} with {a.ways}-way bank conflicts: {a.total_wavefronts} wavefronts "
            f"where {a.total_ideal} would do ({a.total_wavefronts / a.total_ideal:.2f}x); e.g. warp {w} instruction "
            f"{g}: threads {threads} meet in bank {c.bank}. `layoutalg analyze copy` and "
            f"`layoutalg draw copy ... --banks` show every collision; a swizzle of the layout removes them")


def check_partition(tiled_copy, tensor_type, side):
    """Warn (:class:`PerformanceWarning`) when ``tiled_copy``'s side ``side`` over the shared
    tensor type ``tensor_type`` has bank conflicts; anything else passes silently."""
    if getattr(tensor_type, "space", None) != "smem":
        return
    msg = _message(tiled_copy, tensor_type.swizzle, tensor_type.layout, tensor_type.dtype.bitwidth, side)
    if msg is not None:
        warnings.warn(msg, PerformanceWarning, stacklevel=2)
