"""codegen.cute: layouts, tensors, copies and MMAs in user-written numba kernels.

* The device offsets (integer IR emitted by :mod:`codegen.cute.offsets`) are run on the
  CPU through LLVM's JIT and compared with the host layout at every index and slice.
* Every tutorial kernel (``examples/``) compiles offline to sm_80 PTX with the expected
  instructions, no local memory and (ptxas) no stack frame, and runs in numba's simulator
  against numpy (subprocesses with ``NUMBA_ENABLE_CUDASIM=1``).
* Mistakes in a kernel are compile-time errors naming the call, the layout and the values.
"""

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numba import cuda

from codegen import cute
from layoutalg import CopyAtom, Layout, Swizzle, composition, make_tiled_copy, size
from strategies import gen_layout, strategy

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
pytestmark = pytest.mark.skipif(SIM, reason="compiles PTX; the simulator runs are subprocesses")

#: example -> PTX instructions it must contain
KERNELS = {
    "tf32_mma": ["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"],
    "tf32_ldmatrix": ["mma.sync.aligned.m16n8k8", "ldmatrix.sync.aligned.m8n8.x4.shared.b16"],
    "tf32_double_buffer": ["cp.async.cg.shared.global", "cp.async.wait_group 1", "ldmatrix.sync.aligned.m8n8.x4"],
    "f16_multistage": ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned.m8n8.x4",
                       "st.global.v2.u16",
                       "cp.async.cg.shared.global", "cp.async.wait_group 1"],
    "transpose": ["ld.global.v4.f32", "st.global.v4", "ld.shared.v4"],
    "identity_predicate": ["setp.", "fma.rn.f32"],
    # run-time shapes: cp.async with a source size (zero fill past the edge), the same atoms
    "f16_runtime_shape": ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned.m8n8.x4",
                          "cp.async.cg.shared.global", "selp.b32", "st.global.v2.u16"],
    # attention: both MMAs, V read transposed, the row reductions across a quad, exp2
    "flash_attention": ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "shfl.sync.bfly.b32", "ex2.approx.f32",
                        "cp.async.cg.shared.global"],
}
#: kernels whose index arithmetic divides by run-time values (the raster of run-time tile counts)
RUNTIME_DIVISION = {"f16_runtime_shape"}


def _load(name):
    import importlib.util

    if str(EXAMPLES) not in sys.path:              # an example may build on an earlier step's module
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"cute_example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- device offsets, run through LLVM on the CPU ---------------------------------------------

_JIT = {}


def _jit(build, nargs):
    """Compile ``build(builder, args) -> i64`` as ``i64 f(i64 x nargs)`` and return it."""
    import llvmlite.binding as llvm
    from llvmlite import ir

    if "tm" not in _JIT:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _JIT["tm"] = llvm.Target.from_default_triple().create_target_machine()
        _JIT["engines"] = []
    i64 = ir.IntType(64)
    mod = ir.Module(name="offsets")
    fn = ir.Function(mod, ir.FunctionType(i64, [i64] * nargs), name="f")
    b = ir.IRBuilder(fn.append_basic_block())
    out = build(b, list(fn.args))
    b.ret(out if not isinstance(out, int) else ir.Constant(i64, out))
    m = llvm.parse_assembly(str(mod))
    ee = llvm.create_mcjit_compiler(m, _JIT["tm"])
    ee.finalize_object()
    _JIT["engines"].append(ee)
    return ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_int64] * nargs)(ee.get_function_address("f"))


@settings(max_examples=25)
@given(strategy(gen_layout, strides="any"), st.integers(0, 3))
def test_device_offset_of_every_index_equals_the_layout(layout, mode):
    """``t[i]`` (a run-time 1-D index) and ``t[..., i, ...]`` slices give the host's offsets."""
    from codegen.cute.offsets import Leaf, emit_terms, slice_spec

    _, terms = slice_spec("t[i]", layout, Leaf(slot=0))
    f = _jit(lambda b, a: emit_terms(b, terms, a), 1)
    assert [f(i) for i in range(size(layout))] == [layout(i) for i in range(size(layout))]
    if isinstance(layout.shape, tuple):
        r = len(layout.shape)
        k = mode % r
        spec = tuple(Leaf(slot=0) if j == k else None for j in range(r))
        sub, terms = slice_spec("t[...]", layout, spec)
        f = _jit(lambda b, a: emit_terms(b, terms, a), 1)
        for i in range(size(layout[k])):
            crd = tuple(i if j == k else None for j in range(r))
            assert (sub is None) == (r == 1)
            if sub is not None:
                assert str(layout(crd)) == str(sub)
            zero = tuple(i if j == k else 0 for j in range(r))
            assert f(i) == layout(zero)


