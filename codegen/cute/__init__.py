"""``codegen.cute``: layouts, tensors, tiled copies and tiled MMAs inside numba.cuda kernels,
and the Hopper kernel library (pipelines, TMA, warpgroup MMAs, tile schedulers, epilogues).

A kernel uses host objects of :mod:`layoutalg` (``Layout``, swizzled ``ComposedLayout``,
``TiledCopy``, ``TiledMMA``) as globals; numba types each one by its value, so every
layout is a compile-time constant of the kernel and only thread and block indices remain
at run time (see docs/user_kernels.md)::

    from numba import cuda
    from codegen import cute

    @cuda.jit
    def kernel(A, B):
        gA = cute.make_tensor(A, LAYOUT_A)                       # (M,K) -> offset
        tile = cute.local_tile(gA, (16, 8), (cuda.blockIdx.x, 0))
        ...

Under ``NUMBA_ENABLE_CUDASIM=1`` the same names are the plain-Python twins of
:mod:`codegen.cute.sim`, which run the host algebra and the atoms' simulator twins.

``cute.bfloat16``, given for a dtype (``make_ptr(cute.bfloat16, address, 2)``), makes tensors
over bfloat16 bits whose elements read and write as float32 (:class:`codegen.cute.api.ElementKind`).

Importing this package imports no numba: the device objects and their factories (the
Hopper pieces) are host objects that plans and launchers use; the kernel-side functions
(``make_tensor``, ``copy``, ``setmaxnreg_inc`` ...) import numba when first looked up, and
bind the device objects' methods to it (:func:`codegen.cute.objects.activate`).
"""

from __future__ import annotations

import sys

from .api import ElementKind, bfloat16
from .errors import CuteError
from .objects import SIMULATED, activate, device, device_function, device_object
from .params import KernelParams
from .smem import SharedStorage, smem_base
from .pipeline import PipelineState, TmaPipeline, mbarrier_wait
from .tma import TmaLoad, TmaStore, make_tma_load
from .gmem_copy import GmemStageCopy, copy_ok, make_gmem_copy
from .wgmma import WgmmaMMA, WgmmaRS, gmma_stage, make_wgmma, make_wgmma_rs
from .mainloop import WgmmaMainloop
from .scheduler import SchedulerParams, TileScheduler, WorkTile
from .epilogue import (
    BiasActivation, ElementwiseEpilogue, OutputScale, RegisterEpilogue, TmaStoreEpilogue, epilogue_alpha,
    make_bias_activation, group_alpha, make_elementwise_epilogue, make_output_scale, make_register_epilogue,
    make_tma_store_epilogue, tma_store_fits,
)
from .warpgroup import INTRINSICS as _WARPGROUP_INTRINSICS, warpgroup_index

#: The kernel-side functions on tensors, from :mod:`codegen.cute.api` (typed and lowered by
#: :mod:`codegen.cute.device_tensor` and friends) or, in the simulator, :mod:`codegen.cute.sim`.
_TENSOR_FUNCTIONS = (
    "make_ptr", "make_tensor", "make_layout", "assume", "make_shared_tensor", "dynamic_shared_tensor", "make_fragment_like", "make_identity_tensor",
    "local_tile", "local_partition", "domain_offset", "size", "copy", "copy_if", "convert", "gemm", "clear", "fill",
    "make_fragment_A", "make_fragment_B", "make_fragment_C", "mark_in_bounds",
)
#: Intrinsics exported under other names: ``cp_async_fence()`` closes the current group of
#: cp.async copies (``cp.async.commit_group``), ``cp_async_wait(n)`` waits until at most
#: ``n`` (a constant) groups are pending.
_RENAMED = {"cp_async_fence": "cp_async_commit", "cp_async_wait": "cp_async_wait_group"}

__all__ = list(_TENSOR_FUNCTIONS) + list(_RENAMED) + list(_WARPGROUP_INTRINSICS) + [
    "SIMULATED", "CuteError", "ElementKind", "bfloat16", "activate", "device", "device_function", "device_object",
    "KernelParams",
    "SharedStorage", "smem_base", "PipelineState", "TmaPipeline", "mbarrier_wait", "TmaLoad", "TmaStore",
    "make_tma_load", "GmemStageCopy", "make_gmem_copy", "copy_ok", "WgmmaMMA", "WgmmaRS", "gmma_stage", "make_wgmma", "make_wgmma_rs", "WgmmaMainloop", "SchedulerParams", "TileScheduler",
    "WorkTile", "RegisterEpilogue", "TmaStoreEpilogue", "make_register_epilogue", "make_tma_store_epilogue",
    "BiasActivation", "make_bias_activation", "ElementwiseEpilogue", "make_elementwise_epilogue", "epilogue_alpha", "group_alpha",
    "OutputScale", "make_output_scale", "tma_store_fits",
    "warpgroup_index",
]


def _refresh_typing():
    """Load the typing just registered into numba's CUDA typing context: a first lookup may come
    from numba typing a kernel, which reads its registries only when it starts."""
    from numba.cuda.descriptor import cuda_target

    cuda_target.typing_context.refresh()


def __getattr__(name):
    """The kernel-side names, imported (with numba) when first looked up."""
    if name in _TENSOR_FUNCTIONS:
        if SIMULATED:
            from . import sim as mod
        else:
            from . import api as mod, device_atoms, device_tiled  # noqa: F401  (they register the typing)
            _refresh_typing()
        value = getattr(mod, name)
    elif name in _RENAMED or name in _WARPGROUP_INTRINSICS:
        from .. import intrinsics

        value = getattr(intrinsics, _RENAMED.get(name, name))
    else:
        raise AttributeError(f"module 'codegen.cute' has no attribute {name!r}")
    activate()
    globals()[name] = value
    return value


if "numba.cuda" in sys.modules:
    # numba is loaded already: bind now, so that numba.cuda.compile_ptx of a plain function,
    # which runs no numba-cuda extension entry points (a @cuda.jit dispatcher does), types
    # the device objects too
    activate()
