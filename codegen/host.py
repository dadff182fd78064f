"""``gemm``: run a generated kernel on the user's arrays.

Accepts numpy arrays (copied to and from the device), numba device arrays,
CuPy arrays and torch tensors (zero-copy), with any strides.  The global
layouts come from the arrays' own shapes and strides; the plan is chosen per
dtype, majorness and alignment.
"""

import functools

import numpy as np

from .config import GemmConfig
from .kernel import get_kernel

__all__ = ["gemm", "GemmError"]


class GemmError(ValueError):
    """Bad arguments to :func:`gemm` (shapes, dtypes, devices)."""


_NP_NAMES = {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def _kind(x):
    mod = type(x).__module__
    if mod.startswith("torch"):
        return "torch"
    if mod.startswith("cupy"):
        return "cupy"
    if isinstance(x, np.ndarray):
        return "numpy"
    if hasattr(x, "__cuda_array_interface__"):
        return "cuda"
    raise GemmError(f"gemm: unsupported array type {type(x).__name__}; pass numpy, CuPy, torch or numba device arrays")


def _dtype_name(x, kind):
    if kind == "torch":
        import torch

        m = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64"}
        if x.dtype not in m:
            raise GemmError(f"gemm: unsupported torch dtype {x.dtype}; use float16, bfloat16, float32 or float64")
        return m[x.dtype]
    dt = np.dtype(x.dtype)
    if dt.name == "bfloat16":
        return "bf16"
    if dt not in _NP_NAMES:
        raise GemmError(f"gemm: unsupported dtype {dt}; use float16, bfloat16, float32 or float64")
    return _NP_NAMES[dt]


def _shape_strides(x, kind):
    shape = tuple(int(s) for s in x.shape)
    if kind == "torch":
        strides = tuple(int(s) for s in x.stride())
    elif kind in ("numpy", "cupy"):
        strides = tuple(int(s) // x.itemsize for s in x.strides)
    else:
        cai = x.__cuda_array_interface__
        item = np.dtype(cai["typestr"]).itemsize
        strides = tuple(s // item for s in cai["strides"]) if cai.get("strides") else tuple(
            int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    return shape, strides


def _packed(x):
    """``x``, or a packed copy of it when it is not one C- or Fortran-ordered block."""
    return x if x.flags.c_contiguous or x.flags.f_contiguous else np.ascontiguousarray(x)


def _device_view(x, kind, name):
    """A numba device array over the same memory (bf16 as uint16 bits)."""
    from numba import cuda

    if kind == "torch":
        import torch

        if not x.is_cuda:
            raise GemmError(f"gemm: torch tensor {name} is on {x.device}; move it to a CUDA device")
        if x.dtype == torch.bfloat16:
            x = x.view(torch.int16)
        return cuda.as_cuda_array(x.detach())
    if kind == "numpy":
        if x.dtype.name == "bfloat16":
            x = x.view(np.uint16)
        return cuda.to_device(x)
    return cuda.as_cuda_array(x)


def _major(shape, strides, rows_dim, k_dim):
    """'K' when the K coordinate is contiguous, 'MN' when the row coordinate is, else 'K' (strided)."""
    sr, sk = strides[rows_dim], strides[k_dim]
    if shape[k_dim] == 1:
        sk = 1 if sr != 1 else sk
    if sk == 1:
        return "K"
    if sr == 1 or shape[rows_dim] == 1:
        return "MN"
    return "K"


def _vec(cfg, major, shape, strides, rows_dim, k_dim, ptr):
    """Elements per cp.async (16, 8 or 4 bytes) that alignment allows, or None (element-wise copies)."""
    eb = cfg.bits // 8
    cont = k_dim if major == "K" else rows_dim
    other = rows_dim if major == "K" else k_dim
    if strides[cont] != 1 and shape[cont] != 1:
        return None
    for nbytes in (16, 8, 4):
        v = nbytes // eb
        if v < 1:
            continue
        if shape[cont] % v == 0 and (strides[other] % v == 0 or shape[other] == 1) and ptr % nbytes == 0:
            return v
    return None


def _ptr(x, kind):
    if kind == "torch":
        return x.data_ptr()
    if kind == "numpy":
        return 0   # copied to a fresh, aligned device buffer
    return x.__cuda_array_interface__["data"][0]


def gemm(A, B, C=None, *, alpha=1.0, beta=0.0, config=None, out_dtype=None, precision=None, stream=0):
    """``alpha * A @ B + beta * C``, computed by a generated tensor-core kernel; returns C.

    ``A``: (M,K), ``B``: (K,N), ``C``: (M,N) or None (a new array is made).  Arrays may be
    numpy (copied), numba device arrays, CuPy arrays or torch tensors, with any strides.
    fp16/bf16 use ``mma.sync`` m16n8k16 with f32 accumulation; fp32 runs on CUDA cores
    unless ``precision="tf32"`` (or a tf32 ``config``); fp64 uses the m8n8k4 f64 MMA.
    """
    return prepare(A, B, C, alpha=alpha, beta=beta, config=config, out_dtype=out_dtype,
                   precision=precision, stream=stream)()


class GemmLaunch:
    """A prepared GEMM: arrays converted, kernel compiled; calling it only launches.

    Build it with :func:`prepare` and call it repeatedly on the same arrays (e.g. in a
    training loop or a benchmark) to skip the per-call argument handling of :func:`gemm`.
    Calling returns C (for numpy C, copied back to the host array).
    """

    def __init__(self, kernel, grid, threads, stream, args, C, dC, copy_back):
        self.kernel = kernel
        self.grid = grid
        self.threads = threads
        self.stream = stream
        self.args = args
        self.C = C
        self._dC = dC
        self._copy_back = copy_back
        self._launcher = _launcher(kernel, grid, threads, stream, args)

    @property
    def source(self):
        """The generated numba source of the kernel this launch runs."""
        return self.kernel.source

    def __call__(self):
        self._launcher()
        if self._copy_back:
            res = self._dC.copy_to_host()
            self.C[...] = res.view(self.C.dtype) if res.dtype != self.C.dtype else res
        return self.C


def prepare(A, B, C=None, *, alpha=1.0, beta=0.0, config=None, out_dtype=None, precision=None, stream=0):
    """Validate, plan, compile and convert once; returns a :class:`GemmLaunch` (see :func:`gemm`)."""
    ka, kb = _kind(A), _kind(B)
    if ka != kb and not ({ka, kb} <= {"cupy", "cuda"}):
        raise GemmError(f"gemm: A is a {ka} array but B is a {kb} array; pass arrays of one kind")
    da, db = _dtype_name(A, ka), _dtype_name(B, kb)
    if da != db:
        raise GemmError(f"gemm: A is {da} but B is {db}; convert one (supported: f16, bf16, f32/tf32, f64)")
    if len(A.shape) != 2 or len(B.shape) != 2:
        raise GemmError(f"gemm: A and B must be 2-D, got shapes {tuple(A.shape)} and {tuple(B.shape)}")
    if ka == "numpy":  # numba copies only single-region buffers: pack strided views first
        A, B = _packed(A), _packed(B)
    M, K = (int(s) for s in A.shape)
    K2, N = (int(s) for s in B.shape)
    if K != K2:
        raise GemmError(f"gemm: inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    if min(M, N, K) < 1:
        raise GemmError(f"gemm: M, N, K must be >= 1, got {M}, {N}, {K}")
    if ka == "torch":
        import torch

        if A.device != B.device or (C is not None and C.device != A.device):
            raise GemmError(f"gemm: arrays on different devices: A {A.device}, B {B.device}"
                            + (f", C {C.device}" if C is not None else ""))
    kind = precision or ("tf32" if config is not None and config.dtype == "tf32" else da)
    if kind == "tf32" and da != "f32":
        raise GemmError(f"gemm: tf32 precision needs float32 inputs, got {da}")
    chosen = config is None
    if chosen:
        config = GemmConfig.default(kind, M, N, K, out_dtype)
    elif config.dtype != kind and not (config.dtype == "tf32" and da == "f32"):
        raise GemmError(f"gemm: config is for {config.dtype} but the inputs are {da}")
    if out_dtype is not None and config.out_dtype != out_dtype:
        config = config.with_(out_dtype=out_dtype)
    _check_gpu(config)

    from numba import cuda

    sa, sta = _shape_strides(A, ka)
    sb, stb = _shape_strides(B, kb)
    # B as (N,K): B_nk[n,k] = B[k,n]
    b_shape = (N, K)
    b_strides = (stb[1], stb[0])
    a_major = _major(sa, sta, 0, 1)
    b_major = _major(b_shape, b_strides, 0, 1)
    a_vec = _vec(config, a_major, sa, sta, 0, 1, _ptr(A, ka))
    b_vec = _vec(config, b_major, b_shape, b_strides, 0, 1, _ptr(B, kb))
    if chosen and (not a_vec or not b_vec or min(a_vec, b_vec) * config.bits < 128):
        # operands copied element-wise or in pieces under 16 bytes: the smaller plan
        config = GemmConfig.default(kind, M, N, K, config.out_dtype, aligned=False)
    a_mode = "cp_async" if a_vec else "sync"
    b_mode = "cp_async" if b_vec else "sync"
    k = get_kernel(config, a_major, b_major, a_mode, b_mode, a_vec, b_vec)

    out_name = config.out
    if C is None:
        C = _new_out(A, ka, (M, N), out_name)
        beta = 0.0
    else:
        if tuple(C.shape) != (M, N):
            raise GemmError(f"gemm: C has shape {tuple(C.shape)}, expected {(M, N)}")
        cname = _dtype_name(C, _kind(C))
        if cname != out_name:
            raise GemmError(f"gemm: C is {cname} but the output type is {out_name}; pass out_dtype={cname!r}")
    kc = _kind(C)
    Cd = _packed(C) if kc == "numpy" else C   # what the device copy of C mirrors
    dA, dB, dC = _device_view(A, ka, "A"), _device_view(B, kb, "B"), _device_view(Cd, kc, "C")
    sc = _shape_strides(Cd, kc)[1]
    grid = ((M + config.bm - 1) // config.bm) * ((N + config.bn - 1) // config.bn)
    scalar = np.float64 if config.dtype == "f64" else np.float32
    args = (dA, dB, dC, np.int32(M), np.int32(N), np.int32(K), np.int32(sta[0]), np.int32(sta[1]),
            np.int32(b_strides[0]), np.int32(b_strides[1]), np.int32(sc[0]), np.int32(sc[1]),
            scalar(alpha), scalar(beta))
    return GemmLaunch(k, grid, config.threads, stream, args, C, dC, kc == "numpy")


def _new_out(A, kind, shape, name):
    if kind == "torch":
        import torch

        dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}[name]
        return torch.empty(shape, dtype=dt, device=A.device)
    if kind == "cupy":
        import cupy

        if name == "bf16":
            raise GemmError("gemm: CuPy has no bfloat16; pass C or use out_dtype='f32'")
        return cupy.empty(shape, dtype={"f16": np.float16, "f32": np.float32, "f64": np.float64}[name])
    if kind == "numpy":
        if name == "bf16":
            raise GemmError("gemm: numpy has no bfloat16 output; use out_dtype='f32'")
        return np.zeros(shape, dtype={"f16": np.float16, "f32": np.float32, "f64": np.float64}[name])
    from numba import cuda

    return cuda.device_array(shape, dtype={"f16": np.float16, "f32": np.float32, "f64": np.float64}[name])


@functools.cache
def _device_cc():
    """The GPU's compute capability, looked up once (it costs driver calls)."""
    from numba import cuda

    if not cuda.is_available():
        raise GemmError("gemm: no CUDA GPU is available; set NUMBA_ENABLE_CUDASIM=1 to run in numba's simulator")
    return cuda.get_current_device().compute_capability


def _check_gpu(config):
    from numba.cuda import config as ncfg

    if getattr(ncfg, "ENABLE_CUDASIM", 0):
        return
    cc = _device_cc()
    need = (6, 0) if config.dtype == "f32" else (8, 0)
    if cc < need:
        raise GemmError(f"gemm: {config.dtype} kernels need compute capability {need[0]}.{need[1]} "
                        f"(mma.sync/cp.async), this GPU is {cc[0]}.{cc[1]}; use dtype f32 on CUDA cores")


_ATTR_DONE = set()


def _launcher(k, grid, threads, stream, args):
    """A no-argument function that launches ``k`` with ``args`` (compiled and configured once)."""
    from numba import cuda

    nbytes = k.smem_bytes
    sim = bool(getattr(cuda.config, "ENABLE_CUDASIM", 0)) if hasattr(cuda, "config") else False
    if sim:
        return lambda: k.kernel[grid, threads, stream, nbytes](*args)
    from numba import typeof
    from numba.cuda.cudadrv import driver

    sig = tuple(typeof(a) for a in args)
    kern = k.kernel.compile(sig)
    key = (id(k), sig)
    if nbytes > 48 * 1024 and key not in _ATTR_DONE:
        cufunc = kern._codelibrary.get_cufunc()
        attr = driver.binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.driver.cuKernelSetAttribute(attr, nbytes, cufunc.handle, cufunc.device.id)
        _ATTR_DONE.add(key)
    configured = k.kernel[grid, threads, stream, nbytes]
    return _direct_launch(kern, configured, args) or (lambda: configured(*args))


def _direct_launch(kern, configured, args):
    """A function that only launches: the arguments are flattened once here, as numba's
    dispatcher would flatten them on every call (the arrays are device arrays, so nothing
    is copied back).  None where numba's internals are not what this expects; the caller
    then launches through the dispatcher."""
    try:
        from cuda.core import LaunchConfig, launch
        from numba.cuda._compat import CUDA_CORE_GE_1_0

        if kern.debug or kern.cooperative:
            return None
        retr, flat = [], []
        for t, v in zip(kern.argument_types, args):
            kern._prepare_args(t, v, configured.stream, retr, flat)
        if retr:
            return None
        coop = {("is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch"): False}
        cfg = LaunchConfig(grid=configured.griddim, block=configured.blockdim,
                           shmem_size=configured.sharedmem, **coop)
        fn = kern._codelibrary.get_cufunc().kernel
        stream = configured.stream
    except Exception:  # a numba-cuda whose launch internals differ
        return None
    return lambda keep=args: launch(stream, cfg, fn, *flat)  # keep: the arrays outlive the launch
