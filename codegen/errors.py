"""The error raised for bad arguments to the GEMM API."""

__all__ = ["GemmError"]


class GemmError(ValueError):
    """Bad arguments to :func:`codegen.gemm` and friends: the message names the call, the
    argument, the value and the choices.  Raised before any work is done."""
