"""``gemm`` and ``prepare``: run a generated kernel on the user's arrays.

Accepts numpy arrays (copied to and from the device), numba device arrays, CuPy arrays
and torch tensors (zero-copy), with any strides.  The global layouts come from the
arrays' own shapes and strides; the plan is chosen per dtype, majorness and alignment.

The kernel takes raw device addresses, so a launch needs no array wrappers: a prepared
launch keeps its arguments in place and only writes the three addresses, alpha and
beta before calling the driver.  :func:`gemm` keeps the prepared launches it made,
keyed by everything that selects one (array kinds, dtypes, shapes, strides, alignment,
device, stream and options), so a repeated call costs a dictionary look-up and a launch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from layoutalg.element_types import ElementType, element_type

from .args import mma_sync_args
from .batch import Batch, batch_operands, fold_batch
from .config import ACTIVATIONS, BIAS_DTYPES, DTYPES, FP8, FP8_OUT, KMAJOR_ONLY, OUT_DTYPES, GemmConfig
from .epilogue_fn import TENSOR_DTYPES, UserTensors, check_epilogue
from .epilogue_fn import fast_key as epilogue_fast_key
from .errors import GemmError
from .kernel import KernelKey, get_kernel, simulating
from .emit import residue_for, scheduler

__all__ = ["gemm", "prepare", "GemmLaunch", "GemmError", "PRECISIONS"]

#: ``precision`` values: None or the inputs' own type, or "tf32" for f32 inputs on tensor
#: cores ("f32" keeps f32 inputs on CUDA cores, exact f32 products); "e4m3"/"e5m2" also
#: say that uint8 arrays hold the bits of that 8-bit float (numpy has no fp8 dtype).
PRECISIONS = (None, "f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2")

_SUPPORTED_IN = ("f16", "bf16", "f32", "f64", "e4m3", "e5m2")
#: Accepted as well: uint8 arrays holding 8-bit float bits (with precision or config saying which).
_BITS_IN = _SUPPORTED_IN + ("u8",)


# ---- describing arrays ------------------------------------------------------

@dataclass(frozen=True)
class _Array:
    """What the kernel needs to know of one array."""

    kind: str                 # "torch", "cupy", "numpy" or "cuda" (a CUDA array interface)
    etype: ElementType
    shape: tuple
    strides: tuple            # in elements
    ptr: int                  # device address (0 for numpy: copied later)
    device: object


def _kind(x, op, name):
    mod = type(x).__module__
    if mod.startswith("torch"):
        return "torch"
    if mod.startswith("cupy"):
        return "cupy"
    if isinstance(x, np.ndarray):
        return "numpy"
    if hasattr(x, "__cuda_array_interface__"):
        return "cuda"
    raise GemmError(f"{op}: {name} is a {type(x).__name__}; pass a numpy array, CuPy array, torch tensor "
                    f"or numba device array")


def _etype(x, kind, op, name, allowed):
    dt = x.dtype
    if kind == "cuda" and not hasattr(x, "dtype"):
        dt = np.dtype(x.__cuda_array_interface__["typestr"])
    try:
        et = element_type(dt, op)
    except Exception:
        et = None
    if et is None or et.name not in allowed:
        shown = [t for t in allowed if t != "u8"]
        raise GemmError(f"{op}: {name} has dtype {dt}; supported: {', '.join(shown)}"
                        + (" (and uint8 arrays of 8-bit float bits, with precision='e4m3' or 'e5m2')"
                           if "u8" in allowed else ""))
    return et


def _describe(x, op, name, allowed=_BITS_IN, ranks=(2,)):
    kind = _kind(x, op, name)
    et = _etype(x, kind, op, name, allowed)
    shape = tuple(int(s) for s in x.shape)
    if kind == "torch":
        if not x.is_cuda:
            raise GemmError(f"{op}: torch tensor {name} is on {x.device}; move it to a CUDA device")
        strides, ptr, dev = tuple(int(s) for s in x.stride()), int(x.data_ptr()), x.device
    elif kind in ("numpy", "cupy"):
        item = x.itemsize
        strides = tuple(int(s) // item for s in x.strides)
        ptr = 0 if kind == "numpy" else int(x.data.ptr)
        dev = "host" if kind == "numpy" else x.device.id
    else:
        cai = x.__cuda_array_interface__
        item = np.dtype(cai["typestr"]).itemsize
        strides = (tuple(s // item for s in cai["strides"]) if cai.get("strides")
                   else tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape))))
        ptr, dev = int(cai["data"][0]), "cuda"
    if len(shape) not in ranks:
        raise GemmError(f"{op}: {name} must be {' or '.join(f'{r}-D' for r in ranks)}, got shape {shape}")
    return _Array(kind, et, shape, strides, ptr, dev)


def _split_batch(a, b, c, op):
    """``(a, b, c, batch)``: a batch of GEMMs, ``a`` (L,M,K), ``b`` (L,K,N), ``c`` (L,M,N) or
    None (3-D :class:`_Array`), as their first matrices (2-D, at the same addresses) and the
    :class:`~codegen.batch.Batch` of element strides between matrices (a new C: contiguous).
    The matrices of C must not share memory (each is written)."""
    if len(a.shape) != 3 or len(b.shape) != 3 or (c is not None and len(c.shape) != 3):
        raise GemmError(f"{op}: a batch of GEMMs takes A (L,M,K), B (L,K,N) and C (L,M,N), got shapes {a.shape}, "
                        f"{b.shape}" + (f", {c.shape}" if c is not None else ""))
    L, M, _ = a.shape
    N = b.shape[2]
    if b.shape[0] != L or (c is not None and c.shape[0] != L):
        raise GemmError(f"{op}: batches of {L} (A {a.shape}) and {b.shape[0]} (B {b.shape})"
                        + (f" and {c.shape[0]} (C {c.shape})" if c is not None else "") + " matrices differ")
    sc = c.strides[0] if c is not None else M * N
    mats = [replace(x, shape=x.shape[1:], strides=x.strides[1:]) if x is not None else None for x in (a, b, c)]
    if c is not None and L > 1 and M * N and abs(sc) * max(c.etype.bits // 8, 1) < _span(mats[2])[1] - _span(mats[2])[0]:
        raise GemmError(f"{op}: C's {L} matrices of {M}x{N} share memory (strides {c.strides}): each is written; "
                        f"pass a C whose matrices are apart")
    return mats[0], mats[1], mats[2], Batch(L, a.strides[0], b.strides[0], sc)


def _major(shape, strides):
    """'K' when the K coordinate (mode 1) is contiguous, 'MN' when the row coordinate is, else 'K'."""
    sr, sk = strides
    if shape[1] == 1:
        sk = 1 if sr != 1 else sk
    if sk == 1:
        return "K"
    if sr == 1 or shape[0] == 1:
        return "MN"
    return "K"


def _vec(bits, major, shape, strides, ptr):
    """Elements per cp.async (16, 8 or 4 bytes) that alignment allows, or None (element-wise copies)."""
    eb = bits // 8
    cont, other = (1, 0) if major == "K" else (0, 1)
    if strides[cont] != 1 and shape[cont] != 1:
        return None
    for nbytes in (16, 8, 4):
        v = nbytes // eb
        if v < 1:
            continue
        if shape[cont] % v == 0 and (strides[other] % v == 0 or shape[other] == 1) and ptr % nbytes == 0:
            return v
    return None


# ---- options ----------------------------------------------------------------

def _precision(precision, a):
    if precision is not None and not isinstance(precision, str):
        raise GemmError(f"gemm: precision must be one of {PRECISIONS}, got {precision!r}")
    if precision not in PRECISIONS:
        raise GemmError(f"gemm: precision {precision!r} is not one of {', '.join(repr(p) for p in PRECISIONS)}")
    if precision is None or precision == a.etype.name:
        return a.etype.name
    if precision == "tf32" and a.etype.name == "f32":
        return precision
    if precision in FP8 and a.etype.name == "u8":
        return precision
    need = ("float32" if precision in ("tf32", "f32") else
            f"{precision} (or uint8 arrays of its bits)" if precision in FP8 else precision)
    raise GemmError(f"gemm: precision={precision!r} needs {need} inputs, got {a.etype.name}")


def _out_name(out_dtype, op="gemm"):
    if out_dtype is None:
        return None
    try:
        name = element_type(out_dtype, op).name
    except Exception:
        name = None
    if name not in OUT_DTYPES:
        raise GemmError(f"{op}: out_dtype {out_dtype!r} is not one of {', '.join(OUT_DTYPES)} "
                        f"(names, numpy or torch dtypes)")
    return name


def _describe_c(C, out_dtype, op, ranks=(2, 3)):
    """C described (None for None); uint8 elements are the bits of the 8-bit float ``out_dtype``
    names (:func:`codegen.out_scale.fp8_c`)."""
    if C is None:
        return None
    from .out_scale import fp8_c

    return fp8_c(_describe(C, op, "C", OUT_DTYPES + ("u8",), ranks=ranks), out_dtype, op)


def _check_c(C, c, M, N, op="gemm"):
    if c.shape != (M, N):
        raise GemmError(f"{op}: C has shape {c.shape}, expected {(M, N)}")
    if 0 not in c.shape and any(s == 0 for s, n in zip(c.strides, c.shape) if n > 1):
        raise GemmError(f"{op}: C has strides {c.strides}: a stride 0 (a broadcast view) makes several "
                        f"elements share memory; pass a writable array of its own")
    if c.kind == "numpy" and not C.flags.writeable:
        raise GemmError(f"{op}: C is a read-only numpy array; pass a writable one")


def _span(x):
    """The bytes ``[lo, hi)`` that the elements of ``x`` (an :class:`_Array`) cover, as offsets
    from its address (negative strides reach below it); ``(0, 0)`` for an empty array."""
    if any(n == 0 for n in x.shape):
        return 0, 0
    item = max(x.etype.bits // 8, 1)
    lo = sum((n - 1) * s for n, s in zip(x.shape, x.strides) if s < 0) * item
    hi = sum((n - 1) * s for n, s in zip(x.shape, x.strides) if s > 0) * item + item
    return lo, hi


def _meet(p, span, q, other):
    """Whether the bytes ``span`` from address ``p`` and ``other`` from ``q`` share a byte."""
    return p + span[0] < q + other[1] and q + other[0] < p + span[1] and span[0] != span[1] \
        and other[0] != other[1]


def _overlapped(a, b, c):
    """The names of the operands whose memory C's may share ("A", "B"): C is written while
    they are read, so they are read from private copies.  Bounds, not elements: interleaved
    views that share no element count as overlapping (a copy too many, never a wrong result)."""
    if c is None:
        return ()
    sc = _span(c)
    return tuple(n for n, x in (("A", a), ("B", b)) if _meet(x.ptr, _span(x), c.ptr, sc))


# ---- launching ----------------------------------------------------------------

@functools.cache
def _device_cc():
    """The GPU's compute capability, looked up once (it costs driver calls)."""
    from . import driver

    try:
        return driver.compute_capability()
    except driver.DriverError as e:
        raise GemmError(f"gemm: no usable CUDA GPU ({e}); set NUMBA_ENABLE_CUDASIM=1 to run in numba's "
                        f"simulator") from None


