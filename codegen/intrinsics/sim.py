"""Pure-Python twins of :mod:`codegen.intrinsics.ptx` for the CUDA simulator.

Same names and call signatures as the inline-PTX atoms, for kernels run with
``NUMBA_ENABLE_CUDASIM=1`` (which has no ``@intrinsic``, no warp collectives and
no bfloat16).  Generated kernels import from :mod:`codegen.intrinsics`, which picks
this module when the simulator is enabled.  The module itself imports in either
mode, so its fragment tables can be inspected anywhere.

How the simulation works
------------------------
* Every simulated CUDA thread is a Python thread (numba's ``BlockThread``); the
  current thread's ``threadIdx``/``blockIdx``, its linear ``thread_id`` and its
  block manager are read from ``threading.current_thread()``.  Blocks run one
  after another.
* Warp-collective atoms (``mma_*``, ``ldmatrix_*``) deposit the lane's operands
  in a per-warp slot table and meet at a per-warp 32-party barrier whose
  action (run by the last lane to arrive) computes the collective once from
  all 32 lanes' operands, using the fragment layouts in :data:`FRAGMENT_LAYOUTS`
  (taken from the :mod:`mma_atoms` entries, which are checked against the PTX ISA);
  each lane then returns its own registers.  Lanes
  calling different collectives raise an error; a lane that ends before it
  arrives (an exception, a return) makes the others raise at once, with that
  lane's own error; a lane that never arrives otherwise makes the others raise
  after :data:`SIM_COLLECTIVE_TIMEOUT_S` seconds instead of hanging.
* Shared memory is addressed through a simulated 32-bit shared window: the
  dynamic shared array (``cuda.shared.array(0, dtype)``) occupies window bytes
  ``[0, dynamic size)`` and static shared arrays are placed after it, 1 KiB
  aligned, the first time :func:`smem_addr` sees them.  Global addresses are
  the host addresses of the arrays' data; every access is bounds-checked
  against the arrays passed to :func:`gmem_addr` in this launch.
* ``cp.async`` copies read their source when issued and write shared memory
  only when a covering :func:`cp_async_wait_group` / :func:`cp_async_wait_all`
  completes their group, so a missing wait shows up as stale data.
* Alignment rules of the instructions (16-byte ldmatrix rows, cp-size aligned
  cp.async operands, 16-byte vector accesses) are enforced with ``ValueError``.

Numerics: MMA products and sums are computed in float64 and rounded to the
output type (hardware accumulates in float32, so results agree to float32
rounding).  tf32 operands are truncated to their 19 high bits, as the tensor
core ignores the 13 low mantissa bits.  Integer results are Python ints, float
results numpy scalars of the PTX type.
"""

from __future__ import annotations

import ctypes
import math
import threading
import time

import numpy as np

from .names import ATOM_NAMES

__all__ = list(ATOM_NAMES)

#: Seconds a lane waits at a warp collective for the other 31 lanes.
SIM_COLLECTIVE_TIMEOUT_S = 120.0
#: After how long (seconds) a waiting lane first looks for a lane of its warp that has ended
#: (failed); it looks again after twice as long each time, up to once a second.
_EXIT_POLL_S = 0.05

_M32 = 0xFFFFFFFF


# ---------------------------------------------------------------------------
# fragment layouts, from the atom tables (mma_atoms checks them against the PTX ISA)
# ---------------------------------------------------------------------------

_ATOMS = {"m16n8k16": "SM80_16x8x16_F32F16F16F32_TN", "m16n8k8.tf32": "SM80_16x8x8_F32TF32TF32F32_TN",
          "m8n8k4.f64": "SM80_8x8x4_F64F64F64F64_TN"}


def _operand_table(op, operand):
    """(rows, cols) of A (M x K), B (K x N) or C (M x N) for each (lane, value) of ``op``."""
    from layoutalg import size

    lay = {"A": op.layout_a, "B": op.layout_b, "C": op.layout_c}[operand]     # (T,V) -> col-major idx
    m = op.shape_mnk[1] if operand == "B" else op.shape_mnk[0]
    idx = np.array([[lay(t, v) for v in range(size(lay[1]))] for t in range(32)])
    i, j = idx % m, idx // m
    return (j, i) if operand == "B" else (i, j)                               # B is drawn K x N


def _fragment_layouts() -> dict:
    """Index tables mapping (lane, register[, half]) to matrix coordinates.

    Shapes: A/B of 16-bit types are (32, regs, 2) with the last axis the lo/hi
    half of the b32 register; all others are (32, regs).  Coordinates are
    (row, col) of A (M x K), B (K x N) and C/D (M x N).
    """
    import mma_atoms

    out = {}
    for shape, name in _ATOMS.items():
        op = mma_atoms.get(name)
        out[shape] = {}
        for operand in "ABC":
            rows, cols = _operand_table(op, operand)
            if shape == "m16n8k16" and operand != "C":
                rows, cols = rows.reshape(32, -1, 2), cols.reshape(32, -1, 2)
            out[shape][operand] = (np.ascontiguousarray(rows), np.ascontiguousarray(cols))
    return out


#: ``FRAGMENT_LAYOUTS[shape][operand] = (rows, cols)`` index arrays, see
#: :func:`_fragment_layouts`.  Shapes: "m16n8k16" (f16/bf16), "m16n8k8.tf32",
#: "m8n8k4.f64"; operands "A", "B", "C" (C is also D's layout).
FRAGMENT_LAYOUTS = _fragment_layouts()

_LANE = np.arange(32)
_LG = _LANE >> 2
_LT = _LANE & 3


# ---------------------------------------------------------------------------
# simulator plumbing
# ---------------------------------------------------------------------------

_STATE_LOCK = threading.Lock()


def _lock_static_shared_arrays():
    """Make numba's simulator allocate each static shared array once per block, whatever
    the threads' timing.

    Its ``FakeCUDAShared.array`` allocates a static array on the first call from a source
    line and keeps it for the later ones, without a lock: two threads of a block that reach
    that line together can each allocate one, and then write and read different "shared"
    memory (seen as garbage or NaN in an ldmatrix tile now and then). The same lookup, under
    a lock; dynamic shared memory (shape 0) is one buffer already and keeps numba's code."""
    import sys

    try:
        from numba.cuda.simulator import kernelapi
    except ImportError:                     # not the simulator's numba: nothing to patch
        return
    cls = kernelapi.FakeCUDAShared
    if getattr(cls, "_array_locked", False):
        return
    numba_array = cls.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:
            return numba_array(self, shape, dtype, alignment)
        from numba.core import types
        from numba.np import numpy_support

        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        f = sys._getframe(1)
        caller = (f.f_code.co_filename, f.f_lineno)    # numba's key: the calling line
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res

    cls.array = array
    cls._array_locked = True


_lock_static_shared_arrays()


