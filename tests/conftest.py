"""Shared pytest configuration (kept minimal and generic).

Hypothesis profiles: ``ci`` (the default) is derandomized and has no deadline,
so runs are reproducible and slow machines do not flake; ``dev`` explores with
fresh randomness.  Choose one with ``HYPOTHESIS_PROFILE=dev``.
"""

import os
import sys

from hypothesis import HealthCheck, settings

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
for _p in (_ROOT, _HERE):          # the package under test, and tests/strategies.py
    if _p not in sys.path:
        sys.path.insert(0, _p)

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    """The simulator runs (up to minutes each, in subprocesses) go first, so that the workers
    share them instead of one of them finishing them alone after the rest (pytest-xdist hands
    tests out in this order)."""
    slow = [i for i in items if "simulator" in i.name]
    if slow:
        items[:] = slow + [i for i in items if "simulator" not in i.name]
