"""From emitted source to a compiled kernel, with an in-memory and on-disk cache.

The source of every kernel is written to a cache folder as a real module so
that numba's own on-disk cache (``cache=True``) works across processes, and so
that a user can open and read exactly what runs.
"""

import hashlib
import importlib.util
import os
import sys

from .emit import KERNEL_NAME, emit_source
from .plan import make_plan

__all__ = ["CompiledGemm", "get_kernel", "cache_dir", "kernel_signature"]

_MEM = {}


def cache_dir():
    """Where generated kernel modules live (``LAYOUTALG_CACHE`` or ``~/.cache/layoutalg``)."""
    d = os.environ.get("LAYOUTALG_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "layoutalg")
    os.makedirs(d, exist_ok=True)
    return d


class CompiledGemm:
    """A generated kernel: its plan, source text, module and numba dispatcher."""

    def __init__(self, plan, source, module, kernel, key):
        self.plan = plan
        self.source = source
        self.module = module
        self.kernel = kernel
        self.key = key
        self.smem_bytes = module.SMEM_BYTES

    def __repr__(self):
        c = self.plan.config
        return f"CompiledGemm({c.dtype} {c.bm}x{c.bn}x{c.bk}, {c.stages} stages, {c.threads} threads)"


def _load_module(source, key):
    h = hashlib.sha256((source + repr(key)).encode()).hexdigest()[:20]
    name = f"layoutalg_gemm_{h}"
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(cache_dir(), name + ".py")
    if not os.path.exists(path) or open(path).read() != source:
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def get_kernel(config, a_major="K", b_major="K", a_mode="cp_async", b_mode="cp_async",
               a_vec=None, b_vec=None, jit=True):
    """The compiled kernel for a plan (memoised per configuration, layouts and alignment)."""
    key = (config, a_major, b_major, a_mode, b_mode, a_vec, b_vec, jit)
    hit = _MEM.get(key)
    if hit is not None:
        return hit
    plan = make_plan(config, a_major, b_major, a_vec, b_vec)
    source = emit_source(plan, a_mode, b_mode)
    mod = _load_module(source, key[:-1])
    fn = getattr(mod, KERNEL_NAME)
    kernel = None
    if jit:
        from numba import cuda

        if _simulating():
            kernel = cuda.jit(fn)
        else:
            opts = {"launch_bounds": (config.threads, config.min_blocks)} if config.min_blocks > 1 else {}
            kernel = cuda.jit(fn, cache=True, **opts)
    out = CompiledGemm(plan, source, mod, kernel, key)
    _MEM[key] = out
    return out


def _simulating():
    from numba.cuda import config as ncfg

    return bool(getattr(ncfg, "ENABLE_CUDASIM", 0))


def kernel_signature(config):
    """The numba signature of a plan's kernel for C-contiguous-or-strided 2-D arrays."""
    from numba import float32, float64, int32, uint16, types
    from numba.core.types import float16

    el = {"f16": float16, "bf16": uint16, "tf32": float32, "f32": float32, "f64": float64}[config.dtype]
    out = {"f16": float16, "bf16": uint16, "f32": float32, "f64": float64}[config.out]
    arr = types.Array(el, 2, "A")
    carr = types.Array(out, 2, "A")
    scalar = float64 if config.dtype == "f64" else float32
    return (arr, arr, carr, int32, int32, int32, int32, int32, int32, int32, int32, int32, scalar, scalar)
