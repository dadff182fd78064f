"""The few CUDA driver calls that load and launch a generated kernel, through ctypes.

numba compiles a kernel's source to PTX; everything after that (PTX to cubin, loading
the cubin into the current context, the dynamic shared-memory limit, the launch) is a
handful of driver calls.  Making them here, directly, means that a kernel compiled by an
earlier process loads from its cubin without importing numba's compiler at all, and that
a launch is one ctypes call with arguments already in place.

Every call checks its status and raises :class:`DriverError` naming the call and the
driver's message.
"""

from __future__ import annotations

import ctypes
import functools
import re

__all__ = ["DriverError", "available", "ensure_context", "compute_capability", "compile_image", "ptxas_arch", "ptxas_cubin", "Function",
           "entry_name", "multiprocessors", "mem_alloc", "copy_to_device", "read_int32", "encode_tensor_map",
           "encode_tensor_map_2d"]

_c = ctypes
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
#: CUtensorMapDataType by element type
TENSOR_MAP_TYPES = {"u8": 0, "e4m3": 0, "e5m2": 0, "u16": 1, "f16": 6, "f32": 7, "f64": 8, "bf16": 9, "tf32": 11}


class DriverError(RuntimeError):
    """A CUDA driver call failed."""


@functools.cache
def _lib():
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            return _c.CDLL(name)
        except OSError:
            continue
    return None


def available():
    """True when the CUDA driver library can be loaded."""
    return _lib() is not None


def _call(name, *args):
    lib = _lib()
    if lib is None:
        raise DriverError(f"{name}: the CUDA driver library (libcuda) is not available")
    err = getattr(lib, name)(*args)
    if err:
        msg = _c.c_char_p()
        lib.cuGetErrorString(err, _c.byref(msg))
        raise DriverError(f"{name} failed: CUDA error {err} ({(msg.value or b'?').decode()})")


def ensure_context(ordinal=0):
    """Make sure a context is current on this thread (the device's primary context if none
    is); returns its handle."""
    ctx = _c.c_void_p()
    _call("cuInit", 0)
    _call("cuCtxGetCurrent", _c.byref(ctx))
    if not ctx.value:
        dev = _c.c_int()
        _call("cuDeviceGet", _c.byref(dev), ordinal)
        _call("cuDevicePrimaryCtxRetain", _c.byref(ctx), dev)
        _call("cuCtxSetCurrent", ctx)
    return ctx.value


