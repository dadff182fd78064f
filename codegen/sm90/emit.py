"""numba source of the Hopper GEMM kernel of a :class:`~codegen.sm90.plan.WgmmaPlan`.

The kernel is persistent and warp-specialized: warpgroup 0 is the producer (one thread
issues the TMA loads of each k-tile into a ring of shared-memory stages), the other
warpgroups are consumers (each runs ``wgmma`` on a 64-row slice of the CTA tile, then
stores it). Each stage has a "full" mbarrier (the producer's TMA bytes arrived) and an
"empty" one (every consumer is done reading it). CTAs walk the output tiles in groups of
``GROUP_M`` tile rows, ``gridDim.x`` apart.

Two epilogues, one per kernel: "tma", for 16-bit outputs with ``beta == 0`` and a tensor map
of C: a consumer stages its slice of C in shared memory and one thread stores it with TMA,
asynchronously (the consumer goes on to the next tile's MMAs while the store drains, and
waits for it only before it overwrites a staging buffer); "registers", for the rest
(``beta != 0``, f32 output, a C that TMA cannot write): the consumers store from registers.
The launcher picks the kernel per call and compiles each only when a call first needs it.

Between two tiles the tensor cores idle from the last MMA of one to the first of the next,
so the "tma" kernels (without split-K or clusters) keep that gap short: a consumer converts
its finished accumulators into packed 16-bit pairs (no multiplies when ``alpha == 1``) and
starts the next tile at once; the next tile's first wgmma ignores the old accumulators
(scale-d 0) instead of zeroing them, its corner was computed during the previous tile's
MMAs, and the packed pairs go to shared memory and out by TMA one box after each of the
next tile's first k-tiles, while their MMAs run. On the H100 this took the f16 kernel from
0.94 to 1.00 of cuBLAS at 4096x4096x1024 (interleaved timing, 2026-11-26).

Split-K kernels (``config.split_k > 1``) walk work units instead of tiles. The tiles of
the full waves (as many as ``gridDim.x`` divides: none when there are fewer tiles than
CTAs) are a unit each; the K of each later tile, those of the short last wave, is cut into
``splits`` parts of whole k-tiles, and consecutive units are the parts of one tile, so
the last wave's work spreads over more CTAs. Each part stores its partial sums in a
workspace and counts itself on the tile's counter; the part that counts last adds the
others' sums to its own and runs the epilogue (no part waits for another, so any number of
CTAs is safe), and resets the counter for the next launch.

Kernel arguments: the device addresses of the tensor maps of A, B and C (0: no map of C),
the address of C, M, N, K, C's element strides, alpha, beta, the address of an int32
error word (a wait that times out writes 1 there instead of hanging the GPU), and for
split-K the workspace's address (zeroed counters, then the partial sums) and the parts.

Cluster kernels (``config.cluster_m == 2``, launched in clusters of two CTAs) walk pairs of
vertically adjacent tiles, one per CTA: both need the same k-tiles of B, and each CTA loads
half of them with a multicast TMA that writes both CTAs' stages and counts the bytes on both
CTAs' "full" barriers. A stage may then be refilled only when the consumers of both CTAs
are done with it: each consumer arrives on its own CTA's "empty" barrier and on the
peer's. The cluster synchronises once its barriers exist and once before it exits.
"""

from __future__ import annotations

from ..index import swizzle_code
from .plan import WgmmaPlan, half_bytes

__all__ = ["emit_wgmma_source", "KERNEL_NAME"]

KERNEL_NAME = "gemm_sm90_kernel"
WAIT_TIMEOUT_NS = 2_000_000_000
CONSUMER_REGS = 232


def producer_regs(consumers, cluster=1):
    """The producer warpgroup's registers a thread (``setmaxnreg.dec``): 40 beside two
    consumer warpgroups (128 x (40 + 2 x 232) is what a CTA of 384 threads at 168 registers
    holds); 56 beside one, where the split-K producer's unit arithmetic spilled at 40, and
    in cluster kernels (their consumers then take 224)."""
    return 56 if consumers == 1 or cluster > 1 else 40


def consumer_regs(consumers, cluster=1):
    """The consumer warpgroups' registers a thread (``setmaxnreg.inc``): :data:`CONSUMER_REGS`,
    or beside two consumers what the producer leaves of the 504 a thread that three
    warpgroups at 168 registers hold, in multiples of 8."""
    if consumers == 1:
        return CONSUMER_REGS
    return min(CONSUMER_REGS, (504 - producer_regs(consumers, cluster)) // consumers // 8 * 8)


def overlaps_epilogue(plan, epilogue):
    """Whether the kernel overlaps a tile's epilogue with the next tile's MMAs: a "tma"
    epilogue of one 64-row block a consumer, without split-K or clusters (``_overlap=True``
    builds a cluster kernel with it, correct, but on the H100 it measured no faster than the
    cluster kernel without: 0.976 against 0.975 of cuBLAS at 4096^3, 1.021 against 1.026 at
    8192^3, f16, 2026-11-26)."""
    return epilogue == "tma" and plan.mblocks == 1 and not plan.split and plan.cluster == 1


def prefetch_distance(plan):
    """How many k-tiles ahead of its TMA loads the producer prefetches into L2: none, for now
    (an experiment option of :func:`emit_wgmma_source`)."""
    return 0


class _W:
    def __init__(self):
        self.lines, self.ind, self.used = [], 0, set()

    def __call__(self, s=""):
        self.lines.append(("    " * self.ind + s) if s else "")

    def call(self, name, args=""):
        self.used.add(name)
        return f"{name}({args})"

    def block(self):
        w = self

        class _B:
            def __enter__(self_):
                w.ind += 1

            def __exit__(self_, *a):
                w.ind -= 1

        return _B()


def _wait(w, addr, phase, bounded=True):
    """A bounded spin on an mbarrier phase."""
    if not bounded:
        w(f"while {w.call('mbarrier_try_wait', f'{addr}, {phase}')} == 0:")
        with w.block():
            w("pass")
        return
    w(f"if {w.call('mbarrier_try_wait', f'{addr}, {phase}')} == 0:")
    with w.block():
        w(f"t0 = {w.call('globaltimer')}")
        w(f"while {w.call('mbarrier_try_wait', f'{addr}, {phase}')} == 0:")
        with w.block():
            w(f"if {w.call('globaltimer')} - t0 > WAIT_TIMEOUT_NS:  # a lost arrival: report, do not hang")
            with w.block():
                w(w.call("st_global_b32", "err, 1"))
                w("break")


def emit_wgmma_source(plan: WgmmaPlan, epilogue=None, *, _epilogue=True, _in_flight=1, _bounded=True,
                      _loads=True, _multicast=True, _regs=None, _overlap=None, _prefetch=None, _prologue=None):
    """Source of the kernel module with ``epilogue`` "tma" (a 16-bit C staged in shared
    memory and stored by TMA: the launch passes a map of C and ``beta == 0``) or
    "registers" (stores from registers); None: "tma" where the plan stages C. (The
    underscored options exist for experiments: no epilogue, the number of wgmma groups left
    in flight, unbounded waits, and ``_loads=False``: TMA fills each stage once and the
    pipeline then cycles on stale data, which measures everything but the loads; its
    results are wrong; ``_multicast=False``: a cluster kernel's CTAs each load all of B;
    ``_regs``: the (producer, consumer) registers a thread; ``_overlap``: whether a "tma"
    epilogue overlaps the next tile's MMAs, None: where :func:`overlaps_epilogue` says;
    ``_prefetch``: how many k-tiles ahead of its loads the producer prefetches into L2, None:
    :func:`prefetch_distance`; ``_prologue``: over how many of a tile's first k-tiles the
    overlapped epilogue spreads the previous tile's boxes (None: a box each), each k-tile
    unrolled.)"""
    cfg, w = plan.config, _W()
    a, b, st = plan.a, plan.b, plan.store
    epilogue = epilogue or ("tma" if st is not None else "registers")
    if epilogue not in ("tma", "registers") or (epilogue == "tma" and st is None):
        raise ValueError(f"emit_wgmma_source: epilogue {epilogue!r} is not one of 'registers'"
                         + (", 'tma'" if st is not None else f" (no TMA store for a {plan.out.name} C)"))
    tma = epilogue == "tma"
    pf = prefetch_distance(plan) if _prefetch is None else _prefetch
    if pf and (plan.split or plan.cluster > 1):
        raise ValueError("emit_wgmma_source: L2 prefetch is for kernels without split-K and clusters")
    overlap = overlaps_epilogue(plan, epilogue) and _epilogue is True if _overlap is None else _overlap
    if overlap and not (tma and plan.mblocks == 1 and not plan.split and _epilogue is True):
        raise ValueError("emit_wgmma_source: only a 'tma' epilogue of 64-row slices without split-K overlaps")
    accs = ["acc"] if plan.mblocks == 1 else [f"acc{i}" for i in range(plan.mblocks)]   # one per 64-row block
    if len(accs) > 1 and (plan.split or _epilogue == "cold" or _in_flight == 2):
        raise ValueError("emit_wgmma_source: 256-row tiles take no split-K and none of the experiments")
    S = cfg.stages
    w(f"BM, BN, BK = {cfg.bm}, {cfg.bn}, {cfg.bk}  # CTA tile")
    w(f"STAGES, CONSUMERS, GROUP_M = {S}, {plan.consumers}, {cfg.group_m}")
    if plan.share == "B":
        w(f"GROUP_PM = {max(1, cfg.group_m // 2)}  # pairs of tile rows a group: GROUP_M tile rows")
    w(f"KBLOCKS = {plan.kblocks}  # wgmma m64n{cfg.bn}k{plan.instr_k} per k-tile")
    w(f"A_STAGE, B_STAGE = {a.stage_bytes}, {b.stage_bytes}  # bytes of one stage: cosize of the smem layouts")
    w("STAGE_BYTES = A_STAGE + B_STAGE  # what the TMA of one k-tile delivers")
    if st is not None:
        w(f"C_STAGE = {st.stage_bytes}  # bytes of one consumer's C staging: cosize of {st.smem}")
    w(f"SMEM_BYTES = {plan.smem_bytes}  # 1024 (alignment) + stages + C staging + 2 mbarriers per stage + tickets")
    if plan.split:
        w(f"PART_BYTES = {plan.part_bytes}  # one consumer's partial sums: (T128,V{plan.acc_regs}) f32")
    w(f"WAIT_TIMEOUT_NS = {WAIT_TIMEOUT_NS}")
    w("")
    w("")
    w(f"def {KERNEL_NAME}(tmap_a, tmap_b, tmap_c, C, M, N, K, scm, scn, alpha, beta, err, ws, splits):")
    with w.block():
        w('"""tmap_a, tmap_b, tmap_c: device addresses of the TMA tensor maps of A (M,K), B (N,K)')
        w("and C (M,N), or 0 for no map of C; C: the address of C with element strides (scm, scn);")
        w("err: an int32 error word; ws, splits: the split-K workspace and parts (unused: splits 1).")
        w('"""')
        w("smem = cuda.shared.array(0, uint8)")
        w(f"sa = ({w.call('smem_addr', 'smem, 0')} + 1023) & -1024  # 1024-byte aligned: the swizzle repeats every 1024 B")
        w("sb = sa + STAGES * A_STAGE")
        if st is not None:
            w("sc = sb + STAGES * B_STAGE  # CONSUMERS C staging buffers")
            w("full = sc + CONSUMERS * C_STAGE  # STAGES mbarriers: the stage's TMA bytes arrived")
        else:
            w("full = sb + STAGES * B_STAGE  # STAGES mbarriers: the stage's TMA bytes arrived")
        w("empty = full + STAGES * 8  # STAGES mbarriers: every consumer is done with the stage")
        if plan.split:
            w("ticket = empty + STAGES * 8  # CONSUMERS words: a part's place among its tile's parts")
        w("tid = cuda.threadIdx.x")
        w("wg = tid >> 7  # warpgroup: 0 produces, 1.. consume")
        if plan.cluster > 1:
            w(f"rank = {w.call('cluster_ctarank')}  # this CTA's tile of the pair, and its half of B")
        w("if tid == 0:")
        with w.block():
            w("for s in range(STAGES):")
            with w.block():
                w(w.call("mbarrier_init", "full + 8 * s, 1"))
                w(w.call("mbarrier_init", "empty + 8 * s, CONSUMERS" + (" * 2" if plan.cluster > 1 else ""))
                  + ("  # both CTAs' consumers" if plan.cluster > 1 else ""))
            w(w.call("fence_mbarrier_init"))
        if plan.cluster > 1:
            w(f"{w.call('cluster_sync')}  # both CTAs' barriers exist before any multicast or remote arrival")
        else:
            w("cuda.syncthreads()")
        w("")
        w("# ---- tiles: persistent CTAs, GROUP_M tile rows at a time ----------------------")
        w("num_m = (M + BM - 1) // BM")
        w("num_n = (N + BN - 1) // BN")
        w("tiles = num_m * num_n")
        w("ktiles = (K + BK - 1) // BK  # TMA zero-fills k >= K, rows >= M and columns >= N")
        if plan.share == "A":
            w("num_pn = (num_n + 1) // 2  # pairs of tile columns: a cluster's two CTAs")
            w("pairs = num_m * num_pn")
            w("group = GROUP_M * num_pn")
        elif plan.cluster > 1:
            w("num_pm = (num_m + 1) // 2  # pairs of tile rows: a cluster's two CTAs")
            w("pairs = num_pm * num_n")
            w("group = GROUP_PM * num_n")
        else:
            w("group = GROUP_M * num_n")
        if plan.split:
            w("whole = tiles // cuda.gridDim.x * cuda.gridDim.x  # tiles of the full waves: a unit each")
            w("units = whole + (tiles - whole) * splits  # then (tile, part of K): a tile's parts consecutive")
            w("counts = ws  # tiles x CONSUMERS uint32: the parts of each tile's slice done so far")
            w("parts = ws + ((tiles * CONSUMERS * 4 + 255) & -256)  # split units x CONSUMERS partial sums")
        w("")
        w("if wg == 0:")
        with w.block():
            w("# ---- producer: one thread issues the TMA loads of every k-tile ---------------")
            w(w.call("setmaxnreg_dec", str(_regs[0] if _regs else producer_regs(plan.consumers, plan.cluster))))
            w("if tid == 0:")
            with w.block():
                w(w.call("tensormap_acquire", "tmap_a"))
                w(w.call("tensormap_acquire", "tmap_b"))
                w(w.call("prefetch_tensormap", "tmap_a"))
                w(w.call("prefetch_tensormap", "tmap_b"))
                w("it = 0  # k-tiles issued, over all tiles")
                w("s = 0  # the stage: it % STAGES")
                w("ph = 0  # the stage's phase: (it // STAGES) & 1")
                if pf:
                    w(f"# the L2 prefetch cursor runs PREFETCH = {pf} k-tiles ahead of the loads, across tiles")
                    w("pf_it = 0  # k-tiles prefetched")
                    w("pf_kt = 0  # its k-tile and tile")
                    w("pf_tile = cuda.blockIdx.x")
                    _raster(w, "pf_tile", out=("pf_m0", "pf_n0"))
                _unit_loop(w, plan)
                with w.block():
                    _unit(w, plan)
                    w(f"for kt in {_kt_range(plan)}:")
                    with w.block():
                        w("if it >= STAGES:  # wait until every consumer released the stage's previous fill")
                        with w.block():
                            _wait(w, "empty + 8 * s", "ph ^ 1", _bounded)
                        if not _loads:      # experiment: stale stages after the first fill
                            w("if it >= STAGES:")
                            with w.block():
                                w(w.call("mbarrier_arrive_expect_tx", "full + 8 * s, 0"))
                                _advance(w)
                                w("continue")
                        w(w.call("mbarrier_arrive_expect_tx", "full + 8 * s, STAGE_BYTES"))
                        w("k0 = kt * BK")
                        for op, base, r0 in ((a, "sa + s * A_STAGE", "m0"), (b, "sb + s * B_STAGE", "n0")):
                            _loads_of(w, plan, op, base, r0, _multicast)
                        if pf:
                            _prefetches(w, plan, pf)
                        _advance(w)
        w("else:")
        with w.block():
            w("# ---- consumers: wgmma on 64-row slices, then the epilogue ---------------------")
            w(w.call("setmaxnreg_inc", str(_regs[1] if _regs else consumer_regs(plan.consumers, plan.cluster))))
            rows = 64 * plan.mblocks
            w(f"c = wg - 1  # this consumer's {rows} rows of the CTA tile")
            w("leader = (tid & 127) == 0  # arrives on the empty barriers for the warpgroup")
            if plan.cluster > 1:
                w(f"peer_empty = {w.call('mapa_shared', 'empty, rank ^ 1')}  # the other CTA's empty barriers")
            da = plan.a.desc
            db = plan.b.desc
            w(f"desc_a = int64({da.lbo << 16 | da.sbo << 32}) | (int64({da.layout_type}) << 62)  "
              f"# A descriptor: LBO {da.lbo}, SBO {da.sbo} (16-byte units), layout type {da.layout_type}, from gmma_desc")
            w(f"desc_b = int64({db.lbo << 16 | db.sbo << 32}) | (int64({db.layout_type}) << 62)  "
              f"# B descriptor: LBO {db.lbo}, SBO {db.sbo}, layout type {db.layout_type}")
            w(f"a_c = sa + c * {a.consumer_bytes}  # A rows of this consumer: smem({rows} c, 0)")
            if tma:
                w("sc_c = sc + c * C_STAGE  # this consumer's C staging buffer")
                if plan.store.boxes % 2:
                    w("nbox = 0  # boxes staged so far: box n goes through buffer n & 1")
                w("if leader:")
                with w.block():
                    w(w.call("tensormap_acquire", "tmap_c"))
            w("s = 0")
            w("ph = 0")
            if overlap:
                st = plan.store
                var, first, end, step = _units(plan)
                w("# the finished tile's C, converted, waits in registers: its boxes are stored during the")
                w("# next tile's first k-tiles, while their MMAs run (or after the last tile)")
                w(f"packed = cuda.local.array({plan.acc_regs // 2}, uint32)  # pairs of C values: registers once "
                  f"NVVM unrolls the loops")
                w("pend = False  # packed holds a tile not yet stored")
                w("pm0 = 0  # its corner")
                w("pn0 = 0")
                w("wtid = tid & 127  # the thread within its warpgroup")
                w(f"c_thr = {st.thr_off}  # staging offset of the thread mode of CLayout_64x{cfg.bn}")
                w(f"acc = {w.call('f32x_zero', str(plan.acc_regs))}  # CLayout_64x{cfg.bn}: (T128,V{plan.acc_regs}) "
                  f"-> (m,n); each tile's first wgmma ignores it (scale-d 0)")
                w("next_m0 = 0  # the first tile's corner; each tile finds the next one's during its MMAs")
                w("next_n0 = 0")
                w(f"if {first} < {end}:")
                with w.block():
                    _unit(w, plan, first, ("next_m0", "next_n0"))
            _unit_loop(w, plan)
            with w.block():
                if overlap:
                    w("m0 = next_m0")
                    w("n0 = next_n0")
                else:
                    _unit(w, plan)
                    for acc in accs:
                        w(f"{acc} = {w.call('f32x_zero', str(plan.acc_regs))}  # CLayout_64x{cfg.bn}: "
                          f"(T128,V{plan.acc_regs}) -> (m,n)"
                          + (f" of rows [64 ({plan.mblocks} c + {acc[-1]}), +64)" if len(accs) > 1 else ""))
                w("prev = 0")
                if _in_flight == 2:
                    w("prev2 = 0")
                def k_tile(first=False):  # the MMAs of k-tile kt, from stage s; then the release of the previous stage
                    _wait(w, "full + 8 * s", "ph", _bounded)
                    for acc in accs:
                        w(f"{acc} = {w.call('acc_fence', acc)}")
                    w(w.call("wgmma_fence"))
                    w("for kb in range(KBLOCKS):")
                    with w.block():
                        w(f"db = desc_b + (((sb + s * B_STAGE + kb * {b.kblock_bytes}) & 0x3FFFF) >> 4)  "
                          f"# start: smem_B(0, {plan.instr_k} kb), encoded as the ISA says (14 bits)")
                        for i, acc in enumerate(accs):
                            blk = f" + {i * a.mblock_bytes}" if i else ""
                            w(f"da = desc_a + (((a_c{blk} + s * A_STAGE + kb * {a.kblock_bytes}) & 0x3FFFF) >> 4)  "
                              f"# start: smem_A({rows} c{f' + {64 * i}' if i else ''}, {plan.instr_k} kb)")
                            scale = "min(kt + kb, 1)" if first else "1"    # 0 for the tile's first wgmma: D = A * B
                            w(f"{acc} = {w.call(plan.intrinsic, f'{acc}, da, db, {scale}, {a.tnsp}, {b.tnsp}')}")
                    w(w.call("wgmma_commit"))
                    if _in_flight == 2:          # experiment: two groups in flight, release the stage of kt - 2
                        w(w.call("wgmma_wait", "2"))
                        w(f"acc = {w.call('acc_fence', 'acc')}")
                        w("if kt > 1 and leader:")
                        with w.block():
                            w(w.call("mbarrier_arrive", "empty + 8 * prev2"))
                        w("prev2 = prev")
                    else:
                        w(w.call("wgmma_wait", str(_in_flight))
                          + "  # the previous k-tile's MMAs are done: release its stage")
                        for acc in accs:
                            w(f"{acc} = {w.call('acc_fence', acc)}")
                        w(f"if kt > {'kt0' if plan.split else '0'} and leader:")
                        with w.block():
                            _release(w, plan, "prev")
                    w("prev = s")
                    _advance(w, count=False)

                if overlap:
                    nb = plan.store.boxes
                    pro = min(nb, _prologue or nb)      # k-tiles with stores after them, nb // pro boxes each
                                                        # (measured: a box each is 0.5-1.4% faster than two)
                    per = nb // pro
                    w(f"for kt in range({pro}):  # the first k-tiles (K >= 1: k-tile 0 is), each followed by "
                      + (f"{per} boxes" if per > 1 else "a box") + " of the previous tile's C")
                    with w.block():
                        w("if kt == 0 or kt < ktiles:")
                        with w.block():
                            k_tile(first=True)
                        if per > 1:
                            w(f"if pend:  # boxes {per} kt.., while k-tile kt's MMAs run")
                            with w.block():
                                w(f"for j in range({per} * kt, {per} * kt + {per}):")
                                with w.block():
                                    _store_box(w, plan, "packed", "pm0", "pn0", "c")
                        else:
                            w("if pend:  # box kt, while k-tile kt's MMAs run")
                            with w.block():
                                _store_box(w, plan, "packed", "pm0", "pn0", "c", j="kt")
                    w(f"nxt = {var} + ({step})" if " " in step else f"nxt = {var} + {step}")
                    w(f"if nxt < {end}:  # the next tile's corner, while the MMAs run")
                    with w.block():
                        _unit(w, plan, "nxt", ("next_m0", "next_n0"))
                    w(f"for kt in range({pro}, ktiles):")
                else:
                    w(f"for kt in {_kt_range(plan)}:")
                with w.block():
                    k_tile()
                w(w.call("wgmma_wait", "0"))
                for acc in accs:
                    w(f"{acc} = {w.call('acc_fence', acc)}")
                w("if leader:")
                with w.block():
                    if _in_flight == 2:
                        w("if ktiles > 1:")
                        with w.block():
                            w(w.call("mbarrier_arrive", "empty + 8 * prev2"))
                    _release(w, plan, "prev")
                if _epilogue == "cold":      # experiment: the stores kept, never run
                    w("if alpha == 12345.0:")
                    with w.block():
                        _epilogue_code(w, plan, tma)
                elif _epilogue and plan.split:
                    _hand_over(w, plan)
                    w("if finish:")
                    with w.block():
                        _epilogue_code(w, plan, tma, have_accs=True)
                elif overlap:
                    _pack(w, plan)
                elif _epilogue:
                    for i, acc in enumerate(accs):
                        _epilogue_code(w, plan, tma, acc=acc, rows=f"{plan.mblocks} * c + {i}" if len(accs) > 1
                                       else "c")
            if overlap:
                w("if pend:  # the last tile's C")
                with w.block():
                    w(f"for j in range({plan.store.boxes}):")
                    with w.block():
                        _store_box(w, plan, "packed", "pm0", "pn0", "c")
            if tma:
                w("if leader:  # the last tile's stores have completed before the CTA exits")
                with w.block():
                    w(w.call("bulk_wait_group", "0"))
        if plan.cluster > 1:
            w(f"{w.call('cluster_sync')}  # no CTA exits while its peer may still write to it or arrive on it")
    return _module(plan, w)


def _loads_of(w, plan, op, base, r0, multicast=True):
    """The TMA loads of ``op``'s k-tile into stage ``base``: its boxes, each at its corner;
    B of a cluster kernel: the first half's boxes moved by the CTA's rank, multicast."""
    boxes, shared = op.boxes, plan.share == op.name and multicast
    if shared:
        boxes = [bx for bx in boxes if bx[1] < op.rows // 2]
        w(f"# {op.name}: {len(boxes)} box(es) of {op.box[0]}x{op.box[1]} of this CTA's half (rows "
          f"{op.rows // 2} rank) into {op.smem}, multicast to both CTAs")
    else:
        w(f"# {op.name}: {len(boxes)} box(es) of {op.box[0]}x{op.box[1]} into {op.smem}")
    for off, r, k in boxes:
        row = f"{r0} + {r}" if r else r0
        kk = f"k0 + {k}" if k else "k0"
        dst = f"{base} + {off}" if off else base
        if shared:
            row += f" + {op.rows // 2} * rank"
            dst += f" + {half_bytes(op)} * rank"
        c0, c1 = (kk, row) if op.major == "K" else (row, kk)
        if shared:
            w(w.call("tma_load_2d_multicast", f"{dst}, tmap_{op.name.lower()}, {c0}, {c1}, full + 8 * s, 3"))
        else:
            w(w.call("tma_load_2d", f"{dst}, tmap_{op.name.lower()}, {c0}, {c1}, full + 8 * s"))


def _prefetches(w, plan, pf):
    """The producer's L2 prefetches: the boxes of the k-tiles up to ``pf`` ahead of k-tile
    ``it`` (PREFETCH + 1 at the first k-tile, one a k-tile after), following the CTA's tiles."""
    w(f"while pf_it <= it + {pf} and pf_tile < tiles:  # L2 prefetch of k-tile pf_kt of tile pf_tile")
    with w.block():
        w("pk0 = pf_kt * BK")
        for op, r0 in ((plan.a, "pf_m0"), (plan.b, "pf_n0")):
            for off, r, k in op.boxes:
                row = f"{r0} + {r}" if r else r0
                kk = f"pk0 + {k}" if k else "pk0"
                c0, c1 = (kk, row) if op.major == "K" else (row, kk)
                w(w.call("tma_prefetch_2d", f"tmap_{op.name.lower()}, {c0}, {c1}"))
        w("pf_it += 1")
        w("pf_kt += 1")
        w("if pf_kt == ktiles:")
        with w.block():
            w("pf_kt = 0")
            w("pf_tile += cuda.gridDim.x")
            _raster(w, "pf_tile", out=("pf_m0", "pf_n0"))


def _release(w, plan, stage):
    """The consumer's arrival on the empty barrier of ``stage`` (and, in a cluster, the peer's)."""
    w(w.call("mbarrier_arrive", f"empty + 8 * {stage}"))
    if plan.cluster > 1:
        w(w.call("mbarrier_arrive_cluster", f"peer_empty + 8 * {stage}"))


def _advance(w, count=True):
    """The next stage and its phase (and, where ``count``, the count of k-tiles issued)."""
    if count:
        w("it += 1")
    w("s += 1")
    w("if s == STAGES:")
    with w.block():
        w("s = 0")
        w("ph ^= 1")


def _unit_loop(w, plan):
    var, first, end, step = _units(plan)
    w(f"for {var} in range({first}, {end}, {step}):" + ("  # clusters of two CTAs" if plan.cluster > 1 else ""))


def _units(plan):
    """The unit loop's variable, first value, end and step: tiles, pairs of tiles (clusters)
    or (tile, part of K) units (split-K)."""
    if plan.cluster > 1:
        return "pair", "cuda.blockIdx.x >> 1", "pairs", "cuda.gridDim.x >> 1"
    if plan.split:
        return "unit", "cuda.blockIdx.x", "units", "cuda.gridDim.x"
    return "tile", "cuda.blockIdx.x", "tiles", "cuda.gridDim.x"


def _unit(w, plan, unit=None, out=("m0", "n0")):
    """The tile (and, split-K, the part of K) of this unit of work (``unit``: an expression
    for it, else the loop's variable), its corner in ``out``."""
    if plan.split:
        w("if unit < whole:  # a tile of the full waves, whole")
        with w.block():
            w("tile = unit")
            w("part = 0")
            w("kt0 = 0")
            w("kt1 = ktiles")
        w("else:  # a part of a tile of the last wave: k-tiles [kt0, kt1) of it")
        with w.block():
            w("tile = whole + (unit - whole) // splits")
            w("part = unit - whole - (tile - whole) * splits")
            w("kt0 = part * ktiles // splits")
            w("kt1 = (part + 1) * ktiles // splits")
    m0, n0 = out
    if plan.share == "A":
        _raster(w, unit or "pair", "num_m", "GROUP_M", out)
        w(f"{n0} = 2 * {n0} + rank * BN  # this CTA's tile of the pair (columns >= N: zero-filled, never stored)")
    elif plan.cluster > 1:
        _raster(w, unit or "pair", "num_pm", "GROUP_PM", out)
        w(f"{m0} = 2 * {m0} + rank * BM  # this CTA's tile of the pair (rows >= M: zero-filled, never stored)")
    else:
        _raster(w, unit or "tile", out=out)


def _kt_range(plan):
    return "range(kt0, kt1)" if plan.split else "range(ktiles)"


def _hand_over(w, plan):
    """Split-K: store this part's sums, count it; the last part of the tile adds the others'."""
    pairs = plan.acc_regs // 2
    w("# ---- split-K: partial sums through the workspace; the tile's last part finishes it")
    w("wtid = tid & 127  # the thread within its warpgroup")
    w(f"accs = cuda.local.array({plan.acc_regs}, float32)  # indexed by constants once NVVM unrolls the loops")
    w(w.call("acc_to_array", "acc, accs"))
    w("finish = True")
    w("if splits > 1 and tile >= whole:")
    with w.block():
        w("mine = parts + (((tile - whole) * splits + part) * CONSUMERS + c) * PART_BYTES  "
          "# (T128,P) -> 8 B: stride (1,128)")
        w(f"for p in range({pairs}):")
        with w.block():
            w(w.call("st_global_v2_b32", "mine + (p * 128 + wtid) * 8, accs[2 * p], accs[2 * p + 1]"))
        w(f"{w.call('named_barrier_sync', '1 + c, 128')}  # the warpgroup's sums are written")
        w("if leader:  # release them, and learn how many parts came before")
        with w.block():
            w(w.call("st_shared_b32", "ticket + 4 * c, " + w.call("atom_add_acq_rel_gpu",
                                                                   "counts + (tile * CONSUMERS + c) * 4, 1")))
        w(w.call("named_barrier_sync", "1 + c, 128"))
        w(f"finish = {w.call('ld_shared_b32', 'ticket + 4 * c')} == splits - 1  # the last part: the others are written")
        w("if finish:")
        with w.block():
            w("if leader:")
            with w.block():
                w(w.call("st_global_b32", "counts + (tile * CONSUMERS + c) * 4, 0") + "  # ready for the next launch")
            w("for q in range(splits):")
            with w.block():
                w("if q != part:")
                with w.block():
                    w("theirs = parts + (((tile - whole) * splits + q) * CONSUMERS + c) * PART_BYTES")
                    w(f"for p in range({pairs}):")
                    with w.block():
                        w(f"v0, v1 = {w.call('ld_global_cg_v2_b32', 'theirs + (p * 128 + wtid) * 8')}")
                        w(f"accs[2 * p] += {w.call('u32_as_f32', 'v0')}")
                        w(f"accs[2 * p + 1] += {w.call('u32_as_f32', 'v1')}")


def _raster(w, tile="tile", num_m="num_m", group_m="GROUP_M", out=("m0", "n0")):
    """The corner of the tile (an expression) in the grouped raster: ``out`` = (m0, n0)."""
    tile = f"({tile})" if " " in tile else tile     # e.g. "cuda.blockIdx.x >> 1": `>>` binds looser than `//`
    w(f"first_m = ({tile} // group) * {group_m}")
    w(f"rows = min({num_m} - first_m, {group_m})")
    w(f"{out[0]} = (first_m + ({tile} % group) % rows) * BM")
    w(f"{out[1]} = (({tile} % group) // rows) * BN")


def _epilogue_code(w, plan, tma, have_accs=False, acc="acc", rows="c"):
    """The stores of C from the accumulators ``acc`` of the 64-row slice ``rows`` of the CTA
    tile; ``have_accs``: the accumulators are already in the array ``accs``."""
    w(f"# ---- epilogue: C = alpha * {acc} + beta * C, rows [64 ({rows}), +64); accumulators 2p, 2p + 1 are "
      f"adjacent columns")
    if not have_accs:
        w("wtid = tid & 127  # the thread within its warpgroup")
    if tma:
        _tma_store_epilogue(w, plan, have_accs, acc, rows)
    else:
        _direct_epilogue(w, plan, have_accs, acc, rows)


def _tma_store_epilogue(w, plan, have_accs=False, acc="acc", rows="c"):
    st, cfg = plan.store, plan.config
    if not have_accs:
        w(f"accs = cuda.local.array({plan.acc_regs}, float32)  # indexed by constants once NVVM unrolls the loops")
        w(w.call("acc_to_array", f"{acc}, accs"))
    w(f"c_thr = {st.thr_off}  # staging offset of the thread mode of CLayout_64x{cfg.bn}")
    w(f"for j in range({st.boxes}):  # the slice's {st.box[0]}x{st.box[1]} boxes, through {st.buffers} buffers")
    with w.block():
        _store_box(w, plan, "accs", "m0", "n0", rows)


def _pack(w, plan):
    """Overlapped epilogue, at a tile's end: this tile's accumulators times alpha, converted
    into ``packed`` (the next tile's first k-tiles store them)."""
    out = plan.out.name
    w("# ---- epilogue, first half: alpha * acc converted into packed; stored during the next tile's MMAs")
    w(f"accs = cuda.local.array({plan.acc_regs}, float32)  # indexed by constants once NVVM unrolls the loops")
    w(w.call("acc_to_array", "acc, accs"))
    w("if alpha == 1:  # the usual case: no multiplies between the last MMA and the next tile's first")
    with w.block():
        w(f"for p in range({plan.acc_regs // 2}):")
        with w.block():
            w(f"packed[p] = {w.call(f'cvt_{out}x2_f32', 'accs[2 * p], accs[2 * p + 1]')}")
    w("else:")
    with w.block():
        w(f"for p in range({plan.acc_regs // 2}):")
        with w.block():
            w(f"packed[p] = {w.call(f'cvt_{out}x2_f32', 'alpha * accs[2 * p], alpha * accs[2 * p + 1]')}")
    w("pend = True")
    w("pm0 = m0")
    w("pn0 = n0")


def _store_box(w, plan, src, m0, n0, rows, j="j"):
    """Box ``j`` (a name) of a consumer's slice: its register pairs staged in shared memory (from the
    f32 array ``accs`` times alpha, or from the converted pairs ``packed``), then stored by
    one thread with TMA at the slice's corner (``m0``, ``n0``)."""
    st, out = plan.store, plan.out.name
    ob = plan.out.bits // 8
    box_bytes = st.box_elems * ob
    if st.boxes % 2:        # an odd number of boxes a slice: count them, so that consecutive boxes alternate
        w(f"buf = sc_c + (nbox & 1) * {box_bytes}  # the box before the last was stored from here; "
          f"its read completed")
        w("nbox += 1")
    else:
        w(f"buf = sc_c + ({j} & 1) * {box_bytes}  # box {j}-2 was stored from here; its read completed")
    w(f"for q in range({st.box_pairs}):  # the register pairs in box {j}")
    with w.block():
        w(f"p = {st.box_pairs} * {j} + q")
        w(f"o = c_thr + {st.pair_off} - {j} * {st.box_elems}  # the pair's offset in its box")
        w(f"o = {swizzle_code('o', st.swizzle)}  # swizzled: {st.smem} at the pair's (m, n)")
        v = "packed[p]" if src == "packed" else w.call(f"cvt_{out}x2_f32", "alpha * accs[2 * p], alpha * accs[2 * p + 1]")
        w(w.call("st_shared_b32", f"buf + o * {ob}, {v}"))
    w(f"{w.call('fence_proxy_async')}  # the staged box is visible to the TMA unit")
    w(f"if leader:  # box {j}-1's store has read the other buffer, which box {j}+1 fills next")
    with w.block():
        w(w.call("bulk_wait_group_read", "0"))
    w(f"{w.call('named_barrier_sync', '1 + c, 128')}  # this consumer's warpgroup")
    w("if leader:  # TMA clips rows >= M and columns >= N")
    with w.block():
        w(w.call("tma_store_2d", f"tmap_c, buf, {n0} + {st.box[0]} * {j}, {m0} + 64 * ({rows})"))
        w(w.call("bulk_commit_group"))


def _direct_epilogue(w, plan, have_accs=False, acc="acc", rows="c"):
    out = plan.out.name
    ob = plan.out.bits // 8
    w(f"c_row = m0 + 64 * ({rows}) + {plan.thr_row}  # m of the thread mode of CLayout_64x{plan.config.bn}")
    w(f"c_col = n0 + {plan.thr_col}  # n of the thread mode")
    w(f"c_base = C + (int64(c_row) * scm + c_col) * {ob}")
    pairs = plan.acc_regs // 2
    w("if m0 + BM <= M and n0 + BN <= N and beta == 0:  # an interior tile: stores only")
    with w.block():
        if not have_accs:
            w(f"accs = cuda.local.array({plan.acc_regs}, float32)  # indexed by constants once NVVM unrolls the loop")
            w(w.call("acc_to_array", f"{acc}, accs"))
        w(f"for p in range({pairs}):")
        with w.block():
            w(f"addr = c_base + (int64({plan.pair_row}) * scm + {plan.pair_col}) * {ob}")
            _store_pair(w, out, "alpha * accs[2 * p]", "alpha * accs[2 * p + 1]", "addr")
    w("else:  # an edge tile or beta != 0: predicated (the tuple is indexed at run time: slower)")
    with w.block():
        w(f"for p in range({pairs}):")
        with w.block():
            w(f"row = c_row + {plan.pair_row}")
            w(f"col = c_col + {plan.pair_col}")
            w("if row < M:")
            with w.block():
                w(f"addr = C + (int64(row) * scm + col) * {ob}")
                src = "accs" if have_accs else acc
                w(f"v0 = alpha * {src}[2 * p]")
                w(f"v1 = alpha * {src}[2 * p + 1]")
                w("if col + 1 < N:")
                with w.block():
                    w("if beta != 0:")
                    with w.block():
                        w(f"v0 += beta * {_load(w, out, 'addr')}")
                        w(f"v1 += beta * {_load(w, out, f'addr + {ob}')}")
                    _store_pair(w, out, "v0", "v1", "addr")
                w("elif col < N:")
                with w.block():
                    w("if beta != 0:")
                    with w.block():
                        w(f"v0 += beta * {_load(w, out, 'addr')}")
                    _store_one(w, out, "v0", "addr")


def _store_pair(w, out, v0, v1, addr):
    if out in ("f16", "bf16"):
        w(w.call("st_global_b32", f"{addr}, {w.call(f'cvt_{out}x2_f32', f'{v0}, {v1}')}"))
    else:
        w(w.call("st_global_v2_b32", f"{addr}, float32({v0}), float32({v1})"))


def _store_one(w, out, v, addr):
    if out in ("f16", "bf16"):
        w(w.call("st_global_b16", f"{addr}, {w.call(f'cvt_{out}x2_f32', f'{v}, {v}')}"))
    else:
        w(w.call("st_global_b32", f"{addr}, float32({v})"))


def _load(w, out, addr):
    if out == "f16":
        return f"{w.call('unpack_f16x2_f32', w.call('ld_global_b16', addr))}[0]"
    if out == "bf16":
        return w.call("u32_as_f32", "uint32(" + w.call("ld_global_b16", addr) + ") << 16")
    return w.call("u32_as_f32", w.call("ld_global_b32", addr))


def _module(plan, w):
    cfg = plan.config
    used = sorted(w.used)
    head = [
        f'"""Generated Hopper GEMM kernel: C = alpha * A @ B + beta * C ({cfg.dtype} in, f32 accumulate, '
        f'{cfg.out} out).',
        "",
        f"Plan: CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk}, 1 producer + {plan.consumers} consumer warpgroups, "
        f"{cfg.stages} stages, persistent;",
        f"wgmma m64n{cfg.bn}k{plan.instr_k} from shared memory; A {plan.a.major}-major, stage {plan.a.smem}; "
        f"B {plan.b.major}-major, stage {plan.b.smem}.",
        '"""',
        "from numba import cuda, float32, int64, uint8, uint32  # noqa: F401",
        "from codegen.intrinsics import (",
    ]
    line = "   "
    for name in used:
        if len(line) + len(name) + 2 > 96:
            head.append(line.rstrip())
            line = "   "
        line += f" {name},"
    head += [line.rstrip(), ")", ""]
    return "\n".join(head + w.lines) + "\n"