@pytest.mark.parametrize("sw", [Swizzle(3, 3, 3), Swizzle(2, 2, 5), Swizzle(3, 2, 5), Swizzle(1, 4, -3)])
def test_device_swizzle_equals_host_at_every_offset(sw):
    from codegen.cute.offsets import emit_swizzle

    f = _jit(lambda b, a: emit_swizzle(b, sw, a[0]), 1)
    n = 1 << 12
    assert [f(x) for x in range(n)] == [sw(x) for x in range(n)]


def test_thread_coordinates_equal_get_flat_coord():
    """The (V,M,N,K) coordinates of a thread in a tiled MMA, computed in IR."""
    from layoutalg import get_flat_coord, make_tiled_mma
    from codegen.cute.device_tensor import flat_coord_values

    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", (2, 4, 1), (32, 64, 16))
    lay = mma.thr_layout_vmnk
    for k in range(4):
        f = _jit(lambda b, a, k=k: flat_coord_values(b, lay, a[0])[k], 1)
        assert [f(t) for t in range(mma.size)] == [get_flat_coord(lay, t)[k] for t in range(mma.size)]


# ---- the tutorial kernels: offline PTX ---------------------------------------------------------

@pytest.fixture(scope="module")
def ptx():
    from numba import cuda

    out = {}
    for name in KERNELS:
        mod = _load(name)
        out[name] = cuda.compile_ptx(mod.KERNEL.py_func, mod.SIGNATURE, cc=(8, 0))[0]
    return out


@pytest.mark.parametrize("name", list(KERNELS))
def test_tutorial_kernel_compiles_offline_with_its_atoms(ptx, name):
    text = ptx[name]
    assert ".target sm_80" in text
    for instr in KERNELS[name]:
        assert instr in text, (name, instr)
    assert ".local" not in text, f"{name}: a fragment went to local memory"
    # index arithmetic folded: powers of two only, so no integer division or remainder
    if name not in RUNTIME_DIVISION:
        assert not re.search(r"\b(div|rem)\.[su]", text), name


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
@pytest.mark.parametrize("name", list(KERNELS))
def test_tutorial_kernel_has_no_stack_frame(ptx, name, tmp_path):
    path = tmp_path / f"{name}.ptx"
    path.write_text(ptx[name])
    res = subprocess.run(["ptxas", "-v", "-arch=sm_80", str(path), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True, check=True)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in res.stderr, res.stderr


def test_f16_kernel_issues_every_atom_of_a_ktile(ptx):
    """4 k-blocks x (4 x 8) MMAs per thread, 2 x 4 ldmatrix per k-block, 4 + 8 cp.async a k-tile."""
    text = ptx["f16_multistage"]
    assert len(re.findall(r"mma\.sync", text)) % 128 == 0
    assert len(re.findall(r"cp\.async\.cg", text)) % 12 == 0


def test_hopper_tutorial_kernel_compiles_offline_for_sm90a(tmp_path):
    """The hand-written Hopper GEMM: wgmma, TMA loads and stores, mbarriers and setmaxnreg in
    sm_90a PTX, its pieces inlined (no calls), registers only (ptxas: no stack frame)."""
    from codegen.numba_ptx import kernel_ptx

    hg = _load("hopper_gemm")
    text = kernel_ptx(hg.hopper_gemm, hg.ARGS.signature(), (9, 0, "a"), (hg.THREADS, 1))
    assert ".target sm_90a" in text and "call." not in text and ".local" not in text
    assert text.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16") == 4         # a k-tile
    assert text.count("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group") == 4       # a box of C each
    for instr in ("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes",
                  "mbarrier.try_wait.parity", "setmaxnreg.inc.sync.aligned.u32 232", "wgmma.wait_group.sync.aligned 1"):
        assert instr in text, instr
    if shutil.which("ptxas"):
        path = tmp_path / "hopper.ptx"
        path.write_text(text)
        res = subprocess.run(["ptxas", "-v", "-arch=sm_90a", str(path), "-o", str(tmp_path / "k.cubin")],
                             capture_output=True, text=True, check=True)
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in res.stderr, res.stderr


def test_hopper_attention_tutorial_kernel_compiles_offline_for_sm90a(tmp_path):
    """The tutorial's Hopper attention (the library's HopperAttention pieces): both wgmma forms,
    rank-4 TMA loads, the turns' bar.arrive, registers only."""
    from codegen.numba_ptx import kernel_ptx

    ha = _load("hopper_attention")
    text = kernel_ptx(ha.hopper_attention, ha.HOPPER_ARGS.signature(), (9, 0, "a"), (ha.FA.threads, 1))
    assert ".target sm_90a" in text and "call." not in text and ".local" not in text
    assert text.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 2 * ha.D // 16    # S
    assert text.count("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16") == 2 * 128 // 16     # O += P V
    for instr in ("cp.async.bulk.tensor.4d", "bar.arrive", "setmaxnreg.inc.sync.aligned.u32 240"):
        assert instr in text, instr
    if shutil.which("ptxas"):
        path = tmp_path / "attention.ptx"
        path.write_text(text)
        res = subprocess.run(["ptxas", "-v", "-arch=sm_90a", str(path), "-o", str(tmp_path / "k.cubin")],
                             capture_output=True, text=True, check=True)
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in res.stderr, res.stderr


# ---- the tutorial kernels: simulator -------------------------------------------------------------

def _run_sim(path, timeout=600):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT)


