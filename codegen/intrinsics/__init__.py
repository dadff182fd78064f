"""Intrinsics: the device functions that emit one instruction (or a few) each.

Generated kernel source does::

    from codegen.intrinsics import mma_m16n8k16_f32f16, ldmatrix_x4, cp_async_cg_16, ...

and gets the inline-PTX intrinsics of :mod:`codegen.intrinsics.ptx` when compiling
for a GPU, or their pure-Python twins of :mod:`codegen.intrinsics.sim` when numba's
CUDA simulator is enabled (``NUMBA_ENABLE_CUDASIM=1``, which must be set before
numba is imported).  Both modules export exactly the names in :data:`__all__`
with the same call signatures; see :mod:`codegen.intrinsics.ptx` for the operand
conventions and fragment layouts.

Summary (``g = lane >> 2``, ``t = lane & 3``; b32 registers of two 16-bit
values keep the lower-index element in bits 0-15):

===========================  ==============================================
``mma_m16n8k16_f32f16``      ``(a0..a3, b0, b1, c0..c3) -> (d0..d3)`` f32
``mma_m16n8k16_f32bf16``     same, bf16 inputs
``mma_m16n8k8_f32tf32``      ``(a0..a3, b0, b1, c0..c3) -> (d0..d3)`` f32
``mma_m8n8k4_f64``           ``(a0, b0, c0, c1) -> (d0, d1)`` f64
``ldmatrix_x{1,2,4}[_trans]`` ``(smem_addr) -> (r0, ..)`` uint32
``stmatrix_x{1,2,4}[_trans]`` ``(smem_addr, r0, ..)``: ldmatrix's inverse (sm_90)
``cp_async_ca_{4,8,16}``     ``(dst_smem_addr, src_gmem_addr, src_size)``
``cp_async_cg_16``           ``(dst_smem_addr, src_gmem_addr, src_size)``
``cp_async_commit``          ``()``
``cp_async_wait_group``      ``(n)``, n a compile-time integer constant
``cp_async_wait_all``        ``()``
``smem_addr``                ``(shared_array, byte_offset) -> int32``
``gmem_addr``                ``(global_array, byte_offset) -> int64``
``pack_f16x2``               ``(lo_f16, hi_f16) -> uint32``
``pack_b16x2``               ``(lo_bits, hi_bits) -> uint32``
``unpack_f16x2``             ``(x) -> (lo_f16, hi_f16)``
``unpack_f16x2_f32``         ``(x) -> (lo_f32, hi_f32)``
``unpack_bf16x2_f32``        ``(x) -> (lo_f32, hi_f32)``
``cvt_f16x2_f32``            ``(lo_f32, hi_f32) -> uint32`` (rn)
``cvt_bf16x2_f32``           ``(lo_f32, hi_f32) -> uint32`` (rn)
``cvt_tf32_f32``             ``(x_f32) -> uint32`` tf32 bits (rna)
``f32_as_u32``, ``u32_as_f32``  bit casts
``tanh_approx_f32``          ``(x_f32) -> f32`` (tanh.approx)
``ex2_approx_f32``           ``(x_f32) -> f32`` 2**x (ex2.approx.ftz)
``ld_global_v4_b32``         ``(gmem_addr) -> (r0..r3)`` uint32
``ld_global_nc_v4_b32``      the same from read-only data (pure: the compiler may move it)
``ld_global_nc_b64``         ``(gmem_addr) -> uint64`` from read-only data (pure)
``st_global_v4_b32``         ``(gmem_addr, r0, r1, r2, r3)``
``ld_shared_v4_b32``         ``(smem_addr) -> (r0..r3)`` uint32
``st_shared_v4_b32``         ``(smem_addr, r0, r1, r2, r3)``
===========================  ==============================================
"""

from __future__ import annotations

from numba.cuda import config as _config  # noqa: F401  (numba fixes the mode as it is imported)

from ..simulation import simulating


#: True when the atoms are the simulator twins (NUMBA_ENABLE_CUDASIM=1).
SIMULATED: bool = simulating()

if SIMULATED:
    from . import sim as _backend
else:
    from . import ptx as _backend

__all__ = list(_backend.__all__)

globals().update({name: getattr(_backend, name) for name in __all__})
