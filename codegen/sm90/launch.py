"""Launching the Hopper kernel: TMA tensor maps, the persistent grid, the argument slots.

The tensor maps hold the operands' global addresses, so they depend on the arrays: each
launcher keeps the maps it encoded in device memory, keyed by the two addresses, and a
repeated call on the same arrays only launches.

A split-K launcher also keeps a workspace per stream (kernels on one stream run in order,
so they can share one; kernels on two streams may overlap): the tiles' counters, which
every launch leaves at zero, and the partial sums.
"""

from __future__ import annotations

import ctypes

from .. import driver

__all__ = ["tma_ok", "c_tma_ok", "WgmmaLauncher"]

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


def c_tma_ok(plan, c, c_strides, M, N):
    """Whether the staged epilogue can store C at address ``c`` with element ``c_strides``:
    the plan stages C (a 16-bit output), and C is 16-byte aligned with unit column stride
    and a row stride of a multiple of 16 bytes."""
    if plan.store is None:
        return False
    ob = plan.out.bits // 8
    scm, scn = c_strides
    return not (c % 16 or (scn != 1 and N > 1) or (scm * ob) % 16 and M > 1)


def _tma_type(et):
    """The tensor-map element type that carries operands of type ``et``."""
    return {"tf32": "f32", "e4m3": "u8", "e5m2": "u8"}.get(et.name, et.name)


