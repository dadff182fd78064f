"""Turn a :class:`~codegen.plan.GemmPlan` into numba.cuda source.

The kernel reads like a hand-written one: named stages (rasterize, prologue,
main loop, epilogue), and every index carries a comment naming the layout it
came from.  Thread-dependent parts are expressions in ``tid`` printed from
sympy (shifts and masks for powers of two); value parts are constants that
the layouts produced.
"""

from layoutalg import ComposedLayout, size

from .plan import GemmPlan

__all__ = ["emit_source", "KERNEL_NAME"]

KERNEL_NAME = "gemm_kernel"

_NP = {"f16": "float16", "bf16": "uint16", "tf32": "float32", "f32": "float32", "f64": "float64"}
_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "f32": 4, "f64": 8}
_MMA_FN = {"f16": "mma_m16n8k16_f32f16", "bf16": "mma_m16n8k16_f32bf16", "tf32": "mma_m16n8k8_f32tf32",
           "f64": "mma_m8n8k4_f64"}


class _W:
    def __init__(self):
        self.lines = []
        self.ind = 0

    def __call__(self, s=""):
        self.lines.append(("    " * self.ind + s) if s else "")

    def block(self):
        w = self

        class _B:
            def __enter__(self_):
                w.ind += 1

            def __exit__(self_, *a):
                w.ind -= 1

        return _B()


def _sw(expr, sw):
    """Code applying swizzle ``sw`` to an integer expression."""
    if sw is None or sw.bits == 0:
        return expr
    return f"({expr}) ^ ((({expr}) & {sw.yyy_mask}) >> {sw.shift})"


class _Offsets:
    """Swizzled per-thread offsets ``sw(thr + c)`` for the constants ``c`` of one copy.

    A swizzle is linear over XOR, so where ``c`` shares no bit with any thread's offset
    (``thr + c == thr ^ c``), ``sw(thr + c) == sw(thr) ^ sw(c)``; where ``sw(c)`` also shares
    no bit with any ``sw(thr)``, that is ``sw(thr) + sw(c)`` and the constant folds into the
    instruction's immediate offset.  Otherwise the offset is computed once and kept.
    """

    def __init__(self, name, sw, thr_vals):
        self.name = name
        self.sw = sw
        self.mask = 0
        self.swmask = 0
        for v in thr_vals:
            self.mask |= v
            self.swmask |= _apply(sw, v)
        self.hoisted = {}

    def expr(self, c):
        """Code for ``sw(thr + c)`` given the base variable ``{name}`` = ``sw(thr)``."""
        split = self.split(c)
        if split is None:
            return None
        x, y = split
        e = f"({self.name} ^ {x})" if x else self.name
        return f"{e} + {y}" if y else e

    def split(self, c):
        """``(X, Y)`` with ``sw(thr + c) == (sw(thr) ^ X) + Y`` for every thread, or None.

        ``X`` holds the bits of ``sw(c)`` that some ``sw(thr)`` may have, ``Y`` the others.
        """
        if c & self.mask:
            return None
        sc = _apply(self.sw, c)
        return sc & self.swmask, sc & ~self.swmask


def _apply(sw, x):
    return sw(x) if sw is not None else x


def _swz(lay):
    return lay.outer if isinstance(lay, ComposedLayout) else None


