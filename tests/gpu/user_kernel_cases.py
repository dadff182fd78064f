"""Small kernels written against ``codegen.cute`` that exercise one API detail each, and their
numpy checks.  ``tests/test_user_kernel_api.py`` compiles them offline to PTX and runs them
in numba's simulator; ``tests/gpu/check_user_kernels.py`` runs them on a GPU.

Each ``check_<name>()`` launches its kernel and returns ``(ok, message)``.
"""

import numpy as np
from numba import cuda

from codegen import cute
from codegen.cute.launch import launch
from layoutalg import CopyAtom, Layout, make_identity_tensor, make_tensor, make_tiled_copy, \
    make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma

FULL = 0xFFFFFFFF


def bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even (finite inputs)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)


def bf16_values(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


# ---- convert: f32 -> bf16 bits, f16, f16 bits, int ----------------------------------------------

LN = Layout((4, 32))                               # (V4,T32) -> offset: thread t's 4 values


def k_convert(X, B, H, HB, I, T):                  # noqa: E741
    t = cuda.threadIdx.x
    x = cute.make_tensor(X, LN)[None, t]
    f = cute.make_fragment_like(x)                 # float32 registers
    cute.copy(x, f)
    b = cute.make_fragment_like(x, np.uint16)      # bf16 bits
    cute.convert(f, b, "bf16")
    cute.copy(b, cute.make_tensor(B, LN)[None, t])
    h = cute.make_fragment_like(x, np.float16)
    cute.convert(f, h, "f16")
    cute.copy(h, cute.make_tensor(H, LN)[None, t])
    hb = cute.make_fragment_like(x, np.int16)      # f16 bits in an integer fragment
    cute.convert(f, hb, "f16")
    cute.copy(hb, cute.make_tensor(HB, LN)[None, t])
    n = cute.make_fragment_like(x, np.int32)
    cute.convert(f, n, "int")
    cute.copy(n, cute.make_tensor(I, LN)[None, t])
    g = cute.make_fragment_like(x)                 # tf32 values, rounded to nearest (ties away)
    cute.convert(f, g, "tf32")
    cute.copy(g, cute.make_tensor(T, LN)[None, t])


SIG_CONVERT = "void(float32[::1], uint16[::1], float16[::1], int16[::1], int32[::1], float32[::1])"


def tf32_rna(x):
    """float32 ``x`` rounded to tf32, nearest with ties away from zero (numpy; NaN: canonical)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    out = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, np.uint32(0x7FFFFFFF), out).view(np.float32)


def k_copy_f32_to_u16(X, B):
    x = cute.make_tensor(X, LN)[None, 0]
    b = cute.make_fragment_like(x, np.uint16)
    cute.copy(x, b)                                # refused: converts numbers, not bits
    B[0] = b[0]


def k_convert_bad(X, B):
    x = cute.make_tensor(X, LN)[None, 0]
    b = cute.make_fragment_like(x, np.uint16)
    cute.convert(x, b, "bf8")
    B[0] = b[0]


def check_convert():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(128) * 100).astype(np.float32)
    x[:4] = [1.5, -3.0, 1.00390625, -2.7]
    x[4:8] = np.array([0x3F801000, 0xBF803000, 0x3F800FFF, 0x7F7FFFFF], np.uint32).view(np.float32)  # ties, max
    b, h, i = np.zeros(128, np.uint16), np.zeros(128, np.float16), np.zeros(128, np.int32)
    hb, t = np.zeros(128, np.int16), np.zeros(128, np.float32)
    cuda.jit(k_convert)[1, 32](x, b, h, hb, i, t)
    inr = np.abs(x) < 2.0 ** 31                  # x[7] is the largest float: tf32's case, not int32's
    ok = (np.array_equal(b, bf16_bits(x)) and np.array_equal(h, x.astype(np.float16))
          and np.array_equal(hb, x.astype(np.float16).view(np.int16))
          and np.array_equal(i[inr], np.trunc(x[inr]).astype(np.int32))       # "int" out of range: undefined
          and np.array_equal(t.view(np.uint32), tf32_rna(x).view(np.uint32)))
    return ok, (f"bf16 bits of 1.5, -3.0: {b[0]:#06x} {b[1]:#06x}; tf32 of a tie 1+2^-11: {t[4]!r}; f16, f16 bits, "
                f"tf32 and int exact: {ok}")


# ---- copy_if: cp.async with zero fill past the edge, element-wise predicated stores -------------

ZF = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"),
                     Layout((16, 2), (2, 1)), Layout((1, 8)))         # 32 threads, a 16x16 tile
ROWS = 10                                                              # the matrix is 10 x 16
LG = Layout((16, 16), (16, 1))     # (MP,K) -> offset: the rounded-up tile over the matrix's strides
PRED1 = Layout((1, 1))             # one predicate per cp.async call: (CPY_M,CPY_K)


def k_copy_if(X, Y, Z):
    t = cuda.threadIdx.x
    thr = ZF.get_slice(t)
    s = cute.make_shared_tensor(np.float16, LG)
    tg = thr.partition_S(cute.make_tensor(X, LG))                   # (CPY,1,1)
    ts = thr.partition_D(s)
    tc = thr.partition_S(cute.make_identity_tensor((16, 16)))        # their coordinates
    p = cute.make_fragment_like(PRED1, np.int8)
    p[0] = tc[0][0] < ROWS
    cute.copy_if(ZF, p, tg, ts)                                      # rows >= 10: zero-filled
    cute.cp_async_fence()
    cute.cp_async_wait(0)
    cuda.syncthreads()
    cute.copy(ts, thr.partition_D(cute.make_tensor(Y, LG)))         # all 16 rows out
    tz = thr.partition_D(cute.make_tensor(Z, LG))                   # Z: 10 rows and a guard
    q = cute.make_fragment_like(tz, np.int8)
    for i in range(cute.size(q)):
        q[i] = tc[i][0] < ROWS
    cute.copy_if(q, ts, tz)                                          # element-wise, rows < 10 only


SIG_COPY_IF = "void(float16[::1], float16[::1], float16[::1])"


def check_copy_if():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(ROWS * 16).astype(np.float16)
    y = np.full(256, 7.0, np.float16)
    z = np.full(ROWS * 16 + 1, 7.0, np.float16)                     # one guard element
    cuda.jit(k_copy_if)[1, 32](x, y, z)
    ok_fill = np.array_equal(y[:ROWS * 16], x) and not y[ROWS * 16:].any()
    ok_pred = np.array_equal(z[:-1], x) and z[-1] == 7.0
    return ok_fill and ok_pred, f"zero fill past row {ROWS}: {ok_fill}; predicated stores, guard untouched: {ok_pred}"


# ---- warp shuffles and votes ---------------------------------------------------------------

def k_shuffle(out, fout):
    t = cuda.threadIdx.x
    v = t * 10
    out[t, 0] = cuda.shfl_sync(FULL, v, (t + 1) & 31)
    out[t, 1] = cuda.shfl_up_sync(FULL, v, 2)
    out[t, 2] = cuda.shfl_down_sync(FULL, v, 3)
    out[t, 3] = cuda.shfl_xor_sync(FULL, v, 5)
    out[t, 4] = cuda.ballot_sync(FULL, t & 1)                          # numba: a signed int32
    out[t, 5] = cuda.all_sync(FULL, t < 40) + 2 * cuda.any_sync(FULL, t == 7)
    cuda.syncwarp(FULL)
    x = np.float32(t) + np.float32(0.5)
    for off in (16, 8, 4, 2, 1):                                     # a warp sum
        x += cuda.shfl_xor_sync(FULL, x, off)
    fout[t] = x


SIG_SHUFFLE = "void(int64[:, ::1], float32[::1])"


def check_shuffle():
    out, fout = np.zeros((32, 6), np.int64), np.zeros(32, np.float32)
    cuda.jit(k_shuffle)[1, 32](out, fout)
    t = np.arange(32)
    want = np.stack([((t + 1) & 31) * 10, np.where(t >= 2, t - 2, t) * 10, np.where(t + 3 < 32, t + 3, t) * 10,
                     (t ^ 5) * 10, np.full(32, np.int32(-0x55555556)), np.full(32, 3)], axis=1)
    ok = np.array_equal(out, want) and np.all(fout == 512.0)
    return ok, f"shfl idx/up/down/xor, ballot, all/any, a warp sum: {ok}"


# ---- bf16 MMA: partition_fragment_A/B give uint16 fragments that ldmatrix fills ---------------

MMA_BF16 = make_tiled_mma("SM80_16x8x16_F32BF16BF16F32_TN")
LDSM_A = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "bf16"), MMA_BF16)
LDSM_B = make_tiled_copy_B(CopyAtom("SM75_U32x2_LDSM_N", "bf16"), MMA_BF16)
LA, LB, LC = Layout((16, 16), (16, 1)), Layout((8, 16), (16, 1)), Layout((16, 8), (8, 1))   # K-major A, B


def k_bf16_mma(A, B, C):
    t = cuda.threadIdx.x
    sA = cute.make_shared_tensor(np.uint16, LA)
    sB = cute.make_shared_tensor(np.uint16, LB)
    for i in range(8):                             # row-major A (16x16) and B (8x16) into shared memory
        j = t * 8 + i
        sA[j // 16, j % 16] = A[j]
    for i in range(4):
        j = t * 4 + i
        sB[j // 16, j % 16] = B[j]
    cuda.syncthreads()
    thr = MMA_BF16.get_slice(t)
    a = thr.partition_fragment_A(sA)               # uint16 bits, as make_fragment_A gives
    b = thr.partition_fragment_B(sB)
    c = thr.partition_fragment_C(cute.make_tensor(C, LC))
    cute.clear(c)
    cute.copy(LDSM_A, LDSM_A.get_slice(t).partition_S(sA), LDSM_A.get_slice(t).retile_D(a))
    cute.copy(LDSM_B, LDSM_B.get_slice(t).partition_S(sB), LDSM_B.get_slice(t).retile_D(b))
    cute.gemm(MMA_BF16, c, a, b)
    cute.copy(c, thr.partition_C(cute.make_tensor(C, LC)))


SIG_BF16_MMA = "void(uint16[::1], uint16[::1], float32[::1])"


def check_bf16_mma():
    rng = np.random.default_rng(2)
    a = bf16_bits(rng.standard_normal((16, 16)))
    b = bf16_bits(rng.standard_normal((8, 16)))
    c = np.zeros(128, np.float32)
    cuda.jit(k_bf16_mma)[1, 32](a.reshape(-1), b.reshape(-1), c)
    ref = bf16_values(a).astype(np.float64) @ bf16_values(b).astype(np.float64).T
    err = float(np.abs(c.reshape(16, 8) - ref).max())
    return err < 1e-4, f"16x8x16 bf16 through ldmatrix, max abs error {err:.2e}"


# ---- local_partition with a 1-tuple projection, given as a global --------------------------------

LP = Layout((8, 32), (32, 1))                      # (M8,K32) row-major
THR = Layout((4, 32), (32, 1))                     # (ThrM,ThrK) -> thread
PROJ = (1, None)                                   # a global projection: keep ThrM


def k_partition(X, out):
    t = cuda.threadIdx.x
    r = cute.local_partition(cute.make_tensor(X, LP), THR, t, PROJ)     # (2,32), as CuTe
    out[t, 0] = r[0, 1]
    out[t, 1] = r[1, 31]
    out[t, 2] = cute.size(r, 0)


SIG_PARTITION = "void(float32[::1], float32[:, ::1])"


def check_partition():
    x = np.arange(256, dtype=np.float32)
    out = np.zeros((128, 3), np.float32)
    cuda.jit(k_partition)[1, 128](x, out)
    want = np.zeros_like(out)
    for t in range(128):
        h = _host_partition(x, t)
        want[t] = (h[0, 1], h[1, 31], 2)
    return np.array_equal(out, want), f"(1, None) projection as a global, a (2,32) partition per thread"


def _host_partition(x, t):
    from layoutalg import local_partition

    return local_partition(make_tensor(x, LP), THR, t, PROJ)


# ---- UniversalFMA: a tiled MMA of scalar fused multiply-adds on CUDA cores ------------------------

FMA = make_tiled_mma("UniversalFMA", (16, 16, 1))                  # (T256) -> a 16x16x1 tile
LA_F, LB_F, LC_F = Layout((32, 8), (8, 1)), Layout((32, 8), (8, 1)), Layout((32, 32), (32, 1))


def k_fma_gemm(A, B, C):
    """``C = A @ B.T`` (32x32x8, float32 or float64), each thread its 2x2 outputs."""
    thr = FMA.get_slice(cuda.threadIdx.x)
    tA = thr.partition_A(cute.make_tensor(A, LA_F))                   # (1,2,8)
    tB = thr.partition_B(cute.make_tensor(B, LB_F))
    tC = thr.partition_C(cute.make_tensor(C, LC_F))                   # (1,2,2)
    rA, rB, rC = cute.make_fragment_like(tA), cute.make_fragment_like(tB), cute.make_fragment_like(tC)
    cute.copy(tA, rA)
    cute.copy(tB, rB)
    cute.clear(rC)
    cute.gemm(FMA, rC, rA, rB)
    cute.copy(rC, tC)


SIG_FMA = "void(float32[::1], float32[::1], float32[::1])"


def check_fma():
    rng = np.random.default_rng(7)
    ok, errs = True, []
    for dt in (np.float32, np.float64):
        a, b = rng.standard_normal((32, 8)).astype(dt), rng.standard_normal((32, 8)).astype(dt)
        c = np.zeros(32 * 32, dt)
        cuda.jit(k_fma_gemm)[1, 256](a.reshape(-1), b.reshape(-1), c)
        err = float(np.abs(c.reshape(32, 32) - a.astype(np.float64) @ b.astype(np.float64).T).max())
        ok, errs = ok and err < (1e-5 if dt == np.float32 else 1e-12), errs + [f"{np.dtype(dt).name} {err:.1e}"]
    return ok, "32x32x8 UniversalFMA, max abs error " + ", ".join(errs)


# ---- a device function taking cute tensors --------------------------------------------------

@cuda.jit(device=True, inline="always")
def axpy_fragment(a, y, alpha):
    for i in range(cute.size(a)):
        y[i] = alpha * a[i] + y[i]


def k_device_function(X, Y):
    t = cuda.threadIdx.x
    x = cute.make_tensor(X, LN)[None, t]
    y = cute.make_tensor(Y, LN)[None, t]
    f = cute.make_fragment_like(x)
    cute.copy(x, f)
    axpy_fragment(f, y, np.float32(2.0))


SIG_DEVICE_FUNCTION = "void(float32[::1], float32[::1])"


def check_device_function():
    x = np.arange(128, dtype=np.float32)
    y = np.ones(128, np.float32)
    cuda.jit(k_device_function)[1, 32](x, y)
    return np.array_equal(y, 2 * np.arange(128) + 1), "axpy in a device function over cute tensors"


# ---- torch bf16 tensors through launch() (GPU only: torch tensors live on the GPU) ---------------

def k_bf16_copy(X, Y):
    t = cuda.threadIdx.x
    cute.copy(cute.make_tensor(X, LN)[None, t], cute.make_tensor(Y, LN)[None, t])


def check_torch_bf16():
    import torch

    x = torch.randn(128, device="cuda").to(torch.bfloat16)
    y = torch.zeros(128, device="cuda", dtype=torch.bfloat16)
    launch(cuda.jit(k_bf16_copy), 1, 32, x, y)
    torch.cuda.synchronize()
    return bool(torch.equal(x, y)), "a bf16 tensor in and out of a kernel without .view()"


# ---- run-time shapes: one compilation for every size, residues by identity-tensor predicates ----

THR8 = Layout((8, 8), (8, 1))                     # (ThrM,ThrN) -> thread: 64 threads, n fastest


@cuda.jit(device=True, inline="always")
def axpby_tile(mX, mY, M, N, alpha):
    """``Y = alpha * X + Y`` on this block's 32x32 tile of the ``M x N`` tensors."""
    tid, bm, bn = cuda.threadIdx.x, cuda.blockIdx.x, cuda.blockIdx.y
    gX = cute.local_tile(mX, (32, 32), (bm, bn))                                    # (32,32), maybe partial
    gY = cute.local_tile(mY, (32, 32), (bm, bn))
    cI = cute.local_tile(cute.make_identity_tensor((M, N)), (32, 32), (bm, bn))     # (32,32) -> (m,n)
    tX = cute.local_partition(gX, THR8, tid)                                         # (4,4) each
    tY = cute.local_partition(gY, THR8, tid)
    tC = cute.local_partition(cI, THR8, tid)
    for i in range(cute.size(tX)):
        c = tC[i]
        if c[0] < M and c[1] < N:
            tY[i] = alpha * tX[i] + tY[i]


def k_runtime_axpby(X, Y, M, N, ld, alpha):
    """``Y = alpha * X + Y`` on an ``M x N`` matrix of row stride ``ld``, all three run-time."""
    L = cute.make_layout((M, N), (ld, 1))                                            # (M,N) -> offset
    axpby_tile(cute.make_tensor(X, L), cute.make_tensor(Y, L), M, N, alpha)


def k_pointer_axpby(X, Y, M, N, ld, alpha):
    """The same over raw addresses (``make_ptr``), as a kernel given ``data_ptr()`` values."""
    L = cute.make_layout((M, N), (ld, 1))                                            # (M,N) -> offset
    axpby_tile(cute.make_tensor(cute.make_ptr(np.float32, X), L), cute.make_tensor(cute.make_ptr(np.float32, Y), L),
               M, N, alpha)


SIG_POINTER = "void(int64, int64, int64, int64, int64, float32)"


def check_pointer():
    """``make_ptr``: tensors over the addresses of device arrays (registered arrays in the
    simulator); the elements past N and after the matrix are not touched."""
    rng = np.random.default_rng(6)
    M, N, ld = 50, 70, 72
    x = rng.standard_normal((M, ld)).astype(np.float32).reshape(-1)
    y = np.concatenate([rng.standard_normal(M * ld).astype(np.float32), np.float32([7.0])])
    ref = y.copy()
    ref[:-1].reshape(M, ld)[:, :N] += np.float32(2.0) * x.reshape(M, ld)[:, :N]
    kern = cuda.jit(k_pointer_axpby)
    grid = (-(-M // 32), -(-N // 32))
    if cute.SIMULATED:
        from codegen.intrinsics.sim import register_global, unregister_global

        try:
            kern[grid, 64](register_global(x), register_global(y), M, N, ld, np.float32(2.0))
        finally:
            unregister_global(x)
            unregister_global(y)
        out = y
    else:
        dx, dy = cuda.to_device(x), cuda.to_device(y)
        kern[grid, 64](dx.device_ctypes_pointer.value, dy.device_ctypes_pointer.value, M, N, ld, np.float32(2.0))
        out = dy.copy_to_host()
    ok = np.array_equal(out, ref)
    return ok, f"a 50x70 matrix of row stride 72 through raw addresses, exact: {ok}"


SIG_RUNTIME = "void(float32[::1], float32[::1], int64, int64, int64, float32)"


def check_runtime_shape():
    kern = cuda.jit(k_runtime_axpby)
    rng = np.random.default_rng(5)
    ok = True
    for M, N, ld in ((50, 70, 72), (33, 8, 8), (64, 96, 101)):
        x = rng.standard_normal((M, ld)).astype(np.float32)
        y = rng.standard_normal((M, ld)).astype(np.float32)
        ref = y.copy()
        ref[:, :N] = np.float32(2.0) * x[:, :N] + y[:, :N]      # the columns past N are not touched
        yg = np.concatenate([y.reshape(-1), np.float32([7.0])])  # and nothing after the matrix
        kern[(-(-M // 32), -(-N // 32)), 64](x.reshape(-1), yg, M, N, ld, np.float32(2.0))
        ok = ok and np.array_equal(yg[:-1].reshape(M, ld), ref) and yg[-1] == 7.0
    if cute.SIMULATED:                         # nothing is compiled there
        return ok, f"three sizes and row strides, exact: {ok}"
    compiled = len(kern.overloads)
    return ok and compiled == 1, f"three sizes and row strides, exact: {ok}; {compiled} compilation(s)"


# ---- mark_in_bounds: a fragment of predicates at once ---------------------------------------------

MARK_FRAG = Layout((4, 6))                                           # (4,6) -> predicate, compact
SIG_MARK = "void(int8[::1], int64, int64)"


def k_mark(out, m, n):
    c = cute.domain_offset((-1, 2), cute.make_identity_tensor((4, 6)))   # coordinates from (-1, 2)
    p = cute.make_fragment_like(MARK_FRAG, np.int8)
    cute.mark_in_bounds(p, c, (m, n))
    for i in range(24):
        out[i] = p[i]


def check_mark():
    ok = True
    for m, n in ((2, 6), (4, 9), (0, 3), (3, 2)):
        out = np.full(24, 7, np.int8)
        cuda.jit(k_mark)[1, 1](out, m, n)
        want = [int(0 <= i % 4 - 1 < m and 0 <= i // 4 + 2 < n) for i in range(24)]
        ok = ok and out.tolist() == want
    return ok, f"mark_in_bounds of coordinates from (-1, 2) inside (m, n): {ok}"


CHECKS = {
    "convert": check_convert,
    "copy_if": check_copy_if,
    "shuffle": check_shuffle,
    "bf16_mma": check_bf16_mma,
    "partition": check_partition,
    "device_function": check_device_function,
    "runtime_shape": check_runtime_shape,
    "pointer": check_pointer,
    "fma": check_fma,
    "mark_in_bounds": check_mark,
}
#: Kernels and signatures for offline PTX.
KERNELS = {
    "convert": (k_convert, SIG_CONVERT),
    "copy_if": (k_copy_if, SIG_COPY_IF),
    "shuffle": (k_shuffle, SIG_SHUFFLE),
    "bf16_mma": (k_bf16_mma, SIG_BF16_MMA),
    "partition": (k_partition, SIG_PARTITION),
    "device_function": (k_device_function, SIG_DEVICE_FUNCTION),
    "runtime_shape": (k_runtime_axpby, SIG_RUNTIME),
    "pointer": (k_pointer_axpby, SIG_POINTER),
    "fma": (k_fma_gemm, SIG_FMA),
    "mark_in_bounds": (k_mark, SIG_MARK),
}