def _round16(nbytes):
    """``nbytes`` rounded up to a positive multiple of 16 (a TMA stride)."""
    return max(16, -(-nbytes // 16) * 16)


class WgmmaLauncher:
    """The Hopper kernel with its arguments in place; called as ``(a, b, c, alpha, beta, stream)``."""

    def __init__(self, compiled, M, N, K, a_desc, b_desc, c_strides):
        plan = compiled.plan
        self.M, self.N = M, N
        self.c_strides = tuple(c_strides)
        self.compiled = compiled                            # the kernel compiled at set-up
        self._kernels = {compiled.key.epilogue: compiled}   # by epilogue, the other on first use
        self.threads = plan.threads
        self.smem = plan.smem_bytes
        cfg = plan.config
        tiles = -(-M // cfg.bm) * -(-N // cfg.bn)
        self.splits = max(1, min(cfg.split_k, -(-K // cfg.bk)))      # at least one k-tile a part
        units = tiles * self.splits
        self.sim = compiled.function is None
        self.cluster = cfg.cluster_m
        if self.cluster > 1:
            if self.sim:
                raise RuntimeError("gemm (wgmma): kernels with clusters (cluster_m 2) run on a GPU only; numba's "
                                   "simulator runs one block after another")
            # as many clusters as run at once (a GPU's multiprocessors need not pair up), each
            # walking pairs of tiles that share the plan's shared operand
            num_m, num_n = -(-M // cfg.bm), -(-N // cfg.bn)
            pairs = num_m * -(-num_n // 2) if plan.share == "A" else -(-num_m // 2) * num_n
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
        # TMA copies bytes: f32 data that wgmma reads as tf32 travels as f32 (the tensor core
        # ignores the low 13 mantissa bits), the 8-bit floats as bytes
        self._a = (a_desc, plan.a, _tma_type(plan.etype))
        self._b = (b_desc, plan.b, _tma_type(plan.b_etype or plan.etype))
        if self.sim:
            import numpy as np

            from ..intrinsics.sim import register_global

            self._err = np.zeros(1, dtype=np.int32)
            self.err = register_global(self._err)
        else:
            self.err = driver.mem_alloc(4)
        self.slots = ([ctypes.c_int64(0) for _ in range(4)] + [ctypes.c_int32(v) for v in (M, N, K)]
                      + [ctypes.c_int64(s) for s in c_strides] + [ctypes.c_float(1.0), ctypes.c_float(0.0)]
                      + [ctypes.c_int64(self.err), ctypes.c_int64(0), ctypes.c_int32(self.splits)])
        self.params = (ctypes.c_void_p * len(self.slots))(*[ctypes.addressof(s) for s in self.slots])
        self._maps = {}

    def _map(self, which, ptr):
        (shape, strides), op, dtype = which
        rows, k = shape
        ebytes = self.compiled.plan.etype.bits // 8
        if op.major == "K":
            dims, stride = (k, rows), strides[0] * ebytes
        else:
            dims, stride = (rows, k), strides[1] * ebytes
        if rows == 1 or k == 1:         # a single row: its stride is never used, but TMA wants a multiple of 16
            stride = _round16(stride)
        return self._encode(dtype, ebytes, ptr, dims, stride, op.box, op.swizzle_bytes)

    def _encode(self, dtype, ebytes, ptr, dims, stride, box, swizzle_bytes=128):
        if self.sim:
            from ..intrinsics.sim_sm90 import encode_tensor_map_2d

            arr = encode_tensor_map_2d(ebytes, ptr, dims, stride, box, swizzle_bytes)
            self._keep = getattr(self, "_keep", []) + [arr]
            return int(arr.__array_interface__["data"][0])
        data = driver.encode_tensor_map_2d(dtype, ptr, dims, stride, box, swizzle_bytes)
        dev = driver.mem_alloc(128)
        driver.copy_to_device(dev, data)
        return dev

    def _c_map(self, c):
        """The TMA map of C for the staged epilogue, or 0 where C cannot take it."""
        plan = self.compiled.plan
        if not c_tma_ok(plan, c, self.c_strides, self.M, self.N):
            return 0
        ob = plan.out.bits // 8
        stride = self.c_strides[0] * ob
        if self.M == 1:                 # one row of C: any stride will do, and TMA wants a multiple of 16
            stride = _round16(stride)
        return self._encode(plan.out.name, ob, c, (self.N, self.M), stride, plan.store.box)

    def _kernel(self, epilogue):
        hit = self._kernels.get(epilogue)
        if hit is None:
            from dataclasses import replace

            from .kernel import get_wgmma_kernel

            hit = self._kernels[epilogue] = get_wgmma_kernel(replace(self.compiled.key, epilogue=epilogue))
        return hit

    def maps(self, a, b, c=0):
        hit = self._maps.get((a, b, c))
        if hit is None:
            if len(self._maps) >= _MAX_MAPS:
                self._maps.clear()
            hit = self._maps[(a, b, c)] = (self._map(self._a, a), self._map(self._b, b), self._c_map(c))
        return hit

    def workspace(self, stream=0):
        """The split-K workspace of launches on ``stream`` (0 when the kernel needs none)."""
        if not self.ws_bytes:
            return 0
        hit = self._ws.get(stream)
        if hit is None:
            if self.sim:
                import numpy as np

                from ..intrinsics.sim import register_global

                arr = np.zeros(self.ws_bytes, dtype=np.uint8)
                self._keep = getattr(self, "_keep", []) + [arr]
                hit = register_global(arr)
            else:
                hit = driver.mem_alloc(self.ws_bytes, owner=self)
            self._ws[stream] = hit
        return hit

    def __call__(self, a, b, c, alpha, beta, stream=0):
        ma, mb, mc = self.maps(a, b, c)
        s = self.slots
        s[0].value, s[1].value, s[2].value, s[3].value = ma, mb, mc, c
        s[9].value, s[10].value = alpha, beta
        s[12].value = self.workspace(stream)
        k = self._kernel("tma" if mc and beta == 0 else "registers")
        if self.sim:
            k.kernel[self.grid, self.threads, 0, self.smem](*[x.value for x in s])
            return
        if self.cluster > 1:
            cfg = self._configs.get(k.key.epilogue)
            if cfg is None:
                cfg = self._configs[k.key.epilogue] = k.function.cluster_config(self.grid, self.threads, self.smem,
                                                                                self.cluster)
            k.function.launch_config(cfg, stream, self.params)
            return
        k.function.launch(self.grid, self.threads, self.smem, stream, self.params)

    def check(self):
        """Raise if a wait in the kernel timed out (a lost mbarrier arrival); synchronises.
        The split-K workspaces are dropped then (a launch that gave up may have left its
        counters short of zero), so that the next launch starts on fresh ones."""
        if (self._err[0] if self.sim else driver.read_int32(self.err)):
            self._ws.clear()
            raise RuntimeError("gemm (wgmma): a wait on an mbarrier timed out in the kernel")