def _record_thread_exits():
    """Make each simulated thread note, when it ends, its exception (or None) in its block's
    manager, so that lanes waiting at a warp collective learn at once that a lane will never
    arrive, and report that lane's own error (numba's block manager may miss the exception of
    a thread that ends between two of its polls, and then waits for the others)."""
    try:
        from numba.cuda.simulator.kernel import BlockThread
    except ImportError:                     # not the simulator's numba: nothing to patch
        return
    if getattr(BlockThread, "_atoms_exits", False):
        return
    numba_run = BlockThread.run

    def run(self):
        try:
            numba_run(self)
        finally:
            exc = getattr(self, "exception", None)
            with _STATE_LOCK:
                self._manager.__dict__.setdefault("_atoms_exited", {})[self.thread_id] = exc

    BlockThread.run = run
    BlockThread._atoms_exits = True


_record_thread_exits()


def _numba_dirs():
    """The folders of numba's packages (computed when first needed: numba is loaded by then)."""
    global _NUMBA_DIRS
    if _NUMBA_DIRS is not None:
        return _NUMBA_DIRS
    import importlib.util
    import os

    out = []
    for n in ("numba", "numba.cuda"):
        try:
            spec = importlib.util.find_spec(n)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            out += [os.path.join(p, "") for p in spec.submodule_search_locations]
    _NUMBA_DIRS = tuple(out)
    return _NUMBA_DIRS


_NUMBA_DIRS = None


def _thread(op: str):
    t = threading.current_thread()
    if not (hasattr(t, "threadIdx") and hasattr(t, "_manager") and hasattr(t, "thread_id")):
        raise RuntimeError(
            f"{op}: must be called from a kernel running in the CUDA simulator "
            "(NUMBA_ENABLE_CUDASIM=1)"
        )
    return t


def _kernel_context(op: str):
    from numba.cuda.simulator.kernel import _get_kernel_context

    ctx = _get_kernel_context()
    if ctx is None:
        raise RuntimeError(f"{op}: no simulated kernel is running")
    return ctx


def _as_int(op: str, name: str, v) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{op}: operand {name!r} must be an integer, got {type(v).__name__} {v!r}")
    return int(v)


def _b32(op: str, name: str, v) -> int:
    """A .b32 register operand: an integer (low 32 bits) or a float32 (its bits)."""
    if isinstance(v, (float, np.floating)):
        return int(np.float32(v).view(np.uint32))
    return _as_int(op, name, v) & _M32


def _unwrap_array(op: str, arr) -> np.ndarray:
    """The numpy array behind a simulator array (kernel argument or shared/local)."""
    if isinstance(arr, np.ndarray):
        return arr
    d = getattr(arr, "__dict__", {})
    item = d.get("_item")  # FakeWithinKernelCUDAArray
    if item is not None:
        d = getattr(item, "__dict__", {})
    ary = d.get("_ary")  # FakeCUDAArray
    if isinstance(ary, np.ndarray):
        return ary
    raise TypeError(f"{op}: operand 'arr' must be an array, got {type(arr).__name__}")


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _byte_bounds(a: np.ndarray) -> tuple[int, int]:
    bb = getattr(np, "byte_bounds", None)
    if bb is None:  # numpy >= 2.0 moved it
        bb = np.lib.array_utils.byte_bounds
    return bb(a)


class _Memory:
    """Shared window and global-memory registry of one simulated kernel launch."""

    def __init__(self, ctx):
        dyn = ctx._shared._dynshared
        self.dyn = dyn.view(np.uint8)
        self.dyn_ptr = int(dyn.__array_interface__["data"][0])
        self.dyn_size = int(dyn.nbytes)
        # (window start, window end, uint8 view) for each shared region
        self.regions = [(0, self.dyn_size, self.dyn)]
        self.static = []  # (host lo, host hi, window start)
        self.next_static = (self.dyn_size + 1023) & ~1023
        self.globals = {}  # (host lo, host hi) -> array (kept alive)
        self.lock = threading.Lock()

    # shared -----------------------------------------------------------------
    def shared_base(self, op: str, a: np.ndarray) -> int:
        ptr = int(a.__array_interface__["data"][0])
        if self.dyn_size and self.dyn_ptr <= ptr < self.dyn_ptr + self.dyn_size:
            return ptr - self.dyn_ptr
        with self.lock:
            for lo, hi, start in self.static:
                if lo <= ptr < hi:
                    return start + (ptr - lo)
            root = _root(a)
            if not root.flags.c_contiguous:
                raise ValueError(f"{op}: shared array must be contiguous")
            lo, hi = _byte_bounds(root)
            if not lo <= ptr < hi:
                raise ValueError(f"{op}: array is not a shared-memory array of this kernel")
            start = self.next_static
            self.static.append((lo, hi, start))
            self.regions.append((start, start + (hi - lo), root.reshape(-1).view(np.uint8)))
            self.next_static = (start + (hi - lo) + 1023) & ~1023
            return start + (ptr - lo)

    def shared_view(self, op: str, addr: int, n: int) -> np.ndarray:
        for start, end, view in self.regions:
            if start <= addr and addr + n <= end:
                return view[addr - start : addr - start + n]
        raise ValueError(
            f"{op}: shared address {addr:#x} (+{n} bytes) is outside the shared "
            "memory of this kernel"
        )

    # global -----------------------------------------------------------------
    def register_global(self, a: np.ndarray) -> None:
        lo, hi = _byte_bounds(a)
        with self.lock:
            self.globals.setdefault((lo, hi), a)

    def _check_global(self, op: str, addr: int, n: int) -> None:
        with self.lock:
            for lo, hi in (*self.globals, *_GLOBALS):
                if lo <= addr and addr + n <= hi:
                    return
        raise ValueError(
            f"{op}: global address {addr:#x} (+{n} bytes) is outside every array "
            "passed to gmem_addr in this kernel"
        )

    def read_global(self, op: str, addr: int, n: int) -> bytes:
        self._check_global(op, addr, n)
        return ctypes.string_at(addr, n)

    def write_global(self, op: str, addr: int, data: bytes) -> None:
        self._check_global(op, addr, len(data))
        ctypes.memmove(addr, data, len(data))


#: Host arrays that kernels reach by raw address (see :func:`register_global`).
_GLOBALS: dict = {}


def register_global(a) -> int:
    """Let simulated kernels read and write ``a`` through raw addresses; returns its address.

    A kernel that takes global addresses as integers (instead of arrays passed to
    :func:`gmem_addr`) reaches memory the simulator cannot see; the host registers each
    array before the launch, and every access is still checked against the registered
    bounds.  Not an atom: a host-side helper of the simulator only.
    """
    a = _unwrap_array("register_global", a)
    lo, hi = _byte_bounds(a)
    with _STATE_LOCK:
        _GLOBALS[(lo, hi)] = a
    return int(a.__array_interface__["data"][0])


def unregister_global(a) -> None:
    """Forget an array registered with :func:`register_global`."""
    a = _unwrap_array("unregister_global", a)
    with _STATE_LOCK:
        _GLOBALS.pop(_byte_bounds(a), None)


