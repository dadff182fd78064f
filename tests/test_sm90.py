"""The Hopper path without a GPU: GMMA layouts and descriptors, the plan, the PTX for sm_90a."""

import os
import shutil
import subprocess
import pytest

from layoutalg import tile_to_shape
from mma_atoms.gmma_smem import gmma_desc, gmma_smem_atom


def _descriptor_address(desc, major, ebytes, mn, k):
    """The byte offset (before the swizzle) that the PTX ISA's canonical layout of ``desc``
    gives element (mn, k) of an instruction's block: core matrices of 8 rows x 16 bytes."""
    t = 16 // ebytes                                          # elements per 16 bytes
    w = {1: 8, 2: 4, 3: 2, 0: 1}[desc.layout_type]            # 16-byte units per swizzle row
    if major == "K":
        return ((mn // 8) * desc.sbo * 16 + (mn % 8) * w * 16 + (k // t) * 16 * (desc.lbo if not w - 1 else 1)
                + (k % t) * ebytes)
    return ((mn // (w * t)) * desc.lbo * 16 + ((mn % (w * t)) // t) * 16 + (mn % t) * ebytes
            + (k // 8) * desc.sbo * 16 + (k % 8) * w * 16)


def _swizzle_bytes(addr, layout_type):
    b = {1: 3, 2: 2, 3: 1, 0: 0}[layout_type]
    return addr ^ ((addr >> 7) & ((1 << b) - 1)) << 4


@pytest.mark.parametrize("dtype,major,shape,order", [
    ("f16", "K", (128, 64), None), ("f16", "K", (256, 64), None), ("bf16", "MN", (256, 64), (1, 0)),
    ("f16", "MN", (128, 64), (1, 0)), ("f16", "MN", (256, 64), None), ("tf32", "K", (128, 32), None),
    ("e4m3", "K", (128, 128), None), ("f16", "K", (64, 128), None)])
def test_descriptors_address_every_element_where_the_layout_puts_it(dtype, major, shape, order):
    """For each instruction's block of the stage, the descriptor (read off the layout) and the
    ISA's canonical layout put every element at the stage layout's (swizzled) offset."""
    from layoutalg.element_types import element_type

    eb = element_type(dtype).bits // 8
    stage = tile_to_shape(gmma_smem_atom(dtype, major, 128), shape, order)
    kblk = 32 // eb
    mn_blk = 64 if major == "K" else shape[0]
    desc = gmma_desc(stage, (mn_blk, kblk), major, dtype)
    for r0 in range(0, shape[0], mn_blk):
        for k0 in range(0, shape[1], kblk):
            start = stage.inner(r0, k0) * eb
            assert start % 16 == 0
            for mn in range(mn_blk):
                for k in range(kblk):
                    got = _swizzle_bytes(start + _descriptor_address(desc, major, eb, mn, k), desc.layout_type)
                    assert got == stage(r0 + mn, k0 + k) * eb, (r0, k0, mn, k)


def test_descriptor_bits_follow_the_isa_fields():
    desc = gmma_desc(tile_to_shape(gmma_smem_atom("f16", "K", 128), (64, 64)), (64, 16), "K", "f16")
    d = desc.bits(0x1230)
    assert d & 0x3FFF == 0x123 and (d >> 16) & 0x3FFF == 1 and (d >> 32) & 0x3FFF == 64 and d >> 62 == 1


def test_plan_and_source():
    from codegen import GemmConfig
    from codegen.sm90.emit import emit_wgmma_source
    from codegen.sm90.plan import make_wgmma_plan

    cfg = GemmConfig.default("f16", arch=(9, 0))
    assert cfg.path == "wgmma" and cfg.threads == 384
    plan = make_wgmma_plan(cfg, "K", "MN")
    assert plan.b.boxes == ((0, 0, 0), (8192, 64, 0), (16384, 128, 0), (24576, 192, 0))
    # every accumulator register of every thread is one distinct element of the 64 x 256 slice
    seen = {(plan.thr_row(t) + plan.pair_row(p), plan.thr_col(t) + plan.pair_col(p) + d)
            for t in range(128) for p in range(plan.acc_regs // 2) for d in (0, 1)}
    assert seen == {(m, n) for m in range(64) for n in range(256)}
    src = emit_wgmma_source(plan)
    # the kernel composes codegen.cute's pieces: producer and consumer warpgroups, the
    # mainloop's loads and MMA steps, the scheduler's units, the epilogue
    for call in ("def producer(p):", "def consumer(p, c):", "MAINLOOP.load(", "MAINLOOP.mma_step(",
                 "SCHEDULER.units(sched)", "EPILOGUE.store_box(", "PIPELINE.init()", "setmaxnreg_inc(232)"):
        assert call in src, call
    assert len(src.splitlines()) <= 150


def test_planning_and_emitting_import_no_numba():
    """codegen.cute's host objects, the plan and the kernel's source need no numba (a
    process that launches cached kernels does not pay for importing it); the kernel-side
    names import it when first looked up."""
    import sys

    code = ("import sys, codegen, codegen.cute\n"
            "from codegen import GemmConfig\n"
            "from codegen.sm90 import kernel as S\n"
            "S._base(S.WgmmaKey(GemmConfig.default('f16', arch=(9, 0)), 'K', 'MN', 'tma'))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba'))\n"
            "codegen.cute.make_tensor\n"
            "print('numba.cuda' in sys.modules)\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "True"], out.stdout


@pytest.mark.parametrize("dtype,b_major,split,cluster", [("f16", "MN", 1, 1), ("bf16", "K", 4, 1),
                                                         ("e4m3", "K", 1, 1), ("f16", "K", 1, 2)])
def test_generated_module_defines_the_plans_pieces(dtype, b_major, split, cluster):
    """The module's constants, as the source writes them, are the plan's objects (their
    reprs evaluate back to equal values), so the kernel compiles what the plan derived."""
    from codegen import GemmConfig, kernel as K
    from codegen.sm90.emit import emit_wgmma_source
    from codegen.sm90.plan import make_wgmma_plan

    cfg = GemmConfig.default(dtype, arch=(9, 0)).with_(split_k=split, cluster_m=cluster)
    plan = make_wgmma_plan(cfg, "K", b_major)
    parts = plan.device
    for epilogue in ("tma", "registers"):
        mod = K._load_module(emit_wgmma_source(plan, epilogue))
        assert mod.STORAGE == parts.storage and mod.STORAGE.nbytes == plan.smem_bytes
        assert (mod.PIPELINE, mod.LOAD_A, mod.LOAD_B, mod.MMA, mod.MAINLOOP, mod.SCHEDULER) == (
            parts.pipeline, parts.load_a, parts.load_b, parts.mma, parts.mainloop, parts.scheduler)
        assert mod.EPILOGUE == (parts.tma_epilogue if epilogue == "tma" else parts.reg_epilogue)
        assert mod.MAINLOOP.pipeline is mod.PIPELINE       # defined once, then named


def test_ptx_for_sm90a_has_wgmma_tma_and_mbarriers_and_no_spills(tmp_path):
    pytest.importorskip("numba")
    from codegen import GemmConfig
    from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx

    ptx = compile_wgmma_ptx(WgmmaKey(GemmConfig.default("f16", arch=(9, 0)), "K", "MN"))
    assert ".target sm_90a" in ptx
    # four wgmma a k-tile: in the main loop, and in each of the tile's first four k-tiles, which
    # are unrolled because each is followed by a 64-column box of the previous tile's C
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4 * (1 + 4)
    assert "cp.async.bulk.tensor.3d" in ptx and "mbarrier.try_wait.parity" in ptx and "setmaxnreg" in ptx
    # the f16 C goes out through shared memory and a TMA store a box: during the next tile's
    # first k-tiles, and after the last tile
    assert ptx.count("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group") == 4 + 4
    assert "bar.sync" in ptx and "cp.async.bulk.wait_group.read 0" in ptx
    assert ".local" not in ptx
    _ptxas_no_spills(ptx, tmp_path)


@pytest.mark.parametrize("epilogue", ["tma", "registers"])
def test_split_k_ptx_hands_partial_sums_over_and_does_not_spill(epilogue, tmp_path):
    pytest.importorskip("numba")
    from codegen import GemmConfig
    from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx

    cfg = GemmConfig.default("f16", 64, 4096, 4096, arch=(9, 0))
    assert (cfg.bm, cfg.bn, cfg.split_k) == (64, 128, 4)
    ptx = compile_wgmma_ptx(WgmmaKey(cfg, "K", "K", epilogue))
    assert "atom.acq_rel.gpu.global.add.u32" in ptx and ptx.count("ld.global.cg.v2.b32") == 32
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 4
    assert ".local" not in ptx
    _ptxas_no_spills(ptx, tmp_path)


def test_gemm_config_for_hopper_and_its_errors():
    from codegen import GemmConfig

    assert GemmConfig.default("f16", arch=(8, 0)).path == "mma_sync"
    assert GemmConfig.default("tf32", arch=(8, 0)).path == "mma_sync"
    assert GemmConfig.default("f16", arch=(9, 0), out_dtype="f64").path == "mma_sync"    # wgmma writes no f64
    with pytest.raises(ValueError, match="wgmma path takes f16, bf16, tf32, e4m3, e5m2, got 'f32'"):
        GemmConfig("f32", None, 128, 256, 32, 2, 4, 4, 8, 1, "wgmma")
    with pytest.raises(ValueError, match="path 'tma' is not one of"):
        GemmConfig(path="tma")
    with pytest.raises(ValueError, match="e4m3 runs on the wgmma path only"):
        GemmConfig("e4m3", None, 128, 128, 128, 2, 4, 4)
    with pytest.raises(ValueError, match="wgmma reads tf32 K-major, one k-tile row per swizzle row of 32, 64 or "
                                         "128 bytes; BK 64 is 256 bytes"):
        GemmConfig("tf32", None, 128, 256, 64, 2, 4, 4, 8, 1, "wgmma")
    with pytest.raises(ValueError, match="b_dtype .* is for mixed 8-bit floats"):
        GemmConfig("f16", None, 128, 256, 64, 2, 4, 4, 8, 1, "wgmma", "bf16")
    with pytest.raises(ValueError, match="writes an f16, bf16, f32, e4m3 or e5m2 C, got out_dtype .f64."):
        GemmConfig("e4m3", "f64", 128, 256, 128, 2, 4, 4, 8, 1, "wgmma")
    with pytest.raises(ValueError, match="needs compute capability 9.0"):
        GemmConfig.default("e5m2", arch=(8, 9))
    assert GemmConfig("e4m3", b_dtype="e4m3", bk=128, path="wgmma") == GemmConfig("e4m3", bk=128, path="wgmma")


@pytest.mark.parametrize("dtype,b_dtype,bk,out,instr", [
    ("tf32", None, 32, "f32", "wgmma_m64n256k8_f32_tf32"), ("e4m3", None, 128, "bf16", "wgmma_m64n256k32_f32_e4m3"),
    ("e5m2", None, 128, "bf16", "wgmma_m64n256k32_f32_e5m2"),
    ("e4m3", "e5m2", 128, "bf16", "wgmma_m64n256k32_f32_e4m3_e5m2")])
def test_default_hopper_plans_of_tf32_and_fp8(dtype, b_dtype, bk, out, instr):
    """128x256 tiles whose k-tile is one 128-byte swizzle row of K (as for f16: 48 KiB a stage),
    4 stages in 227 KiB, 4 instructions of 32 bytes of K per k-tile, both operands K-major."""
    from codegen import GemmConfig
    from codegen.sm90.plan import make_wgmma_plan

    cfg = GemmConfig.default(dtype, arch=(9, 0), b_dtype=b_dtype)
    assert (cfg.path, cfg.bm, cfg.bn, cfg.bk, cfg.stages, cfg.out) == ("wgmma", 128, 256, bk, 4, out)
    plan = make_wgmma_plan(cfg, "K", "K")
    assert plan.intrinsic == instr and plan.kblocks == 4 and plan.instr_k * plan.etype.bits == 256
    assert plan.atom.shape_mnk == (64, 256, plan.instr_k) and plan.atom.b_type == (b_dtype or dtype)
    assert plan.a.stage_bytes + plan.b.stage_bytes == 48 * 1024
    assert plan.a.desc == plan.b.desc and plan.a.desc.layout_type == 1        # 128-byte swizzle
    assert plan.smem_bytes <= 227 * 1024 < plan.smem_bytes + 48 * 1024       # no room for a 5th stage
    with pytest.raises(ValueError, match=f"wgmma reads {dtype} operands K-major only"):
        make_wgmma_plan(cfg, "K", "MN")


@pytest.mark.parametrize("dtype,b_dtype", [("tf32", None), ("e4m3", None), ("e5m2", None), ("e4m3", "e5m2")])
def test_ptx_of_tf32_and_fp8_plans_has_their_wgmma_and_no_spills(dtype, b_dtype, tmp_path):
    """codegen.compile_ptx on the default Hopper plans: the instruction with the right types,
    TMA loads, mbarriers; ptxas for sm_90a: no spills."""
    pytest.importorskip("numba")
    import re

    import codegen
    from codegen import GemmConfig

    cfg = GemmConfig.default(dtype, arch=(9, 0), b_dtype=b_dtype)
    ptx = codegen.compile_ptx(cfg, cc=(9, 0, "a"))
    k = {"tf32": 8}.get(dtype, 32)
    assert set(re.findall(r"wgmma\.mma_async\S+", ptx)) == {
        f"wgmma.mma_async.sync.aligned.m64n256k{k}.f32.{dtype}.{b_dtype or dtype}"}
    # tf32: an f32 C, stored from registers after the tile; fp8: a bf16 C staged and stored
    # during the next tile's first four k-tiles, which are unrolled
    assert ptx.count("wgmma.mma_async") == (4 if dtype == "tf32" else 4 * (1 + 4)) and ".target sm_90a" in ptx
    assert "cp.async.bulk.tensor.3d.shared::cluster.global" in ptx and "mbarrier.try_wait.parity" in ptx
    assert ".local" not in ptx
    _ptxas_no_spills(ptx, tmp_path)


def test_kernels_are_compiled_as_whole_programs_so_wgmma_pipelines():
    """codegen.driver compiles PTX as a whole program: relocatable code (the driver's linker,
    nvJitLink, ``ptxas -c``) makes ptxas serialize every wgmma and ignore setmaxnreg."""
    import shutil

    from codegen import GemmConfig, driver
    from codegen.sm90 import compile_ptx

    if shutil.which("ptxas") is None:
        pytest.skip("ptxas not on PATH")
    ptx = compile_ptx(GemmConfig.default("f16", arch=(9, 0)), "K", "MN", "tma")
    arch = driver.ptxas_arch(ptx, (9, 0))
    assert arch == "sm_90a" and driver.ptxas_arch(ptx.replace("sm_90a", "sm_90"), (9, 0)) == "sm_90"
    cubin, log = driver.ptxas_cubin(ptx, arch, verbose=True)
    assert cubin is not None, log
    assert "C7509" not in log and "C7504" not in log and "serialized" not in log, log
    reloc = subprocess.run([shutil.which("ptxas"), "-c", "-v", f"-arch={arch}", "-", "-o", os.devnull],
                           input=ptx, capture_output=True, text=True)
    if reloc.returncode == 0:                   # the mode the linkers use: the loss this avoids
        assert "C7509" in reloc.stderr, reloc.stderr


def _ptxas_no_spills(ptx, tmp_path):
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not on PATH")
    p = os.path.join(tmp_path, "k.ptx")
    with open(p, "w") as f:
        f.write(ptx)
    out = subprocess.run([ptxas, "-v", "-arch=sm_90a", p, "-o", os.path.join(tmp_path, "k.cubin")],
                         capture_output=True, text=True, check=True).stderr
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in out, out


def _simulate(prog, tmp_path, timeout=900):
    """Run the program ``prog`` in a child process with numba's simulator on (it must be set
    before numba is imported) and a fresh kernel cache; its completed process."""
    import sys

    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", LAYOUTALG_CACHE=str(tmp_path),
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=timeout)


SIM = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import GemmConfig
rng = np.random.default_rng(0)
cases = [(GemmConfig("f16", "f32", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 40, 64, 64, "N", 0.0),
         (GemmConfig("f16", "f32", 128, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 100, 72, 136, "T", 0.0),
         (GemmConfig("bf16", "f32", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 33, 8, 24, "N", -1.0),
         # a 16-bit C with beta = 0: staged in shared memory, stored by TMA (clipped at M and N)
         # (two 64-column boxes through two buffers; each CTA stores two tiles)
         (GemmConfig("f16", "f16", 64, 128, 64, 2, 4, 3, 8, 1, "wgmma"), 100, 200, 72, "N", 0.0),
         # four boxes a slice and two k-tiles: the previous tile's boxes after this one's MMAs
         # (four tiles, two a CTA; the last column tile 8 wide)
         (GemmConfig("f16", "f16", 64, 256, 64, 2, 4, 2, 8, 1, "wgmma"), 65, 264, 72, "N", 0.0),
         # BK 32: A's stage in the 64-byte swizzled atom (descriptor layout type 2), TMA likewise
         (GemmConfig("f16", "f16", 64, 64, 32, 2, 4, 3, 8, 1, "wgmma"), 40, 72, 104, "T", 0.0),
         # the same kernel with beta != 0 stores from registers
         (GemmConfig("f16", "f16", 128, 64, 64, 2, 4, 3, 8, 1, "wgmma"), 72, 40, 64, "T", 1.0),
         # one row of C whose 20 bytes are no multiple of 16: the TMA map of C takes a padded stride
         (GemmConfig("f16", "f16", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 1, 10, 64, "T", 0.0)]
for cfg, M, N, K, lb, beta in cases:
    dt = np.float16 if cfg.dtype == "f16" else np.float32
    A = rng.integers(-3, 4, (M, K)).astype(dt)
    B = rng.integers(-3, 4, (K, N)).astype(dt)
    if cfg.dtype == "bf16":     # exact small integers, carried as bf16 bits
        import ml_dtypes
        A, B = A.astype(ml_dtypes.bfloat16), B.astype(ml_dtypes.bfloat16)
    if lb == "T":
        B = np.asfortranarray(B)
    C0 = rng.integers(-3, 4, (M, N)).astype(np.float32 if cfg.out == "f32" else np.float16)
    C = C0.copy()
    launch = codegen.prepare(A, B, C, beta=beta, config=cfg)
    launch()
    launch._launcher.check()
    ref = A.astype(np.float64) @ B.astype(np.float64) + beta * C0
    err = float(np.abs(C.astype(np.float64) - ref).max())
    print(cfg.dtype, M, N, K, lb, err)
    assert err == 0.0, (cfg, M, N, K, err)
print("SIM OK")
"""


def test_hopper_kernel_runs_in_the_simulator_exactly(tmp_path):
    """Residues in M, N and K, B MN- and K-major, beta: TMA, mbarriers and wgmma as twins."""
    pytest.importorskip("numba")
    prog = SIM if _has_ml_dtypes() else SIM.replace('"bf16", "f32", 64, 64', '"f16", "f32", 64, 64')
    r = _simulate(prog, tmp_path)
    assert "SIM OK" in r.stdout, r.stdout + r.stderr[-3000:]


SIM_DTYPES = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import GemmConfig, GemmError
from mma_atoms.numerics import decode, quantize
rng = np.random.default_rng(1)

def tf32_inputs(shape):
    # f32 values +-(k + j 2**-12), k in 2..8 (or 0), j in 1..7: tf32 truncation gives +-k exactly;
    # rounding to nearest would not (j >= 5 rounds up where 2**-9 is the tf32 spacing)
    k = rng.integers(2, 9, shape) * rng.choice([-1, 1], shape)
    k[rng.random(shape) < 0.2] = 0
    frac = np.where(k != 0, rng.integers(1, 8, shape) * 2.0**-12, 0.0)
    return (np.sign(k) * (np.abs(k) + frac)).astype(np.float32), k.astype(np.float64)

def fp8_bits(t, shape):
    # bytes whose values are multiples of 1/4 up to 16: exact products and f32 sums
    tab = decode(np.arange(256), t)
    ok = np.flatnonzero(np.isfinite(tab) & (np.abs(tab) <= 16) & (tab * 4 == np.round(tab * 4)))
    return rng.choice(ok, shape).astype(np.uint8)

cases = [  # A row-major, B column-major (K-major both); residues in M, N and K
    (GemmConfig("tf32", "f32", 64, 64, 32, 2, 4, 2, 8, 1, "wgmma"), 37, 50, 44, 0.0),
    # f16 C through the TMA store; BK 64: the 64-byte swizzle
    (GemmConfig("e4m3", "f16", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 33, 72, 80, 0.0),
    # two consumers, BK 32 (one instruction a k-tile, the 32-byte swizzle), beta != 0
    (GemmConfig("e5m2", "f32", 128, 64, 32, 2, 4, 3, 8, 1, "wgmma"), 70, 24, 48, -1.0),
    # e4m3 A x e5m2 B, BK 128
    (GemmConfig("e4m3", "f32", 64, 64, 128, 2, 4, 2, 8, 1, "wgmma", "e5m2"), 9, 8, 144, 0.0)]
for cfg, M, N, K, beta in cases:
    if cfg.dtype == "tf32":
        A, Aq = tf32_inputs((M, K))
        B, Bq = tf32_inputs((K, N))
        assert np.abs(Aq - A).max() > 0 and np.abs(quantize(A, "tf32") - Aq).max() == 0
        kw = dict(alpha=0.5)
        prod = 0.5 * Aq @ Bq
    else:
        A, B = fp8_bits(cfg.dtype, (M, K)), fp8_bits(cfg.b_type, (K, N))
        kw = dict(scale_a=np.array([0.25]), scale_b=2.0)      # folded into alpha: 0.5
        prod = 0.5 * decode(A, cfg.dtype) @ decode(B, cfg.b_type)
    B = np.asfortranarray(B)
    C0 = rng.integers(-3, 4, (M, N)).astype(np.float16 if cfg.out == "f16" else np.float32)
    C = C0.copy()
    launch = codegen.prepare(A, B, C, beta=beta, config=cfg, **kw)
    launch()
    launch._launcher.check()
    ref = quantize(prod + beta * C0, cfg.out)
    err = float(np.abs(C.astype(np.float64) - ref).max())
    print(cfg.dtype, cfg.b_type, M, N, K, beta, err)
    assert err == 0.0, (cfg, M, N, K, err)
# the scales and alpha read by the kernel (device addresses, as a CUDA graph replays them):
# alpha 2 x 0.25 x 1.5 x 0.5
from codegen.intrinsics.sim import register_global
cfg = cases[1][0]
A, B = fp8_bits(cfg.dtype, (33, 80)), np.asfortranarray(fp8_bits(cfg.b_type, (80, 72)))
C = np.zeros((33, 72), np.float16)
launch = codegen.prepare(A, B, C, alpha=2.0, config=cfg)
sa, sb, al = np.float32([0.25]), np.float32([1.5]), np.float32([0.5])
launch._scales = (register_global(sa), register_global(sb), register_global(al))
launch()
ref = quantize(0.375 * decode(A, cfg.dtype) @ decode(B, cfg.b_type), cfg.out)
assert float(np.abs(C.astype(np.float64) - ref).max()) == 0.0, "scales read by the kernel"
# a wgmma tf32 plan cannot read an MN-major operand: a clear error (no silent copy)
A, _ = tf32_inputs((40, 16))
B, _ = tf32_inputs((16, 24))
try:
    codegen.gemm(A, B, np.zeros((40, 24), np.float32), config=cases[0][0])
    raise SystemExit("no error for an MN-major tf32 B")
except GemmError as e:
    assert "config.path='wgmma' needs K-major operands (wgmma reads tf32 K-major only)" in str(e), e
print("SIM DTYPES OK")
"""


def test_hopper_kernel_runs_tf32_and_fp8_in_the_simulator_exactly(tmp_path):
    """tf32 (inputs whose truncation to tf32 is exact integers), e4m3 with a TMA-stored f16 C,
    e5m2 with beta, e4m3 x e5m2; per-tensor scales folded into alpha, and read by the kernel from
    their addresses; the wgmma twin reads tf32 truncated and fp8 bytes decoded by table, as the
    tensor core does."""
    pytest.importorskip("numba")
    r = _simulate(SIM_DTYPES, tmp_path)
    assert "SIM DTYPES OK" in r.stdout, r.stdout + r.stderr[-3000:]


SIM_COL_C = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import GemmConfig, GemmError
from mma_atoms.numerics import decode, quantize
rng = np.random.default_rng(2)
# numpy arrays that are not one block are packed before the launch: keep the views, so that
# the kernel writes C's columns of ldc > M elements in place (as on a GPU array's view)
codegen.host._packed = lambda x: x

def operand(shape, lay):
    x = rng.integers(-3, 4, shape).astype(np.float16)
    return np.asfortranarray(x) if lay == "T" else x

def fp8_bits(t, shape):
    # bytes whose values are multiples of 1/4 up to 16: exact products and f32 sums
    tab = decode(np.arange(256), t)
    ok = np.flatnonzero(np.isfinite(tab) & (np.abs(tab) <= 16) & (tab * 4 == np.round(tab * 4)))
    return rng.choice(ok, shape).astype(np.uint8)

cases = [  # config, M, N, K, A, B (N: row-major, T: column-major), ldc, beta, the epilogue compiled
    # an f16 C^T with 16-byte rows (ldc 72): staged and stored by TMA
    (GemmConfig("f16", "f16", 64, 128, 64, 2, 4, 3, 8, 1, "wgmma"), 72, 104, 72, "N", "N", 72, 0.0, "tma"),
    # ldc > M: TMA clips C^T's columns at M, and the rows past M stay untouched
    (GemmConfig("f16", "f16", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 56, 40, 24, "T", "N", 64, 0.0, "tma"),
    # 68-byte columns: no TMA store, beta = 0 from registers; BK 32
    (GemmConfig("f16", "f16", 64, 64, 32, 2, 4, 3, 8, 1, "wgmma"), 34, 24, 40, "N", "T", 34, 0.0, "registers"),
    # an f32 C read and written (beta != 0), two consumers
    (GemmConfig("f16", "f32", 128, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 40, 72, 136, "T", "T", 48, -1.0, "registers")]
for cfg, M, N, K, la, lb, ldc, beta, epi in cases:
    A, B = operand((M, K), la), operand((K, N), lb)
    big = np.asfortranarray(rng.integers(-3, 4, (ldc, N)).astype(np.float16 if cfg.out == "f16" else np.float32))
    big0 = big.copy()
    C, C0 = big[:M], big0[:M]                    # strides (1, ldc)
    assert C.strides == (C.itemsize, ldc * C.itemsize)
    launch = codegen.prepare(A, B, C, beta=beta, config=cfg)
    assert launch.kernel.key.epilogue == epi, launch.kernel.key
    assert launch._launcher.inner.c_strides == (ldc, 1)       # C^T, row-major: the transposed GEMM
    launch()
    launch._launcher.check()
    ref = A.astype(np.float64) @ B.astype(np.float64) + beta * C0
    err = float(np.abs(C.astype(np.float64) - ref).max())
    print(cfg.dtype, M, N, K, la, lb, ldc, beta, epi, err)
    assert err == 0.0, (cfg, M, N, K, err)
    assert np.array_equal(big[M:], big0[M:]), "rows past M written"

fp8_cases = [  # A row-major, B column-major (K-major both); N odd (C^T has M columns); scales: alpha 0.5
    # e4m3, an f16 C^T stored by TMA
    (GemmConfig("e4m3", "f16", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"), 40, 33, 80, 0.0, "e4m3"),
    # e4m3 A x e5m2 B: the kernel runs e5m2 x e4m3 on the transposed GEMM; an f32 C, beta != 0
    (GemmConfig("e4m3", "f32", 64, 64, 128, 2, 4, 2, 8, 1, "wgmma", "e5m2"), 10, 9, 144, -1.0, "e5m2"),
    # the default plan (128x128x128 tiles), chosen for the transposed sizes
    (None, 6, 5, 32, 0.0, "e4m3")]
for cfg, M, N, K, beta, kernel_a in fp8_cases:
    ta, tb = (cfg.dtype, cfg.b_type) if cfg else ("e4m3", "e4m3")
    A, B = fp8_bits(ta, (M, K)), np.asfortranarray(fp8_bits(tb, (K, N)))
    C0 = np.asfortranarray(rng.integers(-3, 4, (M, N)).astype(np.float16 if cfg and cfg.out == "f16" else np.float32))
    C = C0.copy(order="F")
    launch = codegen.prepare(A, B, C, beta=beta, config=cfg, precision=None if cfg else "e4m3",
                             scale_a=np.array([0.25]), scale_b=2.0)
    kc = launch.kernel.config
    assert (kc.path, kc.dtype, kc.b_type) == ("wgmma", kernel_a, ta if kernel_a == tb else tb), kc
    launch()
    launch._launcher.check()
    ref = quantize(0.5 * decode(A, ta) @ decode(B, tb) + beta * C0, kc.out)
    err = float(np.abs(C.astype(np.float64) - ref).max())
    print(ta, tb, M, N, K, beta, err)
    assert err == 0.0, (cfg, M, N, K, err)
# a C that is neither row- nor column-major: still an error
try:
    codegen.gemm(operand((40, 16), "N"), operand((16, 24), "N"), np.zeros((80, 24), np.float16, order="F")[::2],
                 config=cases[0][0])
    raise SystemExit("no error for a C with strides (2, 80)")
except GemmError as e:
    assert "needs a row- or column-major C (C strides (2, 80))" in str(e), e
print("SIM COL C OK")
"""


def test_hopper_kernel_runs_a_column_major_c_as_the_transposed_gemm_exactly(tmp_path):
    """A column-major C (strides (1, ldc)) runs the wgmma kernel on C^T = B^T @ A^T, C^T
    row-major: f16 with each operand K- and MN-major, ldc > M, the TMA-store epilogue and the
    registers one (beta 0 and not); e4m3, e4m3 x e5m2 (the kernel's types swap) and the
    default plan; a C that is neither row- nor column-major is still an error."""
    pytest.importorskip("numba")
    r = _simulate(SIM_COL_C, tmp_path)
    assert "SIM COL C OK" in r.stdout, r.stdout + r.stderr[-3000:]


def _has_ml_dtypes():
    try:
        import ml_dtypes  # noqa: F401
        return True
    except ImportError:
        return False


def test_pipeline_graph_follows_the_plan():
    from codegen import GemmConfig
    from codegen.sm90.plan import make_wgmma_plan
    from codegen.sm90.plan_graph import wgmma_plan_graph

    for cfg in (GemmConfig.default("f16", arch=(9, 0)), GemmConfig("bf16", "f32", 64, 128, 64, 2, 4, 3, 8, 1, "wgmma")):
        plan = make_wgmma_plan(cfg, "K", "K")
        g = wgmma_plan_graph(plan)
        stages = {n for n in g.nodes if n.startswith("stage")}
        consumers = {n for n in g.nodes if n.startswith("consumer")}
        assert len(stages) == cfg.stages and len(consumers) == plan.consumers
        edges = {(s, d) for s, d, _ in g.edges}
        assert all(("producer", s) in edges and all((s, c) in edges for c in consumers) for s in stages)
        # a 16-bit C goes out through staging buffers and TMA stores; an f32 C from registers
        assert any(n.startswith("staging") for n in g.nodes) == (plan.out.bits == 16)
    # the staging edge says where the stores overlap the next tile's MMAs (not in cluster kernels)
    base = GemmConfig.default("f16", arch=(9, 0))
    for cfg, overlapped in ((base, True), (base.with_(cluster_m=2), False)):
        labels = [attrs["label"] for s, d, attrs in wgmma_plan_graph(make_wgmma_plan(cfg, "K", "MN")).edges
                  if d == "staging1"]
        assert len(labels) == 1 and ("next tile's first k-tiles" in labels[0]) == overlapped, labels


@pytest.mark.parametrize("out,bn", [("f16", 256), ("bf16", 128), ("f16", 64)])
def test_c_staging_puts_every_register_pair_of_every_thread_where_the_layout_says(out, bn):
    from codegen import GemmConfig
    from codegen.sm90.plan import make_wgmma_plan
    from mma_atoms.mma_sm90 import clayout_64xn

    plan = make_wgmma_plan(GemmConfig(out, out, 128, bn, 64, 2, 4, 3, 8, 1, "wgmma"), "K", "MN")
    st = plan.store
    assert st.boxes * st.box[0] == bn and st.consumer_bytes == 2 * 64 * 64 * 2
    st.check()                                 # all 128 threads, every pair
    # and the staged (m, n) of all pairs cover the slice once
    clay = clayout_64xn(bn)
    seen = {clay(t, v) for t in range(128) for v in range(bn // 2)}
    assert seen == set(range(64 * bn))


def test_each_epilogue_is_its_own_kernel():
    """The TMA-store kernel carries no loads or stores of C from registers (its three global
    loads: the scales and alpha); the registers kernel no TMA store (each compiles only when
    a launch needs it)."""
    pytest.importorskip("numba")
    from codegen import GemmConfig
    from codegen.sm90 import compile_ptx, emit_source

    cfg = GemmConfig.default("f16", arch=(9, 0))
    tma, reg = compile_ptx(cfg, "K", "MN", "tma"), compile_ptx(cfg, "K", "MN", "registers")
    store = "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group"
    # a box at a time, in two places; the only global loads: the scales and alpha (epilogue_alpha)
    assert tma.count(store) == 4 + 4 and tma.count("ld.global") == 3
    assert store not in reg and reg.count("ld.global") > 2          # beta * C
    assert emit_source(cfg, "K", "MN") == emit_source(cfg, "K", "MN", "tma")
    with pytest.raises(ValueError, match="no TMA store for a f32 C"):
        emit_source(cfg.with_(out_dtype="f32"), "K", "MN", "tma")


SIM_SPLIT = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import GemmConfig
rng = np.random.default_rng(1)
W = dict(bm=64, bn=64, bk=32, stages=2, path="wgmma")
cases = [  # (config, M, N, K, B layout, beta); the simulator runs two CTAs
    # three tiles: the first two (a full wave) whole, the third in 2 parts of 3 and 4
    # k-tiles, one on each CTA; C from registers with beta
    (GemmConfig("f16", "f32", split_k=2, **W), 150, 40, 200, "T", -1.0),
    # one tile in 3 parts, a 16-bit C stored by TMA; B MN-major
    (GemmConfig("f16", "f16", split_k=3, **W), 33, 56, 96, "N", 0.0),
    # two consumers, 4 parts asked of 3 k-tiles: 3 parts of one k-tile each
    (GemmConfig("f16", "f32", split_k=4, **dict(W, bm=128)), 100, 24, 72, "T", 0.5),
    # three tiles: two whole, the third in 2 parts of one k-tile each; TMA C
    (GemmConfig("f16", "f16", split_k=2, **W), 130, 40, 64, "N", 0.0)]
for cfg, M, N, K, lb, beta in cases:
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, N)).astype(np.float16)
    if lb == "T":
        B = np.asfortranarray(B)
    C0 = rng.integers(-3, 4, (M, N)).astype(np.float32 if cfg.out == "f32" else np.float16)
    ref = A.astype(np.float64) @ B.astype(np.float64) + beta * C0
    launch = codegen.prepare(A, B, C0.copy(), beta=beta, config=cfg)
    la = launch._launcher
    assert la.splits == min(cfg.split_k, -(-K // cfg.bk)), la.splits
    tiles = -(-M // cfg.bm) * -(-N // cfg.bn)
    split_tiles = tiles - tiles // la.grid * la.grid          # those of the last, partial wave
    assert la.ws_bytes == 256 + split_tiles * la.splits * la.compiled.plan.consumers * la.compiled.plan.part_bytes
    for rep in range(2 if cfg is cases[0][0] else 1):   # the counters the first launch used are zero again
        launch.C[...] = C0
        launch()
        launch._launcher.check()
        err = float(np.abs(launch.C.astype(np.float64) - ref).max())
        print(cfg.split_k, M, N, K, lb, beta, rep, err)
        assert err == 0.0, (cfg, M, N, K, rep, err)
print("SIM SPLIT OK")
"""


def test_split_k_kernel_runs_in_the_simulator_exactly(tmp_path):
    """Split-K: parts of unequal k-tiles, more parts than CTAs, the tiles of full waves
    whole beside the last wave's split ones, both epilogues, beta, and a second launch on
    the counters the first one left."""
    pytest.importorskip("numba")
    r = _simulate(SIM_SPLIT, tmp_path)
    assert "SIM SPLIT OK" in r.stdout, r.stdout + r.stderr[-3000:]


@pytest.mark.parametrize("b_major", ["K", "MN"])
def test_cluster_ptx_multicasts_half_of_b_and_does_not_spill(b_major, tmp_path):
    """Clusters of two CTAs sharing B: each loads the half of B's boxes that its rank names
    (multicast to both), arrives on both CTAs' empty barriers, and the cluster synchronises
    after the barriers are made and before exit."""
    pytest.importorskip("numba")
    from codegen import GemmConfig
    from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx, wgmma_plan

    cfg = GemmConfig.default("f16", arch=(9, 0)).with_(cluster_m=2)
    key = WgmmaKey(cfg, "K", b_major, "tma")
    plan = wgmma_plan(key)
    halves = [bx for bx in plan.b.boxes if bx[1] < plan.b.rows // 2]
    assert 2 * len(halves) == len(plan.b.boxes)
    ptx = compile_wgmma_ptx(key)
    assert ptx.count(".multicast::cluster") == len(halves)
    assert ptx.count("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [") == 1   # A
    assert ptx.count("barrier.cluster.arrive") == 2 and "mapa.shared::cluster.u32" in ptx
    assert ptx.count("mbarrier.arrive.shared::cluster.b64") == 2      # release at CTA scope (see ptx_sm90)
    assert "mbarrier.arrive.release.cluster" not in ptx
    _ptxas_no_spills(ptx, tmp_path)


@pytest.mark.parametrize("split,cluster", [(1, 1), (3, 1), (1, 2)])
def test_scheduler_units_cover_every_tile_and_k_tile_once(split, cluster, monkeypatch):
    """The tile scheduler's device code, run as Python for every CTA of a grid: the units of
    all CTAs cover each tile of C once, with k-tiles [0, ktiles) split in contiguous parts
    (split-K: only the tiles after the full waves), each unit's corner as the host's raster
    says; in clusters the two CTAs of a pair take vertically adjacent tiles; the overlapped
    epilogue's guarded lookup of a CTA's next unit is empty past the last."""
    from types import SimpleNamespace

    from codegen.cute import TileScheduler, scheduler as S

    sched = TileScheduler(128, 256, 64, 8, split > 1, 2, 128, 0, cluster)
    for M, N, K, grid, L in ((1000, 3000, 700, 8, 1), (4096, 4096, 1024, 132, 1), (129, 257, 64, 6, 1),
                             (2560, 4096, 640, 132, 1), (1000, 600, 700, 8, 3), (129, 257, 64, 6, 5)):
        num_m, num_n, ktiles = -(-M // 128), -(-N // 256), -(-K // 64)
        p = SimpleNamespace(**sched.host_params(M, N, K, grid, min(split, ktiles), L))   # a k-tile a part at least
        tiles = num_m * num_n * L if cluster == 1 else p.tiles
        whole = tiles // grid * grid if split > 1 else tiles
        got = {}
        for bid in range(grid):
            cuda = SimpleNamespace(blockIdx=SimpleNamespace(x=bid), gridDim=SimpleNamespace(x=grid))
            monkeypatch.setattr(S, "cuda", cuda)
            monkeypatch.setattr(S, "int64", int)
            monkeypatch.setattr(S, "cluster_ctarank", lambda: bid % cluster)
            sp = sched.params(p)
            units = list(sched.units(sp))
            for unit in units:
                w = sched.work(sp, unit)
                got.setdefault((w.l, w.m0, w.n0), []).append((w.kt0, w.kt1))
                assert 0 <= w.l < L
                if cluster == 1:
                    assert (w.m0, w.n0) == sched.corner(w.tile - w.l * num_m * num_n, num_m, num_n)
                    assert w.l == w.tile // (num_m * num_n)
                    assert (w.kt0, w.kt1) == (0, ktiles) or w.tile >= whole
                else:
                    assert w.m0 % (2 * 128) == (bid % 2) * 128
            last = units[-1] if units else sched.first()
            assert sched.work_at(sp, last + sched.stride()).kt1 == 0
        inside = {k: v for k, v in got.items() if k[1] < M and k[2] < N}
        assert set(inside) == {(lb, m * 128, n * 256) for lb in range(L) for m in range(num_m) for n in range(num_n)}
        for parts in inside.values():
            parts.sort()
            assert parts[0][0] == 0 and parts[-1][1] == ktiles
            assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(parts, parts[1:])), parts
        assert all(k[1] >= M for k in got if k not in inside)      # a cluster's extra tile: past M only


def test_descriptors_encode_the_start_address_as_the_isa_says(monkeypatch):
    """A CTA of a cluster sees its shared memory at addresses with its rank in bit 24: the
    descriptor's 14-bit start address is (addr & 0x3FFFF) >> 4, never a carry into LBO; each
    k-block moves it by the stage layout's offset of the next 16 elements of K; only a tile's
    first instruction ignores the accumulators."""
    from codegen import GemmConfig
    from codegen.cute import wgmma as W
    from codegen.sm90.plan import make_wgmma_plan

    plan = make_wgmma_plan(GemmConfig.default("f16", arch=(9, 0)), "K", "MN")
    mma = plan.device.mma
    calls = []
    for name in ("acc_fence", "wgmma_fence", "wgmma_commit"):
        monkeypatch.setattr(W, name, lambda *a: a[0] if a else None)
    monkeypatch.setattr(type(mma), "op", property(lambda self: lambda acc, da, db, sd, ta, tb: calls.append(
        (da, db, sd, ta, tb)) or acc))
    a, b = (1 << 24) | 0x1000, (1 << 24) | 0x9000        # rank 1's addresses
    for first in (True, False):
        calls.clear()
        mma.mma(0, a, b, first)
        assert len(calls) == plan.kblocks
        for kb, (da, db, sd, ta, tb) in enumerate(calls):
            assert da == plan.a.desc.bits((a + kb * plan.a.kblock_bytes) & 0x3FFFF)
            assert db == plan.b.desc.bits((b + kb * plan.b.kblock_bytes) & 0x3FFFF)
            assert (sd, ta, tb) == (0 if first and kb == 0 else 1, 0, 1)


def test_cluster_configs_and_their_errors(tmp_path):
    import ctypes

    from codegen import GemmConfig
    from codegen.driver import _LaunchAttribute, _LaunchConfig

    with pytest.raises(ValueError, match="cluster_m must be 1 or 2"):
        GemmConfig(path="wgmma", cluster_m=4)
    with pytest.raises(ValueError, match="cluster_m 2 is a wgmma-path option without split-K"):
        GemmConfig(cluster_m=2)
    with pytest.raises(ValueError, match="without split-K"):
        GemmConfig(path="wgmma", cluster_m=2, split_k=2)
    # the driver's launch structures as cuda.h lays them out
    assert ctypes.sizeof(_LaunchAttribute) == 72
    assert [getattr(_LaunchConfig, f).offset for f in ("hStream", "attrs", "numAttrs")] == [32, 40, 48]
    # in numba's simulator (blocks run one after another) a cluster config is a clear error
    prog = ("import numpy as np, codegen\nfrom codegen import GemmConfig, GemmError\n"
            "A = np.zeros((64, 64), np.float16)\n"
            "try:\n    codegen.gemm(A, A, config=GemmConfig('f16', 'f32', 128, 256, 64, path='wgmma', cluster_m=2))\n"
            "except GemmError as e:\n    print(e)\n")
    r = _simulate(prog, tmp_path, timeout=300)
    assert "cluster_m=2 runs CTAs in clusters, which need a GPU" in r.stdout, r.stdout + r.stderr[-2000:]



def test_overlapped_epilogue_is_where_the_plan_allows():
    """The "tma" kernels overlap a tile's stores with the next tile's MMAs (none with
    split-K, clusters or the registers epilogue); 256-row tiles are no longer planned."""
    from codegen import GemmConfig
    from codegen.sm90.emit import emit_wgmma_source, overlaps_epilogue
    from codegen.sm90.plan import make_wgmma_plan

    base = GemmConfig.default("f16", arch=(9, 0))
    plan = make_wgmma_plan(base, "K", "MN")
    assert overlaps_epilogue(plan, "tma") and not overlaps_epilogue(plan, "registers")
    for cfg in (base.with_(cluster_m=2), GemmConfig.default("f16", 64, 4096, 4096, arch=(9, 0))):
        p = make_wgmma_plan(cfg, "K", "MN")
        assert not overlaps_epilogue(p, "tma"), cfg
        assert "EPILOGUE.store_tile(" in emit_wgmma_source(p, "tma")
    src = emit_wgmma_source(plan)
    assert "EPILOGUE.pack(accs, alpha, packed)" in src and "EPILOGUE.store_tile(" not in src
    assert "alpha = epilogue_alpha(p)" in src                   # p.alpha times the scales it reads
    with pytest.raises(ValueError, match="BM 64 or 128"):
        base.with_(bm=256, bn=128)


def test_split_k_for_splits_a_short_last_wave_and_few_tiles():
    """The default parts of K: more than one only where the tiles fill at most half of the
    multiprocessors, or the last wave after full ones at most a quarter, with at least
    SPLIT_K_MIN_KTILES k-tiles a part; then the split units of that wave fit the
    multiprocessors once."""
    from codegen.config import SPLIT_K_MAX, SPLIT_K_MIN_KTILES, split_k_for

    sms = 132
    for M in range(128, 128 * 40, 128 * 3):
        for N in (256, 2048, 4096, 4352):
            for K in (512, 1024, 2048, 4096, 8192):
                s = split_k_for(M, N, K, 128, 256, 64, sms)
                tiles = (M // 128) * -(-N // 256)
                last = tiles % sms
                short = 0 < (2 if tiles < sms else 4) * last <= sms
                assert 1 <= s <= SPLIT_K_MAX
                if s > 1:
                    assert short and last * s <= sms, (M, N, K, s)
                    assert K // 64 // s >= SPLIT_K_MIN_KTILES, (M, N, K, s)
                elif short and K // 64 >= 2 * SPLIT_K_MIN_KTILES and 2 * last <= sms:
                    raise AssertionError(f"{M}x{N}x{K}: a last wave of {last} tiles not split")
    assert split_k_for(1280, 4096, 4096, 128, 256, 64, sms) == 4       # 160 tiles: a last wave of 28
    assert split_k_for(1536, 4096, 4096, 128, 256, 64, sms) == 1       # a last wave of 60: more than a quarter
    assert split_k_for(8192, 8192, 8192, 128, 256, 64, sms) == 1       # a last wave of 68 tiles
    assert split_k_for(1280, 4096, 1024, 128, 256, 64, sms) == 1       # 16 k-tiles: too few to split


def test_hopper_tile_shortens_a_short_last_wave():
    """One to three full waves of 128x256 tiles and a last wave that fills at most half the
    multiprocessors: 128x128 tiles; more waves: 128x256 tiles, the short last wave split."""
    from codegen import GemmConfig
    from codegen.config import hopper_tile

    def plan(M, N, K):
        c = GemmConfig.default("f16", M, N, K, arch=(9, 0))
        return c.bm, c.bn, c.stages, c.split_k

    assert plan(1536, 4096, 4096) == (128, 128, 6, 1)      # 192 tiles: a last wave of 60
    assert plan(1280, 4096, 4096) == (128, 128, 6, 1)      # 128x128: 320 tiles, a last wave of 56
    assert plan(2176, 2048, 4096) == (128, 128, 6, 4)      # 128x128: 272 tiles, a last wave of 8, split
    assert plan(1792, 4096, 4096) == (128, 256, 4, 1)      # 224 tiles: a last wave of 92
    assert plan(8192, 8192, 8192) == (128, 256, 4, 1)      # 2048 tiles: a last wave of 68
    assert plan(5120, 5120, 5120) == (128, 256, 4, 4)      # 800 tiles: 6 full waves and 8 tiles
    for M in range(128, 128 * 70, 128 * 5):
        for N in (1024, 2048, 4096, 8192):
            big = -(-M // 128) * -(-N // 256)
            tile = hopper_tile(M, N)
            if 132 < big < 4 * 132 and 2 * (big % 132) <= 132:
                assert tile == (128, 128, 6), (M, N)
            elif 2 * big > 132:
                assert tile == (128, 256, 4), (M, N)


def test_at_most_64_rows_take_64_row_tiles():
    """A C of at most 64 rows (decode) gets 64x128 tiles, one consumer warpgroup, whatever N,
    split along K only where the tiles fill at most half the multiprocessors."""
    from codegen import GemmConfig

    for M in (1, 16, 64):
        for N, K in ((14336, 4096), (4096, 14336), (50257, 768), (1531, 4096)):
            for dtype in ("f16", "e4m3"):
                c = GemmConfig.default(dtype, M, N, K, arch=(9, 0))
                assert (c.bm, c.bn, c.stages) == (64, 128, 6), (dtype, M, N, K)
    assert GemmConfig.default("f16", 1, 14336, 4096, arch=(9, 0)).split_k == 1       # 112 tiles
    assert GemmConfig.default("f16", 1, 4096, 4096, arch=(9, 0)).split_k == 4        # 32 tiles
    assert GemmConfig.default("f16", 65, 14336, 4096, arch=(9, 0)).bm == 128


def test_a_nearly_empty_last_row_of_tiles_takes_64_row_tiles():
    """Under 512 rows, a last 128-row tile holding at most 32 rows: 64x128 tiles, split along K
    as split_k_for says (257 rows: 4 parts where the tiles leave a short last wave)."""
    from codegen import GemmConfig

    plan = lambda M, N, K: (lambda c: (c.bm, c.bn, c.split_k))(GemmConfig.default("f16", M, N, K, arch=(9, 0)))  # noqa: E731
    assert plan(257, 4096, 4096) == (64, 128, 4)
    assert plan(257, 14336, 4096) == (64, 128, 4)
    assert plan(257, 4096, 14336) == (64, 128, 4)
    for M in (129, 160, 288, 385, 416):
        assert plan(M, 4096, 4096)[0] == 64, M
    for M in (161, 300, 1000, 1280, 513, 4097):                         # enough 128-row tiles for the SMs
        assert plan(M, 8192, 4096)[0] == 128, M


def test_paired_c_needs_even_strides_and_an_aligned_address():
    from codegen.batch import Batch
    from codegen.sm90.launch import paired_c

    assert paired_c(4096, (1532, 1), 74, None, 16)
    assert not paired_c(4096, (1531, 1), 74, None, 16)            # an odd row stride
    assert paired_c(4096, (1531, 1), 1, None, 16)                  # one row: no stride to step
    assert not paired_c(4098, (1532, 1), 74, None, 32)             # f32 pairs: 8-byte aligned
    assert not paired_c(4096, (8, 1), 4, Batch(3, 0, 0, 33), 16)   # an odd batch stride
    assert paired_c(4096, (8, 1), 4, Batch(1, 0, 0, 33), 16)


def test_the_elements_epilogue_stores_one_element_at_a_time():
    import re

    from codegen import GemmConfig
    from codegen.sm90.emit import emit_wgmma_source
    from codegen.sm90.plan import make_wgmma_plan

    cfg = GemmConfig.default("e4m3", 4096, 1531, 4096, "bf16", arch=(9, 0))
    plan = make_wgmma_plan(cfg)
    src = emit_wgmma_source(plan, "elements")
    assert re.search(r"EPILOGUE = RegisterEpilogue\((.|\n)*?\bpaired=False\)\n", src)
    assert "paired=True" in emit_wgmma_source(plan, "registers")
    pytest.importorskip("numba")
    from codegen.sm90.kernel import WgmmaKey, compile_wgmma_ptx

    ptx = compile_wgmma_ptx(WgmmaKey(cfg, "K", "K", "elements"))
    assert "st.global.b16" in ptx and ".local" not in ptx          # (st.global.b32: the error word)


SIM_ODD_C = """
import sys
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import GemmConfig
from mma_atoms.numerics import decode, quantize
rng = np.random.default_rng(3)

def fp8_bits(t, shape):
    tab = decode(np.arange(256), t)
    ok = np.flatnonzero(np.isfinite(tab) & (np.abs(tab) <= 16) & (tab * 4 == np.round(tab * 4)))
    return rng.choice(ok, shape).astype(np.uint8)

# e4m3, C allocated by the library: N = 13, an odd row stride (refused before: the pair stores)
A, B = fp8_bits("e4m3", (37, 32)), np.asfortranarray(fp8_bits("e4m3", (32, 13)))
C = codegen.gemm(A, B, precision="e4m3", out_dtype="f16",
                 config=GemmConfig("e4m3", "f16", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma"))
err = float(np.abs(C.astype(np.float64) - quantize(decode(A, "e4m3") @ decode(B, "e4m3"), "f16")).max())
print("e4m3 37x13x32 new C", C.strides, err)
assert C.shape == (37, 13) and err == 0.0
# f16, B K-major, C of 71 columns (row stride 71), beta: the register epilogue element by element
cfg = GemmConfig("f16", "f32", 64, 64, 64, 2, 4, 2, 8, 1, "wgmma")
A = rng.integers(-3, 4, (40, 64)).astype(np.float16)
B = np.asfortranarray(rng.integers(-3, 4, (64, 71)).astype(np.float16))
C0 = rng.integers(-3, 4, (40, 71)).astype(np.float32)
C = C0.copy()
launch = codegen.prepare(A, B, C, beta=-1.0, config=cfg)
assert launch.kernel.key.epilogue == "elements", launch.kernel.key
launch()
err = float(np.abs(C - (A.astype(np.float64) @ B.astype(np.float64) - C0)).max())
print("f16 40x71x64, row stride 71, beta -1", err)
assert err == 0.0
print("SIM ODD C OK")
"""


def test_a_c_of_odd_row_stride_runs_in_the_simulator_exactly(tmp_path):
    """The "elements" epilogue: fp8 with a C of 13 columns allocated by the library, and an
    f16 GEMM into a C of 71 columns with beta. (numba's simulator copies C into a packed array
    first, so a misaligned C address is left to tests/gpu/sweep_wgmma.py on a GPU.)"""
    pytest.importorskip("numba")
    r = _simulate(SIM_ODD_C, tmp_path)
    assert "SIM ODD C OK" in r.stdout, r.stdout + r.stderr[-3000:]
