"""The atom tables against the hardware: each instruction runs on the GPU.

For every MMA / copy entry the GPU can run, a kernel executes the entry's PTX
text with per-lane registers built from the CuTe tables (``emulate.scatter`` +
``emulate.pack``); the result is compared with the host emulation and with numpy.
wgmma B (and A for ``SS``) are placed in shared memory in the no-swizzle K-major
canonical layout and passed by descriptor.

Needs a CUDA GPU, CuPy and ``nvcc`` on the PATH; skipped otherwise.  The
CuTe spellings of ``.satfinite`` and ``ldmatrix``/``stmatrix`` qualifiers are run
too, to show they assemble to the same instruction.
"""

import os
import shutil
import subprocess
import tempfile
import zlib

import numpy as np
import pytest

import mma_atoms
from mma_atoms import emulate as E

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")


def _cc():
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
        major, minor = cp.cuda.Device(0).compute_capability[:1], cp.cuda.Device(0).compute_capability[1:]
        return int(major) * 10 + int(minor)
    except Exception:
        return None


CC = _cc()
if CC is None or shutil.which("nvcc") is None:
    pytest.skip("needs a CUDA GPU, CuPy and nvcc", allow_module_level=True)

# wgmma N values run by default; MMA_ATOMS_GPU_ALL=1 runs all 32 (N = 8, 16, ..., 256)
WGMMA_N = tuple(range(8, 257, 8)) if os.environ.get("MMA_ATOMS_GPU_ALL") else (8, 16, 24, 64, 136, 256)
_CTYPE = {"u32": ("unsigned", "r"), "f32": ("float", "f"), "f64": ("double", "d"), "u64": ("unsigned long long", "l")}


def _load(reg_type, expr):
    return {"u32": f"(unsigned)({expr})", "f32": f"__uint_as_float((unsigned)({expr}))",
            "f64": f"__longlong_as_double((long long)({expr}))", "u64": f"({expr})"}[reg_type]


def _store(reg_type, var):
    return {"u32": f"(unsigned long long){var}", "f32": f"(unsigned long long)__float_as_uint({var})",
            "f64": f"(unsigned long long)__double_as_longlong({var})", "u64": var}[reg_type]


def _kid(name, variant=""):
    return "k_" + "".join(c if c.isalnum() else "_" for c in name) + variant


def _runnable(op):
    if op.min_sm > CC:
        return False
    if op.kind == "wgmma":
        return CC == 90 and op.shape_mnk[1] in WGMMA_N
    if op.name.endswith("XORPOPC") and CC >= 90:      # CuTe enables .xor.popc only below sm_90
        return False
    return op.kind in ("mma_sync", "ldsm", "stsm", "cp_async")


def _cute_ptx(op):
    """CuTe's spelling of the same instruction, where it differs."""
    if op.ptx.startswith("mma.sync") and ".satfinite" in op.ptx:
        return op.ptx.replace(".satfinite", "") + ".satfinite"
    if op.kind in ("ldsm", "stsm"):
        base = "ldmatrix" if op.kind == "ldsm" else "stmatrix"
        return f"{base}.sync.aligned.x{op.num_matrices}{'.trans' if op.transpose else ''}.m8n8.shared.b16"
    return None


def _mma_sync_kernel(op, kid, ptx):
    regs = {x: op.regs(x) for x in "abcd"}
    lines = [f'extern "C" __global__ void {kid}(const unsigned long long* A, const unsigned long long* B,',
             "    const unsigned long long* C, unsigned long long* D) {", "  int t = threadIdx.x;"]
    for x, buf in (("a", "A"), ("b", "B"), ("c", "C")):
        r = regs[x]
        for i in range(r.count):
            lines.append(f"  {_CTYPE[r.type][0]} {x}{i} = {_load(r.type, f'{buf}[t*{r.count}+{i}]')};")
    for i in range(regs["d"].count):
        lines.append(f"  {_CTYPE[regs['d'].type][0]} d{i};")
    n = 0
    groups = []
    for x in "dabc":
        groups.append("{" + ", ".join(f"%{n + i}" for i in range(regs[x].count)) + "}")
        n += regs[x].count
    outs = ", ".join(f'"={_CTYPE[regs["d"].type][1]}"(d{i})' for i in range(regs["d"].count))
    ins = ", ".join(f'"{_CTYPE[regs[x].type][1]}"({x}{i})' for x in "abc" for i in range(regs[x].count))
    lines.append(f'  asm volatile("{ptx} {", ".join(groups)};\\n" : {outs} : {ins});')
    for i in range(regs["d"].count):
        lines.append(f"  D[t*{regs['d'].count}+{i}] = {_store(regs['d'].type, f'd{i}')};")
    lines.append("}")
    return "\n".join(lines)


