"""numba types for layouts, tensors, tiled copies and tiled MMAs in device code.

Every static fact (shape, stride, swizzle, element type, the tiled copy or MMA) is part of
the numba *type*, so numba specialises a kernel on it and the index arithmetic is folded
when the kernel is compiled.  Only run-time values are data:

* :class:`TensorType` -- ``{ptr, off}``: a pointer (generic address space) and a run-time
  element offset; ``element(c) == ptr[swizzle(off + layout(c))]``.  A swizzled tensor
  also carries ``soff == swizzle(off)``, updated by XORs while its type knows the offset's
  bits, so that no access swizzles the run-time offset again.  The swizzle acts on the
  whole offset, as CuTe's swizzle pointers do, so slicing a swizzled tensor keeps it exact.
  A layout with run-time extents or strides (:mod:`codegen.cute.dynamic`) adds ``dyn``,
  their values, one per slot of the type's ``dyn``.
* :class:`CoordTensorType` -- ``{off}``: a run-time coordinate per mode (identity tensors),
  and ``dyn`` as above.
* :class:`DynLayoutType` -- ``{dyn}``: a layout made in the kernel from run-time integers.
* :class:`AssumedIntType` -- an int64 the kernel promised is a multiple of ``divby``.
* :class:`GmemPtrType` -- ``make_ptr``: a global address as a typed pointer, promised to be
  aligned to ``align`` bytes.
* :class:`ElementKindType` -- ``cute.bfloat16`` given for a dtype: tensors of it hold the
  bits in ``dtype`` (uint16) and carry ``element`` ("bf16"), so that their scalar reads and
  writes convert from and to float32.
* :class:`ThrCopyType`, :class:`ThrMMAType` -- ``{thr}``: the thread index of a slice.
* :class:`LayoutType`, :class:`TiledCopyType`, :class:`TiledMMAType` -- no data at all:
  the host object itself is the type's parameter.

>>> from layoutalg import Layout
>>> t = TensorType(types.float32, "smem", None, Layout((4, 8)))
>>> t.name
'Tensor[float32,smem,(4,8):(1,4)]'
>>> TensorType(types.uint16, "gmem", None, Layout(8), element="bf16").describe()
'gmem bfloat16 tensor 8:1'
"""

from __future__ import annotations

from numba.cuda import types
from numba.cuda.datamodel import models
from numba.cuda.extending import register_model, typeof_impl

from layoutalg import ComposedLayout, Layout, Swizzle, TiledCopy, TiledMMA

from .api import ELEMENT_KINDS, ElementKind
from .atom_plan import ALIGN_ANY
from .dynamic import describe as _describe_layout

__all__ = [
    "LayoutType", "TensorType", "CoordTensorType", "TiledCopyType", "TiledMMAType",
    "ThrCopyType", "ThrMMAType", "MEMORY_SPACES", "ALIGN_ZERO", "DynLayoutType", "AssumedIntType",
    "GmemPtrType", "ElementKindType",
]

#: Where a tensor's elements live: "gmem" (an array argument, or any array passed to
#: ``make_tensor``), "smem" (``make_shared_tensor``), "rmem" (a register fragment).
MEMORY_SPACES = ("gmem", "smem", "rmem")


class LayoutType(types.Dummy):
    """A ``Layout`` or ``ComposedLayout`` used as a compile-time constant."""

    def __init__(self, layout):
        self.layout = layout
        super().__init__(name=f"Layout[{layout}]")

    @property
    def key(self):
        return self.layout


#: ``TensorType.align`` of a tensor whose run-time offset is 0 (a fresh fragment or shared tensor).
ALIGN_ZERO = ALIGN_ANY

#: ``with_layout``'s default for ``bits``: keep the tensor's.
KEEP = object()


