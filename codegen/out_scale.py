"""An 8-bit float C (``out_dtype="e4m3"`` or ``"e5m2"``): its output scale and amax, checked
and placed for the Hopper kernel (:class:`codegen.cute.OutputScale` is the device side).

As cuBLASLt's fp8 epilogue and ``torch._scaled_mm(..., scale_result=)``: the kernel stores
``satfinite(scale_out * value)``, where ``value`` is what a 16-bit C would hold (``alpha *
A @ B``, after any fused bias and activation or user epilogue), and writes the largest
``|value|`` over C into ``amax`` (before ``scale_out``: the amax a delayed-scaling recipe
derives the next scale from). ``beta`` must be 0: an 8-bit C is not read.

Arrays: a torch ``float8_e4m3fn``/``float8_e5m2`` C; other kinds hold the bits in uint8
arrays (a new C is one). ``scale_out``: a real number, or a 1-element float32 CUDA tensor
that the kernel reads (graph-safe, as the input scales). ``amax``: a 1-element float32 array
of the operands' kind on their device (numpy in numba's simulator), overwritten by each call.
"""

from __future__ import annotations

import numpy as np

from .config import FP8_OUT
from .errors import GemmError
from .sm90.args import OutScale

__all__ = ["FP8_OUT", "OutScale", "check_out_scale", "out_scale", "fast_out_scale", "fp8_c", "zero_amax"]


def fp8_c(c, out_dtype, op):
    """``c`` (a described C) with uint8 elements read as the 8-bit float ``out_dtype`` names;
    other Cs unchanged."""
    from dataclasses import replace

    from layoutalg.element_types import element_type

    from .host import _out_name

    if c is None or c.etype.name != "u8":
        return c
    name = _out_name(out_dtype, op)
    if name not in FP8_OUT:
        raise GemmError(f"{op}: C is uint8: an 8-bit float C holds its bits in uint8 with out_dtype='e4m3' or "
                        f"'e5m2' (integer outputs are not supported); got out_dtype {out_dtype!r}")
    return replace(c, etype=element_type(name))


def check_out_scale(scale_out, amax, out, beta, a, op):
    """Raise unless ``scale_out`` and ``amax`` fit an ``out`` C (the output type's name)."""
    from .host import _check_scale

    if out not in FP8_OUT:
        if scale_out is not None or amax is not None:
            raise GemmError(f"{op}: scale_out and amax are for an 8-bit float C (out_dtype 'e4m3' or 'e5m2'), got "
                            + (f"an {out} C" if out else "the default C (out_dtype None)"))
        return
    if beta != 0:
        raise GemmError(f"{op}: an {out} C is written, not read: beta must be 0, got {beta}")
    _check_scale(scale_out, "scale_out", op)
    if amax is None:
        return
    shape, dtype = tuple(getattr(amax, "shape", ())), str(getattr(amax, "dtype", ""))
    if not hasattr(amax, "shape") or int(np.prod(shape)) != 1 or not dtype.endswith("float32"):
        raise GemmError(f"{op}: amax must be a 1-element float32 array (it receives the largest |value| of C), got "
                        f"{type(amax).__name__} {dtype or ''} of shape {shape or None}")
    kind = type(amax).__module__.split(".")[0]
    if a.kind == "torch" and not (kind == "torch" and amax.is_cuda and amax.device == a.device):
        raise GemmError(f"{op}: amax must be a float32 CUDA tensor on {a.device}, got one on {amax.device}"
                        if kind == "torch" else f"{op}: amax must be a torch tensor like A, got {type(amax).__name__}")
    if kind == "numpy" and a.kind != "numpy":
        raise GemmError(f"{op}: amax is a numpy array but A is a {a.kind} array; pass an amax of A's kind")
    from .simulation import simulating

    if kind == "numpy" and not simulating():
        raise GemmError(f"{op}: a numpy amax is written in numba's simulator only; on a GPU pass GPU arrays")


def out_scale(scale_out, amax, A, sim=False):
    """The :class:`OutScale` of a launch: the scale as a value (numbers, host arrays) or an
    address (a float32 torch CUDA tensor on A's device), and amax's address (in the
    simulator, a numpy amax registered for the kernel)."""
    from .host import _device_scale, _scale

    at = _device_scale(scale_out, A) if scale_out is not None and not sim else 0
    value = 1.0 if at or scale_out is None else _scale(scale_out, "scale_out", "gemm")
    return OutScale(value, at, _address(amax) if amax is not None else 0)


def fast_out_scale(scale_out, amax, A, stream=None):
    """:func:`out_scale` of a cached call on torch tensors (whose key holds amax's type, shape
    and device: :func:`check_out_scale` checked them); ``stream``: a raw handle the kernel runs
    on other than the current stream, where the tensors it reads must live until it has run."""
    if stream:
        from .host import _keep_for

        _keep_for(stream, A.device, scale_out, amax)
    return out_scale(scale_out, amax, A)


def _address(x):
    mod = type(x).__module__
    if mod.startswith("torch"):
        return int(x.data_ptr())
    if mod.startswith("cupy"):
        return int(x.data.ptr)
    if isinstance(x, np.ndarray):
        from .intrinsics.sim import register_global

        return register_global(x)
    return int(x.__cuda_array_interface__["data"][0])


def zero_amax(amax):
    """Zero ``amax`` on the host side of a launch that runs no kernel there (the simulator,
    an empty problem): torch and CuPy on their current stream."""
    if amax is None:
        return
    mod = type(amax).__module__
    if isinstance(amax, np.ndarray):
        amax[...] = 0
    elif mod.startswith("torch"):
        amax.zero_()
    elif mod.startswith("cupy"):
        amax.fill(0)
    else:
        amax.copy_to_device(np.zeros(amax.shape, np.float32))
