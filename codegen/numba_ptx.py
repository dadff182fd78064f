"""numba's CUDA front end, run the way generated kernels need it: source to PTX.

``kernel_ptx(fn, sig, cc, launch_bounds)`` returns what ``numba.cuda.compile_ptx`` returns
for a kernel (the same PTX), in less time.  A generated kernel is Python of a small, known
subset (integer arithmetic, ``range`` loops, ``if``/``while``, local and shared arrays,
intrinsic calls); four things that ``compile_ptx`` does for any function cost time that
such a kernel does not need:

1. **The pass pipeline.**  numba-cuda runs the general nopython pipeline.  Passes for
   Python features that generated code never contains are left out (:data:`PASSES`
   lists what runs).
2. **Typing the same call again.**  Type inference runs every call constraint on each of
   its rounds until nothing changes (four rounds for the Hopper kernel), and each time
   tries an operator's templates in turn (for ``int64 + int64``: numpy's ufunc rules,
   the fp16, bf16 and fp8 overloads, then the integer rule); lowering types each binary
   operation once more.  Of the 1,161 call typings of the default Hopper kernel, 135 are
   distinct.  While one kernel compiles, a memo answers the repeats
   (:func:`_memoised_call_types`); another types each global callable once
   (:func:`_memoised_value_types`).
3. **Error messages nobody reads.**  Typing and lowering raise and catch about 1,700 numba
   errors for the Hopper kernel (templates that do not apply, values with no literal
   type); where colorama is installed, decorating each message costs more than the rest
   of the error (:func:`_plain_error_text`).
4. **libdevice.**  numba-cuda hands libdevice to NVVM with every kernel; finding the file
   makes it look up every CUDA path, the toolkit's header folder included, for which
   cuda-pathfinder may start a Python subprocess (0.13 s of wall time on the CPU machine).
   A kernel that calls no libdevice function (``__nv_*``) compiles with NVVM alone, to
   the same PTX; one that does gets libdevice from the one path that names it
   (:func:`_libdevice`).

The memos and the plain messages last one compilation, under numba's compiler lock.
Where numba-cuda is configured for debugging (``NUMBA_CUDA_DEBUGINFO``) or a kernel does
not compile through the shorter pipeline, this falls back to ``numba.cuda.compile_ptx``
(which then compiles it, or raises numba's own error).  The kernels come out the same:
``tests/test_numba_ptx.py`` compares the PTX of both routes.
"""

from __future__ import annotations

import contextlib

__all__ = ["kernel_ptx", "numba_kernel_ptx", "PASSES"]

#: The passes run on a generated kernel, in order (numba-cuda's names).  Left out of
#: numba's nopython pipeline: with-lifting, closure inlining and make_function
#: conversion (no ``with``, no closures), the post-typing rewrites (literal ``getitem``
#: forms, array expressions), dynamic raises, ``literally``/``literal_unroll`` handling
#: and overload inlining (none used).  The pre-typing rewrites stay: a tuple indexed by a
#: constant must become a static ``getitem``.
PASSES = (
    "cuda_translate_bytecode", "fixup_args", "ir_processing", "rewrite_semantic_constants",
    "dead_branch_prune", "generic_rewrites", "inline_inlinables", "reconstruct_ssa", "LiteralPropagation",
    "nopython_type_inference", "strip_phis", "ir_legalization", "annotate_types",
    "create_library", "cuda_native_lowering", "cuda_backend",
)


def numba_kernel_ptx(fn, sig, cc, launch_bounds=None):
    """numba-cuda's own route (``numba.cuda.compile_ptx``), for comparison and fallback."""
    from numba import cuda

    with target_device(cc):
        ptx, _ = cuda.compile_ptx(fn, sig, cc=tuple(cc), launch_bounds=launch_bounds)
    return ptx


@contextlib.contextmanager
def target_device(cc):
    """For the duration, device functions that numba compiles on the way (the overloads of
    ``cuda.shfl_xor_sync``, say) are compiled for ``cc``, the kernel's target, instead of
    asking the current device for its compute capability: a kernel compiles to PTX on a
    machine without a GPU, and for another architecture than the GPU's."""
    from types import SimpleNamespace

    import numba.cuda.dispatcher as dispatcher

    original = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=tuple(cc[:2]))
    try:
        yield
    finally:
        dispatcher.get_current_device = original


