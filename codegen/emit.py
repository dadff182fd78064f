"""Turn a :class:`~codegen.plan.GemmPlan` into numba.cuda source.

The kernel reads top to bottom like a hand-written one: constants, rasterization,
the per-thread parts of every copy, the prologue, the main loop over k-tiles and
k-blocks, and the epilogue.  Loops have constant trip counts (copies per thread,
MMA atoms per warp, k-blocks, accumulator values); NVVM unrolls them, so every
index the plan derived becomes a constant or a register after unrolling.  Each
index carries a comment naming the layout it came from.  The emitter only reads
the plan; the intrinsics it imports are exactly those the kernel calls.

Kernel arguments (:func:`codegen.args.mma_sync_args`, declared once) are raw global byte
addresses of A, B and C (64-bit integers), the problem size, element strides, alpha and beta.
"""

from __future__ import annotations

from layoutalg import ComposedLayout

from .args import mma_sync_args
from .index import log2, pow2
from .plan import CopyKind, GemmPlan

__all__ = ["emit_source", "KERNEL_NAME"]

KERNEL_NAME = "gemm_kernel"


class _Writer:
    """Lines of source with indentation, and the intrinsics they call."""

    def __init__(self):
        self.lines = []
        self.ind = 0
        self.used = set()

    def __call__(self, s=""):
        self.lines.append(("    " * self.ind + s) if s else "")

    def call(self, name, args):
        """Code calling intrinsic ``name``; records it for the import line."""
        self.used.add(name)
        return f"{name}({args})"

    def block(self):
        w = self

        class _Block:
            def __enter__(self_):
                w.ind += 1

            def __exit__(self_, *a):
                w.ind -= 1

        return _Block()


def _mod(x, n):
    return f"({x}) & {n - 1}" if pow2(n) else f"({x}) % {n}"


def _swz(lay):
    sw = lay.outer if isinstance(lay, ComposedLayout) else None
    return sw if sw is not None and sw.bits else None


def _inner(lay):
    return lay.inner if isinstance(lay, ComposedLayout) else lay


