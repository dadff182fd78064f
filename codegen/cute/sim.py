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
from .api import ELEMENT_KINDS, ElementKind
from .atom_plan import ALIGN_ANY, TensorInfo, convert_plan, copy_if_plan, copy_plan, mma_plan
from .checks import check_divides, shared_cosize
from .errors import CuteError

__all__ = [
    "SimEngine", "SimPtr", "make_ptr", "make_tensor", "make_layout", "assume", "make_shared_tensor", "dynamic_shared_tensor", "make_fragment_like", "make_identity_tensor",
    "local_tile", "local_partition", "domain_offset", "size", "copy", "copy_if", "convert", "gemm", "clear", "fill",
    "make_fragment_A", "make_fragment_B", "make_fragment_C", "mark_in_bounds",
]


class SimEngine(ArrayEngine):
    """Flat numpy memory, an element offset into it, and its memory space; ``base_align``: the
    alignment (elements) of its start, as the GPU types take it (a ``make_ptr`` of less than
    16 bytes; arrays count as any alignment); ``element``: None, or "bf16" when the memory
    holds bfloat16 bits (uint16) whose elements read and write as float32, as on the GPU.

    >>> e = SimEngine(np.array([0x3FC0, 0xC040], np.uint16), element="bf16")
    >>> float(e.load(0)), float((e + 1).load(0))
    (1.5, -3.0)
    >>> e.store(1, 0.1); hex(e.array[1])
    '0x3dcd'
    """

    __slots__ = ("space", "base_align", "element")

    def __init__(self, array, offset=0, space="gmem", residue=False, base_align=ALIGN_ANY, element=None):
        super().__init__(array, offset, residue)
        self.space = space
        self.base_align = base_align
        self.element = element

    def __add__(self, k):
        return SimEngine(self.array, self.offset + k, self.space, self.residue, self.base_align, self.element)

    def load(self, off):
        v = self.array[self.offset + off]
        return v if self.element is None else bf16_value(v)

    def store(self, off, value):
        self.array[self.offset + off] = value if self.element is None else bf16_bits(value)

    @property
    def dtype_name(self):
        """The memory's dtype name, or the element kind's ("bfloat16")."""
        return ELEMENT_KINDS[self.element].numpy if self.element is not None else self.array.dtype.name

    def __repr__(self):
        return f"SimEngine({self.space} {self.dtype_name}[{self.array.size}] + {self.offset})"

    @staticmethod
    def fragment_dtype(type_name):
        """How a register fragment holds values of ``type_name`` (``partition_fragment_A/B/C``):
        as on the GPU, bf16 as its uint16 bits."""
        from layoutalg.tiled_mma import _np_type

        return np.dtype(np.uint16) if type_name == "bf16" else _np_type(type_name)


def _numpy(arr):
    a = _atoms._unwrap_array("make_tensor", arr)
    if not a.flags.c_contiguous:
        raise CuteError(f"make_tensor: the array must be contiguous, got strides {a.strides}")
    return a.reshape(-1)


def _np_dtype(dtype):
    """The numpy dtype of memory holding ``dtype`` (an :class:`ElementKind`'s storage)."""
    if isinstance(dtype, ElementKind):
        return np.dtype(dtype.storage)
    if isinstance(dtype, np.dtype):
        return dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        from numba.np import numpy_support

        return numpy_support.as_dtype(dtype)


class KernelLayout(Layout):
    """A layout made in a kernel by ``make_layout``: on the GPU its integers may be run-time
    ones, so a tensor over it has CuTe's residue semantics (partial last tiles)."""


def make_layout(shape, stride=None):
    """``make_layout(shape, stride)``: a layout of the kernel's (run-time) integers."""
    try:
        return KernelLayout(shape, stride)
    except la.LayoutError as e:
        raise CuteError(f"make_layout: {e}") from None


def assume(x, divby):
    """``assume(x, divby)``: ``x``, checked to be a multiple of ``divby`` (the GPU trusts it)."""
    if isinstance(divby, bool) or not isinstance(divby, int) or divby <= 0:
        raise CuteError(f"assume: divby must be a positive int constant, got {divby!r}")
    if int(x) % divby:
        raise CuteError(f"assume: {int(x)} is not a multiple of {divby} (the kernel promised it is)")
    return int(x)


