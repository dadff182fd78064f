"""What ``copy`` and ``gemm`` do for given tensors: the atom calls and their static offsets.

Both the GPU lowering (:mod:`codegen.cute.device_atoms`) and the simulator
(:mod:`codegen.cute.sim`) execute these plans, so they agree on every offset and raise the
same errors.  A plan depends only on static facts (layouts, element widths, the atom), not
on the thread: the thread's part of an offset is in the tensors' run-time bases.

>>> from layoutalg import CopyAtom, Layout, make_tiled_copy
>>> tc = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((16, 8), (8, 1)), Layout((1, 8)))
>>> src = TensorInfo("gmem", 16, None, Layout((1, 8), (0, 1)))     # (CPY,CPY_M) -> offset
>>> dst = TensorInfo("smem", 16, None, Layout((8, 1), (1, 0)))
>>> plan = copy_plan(tc, src, dst)
>>> plan.intrinsic, [(s.src, s.dst) for s in plan.steps]
('cp_async_cg_16', [(0, (0,))])
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import layoutalg as la
from layoutalg import Layout, Swizzle

from ..atom_intrinsics import MMA_INTRINSICS
from .dynamic import decode_linear, linear_divisor, linear_str
from .errors import CuteError

__all__ = ["TensorInfo", "CopyStep", "CopyPlan", "copy_plan", "copy_if_plan", "convert_plan", "CONVERSIONS", "MMAStep",
           "MMAPlan", "mma_plan", "mma_order", "MMA_TYPES", "BITS_KINDS"]


#: ``TensorInfo.align`` of a tensor whose run-time offset is 0 (a divisor of every offset).
ALIGN_ANY = 1 << 30


@dataclass(frozen=True)
class TensorInfo:
    """The static facts of a tensor: memory space, element bits, swizzle, layout, and
    ``align``, a divisor of its run-time offset in elements (the thread's part of a
    partition; the pointer itself is taken to be 16-byte aligned, as allocators give)."""

    space: str                      # "gmem", "smem", "rmem" or "coord"
    bits: int
    swizzle: Swizzle | None
    layout: Layout
    dtype: str = ""
    align: int = ALIGN_ANY

    def describe(self):
        sw = f"{self.swizzle} o " if self.swizzle is not None else ""
        return f"{self.space} {self.dtype or f'{self.bits}-bit'} tensor {sw}{self.layout}"


@dataclass(frozen=True)
class CopyStep:
    """One instruction: source offset of the first value, destination offsets."""

    src: int
    dst: tuple


@dataclass(frozen=True)
class CopyPlan:
    """``kind``: "elem" (one value a step), "vec" (one vector load/store of ``vector_bits``),
    "cp_async" or "ldsm"; ``intrinsic`` names the atom of :mod:`codegen.intrinsics`."""

    kind: str
    intrinsic: str
    vector_bits: int
    value_bits: int
    steps: tuple


def _contiguous(offs):
    return all(o == offs[0] + j for j, o in enumerate(offs))


def _vector_ok(op, info, offs, vec, what, atom_name):
    """A vector of ``vec`` values must be contiguous and aligned in ``info`` (CuTe's recast)."""
    if not _contiguous(offs):
        raise CuteError(
            f"{op}: {atom_name} moves {vec} values ({vec * info.bits} bits) as one vector, but the "
            f"{what} {info.describe()} holds them at offsets [{', '.join(linear_str(o) for o in offs)}]: "
            f"not contiguous")
    if linear_divisor(offs[0]) % vec:
        raise CuteError(
            f"{op}: {atom_name} moves {vec}-value vectors, but the {what} {info.describe()} starts "
            f"one at offset {linear_str(offs[0])}, not a multiple of {vec} (misaligned"
            + (f"; a run-time stride must be promised a multiple of {vec} with cute.assume(ld, {vec})"
               if decode_linear(offs[0])[1] else "") + ")")
    if info.align % vec:
        raise CuteError(
            f"{op}: {atom_name} moves {vec}-value vectors, but the {what} {info.describe()} is a "
            f"partition whose run-time offset (the thread's, the tile's) is known to be a multiple of "
            f"only {info.align} elements, not {vec} (misaligned for some thread; the strides of the "
            f"partitioned modes must be multiples of {vec}, a run-time stride promised so with "
            f"cute.assume(ld, {vec}))")
    sw = info.swizzle
    if sw is not None and (1 << sw.base) < vec:
        raise CuteError(
            f"{op}: {atom_name} moves {vec}-value vectors, but the {what}'s swizzle {sw} permutes "
            f"groups of {1 << sw.base} values, which splits the vectors")


@lru_cache(maxsize=4096)
def copy_plan(tiled_copy, src: TensorInfo, dst: TensorInfo) -> CopyPlan:
    """The atom calls of ``copy(tiled_copy, src, dst)`` (``tiled_copy`` None: element-wise).

    Pre: ``src``/``dst`` are a thread's partitions ``(CPY, CPY_M, ...)``.  Raises
    :class:`CuteError` when the tensors' sizes, element widths or vectors do not fit the atom.
    """
    op = "copy"
    n, m = la.size(src.layout), la.size(dst.layout)
    if src.space == "coord" or dst.space == "coord":
        raise CuteError(f"{op}: cannot copy from or to an identity tensor")
    if tiled_copy is None:
        if n != m:
            raise CuteError(f"{op}: source {src.describe()} has {n} values, destination "
                            f"{dst.describe()} has {m}")
        _bits_only(op, src, dst)
        if _number_kind(src.dtype) == "float" and _number_kind(dst.dtype) == "int":
            raise CuteError(
                f"{op}: the source {src.describe()} holds floats and the destination "
                f"{dst.describe()} integers: an element-wise copy would convert the numbers "
                f"(1.5 -> 1, -3.0 -> 65533 in uint16), not give their bits. For bfloat16 or "
                f"float16 bit patterns use convert(src, dst, \"bf16\") or convert(src, dst, \"f16\"); "
                f"to truncate to integers on purpose, convert(src, dst, \"int\")")
        return CopyPlan("elem", "", src.bits, src.bits,
                        tuple(CopyStep(src.layout(i), (dst.layout(i),)) for i in range(n)))
    atom = tiled_copy.atom
    name = f"{atom.name} of {atom.dtype}"
    bits = atom.value_bits
    for what, info in (("source", src), ("destination", dst)):
        if info.bits != bits:
            raise CuteError(f"{op}: {name} moves {bits}-bit values, but the {what} is a "
                            f"{info.describe()} of {info.bits}-bit elements")
    kind = atom.op.kind
    nvs, nvd = la.size(atom.src_layout[1]), la.size(atom.dst_layout[1])
    if n % nvs or m % nvd or n // nvs != m // nvd:
        raise CuteError(
            f"{op}: {name} moves {nvs} source and {nvd} destination values per thread and call, "
            f"but the source {src.describe()} has {n} values and the destination "
            f"{dst.describe()} has {m}")
    calls = n // nvs
    S = [src.layout(i) for i in range(n)]
    D = [dst.layout(i) for i in range(m)]
    steps = []
    if kind == "universal":
        vbits = nvs * bits
        for g in range(calls):
            s, d = S[g * nvs:(g + 1) * nvs], D[g * nvd:(g + 1) * nvd]
            if nvs > 1:
                _vector_ok(op, src, s, nvs, "source", name)
                _vector_ok(op, dst, d, nvd, "destination", name)
                steps.append(CopyStep(s[0], (d[0],)))
            else:
                steps.append(CopyStep(s[0], (d[0],)))
        return CopyPlan("vec" if nvs > 1 else "elem", "", vbits, bits, tuple(steps))
    if kind == "cp_async":
        if src.space != "gmem" or dst.space != "smem":
            raise CuteError(f"{op}: {name} copies global to shared memory, got a source "
                            f"{src.describe()} and a destination {dst.describe()}")
        nbytes = nvs * bits // 8
        cache = "cg" if "CACHEGLOBAL" in atom.name else "ca"
        for g in range(calls):
            s, d = S[g * nvs:(g + 1) * nvs], D[g * nvd:(g + 1) * nvd]
            _vector_ok(op, src, s, nvs, "source", name)
            _vector_ok(op, dst, d, nvd, "destination", name)
            steps.append(CopyStep(s[0], (d[0],)))
        return CopyPlan("cp_async", f"cp_async_{cache}_{nbytes}", nbytes * 8, bits, tuple(steps))
    if kind == "ldsm":
        if src.space != "smem" or dst.space != "rmem":
            raise CuteError(f"{op}: {name} loads shared memory into registers, got a source "
                            f"{src.describe()} and a destination {dst.describe()}")
        num, trans = atom.op.num_matrices, atom.op.transpose
        row = 128 // bits                                  # values of one 16-byte row
        for g in range(calls):
            s, d = S[g * nvs:(g + 1) * nvs], D[g * nvd:(g + 1) * nvd]
            _vector_ok(op, src, s[:row], row, "source", name)
            steps.append(CopyStep(s[0], tuple(d)))
        intr = f"ldmatrix_x{num}{'_trans' if trans else ''}"
        return CopyPlan("ldsm", intr, 32 * num, bits, tuple(steps))
    raise CuteError(f"{op}: copy atom {atom.name} ({kind}) is not supported in kernels yet")


@lru_cache(maxsize=1024)
def copy_if_plan(tiled_copy, pred: TensorInfo, src: TensorInfo, dst: TensorInfo):
    """``(plan, pred_offsets)`` of ``copy_if([tiled_copy,] pred, src, dst)``: the plan of
    ``copy`` and, for each of its calls (one per element without a tiled copy, else one per
    atom call, CuTe's ``pred(i)`` over the modes after the first), the offset of its
    predicate value.  A call whose predicate is zero does not copy; a ``cp.async`` call is
    then issued with a source size of 0, which fills its destination with zeros (CUTLASS's
    ``ZFILL``) and reads nothing, so its source address may lie past the end of the array."""
    op = "copy_if"
    plan = copy_plan(tiled_copy, src, dst)
    if plan.kind == "ldsm":
        raise CuteError(f"{op}: {tiled_copy.atom.name} (ldmatrix) is a warp collective that every lane must "
                        f"call; copy unpredicated and ignore the values you do not need")
    if pred.space == "coord" or not (_number_kind(pred.dtype) == "int" or pred.dtype in ("bool", "boolean")):
        raise CuteError(f"{op}: the predicate must be a tensor of booleans or integers (nonzero: copy), "
                        f"got a {pred.describe()}")
    n, calls = la.size(pred.layout), len(plan.steps)
    if n != calls:
        per = "one per element" if tiled_copy is None else (
            f"one per {tiled_copy.atom.name} call, each of {la.size(src.layout) // calls} source values")
        raise CuteError(f"{op}: the predicate {pred.describe()} has {n} values, but the copy makes {calls} "
                        f"calls ({per}): give one predicate value per call")
    return plan, tuple(pred.layout(i) for i in range(n))


#: Element kinds whose tensors hold their bits in a storage type (``codegen.cute.bfloat16``):
#: dtype name -> the dtype names an element-wise copy moves their bits to and from.
BITS_KINDS = {"bfloat16": ("bfloat16", "uint16", "int16")}


def _bits_only(op, src, dst):
    """An element-wise copy from or to a tensor of a :data:`BITS_KINDS` kind moves bits, so
    the other side must hold the same kind or its storage bits; else a clear error.

    >>> _bits_only("copy", TensorInfo("gmem", 16, None, Layout(4), "bfloat16"),
    ...            TensorInfo("rmem", 32, None, Layout(4), "float32"))
    Traceback (most recent call last):
    ...
    codegen.cute.errors.CuteError: copy: the source gmem bfloat16 tensor 4:1 holds bfloat16 bits, which ...
    """
    for what, info, other in (("source", src, dst), ("destination", dst, src)):
        ok = BITS_KINDS.get(info.dtype)
        if ok is not None and other.dtype not in ok:
            raise CuteError(
                f"{op}: the {what} {info.describe()} holds {info.dtype} bits, which an element-wise copy "
                f"moves only to and from {', '.join(ok)} tensors, got a {other.describe()}; its elements "
                f"read and write as float32 one at a time (t[i], t[i] = x), and convert(src, dst, \"bf16\") "
                f"writes bfloat16 from floats")


# ---- MMA ---------------------------------------------------------------------------------

#: Element type of the register fragments of each operand, per MMA intrinsic.
MMA_TYPES = {
    "mma_m16n8k16_f32f16": ("float16", "float16", "float32"),
    "mma_m16n8k16_f32bf16": ("uint16", "uint16", "float32"),
    "mma_m16n8k8_f32tf32": ("float32", "float32", "float32"),
    "mma_m8n8k4_f64": ("float64", "float64", "float64"),
}


def _number_kind(dtype):
    """"float", "int" (signed or unsigned) or "" for a tensor's dtype name."""
    if dtype.startswith("float"):
        return "float"
    if dtype.startswith(("int", "uint")):
        return "int"
    return ""


#: ``convert(src, dst, to)``: what each ``to`` makes of float values, and the destinations
#: it writes (dtype names).
CONVERSIONS = {
    "bf16": ("bfloat16 bits, rounded to nearest even (NaN stays NaN)", ("uint16", "int16", "bfloat16")),
    "f16": ("float16, rounded to nearest even (the bits, for a 16-bit integer destination)",
            ("float16", "uint16", "int16")),
    "tf32": ("tf32: float32 with the 13 low mantissa bits zero, rounded to nearest with ties away from "
             "zero, as the tf32 MMA atoms take them (the bits, for a 32-bit integer destination)",
             ("float32", "uint32", "int32")),
    "int": ("integers, truncated toward zero as C's cast does (out of range: undefined)",
            ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")),
}


@lru_cache(maxsize=1024)
def convert_plan(src: TensorInfo, dst: TensorInfo, to: str) -> CopyPlan:
    """The element-wise steps of ``convert(src, dst, to)``: float values of ``src`` as the
    number format ``to`` names (:data:`CONVERSIONS`) into ``dst``.  Raises
    :class:`CuteError` for another ``to``, a non-float source, a destination the format
    does not fit, or different sizes."""
    op = "convert"
    if to not in CONVERSIONS:
        raise CuteError(f"{op}: to={to!r} is not one of {', '.join(repr(k) for k in CONVERSIONS)} "
                        f"(a string constant)")
    for what, info in (("source", src), ("destination", dst)):
        if info.space == "coord":
            raise CuteError(f"{op}: the {what} is an identity tensor")
    if src.dtype in BITS_KINDS:
        raise CuteError(f"{op}: the source {src.describe()} holds {src.dtype} bits; convert reads float16, "
                        f"float32 or float64 tensors (a {src.dtype} element reads as float32 one at a time: t[i])")
    if _number_kind(src.dtype) != "float":
        raise CuteError(f"{op}: the source must hold floats, got a {src.describe()}")
    what, dsts = CONVERSIONS[to]
    if dst.dtype not in dsts:
        raise CuteError(f"{op}: to={to!r} ({what}) writes a {' or '.join(dsts)} destination, "
                        f"got a {dst.describe()}")
    n, m = la.size(src.layout), la.size(dst.layout)
    if n != m:
        raise CuteError(f"{op}: source {src.describe()} has {n} values, destination {dst.describe()} has {m}")
    return CopyPlan("convert", to, src.bits, dst.bits,
                    tuple(CopyStep(src.layout(i), (dst.layout(i),)) for i in range(n)))


@dataclass(frozen=True)
class MMAStep:
    """One MMA atom call: the fragment offsets of its A, B and C values."""

    a: tuple
    b: tuple
    c: tuple


@dataclass(frozen=True)
class MMAPlan:
    intrinsic: str
    a_bits: int
    b_bits: int
    steps: tuple


def _mnk_modes(op, what, info, nvals):
    lay = info.layout
    r = la.rank(lay)
    if r not in (2, 3):
        raise CuteError(f"{op}: {what} {info.describe()} must have rank 2 or 3 (MMA, MMA_M[, MMA_K])")
    if la.size(lay[0]) != nvals:
        raise CuteError(f"{op}: the atom takes {nvals} {what} values per thread, but mode 0 of "
                        f"{info.describe()} has {la.size(lay[0])} (partition it with this TiledMMA)")
    return [la.size(lay[i]) for i in range(1, r)] + ([1] if r == 2 else [])


@lru_cache(maxsize=1024)
def mma_plan(tiled_mma, c: TensorInfo, a: TensorInfo, b: TensorInfo) -> MMAPlan:
    """The atom calls of ``gemm(tiled_mma, C, A, B)``: ``C[:, m, n] += A[:, m, k] B[:, n, k]``.

    Pre: ``a``, ``b``, ``c`` are register fragments partitioned by ``tiled_mma``.  Raises
    :class:`CuteError` for another memory space, element type or shape.
    """
    op = "gemm"
    atom = tiled_mma.atom
    if atom.name == "UniversalFMA":             # a scalar fused multiply-add on CUDA cores
        intr = "fma"
        if c.dtype not in ("float32", "float64"):
            raise CuteError(f"{op}: UniversalFMA multiplies float32 or float64 fragments, got a C "
                            f"{c.describe()}")
        want = (c.dtype,) * 3
    else:
        intr = MMA_INTRINSICS.get(atom.name)
        if intr is None:
            raise CuteError(f"{op}: MMA atom {atom.name} has no intrinsic; supported: UniversalFMA, "
                            f"{', '.join(sorted(MMA_INTRINSICS))}")
        want = MMA_TYPES[intr]
    for what, info, dt in (("A", a, want[0]), ("B", b, want[1]), ("C", c, want[2])):
        if info.space != "rmem":
            raise CuteError(f"{op}: {what} must be a register fragment (make_fragment_{what} or "
                            f"partition_fragment_{what}), got a {info.describe()}")
        if info.dtype != dt:
            raise CuteError(f"{op}: {atom.name} needs {dt} {what} fragments, got a {info.describe()}")
    na, nb, nc = (la.size(atom.layout_a[1]), la.size(atom.layout_b[1]), la.size(atom.layout_c[1]))
    M, K = _mnk_modes(op, "A", a, na)
    N, Kb = _mnk_modes(op, "B", b, nb)
    if K != Kb:
        raise CuteError(f"{op}: A has {K} k-blocks ({a.layout}) but B has {Kb} ({b.layout})")
    cl = c.layout
    if la.rank(cl) != 3 or la.size(cl[0]) != nc or (la.size(cl[1]), la.size(cl[2])) != (M, N):
        raise CuteError(f"{op}: C {c.describe()} must be (MMA={nc}, MMA_M={M}, MMA_N={N})")

    def offs(info, v, i, j, rank3):
        return tuple(info.layout((x, i, j) if rank3 else (x, i)) for x in range(v))

    steps = []
    order = mma_order(M, N, na * a.bits // 8, nb * b.bits // 8)
    for k in range(K):
        for m, n in order:
            steps.append(MMAStep(offs(a, na, m, k, la.rank(a.layout) == 3),
                                 offs(b, nb, n, k, la.rank(b.layout) == 3),
                                 tuple(cl((x, m, n)) for x in range(nc))))
    return MMAPlan(intr, a.bits, b.bits, tuple(steps))


def mma_order(M, N, a_bytes, b_bytes):
    """The ``(m, n)`` order of the atoms of one k-block, CuTe's (``cute/algorithm/gemm.hpp``,
    for register reuse): by the bytes of an atom's A and B values a thread holds,
    8 and 8 (f64) or 8 and 4: row-major serpentine (A outer); 4 and 4 (f32 on CUDA cores):
    row-major serpentine kinked over pairs of rows; otherwise (f16, bf16, tf32
    ``mma.sync``: 16 and 8): column-major serpentine (B outer, M back and forth).

    >>> mma_order(2, 3, 16, 8)
    [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (1, 2)]
    >>> mma_order(2, 3, 8, 8)
    [(0, 0), (0, 1), (0, 2), (1, 2), (1, 1), (1, 0)]
    >>> mma_order(3, 2, 4, 4)
    [(0, 0), (1, 0), (0, 1), (1, 1), (2, 1), (2, 0)]
    """
    if (a_bytes, b_bytes) in ((8, 8), (8, 4)):
        return [(m, n if m % 2 == 0 else N - 1 - n) for m in range(M) for n in range(N)]
    if (a_bytes, b_bytes) == (4, 4):
        out = []
        for m in range(0, M, 2):
            for n in range(N):
                ns = N - 1 - n if m & 2 else n
                out += [(m, ns)] + ([(m + 1, ns)] if m + 1 < M else [])
        return out
    return [(m if n % 2 == 0 else M - 1 - m, n) for n in range(N) for m in range(M)]
