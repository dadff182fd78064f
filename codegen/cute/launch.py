"""Launch helpers for user kernels on a GPU.

>>> callable(allow_dynamic_shared)
True
>>> import numpy as np
>>> kernel_arg(np.zeros(3, np.float16)).dtype         # numba types it as it is
dtype('float16')
"""

from __future__ import annotations

__all__ = ["allow_dynamic_shared", "kernel_arg", "launch", "require_device", "STATIC_SHARED_LIMIT"]

#: Bytes of shared memory a kernel may use without raising its limit.
STATIC_SHARED_LIMIT = 48 * 1024


def allow_dynamic_shared(kernel, *args, nbytes, signature=None):
    """Compile ``kernel`` for ``args`` (or for ``signature``, a numba signature it was
    compiled for) and let it use ``nbytes`` of dynamic shared memory.

    Kernels above 48 KiB must raise ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``
    themselves (numba does not); this does it once per signature.  Returns ``kernel``.
    Pre: a GPU and ``args`` as they will be passed to the launch.
    """
    if nbytes <= STATIC_SHARED_LIMIT:
        return kernel
    from numba.cuda.cudadrv.driver import binding, driver

    argtys = tuple(signature.args) if signature is not None else tuple(kernel.typeof_pyval(a) for a in args)
    key = (id(kernel), argtys)
    if _RAISED.get(key, 0) < nbytes:
        cufunc = kernel.compile(argtys)._codelibrary.get_cufunc()
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, nbytes, cufunc.handle, cufunc.device.id)
        _RAISED[key] = nbytes
    return kernel


_RAISED: dict = {}


def kernel_arg(x):
    """``x`` as a numba kernel can take it: a bfloat16 array (a torch ``bfloat16`` tensor, an
    ``ml_dtypes`` numpy array), which numba cannot type, as a view of its bits as uint16 (int16
    where torch has no uint16), the way ``codegen.cute`` holds bf16 values; anything else as it is."""
    dt = getattr(x, "dtype", None)
    if dt is None or "bfloat16" not in str(dt):
        return x
    mod = type(x).__module__
    if mod.startswith("torch"):
        import torch

        return x.view(getattr(torch, "uint16", torch.int16))
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.view(np.uint16)
    return x.view("uint16")                         # CuPy-like arrays


def launch(kernel, grid, block, *args, stream=0, shared=0):
    """``kernel[grid, block, stream, shared](*args)`` with each argument passed through
    :func:`kernel_arg` (torch bf16 tensors need no ``.view``) and, on a GPU, the kernel's
    dynamic shared memory limit raised for ``shared`` bytes (:func:`allow_dynamic_shared`)."""
    args = tuple(kernel_arg(a) for a in args)
    from .. import intrinsics

    if shared > STATIC_SHARED_LIMIT and not intrinsics.SIMULATED:
        allow_dynamic_shared(kernel, *args, nbytes=shared)
    return kernel[grid, block, stream, shared](*args)


def require_device(what):
    """Return when kernels can run (a usable CUDA GPU, or numba's simulator); else end the
    program with one line naming ``what`` (a script), the reason and the simulator's switch,
    as ``codegen.gemm`` does, instead of numba's traceback from the first launch."""
    from .. import intrinsics

    if intrinsics.SIMULATED:
        return
    from numba import cuda

    try:
        cuda.current_context()
        return
    except Exception as e:  # numba's CudaSupportError, a driver error, ...
        reason = " ".join(str(e).split()) or type(e).__name__        # numba's words, on one line
        reason = reason if len(reason) <= 160 else reason[:157] + "..."
    raise SystemExit(f"{what}: no usable CUDA GPU ({reason}); run it in numba's simulator with "
                     f"NUMBA_ENABLE_CUDASIM=1 (e.g. NUMBA_ENABLE_CUDASIM=1 python {what})")