def _memory(op: str) -> _Memory:
    if getattr(threading.current_thread(), "abort", False):
        # a thread of a launch that an exception ended (numba's simulator aborts the other
        # threads but does not wait for them): the kernel context is the next launch's by
        # now, whose memory it must not touch
        raise RuntimeError(f"{op}: this simulated thread's kernel was aborted")
    ctx = _kernel_context(op)
    mem = ctx.__dict__.get("_atoms_memory")
    if mem is None:
        with _STATE_LOCK:
            mem = ctx.__dict__.get("_atoms_memory")
            if mem is None:
                mem = _Memory(ctx)
                ctx.__dict__["_atoms_memory"] = mem
    return mem


def _check_align(op: str, what: str, addr: int, align: int) -> None:
    if addr & (align - 1):
        raise ValueError(f"{op}: {what} address {addr:#x} is not {align}-byte aligned")


# ---------------------------------------------------------------------------
# warp collectives
# ---------------------------------------------------------------------------


class _Warp:
    """Rendezvous of the 32 lanes of one warp for collective atoms.

    A barrier for 32 parties with an action: each lane deposits its operands
    and, unless it is the last to arrive, blocks on its own gate lock; the last
    lane computes the collective once, stores every lane's result and opens the
    31 gates.  (One lock per lane instead of ``threading.Barrier``'s shared
    condition avoids 31 woken threads contending for one lock, which makes a
    collective several times faster in the simulator.)  A lane that ends without
    reaching the collective makes the waiting lanes raise at once (with its own
    error, if it failed); one that does not reach it within
    :data:`SIM_COLLECTIVE_TIMEOUT_S` makes them raise instead of hanging.
    """

    def __init__(self, warp_id: int, nlanes: int, manager=None):
        self.warp_id = warp_id
        self.nlanes = nlanes
        self.manager = manager
        self.relayed = set()     # lanes whose error only relays another lane's
        self.round = 0           # collectives completed
        self.slots = [None] * 32
        self.results = [None] * 32
        self.error = None
        self.lock = threading.Lock()
        self.waiting = []  # lanes blocked in the current round
        self.gates = [threading.Lock() for _ in range(32)]
        for gate in self.gates:
            gate.acquire()

    def _compute(self) -> None:
        slots = self.slots[: self.nlanes]
        keys = {s[0] for s in slots}
        if len(keys) != 1:
            raise RuntimeError(
                f"warp {self.warp_id}: divergent warp collective, lanes called "
                f"{sorted(k[0] if k[0] != 'warp' else k[1] for k in keys)}"
            )
        key = slots[0][0]
        self.results = _COLLECTIVES[key[0]](key, [s[1] for s in slots])

    def _raise_error(self, op: str):
        err = self.error
        # Every lane reports the collective's own error, with the same type.
        try:
            again = type(err)(*err.args)
        except Exception:
            again = RuntimeError(f"{op}: warp collective failed: {err}")
        raise again from err

    def _raise_if_a_lane_ended(self, op: str, my_round: int):
        """Raise at once when a lane of this warp has ended without reaching the collective of
        round ``my_round``: with the first failed lane's own error (its type, its message, where
        it was raised), else as a divergence.  (Lanes released from a completed round may end
        before this lane's gate opens: the round number, raised before any gate opens, tells.)"""
        ended = getattr(self.manager, "__dict__", {}).get("_atoms_exited")
        if not ended:
            return
        with _STATE_LOCK:
            mine = sorted((tid & 31, exc) for tid, exc in ended.items()
                          if tid >> 5 == self.warp_id and tid & 31 not in self.relayed)
        if not mine or self.round != my_round:
            return
        self.relayed.add(threading.current_thread().thread_id & 31)   # this lane's error is a relay
        failed = [(lane, exc) for lane, exc in mine if exc is not None]
        if not failed:
            lanes = ", ".join(str(lane) for lane, _ in mine)
            raise RuntimeError(f"{op}: lane {lanes} of warp {self.warp_id} ended without reaching this "
                               f"warp collective (divergent or missing call)")
        lane, (err, tb) = failed[0]
        import traceback

        frames = [f for f in (traceback.extract_tb(tb) if tb is not None else [])
                  if not f.filename.startswith(_numba_dirs())]       # the kernel's line, not numba's
        where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        msg = (f"lane {lane} of warp {self.warp_id} raised {type(err).__name__}{where} before reaching "
               f"{op}: {err}")
        try:
            again = type(err)(msg)
        except Exception:
            again = RuntimeError(msg)
        raise again

    def run(self, op: str, lane: int, key: tuple, args: tuple, whole_warp: bool = True):
        if whole_warp and self.nlanes != 32:
            raise ValueError(
                f"{op}: is warp-collective and needs all 32 lanes, but warp "
                f"{self.warp_id} of this block has {self.nlanes} threads"
            )
        if self.error is not None:
            self._raise_error(op)
        self.slots[lane] = (key, args)
        with self.lock:
            waiting = self.waiting
            my_round = self.round
            last = len(waiting) == self.nlanes - 1
            if last:
                self.waiting = []
                self.round += 1          # before any gate opens (see _raise_if_a_lane_ended)
            else:
                waiting.append(lane)
        if last:
            try:
                self._compute()
            except BaseException as e:
                self.error = e
            for other in waiting:
                self.gates[other].release()
            if self.error is not None:
                raise self.error
            return self.results[lane]
        deadline = time.monotonic() + SIM_COLLECTIVE_TIMEOUT_S
        poll = _EXIT_POLL_S
        while not self.gates[lane].acquire(timeout=poll):
            poll = min(2 * poll, 1.0)        # a long wait: look less often (the GIL is shared)
            self._raise_if_a_lane_ended(op, my_round)
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{op}: warp {self.warp_id} collective did not complete within "
                    f"{SIM_COLLECTIVE_TIMEOUT_S} s: not every lane reached it "
                    "(divergent or missing call)"
                )
        if self.error is not None:
            self._raise_error(op)
        return self.results[lane]


def _collective(op: str, key: tuple, args: tuple, whole_warp: bool = True):
    t = _thread(op)
    mgr = t._manager
    wid = t.thread_id >> 5
    warps = mgr.__dict__.get("_atoms_warps")
    warp = warps.get(wid) if warps is not None else None
    if warp is None:
        with _STATE_LOCK:
            warps = mgr.__dict__.setdefault("_atoms_warps", {})
            warp = warps.get(wid)
            if warp is None:
                nthreads = int(np.prod(mgr._block_dim))
                warp = _Warp(wid, min(32, nthreads - 32 * wid), mgr)
                warps[wid] = warp
    return warp.run(op, t.thread_id & 31, key, args, whole_warp)


def _b16_halves(regs: np.ndarray) -> np.ndarray:
    """(..., n) uint32 -> (..., n, 2) uint16 [lo, hi]."""
    return np.stack([regs & 0xFFFF, regs >> 16], axis=-1).astype(np.uint16)


