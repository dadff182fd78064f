"""The functions a kernel calls: ``make_tensor``, ``local_tile``, ``copy``, ``gemm``, ...

On the GPU path these objects are only names: numba types and lowers every call to them
(:mod:`codegen.cute.device_tensor`, :mod:`codegen.cute.device_tiled`,
:mod:`codegen.cute.device_atoms`).  Called from Python outside a kernel they raise.  In
numba's simulator, :mod:`codegen.cute` exports the twins of :mod:`codegen.cute.sim` instead.
Beside them, :data:`bfloat16`, a dtype that both paths take: bf16 bits read and written as
float32 (:class:`ElementKind`).
"""

from __future__ import annotations

__all__ = [
    "make_ptr", "make_tensor", "make_layout", "assume", "make_shared_tensor", "dynamic_shared_tensor", "make_fragment_like", "make_identity_tensor",
    "local_tile", "local_partition", "domain_offset", "size", "copy", "copy_if", "convert", "gemm", "clear", "fill",
    "make_fragment_A", "make_fragment_B", "make_fragment_C", "mark_in_bounds", "ElementKind", "bfloat16",
]


class ElementKind:
    """A number format that memory holds as the bits of an integer type and that a tensor's
    elements read and write as float32: ``t[i]`` gives the value, ``t[i] = x`` rounds ``x``
    to the format.  Given for a dtype (``make_ptr``, ``make_shared_tensor``,
    ``dynamic_shared_tensor``, ``make_fragment_like``), on the GPU and in the simulator.

    ``make_fragment_like`` of such a tensor is one too.  Copies move the bits (to and from
    tensors of the format or of its storage type; other element-wise copies are refused, as
    they would read the bits as integers), ``convert(src, dst, "bf16")`` writes the format from
    floats; ``convert`` from it and ``gemm`` on it are refused (the bf16 MMA takes the uint16
    fragments of ``make_fragment_A/B``).

    >>> bfloat16
    cute.bfloat16
    >>> bfloat16.name, bfloat16.storage
    ('bf16', 'uint16')
    """

    __slots__ = ("name", "storage", "numpy")

    def __init__(self, name, storage, numpy):
        self.name, self.storage, self.numpy = name, storage, numpy

    def __repr__(self):
        return f"cute.{self.numpy}"


#: bfloat16 elements, stored as their uint16 bits: a read shifts them into a float32's upper
#: half, a write rounds to nearest even (``cvt.rn.bf16.f32``).
bfloat16 = ElementKind("bf16", "uint16", "bfloat16")

#: ``ElementKind.name`` -> the kind.
ELEMENT_KINDS = {k.name: k for k in (bfloat16,)}


def _device_only(name):
    def stub(*args, **kwargs):
        raise RuntimeError(
            f"codegen.cute.{name}: only callable inside a numba.cuda kernel (or in numba's "
            f"simulator, NUMBA_ENABLE_CUDASIM=1, set before numba is imported)")

    stub.__name__ = stub.__qualname__ = name
    return stub