class _Emitter:
    def __init__(self, plan: GemmPlan):
        self.plan = plan
        self.cfg = plan.config
        self.w = _Writer()
        self.eb = plan.pipeline.elem_bytes

    # ---- whole kernel ---------------------------------------------------
    def source(self):
        p, w = self.plan, self.w
        self.header_constants()
        w("")
        w("")
        w(mma_sync_args(self.cfg.dtype).def_line(KERNEL_NAME))
        with w.block():
            w('"""A, B, C: global byte addresses.  A is (M,K) with element strides (sam, sak); B is')
            w("(K,N), addressed as its (N,K) view with strides (sbn, sbk); C is (M,N) with (scm, scn).")
            w('"""')
            w(f"smem = cuda.shared.array(0, {p.etype.storage})")
            w(f"smem_base = {w.call('smem_addr', 'smem, 0')}  # 32-bit shared address of the dynamic buffer")
            w("tid = cuda.threadIdx.x")
            w("")
            self.rasterize()
            for op in p.operands:
                w("")
                self.g2s_setup(op)
            for op in p.operands:
                w("")
                self.s2r_setup(op)
            w("")
            self.registers()
            w("")
            self.prologue()
            w("")
            self.main_loop()
            w("")
            self.epilogue()
        return self.module_text()

    def module_text(self):
        p, cfg = self.plan, self.cfg
        used = sorted(self.w.used)
        mma = p.mma.tiled_mma
        doc = [
            f'"""Generated GEMM kernel: C = alpha * A @ B + beta * C ({cfg.dtype} in, f32 accumulate, '
            f'{cfg.out} out).',
            "",
            f"Plan: CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.threads} threads, {cfg.stages} shared-memory stages;",
            f"tiled MMA {mma.atom.name} with thr_layout_vmnk {mma.thr_layout_vmnk}.",
            f"A: {p.a.major}-major, smem stage {p.a.smem}; B: {p.b.major}-major, smem stage {p.b.smem}.",
            '"""',
            "from numba import cuda, float32, float64, int64, uint16, uint32, uint64  # noqa: F401",
            f"from numba.core.types import {p.etype.storage}  # noqa: F401" if p.etype.storage == "float16"
            else f"from numba import {p.etype.storage}  # noqa: F401",
            "from codegen.intrinsics import (",
        ]
        line = "   "
        for name in used:
            if len(line) + len(name) + 2 > 96:
                doc.append(line.rstrip())
                line = "   "
            line += f" {name},"
        doc.append(line.rstrip())
        doc.append(")")
        doc.append("")
        return "\n".join(doc + self.w.lines) + "\n"

    def header_constants(self):
        p, w, cfg = self.plan, self.w, self.cfg
        pipe = p.pipeline
        w(f"BM, BN, BK = {cfg.bm}, {cfg.bn}, {cfg.bk}  # CTA tile")
        w(f"STAGES, THREADS, GROUP_M = {cfg.stages}, {cfg.threads}, {cfg.group_m}")
        w(f"KBLOCKS, MMA_M, MMA_N = {pipe.kblocks}, {p.mma.mma_m}, {p.mma.mma_n}  "
          f"# k-blocks per k-tile; MMA atoms per thread along M and N")
        w(f"A_STAGE, B_STAGE = {pipe.a_stage}, {pipe.b_stage}  # elements of one stage: cosize of the smem layouts")
        w(f"B_OFFSET = {pipe.b_offset}  # B's stages follow A's")
        w(f"SMEM_BYTES = {pipe.smem_bytes}")

    # ---- rasterization ---------------------------------------------------
    def rasterize(self):
        w = self.w
        w("# ---- rasterize: CTAs in groups of GROUP_M tile rows, for L2 reuse ---------------")
        w("num_m = (M + BM - 1) // BM")
        w("num_n = (N + BN - 1) // BN")
        w("pid = cuda.blockIdx.x")
        w("group = GROUP_M * num_n")
        w("first_m = (pid // group) * GROUP_M")
        w("rows = min(num_m - first_m, GROUP_M)")
        w("m0 = (first_m + (pid % group) % rows) * BM")
        w("n0 = ((pid % group) // rows) * BN")
        w("ktiles = (K + BK - 1) // BK")
        w("kres = ktiles * BK - K  # K residue first: k-tile t covers k in [t*BK - kres, (t+1)*BK - kres),")
        w("#                          so only k-tile 0 can be partial and the main loop needs no K predicate")

    # ---- global -> shared ---------------------------------------------------
    def g2s_setup(self, op):
        w, g = self.w, op.g2s
        x = op.name.lower()
        rows, r0 = ("M", "m0") if op.name == "A" else ("N", "n0")
        srow, sk = ("sam", "sak") if op.name == "A" else ("sbn", "sbk")
        sw = _swz(op.smem)
        w(f"# ---- global -> shared, {op.name} ({op.major}-major): {g.copies} x {g.atom.name} "
          f"({g.vec} elements) per thread per k-tile")
        w(f"# tidfrg_S(identity ({op.rows},BK)) = {g.src}  (Thr,FrgV,Rest) -> (row,k)")
        w(f"# tidfrg_D(smem)                = {g.dst}  (Thr,FrgV,Rest) -> offset")
        w(f"{x}_row = {g.thr_row}  # row of mode Thr")
        w(f"{x}_k = {g.thr_k}  # k of mode Thr")
        w(f"{x}_thr = {g.smem.thr}  # smem offset of mode Thr")
        w(f"{x}_sw = {_sw_code(f'{x}_thr', sw)}  # {sw or 'no swizzle'}")
        if g.kind is CopyKind.CP_ASYNC:
            last = f"{rows} - 1" if op.major == "K" else f"{rows} - {g.vec}"
            w(f"{x}_gp = cuda.local.array({g.copies}, int64)  # global byte address of each copy, per k-tile")
            w(f"for i in range({g.copies}):  # mode Rest: copy i")
            with w.block():
                w(f"row = min({r0} + {x}_row + {g.row}, {last})  # rows past {rows} are clamped: never stored")
                kcol = _sum(f"{x}_k", g.k.code)
                w(f"{x}_gp[i] = {op.name} + (int64(row) * {srow} + int64({kcol} - kres) * {sk}) * {self.eb}")
            w(f"{x}_ktile = {sk} * {self.cfg.bk * self.eb}  # bytes per k-tile")

    def tile_load(self, op, ktile, stage, first):
        """Copy k-tile ``ktile`` of one operand into smem stage ``stage``."""
        w, g = self.w, op.g2s
        x = op.name.lower()
        base = f"{stage} * {op.name}_STAGE" + (" + B_OFFSET" if op.name == "B" else "")
        w(f"{x}_ws = smem_base + ({base}) * {self.eb}  # shared bytes of the stage")
        if g.kind is CopyKind.CP_ASYNC:
            n = g.nbytes
            w(f"for i in range({g.copies}):")
            with w.block():
                dst = f"{x}_ws + ({g.smem.code(f'{x}_sw', 0, f'{x}_thr')}) * {self.eb}"
                if first:
                    kcol = _sum(f"{x}_k", g.k.code)
                    w(f"ok = ({ktile} > 0) | ({kcol} >= kres)  # k >= 0: only k-tile 0 can be partial")
                    w(w.call(g.intrinsic, f"{dst}, {op.name} + ok * ({x}_gp[i] - {op.name}), ok * {n}")
                      + f"  # not ok: reads 0 bytes at {op.name}, zero-fills")
                else:
                    w(w.call(g.intrinsic, f"{dst}, {x}_gp[i], {n}"))
                w(f"{x}_gp[i] += {x}_ktile")
            return
        # element-wise: every element predicated and zero-filled
        rows = "M" if op.name == "A" else "N"
        r0 = "m0" if op.name == "A" else "n0"
        srow, sk = ("sam", "sak") if op.name == "A" else ("sbn", "sbk")
        bits = self.plan.etype.bits
        w(f"k0 = {ktile} * BK - kres")
        w(f"for i in range({g.copies}):")
        with w.block():
            w(f"gr = {r0} + {x}_row + {g.row}")
            w(f"gk = k0 + {x}_k + {g.k}")
            w(f"sa = {x}_ws + ({g.smem.code(f'{x}_sw', 0, f'{x}_thr')}) * {self.eb}")
            w(f"for v in range({g.vec}):  # the vector runs along {'k' if op.major == 'K' else 'the rows'}")
            with w.block():
                r, k = ("gr", "gk + v") if op.major == "K" else ("gr + v", "gk")
                w(f"ok = {r} < {rows} and 0 <= {k} < K")
                load = w.call(f"ld_global_b{bits}", f"{op.name} + (int64({r}) * {srow} + int64({k}) * {sk}) * {self.eb}")
                # the zero has the load's type: numba unifies uint64 with int64 as float64
                zero = {16: "uint16(0)", 32: "uint32(0)", 64: "uint64(0)"}[bits]
                w(w.call(f"st_shared_b{bits}", f"sa + v * {self.eb}, {load} if ok else {zero}"))

    # ---- shared -> registers ---------------------------------------------
    def s2r_setup(self, op):
        w, s = self.w, op.s2r
        x = op.name.lower()
        sw = _swz(op.smem)
        w(f"# ---- shared -> registers, {op.name}: {s.atom.name}, {s.copies} copies per k-block")
        w(f"# tidfrg_S(smem) of make_tiled_copy_{op.name} = {s.src}  (Thr,FrgV,(CpyR,CpyK)) -> offset")
        w(f"{x}_rthr = {s.smem.thr}  # smem offset of mode Thr")
        w(f"{x}_rsw = {_sw_code(f'{x}_rthr', sw)}  # {sw or 'no swizzle'}")

    def frag_load(self, op, buf):
        """Load k-block ``kb`` (a variable) of one operand's fragments into register buffer
        ``buf`` (0 or 1, or code for it)."""
        w, s = self.w, op.s2r
        x = op.name.lower()
        frag = f"{x}_frag"
        w(f"for r in range({s.copies}):  # copy (r, kb) of mode (CpyR,CpyK)")
        with w.block():
            word = _sum(s.word.code, _buf_words(buf, s.words))
            w(f"f = {word}  # fragment word of copy r in buffer {buf}: retiled fragment {s.frag}")
            if s.kind is CopyKind.LDMATRIX:
                off = s.smem.code(f"{x}_rsw", 0, f"{x}_rthr")
                w(w.call(_frag_form(s.intrinsic), f"{frag}, f, {x}_rs + ({off}) * {self.eb}")
                  + f"  # words f..f+{len(s.value_words) - 1}")
            else:   # one shared load per register; f32 and f64 registers hold the values
                conv = {"f32": "u32_as_f32", "f64": "u64_as_f64"}.get(self.plan.etype.name)
                for j, c in zip(s.value_words, s.value_offsets):
                    off = s.smem.code(f"{x}_rsw", c, f"{x}_rthr")
                    load = w.call(s.intrinsic, f"{x}_rs + ({off}) * {self.eb}")
                    w(f"{frag}[{_sum('f', str(j))}] = {w.call(conv, load) if conv else load}  # value +{c}")

    # ---- registers ---------------------------------------------------------
    def registers(self):
        p, w = self.plan, self.w
        fty = self.frag_type()
        acc_t = "float64" if p.etype.name == "f64" else "float32"
        w("# ---- registers: A/B fragments double-buffered across k-blocks; accumulators ------")
        for op in p.operands:
            n = op.s2r.words
            w(f"{op.name.lower()}_frag = cuda.local.array({2 * n}, {fty})  # buffers 0 and 1 of {n} words: "
              f"one k-block of fragment {op.s2r.frag}")
        w(f"acc = cuda.local.array({p.epilogue.acc_size}, {acc_t})  # (MMA,(MMA_M,MMA_N)) {p.mma.acc_layout}")
        w(f"for i in range({p.epilogue.acc_size}):")
        with w.block():
            w("acc[i] = 0.0")

    def frag_type(self):
        e = self.plan.etype.name
        return {"f64": "float64", "f32": "float32"}.get(e, "uint32")

    # ---- prologue and main loop ---------------------------------------------
    def prologue(self):
        w, S = self.w, self.cfg.stages
        w("# ---- prologue: fill STAGES-1 shared-memory stages ------------------------------")
        w("for s in range(STAGES - 1):")
        with w.block():
            w("if s < ktiles:")
            with w.block():
                for op in self.plan.operands:
                    self.tile_load(op, "s", "s", first=True)
            w(self.w.call("cp_async_commit", ""))
        w(self.w.call("cp_async_wait_group", f"{S - 2}"))
        w("cuda.syncthreads()")
        w("")
        w("read_stage = 0")
        w("write_stage = STAGES - 1")
        w("next_k = STAGES - 1")
        self.read_bases()
        w("kb = 0")
        for op in self.plan.operands:
            self.frag_load(op, "0")

    def read_bases(self):
        w = self.w
        w(f"a_rs = smem_base + read_stage * (A_STAGE * {self.eb})  # shared bytes of A's read stage")
        w(f"b_rs = smem_base + (read_stage * B_STAGE + B_OFFSET) * {self.eb}  # B's read stage")

    def main_loop(self):
        w = self.w
        # A loop over k-blocks must not index the fragments at run time (that puts them in
        # local memory). NVVM unrolls a loop only when the unrolled code is small enough:
        #   - up to 32 shared->register loads per k-tile (ldmatrix, or a few scalar loads),
        #     the k-block loop stays a loop and NVVM unrolls it;
        #   - otherwise, up to 4 k-blocks are written out here, each a constant;
        #   - otherwise the k-blocks go two at a time, each half with fixed register buffers,
        #     and the loop stays rolled (compact, but slower).
        kblocks = self.plan.pipeline.kblocks
        loads = kblocks * sum(op.s2r.copies * (1 if op.s2r.kind is CopyKind.LDMATRIX else len(op.s2r.value_words))
                              for op in self.plan.operands)
        w("# ---- main loop: k-tiles, and k-blocks with register double buffering ------------")
        w("for kt in range(ktiles):")
        with w.block():
            if loads <= 32:
                w("for kblock in range(KBLOCKS):")
                with w.block():
                    self.kblock_body("kblock & 1", "(kblock + 1) & 1")
            elif kblocks <= 4:
                for kb in range(kblocks):
                    w(f"kblock = {kb}  # k-blocks written out: see the emitter's main_loop")
                    self.kblock_body(str(kb & 1), str((kb + 1) & 1), kb)
            else:
                w("for kb2 in range(KBLOCKS // 2):  # two k-blocks: MMAs on one register buffer, loads into the other")
                with w.block():
                    for half in (0, 1):
                        w(f"kblock = 2 * kb2 + {half}" if half else "kblock = 2 * kb2")
                        self.kblock_body(str(half), str(1 - half))
        w(self.w.call("cp_async_wait_all", ""))

    def kblock_body(self, mma_buf, load_buf, known=None):
        """One k-block; ``known``: its index when it is a constant (only the branches that
        apply to it are written)."""
        w, S = self.w, self.cfg.stages
        last = self.plan.pipeline.kblocks - 1
        if known is None or known == last:
            if known is None:
                w("if kblock == KBLOCKS - 1:  # the next stage has landed: move the read stage")
            else:
                w("if True:  # the last k-block: the next stage has landed, move the read stage")
            with w.block():
                w(self.w.call("cp_async_wait_group", f"{S - 2}"))
                w("cuda.syncthreads()")
                w("read_stage = read_stage + 1 if read_stage + 1 < STAGES else 0")
                self.read_bases()
        w(f"kb = {_mod('kblock + 1', self.plan.pipeline.kblocks)}  # the k-block loaded next")
        for op in self.plan.operands:
            self.frag_load(op, load_buf)
        if known is None or known == 0:
            w("if kblock == 0:" if known is None else "if True:  # k-block 0: prefetch")
            with w.block():
                w("if next_k < ktiles:  # prefetch k-tile next_k into write_stage")
                with w.block():
                    for op in self.plan.operands:
                        self.tile_load(op, "next_k", "write_stage", first=False)
                w(self.w.call("cp_async_commit", ""))
                w("write_stage = write_stage + 1 if write_stage + 1 < STAGES else 0")
                w("next_k += 1")
        self.mma(mma_buf)

    def mma(self, buf):
        w, m = self.w, self.plan.mma
        p = self.plan
        w(f"# MMAs of this k-block: {m.mma_m} x {m.mma_n} atoms, serpentine over M so B stays in registers")
        w("for n in range(MMA_N):")
        with w.block():
            w("for mm in range(MMA_M):")
            with w.block():
                if pow2(m.mma_m):
                    w("m = mm ^ ((n & 1) * (MMA_M - 1))  # odd n: M backwards")
                else:
                    w("m = mm if n % 2 == 0 else MMA_M - 1 - mm")
                w(f"fa = {_sum(m.a_word.code, _buf_words(buf, p.a.s2r.words))}  # A fragment words of atom m, buffer {buf}")
                w(f"fb = {_sum(m.b_word.code, _buf_words(buf, p.b.s2r.words))}  # B fragment words of atom n")
                w(f"c = {_sum(m.acc_m.code, m.acc_n.code)}  # accumulators of atom (m, n): {m.acc_layout}")
                if m.intrinsic is None:   # UniversalFMA: one multiply-add on CUDA cores
                    w("acc[c] += a_frag[fa] * b_frag[fb]")
                else:
                    w(w.call(_frag_form(m.intrinsic), "acc, c, a_frag, fa, b_frag, fb")
                      + f"  # acc[c:c+{len(m.acc_regs)}] += A[fa:fa+{len(m.a_regs)}] B[fb:fb+{len(m.b_regs)}]")

    # ---- epilogue ----------------------------------------------------------
    def epilogue(self):
        w, e = self.w, self.plan.epilogue
        out = e.out.name
        ob = e.out.bits // 8
        w("# ---- epilogue: C = alpha * acc + beta * C, converted to the output type ----------")
        w(f"# tv_C(identity (BM,BN)) = {e.cid}  (Thr,(FrgV,(RestM,RestN))) -> (m,n)")
        w(f"c_row = m0 + {e.thr_row}  # m of mode Thr")
        w(f"c_col = n0 + {e.thr_col}  # n of mode Thr")
        w("c_full = (m0 + BM <= M) & (n0 + BN <= N)  # an interior tile: no predicates")
        w("c_read = beta != 0  # C is read only when beta != 0 (BLAS: C may hold NaN otherwise)")
        pair = e.pair_row is not None and out in ("f16", "bf16", "f32")
        if pair:
            w(f"if c_full & (beta == 0) & (scn == 1) & ((scm & 1) == 0) & ((C & {2 * ob - 1}) == 0):")
            with w.block():
                w("# row-major C, an interior tile: accumulators 2p and 2p + 1 are adjacent columns")
                w(f"c_base = C + (int64(c_row) * scm + c_col) * {ob}")
                w(f"for p in range({e.acc_size // 2}):")
                with w.block():
                    w(f"v0 = alpha * acc[2 * p]  # C[c_row + {e.pair_row}, c_col + {e.pair_col}]")
                    w("v1 = alpha * acc[2 * p + 1]  # the next column")
                    addr = f"c_base + (int64({e.pair_row}) * scm + {e.pair_col}) * {ob}"
                    if out in ("f16", "bf16"):
                        w(w.call("st_global_b32", f"{addr}, {w.call(f'cvt_{out}x2_f32', 'v0, v1')}"))
                    else:
                        w(w.call("st_global_v2_b32", f"{addr}, float32(v0), float32(v1)"))
            w("else:  # an edge tile, beta != 0 or another C layout")
        else:
            w("if True:  # the accumulators go through shared memory")
        with w.block():
            w("# the accumulators go through shared memory, so that this predicated loop (which")
            w("# NVVM does not unroll) indexes no register array")
            w("cuda.syncthreads()  # every warp is done reading the last stage")
            f64 = self.plan.etype.name == "f64"
            if not f64 and e.acc_size % 4 == 0:
                w(f"for i in range({e.acc_size // 4}):  # accumulator e at smem word ((e >> 2) * THREADS + tid) * 4 + (e & 3)")
                with w.block():
                    w(w.call("st_shared_v4_b32", "smem_base + ((i * THREADS + tid) << 4), acc[4 * i], acc[4 * i + 1], "
                                                 "acc[4 * i + 2], acc[4 * i + 3]"))
                spilled = w.call("u32_as_f32", w.call(
                    "ld_shared_b32", "smem_base + (((e >> 2) * THREADS + tid) << 4) + ((e & 3) << 2)"))
            else:
                size = 8 if f64 else 4
                st = "st_shared_b64" if f64 else "st_shared_b32"
                w(f"for i in range({e.acc_size}):  # accumulator e at smem element e * THREADS + tid")
                with w.block():
                    w(w.call(st, f"smem_base + (i * THREADS + tid) * {size}, acc[i]"))
                ld = w.call("ld_shared_b64" if f64 else "ld_shared_b32", f"smem_base + (e * THREADS + tid) * {size}")
                spilled = w.call("u64_as_f64", ld) if f64 else w.call("u32_as_f32", ld)
            w(f"for e in range({e.acc_size}):")
            with w.block():
                w(f"row = c_row + {e.row}  # m of mode FrgV")
                w(f"col = c_col + {e.col}  # n of mode FrgV")
                w("if (row < M) & (col < N):")
                with w.block():
                    w(f"v = alpha * {spilled}")
                    w(f"ca = C + (int64(row) * scm + int64(col) * scn) * {ob}")
                    w("if c_read:")
                    with w.block():
                        w(f"v += beta * {self._load_c(out, 'ca')}")
                    self._store_one(out, "v", "ca")

    def _store_one(self, out, value, addr):
        w = self.w
        if out in ("f16", "bf16"):
            w(w.call("st_global_b16", f"{addr}, {w.call(f'cvt_{out}x2_f32', f'{value}, {value}')}"))
        elif out == "f32":
            w(w.call("st_global_b32", f"{addr}, float32({value})"))
        else:
            w(w.call("st_global_b64", f"{addr}, float64({value})"))

    def _load_c(self, out, addr):
        w = self.w
        if out == "f16":
            return f"{w.call('unpack_f16x2_f32', w.call('ld_global_b16', addr))}[0]"
        if out == "bf16":
            return f"{w.call('u32_as_f32', 'uint32(' + w.call('ld_global_b16', addr) + ') << 16')}"
        if out == "f32":
            return w.call("u32_as_f32", w.call("ld_global_b32", addr))
        return w.call("u64_as_f64", w.call("ld_global_b64", addr))