class TensorType(types.Type):
    """A tensor over memory: element type, memory space, swizzle (or None) and layout.

    ``align``: the run-time offset is known to be a multiple of it (in elements); it lets
    ``gemm`` and ``copy`` move two 16-bit register values as one 32-bit word.

    ``bits`` (swizzled tensors only; None: unknown): every bit the run-time offset can have,
    the OR of the values its parts take with their indices in range (the thread of a
    partition, a stage index).  A constant offset with none of these bits then adds
    without carries, and the swizzle, linear over XOR, splits: ``sw(off + c) == sw(off) ^
    sw(c)``, so an access costs an XOR or an add, not a swizzle (:func:`swizzled_offset`).

    ``element``: None, or the name of an :class:`~codegen.cute.api.ElementKind` ("bf16")
    whose bits ``dtype`` holds: an element reads as its float32 value and a float32 written
    is rounded to it; copies move the bits.
    """

    def __init__(self, dtype, space, swizzle, layout, align=1, dyn=(), bits=None, element=None):
        if space not in MEMORY_SPACES:
            raise ValueError(f"TensorType: memory space {space!r} not in {MEMORY_SPACES}")
        if not isinstance(layout, Layout):
            raise TypeError(f"TensorType: layout must be a Layout, got {layout!r}")
        self.dtype = dtype
        self.space = space
        self.swizzle = swizzle if isinstance(swizzle, Swizzle) and swizzle.bits else None
        self.layout = layout
        self.align = int(align)
        self.dyn = tuple(dyn)
        self.bits = int(bits) if bits is not None and self.swizzle is not None else None
        self.element = _element_name(element)
        sw = f"{self.swizzle} o " if self.swizzle is not None else ""
        al = f",align={self.align}" if self.align != 1 else ""
        dy = f",dyn={_slots_name(self.dyn)}" if self.dyn else ""
        bi = f",bits={self.bits:#x}" if self.bits is not None else ""
        super().__init__(name=f"Tensor[{_dtype_name(dtype, self.element)},{space},{sw}{layout}{al}{dy}{bi}]")

    @property
    def key(self):
        return (self.dtype, self.space, self.swizzle, self.layout, self.align, self.dyn, self.bits, self.element)

    def _base(self):
        return (self.dtype, self.space, self.swizzle, self.layout, self.dyn, self.element)

    @property
    def value_type(self):
        """The numba type of an element's value: ``dtype``, or float32 for an ``element`` kind."""
        return self.dtype if self.element is None else types.float32

    @property
    def dtype_name(self):
        """``dtype``'s name, or the element kind's numpy name ("bfloat16")."""
        return ELEMENT_KINDS[self.element].numpy if self.element is not None else str(self.dtype)

    def unify(self, typingctx, other):
        """Two values of one tensor that differ only in what is known of the run-time offset
        (a loop variable assigned a stage 0 slice, then a stage ``s`` one): the weaker facts."""
        if isinstance(other, TensorType) and other._base() == self._base():
            from math import gcd

            bits = None if self.bits is None or other.bits is None else self.bits | other.bits
            return TensorType(self.dtype, self.space, self.swizzle, self.layout, gcd(self.align, other.align),
                              self.dyn, bits, self.element)
        return None

    def can_convert_to(self, typingctx, other):
        if isinstance(other, TensorType) and other._base() == self._base() and self.align % other.align == 0 and (
                other.bits is None or (self.bits is not None and self.bits & ~other.bits == 0)):
            from numba.cuda.typing.context import Conversion

            return Conversion.safe
        return None

    def with_layout(self, layout, align=None, dyn=None, bits=KEEP):
        """The same tensor with another layout; ``align``, ``dyn`` and ``bits`` kept unless
        given (an operation that adds to the run-time offset passes the new ones)."""
        return TensorType(self.dtype, self.space, self.swizzle, layout,
                          self.align if align is None else align, self.dyn if dyn is None else dyn,
                          self.bits if bits is KEEP else bits, self.element)

    def describe(self):
        """The tensor as a user wrote it: ``smem float16 Sw<3,3,3> o (128,32):(32,1)``."""
        sw = f"{self.swizzle} o " if self.swizzle is not None else ""
        return f"{self.space} {self.dtype_name} tensor {sw}{_describe_layout(self.layout, self.dyn)}"


def _element_name(element):
    if element is not None and element not in ELEMENT_KINDS:
        raise ValueError(f"element kind {element!r} is not one of {', '.join(ELEMENT_KINDS)}")
    return element


def _dtype_name(dtype, element):
    return f"{ELEMENT_KINDS[element].numpy}({dtype})" if element is not None else str(dtype)


def _slots_name(dyn):
    return "(" + ",".join(f"{d.kind}/{d.divby}" if d.divby != 1 else d.kind for d in dyn) + ")"


class CoordTensorType(types.Type):
    """An identity (coordinate) tensor: elements are ``rank``-tuples of int64."""

    def __init__(self, layout, rank, dyn=()):
        self.layout = layout
        self.rank = rank
        self.dyn = tuple(dyn)
        dy = f",dyn={_slots_name(self.dyn)}" if self.dyn else ""
        super().__init__(name=f"CoordTensor[{rank},{layout}{dy}]")

    @property
    def key(self):
        return (self.layout, self.rank, self.dyn)

    def with_layout(self, layout, align=None, dyn=None, bits=None):
        return CoordTensorType(layout, self.rank, self.dyn if dyn is None else dyn)

    def describe(self):
        return f"identity tensor {_describe_layout(self.layout, self.dyn)}"


