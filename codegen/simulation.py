"""Whether kernels run in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), known without
importing numba.

>>> isinstance(simulating(), bool)
True
"""

from __future__ import annotations

import os
import sys

__all__ = ["simulating"]


def simulating() -> bool:
    """True when numba's CUDA simulator is on.

    Read from numba once numba is imported (it fixes the mode then), else from the
    environment, so that loading a cached kernel or planning one does not import numba."""
    if "numba.cuda" in sys.modules:
        from numba.cuda import config as ncfg

        return bool(getattr(ncfg, "ENABLE_CUDASIM", 0))
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
