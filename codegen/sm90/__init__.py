"""The Hopper GEMM: wgmma fed by TMA through mbarrier pipelines (see docs/hopper.md).

>>> from codegen import GemmConfig
>>> "wgmma_m64n256k16_f32_f16" in emit_source(GemmConfig.default("f16", arch=(9, 0)), "K", "MN")
True
"""

from .kernel import WgmmaKey, compile_wgmma_ptx, get_wgmma_kernel
from .plan import WgmmaPlan, make_wgmma_plan

__all__ = ["emit_source", "compile_ptx", "make_wgmma_plan", "WgmmaPlan", "WgmmaKey", "get_wgmma_kernel"]


def emit_source(config, a_major="K", b_major="K", epilogue=None, copy=""):
    """The numba source of the Hopper kernel of ``config`` (``path="wgmma"``); ``epilogue``
    "tma" or "registers" (default: "tma" for a 16-bit C), ``copy`` the operands the producer
    warpgroup copies; see :class:`WgmmaKey`."""
    from .kernel import _base

    return _base(WgmmaKey(config, a_major, b_major, epilogue, copy=copy)).source


def compile_ptx(config, a_major="K", b_major="K", epilogue=None, copy=""):
    """The kernel's PTX for ``sm_90a`` (no GPU needed)."""
    return compile_wgmma_ptx(WgmmaKey(config, a_major, b_major, epilogue, copy=copy))
