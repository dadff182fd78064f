"""PTX of a plan's kernel, without a GPU."""

from .config import GemmConfig
from .kernel import get_kernel, kernel_signature

__all__ = ["compile_ptx", "emit_gemm_source"]


def compile_ptx(config=None, cc=(9, 0), a_major="K", b_major="K"):
    """The PTX text of ``config``'s kernel (the default fp16 plan when None) for compute capability ``cc``."""
    from numba import cuda

    config = config or GemmConfig.default("f16")
    k = get_kernel(config, a_major, b_major, jit=False)
    fn = getattr(k.module, "gemm_kernel")
    opts = {"launch_bounds": (config.threads, config.min_blocks)} if config.min_blocks > 1 else {}
    ptx, _ = cuda.compile_ptx(fn, kernel_signature(config), cc=cc, **opts)
    return ptx


def emit_gemm_source(config=None, a_major="K", b_major="K"):
    """The numba source of ``config``'s kernel (the default fp16 plan when None)."""
    config = config or GemmConfig.default("f16")
    return get_kernel(config, a_major, b_major, jit=False).source
