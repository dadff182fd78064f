"""Which intrinsic (:mod:`codegen.intrinsics`) implements which atom of the tables (:mod:`mma_atoms`).

The plan records the choice for each stage; the emitter only prints the name.  Kept apart
from the intrinsics themselves so that planning does not import numba.
"""

__all__ = ["COPY_INTRINSICS", "MMA_INTRINSICS", "WGMMA_SHAPES", "wgmma_name"]


#: The intrinsic that implements each copy atom of the tables (:mod:`mma_atoms`) that the
#: GEMM emitter uses; the plan records the choice, the emitter only prints it.
COPY_INTRINSICS = {
    "SM80_CP_ASYNC_CACHEGLOBAL_128": "cp_async_cg_16",
    "SM80_CP_ASYNC_CACHEALWAYS_64": "cp_async_ca_8",
    "SM80_CP_ASYNC_CACHEALWAYS_32": "cp_async_ca_4",
    "SM75_U32x4_LDSM_N": "ldmatrix_x4",
    "SM75_U16x8_LDSM_T": "ldmatrix_x4_trans",
}

#: The intrinsic of each MMA atom the GEMM emitter uses (UniversalFMA has none: it is a
#: scalar multiply-add written in the kernel).
MMA_INTRINSICS = {
    "SM80_16x8x16_F32F16F16F32_TN": "mma_m16n8k16_f32f16",
    "SM80_16x8x16_F32BF16BF16F32_TN": "mma_m16n8k16_f32bf16",
    "SM80_16x8x8_F32TF32TF32F32_TN": "mma_m16n8k8_f32tf32",
    "SM80_8x8x4_F64F64F64F64_TN": "mma_m8n8k4_f64",
}


#: (N, input type, PTX input type, K) of the Hopper wgmma intrinsics (f32 accumulators).
WGMMA_SHAPES = tuple((n, t, p, k) for n in (64, 128, 256)
                     for t, p, k in (("f16", "f16", 16), ("bf16", "bf16", 16), ("tf32", "tf32", 8),
                                     ("e4m3", "e4m3", 32), ("e5m2", "e5m2", 32)))


def wgmma_name(n, t, k):
    """The intrinsic of ``wgmma.mma_async`` m64n{n}k{k} with f32 accumulation of type-``t`` inputs."""
    return f"wgmma_m64n{n}k{k}_f32_{t}"
