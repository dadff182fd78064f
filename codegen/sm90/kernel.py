"""The Hopper kernel from its plan: source module, PTX for sm_90a, cubin, loaded function.

Shares the caches of :mod:`codegen.kernel` (source modules, PTX and cubins on disk, keyed
by the source, the target and the compiler versions).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import kernel as K
from .emit import KERNEL_NAME, emit_wgmma_source
from .plan import WgmmaPlan, make_wgmma_plan

__all__ = ["WgmmaKey", "CompiledWgmma", "get_wgmma_kernel", "wgmma_plan", "wgmma_signature", "compile_wgmma_ptx"]

CC = (9, 0, "a")


EPILOGUES = ("tma", "registers", "elements")


@dataclass(frozen=True)
class WgmmaKey:
    """One Hopper kernel: the plan's config, the operands' majors, and its epilogue:
    ``"tma"`` (a 16-bit C, or an 8-bit float C in tiles of whole 128-byte boxes, staged in
    shared memory and stored by TMA; the launch passes a map of C and ``beta == 0``), ``"registers"`` (stores from registers, any ``beta``, pairs
    of columns at once) or ``"elements"`` (from registers, element by element: a C whose row
    stride is odd, or whose address is not aligned to two elements).
    ``None`` is the plan's first choice: ``"tma"`` where C can take it, else ``"registers"``.
    ``user``: a user's element-wise epilogue (:class:`~codegen.epilogue_fn.EpilogueFunction`),
    or None; such kernels are cached in memory only. ``copy``: the operands ("A", "B", "AB")
    that the producer warpgroup copies, TMA being unable to read them ("": none)."""

    config: object
    a_major: str = "K"
    b_major: str = "K"
    epilogue: str = None
    user: object = None
    copy: str = ""

    def resolved(self):
        """This key with its epilogue named."""
        if self.epilogue is None:
            from ..cute import tma_store_fits

            return replace(self, epilogue="tma" if tma_store_fits(self.config.out, self.config.bn) else "registers")
        if self.epilogue not in EPILOGUES:
            raise ValueError(f"WgmmaKey: epilogue {self.epilogue!r} is not one of {', '.join(EPILOGUES)}")
        return self


@dataclass
class CompiledWgmma:
    key: WgmmaKey
    plan: WgmmaPlan
    source: str
    module: str
    function: object = None         # GPU: the loaded driver function
    kernel: object = None           # simulator: numba's simulated dispatcher

    @property
    def config(self):
        return self.plan.config

    @property
    def smem_bytes(self):
        return self.plan.smem_bytes


_MEM = {}


def wgmma_signature(user=False):
    """numba's signature of the kernel, from its declared arguments (:mod:`codegen.sm90.args`;
    ``user``: a kernel with a user epilogue)."""
    from .args import gemm_args

    return gemm_args(user).signature()


def _base(key):
    key = key.resolved()
    hit = _MEM.get((key, None))
    if hit is None:
        plan = make_wgmma_plan(key.config, key.a_major, key.b_major, key.copy)
        source = emit_wgmma_source(plan, key.epilogue, key.user)
        hit = _MEM[(key, None)] = CompiledWgmma(key, plan, source, K._module_path(source))
    return hit


def compile_wgmma_ptx(key, cc=CC):
    """PTX of the Hopper kernel of ``key`` (cached in memory and on disk)."""
    import os

    base = _base(key)
    bounds = (base.plan.threads, 1)
    tag = K._tag(base.source, cc, bounds)
    path = os.path.join(K.cache_dir(), f"ptx_{tag}.ptx")
    hit = K._PTX.get(tag)
    if hit is not None:
        return hit
    try:
        if key.user is not None:        # a function's behaviour is not its source: memory only
            raise OSError
        with open(path) as f:
            ptx = f.read()
    except OSError:
        with K.gc_paused():
            from ..numba_ptx import kernel_ptx

            kernel = getattr(K._load_module(base.source), KERNEL_NAME)
            if key.user is None:
                ptx = kernel_ptx(kernel, wgmma_signature(), cc, bounds)
            else:
                from ..epilogue_fn import user_kernel_ptx

                ptx = user_kernel_ptx(kernel, key.user, wgmma_signature(True), cc, bounds)
        if key.user is None:
            K._write(path, ptx.encode())
    K._PTX[tag] = ptx
    return ptx


def wgmma_plan(key):
    """The plan of ``key`` (memoised with its source; nothing compiled)."""
    return _base(key).plan


def get_wgmma_kernel(key):
    """The Hopper kernel of ``key`` loaded into the current context (memoised); in numba's
    simulator, the simulated kernel."""
    import os

    from .. import driver

    key = key.resolved()
    if K.simulating():
        hit = _MEM.get((key, "sim"))
        if hit is None:
            from numba import cuda

            base = _base(key)
            hit = _MEM[(key, "sim")] = CompiledWgmma(key, base.plan, base.source, base.module, None,
                                                     cuda.jit(getattr(K._load_module(base.source), KERNEL_NAME)))
        return hit
    ctx = driver.ensure_context()
    hit = _MEM.get((key, ctx))
    if hit is not None:
        return hit
    base = _base(key)
    tag = K._tag(base.source, CC, (base.plan.threads, 1))
    path = os.path.join(K.cache_dir(), f"image_{tag}.bin")
    try:
        if key.user is not None:        # memory only (compile_wgmma_ptx)
            raise OSError
        with open(path, "rb") as f:
            name, _, cubin = f.read().partition(b"\n")
        name = name.decode()
    except OSError:
        ptx = compile_wgmma_ptx(key)
        name = driver.entry_name(ptx)
        cubin = driver.compile_image(ptx)
        if key.user is None:
            K._write(path, name.encode() + b"\n" + cubin)
    out = CompiledWgmma(key, base.plan, base.source, base.module, driver.Function(cubin, name, base.plan.smem_bytes))
    _MEM[(key, ctx)] = out
    return out
