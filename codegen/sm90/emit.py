"""numba source of the Hopper GEMM kernel of a :class:`~codegen.sm90.plan.WgmmaPlan`.

The kernel is a composition of :mod:`codegen.cute`'s pieces, as a CUTLASS 3 or CuTe DSL
kernel is: the plan's objects (shared storage, pipeline, TMA loads, warpgroup MMA, collective
mainloop, tile scheduler, epilogue) are written out as the module's constants, and the
kernel is persistent and warp-specialized:

* warpgroup 0 is the producer: one thread walks the CTA's work units and issues each
  k-tile's TMA loads into the pipeline's next stage (``MAINLOOP.load``);
* warpgroups 1.. are consumers: each runs the k-tiles' wgmma on its 64 rows of the tile
  (``MAINLOOP.mma_step``), then the epilogue stores them.

Two epilogues, one per kernel: "tma", for 16-bit (and 8-bit float) outputs with ``beta == 0`` and a tensor map
of C, stages C in shared memory and stores it by TMA, asynchronously; "registers", for the
rest, stores from registers, two columns a store; "elements" stores from registers one
element at a time, for a C whose row stride is odd. Without split-K or clusters, the "tma" kernel overlaps each
tile's epilogue with the next tile's first k-tiles: a consumer converts its finished
accumulators into packed pairs of the output type and starts the next tile at once (its first wgmma
ignores the old accumulators), and stores one box of the previous tile after each of the
next tile's first k-tiles, while their MMAs run. On the H100 this took the f16 kernel from
0.94 to 1.00 of cuBLAS at 4096x4096x1024 (interleaved timing, 2026-11-26).

The launcher picks the kernel per call and compiles each only when a call first needs it.
"""

from __future__ import annotations

from dataclasses import fields, replace

from .args import gemm_args
from .plan import WgmmaPlan

__all__ = ["emit_wgmma_source", "KERNEL_NAME", "overlaps_epilogue"]

KERNEL_NAME = "gemm_sm90_kernel"


def overlaps_epilogue(plan, epilogue):
    """Whether the kernel overlaps a tile's epilogue with the next tile's MMAs: a "tma"
    epilogue without split-K or clusters (with clusters it measured no faster on the H100:
    0.976 against 0.975 of cuBLAS at 4096^3, 1.021 against 1.026 at 8192^3, f16, 2026-11-26)."""
    return epilogue == "tma" and not plan.split and plan.cluster == 1


def _define(name, obj, names, comment=""):
    """``NAME = Class(field=value, ...)``: objects already defined are named, not repeated."""
    args = []
    for f in fields(obj):
        v = getattr(obj, f.name)
        args.append(f"{f.name}={names[id(v)] if id(v) in names else repr(v)}")
    names[id(obj)] = name
    out = [f"# {comment}"] if comment else []
    line = f"{name} = {type(obj).__name__}("
    for k, a in enumerate(args):
        a += ")" if k == len(args) - 1 else ","
        if len(line) + 1 + len(a) > _WIDTH and not line.endswith("("):
            out.append(line)
            line = "    " + a
        else:
            line += ("" if line.endswith("(") else " ") + a
    return out + [line]


_WIDTH = 110


_PRODUCER = '''

@cuda.jit(device=True, inline="always")
def producer(p):
    """{doc}"""
    MAINLOOP.prepare_maps(p)
    state = PIPELINE.producer_start()
    sched = SCHEDULER.params(p)
    for unit in SCHEDULER.units(sched):
        work = SCHEDULER.work(sched, unit)
{loads}'''

#: The producer's loads of a work unit: one thread's TMA loads, k-tile by k-tile; or, where the
#: producer warpgroup copies an operand, every thread's (thread 0 issuing the TMA loads).
_TMA_LOADS = '''        for kt in range(work.kt0, work.kt1):
            state = MAINLOOP.load(p, state, work, kt)
'''
_COPY_LOADS = '''        state = MAINLOOP.load_unit(p, state, work)  # every thread; a copied operand a k-tile ahead
'''

_CONSUMER_HEAD = '''

@cuda.jit(device=True, inline="always")
def consumer(p, c):
    """{doc}"""
    EPILOGUE.prepare(p)
{alpha}
    peer = MAINLOOP.peer_empty()
    state = PIPELINE.consumer_start()
    prev = state
    acc = MMA.zero()  # {clay}: (T128,V{nreg}) -> (m,n)
    accs = cuda.local.array(MMA.acc_regs, float32)  # the same, indexed by constants once NVVM unrolls
    nbox = 0  # C boxes stored so far
    sched = SCHEDULER.params(p)'''

