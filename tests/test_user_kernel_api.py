"""codegen.cute API details that kernels written against it rely on: number conversions,
fragment types, projections and tilers as constants, predicated copies, warp shuffles, torch
bf16 arrays, device functions, and what the simulator reports when a lane fails.

Each feature is compiled offline to PTX (no GPU needed) and run in numba's simulator (a
subprocess with ``NUMBA_ENABLE_CUDASIM=1``) against numpy; ``tests/gpu/check_user_kernels.py``
runs the same kernels on a GPU.
"""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
pytestmark = pytest.mark.skipif(SIM, reason="compiles PTX; the simulator runs are subprocesses")

from numba import cuda  # noqa: E402

from codegen import cute  # noqa: E402
from codegen.cute.sim import bf16_bits  # noqa: E402
from layoutalg import CopyAtom, Layout, make_tiled_copy  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "gpu"))
import user_kernel_cases as K  # noqa: E402


def _compile(fn, sig):
    return cuda.compile_ptx(fn, sig, cc=(8, 0))[0]


def _run_sim(code, timeout=600):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "gpu")]
                                          + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def _bf16_reference(x):
    """float32 -> bfloat16 bits, round to nearest even, from integer arithmetic on the bits."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    out = (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    out[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return out


SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, 1.00390625, 1.005859375, 1.0029296875, 3.0e38, -3.4e38, 1e-40,
                    -1e-45, np.inf, -np.inf, np.nan, 65504.0, 2.0 ** -133, 1.99609375], np.float32)


# ---- conversions ---------------------------------------------------------------------------------

def test_bf16_rounding_of_the_simulator_equals_numpys():
    """The simulator's twin of ``convert(..., "bf16")`` at special values and ties and 20000
    random bit patterns, against numpy; the device rounds with ``cvt.rn.bf16.f32``, the same
    rounding (``test_conversions_compile_offline``; on the GPU: ``tests/gpu/check_user_kernels.py``)."""
    rng = np.random.default_rng(0)
    bits = np.concatenate([SPECIAL.view(np.uint32), rng.integers(0, 1 << 32, 20000, dtype=np.uint64)
                           .astype(np.uint32)])
    x = bits.view(np.float32)
    want = _bf16_reference(x)
    got = np.array([bf16_bits(v) for v in x], np.uint16)
    nan = np.isnan(x)
    assert (got[~nan] == want[~nan]).all()
    assert np.isnan(((got[nan].astype(np.uint32) << 16).view(np.float32))).all()     # a NaN stays a NaN
    assert bf16_bits(1.5) == 0x3FC0 and bf16_bits(-3.0) == 0xC040


def test_conversions_compile_offline():
    text = _compile(K.k_convert, K.SIG_CONVERT)
    assert "cvt.rn.f16.f32" in text                 # f16: the hardware's rounding
    assert "cvt.rzi.s32.f32" in text                # "int": truncation, asked for
    assert "cvt.rna.tf32.f32" in text               # tf32: nearest, ties away, as the MMA atoms take it
    assert "cvt.rn.bf16.f32" in text                # bf16: nearest even, one instruction
    assert ".local" not in text


def test_float_to_integer_copy_is_a_compile_time_error_naming_convert():
    with pytest.raises(Exception, match=r"copy.*float32.*uint16.*convert\(src, dst, \"bf16\"\)"):
        _compile(K.k_copy_f32_to_u16, "void(float32[::1], uint16[::1])")
    with pytest.raises(Exception, match=r"convert: to='bf8' is not one of 'bf16', 'f16', 'tf32', 'int'"):
        _compile(K.k_convert_bad, "void(float32[::1], uint16[::1])")


COPY_128 = make_tiled_copy(CopyAtom("UniversalCopy_128", "f16"), Layout(1), Layout(8))   # (T1,V8)
L4, L8 = Layout(4), Layout(8)


def test_make_ptr_refuses_bad_input_when_compiled_and_simulated():
    def bad_align(X):
        cute.make_tensor(cute.make_ptr(np.float32, X, 12), L4)[0] = 1.0

    def float_address(X):
        cute.make_tensor(cute.make_ptr(np.float32, X), L4)[0] = 1.0

    with pytest.raises(Exception, match=r"make_ptr: align must be a power-of-two constant \(bytes\), got 12"):
        _compile(bad_align, "void(int64)")
    with pytest.raises(Exception, match=r"make_ptr: expected \(dtype, address\[, align\]\)"):
        _compile(float_address, "void(float64)")

    def f16_vector(X, Y):                         # 8-byte aligned f16: a 16-byte vector copy is refused
        src = cute.make_tensor(cute.make_ptr(np.float16, X, 8), L8)
        cute.copy(COPY_128, src, cute.make_tensor(Y, L8))

    with pytest.raises(Exception, match=r"known to be a multiple of only 4 elements, not 8"):
        _compile(f16_vector, "void(int64, float16[::1])")
    res = _run_sim("""
        import numpy as np
        from codegen import cute
        from codegen.intrinsics.sim import register_global
        a = np.zeros(64, np.float32)
        for addr in (register_global(a) + 4, 16):
            try:
                cute.make_ptr(np.float32, addr)
            except cute.CuteError as e:
                print(e)
        f = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))   # memory order, not C order
        p = cute.make_ptr(np.float32, register_global(f))
        print("F", np.shares_memory(p.array, f), p.array[:4].tolist())
        try:
            cute.make_ptr(np.float64, register_global(f), 4)
        except cute.CuteError as e:
            print(e)
    """)
    assert "is not 16-byte aligned" in res.stdout and "is in no array registered" in res.stdout, res.stdout + res.stderr
    assert "F True [0.0, 4.0, 8.0, 1.0]" in res.stdout, res.stdout + res.stderr
    assert "align 4 is less than a float64 element (8 bytes)" in res.stdout, res.stdout + res.stderr


# ---- bf16 tensors: cute.bfloat16 ---------------------------------------------------------------

BF16_KERNEL = '''
import numpy as np
from numba import cuda
from codegen import cute
from layoutalg import Layout

L = Layout((4, 8), (8, 1))                     # (4,8) -> offset, row-major
L8 = Layout(8)


def k_bf16(src, dst, out):
    """Thread i reads row i of the bf16 tensor at src (an element, a tile's element, a fragment
    copied from the tile) into float32 out, and writes two columns of a column-major bf16 tensor
    at dst (a product, rounded; a fragment filled with 0.1)."""
    s = cute.make_tensor(cute.make_ptr(cute.bfloat16, src, 2), L)
    d = cute.make_tensor(cute.make_ptr(cute.bfloat16, dst, 2), cute.make_layout((4, 8), (1, 4)))
    o = cute.make_tensor(out, L)
    i = cuda.threadIdx.x
    row = cute.local_tile(s, (1, 8), (i, 0))    # (1,8) -> offset
    o[i, 0] = s[i, 1] + 0.5
    f = cute.make_fragment_like(row)            # bf16 as well: the copy moves the bits
    cute.copy(row, f)
    o[i, 1] = f[0, 2]
    d[i, 3] = row[0, 3] * 3.0
    cute.fill(f, 0.1)
    d[i, 0] = f[0, 0]


def bf16_to_f32(src, out):
    s = cute.make_tensor(cute.make_ptr(cute.bfloat16, src, 2), L8)
    cute.copy(s, cute.make_tensor(out, L8))


def bf16_convert(src, out):
    f = cute.make_fragment_like(L8, np.uint16)
    cute.convert(cute.make_tensor(cute.make_ptr(cute.bfloat16, src, 2), L8), f, "bf16")
'''


def _bf16_kernels():
    ns = {}
    exec(compile(BF16_KERNEL, "<bf16 kernels>", "exec"), ns)
    return ns


def test_bf16_tensors_read_and_write_float32_offline():
    """A ``make_ptr(cute.bfloat16, ...)`` tensor: a read is the bits shifted into a float32's
    upper half, a write ``cvt.rn.bf16.f32``, in registers (no local memory, sm_90a)."""
    ns = _bf16_kernels()
    text = cuda.compile_ptx(ns["k_bf16"], "void(int64, int64, float32[::1])", cc=(9, 0, "a"))[0]
    assert "ld.global.u16" in text and re.search(r"shl\.b32\s+%r\d+, %r\d+, 16;", text), text
    assert "cvt.rn.bf16.f32" in text and "st.global.u16" in text and ".local" not in text, text
    assert not re.search(r"cvt\.rn\.f32\.u(16|32)", text), "a bf16 element read as an integer"
    if shutil.which("ptxas"):
        from codegen.driver import ptxas_cubin

        cubin, log = ptxas_cubin(text, "sm_90a", verbose=True)
        assert cubin is not None and "0 bytes stack frame" in log, log


def test_bf16_tensors_copy_bits_and_refuse_to_read_them_as_numbers():
    ns = _bf16_kernels()
    with pytest.raises(Exception, match=r"copy: the source gmem bfloat16 tensor 8:1 holds bfloat16 bits, which an "
                                        r"element-wise copy moves only to and from bfloat16, uint16, int16 tensors, "
                                        r"got a gmem float32 tensor"):
        _compile(ns["bf16_to_f32"], "void(int64, float32[::1])")
    with pytest.raises(Exception, match=r"convert: the source gmem bfloat16 tensor 8:1 holds bfloat16 bits"):
        _compile(ns["bf16_convert"], "void(int64, float32[::1])")


def test_bf16_tensors_read_and_write_float32_in_the_simulator():
    ml = pytest.importorskip("ml_dtypes")
    res = _run_sim(BF16_KERNEL + """
