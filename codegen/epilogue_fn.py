"""A user's element-wise epilogue, compiled into the Hopper GEMM: ``gemm(A, B, epilogue=f,
epilogue_args=(t0, ...))`` stores ``C[m, n] = f(alpha * (A @ B)[m, n], m, n, t0, ...)``.

``f`` is a Python function that numba compiles as a device function, inlined into the
kernel's epilogue, where it runs on each accumulator in registers before the store: no
second kernel, no trip of C through memory. It receives the float32 value, the element's row
``m`` and column ``n`` of C (int64; only positions inside C), and the tensors of
``epilogue_args``: GPU arrays of one or two dimensions, any strides, of
:data:`TENSOR_DTYPES`, which ``f`` indexes as ``t[n]`` or ``t[m, n]`` (``codegen.cute``
tensors over their memory; a bf16 element reads as its float32 value). It returns the value
stored (converted to C's type).

    >>> def scaled_residual(acc, m, n, bias, residual):
    ...     return acc + bias[n] + 0.5 * residual[m, n]

The kernel is compiled once per function (and per element types and ranks of its tensors);
shapes and addresses are run-time arguments. Numbers that ``f`` reads from its globals or
its closure are compiled in as constants, so they are part of the kernel's identity: a new
value compiles anew. Arrays it reads from them would be compiled in as copies, which is
refused: pass them in ``epilogue_args``. Functions that ``f`` calls must be device
functions themselves (``numba.cuda.jit(device=True)``), as in any numba kernel.

Kernels with a user epilogue live in memory only (the disk caches key kernels by their
source, and a function's behaviour is not its source).
"""

from __future__ import annotations

import inspect
import itertools
import types
import numbers
import weakref
from dataclasses import dataclass, field

import numpy as np

from .errors import GemmError
from .sm90.args import EPILOGUE_TENSORS

__all__ = ["EpilogueFunction", "EpilogueTensor", "TENSOR_DTYPES", "UserTensors", "check_epilogue",
           "epilogue_function", "epilogue_source", "user_kernel_ptx"]

#: Element types of the tensors an epilogue may read (a bf16 element reads as float32,
#: ``codegen.cute.bfloat16``).
TENSOR_DTYPES = ("f16", "bf16", "f32", "f64", "s8", "u8", "s32", "s64")


@dataclass(frozen=True)
class EpilogueFunction:
    """What a kernel compiles of a user's epilogue: the function, the element type and rank
    of each tensor it reads, and what it reads from its globals and closure: ``constants``,
    ``(name, type, repr)`` of each number (or tuple of numbers), compiled in as constants,
    and ``refs``, ``(name, id)`` of the other objects (functions it calls). Two functions
    with the same code, tensors, constants and refs are one kernel: a function defined anew
    at each call (a closure in a ``forward``) compiles once."""

    fn: object = field(compare=False)
    tensors: tuple = ()
    constants: tuple = ()
    code: object = None
    refs: tuple = ()

    def __post_init__(self):
        if self.code is None:
            object.__setattr__(self, "code", getattr(self.fn, "__code__", self.fn))

    @property
    def name(self):
        return getattr(self.fn, "__qualname__", repr(self.fn))

    @property
    def token(self):
        """This epilogue's name in the registry the generated module reads it from."""
        hit = _TOKENS.get(self)
        if hit is None:
            hit = f"{self.name}#{next(_COUNTER)}"
            _TOKENS[self] = hit
            _BY_TOKEN[hit] = self
        return hit

    def signature_text(self):
        """``f(acc, m, n, t0: f16[1-D], ...)``, for messages and the kernel's comments."""
        ts = ", ".join(f"t{i}: {d}[{r}-D]" for i, (d, r) in enumerate(self.tensors))
        return f"{self.name}(acc: f32, m: i64, n: i64{', ' + ts if ts else ''})"


@dataclass(frozen=True)
class EpilogueTensor:
    """One tensor of ``epilogue_args`` as the launch passes it: address, extents, element
    strides (two each; a 1-D tensor's second are 1 and 0)."""

    ptr: int
    dims: tuple
    strides: tuple

    def slot_values(self, i):
        """The kernel arguments ``t<i>``, ``t<i>_d0``, ... (:data:`codegen.sm90.args.GEMM_USER_ARGS`)."""
        return {f"t{i}": self.ptr, f"t{i}_d0": self.dims[0], f"t{i}_d1": self.dims[1],
                f"t{i}_s0": self.strides[0], f"t{i}_s1": self.strides[1]}


_TOKENS = {}
_BY_TOKEN = {}
_COUNTER = itertools.count()


