"""Source and PTX of a plan's kernel, without a GPU."""

from __future__ import annotations

from .config import GemmConfig
from .errors import GemmError
from .kernel import KernelKey, compile_ptx_text, get_kernel, simulating

__all__ = ["compile_ptx", "emit_gemm_source"]

#: Compute capabilities the mma.sync kernels compile for (cp.async and ldmatrix need sm_80).
MIN_CC = (8, 0)


def _key(config, a_major, b_major, op):
    config = config if config is not None else GemmConfig.default("f16")
    if not isinstance(config, GemmConfig):
        raise GemmError(f"{op}: config must be a GemmConfig, got {config!r}")
    for name, v in (("a_major", a_major), ("b_major", b_major)):
        if v not in ("K", "MN"):
            raise GemmError(f"{op}: {name} must be 'K' or 'MN', got {v!r}")
    return KernelKey(config, a_major, b_major)


def compile_ptx(config=None, cc=(9, 0), a_major="K", b_major="K"):
    """The PTX text of ``config``'s kernel (the default fp16 plan when None) for compute
    capability ``cc`` (a tuple such as ``(8, 0)``, ``(9, 0)`` or ``(9, 0, "a")``).

    A Hopper plan (``config.path == "wgmma"``) compiles for ``sm_90a``, its only target
    (``cc`` (9, 0) or (9, 0, "a")). Needs no GPU, and works with numba's simulator switched
    on.  Cached in memory and on disk (keyed by the kernel source, ``cc`` and the numba
    version).
    """
    key = _key(config, a_major, b_major, "compile_ptx")
    if not isinstance(cc, tuple) or len(cc) < 2 or not all(isinstance(c, int) for c in cc[:2]):
        raise GemmError(f"compile_ptx: cc must be a tuple such as (8, 0) or (9, 0, 'a'), got {cc!r}")
    if tuple(cc[:2]) < MIN_CC:
        raise GemmError(f"compile_ptx: the generated kernels use cp.async, ldmatrix and mma.sync, which need "
                        f"compute capability {MIN_CC[0]}.{MIN_CC[1]} or newer; got cc={cc!r}")
    if key.config.path == "wgmma":
        if tuple(cc[:2]) != (9, 0) or cc[2:] not in ((), ("a",)):
            raise GemmError(f"compile_ptx: the wgmma kernels (TMA, wgmma) run on compute capability 9.0 and "
                            f"compile for sm_90a; got cc={cc!r}")
        cc = (9, 0, "a")
    if simulating():
        hit = _SIM_PTX.get((key, cc))
        if hit is None:
            hit = _SIM_PTX[(key, cc)] = _ptx_outside_simulator(key, cc)
        return hit
    if key.config.path == "wgmma":
        return _wgmma_ptx(key)
    return compile_ptx_text(key, cc)


def _wgmma_ptx(key):
    from .sm90 import compile_ptx as sm90_ptx

    try:
        return sm90_ptx(key.config, key.a_major, key.b_major)
    except ValueError as e:      # e.g. an MN-major operand of a type that wgmma reads K-major only
        raise GemmError(f"compile_ptx: {e}") from None


#: PTX compiled outside the simulator, by (kernel key, cc): a child process costs a quarter second
_SIM_PTX = {}


def _ptx_outside_simulator(key, cc):
    """numba's simulator replaces ``numba.cuda`` (it has no ``compile_ptx``): compile in a
    child process with the simulator off."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    c = key.config
    prog = (
        "import json, sys\n"
        "from codegen.config import GemmConfig\n"
        "from codegen.kernel import KernelKey, compile_ptx_text\n"
        "from codegen.ptx import _wgmma_ptx\n"
        "a = json.loads(sys.argv[1])\n"
        "key = KernelKey(GemmConfig(**a['config']), a['a_major'], a['b_major'])\n"
        "wg = key.config.path == 'wgmma'\n"
        "sys.stdout.write(_wgmma_ptx(key) if wg else compile_ptx_text(key, tuple(a['cc'])))\n"
    )
    arg = json.dumps({"config": c.__dict__, "a_major": key.a_major, "b_major": key.b_major, "cc": list(cc)})
    p = subprocess.run([sys.executable, "-c", prog, arg], capture_output=True, text=True, env=env)
    if p.returncode:
        raise GemmError(f"compile_ptx: compiling outside the simulator failed:\n{p.stderr[-2000:]}")
    return p.stdout


def emit_gemm_source(config=None, a_major="K", b_major="K"):
    """The numba source of ``config``'s kernel (the default fp16 plan when None; a Hopper
    plan's kernel for ``config.path == "wgmma"``)."""
    key = _key(config, a_major, b_major, "emit_gemm_source")
    if key.config.path == "wgmma":
        from .sm90 import emit_source

        try:
            return emit_source(key.config, a_major, b_major)
        except ValueError as e:
            raise GemmError(f"emit_gemm_source: {e}") from None
    return get_kernel(key, jit=False).source
