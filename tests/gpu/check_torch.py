"""codegen's GEMM inside a torch model (run on a CUDA machine with torch).

    python tests/gpu/check_torch.py [case ...]     (the cases by name, e.g. fp8_output; all by default)

* ``codegen.mm`` (the operator ``torch.ops.layoutalg.mm``) against ``torch.matmul``;
* a two-layer MLP whose matrix products are ``codegen.mm`` trains three SGD steps with
  autograd (the backward GEMMs on the generated kernels), against the same model on
  ``torch.matmul``: losses and weights;
* the same model under ``torch.compile(fullgraph=True)``, forward and backward;
* its forward captured in a CUDA graph after a warm-up, replayed on new inputs;
* a first call of a new kind during a capture: a GemmError that says to warm up;
* a user epilogue (``epilogue=f``: bias, GELU and a residual) against torch, in a graph too;
* a grouped GEMM's gradients (``grouped_gemm`` on tensors that require them), and a
  mixture-of-experts layer on it that trains, compiles and replays in a CUDA graph;
* the host time of a call (``codegen.mm`` on torch tensors, and ``torch.matmul``), which
  the issue bounds at 15 us.

Prints one line per case and 'N passed, N failed'; writes ``$OUT/check_torch.json``.
"""

import json
import math
import os
import sys
import time

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda 0.30 touches np.row_stack (gone in numpy 2.5)
    np.row_stack = np.vstack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import torch  # noqa: E402

import codegen  # noqa: E402

DT = torch.bfloat16


def rel(x, y):
    return ((x.float() - y.float()).abs().max() / y.float().abs().max().clamp_min(1e-30)).item()


class MLP(torch.nn.Module):
    def __init__(self, mm, k=256, h=512, n=128, seed=0):
        super().__init__()
        g = torch.Generator(device="cuda").manual_seed(seed)
        self.w1 = torch.nn.Parameter(torch.randn(k, h, device="cuda", generator=g).mul(k ** -0.5).to(DT))
        self.w2 = torch.nn.Parameter(torch.randn(h, n, device="cuda", generator=g).mul(h ** -0.5).to(DT))
        self.mm = mm

    def forward(self, x):
        return self.mm(torch.relu(self.mm(x, self.w1)), self.w2)


def train(model, xs, ys, steps=3, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xs[i]).float(), ys[i])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def case_forward():
    errs = []
    for dt, prec in ((torch.float16, None), (torch.bfloat16, None), (torch.float32, "tf32")):
        A = torch.randn(300, 200, device="cuda", dtype=dt)
        B = torch.randn(200, 170, device="cuda", dtype=dt)
        errs.append(rel(codegen.mm(A, B, precision=prec), A.float() @ B.float()))
    return max(errs) < 1e-2, f"f16, bf16, tf32 300x170x200 against float32: max rel error {max(errs):.1e}"


