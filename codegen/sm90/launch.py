"""Launching the Hopper kernel: TMA tensor maps, the persistent grid, the argument slots.

The tensor maps hold the operands' global addresses, so they depend on the arrays: each
launcher keeps the maps it encoded in device memory, keyed by the two addresses, and a
repeated call on the same arrays only launches.

A split-K launcher also keeps a workspace per stream (kernels on one stream run in order,
so they can share one; kernels on two streams may overlap): the tiles' counters, which
every launch leaves at zero, and the partial sums.
"""

from __future__ import annotations

from .. import driver
from ..epilogue_fn import UserTensors
from .args import OutScale, gemm_args

__all__ = ["tma_ok", "c_tma_ok", "paired_c", "WgmmaLauncher"]

_MAX_MAPS = 4096


def tma_ok(major, shape, strides, ptr, ebytes):
    """Whether TMA can read an operand ``(rows, K)`` with element ``strides``: a 16-byte
    aligned address, stride 1 along the contiguous dimension, the other a multiple of 16 bytes."""
    cont, other = (1, 0) if major == "K" else (0, 1)
    if strides[cont] != 1 and shape[cont] != 1:
        return False
    if ptr % 16 or (strides[other] * ebytes) % 16 and shape[other] > 1:
        return False
    return strides[other] > 0 or shape[other] == 1


def c_tma_ok(plan, c, c_strides, M, N, batch=None):
    """Whether the staged epilogue can store C at address ``c`` with element ``c_strides``
    (and ``batch``'s stride of C, for a batch of GEMMs): the plan stages C (a 16-bit output),
    and C is 16-byte aligned with unit column stride and row and batch strides of multiples
    of 16 bytes."""
    if plan.store is None:
        return False
    ob = plan.out.bits // 8
    scm, scn = c_strides
    if batch is not None and batch.count > 1 and (batch.c * ob) % 16:
        return False
    return not (c % 16 or (scn != 1 and N > 1) or (scm * ob) % 16 and M > 1)


