"""Step 6: a Hopper GEMM by hand -- TMA loads into an mbarrier pipeline, warpgroup MMAs
(``wgmma``), a TMA-store epilogue; warp-specialized and persistent.

``C = A @ B.T`` with ``A`` ``(M,K)`` and ``B`` ``(N,K)`` K-major float16, ``C`` ``(M,N)``
row-major float16 (float32 accumulation), on an H100 or H200 (``sm_90a``). ``M``, ``N`` and
``K`` are kernel arguments: one compilation serves every problem size; TMA zero-fills what a
load reads past the edges, and clips the stores.

* Warpgroup 0 is the producer: one thread walks the CTA's tiles and, for each k-tile,
  waits until a stage of the pipeline is empty, tells its "full" barrier how many bytes to
  expect and issues the TMA loads of A's and B's boxes into it.
* Warpgroups 1 and 2 are consumers, 64 rows of the 128x256 tile each: for each k-tile they
  wait until the stage is full, issue its four ``wgmma`` m64n256k16 (descriptors read off the
  stage layouts) and, once the previous k-tile's MMAs are done, release that k-tile's stage.
  After the tile's last k-tile they convert the accumulators (``CLayout_64x256``) to f16,
  stage them in shared memory in the swizzled layout the TMA store reads, and store them.
* A CTA per multiprocessor walks the tiles ``gridDim.x`` apart, rastered 8 tile rows at a
  time (the tile scheduler), so the CTAs running at once share rows of A and columns of B
  in L2.

Every piece is a ``codegen.cute`` object built here from layouts (``gmma_stage``,
``make_tma_load``, ``make_wgmma``, ``make_tma_store_epilogue``): a compile-time constant of
the kernel whose methods are inlined into it (docs/user_kernels.md). The library's own
generated Hopper GEMM is composed of the same pieces.

Run it: ``python examples/hopper_gemm.py`` (on an H100/H200, or with
``NUMBA_ENABLE_CUDASIM=1``, which runs one CTA of a small problem).
"""

from dataclasses import dataclass, replace

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.cute.launch import require_device
from numba import cuda, float32
from layoutalg import cosize

BM, BN, BK, STAGES, GROUP_M = 128, 256, 64, 4, 8
CONSUMERS = BM // 64                                   # consumer warpgroups, 64 rows of the tile each
THREADS = 128 * (1 + CONSUMERS)

SA = cute.gmma_stage("f16", "K", BM, BK)               # (BM,BK) -> offset: Sw<3,3,3> o (128,64):(64,1)
SB = cute.gmma_stage("f16", "K", BN, BK)               # (BN,BK) -> offset: Sw<3,3,3> o (256,64):(64,1)
A_BYTES, B_BYTES = 2 * cosize(SA.inner), 2 * cosize(SB.inner)   # one stage of each
LOAD_A = cute.make_tma_load("A", "f16", "K", SA)       # one 64x128 box a stage (64 = BK: a 128-byte row)
LOAD_B = cute.make_tma_load("B", "f16", "K", SB)       # one 64x256 box a stage
MMA = cute.make_wgmma("f16", "f16", BN, SA, SB, "K", "K")       # 4 x wgmma m64n256k16 a k-tile
C_STAGING = cute.make_tma_store_epilogue("f16", BN, 0)         # CLayout_64x256 -> swizzled boxes -> TMA

STORAGE = cute.SharedStorage((
    ("a", STAGES * A_BYTES, 1024),                     # the pipeline's stages of A and B
    ("b", STAGES * B_BYTES, 1024),
    ("c", CONSUMERS * C_STAGING.consumer_bytes, 1024),  # each consumer's two C box buffers
    ("full", 8 * STAGES, 8),                           # mbarriers: a stage's bytes arrived
    ("empty", 8 * STAGES, 8),                          # mbarriers: every consumer is done with it
))
PIPE = cute.TmaPipeline(STAGES, A_BYTES + B_BYTES, STORAGE.full, STORAGE.empty, arrivals=CONSUMERS)
EPILOGUE = replace(C_STAGING, staging=STORAGE.c)
SCHED = cute.TileScheduler(BM, BN, BK, GROUP_M)
A_ROWS = 2 * SA.inner(64, 0)                           # bytes from one consumer's 64 rows of A to the next

