"""Launch helpers for user kernels on a GPU.

>>> callable(allow_dynamic_shared)
True
"""

from __future__ import annotations

__all__ = ["allow_dynamic_shared", "STATIC_SHARED_LIMIT"]

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