def _gelu_linear(x_shape, w_shape, seed):
    """``codegen.mm(x, w, bias=b, activation="gelu")`` of random operands of these shapes,
    against torch in float32: ``(x, w, y, x2, w2, relative errors of the value, dx, dw, db)``."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(*x_shape, device="cuda", generator=g).to(DT).requires_grad_()
    w = (torch.randn(*w_shape, device="cuda", generator=g) / 10).to(DT).requires_grad_()
    b = torch.randn(w_shape[-1], device="cuda", generator=g).to(DT).requires_grad_()
    y = codegen.mm(x, w, bias=b, activation="gelu")
    x2, w2, b2 = (t.detach().float().requires_grad_() for t in (x, w, b))
    ref = torch.nn.functional.gelu(x2 @ w2 + b2)
    y.float().square().sum().backward()
    ref.square().sum().backward()
    return x, w, y, x2, w2, [rel(y, ref), rel(x.grad, x2.grad), rel(w.grad, w2.grad), rel(b.grad, b2.grad)]


def case_batch():
    """(batch, seq, K) @ (K, N) with a bias: one GEMM of all the rows; values and gradients."""
    x, w, y, x2, w2, errs = _gelu_linear((3, 100, 96), (96, 80), 4)
    C = torch.empty(3, 100, 80, device="cuda", dtype=DT)
    out = codegen.gemm(x.detach(), w.detach(), C)
    errs.append(rel(C, x2.detach() @ w2.detach()))
    ok = out is C and tuple(y.shape) == (3, 100, 80) and max(errs) < 2e-2
    return ok, "(3,100,96) @ (96,80) + bias, GELU: value, dx, dw, db, gemm into a 3-D C: max rel errors " + \
        ", ".join(f"{e:.1e}" for e in errs)


def case_bmm():
    """A batch of GEMMs, (4, 2, 100, 96) @ (2, 96, 80) (broadcast batch modes) with a bias and
    GELU: values and gradients through the operator; torch.compile(fullgraph=True) of it; a
    CUDA graph of a batched gemm into a given C, replayed on new inputs."""
    x, w, y, x2, w2, errs = _gelu_linear((4, 2, 100, 96), (2, 96, 80), 5)
    fn = torch.compile(lambda u, v: codegen.mm(u, v), fullgraph=True)
    errs.append(rel(fn(x.detach(), w.detach()), x2.detach() @ w2.detach()))
    A = torch.randn(8, 256, 192, device="cuda", dtype=DT)
    B = torch.randn(8, 192, 320, device="cuda", dtype=DT)
    C = torch.empty(8, 256, 320, device="cuda", dtype=DT)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        codegen.gemm(A, B, C)                      # the warm-up
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        codegen.gemm(A, B, C)
    for seed in range(2):
        A.copy_(torch.randn(8, 256, 192, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed)))
        graph.replay()
        errs.append(rel(C, A.float() @ B.float()))
    ok = tuple(y.shape) == (4, 2, 100, 80) and max(errs) < 2e-2
    return ok, ("(4,2,100,96) @ (2,96,80) + bias, GELU: value, dx, dw, db, compiled, 2 graph replays of (8,256,192) "
                "@ (8,192,320): max rel errors " + ", ".join(f"{e:.1e}" for e in errs))


def _data(steps=3, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    xs = [torch.randn(64, 256, device="cuda", generator=g).to(DT) for _ in range(steps)]
    ys = [torch.randn(64, 128, device="cuda", generator=g) for _ in range(steps)]
    return xs, ys


def case_autograd():
    xs, ys = _data()
    ours, ref = MLP(codegen.mm), MLP(torch.matmul)
    out = ours(xs[0])
    has_fn = out.grad_fn is not None and "layoutalg" in type(out.grad_fn).__name__.lower() + str(out.grad_fn)
    la, lr = train(ours, xs, ys), train(ref, xs, ys)
    werr = max(rel(ours.w1, ref.w1), rel(ours.w2, ref.w2))
    ok = has_fn and max(abs(a - b) / abs(b) for a, b in zip(la, lr)) < 2e-2 and werr < 2e-2
    return ok, (f"grad_fn {type(out.grad_fn).__name__}; losses {[f'{x:.4f}' for x in la]} vs torch "
                f"{[f'{x:.4f}' for x in lr]}; weights max rel diff {werr:.1e}")


def case_gemm_has_grad():
    A = torch.randn(64, 32, device="cuda", dtype=DT, requires_grad=True)
    B = torch.randn(32, 48, device="cuda", dtype=DT)
    C = codegen.gemm(A, B)
    C.float().sum().backward()
    ref = torch.ones(64, 48, device="cuda", dtype=DT) @ B.t()
    return C.grad_fn is not None and rel(A.grad, ref) < 1e-2, f"codegen.gemm: grad_fn {type(C.grad_fn).__name__}"


def case_fused_autograd():
    """codegen.mm(x, w, bias=b, activation=...) against torch's F.<act>(x @ w + b): the values
    and the gradients of x, w and b (the backward recomputes z = x @ w + b in float32)."""
    import torch.nn.functional as F

    acts = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"), "silu": F.silu}
    worst = 0.0
    for name, fn in acts.items():
        g = torch.Generator(device="cuda").manual_seed(7)
        x = torch.randn(128, 256, device="cuda", generator=g).to(DT).requires_grad_()
        w = (torch.randn(256, 192, device="cuda", generator=g) / 16).to(DT).requires_grad_()
        b = torch.randn(192, device="cuda", generator=g).to(DT).requires_grad_()
        y = codegen.mm(x, w, bias=b, activation=name)
        y.float().square().sum().backward()
        got = [y, x.grad, w.grad, b.grad]
        xr, wr, br = (t.detach().float().requires_grad_() for t in (x, w, b))
        yr = fn(xr @ wr + br)
        yr.square().sum().backward()
        worst = max([worst] + [rel(a, r) for a, r in zip(got, [yr, xr.grad, wr.grad, br.grad])])
    # a bias per row, (M, 1), differentiated; a bias per column into a column-major C (the kernel
    # runs C^T = w^T @ x^T, where it is one a row)
    g = torch.Generator(device="cuda").manual_seed(9)
    x = torch.randn(200, 256, device="cuda", generator=g).to(DT).requires_grad_()
    w = (torch.randn(256, 136, device="cuda", generator=g) / 16).to(DT).requires_grad_()
    b = torch.randn(200, 1, device="cuda", generator=g).to(DT).requires_grad_()
    y = codegen.mm(x, w, bias=b, activation="gelu")
    y.float().square().sum().backward()
    xr, wr, br = (t.detach().float().requires_grad_() for t in (x, w, b))
    yr = F.gelu(xr @ wr + br)
    yr.square().sum().backward()
    rows = max(rel(a, r) for a, r in zip([y, x.grad, w.grad, b.grad], [yr, xr.grad, wr.grad, br.grad]))
    bc = torch.randn(136, device="cuda", generator=g).to(DT)
    C = torch.empty(136, 200, device="cuda", dtype=DT).t()             # (200, 136), column-major
    with torch.no_grad():
        codegen.gemm(x, w, C, bias=bc, activation="silu")
        cm = rel(C, F.silu(x.float() @ w.float() + bc.float()))
    return max(worst, rows, cm) < 3e-2, (f"relu, gelu, gelu_tanh, silu with a bf16 bias: values and grads, max rel "
                                         f"error {worst:.1e}; a bias per row (200, 1) with GELU: {rows:.1e}; a bias "
                                         f"per column into a column-major C with SiLU: {cm:.1e}")


def _residual_gelu(acc, m, n, bias, res):
    """A user epilogue: a bias, GELU's tanh form and a residual, in one pass."""
    z = acc + bias[n]
    return 0.5 * z * (1.0 + math.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z))) + res[m, n]


