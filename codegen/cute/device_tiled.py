"""Typing and lowering of tiled copies and tiled MMAs in device code.

``tiled_copy.get_slice(tid)`` and ``tiled_mma.get_slice(tid)`` keep the run-time thread
index; ``partition_S/D``, ``partition_A/B/C`` re-tile the tensor's layout on the host
(``tidfrg_S``, ``thrfrg_A``, ...) and emit only the thread's offset: the thread mode of the
re-tiled layout evaluated at ``tid`` (CuTe's ``get_flat_coord`` for MMAs).
"""

from __future__ import annotations

import numpy as np
from numba.cuda import types
from numba.cuda.cudadecl import registry as _treg
from numba.cuda.cudaimpl import registry as _ireg
from numba.cuda.np import numpy_support
from numba.cuda.typing.templates import AbstractTemplate, AttributeTemplate, bound_function, signature

import layoutalg as la

from . import api
from .bank_check import check_partition
from .device_tensor import (
    ANY_TENSOR, _mode_slots, _sliced_type, alloc_fragment, flat_coord_values, fragment_type,
    lower_slice, tensor_proxy, typing_error,
)
from .offsets import CuteError, I64, Leaf, leaves, slice_spec
from .types import TensorType, ThrCopyType, ThrMMAType, TiledCopyType, TiledMMAType

__all__ = ["mma_operand_dtype"]


def _thr_value(context, builder, ty, val):
    return tensor_proxy(context, builder, ty, val).thr


def _new_thr(context, builder, ty, idx_ty, idx):
    from numba.cuda import cgutils

    t = cgutils.create_struct_proxy(ty)(context, builder)
    t.thr = context.cast(builder, idx, idx_ty, types.int64)
    return t._getvalue()


# ---- get_slice ---------------------------------------------------------------------------

def _check_thr(op, ty, n):
    if not isinstance(ty, types.Integer):
        raise typing_error(op, CuteError(f"thread index must be an integer, got {ty}"))
    if isinstance(ty, types.IntegerLiteral) and not 0 <= ty.literal_value < n:
        raise typing_error(op, CuteError(f"thread {ty.literal_value} out of range [0, {n})"))


@_treg.register_attr
class _TiledCopyAttrs(AttributeTemplate):
    key = TiledCopyType

    @bound_function("TiledCopy.get_slice")
    def resolve_get_slice(self, ty, args, kws):
        _check_thr("TiledCopy.get_slice", args[0] if len(args) == 1 else None, ty.tiled_copy.size)
        return signature(ThrCopyType(ty.tiled_copy), *args)

    resolve_get_thread_slice = resolve_get_slice


@_treg.register_attr
class _TiledMMAAttrs(AttributeTemplate):
    key = TiledMMAType

    @bound_function("TiledMMA.get_slice")
    def resolve_get_slice(self, ty, args, kws):
        _check_thr("TiledMMA.get_slice", args[0] if len(args) == 1 else None, ty.tiled_mma.size)
        return signature(ThrMMAType(ty.tiled_mma), *args)

    resolve_get_thread_slice = resolve_get_slice


@_ireg.lower("TiledCopy.get_slice", TiledCopyType, types.Integer)
def _lower_copy_slice(context, builder, sig, args):
    return _new_thr(context, builder, sig.return_type, sig.args[1], args[1])


@_ireg.lower("TiledMMA.get_slice", TiledMMAType, types.Integer)
def _lower_mma_slice(context, builder, sig, args):
    return _new_thr(context, builder, sig.return_type, sig.args[1], args[1])


# ---- ThrCopy -----------------------------------------------------------------------------

def _copy_partition(op, tc, ty, which):
    """``(sub layout, terms)`` of thread slot 0 in ``tidfrg_S/D(layout)``."""
    n = len(tc.tiler_mn) if isinstance(tc.tiler_mn, tuple) else 1
    if la.rank(ty.layout) < n:
        raise CuteError(f"{op}: the {ty.describe()} has fewer modes than the copy tile {tc.tiler_mn}")
    lay = tc.tidfrg_S(ty.layout) if which == "S" else tc.tidfrg_D(ty.layout)  # (Thr,FrgV,(RestM,RestN,...))
    return slice_spec(op, lay, (Leaf(slot=0), None, _mode_slots(lay[2])))


