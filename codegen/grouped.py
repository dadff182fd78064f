"""Grouped GEMMs (mixture-of-experts layers): ``codegen.grouped_gemm(x, w, offs)``.

In the shape of ``torch._grouped_mm``'s 2-D by 3-D case: the rows of ``x`` (``(M, K)``) are
split into ``G`` groups at ``offs`` (``G`` ``int32`` end rows, non-decreasing: group ``g`` is
rows ``[offs[g-1], offs[g])``, the first from row 0), and each group is multiplied by its own
matrix of ``w`` (``(G, K, N)``): ``out[rows of g] = x[rows of g] @ w[g]``.

One persistent launch of the Hopper kernel whose tile scheduler walks every group's tiles
(:class:`codegen.cute.TileScheduler` with ``grouped``): it reads ``offs`` from device memory
itself, so a call needs no host synchronization (the group sizes are data, as in a router's
output) and replays in a CUDA graph. A group's rows start a tile row of their own; a tile
inside its group goes out by TMA (a 16-bit output), one that a group's end cuts from
registers, up to the end.
"""

from __future__ import annotations

from .batch import Batch
from .config import FP8
from .errors import GemmError
from .simulation import simulating

__all__ = ["grouped_gemm"]

#: Prepared launches, by everything that selects one (dtypes, shapes, strides, device, options).
_LAUNCHES = {}
_MAX_LAUNCHES = 256


def _array(x, op, name, rank):
    """The :class:`codegen.host._Array` of ``x`` (in the simulator, at its registered address)."""
    from dataclasses import replace

    from .host import _BITS_IN, _describe

    d = _describe(x, op, name, _BITS_IN, ranks=(rank,))
    if d.kind == "numpy" and simulating():
        from .intrinsics.sim import register_global

        d = replace(d, ptr=register_global(x))
    return d


def _check_offsets(offs, G, op):
    shape = tuple(int(e) for e in getattr(offs, "shape", ()))
    dt = str(getattr(offs, "dtype", ""))
    if shape != (G,) or dt not in ("torch.int32", "int32"):
        raise GemmError(f"{op}: offs must be {G} int32 end rows (one a group of w), got "
                        f"{type(offs).__name__} of shape {shape} and dtype {dt or None}")


def _offsets(offs, x, op):
    """The address of ``offs`` (checked by :func:`_check_offsets`), contiguous, beside ``x``."""
    import numpy as np

    G = int(offs.shape[0])
    mod = type(offs).__module__
    if mod.startswith("torch"):
        if not offs.is_cuda or offs.device != x.device or (G > 1 and offs.stride(0) != 1):
            raise GemmError(f"{op}: offs must be a contiguous int32 tensor on {x.device}, got one on {offs.device} "
                            f"with stride {offs.stride()}")
        return int(offs.data_ptr())
    if mod.startswith("cupy"):
        return int(offs.data.ptr)
    if isinstance(offs, np.ndarray) and simulating():
        from .intrinsics.sim import register_global

        return register_global(np.ascontiguousarray(offs) if not offs.flags.c_contiguous else offs)
    raise GemmError(f"{op}: offs is a {type(offs).__name__}; pass an int32 tensor on the operands' device")


def _out_type(et):
    """The element type of a new ``out``: x's, bfloat16 for 8-bit floats (as ``torch._scaled_mm``)."""
    from layoutalg.element_types import element_type

    return element_type("bf16") if et.name in FP8 else et


