"""Grouped GEMMs (``codegen.grouped_gemm``): the Hopper kernel whose tile scheduler reads the
groups' offsets, run in numba's simulator against numpy; the scheduler's groups as Python; the
cases that are refused."""

import itertools
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import codegen
from codegen import GemmConfig, GemmError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r"""
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
rng = np.random.default_rng(5)
ints = lambda shape: rng.integers(-3, 4, shape).astype(np.float16)      # exact in f16 and f32

def check(sizes, K, N, out_t, w_kmajor, extra_rows=3):
    G = len(sizes)
    offs = np.cumsum(sizes).astype(np.int32)
    M = int(offs[-1]) + extra_rows
    x = ints((M, K))
    w = ints((G, K, N))
    if w_kmajor:                                   # (G, N, K) contiguous, transposed: K-major
        w = np.ascontiguousarray(w.transpose(0, 2, 1)).transpose(0, 2, 1)
    out = np.full((M, N), 99, out_t)
    assert codegen.grouped_gemm(x, w, offs, out) is out
    lo = 0
    for g, hi in enumerate(offs):
        ref = x[lo:hi].astype(np.float64) @ w[g].astype(np.float64)
        assert (out[lo:hi] == ref).all(), (sizes, g, np.abs(out[lo:hi] - ref).max())
        lo = hi
    assert (out[offs[-1]:] == 99).all(), "rows past the last group written"

check([50, 0, 70, 9], 64, 72, np.float32, False)   # an empty group; groups cut inside tiles
check([128, 1, 127], 96, 40, np.float16, True)     # tile-sized groups; one row; B K-major; 16-bit out
x = ints((40, 64))
w = ints((2, 64, 64))
bad = np.array([30, 20], np.int32)                 # decreasing: the second group is empty
out = np.zeros((40, 64), np.float32)
codegen.grouped_gemm(x, w, bad, out)
assert (out[:30] == x[:30].astype(np.float64) @ w[0].astype(np.float64)).all() and (out[30:] == 0).all()
over = np.array([10, 1000], np.int32)              # past M: cut at M
codegen.grouped_gemm(x, w, over, out)
assert (out[10:] == x[10:].astype(np.float64) @ w[1].astype(np.float64)).all()
new = codegen.grouped_gemm(x, w, np.array([16, 40], np.int32))
assert new.dtype == np.float16 and new.shape == (40, 64)
print("GROUPED OK")
"""


SCRIPT_FP8 = r"""
import sys
sys.setswitchinterval(1e-4)
import ml_dtypes
import numpy as np, codegen
from codegen import GemmError
from mma_atoms.numerics import decode
rng = np.random.default_rng(6)

def fp8(t, shape):
    # values that are multiples of 1/4 up to 16: exact products and f32 sums
    tab = decode(np.arange(256), t)
    ok = np.flatnonzero(np.isfinite(tab) & (np.abs(tab) <= 16) & (tab * 4 == np.round(tab * 4)))
    bits = rng.choice(ok, shape).astype(np.uint8)
    return bits.view(ml_dtypes.float8_e4m3fn if t == "e4m3" else ml_dtypes.float8_e5m2), decode(bits, t)

G, K, N = 3, 32, 24
offs = np.array([20, 20, 70], np.int32)           # an empty group
x, xv = fp8("e4m3", (73, K))
wt, wv = fp8("e5m2", (G, N, K))                    # the experts' (G, N, K) weights: w K-major
w, wv = wt.transpose(0, 2, 1), wv.transpose(0, 2, 1)
sa = np.array([0.5, 2.0, 0.25], np.float32)        # one scale a group of x's rows
sb = np.array([4.0], np.float32)                   # one for every expert's weights
out = np.full((73, N), 99, np.float32)
codegen.grouped_gemm(x, w, offs, out, scale_a=sa, scale_b=sb)
lo = 0
for g, hi in enumerate(offs):
    ref = sa[g] * 4.0 * (xv[lo:hi] @ wv[g])
    assert (out[lo:hi] == ref).all(), (g, np.abs(out[lo:hi] - ref).max())
    lo = hi
assert (out[70:] == 99).all()
out16 = np.zeros((73, N), np.float16)              # numbers fold into alpha; a 16-bit out by TMA
codegen.grouped_gemm(x, w, offs, out16, scale_a=0.5, scale_b=np.array([1.0, 2.0, 0.5], np.float32))
for g, (lo, hi) in enumerate([(0, 20), (20, 20), (20, 70)]):
    ref = (0.5 * [1.0, 2.0, 0.5][g] * (xv[lo:hi] @ wv[g])).astype(np.float16)
    assert (out16[lo:hi] == ref).all(), g
for bad, msg in (((x, fp8("e4m3", (G, K, 32))[0], offs), "must be K-major"), ((x, w, offs, out), "scale_a must be a number, or float32")):
    try:
        codegen.grouped_gemm(*bad, scale_a=np.zeros(2, np.float32) if "scale" in msg else None)
        raise SystemExit(f"no error: {msg}")
    except GemmError as e:
        assert msg in str(e), e
print("GROUPED FP8 OK")
"""


