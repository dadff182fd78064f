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

    Needs no GPU, and works with numba's simulator switched on.  Cached in memory and on
    disk (keyed by the kernel source, ``cc`` and the numba version).
    """
    key = _key(config, a_major, b_major, "compile_ptx")
    if not isinstance(cc, tuple) or len(cc) < 2 or not all(isinstance(c, int) for c in cc[:2]):
        raise GemmError(f"compile_ptx: cc must be a tuple such as (8, 0) or (9, 0, 'a'), got {cc!r}")
    if tuple(cc[:2]) < MIN_CC:
        raise GemmError(f"compile_ptx: the generated kernels use cp.async, ldmatrix and mma.sync, which need "
                        f"compute capability {MIN_CC[0]}.{MIN_CC[1]} or newer; got cc={cc!r}")
    if simulating():
        return _ptx_outside_simulator(key, cc)
    return compile_ptx_text(key, cc)


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
        "a = json.loads(sys.argv[1])\n"
        "key = KernelKey(GemmConfig(**a['config']), a['a_major'], a['b_major'])\n"
        "sys.stdout.write(compile_ptx_text(key, tuple(a['cc'])))\n"
    )
    arg = json.dumps({"config": c.__dict__, "a_major": key.a_major, "b_major": key.b_major, "cc": list(cc)})
    p = subprocess.run([sys.executable, "-c", prog, arg], capture_output=True, text=True, env=env)
    if p.returncode:
        raise GemmError(f"compile_ptx: compiling outside the simulator failed:\n{p.stderr[-2000:]}")
    return p.stdout


def emit_gemm_source(config=None, a_major="K", b_major="K"):
    """The numba source of ``config``'s kernel (the default fp16 plan when None)."""
    return get_kernel(_key(config, a_major, b_major, "emit_gemm_source"), jit=False).source
