"""The names every atom backend exports (:mod:`codegen.intrinsics.ptx` and :mod:`codegen.intrinsics.sim`).

Generated kernels import these from :mod:`codegen.intrinsics`; each backend defines
every one of them with the same signature.
"""

ATOM_NAMES = (
    # tensor-core MMA
    "mma_m16n8k16_f32f16",
    "mma_m16n8k16_f32bf16",
    "mma_m16n8k8_f32tf32",
    "mma_m8n8k4_f64",
    # the same, reading and writing register arrays (fragment forms)
    "mma_m16n8k16_f32f16_frag",
    "mma_m16n8k16_f32bf16_frag",
    "mma_m16n8k8_f32tf32_frag",
    "mma_m8n8k4_f64_frag",
    # ldmatrix
    "ldmatrix_x1",
    "ldmatrix_x2",
    "ldmatrix_x4",
    "ldmatrix_x1_trans",
    "ldmatrix_x2_trans",
    "ldmatrix_x4_trans",
    "ldmatrix_x4_frag",
    "ldmatrix_x4_trans_frag",
    # stmatrix (sm_90)
    "stmatrix_x1",
    "stmatrix_x2",
    "stmatrix_x4",
    "stmatrix_x1_trans",
    "stmatrix_x2_trans",
    "stmatrix_x4_trans",
    # cp.async
    "cp_async_ca_4",
    "cp_async_ca_8",
    "cp_async_ca_16",
    "cp_async_cg_16",
    "cp_async_commit",
    "cp_async_wait_group",
    "cp_async_wait_all",
    # addresses
    "smem_addr",
    "dynamic_smem_addr",
    "gmem_addr",
    # packing and conversion
    "pack_f16x2",
    "pack_b16x2",
    "unpack_f16x2",
    "unpack_f16x2_f32",
    "unpack_bf16x2_f32",
    "cvt_f16x2_f32",
    "cvt_bf16x2_f32",
    "cvt_tf32_f32",
    "cvt_e4m3x2_f32",
    "cvt_e5m2x2_f32",
    "f32_as_u32",
    "u32_as_f32",
    "tanh_approx_f32",
    "ex2_approx_f32",
    # shared and 16-byte vector memory access
    "ld_global_v4_b32",
    "st_global_v4_b32",
    "st_global_b8",
    "red_global_max_u32",
    "st_global_b16",
    "st_global_b32",
    "st_global_b64",
    "st_global_v2_b32",
    "ld_global_b16",
    "ld_global_b32",
    "ld_global_b64",
    "ld_global_nc_b64",
    "ld_global_nc_v4_b32",
    "u64_as_f64",
    "st_shared_b16",
    "st_shared_b32",
    "st_shared_b64",
    "ld_shared_b32",
    "ld_shared_b64",
    "ld_shared_v4_b32",
    "st_shared_v4_b32",
)


from ..atom_intrinsics import WGMMA_RS_SHAPES, WGMMA_SHAPES, wgmma_name, wgmma_rs_name  # noqa: E402

#: The Hopper (sm_90a) names (:mod:`codegen.intrinsics.ptx_sm90` and its simulator twins).
SM90_NAMES = (
    "wgmma_fence", "wgmma_commit", "wgmma_wait", "acc_fence", "f32x_zero", "acc_to_array", "acc_from_array",
    "tma_load_2d", "tma_load_3d", "tma_prefetch_2d", "mbarrier_init", "mbarrier_arrive_expect_tx", "mbarrier_arrive",
    "mbarrier_try_wait", "fence_mbarrier_init", "fence_proxy_async", "tensormap_acquire", "prefetch_tensormap",
    "setmaxnreg_inc", "setmaxnreg_dec", "globaltimer",
    "tma_store_2d", "tma_store_3d", "bulk_commit_group", "bulk_wait_group", "bulk_wait_group_read",
    "named_barrier_sync", "named_barrier_arrive",
    "atom_add_acq_rel_gpu", "ld_global_cg_v2_b32",
    "cluster_ctarank", "cluster_sync", "mapa_shared", "mbarrier_arrive_cluster", "tma_load_2d_multicast",
    "tma_load_3d_multicast", "tma_load_4d", "tma_load_5d",
) + tuple(wgmma_name(n, t, k) for n, t, _, k in WGMMA_SHAPES)
SM90_NAMES += tuple(wgmma_rs_name(n, t) for n, t, _, _ in WGMMA_RS_SHAPES)      # A from registers

ATOM_NAMES = ATOM_NAMES + SM90_NAMES
