"""numpy 2.5 removed ``numpy.row_stack`` (an alias of ``numpy.vstack`` since numpy 1.x), and
numba-cuda 0.30 registers an overload for it when ``numba.cuda`` is imported, so that import
fails in an environment with numpy 2.5.  Importing this module (``codegen`` does, before
anything imports numba) puts the alias back when it is missing; nothing else changes.

>>> import numpy
>>> numpy.row_stack is numpy.vstack or numpy.lib.NumpyVersion(numpy.__version__) < "2.5.0"
True
"""

import numpy as _np

if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack
