"""``GemmConfig``: the choices that define a generated GEMM kernel.

Everything else (thread partitions, shared-memory layouts, copy and MMA
schedules, every index expression) is derived from these by the layout
algebra in :mod:`codegen.plan`.
"""

from dataclasses import dataclass, replace

from layoutalg.element_types import element_type

__all__ = ["GemmConfig", "DTYPES", "OUT_DTYPES", "PATHS"]

#: Input element types with a generated kernel (facts about each: layoutalg.element_types).
DTYPES = ("f16", "bf16", "tf32", "f32", "f64")
#: Output element types.
OUT_DTYPES = ("f16", "bf16", "f32", "f64")
#: Kernel families: warp-level ``mma.sync`` (sm_80 and newer) and Hopper's ``wgmma``.
PATHS = ("mma_sync", "wgmma")


@dataclass(frozen=True)
class GemmConfig:
    """A GEMM plan's free parameters.

    ``dtype``: input element type ("f16", "bf16", "tf32", "f32" on CUDA cores, "f64");
    ``out_dtype``: output element type (None: same as the input, f32 for tf32);
    ``bm, bn, bk``: CTA tile; ``warps_m, warps_n``: warps tiling the CTA (for "f32",
    threads are arranged 16 x (warps*32/16)); ``stages``: shared-memory pipeline depth (>= 2);
    ``group_m``: CTA rasterization group (CTAs of ``group_m`` rows of tiles run together
    for L2 reuse; 1 disables it); ``min_blocks``: CTAs that must fit on one multiprocessor
    (launch bounds: caps registers at 65536 / (threads * min_blocks)).
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

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"GemmConfig: dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if self.out_dtype is not None and self.out_dtype not in OUT_DTYPES:
            raise ValueError(f"GemmConfig: out_dtype {self.out_dtype!r} is not one of {', '.join(OUT_DTYPES)}")
        if self.path not in PATHS:
            raise ValueError(f"GemmConfig: path {self.path!r} is not one of {', '.join(PATHS)}")
        for name in ("bm", "bn", "bk", "warps_m", "warps_n", "stages", "group_m", "min_blocks"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"GemmConfig: {name} must be a positive int, got {v!r}")
        if self.stages < 2:
            raise ValueError(f"GemmConfig: stages must be at least 2 (double buffering), got {self.stages}")
        for name in ("bm", "bn", "bk"):
            v = getattr(self, name)
            if v & (v - 1):
                raise ValueError(f"GemmConfig: {name} must be a power of two, got {v}")
        if self.path == "wgmma":
            if self.dtype not in ("f16", "bf16"):
                raise ValueError(f"GemmConfig: the wgmma path takes f16 or bf16, got {self.dtype!r}")
            if self.bm not in (64, 128) or self.bn not in (64, 128, 256):
                raise ValueError(f"GemmConfig: wgmma tiles are BM 64 or 128 (one consumer warpgroup per 64 "
                                 f"rows) and BN 64, 128 or 256; got {self.bm}x{self.bn}")

    @property
    def threads(self):
        if self.path == "wgmma":      # a producer warpgroup and BM / 64 consumer warpgroups
            return 128 * (self.bm // 64 + 1)
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
    def out(self):
        if self.out_dtype:
            return self.out_dtype
        return {"tf32": "f32"}.get(self.dtype, self.dtype)

    def with_(self, **kw):
        return replace(self, **kw)

    @classmethod
    def default(cls, dtype="f16", M=None, N=None, K=None, out_dtype=None, aligned=True, arch=None):
        """A sensible plan for ``dtype`` and (optionally) the problem size.

        ``arch``: the compute capability to plan for; (9, 0) and newer with f16 or bf16 give
        the Hopper plan (``path="wgmma"``: 128x256x64 tiles, 4 stages), which needs operands
        that TMA can read (16-byte aligned addresses and strides).

        Large problems with 16-byte aligned operands (``aligned``) get 128x256 CTA tiles,
        the fastest measured on an H100 (benchmarks/RESULTS.md); problems with fewer than
        about one such tile per multiprocessor, and operands copied element by element,
        get 128x128 tiles (more CTAs; smaller kernels to compile).
        """
        if arch is not None and tuple(arch[:2]) >= (9, 0) and dtype in ("f16", "bf16") and aligned:
            return cls(dtype, out_dtype, 128, 256, 64, 2, 4, 4, 8, 1, "wgmma")
        tiles = None if M is None or N is None else -(-M // 128) * -(-N // 256)
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