@pytest.mark.parametrize("name", list(KERNELS) + ["hopper_gemm", "hopper_attention"])
def test_tutorial_kernel_runs_in_the_simulator(name):
    res = _run_sim(EXAMPLES / f"{name}.py")
    assert res.returncode == 0, res.stdout + res.stderr
    m = re.search(r"max abs error ([0-9.e+-]+)", res.stdout)
    assert m, res.stdout
    assert float(m.group(1)) <= _load(name).TOLERANCE


# ---- the transpose is bank-conflict free -----------------------------------------------------------

def test_transpose_shared_accesses_are_conflict_free():
    """Each scalar store instruction of a warp hits 32 distinct banks; each 128-bit load of a
    quarter-warp (8 lanes, 128 bytes) touches 8 distinct 16-byte chunks of the 32 banks."""
    from layoutalg import make_tensor

    t = _load("transpose")
    arr = np.zeros(1024, np.float32)
    sT = make_tensor(arr, t.ST)                                            # (BM,BN) -> smem
    stores = [t.COPY_IN_S.get_slice(i).partition_D(sT) for i in range(t.THREADS)]
    for w in range(t.THREADS // 32):
        for v in range(size(stores[0].layout)):
            offs = [_element_offset(stores[32 * w + lane], v) for lane in range(32)]
            banks = {o % 32 for o in offs}
            assert len(banks) == 32, (w, v, offs)
    loads = [t.COPY_OUT.get_slice(i).partition_S(sT) for i in range(t.THREADS)]
    for q in range(t.THREADS // 8):
        for g in range(size(loads[0].layout) // 4):
            chunks = [_element_offset(loads[8 * q + lane], 4 * g) // 4 for lane in range(8)]
            assert len({c % 8 for c in chunks}) == 8, (q, g, chunks)


def _element_offset(part, i):
    """The swizzled shared offset of value ``i`` of a host partition."""
    return part.engine.offset + part.layout(i)


def test_unswizzled_transpose_would_conflict():
    """Without the swizzle the same stores are 8-way bank conflicts (what the swizzle is for)."""
    from layoutalg import make_tensor

    t = _load("transpose")
    plain = Layout((t.BM, t.BN), (1, t.BM))
    sT = make_tensor(np.zeros(1024, np.float32), plain)
    offs = [_element_offset(t.COPY_IN_S.get_slice(lane).partition_D(sT), 0) for lane in range(32)]
    assert len({o % 32 for o in offs}) == 4


# ---- bad input: compile-time errors naming the call, the layout and the values -------------------

def _compile(fn, sig):
    from numba import cuda

    cute.activate()                       # Layout and Swizzle typed in kernels (a test may run first)
    return cuda.compile_ptx(fn, sig, cc=(8, 0))


LAY = Layout((16, 8), (8, 1))
LA16, LB16, LC16 = Layout((16, 16)), Layout((8, 16)), Layout((16, 8))    # (M,K), (N,K), (M,N)
LA_MMAJOR = Layout((16, 16), (1, 16))                                   # (M,K) -> offset, M-major
SW = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))


def _kernel_wrong_rank(A):
    t = cute.make_tensor(A, LAY)
    A[0] = t[1, 2, 3]


def _kernel_tile_does_not_divide(A):
    t = cute.make_tensor(A, LAY)
    s = cute.local_tile(t, (6, 8), (0, 0))
    A[0] = s[0]


CP_F16 = make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((16, 1)), Layout((1, 8)))


def _kernel_copy_width(A):
    g = cute.make_tensor(A, LAY)
    s = cute.make_shared_tensor(np.float32, LAY)
    thr = CP_F16.get_slice(0)
    cute.copy(CP_F16, thr.partition_S(g), thr.partition_D(s))


def _kernel_wrong_fragment(A):
    thr = MMA_F16.get_slice(0)
    s = cute.make_shared_tensor(np.float16, LA16)
    sb = cute.make_shared_tensor(np.float16, LB16)
    c = cute.make_shared_tensor(np.float32, LC16)
    a = thr.partition_A(s)                    # shared memory, not registers
    b = thr.partition_fragment_B(sb)
    acc = thr.partition_fragment_C(c)
    cute.gemm(MMA_F16, acc, a, b)


def _kernel_fragment_dtype(A):
    thr = MMA_F16.get_slice(0)
    s = cute.make_shared_tensor(np.float16, LA16)
    sb = cute.make_shared_tensor(np.float16, LB16)
    c = cute.make_shared_tensor(np.float32, LC16)
    a = cute.make_fragment_like(thr.partition_A(s), np.float32)       # f32, the atom wants f16
    b = thr.partition_fragment_B(sb)
    acc = thr.partition_fragment_C(c)
    cute.gemm(MMA_F16, acc, a, b)


def _kernel_identity_write(A):
    c = cute.make_identity_tensor((4, 8))
    c[0, 0] = 1


def _kernel_ldsm_misaligned(A):
    s = cute.make_shared_tensor(np.float16, LA_MMAJOR)    # M-major A
    thr = LDSM_A.get_slice(0)
    frag = MMA_F16.get_slice(0).partition_fragment_A(s)
    cute.copy(LDSM_A, thr.partition_S(s), thr.retile_D(frag))


def _kernel_layout_partial(A):
    A[0] = LAY(None, 1)


def _kernel_layout_call(A):
    i = cuda.threadIdx.x
    A[i] = LAY(i) + LAY(i, 3) + SW(1, i)


from layoutalg import make_tiled_copy_A, make_tiled_mma  # noqa: E402

MMA_F16 = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN")
LDSM_A = make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), MMA_F16)

