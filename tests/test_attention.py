"""``codegen.attention``: FlashAttention-2's forward pass from ``codegen.cute``'s pieces
(:mod:`codegen.flash_attention`). Without a GPU: what each thread holds, derived from the tiled
MMAs (two rows a thread at 64 queries a CTA, four at 128); the refusals of bad input; the
kernel's offline PTX (both MMAs, no local memory, no spills but the few of BM = 128 at head dim
128); and the kernel in numba's simulator against float64 (residues in both sequence lengths,
grouped-query heads, causal, bf16, head dim 128, and 128 queries a CTA)."""

import os
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import codegen
from codegen import GemmError
from codegen.flash_attention import BN, _ATOMS, derive_ownership

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("bm", [64, 128])
def test_each_thread_holds_its_rows_and_p_is_s_in_order(dtype, d, bm):
    from layoutalg import cosize, make_identity_tensor, make_tiled_mma, size

    mma_s = make_tiled_mma(_ATOMS[dtype], (4, 1, 1), (bm, BN, 16))
    mma_o = make_tiled_mma(_ATOMS[dtype], (4, 1, 1), (bm, d, 16))
    slot_s, slot_o, shuffles = derive_ownership(mma_s, mma_o, bm, d)
    assert shuffles == (1, 2)
    assert cosize(slot_s) == cosize(slot_o) == bm // 32                   # two rows a thread, four at 128
    assert size(slot_o) == size(mma_o.get_slice(0).partition_C(make_identity_tensor((bm, d))).layout) == bm * d // 128
    # thread 5 of warp 0: rows 1 and 9 (lane // 4 and 8 more), and at BM = 128 65 and 73 (64 more)
    frag = mma_s.get_slice(5).partition_C(make_identity_tensor((bm, BN)))
    rows = [1, 9, 65, 73][:bm // 32]
    assert [{tuple(frag[i])[0] for i in range(size(slot_s)) if slot_s(i) == r} for r in range(len(rows))] == \
        [{r} for r in rows]


def test_a_layout_without_that_structure_is_refused():
    from layoutalg import make_tiled_mma

    two_by_two = make_tiled_mma(_ATOMS["f16"], (2, 2, 1), (64, BN, 16))   # a row's threads in two warps
    with pytest.raises(ValueError, match=r"a row's threads \(\(4,2\):\(1,64\)\) are not lanes of one warp"):
        derive_ownership(two_by_two, make_tiled_mma(_ATOMS["f16"], (2, 2, 1), (64, 64, 16)), 64, 64)
    from layoutalg import Layout

    mma_s = make_tiled_mma(_ATOMS["f16"], (4, 1, 1), (64, BN, 16))
    o_rows_permuted = make_tiled_mma(_ATOMS["f16"], (4, 1, 1), (Layout((16, 4), (4, 1)), 64, 16))
    with pytest.raises(ValueError, match=r"thread 0 holds rows \[0, 8\] of S and \[0, 32\] of O; the softmax needs "
                                         r"the same 2 rows"):
        derive_ownership(mma_s, o_rows_permuted, 64, 64)
    s_keys_permuted = make_tiled_mma(_ATOMS["f16"], (4, 1, 1), (64, Layout((8, 8), (8, 1)), 16))
    with pytest.raises(ValueError, match=r"P \(the A operand of O's MMA\) is not S's registers in order"):
        derive_ownership(s_keys_permuted, make_tiled_mma(_ATOMS["f16"], (4, 1, 1), (64, 64, 16)), 64, 64)


def test_bad_input_is_refused_by_name():
    q = np.zeros((1, 4, 40, 64), np.float16)
    kv = np.zeros((1, 2, 50, 64), np.float16)
    with pytest.raises(GemmError, match="attention: k has dtype float32; supported: f16, bf16"):
        codegen.attention(q, kv.astype(np.float32), kv)
    with pytest.raises(GemmError, match="head dim 96 is not one of 64, 128"):
        codegen.attention(np.zeros((1, 4, 40, 96), np.float16), *(np.zeros((1, 2, 50, 96), np.float16),) * 2)
    with pytest.raises(GemmError, match="4 query heads do not divide into 3 kv heads"):
        codegen.attention(q, *(np.zeros((1, 3, 50, 64), np.float16),) * 2)
    with pytest.raises(GemmError, match=r"k must have a contiguous head dim .* got strides \(6400, 3200, 1, 50\)"):
        kt = np.zeros((1, 2, 64, 50), np.float16).transpose(0, 1, 3, 2)
        codegen.attention(q, kt, kv)
    with pytest.raises(GemmError, match="no keys"):
        codegen.attention(q, *(np.zeros((1, 2, 0, 64), np.float16),) * 2)
    with pytest.raises(GemmError, match=r"are not \(batch, heads, seq_q, d\)"):
        codegen.attention(q, kv, np.zeros((1, 2, 51, 64), np.float16))
    with pytest.raises(GemmError, match="must be 4-D"):
        codegen.attention(q[0], kv, kv)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with pytest.raises(GemmError, match=r"q, k and v must have one dtype \(f16 or bf16\), got f16, f16, bf16"):
        codegen.attention(q, kv, kv.astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("dtype,d,causal,bm", [("f16", 64, True, 64), ("bf16", 128, False, 64), ("f16", 64, False, 128),
                                               ("bf16", 128, True, 128)])
def test_the_kernel_compiles_offline_to_registers(dtype, d, causal, bm, tmp_path):
    pytest.importorskip("numba")
    from codegen.flash_attention import attention_kernel

    kern = attention_kernel(dtype, d, causal, bm)
    ptx = kern.ptx((8, 0))                                            # as a GPU's first call compiles it
    mma = f"mma.sync.aligned.m16n8k16.row.col.f32.{dtype}.{dtype}.f32"
    assert ptx.count(mma) == bm // 64 * ((d // 16) * (BN // 8) + (BN // 16) * (d // 8))   # S's and O's, a key tile
    for instr in ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "shfl.sync.bfly.b32", "ex2.approx",
                  "cp.async.cg.shared.global"):
        assert instr in ptx, instr
    assert ".local" not in ptx
    # Q (bm,d), K (64,d), V (d,64): above 48 KiB (bm 128, d 128) they are dynamic shared memory
    assert (".extern .shared" in ptx) == (kern.smem > 0) == ((bm + 2 * BN) * d * 2 > 48 * 1024)
    if shutil.which("ptxas"):
        path = tmp_path / "attention.ptx"
        path.write_text(ptx)
        out = subprocess.run(["ptxas", "-v", "-arch=sm_80", str(path), "-o", str(tmp_path / "k.cubin")],
                             capture_output=True, text=True, check=True).stderr
        stack, stores, loads = map(int, re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                                                  r"(\d+) bytes spill loads", out).groups())
        if bm == 128 and d == 128:        # all 255 registers: a few words spilled (about 100 bytes)
            assert stores <= 160 and loads <= 160, out
        else:
            assert stack == stores == loads == 0, out


