"""Warp specialization on Hopper: warpgroups, register reallocation, named barriers, clusters.

A warpgroup is four consecutive warps (128 threads), the unit that issues ``wgmma``. A
warp-specialized kernel gives its warpgroups roles (a producer that issues TMA loads,
consumers that multiply) and moves registers to where they are needed with
``setmaxnreg``: the producer gives registers up (:func:`setmaxnreg_dec`), the consumers take
them (:func:`setmaxnreg_inc`); both take a compile-time count, a multiple of 8 in 24..256.
A ``named_barrier_sync`` of 128 threads synchronises one warpgroup without the others.
In a cluster, ``cluster_ctarank`` is the CTA's rank and ``cluster_sync`` waits for every
CTA of the cluster (all five are :mod:`codegen.intrinsics`, exported by ``codegen.cute``).
"""

from __future__ import annotations

from .objects import device_function, late_import

__all__ = ["warpgroup_index", "INTRINSICS"]

#: The instructions of warp specialization, exported by ``codegen.cute`` from :mod:`codegen.intrinsics`.
INTRINSICS = ("setmaxnreg_inc", "setmaxnreg_dec", "named_barrier_sync", "cluster_ctarank", "cluster_sync")

(cuda,) = late_import("numba", "cuda")


@device_function
def warpgroup_index():
    """The calling thread's warpgroup in its CTA: ``threadIdx.x // 128``."""
    return cuda.threadIdx.x >> 7
