"""Inline-PTX atoms for numba.cuda kernels: tensor-core MMA, ldmatrix, cp.async.

Every public name here is a numba ``@intrinsic`` that lowers to one (or a few)
PTX instructions through ``llvmlite.ir.InlineAsm``.  They are only callable from
inside ``@cuda.jit`` code.  ``codegen.intrinsics.sim`` provides pure-Python twins with
the same names and call signatures for the CUDA simulator; generated kernels
import from ``codegen.intrinsics``, which picks one of the two.

Conventions shared by all atoms
-------------------------------
* Fragment registers follow the PTX ISA naming ("Matrix Fragments for mma.m16n8k16"
  and friends): in a warp, ``lane = threadIdx & 31``, ``group = lane >> 2`` and
  ``tig = lane & 3`` (thread id in group).  Each MMA docstring spells out which
  matrix element every register holds.
* A 32-bit register holding two 16-bit values keeps the element with the lower
  column (or lower k) index in bits 0-15 ("lo") and the other in bits 16-31 ("hi").
* Shared-memory addresses are 32-bit offsets in the shared state space, as
  returned by :func:`smem_addr`; global addresses are 64-bit integers as returned
  by :func:`gmem_addr`.  Both helpers take a **byte** offset, so the base can be
  computed once and byte offsets produced by the layout algebra added to it.
* Atoms that touch memory (ldmatrix, cp.async*, vector loads/stores) are emitted
  as side-effecting asm with a ``~{memory}`` clobber so that LLVM never moves or
  merges them across ``cuda.syncthreads()`` or each other.  MMA and conversions
  are pure.
* Integer operands may be of any integer type: they are truncated or extended to
  the register width (32 bits for registers and shared addresses, 64 bits for
  global addresses).  Wrong operand kinds raise ``TypeError`` at compile time,
  naming the atom and the operand.  The address helpers return *signed* ints
  (int32 / int64) on purpose: numba types ``uint64 + int64`` as float64, so
  keep address arithmetic signed.

Available on sm_80 and newer (cc=(8, 0) and (9, 0) are tested).
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import types
from numba.cuda.core.errors import TypingError
from numba.cuda.extending import intrinsic

from .names import ATOM_NAMES

__all__ = list(ATOM_NAMES)

_I16 = ir.IntType(16)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_F16 = ir.HalfType()
_F32 = ir.FloatType()
_F64 = ir.DoubleType()
_VOID = ir.VoidType()
_MEM = "~{memory}"


# ---------------------------------------------------------------------------
# typing helpers
# ---------------------------------------------------------------------------


def _want_int(op: str, name: str, ty) -> None:
    if not isinstance(ty, types.Integer) or isinstance(ty, types.Boolean):
        raise TypeError(f"{op}: operand {name!r} must be an integer, got {ty}")


def _want_float(op: str, name: str, ty) -> None:
    if not isinstance(ty, (types.Float, types.Integer)):
        raise TypeError(f"{op}: operand {name!r} must be a number, got {ty}")


def _want_half(op: str, name: str, ty) -> None:
    if ty != types.float16:
        raise TypeError(f"{op}: operand {name!r} must be float16, got {ty}")


def _want_b32(op: str, name: str, ty) -> None:
    """A .b32 register operand: any integer, or float32 (taken by its bits)."""
    if ty == types.float32:
        return
    if not isinstance(ty, types.Integer):
        raise TypeError(
            f"{op}: operand {name!r} must be an integer (32-bit pattern) or "
            f"float32, got {ty}"
        )


def _want_array(op: str, name: str, ty) -> None:
    if not isinstance(ty, types.Array):
        raise TypeError(f"{op}: operand {name!r} must be an array, got {ty}")


# ---------------------------------------------------------------------------
# lowering helpers
# ---------------------------------------------------------------------------


def _as_i32(context, builder, val, ty):
    """Lower an integer (any width) or float32 (by bits) operand to i32."""
    if ty == types.float32:
        return builder.bitcast(val, _I32)
    return context.cast(builder, val, ty, types.uint32)


def _as_i64(context, builder, val, ty):
    return context.cast(builder, val, ty, types.int64)


def _as_f32(context, builder, val, ty):
    return context.cast(builder, val, ty, types.float32)


def _as_f64(context, builder, val, ty):
    return context.cast(builder, val, ty, types.float64)


def _asm(builder, ret, argtys, text, constraints, args, side_effect):
    fnty = ir.FunctionType(ret, argtys)
    return builder.asm(fnty, text, constraints, args, side_effect)


def _tuple_from(context, builder, rettype, res, n):
    """Turn an asm result (scalar for n == 1, literal struct otherwise) into a tuple."""
    if n == 1:
        vals = [res]
    else:
        vals = [builder.extract_value(res, i) for i in range(n)]
    return context.make_tuple(builder, rettype, vals)


def _regs(prefix_start: int, n: int) -> str:
    return "{" + ",".join(f"${prefix_start + i}" for i in range(n)) + "}"


# ---------------------------------------------------------------------------
# mma.sync
# ---------------------------------------------------------------------------

_MMA16816_PTX = (
    "mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32 "
    "{{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, {{$8,$9}}, {{$10,$11,$12,$13}};"
)
_MMA1688_TF32_PTX = (
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
    "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};"
)
_MMA_4A2B4C = "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3"


def _mma_4a2b4c(op, ptx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    names = ("a0", "a1", "a2", "a3", "b0", "b1", "c0", "c1", "c2", "c3")
    argtys = (a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)
    for name, ty in zip(names[:6], argtys[:6]):
        _want_b32(op, name, ty)
    for name, ty in zip(names[6:], argtys[6:]):
        _want_float(op, name, ty)
    sig = types.UniTuple(types.float32, 4)(*argtys)

    def codegen(context, builder, sig, args):
        ins = [_as_i32(context, builder, v, t) for v, t in zip(args[:6], sig.args[:6])]
        ins += [_as_f32(context, builder, v, t) for v, t in zip(args[6:], sig.args[6:])]
        res = _asm(
            builder,
            ir.LiteralStructType([_F32] * 4),
            [_I32] * 6 + [_F32] * 4,
            ptx,
            _MMA_4A2B4C,
            ins,
            False,
        )
        return _tuple_from(context, builder, sig.return_type, res, 4)

    return sig, codegen


@intrinsic
def mma_m16n8k16_f32f16(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """D = A @ B + C with ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``.

    Warp-collective (all 32 lanes, converged).  A is 16x16 (row-major, M x K),
    B is 16x8 (K x N, "col"), C and D are 16x8 float32.  With ``g = lane >> 2``
    and ``t = lane & 3``:

    * ``a0..a3`` (b32, each two f16, lo = lower k):
      a0 = A[g, 2t:2t+2], a1 = A[g+8, 2t:2t+2], a2 = A[g, 2t+8:2t+10],
      a3 = A[g+8, 2t+8:2t+10].
    * ``b0, b1`` (b32, two f16, lo = lower k): b0 = B[2t:2t+2, g], b1 = B[2t+8:2t+10, g].
    * ``c0..c3`` (float32): c0 = C[g, 2t], c1 = C[g, 2t+1], c2 = C[g+8, 2t],
      c3 = C[g+8, 2t+1].

    Returns ``(d0, d1, d2, d3)`` float32 in the layout of ``c0..c3``.  The A/B
    registers may be any integer type (their low 32 bits are used).
    """
    return _mma_4a2b4c(
        "mma_m16n8k16_f32f16", _MMA16816_PTX.format(ab="f16"),
        a0, a1, a2, a3, b0, b1, c0, c1, c2, c3,
    )


@intrinsic
def mma_m16n8k16_f32bf16(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """D = A @ B + C with ``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32``.

    Same fragment layout as :func:`mma_m16n8k16_f32f16`, with each b32 A/B register
    holding two bfloat16 bit patterns (lo = lower k).  Build them with
    :func:`pack_b16x2` from uint16 bits or :func:`cvt_bf16x2_f32` from float32.
    Returns ``(d0, d1, d2, d3)`` float32.
    """
    return _mma_4a2b4c(
        "mma_m16n8k16_f32bf16", _MMA16816_PTX.format(ab="bf16"),
        a0, a1, a2, a3, b0, b1, c0, c1, c2, c3,
    )


@intrinsic
def mma_m16n8k8_f32tf32(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """D = A @ B + C with ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``.

    Warp-collective.  A is 16x8 (M x K), B is 8x8 (K x N), C/D 16x8 float32.
    With ``g = lane >> 2``, ``t = lane & 3``, each A/B register holds one tf32:

    * a0 = A[g, t], a1 = A[g+8, t], a2 = A[g, t+4], a3 = A[g+8, t+4].
    * b0 = B[t, g], b1 = B[t+4, g].
    * c0..c3 as for :func:`mma_m16n8k16_f32f16`.

    A/B operands are .b32 registers: pass the bits from :func:`cvt_tf32_f32`
    (round to nearest, ties away), or float32 values directly (their bits are
    used; the tensor core ignores the 13 low mantissa bits).
    Returns ``(d0, d1, d2, d3)`` float32.
    """
    return _mma_4a2b4c(
        "mma_m16n8k8_f32tf32", _MMA1688_TF32_PTX,
        a0, a1, a2, a3, b0, b1, c0, c1, c2, c3,
    )


@intrinsic
def mma_m8n8k4_f64(typingctx, a0, b0, c0, c1):
    """D = A @ B + C with ``mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64``.

    Warp-collective.  A is 8x4, B is 4x8, C/D 8x8 float64.  With
    ``g = lane >> 2``, ``t = lane & 3``: a0 = A[g, t], b0 = B[t, g],
    c0 = C[g, 2t], c1 = C[g, 2t+1].  Returns ``(d0, d1)`` float64.
    """
    op = "mma_m8n8k4_f64"
    for name, ty in (("a0", a0), ("b0", b0), ("c0", c0), ("c1", c1)):
        _want_float(op, name, ty)
    sig = types.UniTuple(types.float64, 2)(a0, b0, c0, c1)

    def codegen(context, builder, sig, args):
        ins = [_as_f64(context, builder, v, t) for v, t in zip(args, sig.args)]
        res = _asm(
            builder,
            ir.LiteralStructType([_F64] * 2),
            [_F64] * 4,
            "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 "
            "{$0,$1}, {$2}, {$3}, {$4,$5};",
            "=d,=d,d,d,0,1",
            ins,
            False,
        )
        return _tuple_from(context, builder, sig.return_type, res, 2)

    return sig, codegen


# ---------------------------------------------------------------------------
# fragment forms: the same instructions, reading and writing register arrays
# ---------------------------------------------------------------------------
#
# A kernel keeps its fragments and accumulators in ``cuda.local.array``s, which NVVM
# promotes to registers once the loops around them are unrolled.  The fragment forms take
# those arrays and the first word of each operand, so that one MMA or one ldmatrix is one
# call in the kernel's source instead of a statement that indexes ten array elements:
# numba's front end types and lowers every indexing separately, and its cost grows with
# the number of statements.  The PTX after NVVM is the same.


def _want_words(op: str, name: str, ty, kinds) -> None:
    if not isinstance(ty, types.Array) or ty.ndim != 1 or not isinstance(ty.dtype, kinds):
        raise TypeError(f"{op}: operand {name!r} must be a 1-D register array "
                        f"(cuda.local.array) of {kinds if isinstance(kinds, type) else kinds[0]}, got {ty}")


def _word_ptrs(context, builder, aryty, ary, idxty, idx, n):
    """Pointers to words ``idx .. idx + n - 1`` of a 1-D array."""
    from numba.cuda import cgutils

    a = context.make_array(aryty)(context, builder, ary)
    i = context.cast(builder, idx, idxty, types.intp)
    return [cgutils.get_item_pointer(context, builder, aryty, a, [builder.add(i, ir.Constant(i.type, k))])
            for k in range(n)]


def _mma_frag(op, ptx, na, nb, nc, reg, acc_ty, acc, c, a, fa, b, fb):
    """``acc[c:c+nc] = mma(a[fa:fa+na], b[fb:fb+nb], acc[c:c+nc])`` through the asm ``ptx``."""
    _want_words(op, "acc", acc, types.Float)
    _want_words(op, "a", a, (types.Integer, types.Float))
    _want_words(op, "b", b, (types.Integer, types.Float))
    for name, ty in (("c", c), ("fa", fa), ("fb", fb)):
        _want_int(op, name, ty)
    if acc.dtype != acc_ty:
        raise TypeError(f"{op}: operand 'acc' must hold {acc_ty}, got {acc}")
    sig = types.void(acc, c, a, fa, b, fb)
    lty = _F64 if reg == "d" else _I32
    cty = _F64 if acc_ty == types.float64 else _F32
    cons = ",".join([f"={reg if reg == 'd' else 'f'}"] * nc + [reg] * (na + nb) + [str(i) for i in range(nc)])

    def codegen(context, builder, sig, args):
        tacc, tc, ta, tfa, tb, tfb = sig.args
        vacc, vc, va, vfa, vb, vfb = args
        cp = _word_ptrs(context, builder, tacc, vacc, tc, vc, nc)
        ins = []
        for ty, ptrs in ((ta, _word_ptrs(context, builder, ta, va, tfa, vfa, na)),
                         (tb, _word_ptrs(context, builder, tb, vb, tfb, vfb, nb))):
            for p in ptrs:
                v = builder.load(p)
                ins.append(_as_f64(context, builder, v, ty.dtype) if reg == "d" else _as_i32(context, builder, v, ty.dtype))
        ins += [builder.load(p) for p in cp]
        res = _asm(builder, ir.LiteralStructType([cty] * nc), [lty] * (na + nb) + [cty] * nc, ptx, cons, ins, False)
        for k, p in enumerate(cp):
            builder.store(builder.extract_value(res, k), p)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def mma_m16n8k16_f32f16_frag(typingctx, acc, c, a, fa, b, fb):
    """:func:`mma_m16n8k16_f32f16` on register arrays: ``acc[c:c+4] = A @ B + acc[c:c+4]``
    with A in ``a[fa:fa+4]`` and B in ``b[fb:fb+2]`` (b32 words, two f16 each).

    ``acc``: a 1-D float32 ``cuda.local.array``; ``a``, ``b``: 1-D arrays of 32-bit words;
    ``c``, ``fa``, ``fb``: integers (constants once the loops around the call are unrolled).
    """
    return _mma_frag("mma_m16n8k16_f32f16_frag", _MMA16816_PTX.format(ab="f16"), 4, 2, 4, "r",
                     types.float32, acc, c, a, fa, b, fb)


@intrinsic
def mma_m16n8k16_f32bf16_frag(typingctx, acc, c, a, fa, b, fb):
    """:func:`mma_m16n8k16_f32bf16` on register arrays, as :func:`mma_m16n8k16_f32f16_frag`."""
    return _mma_frag("mma_m16n8k16_f32bf16_frag", _MMA16816_PTX.format(ab="bf16"), 4, 2, 4, "r",
                     types.float32, acc, c, a, fa, b, fb)


@intrinsic
def mma_m16n8k8_f32tf32_frag(typingctx, acc, c, a, fa, b, fb):
    """:func:`mma_m16n8k8_f32tf32` on register arrays: A in ``a[fa:fa+4]``, B in
    ``b[fb:fb+2]`` (tf32 bit patterns, or float32 values by their bits), ``acc[c:c+4]``."""
    return _mma_frag("mma_m16n8k8_f32tf32_frag", _MMA1688_TF32_PTX, 4, 2, 4, "r",
                     types.float32, acc, c, a, fa, b, fb)


@intrinsic
def mma_m8n8k4_f64_frag(typingctx, acc, c, a, fa, b, fb):
    """:func:`mma_m8n8k4_f64` on register arrays: ``acc[c:c+2] = a[fa] * b[fb] + acc[c:c+2]``
    (the 8x4 by 4x8 product of the warp), all float64."""
    return _mma_frag("mma_m8n8k4_f64_frag", "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 "
                     "{$0,$1}, {$2}, {$3}, {$4,$5};", 1, 1, 2, "d", types.float64, acc, c, a, fa, b, fb)


# ---------------------------------------------------------------------------
# ldmatrix
# ---------------------------------------------------------------------------


def _ldmatrix(op, n, trans, addr):
    _want_int(op, "addr", addr)
    sig = types.UniTuple(types.uint32, n)(addr)
    text = (
        f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16 "
        f"{_regs(0, n)}, [${n}];"
    )
    constraints = ",".join(["=r"] * n + ["r", _MEM])

    def codegen(context, builder, sig, args):
        a = _as_i32(context, builder, args[0], sig.args[0])
        ret = _I32 if n == 1 else ir.LiteralStructType([_I32] * n)
        res = _asm(builder, ret, [_I32], text, constraints, [a], True)
        return _tuple_from(context, builder, sig.return_type, res, n)

    return sig, codegen


_LDSM_DOC = """Warp-collective ``ldmatrix.sync.aligned.m8n8.x{n}{t}.shared.b16``.

    Loads {n} 8x8 matrices of 16-bit elements from shared memory.  ``addr`` is
    this lane's 32-bit shared address (see :func:`smem_addr`) of one 16-byte row:
    lanes 8i..8i+7 give rows 0..7 of matrix i (i < {n}); other lanes' addresses
    are ignored.  Each row address must be 16-byte aligned.

    Returns a tuple of {n} uint32, register r_i holding matrix i.  With
    ``g = lane >> 2`` and ``t = lane & 3``: {layout}
    """
_LDSM_N = "r_i = M_i[g, 2t] (lo) | M_i[g, 2t+1] (hi), the mma A/B fragment layout."
_LDSM_T = "r_i = M_i[2t, g] (lo) | M_i[2t+1, g] (hi): the transposed matrix."


@intrinsic
def ldmatrix_x1(typingctx, addr):
    return _ldmatrix("ldmatrix_x1", 1, False, addr)


@intrinsic
def ldmatrix_x2(typingctx, addr):
    return _ldmatrix("ldmatrix_x2", 2, False, addr)


@intrinsic
def ldmatrix_x4(typingctx, addr):
    return _ldmatrix("ldmatrix_x4", 4, False, addr)


@intrinsic
def ldmatrix_x1_trans(typingctx, addr):
    return _ldmatrix("ldmatrix_x1_trans", 1, True, addr)


@intrinsic
def ldmatrix_x2_trans(typingctx, addr):
    return _ldmatrix("ldmatrix_x2_trans", 2, True, addr)


@intrinsic
def ldmatrix_x4_trans(typingctx, addr):
    return _ldmatrix("ldmatrix_x4_trans", 4, True, addr)


for _n, _fn in ((1, ldmatrix_x1), (2, ldmatrix_x2), (4, ldmatrix_x4)):
    _fn.__doc__ = _LDSM_DOC.format(n=_n, t="", layout=_LDSM_N)
for _n, _fn in ((1, ldmatrix_x1_trans), (2, ldmatrix_x2_trans), (4, ldmatrix_x4_trans)):
    _fn.__doc__ = _LDSM_DOC.format(n=_n, t=".trans", layout=_LDSM_T)
del _n, _fn


def _ldmatrix_frag(op, n, trans, frag, f, addr):
    _want_words(op, "frag", frag, types.Integer)
    _want_int(op, "f", f)
    _want_int(op, "addr", addr)
    sig = types.void(frag, f, addr)
    text = (
        f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16 "
        f"{_regs(0, n)}, [${n}];"
    )
    constraints = ",".join(["=r"] * n + ["r", _MEM])

    def codegen(context, builder, sig, args):
        tfrag, tf, taddr = sig.args
        a = _as_i32(context, builder, args[2], taddr)
        res = _asm(builder, ir.LiteralStructType([_I32] * n), [_I32], text, constraints, [a], True)
        for k, p in enumerate(_word_ptrs(context, builder, tfrag, args[0], tf, args[1], n)):
            builder.store(context.cast(builder, builder.extract_value(res, k), types.uint32, tfrag.dtype), p)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def ldmatrix_x4_frag(typingctx, frag, f, addr):
    """:func:`ldmatrix_x4` into a register array: ``frag[f:f+4] = ldmatrix_x4(addr)``.

    ``frag``: a 1-D integer ``cuda.local.array`` (the words keep their 32 bits)."""
    return _ldmatrix_frag("ldmatrix_x4_frag", 4, False, frag, f, addr)


@intrinsic
def ldmatrix_x4_trans_frag(typingctx, frag, f, addr):
    """:func:`ldmatrix_x4_trans` into a register array: ``frag[f:f+4] = ldmatrix_x4_trans(addr)``."""
    return _ldmatrix_frag("ldmatrix_x4_trans_frag", 4, True, frag, f, addr)


# ---------------------------------------------------------------------------
# stmatrix (sm_90)
# ---------------------------------------------------------------------------


def _stmatrix(op, n, trans, addr, regs):
    _want_int(op, "addr", addr)
    for i, r in enumerate(regs):
        _want_b32(op, f"r{i}", r)
    sig = types.void(addr, *regs)
    text = (f"stmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16 "
            f"[$0], {{{', '.join(f'${i + 1}' for i in range(n))}}};")
    constraints = ",".join(["r"] * (n + 1) + [_MEM])

    def codegen(context, builder, sig, args):
        vals = [_as_i32(context, builder, args[0], sig.args[0])]
        vals += [_as_i32(context, builder, v, t) for v, t in zip(args[1:], sig.args[1:])]
        _asm(builder, ir.VoidType(), [_I32] * (n + 1), text, constraints, vals, True)
        return context.get_dummy_value()

    return sig, codegen


_STSM_DOC = """Warp-collective ``stmatrix.sync.aligned.m8n8.x{n}{t}.shared.b16`` (sm_90).

    Stores {n} 8x8 matrices of 16-bit elements to shared memory: the inverse of
    :func:`ldmatrix_x{n}{u}`. ``addr`` is this lane's 32-bit shared address of one 16-byte
    row (lanes 8i..8i+7 give rows 0..7 of matrix i; other lanes' addresses are ignored);
    ``r0..`` are the lane's registers, register r_i holding its part of matrix i as
    :func:`ldmatrix_x{n}{u}` returns it.
    """


@intrinsic
def stmatrix_x1(typingctx, addr, r0):
    return _stmatrix("stmatrix_x1", 1, False, addr, (r0,))


@intrinsic
def stmatrix_x2(typingctx, addr, r0, r1):
    return _stmatrix("stmatrix_x2", 2, False, addr, (r0, r1))


@intrinsic
def stmatrix_x4(typingctx, addr, r0, r1, r2, r3):
    return _stmatrix("stmatrix_x4", 4, False, addr, (r0, r1, r2, r3))


@intrinsic
def stmatrix_x1_trans(typingctx, addr, r0):
    return _stmatrix("stmatrix_x1_trans", 1, True, addr, (r0,))


@intrinsic
def stmatrix_x2_trans(typingctx, addr, r0, r1):
    return _stmatrix("stmatrix_x2_trans", 2, True, addr, (r0, r1))


@intrinsic
def stmatrix_x4_trans(typingctx, addr, r0, r1, r2, r3):
    return _stmatrix("stmatrix_x4_trans", 4, True, addr, (r0, r1, r2, r3))


for _n, _t, _fn in ((1, False, stmatrix_x1), (2, False, stmatrix_x2), (4, False, stmatrix_x4),
                    (1, True, stmatrix_x1_trans), (2, True, stmatrix_x2_trans), (4, True, stmatrix_x4_trans)):
    _fn.__doc__ = _STSM_DOC.format(n=_n, t=".trans" if _t else "", u="_trans" if _t else "")
del _n, _t, _fn


# ---------------------------------------------------------------------------
# cp.async
# ---------------------------------------------------------------------------


def _cp_async(op, cache, size, dst, src, src_size):
    _want_int(op, "dst", dst)
    _want_int(op, "src", src)
    _want_int(op, "src_size", src_size)
    sig = types.void(dst, src, src_size)
    text = f"cp.async.{cache}.shared.global [$0], [$1], {size}, $2;"

    def codegen(context, builder, sig, args):
        d = _as_i32(context, builder, args[0], sig.args[0])
        s = _as_i64(context, builder, args[1], sig.args[1])
        n = _as_i32(context, builder, args[2], sig.args[2])
        _asm(builder, _VOID, [_I32, _I64, _I32], text, "r,l,r," + _MEM, [d, s, n], True)
        return context.get_dummy_value()

    return sig, codegen


_CP_DOC = """Asynchronous copy ``cp.async.{cache}.shared.global [dst], [src], {size}, src_size``.

    ``dst``: 32-bit shared address (:func:`smem_addr`), {size}-byte aligned.
    ``src``: 64-bit global address (:func:`gmem_addr`), {size}-byte aligned.
    ``src_size``: bytes read from ``src`` (0..{size}); the rest of the {size}
    destination bytes are zero-filled, so ``src_size = 0`` is a predicated-off
    copy that writes zeros.  The copy joins the current group; it is visible
    to this thread after :func:`cp_async_commit` and a covering
    :func:`cp_async_wait_group` / :func:`cp_async_wait_all`, and to the block
    after a following ``cuda.syncthreads()``.  {extra}
    """


@intrinsic
def cp_async_ca_4(typingctx, dst, src, src_size):
    return _cp_async("cp_async_ca_4", "ca", 4, dst, src, src_size)


@intrinsic
def cp_async_ca_8(typingctx, dst, src, src_size):
    return _cp_async("cp_async_ca_8", "ca", 8, dst, src, src_size)


@intrinsic
def cp_async_ca_16(typingctx, dst, src, src_size):
    return _cp_async("cp_async_ca_16", "ca", 16, dst, src, src_size)


@intrinsic
def cp_async_cg_16(typingctx, dst, src, src_size):
    return _cp_async("cp_async_cg_16", "cg", 16, dst, src, src_size)


for _size, _cache, _fn in (
    (4, "ca", cp_async_ca_4),
    (8, "ca", cp_async_ca_8),
    (16, "ca", cp_async_ca_16),
    (16, "cg", cp_async_cg_16),
):
    _fn.__doc__ = _CP_DOC.format(
        cache=_cache,
        size=_size,
        extra=(
            "Caches in L1 and L2 (.ca)."
            if _cache == "ca"
            else "Bypasses L1, caches in L2 (.cg, 16 bytes only)."
        ),
    )
del _size, _cache, _fn


@intrinsic
def cp_async_commit(typingctx):
    """``cp.async.commit_group``: close the current group of cp.async copies."""
    sig = types.void()

    def codegen(context, builder, sig, args):
        _asm(builder, _VOID, [], "cp.async.commit_group;", _MEM, [], True)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def cp_async_wait_group(typingctx, n):
    """``cp.async.wait_group n``: wait until at most ``n`` most recent groups are pending.

    ``n`` must be a compile-time integer constant (a literal or a global
    constant), since it is an immediate of the instruction.
    """
    if not isinstance(n, types.IntegerLiteral):
        # numba types the call first with non-literal types and retries with
        # literal ones; a NumbaError records this attempt's message and lets the
        # literal attempt proceed (a plain exception would abort typing).
        raise TypingError(
            f"cp_async_wait_group: n must be a compile-time integer constant, got {n}"
        )
    count = n.literal_value
    if count < 0:
        raise ValueError(f"cp_async_wait_group: n must be >= 0, got {count}")
    sig = types.void(n)
    text = f"cp.async.wait_group {count};"

    def codegen(context, builder, sig, args):
        _asm(builder, _VOID, [], text, _MEM, [], True)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def cp_async_wait_all(typingctx):
    """``cp.async.wait_all``: commit the pending copies and wait for every group."""
    sig = types.void()

    def codegen(context, builder, sig, args):
        _asm(builder, _VOID, [], "cp.async.wait_all;", _MEM, [], True)
        return context.get_dummy_value()

    return sig, codegen


# ---------------------------------------------------------------------------
# addresses
# ---------------------------------------------------------------------------


@intrinsic
def smem_addr(typingctx, arr, byte_offset):
    """32-bit shared-state-space address of ``arr``'s first element plus ``byte_offset``.

    ``arr`` must be a shared-memory array (``cuda.shared.array``, dynamic or
    static); the result is meaningless for any other array.  ``byte_offset`` is
    in **bytes** (not elements) and may be a run-time integer.  The data
    pointer is cast to address space 3 and converted to i32, which NVVM folds to
    the symbol's address.  Returns int32 (signed, so that adding int64 offsets
    stays integer).
    """
    op = "smem_addr"
    _want_array(op, "arr", arr)
    _want_int(op, "byte_offset", byte_offset)
    sig = types.int32(arr, byte_offset)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = ary.data
        sptr = builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 3))
        base = builder.ptrtoint(sptr, _I32)
        off = _as_i32(context, builder, args[1], sig.args[1])
        return builder.add(base, off)

    return sig, codegen


#: The kernel module's one symbol for its dynamic shared memory (``codegen.cute`` tensors
#: from ``dynamic_shared_tensor`` use it too).
DYNAMIC_SMEM_SYMBOL = "_cute_dynamic_smem"


def dynamic_smem_global(builder):
    """The module's extern shared array at the start of the kernel's dynamic shared memory."""
    from numba.cuda import cgutils

    gv = builder.module.globals.get(DYNAMIC_SMEM_SYMBOL)
    if gv is None:
        arrty = ir.ArrayType(ir.IntType(8), 0)
        gv = cgutils.add_global_variable(builder.module, arrty, DYNAMIC_SMEM_SYMBOL, 3)
        gv.linkage = "external"
        gv.align = 128
    return gv


@intrinsic
def dynamic_smem_addr(typingctx):
    """32-bit shared address of the kernel's dynamic shared memory (the launch's 4th
    parameter), as one symbol per module: repeated calls fold to one constant address."""
    sig = types.int32()

    def codegen(context, builder, sig, args):
        return builder.ptrtoint(dynamic_smem_global(builder), _I32)

    return sig, codegen


@intrinsic
def gmem_addr(typingctx, arr, byte_offset):
    """64-bit global address of ``arr``'s first element plus ``byte_offset`` bytes.

    ``arr`` must live in global memory (a kernel array argument).  The data
    pointer is cast to the global address space (``cvta.to.global``) and
    returned as int64.  ``byte_offset`` is in **bytes**; strides are not
    applied, the caller computes the byte offset of the element it wants.
    """
    op = "gmem_addr"
    _want_array(op, "arr", arr)
    _want_int(op, "byte_offset", byte_offset)
    sig = types.int64(arr, byte_offset)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = ary.data
        gptr = builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 1))
        base = builder.ptrtoint(gptr, _I64)
        off = _as_i64(context, builder, args[1], sig.args[1])
        return builder.add(base, off)

    return sig, codegen


# ---------------------------------------------------------------------------
# packing and conversion
# ---------------------------------------------------------------------------


def _half_bits(builder, val):
    """i16 bit pattern of a lowered float16 (numba keeps float16 as i16)."""
    if val.type == _I16:
        return val
    return builder.bitcast(val, _I16)


def _split_halves(context, builder, val, ty):
    """(lo, hi) float16 values (numba's i16 representation) of a b32 operand."""
    v = _as_i32(context, builder, val, ty)
    lo = builder.trunc(v, _I16)
    hi = builder.trunc(builder.lshr(v, ir.Constant(_I32, 16)), _I16)
    if context.get_value_type(types.float16) != _I16:
        lo = builder.bitcast(lo, _F16)
        hi = builder.bitcast(hi, _F16)
    return lo, hi


@intrinsic
def pack_f16x2(typingctx, lo, hi):
    """Pack two float16 into a b32 register: ``lo`` in bits 0-15, ``hi`` in 16-31.

    Returns uint32.  Use it to build f16 MMA A/B fragments from float16 values.
    """
    _want_half("pack_f16x2", "lo", lo)
    _want_half("pack_f16x2", "hi", hi)
    sig = types.uint32(lo, hi)

    def codegen(context, builder, sig, args):
        # numba's data model stores float16 values as i16 bit patterns.
        l = builder.zext(_half_bits(builder, args[0]), _I32)
        h = builder.zext(_half_bits(builder, args[1]), _I32)
        return builder.or_(l, builder.shl(h, ir.Constant(_I32, 16)))

    return sig, codegen


@intrinsic
def pack_b16x2(typingctx, lo, hi):
    """Pack two 16-bit patterns (integers, e.g. bfloat16 bits) into a b32.

    ``lo`` goes to bits 0-15 and ``hi`` to bits 16-31; only the low 16 bits of
    each operand are used.  Returns uint32.
    """
    _want_int("pack_b16x2", "lo", lo)
    _want_int("pack_b16x2", "hi", hi)
    sig = types.uint32(lo, hi)

    def codegen(context, builder, sig, args):
        mask = ir.Constant(_I32, 0xFFFF)
        l = builder.and_(_as_i32(context, builder, args[0], sig.args[0]), mask)
        h = builder.and_(_as_i32(context, builder, args[1], sig.args[1]), mask)
        return builder.or_(l, builder.shl(h, ir.Constant(_I32, 16)))

    return sig, codegen


@intrinsic
def unpack_f16x2(typingctx, x):
    """Split a b32 holding two f16 into ``(lo, hi)`` float16 (lo = bits 0-15)."""
    _want_int("unpack_f16x2", "x", x)
    sig = types.UniTuple(types.float16, 2)(x)

    def codegen(context, builder, sig, args):
        lo, hi = _split_halves(context, builder, args[0], sig.args[0])
        return context.make_tuple(builder, sig.return_type, [lo, hi])

    return sig, codegen


@intrinsic
def unpack_f16x2_f32(typingctx, x):
    """Split a b32 holding two f16 into ``(lo, hi)`` converted to float32."""
    _want_int("unpack_f16x2_f32", "x", x)
    sig = types.UniTuple(types.float32, 2)(x)

    def codegen(context, builder, sig, args):
        lo, hi = _split_halves(context, builder, args[0], sig.args[0])
        vals = [context.cast(builder, h, types.float16, types.float32) for h in (lo, hi)]
        return context.make_tuple(builder, sig.return_type, vals)

    return sig, codegen


@intrinsic
def unpack_bf16x2_f32(typingctx, x):
    """Split a b32 holding two bfloat16 into ``(lo, hi)`` float32 (exact)."""
    _want_int("unpack_bf16x2_f32", "x", x)
    sig = types.UniTuple(types.float32, 2)(x)

    def codegen(context, builder, sig, args):
        v = _as_i32(context, builder, args[0], sig.args[0])
        lo = builder.bitcast(builder.shl(v, ir.Constant(_I32, 16)), _F32)
        hi = builder.bitcast(builder.and_(v, ir.Constant(_I32, 0xFFFF0000)), _F32)
        return context.make_tuple(builder, sig.return_type, [lo, hi])

    return sig, codegen


def _cvt_x2(op, ptx_type, lo, hi, bits=16):
    """Two float32 to a packed pair of ``ptx_type``: 16-bit halves of a b32 register, or
    (``bits`` 8, saturating: ``.satfinite``) bytes of a b16 register, zero-extended."""
    _want_float(op, "lo", lo)
    _want_float(op, "hi", hi)
    sig = types.uint32(lo, hi)
    # cvt.rn.<t>x2.f32 d, a, b puts a in the upper half and b in the lower half.
    text = f"cvt.rn{'.satfinite' if bits == 8 else ''}.{ptx_type}x2.f32 $0, $2, $1;"

    def codegen(context, builder, sig, args):
        l = _as_f32(context, builder, args[0], sig.args[0])
        h = _as_f32(context, builder, args[1], sig.args[1])
        if bits == 8:
            return builder.zext(_asm(builder, ir.IntType(16), [_F32, _F32], text, "=h,f,f", [l, h], False), _I32)
        return _asm(builder, _I32, [_F32, _F32], text, "=r,f,f", [l, h], False)

    return sig, codegen


@intrinsic
def cvt_f16x2_f32(typingctx, lo, hi):
    """Round two float32 to f16 (``cvt.rn.f16x2.f32``) and pack: ``lo`` in bits 0-15.

    The PTX instruction puts its first source in the upper half; this atom
    takes ``(lo, hi)`` and swaps them for you.  Returns uint32.
    """
    return _cvt_x2("cvt_f16x2_f32", "f16", lo, hi)


@intrinsic
def cvt_bf16x2_f32(typingctx, lo, hi):
    """Round two float32 to bf16 (``cvt.rn.bf16x2.f32``) and pack: ``lo`` in bits 0-15.

    Operand order as for :func:`cvt_f16x2_f32`.  Returns uint32.
    """
    return _cvt_x2("cvt_bf16x2_f32", "bf16", lo, hi)


@intrinsic
def cvt_e4m3x2_f32(typingctx, lo, hi):
    """Round two float32 to e4m3 (``cvt.rn.satfinite.e4m3x2.f32``: nearest even, values past
    448 to +-448, NaN to NaN) and pack: ``lo`` in bits 0-7, ``hi`` in bits 8-15. Returns uint32."""
    return _cvt_x2("cvt_e4m3x2_f32", "e4m3", lo, hi, 8)


@intrinsic
def cvt_e5m2x2_f32(typingctx, lo, hi):
    """Round two float32 to e5m2 (``cvt.rn.satfinite.e5m2x2.f32``: values past 57344, and
    infinities, to +-57344) and pack as :func:`cvt_e4m3x2_f32`. Returns uint32."""
    return _cvt_x2("cvt_e5m2x2_f32", "e5m2", lo, hi, 8)


@intrinsic
def cvt_tf32_f32(typingctx, x):
    """Round float32 to tf32 (``cvt.rna.tf32.f32``, nearest, ties away from zero).

    Returns the uint32 bit pattern (an f32 with the 13 low mantissa bits zero),
    ready to be a tf32 MMA A/B register.
    """
    _want_float("cvt_tf32_f32", "x", x)
    sig = types.uint32(x)

    def codegen(context, builder, sig, args):
        v = _as_f32(context, builder, args[0], sig.args[0])
        return _asm(builder, _I32, [_F32], "cvt.rna.tf32.f32 $0, $1;", "=r,f", [v], False)

    return sig, codegen


def _approx(name, instr, x):
    _want_float(name, "x", x)
    sig = types.float32(x)

    def codegen(context, builder, sig, args):
        v = _as_f32(context, builder, args[0], sig.args[0])
        return _asm(builder, _F32, [_F32], f"{instr} $0, $1;", "=f,f", [v], False)

    return sig, codegen


@intrinsic
def tanh_approx_f32(typingctx, x):
    """``tanh.approx.f32``: tanh on the special-function unit (one instruction; relative
    error about 2**-11). Returns float32."""
    return _approx("tanh_approx_f32", "tanh.approx.f32", x)


@intrinsic
def ex2_approx_f32(typingctx, x):
    """``ex2.approx.ftz.f32``: 2**x on the special-function unit (one instruction; relative
    error about 2**-22). Returns float32."""
    return _approx("ex2_approx_f32", "ex2.approx.ftz.f32", x)


@intrinsic
def f32_as_u32(typingctx, x):
    """Bit pattern of a float32 as uint32 (no conversion)."""
    if x != types.float32:
        raise TypeError(f"f32_as_u32: operand 'x' must be float32, got {x}")
    sig = types.uint32(x)

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _I32)

    return sig, codegen


