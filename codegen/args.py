"""The ``mma.sync`` GEMM kernel's arguments, declared once (:class:`~codegen.cute.params.KernelParams`).

The kernel's ``def`` line (:mod:`codegen.emit`), numba's signature
(:func:`codegen.kernel.kernel_signature`) and the launcher's argument slots
(:class:`codegen.host._Launcher`) all come from :func:`mma_sync_args`:

* ``A``, ``B``, ``C``: global byte addresses of A (M,K), B (its (N,K) view) and C (M,N);
* ``M``, ``N``, ``K``; element strides ``sam``, ``sak`` of A, ``sbn``, ``sbk`` of B's (N,K)
  view, ``scm``, ``scn`` of C; ``sal``, ``sbl``, ``scl``: from one matrix of a batch to the
  next (0 without a batch);
* ``alpha``, ``beta``: ``C = alpha * A @ B + beta * C``, float64 for f64 GEMMs, else float32;
* the tile scheduler's numbers for the launch (:meth:`codegen.cute.TileScheduler.host_params`).

>>> mma_sync_args("f64").def_line("gemm_kernel")[:72]
'def gemm_kernel(A, B, C, M, N, K, sam, sak, sbn, sbk, scm, scn, sal, sbl'
"""

from __future__ import annotations

from functools import lru_cache

from .cute.params import KernelParams

__all__ = ["mma_sync_args"]


@lru_cache(maxsize=None)
def mma_sync_args(dtype, user=False):
    """The arguments of the ``mma.sync`` kernel of element type ``dtype``; ``user``: of a
    kernel with a user epilogue, which also takes its tensors (``t<i>``: address; ``t<i>_d0``,
    ``t<i>_d1``: extents; ``t<i>_s0``, ``t<i>_s1``: element strides), as the Hopper kernel's
    :data:`~codegen.sm90.args.GEMM_USER_ARGS` do."""
    from .cute.scheduler import TileScheduler
    from .sm90.args import USER_TENSOR_ARGS

    scalar = "f64" if dtype == "f64" else "f32"
    fields = (
        ("A", "i64"), ("B", "i64"), ("C", "i64"), ("M", "i32"), ("N", "i32"), ("K", "i32"),
        ("sam", "i64"), ("sak", "i64"), ("sbn", "i64"), ("sbk", "i64"), ("scm", "i64"), ("scn", "i64"),
        ("sal", "i64"), ("sbl", "i64"), ("scl", "i64"), ("alpha", scalar), ("beta", scalar),
    ) + TileScheduler.ARGS
    if user:
        fields += USER_TENSOR_ARGS
    return KernelParams("GemmSyncUserArgs" if user else "GemmSyncArgs", fields)
