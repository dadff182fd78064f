"""Simulator twins of the Hopper intrinsics (:mod:`codegen.intrinsics.ptx_sm90`)."""

from __future__ import annotations

from .names import SM90_NAMES

__all__ = list(SM90_NAMES)


def _not_simulated(name):
    def twin(*args):
        raise NotImplementedError(f"{name}: the Hopper intrinsics are not simulated yet")

    twin.__name__ = name
    return twin


for _name in SM90_NAMES:
    globals()[_name] = _not_simulated(_name)