def emit_source(plan: GemmPlan, a_mode="cp_async", b_mode="cp_async"):
    """Source text of the kernel for ``plan``; ``x_mode`` is "cp_async" or "sync" per operand."""
    cfg = plan.config
    dt = cfg.dtype
    eb = _BYTES[dt]
    w = _W()
    S = cfg.stages
    KB = plan.kblocks
    if KB % 2:
        raise ValueError(f"emit: k-blocks per tile ({KB}) must be even for register double buffering")
    a, b = plan.a, plan.b
    stage_a = a.smem_words
    stage_b = b.smem_words
    smem_b_off = stage_a * S                                  # B stages follow A's
    ops = (("a", a, a_mode, "A", "M", "sam", "sak", 0), ("b", b, b_mode, "B", "N", "sbn", "sbk", 1))

    w(f'"""Generated GEMM kernel: C = alpha * A @ B + beta * C ({dt} in, f32 accumulate).')
    w("")
    w(f"Plan: CTA tile {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.threads} threads, {S} smem stages, "
      f"tiled MMA {plan.mma.atom.name} {plan.mma.thr_layout_vmnk}")
    w(f"A smem {a.major}-major {a.smem}; B smem {b.major}-major {b.smem}")
    w('"""')
    w("from numba import cuda, float32, float64, int32, int64, uint16, uint32")
    w("from numba.core.types import float16")
    w("from codegen.intrinsics import (")
    w("    cp_async_ca_4, cp_async_ca_8, cp_async_ca_16, cp_async_cg_16, cp_async_commit,")
    w("    cp_async_wait_group, cp_async_wait_all, smem_addr, gmem_addr, ldmatrix_x4, ldmatrix_x4_trans,")
    w("    mma_m16n8k16_f32f16, mma_m16n8k16_f32bf16, mma_m16n8k8_f32tf32, mma_m8n8k4_f64,")
    w("    cvt_f16x2_f32, cvt_bf16x2_f32, pack_b16x2, f32_as_u32, u32_as_f32, unpack_f16x2_f32,")
    w("    unpack_bf16x2_f32, ld_shared_b32, st_global_b16, st_global_b32, st_global_b64,")
    w(")")
    w("")
    w(f"BM, BN, BK, STAGES, THREADS, GROUP_M = {cfg.bm}, {cfg.bn}, {cfg.bk}, {S}, {cfg.threads}, {cfg.group_m}")
    w(f"SMEM_BYTES = {(stage_a + stage_b) * S * eb}")
    w("")
    w("")
    w(f"def {KERNEL_NAME}(A, B, C, M, N, K, sam, sak, sbn, sbk, scm, scn, alpha, beta):")
    w('    """A: (M,K); B: (K,N), addressed as the (N,K) view with element strides (sbn, sbk); C: (M,N)."""')
    with w.block():
        w(f"smem = cuda.shared.array(0, {_NP[dt] if dt != 'bf16' else 'uint16'})")
        w("smem_base = smem_addr(smem, 0)  # 32-bit shared address of the dynamic buffer")
        w("tid = cuda.threadIdx.x")
        w("")
        w("# ---- rasterize: grouped CTA order for L2 reuse ------------------------------------")
        w("num_m = (M + BM - 1) // BM")
        w("num_n = (N + BN - 1) // BN")
        w("pid = cuda.blockIdx.x")
        w("group = GROUP_M * num_n")
        w("first_m = (pid // group) * GROUP_M")
        w("rows = min(num_m - first_m, GROUP_M)")
        w("bm = first_m + (pid % group) % rows")
        w("bn = (pid % group) // rows")
        w("m0 = bm * BM")
        w("n0 = bn * BN")
        w("ktiles = (K + BK - 1) // BK")
        w("kres = ktiles * BK - K  # K residue first: k-tile t covers k in [t*BK - kres, (t+1)*BK - kres),")
        w("#                          so only k-tile 0 can be partial and the main loop needs no K predicate")
        w("")
        # ---- per-thread global->shared indices
        w("# ---- global -> shared: per-thread coordinates and shared-memory offsets -------------")
        for p, op, mode, name, rdim, srow, sk, _ in ops:
            g = op.g2s
            sw = _swz(op.smem)
            w(f"# {name}: {g.atom}, {g.vec} elements per copy; tiled copy layout_tv {g.notes['tiled_copy'].layout_tv}")
            w(f"#    thread part of the identity partition (Thr,FrgV,Rest) -> ({rdim.lower()},k): {g.notes['src']}")
            w(f"{p}_row = {g.notes['thr_row']}  # {rdim} coordinate from tidfrg_S(identity ({op.rows},BK)) mode Thr")
            w(f"{p}_col = {g.notes['thr_k']}  # K coordinate, same layout")
            w(f"{p}_sthr = {g.notes['thr_smem']}  # smem offset from tidfrg_D({op.smem.inner if isinstance(op.smem, ComposedLayout) else op.smem}) mode Thr")
            w(f"{p}_sb = {_sw(f'{p}_sthr', sw)}  # swizzled by {sw}")
            offs = _Offsets(f"{p}_sb", sw, g.notes["thr_vals"])
            xors = {}
            for i, ((rc, kc), soff) in enumerate(g.items):
                sp = offs.split(soff)
                if sp is None:
                    w(f"{p}_s{i} = {_sw(f'{p}_sthr + {soff}', sw)}  # copy {i}: value part ({rc},{kc}) -> smem {soff}, then {sw}")
                    e, eb_expr = f"{p}_s{i}", f"{p}_s{i} * {eb}"
                else:
                    x, y = sp
                    if x not in xors:
                        xors[x] = f"{p}_sx{x}"
                        w(f"{xors[x]} = {p}_sb ^ {x}  # sw(thr) ^ {x}")
                    e = f"{xors[x]} + {y}" if y else xors[x]
                    eb_expr = f"{xors[x]} * {eb} + {y * eb}" if y else f"{xors[x]} * {eb}"
                    w(f"# copy {i}: value part ({rc},{kc}) -> smem {soff}: {sw}(thr + {soff}) = (sw(thr) ^ {x}) + {y}")
                g.notes.setdefault("dst_expr", {})[i] = e
                g.notes.setdefault("dst_bytes", {})[i] = eb_expr
            w(f"{p}_rows = {'M' if name == 'A' else 'N'}")
            if mode == "cp_async" and g.atom.startswith("SM80_CP_ASYNC"):
                _emit_copy_pointers(w, op, p, name, srow, sk, eb)
        w("")
        # ---- per-thread shared->register indices
        w("# ---- shared -> registers: per-thread ldmatrix/load offsets ----------------------------")
        for p, op, mode, name, rdim, srow, sk, _ in ops:
            s = op.s2r
            sw = _swz(op.smem)
            w(f"# {name}: {s.atom}; copy layout_tv {s.notes['tiled_copy'].layout_tv}")
            w(f"{p}_rthr = {s.notes['thr_smem']}  # smem offset from tidfrg_S of make_tiled_copy_{name} mode Thr")
            w(f"{p}_rb = {_sw(f'{p}_rthr', sw)}  # swizzled by {sw}")
            offs = _Offsets(f"{p}_rb", sw, s.notes["thr_vals"])
            exprs = s.notes.setdefault("src_expr", {})
            xors = {}
            for j, (soff, vals, kb, soffs) in enumerate(s.items):
                targets = [(None, soff)] if s.atom.startswith("SM75") else list(enumerate(soffs))
                for v, so in targets:
                    var = f"{p}_r{j}" if v is None else f"{p}_r{j}_{v}"
                    sp = offs.split(so)
                    what = f"copy {j}{'' if v is None else f' value {v}'} (k-block {kb}) -> fragment {vals[0 if v is None else v]}"
                    if sp is None:
                        w(f"{var} = ({_sw(f'{p}_rthr + {so}', sw)}) * {eb}  # {what}, bytes")
                        exprs[(j, v)] = var
                        continue
                    x, y = sp
                    if x not in xors:
                        xors[x] = f"{p}_rx{x}"
                        w(f"{xors[x]} = ({p}_rb ^ {x}) * {eb}  # bytes of sw(thr) ^ {x}")
                    w(f"# {what}: {sw}(thr + {so}) = (sw(thr) ^ {x}) + {y}")
                    exprs[(j, v)] = f"{xors[x]} + {y * eb}" if y else xors[x]
        w("")
        # ---- fragments and accumulators
        na = _frag_words(plan, a)
        nb = _frag_words(plan, b)
        fty = "float64" if dt == "f64" else "uint32"
        w("# ---- registers: A/B fragments double-buffered across k-blocks, f32 accumulators ------")
        w(f"a_frag = cuda.local.array((2, {na}), {fty})  # (MMA,MMA_M) per k-block, {plan.a.s2r.notes['frag']}")
        w(f"b_frag = cuda.local.array((2, {nb}), {fty})  # (MMA,MMA_N) per k-block, {plan.b.s2r.notes['frag']}")
        acc_t = "float64" if dt == "f64" else "float32"
        w(f"acc = cuda.local.array({plan.acc_size}, {acc_t})  # (MMA,MMA_M,MMA_N) {plan.notes['acc_layout']}")
        w(f"for i in range({plan.acc_size}):")
        with w.block():
            w("acc[i] = 0.0")
        w("")
        # ---- prologue
        w("# ---- prologue: fill STAGES-1 shared-memory stages ----------------------------------")
        w("# k-tile 0 (the partial one when K % BK != 0): columns before k = 0 are zero-filled")
        _emit_tile_load(w, plan, ops, "0", "0", eb, smem_b_off, first=True)
        w("cp_async_commit()")
        w("for s in range(1, STAGES - 1):")
        with w.block():
            w("if s < ktiles:")
            with w.block():
                _emit_tile_load(w, plan, ops, "s", "s", eb, smem_b_off)
            w("cp_async_commit()")
        w(f"cp_async_wait_group({S - 2})")
        w("cuda.syncthreads()")
        w("")
        w("read_stage = 0")
        w("write_stage = STAGES - 1")
        w("next_k = STAGES - 1")
        _emit_read_bases(w, plan, "read_stage", eb, smem_b_off)
        _emit_frag_load(w, plan, "0", 0, 0, eb, smem_b_off)
        w("")
        w("# ---- main loop: k-tiles; k-blocks unrolled with register double buffering -----------")
        w("for kt in range(ktiles):")
        with w.block():
            for kb in range(KB):
                w(f"# k-block {kb}")
                if kb == KB - 1:
                    w(f"cp_async_wait_group({S - 2})  # the next stage has landed")
                    w("cuda.syncthreads()")
                    w("read_stage = read_stage + 1 if read_stage + 1 < STAGES else 0")
                    _emit_read_bases(w, plan, "read_stage", eb, smem_b_off)
                nkb = (kb + 1) % KB
                _emit_frag_load(w, plan, "read_stage", nkb, nkb % 2, eb, smem_b_off)
                if kb == 0:
                    w("if next_k < ktiles:  # prefetch k-tile next_k into write_stage")
                    with w.block():
                        _emit_tile_load(w, plan, ops, "next_k", "write_stage", eb, smem_b_off)
                    w("cp_async_commit()")
                    w("write_stage = write_stage + 1 if write_stage + 1 < STAGES else 0")
                    w("next_k += 1")
                _emit_mma(w, plan, kb)
        w("cp_async_wait_all()")
        w("")
        _emit_epilogue(w, plan)
    return "\n".join(w.lines) + "\n"


