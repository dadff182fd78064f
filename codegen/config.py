"""``GemmConfig``: the choices that define a generated GEMM kernel.

Everything else (thread partitions, shared-memory layouts, copy and MMA
schedules, every index expression) is derived from these by the layout
algebra in :mod:`codegen.plan`.
"""

import numpy as np
from dataclasses import dataclass, replace

from layoutalg.element_types import element_type

__all__ = ["GemmConfig", "hopper_tile", "split_k_for", "DTYPES", "OUT_DTYPES", "FP8_OUT", "PATHS", "WGMMA_DTYPES", "KMAJOR_ONLY", "FP8",
           "ACTIVATIONS", "BIAS_DTYPES"]

#: Input element types with a generated kernel (facts about each: layoutalg.element_types).
#: The 8-bit floats run on the wgmma path only.
DTYPES = ("f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2")
#: Input types of the Hopper (wgmma) path, and those of them that wgmma reads K-major only
#: (the PTX ISA allows the transpose for 16-bit inputs only).
WGMMA_DTYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2")
KMAJOR_ONLY = ("tf32", "e4m3", "e5m2")
FP8 = ("e4m3", "e5m2")
#: Output element types.
OUT_DTYPES = ("f16", "bf16", "f32", "f64", "e4m3", "e5m2")
#: Output types of the Hopper kernel only: 8-bit floats, rounded and saturated, with an output
#: scale and the amax (:class:`codegen.cute.OutputScale`).
FP8_OUT = ("e4m3", "e5m2")
#: Activations the Hopper kernel's epilogue applies (``GemmConfig.activation``): ReLU, GELU
#: (erf), GELU with the tanh approximation, SiLU.
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
#: Element types of a fused bias (``GemmConfig.bias``).
BIAS_DTYPES = ("f16", "bf16", "f32")
#: Kernel families: warp-level ``mma.sync`` (sm_80 and newer) and Hopper's ``wgmma``.
PATHS = ("mma_sync", "wgmma")