_CONSUMER_TILE = '''
    for unit in SCHEDULER.units(sched):
        work = SCHEDULER.work(sched, unit)
        for kt in range(work.kt0, work.kt1):
            acc, state, prev = MAINLOOP.mma_step(p, acc, state, prev, c, kt == work.kt0, peer)
        acc = MAINLOOP.mma_tail(acc, prev, peer)
        MMA.to_array(acc, accs)
{store}{finish}    EPILOGUE.drain()
'''

_CONSUMER_OVERLAP = '''
    packed = cuda.local.array(EPILOGUE.pairs, uint32)  # the finished tile's C as pairs of the output type
    pend = False  # packed holds a tile not yet stored
    work = SCHEDULER.work_at(sched, SCHEDULER.first())  # each tile finds the next one's corner during its MMAs
    done = work  # the tile in packed
    for unit in SCHEDULER.units(sched):
        for kt in range(EPILOGUE.boxes):  # the first k-tiles, unrolled, each followed by a box of the last tile
            if kt == 0 or kt < work.kt1:
                acc, state, prev = MAINLOOP.mma_step(p, acc, state, prev, c, kt == 0, peer)
            if pend:
                nbox = EPILOGUE.store_box(p, packed, done, c, kt, nbox)
        nxt = SCHEDULER.work_at(sched, unit + SCHEDULER.stride())
        for kt in range(EPILOGUE.boxes, work.kt1):
            acc, state, prev = MAINLOOP.mma_step(p, acc, state, prev, c, False, peer)
        acc = MAINLOOP.mma_tail(acc, prev, peer)
        MMA.to_array(acc, accs)
{apply}{pack}        work = nxt
    if pend:  # the last tile's C
        for j in range(EPILOGUE.boxes):
            nbox = EPILOGUE.store_box(p, packed, done, c, j, nbox)
{finish}    EPILOGUE.drain()
'''

_PACK = '''        EPILOGUE.pack(accs, {alpha}, packed)  # no multiplies when alpha == 1
        pend = True
        done = work
'''

_PACK_GROUPED = '''        EPILOGUE.pack(accs, {alpha}, packed)  # C as 16-bit pairs
        if work.m0 + SCHEDULER.bm <= work.rows:  # inside its group: out by TMA during the next tile
            pend = True
            done = work
        else:  # its group ends inside it: out now, from registers, up to the group's end
            REG_EPILOGUE.store_packed(p, packed, work, c)
            pend = False
'''

_KERNEL = '''

{def_line}
    """{doc}"""
    {pack}
    PIPELINE.init()  # every thread waits until the barriers exist
    if cuda.threadIdx.x < 128:  # warpgroup 0: the producer
{producer}
    else:  # warpgroups 1..{consumers}: the consumers, 64 rows of the tile each
{consumer}
    PIPELINE.finish()
'''

_PRODUCER_TMA = '''        setmaxnreg_dec({preg})
        if cuda.threadIdx.x == 0:
            producer(p)'''

_PRODUCER_COPY = '''        producer(p)  # thread 0 issues the TMA loads; every thread copies {copied}'''


def _kernel_branches(plan):
    """The producer's and the consumers' branches of the kernel: registers moved to the
    consumers (``setmaxnreg``), one producer thread issuing TMA; or, where the producer
    warpgroup copies an operand, every warpgroup at the launch's registers."""
    parts = plan.device
    copied = " and ".join(x.name for x in plan.operands if x.copied)
    consumer = "        consumer(p, (cuda.threadIdx.x >> 7) - 1)"
    if copied:
        return _PRODUCER_COPY.format(copied=copied), consumer
    return (_PRODUCER_TMA.format(preg=parts.producer_regs),
            f"        setmaxnreg_inc({parts.consumer_regs})\n" + consumer)


