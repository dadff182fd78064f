"""Which intrinsic (:mod:`codegen.intrinsics`) implements which atom of the tables (:mod:`mma_atoms`).

The plan records the choice for each stage; the emitter only prints the name.  Kept apart
from the intrinsics themselves so that planning does not import numba.
"""

__all__ = ["COPY_INTRINSICS", "MMA_INTRINSICS", "WGMMA_SHAPES", "WGMMA_RS_SHAPES", "wgmma_name", "wgmma_rs_name",
           "wgmma_types", "wgmma_input_name"]


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


#: (N, input types, PTX input types "A.B", K) of the Hopper wgmma intrinsics (f32 accumulators).
#: The input types are one name ("f16": A and B both f16) or "A_B" for mixed 8-bit floats.
WGMMA_SHAPES = tuple((n, t, ".".join(ab), k) for n in (64, 128, 256)
                     for t, ab, k in (("f16", ("f16", "f16"), 16), ("bf16", ("bf16", "bf16"), 16),
                                               ("tf32", ("tf32", "tf32"), 8),
                                               ("e4m3", ("e4m3", "e4m3"), 32), ("e5m2", ("e5m2", "e5m2"), 32),
                                               ("e4m3_e5m2", ("e4m3", "e5m2"), 32),
                                               ("e5m2_e4m3", ("e5m2", "e4m3"), 32))) + tuple(
    (n, t, f"{t}.{t}", 16) for n in range(80, 256, 16) if n != 128 for t in ("f16", "bf16"))   # attention's key tiles

#: (N, input type, PTX input types "A.B", K) of the wgmma intrinsics with A from registers
#: (the RS form: 16-bit inputs, K = 16, f32 accumulators).
WGMMA_RS_SHAPES = tuple((n, t, f"{t}.{t}", 16) for n in (64, 128, 256) for t in ("f16", "bf16"))


def wgmma_types(t):
    """(A type, B type) of the intrinsics' input-type name ``t`` ("f16" or "e4m3_e5m2")."""
    a, _, b = t.partition("_")
    return a, b or a


def wgmma_input_name(a, b):
    """The intrinsics' input-type name for A of type ``a`` and B of type ``b``."""
    return a if a == b else f"{a}_{b}"


def wgmma_name(n, t, k):
    """The intrinsic of ``wgmma.mma_async`` m64n{n}k{k} with f32 accumulation of type-``t`` inputs
    (``t`` as in :data:`WGMMA_SHAPES`)."""
    return f"wgmma_m64n{n}k{k}_f32_{t}"


def wgmma_rs_name(n, t):
    """The intrinsic of ``wgmma.mma_async`` m64n{n}k16 with A from registers (the RS form) and
    f32 accumulation of type-``t`` inputs ("f16" or "bf16").

    >>> wgmma_rs_name(128, "bf16")
    'wgmma_rs_m64n128k16_f32_bf16'
    """
    return f"wgmma_rs_m64n{n}k16_f32_{t}"
