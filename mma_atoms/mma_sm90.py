"""Hopper warpgroup MMA (``wgmma.mma_async``) atoms with f16/bf16, tf32 and fp8 inputs.

CuTe's ``SM90_64xNx16_{F16F16F16,F32F16F16,F32BF16BF16}_{SS,RS}`` (16-bit inputs, K = 16),
``SM90_64xNx8_F32TF32TF32_{SS,RS}_TN`` (tf32, K = 8) and
``SM90_64xNx32_F32{E4M3,E5M2}{E4M3,E5M2}_{SS,RS}_TN`` (8-bit floats, K = 32) for
``N = 8, 16, ..., 256``: 128 threads (a warpgroup), C/D in registers.  Every form reads
32 bytes of K per row.

* ``SS``: A and B are read from shared memory through 64-bit matrix descriptors.
  Their layouts are CuTe's ``ABLayout<M,K> = (128,(M,K)):(0,(1,M))``: every thread
  maps to the whole tile (thread stride 0).  They are a *broadcast*, not per-thread
  bijections: the descriptor, not the thread, says where each element is.
* ``RS``: A comes from registers (``ALayout_64x16``, the same (thread, value) map as
  a 64x16 accumulator); B is a shared-memory descriptor.

The CuTe op types are templates over the operand majorness and input scaling
(``SM90_64x128x16_F32F16F16_SS<tnspA, tnspB, scaleA, scaleB>``); those choose
immediates of the instruction, not the layouts here.  tf32 and the 8-bit floats have no
transpose immediates: the PTX ISA allows the transpose only for f16/bf16 operands read
through descriptors, so both operands are K-major (CuTe's ``_TN`` suffix).
"""

import functools

from layoutalg import Layout

from .ops import MMAOp, Regs

__all__ = ["ENTRIES", "WGMMA_N", "clayout_64xn", "alayout_64x16", "ablayout"]

WARPGROUP = Layout(128, 1)                                               # T128 -> thread
WGMMA_N = tuple(range(8, 257, 8))

# Register A for 16-bit inputs = a 64x16 accumulator's map.
ALAYOUT_64x16 = Layout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))  # (T128,V8) -> (M64,K16)
# Register A for 32-bit (tf32) inputs: per warp the m16n8k8 tf32 A fragment.
ALAYOUT_64x8 = Layout(((4, 8, 4), (2, 2)), ((64, 1, 16), (8, 256)))           # (T128,V4) -> (M64,K8)
# Register A for 8-bit inputs: per warp the m16n8k32 8-bit A fragment.
ALAYOUT_64x32 = Layout(((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024)))  # (T128,V16) -> (M64,K32)


@functools.lru_cache(maxsize=None)
def clayout_64xn(n):
    """CuTe's ``CLayout_64xN``: ``((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))``.

    (T128,V(N/2)) -> (M64,N): thread = (threadID_in_group, groupID, warp), value =
    (column pair, row half, 8-column block).  Memoised: the simulator's wgmma twin asks for
    it on every call of every thread.
    """
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"clayout_64xn: N must be a multiple of 8 in [8, 256], got {n}")
    return Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))  # (T128,V(N/2)) -> (M64,N)


def alayout_64x16():
    """CuTe's ``ALayout_64x16``: ``((4,8,4),(2,2,2)):((128,1,16),(64,8,512))``, the register A
    of the 16-bit RS forms (T128,V8) -> (M64,K16), ``m + 64 k``.

    Thread ``t = t0 + 4 t1 + 32 t2`` holds, for value ``v = v0 + 2 v1 + 4 v2``, element
    ``(m, k) = (t1 + 16 t2 + 8 v1, 2 t0 + v0 + 8 v2)``; register ``a_j`` of the instruction
    carries values ``2j`` (low half) and ``2j + 1``. It is ``clayout_64xn(16)``: the
    accumulators of a 16-column block of C, in order, are an A fragment.

    >>> str(alayout_64x16())
    '((4,8,4),(2,2,2)):((128,1,16),(64,8,512))'
    >>> divmod(alayout_64x16()(5, 3), 64)           # (k, m): t0 = t1 = 1, v0 = v1 = 1
    (3, 9)
    >>> alayout_64x16() == clayout_64xn(16)
    True
    """
    return ALAYOUT_64x16


