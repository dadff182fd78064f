"""Swizzles and composed layouts.

``Swizzle(B, M, S)`` is a function on integer offsets: it XORs the ``B`` bits
at position ``M + S`` into the ``B`` bits at position ``M``.  Shared-memory
layouts compose a swizzle after an ordinary layout to spread the rows of a
tile over the 32 banks:

>>> sw = Swizzle(3, 3, 3)
>>> [sw(i) for i in (0, 8, 64, 72, 448)]
[0, 8, 72, 64, 504]
>>> from layoutalg import Layout, composition, tile_to_shape
>>> atom = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))   # (M8,K64) -> offset
>>> str(atom)
'Sw<3,3,3> o 0 o (8,64):(64,1)'
>>> str(tile_to_shape(atom, (128, 64)))
'Sw<3,3,3> o 0 o (128,64):(64,1)'
"""

from .errors import LayoutError, LayoutTypeError
from .inttuple import is_int
from .layout import Layout, _has_slot, cosize as _cosize, slice_and_offset

__all__ = ["Swizzle", "ComposedLayout", "make_composed_layout"]


class Swizzle:
    """CuTe's ``Swizzle<B,M,S>``: ``f(x) = x ^ ((x & yyy_mask) >> S)``.

    Pre: ``B >= 0``, ``M >= 0``, ``|S| >= B``.  ``Swizzle(0, M, S)`` is the identity.
    """

    __slots__ = ("bits", "base", "shift", "yyy_mask", "zzz_mask", "_hash")

    def __init__(self, bits, base, shift):
        for name, v in (("bits", bits), ("base", base), ("shift", shift)):
            if isinstance(v, bool) or not is_int(v):
                raise LayoutTypeError(f"Swizzle: {name} must be an int, got {v!r}")
        if bits < 0 or base < 0:
            raise LayoutError(f"Swizzle: bits and base must be non-negative, got Swizzle({bits},{base},{shift})")
        if abs(shift) < bits:
            raise LayoutError(f"Swizzle: |shift| must be at least bits, got Swizzle({bits},{base},{shift})")
        object.__setattr__(self, "bits", int(bits))
        object.__setattr__(self, "base", int(base))
        object.__setattr__(self, "shift", int(shift))
        msk = (1 << bits) - 1
        object.__setattr__(self, "yyy_mask", msk << (base + max(0, shift)))
        object.__setattr__(self, "zzz_mask", msk << (base - min(0, shift)))
        object.__setattr__(self, "_hash", hash(("Sw", bits, base, shift)))

    def __setattr__(self, name, value):
        raise AttributeError("Swizzle is immutable")

    def __call__(self, offset):
        if isinstance(offset, bool) or not is_int(offset):
            raise LayoutTypeError(f"Swizzle{self._args()}: offset must be an int, got {offset!r}")
        offset = int(offset)                  # an int for numpy integers too, as a Layout gives
        if self.shift >= 0:
            return offset ^ ((offset & self.yyy_mask) >> self.shift)
        return offset ^ ((offset & self.yyy_mask) << -self.shift)

    def _args(self):
        return f"<{self.bits},{self.base},{self.shift}>"

    def __eq__(self, other):
        if not isinstance(other, Swizzle):
            return NotImplemented
        return (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self):
        return self._hash

    def __str__(self):
        return "Sw" + self._args()

    def __repr__(self):
        return f"Swizzle({self.bits}, {self.base}, {self.shift})"

    def size(self):
        """The smallest power of two whose range the swizzle maps onto itself.

        The highest bit touched is the top of the YYY mask (shift > 0) or of the
        ZZZ mask (shift < 0): bit ``base + bits + |shift| - 1`` either way.
        """
        return 1 << (self.base + self.bits + abs(self.shift))

    def cosize(self):
        return self.size()


def _log2(n, op):
    if n <= 0 or n & (n - 1):
        raise LayoutError(f"{op}: factor {n} must be a power of two for a swizzled layout")
    return n.bit_length() - 1