ARGS = cute.KernelParams("HopperArgs", (
    ("tmap_a", "i64"), ("tmap_b", "i64"), ("tmap_c", "i64"), ("alpha", "f32"), ("err", "i64"),
) + cute.TileScheduler.ARGS)
HopperArgs = ARGS.tuple_class()


@cuda.jit(device=True, inline="always")
def producer(p):
    """One thread: the TMA loads of every k-tile of this CTA's tiles, into the pipeline."""
    LOAD_A.acquire(p.tmap_a)                           # the host-written maps, visible to the TMA unit
    LOAD_B.acquire(p.tmap_b)
    LOAD_A.prefetch(p.tmap_a)
    LOAD_B.prefetch(p.tmap_b)
    base = cute.smem_base()
    state = PIPE.producer_start()
    sched = SCHED.params(p)
    for unit in SCHED.units(sched):
        tile = SCHED.work(sched, unit)                 # its corner (m0, n0), matrix l (0) and k-tiles
        for kt in range(tile.kt0, tile.kt1):
            PIPE.producer_acquire(state, p.err)        # the stage is empty; expect its bytes
            bar = PIPE.full_barrier(state)
            LOAD_A.load(p.tmap_a, base + STORAGE.a + state.stage * A_BYTES, tile.m0, kt * BK, tile.l, bar)
            LOAD_B.load(p.tmap_b, base + STORAGE.b + state.stage * B_BYTES, tile.n0, kt * BK, tile.l, bar)
            state = PIPE.advance(state)


@cuda.jit(device=True, inline="always")
def consumer(p, c):
    """Consumer warpgroup ``c``: wgmma on its 64 rows of each tile, then the TMA-store epilogue."""
    EPILOGUE.prepare(p)
    base = cute.smem_base()
    state = PIPE.consumer_start()
    prev = state
    acc = MMA.zero()                                   # CLayout_64x256: (T128,V128) -> (m,n)
    accs = cuda.local.array(MMA.acc_regs, float32)     # the same, indexed by constants once unrolled
    nbox = 0
    sched = SCHED.params(p)
    for unit in SCHED.units(sched):
        tile = SCHED.work(sched, unit)
        for kt in range(tile.kt0, tile.kt1):
            PIPE.consumer_wait(state, p.err)           # the stage's bytes arrived
            a = base + STORAGE.a + state.stage * A_BYTES + c * A_ROWS
            b = base + STORAGE.b + state.stage * B_BYTES
            acc = MMA.mma(acc, a, b, kt == tile.kt0)   # the tile's first k-tile ignores acc
            acc = MMA.wait(acc, 1)                     # the k-tile before is done: release its stage
            if kt > tile.kt0:
                PIPE.consumer_release(prev, 0)
            prev = state
            state = PIPE.advance(state)
        acc = MMA.wait(acc, 0)
        PIPE.consumer_release(prev, 0)
        MMA.to_array(acc, accs)
        nbox = EPILOGUE.store_tile(p, acc, accs, tile, c, nbox, p.alpha)
    EPILOGUE.drain()


def hopper_gemm(tmap_a, tmap_b, tmap_c, alpha, err, rows_m, group, ktiles, whole, splits, units, tiles, batch_units):
    p = HopperArgs(tmap_a, tmap_b, tmap_c, alpha, err, rows_m, group, ktiles, whole, splits, units, tiles,
                   batch_units)
    PIPE.init()                                        # every thread waits until the barriers exist
    if cuda.threadIdx.x < 128:                         # warpgroup 0: the producer
        cute.setmaxnreg_dec(40)
        if cuda.threadIdx.x == 0:
            producer(p)
    else:                                              # warpgroups 1, 2: the consumers
        cute.setmaxnreg_inc(232)
        consumer(p, (cuda.threadIdx.x >> 7) - 1)


@dataclass
class HopperGemm:
    """The compiled kernel and what a launch needs besides the arrays."""

    kernel: object
    sms: int