BAD = [
    (_kernel_wrong_rank, "void(float32[::1])", [r"tensor\[\.\.\.\]", r"\(16,8\):\(8,1\)", r"3 coordinates for a mode of rank 2"]),
    (_kernel_tile_does_not_divide, "void(float32[::1])", [r"local_tile", r"tile \(6, 8\) does not divide", r"\(16,8\):\(8,1\)",
                                                     r"mode 0 has size 16"]),
    (_kernel_copy_width, "void(float32[::1])", [r"copy", r"SM80_CP_ASYNC_CACHEGLOBAL_128 of f16 moves 16-bit values",
                                          r"32-bit elements"]),
    (_kernel_wrong_fragment, "void(float32[::1])", [r"gemm", r"A must be a register fragment", r"smem float16"]),
    (_kernel_fragment_dtype, "void(float32[::1])", [r"gemm", r"needs float16 A fragments", r"rmem float32"]),
    (_kernel_identity_write, "void(float32[::1])", [r"read-only", r"identity tensor"]),
    (_kernel_ldsm_misaligned, "void(float32[::1])", [r"copy", r"SM75_U32x4_LDSM_N", r"not contiguous"]),
    (_kernel_layout_partial, "void(float32[::1])", [r"layout \(16,8\):\(8,1\)", r"leaves modes", r"unindexed"]),
]


def test_layout_call_compiles_to_shifts_and_masks():
    """``L(i)``, ``L(i, 3)`` and a swizzled ``S(1, i)`` in a kernel: no division."""
    text = _compile(_kernel_layout_call, "void(float32[::1])")[0]
    assert not re.search(r"\b(div|rem)\.[su]", text)
    assert "xor.b" in text                                       # the swizzle


