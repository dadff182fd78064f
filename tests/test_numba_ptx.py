"""codegen's route from a kernel's source to PTX (:mod:`codegen.numba_ptx`) against numba's own
(``numba.cuda.compile_ptx``): the same PTX, numba's state left as it was, numba's route for
what the short pipeline does not serve."""

import math
import os
import re

import pytest

pytest.importorskip("numba")
pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"),
                                reason="numba's simulator has no PTX compiler")


def _same(a, b):
    """PTX texts equal up to the serial numbers numba gives each compilation of a function
    (in the mangled name) and each dynamic shared array."""
    def norm(s):
        return re.sub(r"B\d+v\d+B", "BvB", re.sub(r"_cudapy_smem_\d+", "_cudapy_smem_N", s))

    return norm(a) == norm(b)


def _generated(which):
    """(kernel function, signature, cc, launch bounds) of a generated kernel."""
    from codegen import GemmConfig
    from codegen import kernel as K

    if which.startswith("wgmma"):
        from codegen.sm90 import kernel as S

        dtype, a_major, b_major, epilogue = which.split("-")[1:]
        base = S._base(S.WgmmaKey(GemmConfig.default(dtype, arch=(9, 0)), a_major, b_major, epilogue))
        return (getattr(K._load_module(base.source), S.KERNEL_NAME), S.wgmma_signature(), S.CC,
                (base.plan.threads, 1))
    dtype, a_major, b_major, cc = which.split("-")[1:]
    elementwise = b_major == "ew"
    key = (K.KernelKey(GemmConfig.default(dtype, 100, 100, 100), "K", "K", None, None, True, True) if elementwise
           else K.KernelKey(GemmConfig.default(dtype), a_major, b_major))
    base = K.get_kernel(key, jit=False)
    return (getattr(K._load_module(base.source), K.KERNEL_NAME), K.kernel_signature(key.config),
            (int(cc[0]), int(cc[1])), K._launch_bounds(key.config).get("launch_bounds"))


@pytest.mark.parametrize("which", ["wgmma-f16-K-MN-tma", "wgmma-bf16-MN-MN-registers", "mma-tf32-K-MN-90",
                                   "mma-f64-K-ew-80"])
def test_generated_kernels_compile_to_the_ptx_numba_gives(which, monkeypatch):
    from codegen import numba_ptx
    from codegen.numba_ptx import kernel_ptx, numba_kernel_ptx

    fn, sig, cc, bounds = _generated(which)
    with monkeypatch.context() as m:       # through the short pipeline, not numba's route
        m.setattr(numba_ptx, "numba_kernel_ptx", None)
        ours = kernel_ptx(fn, sig, cc, bounds)
    assert _same(ours, numba_kernel_ptx(fn, sig, cc, bounds))
    assert ".entry" in ours and ".local" not in ours


def test_numbas_state_is_left_as_it_was():
    """The call-type and value-type memos, the plain error text, the garbage collector's pause,
    the liveness, the SSA rewrite and the post-processor last one compilation, also one that fails."""
    from numba.core import errors as core_errors
    from numba.core.types.functions import BaseFunction
    from numba.cuda import float32
    from numba.cuda.core import errors as cuda_errors
    from numba.cuda.descriptor import cuda_target

    from codegen.numba_ptx import kernel_ptx

    import gc

    from numba.cuda.core import analysis, postproc, ssa

    def state():
        return (BaseFunction.__dict__["get_call_type"], "resolve_value_type" in vars(cuda_target.typing_context),
                [dict(vars(m.termcolor())) for m in (core_errors, cuda_errors)], gc.isenabled(),
                analysis.compute_live_map, ssa._run_ssa, ssa._run_block_rewrite, postproc.PostProcessor.run)

    before = state()

    def ok(x):
        x[0] = x[0] + 1.0

    def bad(x):
        x[0] = "text"

    kernel_ptx(ok, (float32[::1],), (8, 0))
    assert state() == before
    with pytest.raises(Exception, match="text"):
        kernel_ptx(bad, (float32[::1],), (8, 0))
    assert state() == before


def test_what_the_short_pipeline_does_not_serve_compiles_through_numbas():
    """A closure needs passes the short pipeline leaves out; a libdevice call needs
    libdevice: both come out as numba compiles them."""
    from numba import cuda
    from numba.cuda import float32

    from codegen.numba_ptx import kernel_ptx, numba_kernel_ptx

    def closure(x):
        def twice(v):
            return v + v

        x[cuda.threadIdx.x] = twice(x[cuda.threadIdx.x])

    def libdevice(x):
        x[0] = math.exp(x[0])

    for fn in (closure, libdevice):
        ours = kernel_ptx(fn, (float32[::1],), (8, 0))
        assert _same(ours, numba_kernel_ptx(fn, (float32[::1],), (8, 0)))


class _CFG:
    def __init__(self, succ):
        self.succ = succ
        self.pred = {b: [a for a in succ if b in succ[a]] for b in succ}

    def successors(self, b):
        return [(s, None) for s in self.succ[b]]

    def predecessors(self, b):
        return [(p, None) for p in self.pred[b]]


@pytest.mark.parametrize("seed", range(40))
def test_the_liveness_is_numbas(seed):
    """The short pipeline's compute_live_map gives numba's maps on random control-flow graphs
    (loops, unreachable blocks, self edges) with random uses and definitions."""
    import random

    pytest.importorskip("numba")
    from numba.cuda.core import analysis

    from codegen.numba_ptx import _compute_live_map

    rnd = random.Random(seed)
    labels = sorted(rnd.sample(range(0, 400, 2), rnd.randint(1, 30)))
    succ = {b: sorted(set(rnd.sample(labels, rnd.randint(0, min(3, len(labels)))))) for b in labels}
    names = [f"v{i}" for i in range(rnd.randint(1, 40))]
    use = {b: set(rnd.sample(names, rnd.randint(0, min(5, len(names))))) for b in labels}
    defs = {b: set(rnd.sample(names, rnd.randint(0, min(5, len(names))))) for b in labels}
    blocks = {b: None for b in labels}
    assert _compute_live_map(_CFG(succ), blocks, use, defs) == analysis.compute_live_map(_CFG(succ), blocks, use, defs)


def test_the_callee_ir_copy_is_deepcopys():
    """codegen.cute's copy of a callee's untyped IR is ``copy.deepcopy``'s: the same statements,
    with every node and variable its own object, the scope copied once for all blocks."""
    import copy

    from numba.cuda.compiler import run_frontend

    from codegen.cute import objects

    def body(x, n):
        s = 0
        for i in range(n):
            if i % 3 == 1:
                s += x[i] * 2
            else:
                x[i] = (s, n)[0]
        return s

    objects._know_ir_classes()
    func_ir = run_frontend(body)
    scope = next(iter(func_ir.blocks.values())).scope
    ours_scope, theirs_scope = objects._copy_ir(scope, {}), copy.deepcopy(scope)
    for blk in func_ir.blocks.values():
        ours = objects._copy_ir(blk, {id(scope): ours_scope})
        theirs = copy.deepcopy(blk, {id(scope): theirs_scope})
        assert [str(st) for st in ours.body] == [str(st) for st in theirs.body] and ours == theirs
        assert ours.scope is ours_scope
        for a, b in zip(ours.body, blk.body):
            assert a is not b and a == b
            for v, w in zip(a.list_vars(), b.list_vars()):
                assert v is not w and v.scope is ours_scope