def _element(dtype):
    """The element kind ``dtype`` names: "bf16" for ``cute.bfloat16``, else None."""
    return dtype.name if isinstance(dtype, ElementKind) else None


class SimPtr:
    """``make_ptr``'s twin: the registered host array holding ``address``, as flat
    ``dtype`` elements from there (``element``: as :class:`SimEngine`'s)."""

    __slots__ = ("array", "address", "align", "element")

    def __init__(self, array, address, align, element=None):
        self.array, self.address, self.align, self.element = array, address, align, element


def make_ptr(dtype, address, align=16):
    """``make_ptr(dtype, address[, align])``: the elements of ``dtype`` at ``address`` (of
    ``cute.bfloat16``: uint16 bits, whose tensor elements read and write as float32), which
    must lie in an array registered with ``codegen.intrinsics.sim.register_global`` (the
    simulator cannot read other memory) and be ``align`` bytes aligned (the GPU trusts it)."""
    dt = _np_dtype(dtype)
    address = int(address)
    if isinstance(align, bool) or not isinstance(align, int) or align <= 0 or align & (align - 1):
        raise CuteError(f"make_ptr: align must be a power-of-two int (bytes), got {align!r}")
    if align < dt.itemsize:
        raise CuteError(f"make_ptr: align {align} is less than a {dt} element ({dt.itemsize} bytes)")
    if address % align:
        raise CuteError(f"make_ptr: address {address:#x} is not {align}-byte aligned (the kernel promised it is)")
    for (lo, hi), a in list(_atoms._GLOBALS.items()):
        if lo <= address < hi:
            root = _atoms._root(a)
            raw = root.reshape(-1, order="A").view(np.uint8)      # the bytes in address order (C or F)
            if not np.shares_memory(raw, root):
                raise CuteError(f"make_ptr: the array holding {address:#x} is not contiguous in memory")
            start = address - _atoms._byte_bounds(root)[0]
            n = (raw.size - start) // dt.itemsize
            return SimPtr(raw[start:start + n * dt.itemsize].view(dt), address, align, _element(dtype))
    raise CuteError(f"make_ptr: address {address:#x} is in no array registered with "
                    f"codegen.intrinsics.sim.register_global (the simulator reads only those)")


def make_tensor(array, layout):
    """``make_tensor(array, layout)``: the array's flat memory indexed by ``layout`` (or the
    memory of a :func:`make_ptr` pointer)."""
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise CuteError(f"make_tensor: expected a Layout or ComposedLayout, got {layout!r}")
    flat = array.array if isinstance(array, SimPtr) else _numpy(array)
    base = ALIGN_ANY
    if isinstance(array, SimPtr) and array.align < 16:          # as the GPU types it (_base_align)
        base = array.align // flat.dtype.itemsize
    element = array.element if isinstance(array, SimPtr) else None
    return Tensor(SimEngine(flat, 0, "gmem", isinstance(layout, KernelLayout), base, element), layout)


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
    return Tensor(SimEngine(arr, 0, "smem", element=_element(dtype)), layout)


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
    return Tensor(SimEngine(arr, 0, "smem", element=_element(dtype)), layout)


def _fragment(layout, dtype):
    frag = la.make_fragment_like(layout, np.float32).layout
    return Tensor(SimEngine(np.zeros(max(la.cosize(frag), 1), _np_dtype(dtype)), 0, "rmem", element=_element(dtype)),
                  frag)


def make_fragment_like(x, dtype=None):
    """A register tensor shaped like ``x`` (CuTe's compact fragment layout)."""
    lay = x.layout if isinstance(x, Tensor) else x
    if isinstance(lay, ComposedLayout):
        lay = lay.inner
    if dtype is None:
        element = getattr(x.engine, "element", None) if isinstance(x, Tensor) else None
        dtype = (ELEMENT_KINDS[element] if element is not None else
                 x.dtype if isinstance(x, Tensor) and x.dtype is not None else np.float32)
    return _fragment(lay, dtype)


