"""Typing and lowering of tensors in device code: make them, slice them, read and write them.

Each template works out the result's *type* on the host with the layout algebra (the
sliced, tiled or partitioned layout), and the lowering emits only the run-time part of the
offset (:mod:`codegen.cute.offsets`).  Bad input raises a ``TypingError`` that names the
call, the layout and the coordinate while the kernel compiles.
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.core.errors import TypingError
from numba.cuda.cudadecl import registry as _treg
from numba.cuda.cudaimpl import registry as _ireg
from numba.cuda.typing.templates import AbstractTemplate, AttributeTemplate, bound_function, signature

import layoutalg as la
from layoutalg.inttuple import flat_tuple
from layoutalg import ComposedLayout, Layout, Swizzle

from . import api
from .checks import check_divides, shared_cosize
from .dynamic import (
    STATIC_LIMIT, DynSlot, has_dynamic_shape, linear_divisor, shape_placeholder, stride_placeholder,
)
from .offsets import (
    CuteError, I64, Leaf, add_offset, as_ir, const64, dyn_linear, dyn_shape, emit_swizzle, emit_terms, leaves, slice_spec,
    spec_of_type,
)
from .types import (
    ALIGN_ZERO, AssumedIntType, CoordTensorType, DynLayoutType, ElementKindType, GmemPtrType, LayoutType, TensorType,
)

__all__ = ["typing_error", "tensor_proxy", "make_tensor_value", "element_pointer", "swizzled_offset", "lower_slice",
           "load_element", "stored_value", "bf16_rn", "SHARED_ALIGN"]

#: Alignment in bytes of shared tensors from ``make_shared_tensor`` (ldmatrix rows, cp.async
#: vectors and 128-byte swizzle atoms need at most this).
SHARED_ALIGN = 128

ANY_TENSOR = (TensorType, CoordTensorType)


def typing_error(op, err):
    """A :class:`CuteError` for a user's mistake, naming the call; keeps numba's own errors.

    Not a numba error on purpose: numba lets other exceptions out of type inference as
    they are, so the kernel's author reads this message, not a list of rejected overloads.
    """
    if isinstance(err, TypingError):
        return err
    msg = str(err)
    if not msg.startswith(op):
        msg = f"{op}: {msg}"
    return CuteError(msg)


def _typed(op):
    """Decorate a template's ``generic`` so that layout errors become clear ``TypingError``s."""
    def deco(fn):
        def generic(self, args, kws):
            try:
                return fn(self, args, kws)
            except (la.LayoutError, CuteError, ValueError) as e:
                raise typing_error(op, e) from None
        return generic
    return deco


# ---- values ----------------------------------------------------------------------------

def tensor_proxy(context, builder, ty, val=None):
    return cgutils.create_struct_proxy(ty)(context, builder, value=val)


def make_tensor_value(context, builder, ty, ptr=None, off=None, dyn=(), soff=None):
    """A tensor value of type ``ty`` from a pointer, an offset (an int or i64 IR) and the
    values of its run-time extents and strides (i64 IR, one per slot of ``ty.dyn``);
    ``soff``: ``swizzle(off)`` where known (a swizzled tensor; computed from ``off`` if None)."""
    t = cgutils.create_struct_proxy(ty)(context, builder)
    if isinstance(ty, CoordTensorType):
        offs = off if off is not None else [0] * ty.rank
        t.off = context.make_tuple(builder, types.UniTuple(types.int64, ty.rank), [as_ir(o) for o in offs])
    else:
        t.ptr = ptr
        t.off = as_ir(off if off is not None else 0)
        if ty.swizzle is not None:
            t.soff = as_ir(soff if soff is not None else emit_swizzle(builder, ty.swizzle, off or 0))
    if ty.dyn:
        t.dyn = context.make_tuple(builder, types.UniTuple(types.int64, len(ty.dyn)), [as_ir(v) for v in dyn])
    return t._getvalue()


def dyn_values(builder, ty, struct):
    """The i64 values of the run-time extents and strides of a tensor or dynamic layout."""
    return [builder.extract_value(struct.dyn, i) for i in range(len(ty.dyn))] if ty.dyn else []


def element_pointer(context, builder, ty, ptr, off, const=0, soff=None):
    """Pointer to the element at (unswizzled) offset ``off + const`` of a tensor with base
    ``ptr`` (``off``: the tensor's run-time offset, or a sum with it; ``const``: an int;
    ``soff``: ``swizzle(off)`` where the tensor carries it)."""
    return builder.gep(ptr, [as_ir(swizzled_offset(builder, ty.swizzle, ty.bits, off, const, soff))])


def swizzled_offset(builder, sw, bits, off, const=0, soff=None):
    """``sw(off + const)``: ``off`` a run-time offset (IR, i32 or i64, or an int) whose bits
    lie in ``bits`` (None: unknown), ``const`` an int, ``soff`` ``sw(off)`` if known.  Where
    ``const`` shares no bit with ``off``, ``sw(off) ^ sw(const)``, with ``sw(off)`` computed
    once for every access of a tensor: the part of ``sw(const)`` that ``sw(off)`` can have is
    XORed, the rest added (it folds into the address).

    >>> from layoutalg import Swizzle
    >>> sw = Swizzle(3, 3, 3)
    >>> all(swizzled_offset(None, sw, 0b111111000, x, c) == sw(x + c)
    ...     for x in range(0, 512, 8) for c in (0, 16, 2048, 2048 + 16, 3, 4096 + 7))
    True
    """
    if sw is None:
        return add_offset(builder, off, const)
    if bits is None or not isinstance(const, int) or const < 0 or bits & const:
        return emit_swizzle(builder, sw, add_offset(builder, off, const))
    base = soff if soff is not None else emit_swizzle(builder, sw, off)
    reach = bits | ((bits & sw.yyy_mask) >> sw.shift if sw.shift >= 0 else (bits & sw.yyy_mask) << -sw.shift)
    sc = sw(const)
    x, y = sc & reach, sc & ~reach
    if x:
        base = base ^ x if isinstance(base, int) else builder.xor(base, ir.Constant(base.type, x))
    if not y:
        return base
    return base + y if isinstance(base, int) else builder.add(base, ir.Constant(base.type, y))


