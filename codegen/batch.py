"""Operands with batch modes, as ``torch.matmul`` takes them: ``(..., M, K) @ (..., K, N)``.

Two forms reach the kernels:

* **folded** (:func:`fold_batch`): when B has no batch (``(K, N)``, or batch modes of 1), the
  batch modes of A are more rows of one GEMM: ``(prod(...) * M, K) @ (K, N)``;
* **batched** (:func:`batch_operands`): otherwise, ``L`` GEMMs of one shape, the matrices of
  each operand a fixed number of elements apart (a :class:`Batch`): ``(L, M, K) @ (L, K, N)
  -> (L, M, N)``, one launch of the Hopper kernel, whose tile scheduler walks every matrix's
  tiles (CuTe's mode ``L``).

The batch modes broadcast as torch's: a mode of 1 (or a missing one) repeats the operand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import GemmError

__all__ = ["Batch", "Batched", "Folded", "fold_batch", "batch_operands", "strides_of"]


@dataclass(frozen=True)
class Batch:
    """``count`` GEMMs of one shape; ``a``, ``b``, ``c``: the element strides from one
    matrix of A, B and C to the next."""

    count: int
    a: int
    b: int
    c: int

    def transposed(self):
        """The batch of ``C^T = B^T @ A^T``: A's and B's strides trade places."""
        return Batch(self.count, self.b, self.a, self.c)


@dataclass(frozen=True)
class Folded:
    """Operands of more than two dimensions folded into one GEMM (:func:`fold_batch`):
    ``A`` (rows, K), ``B`` (K, N), ``C`` (rows, N) or None; ``shape``: the result's."""

    A: object
    B: object
    C: object
    shape: tuple


@dataclass(frozen=True)
class Batched:
    """A batch of GEMMs (:func:`batch_operands`): ``A`` (L, M, K), ``B`` (L, K, N), ``C``
    (L, M, N) or None; ``shape``: the result's, ``(..., M, N)``."""

    A: object
    B: object
    C: object
    shape: tuple


