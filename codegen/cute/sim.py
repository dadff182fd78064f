"""The simulator's ``codegen.cute``: the same calls as plain Python on host tensors.

Under ``NUMBA_ENABLE_CUDASIM=1`` a kernel is Python run by one thread per CUDA thread, so
``layoutalg``'s host objects work as they are: ``tiled_copy.get_slice(tid)`` is the host
``ThrCopy``, ``partition_S`` the host partition.  Tensors here are ``layoutalg.Tensor``s
over a :class:`SimEngine` (the numpy memory behind a kernel argument, a shared array or a
fragment, and its memory space).  ``copy`` and ``gemm`` run the same plans as the GPU
lowering (:mod:`codegen.cute.atom_plan`) through the atoms' simulator twins
(:mod:`codegen.intrinsics.sim`): ``cp.async`` lands only at the matching wait, ``ldmatrix``
and ``mma`` are warp collectives.
"""

from __future__ import annotations

import sys

import numpy as np

import layoutalg as la
from layoutalg import ComposedLayout, Layout, Swizzle, Tensor
from layoutalg.tensor import ArrayEngine, CoordEngine, RegisterEngine

from ..intrinsics import sim as _atoms
from .atom_plan import TensorInfo, copy_plan, mma_plan
from .checks import check_divides, shared_cosize
from .offsets import CuteError

__all__ = [
    "SimEngine", "make_tensor", "make_shared_tensor", "dynamic_shared_tensor", "make_fragment_like", "make_identity_tensor",
    "local_tile", "local_partition", "size", "copy", "gemm", "clear", "fill",
    "make_fragment_A", "make_fragment_B", "make_fragment_C",
]


class SimEngine(ArrayEngine):
    """Flat numpy memory, an element offset into it, and its memory space."""

    __slots__ = ("space",)

    def __init__(self, array, offset=0, space="gmem"):
        super().__init__(array, offset)
        self.space = space

    def __add__(self, k):
        return SimEngine(self.array, self.offset + k, self.space)

    def __repr__(self):
        return f"SimEngine({self.space} {self.array.dtype}[{self.array.size}] + {self.offset})"


def _numpy(arr):
    a = _atoms._unwrap_array("make_tensor", arr)
    if not a.flags.c_contiguous:
        raise CuteError(f"make_tensor: the array must be contiguous, got strides {a.strides}")
    return a.reshape(-1)


def _np_dtype(dtype):
    if isinstance(dtype, np.dtype):
        return dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        from numba.np import numpy_support

        return numpy_support.as_dtype(dtype)


def make_tensor(array, layout):
    """``make_tensor(array, layout)``: the array's flat memory indexed by ``layout``."""
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise CuteError(f"make_tensor: expected a Layout or ComposedLayout, got {layout!r}")
    return Tensor(SimEngine(_numpy(array), 0, "gmem"), layout)


def make_shared_tensor(dtype, layout):
    """``make_shared_tensor(dtype, layout)``: a shared array per block and call site."""
    from numba.cuda.simulator.kernel import _get_kernel_context

    if not isinstance(layout, (Layout, ComposedLayout)):
        raise CuteError(f"make_shared_tensor: expected a Layout or ComposedLayout, got {layout!r}")
    ctx = _get_kernel_context()
    if ctx is None:
        raise RuntimeError("make_shared_tensor: call it inside a simulated kernel")
    f = sys._getframe(1)
    key = ("codegen.cute", f.f_code.co_filename, f.f_lineno)
    allocs = ctx._shared._allocations
    arr = allocs.get(key)
    if arr is None:
        arr = allocs.setdefault(key, np.zeros(shared_cosize(layout), _np_dtype(dtype)))
    return Tensor(SimEngine(arr, 0, "smem"), layout)


