"""Simulator twins of the Hopper intrinsics (:mod:`codegen.intrinsics.ptx_sm90`).

Same names and signatures as the PTX intrinsics; each computes what the instruction does:

* mbarriers are modelled with their phase: ``mbarrier_init`` sets the expected arrival
  count, an arrival counts down, ``expect_tx`` adds bytes that TMA copies count down, and
  the phase completes (its parity flips) when both reach zero; ``mbarrier_try_wait``
  answers whether the phase of the given parity has completed, so a wrong parity or a
  missing arrival shows as a wait that never ends (the kernel's bounded waits then report
  it) or as a wrong result;
* a TMA load copies its box at once (zero-filling what lies outside the tensor, swizzling
  128-byte rows as the hardware does) and counts its bytes on the mbarrier; maps have rank
  2 to 5, a box of rank r is ``box[0] x ... x box[r-1]`` elements, rows of ``box[0]``;
* ``wgmma`` reads both operands through their descriptors (the PTX ISA's canonical
  layouts, swizzled), computes the whole 64 x N product and returns this thread's
  accumulators (``CLayout_64xN``); the warpgroup's threads each compute it, so no
  rendezvous is needed, since the operands stay in shared memory until released.
  Inputs are read as the tensor core reads them: tf32 operands are f32 bit patterns
  truncated to tf32 (the low 13 mantissa bits ignored), e4m3/e5m2 bytes decoded by table;
  products are summed in float64 and added to the f32 accumulators;
* the RS form of ``wgmma`` (A from registers) needs the registers of all 128 threads of the
  warpgroup: each thread deposits its four words in an exchange area of the launch's
  memory, meets the others at a rendezvous, assembles A (``ALayout_64x16``) and meets them
  again before the area is reused;
* a TMA store copies its box at once from shared memory (un-swizzling it, writing only
  what lies inside the tensor); the bulk async-group waits then have nothing to wait for;
* ``named_barrier_sync`` is a barrier of the given number of threads of the block;
* ``atom_add_acq_rel_gpu`` adds under a lock; ``ld_global_cg_v2_b32`` is a plain load;
* the cluster atoms need the CTAs of a cluster to run at once, which numba's simulator,
  running one block after another, never does: they raise (kernels with clusters run on
  a GPU only);
* fences, ``setmaxnreg`` and tensor-map prefetches do nothing here.

Tensor maps in the simulator are made by :func:`encode_tensor_map` (the same fields as
the driver's, kept in a registered host array) instead of the driver.
"""

from __future__ import annotations

import functools
import threading
import time

import numpy as np

from .names import SM90_NAMES, WGMMA_RS_SHAPES, WGMMA_SHAPES, wgmma_name, wgmma_rs_name
from .sim import _as_int, _memory, _thread, register_global

__all__ = list(SM90_NAMES) + ["encode_tensor_map", "encode_tensor_map_2d"]

_LOCK = threading.RLock()
_MAPS = {}          # host address of a registered map -> its fields


def encode_tensor_map(elem_bytes, ptr, dims, strides_bytes, box, swizzle_bytes=128):
    """A simulated tensor map of rank 2 to 5 (``dims`` and ``box`` innermost first,
    ``strides_bytes`` the byte strides of dimensions 1 and up): a registered 16-word host
    array whose address the kernel receives; the simulated TMA looks its fields up by that
    address.  Raises ValueError where the driver's ``cuTensorMapEncodeTiled`` refuses the
    values: an address that is not 16-byte aligned, a stride that is not a positive multiple
    of 16 bytes, a box side over 256 or a box row that is not a multiple of 16 bytes."""
    dims, strides_bytes, box = tuple(dims), tuple(strides_bytes), tuple(box)
    bad = []
    if not 2 <= len(dims) <= 5 or len(strides_bytes) != len(dims) - 1 or len(box) != len(dims):
        bad.append(f"{len(dims)} dims take {len(dims) - 1} strides and as many box sides as dims (2 to 5), got "
                   f"strides {strides_bytes}, box {box}")
    if ptr % 16:
        bad.append(f"address {ptr:#x} is not 16-byte aligned")
    if any(d % 16 or not 0 < d < 1 << 40 for d in strides_bytes):
        bad.append(f"strides {strides_bytes} B are not positive multiples of 16")
    if not all(0 < b <= 256 for b in box) or (box[0] * elem_bytes) % 16:
        bad.append(f"box {box} of {elem_bytes}-byte elements: sides 1..256, rows a multiple of 16 B")
    if bad:
        raise ValueError(f"encode_tensor_map: {'; '.join(bad)} (tensor of dims {dims})")
    arr = np.zeros(16, dtype=np.uint64)
    addr = register_global(arr)
    with _LOCK:
        _MAPS[addr] = (elem_bytes, ptr, dims, strides_bytes, box, swizzle_bytes)
    return arr