def _frag_words(plan, op):
    s = op.s2r
    per = s.notes["per_word"]
    return s.notes["nfrag"] // plan.kblocks // per


def _kb_local(plan, op, off):
    """Fragment element offset -> (k-block, word index within that k-block's buffer)."""
    s = op.s2r
    per = s.notes["per_word"]
    n_kb = s.notes["nfrag"] // plan.kblocks
    return off // n_kb, (off % n_kb) // per


def _emit_copy_pointers(w, op, p, name, srow, sk, eb):
    """Per-copy global byte addresses of k-tile 0, advanced by one k-tile after each load.

    Rows past M (N) are clamped into the matrix: they only feed rows (columns) of C
    that the epilogue never stores, so the copies need no row predicate.  A vector
    along M (N) stays whole, as the host vectorizes only when ``vec`` divides M (N).
    """
    g = op.g2s
    r0 = "m0" if name == "A" else "n0"
    last = f"{p}_rows - 1" if op.major == "K" else f"{p}_rows - {g.vec}"
    w(f"{p}_g0 = gmem_addr({name}, int64(0))")
    w(f"{p}_ktile = int64({sk}) * (BK * {eb})  # bytes per k-tile")
    w(f"# copy i reads row min({r0} + {p}_row + r_i, {last}) (value part (r_i, k_i)), k-tile 0's columns")
    for i, ((rc, kc), _) in enumerate(g.items):
        row = f"min({r0} + {p}_row + {rc}, {last})"
        col = f"{p}_col + {kc} - kres" if kc else f"{p}_col - kres"
        w(f"{p}_gp{i} = {p}_g0 + (int64({row}) * {srow} + int64({col}) * {sk}) * {eb}  # copy {i}: ({rc},{kc})")


