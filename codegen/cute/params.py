"""A kernel's arguments, declared once.

:class:`KernelParams` names each argument with its type; from it come the kernel's ``def``
line and the ``NamedTuple`` the kernel packs its arguments into (so the pieces it composes
read ``p.M``, ``p.tmap_a``), numba's signature, and the launch's argument slots (ctypes
values set by name, in the order the kernel declares them).

>>> GEMM = KernelParams("Args", (("A", "i64"), ("M", "i32"), ("alpha", "f32")))
>>> GEMM.def_line("gemm")
'def gemm(A, M, alpha):'
>>> slots = GEMM.slots()
>>> slots.set(M=64, alpha=2.0)
>>> [s.value for s in slots.values]
[0, 64, 2.0]
"""

from __future__ import annotations

import ctypes
from collections import namedtuple
from dataclasses import dataclass

__all__ = ["KernelParams", "ArgSlots", "PARAM_TYPES"]

#: Argument types: (numba type name, ctypes type).
PARAM_TYPES = {
    "i32": ("int32", ctypes.c_int32),
    "i64": ("int64", ctypes.c_int64),
    "f32": ("float32", ctypes.c_float),
    "f64": ("float64", ctypes.c_double),
}


@dataclass(frozen=True)
class KernelParams:
    """``fields``: ``(name, type)`` pairs, type one of :data:`PARAM_TYPES`; ``name``: the
    ``NamedTuple`` class's name."""

    name: str
    fields: tuple

    def __post_init__(self):
        for n, t in self.fields:
            if t not in PARAM_TYPES:
                raise ValueError(f"KernelParams {self.name}: argument {n!r} has type {t!r}, not one of "
                                 f"{', '.join(PARAM_TYPES)}")

    @property
    def names(self):
        return tuple(n for n, _ in self.fields)

    def def_line(self, kernel):
        return f"def {kernel}({', '.join(self.names)}):"

    def pack_line(self):
        """The kernel's first statement: its arguments as one value ``p``."""
        return f"p = {self.name}({', '.join(self.names)})"

    def tuple_class(self):
        """The ``NamedTuple`` class of the packed arguments (one per declaration)."""
        hit = _CLASSES.get(self)
        if hit is None:
            hit = _CLASSES[self] = namedtuple(self.name, self.names)
        return hit

    def signature(self):
        """numba's signature of the kernel."""
        import numba

        return numba.void(*[getattr(numba, PARAM_TYPES[t][0]) for _, t in self.fields])

    def slots(self):
        """Fresh argument slots, all zero."""
        return ArgSlots(self)


_CLASSES = {}


class ArgSlots:
    """The launch's arguments: one ctypes value per parameter, and the pointer array the
    driver's launch takes (built once; setting a value changes what the next launch passes)."""

    def __init__(self, params):
        self.names = params.names
        self.values = [PARAM_TYPES[t][1](0) for _, t in params.fields]
        self._index = {n: i for i, n in enumerate(self.names)}
        self.pointers = (ctypes.c_void_p * len(self.values))(*[ctypes.addressof(v) for v in self.values])

    def set(self, **kw):
        for n, v in kw.items():
            try:
                self.values[self._index[n]].value = v
            except KeyError:
                raise KeyError(f"kernel arguments: no argument {n!r} (arguments: {', '.join(self.names)})") from None

    def values_of(self, *names):
        """The ctypes values of ``names``, for a launcher that sets them on every call
        (``v.value = x``: no lookups by name)."""
        return tuple(self.values[self._index[n]] for n in names)

    def __getitem__(self, name):
        return self.values[self._index[name]].value

    def python_values(self):
        """The values as Python numbers, in order (numba's simulator takes these)."""
        return [v.value for v in self.values]