def lower_slice(context, builder, in_ty, in_val, out_ty, terms, values, new_dyn=(), in_range=True):
    """The value of ``out_ty`` (a tensor, or an element) at ``in_val``'s offset plus ``terms``;
    ``new_dyn``: values of the run-time extents the result adds (``local_tile``'s tile counts);
    ``in_range`` False: run-time indices may lie outside their modes (``domain_offset``), so
    nothing moves into the pointer."""
    t = tensor_proxy(context, builder, in_ty, in_val)
    dyn = dyn_values(builder, in_ty, t) + list(new_dyn)
    if isinstance(in_ty, CoordTensorType):
        base = [builder.extract_value(t.off, i) for i in range(in_ty.rank)]
        rel = emit_terms(builder, terms, values, in_ty.rank, dyn)
        offs = [add_offset(builder, b, r) for b, r in zip(base, rel)]
        if isinstance(out_ty, CoordTensorType):
            return make_tensor_value(context, builder, out_ty, off=offs, dyn=dyn[:len(out_ty.dyn)])
        return context.make_tuple(builder, out_ty, [as_ir(o) for o in offs])
    if isinstance(out_ty, TensorType):
        kept, moved = pointer_terms(in_ty, out_ty.layout, terms) if in_range else (terms, ())
        ptr = t.ptr
        if moved:                               # a stage's base: into the pointer (pointer_terms)
            ptr = builder.gep(ptr, [as_ir(emit_terms(builder, moved, values, None, dyn))])
        rel = emit_terms(builder, kept, values, None, dyn)
        off, soff = add_offset(builder, t.off, rel), None
        if in_ty.bits is not None and out_ty.bits is not None:
            # no bit in common (offset_bits): the sum is an OR and, the swizzle being linear
            # over XOR, swizzle(off + rel) == swizzle(off) ^ swizzle(rel): once the loops are
            # unrolled, rel is a constant and so is its swizzle
            soff = _xor(builder, t.soff, emit_swizzle(builder, in_ty.swizzle, rel))
        return make_tensor_value(context, builder, out_ty, ptr, off, dyn[:len(out_ty.dyn)], soff)
    return load_element(builder, in_ty, _element_at(context, builder, in_ty, t, terms, values, dyn))


def load_element(builder, ty, ptr):
    """The value of the element at ``ptr`` of a tensor of type ``ty`` (its ``value_type``): a
    bf16 element's float32 value is its bits in the upper half of a float32's."""
    v = builder.load(ptr)
    if ty.element == "bf16":
        i32 = ir.IntType(32)
        v = builder.bitcast(builder.shl(builder.zext(v, i32), ir.Constant(i32, 16)), ir.FloatType())
    return v


def stored_value(context, builder, ty, value, valty):
    """``value`` (of numba type ``valty``) as an element of a tensor of type ``ty`` holds it:
    cast to its ``dtype``, or for a bf16 element cast to float32 and rounded to its bits."""
    if ty.element == "bf16":
        return bf16_rn(builder, context.cast(builder, value, valty, types.float32))
    return context.cast(builder, value, valty, ty.dtype)


def bf16_rn(builder, f32):
    """The bfloat16 bits (i16) of a float32, rounded to nearest even (``cvt.rn.bf16.f32``, one
    instruction from sm_80 on; a NaN stays a NaN)."""
    return builder.asm(ir.FunctionType(ir.IntType(16), [ir.FloatType()]), "cvt.rn.bf16.f32 $0, $1;", "=h,f",
                       [f32], False)


@_ireg.lower_cast(TensorType, TensorType)
def _cast_tensor(context, builder, fromty, toty, val):
    """A tensor to one with weaker facts about its offset (:meth:`TensorType.unify`): the
    same value."""
    return val


def _xor(builder, x, y):
    if isinstance(y, int):
        return x if y == 0 else builder.xor(as_ir(x), const64(y))
    return builder.xor(as_ir(x), y)


def _element_at(context, builder, ty, t, terms, values, dyn):
    """Pointer to the element at ``t``'s offset plus ``terms``: the run-time terms added to
    the offset, the constant ones kept apart for the swizzle's split (:func:`swizzled_offset`)."""
    from .offsets import host_offset

    if ty.bits is not None:
        fixed = [x for x in terms if x.leaf.value is not None]
        moving = [x for x in terms if x.leaf.value is None]
        const, bits = host_offset(fixed), offset_bits(ty.bits, moving)
        if bits is not None and isinstance(const, int) and 0 <= const < STATIC_LIMIT:
            rel = emit_terms(builder, moving, values, None, dyn)
            off = add_offset(builder, t.off, rel)
            soff = _xor(builder, t.soff, emit_swizzle(builder, ty.swizzle, rel))
            return builder.gep(t.ptr, [as_ir(swizzled_offset(builder, ty.swizzle, bits, off, const, soff))])
    off = add_offset(builder, t.off, emit_terms(builder, terms, values, None, dyn))
    return element_pointer(context, builder, ty, t.ptr, off)


def _element_type(ty):
    if isinstance(ty, CoordTensorType):
        return types.UniTuple(types.int64, ty.rank)
    return ty.value_type


def _sliced_type(ty, sub, terms=(), dyn=None):
    """The element type, or the sub-tensor's type (with the alignment the terms keep and
    the run-time extents and strides, ``dyn``, when the slicing added some)."""
    if sub is None:
        return _element_type(ty)
    if isinstance(ty, CoordTensorType):
        return ty.with_layout(sub, dyn=dyn)
    kept, _ = pointer_terms(ty, sub, terms)
    return ty.with_layout(sub, offset_alignment(ty.align, terms), dyn, offset_bits(ty.bits, kept))


def _layout_max(layout):
    """The largest offset of ``layout`` (static, non-negative strides), else None."""
    top = 0
    for e, d in zip(flat_tuple(layout.shape), flat_tuple(layout.stride)):
        if not isinstance(e, int) or not isinstance(d, int) or d < 0 or e >= STATIC_LIMIT or d >= STATIC_LIMIT:
            return None
        top += (e - 1) * d
    return top


def pointer_terms(ty, sub, terms):
    """``(kept, moved)``: the terms of a slice of a swizzled tensor that stay in its offset,
    and the run-time ones that move into its pointer, as the generated kernels' stage bases do.

    A run-time part ``t`` (a stage index's offset) moves when the swizzle neither reads nor
    writes its bits and every offset the sub-tensor ``sub`` can reach stays below its lowest
    bit: then ``sw(x + t) == sw(x) + t`` for each such ``x``, and the swizzle of the
    thread's part is computed once, not again for each stage.  Otherwise nothing moves.
    """
    moving = [t for t in terms if t.leaf.value is None]
    if (not isinstance(ty, TensorType) or ty.swizzle is None or ty.bits is None or ty.dyn or sub is None
            or not moving):
        return terms, ()
    m = offset_bits(0, moving)
    if not m or m & (ty.swizzle.yyy_mask | ty.swizzle.zzz_mask):
        return terms, ()
    kept = [t for t in terms if t.leaf.value is not None]
    bits, top = offset_bits(ty.bits, kept), _layout_max(sub)
    low = m & -m
    if bits is None or top is None or bits + top >= low or low * ty.dtype.bitwidth < 128:
        return terms, ()                        # (a moved pointer stays 16-byte aligned)
    return kept, moving


#: The most values a run-time index's mode may take for :func:`offset_bits` to list them.
_BITS_SCAN = 1 << 16