@pytest.mark.parametrize("fn,sig,patterns", BAD, ids=[b[0].__name__ for b in BAD])
def test_bad_input_is_a_compile_time_error_naming_the_values(fn, sig, patterns):
    from codegen.cute import CuteError

    with pytest.raises(CuteError) as e:
        _compile(fn, sig)
    msg = str(e.value)
    for p in patterns:
        assert re.search(p, msg), (p, msg)


def test_called_outside_a_kernel_says_so():
    with pytest.raises(RuntimeError, match="only callable inside a numba.cuda kernel"):
        cute.make_tensor(np.zeros(4), LAY)


def test_module_docstrings_run():
    """The ``==``/``>>>`` examples of the codegen.cute modules hold."""
    import doctest

    import codegen.cute.atom_plan
    import codegen.cute.checks
    import codegen.cute.launch
    import codegen.cute.offsets
    import codegen.cute.types

    for mod in (codegen.cute.offsets, codegen.cute.checks, codegen.cute.atom_plan, codegen.cute.types,
                codegen.cute.launch):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.failed == 0, mod.__name__
        assert res.attempted > 0, mod.__name__


# ---- device typing and offsets against the host algebra, at every thread and tile --------------

def _device_tensor(layout, dtype="float32", space="smem"):
    from numba.cuda import types as nt

    from codegen.cute.types import TensorType

    return TensorType(getattr(nt, dtype), space, None, layout)


def _host_tensor(layout):
    from layoutalg import make_tensor

    return make_tensor(np.zeros(max(1, _cosize(layout)), np.float32), layout)


def _cosize(layout):
    from layoutalg import cosize

    return cosize(layout)


def _offset_of(part):
    return int(part.engine.offset)


@pytest.mark.parametrize("which", ["S", "D"])
def test_copy_partition_type_and_offset_equal_the_host_for_every_thread(which):
    from layoutalg import make_tiled_copy_A, make_tiled_mma
    from codegen.cute.device_tiled import _copy_partition
    from codegen.cute.offsets import emit_terms

    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", (2, 4, 1), (32, 64, 16))
    for tc, lay in (
        (make_tiled_copy(CopyAtom("SM80_CP_ASYNC_CACHEGLOBAL_128", "f16"), Layout((32, 8), (8, 1)), Layout((1, 8))),
         Layout((128, 64, 3), (64, 1, 8192))),                                     # (BM,BK,PIPE) K-major
        (make_tiled_copy_A(CopyAtom("SM75_U32x4_LDSM_N", "f16"), mma), Layout((128, 64), (64, 1))),
        (make_tiled_copy(CopyAtom("UniversalCopy_32", "f32"), Layout((8, 8), (1, 8)), Layout((4, 1))),
         Layout((32, 32), (1, 32))),
    ):
        ty = _device_tensor(lay, "float16")
        sub, terms = _copy_partition("partition", tc, ty, which)
        f = _jit(lambda b, a: emit_terms(b, terms, a), 1)
        for tid in range(tc.size):
            thr = tc.get_slice(tid)
            host = (thr.partition_S if which == "S" else thr.partition_D)(_host_tensor(lay))
            assert str(host.layout) == str(sub)
            assert f(tid) == _offset_of(host), (tc, tid)