def _retile(op, tc, ty):
    return tc.retile(ty.layout)                             # (V,RestM,...) -> (CPY,CPY_M,...)


@_treg.register_attr
class _ThrCopyAttrs(AttributeTemplate):
    key = ThrCopyType

    def _part(self, which, ty, args):
        op = f"ThrCopy.partition_{which}"
        if len(args) != 1 or not isinstance(args[0], ANY_TENSOR):
            raise typing_error(op, CuteError(f"expected a tensor, got {args}"))
        try:
            sub, terms = _copy_partition(op, ty.tiled_copy, args[0], which)
        except (CuteError, la.LayoutError) as e:
            raise typing_error(op, e) from None
        check_partition(ty.tiled_copy, args[0], which)          # bank conflicts: a PerformanceWarning
        return signature(_sliced_type(args[0], sub, terms), *args)

    @bound_function("ThrCopy.partition_S")
    def resolve_partition_S(self, ty, args, kws):
        return self._part("S", ty, args)

    @bound_function("ThrCopy.partition_D")
    def resolve_partition_D(self, ty, args, kws):
        return self._part("D", ty, args)

    def _retile_sig(self, op, ty, args):
        if len(args) != 1 or not isinstance(args[0], TensorType):
            raise typing_error(op, CuteError(f"expected a register tensor, got {args}"))
        try:
            lay = _retile(op, ty.tiled_copy, args[0])
        except (CuteError, la.LayoutError) as e:
            raise typing_error(op, e) from None
        return signature(args[0].with_layout(lay), *args)

    @bound_function("ThrCopy.retile_S")
    def resolve_retile_S(self, ty, args, kws):
        return self._retile_sig("ThrCopy.retile_S", ty, args)

    @bound_function("ThrCopy.retile_D")
    def resolve_retile_D(self, ty, args, kws):
        return self._retile_sig("ThrCopy.retile_D", ty, args)


def _lower_copy_part(which):
    def lower(context, builder, sig, args):
        thrty, ty = sig.args
        _, terms = _copy_partition("partition", thrty.tiled_copy, ty, which)
        tid = _thr_value(context, builder, thrty, args[0])
        return lower_slice(context, builder, ty, args[1], sig.return_type, terms, [tid])
    return lower


for _w in "SD":
    _ireg.lower(f"ThrCopy.partition_{_w}", ThrCopyType, TensorType)(_lower_copy_part(_w))
    _ireg.lower(f"ThrCopy.partition_{_w}", ThrCopyType, types.Any)(_lower_copy_part(_w))


@_ireg.lower("ThrCopy.retile_S", ThrCopyType, TensorType)
@_ireg.lower("ThrCopy.retile_D", ThrCopyType, TensorType)
def _lower_retile(context, builder, sig, args):
    return args[1]                                          # same memory, new layout type


# ---- ThrMMA ------------------------------------------------------------------------------

_MMA_MODES = {"A": (1, 3), "B": (2, 3), "C": (1, 2)}


def _mma_partition(op, mma, ty, which):
    """``(sub layout, terms)``; slots 0..3 are the thread's (V,M,N,K) coordinates."""
    lay = {"A": mma.thrfrg_A, "B": mma.thrfrg_B, "C": mma.thrfrg_C}[which](ty.layout)
    a, b = _MMA_MODES[which]                                # ((ThrV,(ThrI,ThrJ)),(FrgV,(RestI,RestJ,...)))
    r11 = la.rank(lay[1][1])
    rest = (None,) * r11 if isinstance(lay[1][1].shape, tuple) else None
    return slice_spec(op, lay, ((Leaf(slot=0), (Leaf(slot=a), Leaf(slot=b))), (None, rest)))