class ComposedLayout:
    """``outer o (offset + inner)``: ``L(c) == outer(offset + inner(c))``.

    ``outer`` is a :class:`Swizzle` (or a layout), ``inner`` a :class:`Layout`;
    shape, size and mode structure are those of ``inner``.
    """

    __slots__ = ("outer", "offset", "inner", "_hash")

    def __init__(self, outer, offset, inner):
        if not isinstance(inner, Layout):
            raise LayoutTypeError(f"ComposedLayout: inner must be a Layout, got {inner!r}")
        if not isinstance(outer, (Swizzle, Layout)):
            raise LayoutTypeError(f"ComposedLayout: outer must be a Swizzle or a Layout, got {outer!r}")
        if isinstance(offset, bool) or not is_int(offset):
            raise LayoutTypeError(f"ComposedLayout: offset must be an int, got {offset!r}")
        object.__setattr__(self, "outer", outer)
        object.__setattr__(self, "offset", int(offset))
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "_hash", hash(("Composed", outer, offset, inner)))

    def __setattr__(self, name, value):
        raise AttributeError("ComposedLayout is immutable")

    @property
    def shape(self):
        return self.inner.shape

    @property
    def stride(self):
        return self.inner.stride

    @property
    def layout(self):
        return self.inner

    def size(self):
        return self.inner.size()

    def cosize(self):
        return _cosize(self.inner)

    def __eq__(self, other):
        if not isinstance(other, ComposedLayout):
            return NotImplemented
        return (self.outer, self.offset, self.inner) == (other.outer, other.offset, other.inner)

    def __hash__(self):
        return self._hash

    def __str__(self):
        return f"{self.outer} o {self.offset} o {self.inner}"

    def __repr__(self):
        return f"ComposedLayout({self.outer!r}, {self.offset}, {self.inner!r})"

    def _with(self, inner, extra_offset=0):
        return ComposedLayout(self.outer, self.offset + extra_offset, inner)

    def __call__(self, *args):
        crd = args[0] if len(args) == 1 else tuple(args)
        if isinstance(crd, list):
            crd = tuple(crd)
        if _has_slot(crd):
            return self.slice_and_offset(crd)[0]
        return self.outer(self.offset + self.inner(crd))

    def slice_and_offset(self, crd):
        sub, off = slice_and_offset(crd, self.inner)
        return self._with(sub, off), 0

    def __getitem__(self, i):
        return self._with(self.inner[i])

    def __iter__(self):
        for m in self.inner:
            yield self._with(m)

    def with_layout(self, inner):
        """``outer o offset o inner`` with another inner layout: the algebra's protocol
        (composition, divides, products and ``tile_to_shape`` act on :attr:`layout`)."""
        return self._with(inner)

    def coalesce(self, profile=None):
        from .algebra import coalesce

        return self._with(coalesce(self.inner, profile))

    def upcast(self, n):
        """``upcast(self, n)``: the inner layout upcast, the swizzle's base moved down by log2(n)."""
        from .algebra import upcast

        if not isinstance(self.outer, Swizzle):
            raise LayoutError(f"upcast: unsupported composed layout {self}")
        k = _log2(n, "upcast")
        sw = self.outer
        if sw.base < k or self.offset % n:
            raise LayoutError(f"upcast: swizzle {sw} with offset {self.offset} cannot be grouped by {n}")
        return ComposedLayout(Swizzle(sw.bits, sw.base - k, sw.shift), self.offset // n, upcast(self.inner, n))

    def downcast(self, n):
        """``downcast(self, n)``: the inner layout downcast, the swizzle's base moved up by log2(n)."""
        from .algebra import downcast

        if not isinstance(self.outer, Swizzle):
            raise LayoutError(f"downcast: unsupported composed layout {self}")
        k = _log2(n, "downcast")
        sw = self.outer
        return ComposedLayout(Swizzle(sw.bits, sw.base + k, sw.shift), self.offset * n, downcast(self.inner, n))

    def _repr_svg_(self):
        from .draw import svg_of

        return svg_of(self)


def make_composed_layout(outer, offset, inner):
    """``outer o offset o inner`` (argument order as CuTe's ``make_composed_layout``)."""
    return ComposedLayout(outer, offset, inner)