@pytest.mark.parametrize("which", ["A", "B", "C"])
def test_mma_partition_type_and_offset_equal_the_host_for_every_thread(which):
    from layoutalg import make_tiled_mma
    from codegen.cute.device_tensor import flat_coord_values
    from codegen.cute.device_tiled import _mma_partition
    from codegen.cute.offsets import emit_terms

    for mma, shape in ((make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", (2, 4, 1), (32, 64, 16)), (128, 256, 64)),
                       (make_tiled_mma("SM80_16x8x8_F32TF32TF32F32_TN", (2, 2, 1), (32, 32, 8)), (64, 32, 16))):
        M, N, K = shape
        lay = {"A": Layout((M, K), (K, 1)), "B": Layout((N, K), (1, N)), "C": Layout((M, N), (N, 1))}[which]
        sub, terms = _mma_partition("partition", mma, _device_tensor(lay), which)
        f = _jit(lambda b, a: emit_terms(b, terms, flat_coord_values(b, mma.thr_layout_vmnk, a[0])), 1)
        for tid in range(mma.size):
            thr = mma.get_slice(tid)
            host = getattr(thr, f"partition_{which}")(_host_tensor(lay))
            assert str(host.layout) == str(sub)
            assert f(tid) == _offset_of(host), (which, tid)


@pytest.mark.parametrize("proj", [None, (1, None, 1)])
def test_local_tile_type_and_offset_equal_the_host_for_every_tile(proj):
    from numba.cuda import types as nt

    from layoutalg import local_tile
    from codegen.cute.device_tensor import _tile_spec
    from codegen.cute.offsets import emit_terms

    lay = Layout((64, 96), (96, 1))                                  # (M,N) -> offset
    tiler = (16, 8, 32) if proj else (16, 32)
    tiler_ty = nt.Tuple([nt.IntegerLiteral(t) for t in tiler])
    if proj:
        coord_ty = nt.Tuple([nt.int64, nt.int64, nt.none])
        proj_ty = nt.Tuple([nt.IntegerLiteral(1), nt.none, nt.IntegerLiteral(1)])
    else:
        coord_ty, proj_ty = nt.Tuple([nt.int64, nt.none]), None
    ts = _tile_spec("local_tile", _device_tensor(lay), tiler_ty, coord_ty, proj_ty)
    sub, terms = ts.sub, ts.terms
    f = _jit(lambda b, a: emit_terms(b, terms, a), 2)
    for m in range(64 // 16):
        crd = (m, 3, None) if proj else (m, None)
        host = local_tile(_host_tensor(lay), tiler, crd, proj)
        assert str(host.layout) == str(sub)
        assert f(m, 3) == _offset_of(host)


def test_local_partition_type_and_offset_equal_the_host_for_every_thread():
    from layoutalg import local_partition
    from codegen.cute.device_tensor import _partition_spec, flat_coord_values
    from codegen.cute.offsets import emit_terms

    lay, thr = Layout((32, 32), (32, 1)), Layout((8, 8), (8, 1))
    ts = _partition_spec("local_partition", _device_tensor(lay), thr, None)
    sub, terms = ts.sub, ts.terms
    f = _jit(lambda b, a: emit_terms(b, terms, flat_coord_values(b, thr, a[0])), 1)
    for tid in range(64):
        host = local_partition(_host_tensor(lay), thr, tid)
        assert str(host.layout) == str(sub)
        assert f(tid) == _offset_of(host)


MMA_BF16 = make_tiled_mma("SM80_16x8x16_F32BF16BF16F32_TN")
MMA_F64 = make_tiled_mma("SM80_8x8x4_F64F64F64F64_TN")
LA8, LB8, LC8 = Layout((8, 4)), Layout((8, 4)), Layout((8, 8))


def _kernel_bf16(A):
    thr = MMA_BF16.get_slice(cuda.threadIdx.x)
    a = thr.partition_fragment_A(cute.make_shared_tensor(np.uint16, LA16))
    b = thr.partition_fragment_B(cute.make_shared_tensor(np.uint16, LB16))
    c = thr.partition_fragment_C(cute.make_shared_tensor(np.float32, LC16))
    cute.fill(a, 1)
    cute.fill(b, 2)
    cute.clear(c)
    cute.gemm(MMA_BF16, c, a, b)
    A[cuda.threadIdx.x] = c[0]


def _kernel_f64(A):
    thr = MMA_F64.get_slice(cuda.threadIdx.x)
    a = thr.partition_fragment_A(cute.make_shared_tensor(np.float64, LA8))
    b = thr.partition_fragment_B(cute.make_shared_tensor(np.float64, LB8))
    c = thr.partition_fragment_C(cute.make_shared_tensor(np.float64, LC8))
    cute.fill(a, 1.5)
    cute.fill(b, 2.0)
    cute.clear(c)
    cute.gemm(MMA_F64, c, a, b)
    A[cuda.threadIdx.x] = c[0] + c[1]


@pytest.mark.parametrize("fn,instr", [(_kernel_bf16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
                                      (_kernel_f64, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64")])
def test_bf16_and_f64_atoms_compile(fn, instr):
    text = _compile(fn, "void(float64[::1])")[0]
    assert instr in text
    assert ".local" not in text
