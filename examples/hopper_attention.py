"""Step 8: attention on Hopper from the library's pieces -- the kernel that ``codegen.attention``
runs on an H100 or H200 (``sm_90a``), put together and launched by hand.

``o = softmax(q k^T / sqrt(d)) v`` for ``q`` ``(batch, heads, seq_q, d)`` and ``k``, ``v``
``(batch, kv_heads, seq_k, d)`` (float16, head dim 64, causal here). Everything the kernel
does is a method of one compile-time object, :func:`codegen.attention_sm90.make_hopper_attention`'s
``HopperAttention``, built from the layouts:

* ``FA.load_q`` / ``load_k`` / ``load_v``: TMA loads of rank-4 maps ``(d, seq, heads, batch)``
  into the swizzled shared layouts that wgmma reads (``gmma_stage``);
* ``FA.pipe_q`` / ``pipe_k`` / ``pipe_v``: mbarrier pipelines, one stage of Q, two of K and V;
* ``FA.mma_s``: ``S = Q K^T`` on wgmma, both operands in shared memory; ``FA.mma_o``:
  ``O += P V`` on wgmma with ``P`` in registers (S's accumulators, rounded to 16 bits: the
  layouts say they are the A fragments in order);
* ``FA.producer``: one thread issuing the loads of each tile; ``FA.consumer``: a warpgroup's
  64 queries, the online softmax overlapped with ``P V``, the two consumers taking turns.

This file writes the kernel's entry (warp specialization and register reallocation), encodes
the tensor maps and launches one CTA per tile of 128 queries. With ``causal`` each CTA reads
its tiles from a table planned on the host (``codegen.attention_schedule.CausalSchedule``):
planned here for a CTA a tile, and by ``codegen.attention`` for its persistent grid of a CTA
an SM, so the same kernel runs either way.

Run it: ``python examples/hopper_attention.py`` (on an H100/H200, or with
``NUMBA_ENABLE_CUDASIM=1``, which runs the two CTAs of a small problem).
"""

import math

import numpy as np

from codegen import cute  # (before numba: see codegen/_numpy_compat.py)
from codegen.attention_schedule import CausalSchedule, causal_keys
from codegen.attention_sm90 import HOPPER_ARGS, LOG2E, make_hopper_attention
from codegen.cute.launch import require_device
from numba import cuda

D, CAUSAL = 64, True
FA = make_hopper_attention("f16", D, CAUSAL, bm=128, bn=128)   # the layouts, loads, pipelines and MMAs:
                                                               # two consumer warpgroups, 128 keys a tile
PRODUCER_REGS, CONSUMER_REGS = FA.regs                 # setmaxnreg's registers a thread
Args = HOPPER_ARGS.tuple_class()                       # the kernel's arguments as one value


def hopper_attention(tmap_q, tmap_k, tmap_v, o, lse, B, Sq, Sk, H, ratio, osb, osh, oss, qk, err, ws, whole, splits,
                     units, sched):
    p = Args(tmap_q, tmap_k, tmap_v, o, lse, B, Sq, Sk, H, ratio, osb, osh, oss, qk, err, ws, whole, splits, units,
             sched)
    FA.init()                                          # the mbarriers, then every thread waits
    if cuda.threadIdx.x < 128:                         # warpgroup 0: the producer
        cute.setmaxnreg_dec(PRODUCER_REGS)             # gives registers up ...
        if cuda.threadIdx.x == 0:
            FA.producer(p)
    else:                                              # warpgroups 1 on: the consumers
        cute.setmaxnreg_inc(CONSUMER_REGS)             # ... and they take them
        FA.consumer(p, (cuda.threadIdx.x >> 7) - 1)


def _address(x, keep):
    if cute.SIMULATED:
        from codegen.intrinsics.sim import register_global

        keep.append(x)
        return register_global(x)                      # the simulated TMA and stores reach it
    return x.__cuda_array_interface__["data"][0]


def _device_map(encoded, keep):
    """A tensor map's device address (in the simulator, the encoded host map's)."""
    if cute.SIMULATED:
        arr, addr = encoded
        keep.append(arr)
        return addr
    dev = cuda.to_device(np.frombuffer(encoded, dtype=np.uint8))
    keep.append(dev)
    return dev.__cuda_array_interface__["data"][0]