def _scale(s, G, name, x, op, keep, st):
    """``(number, address)`` of a scale: a number folds into alpha; an array of ``G`` float32
    values (one a group) or, for torch, of one (the same for all: copied into ``G`` here, on
    the launch's stream ``st``, before the kernel that reads it) is read by the kernel at its
    address."""
    import numbers

    import numpy as np

    if s is None:
        return 1.0, 0
    if isinstance(s, numbers.Real) and not isinstance(s, bool):
        return float(s), 0
    shape = tuple(int(e) for e in getattr(s, "shape", (None,)))
    dt = str(getattr(s, "dtype", ""))
    if shape not in ((G,), (1,), ()) or dt not in ("torch.float32", "float32"):
        raise GemmError(f"{op}: {name} must be a number, or float32 scales, one for each of the {G} groups (or one "
                        f"for all), got {type(s).__name__} of shape {shape} and dtype {dt or None}")
    mod = type(s).__module__
    if mod.startswith("torch"):
        if not s.is_cuda or s.device != x.device:
            raise GemmError(f"{op}: {name} is on {s.device}; the kernel reads it: put it on {x.device}")
        if shape != (G,) or (G > 1 and s.stride(0) != 1):
            import contextlib

            import torch

            on = torch.cuda.stream(torch.cuda.ExternalStream(st, device=s.device)) if st else contextlib.nullcontext()
            with on:                                   # allocated and written on the launch's stream
                s = s.reshape(-1).expand(G).contiguous()
        keep.append(s)
        return 1.0, int(s.data_ptr())
    if mod.startswith("cupy"):
        if shape != (G,) and G > 1 or G > 1 and s.strides[0] != 4:
            raise GemmError(f"{op}: {name} is a CuPy array of shape {shape}, strides {s.strides}: pass {G} "
                            f"contiguous float32 scales, one a group")
        return 1.0, int(s.data.ptr)
    if isinstance(s, np.ndarray) and simulating():
        from .intrinsics.sim import register_global

        s = np.ascontiguousarray(np.broadcast_to(s.reshape(-1), (G,)))
        keep.append(s)
        return 1.0, register_global(s)
    raise GemmError(f"{op}: {name} is a {type(s).__name__}; pass a number or a float32 array on the operands' device")