_DESC = """
__device__ __forceinline__ unsigned long long kmajor_desc(const void* smem) {
  // no-swizzle K-major canonical layout: 8x16-byte core matrices; LBO (K) = 128 B, SBO (M/N) = 256 B
  unsigned long long addr = (unsigned long long)__cvta_generic_to_shared(smem);
  return ((addr >> 4) & 0x3FFF) | ((unsigned long long)(128 >> 4) << 16) | ((unsigned long long)(256 >> 4) << 32);
}
"""


def _wgmma_kernel(op, kid):
    n = op.shape_mnk[1]
    dr = op.d_regs
    ct, cons = _CTYPE[dr.type]
    lines = [f'extern "C" __global__ void {kid}(const unsigned char* gA, const unsigned char* gB,',
             "    const unsigned long long* Areg, const unsigned long long* C, unsigned long long* D) {",
             "  __shared__ __align__(256) unsigned char sA[2048];",
             f"  __shared__ __align__(256) unsigned char sB[{n * 32}];",
             "  int t = threadIdx.x;",
             "  for (int i = t; i < 2048; i += 128) sA[i] = gA[i];",
             f"  for (int i = t; i < {n * 32}; i += 128) sB[i] = gB[i];",
             "  __syncthreads();",
             '  asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");',
             "  __syncthreads();",
             "  unsigned long long descA = kmajor_desc(sA), descB = kmajor_desc(sB);"]
    for i in range(4):
        lines.append(f"  unsigned a{i} = (unsigned)Areg[t*4+{i}];")
    for i in range(dr.count):
        lines.append(f"  {ct} d{i} = {_load(dr.type, f'C[t*{dr.count}+{i}]')};")
    lines.append('  asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");')
    dl = ", ".join(f"%{i}" for i in range(dr.count))
    k = dr.count
    tnsp = op.a_type in ("f16", "bf16")      # transpose immediates exist for 16-bit inputs only
    if op.a_source == "smem_desc":
        body = f"{op.ptx} {{{dl}}}, %{k}, %{k + 1}, p, 1, 1" + (", 0, 0;" if tnsp else ";")
        ins = '"l"(descA), "l"(descB), "r"(1)'
        pred = k + 2
    else:
        body = f"{op.ptx} {{{dl}}}, {{%{k}, %{k + 1}, %{k + 2}, %{k + 3}}}, %{k + 4}, p, 1, 1" + (", 0;" if tnsp else ";")
        ins = '"r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(descB), "r"(1)'
        pred = k + 5
    outs = ", ".join(f'"+{cons}"(d{i})' for i in range(dr.count))
    lines.append(f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{pred}, 0;\\n{body}\\n}}\\n" '
                 f': {outs} : {ins} : "memory");')
    lines.append('  asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");')
    lines.append('  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");')
    for i in range(dr.count):
        lines.append(f"  D[t*{dr.count}+{i}] = {_store(dr.type, f'd{i}')};")
    lines.append("}")
    return "\n".join(lines)


def _ldsm_kernel(op, kid, ptx):
    num = op.num_matrices
    regs = ", ".join(f"%{i}" for i in range(num))
    outs = ", ".join(f'"=r"(r{i})' for i in range(num))
    return "\n".join([
        f'extern "C" __global__ void {kid}(const unsigned char* g, const long long* addr, unsigned long long* R) {{',
        "  __shared__ __align__(16) unsigned char s[2048];",
        "  int t = threadIdx.x;",
        "  for (int i = t; i < 2048; i += 32) s[i] = g[i];",
        "  __syncwarp();",
        "  unsigned p = (unsigned)__cvta_generic_to_shared(s + addr[t]);",
        f"  unsigned {', '.join(f'r{i}' for i in range(num))};",
        f'  asm volatile("{ptx} {{{regs}}}, [%{num}];\\n" : {outs} : "r"(p));',
        *[f"  R[t*{num}+{i}] = r{i};" for i in range(num)],
        "}"])


def _stsm_kernel(op, kid, ptx):
    num = op.num_matrices
    regs = ", ".join(f"%{i + 1}" for i in range(num))
    ins = ", ".join(f'"r"((unsigned)R[t*{num}+{i}])' for i in range(num))
    return "\n".join([
        f'extern "C" __global__ void {kid}(unsigned char* g, const long long* addr, const unsigned long long* R) {{',
        "  __shared__ __align__(16) unsigned char s[2048];",
        "  int t = threadIdx.x;",
        "  for (int i = t; i < 2048; i += 32) s[i] = g[i];",
        "  __syncwarp();",
        "  unsigned p = (unsigned)__cvta_generic_to_shared(s + addr[t]);",
        f'  asm volatile("{ptx} [%0], {{{regs}}};\\n" :: "r"(p), {ins} : "memory");',
        "  __syncwarp();",
        "  for (int i = t; i < 2048; i += 32) g[i] = s[i];",
        "}"])