#: The float64 numpy reference of the simulator runs (their scripts import nothing from tests/).
REFERENCE = r"""
import math
import numpy as np

def reference(q, k, v, causal):
    H, Hk, Sq, Sk, D = q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]
    kk = np.repeat(k.astype(np.float64), H // Hk, axis=1)
    vv = np.repeat(v.astype(np.float64), H // Hk, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), kk) / math.sqrt(D)
    if causal:
        s = np.where(np.tril(np.ones((Sq, Sk), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    return np.einsum("bhqk,bhkd->bhqd", e / e.sum(-1, keepdims=True), vv), (m + np.log(e.sum(-1, keepdims=True)))[..., 0]
"""

SIM = r"""
import sys, math
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import flash_attention
""" + REFERENCE + r"""
rng = np.random.default_rng(0)
try:
    import ml_dtypes
    bf16 = ml_dtypes.bfloat16
except ImportError:
    bf16 = np.float16
# one CTA a case (the simulator takes about 15 s a CTA and key tile of 64 queries, 25 of 128)
cases = {
    # two query heads on one kv head, keys in two tiles, the last partial (the rescaled running
    # sums); bf16, head dim 128, causal
    64: [(np.float16, 1, 2, 1, 8, 70, 64, False), (bf16, 1, 1, 1, 20, 20, 128, True)],
    # 128 queries a CTA (four rows a thread, two row blocks, the second partial), Q, K and V in
    # dynamic shared memory (64 KiB), bf16, causal
    128: [(bf16, 1, 1, 1, 70, 20, 128, True)],
}[int(sys.argv[1])]
for dt, B, H, Hk, Sq, Sk, D, causal in cases:
    flash_attention.BLOCK_M[D] = int(sys.argv[1])
    q = rng.standard_normal((B, H, Sq, D)).astype(dt)
    k = rng.standard_normal((B, Hk, Sk, D)).astype(dt)
    v = rng.standard_normal((B, Hk, Sk, D)).astype(dt)
    o, lse = codegen.attention(q, k, v, causal=causal, return_lse=True)
    ref, ref_lse = reference(q, k, v, causal)
    err, err_lse = float(np.abs(o.astype(np.float64) - ref).max()), float(np.abs(lse - ref_lse).max())
    print(np.dtype(dt).name, B, H, Hk, Sq, Sk, D, causal, err, err_lse)
    assert o.dtype == q.dtype and o.shape == q.shape and lse.shape == (B, H, Sq)
    assert err < (2e-3 if dt == np.float16 else 1.6e-2) and err_lse < 1e-5, (err, err_lse)
print("ATTENTION OK")
"""