def offset_bits(bits, terms):
    """``TensorType.bits`` after adding ``terms`` to a run-time offset of ``bits`` (None:
    unknown): the OR of both where they share no bit (the sum has no carries), else None.

    A run-time index takes the values of its mode's range: a partition's thread index below
    the tiled copy's or MMA's thread count, a stage index below the stage count.  The host
    algebra, and so the simulator, refuses an index out of range; the GPU relies on it here.

    >>> from .offsets import Leaf, Term
    >>> offset_bits(0, [Term(Leaf(slot=0), (8, 4), (8, 1024))]) == 0b111000 | 0b11 << 10   # a thread part
    True
    >>> offset_bits(3128, [Term(Leaf(value=2), 4, 64)]), offset_bits(3128, [Term(Leaf(value=1), 4, 8)])
    (3256, None)
    """
    from .offsets import host_offset

    if bits is None:
        return None
    for t in terms:
        if t.leaf.value is not None:
            vals = (host_offset([t]),)
        else:
            try:
                lay = la.Layout(t.shape, t.stride)
                n = la.size(lay)
            except (la.LayoutError, TypeError):
                return None
            if not isinstance(n, int) or n > _BITS_SCAN:
                return None
            vals = [lay(i) for i in range(n)]
        m = 0
        for v in vals:
            if not isinstance(v, int) or v < 0 or v >= STATIC_LIMIT:
                return None                     # a run-time stride, or a negative offset
            m |= v
        if m & bits:
            return None
        bits |= m
    return bits


def offset_alignment(align, terms):
    """What the run-time offset stays a multiple of after adding ``terms``."""
    from math import gcd

    from .offsets import _mode_leaves, host_offset

    for t in terms:
        if t.leaf.value is not None:
            align = gcd(align, linear_divisor(host_offset([t])))
        else:
            leaves_ = _mode_leaves(t.shape, t.stride)
            # an assumed divisor of the index carries to the offset of a mode of one extent
            divby = t.leaf.divby if len(leaves_) == 1 else 1
            for s, _, d in leaves_:
                if s != 1 and isinstance(d, int):
                    align = gcd(align, divby * linear_divisor(d))
    return align or ALIGN_ZERO


def _literal_ints(op, ty, what):
    """A compile-time int or (nested) tuple of ints (and None) from a literal numba type."""
    if isinstance(ty, types.IntegerLiteral):
        return int(ty.literal_value)
    if isinstance(ty, types.NoneType):
        return None
    if isinstance(ty, types.BaseTuple):
        return tuple(_literal_ints(op, t, what) for t in ty.types)
    if isinstance(ty, LayoutType):
        return ty.layout
    raise CuteError(f"{op}: {what} must be a compile-time constant (ints in the kernel's source "
                    f"or a global), got {ty}" + (
                        "; numba keeps the values of a global tuple only when none of its entries is "
                        "None: write this one in the kernel's source" if isinstance(ty, types.Integer) else ""))


def _projection(op, ty):
    """A projection (CuTe's ``Step<_1,X,...>``): which modes it keeps.  Only None or not
    matters, so a global such as ``(1, None)``, whose ints numba types as plain integers
    (not literals, because of the None), is read as well as one written in the kernel."""
    if isinstance(ty, types.NoneType):
        return None
    if isinstance(ty, types.Integer):
        return int(ty.literal_value) if isinstance(ty, types.IntegerLiteral) else 1
    if isinstance(ty, types.BaseTuple):
        return tuple(_projection(op, t) for t in ty.types)
    raise CuteError(f"{op}: the projection must be a tuple of ints and None (a constant), got {ty}")


def _layout_of(op, ty):
    if not isinstance(ty, LayoutType):
        raise CuteError(f"{op}: expected a Layout or ComposedLayout constant, got {ty}")
    lay = ty.layout
    if isinstance(lay, ComposedLayout):
        if not isinstance(lay.outer, Swizzle):
            raise CuteError(f"{op}: only swizzle-composed layouts can index memory, got {lay}")
        return lay.outer, lay.offset, lay.inner
    return None, 0, lay


def _dtype_of(op, ty):
    """``(dtype, element)``: the numba type elements are stored as, and the element kind
    (None, or "bf16" for ``cute.bfloat16``, stored as uint16)."""
    if isinstance(ty, types.NumberClass):
        return ty.instance_type, None
    if isinstance(ty, types.DType):
        return ty.dtype, None
    if isinstance(ty, ElementKindType):
        return ty.dtype, ty.element
    raise CuteError(f"{op}: expected an element type (e.g. numpy.float16 or cute.bfloat16), got {ty}")


# ---- make_tensor / make_shared_tensor / make_fragment_like / make_identity_tensor -----------

@_treg.register_global(api.make_ptr)
class _MakePtr(AbstractTemplate):
    prefer_literal = True
    @_typed("make_ptr")
    def generic(self, args, kws):
        if len(args) not in (2, 3) or not isinstance(args[1], (types.Integer, AssumedIntType)):
            raise CuteError(f"make_ptr: expected (dtype, address[, align]), got {args}")
        dt, element = _dtype_of("make_ptr", args[0])
        align = _literal_ints("make_ptr", args[2], "align") if len(args) == 3 else 16
        if not isinstance(align, int) or align <= 0 or align & (align - 1):
            raise CuteError(f"make_ptr: align must be a power-of-two constant (bytes), got {align!r}")
        if align * 8 < dt.bitwidth:
            raise CuteError(f"make_ptr: align {align} is less than a {dt} element ({dt.bitwidth // 8} bytes)")
        return signature(GmemPtrType(dt, align, element), *args)


@_ireg.lower(api.make_ptr, types.Any, types.Any)
@_ireg.lower(api.make_ptr, types.Any, types.Any, types.Any)
def _lower_make_ptr(context, builder, sig, args):
    addr = leaves(builder, sig.args[1], args[1])[0] if not isinstance(sig.args[1], types.IntegerLiteral) \
        else ir.Constant(I64, sig.args[1].literal_value)
    return builder.inttoptr(addr, context.get_value_type(sig.return_type))