def _emit_tile_load(w, plan, ops, ktile, stage, eb, smem_b_off, first=False):
    """Load one k-tile of A and B into a shared-memory stage.

    cp.async copies of a full k-tile need no predicate (rows are clamped, see
    :func:`_emit_copy_pointers`); on k-tile 0 (``first``) columns before k = 0 are
    zero-filled.  Element-wise copies are predicated on every element.
    """
    for p, op, mode, name, rdim, srow, sk, _ in ops:
        g = op.g2s
        base = f"{stage} * {op.smem_words}" + (f" + {smem_b_off}" if name == "B" else "")
        r0 = "m0" if name == "A" else "n0"
        w(f"# {name} tile {ktile} -> stage {stage}: {len(g.items)} x {g.atom}")
        cp = mode == "cp_async" and g.atom.startswith("SM80_CP_ASYNC")
        if cp:
            w(f"{p}_ws = smem_base + ({base}) * {eb}  # shared bytes of this stage")
            fn = {16: "cp_async_cg_16", 8: "cp_async_ca_8", 4: "cp_async_ca_4"}[g.notes["nbytes"]]
            nb = g.notes["nbytes"]
            oks = set()
            for i, ((rc, kc), soff) in enumerate(g.items):
                dst = f"{p}_ws + {g.notes['dst_bytes'][i]}"
                if first:
                    if kc not in oks:
                        oks.add(kc)
                        w(f"{p}_ok{kc} = {p}_col + {kc} >= kres  # k >= 0 for value part k = {kc}")
                    w(f"{fn}({dst}, {p}_gp{i} if {p}_ok{kc} else {p}_g0, {nb} if {p}_ok{kc} else 0)")
                else:
                    w(f"{fn}({dst}, {p}_gp{i}, {nb})")
            for i in range(len(g.items)):
                w(f"{p}_gp{i} += {p}_ktile")
            continue
        w(f"k0 = {ktile} * BK - kres")
        for i, ((rc, kc), soff) in enumerate(g.items):
            dst = g.notes["dst_expr"][i]
            vec = g.vec
            # element-wise copy (unaligned or strided operand): predicated, zero-filled
            w(f"gr = {r0} + {p}_row + {rc}")
            w(f"gc = k0 + {p}_col + {kc}")
            for v in range(vec):
                dr, dc = (0, v) if op.major == "K" else (v, 0)
                src = f"{name}[gr + {dr}, gc + {dc}]" if name == "A" else f"B[gc + {dc}, gr + {dr}]"
                w(f"smem[{base} + {dst} + {v}] = {src} if gr + {dr} < {p}_rows and 0 <= gc + {dc} < K else 0")