def emit_wgmma_source(plan: WgmmaPlan, epilogue=None, user=None):
    """Source of the kernel module with ``epilogue`` "tma" (a 16-bit or 8-bit float C staged in shared
    memory and stored by TMA: the launch passes a map of C and ``beta == 0``), "registers"
    (stores from registers) or "elements" (from registers, element by element: C of any
    row stride); None: "tma" where the plan stages C. ``user``: a
    :class:`~codegen.epilogue_fn.EpilogueFunction` applied to the accumulators before the
    store (the plan then has no fused bias or activation)."""
    parts, cfg = plan.device, plan.config
    epilogue = epilogue or ("tma" if parts.tma_epilogue is not None else "registers")
    if epilogue not in ("tma", "registers", "elements") or (epilogue == "tma" and parts.tma_epilogue is None):
        raise ValueError(f"emit_wgmma_source: epilogue {epilogue!r} is not one of 'registers', 'elements'"
                         + (", 'tma'" if parts.tma_epilogue is not None else f" (no TMA store for a {plan.out.name} C)"))
    epi = parts.tma_epilogue if epilogue == "tma" else parts.reg_epilogue
    if epilogue == "elements":
        epi = replace(epi, paired=False)
    if user is not None and parts.op is not None:
        raise ValueError("emit_wgmma_source: a user epilogue and a fused bias or activation exclude each other")
    lines = ["\n".join(_header(plan, epilogue, user) + _constants(plan, epi))]
    if user is not None:
        lines.append(_user_epilogue(plan, user))
    if any(x.copied for x in plan.operands):
        lines.append(_PRODUCER.format(loads=_COPY_LOADS, doc="The producer warpgroup fills the stages of every "
                                      "k-tile of the CTA's work units: thread 0\n    issues the TMA loads, every "
                                      "thread copies its part of the operand TMA cannot read."))
    else:
        lines.append(_PRODUCER.format(loads=_TMA_LOADS, doc="One thread issues the TMA loads of every k-tile of the "
                                      "CTA's work units."))
    alpha_line = ("    alpha = float32(1.0)  # each tile's: group_alpha, its group's scales" if cfg.grouped else
                  "    alpha = epilogue_alpha(p)  # p.alpha times the scales the kernel reads (fp8)")
    head = _CONSUMER_HEAD.format(doc=_consumer_doc(plan, epilogue), clay=f"CLayout_64x{cfg.bn}", nreg=plan.acc_regs,
                                 alpha=alpha_line)
    op = parts.op is not None or user is not None or parts.out_scale is not None
    alpha = "1.0" if op else "alpha"                    # a fused operation applies alpha itself
    apply = ""
    if cfg.grouped:                                 # (no fused operation: GemmConfig refuses one)
        apply = "        alpha = group_alpha(p, work.l)  # p.alpha times group l's scales of A and B (fp8)\n"
    if user is not None:
        apply = ("        USER.apply(p, user_epilogue, epilogue_tensors(p), accs, work, c, alpha)"
                 "  # f(alpha * acc, m, n, *epilogue_args)\n")
    elif parts.op is not None:
        apply = f"        OP.apply(p, accs, work, c, alpha)  # act(alpha * acc + bias[{'m' if cfg.bias_rows else 'n'}])\n"
    finish = ""
    if parts.out_scale is not None:
        apply += (f"        amax = SCALE_OUT.apply(p, accs, work, c, {'1.0' if apply else 'alpha'}, amax)"
                  f"  # times the output scale; the largest |value| inside C so far\n")
        head += "\n    amax = float32(0.0)  # the largest |value| of this thread's elements of C"
        finish = "    SCALE_OUT.publish(p, amax)  # the warp's amax: one atomic maximum\n"
    if overlaps_epilogue(plan, epilogue):
        pack = _PACK_GROUPED if cfg.grouped else _PACK
        lines.append(head + _CONSUMER_OVERLAP.format(apply=apply, pack=pack.format(alpha=alpha), finish=finish))
    else:
        store = f"        nbox = EPILOGUE.store_tile(p, acc, accs, work, c, nbox, {alpha})\n"
        if cfg.grouped and epilogue == "tma":       # TMA clips at C's edges only, not at a group's end
            store = (f"        if work.m0 + SCHEDULER.bm <= work.rows:  # inside its group: by TMA\n    {store}"
                     f"        else:  # its group ends inside it: from registers, up to the group's end\n"
                     f"            nbox = REG_EPILOGUE.store_tile(p, acc, accs, work, c, nbox, {alpha})\n")
        if op:
            store = apply + "        acc = MMA.from_array(accs)\n" + store
        elif cfg.grouped:
            store = apply + store
        if plan.split:
            store = ("        if SCHEDULER.fixup(p, sched, work, accs, c):  # split-K: the tile's last part finishes it\n"
                     + ("" if op else "            acc = MMA.from_array(accs)  # with the other parts' sums\n")
                     + "".join("    " + ln + "\n" for ln in store.splitlines()))
        lines.append(head + _CONSUMER_TILE.format(store=store, finish=finish))
    args = gemm_args(user is not None)
    producer, consumer = _kernel_branches(plan)
    lines.append(_KERNEL.format(def_line=args.def_line(KERNEL_NAME), pack=args.pack_line(),
                                doc="The arguments: codegen.sm90.args.", producer=producer, consumer=consumer,
                                consumers=plan.consumers))
    return "\n\n\n".join(c.strip("\n") for c in lines) + "\n"