@intrinsic
def u32_as_f32(typingctx, x):
    """Reinterpret the low 32 bits of an integer as float32 (no conversion)."""
    _want_int("u32_as_f32", "x", x)
    sig = types.float32(x)

    def codegen(context, builder, sig, args):
        return builder.bitcast(_as_i32(context, builder, args[0], sig.args[0]), _F32)

    return sig, codegen


# ---------------------------------------------------------------------------
# 16-byte vector loads and stores
# ---------------------------------------------------------------------------


def _ld_v4(op, space, addr):
    _want_int(op, "addr", addr)
    sig = types.UniTuple(types.uint32, 4)(addr)
    wide = space == "global"
    text = f"ld.{space}.v4.b32 {{$0,$1,$2,$3}}, [$4];"
    constraints = "=r,=r,=r,=r," + ("l" if wide else "r") + "," + _MEM

    def codegen(context, builder, sig, args):
        conv = _as_i64 if wide else _as_i32
        a = conv(context, builder, args[0], sig.args[0])
        res = _asm(
            builder, ir.LiteralStructType([_I32] * 4), [_I64 if wide else _I32],
            text, constraints, [a], True,
        )
        return _tuple_from(context, builder, sig.return_type, res, 4)

    return sig, codegen


def _st_v4(op, space, addr, r0, r1, r2, r3):
    _want_int(op, "addr", addr)
    for name, ty in (("r0", r0), ("r1", r1), ("r2", r2), ("r3", r3)):
        _want_b32(op, name, ty)
    sig = types.void(addr, r0, r1, r2, r3)
    wide = space == "global"
    text = f"st.{space}.v4.b32 [$0], {{$1,$2,$3,$4}};"
    constraints = ("l" if wide else "r") + ",r,r,r,r," + _MEM

    def codegen(context, builder, sig, args):
        conv = _as_i64 if wide else _as_i32
        a = conv(context, builder, args[0], sig.args[0])
        vals = [_as_i32(context, builder, v, t) for v, t in zip(args[1:], sig.args[1:])]
        _asm(builder, _VOID, [_I64 if wide else _I32] + [_I32] * 4,
             text, constraints, [a] + vals, True)
        return context.get_dummy_value()

    return sig, codegen


