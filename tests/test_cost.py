"""What layouts cost: bank conflicts, coalescing, TMA and wgmma legality (layoutalg.cost).

* The addresses the analysis reads are those of ``partition_S``/``partition_D`` of every
  thread, for random tiled copies of every atom kind over random (padded, swizzled) layouts.
* The wavefronts, ideals and collisions equal a brute force of the written rules (plain
  loops over warps, instructions, phases and banks), for random address patterns and for
  random copies; the sectors and requests likewise.
* The TMA and wgmma checks agree with a brute-force search over the hardware's canonical
  layouts, accept every layout the project's plans use, and name the rule that fails.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutalg import (
    CopyAtom, Layout, LayoutError, Swizzle, analyze_global, analyze_shared, check_tma, check_wgmma, composition,
    make_tensor, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_mma, size, tile_to_shape,
)
from layoutalg.cost.access import vectorize_calls
from layoutalg.cost.banks import phase_groups, shared_costs
from layoutalg.cost.sectors import global_costs
from layoutalg.tensor import PointerEngine

SETTINGS = dict(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- brute force of the written rules ------------------------------------------------------

def brute_phases(addr, w, g, width, kind, gaddr=None, load=True):
    """The lanes of each phase of instruction ``g`` of warp ``w``, by the module's rules,
    written as plain loops."""
    lanes = [lane for lane in range(32) if addr[w * 32 + lane, g] >= 0]
    if kind in ("ldsm", "stsm"):
        return [[ln for ln in lanes if ln // 8 == m] for m in range(4)]
    per = {1: 32, 2: 32, 4: 32, 8: 16, 16: 8}[width]
    if kind == "cp_async" and gaddr is not None:
        lines = {}
        for ln in lanes:                             # a store phase's lanes, by their source's line
            lines.setdefault((ln // per, int(gaddr[w * 32 + ln, g]) // 128), []).append(ln)
        return list(lines.values())
    block = {8: 32, 16: 16}.get(width, per) if load else per    # loads: up to 256 bytes of lanes
    phases = []
    for b0 in range(0, 32, block):
        mine = [ln for ln in lanes if b0 <= ln < b0 + block]
        subs = [[ln for ln in mine if ln // per == p] for p in range(b0 // per, (b0 + block) // per)]
        if mine and all(len({int(addr[w * 32 + ln, g]) for ln in sub}) <= 1 for sub in subs):
            phases.append(mine)                      # each phase one address: one phase
            continue
        phases += subs
    return phases


def brute_shared(addr, widths, kind, gaddr=None, load=True):
    """(wavefronts, ideal, ways) per (warp, instruction), with plain loops."""
    lanes, calls = addr.shape
    widths = [widths] * calls if isinstance(widths, int) else list(widths)
    out = {}
    for w in range(lanes // 32):
        for g in range(calls):
            width = widths[g]
            wf, ways, words_all = 0, 0, set()
            for phase in brute_phases(addr, w, g, width, kind, gaddr, load):
                banks, lines = {}, set()
                for lane in phase:
                    a = int(addr[w * 32 + lane, g])
                    for byte in range(a, a + width):
                        word = byte // 4
                        banks.setdefault(word % 32, set()).add(word)
                        words_all.add(word)
                        lines.add(byte // 128)
                most = max((len(s) for s in banks.values()), default=0)
                if kind == "cp_async" and gaddr is not None:       # a thread a wavefront, or a shared line
                    wf += len(phase) if most > 1 else len(lines)
                else:
                    wf += most
                ways = max(ways, most)
            out[w, g] = (wf, -(-len(words_all) // 32), ways)
    return out


def brute_global(addr, width):
    lanes, calls = addr.shape
    out = {}
    for w in range(lanes // 32):
        for g in range(calls):
            bytes_ = set()
            for lane in range(32):
                a = int(addr[w * 32 + lane, g])
                if a >= 0:
                    bytes_.update(range(a, a + width))
            out[w, g] = (1 if bytes_ else 0, len({b // 32 for b in bytes_}), -(-len(bytes_) // 32))
    return out


@st.composite
def address_patterns(draw):
    kind = draw(st.sampled_from(["universal", "universal", "ldsm", "cp_async"]))
    width = 16 if kind == "ldsm" else draw(st.sampled_from([4, 8, 16] if kind == "cp_async" else [1, 2, 4, 8, 16]))
    warps, calls = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    span = draw(st.sampled_from([64, 256, 2048]))
    n = warps * 32 * calls
    slots = draw(st.lists(st.integers(-1, span // width - 1), min_size=n, max_size=n))
    addr = np.array(slots, dtype=np.int64).reshape(warps * 32, calls)
    addr = np.where(addr >= 0, addr * width, -1)
    if kind == "universal" and draw(st.booleans()):          # some groups of lanes give one address
        block = draw(st.sampled_from([4, 8, 16, 32]))
        for w in range(warps):
            for g in range(calls):
                for b0 in range(0, 32, block):
                    if draw(st.booleans()):
                        rows = slice(w * 32 + b0, w * 32 + b0 + block)
                        ok = addr[rows, g] >= 0
                        addr[rows, g] = np.where(ok, addr[rows, g][ok][0] if ok.any() else -1, -1)
    if kind == "ldsm":
        rows = draw(st.sampled_from([8, 16, 32]))
        addr[(np.arange(warps * 32) % 32) >= rows] = -1
    gaddr = None
    if kind == "cp_async":
        lines = draw(st.lists(st.integers(0, 7), min_size=n, max_size=n))
        gaddr = np.array(lines, dtype=np.int64).reshape(addr.shape) * 128 + 16 * (np.arange(n).reshape(addr.shape) % 8)
    load = kind != "cp_async" and draw(st.booleans())
    return kind, width, addr, gaddr, load


@settings(max_examples=300, deadline=None)
@given(address_patterns())
def test_wavefronts_equal_a_brute_force_of_the_rules(pattern):
    kind, width, addr, gaddr, load = pattern
    widths = [width] * addr.shape[1]
    wf, ideal, ways = shared_costs(addr, widths, phase_groups(kind, addr, widths, gaddr, load), gaddr is not None)
    want = brute_shared(addr, width, kind, gaddr, load)
    for (w, g), (bw, bi, bways) in want.items():
        assert (wf[w, g], ideal[w, g], ways[w, g]) == (bw, bi, bways), (w, g)


@settings(max_examples=300, deadline=None)
@given(address_patterns())
def test_sectors_equal_a_brute_force(pattern):
    _, width, addr, _, _ = pattern
    req, sec, ideal = global_costs(addr, width)
    for (w, g), (br, bs, bi) in brute_global(addr, width).items():
        assert (req[w, g], sec[w, g], ideal[w, g]) == (br, bs, bi), (w, g)


# ---- random tiled copies over random layouts -------------------------------------------------

MMAS = ("SM80_16x8x16_F32F16F16F32_TN",)


def _maybe_swizzle(draw, lay, vec_elems):
    if not draw(st.booleans()):
        return lay
    lo = max(0, vec_elems.bit_length() - 1)
    bits = draw(st.integers(1, 3))
    base = draw(st.integers(lo, lo + 1))
    shift = draw(st.integers(bits, 5))
    return composition(Swizzle(bits, base, shift), lay)


@st.composite
def universal_copies(draw, kinds=("universal", "cp_async")):
    """A universal or cp.async tiled copy, a shared layout it tiles, and the side it is on."""
    kind = draw(st.sampled_from(kinds))
    dtype = draw(st.sampled_from(["u8", "f16", "f32"]))
    ebits = {"u8": 8, "f16": 16, "f32": 32}[dtype]
    if kind == "cp_async":
        nbytes = draw(st.sampled_from([b for b in (4, 8, 16) if b * 8 >= ebits]))
        name = "SM80_CP_ASYNC_CACHEGLOBAL_128" if nbytes == 16 and draw(st.booleans()) else \
            f"SM80_CP_ASYNC_CACHEALWAYS_{nbytes * 8}"
        vbits = nbytes * 8
    else:
        vbits = draw(st.sampled_from([b for b in (8, 16, 32, 64, 128) if b >= ebits]))
        name = f"UniversalCopy_{vbits}"
    vec = vbits // ebits
    nthr = draw(st.sampled_from([16, 32, 64]))
    tm = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32) if nthr % d == 0]))
    tn = nthr // tm
    row_major = draw(st.booleans())                          # N contiguous in shared memory
    thr = Layout((tm, tn), (tn, 1)) if draw(st.booleans()) else Layout((tm, tn), (1, tm))
    k = draw(st.sampled_from([1, 2]))
    val = Layout((1, vec * k)) if row_major else Layout((vec * k, 1))
    cp = make_tiled_copy(CopyAtom(name, dtype), thr, val)
    tile_m, tile_n = cp.tiler_mn
    M, N = tile_m * draw(st.integers(1, 2)), tile_n * draw(st.integers(1, 2))
    pad = draw(st.sampled_from([0, 0, vec, 2 * vec, 4 * vec]))
    lay = Layout((M, N), (N + pad, 1)) if row_major else Layout((M, N), (1, M + pad))
    lay = _maybe_swizzle(draw, lay, vec)
    side = "D" if kind == "cp_async" else draw(st.sampled_from(["S", "D"]))
    return cp, lay, side


@st.composite
def matrix_copies(draw):
    """An ldmatrix or stmatrix copy of an MMA operand and a shared layout of the operand."""
    stsm = draw(st.booleans())
    trans = draw(st.booleans())
    num = draw(st.sampled_from([1, 2, 4]))
    prefix = "SM90" if stsm else "SM75"
    what = "STSM" if stsm else "LDSM"
    name = f"{prefix}_U16x{2 * num}_{what}_T" if trans else f"{prefix}_U32x{num}_{what}_N"
    operand = "A" if num == 4 else draw(st.sampled_from(["A", "B"]))
    warps = draw(st.sampled_from([(1, 1, 1), (2, 1, 1), (1, 2, 1), (2, 2, 1)]))
    mma = make_tiled_mma(MMAS[0], warps)
    maker = make_tiled_copy_A if operand == "A" else make_tiled_copy_B
    cp = maker(CopyAtom(name, "f16"), mma)
    rows, cols = cp.tiler_mn
    M, K = rows * draw(st.integers(1, 2)), cols * draw(st.integers(1, 4))
    pad = draw(st.sampled_from([0, 0, 8, 16]))
    # .N reads rows of K (K contiguous); .T rows of MN (MN contiguous)
    lay = Layout((M, K), (1, M + pad)) if trans else Layout((M, K), (K + pad, 1))
    lay = _maybe_swizzle(draw, lay, 8)
    return cp, lay, "D" if stsm else "S"


def _partition_addresses(cp, lay, side):
    """(warps*32, instructions) byte addresses from each thread's partition_S/partition_D."""
    atom = cp.atom
    per = size(atom.src_layout[1]) if side == "S" else size(atom.dst_layout[1])
    eb = atom.value_bits // 8
    t = make_tensor(PointerEngine("smem"), lay)
    rows = 8 * atom.op.num_matrices if atom.op.kind in ("ldsm", "stsm") else 32
    out = []
    for tid in range(cp.size):
        thr = cp.get_slice(tid)
        part = thr.partition_S(t) if side == "S" else thr.partition_D(t)
        offs = [part.engine.offset + part.layout(i) for i in range(size(part.layout))]
        calls = [offs[i] * eb if tid % 32 < rows else -1 for i in range(0, len(offs), per)]
        out.append(calls)
    while len(out) % 32:
        out.append([-1] * len(out[0]))
    return np.array(out, dtype=np.int64)


