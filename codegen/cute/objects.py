"""Device objects: host objects that kernels use as compile-time constants, with methods.

A pipeline, a tile scheduler, a TMA copy or a collective mainloop is described by numbers
the plan derives from layouts (stages, barrier offsets, box corners, descriptor fields).
Decorated with :func:`device_object`, such a class's instances can be used in a kernel the
way CuTe DSL kernels use their ``cutlass.Constexpr`` objects::

    @device_object
    @dataclass(frozen=True)
    class Pipeline:
        stages: int
        full: int                      # byte offset of the "full" barriers

        @device
        def advance(self, state):      # state: a PipelineState (run-time)
            ...

    PIPE = Pipeline(4, 1024)

    @cuda.jit
    def kernel(...):
        state = PIPE.advance(state)    # inlined; PIPE.stages is the constant 4

* Reading an attribute folds it to a constant: ints and bools become literals (so
  ``range(self.stages)`` unrolls and ``cuda.local.array(self.n, ...)`` has a constant
  size), floats and tuples constants; layouts, tiled MMAs and other device objects keep
  their own types (they are constants too).
* A method marked :func:`device` is inlined where it is called, into the kernel's IR before
  it is typed, with the object bound to ``self``: nothing is called at run time and the
  method may call other device methods, intrinsics and ``@cuda.jit(device=True,
  inline="always")`` functions. Methods of objects reached through attributes
  (``self.pipeline.advance(state)``) and objects passed to device methods as arguments are
  inlined the same way.
* A method marked ``@device(once=True)`` (or a function ``@device_function(once=True)``) is
  typed and lowered once, as a function of its own (for each object and argument types),
  and NVVM inlines it at its call sites (numba's ``forceinline``): numba's work for a large
  method called at several sites, or a small one called at many, is done once instead of at
  every site, and the PTX is the same where its body meets three conditions that inlining
  does not ask for. (1) It is typed whole: a branch on a flag of the object or on a
  constant argument is not dropped before typing, so every branch must type. (2) Its
  arguments are run-time values, device objects excepted (their attributes stay
  constants); a function passed as an argument does not type. (3) It allocates no shared
  memory: one allocation would serve all its call sites (refused when it is marked). It is
  compiled with numba's default options for a device function, not the kernel's.
* In numba's simulator (``NUMBA_ENABLE_CUDASIM=1``) kernels are Python: the same objects and
  the same method bodies run as they are, with the intrinsics' simulator twins.

Run-time state travels in ``typing.NamedTuple`` values (a pipeline's stage and phase, a
tile's corner), which numba keeps in registers.

Pre-conditions: instances are immutable and hashable (a frozen dataclass), since numba
compiles a kernel once per distinct value; device methods take positional arguments.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading

from ..simulation import simulating

__all__ = ["device_object", "device", "device_function", "is_device_object", "late_import", "activate",
           "SIMULATED"]


SIMULATED = simulating()

#: The classes decorated with :func:`device_object`.
_CLASSES = set()
#: ``(module globals, module name, names)`` of each :func:`late_import`.
_LATE = []
#: set (by the activating thread) once :func:`activate` has begun; late imports bind at once.
_ACTIVE = []
#: set once :func:`activate` has finished: every name is bound.
_DONE = []
_ACTIVATING = threading.RLock()


def device(fn=None, *, once=False):
    """Mark a method of a :func:`device_object` class as callable in kernels: inlined into
    the kernel's IR where it is called, or, with ``once``, typed and lowered once per object
    and argument types and inlined by NVVM (:func:`once_dispatcher`)."""
    if fn is None:
        return lambda f: device(f, once=once)
    if once:
        _no_shared(fn, "device")
    fn._cute_device = True
    fn._cute_once = bool(once)
    return fn


def _no_shared(fn, how):
    """Refuse a ``once`` body that allocates shared memory (by name: ``cuda.shared.array``,
    ``make_shared_tensor``): compiled once, one allocation would serve all its call sites."""
    names = set(fn.__code__.co_names)
    if "shared" in names or "make_shared_tensor" in names:
        raise ValueError(f"{how}(once=True): {fn.__qualname__} allocates shared memory, which one compilation "
                         f"would share between all its call sites; inline it (once=False)")


class DeviceFunction:
    """A free function that kernels call, inlined where it is called: what
    ``cuda.jit(device=True, inline="always")`` makes, without importing numba; with
    ``once``, what ``cuda.jit(device=True, forceinline=True)`` makes (typed and lowered
    once per argument types, inlined by NVVM). Host code (and numba's simulator) calls it as
    the plain function :attr:`py_func`."""

    def __init__(self, fn, once=False):
        functools.update_wrapper(self, fn)
        self.py_func = fn
        self.once = bool(once)
        self._run = _simulated(fn) if SIMULATED else fn

    def __call__(self, *args, **kwargs):
        return self._run(*args, **kwargs)

    def __repr__(self):
        return f"<device function {self.__module__}.{self.__qualname__}>"


def device_function(fn=None, *, once=False):
    """Make ``fn`` a :class:`DeviceFunction` (``once``: see there)."""
    if fn is None:
        return lambda f: device_function(f, once=once)
    if once:
        _no_shared(fn, "device_function")
    return DeviceFunction(fn, once)


_ONCE = {}

#: The compute capability numba compiles a ``once`` function for where it cannot ask a GPU
#: (``compile_ptx`` on a machine without one): numba's device functions are compiled for the
#: current device's, but the LLVM IR of these does not depend on it (intrinsics are inline
#: PTX), and NVVM compiles it with the kernel, for the kernel's target.
OFFLINE_CC = (8, 0)


def once_dispatcher(fn):
    """The numba dispatcher that compiles ``fn`` (a ``once`` device method, ``self`` its first
    argument, or function) as a device function of its own, marked for NVVM to inline: numba
    types and lowers it once per argument types, and each call site is a call, where
    inlining would copy its IR there. It compiles without a GPU too (:data:`OFFLINE_CC`)."""
    hit = _ONCE.get(fn)
    if hit is None:
        from numba import cuda

        hit = _ONCE[fn] = cuda.jit(device=True, forceinline=True)(fn)
        hit.compile_device = _offline(hit.compile_device)
    return hit


def _offline(compile_device):
    """``compile_device`` of a dispatcher for the compute capability numba would ask the
    current device for (inside :func:`codegen.numba_ptx.kernel_ptx`, the kernel's target),
    and :data:`OFFLINE_CC` where there is no device to ask."""
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda.core.compiler_lock import global_compiler_lock

    from ..numba_ptx import target_device

    def compile_offline(args, return_type=None):
        with global_compiler_lock:           # (the device query is swapped for no other compilation)
            try:
                cc = dispatcher.get_current_device().compute_capability
            except Exception:                # no driver, or no GPU
                cc = OFFLINE_CC
            with target_device(cc):
                return compile_device(args, return_type)

    return compile_offline


def is_device_object(x):
    """Whether ``x`` is an instance of a :func:`device_object` class."""
    return type(x) in _CLASSES


def device_object(cls):
    """Let kernels use ``cls``'s instances as compile-time constants with inlined methods."""
    _CLASSES.add(cls)
    if SIMULATED:
        for name, fn in list(vars(cls).items()):
            if getattr(fn, "_cute_device", False):
                setattr(cls, name, _simulated(fn))
    elif _ACTIVE:
        _register(cls)
    return cls


class _Late:
    """A name of a device function's module bound by :func:`activate` (before that, a clear
    error where host code uses it)."""

    def __init__(self, module, name):
        self._where = f"{module}.{name}"

    def __getattr__(self, attr):
        raise RuntimeError(f"{self._where} is bound when kernels are compiled or simulated "
                           f"(codegen.cute.activate()); host code does not use it")

    def __call__(self, *args, **kwargs):
        self.__getattr__("__call__")


def late_import(module, *names):
    """``from module import names`` for the device functions of the calling module, done by
    :func:`activate`, so that importing a kernel library's module imports no numba (host code
    that plans kernels, and launches cached ones, never needs it). Returns placeholders,
    which the import replaces in the module's globals."""
    g = sys._getframe(1).f_globals
    _LATE.append((g, module, names))
    if _ACTIVE:
        _bind_late(g, module, names)
    return tuple(g[n] if _ACTIVE else _Late(module, n) for n in names)


def _bind_late(g, module, names):
    import importlib

    mod = importlib.import_module(module)
    for n in names:
        g[n] = getattr(mod, n)


def activate():
    """Bind every :func:`late_import` and, on the GPU path, teach numba the device objects'
    types and the inliner their methods. Called before kernels compile or run (by
    ``codegen.cute``'s kernel-side names, by codegen's compiler, and by numba-cuda's
    extension entry point ``numba_cuda_extensions``); idempotent."""
    if _DONE:
        return
    # The simulator runs each thread of a block in a Python thread, and each calls this: the
    # others wait here until every name is bound (not only until binding has begun).
    with _ACTIVATING:
        if _ACTIVE:         # done, or begun by this thread further up its stack
            return
        _ACTIVE.append(True)
        for g, module, names in list(_LATE):
            _bind_late(g, module, names)
        if not SIMULATED:
            # numba's types of layouts, tensors, tiled copies and MMAs, and their functions
            from . import api, device_atoms, device_tiled  # noqa: F401

            _install()
            for cls in list(_CLASSES):
                _register(cls)
        _DONE.append(True)


def _simulated(fn):
    """``fn`` run as numba's simulator runs a device function: with the simulated ``cuda``
    module (thread indices, shared and local arrays) in place of its module's ``cuda``."""

    @functools.wraps(fn)
    def method(*args, **kwargs):
        from numba.cuda.simulator.kernel import _get_kernel_context
        from numba.cuda.simulator.kernelapi import swapped_cuda_module

        activate()
        with swapped_cuda_module(fn, _get_kernel_context()):
            return fn(*args, **kwargs)

    method._cute_device = True
    return method


def _device_method(cls, name):
    fn = inspect.getattr_static(cls, name, None)
    return fn if getattr(fn, "_cute_device", False) else None


# ---- the GPU side: typing, lowering, inlining ------------------------------------------

def _register(cls):
    from numba.cuda.extending import typeof_impl

    _install()
    typeof_impl.register(cls)(lambda val, c: _object_type(val))


_TYPES = {}


def _object_type(obj):
    t = _TYPES.get((type(obj), obj))
    if t is None:
        t = _TYPES[(type(obj), obj)] = _DeviceObjectType(obj)
    return t


_INSTALLED = []


def _install():
    """Register the numba type, its attributes and the inliner hook (once)."""
    if _INSTALLED:
        return
    _INSTALLED.append(True)
    from numba.cuda import types
    from numba.cuda.cudadecl import registry as treg
    from numba.cuda.cudaimpl import registry as ireg
    from numba.cuda.datamodel import models
    from numba.cuda.extending import register_model
    from numba.cuda.typing.templates import AttributeTemplate

    global _DeviceObjectType, _MethodType

    class _DeviceObjectType(types.Dummy):
        """A device object: the host object is the type's parameter (no run-time data)."""

        def __init__(self, obj):
            self.obj = obj
            super().__init__(name=f"{type(obj).__name__}[{obj!r}]")

        @property
        def key(self):
            return (type(self.obj), self.obj)

    class _MethodType(types.Dummy):
        """A device method read as a value (its calls are inlined, so it is never called)."""

        def __init__(self, cls, name):
            self.cls, self.method = cls, name
            super().__init__(name=f"device_method[{cls.__name__}.{name}]")

        @property
        def key(self):
            return (self.cls, self.method)

    register_model(_DeviceObjectType)(models.OpaqueModel)
    register_model(_MethodType)(models.OpaqueModel)
    from numba.cuda.extending import typeof_impl


    class _FunctionType(types.Dummy):
        """A :class:`DeviceFunction` read as a value (its calls are inlined)."""

        def __init__(self, fn):
            self.fn = fn
            super().__init__(name=f"device_function[{fn.__module__}.{fn.__qualname__}]")

        @property
        def key(self):
            return self.fn

    register_model(_FunctionType)(models.OpaqueModel)
    typeof_impl.register(DeviceFunction)(
        lambda val, c: once_dispatcher(val.py_func)._numba_type_ if val.once else _FunctionType(val))

    @treg.register_attr
    class _Attrs(AttributeTemplate):
        key = _DeviceObjectType

        def generic_resolve(self, ty, attr):
            if _device_method(type(ty.obj), attr) is not None:
                return _MethodType(type(ty.obj), attr)
            try:
                value = getattr(ty.obj, attr)
            except AttributeError:
                return None
            return _constant_type(value, self.context)

    @ireg.lower_getattr_generic(_DeviceObjectType)
    def _getattr(context, builder, ty, val, attr):
        if _device_method(type(ty.obj), attr) is not None:
            return context.get_dummy_value()
        value = getattr(ty.obj, attr)
        return _constant_value(context, builder, _constant_type(value, context.typing_context), value)

    _patch_inliner()


def _constant_type(value, context=None):
    """The numba type of an attribute's value: literals for ints and bools; other values as
    the typing ``context`` types a global (intrinsics, layouts, device objects)."""
    import numpy as np
    from numba.cuda import types
    from numba.cuda.typing.typeof import typeof

    if isinstance(value, (bool, np.bool_)):
        return types.BooleanLiteral(bool(value))
    if isinstance(value, (int, np.integer)):
        return types.IntegerLiteral(int(value))
    if isinstance(value, (float, np.floating)):
        return types.float64
    if value is None:
        return types.none
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        items = [_constant_type(v, context) for v in value]
        items = [t.literal_type if isinstance(t, types.IntegerLiteral) else t for t in items]
        if items and all(t == items[0] for t in items):
            return types.UniTuple(items[0], len(items))
        return types.Tuple(items)
    if context is not None:
        return context.resolve_value_type(value)
    return typeof(value)


def _constant_value(context, builder, ty, value):
    from numba.cuda import types

    if isinstance(ty, types.Literal):
        return context.get_constant(ty.literal_type if not isinstance(ty, types.BooleanLiteral) else types.boolean,
                                    ty.literal_value)
    if isinstance(ty, (types.Float, types.Integer)):
        return context.get_constant(ty, value)
    if isinstance(ty, types.BaseTuple):
        return context.make_tuple(builder, ty, [_constant_value(context, builder, t, v)
                                                for t, v in zip(ty.types, value)])
    return context.get_dummy_value()


class _NotStatic(Exception):
    pass


def _definition(func_ir, var):
    """What ``var`` is assigned, looking through copies; an inlined function's parameters
    (whose recorded definition is still the callee's ``arg``) are found by their assignment."""
    from numba.cuda.core import ir

    seen = 0
    while isinstance(var, ir.Var):
        seen += 1
        if seen > 64:
            raise _NotStatic
        try:
            d = func_ir.get_definition(var)
        except KeyError:
            raise _NotStatic from None
        if isinstance(d, ir.Arg):
            try:
                d = _assigned(func_ir, var.name)
            except _NotStatic:                   # an argument of the function being compiled
                d = _argument_object(d)
        var = d
    return var


#: The argument types of the function whose calls are being inlined (``once`` methods take
#: their object as an argument: its type holds it).
_ARG_TYPES = [()]


def _argument_object(arg):
    """A constant of the device object that argument ``arg`` of the function being compiled
    always is (its type says which); raises :class:`_NotStatic` for any other argument."""
    from numba.cuda.core import ir

    types = _ARG_TYPES[0]
    ty = types[arg.index] if arg.index < len(types) else None
    if not isinstance(ty, _DeviceObjectType):
        raise _NotStatic
    return ir.Const(ty.obj, arg.loc)


def _assigned(func_ir, name):
    from numba.cuda.core import ir

    for blk in func_ir.blocks.values():
        for st in blk.body:
            if isinstance(st, ir.Assign) and st.target.name == name and not isinstance(st.value, ir.Arg):
                return st.value
    raise _NotStatic


def _static_value(func_ir, var):
    """The host object ``var`` always holds (a global, a closure variable, a constant, or an
    attribute of one); raises :class:`_NotStatic` for a run-time value."""
    from numba.cuda.core import ir

    d = _definition(func_ir, var)
    if isinstance(d, (ir.Global, ir.FreeVar, ir.Const)):
        return d.value
    if isinstance(d, ir.Expr) and d.op == "getattr":
        try:
            return getattr(_static_value(func_ir, d.value), d.attr)
        except AttributeError:
            raise _NotStatic from None
    raise _NotStatic


def _method_call(func_ir, expr):
    """``(object variable, method)`` when ``expr`` calls a device method of a device object."""
    from numba.cuda.core import ir

    try:
        fdef = _definition(func_ir, expr.func)
    except _NotStatic:
        return None
    if not (isinstance(fdef, ir.Expr) and fdef.op == "getattr"):
        return None
    try:
        obj = _static_value(func_ir, fdef.value)
    except _NotStatic:
        return None
    if type(obj) not in _CLASSES:
        return None
    fn = _device_method(type(obj), fdef.attr)
    return (fdef.value, fn, obj) if fn is not None else None


def _bind(block, i, expr, obj_var, fn, obj):
    """Rewrite the call ``expr`` (statement ``i`` of ``block``) as ``fn(obj, *args)`` with every
    parameter positional; defaults become constants assigned before the call."""
    from numba.cuda.core import ir

    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    args = [obj_var] + list(expr.args)
    kws = dict(expr.kws)
    name = f"{type(obj).__name__}.{fn.__name__}"
    if expr.vararg is not None or expr.varkwarg is not None:
        raise TypeError(f"{name}: device methods take no *args or **kwargs")
    if len(args) > len(params):
        raise TypeError(f"{name}: takes {len(params) - 1} arguments, got {len(args) - 1}")
    out, pre = [], []
    for k, p in enumerate(params):
        if k < len(args):
            if p.name in kws:
                raise TypeError(f"{name}: argument {p.name!r} given twice")
            out.append(args[k])
        elif p.name in kws:
            out.append(kws.pop(p.name))
        elif p.default is not inspect.Parameter.empty:
            v = ir.Var(block.scope, f"$cute_default_{fn.__name__}_{p.name}_{id(expr)}", expr.loc)
            pre.append(ir.Assign(ir.Const(p.default, expr.loc), v, expr.loc))
            out.append(v)
        else:
            raise TypeError(f"{name}: missing argument {p.name!r}")
    if kws:
        raise TypeError(f"{name}: unexpected argument(s) {sorted(kws)}")
    expr.args, expr.kws = out, ()
    block.body[i:i] = pre
    return i + len(pre)


def _patch_inliner():
    """Teach numba's untyped inliner (``InlineInlinables``) to inline device methods, and
    inline them (and ``inline="always"`` device functions) faster: each function's IR is
    built once per process (with nothing inlined into it), copied once per call site, and
    the calls inside it are inlined where the copy lands, at the top level."""
    from numba.cuda.core.untyped_passes import InlineInlinables

    original = InlineInlinables._do_work
    if getattr(original, "_cute", False):
        return

    def _do_work(self, state, work_list, block, i, expr, inline_worker):
        if _BUILDING:                  # a callee's own IR: its calls are inlined where it lands
            return False
        _ARG_TYPES[0] = tuple(state.args or ())
        hit = _method_call(state.func_ir, expr)
        if hit is not None:
            obj_var, fn, obj = hit
            i = _bind(block, i, expr, obj_var, fn, obj)
            if getattr(fn, "_cute_once", False):   # a call of its dispatcher, the object its first argument
                _call_once(state.func_ir, block, i, expr, fn)
                if work_list is not None:  # (the rest of the block is looked at again)
                    work_list.append(next((lb, b) for lb, b in state.func_ir.blocks.items() if b is block))
                return True
        else:
            fn = _inline_always(state.func_ir, expr)
            if fn is None:
                return original(self, state, work_list, block, i, expr, inline_worker)
        callee_ir = _callee_ir(inline_worker, fn)
        _prune(callee_ir, _static_args(state.func_ir, expr))
        new_blocks = _inline_ir(state.func_ir, block, i, callee_ir, fn.__code__.co_freevars)
        if work_list is not None:
            work_list.extend(new_blocks)
        return True

    _do_work._cute = True
    InlineInlinables._do_work = _do_work


#: Set while a callee's IR is built: no inlining into it.
_BUILDING = []
#: Each function's untyped IR, built once.
_IR = {}


def _call_once(func_ir, block, i, expr, fn):
    """Make ``expr`` (statement ``i`` of ``block``, its arguments bound by :func:`_bind`) call
    ``fn``'s :func:`once_dispatcher`."""
    from numba.cuda.core import ir

    disp = once_dispatcher(fn)
    var = ir.Var(block.scope, f"$cute_once_{fn.__name__}_{id(expr)}", expr.loc)
    value = ir.Global(fn.__qualname__, disp, expr.loc)
    block.body.insert(i, ir.Assign(value, var, expr.loc))
    func_ir._definitions[var.name] = [value]
    expr.func = var


def _inline_always(func_ir, expr):
    """The Python function of an ``inline="always"`` device function that ``expr`` calls."""
    from numba.cuda.core import ir
    from numba.cuda.core.ir_utils import guard, resolve_func_from_module

    try:
        d = _definition(func_ir, expr.func)
    except _NotStatic:
        return None
    if isinstance(d, ir.Expr) and d.op == "getattr":         # module.function
        value = guard(resolve_func_from_module, func_ir, d)
    elif isinstance(d, (ir.Global, ir.FreeVar)):
        value = d.value
    else:
        return None
    if isinstance(value, DeviceFunction):
        return None if value.once else value.py_func
    topt = getattr(value, "targetoptions", None)
    if not topt or topt.get("inline") != "always" or not hasattr(value, "py_func"):
        return None
    return value.py_func


def _callee_ir(inline_worker, fn):
    """A private copy of ``fn``'s untyped IR (numba's untyped passes, no inlining)."""
    _know_ir_classes()
    base = _IR.get(fn)
    if base is None:
        flags = inline_worker.flags
        ssa = flags.enable_ssa              # run_untyped_passes sets the caller's flag (numba's habit)
        _BUILDING.append(fn)
        try:
            base = _IR[fn] = inline_worker.run_untyped_passes(fn)
        finally:
            _BUILDING.pop()
            flags.enable_ssa = ssa
    out = base.copy()
    # each block copied on its own, as before, but the scope (every variable of the function)
    # copied once for the call site rather than once for each of its blocks
    scopes = {id(blk.scope): blk.scope for blk in base.blocks.values()}
    fresh = {k: _copy_ir(sc, {}) for k, sc in scopes.items()}
    out.blocks = {label: _copy_ir(blk, dict(fresh)) for label, blk in base.blocks.items()}
    return out


def _copy_ir(x, memo):
    """``copy.deepcopy(x, memo)`` for numba's untyped IR (blocks, statements, expressions,
    scopes), in about a third of the time.

    The same copy, but for two things deepcopy does generically: IR nodes (plain
    ``__dict__`` objects) are rebuilt from their copied attributes directly, and source
    locations (``ir.Loc``, never changed in place) and other immutable leaves are shared
    rather than copied, as ``ir.Var``'s and ``ir.Const``'s own ``__deepcopy__`` already share
    theirs.  Anything else goes to ``copy.deepcopy`` with the same memo."""
    import copy

    cls = type(x)
    if cls in _SHARED:
        return x
    y = memo.get(id(x))
    if y is not None:
        return y
    if cls is list:
        y = memo[id(x)] = []
        y.extend([_copy_ir(v, memo) for v in x])
    elif cls is dict:
        y = memo[id(x)] = {}
        for k, v in x.items():
            y[_copy_ir(k, memo)] = _copy_ir(v, memo)
    elif cls is tuple:
        y = tuple([_copy_ir(v, memo) for v in x])
        if all(a is b for a, b in zip(x, y)):
            y = x
        memo[id(x)] = y
    elif cls in _NODES:
        y = memo[id(x)] = object.__new__(cls)
        y.__dict__.update({k: _copy_ir(v, memo) for k, v in x.__dict__.items()})
    elif cls is _VAR:                   # ir.Var.__deepcopy__: the scope copied, the rest shared
        y = memo[id(x)] = object.__new__(cls)
        y.__dict__.update(x.__dict__)
        y.scope = _copy_ir(x.scope, memo)
    else:
        return copy.deepcopy(x, memo)
    return y


def _know_ir_classes():
    """Set :func:`_copy_ir`'s tables (once numba is imported): the leaves it shares, the IR
    node classes it rebuilds, ``ir.Var``."""
    global _SHARED, _NODES, _VAR
    if _NODES is None:
        _SHARED, _NODES, _VAR = _ir_classes()


def _ir_classes():
    """numba's IR classes as :func:`_copy_ir` treats them, checked to be what it assumes."""
    import types

    from numba.cuda.core import ir

    shared = {str, int, float, bool, type(None), type, types.FunctionType, types.BuiltinFunctionType,
              types.ModuleType, ir.Loc, ir.UndefinedType}
    nodes = {ir.Assign, ir.Expr, ir.Jump, ir.Branch, ir.Return, ir.SetItem, ir.StaticSetItem, ir.SetAttr,
             ir.Del, ir.Arg, ir.Block, ir.Scope, ir.VarMap, ir.Print, ir.Raise, ir.StaticRaise}
    for c in nodes:                     # plain __dict__ objects that deepcopy rebuilds generically
        assert not hasattr(c, "__slots__") and not hasattr(c, "__deepcopy__") and not hasattr(c, "__setstate__")
    assert list(vars(ir.Var(None, "s", ir.Loc("f", 1)))) == ["scope", "name", "loc"]
    return shared, nodes, ir.Var


_SHARED = _NODES = _VAR = None


def _inline_ir(caller_ir, block, i, callee_ir, freevars):
    """numba's ``InlineWorker.inline_ir`` for a callee IR that is already a private copy:
    relabel and rename the callee's blocks, bind its arguments, split the caller's block at
    the call and splice the callee in; returns the new blocks."""
    from numba.cuda.core import inline_closurecall as icc, ir, ir_utils
    from numba.cuda.core.ir_utils import (
        add_offset_to_labels, find_topo_order, next_label, replace_vars, simplify_CFG,
    )

    scope = block.scope
    instr = block.body[i]
    call_expr = instr.value
    max_label = max(ir_utils._the_max_label.next(), max(caller_ir.blocks.keys()))
    callee_blocks = simplify_CFG(add_offset_to_labels(callee_ir.blocks, max_label + 1))
    callee_ir.blocks = callee_blocks
    ir_utils._the_max_label.update(max(callee_blocks.keys()))
    min_label = min(callee_blocks.keys())
    (callee_scope,) = icc._get_all_scopes(callee_blocks)
    var_dict = {}
    for var in tuple(callee_scope.localvars._con.values()):
        if var.name not in freevars:
            name = icc._created_inlined_var_name(callee_ir.func_id.unique_name, var.name)
            var_dict[var.name] = scope.redefine(name, loc=var.loc)
            callee_scope.redefine(name, loc=var.loc)
    replace_vars(callee_blocks, var_dict)
    args = icc._get_callee_args(call_expr, callee_ir.func_id.func, instr.loc, caller_ir)
    icc._replace_args_with(callee_blocks, args)
    new_blocks = []
    tail = ir.Block(scope, block.loc)
    tail.body = block.body[i + 1:]
    tail_label = next_label()
    caller_ir.blocks[tail_label] = tail
    new_blocks.append((tail_label, tail))
    block.body = block.body[:i]
    block.body.append(ir.Jump(min_label, instr.loc))
    topo = find_topo_order(callee_blocks)
    icc._replace_returns(callee_blocks, instr.target, tail_label)
    defs = caller_ir._definitions.get(instr.target.name)
    if defs and call_expr in defs:
        defs.remove(call_expr)
    for label in topo:
        blk = callee_blocks[label]
        blk.scope = scope
        icc._add_definitions(caller_ir, blk)
        caller_ir.blocks[label] = blk
        new_blocks.append((label, blk))
    return new_blocks


_NO = object()


def _static_args(func_ir, expr):
    """``{position: value}`` of the call's arguments that are static (compile-time) values."""
    out = {}
    for k, a in enumerate(expr.args):
        try:
            out[k] = _static_value(func_ir, a)
        except _NotStatic:
            pass
        except Exception:       # e.g. an attribute the object does not have: typing reports it
            pass
    return out


def _evaluate(func_ir, var, args, depth=0):
    """The value of ``var`` in a freshly built callee IR where every input is static
    (arguments in ``args``, globals, constants, their attributes and operators); raises
    :class:`_NotStatic` otherwise."""
    import operator

    from numba.cuda.core import ir

    if depth > 32:
        raise _NotStatic
    try:
        d = func_ir.get_definition(var)
    except KeyError:            # several definitions (a loop variable): not static
        raise _NotStatic from None
    ev = lambda v: _evaluate(func_ir, v, args, depth + 1)       # noqa: E731
    if isinstance(d, ir.Var):
        return ev(d)
    if isinstance(d, ir.Arg):
        if d.index in args:
            return args[d.index]
        raise _NotStatic
    if isinstance(d, (ir.Const, ir.Global, ir.FreeVar)):
        return d.value
    if not isinstance(d, ir.Expr):
        raise _NotStatic
    if d.op == "getattr":
        base = ev(d.value)
        if not (type(base) in _CLASSES or isinstance(base, (tuple, int, bool))):
            raise _NotStatic
        try:
            return getattr(base, d.attr)
        except AttributeError:
            raise _NotStatic from None
    if d.op in ("binop", "inplace_binop"):
        return d.fn(ev(d.lhs), ev(d.rhs))
    if d.op == "unary":
        return d.fn(ev(d.value))
    if d.op == "static_getitem":
        return ev(d.value)[d.index]
    if d.op == "call" and not d.kws and d.vararg is None:
        fn = ev(d.func)
        if fn in (bool, len, operator.not_):
            return fn(*[ev(a) for a in d.args])
    raise _NotStatic


def _prune(func_ir, args):
    """Take the branches whose conditions are static (a device object's flags, a constant
    argument) and drop the blocks no path reaches, so that code for other configurations is
    neither typed nor compiled."""
    from numba.cuda.core import ir
    from numba.cuda.core.analysis import compute_cfg_from_blocks

    changed = False
    for blk in func_ir.blocks.values():
        term = blk.terminator
        if isinstance(term, ir.Branch):
            try:
                taken = bool(_evaluate(func_ir, term.cond, args))
            except _NotStatic:
                continue
            except Exception:
                continue
            blk.body[-1] = ir.Jump(term.truebr if taken else term.falsebr, term.loc)
            changed = True
    if changed:
        cfg = compute_cfg_from_blocks(func_ir.blocks)
        for dead in cfg.dead_nodes():
            del func_ir.blocks[dead]
