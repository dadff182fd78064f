"""Layout-algebra speed: layoutalg against pycute, per call, in one process.

    python benchmarks/bench_algebra.py [--n 3000] [--repeat 5] [--seed 1]

One corpus of random *admissible* inputs (the generators of tests/strategies.py:
composition pairs built from runs of the lhs's factors, divide tilers made of
disjoint runs, product tilers over the block's holes, injective layouts for the
complement, arbitrary layouts for coalesce and right_inverse) is run through
composition, complement, logical_divide, logical_product, coalesce and
right_inverse of both libraries.  Inputs are converted to pycute layouts before
timing.

Two passes of layoutalg are reported:

* cold -- the inputs are fresh copies (new ``Layout`` objects, no hash computed on them
  yet) and any ``lru_cache`` in ``layoutalg.algebra`` is cleared, so each call computes;
* warm -- the same input objects again (layoutalg does not memoise the algebra today,
  so this differs from cold only by what the first pass left in the CPU's caches).

The corpus is timed in chunks of ``--chunk`` inputs, and for each chunk the passes of
the two libraries are interleaved (pycute, cold, warm, pycute, ...) and the best of
``--repeat`` is kept; the figure is the sum over chunks, in microseconds per call, and
the ratio is pycute's time over layoutalg's.  On a loaded machine a long pass is more
often interrupted than a short one, which would favour the faster library; short,
interleaved chunks put both under the same conditions (best-of-N then also leaves out
most garbage-collection pauses, for both libraries).
"""

import argparse
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import pycute  # noqa: E402

import layoutalg  # noqa: E402
from layoutalg import algebra  # noqa: E402

import strategies as S  # noqa: E402


def build_corpus(n, seed):
    """Lists of (layoutalg args, pycute args) per operation."""
    corpus = {k: [] for k in ("composition", "complement", "logical_divide", "logical_product",
                              "coalesce", "right_inverse")}
    pc = lambda L: pycute.Layout(L.shape, L.stride)  # noqa: E731
    k = 0
    while min(len(v) for v in corpus.values()) < n:
        src = S.RandomSource(seed * 1_000_003 + k)
        k += 1
        A, B = S.gen_composition_pair(src, weak=False)
        if not (S.flat(A.shape)[-1] == 1 and max(S.ref_values(B)) >= S.ref_size(A)):
            corpus["composition"].append(((A, B), (pc(A), pc(B))))
        L = S.gen_injective(src, divisible=src.bool(), zeros=src.bool())
        cot = src.int(1, 4 * S.ref_cosize(L) + 3)
        corpus["complement"].append(((L, cot), (pc(L), cot)))
        A, B = S.gen_divide_pair(src)
        if not (S.ref_size(A) == 1 and A.stride != 0):
            corpus["logical_divide"].append(((A, B), (pc(A), pc(B))))
        A, B = S.gen_product_pair(src)
        corpus["logical_product"].append(((A, B), (pc(A), pc(B))))
        L = S.gen_layout(src)
        corpus["coalesce"].append(((L,), (pc(L),)))
        L = S.gen_compact(src) if src.bool() else S.gen_injective(src, divisible=src.bool())
        corpus["right_inverse"].append(((L,), (pc(L),)))
    return {op: v[:n] for op, v in corpus.items()}


OPS = {
    "composition": (layoutalg.composition, pycute.composition),
    "complement": (layoutalg.complement, pycute.complement),
    "logical_divide": (layoutalg.logical_divide, pycute.logical_divide),
    "logical_product": (layoutalg.logical_product, pycute.logical_product),
    "coalesce": (layoutalg.coalesce, pycute.coalesce),
    "right_inverse": (layoutalg.right_inverse, pycute.right_inverse),
}


def clear_caches():
    for name in dir(algebra):
        fn = getattr(algebra, name)
        if callable(getattr(fn, "cache_clear", None)):
            fn.cache_clear()


def fresh(args_list):
    """New Layout objects equal to the inputs: nothing an earlier pass computed lingers on them."""
    cp = lambda x: layoutalg.Layout._make(x.shape, x.stride) if isinstance(x, layoutalg.Layout) else x  # noqa: E731
    return [tuple(cp(a) for a in args) for args in args_list]


def time_pass(fn, args_list, before=None):
    if before is not None:
        before()
    t0 = time.perf_counter()
    for args in args_list:
        fn(*args)
    return time.perf_counter() - t0


def check_agreement(corpus):
    """The two libraries compute the same function on every corpus entry (sanity, untimed)."""
    bad = 0
    for op, (ours, theirs) in OPS.items():
        for la_args, pc_args in corpus[op]:
            r, p = ours(*la_args), theirs(*pc_args)
            if [S.ref_eval(r, i) for i in range(layoutalg.size(r))] != [p(i) for i in range(p.size())]:
                bad += 1
    return bad


def machine():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3000, help="corpus entries per operation")
    ap.add_argument("--repeat", type=int, default=5, help="passes per measurement (best is kept)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=10, help="inputs per timed chunk")
    ap.add_argument("--no-check", action="store_true", help="skip the untimed agreement check")
    args = ap.parse_args(argv)

    corpus = build_corpus(args.n, args.seed)
    print(f"machine: {machine()}")
    print(f"pycute {getattr(pycute, '__version__', '(from nvidia-cutlass)')}, "
          f"layoutalg {layoutalg.__version__}; corpus: {args.n} inputs per op, best of {args.repeat}")
    if not args.no_check:
        print(f"agreement check: {check_agreement(corpus)} mismatches")
    header = f"{'op':<16} {'pycute us':>10} {'cold us':>9} {'cold x':>7} {'warm us':>9} {'warm x':>7}"
    print(header)
    print("-" * len(header))
    totals = [0.0, 0.0, 0.0]
    for op, (ours, theirs) in OPS.items():
        la_args = [a for a, _ in corpus[op]]
        pc_args = [p for _, p in corpus[op]]
        n = len(la_args)
        t_pc = t_cold = t_warm = 0.0
        for k in range(0, n, args.chunk):
            la, pc = la_args[k:k + args.chunk], pc_args[k:k + args.chunk]
            b_pc = b_cold = b_warm = float("inf")
            for _ in range(args.repeat):
                b_pc = min(b_pc, time_pass(theirs, pc))
                b_cold = min(b_cold, time_pass(ours, fresh(la), clear_caches))
                time_pass(ours, la)              # fill any caches
                b_warm = min(b_warm, time_pass(ours, la))
            t_pc += b_pc
            t_cold += b_cold
            t_warm += b_warm
        totals[0] += t_pc
        totals[1] += t_cold
        totals[2] += t_warm
        print(f"{op:<16} {1e6 * t_pc / n:>10.2f} {1e6 * t_cold / n:>9.2f} {t_pc / t_cold:>6.1f}x "
              f"{1e6 * t_warm / n:>9.2f} {t_pc / t_warm:>6.1f}x")
    n_all = args.n * len(OPS)
    print("-" * len(header))
    print(f"{'all':<16} {1e6 * totals[0] / n_all:>10.2f} {1e6 * totals[1] / n_all:>9.2f} "
          f"{totals[0] / totals[1]:>6.1f}x {1e6 * totals[2] / n_all:>9.2f} {totals[0] / totals[2]:>6.1f}x")


if __name__ == "__main__":
    main()