def epilogue_function(token):
    """The user's function registered as ``token`` (the generated module's import of it)."""
    try:
        return _BY_TOKEN[token].fn
    except KeyError:
        raise GemmError(f"epilogue_function: no epilogue {token!r} in this process (kernels with a user "
                        f"epilogue are not cached on disk)") from None


def _names(fn):
    """``(name, where)`` of each global and closure variable that ``fn``'s code reads,
    sorted (memoised per function)."""
    hit = _NAMES.get(fn)
    if hit is None:
        cv = inspect.getclosurevars(fn)
        hit = _NAMES[fn] = tuple(sorted([(n, "globals") for n in cv.globals]
                                        + [(n, "closure") for n in fn.__code__.co_freevars]))
    return hit


_NAMES = weakref.WeakKeyDictionary()
_NUMBERS = (bool, int, float, complex, numbers.Number, np.generic)


def _constants(fn, op):
    """``(constants, refs)`` of what ``fn`` reads from its globals and closure (see
    :class:`EpilogueFunction`); an array there is an error."""
    g = fn.__globals__
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    consts, refs = [], []
    for name, where in _names(fn):
        try:
            v = g[name] if where == "globals" else cells[name].cell_contents
        except (KeyError, ValueError):          # not bound (yet): numba reports it
            continue
        if isinstance(v, _NUMBERS) or isinstance(v, tuple) and all(isinstance(e, _NUMBERS) for e in v):
            consts.append((name, type(v).__name__, repr(v)))
        elif isinstance(v, types.ModuleType):   # (modules first: a call of the cached path checks each name)
            continue
        elif isinstance(v, np.ndarray) or hasattr(v, "__cuda_array_interface__") or hasattr(v, "data_ptr"):
            raise GemmError(f"{op}: epilogue {fn.__qualname__} reads the array {name!r} from its {where}; the "
                            f"kernel would compile in a copy of it: pass it in epilogue_args and take it as an "
                            f"argument")
        else:
            refs.append((name, id(v)))
    return tuple(consts), tuple(refs)


def check_epilogue(fn, args, describe, a, op):
    """The :class:`EpilogueFunction` of ``fn`` and the :class:`EpilogueTensor` of each of
    ``args``, checked before any work: ``fn`` a Python function taking ``3 + len(args)``
    positional arguments; each of ``args`` a 1-D or 2-D array of :data:`TENSOR_DTYPES`,
    of the kind and device of ``a`` (``describe(x, name)``: the host's description of an
    array). Returns ``(None, ())`` when ``fn`` is None (and ``args`` must be empty)."""
    args = tuple(args) if args is not None else ()
    if fn is None:
        if args:
            raise GemmError(f"{op}: epilogue_args given ({len(args)} arrays) without an epilogue function")
        return None, ()
    if not inspect.isfunction(fn):
        raise GemmError(f"{op}: epilogue must be a Python function f(acc, m, n, *epilogue_args), got "
                        f"{type(fn).__name__} {fn!r}")
    if len(args) > EPILOGUE_TENSORS:
        raise GemmError(f"{op}: epilogue_args holds {len(args)} arrays; an epilogue reads at most "
                        f"{EPILOGUE_TENSORS}")
    try:
        inspect.signature(fn).bind(*range(3 + len(args)))
    except TypeError as e:
        raise GemmError(f"{op}: epilogue {fn.__qualname__}{inspect.signature(fn)} cannot take the "
                        f"{3 + len(args)} arguments (acc, m, n{''.join(f', t{i}' for i in range(len(args)))}) "
                        f"it is called with: {e}") from None
    kinds, tensors = [], []
    for i, x in enumerate(args):
        name = f"epilogue_args[{i}]"
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            raise GemmError(f"{op}: {name} is a {type(x).__name__}, not an array; pass numbers through "
                            f"the function's globals or closure (they are compiled in)")
        d = describe(x, name)
        if d.kind != a.kind or d.device != a.device:
            raise GemmError(f"{op}: {name} is a {d.kind} array on {d.device}, A a {a.kind} array on {a.device}")
        if 0 in d.shape:
            raise GemmError(f"{op}: {name} is empty (shape {d.shape})")
        dims = d.shape + (1,) * (2 - len(d.shape))
        strides = d.strides + (0,) * (2 - len(d.strides))
        kinds.append((d.etype.name, len(d.shape)))
        tensors.append(EpilogueTensor(d.ptr, dims, strides))
    consts, refs = _constants(fn, op)
    return EpilogueFunction(fn, tuple(kinds), consts, refs=refs), tuple(tensors)