def compute_capability():
    """(major, minor) of the current context's device."""
    ensure_context()
    dev, major, minor = _c.c_int(), _c.c_int(), _c.c_int()
    _call("cuCtxGetDevice", _c.byref(dev))
    _call("cuDeviceGetAttribute", _c.byref(major), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _call("cuDeviceGetAttribute", _c.byref(minor), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    return major.value, minor.value


def _device():
    ensure_context()
    dev = _c.c_int()
    _call("cuCtxGetDevice", _c.byref(dev))
    return dev


@functools.cache
def _multiprocessors(ctx):
    n = _c.c_int()
    _call("cuDeviceGetAttribute", _c.byref(n), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, _device())
    return n.value


def multiprocessors():
    """The number of multiprocessors of the current context's device."""
    return _multiprocessors(ensure_context())


def mem_alloc(nbytes, owner=None):
    """Zeroed device memory of ``nbytes``; its address. Freed when ``owner`` is collected;
    without an owner, never (for small, long-lived buffers)."""
    ptr = _c.c_uint64()
    _call("cuMemAlloc_v2", _c.byref(ptr), _c.c_size_t(nbytes))
    _call("cuMemsetD8_v2", ptr, 0, _c.c_size_t(nbytes))
    if owner is not None:
        import weakref

        weakref.finalize(owner, _mem_free, ptr.value)
    return ptr.value


def memset_async(ptr, nbytes, stream):
    """Zero ``nbytes`` of device memory at ``ptr`` on ``stream`` (a raw handle), in stream
    order (a CUDA graph capture records it as a memset node)."""
    _call("cuMemsetD8Async", _c.c_uint64(ptr), 0, _c.c_size_t(nbytes), _c.c_void_p(stream or None))


def _mem_free(ptr):
    try:
        _lib().cuMemFree_v2(_c.c_uint64(ptr))
    except Exception:       # at interpreter exit the context may be gone: nothing to free
        pass


def copy_to_device(ptr, data):
    """Copy the bytes ``data`` to device address ``ptr`` (synchronous)."""
    buf = _c.create_string_buffer(bytes(data), len(data))
    _call("cuMemcpyHtoD_v2", _c.c_uint64(ptr), buf, _c.c_size_t(len(data)))


#: A kernel that writes its 128-byte parameter ``w`` to ``dst`` (one thread, 16 stores).
_STORE_PTX = "\n".join(
    [".version 7.8", ".target sm_50", ".address_size 64",
     ".visible .entry store_param_words(.param .u64 dst, .param .align 8 .b8 w[128])", "{",
     "    .reg .b64 %rd<3>;", "    ld.param.u64 %rd1, [dst];", "    cvta.to.global.u64 %rd1, %rd1;"]
    + [f"    ld.param.u64 %rd2, [w+{8 * i}];\n    st.global.u64 [%rd1+{8 * i}], %rd2;" for i in range(16)]
    + ["    ret;", "}", ""])
_STORE = {}


def store_kernel():
    """The loaded store kernel of :func:`store_async` (load it before a graph capture)."""
    fn = _STORE.get("fn")
    if fn is None:
        fn = _STORE["fn"] = Function(_STORE_PTX.encode() + b"\0", "store_param_words")
    return fn


def store_async(ptr, data, stream):
    """Write ``data`` (at most 128 bytes) to device address ``ptr`` by a kernel launched on
    ``stream``: a copy that a CUDA graph capture records, with the bytes in the kernel's
    parameters (a host-to-device copy would read host memory again at every replay)."""
    if len(data) > 128:
        raise DriverError(f"store_async: {len(data)} bytes, at most 128")
    dst = _c.c_uint64(ptr)
    words = (_c.c_uint64 * 16).from_buffer_copy(bytes(data).ljust(128, b"\0"))
    params = (_c.c_void_p * 2)(_c.addressof(dst), _c.addressof(words))
    store_kernel().launch(1, 1, 0, stream, params)


def read_int32(ptr):
    """The int32 at device address ``ptr`` (synchronous)."""
    v = _c.c_int32()
    _call("cuMemcpyDtoH_v2", _c.byref(v), _c.c_uint64(ptr), _c.c_size_t(4))
    return v.value


def encode_tensor_map(dtype, ptr, dims, strides_bytes, box, swizzle_bytes=128):
    """A TMA tensor map of rank ``len(dims)`` (1 to 5; ``cuTensorMapEncodeTiled``): ``dims``
    and ``box`` innermost first, in elements; ``strides_bytes``: the byte strides of
    dimensions 1 and up. Returns its 128 bytes.

    Raises :class:`DriverError` naming the values the driver refused."""
    rank = len(dims)
    if len(strides_bytes) != rank - 1 or len(box) != rank:
        raise DriverError(f"encode_tensor_map: {rank} dims take {rank - 1} strides and {rank} box sides, got "
                          f"strides {tuple(strides_bytes)}, box {tuple(box)}")
    tmap = (_c.c_uint64 * 16)()
    gdim = (_c.c_uint64 * rank)(*dims)
    gstride = (_c.c_uint64 * max(1, rank - 1))(*strides_bytes)
    bdim = (_c.c_uint32 * rank)(*box)
    estride = (_c.c_uint32 * rank)(*([1] * rank))
    sw = {0: 0, 32: 1, 64: 2, 128: 3}[swizzle_bytes]
    try:
        _call("cuTensorMapEncodeTiled", tmap, TENSOR_MAP_TYPES[dtype], rank, _c.c_void_p(ptr), gdim, gstride, bdim,
              estride, 0, sw, 3, 0)
    except DriverError as e:
        raise DriverError(f"{e}: {dtype} tensor at {ptr:#x}, dims {tuple(dims)}, strides {tuple(strides_bytes)} B, "
                          f"box {tuple(box)}") from None
    return bytes(tmap)


def encode_tensor_map_2d(dtype, ptr, dims, row_stride_bytes, box, swizzle_bytes=128):
    """A 2-D TMA tensor map: :func:`encode_tensor_map` with one stride, that of dimension 1."""
    return encode_tensor_map(dtype, ptr, dims, (row_stride_bytes,), box, swizzle_bytes)


def compile_image(ptx):
    """A loadable image of ``ptx`` for the current context's device, compiled as a whole
    program: the cubin of ``ptxas`` where one is on the PATH (:func:`ptxas_cubin`), else the
    PTX itself (NUL-ended), which ``cuModuleLoadData`` compiles as a whole program.

    Not the driver's linker (``cuLink*``), nor nvJitLink: they compile PTX as relocatable
    code, and ptxas then serializes every ``wgmma`` ("C7509: wgmma.mma_async instructions
    are serialized due to the presence of Extern calls") and ignores ``setmaxnreg``
    ("C7504"): the Hopper f16 kernel ran at 540 instead of 650 TFLOP/s on the H100 at 4096^3
    (benchmarks/RESULTS.md). A ptxas that fails (older than the PTX, say) leaves the PTX to the
    driver."""
    cubin, _ = ptxas_cubin(ptx, ptxas_arch(ptx, compute_capability()))
    return cubin if cubin is not None else ptx.encode() + b"\0"


def ptxas_arch(ptx, cc):
    """The ``-arch`` of device ``cc`` (major, minor) for ``ptx``: ``sm_90a`` where the PTX
    targets an architecture-specific ``sm_XXa``, else ``sm_90`` (for cc (9, 0))."""
    arch_specific = re.search(r"^\s*\.target\s+sm_\d+a\b", ptx, re.M) is not None
    return f"sm_{cc[0]}{cc[1]}" + ("a" if arch_specific else "")


def ptxas_cubin(ptx, arch, verbose=False):
    """``(cubin, log)`` of ``ptxas -arch=<arch> [-v]`` on ``ptx`` (a whole program; no GPU
    needed), or ``(None, why)`` where no ptxas is on the PATH or it fails."""
    import os
    import shutil
    import subprocess
    import tempfile

    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None, "no ptxas on the PATH"
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "kernel.ptx"), os.path.join(d, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas, f"-arch={arch}"] + (["-v"] if verbose else []) + [src, "-o", out],
                           capture_output=True, text=True)
        if r.returncode:
            return None, r.stderr
        with open(out, "rb") as f:
            return f.read(), r.stderr