def paired_c(c, c_strides, M, batch, out_bits):
    """Whether the register epilogue can store C (at address ``c``, element ``c_strides``,
    ``batch``'s stride of C) two columns at a time: an even row stride (and batch stride) and
    an address aligned to two elements; else the "elements" kernel stores it."""
    if c_strides[0] % 2 and M > 1 or batch is not None and batch.count > 1 and batch.c % 2:
        return False
    return c % (2 * out_bits // 8) == 0


_NO_SCALE = OutScale()


class WgmmaLauncher(UserTensors):
    """The Hopper kernel with its arguments in place; called as ``(a, b, c, alpha, beta, stream)``.
    ``batch``: a :class:`~codegen.batch.Batch` of GEMMs of this shape (None: one); for a
    grouped kernel (``config.grouped``), the groups: ``count`` of them, B's stride from one
    group's matrix to the next (A and C are one matrix each, ``M`` rows in all)."""

    def __init__(self, compiled, M, N, K, a_desc, b_desc, c_strides, batch=None):
        plan = compiled.plan
        self.M, self.N = M, N
        self.c_strides = tuple(c_strides)
        self.batch = batch
        L = batch.count if batch is not None else 1
        self.grouped = plan.config.grouped
        if self.grouped and (batch is None or batch.a or batch.c):
            raise ValueError(f"WgmmaLauncher: a grouped kernel takes the groups as a Batch of one A and one C "
                             f"(strides 0), got {batch}")
        self.compiled = compiled                            # the kernel compiled at set-up
        self._kernels = {compiled.key.epilogue: compiled}   # by epilogue, the other on first use
        self.threads = plan.threads
        self.smem = plan.smem_bytes
        cfg = plan.config
        # a grouped GEMM's groups start tile rows of their own: at most one more a group
        tiles = ((-(-M // cfg.bm) + L) if self.grouped else -(-M // cfg.bm) * L) * -(-N // cfg.bn)
        self.splits = max(1, min(cfg.split_k, -(-K // cfg.bk)))      # at least one k-tile a part
        units = tiles * self.splits
        self.sim = compiled.function is None
        self.cluster = cfg.cluster_m
        if self.cluster > 1:
            if self.sim:
                raise RuntimeError("gemm (wgmma): kernels with clusters (cluster_m 2) run on a GPU only; numba's "
                                   "simulator runs one block after another")
            # as many clusters as run at once (a GPU's multiprocessors need not pair up), each
            # walking pairs of vertically adjacent tiles, which share B
            num_m, num_n = -(-M // cfg.bm), -(-N // cfg.bn)
            pairs = ((-(-num_m // 2) + L) if self.grouped else -(-num_m // 2) * L) * num_n
            fits = compiled.function.max_active_clusters(plan.threads, plan.smem_bytes, 2)
            self.grid = 2 * max(1, min(pairs, fits))
        else:
            self.grid = max(1, min(units, 2 if self.sim else driver.multiprocessors()))
        self._configs = {}          # cluster launch configurations, by kernel
        # split-K: the tiles of the full waves (as the kernel counts them) are a unit each, the
        # others split; the workspace holds a uint32 counter per (tile, consumer), padded to
        # 256 bytes, then each split unit's partial sums
        whole = tiles // self.grid * self.grid
        self.ws_bytes = (-(-tiles * plan.consumers * 4 // 256) * 256
                         + (tiles - whole) * self.splits * plan.consumers * plan.part_bytes if self.splits > 1 else 0)
        self._ws = {}
        # the operands' TMA loads know their maps (f32 data that wgmma reads as tf32 travels as
        # f32, the 8-bit floats as bytes); the arrays' shapes and strides are the launcher's
        parts = plan.device
        self._a = (parts.load_a, a_desc, (1 if self.grouped else L, batch.a if batch is not None else 0))
        self._b = (parts.load_b, b_desc, (L, batch.b if batch is not None else 0))
        self._c_batch = (1, 0) if self.grouped else (L, batch.c if batch is not None else 0)
        if self.sim:
            import numpy as np

            from ..intrinsics.sim import register_global

            self._err = np.zeros(1, dtype=np.int32)
            self.err = register_global(self._err)
        else:
            self.err = driver.mem_alloc(4)
            driver.store_kernel()              # loaded now: a graph capture may need it (maps)
        self.slots = gemm_args(compiled.key.user is not None).slots()
        self.slots.set(M=M, N=N, K=K, scm=c_strides[0], scn=c_strides[1], scl=self._c_batch[1], alpha=1.0,
                       err=self.err, groups=L if self.grouped else 0,
                       **plan.device.scheduler.host_params(M, N, K, self.grid, self.splits, L))
        # the register epilogue stores pairs of columns where C allows it (paired_c), else the
        # "elements" kernel stores element by element (the address is checked per call)
        self._pair_bytes = plan.out.bits // 4
        self._odd = not paired_c(0, self.c_strides, M, None if self.grouped else batch, plan.out.bits)
        self._hot = self.slots.values_of("tmap_a", "tmap_b", "tmap_c", "C", "alpha", "beta", "ws", "bias",
                                         "scale_a", "scale_b", "alpha_at", "offs", "scale_d", "scale_d_at", "amax")
        self._last = None           # the values of _hot of the last launch
        self._maps = {}
        self._keep = []

    def _device_map(self, encoded, capture=None):
        """The map's device address: simulated maps are host arrays, real ones are copied
        (during a graph capture, into ``capture``'s memory by a recorded store)."""
        if self.sim:
            arr, addr = encoded
            self._keep.append(arr)
            return addr
        if capture is not None:
            dev = capture.alloc(128)
            driver.store_async(dev, encoded, capture.stream)
            return dev
        dev = driver.mem_alloc(128)
        driver.copy_to_device(dev, encoded)
        return dev

    def _map(self, which, ptr, capture=None):
        load, (shape, strides), batch = which
        return self._device_map(load.tensor_map(ptr, shape, strides, self.sim, batch), capture)

    def _c_map(self, c, capture=None):
        """The TMA map of C for the staged epilogue, or 0 where C cannot take it."""
        plan = self.compiled.plan
        if not c_tma_ok(plan, c, self.c_strides, self.M, self.N, self.batch):
            return 0
        store = plan.device.tma_epilogue.store
        return self._device_map(store.tensor_map(c, (self.M, self.N), self.c_strides[0], self.sim, self._c_batch),
                                capture)

    def _kernel(self, epilogue):
        hit = self._kernels.get(epilogue)
        if hit is None:
            from dataclasses import replace

            from .kernel import get_wgmma_kernel

            hit = self._kernels[epilogue] = get_wgmma_kernel(replace(self.compiled.key, epilogue=epilogue))
        return hit

    def maps(self, a, b, c=0, capture=None):
        """The TMA maps of A, B and C at these addresses.  During a graph capture a map
        not made before is written by a store the graph records, into memory the capture
        gives, and is not kept: its bytes exist only once the graph runs."""
        hit = self._maps.get((a, b, c))
        if hit is None and capture is not None:
            return self._map(self._a, a, capture), self._map(self._b, b, capture), self._c_map(c, capture)
        if hit is None:
            if len(self._maps) >= _MAX_MAPS:
                self._maps.clear()
            hit = self._maps[(a, b, c)] = (self._map(self._a, a), self._map(self._b, b), self._c_map(c))
        return hit

    def workspace(self, stream=0, capture=None):
        """The split-K workspace of launches on ``stream`` (0 when the kernel needs none);
        during a graph capture, zeroed memory of the capture's own."""
        if not self.ws_bytes:
            return 0
        if capture is not None:
            return capture.alloc(self.ws_bytes, zero=True)
        hit = self._ws.get(stream)
        if hit is None:
            if self.sim:
                import numpy as np

                from ..intrinsics.sim import register_global

                arr = np.zeros(self.ws_bytes, dtype=np.uint8)
                self._keep.append(arr)
                hit = register_global(arr)
            else:
                hit = driver.mem_alloc(self.ws_bytes, owner=self)
            self._ws[stream] = hit
        return hit

    #: The kernel multiplies ``alpha`` by the float32 scalars at the addresses ``scales``.
    device_scales = True

    def __call__(self, a, b, c, alpha, beta, stream=0, capture=None, bias=0, scales=(0, 0, 0), offs=0, out=None):
        """Launch on ``stream``; ``capture`` (a :class:`codegen.host.GraphCapture`) while a
        CUDA graph is being captured: the device memory a new map or a workspace needs;
        ``bias``: the address of a fused bias (kernels with a fused bias); ``scales``: the
        addresses of the float32 scales of A and B and of alpha the kernel reads (0: none);
        ``offs``: a grouped kernel's groups' int32 end rows; ``out``: an 8-bit float C's
        :class:`~codegen.sm90.args.OutScale` or None (its amax is zeroed on ``stream`` first; in
        the simulator, by the caller)."""
        out = out or _NO_SCALE
        ma, mb, mc = self.maps(a, b, c, capture)
        values = (ma, mb, mc, c, alpha, beta, self.workspace(stream, capture), bias, *scales, offs, *out)
        if values != self._last:            # a call like the last (the usual case) sets nothing
            for slot, v in zip(self._hot, values):
                slot.value = v
            self._last = values
        k = self._kernel("tma" if mc and beta == 0 else
                         "elements" if self._odd or c % self._pair_bytes else "registers")
        if self.sim:
            k.kernel[self.grid, self.threads, 0, self.smem](*self.slots.python_values())
            return
        if out.amax:                        # the kernel takes the maximum with what is there
            driver.memset_async(out.amax, 4, stream)
        if self.cluster > 1:
            cfg = self._configs.get(k.key.epilogue)
            if cfg is None:
                cfg = self._configs[k.key.epilogue] = k.function.cluster_config(self.grid, self.threads, self.smem,
                                                                                self.cluster)
            k.function.launch_config(cfg, stream, self.slots.pointers)
            return
        k.function.launch(self.grid, self.threads, self.smem, stream, self.slots.pointers)

    def check(self):
        """Raise if a wait in the kernel timed out (a lost mbarrier arrival); synchronises.
        The split-K workspaces are dropped then (a launch that gave up may have left its
        counters short of zero), so that the next launch starts on fresh ones."""
        if (self._err[0] if self.sim else driver.read_int32(self.err)):
            self._ws.clear()
            raise RuntimeError("gemm (wgmma): a wait on an mbarrier timed out in the kernel")