def _emit_frag_load(w, plan, stage, kb, buf, eb, smem_b_off):
    for p, op, name in (("a", plan.a, "A"), ("b", plan.b, "B")):
        s = op.s2r
        base = f"{stage} * {op.smem_words}" + (f" + {smem_b_off}" if name == "B" else "")
        rbase = f"{p}_rs"
        frag = f"{p}_frag"
        for j, (soff, vals, k, soffs) in enumerate(s.items):
            if k != kb:
                continue
            if s.atom.startswith("SM75_U32x4_LDSM_N") or s.atom.startswith("SM75_U16x8_LDSM_T"):
                fn = "ldmatrix_x4" if "LDSM_N" in s.atom else "ldmatrix_x4_trans"
                per = s.notes["per_word"]
                words = [_kb_local(plan, op, vals[i])[1] for i in range(0, len(vals), per)]
                if per == 2:
                    for i in range(0, len(vals), 2):
                        if vals[i + 1] != vals[i] + 1 or vals[i] % 2:
                            raise ValueError(f"emit: ldmatrix register {i // 2} of {name} does not hold a fragment pair")
                lhs = ", ".join(f"{frag}[{buf}, {x}]" for x in words)
                w(f"{lhs} = {fn}({rbase} + {s.notes['src_expr'][(j, None)]})  # {s.atom}")
            else:
                for v in range(len(vals)):
                    _, word = _kb_local(plan, op, vals[v])
                    addr = s.notes["src_expr"][(j, v)]
                    if eb == 4:  # a 32-bit word at a byte address: one LDS with an immediate offset
                        w(f"{frag}[{buf}, {word}] = ld_shared_b32({rbase} + {addr})  # {s.atom}")
                    else:
                        w(f"{frag}[{buf}, {word}] = smem[({base}) + ({addr}) // {eb}]  # {s.atom}")