make_ptr = _device_only("make_ptr")
make_ptr.__doc__ = """``make_ptr(dtype, address[, align])``: a pointer to ``dtype`` elements in global
memory at the integer ``address`` (a kernel argument: a tensor's ``data_ptr()``; ``dtype`` a
numpy type or :data:`bfloat16`, whose elements read and write as float32), promised
to be ``align`` bytes aligned (a constant, default 16, as allocations are; CuTe DSL's
``assumed_align``). ``make_tensor(ptr, layout)`` views the memory through a layout, as it
does an array's; vector copies trust the promise, the simulator checks it.  In the
simulator the address must lie in an array registered with
``codegen.intrinsics.sim.register_global``."""
make_tensor = _device_only("make_tensor")
make_tensor.__doc__ = """``make_tensor(array, layout)``: the array's flat memory indexed by ``layout``
(or ``make_tensor(make_ptr(dtype, address), layout)``: the memory at a raw address).

``layout`` (a ``Layout`` or a swizzled ``ComposedLayout``) is a compile-time constant (a
global of the kernel's module), or a layout of run-time integers from ``make_layout``; the
array's own shape and strides are not used.
"""
make_layout = _device_only("make_layout")
make_layout.__doc__ = """``make_layout(shape, stride)``: a layout of the kernel's run-time integers
(CuTe's dynamic integers) beside compile-time ones: ``make_layout((M, K), (ldA, 1))``.  Only
the run-time ones are data; the rest folds as in a constant layout.  A tensor over it tiles
with CuTe's residue semantics: ``local_tile`` of a run-time extent ``M`` by ``t`` gives
``ceil_div(M, t)`` tiles, the last one partial, to be guarded by an identity tensor's
predicates.  Strides are given explicitly; a run-time stride that the copies must treat as
aligned is wrapped in ``assume``."""
assume = _device_only("assume")
assume.__doc__ = """``assume(x, divby)``: the run-time integer ``x``, promised to be a multiple of the
constant ``divby`` (CuTe DSL's ``assume``), for the strides of ``make_layout``: vector copies
(16-byte ``cp.async``) need every run-time stride of their rows to be a multiple of the
vector.  The GPU trusts the promise; the simulator checks it."""
make_shared_tensor = _device_only("make_shared_tensor")
make_shared_tensor.__doc__ = """``make_shared_tensor(dtype, layout)``: a fresh static shared array of
``cosize(layout)`` elements (128-byte aligned) viewed through ``layout``."""
dynamic_shared_tensor = _device_only("dynamic_shared_tensor")
dynamic_shared_tensor.__doc__ = """``dynamic_shared_tensor(dtype, layout, byte_offset)``: a view of the kernel's
dynamic shared memory (the launch's 4th parameter) from ``byte_offset`` (a multiple of 128)
through ``layout``.  For more than 48 KiB of shared memory."""
make_fragment_like = _device_only("make_fragment_like")
make_fragment_like.__doc__ = """``make_fragment_like(tensor[, dtype])``: a register tensor shaped like
``tensor`` (CuTe's compact fragment layout), uninitialised."""
make_identity_tensor = _device_only("make_identity_tensor")
make_identity_tensor.__doc__ = """``make_identity_tensor(shape)``: ``t[c] == c``, for predication."""
local_tile = _device_only("local_tile")
local_tile.__doc__ = """``local_tile(tensor, tiler, coord[, proj])``: the tile at ``coord`` of
``zipped_divide(tensor, tiler)``; ``None`` in ``coord`` keeps that mode of tiles."""
domain_offset = _device_only("domain_offset")
domain_offset.__doc__ = """``domain_offset(coord, tensor)``: ``tensor`` with its origin moved to ``coord``
(one integer per mode, run-time ones allowed, negative ones too): element ``c`` of the
result is element ``coord + c`` of ``tensor`` (CuTe's ``domain_offset``).  With an
identity tensor moved the same way it shifts the tiles of a GEMM's K so that only the
first k-tile is partial (the K residue first)."""
local_partition = _device_only("local_partition")
local_partition.__doc__ = """``local_partition(tensor, thr_layout, idx[, proj])``: thread ``idx``'s
elements when the threads of ``thr_layout`` tile ``tensor``."""
size = _device_only("size")
size.__doc__ = """``size(x[, mode])``: the number of elements of a tensor or layout (or of one mode):
a compile-time constant, or a run-time integer where the extents are (``make_layout``)."""
copy = _device_only("copy")
copy.__doc__ = """``copy(tiled_copy, src, dst)``: the copy atom over the partitioned tensors
``(CPY, CPY_M, CPY_N, ...)``; ``copy(src, dst)`` copies element by element."""
copy_if = _device_only("copy_if")
copy_if.__doc__ = """``copy_if(tiled_copy, pred, src, dst)`` or ``copy_if(pred, src, dst)``: ``copy`` of the
calls whose predicate is nonzero; ``pred`` holds one value per atom call (CuTe's ``pred(i)``
over the modes after the first: shape ``(CPY_M, CPY_K)`` for ``(CPY, CPY_M, CPY_K)``
partitions), or per element.  A ``cp.async`` call with a zero predicate fills its destination
with zeros and reads nothing (its source address may lie past the array); other calls are
skipped.  ``ldmatrix`` (a warp collective) cannot be predicated."""
convert = _device_only("convert")
convert.__doc__ = """``convert(src, dst, to)``: the float values of ``src`` as the number format ``to``
(a string constant) into ``dst``, element by element: ``"bf16"`` (bfloat16 bits in a uint16
or int16 tensor, rounded to nearest even through float32), ``"f16"`` (float16, or its bits
in a 16-bit integer tensor), ``"tf32"`` (float32 with the 13 low mantissa bits zero, rounded
to nearest with ties away from zero, as ``cvt.rna.tf32.f32`` gives the tf32 MMA atoms their
operands; or its bits in a 32-bit integer tensor) or ``"int"`` (truncated toward zero, as C's
cast).  ``copy``
refuses float to integer, which would convert the numbers rather than give their bits."""
gemm = _device_only("gemm")
gemm.__doc__ = """``gemm(tiled_mma, C, A, B)``: ``C += A @ B`` with the MMA atom, over fragments
``A (MMA, MMA_M[, MMA_K])``, ``B (MMA, MMA_N[, MMA_K])``, ``C (MMA, MMA_M, MMA_N)``."""
clear = _device_only("clear")
clear.__doc__ = """``clear(tensor)``: set every element to zero."""
fill = _device_only("fill")
fill.__doc__ = """``fill(tensor, value)``: set every element to ``value``."""
make_fragment_A = _device_only("make_fragment_A")
make_fragment_A.__doc__ = """``make_fragment_A(thr_mma, tCsA)``: a register fragment for the A
operand shaped like the partition ``tCsA`` (MoYe's ``make_fragment_A``)."""
make_fragment_B = _device_only("make_fragment_B")
make_fragment_B.__doc__ = """``make_fragment_B(thr_mma, tCsB)``: a register fragment for the B operand."""
make_fragment_C = _device_only("make_fragment_C")
make_fragment_C.__doc__ = """``make_fragment_C(thr_mma, tCgC)``: a register fragment for the accumulators."""
mark_in_bounds = _device_only("mark_in_bounds")
mark_in_bounds.__doc__ = """``mark_in_bounds(pred, coords, extents)``: ``pred[i] = 1`` where the coordinate
``coords[i]`` of an identity tensor lies inside ``extents`` (``0 <= c < extent`` in every mode:
CuTe's ``elem_less(coords(i), extents)`` for coordinates that ``domain_offset`` may have made
negative), else 0, for every ``i`` of the register tensor ``pred``
(as many elements as ``coords``; the loop is unrolled, so a large fragment's predicates stay
in registers).  The predicates of ``copy_if`` at a tile's edge::

    cute.mark_in_bounds(pC, thr_mma.partition_C(cC), (M, N))
    cute.copy_if(pC, tCrC, tCgC)
"""