def make_gemm():
    """The kernel, compiled on first launch (one compilation for every M, N, K)."""
    kernel = cuda.jit(ARGS.signature(), launch_bounds=(THREADS, 1))(hopper_gemm) if not cute.SIMULATED \
        else cuda.jit(hopper_gemm)
    sms = 2 if cute.SIMULATED else cuda.get_current_device().MULTIPROCESSOR_COUNT
    return HopperGemm(kernel, sms)


def _address(x):
    return x.__cuda_array_interface__["data"][0] if hasattr(x, "__cuda_array_interface__") \
        else x.__array_interface__["data"][0]


def _device_map(encoded, keep):
    """A tensor map's address in device memory (in the simulator, the encoded host map's)."""
    if cute.SIMULATED:
        arr, addr = encoded
        keep.append(arr)
        return addr
    dev = cuda.to_device(np.frombuffer(encoded, dtype=np.uint8))
    keep.append(dev)
    return dev.__cuda_array_interface__["data"][0]


@dataclass
class HopperLaunch:
    """A prepared launch: the tensor maps encoded, the scheduler's numbers computed, the
    kernel's arguments in place; calling it launches (``err``: the int32 error word that a
    timed-out wait sets)."""

    kernel: object
    grid: int
    stream: object
    args: list
    err: object
    keep: list

    def __call__(self):
        self.kernel[self.grid, THREADS, self.stream, STORAGE.nbytes](*self.args)


def prepare(g, a, b, c, alpha=1.0, stream=0):
    """``c = alpha * a @ b.T`` for device arrays ``a`` (M,K), ``b`` (N,K), ``c`` (M,N) (numba
    or torch; numpy in the simulator), as a :class:`HopperLaunch`."""
    from codegen.cute.launch import allow_dynamic_shared

    (M, K), N = a.shape, b.shape[0]
    keep = []
    sim = cute.SIMULATED
    if sim:
        from codegen.intrinsics.sim import register_global

        for x in (a, b, c):                            # the simulated TMA reads and writes them
            register_global(x)
    tmap_a = _device_map(LOAD_A.tensor_map(_address(a), (M, K), (K, 1), sim), keep)
    tmap_b = _device_map(LOAD_B.tensor_map(_address(b), (N, K), (K, 1), sim), keep)
    tmap_c = _device_map(EPILOGUE.store.tensor_map(_address(c), (M, N), N, sim), keep)
    err = np.zeros(1, np.int32) if sim else cuda.to_device(np.zeros(1, np.int32))
    err_addr = register_global(err) if sim else _address(err)
    grid = max(1, min(-(-M // BM) * -(-N // BN), g.sms))
    sched = SCHED.host_params(M, N, K, grid)
    args = [tmap_a, tmap_b, tmap_c, float(alpha), err_addr] + [sched[n] for n, _ in cute.TileScheduler.ARGS]
    kern = g.kernel if sim else allow_dynamic_shared(g.kernel, nbytes=STORAGE.nbytes, signature=ARGS.signature())
    return HopperLaunch(kern, grid, stream, args, err, keep + [a, b, c])


def error_word(launch):
    """The launch's error word: 1 if a wait on an mbarrier timed out."""
    return int(launch.err[0] if cute.SIMULATED else launch.err.copy_to_host()[0])


def run(M=130, N=264, K=72, seed=0):
    """The kernel on small integers (exact in f16 and f32): 4 tiles, each of 2 k-tiles, on 2
    CTAs; residues in M, N and K."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    g = make_gemm()
    if cute.SIMULATED:
        launch = prepare(g, a, b, c)
        launch()
    else:
        da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(c)
        launch = prepare(g, da, db, dc)
        launch()
        cuda.synchronize()
        c = dc.copy_to_host()
    assert error_word(launch) == 0, "a wait on an mbarrier timed out"
    return c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64).T


TOLERANCE = 0.0                            # small integers: every product and sum exact in f16/f32

if __name__ == "__main__":
    require_device("examples/hopper_gemm.py")
    out, ref = run()
    err = float(np.max(np.abs(out - ref)))
    print(f"hopper_gemm: {out.shape[0]}x{out.shape[1]}x72, max abs error {err:.2e}")
    assert err <= TOLERANCE