def kernel_ptx(fn, sig, cc, launch_bounds=None):
    """The PTX of kernel ``fn`` for signature ``sig`` and compute capability ``cc`` (a
    tuple such as ``(9, 0, "a")``), as ``numba.cuda.compile_ptx`` would produce it."""
    from numba.cuda.core import config
    from numba.cuda.core.compiler_lock import global_compiler_lock

    from .cute.objects import activate

    activate()          # codegen.cute's device objects and device functions, known to numba

    if config.CUDA_DEBUGINFO_DEFAULT:
        return numba_kernel_ptx(fn, sig, cc, launch_bounds)
    with global_compiler_lock:
        with _no_cyclic_gc():
            try:
                with _memoised_call_types(), _memoised_value_types(), _plain_error_text(), _fast_liveness(), \
                        _sparse_ssa(), _no_entry_vars(), target_device(cc):
                    lib = _lower(fn, sig, tuple(cc), launch_bounds)
            except Exception:
                lib = None
            if lib is not None:
                return _ptx(lib, tuple(cc))
        # not within what the short pipeline serves: numba's own pipeline compiles it, or
        # reports the error as it would anyway
        return numba_kernel_ptx(fn, sig, cc, launch_bounds)


@contextlib.contextmanager
def _memoised_call_types():
    """For the duration, a function's call type for given argument types is computed once.

    Wraps ``get_call_type`` of numba's function types (operators, builtins, intrinsics),
    which type inference and lowering call for every call site, on every round of
    inference.  The answer depends only on the function type, the typing context and the
    argument types (the templates of a function type are fixed when it is made), so a
    repeated question gets the first answer.  Only successful answers are kept; failures
    run again.  Used under numba's compiler lock, so no other compilation sees it."""
    from numba.core.types.functions import BaseFunction

    original = BaseFunction.__dict__["get_call_type"]
    memo = {}

    def get_call_type(self, context, args, kws):
        try:
            key = (self, context, tuple(args), tuple(sorted(kws.items())) if kws else ())
            hit = memo.get(key)
        except TypeError:                         # an unhashable argument type
            return original(self, context, args, kws)
        if hit is None:
            hit = original(self, context, args, kws)
            if hit is not None:
                memo[key] = hit
        return hit

    BaseFunction.get_call_type = get_call_type
    try:
        yield
    finally:
        BaseFunction.get_call_type = original


@contextlib.contextmanager
def _memoised_value_types():
    """For the duration, the typing context types each global callable or module once.

    Type inference and lowering ask for the type of a global (an operator, ``range``,
    an intrinsic, ``cuda``) at every use; numba's ``typeof`` fails on most of them
    before the context's own table answers, and builds an error message each time.
    Only callables and modules are kept (their type does not depend on a value that can
    change), by identity."""
    from types import ModuleType

    from numba.cuda.descriptor import cuda_target

    ctx = cuda_target.typing_context
    resolve = ctx.resolve_value_type
    memo = {}

    def resolve_value_type(val):
        if not (callable(val) or isinstance(val, ModuleType)):
            return resolve(val)
        hit = memo.get(id(val))
        if hit is None or hit[0] is not val:
            hit = memo[id(val)] = (val, resolve(val))
        return hit[1]

    before = vars(ctx).get("resolve_value_type")
    ctx.resolve_value_type = resolve_value_type
    try:
        yield
    finally:
        if before is None:
            del ctx.resolve_value_type
        else:
            ctx.resolve_value_type = before