@pytest.mark.parametrize("bm,smem", [(64, 0), (128, 65536)])
def test_a_launch_fills_the_declared_argument_slots(monkeypatch, bm, smem):
    """On a GPU the kernel goes through the driver with ATTENTION_ARGS's slots: each array's
    address and element strides, the sizes, the kv-head ratio and the scale, one CTA a tile
    of ``bm`` queries of each batch and head, the kernel's dynamic shared memory (a stand-in
    for the driver records the launch)."""
    import codegen.flash_attention as A

    seen = []

    class Function:
        def launch(self, grid, block, smem, stream, params):
            seen.append((grid, block, smem, stream, dict(zip(A.ATTENTION_ARGS.names, [v.value for v in slots[0]]))))

    slots = []
    real = A.ATTENTION_ARGS.slots

    def keep():
        s = real()
        slots.append(s.values)
        return s

    monkeypatch.setattr(A, "ATTENTION_ARGS", type("P", (), {"slots": staticmethod(keep), "names": A.ATTENTION_ARGS.names})())
    kern = type("K", (), {"threads": 128, "bm": bm, "smem": smem, "function": lambda self: Function()})()
    def arr(ptr, shape, strides):                     # a CUDA tensor as the host describes it
        return SimpleNamespace(ptr=ptr, shape=shape, strides=strides, kind="torch", device="cuda:0")

    q, k, v, o = arr(4096, (2, 8, 100, 64), (51200, 6400, 64, 1)), arr(8192, (2, 2, 70, 64), (8960, 64, 128, 1)), \
        arr(16384, (2, 2, 70, 64), (8960, 4480, 64, 1)), arr(32768, (2, 8, 100, 64), (51200, 6400, 64, 1))
    monkeypatch.setattr(A, "_describe4", lambda x, name: o)
    monkeypatch.setattr("codegen.host._stream_handle", lambda stream, kind, device: 7)
    monkeypatch.setattr(A, "_on_device", lambda d: __import__("contextlib").nullcontext())
    kern.loaded = lambda: True
    A._launch(kern, (None, None, None, None, None), (q, k, v), (2, 8, 100, 70, 2), 0.125, None)
    grid, block, shared, stream, args = seen[0]
    assert (grid, block, shared, stream) == ((100 + bm - 1) // bm * 2 * 8, 128, smem, 7)
    assert args["q"] == 4096 and args["k"] == 8192 and args["v"] == 16384 and args["o"] == 32768 and args["lse"] == 0
    assert (args["Sq"], args["Sk"], args["H"], args["ratio"]) == (100, 70, 8, 4)
    assert (args["ksb"], args["ksh"], args["kss"]) == (8960, 64, 128) and (args["vsh"], args["oss"]) == (4480, 64)
    assert args["qk"] == pytest.approx(0.125 * 1.4426950408889634, rel=1e-6)


@pytest.mark.parametrize("bm", [64, 128])
def test_the_kernel_runs_in_the_simulator(tmp_path, bm):
    pytest.importorskip("numba")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT, LAYOUTALG_CACHE=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", SIM, str(bm)], capture_output=True, text=True, env=env, timeout=900)
    assert "ATTENTION OK" in r.stdout, r.stdout + r.stderr[-3000:]