import ml_dtypes
from codegen.intrinsics.sim import register_global
bf16 = ml_dtypes.bfloat16
src = np.array([1.5, -3.0, 1.0078125, 2.0 ** -130, -0.0, 100.5, 0.33203125, 7.0], np.float32)
src = np.concatenate([src, src * 2, -src, src / 4]).reshape(4, 8).astype(bf16)
dst = np.zeros(32, bf16)
out = np.zeros((4, 8), np.float32)
cuda.jit(k_bf16)[1, 4](register_global(src), register_global(dst), out.reshape(-1))
s = src.astype(np.float32)
d = dst.reshape(8, 4).T
assert np.array_equal(out[:, 0], s[:, 1] + 0.5) and np.array_equal(out[:, 1], s[:, 2]), out
want = (s[:, 3] * 3).astype(bf16)
assert np.array_equal(d[:, 3].view(np.uint16), want.view(np.uint16)), (d[:, 3], want)
assert (d[:, 0].view(np.uint16) == 0x3DCD).all(), d[:, 0]        # 0.1, rounded to nearest even
for name in ("bf16_to_f32", "bf16_convert"):
    try:
        cuda.jit(globals()[name])[1, 1](register_global(src), out.reshape(-1))
    except cute.CuteError as e:
        print(e)