@settings(**SETTINGS)
@given(st.one_of(universal_copies(), matrix_copies()))
def test_addresses_are_those_of_every_threads_partition(case):
    cp, lay, side = case
    try:
        want = _partition_addresses(cp, lay, side)
    except LayoutError:
        with pytest.raises(LayoutError):
            analyze_shared(cp, lay, side)
        return
    a = analyze_shared(cp, lay, side, vectorize=False)
    assert np.array_equal(a.access.addr, want)
    assert a.access.widths.tolist() == [a.width] * want.shape[1]


def _gmem_for(cp, lay, draw_ld):
    """A global layout of ``lay``'s shape, rows ``draw_ld`` elements apart, in ``lay``'s major order."""
    inner = lay.layout if hasattr(lay, "layout") and not isinstance(lay, Layout) else lay
    (M, N), stride = inner.shape, inner.stride
    return Layout((M, N), (draw_ld, 1)) if stride[1] == 1 else Layout((M, N), (1, draw_ld))


@settings(**SETTINGS)
@given(st.one_of(universal_copies(), matrix_copies()), st.booleans(), st.sampled_from([64, 72, 2048]))
def test_analysis_of_a_copy_equals_the_brute_force(case, vectorize, ld):
    cp, lay, side = case
    gmem = _gmem_for(cp, lay, max(ld, *lay.shape)) if cp.atom.op.kind == "cp_async" else None
    try:
        a = analyze_shared(cp, lay, side, vectorize=vectorize, gmem=gmem)
    except LayoutError:
        return
    addr, widths = _partition_addresses(cp, lay, side), [a.width] * a.access.calls
    if vectorize and a.kind == "universal":
        addr, widths = vectorize_calls(addr, a.width, load=side == "S")
    gaddr = _partition_addresses(cp, gmem, "S") if gmem is not None else None
    want = brute_shared(addr, widths, a.kind, gaddr, load=side == "S" and a.kind != "cp_async")
    warps = addr.shape[0] // 32
    assert len(a.warps) == warps
    for w in range(warps):
        mine = a.warps[w]
        calls = addr.shape[1]
        assert mine.instructions == calls
        assert mine.wavefronts == sum(want[w, g][0] for g in range(calls))
        assert mine.ideal == sum(want[w, g][1] for g in range(calls))
        assert mine.ways == max(want[w, g][2] for g in range(calls))
    # one warp: plain numbers; several: one entry per warp
    if warps == 1:
        assert isinstance(a.wavefronts, int) and a.conflict == a.wavefronts / a.ideal
    else:
        assert a.wavefronts == tuple(w.wavefronts for w in a.warps)
    # the collisions name threads whose words share a bank in one phase
    for w, g, c in a.collisions[:20]:
        assert c.ways > 1 and len(set(x // 4 % 32 for x in c.words)) == 1
        for word, threads in zip(c.words, c.threads):
            for t in threads:
                assert addr[t, g] // 4 <= word // 4 < (addr[t, g] + widths[g] + 3) // 4
    # an instruction's phases are its threads, each once
    inst = a.instruction(0, 0)
    assert sorted(t for ts in inst.phase_threads for t in ts) == [t for t in range(32) if addr[t, 0] >= 0]
    assert inst.phases == len(inst.phase_threads) and inst.width == widths[0]


@settings(**SETTINGS)
@given(universal_copies(kinds=("universal",)))
def test_the_merged_accesses_move_each_threads_bytes(case):
    """Vectorized: each instruction a power of two of calls of at most 16 bytes, aligned in
    every thread; together a thread's bytes, each once (loads: perhaps a few more, past the
    end of an odd run of calls, never more than the next power of two)."""
    cp, lay, side = case
    try:
        plain = analyze_shared(cp, lay, side, vectorize=False).access
    except LayoutError:
        return
    v = analyze_shared(cp, lay, side).access
    assert v.calls == plain.instructions and v.instructions <= plain.instructions
    for g, nb in enumerate(v.widths.tolist()):
        assert nb in (1, 2, 4, 8, 16) and nb >= plain.width
        col = v.addr[:, g]
        assert np.all(col[col >= 0] % nb == 0)
    for t in range(v.threads):
        asked = {int(a) + k for a in plain.addr[t] for k in range(plain.width)}
        got = [int(a) + k for a, nb in zip(v.addr[t], v.widths) for k in range(nb)]
        assert asked <= set(got)
        if side == "D":
            assert sorted(got) == sorted(asked)
        else:
            assert len(got) == len(set(got)) and len(set(got) - asked) < len(asked)


# ---- known layouts ---------------------------------------------------------------------------

F16 = "SM80_16x8x16_F32F16F16F32_TN"
SW128_F16 = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))      # (8,64) -> offset, K-major