def case_user_epilogue():
    """gemm(..., epilogue=f, epilogue_args=(bias, res)) against torch, at shapes with edge tiles,
    on new tensors of the same kind (the cached launch), in a CUDA graph replayed on new inputs,
    and refused on tensors that require grad."""
    import torch.nn.functional as F

    errs = []
    for M, N, K in ((4096, 4096, 4096), (1000, 1544, 520), (77, 200, 64), (1000, 1531, 520)):   # the last: B's
        # rows not 16-byte aligned, so the mma.sync kernel applies the function
        g = torch.Generator(device="cuda").manual_seed(M)
        for rep in range(2):
            x = torch.randn(M, K, device="cuda", generator=g).to(DT)
            w = (torch.randn(K, N, device="cuda", generator=g) / K ** 0.5).to(DT)
            b = torch.randn(N, device="cuda", generator=g).to(DT)
            r = torch.randn(N, M, device="cuda", generator=g).t()          # column-major f32 residual
            y = codegen.gemm(x, w, epilogue=_residual_gelu, epilogue_args=(b, r))
            ref = F.gelu(x.float() @ w.float() + b.float(), approximate="tanh") + r
            errs.append(rel(y, ref))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    C = torch.empty(M, N, device="cuda", dtype=DT)
    with torch.cuda.stream(s):
        codegen.gemm(x, w, C, epilogue=_residual_gelu, epilogue_args=(b, r))
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        codegen.gemm(x, w, C, epilogue=_residual_gelu, epilogue_args=(b, r))
    for seed in range(2):
        gg = torch.Generator(device="cuda").manual_seed(100 + seed)
        x.copy_(torch.randn(M, K, device="cuda", generator=gg).to(DT))
        r.copy_(torch.randn(M, N, device="cuda", generator=gg))
        graph.replay()
        errs.append(rel(C, F.gelu(x.float() @ w.float() + b.float(), approximate="tanh") + r))
    try:
        codegen.gemm(x.requires_grad_(), w, epilogue=_residual_gelu, epilogue_args=(b, r))
        refused = False
    except codegen.GemmError as e:
        refused = "no derivative" in str(e)
    return max(errs) < 2e-2 and refused, f"bias + GELU + residual at 4096^3, 1000x1544x520, 77x200x64, 1000x1531x520 (mma.sync), twice each, " \
        f"and 2 graph replays: max rel error {max(errs):.1e}; refused with requires_grad: {refused}"