@functools.cache
def _multiprocessors():
    """The GPU's multiprocessors, looked up once."""
    from . import driver

    return driver.multiprocessors()


def _check_gpu():
    if simulating():
        return
    cc = _device_cc()
    if cc < (8, 0):
        raise GemmError(f"gemm: the generated kernels use cp.async, ldmatrix and mma.sync, which need compute "
                        f"capability 8.0 or newer; this GPU is {cc[0]}.{cc[1]}")


class _Launcher(UserTensors):
    """One kernel, grid and block with its arguments held in place.

    ``__call__(a, b, c, alpha, beta, stream)`` writes the addresses and scalars into the
    argument slots and launches: one driver call on a GPU, numba's simulated dispatcher
    in the simulator.  A ``batch`` (:class:`~codegen.batch.Batch`) is one launch too: the
    tile scheduler numbers the tiles of every matrix, and the kernel steps A, B and C by
    their batch strides (``sal``, ``sbl``, ``scl``).
    """

    def __init__(self, compiled, grid, M, N, K, strides, batch=None):
        cfg = compiled.config
        self.compiled = compiled
        count = batch.count if batch is not None else 1
        self.grid = grid * count
        self.threads = cfg.threads
        self.smem = compiled.smem_bytes
        self.slots = mma_sync_args(cfg.dtype, compiled.key.user is not None).slots()
        self.slots.set(M=M, N=N, K=K, alpha=1.0, **dict(zip(("sam", "sak", "sbn", "sbk", "scm", "scn"), strides)))
        if batch is not None:
            self.slots.set(sal=batch.a, sbl=batch.b, scl=batch.c)
        self.slots.set(**scheduler(cfg).host_params(M, N, K, grid, batch=count))
        self._hot = self.slots.values_of("A", "B", "C", "alpha", "beta")
        self.fn = compiled.function

    #: Whether the kernel reads per-tensor scales from device memory (the Hopper kernel's
    #: ``scale_a``, ``scale_b``); here they are folded into ``alpha`` on the host.
    device_scales = False

    def __call__(self, a, b, c, alpha, beta, stream=0, capture=None, bias=0, scales=(0, 0, 0), out=None):
        sa, sb, sc, al, be = self._hot             # (capture: nothing to allocate; no fused bias, no 8-bit C here)
        sa.value, sb.value, sc.value, al.value, be.value = a, b, c, alpha, beta
        if self.fn is not None:
            self.fn.launch(self.grid, self.threads, self.smem, stream, self.slots.pointers)
            return
        self.compiled.kernel[self.grid, self.threads, stream, self.smem](*self.slots.python_values())


