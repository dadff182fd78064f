"""A kernel's dynamic shared memory, carved into named regions once.

:class:`SharedStorage` is CuTe's ``SharedStorage`` struct: the regions a kernel needs (the
operands' pipeline stages, the epilogue's staging buffers, the barriers), each with its
size and alignment, laid out in order from a 1024-byte aligned base (128-byte swizzled
tiles repeat every 1024 bytes, and TMA and wgmma read them from such a base). The same
object gives the launch its byte count (:attr:`SharedStorage.nbytes`) and the kernel each
region's offset (an attribute: ``STORAGE.full``), so the two cannot disagree.

>>> st = SharedStorage((("a", 3 * 16384, 1024), ("b", 3 * 32768, 1024), ("full", 24, 8)))
>>> st.a, st.b, st.full, st.nbytes
(0, 49152, 147456, 148504)
"""

from __future__ import annotations

from dataclasses import dataclass

from .objects import device_function, device_object, late_import

(dynamic_smem_addr,) = late_import("codegen.intrinsics", "dynamic_smem_addr")

__all__ = ["SharedStorage", "smem_base", "BASE_ALIGN"]

#: Alignment of the storage's base: the period of the 128-byte swizzle (8 rows of 128 B).
BASE_ALIGN = 1024


@device_function(once=True)
def smem_base():
    """32-bit shared address of the kernel's dynamic shared memory, rounded up to
    :data:`BASE_ALIGN` (the launch asks for that much more)."""
    return (dynamic_smem_addr() + (BASE_ALIGN - 1)) & -BASE_ALIGN


def _round_up(x, a):
    return -(-x // a) * a


@device_object
@dataclass(frozen=True)
class SharedStorage:
    """Regions ``(name, bytes, alignment)`` in order from the base; ``STORAGE.<name>`` is a
    region's byte offset from :func:`smem_base`."""

    regions: tuple

    def __post_init__(self):
        names = [r[0] for r in self.regions]
        if len(set(names)) != len(names):
            raise ValueError(f"SharedStorage: region names repeat: {names}")
        for name, nbytes, align in self.regions:
            if nbytes < 0 or align <= 0 or align & (align - 1) or align > BASE_ALIGN:
                raise ValueError(f"SharedStorage: region {name!r} of {nbytes} bytes aligned to {align}: "
                                 f"sizes are non-negative, alignments powers of two up to {BASE_ALIGN}")

    @property
    def offsets(self):
        """``{name: byte offset}`` of every region."""
        out, at = {}, 0
        for name, nbytes, align in self.regions:
            at = _round_up(at, align)
            out[name] = at
            at += nbytes
        return out

    @property
    def used(self):
        """Bytes from the base to the end of the last region."""
        if not self.regions:
            return 0
        name, nbytes, _ = self.regions[-1]
        return self.offsets[name] + nbytes

    @property
    def nbytes(self):
        """Dynamic shared memory the launch asks for: the regions and the base's alignment."""
        return self.used + BASE_ALIGN

    def __getattr__(self, name):
        if name.startswith("__") or name == "regions":
            raise AttributeError(name)
        offsets = self.offsets
        if name in offsets:
            return offsets[name]
        raise AttributeError(f"SharedStorage has no region {name!r} (regions: {', '.join(offsets)})")