def test_a_column_of_a_row_major_tile_is_a_32_way_conflict_and_a_swizzle_fixes_it():
    col = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 1)))
    plain = analyze_shared(col, Layout((32, 32), (32, 1)), "S", vectorize=False)
    assert (plain.instructions, plain.wavefronts, plain.ideal, plain.ways) == (32, 1024, 32, 32)
    w, g, c = plain.collisions[0]
    assert (w, g, c.bank, c.threads[:3]) == (0, 0, 0, ((0,), (1,), (2,)))
    padded = analyze_shared(col, Layout((32, 32), (33, 1)), "S")
    swizzled = analyze_shared(col, composition(Swizzle(5, 0, 5), Layout((32, 32), (32, 1))), "S")
    assert padded.wavefronts == swizzled.wavefronts == 32 and not swizzled.conflicts
    merged = analyze_shared(col, Layout((32, 32), (32, 1)), "S")      # as compiled: 8 ld.shared.v4 a thread
    assert (merged.instructions, merged.wavefronts, merged.ways) == (8, 256, 8)
    assert "merges a thread's 32 adjacent calls into 8 instructions (8 of 16 bytes)" in merged.report()


def test_the_f16_tutorial_kernels_copies_are_conflict_free():
    mma = make_tiled_mma(F16, (2, 4, 1), (32, 64, 16))
    sa = tile_to_shape(SW128_F16, (128, 64))
    g2s = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((32, 8), (8, 1)), Layout((1, 8)))
    for cp, side in ((g2s, "D"), (make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), mma), "S")):
        a = analyze_shared(cp, sa, side)
        assert a.ways == 1 and a.total_wavefronts == a.total_ideal
        assert len(a.warps) == 8
    plain = analyze_shared(make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), mma), Layout((128, 64), (64, 1)), "S")
    assert plain.ways == 8 and plain.total_wavefronts == 8 * plain.total_ideal


