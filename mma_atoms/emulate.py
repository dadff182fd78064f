"""Host emulation of the atoms, from per-thread fragments (numpy).

The instruction semantics come from the PTX ISA (``mma_atoms.ptx_fragments``):
which lane holds which element, and what the instruction computes.  The CuTe
tables of an entry are used only to map ``op.thr_id`` (logical thread -> lane);
:func:`scatter` and :func:`gather` are the CuTe-side helpers that turn whole
matrices into fragments and back through ``layout_a`` / ``layout_b`` /
``layout_c``.  Running ``gather(d) == A @ B.T + C`` after ``mma(scatter(...))``
therefore checks the tables against the ISA.

Fragments are numpy arrays shaped ``(threads, values)``, indexed by the atom's
*logical* thread (``thr_id`` maps it to the lane) and value (the element's place in
the thread's registers, as in the layouts).  Values are numbers (float64 or
int64); :func:`pack` / :func:`unpack` convert to and from register bit patterns.

>>> import numpy as np, mma_atoms
>>> op = mma_atoms.get("SM80_16x8x8_F32F16F16F32_TN")
>>> rng = np.random.default_rng(0)
>>> A, B, C = (rng.integers(-3, 4, s).astype(float) for s in ((16, 8), (8, 8), (16, 8)))
>>> d = mma(op, scatter(op, "a", A), scatter(op, "b", B), scatter(op, "c", C))
>>> bool(np.array_equal(gather(op, "d", d), A @ B.T + C))
True
"""

import numpy as np

from layoutalg import flatten

from .numerics import decode, encode, is_float_type, quantize, saturate_s32, type_bits, wrap_int
from .ops import CopyOp, MMAOp
from .ptx_fragments import mma_coords, parse_mma_ptx

__all__ = [
    "layout_table", "scatter", "gather", "mma", "mma_registers", "pack", "unpack",
    "ldmatrix", "stmatrix", "copy", "regs_to_bits", "bits_to_regs",
]


def _op(op, what):
    if isinstance(op, str):
        from .registry import get

        op = get(op)
    if not isinstance(op, (MMAOp, CopyOp)):
        raise TypeError(f"emulate.{what}: expected an MMAOp, a CopyOp or a name, got {op!r}")
    return op


def _mma_op(op, what):
    op = _op(op, what)
    if not isinstance(op, MMAOp):
        raise TypeError(f"emulate.{what}: {op.name} is a copy entry, not an MMA")
    return op


def _copy_op(op, what, kinds):
    op = _op(op, what)
    if not isinstance(op, CopyOp) or op.kind not in kinds:
        raise TypeError(f"emulate.{what}: {op.name} is not a {'/'.join(kinds)} copy entry")
    return op


# ---- layouts as index tables ------------------------------------------------

_TABLE_CACHE = {}