def encode_tensor_map_2d(elem_bytes, ptr, dims, row_stride_bytes, box, swizzle_bytes=128):
    """A simulated 2-D tensor map: :func:`encode_tensor_map` with the stride of dimension 1."""
    return encode_tensor_map(elem_bytes, ptr, dims, (row_stride_bytes,), box, swizzle_bytes)


# ---- mbarriers ----------------------------------------------------------------

def _barriers():
    mem = _memory("mbarrier")
    bars = getattr(mem, "mbarriers", None)
    if bars is None:
        with _LOCK:
            bars = getattr(mem, "mbarriers", None)
            if bars is None:
                bars = mem.mbarriers = {}
    return bars


def _bar(op, addr):
    addr = _as_int(op, "addr", addr)
    b = _barriers().get(addr)
    if b is None:
        raise RuntimeError(f"{op}: no mbarrier was initialised at shared address {addr:#x}")
    return b


def _complete_if_done(b):
    if b["pending"] == 0 and b["tx"] == 0:
        b["phase"] ^= 1
        b["pending"] = b["count"]


def mbarrier_init(addr, count):
    """Simulated ``mbarrier.init``: ``count`` arrivals complete a phase."""
    a, n = _as_int("mbarrier_init", "addr", addr), _as_int("mbarrier_init", "count", count)
    with _LOCK:
        _barriers()[a] = {"count": n, "pending": n, "tx": 0, "phase": 0}


def mbarrier_arrive(addr):
    """Simulated ``mbarrier.arrive``."""
    with _LOCK:
        b = _bar("mbarrier_arrive", addr)
        b["pending"] -= 1
        if b["pending"] < 0:
            raise RuntimeError(f"mbarrier_arrive: more arrivals than the {b['count']} expected")
        _complete_if_done(b)


def mbarrier_arrive_expect_tx(addr, nbytes):
    """Simulated ``mbarrier.arrive.expect_tx``: the phase also waits for ``nbytes`` of TMA."""
    with _LOCK:
        b = _bar("mbarrier_arrive_expect_tx", addr)
        b["tx"] += _as_int("mbarrier_arrive_expect_tx", "nbytes", nbytes)
        b["pending"] -= 1
        _complete_if_done(b)


def mbarrier_try_wait(addr, phase):
    """Simulated ``mbarrier.try_wait.parity``: 1 once the phase of parity ``phase`` completed."""
    with _LOCK:
        b = _bar("mbarrier_try_wait", addr)
        done = b["phase"] != (_as_int("mbarrier_try_wait", "phase", phase) & 1)
    if not done:
        time.sleep(0)                  # let the other simulated threads run
    return 1 if done else 0


# ---- TMA ------------------------------------------------------------------------

def _swizzle(off, swizzle_bytes):
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[swizzle_bytes]
    return off ^ (((off >> 7) & ((1 << bits) - 1)) << 4)


def _map_fields(op, tmap):
    """(element bytes, address, dims, strides, box, swizzle bytes) of a simulated map."""
    fields = _MAPS.get(tmap)
    if fields is None:
        raise RuntimeError(f"{op}: {tmap:#x} is not a simulated tensor map (encode_tensor_map)")
    return fields