def test_the_transpose_example_is_conflict_free_and_would_be_8_way_without_its_swizzle():
    from test_user_kernels import _load

    t = _load("transpose")
    stores = analyze_shared(t.COPY_IN_S, t.ST, "D")
    loads = analyze_shared(t.COPY_OUT, t.ST, "S")
    assert stores.ways == loads.ways == 1
    assert stores.instructions == (16, 16) and loads.instructions == (4, 4)
    assert stores.wavefronts == (16, 16) and loads.wavefronts == (16, 16)     # 32-bit: 1 a store; 128-bit: 4 a load
    plain = analyze_shared(t.COPY_IN_S, Layout((t.BM, t.BN), (1, t.BM)), "D")
    assert plain.ways == 8 and plain.wavefronts == (128, 128)


# The rules the H200 showed (benchmarks/bank_conflicts.py, first run, 2026-11-28): the
# numbers below are its counters for these copies.

def _v(bits, thr=(32, 1), thr_stride=None, vals=None):
    n = {64: 2, 128: 4}[bits]
    return make_tiled_copy(CopyAtom(f"UniversalCopy_{bits}", "f32"), Layout(thr, thr_stride), Layout(vals or (1, n)))


def test_loads_whose_phases_each_give_one_address_merge_up_to_256_bytes():
    assert analyze_shared(_v(64), Layout((32, 2), (0, 1)), "S").wavefronts == 1          # measured 1
    assert analyze_shared(_v(128), Layout((32, 8), (0, 1)), "S").wavefronts == 4         # measured 4 (2 instr.)
    halves = analyze_shared(_v(128), Layout(((16, 2), 4), ((0, 8), 1)), "S")              # a half-warp each address
    assert (halves.wavefronts, halves.instruction(0, 0).phase_threads) == (2, (tuple(range(16)), tuple(range(16, 32))))
    quarters = analyze_shared(_v(128), Layout(((8, 4), 4), ((0, 4), 1)), "S")             # a quarter-warp each
    assert quarters.wavefronts == 2 and quarters.instruction(0, 0).phases == 2           # measured 2 (second run)
    # stores of one address do not merge: the documented phases (measured 2, and 8 for 2 instructions)
    assert analyze_shared(_v(64), Layout((32, 2), (0, 1)), "D").wavefronts == 2
    assert analyze_shared(_v(128), Layout((32, 8), (0, 1)), "D").wavefronts == 8
    # the same 128 bytes in each quarter (half) of the warp: no merging (measured 4 and 2)
    assert analyze_shared(_v(128, (4, 8), (8, 1)), Layout((4, 32), (0, 1)), "S").wavefronts == 4
    assert analyze_shared(_v(64, (2, 16), (16, 1)), Layout((2, 32), (0, 1)), "S").wavefronts == 2


