"""Optional dependencies (cairosvg, typst, graphviz), imported only when used.

>>> try:
...     require("no_such_module_xyz", "testing", "no-such-package")
... except MissingDependencyError as e:
...     print(e)
testing needs the optional package 'no-such-package', which is not installed: pip install no-such-package
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingDependencyError", "require", "available"]


class MissingDependencyError(ImportError):
    """An optional package needed for one output format is missing.

    The message always says how to install it.
    """


def require(module: str, purpose: str, pip_name: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``pip install ...``."""
    pip_name = pip_name or module
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{purpose} needs the optional package '{pip_name}', which is not installed: "
            f"pip install {pip_name}"
        ) from exc
    except OSError as exc:  # e.g. cairosvg installed but the cairo C library missing
        raise MissingDependencyError(
            f"{purpose} needs '{pip_name}', which is installed but could not load its "
            f"system library ({exc}); install the library (for cairosvg: apt-get install "
            f"libcairo2) or reinstall with pip install {pip_name}"
        ) from exc


def available(module: str) -> bool:
    """True when ``module`` imports (its system libraries included).

    >>> available("json"), available("no_such_module_xyz")
    (True, False)
    """
    try:
        importlib.import_module(module)
    except (ImportError, OSError):
        return False
    return True
