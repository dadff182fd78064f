"""The generated GEMM as a torch operator: ``torch.ops.layoutalg.mm``.

``codegen.mm(A, B)`` on torch CUDA tensors goes through a registered custom operator
(``torch.library.custom_op``), as Triton's, FlashAttention's and DeepGEMM's kernels do, so
that a torch model can use it:

* **autograd**: ``dA = alpha * dC @ B^T`` and ``dB = alpha * A^T @ dC``, each a call of the
  same operator, so the backward GEMMs run on the generated kernels too (for a batch of
  GEMMs, ``(L,M,K) @ (L,K,N)``, batches of them);
* **torch.compile** (``fullgraph=True``): a fake implementation gives the result's shape,
  dtype and strides without running anything, so dynamo traces the call as one node and
  Inductor calls the kernel;
* **CUDA graphs**: after a warm-up call of the same kind, a call allocates its result from
  torch's allocator and launches on the current (capturing) stream, nothing else; a first
  call of a new kind during a capture is a ``GemmError`` saying to warm up first.

``codegen.gemm(A, B)`` on torch tensors that require a gradient takes the same route, so its
result has a ``grad_fn``.  Importing this module imports torch; ``codegen`` imports it only
when ``codegen.mm`` is first used.
"""

from __future__ import annotations

from typing import Optional

import torch

from .host import GemmError, _gemm, bias_per_row

__all__ = ["mm", "grouped_mm", "out_dtype_of"]

_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
_compiling = torch.compiler.is_compiling


def out_dtype_of(a_dtype, out_dtype=None):
    """The dtype of ``gemm``'s new result: ``out_dtype``, else bfloat16 for 8-bit floats (as
    ``torch._scaled_mm``), else the inputs' dtype."""
    if out_dtype is not None:
        return out_dtype
    return torch.bfloat16 if a_dtype in _FP8 else a_dtype


@torch.library.custom_op("layoutalg::mm", mutates_args=())
def _mm(A: torch.Tensor, B: torch.Tensor, alpha: float, out_dtype: Optional[torch.dtype],
        precision: Optional[str], bias: Optional[torch.Tensor] = None,
        activation: Optional[str] = None) -> torch.Tensor:
    """``activation(alpha * A @ B + bias)`` into a new row-major tensor, by the generated kernel;
    ``A`` (M,K) and ``B`` (K,N), or a batch: (L,M,K) and (L,K,N)."""
    return _gemm(A, B, alpha=alpha, out_dtype=out_dtype, precision=precision, bias=bias, activation=activation)


@_mm.register_fake
def _mm_fake(A, B, alpha, out_dtype, precision, bias=None, activation=None):
    if not (A.dim() == B.dim() and A.dim() in (2, 3) and A.shape[-1] == B.shape[-2]
            and A.shape[:-2] == B.shape[:-2]):
        raise GemmError(f"mm: A {tuple(A.shape)} and B {tuple(B.shape)} are not (M,K) and (K,N), nor (L,M,K) and "
                        f"(L,K,N)")
    if bias is not None and tuple(bias.shape) not in ((B.shape[-1],), (1, B.shape[-1]), (A.shape[-2], 1)):
        raise GemmError(f"mm: bias has shape {tuple(bias.shape)}, expected ({B.shape[-1]},) or (1, {B.shape[-1]}), "
                        f"one a column, or ({A.shape[-2]}, 1), one a row")
    return A.new_empty(tuple(A.shape[:-1]) + (B.shape[-1],), dtype=out_dtype_of(A.dtype, out_dtype))


