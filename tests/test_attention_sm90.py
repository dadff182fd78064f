"""The Hopper attention kernel (codegen.attention_sm90): its layouts, its PTX, and a run in
numba's simulator against float64 numpy."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from test_attention import REFERENCE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("dtype,d,bn", [("f16", 64, 128), ("bf16", 64, 128), ("f16", 128, 128), ("bf16", 128, 176),
                                        ("f16", 128, 144)])
def test_the_layouts_place_every_accumulator_where_the_wgmma_puts_it(dtype, d, bn):
    """row_t(t) + row_v(v) and col_t(t) + col_s(v) (col_o(v)) are the row and column of
    accumulator v of thread t in CLayout_64xN, for S (N = bn) and O (N = d); a thread's two
    row slots are its rows; P's A fragments are S's accumulators in order (ALayout_64x16)."""
    from codegen.attention_sm90 import derive_hopper_ownership
    from mma_atoms.mma_sm90 import ALAYOUT_64x16, clayout_64xn

    BN = bn
    own = derive_hopper_ownership(dtype, d, bn)
    for n, col_v in ((BN, own["col_s"]), (d, own["col_o"])):
        clay = clayout_64xn(n)                                           # (T128,V) -> m + 64 n
        for t in range(128):
            for v in range(n // 2):
                x = clay(t, v)
                assert (x % 64, x // 64) == (own["row_t"](t) + own["row_v"](v), own["col_t"](t) + col_v(v))
                assert own["row_v"](v) == own["slot_row"][own["slot_s"](v)]
    for t in range(128):                                                 # P = S's registers, k-block by k-block
        for kb in range(BN // 16):
            for v in range(8):
                assert clayout_64xn(BN)(t, 8 * kb + v) == ALAYOUT_64x16(t, v) + 64 * 16 * kb


@pytest.mark.parametrize("dtype,d,causal", [("f16", 64, False), ("bf16", 128, True)])
def test_the_kernel_compiles_offline_to_registers(dtype, d, causal, tmp_path):
    """The kernel's PTX (for sm_90a, on a machine without a GPU), of its tile in TILES (three
    consumer warpgroups at head dim 64, 176 keys a tile at 128): S's and O's wgmma (SS and RS
    forms) in the first tile and in the loop, TMA loads of rank 4, no local memory; ptxas
    fits it without spills and without serializing a wgmma."""
    pytest.importorskip("numba")
    from codegen.attention_sm90 import REGS, TILES, hopper_attention_kernel

    bm, BN = TILES[d, causal]
    ptx = hopper_attention_kernel(dtype, d, causal).ptx((9, 0, "a"))
    assert f"setmaxnreg.inc.sync.aligned.u32 {REGS[bm // 64][1]}" in ptx
    s_mma = f"wgmma.mma_async.sync.aligned.m64n{BN}k16.f32.{dtype}.{dtype}"
    o_mma = f"wgmma.mma_async.sync.aligned.m64n{d}k16.f32.{dtype}.{dtype}"
    if d == BN:                                                                 # one form's text for both
        assert ptx.count(s_mma) == 2 * d // 16 + 2 * BN // 16
    else:
        assert ptx.count(s_mma) == 2 * d // 16 and ptx.count(o_mma) == 2 * BN // 16
    assert ptx.count("{%r") >= 2 * BN // 16                                      # RS: A's four registers
    assert ptx.count("cp.async.bulk.tensor.4d") == 3 * d // 64                  # Q, K, V: a box a 64 of d
    for instr in ("setmaxnreg.inc", "shfl.sync.bfly.b32", "ex2.approx", "mbarrier.try_wait.parity", "bar.arrive"):
        assert instr in ptx, instr
    assert ".local" not in ptx
    if shutil.which("ptxas"):
        path = tmp_path / "attention.ptx"
        path.write_text(ptx)
        out = subprocess.run(["ptxas", "-v", "-arch=sm_90a", str(path), "-o", str(tmp_path / "k.cubin")],
                             capture_output=True, text=True, check=True).stderr
        stack, stores, loads = map(int, re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                                                  r"(\d+) bytes spill loads", out).groups())
        assert stack == stores == loads == 0, out
        assert "C751" not in out, out              # no serialized wgmma, no wait ptxas had to insert


SIM = r"""
import sys, math
sys.setswitchinterval(1e-4)
import numpy as np, codegen
""" + REFERENCE + r"""
rng = np.random.default_rng(1)
import ml_dtypes
cases = [
    # three query heads on one kv head (three tiles on the simulator's two CTAs: one walks two,
    # the pipelines running on from one tile to the next), q strided as (batch, seq, heads, d)
    # memory, keys in three tiles (the last partial: the rescaled sums, the masked residue),
    # head dim 64
    # (the simulator's split-KV forced: the second and third tiles in two parts each, keys
    # [0, 128) and [128, 300), merged by the combine kernel; on a GPU a last wave a third
    # full splits)
    (np.float16, 1, 3, 1, 40, 300, 64, False, True),
    # three query heads on one kv head of two query tiles each (the second partial), causal
    # (the diagonal tiles masked; the tiles read from the schedule's table: three mirror pairs
    # on the simulator's two CTAs, all balanced tile by tile, three tiles a CTA), bf16, head
    # dim 128 (two 64-wide boxes a tile)
    (ml_dtypes.bfloat16, 1, 3, 1, 130, 140, 128, True, False),
][int(sys.argv[1])]
dt, B, H, Hk, Sq, Sk, D, causal, strided = cases
from codegen import attention_sm90 as a9
a9.SHORT_KEYS = 0                                  # TILES' tile (192x128, 128x176), not the short one
if not causal:
    a9.SplitKV.plan = classmethod(lambda cls, tiles, sms, key_tiles: cls(tiles - 2, 2, tiles + 2))