def mma_operand_dtype(mma, which):
    """The numba type of a register fragment of operand ``which`` (A, B, C) of ``mma``'s atom."""
    name = {"A": mma.atom.a_type, "B": mma.atom.b_type, "C": mma.atom.c_type}[which]
    if name in ("bf16", "e4m3", "e5m2"):
        return {"bf16": types.uint16}.get(name, types.uint8)
    from layoutalg.tiled_mma import _np_type

    return numpy_support.from_dtype(np.dtype(_np_type(name)))


@_treg.register_attr
class _ThrMMAAttrs(AttributeTemplate):
    key = ThrMMAType

    def _part(self, which, ty, args):
        op = f"ThrMMA.partition_{which}"
        if len(args) != 1 or not isinstance(args[0], ANY_TENSOR):
            raise typing_error(op, CuteError(f"expected a tensor, got {args}"))
        try:
            sub, terms = _mma_partition(op, ty.tiled_mma, args[0], which)
        except (CuteError, la.LayoutError) as e:
            raise typing_error(op, e) from None
        return signature(_sliced_type(args[0], sub, terms), *args)

    def _frag(self, which, ty, args):
        op = f"ThrMMA.partition_fragment_{which}"
        sig = self._part(which, ty, args[:1])
        dt = mma_operand_dtype(ty.tiled_mma, which)
        return signature(fragment_type(op, sig.return_type.layout, dt), *args)

    @bound_function("ThrMMA.partition_A")
    def resolve_partition_A(self, ty, args, kws):
        return self._part("A", ty, args)

    @bound_function("ThrMMA.partition_B")
    def resolve_partition_B(self, ty, args, kws):
        return self._part("B", ty, args)

    @bound_function("ThrMMA.partition_C")
    def resolve_partition_C(self, ty, args, kws):
        return self._part("C", ty, args)

    @bound_function("ThrMMA.partition_fragment_A")
    def resolve_partition_fragment_A(self, ty, args, kws):
        return self._frag("A", ty, args)

    @bound_function("ThrMMA.partition_fragment_B")
    def resolve_partition_fragment_B(self, ty, args, kws):
        return self._frag("B", ty, args)

    @bound_function("ThrMMA.partition_fragment_C")
    def resolve_partition_fragment_C(self, ty, args, kws):
        return self._frag("C", ty, args)


def _lower_mma_part(which):
    def lower(context, builder, sig, args):
        thrty, ty = sig.args
        mma = thrty.tiled_mma
        _, terms = _mma_partition("partition", mma, ty, which)
        tid = _thr_value(context, builder, thrty, args[0])
        values = flat_coord_values(builder, mma.thr_layout_vmnk, tid)   # (V,M,N,K) of this thread
        return lower_slice(context, builder, ty, args[1], sig.return_type, terms, values)
    return lower


def _lower_frag(context, builder, sig, args):
    return alloc_fragment(context, builder, sig.return_type)


for _w in "ABC":
    _ireg.lower(f"ThrMMA.partition_{_w}", ThrMMAType, types.Any)(_lower_mma_part(_w))
    _ireg.lower(f"ThrMMA.partition_fragment_{_w}", ThrMMAType, types.Any)(_lower_frag)


def _make_fragment(which, fn):
    @_treg.register_global(fn)
    class _MakeFragment(AbstractTemplate):
        prefer_literal = True

        def generic(self, args, kws):
            op = f"make_fragment_{which}"
            if len(args) != 2 or not isinstance(args[0], ThrMMAType) or not isinstance(args[1], TensorType):
                raise typing_error(op, CuteError(f"expected (thr_mma, partitioned tensor), got {args}"))
            dt = mma_operand_dtype(args[0].tiled_mma, which)
            return signature(fragment_type(op, args[1].layout, dt), *args)

    _ireg.lower(fn, ThrMMAType, TensorType)(_lower_frag)


_make_fragment("A", api.make_fragment_A)
_make_fragment("B", api.make_fragment_B)
_make_fragment("C", api.make_fragment_C)