def test_cp_async_phases_are_a_quarter_warps_threads_of_one_global_line():
    rows = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((32, 1)), Layout((1, 8)))
    # thread t: global line t % 4, shared row t % 8 (second run: 32; one phase per line would give 8)
    across_s = Layout(((4, (2, 4)), 8), ((64, (256, 8)), 1))
    across_g = Layout(((4, (2, 4)), 8), ((2048, (8, 16)), 1))
    a = analyze_shared(rows, across_s, "D", gmem=across_g)
    assert (a.wavefronts, a.instruction(0, 0).phases) == (32, 16)
    # 8 threads a line, written down 8 shared rows 128 bytes apart: 8-way in each (measured 32)
    line = Layout(((8, 4), 8), ((8, 2048), 1))                        # 8 threads a global line
    col = analyze_shared(rows, Layout(((8, 4), 8), ((64, 8), 1)), "D", gmem=line)
    assert (col.wavefronts, col.ways) == (32, 8)
    # a phase with a collision: a wavefront a thread, 2-, 4- or 8-way (third run: 32 each)
    for smem, ways in ((Layout(((4, 2, 4), 8), ((64, 8, 16), 1)), 4), (Layout(((2, 4, (2, 2)), 8), ((64, 8, (32, 128)), 1)), 2)):
        a = analyze_shared(rows, smem, "D", gmem=line)
        assert (a.wavefronts, a.ways) == (32, ways)
    # without one: a wavefront per shared line (two rows: measured 8)
    assert analyze_shared(rows, Layout(((4, 2, 4), 8), ((8, 96, 128), 1)), "D", gmem=line).wavefronts == 8


def test_cp_async_writes_a_phase_per_line_of_its_global_source():
    g = Layout((32, 64), (4096, 1))                                   # rows 8 KiB apart
    rows = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((32, 1)), Layout((1, 8)))
    sw = composition(Swizzle(3, 3, 3), Layout((32, 64), (64, 1)))
    for smem in (Layout((32, 64), (64, 1)), sw):                       # measured 256 both
        a = analyze_shared(rows, smem, "D", gmem=g)
        assert (a.instructions, a.wavefronts, a.ways, a.rule) == (8, 256, 1, "lines")
        assert a.instruction(0, 0).phases == 32
    assert analyze_shared(rows, sw, "D").wavefronts == 32             # as a store, without the source
    col = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEALWAYS_32", "f32"), Layout((32, 1)), Layout((1, 1)))
    g32 = Layout((32, 32), (4096, 1))
    assert analyze_shared(col, composition(Swizzle(5, 0, 5), Layout((32, 32), (32, 1))), "D", gmem=g32).wavefronts \
        == 1024                                                         # measured 1024
    tile = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEALWAYS_128", "f16"), Layout((4, 8), (8, 1)), Layout((1, 8)))
    assert analyze_shared(tile, Layout((32, 64), (64, 1)), "D", gmem=g).wavefronts == 32     # measured 32
    # 64-byte rows: 4 threads a global line, 8 lines an instruction (tf32_double_buffer.py, measured 32 for 4)
    from test_user_kernels import _load

    t3 = _load("tf32_double_buffer")
    db = analyze_shared(t3.G2S, Layout((t3.BM, t3.BK), (t3.BK, 1)), "D", gmem=Layout((t3.BM, t3.BK), (t3.K, 1)))
    assert (db.total_instructions, db.total_wavefronts) == (4, 32)
    # within one line, threads that write one bank collide
    into_column = analyze_shared(rows, Layout(((8, 4), 8), ((64, 8), 1)), "D", gmem=Layout(((8, 4), 8), ((8, 2048), 1)))
    assert (into_column.wavefronts, into_column.ways) == (32, 8)


def test_the_compiler_merges_adjacent_shared_accesses():
    from test_user_kernels import _load

    t1 = _load("tf32_mma")
    a = analyze_shared(t1.COPY_A, t1.SA, "D")                         # measured: 1 st.shared.v4, 4 wavefronts
    b = analyze_shared(t1.COPY_B, t1.SB, "D")                         # 1 st.shared.v2, 2 wavefronts
    assert (a.instructions, a.wavefronts, a.widths.tolist()) == (1, 4, [16])
    assert (b.instructions, b.wavefronts, b.widths.tolist()) == (1, 2, [8])
    assert analyze_shared(t1.COPY_A, t1.SA, "D", vectorize=False).instructions == 4
    cols = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 1)))
    g = analyze_global(cols, Layout((32, 4), (4096, 1)), "S")          # a global array: element-aligned only
    assert (g.requests, g.sectors) == (4, 128)