def _prepare(x, w, o, op, config=None):
    """The Hopper launcher of these operands, compiled on first use."""
    from . import host as H
    from .config import GemmConfig
    from .sm90.kernel import WgmmaKey, get_wgmma_kernel
    from .sm90.launch import WgmmaLauncher, tma_ok

    M, K = x.shape
    G, K2, N = w.shape
    if K != K2:
        raise GemmError(f"{op}: inner dimensions differ: x is {M}x{K}, w is {G}x{K2}x{N}")
    fp8 = x.etype.name in FP8 and w.etype.name in FP8
    if not fp8 and (x.etype != w.etype or x.etype.name not in ("f16", "bf16")):
        raise GemmError(f"{op}: x and w must both be f16, both bf16, or 8-bit floats (e4m3, e5m2), got "
                        f"{x.etype.name} and {w.etype.name}")
    if x.kind != w.kind or (x.kind == "torch" and x.device != w.device):
        raise GemmError(f"{op}: x and w must be arrays of one kind on one device, got {x.kind} on {x.device} and "
                        f"{w.kind} on {w.device}")
    if x.kind == "numpy" and not simulating():
        raise GemmError(f"{op}: x is a numpy array; a grouped GEMM runs on GPU arrays (torch, CuPy), or on numpy "
                        f"arrays in numba's simulator")
    if 0 in (M, N, K, G):
        raise GemmError(f"{op}: x {x.shape} and w {w.shape} have an extent 0")
    cc = (9, 0) if simulating() else H._device_cc()
    if cc < (9, 0):
        raise GemmError(f"{op}: a grouped GEMM runs on the Hopper kernel (compute capability 9.0); this GPU is "
                        f"{cc[0]}.{cc[1]}")
    eb = x.etype.bits // 8
    w_nk = ((N, K), (w.strides[2], w.strides[1]))              # each group's B as (N, K)
    b_major = H._major(*w_nk)
    a_major = H._major(x.shape, x.strides)
    if not tma_ok(a_major, x.shape, x.strides, x.ptr, eb) or not tma_ok(b_major, w_nk[0], w_nk[1], w.ptr, eb) \
            or (G > 1 and (w.strides[0] <= 0 or (w.strides[0] * eb) % 16)):
        raise GemmError(f"{op}: x (strides {x.strides}) and w (strides {w.strides}) must be readable by TMA: 16-byte "
                        f"aligned, unit stride along one dimension, other strides multiples of 16 bytes")
    if fp8 and (a_major, b_major) != ("K", "K"):
        raise GemmError(f"{op}: 8-bit float operands must be K-major (as torch._scaled_grouped_mm's): x row-major "
                        f"(M, K), w with unit stride along K (w_t.transpose(1, 2) of a contiguous (G, N, K)); got x "
                        f"strides {x.strides}, w strides {w.strides}")
    if o is not None:
        if o.shape != (M, N) or o.etype.name not in ("f16", "bf16", "f32") or (o.strides[1] != 1 and N > 1):
            raise GemmError(f"{op}: out must be a row-major (M, N) = ({M}, {N}) f16, bf16 or f32 array, got shape "
                            f"{o.shape}, {o.etype.name}, strides {o.strides}")
        if o.kind != x.kind:
            raise GemmError(f"{op}: out is a {o.kind} array, x a {x.kind} array")
    out_name = o.etype.name if o is not None else _out_type(x.etype).name
    sms = 132 if simulating() else H._multiprocessors()
    if config is not None:
        if not isinstance(config, GemmConfig) or config.path != "wgmma" or config.dtype != x.etype.name \
                or config.b_type != w.etype.name:
            raise GemmError(f"{op}: config must be a {x.etype.name} GemmConfig with path='wgmma'"
                            + (f" and b_dtype {w.etype.name!r}" if w.etype != x.etype else "") + f", got {config!r}")
        cfg = config.with_(out_dtype=out_name, grouped=True)
    else:
        cfg = GemmConfig.default(x.etype.name, max(1, M // G), N, K, out_name, arch=cc, sms=sms, batch=G,
                                 b_dtype=w.etype.name if fp8 else None)
        # groups of two tile rows or more: clusters of two CTAs, vertical neighbours in a group,
        # share its B (each loads half, multicast). On the H200 (bf16, N 4096, K 7168, against
        # torch._grouped_mm): 64 groups of 256 rows 0.93 with clusters, 0.88 without; 8 of 2048
        # 1.02 and 1.00; but 128 groups of 128 rows (one tile row: a pair's second tile idle)
        # 0.65 against 0.98 (benchmarks/RESULTS.md, 2026-11-29)
        pairs = M // G >= 2 * cfg.bm and not simulating()
        cfg = cfg.with_(grouped=True, split_k=1, cluster_m=2 if pairs else 1)
    # a 16-bit C is stored by TMA, overlapped with the next tile's MMAs, but for the tiles a
    # group's end cuts (TMA clips at C's edges only), which are stored from registers
    compiled = get_wgmma_kernel(WgmmaKey(cfg, a_major, b_major, "tma" if out_name in ("f16", "bf16") else "registers"))
    launcher = WgmmaLauncher(compiled, M, N, K, (x.shape, x.strides), w_nk, (o.strides if o is not None else (N, 1)),
                             Batch(G, 0, w.strides[0], 0))
    return launcher


def grouped_gemm(x, w, offs, out=None, *, scale_a=None, scale_b=None, stream=None, config=None):
    """``out[rows of g] = x[rows of g] @ w[g]`` for the groups of rows that ``offs`` ends
    (``torch._grouped_mm(x, w, offs=offs)``); returns ``out``.

    ``x``: (M, K) and ``w``: (G, K, N), both f16 or both bf16 torch (or CuPy) CUDA arrays that
    TMA reads (16-byte aligned, unit stride along one dimension: ``w`` may be
    ``w_t.transpose(1, 2)`` of a contiguous ``(G, N, K)``), or 8-bit floats (e4m3, e5m2, mixed),
    K-major both (x row-major, ``w`` that transpose), with ``scale_a`` and ``scale_b``: numbers,
    or float32 arrays of one scale a group (or one for all), read by the kernel, which
    multiplies group ``g``'s products by ``scale_a[g] * scale_b[g]`` (the dequantization of
    each group's rows of x and of its expert's weights); ``offs``: ``G`` int32 end rows on
    the same device, non-decreasing, at most M (the kernel reads them: values that decrease
    or pass M shorten groups and never reach rows outside ``x`` and ``out``; they are read as
    unsigned, so a negative one is past M). Empty groups are allowed. ``out``: a row-major
    (M, N) f16, bf16 or f32 array, or None (a new one of x's type; bfloat16 for 8-bit floats). Rows past ``offs[-1]``
    are not written. On a Hopper GPU (compute capability 9.0), or numpy arrays in numba's
    simulator. ``stream``: as :func:`codegen.gemm`'s; ``config``: a Hopper
    :class:`~codegen.GemmConfig` (``path="wgmma"``, without split-K; clusters of two CTAs
    share a group's B) instead of the default plan for the groups' average size.

    Under ``torch.compile`` (``out`` None) it is the operator ``torch.ops.layoutalg.grouped_mm``,
    which ``fullgraph=True`` traces as one node; on torch tensors that require a gradient
    (``out`` None) it is that operator too, differentiable (:func:`codegen.torch_ops.grouped_mm`:
    the weights' gradient reads ``offs`` on the host); 8-bit floats are not differentiable.
    """
    op = "grouped_gemm"
    scaled = scale_a is not None or scale_b is not None
    if out is None and type(x).__module__.startswith("torch"):
        import torch

        grad = (x.requires_grad or getattr(w, "requires_grad", False)) and torch.is_grad_enabled()
        if (grad or torch.compiler.is_compiling()) and scaled:
            raise GemmError(f"{op}: the operator that torch.compile traces and autograd differentiates takes no "
                            f"scales (8-bit floats are not differentiable); call it eagerly, without gradients")
        if grad and (stream is not None or config is not None):
            raise GemmError(f"{op}: the differentiable operator (x or w requires a gradient) runs on torch's "
                            f"current stream with the default plan; stream= and config= are for calls without "
                            f"gradients (torch.no_grad())")
        if grad or torch.compiler.is_compiling():   # the operator: differentiable, one node of a graph
            from .torch_ops import grouped_mm

            return grouped_mm(x, w, offs)
    if getattr(x, "requires_grad", False) or getattr(w, "requires_grad", False):
        import torch

        if torch.is_grad_enabled():                # never a result whose gradient silently goes missing
            raise GemmError(f"{op}: x or w requires a gradient, and a result written into a given out has "
                            f"none; leave out=None (a new tensor, differentiable), or call it under "
                            f"torch.no_grad()")
    x_, w_ = _array(x, op, "x", 2), _array(w, op, "w", 3)
    o_ = _array(out, op, "out", 2) if out is not None else None
    key = (x_.kind, x_.etype.name, x_.shape, x_.strides, x_.ptr % 16, w_.etype.name, w_.shape, w_.strides,
           w_.ptr % 16, None if o_ is None else (o_.etype.name, o_.shape, o_.strides, o_.ptr % 16), str(x_.device),
           config)
    _check_offsets(offs, w_.shape[0], op)
    launcher = _LAUNCHES.get(key)
    if launcher is None:
        launcher = _prepare(x_, w_, o_, op, config)
        if len(_LAUNCHES) >= _MAX_LAUNCHES:
            _LAUNCHES.clear()
        _LAUNCHES[key] = launcher
    offs_at = _offsets(offs, x, op)
    from .host import GraphCapture, _new_out, _stream_handle

    st = 0 if simulating() else _stream_handle(stream, x_.kind, x_.device)
    keep = []
    fa, sa = _scale(scale_a, w_.shape[0], "scale_a", x, op, keep, st)
    fb, sb = _scale(scale_b, w_.shape[0], "scale_b", x, op, keep, st)
    if out is None:
        out = _new_out(x, x_.kind, (x_.shape[0], w_.shape[2]), _out_type(x_.etype))
        o_ = _array(out, op, "out", 2)
    if stream is not None and x_.kind == "torch" and (scale_a is not None or scale_b is not None):
        from .host import _keep_for                   # the scales the kernel reads on that stream

        _keep_for(st, x_.device, scale_a, scale_b)
    launcher(x_.ptr, w_.ptr, o_.ptr, fa * fb, 0.0, st, GraphCapture.of(x, st) if x_.kind == "torch" else None, 0,
             (sa, sb, 0), offs_at)
    return out