class DynLayoutType(types.Type):
    """A layout made in a kernel from run-time integers: the placeholders' layout and the
    slots (:mod:`codegen.cute.dynamic`); its data is the slots' values."""

    def __init__(self, layout, dyn):
        self.layout = layout
        self.dyn = tuple(dyn)
        super().__init__(name=f"DynLayout[{layout},{_slots_name(self.dyn)}]")

    @property
    def key(self):
        return (self.layout, self.dyn)


class AssumedIntType(types.Type):
    """``assume(x, divby)``: an integer the kernel promises is a multiple of ``divby``."""

    def __init__(self, divby):
        self.divby = int(divby)
        super().__init__(name=f"AssumedInt[{self.divby}]")


class GmemPtrType(types.CPointer):
    """``make_ptr(dtype, address, align)``: a pointer to ``dtype`` elements in global memory,
    ``align`` bytes aligned (a promise, as CuTe DSL's ``assumed_align``); ``element``: as
    :class:`TensorType`'s, which ``make_tensor`` passes on."""

    def __init__(self, dtype, align=16, element=None):
        self.align = int(align)
        self.element = _element_name(element)
        super().__init__(dtype)
        self.name = f"GmemPtr[{_dtype_name(dtype, self.element)},align={self.align}]"

    @property
    def key(self):
        return (self.dtype, self.align, self.element)


class ElementKindType(types.Dummy):
    """An :class:`~codegen.cute.api.ElementKind` (``cute.bfloat16``) as a kernel's constant:
    ``dtype``, its storage type, and ``element``, its name."""

    def __init__(self, kind):
        self.element = kind.name
        self.dtype = getattr(types, kind.storage)
        super().__init__(name=f"ElementKind[{kind.name}]")

    @property
    def key(self):
        return self.element


class TiledCopyType(types.Dummy):
    def __init__(self, tiled_copy):
        self.tiled_copy = tiled_copy
        super().__init__(name=f"TiledCopy[{tiled_copy.atom.name},{tiled_copy.atom.dtype},"
                              f"{tiled_copy.layout_tv},{tiled_copy.tiler_mn}]")


class TiledMMAType(types.Dummy):
    def __init__(self, tiled_mma):
        self.tiled_mma = tiled_mma
        super().__init__(name=f"TiledMMA[{tiled_mma.atom.name},{tiled_mma.thr_layout_vmnk},"
                              f"{tiled_mma.tile_size_mnk},{tiled_mma.permutation}]")


class ThrCopyType(types.Type):
    def __init__(self, tiled_copy):
        self.tiled_copy = tiled_copy
        super().__init__(name=f"ThrCopy[{TiledCopyType(tiled_copy).name}]")


class ThrMMAType(types.Type):
    def __init__(self, tiled_mma):
        self.tiled_mma = tiled_mma
        super().__init__(name=f"ThrMMA[{TiledMMAType(tiled_mma).name}]")


# ---- data models -----------------------------------------------------------------------

def _dyn_member(fe_type):
    return [("dyn", types.UniTuple(types.int64, len(fe_type.dyn)))] if fe_type.dyn else []


@register_model(TensorType)
class _TensorModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        members = [("ptr", types.CPointer(fe_type.dtype)), ("off", types.int64)] + _dyn_member(fe_type)
        if fe_type.swizzle is not None:         # swizzle(off), kept while the type knows its bits
            members.append(("soff", types.int64))
        super().__init__(dmm, fe_type, members)


@register_model(CoordTensorType)
class _CoordTensorModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("off", types.UniTuple(types.int64, fe_type.rank))] + _dyn_member(fe_type))


@register_model(DynLayoutType)
class _DynLayoutModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _dyn_member(fe_type))


@register_model(AssumedIntType)
class _AssumedIntModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        from llvmlite import ir

        super().__init__(dmm, fe_type, ir.IntType(64))


@register_model(GmemPtrType)
class _GmemPtrModel(models.PointerModel):
    pass


@register_model(ThrCopyType)
@register_model(ThrMMAType)
class _ThrModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("thr", types.int64)])


for _t in (LayoutType, TiledCopyType, TiledMMAType, ElementKindType):
    register_model(_t)(models.OpaqueModel)


# ---- host objects as kernel constants ----------------------------------------------------

@typeof_impl.register(Layout)
@typeof_impl.register(ComposedLayout)
def _typeof_layout(val, c):
    return LayoutType(val)


@typeof_impl.register(ElementKind)
def _typeof_element_kind(val, c):
    return ElementKindType(val)


@typeof_impl.register(TiledCopy)
def _typeof_tiled_copy(val, c):
    return TiledCopyType(val)


@typeof_impl.register(TiledMMA)
def _typeof_tiled_mma(val, c):
    return TiledMMAType(val)
