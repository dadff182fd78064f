"""Lowering of ``copy`` and ``gemm``: each plan step becomes one atom of
:mod:`codegen.intrinsics.ptx` (``cp.async``, ``ldmatrix``, ``mma.sync``), called through
the intrinsic's own code generator, or a plain (vector) load and store.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import types
from numba.cuda.cudadecl import registry as _treg
from numba.cuda.cudaimpl import registry as _ireg
from numba.cuda.typing.templates import AbstractTemplate, signature

import layoutalg as la

from ..intrinsics import ptx as _ptx
from . import api
from .atom_plan import TensorInfo, convert_plan, copy_if_plan, copy_plan, mma_plan
from .device_tensor import bf16_rn, dyn_values, element_pointer, swizzled_offset, tensor_proxy, typing_error
from .dynamic import has_dynamic_shape
from .offsets import CuteError, add_offset, dyn_linear, emit_swizzle
from .types import CoordTensorType, TensorType, TiledCopyType, TiledMMAType

__all__ = ["tensor_info", "call_intrinsic"]

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


def tensor_info(ty):
    """The :class:`TensorInfo` of a device tensor type (whose shape must be static: a copy
    or an MMA has a fixed number of calls)."""
    if isinstance(ty, (TensorType, CoordTensorType)) and has_dynamic_shape(ty.layout):
        raise CuteError(f"the {ty.describe()} has a mode of run-time extent: index it first (e.g. "
                        f"the k-tile mode in a loop over cute.size(t, mode)); copies and MMAs have a "
                        f"static number of calls")
    if isinstance(ty, CoordTensorType):
        return TensorInfo("coord", 64, None, ty.layout, "coord")
    return TensorInfo(ty.space, ty.dtype.bitwidth, ty.swizzle, ty.layout, ty.dtype_name, ty.align)


def call_intrinsic(context, builder, name, argtys, args):
    """Emit the atom ``name`` of :mod:`codegen.intrinsics.ptx` (its own typing and codegen)."""
    intr = getattr(_ptx, name)
    sig, codegen = intr._defn(context.typing_context, *argtys)
    return sig, codegen(context, builder, sig, list(args))


def _to_bits(builder, v):
    t = v.type
    if isinstance(t, ir.IntType):
        return v
    width = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)]
    return builder.bitcast(v, ir.IntType(width))


def _from_bits(builder, bits, llty):
    if isinstance(llty, ir.IntType):
        return builder.trunc(bits, llty) if bits.type.width > llty.width else bits
    width = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(llty)]
    if bits.type.width > width:
        bits = builder.trunc(bits, ir.IntType(width))
    return builder.bitcast(bits, llty)


#: NVPTX's address space of each memory space of a tensor.
_ADDRESS_SPACES = {"smem": 3, "gmem": 1}


class _Mem:
    """Element pointers of one tensor value."""

    def __init__(self, context, builder, ty, val):
        self.ty = ty
        self.builder = builder
        self.context = context
        t = tensor_proxy(context, builder, ty, val)
        self.ptr, self.off = t.ptr, t.off
        # swizzle(off), carried by a swizzled tensor whose type knows the offset's bits
        self.soff = t.soff if getattr(ty, "bits", None) is not None else None
        self.dyn = dyn_values(builder, ty, t)

    def at(self, off):
        """The element's pointer, in the tensor's address space (shared: ``ld.shared`` and
        ``st.shared``; global: ``ld.global``), not the generic one."""
        off = dyn_linear(self.builder, off, self.dyn)           # run-time strides, if any
        if isinstance(off, int):                                # a constant: the swizzle may split
            p = element_pointer(self.context, self.builder, self.ty, self.ptr, self.off, off, self.soff)
        else:
            p = element_pointer(self.context, self.builder, self.ty, self.ptr, add_offset(self.builder, self.off, off))
        space = _ADDRESS_SPACES.get(getattr(self.ty, "space", None))
        return p if space is None else self.builder.addrspacecast(p, ir.PointerType(p.type.pointee, space))

    def smem_addr(self, off):
        """The 32-bit shared address of an element: the swizzle and the scaling in 32-bit
        arithmetic (shared offsets fit), half the cost of 64-bit integer operations; the
        swizzle of the run-time offset computed once (:func:`swizzled_offset`)."""
        b = self.builder
        base = b.ptrtoint(b.addrspacecast(self.ptr, ir.PointerType(self.ptr.type.pointee, 3)), _I32)
        x = _as_i32(b, self.off)
        sx = None if self.soff is None else _as_i32(b, self.soff)
        if isinstance(off, int):
            x = swizzled_offset(b, self.ty.swizzle, getattr(self.ty, "bits", None), x, off, sx)
        else:
            x = emit_swizzle(b, self.ty.swizzle, add_offset(b, x, b.trunc(off, _I32)))
        x = ir.Constant(_I32, x) if isinstance(x, int) else x
        nbytes = self.context.get_abi_sizeof(self.ptr.type.pointee)
        return b.add(base, b.mul(x, ir.Constant(_I32, nbytes)))

    def gmem_addr(self, off):
        return self.builder.ptrtoint(self.at(off), _I64)        # (run-time strides: in at; address space 1)


def _as_i32(builder, v):
    """An offset (int, i64 constant or i64 IR) as an int or i32 IR."""
    if isinstance(v, ir.Constant):
        return int(v.constant)
    return v if isinstance(v, int) else builder.trunc(v, _I32)


# ---- copy --------------------------------------------------------------------------------

def _copy_args(args):
    if len(args) == 3 and isinstance(args[0], TiledCopyType):
        return args[0].tiled_copy, args[1], args[2]
    if len(args) == 2:
        return None, args[0], args[1]
    raise CuteError(f"copy: expected (tiled_copy, src, dst) or (src, dst), got {args}")


@_treg.register_global(api.copy)
class _Copy(AbstractTemplate):
    prefer_literal = True
    def generic(self, args, kws):
        try:
            tc, src, dst = _copy_args(args)
            for what, t in (("source", src), ("destination", dst)):
                if not isinstance(t, (TensorType, CoordTensorType)):
                    raise CuteError(f"copy: the {what} must be a tensor, got {t}")
            copy_plan(tc, tensor_info(src), tensor_info(dst))
        except (CuteError, la.LayoutError) as e:
            raise typing_error("copy", e) from None
        return signature(types.none, *args)


def _lower_copy(context, builder, sig, args):
    if len(sig.args) == 3:
        tc, (sty, dty), (sv, dv) = sig.args[0].tiled_copy, sig.args[1:], args[1:]
    else:
        tc, (sty, dty), (sv, dv) = None, sig.args, args
    plan = copy_plan(tc, tensor_info(sty), tensor_info(dty))
    _emit_copy(context, builder, plan, sty, dty, sv, dv)
    return context.get_dummy_value()


def _emit_copy(context, builder, plan, sty, dty, sv, dv, on=None):
    """The steps of ``plan``; ``on(g)`` (an i1, or None: always) guards step ``g``: a guarded-off
    cp.async is issued with a source size of 0 (it zero-fills), the other steps are skipped."""
    src, dst = _Mem(context, builder, sty, sv), _Mem(context, builder, dty, dv)
    dlty = context.get_data_type(dty.dtype)

    def guarded(g, emit):
        if on is None:
            emit()
            return
        with builder.if_then(on(g)):
            emit()

    if plan.kind == "elem":
        for g, s in enumerate(plan.steps):
            def emit(s=s):
                v = builder.load(src.at(s.src))
                v = context.cast(builder, v, sty.dtype, dty.dtype)
                builder.store(v, dst.at(s.dst[0]))
            guarded(g, emit)
    elif plan.kind == "vec":
        n = plan.vector_bits
        vty = ir.VectorType(_I32, n // 32) if n > 32 else ir.IntType(n)
        for g, s in enumerate(plan.steps):
            def emit(s=s):
                p = src.at(s.src)
                p = builder.bitcast(p, ir.PointerType(vty, p.type.addrspace))
                v = builder.load(p, align=n // 8)
                q = dst.at(s.dst[0])
                q = builder.bitcast(q, ir.PointerType(vty, q.type.addrspace))
                builder.store(v, q, align=n // 8)
            guarded(g, emit)
    elif plan.kind == "cp_async":
        nbytes = ir.Constant(_I32, plan.vector_bits // 8)
        for g, s in enumerate(plan.steps):
            size = nbytes if on is None else builder.select(on(g), nbytes, ir.Constant(_I32, 0))
            call_intrinsic(context, builder, plan.intrinsic, (types.int32, types.int64, types.int32),
                           (dst.smem_addr(s.dst[0]), src.gmem_addr(s.src), size))
    elif plan.kind == "ldsm":
        bits = plan.value_bits
        for s in plan.steps:
            rsig, res = call_intrinsic(context, builder, plan.intrinsic, (types.int32,),
                                       (src.smem_addr(s.src),))
            nregs = rsig.return_type.count
            regs = [builder.extract_value(res, i) for i in range(nregs)]
            if _word_pairs(dst, s.dst, bits):
                per = 32 // bits
                for r in range(nregs):
                    builder.store(regs[r], _word_ptr(builder, dst, s.dst[r * per]), align=4)
                continue
            for j, d in enumerate(s.dst):
                r, sh = divmod(j * bits, 32)
                v = regs[r]
                if sh:
                    v = builder.lshr(v, ir.Constant(_I32, sh))
                builder.store(_from_bits(builder, v, dlty), dst.at(d))


_ireg.lower(api.copy, TiledCopyType, types.Any, types.Any)(_lower_copy)
_ireg.lower(api.copy, TensorType, TensorType)(_lower_copy)


# ---- copy_if --------------------------------------------------------------------------------

def _copy_if_args(args):
    if len(args) == 4 and isinstance(args[0], TiledCopyType):
        return args[0].tiled_copy, args[1], args[2], args[3]
    if len(args) == 3:
        return None, args[0], args[1], args[2]
    raise CuteError(f"copy_if: expected (tiled_copy, pred, src, dst) or (pred, src, dst), got {args}")


@_treg.register_global(api.copy_if)
class _CopyIf(AbstractTemplate):
    prefer_literal = True

    def generic(self, args, kws):
        try:
            tc, pred, src, dst = _copy_if_args(args)
            for what, t in (("predicate", pred), ("source", src), ("destination", dst)):
                if not isinstance(t, (TensorType, CoordTensorType)):
                    raise CuteError(f"copy_if: the {what} must be a tensor, got {t}")
            copy_if_plan(tc, tensor_info(pred), tensor_info(src), tensor_info(dst))
        except (CuteError, la.LayoutError) as e:
            raise typing_error("copy_if", e) from None
        return signature(types.none, *args)


def _lower_copy_if(context, builder, sig, args):
    tys, vals = list(sig.args), list(args)
    tc = None
    if len(tys) == 4:
        tc, tys, vals = tys[0].tiled_copy, tys[1:], vals[1:]
    (pty, sty, dty), (pv, sv, dv) = tys, vals
    plan, poffs = copy_if_plan(tc, tensor_info(pty), tensor_info(sty), tensor_info(dty))
    pred = _Mem(context, builder, pty, pv)
    flags = [builder.load(pred.at(o)) for o in poffs]

    def on(g):
        v = flags[g]
        return builder.icmp_unsigned("!=", v, ir.Constant(v.type, 0))

    _emit_copy(context, builder, plan, sty, dty, sv, dv, on)
    return context.get_dummy_value()


_ireg.lower(api.copy_if, TiledCopyType, types.Any, types.Any, types.Any)(_lower_copy_if)
_ireg.lower(api.copy_if, TensorType, TensorType, TensorType)(_lower_copy_if)


# ---- convert -------------------------------------------------------------------------------

def _literal_str(ty):
    return ty.literal_value if isinstance(ty, types.StringLiteral) else None


@_treg.register_global(api.convert)
class _Convert(AbstractTemplate):
    prefer_literal = True

    def generic(self, args, kws):
        try:
            if len(args) != 3:
                raise CuteError(f"convert: expected (src, dst, to), got {args}")
            src, dst, to = args
            for what, t in (("source", src), ("destination", dst)):
                if not isinstance(t, (TensorType, CoordTensorType)):
                    raise CuteError(f"convert: the {what} must be a tensor, got {t}")
            if _literal_str(to) is None:
                raise CuteError(f"convert: to must be a string constant (\"bf16\", \"f16\", \"tf32\" or \"int\"), "
                                f"got {to}")
            convert_plan(tensor_info(src), tensor_info(dst), _literal_str(to))
        except (CuteError, la.LayoutError) as e:
            raise typing_error("convert", e) from None
        return signature(types.none, *args)


def _lower_convert(context, builder, sig, args):
    sty, dty, toty = sig.args
    to = _literal_str(toty)
    plan = convert_plan(tensor_info(sty), tensor_info(dty), to)
    src, dst = _Mem(context, builder, sty, args[0]), _Mem(context, builder, dty, args[1])
    for s in plan.steps:
        v = builder.load(src.at(s.src))
        if to == "bf16":
            out = bf16_rn(builder, context.cast(builder, v, sty.dtype, types.float32))
        elif to == "f16":
            out = context.cast(builder, v, sty.dtype, types.float16)
            if dty.dtype != types.float16:
                out = builder.bitcast(out, ir.IntType(16))
        elif to == "tf32":
            f32 = context.cast(builder, v, sty.dtype, types.float32)
            out = builder.asm(ir.FunctionType(_I32, [ir.FloatType()]), "cvt.rna.tf32.f32 $0, $1;", "=r,f", [f32],
                              False)
            if dty.dtype == types.float32:
                out = builder.bitcast(out, ir.FloatType())
        else:
            out = context.cast(builder, v, sty.dtype, dty.dtype)
        builder.store(out, dst.at(s.dst[0]))
    return context.get_dummy_value()


_ireg.lower(api.convert, TensorType, TensorType, types.StringLiteral)(_lower_convert)


# ---- gemm --------------------------------------------------------------------------------

@_treg.register_global(api.gemm)
class _Gemm(AbstractTemplate):
    prefer_literal = True
    def generic(self, args, kws):
        try:
            if len(args) != 4 or not isinstance(args[0], TiledMMAType):
                raise CuteError(f"gemm: expected (tiled_mma, C, A, B), got {args}")
            for what, t in zip("CAB", args[1:]):
                if not isinstance(t, TensorType):
                    raise CuteError(f"gemm: {what} must be a register fragment, got {t}")
            mma_plan(args[0].tiled_mma, *(tensor_info(t) for t in args[1:]))
        except (CuteError, la.LayoutError) as e:
            raise typing_error("gemm", e) from None
        return signature(types.none, *args)


def _word_pairs(mem, offs, bits):
    """True when the values of each b32 register are adjacent, aligned words of a register
    fragment, so one 32-bit load or store moves them (fewer instructions before unrolling)."""
    per = 32 // bits
    if per == 1 or mem.ty.space != "rmem" or mem.ty.swizzle is not None or mem.ty.align % per:
        return False
    return all(offs[i] % per == 0 and tuple(offs[i:i + per]) == tuple(range(offs[i], offs[i] + per))
               for i in range(0, len(offs), per))


def _word_ptr(builder, mem, off):
    p = mem.at(off)
    return builder.bitcast(p, ir.PointerType(_I32, p.type.addrspace))


def _pack(builder, mem, offs, bits):
    """b32 registers holding the values at ``offs`` (lower index in the lower bits)."""
    per = 32 // bits
    if _word_pairs(mem, offs, bits):
        return [builder.load(_word_ptr(builder, mem, offs[r * per]), align=4)
                for r in range(len(offs) // per)]
    regs = []
    for r in range(len(offs) // per):
        acc = None
        for j in range(per):
            v = _to_bits(builder, builder.load(mem.at(offs[r * per + j])))
            v = builder.zext(v, _I32) if v.type.width < 32 else v
            if j:
                v = builder.shl(v, ir.Constant(_I32, j * bits))
            acc = v if acc is None else builder.or_(acc, v)
        regs.append(acc)
    return regs


@_ireg.lower(api.gemm, TiledMMAType, TensorType, TensorType, TensorType)
def _lower_gemm(context, builder, sig, args):
    _, cty, aty, bty = sig.args
    plan = mma_plan(sig.args[0].tiled_mma, tensor_info(cty), tensor_info(aty), tensor_info(bty))
    C, A, B = (_Mem(context, builder, t, v) for t, v in zip(sig.args[1:], args[1:]))
    if plan.intrinsic == "fma":                 # UniversalFMA: c = fma(a, b, c), one rounding
        for s in plan.steps:
            c = C.at(s.c[0])
            builder.store(builder.fma(builder.load(A.at(s.a[0])), builder.load(B.at(s.b[0])), builder.load(c)), c)
        return context.get_dummy_value()
    for s in plan.steps:
        cvals = [builder.load(C.at(o)) for o in s.c]
        if plan.a_bits == 64:
            ins = [builder.load(A.at(o)) for o in s.a] + [builder.load(B.at(o)) for o in s.b]
            argtys = [types.float64] * (len(ins) + len(cvals))
        else:
            ins = _pack(builder, A, s.a, plan.a_bits) + _pack(builder, B, s.b, plan.b_bits)
            argtys = [types.uint32] * len(ins) + [cty.dtype] * len(cvals)
        rsig, res = call_intrinsic(context, builder, plan.intrinsic, tuple(argtys), ins + cvals)
        for i, o in enumerate(s.c):
            builder.store(builder.extract_value(res, i), C.at(o))
    return context.get_dummy_value()