def test_the_vectorizer_rule_on_runs_of_calls():
    def widths(offsets, width, load, lanes=32, stride=32):
        addr = np.array([[stride * t + o for o in offsets] for t in range(lanes)], dtype=np.int64)
        return vectorize_calls(addr, width, load)[1].tolist()

    assert widths([0, 4, 8], 4, True) == [16] and widths([0, 4, 8], 4, False) == [8, 4]
    assert widths([0, 4, 8], 4, True, stride=24) == [8, 4]              # 16-byte alignment not in every lane
    assert widths(list(range(0, 28, 4)), 4, True) == [16, 16] and widths(list(range(0, 28, 4)), 4, False) == [16, 8, 4]
    assert widths(list(range(0, 12, 2)), 2, True) == [8, 4]              # even: pieces; odd: one padded vector
    assert widths(list(range(0, 10, 2)), 2, True) == [16]
    assert widths(list(range(13)), 1, True) == [16] and widths(list(range(14)), 1, True) == [8, 4, 2]
    assert widths([0, 8], 4, True) == [4, 4]                             # a gap: no merging
    assert widths([8, 0, 4, 12], 4, False) == [16]                       # the order of the calls does not matter


def test_ldmatrix_rows_of_16_bytes_a_matrix():
    mma = make_tiled_mma(F16)
    for num in (1, 2, 4):
        cp = make_tiled_copy_A(CopyAtom(f"SM75_U32x{num}_LDSM_N", "f16"), mma)
        a = analyze_shared(cp, Layout((16, 16), (16, 1)), "S")      # 32-byte rows: 2-way per matrix
        assert a.instructions == 4 // num
        assert a.wavefronts == 2 * 4 and a.ideal == 4 and a.ways == 2
        assert a.instruction(0, 0).phases == num                      # a matrix a phase


def test_global_rows_and_columns():
    rows = make_tiled_copy(CopyAtom("UniversalCopy_128", "f16"), Layout((16, 8), (8, 1)), Layout((1, 8)))
    g = analyze_global(rows, Layout((128, 64), (4096, 1)), "S")
    assert g.requests == (8, 8, 8, 8) and g.total_sectors == g.total_ideal == 32 * 16     # 512 bytes a request
    assert g.efficiency == (1.0, 1.0, 1.0, 1.0)
    cols = make_tiled_copy(CopyAtom("UniversalCopy_16", "f16"), Layout((32, 1)), Layout((1, 1)))
    c = analyze_global(cols, Layout((32, 4), (1, 4096)), "D")                 # M contiguous: coalesced
    assert (c.requests, c.sectors, c.ideal) == (4, 8, 8)
    k = analyze_global(cols, Layout((32, 4), (4096, 1)), "D")                 # N contiguous: a sector a thread
    assert (k.requests, k.sectors, k.ideal, k.efficiency) == (4, 128, 8, 8 / 128)


def test_bad_input_names_the_operation_and_the_values():
    mma = make_tiled_mma(F16)
    ldsm = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), mma)
    with pytest.raises(LayoutError, match=r"analyze_shared: the destination \(side 'D'\) of SM75_U32x4_LDSM_N is "
                                          r"registers, not shared memory"):
        analyze_shared(ldsm, Layout((16, 16), (16, 1)), "D")
    g2s = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((32, 1)), Layout((1, 8)))
    with pytest.raises(LayoutError, match="analyze_shared: the source .* is global memory"):
        analyze_shared(g2s, Layout((32, 8), (8, 1)), "S")
    with pytest.raises(LayoutError, match="analyze_global: the source .* is shared memory"):
        analyze_global(ldsm, Layout((16, 16), (16, 1)), "S")
    with pytest.raises(LayoutError, match="not contiguous"):
        analyze_shared(g2s, Layout((32, 8), (1, 32)), "D")                    # vectors along the strided mode
    with pytest.raises(LayoutError, match="side must be 'S'"):
        analyze_shared(g2s, Layout((32, 8), (8, 1)), "X")
    with pytest.raises(TypeError, match="expected a TiledCopy"):
        analyze_shared(CopyAtom("UniversalCopy_32", "f32"), Layout(32), "D")
    with pytest.raises(LayoutError, match="base must be"):
        analyze_shared(g2s, Layout((32, 8), (8, 1)), "D", base=-4)
    with pytest.raises(LayoutError, match="tensor starts at byte 8, not a multiple of 16"):
        analyze_shared(g2s, Layout((32, 8), (8, 1)), "D", base=8)
    with pytest.raises(LayoutError, match="analyze_shared: gmem= is the global source of a cp.async; "
                                          "SM75_U32x4_LDSM_N is not one"):
        analyze_shared(ldsm, Layout((16, 16), (16, 1)), "S", gmem=Layout((16, 16), (16, 1)))
    with pytest.raises(LayoutError, match=r"analyze_shared: the global source \(32,16\):\(16,1\) gives 2 instructions "
                                          r"a thread, the shared side \(32,8\):\(8,1\) 1"):
        analyze_shared(g2s, Layout((32, 8), (8, 1)), "D", gmem=Layout((32, 16), (16, 1)))


def test_a_tensor_gives_its_layout_and_offset():
    cp = make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((32, 1)), Layout((1, 1)))
    t = make_tensor(PointerEngine("s", 1), Layout((32, 1), (32, 1)))
    a = analyze_shared(cp, t, "S")
    assert a.access.addr[:2, 0].tolist() == [4, 132]


# ---- legality --------------------------------------------------------------------------------