def case_grouped_autograd():
    """codegen.grouped_gemm on tensors that require a gradient (the operator with its backward)
    against a float64 loop over the groups: the output, dx and dw, with an empty group and
    rows past the last one; then three SGD steps of a two-expert layer."""
    g = torch.Generator(device="cuda").manual_seed(11)
    M, K, N = 700, 256, 384
    offs = torch.tensor([128, 128, 450, 640], device="cuda", dtype=torch.int32)
    x = torch.randn(M, K, device="cuda", generator=g).to(DT).requires_grad_()
    w = (torch.randn(4, K, N, device="cuda", generator=g) / K ** 0.5).to(DT).requires_grad_()
    dy = torch.randn(M, N, device="cuda", generator=g).to(DT)
    y = codegen.grouped_gemm(x, w, offs)
    y.backward(dy)
    xr, wr = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    rows, lo = [], 0
    for e in offs.tolist():
        rows.append((lo, e))
        lo = e
    yr = torch.cat([xr[a:b] @ wr[i] for i, (a, b) in enumerate(rows)] + [xr[lo:] @ wr[0] * 0])
    yr.backward(dy.double())
    errs = [rel(y[:lo], yr[:lo]), rel(x.grad, xr.grad), rel(w.grad, wr.grad)]
    return max(errs) < 2e-2, f"{M}x{K}x{N}, 4 groups (one empty, rows past the last): y, dx, dw max rel errors " + \
        ", ".join(f"{e:.1e}" for e in errs)


class Experts(torch.nn.Module):
    """A mixture-of-experts layer's experts: each group of rows (``offs``: the groups' int32
    end rows) through its own two-layer MLP, ``gmm(x, w, offs)`` being the grouped product."""

    def __init__(self, gmm, E=4, d=256, h=384, seed=0):
        super().__init__()
        g = torch.Generator(device="cuda").manual_seed(seed)
        self.w1 = torch.nn.Parameter(torch.randn(E, d, h, device="cuda", generator=g).mul(d ** -0.5).to(DT))
        self.w2 = torch.nn.Parameter(torch.randn(E, h, d, device="cuda", generator=g).mul(h ** -0.5).to(DT))
        self.gmm = gmm

    def forward(self, x, offs):
        return self.gmm(torch.relu(self.gmm(x, self.w1, offs)), self.w2, offs)


def _grouped_loop(x, w, offs):
    """The grouped product as a loop of torch matmuls (the reference; offs ends at x's rows)."""
    out, lo = [], 0
    for i, e in enumerate(offs.tolist()):
        out.append(x[lo:e] @ w[i])
        lo = e
    return torch.cat(out)


