"""The torch operator ``torch.ops.layoutalg.mm`` (codegen.torch_ops), without a GPU.

On ``meta`` tensors the operator runs its fake implementation: the shapes, dtypes and
strides that ``torch.compile`` sees, the autograd graph (whose backward calls the same
operator), and dynamo tracing with ``fullgraph=True``.  ``tests/gpu/check_torch.py`` runs
the kernels: a model trained with autograd, compiled, and replayed in a CUDA graph.
"""

import pytest

torch = pytest.importorskip("torch")

import codegen  # noqa: E402
from codegen import GemmError  # noqa: E402
from codegen.torch_ops import _mm, out_dtype_of  # noqa: E402


def meta(*shape, dtype=torch.bfloat16, grad=False):
    return torch.empty(*shape, device="meta", dtype=dtype, requires_grad=grad)


@pytest.mark.parametrize("dtype, out, want", [
    (torch.float16, None, torch.float16), (torch.bfloat16, None, torch.bfloat16),
    (torch.float32, None, torch.float32), (torch.float8_e4m3fn, None, torch.bfloat16),
    (torch.float16, torch.float32, torch.float32), (torch.float8_e5m2, torch.float16, torch.float16),
])
def test_the_result_has_gemm_shape_dtype_and_row_major_strides(dtype, out, want):
    y = _mm(meta(40, 24, dtype=dtype), meta(24, 56, dtype=dtype), 1.0, out, None)
    assert (tuple(y.shape), y.dtype, y.stride()) == ((40, 56), want, (56, 1))
    assert out_dtype_of(dtype, out) == want


def test_mismatched_operands_are_a_gemm_error_while_tracing():
    with pytest.raises(GemmError, match=r"A \(40, 24\) and B \(25, 56\)"):
        _mm(meta(40, 24), meta(25, 56), 1.0, None, None)


def test_autograd_backward_calls_the_operator_with_the_operands_shapes():
    A, B = meta(64, 32, grad=True), meta(32, 48, grad=True)
    y = codegen.mm(A, B, alpha=0.5)
    assert "layoutalg_mm" in type(y.grad_fn).__name__
    y.sum().backward()
    assert A.grad.shape == A.shape and B.grad.shape == B.shape
    assert A.grad.dtype == A.dtype and B.grad.dtype == B.dtype


def test_gemm_of_tensors_that_require_grad_is_differentiable():
    A, B = meta(16, 8, grad=True), meta(8, 24)
    y = codegen.gemm(A, B)
    assert y.grad_fn is not None and y.shape == (16, 24)


def test_dynamo_traces_the_operator_as_one_node_with_fullgraph():
    import torch._dynamo as dynamo

    def f(a, b):
        return codegen.mm(torch.relu(codegen.mm(a, b)), b.t())

    a, b = meta(64, 32, dtype=torch.float16), meta(32, 48, dtype=torch.float16)
    gm, _ = dynamo.export(f)(a, b)
    calls = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert calls.count("layoutalg.mm.default") == 2, calls
    assert torch.compile(f, fullgraph=True, backend="eager")(a, b).shape == (64, 32)


def test_bad_options_name_themselves():
    with pytest.raises(GemmError, match="out_dtype must be a torch dtype"):
        codegen.mm(meta(4, 4), meta(4, 4), out_dtype="f32")
    with pytest.raises(GemmError, match="precision must be a string"):
        codegen.mm(meta(4, 4), meta(4, 4), precision=32)


def test_an_eager_call_without_autograd_runs_gemm_itself():
    """No gradient and no compile: the kernel's own checks, without the operator's dispatch
    (a CPU tensor is refused by gemm, naming its device)."""
    with pytest.raises(GemmError, match="is on cpu"):
        codegen.mm(torch.zeros(4, 4), torch.zeros(4, 4))
