"""From a plan to a loaded kernel, with caches in memory and on disk.

* The source of every kernel is written to a cache folder as a real module (named by a
  hash of its text), so that a user can open exactly what runs.
* numba compiles the module's kernel to PTX for one explicit signature (raw addresses,
  ints, floats), so a launch never types its arguments (:mod:`codegen.numba_ptx` runs
  numba's front end the short way that generated code allows).  The PTX is cached in
  memory and on disk, keyed by the source, the target and the numba version.
* The driver assembles the PTX into a cubin, which is cached on disk under the same key
  plus the device's compute capability: a later process loads the cubin directly
  (:mod:`codegen.driver`), without numba's compiler.
* In numba's simulator the kernel is numba's simulated dispatcher instead.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass

from .config import GemmConfig
from .emit import KERNEL_NAME, emit_source, smem_bytes
from .plan import GemmPlan, make_plan
from .simulation import simulating

__all__ = ["CompiledGemm", "KernelKey", "get_kernel", "cache_dir", "kernel_signature", "compile_ptx_text", "gc_paused"]

_MEM = {}
_PTX = {}


_CACHE_DIRS = {}


def cache_dir():
    """Where generated kernel modules, PTX and cubins live: ``LAYOUTALG_CACHE``, else
    ``~/.cache/layoutalg`` (made owner-only).

    The cache holds code that runs (modules that are imported, cubins that are loaded), so
    a folder that cannot be made or written, or that another user owns or may write to, is
    not used: the process caches in a private temporary folder of its own instead (made
    owner-only by ``tempfile.mkdtemp``, removed at exit) and says so once on stderr.
    """
    env = os.environ.get("LAYOUTALG_CACHE") or ""
    hit = _CACHE_DIRS.get(env)
    if hit is not None:
        return hit
    d = env or os.path.join(os.path.expanduser("~"), ".cache", "layoutalg")
    why = _unusable(d)
    if why is not None:
        import atexit
        import shutil
        import tempfile

        d = tempfile.mkdtemp(prefix="layoutalg-cache-")
        atexit.register(shutil.rmtree, d, True)
        print(f"layoutalg: {why}; caching kernels in {d} for this process only", file=sys.stderr)
    _CACHE_DIRS[env] = d
    return d


def _unusable(d):
    """Why ``d`` cannot hold the kernel cache, or None."""
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.stat(d)
    except OSError as e:
        return f"the cache folder {d} cannot be made ({e.strerror or e})"
    getuid = getattr(os, "getuid", None)
    if getuid is not None and st.st_uid != getuid():
        return f"the cache folder {d} belongs to another user, so the kernels in it are not loaded"
    if getuid is not None and st.st_mode & 0o022:
        return (f"the cache folder {d} may be written by other users (mode {st.st_mode & 0o777:o}), so the "
                f"kernels in it are not loaded (chmod go-w it to use it)")
    try:
        import tempfile

        fd, probe = tempfile.mkstemp(dir=d, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return f"the cache folder {d} is not writable ({e.strerror or e})"
    return None


@dataclass(frozen=True)
class KernelKey:
    """What selects a kernel variant: the configuration and the operands' copy plans."""

    config: GemmConfig
    a_major: str = "K"
    b_major: str = "K"
    a_vec: int | None = None
    b_vec: int | None = None
    a_elementwise: bool = False
    b_elementwise: bool = False
    residue: str = "shift"          # codegen.emit.RESIDUES: "predicate" for a problem under a tile in M or N
    user: object = None             # a user's element-wise epilogue (codegen.epilogue_fn.EpilogueFunction)


@dataclass
class CompiledGemm:
    """A generated kernel: its plan, source text, the path of its module and (when loaded)
    the kernel itself."""

    key: KernelKey
    plan: GemmPlan
    source: str
    module: str                     # path of the kernel module in the cache folder
    kernel: object = None           # simulator: numba's dispatcher
    function: object = None         # GPU: the loaded :class:`codegen.driver.Function`

    @property
    def smem_bytes(self):
        return smem_bytes(self.plan)

    @property
    def config(self):
        return self.plan.config

    def __repr__(self):
        c = self.plan.config
        return f"CompiledGemm({c.dtype} {c.bm}x{c.bn}x{c.bk}, {c.stages} stages, {c.threads} threads)"


def _module_path(source):
    """Write the kernel module into the cache folder (if not already there); its path."""
    h = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = os.path.join(cache_dir(), f"layoutalg_gemm_{h}.py")
    try:
        with open(path) as f:
            same = f.read() == source
    except OSError:
        same = False
    if not same:
        _write(path, source.encode())
    return path