print("BF16 OK")
""")
    assert "BF16 OK" in res.stdout, res.stdout + res.stderr
    assert "copy: the source gmem bfloat16 tensor 8:1 holds bfloat16 bits" in res.stdout, res.stdout
    assert "convert: the source gmem bfloat16 tensor 8:1 holds bfloat16 bits" in res.stdout, res.stdout
    assert ml.bfloat16(1.0078125 * 3) != np.float32(1.0078125 * 3)      # the product above is rounded


# ---- every case: offline PTX, and the simulator against numpy -----------------------------------

INSTRUCTIONS = {
    "convert": ["cvt.rn.f16.f32", "cvt.rna.tf32.f32"],
    "copy_if": ["cp.async.cg.shared.global", "selp.b32"],         # the source size: 16 or 0 (zero fill)
    "shuffle": ["shfl.sync.idx.b32", "shfl.sync.up.b32", "shfl.sync.down.b32", "shfl.sync.bfly.b32",
                "vote.sync.ballot.b32"],
    "bf16_mma": ["ldmatrix.sync.aligned.m8n8.x4.shared.b16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"],
    "partition": [],
    "device_function": ["fma.rn.f32"],
    "runtime_shape": ["fma.rn.f32", "mul.lo.s64"],      # a row step: one multiply by the run-time ld
    "pointer": ["fma.rn.f32", "mul.lo.s64"],
    "fma": ["fma.rn.f32"],
    "mark_in_bounds": ["setp.gt.u64"],                  # 0 <= c < extent: one unsigned comparison
}


@pytest.mark.parametrize("name", list(K.KERNELS))
def test_case_compiles_offline(name):
    fn, sig = K.KERNELS[name]
    text = _compile(fn, sig)
    for instr in INSTRUCTIONS[name]:
        assert instr in text, (name, instr)
    assert ".local" not in text, f"{name}: a fragment went to local memory"


def test_cases_run_in_the_simulator_as_numpy_computes():
    res = _run_sim("""
        import sys
        sys.setswitchinterval(1e-4)
        import user_kernel_cases as K
        for name, check in K.CHECKS.items():
            ok, msg = check()
            print("PASS" if ok else "FAIL", name, msg)
    """)
    assert res.returncode == 0, res.stdout + res.stderr
    for name in K.CHECKS:
        assert f"PASS {name} " in res.stdout, res.stdout + res.stderr


def test_one_tuple_projection_partitions_by_mode_as_on_the_host():
    """``local_partition(s, (4,32) threads, tid, (1, None))`` is (2,32) in the kernel, as on the
    host and in CuTe (a 1-tuple tiler tiles mode 0), not a rank-1 (64)."""
    from numba.cuda import types as nt

    from codegen.cute.device_tensor import _partition_spec
    from codegen.cute.types import TensorType
    from layoutalg import local_partition, make_tensor

    for lay, proj in ((K.LP, (1, None)), (Layout((64, 4), (4, 1)), (None, 1))):   # the kept tile: mode 0
        sub = _partition_spec("local_partition", TensorType(nt.float32, "gmem", None, lay), K.THR, proj).sub
        host = local_partition(make_tensor(np.zeros(256, np.float32), lay), K.THR, 5, proj)
        assert str(sub) == str(host.layout)
        assert isinstance(sub.shape, tuple) and len(sub.shape) == 2


def test_projection_given_as_a_global_is_read_as_a_constant():
    from numba.cuda import types as nt

    from codegen.cute.device_tensor import _projection

    assert _projection("local_tile", nt.Tuple([nt.int64, nt.none])) == (1, None)
    assert _projection("local_tile", nt.Tuple([nt.IntegerLiteral(1), nt.none, nt.int64])) == (1, None, 1)
    with pytest.raises(cute.CuteError, match="projection must be a tuple of ints and None"):
        _projection("local_tile", nt.float32)


def test_a_global_tiler_with_none_says_to_write_it_in_the_kernel():
    TILER = (16, None)  # noqa: N806  (a global in real code; here the type numba gives it)
    from numba.cuda import types as nt

    from codegen.cute.device_tensor import _literal_ints

    with pytest.raises(cute.CuteError, match="only when none of its entries is None"):
        _literal_ints("local_tile", nt.Tuple([nt.int64, nt.none]), f"the tiler {TILER}")


def test_copy_if_refuses_a_predicate_of_the_wrong_size_and_ldmatrix():
    from codegen.cute.atom_plan import TensorInfo, copy_if_plan

    src = TensorInfo("gmem", 16, None, Layout(((8, 1), 1, 1), ((1, 0), 0, 0)), "float16")
    dst = TensorInfo("smem", 16, None, Layout(((8, 1), 1, 1), ((1, 0), 0, 0)), "float16")
    pred = TensorInfo("rmem", 8, None, Layout((2, 1)), "int8")
    with pytest.raises(cute.CuteError, match=r"predicate .* has 2 values, but the copy makes 1 calls"):
        copy_if_plan(K.ZF, pred, src, dst)
    with pytest.raises(cute.CuteError, match="booleans or integers"):
        copy_if_plan(K.ZF, TensorInfo("rmem", 32, None, Layout((1, 1)), "float32"), src, dst)
    s = TensorInfo("smem", 16, None, Layout(((8, 1), 1, 1), ((1, 0), 0, 0)), "uint16")
    r = TensorInfo("rmem", 16, None, Layout(((2, 2, 2), 1, 1), ((1, 2, 4), 0, 0)), "uint16")
    with pytest.raises(cute.CuteError, match="warp collective"):
        copy_if_plan(K.LDSM_A, TensorInfo("rmem", 8, None, Layout(1), "int8"), s, r)


def test_kernel_arg_passes_bf16_arrays_as_their_bits():
    from codegen.cute.launch import kernel_arg

    ml = pytest.importorskip("ml_dtypes")
    x = np.array([1.5, -3.0], dtype=ml.bfloat16)
    v = kernel_arg(x)
    assert v.dtype == np.uint16 and v.tolist() == [0x3FC0, 0xC040]
    y = np.zeros(2, np.float32)
    assert kernel_arg(y) is y