def _emit_read_bases(w, plan, stage, eb, smem_b_off):
    w(f"a_rs = smem_base + {stage} * {plan.a.smem_words * eb}  # shared bytes of A's read stage")
    w(f"b_rs = smem_base + ({stage} * {plan.b.smem_words} + {smem_b_off}) * {eb}  # B's read stage")


def _emit_mma(w, plan, kb):
    dt = plan.config.dtype
    buf = kb % 2
    for aoff, boff, coff in plan.mma_calls[kb]:
        if dt in ("f16", "bf16"):
            aw = [_kb_local(plan, plan.a, aoff[i])[1] for i in range(0, 8, 2)]
            bw = [_kb_local(plan, plan.b, boff[i])[1] for i in range(0, 4, 2)]
        elif dt == "tf32":
            aw = [_kb_local(plan, plan.a, x)[1] for x in aoff]
            bw = [_kb_local(plan, plan.b, x)[1] for x in boff]
        else:
            aw = [_kb_local(plan, plan.a, x)[1] for x in aoff]
            bw = [_kb_local(plan, plan.b, x)[1] for x in boff]
        cs = ", ".join(f"acc[{c}]" for c in coff)
        args = ", ".join([f"a_frag[{buf}, {x}]" for x in aw] + [f"b_frag[{buf}, {x}]" for x in bw] + [f"acc[{c}]" for c in coff])
        if dt == "f32":
            w(f"{cs} = acc[{coff[0]}] + u32_as_f32(a_frag[{buf}, {aw[0]}]) * u32_as_f32(b_frag[{buf}, {bw[0]}])")
        else:
            w(f"{cs} = {_MMA_FN[dt]}({args})")


def _emit_epilogue(w, plan):
    cfg = plan.config
    out = cfg.out
    ob = _BYTES[out]
    fl = "float64" if cfg.dtype == "f64" else "float32"
    rows = sorted({r for r, _ in plan.epilogue})
    cols = sorted({c for _, c in plan.epilogue})
    w("# ---- epilogue: D = alpha * acc + beta * C, converted and predicated --------------------")
    w(f"c_row = m0 + {plan.epi_thr[0]}  # from tv_C(identity (BM,BN)) mode Thr")
    w(f"c_col = n0 + {plan.epi_thr[1]}")
    w("c_full = m0 + BM <= M and n0 + BN <= N  # an interior tile: no predicates")
    w("c_read = beta != 0  # C is read only when beta != 0 (BLAS semantics: it may hold NaN)")
    w("c_g0 = gmem_addr(C, int64(0))")
    w(f"# global byte addresses: row part per value-part row {rows}, column part per column {cols}")
    for r in rows:
        w(f"c_r{r} = c_g0 + int64(c_row + {r}) * scm * {ob}")
    for c in cols:
        w(f"c_c{c} = int64(c_col + {c}) * scn * {ob}")
    store = {"f16": "st_global_b16({a}, cvt_f16x2_f32(v, v))", "bf16": "st_global_b16({a}, cvt_bf16x2_f32(v, v))",
             "f32": "st_global_b32({a}, float32(v))", "f64": "st_global_b64({a}, float64(v))"}[out]
    w("if c_full and not c_read:  # the common case: stores only, no predicates")
    with w.block():
        for e, (r, c) in enumerate(plan.epilogue):
            w(f"v = alpha * acc[{e}]  # -> C[c_row + {r}, c_col + {c}]")
            w(store.format(a=f"c_r{r} + c_c{c}"))
    w("else:")
    with w.block():
        for e, (r, c) in enumerate(plan.epilogue):
            w(f"if c_full or (c_row + {r} < M and c_col + {c} < N):  # acc[{e}] -> C[c_row + {r}, c_col + {c}]")
            with w.block():
                w(f"v = alpha * acc[{e}]")
                w("if c_read:")
                with w.block():
                    # unsigned indices: numba skips its negative-index wraparound for them
                    cij = f"C[uint32(c_row + {r}), uint32(c_col + {c})]"
                    if out == "f16":
                        w(f"v += beta * float32({cij})")
                    elif out == "bf16":
                        w(f"v += beta * u32_as_f32(uint32({cij}) << 16)")
                    else:
                        w(f"v += beta * {fl}({cij})")
                w(store.format(a=f"c_r{r} + c_c{c}"))