def case_grouped_module():
    """The experts layer on codegen.grouped_gemm trains three SGD steps against the same layer
    on torch matmuls (losses and weights), under torch.compile(fullgraph=True) too, and its
    forward is captured in a CUDA graph after a warm-up and replayed on new inputs."""
    g = torch.Generator(device="cuda").manual_seed(12)
    T, d = 640, 256
    offs = torch.tensor([100, 100, 390, 640], device="cuda", dtype=torch.int32)    # one expert gets no rows
    xs = [torch.randn(T, d, device="cuda", generator=g).to(DT) for _ in range(3)]
    ys = [torch.randn(T, d, device="cuda", generator=g) for _ in range(3)]

    def steps(model):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x, offs).float(), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    ref = Experts(_grouped_loop, seed=13)
    lr_ = steps(ref)
    errs = {}
    for name, model in (("eager", Experts(codegen.grouped_gemm, seed=13)),
                        ("compiled", torch.compile(Experts(codegen.grouped_gemm, seed=13), fullgraph=True))):
        lo = steps(model)
        w = model.w1 if name == "eager" else model._orig_mod.w1
        errs[name] = max(max(abs(a - b) / abs(b) for a, b in zip(lo, lr_)), rel(w, ref.w1))
    model, x = Experts(codegen.grouped_gemm, seed=14), xs[0].clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        model(x, offs)                                                         # the warm-up
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        out = model(x, offs)
    graph_errs = []
    for i in (1, 2):
        x.copy_(xs[i])
        graph.replay()
        with torch.no_grad():
            graph_errs.append(rel(out, _grouped_loop(torch.relu(_grouped_loop(x, model.w1, offs)), model.w2, offs)))
    worst = max(*errs.values(), *graph_errs)
    return worst < 2e-2, (f"experts layer, {T} rows in 4 groups (one empty), d {d}: 3 SGD steps eager and compiled "
                          f"(fullgraph) against torch matmuls, max rel diff of losses and weights "
                          f"{errs['eager']:.1e}, {errs['compiled']:.1e}; forward in a CUDA graph, 2 replays: "
                          f"max rel error {max(graph_errs):.1e}")


def case_compile():
    xs, ys = _data(seed=2)
    ours, ref = MLP(codegen.mm, seed=3), MLP(torch.matmul, seed=3)
    compiled = torch.compile(ours, fullgraph=True)
    y0 = compiled(xs[0])
    e0 = rel(y0, ref(xs[0]))
    la, lr = train(compiled, xs, ys), train(ref, xs, ys)
    dl = max(abs(a - b) / abs(b) for a, b in zip(la, lr))
    return e0 < 2e-2 and dl < 2e-2, f"torch.compile(fullgraph=True): forward rel err {e0:.1e}, training losses rel diff {dl:.1e}"


def case_graph():
    model = MLP(codegen.mm, seed=4)
    x = torch.randn(64, 256, device="cuda").to(DT)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        model(x)                                   # the warm-up: compiles, prepares
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        y = model(x)
    errs = []
    for seed in range(3):
        x.copy_(torch.randn(64, 256, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed)).to(DT))
        g.replay()
        with torch.no_grad():
            errs.append(rel(y, torch.relu(x @ model.w1) @ model.w2))
    return max(errs) < 2e-2, f"captured after a warm-up, 3 replays on new inputs: max rel error {max(errs):.1e}"


def case_fp8_scales_graph():
    """fp8 with float32 tensor scales, as torch._scaled_mm takes them: the kernel reads them,
    so a call can be captured and a replay uses the scales' values of the moment."""
    g = torch.Generator(device="cuda").manual_seed(6)
    A = torch.randn(256, 192, device="cuda", generator=g).to(torch.float8_e4m3fn)
    B = torch.randn(128, 192, device="cuda", generator=g).to(torch.float8_e4m3fn).t()    # K-major (column-major)
    sa, sb = torch.tensor([0.5], device="cuda"), torch.tensor([2.0], device="cuda")
    C = torch.empty(256, 128, device="cuda", dtype=torch.bfloat16)
    base = A.float() @ B.float()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        codegen.gemm(A, B, C, scale_a=sa, scale_b=sb)         # the warm-up
    torch.cuda.current_stream().wait_stream(s)
    errs = [rel(C, base)]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        codegen.gemm(A, B, C, scale_a=sa, scale_b=sb)
    for a, b in ((0.25, 3.0), (1.5, -1.0)):
        sa.fill_(a)
        sb.fill_(b)
        graph.replay()
        errs.append(rel(C, a * b * base))
    alpha = torch.tensor([0.5], device="cuda")                # alpha as a tensor: read by the kernel too
    codegen.gemm(A, B, C, alpha=alpha, scale_a=sa, scale_b=sb)
    errs.append(rel(C, 0.5 * 1.5 * -1.0 * base))
    return max(errs) < 1e-2, f"captured with tensor scales, replayed after changing them; alpha a tensor: " \
        f"max rel errors " + ", ".join(f"{e:.1e}" for e in errs)