def _chunk_order(nbytes, sw):
    """Where each 16-byte chunk of an unswizzled box lands in shared memory (chunk units)."""
    return np.array([_swizzle(i, sw) for i in range(0, nbytes, 16)]) // 16


def _box_bytes(fields):
    """Bytes of a map's box: ``box[0] x box[1] x ...`` elements."""
    return int(np.prod(fields[4])) * fields[0]


def _box_rows(fields, coords):
    """The rows of the box at ``coords`` (innermost first) that hold elements of the tensor:
    for each, ``(row, x0, x1, address)``: the row's index in the box (rows of ``box[0]``
    elements, dimension 1 the fastest of the others), its first and end element inside the
    tensor (from the row's start) and the global address of the first. A map has extent 1
    past its rank (a coordinate there other than 0 gives zeros); its dimensions past the
    coordinates are at coordinate 0."""
    eb, ptr, dims, strides, box, _ = fields
    r = max(len(dims), len(coords))
    dims, box = dims + (1,) * (r - len(dims)), box + (1,) * (r - len(box))
    strides, coords = strides + (0,) * (r - 1 - len(strides)), tuple(coords) + (0,) * (r - len(coords))
    x0, x1 = max(coords[0], 0), min(coords[0] + box[0], dims[0])
    if x1 <= x0:
        return
    for row, idx in enumerate(np.ndindex(*box[:0:-1])):        # the outermost index first
        ys = [c + int(i) for c, i in zip(coords[1:], idx[::-1])]
        if all(0 <= y < d for y, d in zip(ys, dims[1:])):
            yield row, x0 - coords[0], x1 - coords[0], ptr + sum(y * st for y, st in zip(ys, strides)) + x0 * eb


def tma_load_2d(dst, tmap, c0, c1, mbar):
    """Simulated ``cp.async.bulk.tensor.2d``: the box at (c0, c1) into shared memory at once."""
    _load("tma_load_2d", dst, tmap, (c0, c1), mbar)


def tma_load_3d(dst, tmap, c0, c1, c2, mbar):
    """Simulated ``cp.async.bulk.tensor.3d``: the box at (c0, c1, c2) into shared memory at once."""
    _load("tma_load_3d", dst, tmap, (c0, c1, c2), mbar)


def tma_load_4d(dst, tmap, c0, c1, c2, c3, mbar):
    """Simulated ``cp.async.bulk.tensor.4d``: the box at (c0, .., c3) into shared memory at once."""
    _load("tma_load_4d", dst, tmap, (c0, c1, c2, c3), mbar)


def tma_load_5d(dst, tmap, c0, c1, c2, c3, c4, mbar):
    """Simulated ``cp.async.bulk.tensor.5d``: the box at (c0, .., c4) into shared memory at once."""
    _load("tma_load_5d", dst, tmap, (c0, c1, c2, c3, c4), mbar)


def _load(op, dst, tmap, coords, mbar):
    """The box of map ``tmap`` at ``coords`` into shared ``dst``, zeros where it lies outside
    the tensor, swizzled; its bytes counted on the mbarrier ``mbar``."""
    dst, tmap = _as_int(op, "dst", dst), _as_int(op, "tmap", tmap)
    coords = tuple(_as_int(op, f"c{i}", c) for i, c in enumerate(coords))
    fields = _map_fields(op, tmap)
    eb, box, sw = fields[0], fields[4], fields[5]
    mem = _memory(op)
    row_bytes = box[0] * eb
    out = np.zeros(_box_bytes(fields), dtype=np.uint8)
    for r, x0, x1, addr in _box_rows(fields, coords):
        out[r * row_bytes + x0 * eb: r * row_bytes + x1 * eb] = np.frombuffer(
            mem.read_global(op, addr, (x1 - x0) * eb), np.uint8)
    view = mem.shared_view(op, dst, out.size)
    if sw:
        view.reshape(-1, 16)[_chunk_order(out.size, sw)] = out.reshape(-1, 16)
    else:
        view[:] = out
    with _LOCK:
        b = _bar(op, mbar)
        b["tx"] -= out.size
        _complete_if_done(b)