@contextlib.contextmanager
def _no_cyclic_gc():
    """For the duration, Python's cyclic garbage collector does not run.  A kernel's
    compilation allocates some 10^6 objects (IR copies, types, LLVM values) and keeps most of
    them to the end, so collection after collection scans them and frees nothing (about a
    sixth of the compile time, and 40% of the time that writing the LLVM IR's text takes);
    what is garbage is collected afterwards, as usual."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def _fast_liveness():
    """For the duration, numba's ``compute_live_map`` (run by every ``PostProcessor``, four
    times on the whole inlined kernel) is computed by worklists in depth-first order that
    carry only what changed, instead of whole-function sweeps in label order until nothing
    changes: the same least fixed points (both equations distribute over unions), so the same
    maps, in a fraction of the time."""
    from numba.cuda.core import analysis

    original = analysis.compute_live_map
    analysis.compute_live_map = _compute_live_map
    try:
        yield
    finally:
        analysis.compute_live_map = original


def _compute_live_map(cfg, blocks, var_use_map, var_def_map):
    """numba's ``analysis.compute_live_map``: the variables that must be alive at the entry
    of each block. ``reach[b]``: the variables used or defined in a block from which ``b``
    is reachable (``b`` included); ``live[b]``: ``use[b]`` and, for each successor ``s``,
    ``live[s] & reach[b] - def[b]``. Sets of variables are bit sets (Python ints) here."""
    from collections import deque

    labels = list(blocks.keys())
    succ = {b: [s for s, _ in cfg.successors(b)] for b in labels}
    pred = {b: [p for p, _ in cfg.predecessors(b)] for b in labels}
    post, seen = [], set()                       # depth-first post-order from the entry
    for root in [min(labels)] + labels:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(succ[root]))]
        while stack:
            node, it = stack[-1]
            for s in it:
                if s not in seen:
                    seen.add(s)
                    stack.append((s, iter(succ[s])))
                    break
            else:
                stack.pop()
                post.append(node)

    bit, names = {}, []

    def bits(vs):
        x = 0
        for v in vs:
            b = bit.get(v)
            if b is None:
                b = bit[v] = len(names)
                names.append(v)
            x |= 1 << b
        return x

    use = {b: bits(var_use_map[b]) for b in labels}
    defs = {b: bits(var_def_map[b]) for b in labels}

    def solve(order, edges, step, value):
        delta = dict(value)
        work, queued = deque(order), set(order)
        while work:
            b = work.popleft()
            queued.discard(b)
            d, delta[b] = delta[b], 0
            for n in edges[b]:
                new = step(d, n) & ~value[n]
                if new:
                    value[n] |= new
                    delta[n] |= new
                    if n not in queued:
                        queued.add(n)
                        work.append(n)

    reach = {b: defs[b] | use[b] for b in labels}
    solve(post[::-1], succ, lambda d, n: d, reach)
    live = dict(use)
    solve(post, pred, lambda d, n: d & reach[n] & ~defs[n], live)
    out = {}
    for b in labels:
        text = bin(live[b])[:1:-1]               # bit i at text[i]
        i = text.find("1")
        found = set()
        while i >= 0:
            found.add(names[i])
            i = text.find("1", i + 1)
        out[b] = found
    return out


@contextlib.contextmanager
def _no_entry_vars():
    """For the duration, numba's ``PostProcessor`` does not compute the variables available
    at the entry of each block of a function that is not a generator.

    The post-processor runs after most passes that change the IR (four times on the whole
    inlined kernel, and for each callee's own IR); each time it sweeps the whole function
    until nothing changes to find ``block_entry_vars``, which only the generator analysis
    reads, and to do so builds the variables' use/def, liveness and dead maps.  Here it
    canonicalises the CFG and installs the (lazy) variable lifetimes as numba does, and
    inserts the ``del`` statements where asked, which computes the maps it needs then; a
    generator is post-processed as numba does it."""
    from numba.cuda.core import postproc, transforms

    original = postproc.PostProcessor.run

    def run(self, emit_dels=False, extend_lifetimes=False):
        func_ir = self.func_ir
        if func_ir.is_generator:
            return original(self, emit_dels, extend_lifetimes)
        func_ir.blocks = transforms.canonicalize_cfg(func_ir.blocks)
        func_ir.variable_lifetime = postproc.VariableLifetime(func_ir.blocks)
        func_ir.generator_info = None
        if emit_dels:
            self._insert_var_dels(extend_lifetimes=extend_lifetimes)

    postproc.PostProcessor.run = run
    try:
        yield
    finally:
        postproc.PostProcessor.run = original


@contextlib.contextmanager
def _sparse_ssa():
    """For the duration, numba's SSA reconstruction rewrites, for each variable assigned more
    than once, only the blocks that mention it.  numba's pass walks every statement of the
    inlined kernel twice per such variable (its fresh names, then its uses and phis); a
    block that does not mention the variable comes out of both walks as it went in (the
    handlers return such statements unchanged, and phis are added after the walk), so it is
    copied as it is.  The blocks are rewritten in numba's order: the same IR."""
    from collections import defaultdict

    from numba.cuda.core import ir, ssa

    run_ssa, rewrite = ssa._run_ssa, ssa._run_block_rewrite
    mentions = []

    def _run_ssa(blocks):
        where = defaultdict(set)                 # variable -> labels of the blocks that mention it
        for label, blk in blocks.items():
            for stmt in blk.body:
                for v in stmt.list_vars():
                    where[v.name].add(label)
        mentions.append(where)
        try:
            return run_ssa(blocks)
        finally:
            mentions.pop()

    def _run_block_rewrite(blocks, states, handler):
        if not mentions or "varname" not in states:
            return rewrite(blocks, states, handler)
        where = mentions[-1].get(states["varname"], ())
        out = {}
        for label, blk in blocks.items():
            if label in where:
                out.update(rewrite({label: blk}, states, handler))
            else:
                out[label] = new = ir.Block(scope=blk.scope, loc=blk.loc)
                new.body = list(blk.body)
        return out

    ssa._run_ssa, ssa._run_block_rewrite = _run_ssa, _run_block_rewrite
    try:
        yield
    finally:
        ssa._run_ssa, ssa._run_block_rewrite = run_ssa, rewrite


@contextlib.contextmanager
def _plain_error_text():
    """For the duration, numba's error messages are not decorated for the terminal.

    Typing and lowering raise and catch numba errors as part of normal work; where
    colorama is installed, decorating each message wraps and unwraps the standard streams
    (about 70 us an error, against 2 us undecorated).  An error that leaves
    :func:`kernel_ptx` comes from numba's own route, decorated as usual."""
    from numba.core import errors as core_errors
    from numba.cuda.core import errors as cuda_errors

    names = ("code", "errmsg", "filename", "indicate", "highlight", "reset")
    schemes = [m.termcolor() for m in (core_errors, cuda_errors)]
    saved = [{n: vars(scheme)[n] for n in names if n in vars(scheme)} for scheme in schemes]
    for scheme in schemes:
        for name in names:
            setattr(scheme, name, str)
    try:
        yield
    finally:
        for scheme, before in zip(schemes, saved):
            for name in names:
                vars(scheme).pop(name, None)
            vars(scheme).update(before)


def _compiler_class():
    """numba-cuda's kernel compiler with the pipeline of :data:`PASSES`."""
    global _COMPILER
    if _COMPILER is None:
        from numba.cuda.compiler import (
            CreateLibrary,
            CUDABackend,
            CUDACompiler,
            CUDANativeLowering,
            CUDATranslateBytecode,
        )
        from numba.cuda.core.compiler_machinery import PassManager
        from numba.cuda.core.typed_passes import (
            AnnotateTypes,
            IRLegalization,
            NopythonTypeInference,
            PreLowerStripPhis,
        )
        from numba.cuda.core.untyped_passes import (
            DeadBranchPrune,
            FixupArgs,
            GenericRewrites,
            InlineInlinables,
            IRProcessing,
            LiteralPropagationSubPipelinePass,
            ReconstructSSA,
            RewriteSemanticConstants,
        )

        passes = (CUDATranslateBytecode, FixupArgs, IRProcessing, RewriteSemanticConstants, DeadBranchPrune,
                  GenericRewrites, InlineInlinables, ReconstructSSA, LiteralPropagationSubPipelinePass,
                  NopythonTypeInference, PreLowerStripPhis, IRLegalization, AnnotateTypes,
                  CreateLibrary, CUDANativeLowering, CUDABackend)
        assert tuple(p._name for p in passes) == PASSES

        class GeneratedKernelCompiler(CUDACompiler):
            def define_pipelines(self):
                pm = PassManager("codegen_kernel")
                for p in passes:
                    pm.add_pass(p, p._name)
                pm.finalize()
                return [pm]

        _COMPILER = GeneratedKernelCompiler
    return _COMPILER


_COMPILER = None


def _lower(fn, sig, cc, launch_bounds):
    """numba-cuda's ``compile_cuda`` and kernel fix-up for a kernel (numba ABI, no debug
    information) through the short pipeline: the code library holding its LLVM IR."""
    from numba.cuda import compiler, types, utils
    from numba.cuda.core import config, sigutils
    from numba.cuda.core.callconv import CUDACallConv
    from numba.cuda.cudadrv import nvvm
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.flags import CUDAFlags

    args, return_type = sigutils.normalize_signature(sig)
    typingctx, targetctx = cuda_target.typing_context, cuda_target.target_context
    flags = CUDAFlags()
    flags.no_compile = True
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    flags.inline = "never"
    flags.error_model = "numpy"
    flags.nvvm_options = {"fastmath": False, "opt": 3 if config.OPT != 0 else 0}
    flags.compute_capability = cc
    flags.max_registers = None
    flags.lto = False
    with utils.numba_target_override():
        cres = compiler.compile_extra(typingctx, targetctx, fn, args, return_type, flags, {},
                                      pipeline_class=_compiler_class(), call_conv=CUDACallConv(targetctx),
                                      abi_info={})
    lib = cres.library
    lib.finalize()
    resty = cres.signature.return_type
    if resty and resty != types.void:
        raise TypeError("CUDA kernel must have void return type.")
    kernel = lib.get_function(cres.fndesc.llvm_func_name)
    lib._entry_name = cres.fndesc.llvm_func_name
    compiler.kernel_fixup(kernel, False)
    nvvm.set_launch_bounds(kernel, launch_bounds)
    return lib


def _ptx(lib, cc):
    """The library's PTX, as numba-cuda's ``nvvm.compile_ir`` makes it, with libdevice added
    only where the IR calls one of its functions (``__nv_*``), and without NVVM's separate
    verifier pass over numba's IR (``nvvmVerifyProgram``: 40 ms for the Hopper kernel; NVVM's
    compilation rejects IR it cannot compile by itself, and the PTX is the same)."""
    from numba.cuda.cudadrv import nvrtc, nvvm

    irs = lib.llvm_strs
    options = dict(lib._nvvm_options)
    if options.pop("fastmath", False):
        options.update({"ftz": True, "fma": True, "prec_div": False, "prec_sqrt": False})
    options["arch"] = nvrtc.get_arch_option(*cc)
    cu = nvvm.CompilationUnit(options)
    for ir in irs:
        cu.add_module(nvvm.llvm_replace(ir).encode("utf8"))
    if any("__nv_" in ir for ir in irs):              # declares a libdevice function
        cu.lazy_add_module(_libdevice())
    return cu.compile().decode().strip("\x00").strip()


def _libdevice():
    """libdevice's bitcode, the file numba-cuda's ``nvvm.LibDevice`` reads, read once.

    numba-cuda finds it through ``get_cuda_paths()``, which finds every CUDA path the first
    time it is asked, the toolkit's header folder included (80 ms of wall time on the CPU
    machine, a subprocess of cuda-pathfinder's); the libdevice path alone is
    ``cuda_paths._get_libdevice_path()``, the same function's answer, in a millisecond."""
    if not _LIBDEVICE:
        from numba.cuda import cuda_paths
        from numba.cuda.cudadrv import nvvm

        known = getattr(cuda_paths.get_cuda_paths, "_cached_result", None)
        path = (known["libdevice"] if known else cuda_paths._get_libdevice_path()).info
        if path is None:
            return nvvm.LibDevice().get()               # numba-cuda's error for a missing file
        with open(path, "rb") as f:
            _LIBDEVICE.append(f.read())
    return _LIBDEVICE[0]


_LIBDEVICE = []
