"""codegen: GEMM kernels generated from layouts.

>>> from codegen import GemmConfig, emit_gemm_source
>>> "mma_m16n8k16_f32f16" in emit_gemm_source(GemmConfig.default("f16"))
True
"""

from . import _numpy_compat  # noqa: F401  (before numba is imported: numpy 2.5 and numba-cuda 0.30)
from .config import GemmConfig
from .host import GemmError, GemmLaunch, gemm, prepare
from .ptx import compile_ptx, emit_gemm_source
from .plan import make_plan

__all__ = ["GemmConfig", "gemm", "prepare", "GemmLaunch", "GemmError", "compile_ptx", "emit_gemm_source", "make_plan"]