if strided:
    q = rng.standard_normal((B, Sq, H, D)).astype(dt).transpose(0, 2, 1, 3)
else:
    q = rng.standard_normal((B, H, Sq, D)).astype(dt)
k = rng.standard_normal((B, Hk, Sk, D)).astype(dt)
v = rng.standard_normal((B, Hk, Sk, D)).astype(dt)
o, lse = codegen.attention(q, k, v, causal=causal, return_lse=True, kernel="sm90")
ref, ref_lse = reference(q, k, v, causal)
err, err_lse = float(np.abs(o.astype(np.float64) - ref).max()), float(np.abs(lse - ref_lse).max())
print(err, err_lse)
assert o.dtype == q.dtype and o.shape == q.shape and lse.shape == (B, H, Sq)
assert err < (2e-3 if dt == np.float16 else 1.6e-2) and err_lse < 1e-5, (err, err_lse)
print("ATTENTION OK")
"""


@pytest.mark.parametrize("case", [0, 1])
def test_the_kernel_runs_in_the_simulator(tmp_path, case):
    pytest.importorskip("numba")
    pytest.importorskip("ml_dtypes")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=ROOT, LAYOUTALG_CACHE=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", SIM, str(case)], capture_output=True, text=True, env=env, timeout=900)
    assert "ATTENTION OK" in r.stdout, r.stdout + r.stderr[-3000:]


def test_split_kv_fills_a_short_last_wave():
    """SplitKV.plan at every tile count to 1000 on four GPU sizes: the units are the whole
    tiles and the parts of the rest; a split comes only where the last wave is at most a
    third full, cuts each of its tiles into parts of at least PART_MIN key tiles, at most
    SPLITS_MAX, that fit one wave, and takes as many as these allow; where no three parts
    are allowed, every tile is whole."""
    from codegen.attention_sm90 import PART_MIN, SPLITS_MAX, SplitKV

    def allowed(n, rest, sms, key_tiles):                # n parts a tile of the last wave
        return rest * n <= sms and key_tiles // n >= PART_MIN and n <= SPLITS_MAX

    split = 0
    for sms in (2, 78, 114, 132):
        for key_tiles in (1, 5, 6, 47, 200):
            for tiles in range(1, 1000):
                s = SplitKV.plan(tiles, sms, key_tiles)
                rest = tiles % sms
                if s.splits == 1:
                    assert (s.whole, s.units) == (tiles, tiles), (tiles, sms, key_tiles, s)
                    assert not rest or not allowed(3, rest, sms, key_tiles), (tiles, sms, key_tiles)
                    assert s.workspace_bytes(128, 64) == 0
                    continue
                split += 1
                assert s.whole == tiles - rest and s.rest == rest and s.units == s.whole + rest * s.splits
                assert s.splits >= 3 and 3 * rest <= sms and allowed(s.splits, rest, sms, key_tiles)
                assert not allowed(s.splits + 1, rest, sms, key_tiles), (tiles, sms, key_tiles, s)
                assert s.grid(sms) == min(s.units, sms)
                assert s.workspace_bytes(128, 64) == rest * s.splits * 128 * 66 * 4
    assert split > 1000


def _loads(s, n_m, keys):
    """Each CTA's cost under CausalSchedule's model, and its tiles."""
    from codegen.attention_schedule import UNIT_COST

    tiles = [s.tiles(c) for c in range(s.grid)]
    return [sum(keys[t % n_m] + UNIT_COST for t in ts) for ts in tiles], tiles


def test_causal_schedule_takes_every_tile_once_and_balances_the_ctas():
    """CausalSchedule.plan at every head count to 9, query tiles to 12 and grids to 9 (and
    shapes of the H200's 132 CTAs), paired and not, keys growing one or 128/176 a tile: every
    tile once; the grid is the SMs or the tiles, whichever fewer, no CTA idle; with
    ``paired`` the whole rounds are mirror pairs of one head (tiles n_m-1-i, then i); the
    most loaded CTA costs at most the least loaded one plus a unit (the first and last
    tiles of a head), and plus one tile in the GPU's shapes, where the tail is long (the
    most loaded CTA's last tile went to the least loaded one), and within 1 % of an even
    share in those where a CTA takes eight tiles or more; the docstring's example."""
    from codegen.attention_schedule import TAIL_ROUNDS, UNIT_COST, CausalSchedule, causal_keys

    s = CausalSchedule.plan(heads=1, n_m=4, keys=(1, 2, 3, 4), sms=2, paired=True)
    assert s.grid == 2 and [s.tiles(c) for c in range(2)] == [[3, 0], [2, 1]]
    cases = [(h, n, g) for h in range(1, 10) for n in range(1, 13) for g in range(1, 10)]
    big = [(64, 64, 132), (64, 47, 132), (66, 64, 132), (256, 16, 132), (5, 43, 132), (3, 120, 132)]
    cases += big + [(1, 1, 132)]
    for heads, n_m, g in cases:
        for keys in ([m + 1 for m in range(n_m)], causal_keys(n_m, 128, 176, 47)):
            for paired in (True, False):
                s = CausalSchedule.plan(heads, n_m, keys, g, paired)
                assert s.table.dtype.name == "int32" and s.grid == min(g, heads * n_m)
                assert len(s.table) == s.grid + 1 + heads * n_m + 1 and s.table[-1] == 0   # (the padding word)
                loads, tiles = _loads(s, n_m, keys)
                assert sorted(t for ts in tiles for t in ts) == list(range(heads * n_m)), (heads, n_m, g, paired)
                assert all(tiles), (heads, n_m, g, paired)
                biggest = max(keys) + UNIT_COST                 # a tile's cost; a unit's:
                unit = biggest + (keys[0] + UNIT_COST if paired and n_m > 1 else 0)
                bound = biggest if (heads, n_m, g) in big else unit
                assert max(loads) - min(loads) <= bound, (heads, n_m, g, paired, loads)
                if (heads, n_m, g) in big and heads * n_m >= 8 * g:   # many tiles a CTA: within 1 % of even
                    assert max(loads) <= 1.01 * sum(loads) / len(loads), (heads, n_m, g, paired, loads)
                units = heads * ((n_m + 1) // 2) if paired else heads * n_m
                rounds = units // s.grid if units % s.grid == 0 else max(units // s.grid - TAIL_ROUNDS, 0)
                if paired:
                    for ts in tiles:
                        i = 0
                        for _ in range(rounds):                  # a pair, or a middle tile alone
                            a = ts[i]
                            if 2 * (a % n_m) == n_m - 1:
                                i += 1
                                continue
                            b = ts[i + 1]
                            assert a // n_m == b // n_m and a % n_m + b % n_m == n_m - 1 and a > b, (heads, n_m, g)
                            i += 2


def test_short_sequences_take_their_own_tile():
    """tile_for: SHORT_TILES up to SHORT_KEYS keys where it names one, TILES otherwise and
    above; every tile it names is one make_hopper_attention accepts."""
    from codegen.attention_sm90 import SHORT_KEYS, SHORT_TILES, TILES, make_hopper_attention, tile_for

    for (d, causal), tile in TILES.items():
        for seq_k in (1, SHORT_KEYS // 2, SHORT_KEYS, SHORT_KEYS + 1, 8192):
            want = SHORT_TILES.get((d, causal), tile) if seq_k <= SHORT_KEYS else tile
            assert tile_for(d, causal, seq_k) == want, (d, causal, seq_k)
            make_hopper_attention("f16", d, causal, *tile_for(d, causal, seq_k))


def test_a_kernel_choice_is_checked():
    import numpy as np

    from codegen import GemmError, attention

    q = np.zeros((1, 1, 8, 64), np.float16)
    with pytest.raises(GemmError, match="kernel must be None, 'sm80' or 'sm90'"):
        attention(q, q, q, kernel="hopper")


@pytest.mark.parametrize("atoms,bm,d,bn", [(("SM90_64x128x16_F32F16F16_SS", "SM90_64x64x16_F32F16F16_RS"), 64, 64, 128),
                                            (("SM90_64x176x16_F32BF16BF16_SS", "SM90_64x128x16_F32BF16BF16_RS"),
                                             64, 128, 176),
                                            ("SM80_16x8x16_F32F16F16F32_TN", 128, 64, 128)])
def test_fragment_coordinates_are_the_partitions(atoms, bm, d, bn):
    """derive_ownership's coordinates of every thread's elements (the whole-tile TV layouts
    evaluated at once, flash_attention._tv_coords, and a row block of them, _block) are that
    thread's partitions of the identity tensors, and their [_, m, _] slices: the Hopper
    layouts (two head dims, two key tiles) and the mma.sync ones (two row blocks a warp)."""
    from layoutalg import Layout, _, make_identity_tensor, make_tiled_mma, size

    import codegen.flash_attention as fa

    if isinstance(atoms, tuple):
        mma_s, mma_o = (make_tiled_mma(a) for a in atoms)
    else:
        mma_s, mma_o = (make_tiled_mma(atoms, (4, 1, 1), (bm, n, 16)) for n in (bn, d))
    at_s, at_p, at_o = mma_s.tv_C(Layout((bm, bn))), mma_o.tv_A(Layout((bm, bn))), mma_o.tv_C(Layout((bm, d)))
    (s_r, s_c), (p_r, p_c), (o_r, o_c) = (fa._tv_coords(x, bm) for x in (at_s, at_p, at_o))
    blocks = size(at_s[1][1][0])
    assert blocks == (1 if isinstance(atoms, tuple) else 2)
    listed = lambda f: [tuple(f[i]) for i in range(size(f.layout))]     # noqa: E731
    for t in range(mma_s.size):
        s = mma_s.get_slice(t).partition_C(make_identity_tensor((bm, bn)))
        p = mma_o.get_slice(t).partition_A(make_identity_tensor((bm, bn)))
        o = mma_o.get_slice(t).partition_C(make_identity_tensor((bm, d)))
        for (r, c), frag in (((s_r, s_c), s), ((p_r, p_c), p), ((o_r, o_c), o)):
            assert list(zip(r[t].tolist(), c[t].tolist())) == listed(frag)
        for m in range(blocks):
            assert list(zip(fa._block(s_r, at_s, m)[t].tolist(), fa._block(s_c, at_s, m)[t].tolist())) == \
                listed(s[_, m, _])
            assert list(zip(fa._block(p_r, at_p, m)[t].tolist(), fa._block(p_c, at_p, m)[t].tolist())) == \
                listed(p[_, m, _])


@pytest.mark.parametrize("bm,bn,d,match", [(256, 128, 64, "bm 256 queries"), (128, 100, 64, "bn 100 keys"),
                                           (128, 272, 64, "bn 272 keys"),
                                           (192, 256, 128, "312400 bytes of shared memory")])
def test_a_tile_the_kernel_cannot_take_is_refused_by_name(bm, bn, d, match):
    from codegen.attention_sm90 import make_hopper_attention

    with pytest.raises(ValueError, match=match):
        make_hopper_attention("f16", d, False, bm, bn)