def strides_of(x):
    """The element strides of a torch tensor, a numpy or CuPy array."""
    if type(x).__module__.startswith("torch"):
        return tuple(int(s) for s in x.stride())
    return tuple(int(s) // x.itemsize for s in x.strides)


def _modes_fold(shape, strides):
    """Whether the modes of ``shape`` fold into one (each stride the next one's times its
    extent, extents of 1 aside): then a reshape to one mode is a view."""
    dims = [(e, d) for e, d in zip(shape, strides) if e != 1]
    return all(d == d2 * e2 for (_, d), (e2, d2) in zip(dims, dims[1:]))


def _check_kinds(A, B, C, op):
    from .host import _kind

    kinds = {_kind(x, op, n) for x, n in ((A, "A"), (B, "B"), (C, "C")) if x is not None}
    if not kinds <= {"torch", "numpy", "cupy"}:
        raise GemmError(f"{op}: operands of more than 2 dimensions are taken as torch tensors, CuPy or numpy "
                        f"arrays, got {', '.join(sorted(kinds))}")


def _shapes(A, B, op):
    """``(lead, M, K, N)`` of ``A @ B`` with batch modes, or None where both are 2-D."""
    sa, sb = getattr(A, "shape", None), getattr(B, "shape", None)
    if sa is None or sb is None:
        return None                           # not arrays: the general path names them
    if len(sa) <= 2 and len(sb) <= 2:
        return None
    if len(sa) < 2 or len(sb) < 2:
        raise GemmError(f"{op}: A and B must have 2 or more dimensions, got shapes {tuple(sa)} and {tuple(sb)}")
    lead = _broadcast(tuple(int(e) for e in sa[:-2]), tuple(int(e) for e in sb[:-2]))
    if lead is None:
        raise GemmError(f"{op}: the batch modes of A {tuple(sa)} and B {tuple(sb)} do not broadcast")
    if int(sa[-1]) != int(sb[-2]):
        raise GemmError(f"{op}: inner dimensions differ: A is {tuple(sa)}, B is {tuple(sb)}")
    return lead, int(sa[-2]), int(sa[-1]), int(sb[-1])


def _broadcast(x, y):
    """The broadcast of shapes ``x`` and ``y`` (numpy's rules), or None where they clash; in
    plain Python, so that ``torch.compile`` traces it."""
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + x, (1,) * (n - len(y)) + y
    if any(a != b and 1 not in (a, b) for a, b in zip(x, y)):
        return None
    return tuple(b if a == 1 else a for a, b in zip(x, y))


def _check_c(C, shape, A, B, op):
    if tuple(int(e) for e in C.shape) != shape:
        raise GemmError(f"{op}: C has shape {tuple(C.shape)}, expected {shape} (A {tuple(A.shape)} @ "
                        f"B {tuple(B.shape)})")


def fold_batch(A, B, C, op):
    """3-D (and more) operands as ``torch.matmul`` takes them, as one GEMM, where B has no
    batch: ``A`` of shape ``(..., M, K)`` with ``B`` ``(K, N)`` (or batch modes of 1) is the
    ``(prod(...) * M, K)`` by ``(K, N)`` product, in one launch; the result (or ``C``) has
    shape ``(..., M, N)``.  ``A`` is folded by a reshape (a copy where its rows do not fold);
    ``C`` must fold as a view (its memory is the result).  None where ``A`` and ``B`` are 2-D
    or B has a batch (:func:`batch_operands`)."""
    dims = _shapes(A, B, op)
    if dims is None or any(int(e) != 1 for e in B.shape[:-2]):
        return None
    _check_kinds(A, B, C, op)
    lead, M, K, N = dims
    shape = lead + (M, N)
    rows = math.prod(shape[:-1])                   # explicit: -1 is ambiguous when K or N is 0
    B2 = B.reshape(tuple(B.shape[-2:])) if len(B.shape) > 2 else B
    A2 = A.reshape(rows, K) if len(A.shape) > 2 else A
    C2 = None
    if C is not None:
        _check_c(C, shape, A, B, op)
        if not _modes_fold(tuple(C.shape[:-1]), strides_of(C)[:-1]):
            raise GemmError(f"{op}: C of shape {tuple(C.shape)} and strides {strides_of(C)} (elements) does not "
                            f"fold into one matrix of {N} columns without a copy, and the result must be "
                            f"written into C's memory: pass a C whose leading modes are contiguous with its rows")
        C2 = C.reshape(rows, N)
    return Folded(A2, B2, C2, shape)


def _expand(X, lead):
    """``X`` broadcast to the batch modes ``lead`` and folded into one batch mode: a view
    where the modes fold (a copy otherwise, and where the batch broadcasts, since TMA reads
    no batch stride of 0)."""
    mat = tuple(int(e) for e in X.shape[-2:])
    L = math.prod(lead)
    mod = type(X).__module__
    if mod.startswith("torch"):
        E = X.expand(lead + mat)
        dense = E.contiguous
    else:
        xp = np
        if mod.startswith("cupy"):
            import cupy as xp
        E = xp.broadcast_to(X, lead + mat)
        dense = lambda: xp.ascontiguousarray(E)  # noqa: E731
    st = strides_of(E)
    if L > 1 and (any(s == 0 for e, s in zip(lead, st) if e > 1) or not _modes_fold(lead, st[:len(lead)])):
        E = dense()
    return E.reshape((L,) + mat)


def batch_operands(A, B, C, op):
    """A :class:`Batched` of ``A @ B`` where B has a batch: ``(..., M, K) @ (..., K, N)``,
    batch modes broadcast as torch's and folded into one, ``L``.  A broadcast operand (a
    batch mode of 1 against more) is copied once per matrix of the batch; ``C`` (given) must
    fold as a view.  None where A and B are 2-D or B has no batch (:func:`fold_batch`)."""
    dims = _shapes(A, B, op)
    if dims is None or all(int(e) == 1 for e in B.shape[:-2]):
        return None
    _check_kinds(A, B, C, op)
    lead, M, K, N = dims
    shape = lead + (M, N)
    C3 = None
    if C is not None:
        _check_c(C, shape, A, B, op)
        if not _modes_fold(lead, strides_of(C)[:len(lead)]):
            raise GemmError(f"{op}: C of shape {tuple(C.shape)} and strides {strides_of(C)} (elements): its batch "
                            f"modes do not fold into one without a copy, and the result must be written into C's "
                            f"memory: pass a C whose batch modes are contiguous with each other")
        C3 = C.reshape((math.prod(lead), M, N))
    return Batched(_expand(A, lead), _expand(B, lead), C3, shape)
