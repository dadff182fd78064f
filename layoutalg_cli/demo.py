"""``layoutalg demo``: a tour of the algebra, a derived partition, and a generated GEMM.

With a GPU it runs the default plan on the GPU; without one it runs a small plan
(32x32x32 CTA tile, one warp) of the same generator in numba's CUDA simulator, since
the default plan's 256 threads are too slow to simulate."""

import os
import subprocess
import sys

_SIM_GEMM = """
import os, sys
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
sys.setswitchinterval(1e-4)
import numpy as np, codegen
from codegen import GemmConfig
rng = np.random.default_rng(0)
A = rng.standard_normal((48, 40)).astype(np.float16)
B = rng.standard_normal((40, 56)).astype(np.float16)
C = codegen.gemm(A, B, config=GemmConfig("f16", "f32", 32, 32, 32, 1, 1, 2, 1))
ref = A.astype(np.float32) @ B.astype(np.float32)
print(f"  simulator: 48x56x40 fp16 GEMM, max |C - numpy| = {np.abs(C - ref).max():.2e}")
"""


#: largest |C - numpy| accepted from the fp16 GEMM (f32 accumulation on both sides)
GEMM_TOLERANCE = 1e-2


def add_parser(sub):
    p = sub.add_parser("demo", help="a tour: algebra, a print_layout table, partitions and a generated GEMM")
    p.add_argument("--no-gemm", action="store_true", help="skip the generated-kernel part")
    p.set_defaults(fn=run)


def run(args, out):
    from layoutalg import (Layout, Swizzle, complement, composition, logical_divide, make_identity_tensor,
                           make_tiled_mma, tile_to_shape)

    say = lambda *a: print(*a, file=out)  # noqa: E731
    say("== layouts and their algebra (CuTe C++ semantics: 0-based, colexicographic) ==")
    L = Layout((4, (2, 2)), (2, (1, 8)))
    say(f"  L = {L};  L(5) = {L(5)};  L(1,(1,0)) = {L(1, (1, 0))}")
    say(f"  composition((4,3):(3,1), 6:2) = {composition(Layout((4, 3), (3, 1)), Layout(6, 2))}")
    say(f"  complement(4:2, 24)           = {complement(Layout(4, 2), 24)}")
    say(f"  logical_divide((8,8):(1,8), (2,4))  = {logical_divide(Layout((8, 8)), (2, 4))}")
    sw = tile_to_shape(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (128, 64))
    say(f"  SM80 fp16 smem stage          = {sw}")
    try:
        from layoutalg.draw import ascii_layout

        say("  print_layout((4,8):(8,1)):")
        say("    " + ascii_layout(Layout((4, 8), (8, 1))).rstrip("\n").replace("\n", "\n    "))
    except ImportError:
        pass
    say("== partitions, derived and checked ==")
    mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", (2, 2, 1), (32, 32, 16))
    say(f"  TiledMMA SM80_16x8x16_F32F16F16F32_TN, atoms (2,2,1), tile {mma.tile_size_mnk}")
    say(f"  thr_layout_vmnk = {mma.thr_layout_vmnk}")
    a5 = mma.get_slice(5).partition_A(make_identity_tensor((64, 32)))
    say(f"  thread 5's A elements (MMA,MMA_M,MMA_K) {a5.layout}: {[a5[i] for i in range(4)]} ...")
    if args.no_gemm:
        return 0
    say("== a generated tensor-core GEMM ==")
    try:
        import codegen
    except ImportError as e:
        say(f"  codegen needs the cuda extra: pip install 'layoutalg[cuda]' ({e})")
        return 0
    src = codegen.emit_gemm_source()
    say(f"  default fp16 plan: {len(src.splitlines())} lines of numba source; its main loop begins:")
    lines = src.splitlines()
    i = next(k for k, s in enumerate(lines) if s.strip().startswith("# ---- main loop"))
    for s in lines[i:i + 6]:
        say("    " + s)
    gpu = False
    try:
        from numba import cuda

        from codegen.kernel import simulating

        gpu = cuda.is_available() and not simulating()     # the simulator "is available" too
    except Exception:
        gpu = False
    if gpu:
        import numpy as np

        rng = np.random.default_rng(0)
        A = rng.standard_normal((1000, 700)).astype(np.float16)
        B = rng.standard_normal((700, 900)).astype(np.float16)
        C = codegen.gemm(A, B, out_dtype="f32")
        err = float(np.abs(C - A.astype(np.float32) @ B.astype(np.float32)).max())
        say(f"  GPU: 1000x900x700 fp16 GEMM, max |C - numpy| = {err:.2e}")
    else:
        say("  no GPU here: the same generator with a small plan (32x32x32 CTA tile, one warp, 2 stages)"
            " runs in numba's CUDA simulator")
        root = os.path.dirname(os.path.dirname(os.path.abspath(codegen.__file__)))  # where codegen lives
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
                   PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
        r = subprocess.run([sys.executable, "-c", _SIM_GEMM], capture_output=True, text=True, env=env)
        say(r.stdout.rstrip() or r.stderr[-2000:])
        try:
            err = float(r.stdout.rsplit("=", 1)[1]) if r.returncode == 0 else float("nan")
        except (IndexError, ValueError):
            err = float("nan")
    if not err <= GEMM_TOLERANCE:
        say(f"  FAILED: the generated kernel's result differs from numpy's (tolerance {GEMM_TOLERANCE})")
        return 1
    say(f"  verified: the generated kernel's C matches numpy's within {GEMM_TOLERANCE}")
    return 0
