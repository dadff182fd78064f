"""``codegen.cute``: layouts, tensors, tiled copies and tiled MMAs inside numba.cuda kernels.

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
"""

from __future__ import annotations

from .. import intrinsics as _intrinsics

SIMULATED = _intrinsics.SIMULATED

from .offsets import CuteError  # noqa: E402  (the error of a bad kernel, on both backends)

__all__ = [
    "make_tensor", "make_shared_tensor", "dynamic_shared_tensor", "make_fragment_like", "make_identity_tensor",
    "local_tile", "local_partition", "size", "copy", "copy_if", "convert", "gemm", "clear", "fill",
    "make_fragment_A", "make_fragment_B", "make_fragment_C", "cp_async_fence", "cp_async_wait",
    "SIMULATED", "CuteError",
]

if SIMULATED:
    from .sim import (  # noqa: F401
        clear, convert, copy, copy_if, fill, gemm, local_partition, local_tile, make_fragment_A, make_fragment_B,
        make_fragment_C, make_fragment_like, make_identity_tensor, make_shared_tensor,
        make_tensor, size, dynamic_shared_tensor,
    )
else:
    from . import device_atoms as _device_atoms, device_tiled as _device_tiled  # noqa: F401  (registers)
    from .api import (  # noqa: F401
        clear, convert, copy, copy_if, fill, gemm, local_partition, local_tile, make_fragment_A, make_fragment_B,
        make_fragment_C, make_fragment_like, make_identity_tensor, make_shared_tensor,
        make_tensor, size, dynamic_shared_tensor,
    )

# ---- the Hopper kernel library: device objects (compile-time constants with inlined methods)
from .objects import device, device_object  # noqa: E402
from .params import KernelParams  # noqa: E402
from .smem import SharedStorage, smem_base  # noqa: E402
from .pipeline import PipelineState, TmaPipeline, mbarrier_wait  # noqa: E402
from .tma import TmaLoad, TmaStore, make_tma_load  # noqa: E402
from .wgmma import WgmmaMMA, gmma_stage, make_wgmma  # noqa: E402
from .mainloop import WgmmaMainloop  # noqa: E402
from .scheduler import TileScheduler, WorkTile  # noqa: E402
from .epilogue import (  # noqa: E402
    RegisterEpilogue, TmaStoreEpilogue, make_register_epilogue, make_tma_store_epilogue,
)
from .warpgroup import (  # noqa: E402
    cluster_ctarank, cluster_sync, named_barrier_sync, setmaxnreg_dec, setmaxnreg_inc, warpgroup_index,
)

__all__ += [
    "device", "device_object", "KernelParams", "SharedStorage", "smem_base", "PipelineState", "TmaPipeline",
    "mbarrier_wait", "TmaLoad", "TmaStore", "make_tma_load", "WgmmaMMA", "gmma_stage", "make_wgmma",
    "WgmmaMainloop", "TileScheduler", "WorkTile", "RegisterEpilogue", "TmaStoreEpilogue", "make_register_epilogue",
    "make_tma_store_epilogue", "cluster_ctarank", "cluster_sync", "named_barrier_sync",
    "setmaxnreg_dec", "setmaxnreg_inc", "warpgroup_index",
]

#: ``cp_async_fence()``: close the current group of cp.async copies (``cp.async.commit_group``).
cp_async_fence = _intrinsics.cp_async_commit
#: ``cp_async_wait(n)``: wait until at most ``n`` (a constant) groups are pending.
cp_async_wait = _intrinsics.cp_async_wait_group
