"""The Hopper GEMM kernel's arguments, declared once (:class:`~codegen.cute.params.KernelParams`).

The kernel's ``def`` line, the ``GemmArgs`` tuple it packs them into, numba's signature and
the launcher's argument slots all come from :data:`GEMM_ARGS`.

* ``tmap_a``, ``tmap_b``, ``tmap_c``: device addresses of the TMA tensor maps of A (M,K),
  B (N,K) and C (M,N) (0: no map of C);
* ``C``: the address of C, with element strides ``scm``, ``scn`` and ``scl`` (from one
  matrix of a batch to the next); ``M``, ``N``, ``K`` (of each matrix of the batch);
* ``alpha``, ``beta``: ``C = alpha * A @ B + beta * C``;
* ``bias``: the address of a fused per-column bias (0: none);
* ``scale_a``, ``scale_b``, ``alpha_at``: the addresses of float32 scalars the kernel
  multiplies ``alpha`` by: per-tensor scales and an ``alpha`` given as a tensor (0: none;
  :func:`codegen.cute.epilogue_alpha`);
* ``scale_d``, ``scale_d_at``, ``amax`` (an 8-bit float C): the output scale (times the
  float32 at ``scale_d_at``, 0: none) and the address of the float32 that receives the
  largest ``|alpha * A @ B|`` (0: none; :class:`codegen.cute.OutputScale`);
* ``offs``, ``groups``: a grouped GEMM's groups: the address of their ``int32`` end rows,
  and how many (:class:`codegen.cute.TileScheduler`, ``grouped``);
* ``err``: the address of an int32 error word (a wait that times out writes 1 there);
* ``ws``: the split-K workspace;
* ``rows_m``, ``group``, ``ktiles``, ``whole``, ``splits`` (the parts of K), ``units``,
  ``tiles``, ``batch_units``: the tile scheduler's numbers for this launch
  (:meth:`codegen.cute.TileScheduler.host_params`).
"""

from __future__ import annotations

from ..cute.params import KernelParams
from ..cute.scheduler import TileScheduler

from typing import NamedTuple

__all__ = ["GEMM_ARGS", "GEMM_USER_ARGS", "GemmArgs", "GemmUserArgs", "EPILOGUE_TENSORS", "USER_TENSOR_ARGS",
           "OutScale", "gemm_args"]

#: How many tensors a user's element-wise epilogue may read.
EPILOGUE_TENSORS = 4

GEMM_ARGS = KernelParams("GemmArgs", (
    ("tmap_a", "i64"), ("tmap_b", "i64"), ("tmap_c", "i64"), ("C", "i64"),
    ("M", "i32"), ("N", "i32"), ("K", "i32"), ("scm", "i64"), ("scn", "i64"), ("scl", "i64"),
    ("alpha", "f32"), ("beta", "f32"), ("bias", "i64"), ("scale_a", "i64"), ("scale_b", "i64"), ("alpha_at", "i64"),
    ("offs", "i64"), ("groups", "i32"), ("err", "i64"), ("ws", "i64"),
    ("scale_d", "f32"), ("scale_d_at", "i64"), ("amax", "i64"),
) + TileScheduler.ARGS)

#: A user epilogue's tensors as kernel arguments, the same in every kernel that takes them.
USER_TENSOR_ARGS = tuple((f"t{i}{part}", "i64") for i in range(EPILOGUE_TENSORS)
                         for part in ("", "_d0", "_d1", "_s0", "_s1"))

#: The arguments of a kernel with a user's element-wise epilogue: ``GEMM_ARGS`` and the
#: tensors it reads (``epilogue_args``, :mod:`codegen.epilogue_fn`): ``t0`` .. ``t3``, each
#: one's address, extents ``t<i>_d0``, ``t<i>_d1`` and element strides ``t<i>_s0``,
#: ``t<i>_s1`` (a 1-D tensor uses the first of each). Only those kernels take them: 20
#: more arguments cost every kernel 0.55 s of compile time (CPU machine, 2026-11-29).
GEMM_USER_ARGS = KernelParams("GemmUserArgs", GEMM_ARGS.fields + USER_TENSOR_ARGS)

#: The kernel's arguments as one value (a ``NamedTuple``).
GemmArgs = GEMM_ARGS.tuple_class()
GemmUserArgs = GEMM_USER_ARGS.tuple_class()


class OutScale(NamedTuple):
    """The arguments of an 8-bit float C (``scale_d``, ``scale_d_at``, ``amax``): the output
    scale ``value`` times the float32 at device address ``at`` (0: none), and the address of
    the float32 that receives the amax (0: none; the launch zeroes it first)."""

    value: float = 1.0
    at: int = 0
    amax: int = 0


def gemm_args(user):
    """The arguments of a kernel with a user epilogue (``user`` true) or without."""
    return GEMM_USER_ARGS if user else GEMM_ARGS
