"""Cold compile time of the Hopper attention kernel: each (dtype, head dim, causal) in a fresh
process with an empty kernel cache, timed from the call to ``hopper_attention_kernel`` to
the loaded kernel (numba to PTX, ptxas, load), and the first ``codegen.attention`` call in
all (that, plus the tensor maps and the launch). On an sm_90 GPU with torch.

    python benchmarks/attention_compile_time.py [--json out.json]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ONE = r"""
import sys, time, json
import numpy as np
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
import torch, codegen
from codegen.attention_sm90 import hopper_attention_kernel
dt, d, causal = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
# TILES' tile (2048 keys), and none split (88 or 128 tiles, a last wave over a third full)
q = torch.randn(1, 8, 2048, d, device="cuda", dtype={"f16": torch.float16, "bf16": torch.bfloat16}[dt])
torch.cuda.synchronize()
t0 = time.perf_counter()
hopper_attention_kernel(dt, d, causal).function()
t1 = time.perf_counter()
codegen.attention(q, q, q, causal=causal)
torch.cuda.synchronize()
t2 = time.perf_counter()
print(json.dumps({"dtype": dt, "d": d, "causal": causal, "build_s": t1 - t0, "first_call_s": t2 - t0}))
"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    for dt in ("f16", "bf16"):
        for d in (64, 128):
            for causal in (0, 1):
                with tempfile.TemporaryDirectory() as cache:
                    env = dict(os.environ, LAYOUTALG_CACHE=cache,
                               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
                    out = subprocess.run([sys.executable, "-c", ONE, dt, str(d), str(causal)], env=env,
                                         capture_output=True, text=True, timeout=300)
                    line = [x for x in out.stdout.splitlines() if x.startswith("{")]
                    if not line:
                        print(dt, d, causal, "FAILED", out.stderr[-2000:], flush=True)
                        continue
                    r = json.loads(line[-1])
                    rows.append(r)
                    print(f"{dt} d={d} causal={bool(causal)}: kernel built and loaded in {r['build_s']:.2f} s, "
                          f"first call {r['first_call_s']:.2f} s", flush=True)
    path = a.json or os.path.join(os.environ.get("OUT", "."), "attention_compile_time.json")
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