def _user_epilogue(plan, user):
    """The user's function and the tensors it reads (:func:`codegen.epilogue_fn.epilogue_source`),
    and the :class:`~codegen.cute.ElementwiseEpilogue` that applies it to the accumulators."""
    from ..cute import make_elementwise_epilogue
    from ..epilogue_fn import epilogue_source

    ew = make_elementwise_epilogue(plan.config.bn)
    return (epilogue_source(user) + "\n\n# CLayout_64xN's (T128) -> m, n and (P) -> m, n: the position in C of each "
            "accumulator pair\n" + "\n".join(_define("USER", ew, {})))


def _consumer_doc(plan, epilogue):
    if overlaps_epilogue(plan, epilogue):
        return ("Consumer warpgroup c: wgmma on its 64 rows of each tile; a tile's C waits in registers, packed,\n"
                "    and goes out during the next tile's first k-tiles, while their MMAs run.")
    return f"Consumer warpgroup c: wgmma on its 64 rows of each tile, then the {epilogue} epilogue."


def _header(plan, epilogue, user=None):
    cfg, a, b = plan.config, plan.a, plan.b
    sched = "split-K units" if plan.split else ("pairs of tiles in clusters of two" if plan.cluster > 1 else "tiles")
    return [
        f'"""Generated Hopper GEMM kernel: C = alpha * A @ B + beta * C ({cfg.dtype} in, f32 accumulate, '
        f'{cfg.out} out).',
        "",
        f"Plan: CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk}, 1 producer + {plan.consumers} consumer warpgroups, "
        f"{cfg.stages} stages; persistent CTAs walk {sched}, GROUP_M {cfg.group_m};",
        f"wgmma m64n{cfg.bn}k{plan.instr_k} from shared memory; A {a.major}-major, stage {a.smem};",
        f"B {b.major}-major, stage {b.smem}; {epilogue} epilogue"
        + (", overlapping the next tile's MMAs." if overlaps_epilogue(plan, epilogue) else "."),
        '"""',
        "from numba import cuda, float32, uint32  # noqa: F401",
        "",
        "from codegen.cute import (  # noqa: F401",
        "    BiasActivation, GmemStageCopy, OutputScale, RegisterEpilogue, SharedStorage, TileScheduler, TmaLoad,",
        "    TmaPipeline, TmaStore,",
        "    TmaStoreEpilogue, epilogue_alpha, group_alpha,",
        "    WgmmaMainloop, WgmmaMMA, setmaxnreg_dec, setmaxnreg_inc,",
        ")",
        *(["import numpy as np", "from codegen import cute", "from codegen.cute import ElementwiseEpilogue"]
          if user is not None else []),
        f"from codegen.sm90.args import {gemm_args(user is not None).name}",
        "from layoutalg import ComposedLayout, Layout, Swizzle  # noqa: F401",
        "",
    ]


def _load_comment(x):
    if x.copied:
        return (f"{x.name} copied by the producer warpgroup into its stage {x.smem}: (rows, BK) -> offset, "
                f"16-byte chunks along its contiguous dimension")
    return f"TMA boxes of {x.name}'s stage {x.smem}: (rows, BK) -> offset"


def _constants(plan, epi):
    parts, cfg, a, b = plan.device, plan.config, plan.a, plan.b
    names = {}
    out = []
    defs = [
        ("STORAGE", parts.storage, "shared memory from a 1024-byte aligned base: stages of A and B, C staging, "
                                   "barriers"),
        ("PIPELINE", parts.pipeline, f"{cfg.stages} stages of A and B; a full and an empty mbarrier each"),
        ("LOAD_A", parts.load_a, _load_comment(a)),
        ("LOAD_B", parts.load_b, _load_comment(b)),
        ("MMA", parts.mma, f"wgmma m64n{cfg.bn}k{plan.instr_k}, descriptors from gmma_desc of the stages"),
        ("MAINLOOP", parts.mainloop, "the producer's loads and the consumers' MMAs over the pipeline"),
        ("SCHEDULER", parts.scheduler, "the CTA's work units and their tiles"),
        ("EPILOGUE", epi, f"CLayout_64x{cfg.bn} (T128,V{plan.acc_regs}) -> (m,n), out to C"),
    ]
    if cfg.grouped and epi is not parts.reg_epilogue:
        defs.append(("REG_EPILOGUE", parts.reg_epilogue, "the tiles a group's end cuts: from registers, up to it"))
    if parts.op is not None:
        defs.append(("OP", parts.op, f"act(alpha * acc + bias[{'m' if cfg.bias_rows else 'n'}]): activation "
                                     f"{cfg.activation}, bias {cfg.bias}"))
    if parts.out_scale is not None:
        defs.append(("SCALE_OUT", parts.out_scale, f"an {cfg.out} C: amax and output scale; CLayout_64x{cfg.bn}'s "
                                                   f"(T128) -> m, n and (P) -> m, n"))
    for name, obj, comment in defs:
        out += _define(name, obj, names, comment)
    return out
