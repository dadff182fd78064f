"""Hopper (sm_90a) intrinsics: warpgroup MMA, the tensor memory accelerator, mbarriers.

Each name is a numba ``@intrinsic`` lowering to inline PTX, as in
:mod:`codegen.intrinsics.ptx`; kernels that call them must be compiled for ``sm_90a``.

* ``wgmma_m64n{N}k{K}_f32_{T}(acc, desc_a, desc_b, scale_d[, tnsp_a, tnsp_b])``:
  ``wgmma.mma_async`` with both operands in shared memory (64-bit descriptors) and f32
  accumulators: ``acc`` is a tuple of ``N / 2`` float32 (CuTe's ``CLayout_64xN``); it is
  returned updated. ``scale_d`` 0 ignores the accumulators' old values (D = A * B).
  ``tnsp_a``/``tnsp_b`` (compile-time 0 or 1) say an operand is MN-major: 16-bit types
  only (the PTX ISA has no transpose for tf32 and the 8-bit floats, whose operands are
  K-major). ``T`` is one input type, or ``A_B`` for mixed 8-bit floats (``e4m3_e5m2``).
* ``wgmma_rs_m64n{N}k16_f32_{T}(acc, a0, a1, a2, a3, desc_b, scale_d, tnsp_b)``: the same
  with A from registers (the RS form; ``T`` "f16" or "bf16"): ``a0..a3`` are uint32, each
  two 16-bit values of CuTe's ``ALayout_64x16`` (register ``a_j`` holds values ``2j`` in its
  low and ``2j + 1`` in its high half); B is a descriptor, MN-major when ``tnsp_b`` (a
  compile-time 0 or 1) is 1. The PTX form has no transpose of A.
* ``wgmma_fence``, ``wgmma_commit``, ``wgmma_wait(n)``; ``acc_fence(acc)`` keeps the
  compiler from moving accumulator uses across them; ``f32x_zero(n)`` is a tuple of zeros.
* ``tma_load_2d(dst, tmap, c0, c1, mbar)``: ``cp.async.bulk.tensor.2d`` of one box at
  coordinates ``(c0, c1)`` (innermost first) into shared memory, signalling ``mbar``.
* ``tma_load_3d(dst, tmap, c0, c1, c2, mbar)``: the same of a rank-3 map (a batch of
  matrices: ``c2`` the batch index); ``tma_store_3d`` and ``tma_load_3d_multicast`` likewise;
  ``tma_load_4d(dst, tmap, c0, c1, c2, c3, mbar)`` and ``tma_load_5d(.., c4, mbar)`` of
  rank-4 and rank-5 maps.
* ``tma_prefetch_2d(tmap, c0, c1)``: ``cp.async.bulk.prefetch.tensor.2d.L2`` of the same box
  into the L2 cache only (no shared memory, no completion to wait for).
* ``mbarrier_init``, ``mbarrier_arrive_expect_tx``, ``mbarrier_arrive``,
  ``mbarrier_try_wait`` (1 when the phase with parity ``phase`` has completed),
  ``fence_mbarrier_init``, ``fence_proxy_async``.
* ``tensormap_acquire(tmap)`` / ``prefetch_tensormap(tmap)``: a tensor map written by the
  host, made visible to (and prefetched for) the TMA unit.
* ``setmaxnreg_inc(n)`` / ``setmaxnreg_dec(n)``: warpgroup register reallocation.
* ``tma_store_2d(tmap, src, c0, c1)``: ``cp.async.bulk.tensor.2d`` of one box from shared
  address ``src`` to coordinates ``(c0, c1)`` of tensor map ``tmap`` (clipped to the tensor),
  in a bulk async-group: ``bulk_commit_group()`` closes the group, ``bulk_wait_group_read(n)``
  waits until at most ``n`` groups still read shared memory, ``bulk_wait_group(n)`` until at
  most ``n`` are incomplete.
* ``named_barrier_sync(id, n)``: ``bar.sync id, n``, a barrier of ``n`` threads (a warpgroup);
  ``named_barrier_arrive(id, n)``: ``bar.arrive id, n``, counts towards it without waiting
  (one warpgroup lets another go on: FlashAttention 3's ping-pong of two consumers).
* ``atom_add_acq_rel_gpu(addr, v)``: ``atom.acq_rel.gpu.global.add.u32``, the old value; with
  ``ld_global_cg_v2_b32(addr)`` (two words read at L2, past the multiprocessor's L1) the
  split-K kernels' hand-over of partial sums between CTAs.
* Clusters: ``cluster_ctarank()``; ``cluster_sync()`` (``barrier.cluster`` arrive.release,
  wait.acquire); ``mapa_shared(addr, rank)``, the shared::cluster address of ``addr`` in
  CTA ``rank`` of the cluster; ``mbarrier_arrive_cluster(addr)`` arrives on an mbarrier at
  such an address; ``tma_load_2d_multicast(dst, tmap, c0,
  c1, mbar, mask)`` is ``tma_load_2d`` writing the box (and signalling ``mbar``) at the same
  offsets in every CTA of the cluster whose bit is set in the 16-bit ``mask``.

Shared addresses are 32-bit (``smem_addr``), global and tensor-map addresses 64-bit.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import types
from numba.cuda.core.errors import TypingError
from numba.cuda.extending import intrinsic

from .ptx import _F32, _I32, _I64, _MEM, _VOID, _as_i32, _as_i64, _asm, _tuple_from, _want_int

__all__ = [
    "wgmma_fence", "wgmma_commit", "wgmma_wait", "acc_fence", "f32x_zero", "acc_to_array", "acc_from_array",
    "tma_load_2d", "tma_load_3d", "tma_prefetch_2d", "mbarrier_init", "mbarrier_arrive_expect_tx", "mbarrier_arrive",
    "mbarrier_try_wait", "fence_mbarrier_init", "fence_proxy_async", "tensormap_acquire", "prefetch_tensormap",
    "setmaxnreg_inc", "setmaxnreg_dec", "globaltimer",
    "tma_store_2d", "tma_store_3d", "bulk_commit_group", "bulk_wait_group", "bulk_wait_group_read",
    "named_barrier_sync", "named_barrier_arrive",
    "atom_add_acq_rel_gpu", "ld_global_cg_v2_b32",
    "cluster_ctarank", "cluster_sync", "mapa_shared", "mbarrier_arrive_cluster", "tma_load_2d_multicast",
    "tma_load_3d_multicast", "tma_load_4d", "tma_load_5d",
]

#: (N, input type name, PTX input type, K) of the wgmma intrinsics defined here
from .names import WGMMA_RS_SHAPES, WGMMA_SHAPES, wgmma_name, wgmma_rs_name


def _literal(op, name, ty, allowed=None):
    if not isinstance(ty, types.IntegerLiteral):
        raise TypingError(f"{op}: {name} must be a compile-time integer constant, got {ty}")
    v = ty.literal_value
    if allowed is not None and v not in allowed:
        raise ValueError(f"{op}: {name} must be one of {sorted(allowed)}, got {v}")
    return v


def _acc_type(op, acc, n):
    if not (isinstance(acc, types.UniTuple) and acc.count == n and acc.dtype == types.float32):
        raise TypeError(f"{op}: acc must be a tuple of {n} float32, got {acc}")


def _make_wgmma(n, t, ptxt, k):
    name = wgmma_name(n, t, k)
    nreg = n // 2
    sixteen = t in ("f16", "bf16")

    def impl(typingctx, acc, desc_a, desc_b, scale_d, tnsp_a, tnsp_b):
        op = name
        _acc_type(op, acc, nreg)
        for nm, ty in (("desc_a", desc_a), ("desc_b", desc_b), ("scale_d", scale_d)):
            _want_int(op, nm, ty)
        ta = _literal(op, "tnsp_a", tnsp_a, {0, 1})
        tb = _literal(op, "tnsp_b", tnsp_b, {0, 1})
        if not sixteen and (ta or tb):
            raise ValueError(f"{op}: {t} operands must be K-major (tnsp_a = tnsp_b = 0)")
        sig = acc(acc, desc_a, desc_b, scale_d, tnsp_a, tnsp_b)
        outs = "{" + ", ".join(f"${i}" for i in range(nreg)) + "}"
        tail = f"p, 1, 1, {ta}, {tb}" if sixteen else "p, 1, 1"
        text = ("{\n.reg .pred p;\n"
                f"setp.ne.b32 p, ${nreg + 2}, 0;\n"
                f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{ptxt} {outs}, ${nreg}, ${nreg + 1}, {tail};\n"
                "}")
        cons = ",".join(["=f"] * nreg + ["l", "l", "r"] + [str(i) for i in range(nreg)] + [_MEM])

        def codegen(context, builder, sig, args):
            regs = [builder.extract_value(args[0], i) for i in range(nreg)]
            da = _as_i64(context, builder, args[1], sig.args[1])
            db = _as_i64(context, builder, args[2], sig.args[2])
            sd = _as_i32(context, builder, args[3], sig.args[3])
            res = _asm(builder, ir.LiteralStructType([_F32] * nreg), [_I64, _I64, _I32] + [_F32] * nreg,
                       text, cons, [da, db, sd] + regs, True)
            vals = [builder.extract_value(res, i) for i in range(nreg)]
            return context.make_tuple(builder, sig.return_type, vals)

        return sig, codegen

    impl.__name__ = name
    ta, tb = ptxt.split(".")
    impl.__doc__ = (f"``wgmma.mma_async`` m64n{n}k{k}, f32 += {ta} x {tb}, both operands in shared memory "
                    f"(descriptors); ``acc``: {nreg} float32 (CLayout_64x{n}).")
    return intrinsic(impl)


WGMMA = {}
for _n, _t, _p, _k in WGMMA_SHAPES:
    _f = _make_wgmma(_n, _t, _p, _k)
    globals()[wgmma_name(_n, _t, _k)] = _f
    WGMMA[(_n, _t)] = _f
    __all__.append(wgmma_name(_n, _t, _k))


def _make_wgmma_rs(n, t, ptxt):
    """``wgmma_rs_m64n{n}k16_f32_{t}``: A from four b32 registers, B a descriptor."""
    name = wgmma_rs_name(n, t)
    nreg = n // 2

    def impl(typingctx, acc, a0, a1, a2, a3, desc_b, scale_d, tnsp_b):
        op = name
        _acc_type(op, acc, nreg)
        for nm, ty in (("a0", a0), ("a1", a1), ("a2", a2), ("a3", a3), ("desc_b", desc_b), ("scale_d", scale_d)):
            _want_int(op, nm, ty)
        tb = _literal(op, "tnsp_b", tnsp_b, {0, 1})
        sig = acc(acc, a0, a1, a2, a3, desc_b, scale_d, tnsp_b)
        outs = "{" + ", ".join(f"${i}" for i in range(nreg)) + "}"
        regs_a = "{" + ", ".join(f"${nreg + i}" for i in range(4)) + "}"
        text = ("{\n.reg .pred p;\n"
                f"setp.ne.b32 p, ${nreg + 5}, 0;\n"
                f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptxt} {outs}, {regs_a}, ${nreg + 4}, p, 1, 1, {tb};\n"
                "}")
        cons = ",".join(["=f"] * nreg + ["r"] * 4 + ["l", "r"] + [str(i) for i in range(nreg)] + [_MEM])

        def codegen(context, builder, sig, args):
            regs = [builder.extract_value(args[0], i) for i in range(nreg)]
            a = [_as_i32(context, builder, args[1 + i], sig.args[1 + i]) for i in range(4)]
            db = _as_i64(context, builder, args[5], sig.args[5])
            sd = _as_i32(context, builder, args[6], sig.args[6])
            res = _asm(builder, ir.LiteralStructType([_F32] * nreg), [_I32] * 4 + [_I64, _I32] + [_F32] * nreg,
                       text, cons, a + [db, sd] + regs, True)
            vals = [builder.extract_value(res, i) for i in range(nreg)]
            return context.make_tuple(builder, sig.return_type, vals)

        return sig, codegen

    impl.__name__ = name
    impl.__doc__ = (f"``wgmma.mma_async`` m64n{n}k16, f32 += {t} x {t}, A from registers (``a0..a3``: "
                    f"ALayout_64x16, two {t} a register, the first in the low half), B a shared-memory "
                    f"descriptor; ``acc``: {nreg} float32 (CLayout_64x{n}).")
    return intrinsic(impl)


WGMMA_RS = {}
for _n, _t, _p, _k in WGMMA_RS_SHAPES:
    _f = _make_wgmma_rs(_n, _t, _p)
    globals()[wgmma_rs_name(_n, _t)] = _f
    WGMMA_RS[(_n, _t)] = _f
    __all__.append(wgmma_rs_name(_n, _t))


def _void_asm(op, text):
    def impl(typingctx):
        sig = types.void()

        def codegen(context, builder, sig, args):
            _asm(builder, _VOID, [], text, _MEM, [], True)
            return context.get_dummy_value()

        return sig, codegen

    impl.__name__ = op
    impl.__doc__ = f"``{text}``"
    return intrinsic(impl)


wgmma_fence = _void_asm("wgmma_fence", "wgmma.fence.sync.aligned;")
wgmma_commit = _void_asm("wgmma_commit", "wgmma.commit_group.sync.aligned;")
fence_mbarrier_init = _void_asm("fence_mbarrier_init", "fence.mbarrier_init.release.cluster;")
fence_proxy_async = _void_asm("fence_proxy_async", "fence.proxy.async.shared::cta;")


def _immediate_asm(op, text, check=None):
    """An intrinsic ``op(n)`` emitting ``text`` with the compile-time constant ``n`` in its
    ``{}``; ``check(n)`` returns an error message for a value it refuses."""
    def impl(typingctx, n):
        v = _literal(op, "n", n)
        why = check(v) if check else None
        if why:
            raise ValueError(f"{op}: {why}, got {v}")
        sig = types.void(n)

        def codegen(context, builder, sig, args):
            _asm(builder, _VOID, [], text.format(v), _MEM, [], True)
            return context.get_dummy_value()

        return sig, codegen

    impl.__name__ = op
    impl.__doc__ = f"``{text.format('n')}`` (``n`` a compile-time constant)."
    return intrinsic(impl)


wgmma_wait = _immediate_asm("wgmma_wait", "wgmma.wait_group.sync.aligned {};")


@intrinsic
def acc_fence(typingctx, acc):
    """The accumulators through an empty asm: the compiler may not move their uses across it
    (CuTe's ``warpgroup_fence_operand``)."""
    if not (isinstance(acc, types.UniTuple) and acc.dtype == types.float32):
        raise TypeError(f"acc_fence: acc must be a tuple of float32, got {acc}")
    n = acc.count
    sig = acc(acc)

    def codegen(context, builder, sig, args):
        regs = [builder.extract_value(args[0], i) for i in range(n)]
        cons = ",".join(["=f"] * n + [str(i) for i in range(n)] + [_MEM])
        res = _asm(builder, ir.LiteralStructType([_F32] * n), [_F32] * n, "", cons, regs, True)
        return context.make_tuple(builder, sig.return_type, [builder.extract_value(res, i) for i in range(n)])

    return sig, codegen


@intrinsic
def f32x_zero(typingctx, n):
    """A tuple of ``n`` (a compile-time constant) float32 zeros."""
    count = _literal("f32x_zero", "n", n)
    rty = types.UniTuple(types.float32, count)
    sig = rty(n)

    def codegen(context, builder, sig, args):
        zero = ir.Constant(_F32, 0.0)
        return context.make_tuple(builder, rty, [zero] * count)

    return sig, codegen


@intrinsic
def acc_to_array(typingctx, acc, arr):
    """Store the accumulator tuple into a 1-D local array, element i at index i, with constant
    indices (a loop over a tuple with a run-time index would not unroll)."""
    if not (isinstance(acc, types.UniTuple) and acc.dtype == types.float32):
        raise TypeError(f"acc_to_array: acc must be a tuple of float32, got {acc}")
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.float32):
        raise TypeError(f"acc_to_array: arr must be a 1-D float32 array, got {arr}")
    n = acc.count
    sig = types.void(acc, arr)

    def codegen(context, builder, sig, args):
        from numba.cuda import cgutils

        ary = cgutils.create_struct_proxy(sig.args[1])(context, builder, value=args[1])
        for i in range(n):
            ptr = builder.gep(ary.data, [ir.Constant(_I32, i)])
            builder.store(builder.extract_value(args[0], i), ptr)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def acc_from_array(typingctx, arr, n):
    """The first ``n`` (a compile-time constant) elements of a 1-D local float32 array as an
    accumulator tuple, read with constant indices."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.float32):
        raise TypeError(f"acc_from_array: arr must be a 1-D float32 array, got {arr}")
    count = _literal("acc_from_array", "n", n)
    rty = types.UniTuple(types.float32, count)
    sig = rty(arr, n)

    def codegen(context, builder, sig, args):
        from numba.cuda import cgutils

        ary = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
        vals = [builder.load(builder.gep(ary.data, [ir.Constant(_I32, i)])) for i in range(count)]
        return context.make_tuple(builder, rty, vals)

    return sig, codegen


def _lower_tma(text, kinds):
    """The codegen of a TMA instruction ``text`` whose operands are, in order, of the
    constraint ``kinds`` ("r" a 32-bit, "l" a 64-bit, "h" a 16-bit integer)."""
    tys = {"r": _I32, "l": _I64, "h": ir.IntType(16)}

    def codegen(context, builder, sig, args):
        vals = []
        for k, v, ty in zip(kinds, args, sig.args):
            if k == "l":
                vals.append(_as_i64(context, builder, v, ty))
            else:
                x = _as_i32(context, builder, v, ty)
                vals.append(builder.trunc(x, tys["h"]) if k == "h" else x)
        _asm(builder, _VOID, [tys[k] for k in kinds], text, ",".join(kinds) + "," + _MEM, vals, True)
        return context.get_dummy_value()

    return codegen


def _tma_typing(op, names, tys):
    for nm, ty in zip(names, tys):
        _want_int(op, nm, ty)
    return types.void(*tys)


_LOAD = "cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes"


@intrinsic
def tma_load_2d(typingctx, dst, tmap, c0, c1, mbar):
    """``cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes``: the
    box of tensor map ``tmap`` (a global address) at coordinates ``(c0, c1)`` into shared
    address ``dst``; completion is signalled on the mbarrier at shared address ``mbar``."""
    sig = _tma_typing("tma_load_2d", ("dst", "tmap", "c0", "c1", "mbar"), (dst, tmap, c0, c1, mbar))
    return sig, _lower_tma(_LOAD.format(r=2) + " [$0], [$1, {$2, $3}], [$4];", "rlrrr")


@intrinsic
def tma_load_3d(typingctx, dst, tmap, c0, c1, c2, mbar):
    """``tma_load_2d`` of a rank-3 map: the box at coordinates ``(c0, c1, c2)``."""
    sig = _tma_typing("tma_load_3d", ("dst", "tmap", "c0", "c1", "c2", "mbar"), (dst, tmap, c0, c1, c2, mbar))
    return sig, _lower_tma(_LOAD.format(r=3) + " [$0], [$1, {$2, $3, $4}], [$5];", "rlrrrr")


@intrinsic
def tma_load_4d(typingctx, dst, tmap, c0, c1, c2, c3, mbar):
    """``tma_load_2d`` of a rank-4 map: the box at coordinates ``(c0, c1, c2, c3)``."""
    sig = _tma_typing("tma_load_4d", ("dst", "tmap", "c0", "c1", "c2", "c3", "mbar"),
                      (dst, tmap, c0, c1, c2, c3, mbar))
    return sig, _lower_tma(_LOAD.format(r=4) + " [$0], [$1, {$2, $3, $4, $5}], [$6];", "rlrrrrr")


@intrinsic
def tma_load_5d(typingctx, dst, tmap, c0, c1, c2, c3, c4, mbar):
    """``tma_load_2d`` of a rank-5 map: the box at coordinates ``(c0, c1, c2, c3, c4)``."""
    sig = _tma_typing("tma_load_5d", ("dst", "tmap", "c0", "c1", "c2", "c3", "c4", "mbar"),
                      (dst, tmap, c0, c1, c2, c3, c4, mbar))
    return sig, _lower_tma(_LOAD.format(r=5) + " [$0], [$1, {$2, $3, $4, $5, $6}], [$7];", "rlrrrrrr")


@intrinsic
def tma_prefetch_2d(typingctx, tmap, c0, c1):
    """``cp.async.bulk.prefetch.tensor.2d.L2.global.tile``: the box of tensor map ``tmap`` at
    coordinates ``(c0, c1)`` into the L2 cache; nothing to wait for (a hint)."""
    op = "tma_prefetch_2d"
    for nm, ty in (("tmap", tmap), ("c0", c0), ("c1", c1)):
        _want_int(op, nm, ty)
    sig = types.void(tmap, c0, c1)
    text = "cp.async.bulk.prefetch.tensor.2d.L2.global.tile [$0, {$1, $2}];"

    def codegen(context, builder, sig, args):
        a = [_as_i64(context, builder, args[0], sig.args[0]), _as_i32(context, builder, args[1], sig.args[1]),
             _as_i32(context, builder, args[2], sig.args[2])]
        _asm(builder, _VOID, [_I64, _I32, _I32], text, "l,r,r," + _MEM, a, True)
        return context.get_dummy_value()

    return sig, codegen


def _addr_op(op, text, wide=False):
    """An intrinsic ``op(addr)`` with no result."""
    def impl(typingctx, addr):
        _want_int(op, "addr", addr)
        sig = types.void(addr)

        def codegen(context, builder, sig, args):
            a = (_as_i64 if wide else _as_i32)(context, builder, args[0], sig.args[0])
            _asm(builder, _VOID, [_I64 if wide else _I32], text, ("l," if wide else "r,") + _MEM, [a], True)
            return context.get_dummy_value()

        return sig, codegen

    impl.__name__ = op
    impl.__doc__ = f"``{text}``"
    return intrinsic(impl)


def _addr_value(op, name, text, addr, value):
    _want_int(op, "addr", addr)
    _want_int(op, name, value)
    sig = types.void(addr, value)

    def codegen(context, builder, sig, args):
        a = _as_i32(context, builder, args[0], sig.args[0])
        v = _as_i32(context, builder, args[1], sig.args[1])
        _asm(builder, _VOID, [_I32, _I32], text, "r,r," + _MEM, [a, v], True)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def mbarrier_init(typingctx, addr, count):
    """``mbarrier.init``: the mbarrier at shared address ``addr`` completes a phase after
    ``count`` arrivals."""
    return _addr_value("mbarrier_init", "count", "mbarrier.init.shared::cta.b64 [$0], $1;", addr, count)


@intrinsic
def mbarrier_arrive_expect_tx(typingctx, addr, nbytes):
    """``mbarrier.arrive.expect_tx``: arrive, and make the phase also wait for ``nbytes``
    bytes of asynchronous (TMA) copies."""
    return _addr_value("mbarrier_arrive_expect_tx", "nbytes",
                       "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", addr, nbytes)


mbarrier_arrive = _addr_op("mbarrier_arrive", "mbarrier.arrive.shared::cta.b64 _, [$0];")
tensormap_acquire = _addr_op("tensormap_acquire", "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", wide=True)
prefetch_tensormap = _addr_op("prefetch_tensormap", "prefetch.tensormap [$0];", wide=True)


@intrinsic
def mbarrier_try_wait(typingctx, addr, phase):
    """``mbarrier.try_wait.parity``: 1 when the phase of parity ``phase`` of the mbarrier at
    ``addr`` has completed, else 0 (after a bounded wait in hardware); call it in a loop."""
    op = "mbarrier_try_wait"
    _want_int(op, "addr", addr)
    _want_int(op, "phase", phase)
    sig = types.int32(addr, phase)
    text = ("{\n.reg .pred wp;\nmbarrier.try_wait.parity.shared::cta.b64 wp, [$1], $2;\n"
            "selp.b32 $0, 1, 0, wp;\n}")

    def codegen(context, builder, sig, args):
        a = _as_i32(context, builder, args[0], sig.args[0])
        p = _as_i32(context, builder, args[1], sig.args[1])
        return _asm(builder, _I32, [_I32, _I32], text, "=r,r,r," + _MEM, [a, p], True)

    return sig, codegen


def _regs_ok(v):
    return None if v % 8 == 0 and 24 <= v <= 256 else "n must be a multiple of 8 in [24, 256]"


setmaxnreg_inc = _immediate_asm("setmaxnreg_inc", "setmaxnreg.inc.sync.aligned.u32 {};", _regs_ok)
setmaxnreg_dec = _immediate_asm("setmaxnreg_dec", "setmaxnreg.dec.sync.aligned.u32 {};", _regs_ok)


@intrinsic
def globaltimer(typingctx):
    """``%globaltimer``: nanoseconds, for time-outs of spin waits."""
    sig = types.int64()

    def codegen(context, builder, sig, args):
        return _asm(builder, _I64, [], "mov.u64 $0, %globaltimer;", "=l," + _MEM, [], True)

    return sig, codegen



_STORE = "cp.async.bulk.tensor.{r}d.global.shared::cta.bulk_group"


@intrinsic
def tma_store_2d(typingctx, tmap, src, c0, c1):
    """``cp.async.bulk.tensor.2d.global.shared::cta.bulk_group``: the box at shared address
    ``src`` to coordinates ``(c0, c1)`` (innermost first) of tensor map ``tmap``; what lies
    outside the tensor is not written."""
    sig = _tma_typing("tma_store_2d", ("tmap", "src", "c0", "c1"), (tmap, src, c0, c1))
    return sig, _lower_tma(_STORE.format(r=2) + " [$0, {$2, $3}], [$1];", "lrrr")


@intrinsic
def tma_store_3d(typingctx, tmap, src, c0, c1, c2):
    """``tma_store_2d`` to a rank-3 map: the box to coordinates ``(c0, c1, c2)``."""
    sig = _tma_typing("tma_store_3d", ("tmap", "src", "c0", "c1", "c2"), (tmap, src, c0, c1, c2))
    return sig, _lower_tma(_STORE.format(r=3) + " [$0, {$2, $3, $4}], [$1];", "lrrrr")


bulk_commit_group = _void_asm("bulk_commit_group", "cp.async.bulk.commit_group;")


bulk_wait_group = _immediate_asm("bulk_wait_group", "cp.async.bulk.wait_group {};")
bulk_wait_group_read = _immediate_asm("bulk_wait_group_read", "cp.async.bulk.wait_group.read {};")


@intrinsic
def named_barrier_sync(typingctx, bar, nthreads):
    """``bar.sync bar, nthreads``: wait until ``nthreads`` threads (a multiple of 32) reached
    barrier ``bar`` (1 to 15; 0 is ``syncthreads``')."""
    return _addr_value("named_barrier_sync", "nthreads", "bar.sync $0, $1;", bar, nthreads)


@intrinsic
def named_barrier_arrive(typingctx, bar, nthreads):
    """``bar.arrive bar, nthreads``: count this thread's warp towards barrier ``bar`` of
    ``nthreads`` threads without waiting (the threads that wait use ``bar.sync``)."""
    return _addr_value("named_barrier_arrive", "nthreads", "bar.arrive $0, $1;", bar, nthreads)


@intrinsic
def atom_add_acq_rel_gpu(typingctx, addr, value):
    """``atom.acq_rel.gpu.global.add.u32``: add ``value`` to the uint32 at global ``addr``
    and return its old value. Release: this thread's earlier writes, and those its CTA made
    before a barrier it passed, are visible to whoever acquires the new value; acquire:
    writes released before the old value was written are visible to this thread (and, after
    a barrier, to its CTA)."""
    op = "atom_add_acq_rel_gpu"
    _want_int(op, "addr", addr)
    _want_int(op, "value", value)
    sig = types.uint32(addr, value)

    def codegen(context, builder, sig, args):
        a = _as_i64(context, builder, args[0], sig.args[0])
        v = _as_i32(context, builder, args[1], sig.args[1])
        return _asm(builder, _I32, [_I64, _I32], "atom.acq_rel.gpu.global.add.u32 $0, [$1], $2;", "=r,l,r," + _MEM,
                    [a, v], True)

    return sig, codegen


@intrinsic
def ld_global_cg_v2_b32(typingctx, addr):
    """``ld.global.cg.v2.b32``: two words from an 8-byte aligned global address, cached in L2
    only (never a stale line of this multiprocessor's L1); returns two uint32, lower address
    first."""
    op = "ld_global_cg_v2_b32"
    _want_int(op, "addr", addr)
    sig = types.UniTuple(types.uint32, 2)(addr)

    def codegen(context, builder, sig, args):
        a = _as_i64(context, builder, args[0], sig.args[0])
        res = _asm(builder, ir.LiteralStructType([_I32] * 2), [_I64], "ld.global.cg.v2.b32 {$0, $1}, [$2];",
                   "=r,=r,l," + _MEM, [a], True)
        return _tuple_from(context, builder, sig.return_type, res, 2)

    return sig, codegen


cluster_sync = _void_asm("cluster_sync", "barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;")


@intrinsic
def cluster_ctarank(typingctx):
    """``%cluster_ctarank``: this CTA's rank in its cluster."""
    sig = types.int32()

    def codegen(context, builder, sig, args):
        return _asm(builder, _I32, [], "mov.u32 $0, %cluster_ctarank;", "=r", [], False)

    return sig, codegen


@intrinsic
def mapa_shared(typingctx, addr, rank):
    """``mapa.shared::cluster.u32``: the shared::cluster address of shared address ``addr``
    in the CTA of cluster rank ``rank``."""
    op = "mapa_shared"
    _want_int(op, "addr", addr)
    _want_int(op, "rank", rank)
    sig = types.int32(addr, rank)

    def codegen(context, builder, sig, args):
        a = _as_i32(context, builder, args[0], sig.args[0])
        r = _as_i32(context, builder, args[1], sig.args[1])
        return _asm(builder, _I32, [_I32, _I32], "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", [a, r], False)

    return sig, codegen


# release at CTA scope (the default), as for a local arrival. With .release.cluster the
# cluster kernel ran at 455-522 TFLOP/s instead of 609-689 (f16, 4096^3 and 8192^3, H100):
# the consumer warpgroup's next wgmma waits for its leader's arrival
mbarrier_arrive_cluster = _addr_op("mbarrier_arrive_cluster", "mbarrier.arrive.shared::cluster.b64 _, [$0];")


@intrinsic
def tma_load_2d_multicast(typingctx, dst, tmap, c0, c1, mbar, mask):
    """``tma_load_2d`` to every CTA of the cluster in ``mask`` (``.multicast::cluster``):
    the box lands at shared offset ``dst`` of each, and its bytes count on the mbarrier at
    offset ``mbar`` of each."""
    sig = _tma_typing("tma_load_2d_multicast", ("dst", "tmap", "c0", "c1", "mbar", "mask"),
                      (dst, tmap, c0, c1, mbar, mask))
    return sig, _lower_tma(_LOAD.format(r=2) + ".multicast::cluster [$0], [$1, {$2, $3}], [$4], $5;", "rlrrrh")


@intrinsic
def tma_load_3d_multicast(typingctx, dst, tmap, c0, c1, c2, mbar, mask):
    """``tma_load_2d_multicast`` of a rank-3 map: the box at coordinates ``(c0, c1, c2)``."""
    sig = _tma_typing("tma_load_3d_multicast", ("dst", "tmap", "c0", "c1", "c2", "mbar", "mask"),
                      (dst, tmap, c0, c1, c2, mbar, mask))
    return sig, _lower_tma(_LOAD.format(r=3) + ".multicast::cluster [$0], [$1, {$2, $3, $4}], [$5], $6;",
                           "rlrrrrh")