def _st_scalar(op, bits, addr, val, space="global"):
    _want_int(op, "addr", addr)
    if bits == 64:
        if val != types.float64 and not isinstance(val, types.Integer):
            raise TypeError(f"{op}: operand 'val' must be float64 or an integer (64-bit pattern), got {val}")
    elif bits == 32:
        _want_b32(op, "val", val)
    elif not isinstance(val, types.Integer):
        raise TypeError(f"{op}: operand 'val' must be an integer (its low 16 bits are stored), got {val}")
    sig = types.void(addr, val)
    ity = ir.IntType(32 if bits == 8 else bits)     # (st.b8 stores from a 32-bit register)
    reg = {8: "r", 16: "h", 32: "r", 64: "l"}[bits]

    wide = space == "global"

    def codegen(context, builder, sig, args):
        a = (_as_i64 if wide else _as_i32)(context, builder, args[0], sig.args[0])
        v, vty = args[1], sig.args[1]
        if bits in (8, 32):                 # (st.b8 takes a 32-bit register)
            v = _as_i32(context, builder, v, vty)
        elif vty == types.float64:
            v = builder.bitcast(v, ity)
        else:
            v = context.cast(builder, v, vty, types.int64)
            v = builder.trunc(v, ity) if bits < 64 else v
        _asm(builder, _VOID, [_I64 if wide else _I32, ity], f"st.{space}.b{bits} [$0], $1;",
             f"{'l' if wide else 'r'},{reg}," + _MEM, [a, v], True)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def st_global_b8(typingctx, addr, val):
    """``st.global.b8``: store the low 8 bits of integer ``val`` at a global address."""
    return _st_scalar("st_global_b8", 8, addr, val)