def launch(q, k, v, o):
    """``o = attention(q, k, v)`` for arrays of shape ``(B, H, S, D)`` (numba device arrays;
    numpy in the simulator), contiguous. Returns the error word (1: a wait timed out)."""
    B, H, Sq, _ = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    keep, sim = [], cute.SIMULATED
    heads_batch = lambda x: ((x.shape[1], x.shape[2] * D), (B, x.shape[1] * x.shape[2] * D))   # noqa: E731
    tq = _device_map(FA.load_q.tensor_map_4d(_address(q, keep), (Sq, D), (D, 1), heads_batch(q), sim), keep)
    tk = _device_map(FA.load_k.tensor_map_4d(_address(k, keep), (Sk, D), (D, 1), heads_batch(k), sim), keep)
    tv = _device_map(FA.load_v.tensor_map_4d(_address(v, keep), (D, Sk), (1, D), heads_batch(v), sim), keep)
    err = np.zeros(1, np.int32) if sim else cuda.to_device(np.zeros(1, np.int32))
    n_m, n_kt = -(-Sq // FA.bm), -(-Sk // FA.bn)       # query tiles a head, key tiles
    keys = causal_keys(n_m, FA.bm, FA.bn, n_kt)        # a tile's key tiles: up to its last query
    plan = CausalSchedule.plan(B * H, n_m, keys, sms=B * H * n_m, paired=False)   # causal: a CTA a tile ...
    table = plan.table
    if not sim:
        table = cuda.to_device(table)
        keep.append(table)
    grid = plan.grid
    args = (tq, tk, tv, _address(o, keep), 0, B, Sq, Sk, H, H // Hk, H * Sq * D, Sq * D, D,
            np.float32(LOG2E / math.sqrt(D)), _address(err, keep),
            0, grid, 1, grid, _address(table, keep))   # ... each whole: no split-KV workspace
    if sim:
        cuda.jit(hopper_attention)[grid, FA.threads, 0, FA.smem](*args)
        return int(err[0])
    from codegen.cute.launch import allow_dynamic_shared

    kern = cuda.jit(HOPPER_ARGS.signature(), launch_bounds=(FA.threads, 1))(hopper_attention)   # (384 threads:
    kern = allow_dynamic_shared(kern, nbytes=FA.smem, signature=HOPPER_ARGS.signature())    # at most 168 registers)
    kern[grid, FA.threads, 0, FA.smem](*args)
    cuda.synchronize()
    return int(err.copy_to_host()[0])


def reference(q, k, v):
    """float64 numpy: grouped-query heads repeated, causal (top-left) mask, softmax."""
    H, Hk, Sq, Sk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    kk, vv = (np.repeat(x.astype(np.float64), H // Hk, axis=1) for x in (k, v))
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), kk) / math.sqrt(D)
    s = np.where(np.tril(np.ones((Sq, Sk), bool)), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", e / e.sum(-1, keepdims=True), vv)


def run(B=1, H=2, Hk=1, Sq=100, Sk=150, seed=0):
    """Two query heads on one kv head (two CTAs); 100 queries: a tile with 28 rows past the
    end; causal, so each query reads the keys up to its own, in the first key tile of 128."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, H, Sq, D)).astype(np.float16)
    k, v = (rng.standard_normal((B, Hk, Sk, D)).astype(np.float16) for _ in range(2))
    o = np.zeros_like(q)
    if cute.SIMULATED:
        err = launch(q, k, v, o)
    else:
        dq, dk, dv, do = (cuda.to_device(x) for x in (q, k, v, o))
        err = launch(dq, dk, dv, do)
        o = do.copy_to_host()
    assert err == 0, "a wait on an mbarrier timed out"
    return o.astype(np.float64), reference(q, k, v)


TOLERANCE = 2e-3                           # P rounded to f16 before O += P V, as FlashAttention does

if __name__ == "__main__":
    require_device("examples/hopper_attention.py")
    out, ref = run()
    err = float(np.max(np.abs(out - ref)))
    print(f"hopper_attention: {out.shape}, max abs error {err:.2e}")
    assert err <= TOLERANCE