@dataclass(frozen=True)
class GemmConfig:
    """A GEMM plan's free parameters.

    ``dtype``: input element type ("f16", "bf16", "tf32", "f32" on CUDA cores, "f64", and on
    the wgmma path only the 8-bit floats "e4m3" and "e5m2"); ``out_dtype``: output element
    type (None: same as the input, f32 for tf32, bf16 for the 8-bit floats);
    ``bm, bn, bk``: CTA tile; ``warps_m, warps_n``: warps tiling the CTA (for "f32",
    threads are arranged 16 x (warps*32/16)); ``stages``: shared-memory pipeline depth (>= 2);
    ``group_m``: CTA rasterization group (CTAs of ``group_m`` rows of tiles run together
    for L2 reuse; 1 disables it); ``min_blocks``: CTAs that must fit on one multiprocessor
    (launch bounds: caps registers at 65536 / (threads * min_blocks)); ``path``: "mma_sync"
    or "wgmma" (Hopper); ``b_dtype``: B's type where it differs from A's (mixed 8-bit
    floats: "e4m3" A with "e5m2" B, or the reverse; None: A's type); ``split_k`` (wgmma
    path): the parts K is split into, each a CTA's work unit, for the tiles of the last wave
    (all tiles, when there are fewer than CTAs; the full waves' tiles run whole): a problem
    of few output tiles, or a short last wave, then still fills the GPU. The last part of a
    tile to finish adds the others' partial sums, handed over through a workspace in global
    memory, and stores C. A launch uses at most one part per k-tile. ``cluster_m`` (wgmma
    path): 2 runs CTAs in clusters of two whose tiles are vertical neighbours, sharing B:
    each loads half of B's k-tile and the TMA unit delivers it to both (multicast); on a
    GPU only. ``activation`` (one of :data:`ACTIVATIONS`) and ``bias`` (the element type of a
    bias, one of :data:`BIAS_DTYPES`; per column, or per row with ``bias_rows``), wgmma path:
    the epilogue stores ``activation(alpha * A @ B + bias)`` (``beta`` must be 0). ``grouped`` (wgmma path): a
    grouped GEMM (:func:`codegen.grouped_gemm`): the rows of A and C split in groups by offsets
    the kernel reads, each group multiplied by its own matrix of B.
    """

    dtype: str = "f16"
    out_dtype: str = None
    bm: int = 128
    bn: int = 256
    bk: int = 32
    warps_m: int = 2
    warps_n: int = 4
    stages: int = 4
    group_m: int = 8
    min_blocks: int = 1
    path: str = "mma_sync"
    b_dtype: str = None
    split_k: int = 1
    cluster_m: int = 1
    activation: str = None
    bias: str = None
    grouped: bool = False
    bias_rows: bool = False

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"GemmConfig: dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if self.out_dtype is not None and self.out_dtype not in OUT_DTYPES:
            raise ValueError(f"GemmConfig: out_dtype {self.out_dtype!r} is not one of {', '.join(OUT_DTYPES)}")
        if self.path not in PATHS:
            raise ValueError(f"GemmConfig: path {self.path!r} is not one of {', '.join(PATHS)}")
        for name in ("bm", "bn", "bk", "warps_m", "warps_n", "stages", "group_m", "min_blocks", "split_k",
                     "cluster_m"):
            v = getattr(self, name)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v <= 0:
                raise ValueError(f"GemmConfig: {name} must be a positive int, got {v!r}")
            object.__setattr__(self, name, int(v))        # numpy integers too, as the algebra takes them
        if self.stages < 2:
            raise ValueError(f"GemmConfig: stages must be at least 2 (double buffering), got {self.stages}")
        for name in ("bm", "bn", "bk"):
            v = getattr(self, name)
            if v & (v - 1):
                raise ValueError(f"GemmConfig: {name} must be a power of two, got {v}")
        if self.b_dtype == self.dtype:
            object.__setattr__(self, "b_dtype", None)           # one spelling per kernel
        if self.b_dtype is not None and not (self.dtype in FP8 and self.b_dtype in FP8):
            raise ValueError(f"GemmConfig: b_dtype (a B type other than A's) is for mixed 8-bit floats "
                             f"(e4m3 with e5m2), got dtype {self.dtype!r}, b_dtype {self.b_dtype!r}")
        if self.cluster_m not in (1, 2):
            raise ValueError(f"GemmConfig: cluster_m must be 1 or 2, got {self.cluster_m!r}")
        if self.cluster_m > 1 and (self.path != "wgmma" or self.split_k > 1):
            raise ValueError(f"GemmConfig: cluster_m 2 is a wgmma-path option without split-K; got path "
                             f"{self.path!r}, split_k {self.split_k}")
        if self.split_k > 1 and self.path != "wgmma":
            raise ValueError(f"GemmConfig: split_k is a wgmma-path option (path='wgmma'); got split_k "
                             f"{self.split_k} with path {self.path!r}")
        if self.activation is not None and self.activation not in ACTIVATIONS:
            raise ValueError(f"GemmConfig: activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        if self.bias is not None and self.bias not in BIAS_DTYPES:
            raise ValueError(f"GemmConfig: bias {self.bias!r} is not one of {', '.join(BIAS_DTYPES)}")
        if self.bias_rows and not self.bias:
            raise ValueError("GemmConfig: bias_rows (a bias per row) needs a bias type (bias='f16', 'bf16' or 'f32')")
        if (self.activation or self.bias) and self.path != "wgmma":
            raise ValueError(f"GemmConfig: a fused bias or activation is a wgmma-path option (path='wgmma'); got "
                             f"path {self.path!r}")
        if self.grouped and (self.path != "wgmma" or self.split_k > 1 or self.activation or self.bias):
            raise ValueError(f"GemmConfig: grouped (a grouped GEMM's scheduler) is a wgmma-path option without "
                             f"split-K or a fused operation; got path {self.path!r}, split_k {self.split_k}, "
                             f"activation {self.activation!r}, bias {self.bias!r}")
        if self.out in FP8_OUT and (self.path != "wgmma" or self.grouped):
            raise ValueError(f"GemmConfig: an {self.out} C is written by the wgmma path's epilogue only (path='wgmma', "
                             f"not grouped); got path {self.path!r}" + (", grouped" if self.grouped else ""))
        if self.dtype in FP8 and self.path != "wgmma":
            raise ValueError(f"GemmConfig: {self.dtype} runs on the wgmma path only (path='wgmma', compute "
                             f"capability 9.0); got path {self.path!r}")
        if self.path == "wgmma":
            if self.dtype not in WGMMA_DTYPES:
                raise ValueError(f"GemmConfig: the wgmma path takes {', '.join(WGMMA_DTYPES)}, got {self.dtype!r}")
            if self.bm not in (64, 128) or self.bn not in (64, 128, 256):
                raise ValueError(f"GemmConfig: wgmma tiles are BM 64 or 128 (one consumer warpgroup per 64 rows), "
                                 f"BN 64, 128 or 256; got {self.bm}x{self.bn} (256x128 tiles measured no faster "
                                 f"than 128x256 on the H100: benchmarks/RESULTS.md)")
            if self.out == "f64":
                raise ValueError("GemmConfig: the wgmma path writes an f16, bf16, f32, e4m3 or e5m2 C, got "
                                 "out_dtype 'f64'")
            row = self.bk * self.bits // 8
            if self.dtype in KMAJOR_ONLY and row not in (32, 64, 128):
                raise ValueError(f"GemmConfig: wgmma reads {self.dtype} K-major, one k-tile row per swizzle row "
                                 f"of 32, 64 or 128 bytes; BK {self.bk} is {row} bytes")

    @property
    def threads(self):
        if self.path == "wgmma":      # a producer warpgroup and one or two consumer warpgroups
            return 128 * (min(self.bm // 64, 2) + 1)
        return 32 * self.warps_m * self.warps_n

    @property
    def etype(self):
        """The input :class:`~layoutalg.element_types.ElementType`."""
        return element_type(self.dtype)

    @property
    def bits(self):
        return self.etype.bits

    @property
    def mma_atom(self):
        """The MMA atom of the mma.sync path (the registry's atom for sm_80)."""
        return self.etype.mma_atom((8, 0))

    @property
    def b_type(self):
        """B's element type name (A's unless ``b_dtype`` says otherwise)."""
        return self.b_dtype or self.dtype

    @property
    def out(self):
        if self.out_dtype:
            return self.out_dtype
        return {"tf32": "f32", "e4m3": "bf16", "e5m2": "bf16"}.get(self.dtype, self.dtype)

    def with_(self, **kw):
        return replace(self, **kw)

    @classmethod
    def default(cls, dtype="f16", M=None, N=None, K=None, out_dtype=None, aligned=True, arch=None, b_dtype=None,
                sms=132, batch=1):
        """A sensible plan for ``dtype`` and (optionally) the problem size: ``batch`` GEMMs of
        ``M x N x K`` (one launch: the tiles of every matrix count).

        ``arch``: the compute capability to plan for; (9, 0) and newer give the Hopper plan
        (``path="wgmma"``: CTA tiles whose k-tile is one 128-byte swizzle row of each operand
        row, BK 64 for f16/bf16, 32 for tf32, 128 for the 8-bit floats), which needs operands
        with a unit stride along a dimension (TMA reads those with 16-byte aligned addresses
        and strides; the producer warpgroup copies f16 and bf16 ones it cannot, in tiles of at
        most 128 columns, chosen at launch), K-major for tf32 and the 8-bit floats, and an f16,
        bf16 or f32 output. The 8-bit floats (``b_dtype``: B's type
        when it differs) have only this plan, whatever ``arch`` says (None included). Its
        tile (:func:`hopper_tile`) depends on how many tiles the problem has for the ``sms``
        multiprocessors; few tiles and a long K split K as well (:func:`split_k_for`).

        Large problems with 16-byte aligned operands (``aligned``) get 128x256 CTA tiles,
        the fastest measured on an H100 (benchmarks/RESULTS.md); problems with fewer than
        about one such tile per multiprocessor, and operands copied element by element,
        get 128x128 tiles (more CTAs; smaller kernels to compile).
        """
        tiles = None if M is None or N is None else -(-M // 128) * -(-N // 256) * batch
        bm, bn, stages = hopper_tile(M, N, sms, batch)
        if dtype in FP8:
            if arch is not None and tuple(arch[:2]) < (9, 0):
                raise ValueError(f"GemmConfig.default: {dtype} runs on the wgmma path, which needs compute "
                                 f"capability 9.0; got arch {tuple(arch)}")
            return cls(dtype, out_dtype, bm, bn, 128, 2, 4, stages, 8, 1, "wgmma", b_dtype,
                       split_k_for(M, N, K, bm, bn, 128, sms, batch))
        if b_dtype not in (None, dtype):
            raise ValueError(f"GemmConfig.default: b_dtype is for mixed 8-bit floats, got {dtype!r} with {b_dtype!r}")
        hopper = (arch is not None and tuple(arch[:2]) >= (9, 0) and aligned and out_dtype != "f64")
        if out_dtype in FP8_OUT:          # only the Hopper kernel's epilogue writes an 8-bit float C
            if dtype not in ("f16", "bf16", "tf32") or (arch is not None and tuple(arch[:2]) < (9, 0)):
                raise ValueError(f"GemmConfig.default: an {out_dtype} C is written by the wgmma path only (f16, "
                                 f"bf16, tf32 or 8-bit float inputs, compute capability 9.0); got {dtype}"
                                 + (f" on arch {tuple(arch)}" if arch is not None else ""))
            hopper = True
        if hopper and dtype in ("f16", "bf16"):
            return cls(dtype, out_dtype, bm, bn, 64, 2, 4, stages, 8, 1, "wgmma", None,
                       split_k_for(M, N, K, bm, bn, 64, sms, batch))
        if hopper and dtype == "tf32":
            # 128-byte K-major rows (32 f32) as for the other types: 48 KiB a stage, and a
            # k-tile of tf32 takes the tensor cores as long as one of f16 (half the rate)
            return cls(dtype, out_dtype, bm, bn, 32, 2, 4, stages, 8, 1, "wgmma", None,
                       split_k_for(M, N, K, bm, bn, 32, sms, batch))
        big = aligned and (tiles is None or tiles >= 128)
        if dtype in ("f16", "bf16"):
            cfg = (cls(dtype, out_dtype, 128, 256, 64, 2, 4, 3, 8) if big
                   else cls(dtype, out_dtype, 128, 128, 64, 2, 4, 4, 8))
        elif dtype == "tf32":
            cfg = (cls(dtype, out_dtype, 128, 256, 32, 2, 4, 4, 8) if big
                   else cls(dtype, out_dtype, 128, 128, 32, 2, 4, 3, 8))
        elif dtype == "f64":
            cfg = cls(dtype, out_dtype, 64, 64, 16, 2, 2, 3, 8)
        elif dtype == "f32":
            cfg = cls(dtype, out_dtype, 64, 64, 8, 2, 2, 2, 8)
        else:
            raise ValueError(f"GemmConfig.default: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        return cfg


def _tiles(M, N, bm, bn):
    return -(-M // bm) * -(-N // bn)


def hopper_tile(M, N, sms=132, batch=1):
    """(BM, BN, stages) of the Hopper plan for an ``M x N`` C (``batch`` of them) on ``sms``
    multiprocessors:
    128x256 with 4 stages of 48 KiB where that gives more tiles than half the
    multiprocessors (or the size is unknown), unless one to three full waves of them are
    followed by a last wave that fills at most half the multiprocessors; else 128x128 with
    6 stages of 32 KiB where that gives more tiles than half of them; else 64x128 tiles
    (one consumer warpgroup) with 6 stages of 24 KiB, twice the CTAs again. Few tiles make
    a problem bound by memory, or by the latency of a short k-loop: more CTAs and more
    bytes in flight each. A short last wave leaves most multiprocessors idle for a whole
    tile; smaller tiles shorten it. Measured on the H100 (f16, benchmarks/RESULTS.md):
    128x8192x8192 338 TFLOP/s with 64x128 against 294 with 128x128 (split in two); 1024^3 252
    against 226; 256x8192x8192 510 with 128x128 and 6 stages, 504 with 4; 1536x4096x4096
    (192 tiles of 128x256: a last wave of 60) 0.93 of cuBLAS with 128x128 against 0.72.
    Beyond three full waves the 128x256 tile keeps its speed, and :func:`split_k_for`
    splits a short last wave instead.

    At most 64 rows (LLM decode) take 64x128 tiles whatever N: a 128-row tile would give one
    of its two consumer warpgroups nothing but padding to multiply. Measured on the H200 (f16,
    of cuBLAS, interleaved; benchmarks/RESULTS.md): M = 1, 16, 64 with N = 14336, K = 4096 at
    0.75, 0.82, 0.93 with 64x128 against 0.59, 0.64, 0.73 with 128x128. Likewise fewer than 512
    rows whose last 128-row tile would hold at most 32 of them (M = 257: a third of the 128-row
    tiles' work is padding): 64x128 tiles, which :func:`split_k_for` then splits. Measured on
    the H200 (f16, of cuBLAS): 257 x N x K at 0.66, 0.61, 0.55 with 64x128 in 4 parts against
    0.61, 0.48, 0.48 with 128x128, for N x K = 4096 x 4096, 4096 x 14336, 14336 x 4096.

    >>> hopper_tile(4096, 4096), hopper_tile(256, 8192), hopper_tile(128, 8192), hopper_tile(1536, 4096)
    ((128, 256, 4), (128, 128, 6), (64, 128, 6), (128, 128, 6))
    >>> hopper_tile(1, 14336), hopper_tile(64, 50257), hopper_tile(257, 4096), hopper_tile(1000, 4096)
    ((64, 128, 6), (64, 128, 6), (64, 128, 6), (128, 256, 4))
    """
    if M is None or N is None:
        return 128, 256, 4
    if M <= 64 or (M < 512 and 0 < M % 128 <= 32):
        return 64, 128, 6
    big = _tiles(M, N, 128, 256) * batch
    short_last = sms < big < 4 * sms and 2 * (big % sms) <= sms
    if 2 * big > sms and not short_last:
        return 128, 256, 4
    if 2 * _tiles(M, N, 128, 128) * batch > sms:
        return 128, 128, 6
    return 64, 128, 6


#: split-K: the most parts, and the fewest k-tiles in one part
SPLIT_K_MAX, SPLIT_K_MIN_KTILES = 4, 16


def split_k_for(M, N, K, bm, bn, bk, sms, batch=1):
    """The parts to split K into for ``bm x bn x bk`` CTA tiles (of ``batch`` GEMMs) on ``sms``
    multiprocessors:
    1 unless the tiles fill at most half of them, or full waves of tiles are followed by a
    last wave that fills at most a quarter of them; then as many parts as the
    multiprocessors hold of those tiles (at most :data:`SPLIT_K_MAX`, each of at least
    :data:`SPLIT_K_MIN_KTILES` k-tiles). Only the last wave's tiles are split: the kernel
    runs the full waves' tiles whole. Measured on the H100 (f16, of cuBLAS or TFLOP/s,
    benchmarks/RESULTS.md): 64x4096x4096 149 TFLOP/s in 4 parts against 117 unsplit;
    512x512x8192 222 against 130 (64x128 tiles); after full waves of 128x128 tiles, a last
    wave of 8 tiles (2176x2048x4096) 0.77 of cuBLAS in 4 parts against 0.68 unsplit, of 24
    (2048x2304x4096) 0.77 against 0.70, but of 48 (3072^3) 0.80 in 2 parts against 0.84.

    >>> split_k_for(64, 4096, 4096, 64, 128, 64, 132), split_k_for(4096, 4096, 4096, 128, 256, 64, 132)
    (4, 1)
    >>> split_k_for(2176, 2048, 4096, 128, 128, 64, 132), split_k_for(3072, 3072, 3072, 128, 128, 64, 132)
    (4, 1)
    """
    if None in (M, N, K):
        return 1
    full, last = divmod(-(-M // bm) * -(-N // bn) * batch, sms)      # full waves, and the tiles after them
    ktiles = -(-K // bk)
    if last == 0 or (2 if full == 0 else 4) * last > sms:
        return 1
    return max(1, min(sms // last, ktiles // SPLIT_K_MIN_KTILES, SPLIT_K_MAX))