def _fp8_close(C, want, kind):
    """The fraction of C's elements more than one step of ``kind`` (relative 2**-3 for e4m3,
    2**-2 for e5m2) from ``want`` (float32 values saturated as .satfinite): sums in another
    order may round to the neighbouring value."""
    top = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}[kind]
    ulp = {torch.float8_e4m3fn: 2.0 ** -3, torch.float8_e5m2: 2.0 ** -2}[kind]
    w = want.clamp(-top, top)
    far = (C.float() - w).abs() > ulp * w.abs() + 2.0 ** -9
    return far.float().mean().item()


def case_fp8_output():
    """An 8-bit float C with an output scale and the amax: bf16 and e4m3 inputs, an odd N,
    a fused bias and GELU, against torch (and torch._scaled_mm's own e4m3 output); then a
    capture in a CUDA graph whose replays read a changed scale and write a new amax."""
    g = torch.Generator(device="cuda").manual_seed(8)
    e4, e5 = torch.float8_e4m3fn, torch.float8_e5m2
    notes, ok = [], True
    cases = [("bf16", 1000, 1536, 512, e4, None), ("e4m3", 777, 1531, 640, e5, None),
             ("e4m3", 4096, 4096, 4096, e4, None), ("bf16", 512, 1024, 256, e4, "gelu")]
    for dt, M, N, K, kind, act in cases:
        if dt == "bf16":
            A = torch.randn(M, K, device="cuda", generator=g, dtype=torch.bfloat16)
            B = torch.randn(K, N, device="cuda", generator=g, dtype=torch.bfloat16)
        else:
            A = torch.randn(M, K, device="cuda", generator=g).to(e4)
            B = torch.randn(N, K, device="cuda", generator=g).to(e4).t()
        bias = torch.randn(N, device="cuda", generator=g, dtype=torch.bfloat16) if act else None
        scale, amax = torch.tensor([0.25], device="cuda"), torch.full((1,), 5.0, device="cuda")
        C = codegen.gemm(A, B, out_dtype=kind, scale_out=scale, amax=amax, bias=bias, activation=act)
        val = A.float() @ B.float()
        if act:
            val = torch.nn.functional.gelu(val + bias.float())
        far = _fp8_close(C, 0.25 * val, kind)
        am = abs(amax.item() - val.abs().max().item()) / val.abs().max().item()
        line = f"{dt}->{str(kind)[-6:]} {M}x{N}x{K}{' +bias,gelu' if act else ''}: off by more than a step {far:.1e}, amax rel {am:.1e}"
        if dt == "e4m3" and N % 16 == 0:          # torch._scaled_mm's own e4m3 output, same scales
            one = torch.ones(1, device="cuda")
            ts = torch._scaled_mm(A, B, one, one, out_dtype=e4, scale_result=scale)
            line += (f", torch._scaled_mm's e4m3 C with scale_result 0.25: off by more than a step from 0.25 * value "
                     f"{_fp8_close(ts, 0.25 * val, e4):.1e}, from value / 0.25 {_fp8_close(ts, 4.0 * val, e4):.1e}, "
                     f"from value {_fp8_close(ts, val, e4):.1e}")
        # 8-bit float inputs: wgmma's fp8 accumulation keeps fewer bits than float32 over a long K
        tol = 1e-2 if dt == "e4m3" else 1e-3
        ok &= C.dtype == kind and far < tol and am < tol
        notes.append(line)
    A = torch.randn(256, 192, device="cuda", generator=g, dtype=torch.bfloat16)
    B = torch.randn(192, 256, device="cuda", generator=g, dtype=torch.bfloat16)
    C = torch.empty(256, 256, device="cuda", dtype=e4)
    scale, amax = torch.tensor([1.0], device="cuda"), torch.zeros(1, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        codegen.gemm(A, B, C, scale_out=scale, amax=amax)       # the warm-up
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        codegen.gemm(A, B, C, scale_out=scale, amax=amax)
    val = A.float() @ B.float()
    for k, sc in enumerate((0.5, 2.0)):
        scale.fill_(sc)
        amax.fill_(-1.0)
        if k:
            B.mul_(2.0)
        val = A.float() @ B.float()
        graph.replay()
        torch.cuda.synchronize()
        far = _fp8_close(C, sc * val, e4)
        am = abs(amax.item() - val.abs().max().item()) / val.abs().max().item()
        ok &= far < 1e-3 and am < 1e-3
        notes.append(f"graph replay scale {sc}: off {far:.1e}, amax rel {am:.1e}")
    return ok, "; ".join(notes)


def case_capture_new_kind():
    A = torch.randn(96, 80, device="cuda", dtype=torch.float16)
    B = torch.randn(80, 72, device="cuda", dtype=torch.float16)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            codegen.mm(A, B)
    except Exception as e:
        msg = str(e)
        return "warm-up" in msg and isinstance(e, codegen.GemmError) or "warm" in msg, f"{type(e).__name__}: {msg[:120]}"
    return False, "no error"


def case_host_time():
    A = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    B = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    from compile_time import host_times           # benchmarks/: the same timing as its host_costs

    from codegen.torch_ops import _mm

    b, r = torch.randn(64, device="cuda", dtype=torch.float16), torch.randn(64, 64, device="cuda")
    out = host_times({
        "codegen.mm": lambda: codegen.mm(A, B), "codegen.gemm": lambda: codegen.gemm(A, B),
        "gemm with a user epilogue": lambda: codegen.gemm(A, B, epilogue=_residual_gelu, epilogue_args=(b, r)),
        "the operator": lambda: _mm(A, B, 1.0, None, None), "torch.matmul": lambda: torch.matmul(A, B)})
    return out["codegen.mm"][1] <= 15.0, ", ".join(f"{k} {v[1]:.1f} (best {v[0]:.1f})" for k, v in out.items()) + \
        " us a call, median of 21 interleaved runs of 200 calls, 64^3 f16 (target: codegen.mm <= 15 us)"


CASES = [case_forward, case_batch, case_bmm, case_fp8_scales_graph, case_fp8_output, case_autograd, case_gemm_has_grad, case_fused_autograd,
         case_user_epilogue, case_grouped_autograd, case_grouped_module, case_compile, case_graph, case_capture_new_kind, case_host_time]


def main(argv=None):
    names = (argv if argv is not None else sys.argv[1:]) or [c.__name__[5:] for c in CASES]   # cases by name
    unknown = set(names) - {c.__name__[5:] for c in CASES}
    if unknown:
        raise SystemExit(f"check_torch: no case {', '.join(sorted(unknown))}")
    results = []
    for case in (c for c in CASES if c.__name__[5:] in names):
        t0 = time.perf_counter()
        try:
            ok, msg = case()
        except Exception as e:
            import traceback

            traceback.print_exc()
            ok, msg = False, f"{type(e).__name__}: {str(e)[:300]}"
        dt = time.perf_counter() - t0
        print(f"{'PASS' if ok else 'FAIL'} {case.__name__[5:]}: {msg} [{dt:.1f} s]", flush=True)
        results.append({"case": case.__name__[5:], "ok": bool(ok), "message": msg, "seconds": dt})
    passed = sum(r["ok"] for r in results)
    print(f"{passed} passed, {len(results) - passed} failed")
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "check_torch.json"), "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": results}, f, indent=1)
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
