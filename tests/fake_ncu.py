"""A stand-in for Nsight Compute's ``ncu``, to test ``benchmarks/bank_conflicts.py``'s runs of it
without a GPU.

* ``--query-metrics``: lists the counters the script asks for (less those in
  ``FAKE_NCU_MISSING``, comma-separated);
* a profiling run (``--metrics ... --export REP ... APP ARGS``, or ``--section InstructionStats``:
  the per-opcode counts): runs the application in numba's simulator, which dies as it starts
  the case ``FAKE_NCU_KILL_AT`` (as a launch that loses the context would end it), and writes
  ``REP.ncu-rep``: the kernels that returned;
* ``--import REP.ncu-rep --csv --page raw``: their counters in ncu's raw CSV page, made from the
  script's own predictions (those in ``FAKE_NCU_MISSING`` left out).
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bank_conflicts

    return bank_conflicts


def main(argv):
    if argv[:1] == ["--query-metrics"]:
        b = _bench()
        missing = set(filter(None, os.environ.get("FAKE_NCU_MISSING", "").split(",")))
        print("Device GH100 (GH100)\n---------- ----------\nMetric Name  Metric Description")
        for names in b.METRICS.values():
            for cand in names:
                for m in b._parts(cand):
                    base = m.rsplit(".", 1)[0]
                    if base not in missing and "[" not in base:
                        print(f"{base}  a counter")
        return 0
    if argv[:1] == ["--import"]:
        with open(argv[1]) as f:
            rep = json.load(f)
        b = _bench()
        cases = {c.index: c for c in b.all_cases()}
        sys.stdout.write(b.synthetic_csv([cases[i] for i in rep["cases"]], rep["metrics"]))
        return 0
    opts, i = {}, 0
    while argv[i].startswith("-"):
        if argv[i] == "--force-overwrite":
            i += 1
            continue
        opts[argv[i]] = argv[i + 1]
        i += 2
    app = argv[i:]
    progress = app[app.index("--progress") + 1]
    kill_at = os.environ.get("FAKE_NCU_KILL_AT")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    if kill_at:
        # the application dies as it starts that case, as a launch that loses the context ends
        # it: deterministic, however fast the cases before it run
        script = app[1]
        prelude = (f"import os, signal, sys; sys.path.insert(0, {os.path.dirname(script)!r}); "
                   f"sys.argv = {app[1:]!r}; import bank_conflicts as b; build = b.build_kernel\n"
                   f"def build_kernel(c):\n"
                   f"    if c.index == {int(kill_at)}: os.kill(os.getpid(), signal.SIGKILL)\n"
                   f"    return build(c)\n"
                   f"b.build_kernel = build_kernel; sys.exit(b.main())")
        app = [app[0], "-c", prelude]
    subprocess.run(app, env=env, start_new_session=True)
    done = [int(ln.split()[1]) for ln in open(progress) if ln.startswith("done ")] if os.path.exists(progress) else []
    metrics = opts["--metrics"].split(",") if "--metrics" in opts else [_bench().OPCODE_METRIC]
    with open(opts["--export"] + ".ncu-rep", "w") as f:
        json.dump({"cases": done, "metrics": metrics}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