@torch.library.custom_op("layoutalg::grouped_mm", mutates_args=())
def _grouped_mm(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """:func:`codegen.grouped_gemm` into a new tensor: the rows of ``x`` that group ``g`` holds
    times ``w[g]`` (``torch._grouped_mm``'s 2-D by 3-D case)."""
    from .grouped import grouped_gemm

    return grouped_gemm(x, w, offs)


@_grouped_mm.register_fake
def _grouped_mm_fake(x, w, offs):
    if x.dim() != 2 or w.dim() != 3 or x.shape[1] != w.shape[1] or tuple(offs.shape) != (w.shape[0],):
        raise GemmError(f"grouped_mm: x {tuple(x.shape)}, w {tuple(w.shape)} and offs {tuple(offs.shape)} are not "
                        f"(M,K), (G,K,N) and (G,)")
    return x.new_empty((x.shape[0], w.shape[2]))


def group_rows(offs, M):
    """The rows ``[lo, hi)`` of each group as the kernel reads ``offs`` (the scheduler's
    ``group_end``): the offsets as unsigned 32-bit ends, each kept within ``[previous end,
    M]``. Reads ``offs`` on the host."""
    out, lo = [], 0
    for e in offs.tolist():
        hi = min(max(int(e) & 0xFFFFFFFF, lo), M)
        out.append((lo, hi))
        lo = hi
    return out


@torch.library.custom_op("layoutalg::grouped_mm_wgrad", mutates_args=())
def _grouped_wgrad(x: torch.Tensor, dy: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """The gradient of a grouped GEMM's weights, ``dw[g] = x[rows of g]^T @ dy[rows of g]``
    (``(G, K, N)``, x's dtype; zeros for an empty group): one GEMM a group on the generated
    kernels (the reduction runs over the group's rows, which the grouped kernel does not
    split), after reading ``offs`` on the host."""
    from .host import _gemm

    G, K, N = offs.shape[0], x.shape[1], dy.shape[1]
    dw = x.new_empty((G, K, N))
    for g, (lo, hi) in enumerate(group_rows(offs, x.shape[0])):
        if hi > lo:
            _gemm(x[lo:hi].t(), dy[lo:hi], dw[g])
        else:
            dw[g].zero_()
    return dw


@_grouped_wgrad.register_fake
def _grouped_wgrad_fake(x, dy, offs):
    return x.new_empty((offs.shape[0], x.shape[1], dy.shape[1]))


@torch.library.custom_op("layoutalg::grouped_mm_dgrad", mutates_args=())
def _grouped_dgrad(dy: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """The gradient of a grouped GEMM's rows, ``dx[rows of g] = dy[rows of g] @ w[g]^T``, and
    zeros past the last group (which the forward does not write): one grouped launch where
    TMA reads ``dy`` (16-byte rows), else one GEMM a group (an N whose rows are not 16-byte
    aligned, which the forward takes)."""
    from .grouped import grouped_gemm
    from .host import _gemm

    M = dy.shape[0]
    if (dy.stride(0) * dy.element_size()) % 16 == 0 and dy.data_ptr() % 16 == 0:
        dx = grouped_gemm(dy, w.transpose(1, 2), offs)
    else:
        dx = dy.new_empty((M, w.shape[1]))
        for g, (lo, hi) in enumerate(group_rows(offs, M)):
            if hi > lo:
                _gemm(dy[lo:hi], w[g].t(), dx[lo:hi])
    if offs.shape[0] == 0:
        return dx.zero_()
    end = (offs.to(torch.int64) & 0xFFFFFFFF).max().clamp(max=M)     # the kernel's last group end
    return dx.masked_fill((torch.arange(M, device=dx.device) >= end)[:, None], 0)


@_grouped_dgrad.register_fake
def _grouped_dgrad_fake(dy, w, offs):
    return dy.new_empty((dy.shape[0], w.shape[1]))


def _grouped_setup_context(ctx, inputs, output):
    x, w, offs = inputs
    ctx.save_for_backward(x, w, offs)


def _grouped_backward(ctx, dy):
    """``dx = grouped_mm_dgrad(dy, w)``, ``dw = grouped_mm_wgrad(x, dy)``."""
    x, w, offs = ctx.saved_tensors
    dy = dy.contiguous()                             # a gradient may come expanded (stride 0)
    dx = dw = None
    if ctx.needs_input_grad[0]:
        dx = _grouped_dgrad(dy, w, offs)
    if ctx.needs_input_grad[1]:
        dw = _grouped_wgrad(x, dy, offs).to(w.dtype)
    return dx, dw, None


_grouped_mm.register_autograd(_grouped_backward, setup_context=_grouped_setup_context)


def grouped_mm(x, w, offs):
    """``torch.ops.layoutalg.grouped_mm``: a grouped GEMM that ``torch.compile(fullgraph=True)``
    traces as one node (its fake implementation gives the result's shape), differentiable:
    ``dx`` is a grouped GEMM of ``dy`` and the transposed weights, ``dw`` one GEMM a group
    (``layoutalg.grouped_mm_wgrad``, which reads ``offs`` on the host)."""
    return _grouped_mm(x, w, offs)


def _setup_context(ctx, inputs, output):
    A, B, alpha, out_dtype, precision, bias, activation = inputs
    ctx.save_for_backward(A, B, bias)
    ctx.alpha, ctx.precision, ctx.activation = alpha, precision, activation


def activation_grad(z, activation):
    """The derivative of ``activation`` at ``z`` (float32), as the epilogue defines it."""
    if activation == "relu":
        return (z > 0).to(z.dtype)
    if activation == "gelu":
        return 0.5 * (1.0 + torch.erf(z * 0.7071067811865476)) + z * torch.exp(-0.5 * z * z) * 0.3989422804014327
    if activation == "gelu_tanh":
        c = 0.7978845608028654
        t = torch.tanh(c * (z + 0.044715 * z * z * z))
        return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * z * z)
    if activation == "silu":
        s = torch.sigmoid(z)
        return s * (1.0 + z * (1.0 - s))
    raise GemmError(f"mm: no derivative of activation {activation!r}")


def _backward(ctx, grad):
    A, B, bias = ctx.saved_tensors
    if A.dtype in _FP8 or B.dtype in _FP8:
        raise GemmError("mm: 8-bit float operands are not differentiable (as torch._scaled_mm's)")
    dz = grad
    if ctx.activation is not None:                   # z = alpha * A @ B + bias, again, in float32
        z = _mm(A, B, ctx.alpha, torch.float32, ctx.precision, bias, None)
        dz = grad.float() * activation_grad(z, ctx.activation)
    dA = dB = dbias = None
    if ctx.needs_input_grad[0]:                      # ([L,]M,N) @ ([L,]N,K)
        dA = _mm(dz.to(B.dtype), B.mT, ctx.alpha, A.dtype, ctx.precision)
    if ctx.needs_input_grad[1]:                      # ([L,]K,M) @ ([L,]M,N)
        dB = _mm(A.mT, dz.to(A.dtype), ctx.alpha, B.dtype, ctx.precision)
    if bias is not None and ctx.needs_input_grad[5]:
        if bias_per_row(tuple(bias.shape), dz.shape[-1]):                      # (M, 1): one a row
            dbias = dz.float().sum(-1, keepdim=True).to(bias.dtype)
        else:
            dbias = dz.float().reshape(-1, dz.shape[-1]).sum(0).reshape(bias.shape).to(bias.dtype)
    return dA, dB, None, None, None, dbias, None


_mm.register_autograd(_backward, setup_context=_setup_context)


def mm(A, B, *, alpha=1.0, out_dtype=None, precision=None, bias=None, activation=None):
    """``activation(alpha * A @ B + bias)`` through ``torch.ops.layoutalg.mm``:
    differentiable, traceable by ``torch.compile(fullgraph=True)``, capturable in a CUDA
    graph after a warm-up call.

    ``out_dtype``: a torch dtype (or None: the inputs' type, bfloat16 for 8-bit floats).
    ``precision``: as :func:`codegen.gemm` (``"tf32"`` for float32 inputs on tensor cores).
    ``bias`` (N elements) and ``activation`` ("relu", "gelu", "gelu_tanh", "silu"): fused
    into the Hopper kernel's epilogue (:func:`codegen.gemm`).
    """
    if out_dtype is not None and not isinstance(out_dtype, torch.dtype):
        raise GemmError(f"mm: out_dtype must be a torch dtype (or None), got {out_dtype!r}")
    if precision is not None and not isinstance(precision, str):
        raise GemmError(f"mm: precision must be a string (or None), got {precision!r}")
    if A.dim() > 2 or B.dim() > 2:
        from .batch import batch_operands, fold_batch

        f = fold_batch(A, B, None, "mm")        # (..., M, K) @ (K, N): one GEMM of all the rows
        if f is None:                           # (..., M, K) @ (..., K, N): a batch of L GEMMs
            f = batch_operands(A, B, None, "mm")
            return _op(f.A, f.B, alpha, out_dtype, precision, bias, activation).reshape(f.shape)
        return mm(f.A, f.B, alpha=alpha, out_dtype=out_dtype, precision=precision, bias=bias,
                  activation=activation).reshape(f.shape)
    return _op(A, B, alpha, out_dtype, precision, bias, activation)


def _op(A, B, alpha, out_dtype, precision, bias, activation):
    """The operator on 2-D operands or a batch (3-D), or :func:`_gemm` where nothing needs it."""
    grad = A.requires_grad or B.requires_grad or bias is not None and bias.requires_grad
    if not _compiling() and not (grad and torch.is_grad_enabled()):
        # eager and nothing to differentiate: the operator's dispatch in Python would double
        # the host time of a call (30 us against 15 on the H200); the kernel is the same
        return _gemm(A, B, alpha=alpha, out_dtype=out_dtype, precision=precision, bias=bias, activation=activation)
    return _mm(A, B, float(alpha), out_dtype, precision, bias, activation)