def ablayout(mn, k):
    """CuTe's ``ABLayout<MN,K> = (128,(MN,K)):(0,(1,MN))``: a broadcast over 128 threads."""
    return Layout((128, (mn, k)), (0, (1, mn)))                         # (T128,(MN,K)) -> (MN,K)


_TYPES = (  # name part, (d, a, b, c) types, K, CuTe suffix
    ("F16F16F16", ("f16", "f16", "f16", "f16"), 16, ""),
    ("F32F16F16", ("f32", "f16", "f16", "f32"), 16, ""),
    ("F32BF16BF16", ("f32", "bf16", "bf16", "f32"), 16, ""),
    ("F32TF32TF32", ("f32", "tf32", "tf32", "f32"), 8, "_TN"),
) + tuple((f"F32{a.upper()}{b.upper()}", ("f32", a, b, "f32"), 32, "_TN")
          for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2"))

#: The register-A layout by K (32 bytes of K for every input type).
_ALAYOUT = {16: ALAYOUT_64x16, 8: ALAYOUT_64x8, 32: ALAYOUT_64x32}

_NOTE_SS = ("A and B are shared-memory descriptors (one u64 each); their layouts are broadcast "
            "over the 128 threads; D is accumulated in place (C = D registers, scale-d selects "
            "D = A*B or D = A*B + D)")
_NOTE_RS = ("A from registers, B a shared-memory descriptor (broadcast layout); D is accumulated "
            "in place (C = D registers)")


_NOTE_K = "; both operands K-major (no transpose for this input type)"


def _d_list(n):
    return "{" + (f"d0, ..., d{n - 1}" if n > 4 else ", ".join(f"d{i}" for i in range(n))) + "}"


def _entries():
    out = []
    for n in WGMMA_N:
        clay = clayout_64xn(n)
        for part, (td, ta, tb, tc), k, suffix in _TYPES:
            alay, blay = ablayout(64, k), ablayout(n, k)
            cregs = Regs(n // 2, "f32") if td == "f32" else Regs(n // 4, "u32")
            ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{td}.{ta}.{tb}"
            tnsp = not suffix                   # transpose immediates: 16-bit inputs only
            for mode in ("SS", "RS"):
                name = f"SM90_64x{n}x{k}_{part}_{mode}{suffix}"
                if mode == "SS":
                    la, aregs, asrc = alay, Regs(1, "u64"), "smem_desc"
                    operands = (f"{_d_list(cregs.count)}, desc_a, desc_b, scale_d, imm_scale_a, imm_scale_b"
                                + (", imm_tnsp_a, imm_tnsp_b" if tnsp else ""))
                else:
                    la, aregs, asrc = _ALAYOUT[k], Regs(4, "u32"), "rmem"
                    operands = (f"{_d_list(cregs.count)}, {{a0, a1, a2, a3}}, desc_b, scale_d, imm_scale_a, "
                                "imm_scale_b" + (", imm_tnsp_b" if tnsp else ""))
                cute = f"{name}<tnspA, tnspB, scaleA, scaleB>" if tnsp else f"{name}<scaleA, scaleB>"
                out.append(MMAOp(
                    name=name, kind="wgmma", shape_mnk=(64, n, k), thr_id=WARPGROUP,
                    layout_a=la, layout_b=blay, layout_c=clay,
                    a_type=ta, b_type=tb, c_type=tc, d_type=td,
                    a_regs=aregs, b_regs=Regs(1, "u64"), c_regs=cregs, d_regs=cregs,
                    min_sm=90, ptx=ptx, ptx_operands=operands, ptx_target="sm_90a",
                    a_source=asrc, b_source="smem_desc", cute_name=cute,
                    notes=(_NOTE_SS if mode == "SS" else _NOTE_RS) + ("" if tnsp else _NOTE_K)))
    return tuple(out)


ENTRIES = _entries()