def test_simulator_runs_fp8_grouped_gemms_with_per_group_scales_exactly(tmp_path):
    """e4m3 rows times e5m2 experts, a scale a group for x and one for all experts (read by
    the kernel, one per group), an empty group, f32 and a 16-bit (TMA) output; the refusals
    of an MN-major w and of scales of the wrong length."""
    pytest.importorskip("ml_dtypes")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               LAYOUTALG_CACHE=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", SCRIPT_FP8], capture_output=True, text=True, env=env, timeout=900)
    assert "GROUPED FP8 OK" in r.stdout, r.stdout + r.stderr[-4000:]


def test_simulator_runs_grouped_gemms_exactly(tmp_path):
    """Groups of any size (empty, one row, cut inside a tile), B either major, f32 and f16
    outputs; rows past the last group untouched; offsets that decrease or pass M shorten
    groups; a new output."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               LAYOUTALG_CACHE=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=900)
    assert "GROUPED OK" in r.stdout, r.stdout + r.stderr[-4000:]


def test_scheduler_walks_every_groups_tiles_once(monkeypatch):
    """The grouped scheduler's device code as Python, for every CTA: each group's rows are
    whole tiles from its first row (the last cut at its end), every tile column once, the
    group's matrix of B, nothing for empty groups; in clusters, pairs of a group's tile rows
    (a pair's second tile past the group's end where its tile rows are odd)."""
    from types import SimpleNamespace

    from codegen.cute import TileScheduler, scheduler as S

    for cluster, (sizes, N, grid) in itertools.product((1, 2), (([300, 0, 128, 1, 129], 600, 7),
                                                              ([5] * 40, 256, 132), ([0, 0, 1000], 1000, 4))):
        sched = TileScheduler(128, 256, 64, 8, grouped=True, cluster=cluster)
        grid += grid % cluster                     # clusters of two: an even grid
        offs = np.cumsum(sizes).astype(np.int32)
        M = int(offs[-1]) + 5
        num_n = -(-N // 256)
        host = sched.host_params(M, N, 64 * 3, grid)
        p = SimpleNamespace(offs=0, groups=len(sizes), M=M, **host)
        monkeypatch.setattr(S, "int64", int)
        monkeypatch.setattr(S, "ld_global_b32", lambda addr: int(offs[addr // 4]))
        got = []
        for bid in range(grid):
            monkeypatch.setattr(S, "cuda", SimpleNamespace(blockIdx=SimpleNamespace(x=bid),
                                                           gridDim=SimpleNamespace(x=grid)))
            monkeypatch.setattr(S, "cluster_ctarank", lambda: bid % cluster)
            sp = sched.params(p)
            got += [sched.work(sp, u) for u in sched.units(sp)]
        want = set()
        lo = 0
        for g, hi in enumerate(offs):
            want |= {(g, m0, int(hi), n * 256) for m0 in range(lo, hi, 128) for n in range(num_n)}
            lo = int(hi)
        inside = [(w.l, w.m0, w.rows, w.n0) for w in got if w.m0 < w.rows]
        assert sorted(inside) == sorted(want)
        assert len(got) - len(inside) <= cluster * len(sizes) * num_n     # a pair's second tile past its group
        assert all((w.kt0, w.kt1) == (0, 3) for w in got)


def test_grouped_gemms_refuse_bad_input_by_name():
    x, w = np.zeros((40, 64), np.float16), np.zeros((2, 64, 64), np.float16)
    offs = np.array([16, 40], np.int32)
    with pytest.raises(GemmError, match=r"offs must be 2 int32 end rows"):
        codegen.grouped_gemm(x, w, np.array([16, 40], np.int64))
    with pytest.raises(GemmError, match=r"inner dimensions differ"):
        codegen.grouped_gemm(np.zeros((40, 32), np.float16), w, offs)
    with pytest.raises(GemmError, match=r"x and w must both be f16, both bf16, or 8-bit floats"):
        codegen.grouped_gemm(x, w.astype(np.float32), offs)
    with pytest.raises(GemmError, match=r"w must be 3-D"):
        codegen.grouped_gemm(x, w[0], offs)
    torch = pytest.importorskip("torch")
    xt = torch.zeros(40, 64, dtype=torch.float16, requires_grad=True)
    with pytest.raises(GemmError, match=r"a result written into a given out has none; leave out=None"):
        codegen.grouped_gemm(xt, torch.zeros(2, 64, 64, dtype=torch.float16), torch.tensor([16, 40]).int(),
                             torch.zeros(40, 64, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"grouped .* without split-K"):
        GemmConfig("f16", path="wgmma", bm=128, bn=256, bk=64, grouped=True, split_k=2)


@pytest.mark.parametrize("cluster", [1, 2])
def test_tiles_a_group_cuts_are_stored_from_registers_in_both_consumer_loops(cluster):
    """TMA clips at C's edges only: in the overlapped loop (no clusters) and in the plain one
    (clusters), a tile that its group's end cuts goes out from registers, up to the end. The
    overlapped kernel then spills at most 8 bytes (228 when it stored from the accumulators)."""
    from codegen.sm90.emit import emit_wgmma_source
    from codegen.sm90.plan import make_wgmma_plan

    cfg = GemmConfig.default("bf16", 2048, 4096, 7168, arch=(9, 0), batch=8).with_(grouped=True, cluster_m=cluster)
    src = emit_wgmma_source(make_wgmma_plan(cfg, "K", "K"), "tma")
    assert src.count("if work.m0 + SCHEDULER.bm <= work.rows:") == 1
    if cluster == 1:        # packed first (for TMA or not), so the accumulators are free during the stores
        assert "REG_EPILOGUE.store_packed(p, packed, work, c)" in src
    else:
        assert "REG_EPILOGUE.store_tile(p, acc, accs, work, c, nbox, alpha)" in src
    assert ("EPILOGUE.pack(" in src) == (cluster == 1)
    if cluster == 1 and shutil.which("ptxas"):
        pytest.importorskip("numba")
        from codegen.driver import ptxas_cubin
        from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx

        _, log = ptxas_cubin(compile_wgmma_ptx(WgmmaKey(cfg, "K", "K", "tma")), "sm_90a", verbose=True)
        spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", log)]
        assert spills and max(spills) <= 8, log


def test_torch_compile_traces_the_grouped_operator_as_one_node():
    """``torch.compile(fullgraph=True)`` of a function calling ``codegen.grouped_gemm``: one
    ``layoutalg.grouped_mm`` node in the graph, the result's shape from its fake (on ``meta``
    tensors, which run the fake implementation)."""
    torch = pytest.importorskip("torch")
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(x, w, offs):
        return codegen.grouped_gemm(x, w, offs) * 2

    x = torch.empty(300, 64, device="meta", dtype=torch.bfloat16)
    w = torch.empty(4, 64, 96, device="meta", dtype=torch.bfloat16)
    offs = torch.empty(4, device="meta", dtype=torch.int32)
    y = torch.compile(f, fullgraph=True, backend=backend)(x, w, offs)
    assert tuple(y.shape) == (300, 96) and y.dtype == torch.bfloat16
    nodes = [n for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert sum("grouped_mm" in str(n.target) for n in nodes) == 1
    with pytest.raises(GemmError, match=r"are not \(M,K\), \(G,K,N\) and \(G,\)"):
        torch.ops.layoutalg.grouped_mm(x, w[:, :32], offs)



def _rows(offs, M):
    from codegen.torch_ops import group_rows

    return group_rows(offs, M)


def _reference_grouped(x, w, offs):
    """``torch._grouped_mm``'s result as the kernel defines it (the scheduler's group rows;
    rows past the last group 0 here, where the kernel leaves them as they were)."""
    import torch

    from codegen.torch_ops import group_rows

    out = torch.zeros(x.shape[0], w.shape[2], dtype=x.dtype)
    for g, (lo, hi) in enumerate(group_rows(offs, x.shape[0])):
        out[lo:hi] = (x[lo:hi].double() @ w[g].double()).to(x.dtype)
    return out


@pytest.mark.parametrize("ends,N", [([16, 40, 40, 64], 24), ([0, 30, 20, 50], 24), ([10, 2**31 + 5, 7, 9], 24),
                                    ([16, 40, 40, 64], 21)])
def test_the_grouped_operator_differentiates_as_torch_does(ends, N, monkeypatch):
    """``grouped_gemm`` on tensors that require a gradient is the operator
    ``layoutalg.grouped_mm`` with its backward: ``dx`` a grouped GEMM of ``dy`` and ``w``'s
    transpose (one GEMM a group where ``dy``'s rows are not 16-byte aligned, N = 21; rows past
    the last group zero), ``dw`` one GEMM a group. Run here with the
    kernels replaced by float64 references on the CPU (the formula, the row ranges of empty,
    decreasing and too-large offsets, an expanded gradient); tests/gpu/check_torch.py runs the
    kernels."""
    torch = pytest.importorskip("torch")
    import codegen.grouped as G
    import codegen.host as H
    from codegen.torch_ops import grouped_mm

    calls = []

    def grouped_gemm(x, w, offs, out=None, **kw):
        calls.append("grouped")
        return _reference_grouped(x, w, offs)

    def gemm(A, B, C, **kw):
        calls.append("gemm")
        C.copy_((A.double() @ B.double()).to(C.dtype))
        return C

    monkeypatch.setattr(G, "grouped_gemm", grouped_gemm)
    monkeypatch.setattr(H, "_gemm", gemm)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 32, generator=g, dtype=torch.float64).requires_grad_()
    w = torch.randn(4, 32, N, generator=g, dtype=torch.float64).requires_grad_()
    offs = torch.tensor(ends, dtype=torch.int64).to(torch.int32)
    y = grouped_mm(x, w, offs)
    (y * torch.arange(float(N), dtype=torch.float64)).sum().backward()
    dx, dw = x.grad.clone(), w.grad.clone()
    assert calls.count("grouped") == (2 if N % 2 == 0 else 1)   # forward, and dx where TMA reads dy
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    (_reference_grouped(xr, wr, offs) * torch.arange(float(N), dtype=torch.float64)).sum().backward()
    assert torch.allclose(dx, xr.grad) and torch.allclose(dw, wr.grad)
    x.grad = w.grad = None
    grouped_mm(x, w, offs).sum().backward()                  # dy = ones, expanded: stride 0
    assert torch.allclose(w.grad, torch.stack([x.detach()[lo:hi].sum(0) for lo, hi in _rows(offs, 64)])[:, :, None]
                          .expand(-1, -1, N))


def test_grouped_gemm_takes_the_differentiable_operator_when_a_gradient_is_needed(monkeypatch):
    torch = pytest.importorskip("torch")
    import codegen.torch_ops as T

    seen = []
    monkeypatch.setattr(T, "grouped_mm", lambda x, w, offs: seen.append((x, w)) or "op")
    x = torch.zeros(40, 64, dtype=torch.float16, requires_grad=True)
    w = torch.zeros(2, 64, 64, dtype=torch.float16)
    assert codegen.grouped_gemm(x, w, torch.tensor([16, 40]).int()) == "op" and seen[0][0] is x