def dynamic_shared_tensor(dtype, layout, byte_offset):
    """A view of the block's dynamic shared memory from ``byte_offset`` through ``layout``."""
    from numba.cuda.simulator.kernel import _get_kernel_context

    if not isinstance(layout, (Layout, ComposedLayout)):
        raise CuteError(f"dynamic_shared_tensor: expected a Layout or ComposedLayout, got {layout!r}")
    if byte_offset % 128:
        raise CuteError(f"dynamic_shared_tensor: byte offset {byte_offset} must be a multiple of 128")
    dyn = _get_kernel_context()._shared._dynshared
    dt = _np_dtype(dtype)
    n = shared_cosize(layout)
    if byte_offset + n * dt.itemsize > dyn.nbytes:
        raise CuteError(f"dynamic_shared_tensor: {n} {dt} elements at byte {byte_offset} exceed the "
                        f"launch's {dyn.nbytes} bytes of dynamic shared memory")
    arr = np.frombuffer(dyn.data, dtype=dt, count=n, offset=byte_offset)
    return Tensor(SimEngine(arr, 0, "smem"), layout)


def _fragment(layout, dtype):
    frag = la.make_fragment_like(layout, np.float32).layout
    return Tensor(SimEngine(np.zeros(max(la.cosize(frag), 1), _np_dtype(dtype)), 0, "rmem"), frag)


def make_fragment_like(x, dtype=None):
    """A register tensor shaped like ``x`` (CuTe's compact fragment layout)."""
    lay = x.layout if isinstance(x, Tensor) else x
    if isinstance(lay, ComposedLayout):
        lay = lay.inner
    if dtype is None:
        dtype = x.dtype if isinstance(x, Tensor) and x.dtype is not None else np.float32
    return _fragment(lay, dtype)


def make_identity_tensor(shape):
    return la.make_identity_tensor(shape)


def _inner(t):
    lay = t.layout
    return lay.inner if isinstance(lay, ComposedLayout) else lay


def local_tile(tensor, tiler, coord, proj=None):
    if proj is not None:
        check_divides("local_tile", _inner(tensor), la.dice(proj, tiler))
    else:
        check_divides("local_tile", _inner(tensor), tiler)
    return la.local_tile(tensor, tiler, coord, proj)


def local_partition(tensor, thr_layout, idx, proj=None):
    modes = list(thr_layout) if isinstance(thr_layout.shape, tuple) else [thr_layout]
    tiler = tuple(la.size(m) for i, m in enumerate(modes) if proj is None or proj[i] is not None)
    check_divides("local_partition", _inner(tensor), tiler[0] if len(tiler) == 1 else tiler)
    return la.local_partition(tensor, thr_layout, int(idx), proj)


def size(x, mode=None):
    lay = x.layout if isinstance(x, Tensor) else x
    if mode is not None:
        return la.size(lay[mode]) if la.rank(lay) > 1 else la.size(lay)
    return la.size(lay)


# ---- memory of a host tensor ---------------------------------------------------------------

class _Mem:
    """Where a tensor's elements are: array, base, swizzle; and its :class:`TensorInfo`."""

    def __init__(self, t):
        eng, lay = t.engine, t.layout
        if isinstance(eng, CoordEngine):
            self.info = TensorInfo("coord", 64, None, lay, "coord")
            return
        space = eng.space if isinstance(eng, SimEngine) else "rmem" if isinstance(eng, RegisterEngine) else None
        if space is None:
            raise CuteError(f"copy/gemm: tensor {t!r} is not one of codegen.cute's tensors")
        self.array = eng.array
        sw, base = None, int(eng.offset)
        if isinstance(lay, ComposedLayout):
            if not isinstance(lay.outer, Swizzle) or eng.offset:
                raise CuteError(f"copy/gemm: unsupported composed layout {lay}")
            sw, base, lay = lay.outer, lay.offset, lay.inner
        self.swizzle = sw if sw is not None and sw.bits else None
        self.base = base
        self.info = TensorInfo(space, self.array.dtype.itemsize * 8, self.swizzle, lay, self.array.dtype.name)

    def index(self, off):
        x = self.base + off
        return self.swizzle(x) if self.swizzle is not None else x

    def byte(self, off):
        return self.index(off) * self.array.dtype.itemsize


_UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64, 8: np.uint8}


def _bits_of(value, dtype):
    return int(np.array([value], dtype).view(_UINT[dtype.itemsize * 8])[0])


def _value_of(bits, dtype):
    return np.array([bits], _UINT[dtype.itemsize * 8]).view(dtype)[0]


def copy(*args):
    """``copy(tiled_copy, src, dst)`` through the atom, or ``copy(src, dst)`` element-wise."""
    if len(args) == 3:
        tc, src, dst = args
    elif len(args) == 2:
        tc, (src, dst) = None, args
    else:
        raise CuteError(f"copy: expected (tiled_copy, src, dst) or (src, dst), got {len(args)} arguments")
    S, D = _Mem(src), _Mem(dst)
    plan = copy_plan(tc, S.info, D.info)
    if plan.kind in ("elem", "vec"):
        n = plan.vector_bits // plan.value_bits if plan.kind == "vec" else 1
        for s in plan.steps:
            for j in range(n):
                D.array[D.index(s.dst[0] + j)] = S.array[S.index(s.src + j)]
    elif plan.kind == "cp_async":
        fn = getattr(_atoms, plan.intrinsic)
        for s in plan.steps:
            fn(_atoms.smem_addr(D.array, D.byte(s.dst[0])), _atoms.gmem_addr(S.array, S.byte(s.src)),
               plan.vector_bits // 8)
    elif plan.kind == "ldsm":
        fn = getattr(_atoms, plan.intrinsic)
        bits = plan.value_bits
        for s in plan.steps:
            regs = fn(_atoms.smem_addr(S.array, S.byte(s.src)))
            for j, d in enumerate(s.dst):
                r, sh = divmod(j * bits, 32)
                v = (int(regs[r]) >> sh) & ((1 << bits) - 1)
                D.array[D.index(d)] = _value_of(v, D.array.dtype)


def _pack(mem, offs, bits):
    per = 32 // bits
    regs = []
    for r in range(len(offs) // per):
        acc = 0
        for j in range(per):
            acc |= _bits_of(mem.array[mem.index(offs[r * per + j])], mem.array.dtype) << (j * bits)
        regs.append(acc)
    return regs


def gemm(tiled_mma, C, A, B):
    """``C += A @ B`` over the fragments, one MMA atom (warp collective) per step."""
    Cm, Am, Bm = _Mem(C), _Mem(A), _Mem(B)
    plan = mma_plan(tiled_mma, Cm.info, Am.info, Bm.info)
    fn = getattr(_atoms, plan.intrinsic)
    for s in plan.steps:
        cvals = [Cm.array[Cm.index(o)] for o in s.c]
        if plan.a_bits == 64:
            ins = [Am.array[Am.index(o)] for o in s.a] + [Bm.array[Bm.index(o)] for o in s.b]
        else:
            ins = _pack(Am, s.a, plan.a_bits) + _pack(Bm, s.b, plan.b_bits)
        out = fn(*ins, *cvals)
        for o, v in zip(s.c, out):
            Cm.array[Cm.index(o)] = v


def fill(t, value):
    for i in range(la.size(t.layout)):
        t[i] = value


def clear(t):
    fill(t, 0)


def _operand_fragment(which, thr_mma, t):
    from layoutalg.tiled_mma import _np_type

    atom = thr_mma.tiled_mma.atom
    name = {"A": atom.a_type, "B": atom.b_type, "C": atom.c_type}[which]
    dt = np.uint16 if name == "bf16" else _np_type(name)
    return _fragment(_inner(t), dt)


def make_fragment_A(thr_mma, t):
    return _operand_fragment("A", thr_mma, t)


def make_fragment_B(thr_mma, t):
    return _operand_fragment("B", thr_mma, t)


def make_fragment_C(thr_mma, t):
    return _operand_fragment("C", thr_mma, t)