def _buf_words(buf, words):
    """Code for the first word of register buffer ``buf`` (0, 1 or code) of ``words`` words."""
    if buf.isdigit():
        return str(int(buf) * words)
    return f"(({buf}) << {log2(words)})" if pow2(words) else f"({buf}) * {words}"


def _frag_form(name):
    """The fragment form of an MMA or ldmatrix intrinsic (register arrays in, register arrays out)."""
    return f"{name}_frag"


def _sum(*parts):
    parts = [p for p in parts if p and p != "0"]
    return " + ".join(parts) if parts else "0"


def _sw_code(x, sw):
    if sw is None:
        return x
    return f"{x} ^ (({x} & {sw.yyy_mask}) >> {sw.shift})" if sw.shift >= 0 else \
        f"{x} ^ (({x} & {sw.yyy_mask}) << {-sw.shift})"


def emit_source(plan: GemmPlan):
    """Source text of the kernel module for ``plan``."""
    if plan.pipeline.kblocks % 2 and plan.pipeline.kblocks != 1:
        raise ValueError(f"emit: k-blocks per tile ({plan.pipeline.kblocks}) must be even for register double buffering")
    if plan.pipeline.kblocks == 1:
        raise ValueError("emit: one k-block per k-tile leaves nothing to double-buffer; use a larger BK")
    return _Emitter(plan).source()