def _stream_handle(stream, kind, device):
    """A raw stream handle (int) from None, an int or a stream object."""
    if stream is None:
        if kind == "torch":
            import torch

            return int(torch.cuda.current_stream(device).cuda_stream)
        if kind == "cupy":
            import cupy

            return int(cupy.cuda.get_current_stream().ptr)
        return 0
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return int(stream)
    for attr in ("cuda_stream", "ptr"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    h = getattr(stream, "handle", None)
    if h is not None:
        return int(getattr(h, "value", h) or 0)
    raise GemmError(f"gemm: stream must be None, an int handle or a torch/CuPy/numba stream, got {stream!r}")


# ---- the API ----------------------------------------------------------------

class GemmLaunch:
    """A prepared GEMM: arrays checked, kernel compiled, arguments in place; calling it launches.

    Build it with :func:`prepare` and call it repeatedly on the same arrays (e.g. in a
    training loop or a benchmark).  Calling returns C (for numpy C, copied back into the
    caller's array).
    """

    def __init__(self, launcher, ptrs, alpha, beta, stream, C, keep=(), copy_back=None, copy_in=None, bias=0,
                 scales=(0, 0, 0), tensors=(), out=None):
        self._bias = bias            # the address of a fused bias, else 0
        self._out = out              # an 8-bit float C's OutScale, else None
        self._tensors = tensors      # the EpilogueTensors a user epilogue reads
        self._scales = scales        # the addresses of scales the kernel reads, else 0
        self._launcher = launcher
        self._ptrs = ptrs
        self._alpha = alpha
        self._beta = beta
        self._stream = stream
        self.C = C
        self._keep = keep
        self._copy_back = copy_back
        self._copy_in = copy_in      # refreshes private copies of operands that C overlaps

    @property
    def kernel(self):
        """The :class:`~codegen.kernel.CompiledGemm` this launch runs (on the Hopper path with
        a column-major C, the kernel of the transposed GEMM ``C^T = B^T @ A^T``)."""
        return self._launcher.compiled

    @property
    def source(self):
        """The generated numba source of the kernel this launch runs."""
        return self._launcher.compiled.source

    def __call__(self):
        a, b, c = self._ptrs
        if self._copy_in is not None:
            self._copy_in()
        if self._tensors:
            self._launcher.set_tensors(self._tensors)
        self._launcher(a, b, c, self._alpha, self._beta, self._stream, None, self._bias, self._scales, out=self._out)
        if self._copy_back is not None:
            self._copy_back()
        return self.C


@dataclass(frozen=True)
class _Setup:
    """The launch decided for one call signature: kernel, grid and output type."""

    launcher: _Launcher
    out: ElementType
    M: int
    N: int


@dataclass(frozen=True)
class _Checked:
    """The operands of a call once checked: A and B as the kernel reads them (8-bit floats
    as their bits), the sizes, the computation's type, B's 8-bit type and C's type (None:
    the default)."""

    a: object
    b: object
    M: int
    N: int
    K: int
    kind: str
    b_fp8: str | None
    out: str | None


@dataclass(frozen=True)
class _Fused:
    """A fused epilogue operation: ``activation`` (or None) and the bias's element type (or
    None), with the bias's address; ``rows``: a bias per row (``bias[m]``), else per column."""

    activation: str | None
    bias: str | None
    ptr: int = 0
    rows: bool = False


def _check_fused(bias, activation, a, N, beta, op, M=None):
    """The :class:`_Fused` of ``bias`` and ``activation`` (None when both are None), checked:
    a bias is ``N`` elements with unit stride, ``(N,)`` or ``(1, N)`` (one a column), or
    ``(M, 1)`` (one a row; ``M`` None: refused, a batch of GEMMs), of f16, bf16 or f32, of the
    operands' kind and device; ``beta`` is 0."""
    if bias is None and activation is None:
        return None
    if activation is not None and activation not in ACTIVATIONS:
        raise GemmError(f"{op}: activation {activation!r} is not one of {', '.join(ACTIVATIONS)}")
    if beta != 0:
        raise GemmError(f"{op}: a fused bias or activation computes activation(alpha * A @ B + bias); beta must "
                        f"be 0, got {beta}")
    if a.kind == "numpy" and not simulating():
        raise GemmError(f"{op}: a fused bias or activation runs on GPU arrays (torch, CuPy, numba device arrays) "
                        f"on the Hopper kernel (numpy arrays in numba's simulator only)")
    if bias is None:
        return _Fused(activation, None)
    shape = tuple(getattr(bias, "shape", (None, None, None)))
    rows = bias_per_row(shape, N)
    if len(shape) not in (1, 2) or (len(shape) == 2 and shape[0] != 1 and not rows):
        raise GemmError(f"{op}: bias must be N={N} elements, (N,) or (1, N), one a column, or (M, 1), one a row, "
                        f"got shape {shape if hasattr(bias, 'shape') else type(bias).__name__}")
    if rows and M is None:
        raise GemmError(f"{op}: a bias per row, shape {shape}, takes one GEMM; got a batch of GEMMs")
    if len(shape) == 1:
        bias = bias.unsqueeze(0) if type(bias).__module__.startswith("torch") else bias[None, :]   # a (1,N) view
    x = _bias_extent(_describe(bias, op, "bias", BIAS_DTYPES), rows, M, N, op)
    if x.kind != a.kind or x.device != a.device:
        raise GemmError(f"{op}: bias is a {x.kind} array on {x.device}, A a {a.kind} array on {a.device}")
    return _Fused(activation, x.etype.name, x.ptr, rows)


def bias_per_row(shape, N):
    """Whether a bias of ``shape`` is one a row of an ``(M, N)`` C: ``(M, 1)``, as torch
    broadcasts ``A @ B + bias`` (``(1, 1)`` with ``N = 1`` is one a column)."""
    return len(shape) == 2 and shape[1] == 1 and (shape[0] != 1 or N != 1)


def _bias_extent(x, rows, M, N, op):
    """``x``, a described 2-D bias, unless it is not ``M`` contiguous elements along its first
    mode (``rows``) or ``N`` along its second."""
    i, n = (0, M) if rows else (1, N)
    if x.shape[i] != n or x.shape[1 - i] != 1 or (n > 1 and x.strides[i] != 1):
        raise GemmError(f"{op}: bias must hold {'M' if rows else 'N'}={n} contiguous elements, got shape "
                        f"{x.shape}, element strides {x.strides}")
    return x


def _check_user(epilogue, epilogue_args, fused, batched, a, op):
    """A user's element-wise epilogue, checked (:func:`codegen.epilogue_fn.check_epilogue`):
    ``(EpilogueFunction, EpilogueTensor...)``, or ``(None, ())``; ``fused``: a bias or an
    activation is asked for too."""
    user, tensors = check_epilogue(epilogue, epilogue_args,
                                   lambda x, name: _describe(x, op, name, TENSOR_DTYPES, ranks=(1, 2)), a, op)
    if user is None:
        return None, ()
    if fused:
        raise GemmError(f"{op}: epilogue= and bias=/activation= exclude each other; the epilogue function can add "
                        f"the bias (pass it in epilogue_args) and apply the activation")
    if batched:
        raise GemmError(f"{op}: a user epilogue runs on one GEMM (A (..., M, K) with a 2-D B folds into one); "
                        f"got a batch of GEMMs")
    if a.kind == "numpy" and tensors and not simulating():
        raise GemmError(f"{op}: epilogue_args of numpy arrays are read in numba's simulator only; on a GPU pass "
                        f"GPU arrays (torch, CuPy, numba device arrays) for A, B and the epilogue's arrays")
    return user, tensors


def _check_operands(C, a, b, c, config, out_dtype, precision, op):
    """Every check of the arrays, the config and the output type that a call makes, empty
    problems included; raises :class:`GemmError` naming the values."""
    ka, kb = a.kind, b.kind
    if ka != kb and not ({ka, kb} <= {"cupy", "cuda"}):
        raise GemmError(f"{op}: A is a {ka} array but B is a {kb} array; pass arrays of one kind")
    a, b = _fp8_bits(a, b, precision, config, op)
    if a.etype != b.etype and not (a.etype.name in FP8 and b.etype.name in FP8):
        raise GemmError(f"{op}: A is {a.etype} but B is {b.etype}; convert one (supported: {', '.join(_SUPPORTED_IN)}; "
                        f"8-bit floats mix: e4m3 with e5m2)")
    M, K = a.shape
    K2, N = b.shape
    if K != K2:
        raise GemmError(f"{op}: inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    if ka == "torch" and (a.device != b.device or (c is not None and c.device != a.device)):
        raise GemmError(f"{op}: arrays on different devices: A {a.device}, B {b.device}"
                        + (f", C {c.device}" if c is not None else ""))
    kind = _precision(precision, a)
    if config is not None and not isinstance(config, GemmConfig):
        raise GemmError(f"{op}: config must be a codegen.GemmConfig, got {config!r}")
    if config is not None and config.dtype != kind and not (config.dtype in ("tf32", "f32") and a.etype.name == "f32"
                                                            and precision is None):
        raise GemmError(f"{op}: config is for {config.dtype} but the inputs are {a.etype.name}"
                        + (f" with precision={precision!r}" if precision else ""))
    b_fp8 = b.etype.name if kind in FP8 else None
    if config is not None and b_fp8 and config.b_type != b_fp8:
        raise GemmError(f"{op}: config is for {config.dtype} x {config.b_type} but the inputs are {kind} x {b_fp8}")
    out = _out_name(out_dtype, op)
    if c is not None:
        _check_c(C, c, M, N, op)
        if out is not None and out != c.etype.name:
            raise GemmError(f"{op}: C is {c.etype.name} but out_dtype is {out}; pass one or make them agree")
        out = c.etype.name
    if kind in FP8 and out == "f64":
        raise GemmError(f"{op}: 8-bit float inputs give an f16, bf16, f32, e4m3 or e5m2 C (bf16 by default), got f64")
    if out in FP8_OUT and kind not in ("f16", "bf16", "tf32") + FP8:
        raise GemmError(f"{op}: an {out} C is written by the Hopper kernel, which takes f16, bf16, tf32 or 8-bit "
                        f"float inputs, got {kind}")
    return _Checked(a, b, M, N, K, kind, b_fp8, out)


def _setup(A, B, C, a, b, c, config, out_dtype, precision, op="gemm", beta=0.0, fused=None, batch=None, user=None):
    """Validate everything that does not change between calls with the same signature,
    choose the plan and compile it (``batch``: a :class:`~codegen.batch.Batch` of GEMMs of
    the shape of ``a``, ``b`` and ``c``, or None)."""
    chk = _check_operands(C, a, b, c, config, out_dtype, precision, op)
    a, b, M, N, K, kind, b_fp8, out = chk.a, chk.b, chk.M, chk.N, chk.K, chk.kind, chk.b_fp8, chk.out
    chosen = config is None
    if chosen:
        config = GemmConfig.default(kind, M, N, K, out, b_dtype=b_fp8, batch=batch.count if batch else 1)
    elif out is not None and config.out != out:
        config = config.with_(out_dtype=out)
    if config.dtype not in DTYPES:
        raise GemmError(f"{op}: no kernel for {config.dtype}")
    # B as (N,K): B_nk[n,k] = B[k,n]
    b_shape, b_strides = (N, K), (b.strides[1], b.strides[0])
    a_major, b_major = _major(a.shape, a.strides), _major(b_shape, b_strides)
    if kind in FP8:
        _check_fp8_operands(a, b, a_major, b_major, b_shape, b_strides, op)
    _check_gpu()
    ops = _Operands(a, replace(b, shape=b_shape, strides=b_strides), a_major, b_major, M, N, K,
                    c.strides if c is not None else (N, 1), c.ptr if c is not None else 0, batch)
    hopper = _wgmma_setup(None if chosen else config, config.dtype, out or config.out, ops, op, beta, fused, user)
    if hopper is not None:
        return hopper
    if (out or config.out) in FP8_OUT:
        raise GemmError(f"{op}: an {out or config.out} C is written by the Hopper kernel only (compute capability "
                        f"9.0; f16, bf16, tf32 or 8-bit float operands with a unit stride along a dimension, "
                        f"16-byte aligned but for f16 and bf16)")
    if fused is not None:
        raise GemmError(f"{op}: a fused bias or activation runs on the Hopper kernel only (compute capability "
                        f"9.0; f16, bf16, tf32 or 8-bit float operands with a unit stride along a dimension, "
                        f"16-byte aligned but for f16 and bf16"
                        + ("; in numba's simulator, config=GemmConfig(..., path='wgmma')" if simulating() else "")
                        + ")")
    bits = config.bits
    # every matrix of a batch starts as aligned as the first and its batch stride allow
    eb = bits // 8
    a_vec = _vec(bits, a_major, a.shape, a.strides, a.ptr | (batch.a * eb if batch else 0))
    b_vec = _vec(bits, b_major, b_shape, b_strides, b.ptr | (batch.b * eb if batch else 0))
    if chosen and (not a_vec or not b_vec or min(a_vec, b_vec) * bits < 128):
        # operands copied element-wise or in pieces under 16 bytes: the smaller plan
        config = GemmConfig.default(kind, M, N, K, config.out_dtype, aligned=False,
                                    batch=batch.count if batch else 1)
    key = KernelKey(config, a_major, b_major, a_vec, b_vec, a_vec is None, b_vec is None, residue_for(config, M, N),
                    user)
    compiled = get_kernel(key)
    grid = -(-M // config.bm) * -(-N // config.bn)
    c_strides = c.strides if c is not None else (N, 1)
    strides = (a.strides[0], a.strides[1], b_strides[0], b_strides[1], c_strides[0], c_strides[1])
    return _Setup(_Launcher(compiled, grid, M, N, K, strides, batch), element_type(config.out), M, N)


@dataclass(frozen=True)
class _Operands:
    """A GEMM as the Hopper kernel reads it: A as (M,K), B as (N,K) (``b`` holds the shape and
    strides of B's transpose, so both operands are (rows, K)), their majorness, and C's element
    strides and address; ``batch``: a :class:`~codegen.batch.Batch` of such GEMMs, or None.
    ``swapped``: this is the caller's GEMM transposed (see ``transposed``)."""

    a: _Array
    b: _Array
    a_major: str
    b_major: str
    M: int
    N: int
    K: int
    c_strides: tuple
    c_ptr: int
    batch: Batch | None = None
    swapped: bool = False

    def transposed(self):
        """``C^T = B^T @ A^T``: B (as (N,K)) is the new A, A (as (M,K)) the new B as (N',K), M and
        N trade places and C's strides reverse (a column-major C is a row-major ``C^T``). Each
        operand keeps its majorness, so K-major operands stay K-major."""
        return replace(self, a=self.b, b=self.a, a_major=self.b_major, b_major=self.a_major, M=self.N, N=self.M,
                       c_strides=self.c_strides[::-1], swapped=not self.swapped,
                       batch=self.batch.transposed() if self.batch is not None else None)


class _SwappedLauncher:
    """The launcher of a transposed GEMM (``C^T = B^T @ A^T``), called with the caller's
    ``(a, b, c, ...)``: it passes B's address as the kernel's A and A's as its B, so every
    caller (a prepared launch, :func:`gemm`'s cached launches) hands over the addresses in
    the caller's order."""

    def __init__(self, inner):
        self.inner = inner

    @property
    def compiled(self):
        """The kernel it runs (compiled for the transposed problem)."""
        return self.inner.compiled

    def check(self):
        self.inner.check()

    @property
    def device_scales(self):
        return self.inner.device_scales

    def __call__(self, a, b, c, alpha, beta, stream=0, capture=None, bias=0, scales=(0, 0, 0), out=None):
        self.inner(b, a, c, alpha, beta, stream, capture, bias, scales, out=out)


def _wgmma_setup(config, kind, out, ops, op, beta=0.0, fused=None, user=None):
    """The Hopper launch (wgmma fed by TMA) where the GPU, the types and the layouts allow it,
    else None (the mma.sync kernels run). A config with ``path="wgmma"`` that the operands
    cannot take is an error, and so are 8-bit float inputs that it cannot take (they have no
    other path). tf32 with an MN-major operand (wgmma reads tf32 K-major only) runs on the
    mma.sync path, which reads any layout. A column-major C runs as the transposed GEMM
    ``C^T = B^T @ A^T`` (row-major ``C^T``; ``config`` then tiles ``C^T``)."""
    if config is not None and config.path != "wgmma":
        return None
    fp8 = kind in FP8 or out in FP8_OUT                 # (only the Hopper kernel takes them)
    if simulating() and config is None and not fp8 and fused is None:
        return None                                     # the simulator runs the Hopper kernel when it must
    cc = (9, 0) if simulating() else _device_cc()
    if config is None and not fp8 and (cc < (9, 0) or kind not in ("f16", "bf16", "tf32")):
        return None
    from .sm90.kernel import WgmmaKey, get_wgmma_kernel, wgmma_plan
    from .sm90.launch import WgmmaLauncher, c_tma_ok, paired_c

    why = _wgmma_refusal(cc, kind, ops)
    view = _row_major_c(ops, element_type(out)) if why is None else None
    if why is None and view is None:
        why = f"a row- or column-major C (C strides {ops.c_strides})"
    if why is not None:
        if config is not None:
            raise GemmError(f"{op}: config.path='wgmma' needs {why}")
        if fp8:
            raise GemmError(f"{op}: {kind} inputs run on the wgmma path only, which needs {why}" if kind in FP8 else
                            f"{op}: an {out} C is written by the wgmma path only, which needs {why}")
        return None
    cfg = _wgmma_config(config, kind, out, view, cc)
    if cfg.path != "wgmma":
        return None
    copied = _copied(view)
    if copied and (cfg.bn > 128 or cfg.cluster_m > 1):
        if config is not None:
            raise GemmError(f"{op}: config.path='wgmma' copies {' and '.join(copied)} (TMA cannot read "
                            f"{'them' if len(copied) > 1 else 'it'}), in tiles of at most 128 columns without "
                            f"clusters; got {cfg.bm}x{cfg.bn} tiles, cluster_m {cfg.cluster_m}")
        cfg = _copy_tile(cfg, view)
    if fused is not None:                           # (C^T = B^T @ A^T: a bias per column is one per row of C^T)
        cfg = cfg.with_(activation=fused.activation, bias=fused.bias, bias_rows=bool(fused.bias) and
                        fused.rows != view.swapped)
    if user is not None and view.swapped:          # (the transposed GEMM would swap m and n): the mma.sync
        if config is not None:                      # kernel, which stores any C
            raise GemmError(f"{op}: config.path='wgmma' with a user epilogue needs a row-major C (the transposed "
                            f"GEMM that writes a column-major C would swap m and n); got C strides {ops.c_strides}")
        return None
    if cfg.cluster_m > 1 and simulating():
        raise GemmError(f"{op}: config.cluster_m={cfg.cluster_m} runs CTAs in clusters, which need a GPU: numba's "
                        f"simulator runs one block after another")
    key = WgmmaKey(cfg, view.a_major, view.b_major, user=user, copy=copied)
    # compile the kernel this call needs (the TMA-store epilogue for beta = 0 and a C that TMA
    # can write; C allocated here is); the launcher compiles the other when a call needs it
    tma = beta == 0 and c_tma_ok(wgmma_plan(key), view.c_ptr, view.c_strides, view.M, view.N, view.batch)
    paired = paired_c(view.c_ptr, view.c_strides, view.M, view.batch, element_type(cfg.out).bits)
    compiled = get_wgmma_kernel(replace(key, epilogue="tma" if tma else "registers" if paired else "elements"))
    launcher = WgmmaLauncher(compiled, view.M, view.N, view.K, (view.a.shape, view.a.strides),
                             (view.b.shape, view.b.strides), view.c_strides, view.batch)
    return _Setup(_SwappedLauncher(launcher) if view.swapped else launcher, element_type(cfg.out), ops.M, ops.N)


def _wgmma_refusal(cc, kind, ops):
    """Why the Hopper kernel cannot read the operands of ``ops`` (the GPU, majorness, the
    operands' layouts), or None. An f16 or bf16 operand that TMA cannot read (an odd row
    stride, say) is copied by the producer warpgroup (:func:`_copied`) where its elements
    are aligned and contiguous along one dimension."""
    a, b = ops.a, ops.b
    eb = a.etype.bits // 8
    if cc < (9, 0):
        return f"a GPU of compute capability 9.0 (this one is {cc[0]}.{cc[1]})"
    if kind in KMAJOR_ONLY and "MN" in (ops.a_major, ops.b_major):
        return (f"K-major operands (wgmma reads {kind} K-major only): A row-major (strides (K', 1)) and B "
                f"column-major (strides (1, K')); got A strides {a.strides}, B strides {b.strides[::-1]}")
    copied = _copied(ops)
    if copied is None:
        return ("16-byte aligned operands with a unit stride and 16-byte multiple row strides (TMA), or f16 or "
                "bf16 operands with a unit stride along one dimension")
    bt = ops.batch
    if bt is not None and bt.count > 1:
        for name, s in (("A", bt.a), ("B", bt.b)):
            if s <= 0 or (name not in copied and (s * eb) % 16):
                return (f"matrices of A and B a positive number of elements apart (a multiple of 16 bytes where "
                        f"TMA reads them), got batch strides {bt.a} and {bt.b} elements")
    return None


def _copied(ops):
    """The operands of ``ops`` ("", "A", "B" or "AB") that the Hopper kernel's producer
    warpgroup copies because TMA cannot read them (:func:`codegen.cute.copy_ok`), or None
    where an operand is readable by neither."""
    from .cute.gmem_copy import copy_ok
    from .sm90.launch import tma_ok

    out = ""
    bt = ops.batch
    for name, x, major in (("A", ops.a, ops.a_major), ("B", ops.b, ops.b_major)):
        eb = x.etype.bits // 8
        stride = (bt.a if name == "A" else bt.b) if bt is not None and bt.count > 1 else 0
        if tma_ok(major, x.shape, x.strides, x.ptr, eb) and (stride * eb) % 16 == 0:
            continue
        if x.etype.name not in ("f16", "bf16") or not copy_ok(major, x.shape, x.strides, x.ptr, eb):
            return None
        out += name
    return out


def _row_major_c(ops, out_et):
    """``ops`` with a C that the Hopper epilogue can write, row-major: ``ops`` itself, or for a
    column-major C (strides (1, ldc)) the transposed GEMM, whose ``C^T`` is row-major; the
    one whose stores go out in pairs of columns (an even row stride, an address aligned to two
    elements) where both are row-major (a C of one row or column); else None."""
    views = [v for v in (ops, ops.transposed()) if v.c_strides[1] == 1]
    for view in views:
        if view.c_strides[0] % 2 == 0 and view.c_ptr % (2 * out_et.bits // 8) == 0:
            return view
    return views[0] if views else None


def _copy_tile(cfg, view):
    """``cfg`` with 128x128 tiles in place of 128x256 (a kernel that copies an operand keeps
    every warpgroup at 168 registers, too few for 128 accumulator columns a thread): 6
    stages, K split as :func:`codegen.config.split_k_for` says for them."""
    from .config import split_k_for

    sms = 132 if simulating() else _multiprocessors()
    batch = view.batch.count if view.batch is not None else 1
    return cfg.with_(bn=128, stages=6, split_k=split_k_for(view.M, view.N, view.K, cfg.bm, 128, cfg.bk, sms, batch))


def _wgmma_config(config, kind, out, view, cc):
    """The Hopper config of the GEMM as the kernel runs it (``view``): the caller's ``config``
    with its A and B types swapped when the GEMM is transposed (mixed 8-bit floats), or the
    default plan for ``view``'s M and N."""
    if config is not None:
        return config.with_(dtype=config.b_type, b_dtype=config.dtype) if view.swapped and config.b_dtype else config
    fp8 = kind in FP8
    return GemmConfig.default(view.a.etype.name if fp8 else kind, view.M, view.N, view.K, out, arch=cc,
                              b_dtype=view.b.etype.name if fp8 else None,
                              sms=132 if simulating() else _multiprocessors(),
                              batch=view.batch.count if view.batch is not None else 1)


def _fp8_bits(a, b, precision, config, op):
    """``a`` and ``b`` with uint8 operands read as the 8-bit float that ``config`` (an 8-bit
    float plan) or ``precision`` ("e4m3"/"e5m2") names; the others unchanged."""
    if "u8" not in (a.etype.name, b.etype.name):
        return a, b
    if isinstance(config, GemmConfig) and config.dtype in FP8:
        ta, tb = config.dtype, config.b_type
    elif precision in FP8:
        ta = tb = precision
    else:
        name = "A" if a.etype.name == "u8" else "B"
        raise GemmError(f"{op}: {name} is uint8: integer GEMMs are not supported; if it holds 8-bit float bits, "
                        f"say which with precision='e4m3' or 'e5m2' (or an e4m3/e5m2 config)")
    for name, x in (("A", a), ("B", b)):
        if x.etype.name not in ("u8", ta if name == "A" else tb):
            raise GemmError(f"{op}: {name} is {x.etype} but the 8-bit float bits of the other operand are read as "
                            f"{ta if name == 'B' else tb}; pass both as uint8 bits or both as 8-bit floats")
    return (replace(a, etype=element_type(ta)) if a.etype.name == "u8" else a,
            replace(b, etype=element_type(tb)) if b.etype.name == "u8" else b)


def _check_fp8_operands(a, b, a_major, b_major, b_shape, b_strides, op):
    """8-bit float operands must be K-major and readable by TMA (as ``torch._scaled_mm``
    requires): A row-major (M,K), B column-major (K,N), i.e. ``B.T`` contiguous; raise a
    GemmError naming the operand, its strides and what is needed."""
    from .sm90.launch import tma_ok

    if a_major != "K" or not tma_ok("K", a.shape, a.strides, a.ptr, 1):
        raise GemmError(f"{op}: A ({a.etype}) has shape {a.shape} and strides {a.strides}: 8-bit float operands "
                        f"must be K-major, A row-major (M,K) with strides (K', 1), K' a multiple of 16 (16-byte "
                        f"rows for TMA), at a 16-byte aligned address (as torch._scaled_mm requires); "
                        f"e.g. pass A.contiguous() with K a multiple of 16")
    if b_major != "K" or not tma_ok("K", b_shape, b_strides, b.ptr, 1):
        raise GemmError(f"{op}: B ({b.etype}) has shape {b.shape} and strides {b.strides}: 8-bit float operands "
                        f"must be K-major, B column-major (K,N) with strides (1, K'), i.e. B.T contiguous, K' a "
                        f"multiple of 16, at a 16-byte aligned address (as torch._scaled_mm requires); "
                        f"e.g. pass B.t().contiguous().t() with K a multiple of 16")


def _new_out(A, kind, shape, et, op="gemm"):
    if et.name in FP8_OUT and kind != "torch":          # an 8-bit float C as its bits
        from layoutalg.element_types import element_type as _et

        et = _et("u8")
    if kind == "torch":
        import torch

        return torch.empty(shape, dtype=getattr(torch, et.torch), device=A.device)
    if kind == "cupy":
        import cupy

        if et.cupy is None:
            raise GemmError(f"{op}: CuPy has no {et.name}; pass C or choose out_dtype='f32'")
        return cupy.empty(shape, dtype=et.cupy)
    if et.numpy is None:
        raise GemmError(f"{op}: numpy has no {et.name}; pass C or choose out_dtype='f32'")
    if kind == "numpy":
        return np.zeros(shape, dtype=et.numpy)
    from numba import cuda

    return cuda.device_array(shape, dtype=et.numpy)


def prepare(A, B, C=None, *, alpha=1.0, beta=0.0, config=None, out_dtype=None, precision=None, stream=None,
            scale_a=None, scale_b=None, bias=None, activation=None, epilogue=None, epilogue_args=(), scale_out=None,
            amax=None):
    """Validate, plan, compile and place the arguments once; returns a :class:`GemmLaunch`
    whose call computes ``alpha * (scale_a * A) @ (scale_b * B) + beta * C`` (see :func:`gemm`).

    Operands are 2-D, or a batch of GEMMs of one shape: A (L,M,K), B (L,K,N), C (L,M,N)
    (any strides; broadcast batch modes: :func:`gemm`).  Scales (and an ``alpha`` tensor) that
    the kernel reads itself (float32 CUDA tensors, Hopper kernel) are read at every call; the
    others are read once, here."""
    op = "prepare"
    a, b = _describe(A, op, "A", ranks=(2, 3)), _describe(B, op, "B", ranks=(2, 3))
    c = _describe_c(C, out_dtype, op)
    batched = 3 in (len(a.shape), len(b.shape)) or (c is not None and len(c.shape) == 3)
    if batched:                                         # shapes checked before any work
        _split_batch(a, b, c, op)
    beta = _scalar(beta, "beta", op)
    if not hasattr(alpha, "shape"):                     # a number (a tensor is a scale below)
        alpha = _scalar(alpha, "alpha", op)
    for x, name in ((alpha, "alpha"), (scale_a, "scale_a"), (scale_b, "scale_b")):
        _check_scale(x, name, op)                       # also for an empty problem, which reads none
    _check_out_scale(scale_out, amax, out_dtype, c, beta, a, op)
    user, tensors = _check_user(epilogue, epilogue_args, bias is not None or activation is not None, batched, a, op)
    fused = _check_fused(bias, activation, a, b.shape[-1], beta, op, None if batched else a.shape[-2])
    if a.shape[-1] == 0 and a.shape[-2] and b.shape[-1] and (user is not None or fused is not None):
        raise GemmError(f"{op}: K is 0: no kernel runs, so " + ("the epilogue function" if user is not None else
                        "the fused bias or activation") + " would not be applied to the zeros; compute it without "
                        "the GEMM")
    if 0 in a.shape or 0 in b.shape:
        return _prepare_empty(A, B, C, a, b, c, beta, config, out_dtype, precision, op, amax)
    if a.kind == "numpy" or simulating():
        alpha = _scale(alpha, "alpha", op) * _scale(scale_a, "scale_a", op) * _scale(scale_b, "scale_b", op)
        return _prepare_host(A, B, C, a, b, c, alpha, beta, config, out_dtype, precision, op, user,
                             tuple(zip(tensors, epilogue_args)), (scale_out, amax), (fused, bias))
    handle = _stream_handle(stream, a.kind, a.device)
    keep, refresh = (A, B, C), []
    for name in _overlapped(a, b, c):     # C shares memory with A or B: read a private copy
        X, x = (A, a) if name == "A" else (B, b)
        T, fn = _device_copy(X, x.kind, handle, name, op)
        t = replace(_describe(T, op, name), etype=x.etype)
        A, a = (T, t) if name == "A" else (A, a)
        B, b = (T, t) if name == "B" else (B, b)
        keep, refresh = keep + (T,), refresh + [fn]
    ma, mb, mc, batch = _split_batch(a, b, c, op) if batched else (a, b, c, None)
    st = _setup(A, B, C, ma, mb, mc, config, out_dtype, precision, op, beta, fused, batch, user)
    keep += (bias, scale_a, scale_b, alpha, scale_out, amax, *epilogue_args)     # what the kernel reads by address
    alpha, scales = _scales(alpha, scale_a, scale_b, st.launcher, A, op)
    outs = None
    if st.out.name in FP8_OUT:
        from .out_scale import out_scale

        outs = out_scale(scale_out, amax, A)
    if C is None:
        C = _new_out(A, a.kind, (batch.count, st.M, st.N) if batched else (st.M, st.N), st.out)
        beta = 0.0
        c = _describe_c(C, out_dtype, op)
    return GemmLaunch(st.launcher, (a.ptr, b.ptr, c.ptr), alpha, beta, handle, C,
                      keep=keep, copy_in=_calls(refresh),
                      bias=fused.ptr if fused is not None else 0, scales=scales, tensors=tensors, out=outs)


def _check_out_scale(scale_out, amax, out_dtype, c, beta, a, op):
    """:func:`codegen.out_scale.check_out_scale` for the output type of the call (out_dtype,
    else C's)."""
    out = _out_name(out_dtype, op) or (c.etype.name if c is not None else None)
    if out in FP8_OUT or scale_out is not None or amax is not None:
        from .out_scale import check_out_scale

        check_out_scale(scale_out, amax, out, beta, a, op)


class _Beta:
    """The launch of a GEMM with M, N or K = 0 (no kernel): C becomes ``beta * C`` (zeros
    for beta = 0, whatever C held, as BLAS), as numpy's and torch's ``A @ B`` give zeros
    for K = 0 and an empty result for M or N = 0."""

    compiled = None
    device_scales = False

    def __init__(self, C, beta):
        self.C, self.beta = C, beta

    def __call__(self, a, b, c, alpha, beta, stream=0, capture=None, bias=0, scales=(0, 0, 0), out=None):
        C = self.C
        if 0 in tuple(C.shape):
            return
        if isinstance(C, np.ndarray):
            C[...] = 0 if beta == 0 else C * beta
            return
        mod = type(C).__module__
        if mod.startswith("torch"):
            C.zero_() if beta == 0 else C.mul_(beta)
        elif mod.startswith("cupy"):
            C.fill(0) if beta == 0 else C.__imul__(beta)
        else:                                           # a numba device array
            h = C.copy_to_host()
            h[...] = 0 if beta == 0 else h * beta
            C.copy_to_device(h)


def _prepare_empty(A, B, C, a, b, c, beta, config, out_dtype, precision, op, amax=None):
    """A GEMM with M, N or K = 0 (or a batch of none), checked as any other: the launch sets C
    to ``beta * C`` (K = 0) or leaves the empty C (M or N = 0); a new C is zeros of the
    output type."""
    lead = ()
    if 3 in (len(a.shape), len(b.shape)) or (c is not None and len(c.shape) == 3):
        a, b, c, batch = _split_batch(a, b, c, op)
        lead = (batch.count,)
    chk = _check_operands(C, a, b, c, config, out_dtype, precision, op)
    M, N, kind, out = chk.M, chk.N, chk.kind, chk.out
    if c is None:
        name = out or (config.out if config is not None else
                       "bf16" if kind in FP8 else "f32" if kind == "tf32" else kind)
        C = _new_out(A, a.kind, lead + (M, N), element_type(name))
        if a.kind != "numpy":
            _Beta(C, 0.0)(0, 0, 0, 0.0, 0.0)            # torch/cupy/numba's empty: zeros, as numpy's
        beta = 0.0
    if amax is not None:                                # no value: the amax of nothing is 0
        from .out_scale import zero_amax

        return GemmLaunch(_Beta(C, beta), (0, 0, 0), 1.0, beta, 0, C, copy_in=functools.partial(zero_amax, amax))
    return GemmLaunch(_Beta(C, beta), (0, 0, 0), 1.0, beta, 0, C)


def _calls(fns):
    """One function calling each of ``fns`` in order, or None for none."""
    if not fns:
        return None
    return lambda: [fn() for fn in fns] and None


def _device_copy(X, kind, stream, name, op):
    """``(T, refresh)``: a device array like ``X`` with memory of its own, and a function
    that copies ``X`` into it on ``stream`` (a raw handle), before the kernel on that stream."""
    if kind == "torch":
        import torch

        T = torch.empty_like(X)
        s = torch.cuda.ExternalStream(stream, device=X.device) if stream else torch.cuda.default_stream(X.device)

        def refresh():
            with torch.cuda.stream(s):
                T.copy_(X)
        return T, refresh
    if kind == "cupy":
        import cupy

        T = cupy.empty_like(X)
        s = cupy.cuda.ExternalStream(stream) if stream else cupy.cuda.Stream.null

        def refresh():
            with s:
                cupy.copyto(T, X)
        return T, refresh
    from numba import cuda

    V = cuda.as_cuda_array(X)
    if not (V.is_c_contiguous() or V.is_f_contiguous()):
        raise GemmError(f"{op}: C overlaps {name} in memory, and {name} (a strided {type(X).__name__}) cannot be "
                        f"copied aside; pass a C of its own memory")
    T = cuda.device_array_like(V)
    s = cuda.external_stream(stream) if stream else 0

    def refresh():
        T.copy_to_device(V, stream=s)
    return T, refresh


def _scalar(x, name, op):
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise GemmError(f"{op}: {name} must be a real number, got {x!r}")
    return float(x)


def _device_scale(x, A):
    """The address of ``x`` where the kernel can read it as the scale: a float32 CUDA tensor
    of one element on ``A``'s device (as ``torch._scaled_mm``'s scales); else 0."""
    if type(x).__module__.startswith("torch") and type(A).__module__.startswith("torch"):
        import torch

        if x.dtype == torch.float32 and x.numel() == 1 and x.device == A.device:
            return int(x.data_ptr())
    return 0


def _scales(alpha, scale_a, scale_b, launcher, A, op):
    """``(alpha, (addr_a, addr_b, addr_alpha))``: the scales (and an ``alpha`` given as a
    tensor) that a Hopper kernel reads from device memory by address (no host
    synchronization, and a CUDA graph replays with their values of the moment); the others
    (numbers, host arrays, other types, the mma.sync kernels) multiply ``alpha`` on the host."""
    addrs, out = [], 1.0
    for x, name in ((scale_a, "scale_a"), (scale_b, "scale_b"), (alpha, "alpha")):
        addr = _device_scale(x, A) if launcher.device_scales and x is not None else 0
        if not addr:
            out *= _scale(x, name, op)
        addrs.append(addr)
    return out, tuple(addrs)


def _check_scale(x, name, op):
    """``x`` is None, a real number or an array or tensor of one element (read nothing)."""
    if x is None or (isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)):
        return
    if isinstance(x, bool):
        raise GemmError(f"{op}: {name} must be a real number or a 1-element tensor, got {x!r}")
    shape = getattr(x, "shape", None)
    if shape is None or not hasattr(x, "item"):
        raise GemmError(f"{op}: {name} must be a real number or a 1-element tensor, got {type(x).__name__} {x!r}")
    if int(np.prod(tuple(shape))) != 1:
        raise GemmError(f"{op}: {name} must be one scale for the whole operand (a real number or a 1-element "
                        f"tensor), got shape {tuple(shape)}; per-row or per-block scales are not supported")


def _scale(x, name, op):
    """A per-tensor scale: None (1), a real number, or an array or tensor of one element (read
    on the host: for a CUDA tensor this waits for the values it depends on, and is refused
    during a CUDA graph capture, where it cannot be read)."""
    if x is None:
        return 1.0
    _check_scale(x, name, op)
    if isinstance(x, (int, float, np.integer, np.floating)):
        return float(x)
    if getattr(x, "is_cuda", False):
        import torch

        if torch.cuda.is_current_stream_capturing():
            raise GemmError(f"{op}: {name} is a CUDA tensor this kernel reads on the host (only the Hopper "
                            f"kernel reads float32 scales itself), which a CUDA graph capture forbids; pass a "
                            f"number, or a float32 tensor to a call that runs the Hopper kernel")
    v = x.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise GemmError(f"{op}: {name} must hold a real number, got {v!r}")
    return float(v)


def _prepare_host(A, B, C, a, b, c, alpha, beta, config, out_dtype, precision, op, user=None, tensors=(),
                  fp8_out=(None, None), fused=(None, None)):
    """numpy arrays (copied to the device and back), or any arrays in the simulator (where
    every array lives on the host and kernels reach it by address); ``tensors``: the
    :class:`~codegen.epilogue_fn.EpilogueTensor` of each numpy array of a user epilogue,
    with the array (simulator only); ``fp8_out``: an 8-bit float C's ``(scale_out, amax)``;
    ``fused``: a fused operation's :class:`_Fused` and its bias array (simulator only)."""
    from dataclasses import replace

    sim = simulating()
    batched = len(a.shape) == 3
    if C is not None:      # on the caller's C, before any copy hides a stride 0 or read-only memory
        _check_c(C, _split_batch(a, b, c, op)[2] if batched else c, a.shape[-2], b.shape[-1], op)
    hA, hB = _packed(_host(A, a)), _packed(_host(B, b))
    hC = _packed(_host(C, c)) if C is not None else None
    # the element types stay the caller's (torch fp8 crosses to the host as its bytes)
    ranks = (len(a.shape),)
    a = replace(_describe(hA, op, "A", ranks=ranks), etype=a.etype)
    b = replace(_describe(hB, op, "B", ranks=ranks), etype=b.etype)
    c = _describe_c(hC, out_dtype, op, ranks) if hC is not None else None
    if sim:   # plan with the host addresses (their alignment is what the kernel sees)
        a, b = replace(a, ptr=_addr(hA)), replace(b, ptr=_addr(hB))
        c = replace(c, ptr=_addr(hC)) if c is not None else None
    else:     # device copies are fresh allocations: aligned
        a, b = replace(a, ptr=0), replace(b, ptr=0)
    refresh = []
    if hC is not None and sim:     # C shares memory with A or B: the kernel reads private copies
        for name in _overlapped(a, b, c):
            X = hA if name == "A" else hB
            T = X.copy(order="K")
            refresh.append(functools.partial(np.copyto, T, X))
            if name == "A":
                hA, a = T, replace(a, ptr=_addr(T))
            else:
                hB, b = T, replace(b, ptr=_addr(T))
    ma, mb, mc, batch = _split_batch(a, b, c, op) if batched else (a, b, c, None)
    st = _setup(hA, hB, hC, ma, mb, mc, config, out_dtype, precision, op, beta, fused[0], batch, user)
    if hC is None:                      # (an 8-bit float C as its bits)
        hC = _new_out(hA, "numpy", (batch.count, st.M, st.N) if batched else (st.M, st.N), st.out, op)
        beta = 0.0
    target = C if C is not None else hC
    if sim:
        from .intrinsics import sim as S

        ptrs = tuple(S.register_global(x) for x in (hA, hB, hC))
        keep = (hA, hB, hC) + tuple(x for _, x in tensors)
        if fused[1] is not None:        # the bias, by address
            hbias = np.ascontiguousarray(fused[1]).reshape(-1)
            keep += (hbias,)
            fused = (replace(fused[0], ptr=S.register_global(hbias)), None)
        tensors = tuple(replace(t, ptr=S.register_global(x)) for t, x in tensors)

        def copy_back():
            if target is not hC:
                _write_back(target, hC)
    else:
        from numba import cuda

        dA, dB, dC = (cuda.to_device(_bits_view(x)) for x in (hA, hB, hC))
        ptrs = tuple(int(d.__cuda_array_interface__["data"][0]) for d in (dA, dB, dC))
        keep = (dA, dB, dC)

        def copy_back():
            res = dC.copy_to_host()
            _write_back(target, res.view(hC.dtype) if res.dtype != hC.dtype else res)
    outs = None
    if st.out.name in FP8_OUT:          # (the simulator zeroes amax before each launch)
        from .out_scale import out_scale, zero_amax

        outs = out_scale(*fp8_out, A, sim)
        if fp8_out[1] is not None and sim:
            refresh.append(functools.partial(zero_amax, fp8_out[1]))
    return GemmLaunch(st.launcher, ptrs, alpha, beta, 0, target, keep=keep, copy_back=copy_back,
                      copy_in=_calls(refresh), tensors=tensors, out=outs,
                      bias=fused[0].ptr if fused[0] is not None else 0)


def _addr(x):
    return int(x.__array_interface__["data"][0])


def _host(x, desc):
    """A numpy view of ``x`` (simulator: every array lives on the host)."""
    if desc.kind == "numpy":
        return x
    if desc.kind == "torch":
        if desc.etype.name in FP8:        # numpy has no fp8: its bytes (read back as desc.etype)
            import torch

            return x.detach().cpu().view(torch.uint8).numpy()
        return x.detach().cpu().numpy()
    if desc.kind == "cupy":
        return x.get()
    return x.copy_to_host()


def _bits_view(x):
    if x.dtype.name == "bfloat16":
        return x.view(np.uint16)
    return x.view(np.uint8) if x.dtype.itemsize == 1 and x.dtype.kind not in "iub" else x   # 8-bit floats


def _packed(x):
    """``x``, or a packed copy of it when it is not one C- or Fortran-ordered block."""
    return x if x.flags.c_contiguous or x.flags.f_contiguous else np.ascontiguousarray(x)


def _write_back(dst, src):
    if isinstance(dst, np.ndarray):
        dst[...] = src
        return
    mod = type(dst).__module__
    if mod.startswith("torch"):
        import torch

        dst.copy_(torch.from_numpy(np.ascontiguousarray(src)))
    elif mod.startswith("cupy"):
        import cupy

        dst[...] = cupy.asarray(src)
    else:
        dst.copy_to_device(np.ascontiguousarray(src))


# ---- the fast path ------------------------------------------------------------

_FAST = {}


@dataclass(frozen=True)
class _Fast:
    """A cached launch for one torch call signature."""

    launcher: _Launcher
    out_dtype: object         # torch dtype of a new C
    shape: tuple              # of a new C: (M, N), or (L, M, N) for a batch
    device: int
    spans: tuple              # the bytes A, B and C cover from their addresses (see _span)
    fp8_out: bool = False     # an 8-bit float C: the launch takes its OutScale


@dataclass
class GraphCapture:
    """A launch recorded into a CUDA graph: the capturing stream, and device memory the
    graph owns (torch's allocator, which serves a capture from the graph's pool), kept
    alive until the launch is recorded."""

    stream: int
    device: object
    held: list

    @staticmethod
    def of(A, stream):
        """The capture in progress on ``A``'s device, or None (the usual case: one check)."""
        if not _torch_hooks().capturing():
            return None
        return GraphCapture(stream, A.device, [])

    def alloc(self, nbytes, zero=False):
        """The address of ``nbytes`` of the graph's memory (zeroed by a recorded memset)."""
        import torch

        t = (torch.zeros if zero else torch.empty)(nbytes, dtype=torch.uint8, device=self.device)
        self.held.append(t)
        return t.data_ptr()


def _refuse_in_capture(A):
    """A new kind of call prepares (compiles, allocates, copies to the device): not while a
    CUDA graph is being captured, which it would break."""
    import torch

    if A.is_cuda and torch.cuda.is_current_stream_capturing():
        raise GemmError("gemm: the first call of this kind (dtypes, shapes, strides, options) happens during "
                        "a CUDA graph capture, where it cannot compile or allocate; call it once before "
                        "capturing (a warm-up), then capture")


def _keep_for(stream, device, *xs):
    """Keep the CUDA tensors among ``xs`` alive until the work queued on ``stream`` (a raw
    handle) has run (torch's ``record_stream``): a kernel reads them there."""
    import torch

    s = torch.cuda.ExternalStream(stream, device=device)
    for x in xs:
        if getattr(x, "is_cuda", False):
            x.record_stream(s)


@dataclass(frozen=True)
class _TorchHooks:
    """The torch functions a cached call makes, looked up once (torch is imported on the first
    call on torch tensors): each lookup through ``torch.cuda`` costs a cached call's time."""

    empty: object
    current_stream: object      # device index -> the raw handle of its current stream
    capturing: object           # () -> whether the current stream is capturing a CUDA graph


def _torch_hooks():
    if _HOOKS:
        return _HOOKS[0]
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is None:
        def raw(device):
            return int(torch.cuda.current_stream(device).cuda_stream)
    capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing)
    _HOOKS.append(_TorchHooks(torch.empty, raw, capturing))
    return _HOOKS[0]


_HOOKS = []


def _torch_stream(stream, device):
    if stream is None:
        return _torch_hooks().current_stream(device)
    return _stream_handle(stream, "torch", device)


def gemm(A, B, C=None, *, alpha=1.0, beta=0.0, config=None, out_dtype=None, precision=None, stream=None,
         scale_a=None, scale_b=None, bias=None, activation=None, epilogue=None, epilogue_args=(), scale_out=None,
         amax=None):
    """``alpha * (scale_a * A) @ (scale_b * B) + beta * C``, computed by a generated
    tensor-core kernel; returns C.

    ``A``: (M,K), ``B``: (K,N), ``C``: (M,N) or None (a new array of the output type).
    Arrays may be numpy (copied), numba device arrays, CuPy arrays or torch tensors, with
    any strides.  As ``torch.matmul``, ``A`` and ``B`` may have batch modes, ``(..., M, K)``
    and ``(..., K, N)``, which broadcast; C (given or new) is ``(..., M, N)``
    (:mod:`codegen.batch`).  With a ``B`` shared by every matrix of A (``(K, N)``, or batch
    modes of 1) the product is one GEMM of all the rows; otherwise it is a batch of ``L``
    GEMMs, one launch (whose tile scheduler walks every matrix's tiles, on the Hopper kernel
    and on the ``mma.sync`` kernels alike).  fp16/bf16 use ``mma.sync`` m16n8k16 with f32
    accumulation; fp32 runs on CUDA cores unless ``precision="tf32"``; fp64 uses the m8n8k4
    f64 MMA.  On a Hopper GPU, fp16/bf16 and tf32 (K-major only) with operands that TMA can
    read run on the wgmma kernel instead (tf32 read as f32 bits, the low 13 mantissa bits
    ignored), which writes a row- or column-major C of any leading dimension (a column-major
    C as ``C^T = B^T @ A^T``; docs/hopper.md).  The output type is ``out_dtype``, else C's
    type, else the input type (f32 for tf32).

    8-bit floats (torch ``float8_e4m3fn``/``float8_e5m2``, or numpy uint8 arrays of their
    bits with ``precision="e4m3"``/``"e5m2"``; A and B may mix e4m3 and e5m2) run on the
    wgmma kernel only, on compute capability 9.0, with f32 accumulation and a bf16 (default),
    f16 or f32 C. Both operands must be K-major, as ``torch._scaled_mm`` requires: A row-major
    (M,K), B column-major (K,N) (``B.T`` contiguous), with 16-byte aligned rows (K a multiple
    of 16); anything else is a GemmError naming the operand and its strides (or C's, when C
    is neither row- nor column-major).

    ``scale_a``, ``scale_b``: per-tensor scales (None, a real number, or a 1-element array or
    tensor), for the dequantization of 8-bit inputs; they multiply ``alpha``, so they apply
    to every input type alike.  ``alpha`` may be such a tensor too.  A float32 torch CUDA
    tensor on the operands' device is read by the Hopper kernel itself, as
    ``torch._scaled_mm`` reads its scales: no host synchronization, and a captured CUDA graph
    replays with the values of the moment; others are read on the host.  ``stream``: None
    (torch's or CuPy's current stream, else the default), a handle or a stream object.

    ``bias`` (f16, bf16 or f32, of the operands' kind) and ``activation`` ("relu", "gelu",
    "gelu_tanh", "silu"): the Hopper kernel's epilogue stores ``activation(alpha * A @ B +
    bias)`` (``bias`` (N,) per column, as ``torch.nn.Linear``'s, or (M, 1) per row), with
    ``beta`` 0; on GPU arrays (numpy in numba's simulator). GELU is ``x * Phi(x)`` (erf to
    1.5e-7); ``gelu_tanh`` and ``silu`` use ``tanh.approx`` (relative error about 2**-11).

    ``epilogue`` (a Python function ``f(acc, m, n, *epilogue_args)``) and ``epilogue_args``
    (up to four GPU arrays of one or two dimensions): the kernel's epilogue stores
    ``f(alpha * (A @ B)[m, n], m, n, ...) + beta * C[m, n]``, ``f`` compiled into the kernel
    by numba (:mod:`codegen.epilogue_fn`); one GEMM, no bias or activation. The Hopper kernel
    applies it where it runs, else the mma.sync kernel, element by element.

    C may share memory with A or B (``Y = Y @ X``): the kernel then reads private copies of the
    operands C overlaps (numpy's result for an overlapping ``out=``).

    Repeated calls on torch tensors of the same dtypes, shapes, strides, alignment and
    device, with the same options, reuse the prepared launch: only the addresses and
    scalars are written before the launch.  Such a call can be captured in a CUDA graph; a
    first call of a new kind during a capture raises (warm up before capturing).

    ``out_dtype="e4m3"``/``"e5m2"``: the Hopper kernel stores ``satfinite(scale_out * value)``
    and writes the largest ``|value|`` into ``amax`` (:mod:`codegen.out_scale`).
    On torch tensors that require a gradient (C None, no scales), the call is the operator
    ``torch.ops.layoutalg.mm`` (:mod:`codegen.torch_ops`, ``codegen.mm``): it has a ``grad_fn``.
    """
    sa, sb = getattr(A, "shape", ()), getattr(B, "shape", ())
    if len(sa) == 2 and len(sb) == 2:        # the usual call: neither batch route applies
        return _dispatch(A, B, C, alpha=alpha, beta=beta, config=config, out_dtype=out_dtype, precision=precision,
                         stream=stream, scale_a=scale_a, scale_b=scale_b, bias=bias, activation=activation,
                         epilogue=epilogue, epilogue_args=epilogue_args, scale_out=scale_out, amax=amax)
    opts = dict(alpha=alpha, beta=beta, config=config, out_dtype=out_dtype, precision=precision, stream=stream,
                scale_a=scale_a, scale_b=scale_b, bias=bias, activation=activation, epilogue=epilogue,
                epilogue_args=epilogue_args, scale_out=scale_out, amax=amax)
    folded = fold_batch(A, B, C, "gemm")
    if folded is not None:                   # (..., M, K) @ (K, N): one GEMM of all the rows
        out = gemm(folded.A, folded.B, folded.C, **opts)
        return C if C is not None else out.reshape(folded.shape)
    batched = batch_operands(A, B, C, "gemm")
    if batched is not None:                  # (..., M, K) @ (..., K, N): a batch of L GEMMs, one launch
        out = _dispatch(batched.A, batched.B, batched.C, **opts)
        return C if C is not None else out.reshape(batched.shape)
    return _dispatch(A, B, C, **opts)


def _dispatch(A, B, C, *, alpha, beta, config, out_dtype, precision, stream, scale_a, scale_b, bias, activation,
              epilogue, epilogue_args, scale_out=None, amax=None):
    """:func:`gemm` of 2-D operands or of a batch (A (L,M,K), B (L,K,N)): through the torch
    operator where autograd needs it, else :func:`_gemm`."""
    if (C is None and beta == 0 and scale_a is None and scale_b is None and config is None and scale_out is None
            and amax is None and getattr(A, "requires_grad", False) | getattr(B, "requires_grad", False)
            | getattr(bias, "requires_grad", False)):
        import torch

        if torch.is_grad_enabled():
            if epilogue is not None:
                raise GemmError(f"gemm: a user epilogue ({getattr(epilogue, '__qualname__', epilogue)}) has no "
                                f"derivative, and A or B requires grad; call it under torch.no_grad(), on detached "
                                f"tensors, or use bias= and activation=, which differentiate")
            from .torch_ops import mm

            return mm(A, B, alpha=alpha, out_dtype=_torch_dtype(out_dtype), precision=precision, bias=bias,
                      activation=activation)
    return _gemm(A, B, C, alpha=alpha, beta=beta, config=config, out_dtype=out_dtype, precision=precision,
                 stream=stream, scale_a=scale_a, scale_b=scale_b, bias=bias, activation=activation,
                 epilogue=epilogue, epilogue_args=epilogue_args, scale_out=scale_out, amax=amax)


def _torch_dtype(out_dtype):
    """A torch dtype for ``out_dtype`` (None, a name, a numpy or torch dtype)."""
    if out_dtype is None:
        return None
    import torch

    if isinstance(out_dtype, torch.dtype):
        return out_dtype
    return getattr(torch, element_type(_out_name(out_dtype), "gemm").torch)


def _gemm(A, B, C=None, *, alpha=1.0, beta=0.0, config=None, out_dtype=None, precision=None, stream=None,
          scale_a=None, scale_b=None, bias=None, activation=None, epilogue=None, epilogue_args=(), scale_out=None,
          amax=None):
    """:func:`gemm` without the route through the torch operator (which calls this)."""
    if type(A).__module__.startswith("torch") and type(B).__module__.startswith("torch"):
        pa, pb = A.data_ptr(), B.data_ptr()
        try:
            fused = activation, None if bias is None else (type(bias), bias.dtype, bias.shape, bias.stride(),
                                                           bias.device)
            user = None if epilogue is None else epilogue_fast_key(epilogue, epilogue_args)
            key = (A.dtype, A.shape, A.stride(), B.dtype, B.shape, B.stride(), A.device, B.device, pa & 15, pb & 15,
                   None if C is None else (C.dtype, C.shape, C.stride(), C.device), config, out_dtype, precision,
                   fused, beta != 0, user, scale_out is None,
                   None if amax is None else (type(amax), amax.dtype, amax.shape, amax.device))
            hit = _FAST.get(key)
        except (TypeError, AttributeError):     # an unhashable option, a bias that is no tensor: the general
            key = hit = None                    # path reports it
        if hit is None and key is not None and not simulating():    # (the simulator caches no launch)
            _refuse_in_capture(A)
            launch = prepare(A, B, C, alpha=alpha, beta=beta, config=config, out_dtype=out_dtype,
                             precision=precision, stream=stream, scale_a=scale_a, scale_b=scale_b, bias=bias,
                             activation=activation, epilogue=epilogue, epilogue_args=epilogue_args,
                             scale_out=scale_out, amax=amax)
            if launch._copy_in is not None or launch.kernel is None:   # C overlaps A or B (see below), or
                return launch()                                       # an empty problem (no kernel): not cached
            import torch

            out = element_type(launch.kernel.config.out)
            spans = tuple(_span(_describe(x, "gemm", n, ranks=(2, 3))) if x is not None else None
                          for x, n in ((A, "A"), (B, "B"), (C, "C")))
            hit = _FAST[key] = _Fast(launch._launcher, getattr(torch, out.torch), tuple(launch.C.shape),
                                     A.get_device(), spans, out.name in FP8_OUT)
            if C is None:
                return launch()
        if hit is not None and C is not None:
            pc, (sa, sb, sc) = C.data_ptr(), hit.spans
            if _meet(pa, sa, pc, sc) or _meet(pb, sb, pc, sc):     # C overlaps A or B: private copies
                return prepare(A, B, C, alpha=alpha, beta=beta, config=config, out_dtype=out_dtype,
                               precision=precision, stream=stream, scale_a=scale_a, scale_b=scale_b, bias=bias,
                               activation=activation, epilogue=epilogue, epilogue_args=epilogue_args,
                               scale_out=scale_out, amax=amax)()
        if hit is not None:
            if C is None:
                C = _torch_hooks().empty(hit.shape, dtype=hit.out_dtype, device=key[6])
                beta = 0.0
            scales, given = (0, 0, 0), alpha
            if scale_a is not None or scale_b is not None or type(alpha) not in (int, float):
                alpha, scales = _scales(alpha, scale_a, scale_b, hit.launcher, A, "gemm")
            st = _torch_stream(stream, hit.device)
            if stream is not None and any(scales):                  # read by the kernel on that stream:
                _keep_for(st, hit.device, scale_a, scale_b, given)  # not freed before it runs
            if epilogue is not None:
                hit.launcher.set_torch_tensors(epilogue_args)
            out = None
            if hit.fp8_out:                                          # an 8-bit float C: its scale and amax
                from .out_scale import fast_out_scale

                out = fast_out_scale(scale_out, amax, A, stream is not None and st)
            hit.launcher(pa, pb, C.data_ptr(), float(alpha), float(beta), st, GraphCapture.of(A, st),
                         0 if bias is None else bias.data_ptr(), scales, out=out)
            return C
    return prepare(A, B, C, alpha=alpha, beta=beta, config=config, out_dtype=out_dtype,
                   precision=precision, stream=stream, scale_a=scale_a, scale_b=scale_b, bias=bias,
                   activation=activation, epilogue=epilogue, epilogue_args=epilogue_args,
                   scale_out=scale_out, amax=amax)()
