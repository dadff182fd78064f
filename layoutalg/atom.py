"""``MMAAtom`` and ``CopyAtom``: an instruction's table entry, typed.

An MMA atom's layouts map (thread, value) to a column-major index into its
``MxK`` (A), ``NxK`` (B) and ``MxN`` (C) tiles.  A copy atom's tables are in
bits; ``CopyAtom(op, dtype)`` recasts them to elements of ``dtype``.

>>> atom = MMAAtom("SM80_16x8x16_F32F16F16F32_TN")
>>> atom.shape_mnk
(16, 8, 16)
>>> str(atom.layout_c)                      # (T32,V4) -> (M16,N8)
'((4,8),(2,2)):((32,1),(16,8))'
"""

from .algebra import recast_layout, type_bits
from .errors import LayoutError, LayoutTypeError
from .layout import Layout, size

__all__ = ["MMAAtom", "CopyAtom", "lookup_op"]


def lookup_op(op, kind):
    """A table entry from itself or its name (``mma_atoms.get``).

    The tables (``mma_atoms``) sit below this module: they depend only on the core
    (``Layout``), and this module looks names up in them, never the other way round.
    The import is deferred to the first lookup by name because the tables import
    ``Layout`` through the ``layoutalg`` package, whose ``__init__`` imports this module.
    """
    if isinstance(op, str):
        from mma_atoms.registry import get, names

        try:
            return get(op)
        except LookupError as e:
            close = getattr(e, "suggestions", None)
            if close is None:
                import difflib

                close = difflib.get_close_matches(op, names(), n=5, cutoff=0.6)
            hint = f"; close matches: {', '.join(close)}" if close else "; mma_atoms.names() lists them"
            raise LayoutError(f"{kind}: no atom named {op!r}{hint}") from None
    if not hasattr(op, "name"):
        raise LayoutTypeError(f"{kind}: expected an atom table entry or its name, got {op!r}")
    return op


class MMAAtom:
    """An MMA instruction as the algebra sees it.

    Attributes: ``op`` (the table entry), ``shape_mnk``, ``thr_id`` (logical thread ->
    lane), ``layout_a`` ``# (T,V) -> (M,K)``, ``layout_b`` ``# (T,V) -> (N,K)``,
    ``layout_c`` ``# (T,V) -> (M,N)``, and the element types.
    """

    def __init__(self, op):
        op = lookup_op(op, "MMAAtom")
        for attr in ("shape_mnk", "thr_id", "layout_a", "layout_b", "layout_c"):
            if not hasattr(op, attr):
                raise LayoutTypeError(f"MMAAtom: {getattr(op, 'name', op)!r} is not an MMA entry (no {attr})")
        self.op = op
        self.name = op.name
        self.shape_mnk = tuple(op.shape_mnk)
        self.thr_id = op.thr_id
        self.layout_a = op.layout_a
        self.layout_b = op.layout_b
        self.layout_c = op.layout_c
        self.a_type = getattr(op, "a_type", None)
        self.b_type = getattr(op, "b_type", None)
        self.c_type = getattr(op, "c_type", None)
        self.d_type = getattr(op, "d_type", self.c_type)

    @property
    def num_threads(self):
        return size(self.thr_id)

    def __repr__(self):
        return f"MMAAtom({self.name})"


class CopyAtom:
    """A copy instruction for elements of ``dtype``.

    ``src_layout``/``dst_layout``/``ref_layout`` are the table's (thread, bit) layouts
    recast to (thread, value) layouts of ``dtype`` elements.
    """

    def __init__(self, op, dtype):
        op = lookup_op(op, "CopyAtom")
        for attr in ("thr_id", "src_layout", "dst_layout", "ref_layout"):
            if not hasattr(op, attr):
                raise LayoutTypeError(f"CopyAtom: {getattr(op, 'name', op)!r} is not a copy entry (no {attr})")
        self.op = op
        self.name = op.name
        self.dtype = dtype
        self.value_bits = type_bits(dtype)
        self.thr_id = op.thr_id
        try:
            self.src_layout = recast_layout(op.src_layout, 1, self.value_bits)   # (T,V) -> src value
            self.dst_layout = recast_layout(op.dst_layout, 1, self.value_bits)   # (T,V) -> dst value
            self.ref_layout = recast_layout(op.ref_layout, 1, self.value_bits)   # (T,V) -> ref value
        except LayoutError as e:
            raise LayoutError(
                f"CopyAtom: {op.name} cannot move {dtype} elements ({self.value_bits} bits): {e}") from None
        # CuTe: static_assert(size<0>(ValLayoutSrc{}) == size(ThrID{}), "CopyOperation is not valid for Src of ValType.")
        for what, lay, bits in (("src", self.src_layout, op.src_layout), ("dst", self.dst_layout, op.dst_layout),
                                ("ref", self.ref_layout, op.ref_layout)):
            if size(lay[0]) != size(self.thr_id):
                raise LayoutError(
                    f"CopyAtom: {op.name} is not valid for {dtype} ({self.value_bits} bits): its {what} "
                    f"layout {bits} (bits) recast to {lay} has {size(lay[0])} threads, not {size(self.thr_id)}")

    @property
    def num_threads(self):
        return size(self.ref_layout[0])

    @property
    def num_values(self):
        return size(self.ref_layout[1])

    @property
    def vector_bits(self):
        """Bits each thread moves per instruction (the copy's vector width)."""
        return self.num_values * self.value_bits

    def __repr__(self):
        return f"CopyAtom({self.name}, {self.dtype})"