@intrinsic
def red_global_max_u32(typingctx, addr, val):
    """``red.global.max.u32``: ``*addr = max(*addr, val)`` atomically, at a 4-byte aligned
    global address (the bits of non-negative float32 order as their values: an amax)."""
    _want_int("red_global_max_u32", "addr", addr)
    _want_b32("red_global_max_u32", "val", val)
    sig = types.void(addr, val)

    def codegen(context, builder, sig, args):
        a = _as_i64(context, builder, args[0], sig.args[0])
        v = _as_i32(context, builder, args[1], sig.args[1])
        _asm(builder, _VOID, [_I64, _I32], "red.global.max.u32 [$0], $1;", "l,r," + _MEM, [a, v], True)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def st_global_b16(typingctx, addr, val):
    """``st.global.b16``: store the low 16 bits of integer ``val`` at a 2-byte aligned
    global address (gmem_addr), e.g. ``cvt_f16x2_f32(x, x)`` for one f16."""
    return _st_scalar("st_global_b16", 16, addr, val)


@intrinsic
def st_global_b32(typingctx, addr, val):
    """``st.global.b32``: store a 32-bit integer or float32 (by bits) at a 4-byte aligned
    global address."""
    return _st_scalar("st_global_b32", 32, addr, val)


@intrinsic
def st_global_b64(typingctx, addr, val):
    """``st.global.b64``: store a float64 (by bits) or 64-bit integer at an 8-byte aligned
    global address."""
    return _st_scalar("st_global_b64", 64, addr, val)