def _canonical_parts(major, swb, eb, mn, k):
    """The canonical GMMA layout's byte address of (mn, k) before the swizzle, written from
    the PTX ISA's pictures as ``base + nl * LBO + ns * SBO``: returns (base, nl, ns)."""
    x = swb or 16
    i = np.arange(mn)[:, None]
    j = np.arange(k)[None, :]
    if major == "K":
        kb = j * eb
        base = (i % 8) * x + (kb if swb else kb % 16) + 0 * i
        nl = (0 * i + (0 if swb else kb // 16))
        ns = i // 8 + 0 * j
    else:
        w = x // eb
        base = (i % w) * eb + (j % 8) * x
        mgroups, kgroups = i // w + 0 * j, j // 8 + 0 * i
        nl, ns = (mgroups, kgroups) if swb else (kgroups, mgroups)
    return base, nl, ns


def _swizzle_bytes_array(a, swb):
    if not swb:
        return a
    b = {32: 1, 64: 2, 128: 3}[swb]
    return a ^ (((a >> 7) & ((1 << b) - 1)) << 4)


def _canonical(major, swb, eb, lbo, sbo, mn, k):
    base, nl, ns = _canonical_parts(major, swb, eb, mn, k)
    return _swizzle_bytes_array(base + nl * lbo + ns * sbo, swb)


def _user_bytes(lay, eb, mn, k):
    return np.array([[lay(i, j) * eb for j in range(k)] for i in range(mn)], dtype=np.int64)


def _brute_wgmma(lay, dtype, major, mn, k):
    """Legal iff some layout type and 16-byte multiples LBO, SBO give the same addresses:
    every LBO up to the layout's span is tried, and the SBO each one leaves (if any)."""
    eb = {"f16": 2, "tf32": 4, "e4m3": 1}[dtype]
    if major == "MN" and eb != 2:
        return False
    got = _user_bytes(lay, eb, mn, k)
    span = int(got.max()) + 16
    for swb in (0, 32, 64, 128):
        base, nl, ns = _canonical_parts(major, swb, eb, mn, k)
        want = _swizzle_bytes_array(got, swb)              # the swizzle is its own inverse
        for lbo in range(0, span, 16):
            rest = want - base - nl * lbo
            if np.any(rest[ns == 0] != 0):
                continue
            sbos = {int(r) // int(n) for r, n in zip(rest[ns > 0], ns[ns > 0]) if r % n == 0}
            if ns.max() == 0 or (len(sbos) == 1 and (sbo := sbos.pop()) % 16 == 0 and sbo >= 0
                                 and np.array_equal(rest, ns * sbo)):
                return True
    return False


@st.composite
def wgmma_layouts(draw):
    dtype = draw(st.sampled_from(["f16", "tf32", "e4m3"]))
    eb = {"f16": 2, "tf32": 4, "e4m3": 1}[dtype]
    major = draw(st.sampled_from(["K", "MN"])) if eb == 2 else "K"
    k = 32 // eb
    mn = draw(st.sampled_from([8, 16, 32]))
    how = draw(st.sampled_from(["atom", "atom", "plain", "padded"]))
    if how == "atom":
        from mma_atoms.gmma_smem import gmma_smem_atom

        swb = draw(st.sampled_from([0, 32, 64, 128]))
        atom = gmma_smem_atom(dtype, major, swb)
        w = (swb or 16) // eb
        MN = max(mn, w if major == "MN" else 8)
        K = max(k, w if major == "K" else 8)
        order = (1, 0) if draw(st.booleans()) else (0, 1)
        return tile_to_shape(atom, (MN, K), order), dtype, major, (mn, k)
    pad = 0 if how == "plain" else draw(st.sampled_from([8 // eb or 1, 16 // eb]))
    lay = Layout((mn, k), (k + pad, 1)) if draw(st.booleans()) else Layout((mn, k), (1, mn + pad))
    return lay, dtype, major, (mn, k)


@settings(max_examples=40, deadline=None)
@given(wgmma_layouts())
def test_wgmma_legality_equals_a_search_over_canonical_layouts(case):
    lay, dtype, major, (mn, k) = case
    r = check_wgmma(lay, dtype, major, block=(mn, k))
    assert r.legal == _brute_wgmma(lay, dtype, major, mn, k), r
    if r.legal:
        eb = {"f16": 2, "tf32": 4, "e4m3": 1}[dtype]
        assert np.array_equal(_canonical(major, r.swizzle_bytes, eb, r.lbo, r.sbo, mn, k), _user_bytes(lay, eb, mn, k))
    else:
        assert r.rule and r.message


def test_the_hopper_plans_operands_are_legal_and_their_descriptors_agree():
    from codegen import GemmConfig
    from codegen.sm90.plan import make_wgmma_plan

    for dtype, majors in (("f16", (("K", "K"), ("K", "MN"), ("MN", "MN"))), ("tf32", (("K", "K"),)),
                          ("e4m3", (("K", "K"),))):
        for am, bm in majors:
            plan = make_wgmma_plan(GemmConfig.default(dtype, arch=(9, 0)), am, bm)
            for o in plan.operands:
                r = check_wgmma(o.smem, dtype, o.major, block=(64 if o.name == "A" else o.rows, plan.instr_k))
                assert r.legal and r.desc == o.desc, (dtype, o.name, r)
                box = (o.box[1], o.box[0]) if o.major == "K" else o.box
                assert check_tma(o.smem, dtype, inner=1 if o.major == "K" else 0, box=box).legal
            if plan.store is not None:
                st_ = plan.store
                assert check_tma(st_.smem, plan.out.name, inner=1, box=(st_.box[1], st_.box[0])).legal


def test_wgmma_rules_name_what_fails():
    assert check_wgmma(Layout((64, 16), (16, 1)), "f16", "K").rule == "rows"
    assert check_wgmma(composition(Swizzle(3, 2, 3), Layout((64, 16), (16, 1))), "f16", "K").rule == "swizzle"
    assert check_wgmma(Layout((64, 8), (8, 1)), "tf32", "MN").rule == "major"
    assert check_wgmma(Layout((64, 8), (8, 1)), "f16", "K", block=(64, 8)).rule == "block"
    core = Layout(((8, 8), (8, 2)), ((8, 128), (1, 64)))          # 8x8 core matrices, LBO 128, SBO 256 bytes
    ok = check_wgmma(core, "f16", "K")
    assert ok.legal and (ok.swizzle_bytes, ok.lbo, ok.sbo) == (0, 128, 256)
    assert check_wgmma(Layout(((8, 8), (8, 2)), ((8, 136), (1, 64))), "f16", "K").sbo == 272
    odd = Layout(((8, 8), (8, 2)), ((8, 132), (1, 64)))           # groups of 8 rows 264 bytes apart
    assert check_wgmma(odd, "f16", "K").rule == "sbo"
    uneven = Layout(((8, (2, 4)), (8, 2)), ((8, (128, 512)), (1, 64)))   # groups 256, then 1024 bytes apart
    assert check_wgmma(uneven, "f16", "K").rule == "sbo"
    sw = tile_to_shape(SW128_F16, (64, 64))
    assert check_wgmma(sw, "f16", "K", smem_base=512).rule == "alignment"
    assert check_wgmma(sw, "f16", "K", smem_base=1024).legal


def test_tma_rules_name_what_fails():
    ok = tile_to_shape(SW128_F16, (64, 64))                       # (rows, k): 128-byte rows, Sw<3,4,3> on bytes
    assert check_tma(ok, "f16", inner=1).legal
    assert check_tma(ok, "f16", inner=1, smem_base=512).rule == "smem_alignment"
    assert check_tma(Layout((64, 64), (64, 1)), "f16", inner=1, smem_base=128).legal
    assert check_tma(Layout((8, 4), (4, 1)), "f16", inner=1).rule == "inner_bytes"           # 8-byte rows
    assert check_tma(tile_to_shape(SW128_F16, (64, 128)), "f16", inner=1).rule == "swizzle_span"
    assert check_tma(composition(Swizzle(3, 4, 3), Layout((64, 64), (64, 1))), "f16", inner=1).rule == "swizzle"
    assert check_tma(Layout((64, 64), (1, 64)), "f16", inner=1).rule == "layout"              # not dense along k
    assert check_tma(Layout((8, 8, 2, 2, 2, 2), (1,) * 6), "f16").rule == "rank"
    g = Layout((4096, 4096), (4100, 1))                          # rows 8200 bytes apart
    assert check_tma(ok, "f16", g).rule == "gmem_strides"
    assert check_tma(ok, "f16", Layout((4096, 4096), (4096, 1)), gmem_base=8).rule == "gmem_alignment"
    assert check_tma(ok, "f16", Layout((4096, 4096), (4096, 1))).legal


def _brute_tma_layout_ok(lay, eb, box, inner, swb):
    order = [inner] + [i for i in range(len(box)) if i != inner]
    for crd in np.ndindex(*box):
        dense, pitch = 0, eb
        for i in order:
            dense += crd[i] * pitch
            pitch *= box[i]
        if swb:
            b = {32: 1, 64: 2, 128: 3}[swb]
            dense ^= ((dense >> 7) & ((1 << b) - 1)) << 4
        if lay(*crd) * eb != dense:
            return False
    return True


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["f16", "f32", "u8"]), st.sampled_from([0, 32, 64, 128]), st.integers(0, 1),
       st.sampled_from([4, 8, 16, 32]), st.sampled_from([1, 2, 4, 8]), st.sampled_from([0, 0, 8]))
def test_tma_layout_rule_equals_a_brute_force(dtype, swb, inner, cols, rows, pad):
    eb = {"f16": 2, "f32": 4, "u8": 1}[dtype]
    box = (rows, cols) if inner == 1 else (cols, rows)
    lay = Layout(box, (cols + pad, 1)) if inner == 1 else Layout(box, (1, cols + pad))
    if swb:
        lay = composition(Swizzle({32: 1, 64: 2, 128: 3}[swb], 4 - (eb.bit_length() - 1), 3), lay)
    r = check_tma(lay, dtype, inner=inner)
    inner_bytes = cols * eb
    want = inner_bytes % 16 == 0 and (not swb or inner_bytes <= swb) and _brute_tma_layout_ok(lay, eb, box, inner, swb)
    assert r.legal == want, r