def entry_name(ptx):
    """The name of the (single) kernel entry of a PTX module."""
    m = re.search(r"\.entry\s+([A-Za-z0-9_$.]+)\s*\(", ptx)
    if m is None:
        raise DriverError("entry_name: the PTX has no .entry")
    return m.group(1)


CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4


class _LaunchAttribute(_c.Structure):
    """``CUlaunchAttribute``: an id, then (8-byte aligned) a 64-byte value union; the cluster
    dimension's value is three unsigned ints."""
    _fields_ = [("id", _c.c_int), ("pad", _c.c_char * 4), ("x", _c.c_uint), ("y", _c.c_uint), ("z", _c.c_uint),
                ("rest", _c.c_char * 52)]


class _LaunchConfig(_c.Structure):
    """``CUlaunchConfig``."""
    _fields_ = [("gridDimX", _c.c_uint), ("gridDimY", _c.c_uint), ("gridDimZ", _c.c_uint),
                ("blockDimX", _c.c_uint), ("blockDimY", _c.c_uint), ("blockDimZ", _c.c_uint),
                ("sharedMemBytes", _c.c_uint), ("hStream", _c.c_void_p),
                ("attrs", _c.POINTER(_LaunchAttribute)), ("numAttrs", _c.c_uint)]


class Function:
    """A kernel loaded from an image (a cubin, or PTX that the driver compiles) into the current
    context, launched through
    ``cuLaunchKernel`` with a prebuilt parameter array."""

    def __init__(self, cubin, name, smem_bytes=0):
        ensure_context()
        self._image = _c.create_string_buffer(cubin, len(cubin))
        self.module = _c.c_void_p()
        _call("cuModuleLoadData", _c.byref(self.module), self._image)
        self.handle = _c.c_void_p()
        _call("cuModuleGetFunction", _c.byref(self.handle), self.module, name.encode())
        if smem_bytes > 48 * 1024:
            _call("cuFuncSetAttribute", self.handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes)
        self._launch = _lib().cuLaunchKernel
        self._launch.argtypes = [_c.c_void_p] + [_c.c_uint] * 7 + [_c.c_void_p] * 3
        self._launch.restype = _c.c_int

    @property
    def num_regs(self):
        v = _c.c_int()
        _call("cuFuncGetAttribute", _c.byref(v), CU_FUNC_ATTRIBUTE_NUM_REGS, self.handle)
        return v.value

    def cluster_config(self, grid, block, smem, cluster, stream=0):
        """A launch configuration (``cuLaunchKernelEx``) of ``grid`` CTAs in clusters of
        ``cluster`` along x, kept with its attribute; ``launch_config`` launches it."""
        attr = _LaunchAttribute(id=CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, x=cluster, y=1, z=1)
        cfg = _LaunchConfig(grid, 1, 1, block, 1, 1, smem, stream, _c.pointer(attr), 1)
        cfg._attr = attr            # keep the attribute alive with the config
        return cfg

    def max_active_clusters(self, block, smem, cluster):
        """How many clusters of ``cluster`` CTAs of ``block`` threads and ``smem`` bytes of
        shared memory the GPU runs at once (``cuOccupancyMaxActiveClusters``)."""
        n = _c.c_int()
        cfg = self.cluster_config(cluster, block, smem, cluster)
        _call("cuOccupancyMaxActiveClusters", _c.byref(n), self.handle, _c.byref(cfg))
        return n.value

    def launch_config(self, cfg, stream, params):
        """Launch through ``cuLaunchKernelEx`` with a config of :meth:`cluster_config`."""
        cfg.hStream = stream
        _call("cuLaunchKernelEx", _c.byref(cfg), self.handle, params, None)

    def launch(self, grid, block, smem, stream, params):
        """Launch on ``grid`` x ``block`` threads (ints) with ``params`` (a ctypes array of
        pointers to the argument values)."""
        err = self._launch(self.handle, grid, 1, 1, block, 1, 1, smem, stream, params, None)
        if err:
            msg = _c.c_char_p()
            _lib().cuGetErrorString(err, _c.byref(msg))
            raise DriverError(f"cuLaunchKernel failed: CUDA error {err} ({(msg.value or b'?').decode()})")
