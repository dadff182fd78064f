"""``@device(once=True)`` methods and ``@device_function(once=True)`` functions: typed and
lowered once per object and argument types, inlined by NVVM, to the PTX that inlining them
into the kernel's IR gives (codegen.cute.objects)."""

import os
import re
from dataclasses import dataclass

import pytest

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
pytestmark = pytest.mark.skipif(SIM, reason="compiles PTX")

from numba import cuda  # noqa: E402

from codegen.cute.objects import device, device_function, device_object, once_dispatcher  # noqa: E402
from codegen.numba_ptx import kernel_ptx  # noqa: E402


def _squash(x):
    return x * x + 1.0


squash_inline = device_function(_squash)
squash_once = device_function(once=True)(lambda x: x * x + 1.0)


@device_object
@dataclass(frozen=True)
class Steps:
    """``n`` steps of ``x -> x * scale + 1`` (the body twice: inlined, and once)."""

    n: int
    scale: float
    clamp: bool

    @device
    def step(self, x):
        return x * self.scale + 1.0

    @device
    def run_inline(self, x, k):
        for _ in range(self.n):
            x = self.step(x)             # a device method of the object, inlined in both
        if self.clamp:                   # a flag of the object, a constant in both
            x = min(x, float(k))
        return squash_inline(x)

    @device(once=True)
    def run_once(self, x, k):
        for _ in range(self.n):
            x = self.step(x)
        if self.clamp:
            x = min(x, float(k))
        return squash_inline(x)


STEPS = Steps(3, 0.5, True)


def k_inline(x):
    i = cuda.threadIdx.x
    v, w = x[i], x[i + 32]                               # three call sites of the same types
    a, b, c = STEPS.run_inline(v, i), STEPS.run_inline(w, i), STEPS.run_inline(v * w, i)
    x[i] = a + b + c + squash_inline(a) + squash_inline(b)


def k_once(x):
    i = cuda.threadIdx.x
    v, w = x[i], x[i + 32]
    a, b, c = STEPS.run_once(v, i), STEPS.run_once(w, i), STEPS.run_once(v * w, i)
    x[i] = a + b + c + squash_once(a) + squash_once(b)


def _body(ptx):
    """The kernel's instructions: no comments, no NumbaEnv globals, no names."""
    lines = [re.sub(r"\s*//.*", "", ln) for ln in ptx.splitlines() if "NumbaEnv" not in ln]
    text = "\n".join(ln for ln in lines if ln.strip())
    return re.sub(r"_Z\w+", "NAME", text)


@pytest.mark.parametrize("route", ["short", "numba"])
def test_once_gives_the_ptx_of_inlining_and_types_each_function_once(route, monkeypatch):
    from codegen.cute import objects

    monkeypatch.setattr(objects, "_ONCE", {})             # each route compiles the once functions itself
    sig = "void(float32[::1])"
    if route == "short":
        inline, once = (kernel_ptx(k, sig, (8, 0)) for k in (k_inline, k_once))
    else:
        inline, once = (cuda.compile_ptx(k, sig, cc=(8, 0))[0] for k in (k_inline, k_once))
    assert _body(once) == _body(inline)
    assert "call." not in once and "min.f64" in once          # inlined by NVVM; the clamp kept
    assert len(once_dispatcher(Steps.run_once).overloads) == 1        # three call sites, one typing
    assert len(once_dispatcher(squash_once.py_func).overloads) == 1


def test_once_runs_as_python_on_the_host():
    assert squash_once(2.0) == 5.0
    assert STEPS.run_once(1.0, 10) == STEPS.run_inline(1.0, 10) == 1.875 ** 2 + 1      # 1 -> 1.5 -> 1.75 -> 1.875
    assert STEPS.run_once(1.0, 1) == 2.0                                              # clamped to 1


def test_once_refuses_a_body_that_allocates_shared_memory():
    def scratch(x):
        buf = cuda.shared.array(32, "float32")
        buf[0] = x
        return buf[0]

    with pytest.raises(ValueError, match=r"device_function\(once=True\): .*scratch allocates shared memory"):
        device_function(once=True)(scratch)
    with pytest.raises(ValueError, match=r"device\(once=True\): .*scratch allocates shared memory"):
        device(once=True)(scratch)
    assert device_function(scratch).py_func is scratch       # inlined, each call site its own