def _cp_async_kernel(op, kid):
    n = op.value_bits // 8
    return "\n".join([
        f'extern "C" __global__ void {kid}(const unsigned char* src, unsigned char* dst, int so, int do_) {{',
        "  __shared__ __align__(16) unsigned char s[64];",
        "  for (int i = 0; i < 64; ++i) s[i] = 0;",
        "  unsigned p = (unsigned)__cvta_generic_to_shared(s + do_);",
        f'  asm volatile("{op.ptx} [%0], [%1], {n};\\n" :: "r"(p), "l"(src + so) : "memory");',
        '  asm volatile("cp.async.commit_group;\\n" ::: "memory");',
        '  asm volatile("cp.async.wait_group 0;\\n" ::: "memory");',
        "  for (int i = 0; i < 64; ++i) dst[i] = s[i];",
        "}"])


def _ops():
    return [mma_atoms.get(n) for n in mma_atoms.names() if _runnable(mma_atoms.get(n))]


@pytest.fixture(scope="module")
def module():
    parts = ["#include <cuda_runtime.h>", _DESC]
    for op in _ops():
        alt = _cute_ptx(op)
        if op.kind == "mma_sync":
            parts.append(_mma_sync_kernel(op, _kid(op.name), op.ptx))
            if alt:
                parts.append(_mma_sync_kernel(op, _kid(op.name, "_cute"), alt))
        elif op.kind == "wgmma":
            parts.append(_wgmma_kernel(op, _kid(op.name)))
        elif op.kind in ("ldsm", "stsm"):
            make = _ldsm_kernel if op.kind == "ldsm" else _stsm_kernel
            parts.append(make(op, _kid(op.name), op.ptx))
            parts.append(make(op, _kid(op.name, "_cute"), alt))
        elif op.kind == "cp_async":
            parts.append(_cp_async_kernel(op, _kid(op.name)))
    arch = f"{CC}a" if CC == 90 else str(CC)
    tmp = tempfile.mkdtemp()
    src, cubin = os.path.join(tmp, "atoms.cu"), os.path.join(tmp, "atoms.cubin")
    with open(src, "w") as f:
        f.write("\n\n".join(parts))
    res = subprocess.run(["nvcc", "-cubin", f"-gencode=arch=compute_{arch},code=sm_{arch}", "-O1",
                          "-o", cubin, src], capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError("nvcc failed:\n" + res.stderr[-6000:])
    return cp.RawModule(path=cubin)


def _operands(op, rng):
    M, N, K = op.shape_mnk
    if op.a_type == "b1":
        return rng.integers(0, 2, (M, K)), rng.integers(0, 2, (N, K)), rng.integers(-500, 500, (M, N))
    if op.a_type in ("s8", "u8"):
        def ints(t, shape):
            return rng.integers(-128, 128, shape) if t == "s8" else rng.integers(0, 256, shape)
        return ints(op.a_type, (M, K)), ints(op.b_type, (N, K)), rng.integers(-10**6, 10**6, (M, N))
    return (rng.integers(-4, 5, (M, K)).astype(float), rng.integers(-4, 5, (N, K)).astype(float),
            rng.integers(-16, 17, (M, N)).astype(float))


def _lane_regs(op, operand, frags, lanes, nthreads):
    regs = E.pack(op, operand, frags)
    out = np.zeros((nthreads, regs.shape[1]), dtype=np.uint64)
    out[lanes] = regs
    return out


MMA_SYNC = [n for n in mma_atoms.names("mma_sync")]


@pytest.mark.parametrize("name", MMA_SYNC)
@pytest.mark.parametrize("overflow", [False, True])
def test_mma_sync_on_gpu(module, name, overflow):
    op = mma_atoms.get(name)
    if not _runnable(op):
        pytest.skip(f"{name} does not run on sm_{CC}")
    if overflow and op.c_type != "s32":
        pytest.skip("overflow case is for integer accumulators")
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    A, B, C = _operands(op, rng)
    if overflow:
        M, N, K = op.shape_mnk
        A, B, C = np.full((M, K), 100 if op.a_type != "b1" else 1), np.full((N, K), 100 if op.a_type != "b1" else 0), \
            np.full((M, N), 2**31 - 100)
    fa, fb, fc = E.scatter(op, "a", A), E.scatter(op, "b", B), E.scatter(op, "c", C)
    lanes = E.layout_table(op.thr_id, tv=False)
    want = E.mma(op, fa, fb, fc)
    for variant in ("", "_cute") if _cute_ptx(op) else ("",):
        dev = [cp.asarray(_lane_regs(op, x, f, lanes, 32)) for x, f in (("a", fa), ("b", fb), ("c", fc))]
        d = cp.zeros((32, op.d_regs.count), dtype=cp.uint64)
        module.get_function(_kid(name, variant))((1,), (32,), (*dev, d))
        got = E.unpack(op, "d", cp.asnumpy(d)[lanes])
        assert np.array_equal(got, want), variant
    if not overflow:
        ref = (A @ B.T + C) if op.a_type != "b1" else ((A[:, None, :] & B[None, :, :]).sum(-1) + C)
        assert np.array_equal(E.gather(op, "d", got), ref)


def _kmajor_bytes(mat, dtype):
    """Tile (rows, 32 bytes of K) in the no-swizzle K-major canonical layout used by the kernels
    (16-bit K 16, tf32 K 8, 8-bit floats K 32)."""
    rows, k = mat.shape
    eb = 32 // k
    codes = mma_atoms.numerics.encode(mat, dtype).astype(np.uint64)
    out = np.zeros(rows * 32, dtype=np.uint8)
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    byte = (r // 8) * 256 + (kk * eb // 16) * 128 + (r % 8) * 16 + (kk * eb) % 16
    for j in range(eb):                          # little-endian bytes of each element
        out[byte + j] = (codes >> np.uint64(8 * j)) & np.uint64(0xFF)
    return out


@pytest.mark.parametrize("name", [n for n in mma_atoms.names("wgmma")
                                  if mma_atoms.get(n).shape_mnk[1] in WGMMA_N])
def test_wgmma_on_gpu(module, name):
    op = mma_atoms.get(name)
    if not _runnable(op):
        pytest.skip(f"{name} needs sm_90a")
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    A, B, C = _operands(op, rng)
    fc = E.scatter(op, "c", C)
    areg = (E.pack(op, "a", E.scatter(op, "a", A)) if op.a_source == "rmem"
            else np.zeros((128, 4), dtype=np.uint64))
    want = E.mma(op, E.scatter(op, "a", A), E.scatter(op, "b", B), fc)
    d = cp.zeros((128, op.d_regs.count), dtype=cp.uint64)
    args = (cp.asarray(_kmajor_bytes(A, op.a_type)), cp.asarray(_kmajor_bytes(B, op.b_type)),
            cp.asarray(areg), cp.asarray(E.pack(op, "c", fc)), d)
    module.get_function(_kid(name))((1,), (128,), args)
    got = E.unpack(op, "d", cp.asnumpy(d))
    assert np.array_equal(got, want)
    assert np.array_equal(E.gather(op, "d", got), A @ B.T + C)


@pytest.mark.parametrize("name", mma_atoms.names("ldsm") + mma_atoms.names("stsm"))
def test_matrix_copies_on_gpu(module, name):
    op = mma_atoms.get(name)
    if not _runnable(op):
        pytest.skip(f"{name} needs sm_{op.min_sm}")
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    smem = rng.integers(0, 256, 2048, dtype=np.uint8)
    addrs = (rng.permutation(128)[:32] * 16).astype(np.int64)
    for variant in ("", "_cute"):
        fn = module.get_function(_kid(name, variant))
        if op.kind == "ldsm":
            r = cp.zeros((32, op.num_matrices), dtype=cp.uint64)
            fn((1,), (32,), (cp.asarray(smem), cp.asarray(addrs), r))
            assert np.array_equal(cp.asnumpy(r), E.ldmatrix(op, smem, addrs).astype(np.uint64)), variant
        else:
            regs = rng.integers(0, 2**32, (32, op.num_matrices), dtype=np.uint64)
            g = cp.asarray(smem)
            fn((1,), (32,), (g, cp.asarray(addrs), cp.asarray(regs)))
            assert np.array_equal(cp.asnumpy(g), E.stmatrix(op, smem, addrs, regs)), variant


@pytest.mark.parametrize("name", mma_atoms.names("cp_async"))
def test_cp_async_on_gpu(module, name):
    op = mma_atoms.get(name)
    if not _runnable(op):
        pytest.skip(f"{name} needs sm_80")
    n = op.value_bits // 8
    src = np.random.default_rng(n).integers(0, 256, 64, dtype=np.uint8)
    dst = cp.zeros(64, dtype=cp.uint8)
    module.get_function(_kid(name))((1,), (1,), (cp.asarray(src), dst, np.int32(2 * n), np.int32(n)))
    assert np.array_equal(cp.asnumpy(dst), E.copy(op, src, 2 * n, np.zeros(64, dtype=np.uint8), n))