def _decode_f16(h: np.ndarray) -> np.ndarray:
    return h.view(np.float16).astype(np.float64)


def _decode_bf16(h: np.ndarray) -> np.ndarray:
    return (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _mma_m16n8k16(key, lanes):
    decode = _decode_f16 if key[1] == "f16" else _decode_bf16
    lay = FRAGMENT_LAYOUTS["m16n8k16"]
    regs = np.array([a[:6] for a in lanes], dtype=np.uint32)  # (32, 6)
    halves = decode(_b16_halves(regs))  # (32, 6, 2)
    a = np.zeros((16, 16))
    a[lay["A"]] = halves[:, :4, :]
    b = np.zeros((16, 8))
    b[lay["B"]] = halves[:, 4:, :]
    return _mma_finish(a, b, lanes, 6, (16, 8), lay["C"], np.float32)


def _mma_m16n8k8_tf32(key, lanes):
    lay = FRAGMENT_LAYOUTS["m16n8k8.tf32"]
    regs = np.array([a[:6] for a in lanes], dtype=np.uint32) & np.uint32(0xFFFFE000)
    vals = regs.view(np.float32).astype(np.float64)
    a = np.zeros((16, 8))
    a[lay["A"]] = vals[:, :4]
    b = np.zeros((8, 8))
    b[lay["B"]] = vals[:, 4:]
    return _mma_finish(a, b, lanes, 6, (16, 8), lay["C"], np.float32)


def _mma_m8n8k4_f64(key, lanes):
    lay = FRAGMENT_LAYOUTS["m8n8k4.f64"]
    vals = np.array([a[:2] for a in lanes], dtype=np.float64)
    a = np.zeros((8, 4))
    a[lay["A"]] = vals[:, :1]
    b = np.zeros((4, 8))
    b[lay["B"]] = vals[:, 1:2]
    return _mma_finish(a, b, lanes, 2, (8, 8), lay["C"], np.float64)


def _mma_finish(a, b, lanes, cstart, cshape, clay, outtype):
    c = np.zeros(cshape)
    c[clay] = np.array([x[cstart:] for x in lanes], dtype=outtype).astype(np.float64)
    d = (a @ b + c).astype(outtype)
    frag = d[clay]  # (32, nregs)
    return [tuple(frag[lane]) for lane in range(32)]


def _ldmatrix(key, lanes):
    _, op, n, trans = key
    mem = _memory(op)
    m = np.empty((n, 8, 8), dtype=np.uint16)
    for i in range(n):
        for r in range(8):
            addr = lanes[8 * i + r][0]
            _check_align(op, "row", addr, 16)
            m[i, r] = mem.shared_view(op, addr, 16).view(np.uint16)
    if trans:
        m = m.transpose(0, 2, 1)
    lo = m[:, _LG, 2 * _LT].astype(np.uint32)  # (n, 32)
    hi = m[:, _LG, 2 * _LT + 1].astype(np.uint32)
    regs = lo | (hi << 16)
    return [tuple(int(regs[i, lane]) for i in range(n)) for lane in range(32)]


def _stmatrix(key, lanes):
    _, op, n, trans = key
    mem = _memory(op)
    regs = np.array([lane[1:1 + n] for lane in lanes], dtype=np.uint32).T     # (n, 32)
    m = np.empty((n, 8, 8), dtype=np.uint16)
    m[:, _LG, 2 * _LT] = (regs & 0xFFFF).astype(np.uint16)
    m[:, _LG, 2 * _LT + 1] = (regs >> 16).astype(np.uint16)
    if trans:
        m = m.transpose(0, 2, 1)
    for i in range(n):
        for r in range(8):
            addr = lanes[8 * i + r][0]
            _check_align(op, "row", addr, 16)
            mem.shared_view(op, addr, 16)[:] = np.ascontiguousarray(m[i, r]).view(np.uint8)
    return [() for _ in range(32)]


def _warp_function(key, lanes):
    """numba's warp functions (``cuda.shfl_sync`` ...), from every lane's (mask, value, operand)."""
    name = key[1]
    n = len(lanes)
    every = (1 << n) - 1
    for i, (mask, _, _) in enumerate(lanes):
        if int(mask) & every != every:
            raise ValueError(f"cuda.{name}: the simulator runs warp functions with every lane of the warp in "
                             f"the mask ({every:#x}); lane {i} passed {int(mask):#x}")
    vals = [v for _, v, _ in lanes]
    if name in ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync"):
        out = []
        for i, (_, v, x) in enumerate(lanes):
            x = int(x)
            src = {"shfl_sync": x & 31, "shfl_up_sync": i - x, "shfl_down_sync": i + x,
                   "shfl_xor_sync": i ^ x}[name]
            out.append(vals[src] if 0 <= src < n else v)
        return out
    bits = sum(1 << i for i, v in enumerate(vals) if v)
    # the types numba gives them on the GPU: ballot a signed 32-bit word (lane 31 makes it
    # negative), the votes booleans
    res = {"ballot_sync": np.int32(bits - (1 << 32) if bits >> 31 else bits), "all_sync": bits == every,
           "any_sync": bits != 0, "eq_sync": bits in (0, every), "syncwarp": None}[name]
    return [res] * n


def _install_warp_functions():
    """numba's warp-level functions (``cuda.shfl_sync``, ``shfl_up/down/xor_sync``,
    ``all/any/eq/ballot_sync``, ``syncwarp``, ``activemask``, ``lanemask_lt``), which numba's
    simulator lacks, as warp collectives of the simulated lanes.  Every lane of the warp must
    take part (its mask must hold them all); ``activemask()`` is the warp's lanes."""
    try:
        from numba.cuda.simulator.kernelapi import FakeCUDAModule
    except ImportError:
        return
    if getattr(FakeCUDAModule, "_atoms_warp_functions", False):
        return

    def make(name, default=None):
        def fn(mask, value=default, operand=0):
            return _collective(f"cuda.{name}", ("warp", name), (mask, value, operand), whole_warp=False)
        fn.__name__ = name
        return staticmethod(fn)

    for name in ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync"):
        setattr(FakeCUDAModule, name, make(name))
    for name in ("all_sync", "any_sync", "eq_sync", "ballot_sync"):
        setattr(FakeCUDAModule, name, make(name))

    def syncwarp(mask=_M32):
        _collective("cuda.syncwarp", ("warp", "syncwarp"), (mask, 0, 0), whole_warp=False)

    def activemask():
        t = _thread("cuda.activemask")
        n = int(np.prod(t._manager._block_dim))
        return (1 << min(32, n - 32 * (t.thread_id >> 5))) - 1

    def lanemask_lt():
        return (1 << (_thread("cuda.lanemask_lt").thread_id & 31)) - 1

    FakeCUDAModule.syncwarp = staticmethod(syncwarp)
    FakeCUDAModule.activemask = staticmethod(activemask)
    FakeCUDAModule.lanemask_lt = staticmethod(lanemask_lt)
    FakeCUDAModule._atoms_warp_functions = True


_COLLECTIVES = {
    "warp": _warp_function,
    "mma_m16n8k16": _mma_m16n8k16,
    "mma_m16n8k8_tf32": _mma_m16n8k8_tf32,
    "mma_m8n8k4_f64": _mma_m8n8k4_f64,
    "ldmatrix": _ldmatrix,
    "stmatrix": _stmatrix,
}


# ---------------------------------------------------------------------------
# mma.sync
# ---------------------------------------------------------------------------


def _mma_4a2b4c(op, key, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    names = ("a0", "a1", "a2", "a3", "b0", "b1")
    regs = tuple(_b32(op, n, v) for n, v in zip(names, (a0, a1, a2, a3, b0, b1)))
    accs = tuple(float(c) for c in (c0, c1, c2, c3))
    return _collective(op, key, regs + accs)


def mma_m16n8k16_f32f16(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """Simulated ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``.

    Fragment layout as documented in :func:`codegen.intrinsics.ptx.mma_m16n8k16_f32f16`.
    Returns ``(d0, d1, d2, d3)`` numpy float32.
    """
    return _mma_4a2b4c(
        "mma_m16n8k16_f32f16", ("mma_m16n8k16", "f16"),
        a0, a1, a2, a3, b0, b1, c0, c1, c2, c3,
    )


def mma_m16n8k16_f32bf16(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """Simulated ``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32``.

    A/B registers hold two bfloat16 bit patterns each (lo = lower k).
    Returns ``(d0, d1, d2, d3)`` numpy float32.
    """
    return _mma_4a2b4c(
        "mma_m16n8k16_f32bf16", ("mma_m16n8k16", "bf16"),
        a0, a1, a2, a3, b0, b1, c0, c1, c2, c3,
    )


def mma_m16n8k8_f32tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """Simulated ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``.

    A/B registers are tf32 bit patterns (uint32) or float32 values (their bits);
    the 13 low mantissa bits are ignored.  Returns ``(d0, d1, d2, d3)`` float32.
    """
    return _mma_4a2b4c(
        "mma_m16n8k8_f32tf32", ("mma_m16n8k8_tf32",),
        a0, a1, a2, a3, b0, b1, c0, c1, c2, c3,
    )


def mma_m8n8k4_f64(a0, b0, c0, c1):
    """Simulated ``mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64``.

    a0 = A[g, t], b0 = B[t, g], c0/c1 = C[g, 2t], C[g, 2t+1].
    Returns ``(d0, d1)`` numpy float64.
    """
    vals = tuple(float(v) for v in (a0, b0, c0, c1))
    return _collective("mma_m8n8k4_f64", ("mma_m8n8k4_f64",), vals)


# ---------------------------------------------------------------------------
# fragment forms (register arrays)
# ---------------------------------------------------------------------------


def _frag_words(op: str, name: str, arr, first, n: int) -> int:
    if not isinstance(arr, np.ndarray) or arr.ndim != 1:
        raise TypeError(f"{op}: operand {name!r} must be a 1-D register array, got {type(arr).__name__}")
    i = _as_int(op, f"the index of {name}", first)
    if i < 0 or i + n > arr.shape[0]:
        raise IndexError(f"{op}: words {i}..{i + n - 1} of {name!r} are outside its {arr.shape[0]} words")
    return i


def _mma_frag(op, fn, na, nb, nc, acc, c, a, fa, b, fb):
    c, fa, fb = (_frag_words(op, "acc", acc, c, nc), _frag_words(op, "a", a, fa, na), _frag_words(op, "b", b, fb, nb))
    acc[c:c + nc] = fn(*a[fa:fa + na], *b[fb:fb + nb], *acc[c:c + nc])


def mma_m16n8k16_f32f16_frag(acc, c, a, fa, b, fb):
    """Simulated :func:`codegen.intrinsics.ptx.mma_m16n8k16_f32f16_frag`:
    ``acc[c:c+4] = mma(a[fa:fa+4], b[fb:fb+2], acc[c:c+4])``."""
    _mma_frag("mma_m16n8k16_f32f16_frag", mma_m16n8k16_f32f16, 4, 2, 4, acc, c, a, fa, b, fb)


def mma_m16n8k16_f32bf16_frag(acc, c, a, fa, b, fb):
    """Simulated :func:`codegen.intrinsics.ptx.mma_m16n8k16_f32bf16_frag`."""
    _mma_frag("mma_m16n8k16_f32bf16_frag", mma_m16n8k16_f32bf16, 4, 2, 4, acc, c, a, fa, b, fb)


def mma_m16n8k8_f32tf32_frag(acc, c, a, fa, b, fb):
    """Simulated :func:`codegen.intrinsics.ptx.mma_m16n8k8_f32tf32_frag`."""
    _mma_frag("mma_m16n8k8_f32tf32_frag", mma_m16n8k8_f32tf32, 4, 2, 4, acc, c, a, fa, b, fb)


def mma_m8n8k4_f64_frag(acc, c, a, fa, b, fb):
    """Simulated :func:`codegen.intrinsics.ptx.mma_m8n8k4_f64_frag`."""
    _mma_frag("mma_m8n8k4_f64_frag", mma_m8n8k4_f64, 1, 1, 2, acc, c, a, fa, b, fb)


def ldmatrix_x4_frag(frag, f, addr):
    """Simulated :func:`codegen.intrinsics.ptx.ldmatrix_x4_frag`: ``frag[f:f+4] = ldmatrix_x4(addr)``."""
    f = _frag_words("ldmatrix_x4_frag", "frag", frag, f, 4)
    frag[f:f + 4] = ldmatrix_x4(addr)


def ldmatrix_x4_trans_frag(frag, f, addr):
    """Simulated :func:`codegen.intrinsics.ptx.ldmatrix_x4_trans_frag`."""
    f = _frag_words("ldmatrix_x4_trans_frag", "frag", frag, f, 4)
    frag[f:f + 4] = ldmatrix_x4_trans(addr)


# ---------------------------------------------------------------------------
# ldmatrix
# ---------------------------------------------------------------------------


def _ldsm(op, n, trans, addr):
    return _collective(op, ("ldmatrix", op, n, trans), (_as_int(op, "addr", addr),))


def _stsm(op, n, trans, addr, regs):
    words = tuple(_b32(op, f"r{i}", r) for i, r in enumerate(regs))
    _collective(op, ("stmatrix", op, n, trans), (_as_int(op, "addr", addr),) + words)


def stmatrix_x1(addr, r0):
    """Simulated ``stmatrix.sync.aligned.m8n8.x1.shared.b16``: the inverse of :func:`ldmatrix_x1`."""
    _stsm("stmatrix_x1", 1, False, addr, (r0,))


def stmatrix_x2(addr, r0, r1):
    """Simulated ``stmatrix.sync.aligned.m8n8.x2.shared.b16``."""
    _stsm("stmatrix_x2", 2, False, addr, (r0, r1))


def stmatrix_x4(addr, r0, r1, r2, r3):
    """Simulated ``stmatrix.sync.aligned.m8n8.x4.shared.b16``."""
    _stsm("stmatrix_x4", 4, False, addr, (r0, r1, r2, r3))


def stmatrix_x1_trans(addr, r0):
    """Simulated ``stmatrix.sync.aligned.m8n8.x1.trans.shared.b16``: the inverse of :func:`ldmatrix_x1_trans`."""
    _stsm("stmatrix_x1_trans", 1, True, addr, (r0,))


def stmatrix_x2_trans(addr, r0, r1):
    """Simulated ``stmatrix.sync.aligned.m8n8.x2.trans.shared.b16``."""
    _stsm("stmatrix_x2_trans", 2, True, addr, (r0, r1))


def stmatrix_x4_trans(addr, r0, r1, r2, r3):
    """Simulated ``stmatrix.sync.aligned.m8n8.x4.trans.shared.b16``."""
    _stsm("stmatrix_x4_trans", 4, True, addr, (r0, r1, r2, r3))


def ldmatrix_x1(addr):
    """Simulated ``ldmatrix.sync.aligned.m8n8.x1.shared.b16``; returns ``(r0,)``."""
    return _ldsm("ldmatrix_x1", 1, False, addr)


def ldmatrix_x2(addr):
    """Simulated ``ldmatrix.sync.aligned.m8n8.x2.shared.b16``; returns ``(r0, r1)``."""
    return _ldsm("ldmatrix_x2", 2, False, addr)


def ldmatrix_x4(addr):
    """Simulated ``ldmatrix.sync.aligned.m8n8.x4.shared.b16``; returns ``(r0, .., r3)``."""
    return _ldsm("ldmatrix_x4", 4, False, addr)


def ldmatrix_x1_trans(addr):
    """Simulated ``ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16``; returns ``(r0,)``."""
    return _ldsm("ldmatrix_x1_trans", 1, True, addr)


def ldmatrix_x2_trans(addr):
    """Simulated ``ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16``; returns ``(r0, r1)``."""
    return _ldsm("ldmatrix_x2_trans", 2, True, addr)


def ldmatrix_x4_trans(addr):
    """Simulated ``ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16``; returns ``(r0, .., r3)``."""
    return _ldsm("ldmatrix_x4_trans", 4, True, addr)


# ---------------------------------------------------------------------------
# cp.async
# ---------------------------------------------------------------------------


class _CpAsyncState:
    def __init__(self):
        self.pending = []  # copies not yet committed
        self.groups = []  # committed groups, oldest first


def _cp_state(op: str) -> _CpAsyncState:
    t = _thread(op)
    st = t.__dict__.get("_atoms_cp_async")
    if st is None:
        st = _CpAsyncState()
        t.__dict__["_atoms_cp_async"] = st
    return st


def _cp_async(op, size, dst, src, src_size):
    dst = _as_int(op, "dst", dst)
    src = _as_int(op, "src", src)
    n = _as_int(op, "src_size", src_size)
    if not 0 <= n <= size:
        raise ValueError(f"{op}: src_size must be in [0, {size}], got {n}")
    _check_align(op, "dst", dst, size)
    _check_align(op, "src", src, size)
    mem = _memory(op)
    mem.shared_view(op, dst, size)  # validate the destination now
    data = (mem.read_global(op, src, n) if n else b"") + bytes(size - n)
    _cp_state(op).pending.append((dst, data))


def cp_async_ca_4(dst, src, src_size):
    """Simulated ``cp.async.ca.shared.global [dst], [src], 4, src_size`` (zero-fills)."""
    _cp_async("cp_async_ca_4", 4, dst, src, src_size)


def cp_async_ca_8(dst, src, src_size):
    """Simulated ``cp.async.ca.shared.global [dst], [src], 8, src_size`` (zero-fills)."""
    _cp_async("cp_async_ca_8", 8, dst, src, src_size)


def cp_async_ca_16(dst, src, src_size):
    """Simulated ``cp.async.ca.shared.global [dst], [src], 16, src_size`` (zero-fills)."""
    _cp_async("cp_async_ca_16", 16, dst, src, src_size)


def cp_async_cg_16(dst, src, src_size):
    """Simulated ``cp.async.cg.shared.global [dst], [src], 16, src_size`` (zero-fills)."""
    _cp_async("cp_async_cg_16", 16, dst, src, src_size)


def cp_async_commit():
    """Simulated ``cp.async.commit_group``."""
    st = _cp_state("cp_async_commit")
    st.groups.append(st.pending)
    st.pending = []


def _complete(op: str, group) -> None:
    mem = _memory(op)
    for dst, data in group:
        mem.shared_view(op, dst, len(data))[:] = np.frombuffer(data, dtype=np.uint8)


def cp_async_wait_group(n):
    """Simulated ``cp.async.wait_group n``: completes all but the ``n`` newest groups."""
    op = "cp_async_wait_group"
    n = _as_int(op, "n", n)
    if n < 0:
        raise ValueError(f"{op}: n must be >= 0, got {n}")
    st = _cp_state(op)
    while len(st.groups) > n:
        _complete(op, st.groups.pop(0))


def cp_async_wait_all():
    """Simulated ``cp.async.wait_all``: commits pending copies and completes every group."""
    cp_async_commit()
    st = _cp_state("cp_async_wait_all")
    while st.groups:
        _complete("cp_async_wait_all", st.groups.pop(0))


# ---------------------------------------------------------------------------
# addresses
# ---------------------------------------------------------------------------


def smem_addr(arr, byte_offset):
    """Simulated 32-bit shared address of ``arr``'s first element plus ``byte_offset`` bytes."""
    op = "smem_addr"
    a = _unwrap_array(op, arr)
    off = _as_int(op, "byte_offset", byte_offset)
    return _memory(op).shared_base(op, a) + off


def dynamic_smem_addr():
    """Simulated 32-bit shared address of the kernel's dynamic shared memory."""
    op = "dynamic_smem_addr"
    dyn = _kernel_context(op).shared.array(0, np.dtype(np.uint8))
    return _memory(op).shared_base(op, _unwrap_array(op, dyn))


def gmem_addr(arr, byte_offset):
    """Simulated 64-bit global address of ``arr``'s first element plus ``byte_offset`` bytes."""
    op = "gmem_addr"
    a = _unwrap_array(op, arr)
    off = _as_int(op, "byte_offset", byte_offset)
    _memory(op).register_global(a)
    return int(a.__array_interface__["data"][0]) + off


# ---------------------------------------------------------------------------
# packing and conversion
# ---------------------------------------------------------------------------


def _half_bits(op: str, name: str, v) -> int:
    if not isinstance(v, (float, int, np.floating, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{op}: operand {name!r} must be float16, got {type(v).__name__}")
    return int(np.float16(v).view(np.uint16))


def _f32_bits(op: str, name: str, v) -> int:
    if not isinstance(v, (float, int, np.floating, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{op}: operand {name!r} must be a number, got {type(v).__name__}")
    return int(np.float32(v).view(np.uint32))


def _bits_f16(b: int) -> np.float16:
    return np.uint16(b & 0xFFFF).view(np.float16)


def _bits_f32(b: int) -> np.float32:
    return np.uint32(b & _M32).view(np.float32)


def pack_f16x2(lo, hi):
    """Pack two float16 into a b32 (``lo`` in bits 0-15); returns int."""
    return _half_bits("pack_f16x2", "lo", lo) | (_half_bits("pack_f16x2", "hi", hi) << 16)


def pack_b16x2(lo, hi):
    """Pack two 16-bit patterns (low 16 bits of each integer) into a b32; returns int."""
    lo = _as_int("pack_b16x2", "lo", lo) & 0xFFFF
    hi = _as_int("pack_b16x2", "hi", hi) & 0xFFFF
    return lo | (hi << 16)


def unpack_f16x2(x):
    """Split a b32 of two f16 into ``(lo, hi)`` numpy float16."""
    x = _as_int("unpack_f16x2", "x", x)
    return (_bits_f16(x), _bits_f16(x >> 16))


def unpack_f16x2_f32(x):
    """Split a b32 of two f16 into ``(lo, hi)`` numpy float32."""
    lo, hi = unpack_f16x2(x)
    return (np.float32(lo), np.float32(hi))


def unpack_bf16x2_f32(x):
    """Split a b32 of two bf16 into ``(lo, hi)`` numpy float32 (exact)."""
    x = _as_int("unpack_bf16x2_f32", "x", x)
    return (_bits_f32((x & 0xFFFF) << 16), _bits_f32(x & 0xFFFF0000))


def _f32_to_f16_bits(v) -> int:
    with np.errstate(over="ignore"):  # overflow rounds to +-inf, as cvt.rn does
        return int(np.float32(v).astype(np.float16).view(np.uint16))


def _f32_to_bf16_bits(bits: int) -> int:
    """Round-to-nearest-even float32 -> bfloat16 bits; NaN -> canonical 0x7FFF."""
    if (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF):
        return 0x7FFF
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def cvt_f16x2_f32(lo, hi):
    """Simulated ``cvt.rn.f16x2.f32``: two float32 rounded to f16, ``lo`` in bits 0-15."""
    _f32_bits("cvt_f16x2_f32", "lo", lo)
    _f32_bits("cvt_f16x2_f32", "hi", hi)
    return _f32_to_f16_bits(lo) | (_f32_to_f16_bits(hi) << 16)


def cvt_bf16x2_f32(lo, hi):
    """Simulated ``cvt.rn.bf16x2.f32``: two float32 rounded to bf16, ``lo`` in bits 0-15."""
    lo = _f32_to_bf16_bits(_f32_bits("cvt_bf16x2_f32", "lo", lo))
    hi = _f32_to_bf16_bits(_f32_bits("cvt_bf16x2_f32", "hi", hi))
    return lo | (hi << 16)


def _fp8_table(exp_bits, man_bits):
    """The non-negative finite values of an 8-bit float, by code (a code's bits below the sign)."""
    bias = (1 << (exp_bits - 1)) - 1
    vals = []
    for code in range(128):
        e, m = code >> man_bits, code & ((1 << man_bits) - 1)
        if e == 0:
            v = m * 2.0 ** (1 - bias - man_bits)
        else:
            v = (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
        vals.append(v)
    if exp_bits == 4:          # e4m3 (fn): only S.1111.111 is NaN; no infinities
        return vals[:127], 0x7F
    return vals[:124], 0x7F    # e5m2: exponent 31 holds infinities and NaNs


_FP8 = {"e4m3": _fp8_table(4, 3), "e5m2": _fp8_table(5, 2)}


def _f32_to_fp8_bits(kind, x):
    """Round-to-nearest-even float32 -> 8-bit float bits, saturating to the largest finite
    value (``.satfinite``); NaN -> the format's NaN."""
    vals, nan = _FP8[kind]
    x = float(np.float32(x))
    if math.isnan(x):
        return nan
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = min(abs(x), vals[-1])
    i = int(np.searchsorted(vals, a))
    if i < len(vals) and vals[i] == a:
        return sign | i
    lo, hi = i - 1, i                          # vals[lo] < a < vals[hi]
    dl, dh = a - vals[lo], vals[hi] - a
    return sign | (lo if dl < dh or (dl == dh and lo % 2 == 0) else hi)


def cvt_e4m3x2_f32(lo, hi):
    """Simulated ``cvt.rn.satfinite.e4m3x2.f32``: ``lo`` in bits 0-7, ``hi`` in bits 8-15."""
    _f32_bits("cvt_e4m3x2_f32", "lo", lo)
    _f32_bits("cvt_e4m3x2_f32", "hi", hi)
    return _f32_to_fp8_bits("e4m3", lo) | (_f32_to_fp8_bits("e4m3", hi) << 8)


def cvt_e5m2x2_f32(lo, hi):
    """Simulated ``cvt.rn.satfinite.e5m2x2.f32``: ``lo`` in bits 0-7, ``hi`` in bits 8-15."""
    _f32_bits("cvt_e5m2x2_f32", "lo", lo)
    _f32_bits("cvt_e5m2x2_f32", "hi", hi)
    return _f32_to_fp8_bits("e5m2", lo) | (_f32_to_fp8_bits("e5m2", hi) << 8)


def cvt_tf32_f32(x):
    """Simulated ``cvt.rna.tf32.f32`` (nearest, ties away); returns the uint32 bits."""
    bits = _f32_bits("cvt_tf32_f32", "x", x)
    if (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF):
        return 0x7FFFFFFF
    return ((bits + 0x1000) & 0xFFFFE000) & _M32


def f32_as_u32(x):
    """Bit pattern of a float32 as int."""
    return _f32_bits("f32_as_u32", "x", x)


def tanh_approx_f32(x):
    """Simulated ``tanh.approx.f32`` (exact tanh, rounded to float32)."""
    _f32_bits("tanh_approx_f32", "x", x)
    return np.float32(math.tanh(float(np.float32(x))))


def ex2_approx_f32(x):
    """Simulated ``ex2.approx.ftz.f32`` (exact 2**x, rounded to float32)."""
    _f32_bits("ex2_approx_f32", "x", x)
    with np.errstate(over="ignore"):
        return np.float32(np.exp2(np.float64(np.float32(x))))


def u32_as_f32(x):
    """Reinterpret the low 32 bits of an integer as numpy float32."""
    return _bits_f32(_as_int("u32_as_f32", "x", x))


# ---------------------------------------------------------------------------
# 16-byte vector loads and stores
# ---------------------------------------------------------------------------


def _words(data: bytes) -> tuple:
    return tuple(int(w) for w in np.frombuffer(data, dtype="<u4"))


def _pack_words(op, r0, r1, r2, r3) -> bytes:
    regs = [_b32(op, n, v) for n, v in zip(("r0", "r1", "r2", "r3"), (r0, r1, r2, r3))]
    return np.array(regs, dtype="<u4").tobytes()


def st_global_v2_b32(addr, r0, r1):
    """Simulated ``st.global.v2.b32`` (r0 at the lower address)."""
    op = "st_global_v2_b32"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "global", addr, 8)
    data = _b32(op, "r0", r0).to_bytes(4, "little") + _b32(op, "r1", r1).to_bytes(4, "little")
    _memory(op).write_global(op, addr, data)


def ld_global_v4_b32(addr):
    """Simulated ``ld.global.v4.b32``; returns four ints, lowest address first."""
    op = "ld_global_v4_b32"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "global", addr, 16)
    return _words(_memory(op).read_global(op, addr, 16))


def st_global_v4_b32(addr, r0, r1, r2, r3):
    """Simulated ``st.global.v4.b32`` (r0 at the lowest address)."""
    op = "st_global_v4_b32"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "global", addr, 16)
    _memory(op).write_global(op, addr, _pack_words(op, r0, r1, r2, r3))


def _scalar_bytes(op, nbytes, val) -> bytes:
    if nbytes == 4:
        return _b32(op, "val", val).to_bytes(4, "little")
    if nbytes == 8 and isinstance(val, (float, np.floating)):
        return np.float64(val).tobytes()
    return (_as_int(op, "val", val) & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "little")


def _st_scalar(op, nbytes, addr, val):
    addr = _as_int(op, "addr", addr)
    _check_align(op, "global", addr, nbytes)
    if nbytes == 4:
        data = _b32(op, "val", val).to_bytes(4, "little")
    elif nbytes == 8 and isinstance(val, (float, np.floating)):
        data = np.float64(val).tobytes()
    else:
        data = (_as_int(op, "val", val) & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "little")
    _memory(op).write_global(op, addr, data)


def st_global_b8(addr, val):
    """Simulated ``st.global.b8``: the low 8 bits of integer ``val``."""
    _st_scalar("st_global_b8", 1, addr, val)


_RED_LOCK = threading.Lock()


def red_global_max_u32(addr, val):
    """Simulated ``red.global.max.u32`` (atomic)."""
    op = "red_global_max_u32"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "global", addr, 4)
    val = _b32(op, "val", val)
    mem = _memory(op)
    with _RED_LOCK:
        old = int.from_bytes(mem.read_global(op, addr, 4), "little")
        mem.write_global(op, addr, max(old, val).to_bytes(4, "little"))


def st_global_b16(addr, val):
    """Simulated ``st.global.b16``: the low 16 bits of integer ``val``."""
    _st_scalar("st_global_b16", 2, addr, val)


def st_global_b32(addr, val):
    """Simulated ``st.global.b32``: an integer or float32 (by bits)."""
    _st_scalar("st_global_b32", 4, addr, val)


def st_global_b64(addr, val):
    """Simulated ``st.global.b64``: a float64 (by bits) or 64-bit integer."""
    _st_scalar("st_global_b64", 8, addr, val)


def _st_shared_scalar(op, nbytes, addr, val):
    addr = _as_int(op, "addr", addr)
    _check_align(op, "shared", addr, nbytes)
    data = _scalar_bytes(op, nbytes, val)
    _memory(op).shared_view(op, addr, nbytes)[:] = np.frombuffer(data, dtype=np.uint8)


def st_shared_b16(addr, val):
    """Simulated ``st.shared.b16``: the low 16 bits of integer ``val``."""
    _st_shared_scalar("st_shared_b16", 2, addr, val)


def st_shared_b32(addr, val):
    """Simulated ``st.shared.b32``: an integer or float32 (by bits)."""
    _st_shared_scalar("st_shared_b32", 4, addr, val)


def st_shared_b64(addr, val):
    """Simulated ``st.shared.b64``: a float64 (by bits) or 64-bit integer."""
    _st_shared_scalar("st_shared_b64", 8, addr, val)


def _ld_global_scalar(op, nbytes, addr):
    addr = _as_int(op, "addr", addr)
    _check_align(op, "global", addr, nbytes)
    return int.from_bytes(_memory(op).read_global(op, addr, nbytes), "little")


def ld_global_b16(addr):
    """Simulated ``ld.global.b16``; returns the bits as an int."""
    return _ld_global_scalar("ld_global_b16", 2, addr)


def ld_global_b32(addr):
    """Simulated ``ld.global.b32``; returns the bits as an int."""
    return _ld_global_scalar("ld_global_b32", 4, addr)


def ld_global_b64(addr):
    """Simulated ``ld.global.b64``; returns the bits as an int."""
    return _ld_global_scalar("ld_global_b64", 8, addr)


def ld_global_nc_b64(addr):
    """Simulated ``ld.global.nc.b64`` (read-only data); returns the bits as an int."""
    return _ld_global_scalar("ld_global_nc_b64", 8, addr)


def ld_global_nc_v4_b32(addr):
    """Simulated ``ld.global.nc.v4.b32`` (read-only data); four ints, lowest address first."""
    op = "ld_global_nc_v4_b32"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "global", addr, 16)
    return _words(_memory(op).read_global(op, addr, 16))


def u64_as_f64(x):
    """Reinterpret a 64-bit integer as numpy float64."""
    return np.array([_as_int("u64_as_f64", "x", x) & ((1 << 64) - 1)], dtype=np.uint64).view(np.float64)[0]


def ld_shared_b32(addr):
    """Simulated ``ld.shared.b32``; returns the word as an int."""
    op = "ld_shared_b32"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "shared", addr, 4)
    return _words(_memory(op).shared_view(op, addr, 4).tobytes())[0]


def ld_shared_b64(addr):
    """Simulated ``ld.shared.b64``; returns the bits as an int."""
    op = "ld_shared_b64"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "shared", addr, 8)
    return int.from_bytes(_memory(op).shared_view(op, addr, 8).tobytes(), "little")


def ld_shared_v4_b32(addr):
    """Simulated ``ld.shared.v4.b32``; returns four ints, lowest address first."""
    op = "ld_shared_v4_b32"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "shared", addr, 16)
    return _words(_memory(op).shared_view(op, addr, 16).tobytes())


def st_shared_v4_b32(addr, r0, r1, r2, r3):
    """Simulated ``st.shared.v4.b32`` (r0 at the lowest address)."""
    op = "st_shared_v4_b32"
    addr = _as_int(op, "addr", addr)
    _check_align(op, "shared", addr, 16)
    data = _pack_words(op, r0, r1, r2, r3)
    _memory(op).shared_view(op, addr, 16)[:] = np.frombuffer(data, dtype=np.uint8)


# Hopper (sm_90a): warpgroup MMA, TMA and mbarriers
from .sim_sm90 import *  # noqa: E402,F401,F403


_install_warp_functions()
