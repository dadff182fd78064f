"""``codegen.cute.activate`` binds the kernel library's late imports once, for every thread.

numba's simulator runs each thread of a block as a Python thread, and each calls ``activate``
on its first device call: none may go on before every name is bound.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_RACE = r'''
import os, sys, threading, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
from codegen.cute import objects, scheduler

slow = objects._bind_late
def _bind_slowly(g, module, names):      # a slow import: the window in which threads raced
    time.sleep(0.01)
    slow(g, module, names)
objects._bind_late = _bind_slowly

seen, start = [], threading.Barrier(32)
def thread():
    start.wait()
    objects.activate()
    seen.append(isinstance(scheduler.int64, objects._Late))
threads = [threading.Thread(target=thread) for _ in range(32)]
for t in threads: t.start()
for t in threads: t.join()
assert len(seen) == 32 and not any(seen), f"{sum(seen)} of 32 threads saw an unbound name"
print("ok")
'''


def test_activate_returns_only_when_every_late_import_is_bound():
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", _RACE], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