def fast_key(fn, args):
    """What identifies a call's epilogue among repeated calls on torch tensors (the function,
    the numbers it reads, the tensors' types, shapes, strides and devices); raises
    ``AttributeError`` for an argument that is no tensor (the full checks then report it)."""
    return fn.__code__, _constants(fn, "gemm"), tuple((t.dtype, t.shape, t.stride(), t.device) for t in args)


def torch_tensors(args):
    """The :class:`EpilogueTensor` of each torch tensor of ``args`` (checked before)."""
    out = []
    for t in args:
        shape, strides = tuple(t.shape), t.stride()
        out.append(EpilogueTensor(t.data_ptr(), shape + (1,) * (2 - len(shape)), strides + (0,) * (2 - len(strides))))
    return tuple(out)


class UserTensors:
    """What a launcher of a kernel with a user epilogue does with the epilogue's tensors: it
    writes them into its argument slots ``self.slots`` (``t<i>``, ``t<i>_d0``, ...)."""

    _torch_tensors = None       # (address, shape, strides) of the torch tensors as set

    def set_tensors(self, tensors):
        """The tensors a user epilogue reads in the next launches (each an
        :class:`EpilogueTensor`)."""
        for i, t in enumerate(tensors):
            self.slots.set(**t.slot_values(i))
        self._torch_tensors = None

    def set_torch_tensors(self, args):
        """:meth:`set_tensors` of torch tensors (checked before), where they are not the
        tensors (addresses, shapes, strides) of the last call."""
        key = tuple((t.data_ptr(), t.shape, t.stride()) for t in args)
        if key != self._torch_tensors:
            self.set_tensors(torch_tensors(args))
            self._torch_tensors = key


_SOURCE = '''

# the user's element-wise epilogue, inlined where C is stored: {signature}
from codegen.epilogue_fn import epilogue_function  # noqa: E402

user_function = cuda.jit(device=True, inline="always")(epilogue_function({token!r}))


@cuda.jit(device=True, inline="always")
def user_epilogue(acc, m, n, t):
    """The value stored at C[m, n]: the user's function of alpha * acc there and the tensors t."""
    return user_function(acc, m, n{args})


@cuda.jit(device=True, inline="always")
def epilogue_tensors(p):
    """The arrays of epilogue_args as tensors over their memory: extents t<i>_d*, element strides t<i>_s*."""
{tensors}
    return {names}
'''

#: The dtype a user epilogue's tensor of an element type is made of, where not its numpy
#: storage type: bf16 is ``cute.bfloat16``, uint16 bits whose elements read as float32.
_TENSOR_ELEMENTS = {"bf16": "cute.bfloat16"}


def epilogue_source(user):
    """The generated kernel module's part for the user epilogue ``user`` (an
    :class:`EpilogueFunction`): ``user_function`` (the registered function, inlined),
    ``user_epilogue(acc, m, n, t)`` and ``epilogue_tensors(p)``, the tensors over the kernel's
    arguments ``t<i>``... (the module imports ``numpy as np``, ``cuda`` and ``cute``)."""
    from layoutalg.element_types import element_type

    def tuple_text(items):
        items = list(items)
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    tensors = []
    for i, (dtype, rank) in enumerate(user.tensors):
        et = element_type(dtype)
        elem = _TENSOR_ELEMENTS.get(et.name, f"np.{et.storage}")
        dims = tuple_text(f"p.t{i}_d{j}" for j in range(rank))
        strides = tuple_text(f"p.t{i}_s{j}" for j in range(rank))
        tensors.append(f"    t{i} = cute.make_tensor(cute.make_ptr({elem}, p.t{i}, {et.bits // 8}), "
                       f"cute.make_layout({dims}, {strides}))  # {dtype}, {rank}-D")
    return _SOURCE.format(signature=user.signature_text(), token=user.token,
                          args="".join(f", t[{i}]" for i in range(len(tensors))),
                          tensors="\n".join(tensors), names=tuple_text(f"t{i}" for i in range(len(tensors))))


def user_kernel_ptx(kernel, user, signature, cc, bounds):
    """The PTX of a generated kernel with the user's epilogue ``user`` (numba's ``kernel``, its
    ``signature``); an error in the user's function is a :class:`~codegen.errors.GemmError`
    that names it and what numba said."""
    import re

    from .numba_ptx import kernel_ptx

    try:
        return kernel_ptx(kernel, signature, cc, bounds)
    except Exception as e:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()      # numba's colours
        code = getattr(user.fn, "__code__", None)
        where = f" (File \"{code.co_filename}\", line {code.co_firstlineno})" if code is not None else ""
        raise GemmError(f"gemm: the epilogue {user.signature_text()}{where} does not compile as a numba device "
                        f"function (float32 in, a number out; it may call math functions and device functions, "
                        f"index its tensors as t[n] or t[m, n]):\n{text[:3000]}") from e