def tma_store_2d(tmap, src, c0, c1):
    """Simulated ``cp.async.bulk.tensor.2d`` store: the box at shared ``src`` to (c0, c1), at once."""
    _store("tma_store_2d", tmap, src, (c0, c1))


def tma_store_3d(tmap, src, c0, c1, c2):
    """Simulated ``cp.async.bulk.tensor.3d`` store: the box at shared ``src`` to (c0, c1, c2), at once."""
    _store("tma_store_3d", tmap, src, (c0, c1, c2))


def _store(op, tmap, src, coords):
    """The box at shared ``src`` (un-swizzled) to ``coords`` of map ``tmap``: only what lies
    inside the tensor is written."""
    tmap, src = _as_int(op, "tmap", tmap), _as_int(op, "src", src)
    coords = tuple(_as_int(op, f"c{i}", c) for i, c in enumerate(coords))
    fields = _map_fields(op, tmap)
    eb, box, sw = fields[0], fields[4], fields[5]
    mem = _memory(op)
    row_bytes = box[0] * eb
    staged = np.array(mem.shared_view(op, src, _box_bytes(fields)))
    if sw:
        staged = staged.reshape(-1, 16)[_chunk_order(staged.size, sw)].reshape(-1)
    for r, x0, x1, addr in _box_rows(fields, coords):
        mem.write_global(op, addr, staged[r * row_bytes + x0 * eb: r * row_bytes + x1 * eb].tobytes())


def bulk_commit_group():
    """Simulated ``cp.async.bulk.commit_group`` (simulated stores complete at once)."""


def bulk_wait_group(n):
    """Simulated ``cp.async.bulk.wait_group`` (nothing is pending)."""


def bulk_wait_group_read(n):
    """Simulated ``cp.async.bulk.wait_group.read`` (nothing is pending)."""


def named_barrier_sync(bar, nthreads):
    """Simulated ``bar.sync bar, nthreads``: wait until ``nthreads`` threads of the block
    reached barrier ``bar``, by ``bar.sync`` or ``bar.arrive``."""
    op = "named_barrier_sync"
    _named_barrier(op, _as_int(op, "bar", bar), _as_int(op, "nthreads", nthreads), True)


def named_barrier_arrive(bar, nthreads):
    """Simulated ``bar.arrive bar, nthreads``: count towards barrier ``bar`` without waiting."""
    op = "named_barrier_arrive"
    _named_barrier(op, _as_int(op, "bar", bar), _as_int(op, "nthreads", nthreads), False)


def _named_barrier(op, bar, nthreads, wait):
    """A hardware named barrier: arrivals counted up to ``nthreads``, which completes the
    current phase (releasing the threads that wait in it) and starts the next."""
    th = _thread(op)
    mem = _memory(op)
    key = (tuple(th.blockIdx), "named", bar)
    with _LOCK:
        bars = mem.__dict__.setdefault("block_barriers", {})
        b = bars.get(key)
        if b is None:
            b = bars[key] = {"n": nthreads, "count": 0, "phase": 0, "cond": threading.Condition(_LOCK)}
        if b["n"] != nthreads:
            raise RuntimeError(f"{op}: barrier {bar} is used with {nthreads} threads and with {b['n']}")
        phase = b["phase"]
        b["count"] += 1
        if b["count"] == nthreads:
            b["count"], b["phase"] = 0, phase + 1
            b["cond"].notify_all()
        elif wait and not b["cond"].wait_for(lambda: b["phase"] != phase, timeout=SIM_BARRIER_TIMEOUT_S):
            raise RuntimeError(f"{op}: barrier {bar} of block {key[0]}: fewer than {nthreads} threads arrived")


SIM_BARRIER_TIMEOUT_S = 600


def _block_barrier(op, name, nthreads):
    """Wait until ``nthreads`` threads of this block reached the barrier ``name``."""
    th = _thread(op)
    mem = _memory(op)
    key = (tuple(th.blockIdx), name)
    with _LOCK:
        bars = mem.__dict__.setdefault("block_barriers", {})
        b = bars.get(key)
        if b is None:
            b = bars[key] = threading.Barrier(nthreads)
    if b.parties != nthreads:
        raise RuntimeError(f"{op}: barrier {name} is used with {nthreads} threads and with {b.parties}")
    try:
        b.wait(timeout=SIM_BARRIER_TIMEOUT_S)
    except threading.BrokenBarrierError:
        raise RuntimeError(f"{op}: barrier {name} of block {key[0]}: fewer than {nthreads} threads arrived") \
            from None