@intrinsic
def st_shared_b16(typingctx, addr, val):
    """``st.shared.b16``: store the low 16 bits of integer ``val`` at a 2-byte aligned
    shared address (smem_addr)."""
    return _st_scalar("st_shared_b16", 16, addr, val, "shared")


@intrinsic
def st_shared_b32(typingctx, addr, val):
    """``st.shared.b32``: store a 32-bit integer or float32 (by bits) at a 4-byte aligned
    shared address."""
    return _st_scalar("st_shared_b32", 32, addr, val, "shared")


@intrinsic
def st_shared_b64(typingctx, addr, val):
    """``st.shared.b64``: store a float64 (by bits) or 64-bit integer at an 8-byte aligned
    shared address."""
    return _st_scalar("st_shared_b64", 64, addr, val, "shared")


def _ld_global_scalar(op, bits, addr):
    _want_int(op, "addr", addr)
    rty = {16: types.uint16, 32: types.uint32, 64: types.uint64}[bits]
    sig = rty(addr)
    ity = ir.IntType(bits)
    reg = {16: "h", 32: "r", 64: "l"}[bits]

    def codegen(context, builder, sig, args):
        a = _as_i64(context, builder, args[0], sig.args[0])
        return _asm(builder, ity, [_I64], f"ld.global.b{bits} $0, [$1];", f"={reg},l," + _MEM, [a], True)

    return sig, codegen