def layout_table(layout, tv=True):
    """All values of a layout, as an int64 array.

    With ``tv`` (default) a rank-2 (thread, value) layout gives shape
    ``(size(mode 0), size(mode 1))`` with ``table[t, v] = layout(t, v)``; otherwise
    (or for other ranks) a flat array over the colexicographic index,
    ``table[i] = layout(i)``.  Evaluated with numpy (layouts of the tables have up
    to 16384 points).
    """
    key = (layout.shape, layout.stride, bool(tv))
    hit = _TABLE_CACHE.get(key)
    if hit is not None:
        return hit
    shapes = flatten(layout.shape) if isinstance(layout.shape, tuple) else (layout.shape,)
    strides = flatten(layout.stride) if isinstance(layout.stride, tuple) else (layout.stride,)
    n = int(np.prod(shapes)) if shapes else 1
    idx = np.arange(n, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    div = 1
    for s, d in zip(shapes, strides):
        if not isinstance(d, (int, np.integer)):
            raise ValueError(f"layout_table: layout {layout} has non-integer strides")
        out += ((idx // div) % s) * d
        div *= s
    if tv and isinstance(layout.shape, tuple) and len(layout.shape) == 2:
        t = int(np.prod(flatten(layout.shape[0]) if isinstance(layout.shape[0], tuple)
                        else (layout.shape[0],)))
        out = out.reshape(-1, t).T.copy()
    out.setflags(write=False)
    _TABLE_CACHE[key] = out
    return out


def _lanes(op):
    return layout_table(op.thr_id, tv=False)


# ---- CuTe side: matrices <-> fragments through the tables --------------------

def _operand_tile(op, operand):
    if operand == "a":
        return op.tile_a
    if operand == "b":
        return op.tile_b
    if operand in ("c", "d"):
        return op.tile_c
    raise ValueError(f"emulate: operand must be 'a', 'b', 'c' or 'd', got {operand!r}")


def scatter(op, operand, matrix):
    """Fragments ``(threads, values)`` of ``matrix`` through the entry's CuTe layout.

    ``matrix`` is the ``MxK`` (A), ``NxK`` (B) or ``MxN`` (C/D) tile; for copy
    entries, pass ``operand`` "src"/"dst" and a flat bit array.  ``frag[t, v] =
    matrix[layout(t, v)]`` with the column-major index.  A shared-memory-descriptor
    operand (wgmma SS) has no per-thread fragment: the matrix itself is returned.
    """
    op = _op(op, "scatter")
    if isinstance(op, CopyOp):
        lay = {"src": op.src_layout, "dst": op.dst_layout, "ref": op.ref_layout}.get(operand)
        if lay is None:
            raise ValueError(f"emulate.scatter: copy operand must be 'src', 'dst' or 'ref', got {operand!r}")
        flat = np.asarray(matrix).reshape(-1)
        return flat[layout_table(lay)]
    shape = _operand_tile(op, operand)
    m = np.asarray(matrix)
    if m.shape != shape:
        raise ValueError(f"emulate.scatter: {op.name} operand {operand} needs a {shape} matrix, got {m.shape}")
    if op.source(operand) == "smem_desc":
        return m.copy()
    flat = m.reshape(-1, order="F")
    return flat[layout_table(op.layout(operand))]


def gather(op, operand, frags):
    """The matrix the fragments describe, through the entry's CuTe layout.

    Every element of the tile must be held exactly once (``ValueError`` otherwise);
    for a shared-memory-descriptor operand ``frags`` is already the matrix.
    """
    op = _mma_op(op, "gather")
    shape = _operand_tile(op, operand)
    f = np.asarray(frags)
    if op.source(operand) == "smem_desc":
        if f.shape != shape:
            raise ValueError(f"emulate.gather: {op.name} operand {operand} is a {shape} matrix, got {f.shape}")
        return f.copy()
    tab = layout_table(op.layout(operand))
    if f.shape != tab.shape:
        raise ValueError(f"emulate.gather: {op.name} operand {operand} fragments must be {tab.shape}, got {f.shape}")
    n = shape[0] * shape[1]
    flat = np.zeros(n, dtype=f.dtype)
    hits = np.bincount(tab.reshape(-1), minlength=n)
    if tab.size != n or np.any(hits != 1):
        raise ValueError(f"emulate.gather: {op.name} layout {op.layout(operand)} is not a bijection "
                         f"onto the {shape} tile")
    flat[tab.reshape(-1)] = f.reshape(-1)
    return flat.reshape(shape, order="F")


# ---- PTX side: the instruction ------------------------------------------------

def _assemble(op, operand, coords, frags, shape):
    f = np.asarray(frags)
    if f.shape != coords.shape[:2]:
        raise ValueError(f"emulate.mma: {op.name} operand {operand} fragments must be "
                         f"{coords.shape[:2]} (threads, values), got {f.shape}")
    rows, cols = coords[..., 0].reshape(-1), coords[..., 1].reshape(-1)
    if rows.min() < 0 or cols.min() < 0 or rows.max() >= shape[0] or cols.max() >= shape[1]:
        raise ValueError(f"emulate.mma: {op.name} operand {operand}: PTX coordinates leave the {shape} tile")
    lin = rows * shape[1] + cols
    hits = np.bincount(lin, minlength=shape[0] * shape[1])
    if np.any(hits != 1):
        raise ValueError(f"emulate.mma: {op.name} operand {operand}: the threads taking part do not hold "
                         f"each element of the {shape} matrix exactly once")
    out = np.zeros(shape[0] * shape[1], dtype=np.result_type(f.dtype, np.float64)
                   if f.dtype.kind == "f" else np.int64)
    out[lin] = f.reshape(-1)
    return out.reshape(shape)


def _compute(p, op, A, Bkn, C):
    """D = A * B + C as the instruction computes it (A: MxK, B: KxN, C: MxN)."""
    if p.bitop:
        a = wrap_int(A, "b1")
        b = wrap_int(Bkn, "b1")
        bits = (a[:, :, None] ^ b[None, :, :]) if p.bitop == "xor" else (a[:, :, None] & b[None, :, :])
        acc = bits.sum(axis=1) + wrap_int(C, "s32")
        return wrap_int(acc, "s32")
    ta, tb, tc, td = p.atype, p.btype, p.ctype, p.dtype
    if is_float_type(ta):
        a = quantize(A, ta)
        b = quantize(Bkn, tb)
        c = quantize(C, tc)
        return quantize(a @ b + c, td)
    a = wrap_int(A, ta)
    b = wrap_int(Bkn, tb)
    acc = a @ b + wrap_int(C, tc)
    return saturate_s32(acc) if p.satfinite else wrap_int(acc, "s32")


def mma(op, a, b, c, lanes=None):
    """Run an MMA entry on fragments; returns D's fragments ``(threads, values)``.

    ``a``, ``b``, ``c`` are ``(threads, values)`` arrays of element values for
    register operands; for a shared-memory-descriptor operand (wgmma ``SS`` A, every
    wgmma B) pass the tile itself: A as ``MxK``, B as ``NxK`` (CuTe's orientation).
    Inputs are rounded to their types (:func:`mma_atoms.numerics.quantize`),
    products are summed exactly in float64 (int64 for integers), then rounded to the
    D type; s32 results wrap, or clamp with ``.satfinite``; b1 uses XOR/AND + popc.

    ``lanes`` overrides ``op.thr_id`` (logical thread -> lane), e.g. ``lanes + 4*q``
    for the SM70 product of quad pair ``q``.
    """
    op = _mma_op(op, "mma")
    M, N, K = op.shape_mnk
    if op.kind == "fma":
        return _fma(op, a, b, c)
    p = parse_mma_ptx(op.ptx)
    if (p.m, p.n, p.k) != (M, N, K):
        raise ValueError(f"emulate.mma: {op.name} shape {op.shape_mnk} disagrees with its PTX {op.ptx}")
    if lanes is None:
        lanes = _lanes(op)
    else:
        lanes = np.asarray(lanes, dtype=np.int64).reshape(-1)
        if lanes.shape != (op.num_threads,):
            raise ValueError(f"emulate.mma: {op.name} needs {op.num_threads} lanes, got {lanes.shape}")
    if op.a_source == "smem_desc":
        A = _matrix(op, "a", a, (M, K))
    else:
        A = _assemble(op, "a", mma_coords(p, "a", lanes), a, (M, K))
    if op.b_source == "smem_desc":
        Bkn = _matrix(op, "b", b, (N, K)).T
    else:
        Bkn = _assemble(op, "b", mma_coords(p, "b", lanes), b, (K, N))
    dco = mma_coords(p, "d", lanes)
    C = _assemble(op, "c", dco, c, (M, N))
    D = _compute(p, op, A, Bkn, C)
    return D[dco[..., 0], dco[..., 1]]


def _matrix(op, operand, x, shape):
    m = np.asarray(x)
    if m.shape != shape:
        raise ValueError(f"emulate.mma: {op.name} operand {operand} is read through a shared-memory "
                         f"descriptor: pass the {shape} tile, got shape {m.shape}")
    return m


def _fma(op, a, b, c):
    a, b, c = (np.asarray(x).reshape(1, 1) for x in (a, b, c))
    if op.d_type == "any":
        return a * b + c
    if is_float_type(op.d_type):
        return quantize(quantize(a, op.a_type) * quantize(b, op.b_type) + quantize(c, op.c_type), op.d_type)
    return wrap_int(wrap_int(a, op.a_type) * wrap_int(b, op.b_type) + wrap_int(c, op.c_type), op.d_type)


# ---- registers -------------------------------------------------------------------

def pack(op, operand, frags):
    """Register bit patterns ``(threads, registers)`` (uint64) of value fragments.

    Value ``v`` of a ``b``-bit type goes to register ``v*b // reg_bits`` at bit
    ``(v*b) % reg_bits``, as the PTX ``.f16x2`` / ``.b32`` packing (low element in
    the low bits).
    """
    op = _mma_op(op, "pack")
    et, regs = op.elem_type(operand), op.regs(operand)
    if op.source(operand) == "smem_desc":
        raise ValueError(f"emulate.pack: {op.name} operand {operand} is a shared-memory descriptor, not values")
    if et == "any" or regs.type == "any":
        raise ValueError(f"emulate.pack: {op.name} has no fixed types; use universal_fma(...) for a typed entry")
    f = np.asarray(frags)
    eb, rb = type_bits(et), type_bits(regs.type)
    if f.shape[1] * eb != regs.count * rb:
        raise ValueError(f"emulate.pack: {op.name} operand {operand}: {f.shape[1]} x {et} do not fill {regs}")
    codes = encode(f, et).astype(object)
    per = rb // eb
    out = np.zeros((f.shape[0], regs.count), dtype=object)
    for v in range(f.shape[1]):
        out[:, v // per] = out[:, v // per] | (codes[:, v] << ((v % per) * eb))
    return out.astype(np.uint64)


def unpack(op, operand, regs_bits):
    """Values ``(threads, values)`` from register bit patterns (inverse of :func:`pack`)."""
    op = _mma_op(op, "unpack")
    et, regs = op.elem_type(operand), op.regs(operand)
    if op.source(operand) == "smem_desc":
        raise ValueError(f"emulate.unpack: {op.name} operand {operand} is a shared-memory descriptor")
    r = np.asarray(regs_bits).astype(np.uint64)
    if r.ndim != 2 or r.shape[1] != regs.count:
        raise ValueError(f"emulate.unpack: {op.name} operand {operand} needs (threads, {regs.count}) registers, "
                         f"got {r.shape}")
    eb, rb = type_bits(et), type_bits(regs.type)
    per = rb // eb
    nv = regs.count * per
    mask = np.uint64((1 << eb) - 1) if eb < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    codes = np.zeros((r.shape[0], nv), dtype=np.uint64)
    for v in range(nv):
        codes[:, v] = (r[:, v // per] >> np.uint64((v % per) * eb)) & mask
    return decode(codes, et)


def mma_registers(op, a_regs, b_regs, c_regs):
    """:func:`mma` on register bit patterns (uint64 arrays ``(threads, registers)``).

    Shared-memory-descriptor operands are still passed as tiles (see :func:`mma`).
    """
    op = _mma_op(op, "mma_registers")
    a = a_regs if op.a_source == "smem_desc" else unpack(op, "a", a_regs)
    b = b_regs if op.b_source == "smem_desc" else unpack(op, "b", b_regs)
    d = mma(op, a, b, unpack(op, "c", c_regs))
    return pack(op, "d", d)


# ---- copies ----------------------------------------------------------------------

def _smem_bytes(smem, what):
    s = np.asarray(smem)
    if s.dtype != np.uint8 or s.ndim != 1:
        raise ValueError(f"emulate.{what}: shared memory must be a 1-D uint8 array, got {s.dtype} {s.shape}")
    return s


def _row_addresses(op, row_addrs, nbytes, what):
    a = np.asarray(row_addrs, dtype=np.int64).reshape(-1)
    if a.shape != (32,):
        raise ValueError(f"emulate.{what}: {op.name} needs 32 row addresses (one per lane), got {a.shape}")
    used = a[: 8 * op.num_matrices]
    if np.any(used % 16):
        raise ValueError(f"emulate.{what}: {op.name} row addresses must be 16-byte aligned, got {used.tolist()}")
    if np.any(used < 0) or np.any(used + 16 > nbytes):
        raise ValueError(f"emulate.{what}: {op.name} row addresses out of the {nbytes}-byte shared memory")
    return a


def ldmatrix(op, smem, row_addrs):
    """``ldmatrix``: registers ``(32, num)`` (uint32) loaded from shared memory.

    ``smem`` is a 1-D uint8 array (byte addressed), ``row_addrs`` the 32 lanes'
    byte addresses; lanes ``8j .. 8j+7`` give the rows of matrix ``j``.  Lane ``l``
    receives in register ``j`` the 16-bit elements ``2*(l%4)`` and ``2*(l%4)+1`` of row
    ``l/4`` (low half first), or with ``.trans`` rows ``2*(l%4)``, ``+1`` of column ``l/4``.
    """
    op = _copy_op(op, "ldmatrix", ("ldsm",))
    s = _smem_bytes(smem, "ldmatrix")
    addrs = _row_addresses(op, row_addrs, s.size, "ldmatrix")
    num = op.num_matrices
    out = np.zeros((32, num), dtype=np.uint32)
    lane = np.arange(32)
    for j in range(num):
        rows = np.stack([s[addrs[8 * j + r]: addrs[8 * j + r] + 16].view("<u2") for r in range(8)])  # [row][col]
        if op.transpose:
            lo, hi = rows[2 * (lane % 4), lane // 4], rows[2 * (lane % 4) + 1, lane // 4]
        else:
            lo, hi = rows[lane // 4, 2 * (lane % 4)], rows[lane // 4, 2 * (lane % 4) + 1]
        out[:, j] = lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)
    return out


def stmatrix(op, smem, row_addrs, regs):
    """``stmatrix``: a copy of ``smem`` with the fragments ``regs`` (32, num) stored.

    The inverse of :func:`ldmatrix`: lanes ``8j .. 8j+7`` give the row addresses of
    matrix ``j``; lane ``l``'s register ``j`` holds row ``l/4`` elements ``2*(l%4)``,
    ``+1`` (with ``.trans``: rows ``2*(l%4)``, ``+1`` of column ``l/4``).
    """
    op = _copy_op(op, "stmatrix", ("stsm",))
    s = _smem_bytes(smem, "stmatrix").copy()
    addrs = _row_addresses(op, row_addrs, s.size, "stmatrix")
    num = op.num_matrices
    r = np.asarray(regs).astype(np.uint64)
    if r.shape != (32, num):
        raise ValueError(f"emulate.stmatrix: {op.name} needs registers shaped (32, {num}), got {r.shape}")
    if np.unique(addrs[: 8 * num]).size != 8 * num:
        raise ValueError(f"emulate.stmatrix: {op.name} row addresses overlap; the result would depend on order")
    lane = np.arange(32)
    for j in range(num):
        lo = (r[:, j] & 0xFFFF).astype(np.uint16)
        hi = ((r[:, j] >> np.uint64(16)) & 0xFFFF).astype(np.uint16)
        mat = np.zeros((8, 8), dtype=np.uint16)
        if op.transpose:
            mat[2 * (lane % 4), lane // 4] = lo
            mat[2 * (lane % 4) + 1, lane // 4] = hi
        else:
            mat[lane // 4, 2 * (lane % 4)] = lo
            mat[lane // 4, 2 * (lane % 4) + 1] = hi
        for row in range(8):
            a = addrs[8 * j + row]
            s[a: a + 16] = mat[row].astype("<u2").view(np.uint8)
    return s


def copy(op, src, src_offset, dst, dst_offset):
    """UniversalCopy / ``cp.async`` of one value: a copy of ``dst`` with the bytes stored.

    ``src`` and ``dst`` are 1-D uint8 arrays, offsets in bytes; ``cp.async`` requires
    both offsets aligned to the copy size (``ValueError`` otherwise).
    """
    op = _copy_op(op, "copy", ("universal", "cp_async"))
    n = op.value_bits // 8
    s, d = _smem_bytes(src, "copy"), _smem_bytes(dst, "copy").copy()
    for what, off, arr in (("source", src_offset, s), ("destination", dst_offset, d)):
        if off < 0 or off + n > arr.size:
            raise ValueError(f"emulate.copy: {op.name} {what} bytes [{off}, {off + n}) out of range")
        if op.kind == "cp_async" and off % n:
            raise ValueError(f"emulate.copy: {op.name} {what} offset {off} is not {n}-byte aligned")
    d[dst_offset: dst_offset + n] = s[src_offset: src_offset + n]
    return d


def regs_to_bits(regs, reg_bits=32):
    """Bits ``(threads, registers*reg_bits)`` of registers; value ``v`` = bit ``v % reg_bits``
    of register ``v // reg_bits`` (the copy tables' value order)."""
    r = np.asarray(regs).astype(np.uint64)
    shifts = np.arange(reg_bits, dtype=np.uint64)
    return ((r[:, :, None] >> shifts) & np.uint64(1)).reshape(r.shape[0], -1).astype(np.uint8)


def bits_to_regs(bits, reg_bits=32):
    """Inverse of :func:`regs_to_bits`."""
    b = np.asarray(bits).astype(np.uint64)
    b = b.reshape(b.shape[0], -1, reg_bits)
    return (b << np.arange(reg_bits, dtype=np.uint64)).sum(axis=2).astype(np.uint64)