def atom_add_acq_rel_gpu(addr, value):
    """Simulated ``atom.acq_rel.gpu.global.add.u32``: the old value (the add is atomic)."""
    op = "atom_add_acq_rel_gpu"
    addr, value = _as_int(op, "addr", addr), _as_int(op, "value", value)
    if addr & 3:
        raise ValueError(f"{op}: global address {addr:#x} is not 4-byte aligned")
    mem = _memory(op)
    with _LOCK:
        old = int.from_bytes(mem.read_global(op, addr, 4), "little")
        mem.write_global(op, addr, ((old + value) & 0xFFFFFFFF).to_bytes(4, "little"))
    return old


def ld_global_cg_v2_b32(addr):
    """Simulated ``ld.global.cg.v2.b32``: two words as ints, lower address first."""
    op = "ld_global_cg_v2_b32"
    addr = _as_int(op, "addr", addr)
    if addr & 7:
        raise ValueError(f"{op}: global address {addr:#x} is not 8-byte aligned")
    data = _memory(op).read_global(op, addr, 8)
    return int.from_bytes(data[:4], "little"), int.from_bytes(data[4:], "little")


def _no_clusters(op):
    raise RuntimeError(f"{op}: clusters need their CTAs to run at once; numba's simulator runs one block "
                       f"after another (a kernel with clusters runs on a GPU only)")


def cluster_ctarank():
    """Not simulated (see the module's notes on clusters)."""
    _no_clusters("cluster_ctarank")


def cluster_sync():
    """Not simulated (see the module's notes on clusters)."""
    _no_clusters("cluster_sync")


def mapa_shared(addr, rank):
    """Not simulated (see the module's notes on clusters)."""
    _no_clusters("mapa_shared")


def mbarrier_arrive_cluster(addr):
    """Not simulated (see the module's notes on clusters)."""
    _no_clusters("mbarrier_arrive_cluster")


def tma_load_2d_multicast(dst, tmap, c0, c1, mbar, mask):
    """Not simulated (see the module's notes on clusters)."""
    _no_clusters("tma_load_2d_multicast")


def tma_load_3d_multicast(dst, tmap, c0, c1, c2, mbar, mask):
    """Not simulated (see the module's notes on clusters)."""
    _no_clusters("tma_load_3d_multicast")


def tma_prefetch_2d(tmap, c0, c1):
    """Simulated L2 prefetch of a box: checks its arguments; nothing to copy."""
    op = "tma_prefetch_2d"
    _map_fields(op, _as_int(op, "tmap", tmap))
    _as_int(op, "c0", c0), _as_int(op, "c1", c1)


def tensormap_acquire(addr):
    """Simulated tensor-map fence (nothing to do)."""


def prefetch_tensormap(addr):
    """Simulated tensor-map prefetch (nothing to do)."""


def fence_mbarrier_init():
    """Simulated fence (nothing to do)."""


def fence_proxy_async():
    """Simulated fence (nothing to do)."""


def setmaxnreg_inc(n):
    """Simulated register reallocation (nothing to do)."""


def setmaxnreg_dec(n):
    """Simulated register reallocation (nothing to do)."""


def globaltimer():
    """Nanoseconds of a clock that runs 1000 times slower than the host's: simulated threads
    are about that much slower than the GPU's, and kernels bound their waits by this clock."""
    return time.monotonic_ns() // 1000


# ---- wgmma ------------------------------------------------------------------------

def wgmma_fence():
    """Simulated ``wgmma.fence`` (the simulated wgmma is synchronous)."""


def wgmma_commit():
    """Simulated ``wgmma.commit_group``."""