@intrinsic
def ld_global_b16(typingctx, addr):
    """``ld.global.b16``: the 16 bits at a 2-byte aligned global address, as uint16."""
    return _ld_global_scalar("ld_global_b16", 16, addr)


@intrinsic
def ld_global_b32(typingctx, addr):
    """``ld.global.b32``: the 32 bits at a 4-byte aligned global address, as uint32."""
    return _ld_global_scalar("ld_global_b32", 32, addr)


@intrinsic
def ld_global_b64(typingctx, addr):
    """``ld.global.b64``: the 64 bits at an 8-byte aligned global address, as uint64."""
    return _ld_global_scalar("ld_global_b64", 64, addr)


@intrinsic
def ld_global_nc_b64(typingctx, addr):
    """``ld.global.nc.b64``: the 64 bits at an 8-byte aligned global address that no thread
    writes while the kernel runs, as uint64. Pure (no side effect, no memory clobber): the
    compiler may merge repeated reads and hoist them out of loops."""
    _want_int("ld_global_nc_b64", "addr", addr)

    def codegen(context, builder, sig, args):
        a = _as_i64(context, builder, args[0], sig.args[0])
        return _asm(builder, ir.IntType(64), [_I64], "ld.global.nc.b64 $0, [$1];", "=l,l", [a], False)

    return types.uint64(addr), codegen


