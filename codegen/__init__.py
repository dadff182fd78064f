"""codegen: GEMM kernels generated from layouts.

>>> from codegen import GemmConfig, emit_gemm_source
>>> "SM80_16x8x16_F32F16F16F32_TN" in emit_gemm_source(GemmConfig.default("f16"))
True
"""

from . import _numpy_compat  # noqa: F401  (before numba is imported: numpy 2.5 and numba-cuda 0.30)
from .flash_attention import attention
from .config import GemmConfig
from .grouped import grouped_gemm
from .host import GemmError, GemmLaunch, gemm, prepare
from .ptx import compile_ptx, emit_gemm_source
from .plan import make_plan

__all__ = ["GemmConfig", "gemm", "mm", "grouped_gemm", "attention", "prepare", "GemmLaunch", "GemmError", "compile_ptx",
           "emit_gemm_source", "make_plan"]


def mm(A, B, *, alpha=1.0, out_dtype=None, precision=None, bias=None, activation=None):
    """``activation(alpha * A @ B + bias)`` into a new array (``bias`` and ``activation``
    optional, see :func:`gemm`).  On torch tensors it is the operator
    ``torch.ops.layoutalg.mm`` (:mod:`codegen.torch_ops`): differentiable, traceable by
    ``torch.compile(fullgraph=True)`` and capturable in CUDA graphs; on other arrays it is
    :func:`gemm`."""
    if type(A).__module__.startswith("torch"):
        torch_mm = _TORCH_MM[0] if _TORCH_MM else _torch_mm()
        return torch_mm(A, B, alpha=alpha, out_dtype=out_dtype, precision=precision, bias=bias,
                        activation=activation)
    return gemm(A, B, alpha=alpha, out_dtype=out_dtype, precision=precision, bias=bias, activation=activation)


_TORCH_MM = []


def _torch_mm():
    """:func:`codegen.torch_ops.mm`, imported (with torch) on the first call on torch tensors."""
    from .torch_ops import mm as torch_mm

    _TORCH_MM.append(torch_mm)
    return torch_mm