def wgmma_wait(n):
    """Simulated ``wgmma.wait_group``: a rendezvous of the warpgroup's 128 threads, as the
    hardware's warpgroup-collective ``wgmma`` is. (Without it one thread could release a
    stage, and the producer refill it, before another thread of its warpgroup has seen the
    stage's previous phase complete: that thread would then wait on the wrong parity.)"""
    th = _thread("wgmma_wait")
    _block_barrier("wgmma_wait", ("warpgroup", th.thread_id // 128), 128)


def acc_fence(acc):
    """The accumulators, unchanged."""
    return acc


def f32x_zero(n):
    """A tuple of ``n`` float32 zeros."""
    return tuple(np.float32(0) for _ in range(_as_int("f32x_zero", "n", n)))


def acc_to_array(acc, arr):
    """Store the accumulator tuple into a local array."""
    for i, v in enumerate(acc):
        arr[i] = v


def acc_from_array(arr, n):
    """The first ``n`` elements of a local float32 array as an accumulator tuple."""
    return tuple(np.float32(arr[i]) for i in range(_as_int("acc_from_array", "n", n)))


def _decode(desc, major, ebytes, mn, k):
    """Shared byte offsets of the (mn, k) block a descriptor describes (PTX canonical layouts)."""
    desc &= (1 << 64) - 1                                  # the 64 bits (layout type 2 sets the sign)
    start = (desc & 0x3FFF) << 4
    lbo, sbo = ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4
    lt = desc >> 62
    w = {1: 128, 2: 64, 3: 32, 0: 16}[lt]                  # bytes per swizzle row
    t = 16 // ebytes
    m = np.arange(mn)[:, None]
    kk = np.arange(k)[None, :]
    if major == "K":
        off = (m // 8) * sbo + (m % 8) * w + (kk // t) * (16 if lt else lbo) + (kk % t) * ebytes
    else:
        wt = w // ebytes
        off = (m // wt) * lbo + ((m % wt) // t) * 16 + (m % t) * ebytes + (kk // 8) * sbo + (kk % 8) * w
    addr = start + off
    bits = {1: 3, 2: 2, 3: 1, 0: 0}[lt]
    return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)


#: Bytes per element of each wgmma input type.
_EBYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1}


def _operand(mem, desc, major, t, mn, k):
    """The (mn, k) block a descriptor describes, as the tensor core reads it (float64):
    tf32 is the f32 bit pattern with its low 13 mantissa bits dropped (truncated, as the
    hardware reads a .tf32 operand), the 8-bit floats are decoded by table."""
    from mma_atoms.numerics import decode

    eb = _EBYTES[t]
    addr = _decode(desc, major, eb, mn, k)
    lo = int(addr.min())
    raw = mem.shared_view("wgmma", lo, int(addr.max()) - lo + eb)
    bits = np.zeros(addr.shape, dtype=np.uint32)
    for j in range(eb):
        bits |= raw[addr - lo + j].astype(np.uint32) << (8 * j)
    return decode(bits, t).astype(np.float64)


def _outputs(name, acc, d, lane, n, scale_d):
    """Thread ``lane``'s accumulators (``CLayout_64xN``) of the 64 x N product ``d`` (float64),
    added to those of ``acc`` unless ``scale_d`` is 0, as float32."""
    from mma_atoms.mma_sm90 import clayout_64xn

    if len(acc) != n // 2:
        raise TypeError(f"{name}: acc must be a tuple of {n // 2} float32, got {len(acc)} values")
    keep = _as_int(name, "scale_d", scale_d)
    clay = clayout_64xn(n)                                                                # (T128,V) -> m + 64 n
    out = []
    for v in range(n // 2):
        idx = clay(lane, v)
        prev = float(acc[v]) if keep else 0.0
        out.append(np.float32(prev + d[idx % 64, idx // 64]))
    return tuple(out)


def _make_wgmma(n, t, k):
    from ..atom_intrinsics import wgmma_types

    name = wgmma_name(n, t, k)
    ta, tb = wgmma_types(t)
    sixteen = ta in ("f16", "bf16")

    def twin(acc, desc_a, desc_b, scale_d, tnsp_a, tnsp_b):
        if not sixteen and (tnsp_a or tnsp_b):
            raise ValueError(f"{name}: {t} operands must be K-major (tnsp_a = tnsp_b = 0)")
        th = _thread(name)
        mem = _memory(name)
        a = _operand(mem, _as_int(name, "desc_a", desc_a), "MN" if tnsp_a else "K", ta, 64, k)   # (64, K)
        b = _operand(mem, _as_int(name, "desc_b", desc_b), "MN" if tnsp_b else "K", tb, n, k)    # (N, K)
        lane = th.thread_id % 128          # linear thread index within the block, then the warpgroup
        return _outputs(name, acc, a @ b.T, lane, n, scale_d)

    twin.__name__ = name
    twin.__doc__ = f"Simulated wgmma m64n{n}k{k}, f32 += {ta} x {tb}, operands from shared-memory descriptors."
    return twin


for _n, _t, _p, _k in WGMMA_SHAPES:
    globals()[wgmma_name(_n, _t, _k)] = _make_wgmma(_n, _t, _k)


@functools.lru_cache(maxsize=None)
def _a_fragment():
    """(m, k) of each (thread, value) of ``ALayout_64x16``: two (128, 8) index arrays."""
    from mma_atoms.mma_sm90 import alayout_64x16

    lay = alayout_64x16()                                             # (T128,V8) -> m + 64 k
    idx = np.array([[lay(t, v) for v in range(8)] for t in range(128)])
    return idx % 64, idx // 64


def _exchange_a(op, mem, th, words, t):
    """The warpgroup's 64 x 16 A (float64) from the registers of its 128 threads: each puts
    its four words in its warpgroup's exchange area of the launch's memory, and after a
    rendezvous of the 128 reads them all; a second rendezvous frees the area for the next
    instruction. Register ``a_j`` holds values ``2j`` (low half) and ``2j + 1``."""
    from mma_atoms.numerics import decode

    wg = th.thread_id // 128
    key = (tuple(th.blockIdx), wg)
    with _LOCK:
        areas = mem.__dict__.setdefault("wgmma_rs_exchange", {})
        area = areas.get(key)
        if area is None:
            area = areas[key] = np.zeros((128, 4), dtype=np.uint32)
    area[th.thread_id % 128] = words
    _block_barrier(op, ("wgmma_rs_deposit", wg), 128)
    regs = area.copy()
    _block_barrier(op, ("wgmma_rs_read", wg), 128)
    halves = np.stack([regs & 0xFFFF, regs >> 16], axis=-1).reshape(128, 8)       # (thread, value) bits
    m, k = _a_fragment()
    a = np.zeros((64, 16))
    a[m, k] = decode(halves, t).astype(np.float64)
    return a


def _make_wgmma_rs(n, t):
    name = wgmma_rs_name(n, t)

    def twin(acc, a0, a1, a2, a3, desc_b, scale_d, tnsp_b):
        tb = _as_int(name, "tnsp_b", tnsp_b)
        if tb not in (0, 1):
            raise ValueError(f"{name}: tnsp_b must be one of [0, 1], got {tb}")
        th = _thread(name)
        mem = _memory(name)
        words = [_as_int(name, f"a{j}", r) & 0xFFFFFFFF for j, r in enumerate((a0, a1, a2, a3))]
        a = _exchange_a(name, mem, th, words, t)                                              # (64, 16)
        b = _operand(mem, _as_int(name, "desc_b", desc_b), "MN" if tb else "K", t, n, 16)     # (N, 16)
        return _outputs(name, acc, a @ b.T, th.thread_id % 128, n, scale_d)

    twin.__name__ = name
    twin.__doc__ = (f"Simulated wgmma m64n{n}k16, f32 += {t} x {t}, A from the warpgroup's registers "
                    f"(ALayout_64x16, exchanged through the simulated memory), B from a descriptor.")
    return twin


for _n, _t, _p, _k in WGMMA_RS_SHAPES:
    globals()[wgmma_rs_name(_n, _t)] = _make_wgmma_rs(_n, _t)