def _load_module(source):
    """Import the kernel module (it imports numba and the intrinsics)."""
    path = _module_path(source)
    name = os.path.basename(path)[:-3]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def get_kernel(key: KernelKey, jit=True):
    """The kernel of ``key``, loaded into the current context (memoised); ``jit`` False:
    plan, source and module only."""
    ctx = None
    if jit and not simulating():
        from . import driver

        ctx = driver.ensure_context()
    hit = _MEM.get((key, jit, ctx))
    if hit is not None:
        return hit
    base = _MEM.get((key, False, None))
    if base is None:
        plan = make_plan(key.config, key.a_major, key.b_major, key.a_vec, key.b_vec,
                         key.a_elementwise, key.b_elementwise)
        source = emit_source(plan, key.residue, key.user)
        base = CompiledGemm(key, plan, source, _module_path(source))
        _MEM[(key, False, None)] = base
    if not jit:
        return base
    if simulating():
        from numba import cuda

        out = CompiledGemm(key, base.plan, base.source, base.module,
                           kernel=cuda.jit(getattr(_load_module(base.source), KERNEL_NAME)))
    else:
        from . import driver

        cc = driver.compute_capability()
        cubin, name = _cubin(key, cc)
        out = CompiledGemm(key, base.plan, base.source, base.module,
                           function=driver.Function(cubin, name, smem_bytes(base.plan)))
    _MEM[(key, jit, ctx)] = out
    return out


def _cubin(key, cc):
    """The cubin of ``key``'s kernel for ``cc`` and its entry name, from the disk cache or
    compiled (numba to PTX, the driver to cubin) and cached."""
    from . import driver

    k = get_kernel(key, jit=False)
    tag = _tag(k.source, cc, _launch_bounds(key.config))
    path = os.path.join(cache_dir(), f"image_{tag}.bin")
    try:
        if key.user is not None:        # a function's behaviour is not its source: memory only
            raise OSError
        with open(path, "rb") as f:
            name, _, cubin = f.read().partition(b"\n")
        return cubin, name.decode()
    except OSError:
        pass
    ptx = compile_ptx_text(key, cc)
    name = driver.entry_name(ptx)
    cubin = driver.compile_image(ptx)
    if key.user is None:
        _write(path, name.encode() + b"\n" + cubin)
    return cubin, name


def _tag(source, cc, options):
    """The cache key of a compiled ``source`` for ``cc`` with compile ``options``: also the
    compilers' versions and the code of the device library the source calls (a kernel's
    text names codegen.cute's objects and codegen.intrinsics' atoms, whose bodies are
    compiled into it: a changed body must not load an old cubin)."""
    return hashlib.sha256(repr((source, tuple(cc), _versions(), _library_digest(), options)).encode()).hexdigest()[:24]


@functools.cache
def _library_digest():
    """A digest of the device library's source files (codegen.cute, codegen.intrinsics)."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for sub in ("cute", "intrinsics"):
        d = os.path.join(root, sub)
        for name in sorted(os.listdir(d)):
            if name.endswith(".py"):
                with open(os.path.join(d, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def _write(path, data):
    """Write a cache entry atomically: a private temporary file in the same folder, renamed
    over ``path``, so that a reader sees the old entry or the whole new one."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _launch_bounds(config):
    return {"launch_bounds": (config.threads, config.min_blocks)} if config.min_blocks > 1 else {}


def kernel_signature(config, user=False):
    """numba's signature of ``config``'s kernel (:func:`codegen.args.mma_sync_args`; ``user``:
    of a kernel with a user epilogue)."""
    from .args import mma_sync_args

    return mma_sync_args(config.dtype, user).signature()


def compile_ptx_text(key: KernelKey, cc):
    """PTX of ``key``'s kernel for compute capability ``cc`` (cached in memory and on disk)."""
    k = get_kernel(key, jit=False)
    tag = _tag(k.source, cc, _launch_bounds(key.config))
    hit = _PTX.get(tag)
    if hit is not None:
        return hit
    path = os.path.join(cache_dir(), f"ptx_{tag}.ptx")
    ptx = None
    if key.user is None:                # (a user epilogue's kernel: memory only)
        try:
            with open(path) as f:
                ptx = f.read()
        except OSError:
            pass
    if not ptx:
        with gc_paused(), quiet_plan_costs():
            from .epilogue_fn import user_kernel_ptx
            from .numba_ptx import kernel_ptx

            kernel, bounds = getattr(_load_module(k.source), KERNEL_NAME), _launch_bounds(key.config).get("launch_bounds")
            if key.user is None:
                ptx = kernel_ptx(kernel, kernel_signature(key.config), cc, bounds)
                _write(path, ptx.encode())
            else:
                ptx = user_kernel_ptx(kernel, key.user, kernel_signature(key.config, True), cc, bounds)
    _PTX[tag] = ptx
    return ptx


@contextlib.contextmanager
def quiet_plan_costs():
    """No :class:`~layoutalg.cost.banks.PerformanceWarning` from the generated kernel's copies:
    their bank conflicts are the plan's, reported by ``GemmPlan.cost`` (``layoutalg draw plan``),
    not a mistake of the caller's."""
    import warnings

    from layoutalg.cost.banks import PerformanceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        yield


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the duration (restored after).

    numba's front end allocates hundreds of thousands of short-lived objects while it
    types and lowers a kernel, and the collector's passes over them cost about a sixth
    of a cold compile (importing numba included); the garbage is collected afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@functools.cache
def _versions():
    """The compiler versions a cached PTX or cubin depends on (without importing them)."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("numba", "numba-cuda", "llvmlite", "cuda-toolkit", "nvidia-cuda-nvcc", "nvidia-nvvm"):
        try:
            out.append((pkg, version(pkg)))
        except PackageNotFoundError:
            pass
    return tuple(out)
