"""The error of a bad kernel: raised while it compiles (on the GPU path) or runs (in the simulator).

>>> issubclass(CuteError, LayoutError)
True
"""

from layoutalg import LayoutError

__all__ = ["CuteError"]


class CuteError(LayoutError):
    """Bad use of layouts or tensors in a kernel, raised while the kernel compiles."""