def make_identity_tensor(shape):
    return la.make_identity_tensor(shape)


def _inner(t):
    lay = t.layout
    return lay.inner if isinstance(lay, ComposedLayout) else lay


def _residue(tensor):
    """Tensors with CuTe's residue semantics: identity tensors, and tensors over layouts
    made in the kernel (``make_layout``), whose extents may be run-time ones on the GPU."""
    eng = tensor.engine
    return isinstance(eng, CoordEngine) or getattr(eng, "residue", False)


def local_tile(tensor, tiler, coord, proj=None):
    if not _residue(tensor):
        check_divides("local_tile", _inner(tensor), la.dice(proj, tiler) if proj is not None else tiler)
    return la.local_tile(tensor, tiler, coord, proj)


def local_partition(tensor, thr_layout, idx, proj=None):
    modes = list(thr_layout) if isinstance(thr_layout.shape, tuple) else [thr_layout]
    tiler = tuple(la.size(m) for i, m in enumerate(modes) if proj is None or proj[i] is not None)
    if not _residue(tensor):
        check_divides("local_partition", _inner(tensor), tiler[0] if len(tiler) == 1 else tiler)
    return la.local_partition(tensor, thr_layout, int(idx), proj)


def domain_offset(coord, tensor):
    """``tensor`` with its origin at ``coord`` (one integer per mode of one extent, negative
    ones too): element ``c`` of the result is element ``coord + c``."""
    from layoutalg.inttuple import flat_tuple

    lay = _inner(tensor)
    modes = [lay] if not isinstance(lay.shape, tuple) else list(lay)
    if not isinstance(coord, tuple) or len(coord) != len(modes):
        raise CuteError(f"domain_offset: the coordinate must be one integer per mode of {lay}, got {coord!r}")
    off = 0
    for i, (c, m) in enumerate(zip(coord, modes)):
        if len(flat_tuple(m.shape)) > 1:
            raise CuteError(f"domain_offset: mode {i} of {lay} has several extents; offset modes of one")
        off = off + int(c) * flat_tuple(m.stride)[0]
    return Tensor(tensor.engine + off, tensor.layout)


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
        # the offset's largest power-of-two divisor (few distinct plans: copy_plan is cached)
        align = min(base & -base, ALIGN_ANY) if base else ALIGN_ANY
        if isinstance(eng, SimEngine):
            from math import gcd

            align = gcd(align, eng.base_align)
        name = eng.dtype_name if isinstance(eng, SimEngine) else self.array.dtype.name
        self.info = TensorInfo(space, self.array.dtype.itemsize * 8, self.swizzle, lay, name, align)

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
    _run_copy(copy_plan(tc, S.info, D.info), S, D)


def copy_if(*args):
    """``copy_if(tiled_copy, pred, src, dst)`` or ``copy_if(pred, src, dst)``: ``copy`` of the
    calls whose predicate value is nonzero (one value per atom call, or per element); a
    ``cp.async`` call with a zero predicate zero-fills its destination instead."""
    if len(args) == 4:
        tc, pred, src, dst = args
    elif len(args) == 3:
        tc, (pred, src, dst) = None, args
    else:
        raise CuteError(f"copy_if: expected (tiled_copy, pred, src, dst) or (pred, src, dst), got {len(args)} "
                        f"arguments")
    P, S, D = _Mem(pred), _Mem(src), _Mem(dst)
    plan, poffs = copy_if_plan(tc, P.info, S.info, D.info)
    _run_copy(plan, S, D, [bool(P.array[P.index(o)]) for o in poffs])


def _run_copy(plan, S, D, on=None):
    """The steps of ``plan``; ``on[g]`` False skips step ``g`` (zero-fills, for cp.async)."""
    if plan.kind in ("elem", "vec"):
        n = plan.vector_bits // plan.value_bits if plan.kind == "vec" else 1
        for g, s in enumerate(plan.steps):
            if on is not None and not on[g]:
                continue
            for j in range(n):
                D.array[D.index(s.dst[0] + j)] = S.array[S.index(s.src + j)]
    elif plan.kind == "cp_async":
        fn = getattr(_atoms, plan.intrinsic)
        for g, s in enumerate(plan.steps):
            fn(_atoms.smem_addr(D.array, D.byte(s.dst[0])), _atoms.gmem_addr(S.array, S.byte(s.src)),
               plan.vector_bits // 8 if on is None or on[g] else 0)
    elif plan.kind == "ldsm":
        fn = getattr(_atoms, plan.intrinsic)
        bits = plan.value_bits
        for g, s in enumerate(plan.steps):
            if on is not None and not on[g]:
                continue
            regs = fn(_atoms.smem_addr(S.array, S.byte(s.src)))
            for j, d in enumerate(s.dst):
                r, sh = divmod(j * bits, 32)
                v = (int(regs[r]) >> sh) & ((1 << bits) - 1)
                D.array[D.index(d)] = _value_of(v, D.array.dtype)


def bf16_value(bits):
    """The float32 value of the bfloat16 ``bits``: them in a float32's upper half."""
    return np.uint32(int(bits) << 16).view(np.float32)


def bf16_bits(x) -> int:
    """The bfloat16 bits of ``x`` (through float32), rounded to nearest even; NaN stays NaN."""
    b = int(np.float32(x).view(np.uint32))
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return ((b >> 16) | 0x40) & 0xFFFF
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def convert(src, dst, to):
    """``convert(src, dst, to)``: the float values of ``src`` as ``to`` ("bf16", "f16", "tf32"
    or "int", see :data:`codegen.cute.atom_plan.CONVERSIONS`) into ``dst``, element by element."""
    S, D = _Mem(src), _Mem(dst)
    plan = convert_plan(S.info, D.info, to)
    dt = D.array.dtype
    for s in plan.steps:
        v = S.array[S.index(s.src)]
        if to == "bf16":
            out = _value_of(bf16_bits(v), dt)
        elif to == "f16":
            h = np.float16(v)
            out = h if dt == np.float16 else h.view(dt)
        elif to == "tf32":
            out = _value_of(_atoms.cvt_tf32_f32(np.float32(v)), dt)
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                out = np.array([np.trunc(v)]).astype(dt)[0]
        D.array[D.index(s.dst[0])] = out


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
    if plan.intrinsic == "fma":                  # UniversalFMA: float32 a*b exact in float64, the sum
        dt = Cm.array.dtype.type                 # rounded to float64 then to float32 (a fused multiply-add
        #                                          but for rare double roundings); float64: a*b rounded, then the add
        for s in plan.steps:
            i = Cm.index(s.c[0])
            Cm.array[i] = dt(np.float64(Am.array[Am.index(s.a[0])]) * np.float64(Bm.array[Bm.index(s.b[0])])
                             + np.float64(Cm.array[i]))
        return
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


def mark_in_bounds(pred, coords, extents):
    """``pred[i] = 1`` where ``coords[i]`` lies inside ``extents`` (``0 <= c < extent`` in every
    mode), else 0."""
    n, m = la.size(pred.layout), la.size(coords.layout)
    if n != m:
        raise CuteError(f"mark_in_bounds: the predicate tensor has {n} elements, the coordinates {m}")
    for i in range(n):
        c = coords[i]
        if len(c) != len(extents):
            raise CuteError(f"mark_in_bounds: the extents {extents} must be {len(c)} integers, one a mode of the "
                            f"coordinates")
        pred[i] = int(all(0 <= x < e for x, e in zip(c, extents)))


def _operand_fragment(which, thr_mma, t):
    atom = thr_mma.tiled_mma.atom
    name = {"A": atom.a_type, "B": atom.b_type, "C": atom.c_type}[which]
    return _fragment(_inner(t), SimEngine.fragment_dtype(name))


def make_fragment_A(thr_mma, t):
    return _operand_fragment("A", thr_mma, t)


def make_fragment_B(thr_mma, t):
    return _operand_fragment("B", thr_mma, t)


def make_fragment_C(thr_mma, t):
    return _operand_fragment("C", thr_mma, t)