def _base_align(ty):
    """The offset alignment (elements) a tensor over ``ty`` (an array or a pointer) starts with:
    arrays and pointers of 16 bytes or more are taken as allocations are (any vector fits)."""
    if isinstance(ty, GmemPtrType) and ty.align < 16:
        return max(1, ty.align * 8 // ty.dtype.bitwidth)
    return ALIGN_ZERO


@_treg.register_global(api.make_tensor)
class _MakeTensor(AbstractTemplate):
    prefer_literal = True
    @_typed("make_tensor")
    def generic(self, args, kws):
        if len(args) != 2 or not isinstance(args[0], (types.Array, GmemPtrType)):
            raise CuteError(f"make_tensor: expected (array or make_ptr pointer, layout), got {args}")
        base = _base_align(args[0])
        element = getattr(args[0], "element", None)            # a make_ptr of cute.bfloat16
        if isinstance(args[1], DynLayoutType):
            # a layout made in the kernel: run-time extents tile with CuTe's residue (ceil) semantics
            return signature(TensorType(args[0].dtype, "gmem", None, args[1].layout, base, args[1].dyn,
                                        element=element), *args)
        sw, off, inner = _layout_of("make_tensor", args[1])
        return signature(TensorType(args[0].dtype, "gmem", sw, inner, _gcd(base, off), bits=off, element=element),
                         *args)


def _data(context, builder, ty, val):
    """The element pointer of an array or a ``make_ptr`` pointer."""
    if isinstance(ty, GmemPtrType):
        return val
    return context.make_array(ty)(context, builder, val).data


@_ireg.lower(api.make_tensor, types.Array, LayoutType)
@_ireg.lower(api.make_tensor, GmemPtrType, LayoutType)
def _lower_make_tensor(context, builder, sig, args):
    _, off, _ = _layout_of("make_tensor", sig.args[1])
    return make_tensor_value(context, builder, sig.return_type, _data(context, builder, sig.args[0], args[0]), off)


@_ireg.lower(api.make_tensor, types.Array, DynLayoutType)
@_ireg.lower(api.make_tensor, GmemPtrType, DynLayoutType)
def _lower_make_tensor_dyn(context, builder, sig, args):
    lay = cgutils.create_struct_proxy(sig.args[1])(context, builder, value=args[1])
    return make_tensor_value(context, builder, sig.return_type, _data(context, builder, sig.args[0], args[0]), 0,
                             dyn_values(builder, sig.args[1], lay))


# ---- make_layout / assume: layouts of run-time integers ------------------------------------

def _int_leaves(op, ty, what):
    """The leaves of a shape or stride's numba type in order: an int (a literal) or the type
    of a run-time integer."""
    if isinstance(ty, types.IntegerLiteral):
        return int(ty.literal_value)
    if isinstance(ty, (types.Integer, AssumedIntType)):
        return ty
    if isinstance(ty, types.BaseTuple) and len(ty.types):
        return tuple(_int_leaves(op, t, what) for t in ty.types)
    raise CuteError(f"{op}: the {what} must be made of integers and tuples, got {ty}")


def dyn_layout_type(op, shape_ty, stride_ty):
    """The type of ``make_layout(shape, stride)``: a ``LayoutType`` when every integer is a
    compile-time constant, else a :class:`DynLayoutType` with one slot per run-time integer
    (the shape's first, then the stride's, in the order they are written)."""
    slots = []

    def shape_leaf(t):
        if isinstance(t, int):
            if t <= 0:
                raise CuteError(f"{op}: extent {t} must be positive")
            return t
        slots.append(DynSlot("shape", 1, f"d{len(slots)}"))
        return shape_placeholder(len(slots) - 1)

    def stride_leaf(t):
        if isinstance(t, int):
            return t
        divby = t.divby if isinstance(t, AssumedIntType) else 1
        slots.append(DynSlot("stride", divby, f"d{len(slots)}"))
        return stride_placeholder(len(slots) - 1, divby)

    def walk(x, leaf):
        return tuple(walk(y, leaf) for y in x) if isinstance(x, tuple) else leaf(x)

    shape = walk(_int_leaves(op, shape_ty, "shape"), shape_leaf)
    if stride_ty is None:
        if slots:
            raise CuteError(f"{op}: a shape of run-time extents needs explicit strides, "
                            f"e.g. make_layout((M, K), (ldA, 1))")
        return LayoutType(Layout(shape))
    stride = walk(_int_leaves(op, stride_ty, "stride"), stride_leaf)
    try:
        lay = Layout(shape, stride)
    except la.LayoutError as e:
        raise CuteError(f"{op}: {e}") from None
    return DynLayoutType(lay, slots) if slots else LayoutType(lay)


@_treg.register_global(api.make_layout)
class _MakeLayout(AbstractTemplate):
    prefer_literal = True
    @_typed("make_layout")
    def generic(self, args, kws):
        if len(args) not in (1, 2):
            raise CuteError(f"make_layout: expected (shape[, stride]), got {args}")
        return signature(dyn_layout_type("make_layout", args[0], args[1] if len(args) == 2 else None), *args)


def _dyn_leaf_values(builder, ty, val):
    """The run-time leaves of a shape or stride value, with the divisor of assumed ones."""
    out = []

    def go(t, v):
        if isinstance(t, types.IntegerLiteral):
            return
        if isinstance(t, AssumedIntType):
            out.append((v, t.divby))
        elif isinstance(t, types.Integer):
            out.append((leaves(builder, t, v)[0], 1))
        else:
            for i, tt in enumerate(t.types):
                go(tt, builder.extract_value(v, i))

    go(ty, val)
    return out


@_ireg.lower(api.make_layout, types.Any)
@_ireg.lower(api.make_layout, types.Any, types.Any)
def _lower_make_layout(context, builder, sig, args):
    ty = sig.return_type
    if not isinstance(ty, DynLayoutType):
        return context.get_dummy_value()
    vals = [v for t, a in zip(sig.args, args) for v in _dyn_leaf_values(builder, t, a)]
    # a stride slot keeps value / divby (exact: the kernel assumed it), see codegen.cute.dynamic
    dyn = [builder.sdiv(v, ir.Constant(I64, d)) if d != 1 else v for v, d in vals]
    lay = cgutils.create_struct_proxy(ty)(context, builder)
    lay.dyn = context.make_tuple(builder, types.UniTuple(types.int64, len(ty.dyn)), dyn)
    return lay._getvalue()


@_treg.register_global(api.assume)
class _Assume(AbstractTemplate):
    prefer_literal = True
    @_typed("assume")
    def generic(self, args, kws):
        if len(args) != 2 or not isinstance(args[0], types.Integer):
            raise CuteError(f"assume: expected (integer, divby), got {args}")
        d = _literal_ints("assume", args[1], "divby")
        if not isinstance(d, int) or d <= 0:
            raise CuteError(f"assume: divby must be a positive int constant, got {d!r}")
        if isinstance(args[0], types.IntegerLiteral):
            if args[0].literal_value % d:
                raise CuteError(f"assume: {args[0].literal_value} is not a multiple of {d}")
            return signature(args[0], *args)
        return signature(AssumedIntType(d), *args)


@_ireg.lower(api.assume, types.Integer, types.Any)
def _lower_assume(context, builder, sig, args):
    if isinstance(sig.return_type, types.IntegerLiteral):
        return context.get_constant(sig.args[0], sig.return_type.literal_value)
    return leaves(builder, sig.args[0], args[0])[0]


@_treg.register_global(api.make_shared_tensor)
class _MakeShared(AbstractTemplate):
    prefer_literal = True
    @_typed("make_shared_tensor")
    def generic(self, args, kws):
        if len(args) != 2:
            raise CuteError(f"make_shared_tensor: expected (dtype, layout), got {args}")
        dt, element = _dtype_of("make_shared_tensor", args[0])
        sw, _, inner = _layout_of("make_shared_tensor", args[1])
        _, off, _ = _layout_of("make_shared_tensor", args[1])
        return signature(TensorType(dt, "smem", sw, inner, _gcd(ALIGN_ZERO, off), bits=off, element=element), *args)


def _gcd(a, b):
    from math import gcd

    return gcd(a, b)


_smem_ids = itertools.count()


@_ireg.lower(api.make_shared_tensor, types.Any, LayoutType)
def _lower_make_shared(context, builder, sig, args):
    ty = sig.return_type
    _, off, _ = _layout_of("make_shared_tensor", sig.args[1])
    n = shared_cosize(sig.args[1].layout)
    elty = context.get_data_type(ty.dtype)
    arrty = ir.ArrayType(elty, n)
    gv = cgutils.add_global_variable(builder.module, arrty, f"_cute_smem_{next(_smem_ids)}", 3)
    gv.align = SHARED_ALIGN
    gv.initializer = ir.Constant(arrty, ir.Undefined)
    ptr = builder.addrspacecast(gv, ir.PointerType(arrty), "generic")
    ptr = builder.bitcast(ptr, elty.as_pointer())
    return make_tensor_value(context, builder, ty, ptr, off)


@_treg.register_global(api.dynamic_shared_tensor)
class _DynamicShared(AbstractTemplate):
    prefer_literal = True
    @_typed("dynamic_shared_tensor")
    def generic(self, args, kws):
        if len(args) != 3:
            raise CuteError(f"dynamic_shared_tensor: expected (dtype, layout, byte_offset), got {args}")
        dt, element = _dtype_of("dynamic_shared_tensor", args[0])
        sw, _, inner = _layout_of("dynamic_shared_tensor", args[1])
        off = _literal_ints("dynamic_shared_tensor", args[2], "the byte offset")
        if not isinstance(off, int) or off < 0 or off % SHARED_ALIGN:
            raise CuteError(f"dynamic_shared_tensor: byte offset {off!r} must be a non-negative "
                            f"multiple of {SHARED_ALIGN}")
        base = _layout_of("dynamic_shared_tensor", args[1])[1]
        return signature(TensorType(dt, "smem", sw, inner, _gcd(ALIGN_ZERO, base), bits=base, element=element),
                         *args)


@_ireg.lower(api.dynamic_shared_tensor, types.Any, LayoutType, types.Any)
def _lower_dynamic_shared(context, builder, sig, args):
    ty = sig.return_type
    _, off, _ = _layout_of("dynamic_shared_tensor", sig.args[1])
    from ..intrinsics.ptx import dynamic_smem_global

    gv = dynamic_smem_global(builder)
    ptr = builder.addrspacecast(gv, ir.PointerType(gv.type.pointee), "generic")
    ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
    ptr = builder.gep(ptr, [ir.Constant(I64, int(sig.args[2].literal_value))])
    ptr = builder.bitcast(ptr, context.get_data_type(ty.dtype).as_pointer())
    return make_tensor_value(context, builder, ty, ptr, off)


def fragment_type(op, layout, dtype, element=None):
    """The register tensor type CuTe's ``make_fragment_like`` gives for ``layout``."""
    if has_dynamic_shape(layout):
        raise CuteError(f"{op}: a register fragment needs a static shape; index the modes of run-time "
                        f"extent first (e.g. the k-tile mode of a local_tile)")
    frag = la.make_fragment_like(layout, np.float32).layout
    return TensorType(dtype, "rmem", None, frag, ALIGN_ZERO, element=element)


def alloc_fragment(context, builder, ty):
    """Stack storage for a register fragment (SROA keeps it in registers once unrolled)."""
    elty = context.get_data_type(ty.dtype)
    n = la.cosize(ty.layout)
    arr = cgutils.alloca_once(builder, ir.ArrayType(elty, max(n, 1)))
    arr.align = 16
    ptr = builder.bitcast(arr, elty.as_pointer())
    return make_tensor_value(context, builder, ty, ptr, 0)


@_treg.register_global(api.make_fragment_like)
class _MakeFragmentLike(AbstractTemplate):
    prefer_literal = True
    @_typed("make_fragment_like")
    def generic(self, args, kws):
        if len(args) not in (1, 2):
            raise CuteError(f"make_fragment_like: expected (tensor[, dtype]), got {args}")
        src = args[0]
        if isinstance(src, TensorType):
            lay, dt, element = src.layout, src.dtype, src.element
        elif isinstance(src, LayoutType):
            lay, dt, element = _layout_of("make_fragment_like", src)[2], types.float32, None
        else:
            raise CuteError(f"make_fragment_like: expected a tensor or a layout, got {src}")
        if len(args) == 2:
            dt, element = _dtype_of("make_fragment_like", args[1])
        return signature(fragment_type("make_fragment_like", lay, dt, element), *args)


@_ireg.lower(api.make_fragment_like, types.Any)
@_ireg.lower(api.make_fragment_like, types.Any, types.Any)
def _lower_fragment_like(context, builder, sig, args):
    return alloc_fragment(context, builder, sig.return_type)


@_treg.register_global(api.make_identity_tensor)
class _MakeIdentity(AbstractTemplate):
    prefer_literal = True
    @_typed("make_identity_tensor")
    def generic(self, args, kws):
        if len(args) != 1:
            raise CuteError(f"make_identity_tensor: expected (shape), got {args}")
        shape = _int_leaves("make_identity_tensor", args[0], "the shape")
        if not isinstance(shape, tuple) or any(isinstance(s, tuple) for s in shape):
            raise CuteError(f"make_identity_tensor: shape must be a flat tuple of ints, got {args[0]}")
        slots, static = [], []
        for x in shape:
            if isinstance(x, int):
                static.append(x)
            else:                                  # a run-time extent (CuTe's residue semantics)
                slots.append(DynSlot("shape", 1, f"d{len(slots)}"))
                static.append(shape_placeholder(len(slots) - 1))
        return signature(CoordTensorType(la.make_identity_layout(tuple(static)), len(shape), slots), *args)


@_ireg.lower(api.make_identity_tensor, types.Any)
def _lower_identity(context, builder, sig, args):
    dyn = [v for v, _ in _dyn_leaf_values(builder, sig.args[0], args[0])]
    return make_tensor_value(context, builder, sig.return_type, dyn=dyn)


# ---- indexing --------------------------------------------------------------------------

def _index_op(ty):
    return f"tensor[...] of the {ty.describe()}"


@_treg.register_global(operator.getitem)
class _GetItem(AbstractTemplate):
    prefer_literal = True
    def generic(self, args, kws):
        if len(args) != 2 or not isinstance(args[0], ANY_TENSOR):
            return None
        ty, idx = args
        op = _index_op(ty)
        try:
            sub, terms = slice_spec(op, ty.layout, spec_of_type(idx, what=op))
        except (CuteError, la.LayoutError) as e:
            raise typing_error(op, e) from None
        return signature(_sliced_type(ty, sub, terms), *args)


@_ireg.lower(operator.getitem, TensorType, types.Any)
@_ireg.lower(operator.getitem, CoordTensorType, types.Any)
def _lower_getitem(context, builder, sig, args):
    ty, idx = sig.args
    _, terms = slice_spec("getitem", ty.layout, spec_of_type(idx))
    return lower_slice(context, builder, ty, args[0], sig.return_type, terms,
                       leaves(builder, idx, args[1]))


@_treg.register_global(operator.setitem)
class _SetItem(AbstractTemplate):
    prefer_literal = True
    def generic(self, args, kws):
        if len(args) != 3 or not isinstance(args[0], TensorType):
            if len(args) == 3 and isinstance(args[0], CoordTensorType):
                raise CuteError(f"tensor[...] = value: the {args[0].describe()} is read-only")
            return None
        ty, idx, val = args
        op = f"tensor[...] = value of the {ty.describe()}"
        try:
            sub, _ = slice_spec(op, ty.layout, spec_of_type(idx, what=op))
        except (CuteError, la.LayoutError) as e:
            raise typing_error(op, e) from None
        if sub is not None:
            raise CuteError(f"{op}: coordinate {idx} leaves modes {sub}; assign to one element "
                            f"(or use copy/fill)")
        if not isinstance(val, (types.Number, types.Boolean)):
            raise CuteError(f"{op}: cannot store a {val} into a {ty.dtype_name} element")
        return signature(types.none, ty, idx, ty.value_type)


@_ireg.lower(operator.setitem, TensorType, types.Any, types.Any)
def _lower_setitem(context, builder, sig, args):
    ty, idx, valty = sig.args
    _, terms = slice_spec("setitem", ty.layout, spec_of_type(idx))
    t = tensor_proxy(context, builder, ty, args[0])
    dyn = dyn_values(builder, ty, t)
    v = stored_value(context, builder, ty, args[2], valty)
    builder.store(v, _element_at(context, builder, ty, t, terms, leaves(builder, idx, args[1]), dyn))
    return context.get_dummy_value()


# ---- size ------------------------------------------------------------------------------

def _size_layout(x):
    if isinstance(x, (TensorType, CoordTensorType, DynLayoutType)):
        return x.layout
    if isinstance(x, LayoutType):
        return _layout_of("size", x)[2]
    raise CuteError(f"size: expected a tensor or a layout, got {x}")


@_treg.register_global(api.size)
class _Size(AbstractTemplate):
    prefer_literal = True
    @_typed("size")
    def generic(self, args, kws):
        if len(args) not in (1, 2):
            raise CuteError(f"size: expected (tensor or layout[, mode]), got {args}")
        lay = _size_layout(args[0])
        if len(args) == 2:
            mode = _literal_ints("size", args[1], "the mode")
            if not isinstance(mode, int) or not 0 <= mode < la.rank(lay):
                raise CuteError(f"size: mode {mode!r} out of range for the rank-{la.rank(lay)} layout {lay}")
        return signature(types.intp, *args)


@_ireg.lower(api.size, types.Any)
@_ireg.lower(api.size, types.Any, types.Any)
def _lower_size(context, builder, sig, args):
    """A constant, or for run-time extents the product of their values (CuTe's dynamic size)."""
    x = sig.args[0]
    lay = _size_layout(x)
    if len(sig.args) == 2:
        lay = lay[int(sig.args[1].literal_value)] if la.rank(lay) > 1 else lay
    if not has_dynamic_shape(lay):
        return context.get_constant(types.intp, la.size(lay))
    dyn = dyn_values(builder, x, tensor_proxy(context, builder, x, args[0]))
    acc = 1
    for e in flat_tuple(lay.shape):
        v = dyn_shape(e, dyn)
        acc = acc * v if isinstance(acc, int) and isinstance(v, int) else builder.mul(as_ir(acc), as_ir(v))
    return as_ir(acc)


# ---- local_tile / local_partition --------------------------------------------------------

def _mode_slots(lay):
    r = la.rank(lay)
    return (None,) * r if isinstance(lay.shape, tuple) else None


def _dice(proj, x):
    if proj is None:
        return x
    items = x if isinstance(x, tuple) else (x,)
    if len(proj) != len(items):
        raise CuteError(f"projection {proj!r} does not match {x!r}")
    return tuple(v for p, v in zip(proj, items) if p is not None)     # a 1-tuple stays a tuple, as CuTe's dice


@dataclass(frozen=True)
class TileSpec:
    """What ``local_tile``/``local_partition`` make of a tensor: the kept sub-layout, the
    offset's terms, and the run-time extents they add: ``ceil_div(dyn[src], tile)`` for each
    ``(src, tile)`` of ``new``, appended to the tensor's slots (``dyn``)."""

    sub: object
    terms: tuple
    dyn: tuple
    new: tuple


def split_residues(op, ty, tiler):
    """``(layout, dyn, new)`` of :func:`codegen.cute.dynamic.split_residues` for tensor type
    ``ty``: identity tensors and tensors over layouts of run-time integers have CuTe's
    residue semantics."""
    from .dynamic import split_residues as split

    return split(op, ty.layout, ty.dyn, tiler, isinstance(ty, CoordTensorType) or bool(ty.dyn), ty.describe())


def _tile_spec(op, ty, tiler_ty, coord_ty, proj_ty):
    tiler = _literal_ints(op, tiler_ty, "the tiler")
    proj = _projection(op, proj_ty) if proj_ty is not None else None
    spec = spec_of_type(coord_ty, what=op)
    if proj is not None:
        tiler, spec = _dice(proj, tiler), _dice(proj, spec)
    lay, dyn, new = split_residues(op, ty, tiler)
    check_divides(op, lay, tiler)
    z = la.zipped_divide(lay, tiler)                      # ((TileM,TileN,...),(RestM,RestN,...))
    rest = z[1]
    if isinstance(spec, tuple) and isinstance(rest.shape, tuple):
        spec = spec + (None,) * (la.rank(rest) - len(spec))
    sub, terms = slice_spec(op, z, (_mode_slots(z[0]), spec))
    return TileSpec(sub, tuple(terms), dyn, new)


def new_extents(builder, ty, tval, spec):
    """The values of the run-time extents ``spec`` adds: ``ceil_div(dyn[src], tile)``."""
    if not spec.new:
        return []
    dyn = dyn_values(builder, ty, tval)
    return [builder.udiv(builder.add(dyn[src], ir.Constant(I64, t - 1)), ir.Constant(I64, t))
            for src, t in spec.new]


@_treg.register_global(api.local_tile)
class _LocalTile(AbstractTemplate):
    prefer_literal = True
    @_typed("local_tile")
    def generic(self, args, kws):
        if len(args) not in (3, 4) or not isinstance(args[0], ANY_TENSOR):
            raise CuteError(f"local_tile: expected (tensor, tiler, coord[, proj]), got {args}")
        ts = _tile_spec("local_tile", args[0], args[1], args[2], args[3] if len(args) == 4 else None)
        return signature(_sliced_type(args[0], ts.sub, ts.terms, ts.dyn), *args)


@_ireg.lower(api.local_tile, types.Any, types.Any, types.Any)
@_ireg.lower(api.local_tile, types.Any, types.Any, types.Any, types.Any)
def _lower_local_tile(context, builder, sig, args):
    ty = sig.args[0]
    ts = _tile_spec("local_tile", ty, sig.args[1], sig.args[2], sig.args[3] if len(sig.args) == 4 else None)
    extra = new_extents(builder, ty, tensor_proxy(context, builder, ty, args[0]), ts)
    return lower_slice(context, builder, ty, args[0], sig.return_type, ts.terms,
                       leaves(builder, sig.args[2], args[2]), extra)


def flat_coord_values(builder, thr_layout, idx):
    """CuTe's ``get_flat_coord(thr_layout, idx)`` for a run-time ``idx`` (i64): one 1-D
    coordinate per mode, as IR (or ints)."""
    from .offsets import _mode_leaves, const64

    modes = list(thr_layout) if isinstance(thr_layout.shape, tuple) else [thr_layout]
    out = []
    for m in modes:
        acc = 0
        for s, pre, d in _mode_leaves(m.shape, m.stride):
            if s == 1 or d == 0:
                continue
            c = builder.udiv(idx, const64(d)) if d != 1 else idx
            c = builder.urem(c, const64(s))
            acc = add_offset(builder, acc, c if pre == 1 else builder.mul(c, const64(pre)))
        out.append(acc)
    return out


def _partition_spec(op, ty, thr_layout, proj):
    if not isinstance(thr_layout, Layout):
        raise CuteError(f"{op}: thread layout must be a Layout constant, got {thr_layout!r}")
    modes = list(thr_layout) if isinstance(thr_layout.shape, tuple) else [thr_layout]
    if proj is not None and len(proj) != len(modes):
        raise CuteError(f"{op}: projection {proj!r} does not match the thread layout {thr_layout}")
    keep = [i for i in range(len(modes)) if proj is None or proj[i] is not None]
    tiler = tuple(la.size(modes[i]) for i in keep)
    crd = tuple(Leaf(slot=i) for i in keep)
    if not isinstance(thr_layout.shape, tuple):        # a rank-1 thread layout tiles the whole tensor;
        tiler, crd = tiler[0], crd[0]                  # a tuple one (or a projection) tiles by mode
    lay, dyn, new = split_residues(op, ty, tiler)
    check_divides(op, lay, tiler)
    z = la.zipped_divide(lay, tiler)                     # ((ThrM,ThrN,...),(RestM,RestN,...))
    sub, terms = slice_spec(op, z, (crd, _mode_slots(z[1])))
    return TileSpec(sub, tuple(terms), dyn, new)


@_treg.register_global(api.local_partition)
class _LocalPartition(AbstractTemplate):
    prefer_literal = True
    @_typed("local_partition")
    def generic(self, args, kws):
        if len(args) not in (3, 4) or not isinstance(args[0], ANY_TENSOR):
            raise CuteError(f"local_partition: expected (tensor, thr_layout, idx[, proj]), got {args}")
        if not isinstance(args[2], types.Integer):
            raise CuteError(f"local_partition: thread index must be an integer, got {args[2]}")
        thr = _layout_of("local_partition", args[1])[2]
        proj = _projection("local_partition", args[3]) if len(args) == 4 else None
        ts = _partition_spec("local_partition", args[0], thr, proj)
        return signature(_sliced_type(args[0], ts.sub, ts.terms, ts.dyn), *args)


@_ireg.lower(api.local_partition, types.Any, types.Any, types.Any)
@_ireg.lower(api.local_partition, types.Any, types.Any, types.Any, types.Any)
def _lower_local_partition(context, builder, sig, args):
    ty = sig.args[0]
    thr = _layout_of("local_partition", sig.args[1])[2]
    proj = _projection("local_partition", sig.args[3]) if len(sig.args) == 4 else None
    ts = _partition_spec("local_partition", ty, thr, proj)
    idx = leaves(builder, sig.args[2], args[2])
    idx = idx[0] if idx else int(sig.args[2].literal_value)
    if isinstance(idx, int):
        idx = ir.Constant(I64, idx)
    values = flat_coord_values(builder, thr, idx)
    extra = new_extents(builder, ty, tensor_proxy(context, builder, ty, args[0]), ts)
    return lower_slice(context, builder, ty, args[0], sig.return_type, ts.terms, values, extra)


# ---- domain_offset -------------------------------------------------------------------------

def _offset_terms(op, ty, coord_ty):
    """The terms of the offset of a coordinate of ``ty``, one integer per mode of one leaf
    (an offset, not an index: any integer, negative ones too, so no division by extents)."""
    from .offsets import Term

    spec = spec_of_type(coord_ty, what=op)
    lay = ty.layout
    modes = [(lay.shape, lay.stride)] if not isinstance(lay.shape, tuple) else list(zip(lay.shape, lay.stride))
    if not isinstance(spec, tuple) or len(spec) != len(modes) or any(not isinstance(x, Leaf) for x in spec):
        raise CuteError(f"{op}: the coordinate must be one integer per mode of the {ty.describe()}, got {coord_ty}")
    for i, (e, _) in enumerate(modes):
        if isinstance(e, tuple):
            raise CuteError(f"{op}: mode {i} of the {ty.describe()} has several extents; offset modes of one")
    return [Term(x, e, d) for x, (e, d) in zip(spec, modes)]


@_treg.register_global(api.domain_offset)
class _DomainOffset(AbstractTemplate):
    prefer_literal = True
    @_typed("domain_offset")
    def generic(self, args, kws):
        if len(args) != 2 or not isinstance(args[1], ANY_TENSOR):
            raise CuteError(f"domain_offset: expected (coord, tensor), got {args}")
        ty = args[1]
        terms = _offset_terms("domain_offset", ty, args[0])
        if isinstance(ty, CoordTensorType):
            return signature(ty, *args)
        # a run-time coordinate may lie anywhere (negative, past the extent): the offset's
        # bits are known only where every coordinate is a constant
        bits = offset_bits(ty.bits, terms) if all(t.leaf.value is not None for t in terms) else None
        return signature(ty.with_layout(ty.layout, offset_alignment(ty.align, terms), bits=bits), *args)


@_ireg.lower(api.domain_offset, types.Any, types.Any)
def _lower_domain_offset(context, builder, sig, args):
    ty = sig.args[1]
    terms = _offset_terms("domain_offset", ty, sig.args[0])
    # a coordinate may be negative: each mode is one integer, so no division is emitted
    return lower_slice(context, builder, ty, args[1], sig.return_type, terms, leaves(builder, sig.args[0], args[0]),
                       in_range=False)


# ---- clear / fill ------------------------------------------------------------------------

def _static_shape(op, ty):
    if has_dynamic_shape(ty.layout):
        raise CuteError(f"{op}: the {ty.describe()} has a mode of run-time extent; index it first "
                        f"(a loop over cute.size(t, mode))")

@_treg.register_global(api.clear)
class _Clear(AbstractTemplate):
    prefer_literal = True
    @_typed("clear")
    def generic(self, args, kws):
        if len(args) != 1 or not isinstance(args[0], TensorType):
            raise CuteError(f"clear: expected (tensor), got {args}")
        _static_shape("clear", args[0])
        return signature(types.none, *args)


@_treg.register_global(api.fill)
class _Fill(AbstractTemplate):
    prefer_literal = True
    @_typed("fill")
    def generic(self, args, kws):
        if len(args) != 2 or not isinstance(args[0], TensorType) or not isinstance(args[1], types.Number):
            raise CuteError(f"fill: expected (tensor, number), got {args}")
        _static_shape("fill", args[0])
        return signature(types.none, *args)


def _fill(context, builder, ty, tval, value):
    t = tensor_proxy(context, builder, ty, tval)
    dyn = dyn_values(builder, ty, t)
    for i in range(la.size(ty.layout)):
        c = dyn_linear(builder, ty.layout(i), dyn)
        builder.store(value, element_pointer(context, builder, ty, t.ptr, *((t.off, c) if isinstance(c, int) else
                                                                         (add_offset(builder, t.off, c),))))


@_ireg.lower(api.clear, TensorType)
def _lower_clear(context, builder, sig, args):
    ty = sig.args[0]
    _fill(context, builder, ty, args[0], context.get_constant(ty.dtype, 0))
    return context.get_dummy_value()


@_ireg.lower(api.fill, TensorType, types.Number)
def _lower_fill(context, builder, sig, args):
    ty = sig.args[0]
    _fill(context, builder, ty, args[0], stored_value(context, builder, ty, args[1], sig.args[1]))
    return context.get_dummy_value()


@_treg.register_global(api.mark_in_bounds)
class _MarkInBounds(AbstractTemplate):
    prefer_literal = True
    @_typed("mark_in_bounds")
    def generic(self, args, kws):
        if (len(args) != 3 or not isinstance(args[0], TensorType) or not isinstance(args[1], CoordTensorType)
                or not isinstance(args[2], types.BaseTuple)):
            raise CuteError(f"mark_in_bounds: expected (pred tensor, identity tensor, tuple of extents), got {args}")
        pred, crd, bounds = args
        _static_shape("mark_in_bounds", pred)
        _static_shape("mark_in_bounds", crd)
        if la.size(pred.layout) != la.size(crd.layout):
            raise CuteError(f"mark_in_bounds: the {pred.describe()} has {la.size(pred.layout)} elements, the "
                            f"{crd.describe()} {la.size(crd.layout)}")
        if len(bounds) != crd.rank or not all(isinstance(b, types.Integer) for b in bounds):
            raise CuteError(f"mark_in_bounds: the extents {bounds} must be {crd.rank} integers, one a mode of "
                            f"the coordinates")
        return signature(types.none, *args)


@_ireg.lower(api.mark_in_bounds, TensorType, CoordTensorType, types.BaseTuple)
def _lower_mark_in_bounds(context, builder, sig, args):
    pty, cty, bty = sig.args
    t = tensor_proxy(context, builder, pty, args[0])
    dyn = dyn_values(builder, pty, t)
    bounds = [context.cast(builder, builder.extract_value(args[2], j), bty[j], types.int64) for j in range(len(bty))]
    getitem = _GetItem(context.typing_context)
    for i in range(la.size(pty.layout)):
        ity = types.IntegerLiteral(i)
        rty = getitem.generic((cty, ity), {}).return_type
        crd = _lower_getitem(context, builder, signature(rty, cty, ity), [args[1], context.get_dummy_value()])
        ok = ir.Constant(ir.IntType(1), 1)
        for j, b in enumerate(bounds):
            v = context.cast(builder, builder.extract_value(crd, j), rty[j], types.int64)
            ok = builder.and_(ok, builder.icmp_unsigned("<", v, b))       # 0 <= v < b in one comparison
        c = dyn_linear(builder, pty.layout(i), dyn)
        ptr = element_pointer(context, builder, pty, t.ptr, *((t.off, c) if isinstance(c, int) else
                                                              (add_offset(builder, t.off, c),)))
        builder.store(stored_value(context, builder, pty, ok, types.boolean), ptr)
    return context.get_dummy_value()


# ---- evaluating a layout: L(i), L(i, j), L((i, j), k) -------------------------------------

@_treg.register_attr
class _LayoutAttrs(AttributeTemplate):
    key = LayoutType

    @bound_function("Layout.__call__")
    def resolve___call__(self, ty, args, kws):
        op = f"layout {ty.layout}(...)"
        try:
            _, terms = _layout_call_terms(op, ty, args)
        except (CuteError, la.LayoutError) as e:
            raise typing_error(op, e) from None
        return signature(types.int64, *args)


def _layout_call_terms(op, ty, args):
    sw, off, inner = _layout_of(op, ty)
    if len(args) == 0:
        raise CuteError(f"{op}: expected a coordinate")
    crd = args[0] if len(args) == 1 else types.Tuple(list(args))
    sub, terms = slice_spec(op, inner, spec_of_type(crd, what=op))
    if sub is not None:
        raise CuteError(f"{op}: coordinate {crd} leaves modes {sub} unindexed; in a kernel a layout is "
                        f"evaluated at a full coordinate (slice a tensor instead)")
    for t in terms:
        for d in la.flatten(t.stride) if isinstance(t.stride, tuple) else (t.stride,):
            if not isinstance(d, int):
                raise CuteError(f"{op}: only layouts with integer strides can be evaluated in a kernel")
    return crd, terms


@_ireg.lower(LayoutType, LayoutType, types.VarArg(types.Any))
def _lower_layout_call(context, builder, sig, args):
    ty = sig.args[0]
    sw, off, _ = _layout_of("layout(...)", ty)
    crd, terms = _layout_call_terms("layout(...)", ty, sig.args[1:])
    if len(sig.args) == 2:
        vals = leaves(builder, sig.args[1], args[1])
    else:
        vals = [v for t, a in zip(sig.args[1:], args[1:]) for v in leaves(builder, t, a)]
    x = add_offset(builder, off, emit_terms(builder, terms, vals))
    return as_ir(emit_swizzle(builder, sw, x))