@intrinsic
def ld_global_nc_v4_b32(typingctx, addr):
    """``ld.global.nc.v4.b32``: 16 bytes from a 16-byte aligned global address that no thread
    writes while the kernel runs, as four uint32 (lowest address first). Pure, as
    :func:`ld_global_nc_b64`: the compiler schedules it like any load of read-only data."""
    _want_int("ld_global_nc_v4_b32", "addr", addr)

    def codegen(context, builder, sig, args):
        a = _as_i64(context, builder, args[0], sig.args[0])
        res = _asm(builder, ir.LiteralStructType([_I32] * 4), [_I64], "ld.global.nc.v4.b32 {$0,$1,$2,$3}, [$4];",
                   "=r,=r,=r,=r,l", [a], False)
        return _tuple_from(context, builder, sig.return_type, res, 4)

    return types.UniTuple(types.uint32, 4)(addr), codegen


@intrinsic
def u64_as_f64(typingctx, x):
    """Reinterpret a 64-bit integer as float64 (no conversion)."""
    _want_int("u64_as_f64", "x", x)
    sig = types.float64(x)

    def codegen(context, builder, sig, args):
        return builder.bitcast(_as_i64(context, builder, args[0], sig.args[0]), _F64)

    return sig, codegen


@intrinsic
def st_global_v2_b32(typingctx, addr, r0, r1):
    """``st.global.v2.b32``: store two b32 (r0 at the lower address) to 8-byte aligned global
    memory.  Registers may be integers or float32 (by bits)."""
    op = "st_global_v2_b32"
    _want_int(op, "addr", addr)
    _want_b32(op, "r0", r0)
    _want_b32(op, "r1", r1)
    sig = types.void(addr, r0, r1)

    def codegen(context, builder, sig, args):
        a = _as_i64(context, builder, args[0], sig.args[0])
        v = [_as_i32(context, builder, x, t) for x, t in zip(args[1:], sig.args[1:])]
        _asm(builder, _VOID, [_I64, _I32, _I32], "st.global.v2.b32 [$0], {$1, $2};", "l,r,r," + _MEM,
             [a, *v], True)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def ld_global_v4_b32(typingctx, addr):
    """``ld.global.v4.b32``: 16 bytes from a 16-byte aligned global address (gmem_addr).

    Returns four uint32 (lowest address first).
    """
    return _ld_v4("ld_global_v4_b32", "global", addr)


@intrinsic
def st_global_v4_b32(typingctx, addr, r0, r1, r2, r3):
    """``st.global.v4.b32``: store four b32 (r0 at the lowest address) to 16-byte
    aligned global memory.  Registers may be integers or float32 (by bits)."""
    return _st_v4("st_global_v4_b32", "global", addr, r0, r1, r2, r3)


@intrinsic
def ld_shared_b32(typingctx, addr):
    """``ld.shared.b32``: the 32-bit word at a 4-byte aligned shared address (smem_addr).

    Returns uint32.  Side-effecting, like every shared-memory atom here, so that it
    stays between the barriers it was written between.
    """
    op = "ld_shared_b32"
    _want_int(op, "addr", addr)
    sig = types.uint32(addr)

    def codegen(context, builder, sig, args):
        a = _as_i32(context, builder, args[0], sig.args[0])
        return _asm(builder, _I32, [_I32], "ld.shared.b32 $0, [$1];", "=r,r," + _MEM, [a], True)

    return sig, codegen


@intrinsic
def ld_shared_b64(typingctx, addr):
    """``ld.shared.b64``: the 64-bit word at an 8-byte aligned shared address, as uint64."""
    op = "ld_shared_b64"
    _want_int(op, "addr", addr)
    sig = types.uint64(addr)

    def codegen(context, builder, sig, args):
        a = _as_i32(context, builder, args[0], sig.args[0])
        return _asm(builder, _I64, [_I32], "ld.shared.b64 $0, [$1];", "=l,r," + _MEM, [a], True)

    return sig, codegen


@intrinsic
def ld_shared_v4_b32(typingctx, addr):
    """``ld.shared.v4.b32``: 16 bytes from a 16-byte aligned shared address (smem_addr).

    Returns four uint32 (lowest address first).
    """
    return _ld_v4("ld_shared_v4_b32", "shared", addr)


@intrinsic
def st_shared_v4_b32(typingctx, addr, r0, r1, r2, r3):
    """``st.shared.v4.b32``: store four b32 (r0 at the lowest address) to 16-byte
    aligned shared memory.  Registers may be integers or float32 (by bits)."""
    return _st_v4("st_shared_v4_b32", "shared", addr, r0, r1, r2, r3)


# Hopper (sm_90a): warpgroup MMA, TMA and mbarriers
from .ptx_sm90 import *  # noqa: E402,F401,F403
