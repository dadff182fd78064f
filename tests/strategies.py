"""Random layouts for the property, differential and fuzz tests.

Every generator here is written once against a tiny "source of choices"
(:class:`RandomSource` wraps a seeded ``random.Random`` for the fast
differential loops, :class:`DrawSource` wraps hypothesis' ``draw`` so that
failures shrink), and exposed as a hypothesis strategy by :func:`strategy`.

The pair generators build *admissible* inputs, following the divisibility
conditions of CuTe's composition (``02_layout_algebra.md``):

* every flat mode of ``A`` is split into a random sequence of factors; a *run*
  of consecutive factors ``f_j ... f_k`` is the rhs leaf ``(f_j*...*f_k) :
  (f_0*...*f_{j-1})``, which divides the stride out of ``A``'s modes and then
  mods the shape out exactly.  Runs may also overflow the last mode (the last
  mode of a layout is unbounded), be stride-0, or -- CuTe's weak stride
  condition -- step through the first mode with a stride that does not divide it
  as long as they stay inside it.
* ``logical_divide`` tilers are sets of disjoint runs (so the complement is made
  of the runs in between);
* ``logical_product`` tilers are runs over the *holes* of an injective block
  (the modes of its complement) followed by the repetitions.

The reference evaluator :func:`ref_eval` is independent of the library.
"""

import random

try:
    from hypothesis import strategies as st
except ImportError:      # benchmarks/bench_algebra.py only needs RandomSource
    st = None

from layoutalg import Layout

# ---- sources of choices ---------------------------------------------------


class RandomSource:
    """Choices from a seeded ``random.Random``."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def int(self, lo, hi):
        return self.rng.randint(lo, hi)

    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def bool(self, p=0.5):
        return self.rng.random() < p

    def permutation(self, xs):
        xs = list(xs)
        self.rng.shuffle(xs)
        return xs


class DrawSource:
    """Choices from hypothesis (shrinkable)."""

    def __init__(self, draw):
        self.draw = draw

    def int(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def choice(self, seq):
        return seq[self.draw(st.integers(0, len(seq) - 1))]

    def bool(self, p=0.5):
        # hypothesis shrinks booleans towards False; p only matters for RandomSource
        return self.draw(st.booleans())

    def permutation(self, xs):
        return list(self.draw(st.permutations(list(xs))))


def strategy(gen, *args, **kwargs):
    """The hypothesis strategy drawing ``gen(source, *args, **kwargs)``."""

    @st.composite
    def _s(draw):
        return gen(DrawSource(draw), *args, **kwargs)

    return _s()


# ---- reference evaluation (independent of the library) ----------------------


def flat(t):
    if isinstance(t, tuple):
        out = []
        for x in t:
            out.extend(flat(x))
        return out
    return [t]


def prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def ref_eval(layout, i):
    """``layout(i)`` for an int ``i``: colexicographic split, the last mode unbounded (as CuTe)."""
    fs, fd = flat(layout.shape), flat(layout.stride)
    r = 0
    for k, (s, d) in enumerate(zip(fs, fd)):
        if k == len(fs) - 1:
            r += i * d
        else:
            r += (i % s) * d
            i //= s
    return r


def ref_values(layout, n=None):
    n = prod(flat(layout.shape)) if n is None else n
    return [ref_eval(layout, i) for i in range(n)]


def ref_size(layout):
    return prod(flat(layout.shape))


def ref_cosize(layout):
    """CuTe's cosize: ``|layout|(size-1) + 1`` with absolute strides."""
    return sum((s - 1) * abs(d) for s, d in zip(flat(layout.shape), flat(layout.stride))) + 1


# ---- building blocks -------------------------------------------------------


def nest(src, leaves, max_depth=2):
    """Arrange a list of leaves in a random tuple tree (a single leaf may stay bare)."""
    leaves = list(leaves)
    if len(leaves) == 1 and (max_depth == 0 or src.bool()):
        return leaves[0]
    if max_depth == 0:
        return tuple(leaves)
    out = []
    i = 0
    while i < len(leaves):
        k = src.int(1, len(leaves) - i)
        group = leaves[i:i + k]
        if k == 1 and src.bool():
            out.append(group[0])
        else:
            sub = nest(src, group, max_depth - 1)
            out.append(sub if isinstance(sub, tuple) else (sub,) if src.bool() else sub)
        i += k
    return tuple(out)


def unflatten_like(values, profile):
    it = iter(values)

    def build(p):
        if isinstance(p, tuple):
            return tuple(build(x) for x in p)
        return next(it)

    return build(profile)


SMALL = (1, 2, 2, 3, 4, 4, 5, 6, 8)


def gen_flat_shape(src, max_leaves=4, max_size=96, min_leaves=1):
    n = src.int(min_leaves, max_leaves)
    leaves = []
    total = 1
    for _ in range(n):
        s = src.choice(SMALL)
        if total * s > max_size:
            s = 1
        leaves.append(s)
        total *= s
    return leaves


def gen_shape(src, max_leaves=4, max_size=96, max_depth=2):
    return nest(src, gen_flat_shape(src, max_leaves, max_size), max_depth)


def gen_layout(src, max_leaves=4, max_size=96, strides="any", max_depth=2):
    """A random layout: ``strides`` is ``"any"`` (may be negative), ``"nonneg"`` or ``"pos"``."""
    leaves = gen_flat_shape(src, max_leaves, max_size)
    lo = {"any": -12, "nonneg": 0, "pos": 1}[strides]
    ds = []
    for _ in leaves:
        if strides != "pos" and src.bool(0.2):
            ds.append(0)
        else:
            d = src.int(lo, 24)
            if strides == "pos" and d == 0:
                d = 1
            ds.append(d)
    profile = nest(src, list(range(len(leaves))), max_depth)
    return Layout(unflatten_like(leaves, profile), unflatten_like(ds, profile))


def gen_compact(src, max_leaves=4, max_size=96, max_depth=2, zeros=False):
    """A compact layout: a random permutation of column-major strides (a bijection onto [0, size)).

    ``zeros``: some modes are broadcast (stride 0); the others stay compact.
    """
    leaves = gen_flat_shape(src, max_leaves, max_size)
    order = src.permutation(range(len(leaves)))
    ds = [0] * len(leaves)
    cur = 1
    for k in order:
        if zeros and src.bool(0.3):
            continue
        ds[k] = cur
        cur *= leaves[k]
    profile = nest(src, list(range(len(leaves))), max_depth)
    return Layout(unflatten_like(leaves, profile), unflatten_like(ds, profile))


def gen_injective(src, max_leaves=4, max_size=64, divisible=True, zeros=False, max_depth=2):
    """An injective layout whose modes nest: sorted by stride, each starts at or past the last extent.

    ``divisible``: every stride is a multiple of the extent below it (so left_inverse exists);
    otherwise some strides leave a non-dividing gap, as ``(3,6):(1,10)`` in CuTe's tests.
    ``zeros``: also add stride-0 (broadcast) modes.
    """
    leaves = gen_flat_shape(src, max_leaves, max_size)
    order = src.permutation(range(len(leaves)))
    ds = [0] * len(leaves)
    cur = 1
    for k in order:
        g = src.choice((1, 1, 1, 2, 3, 4))
        d = cur * g
        if not divisible and cur > 1 and src.bool(0.4):
            d += src.int(1, cur - 1)
        ds[k] = d
        cur = d * leaves[k]
    if zeros:
        for k in range(len(leaves)):
            if src.bool(0.25):
                ds[k] = 0
    profile = nest(src, list(range(len(leaves))), max_depth)
    return Layout(unflatten_like(leaves, profile), unflatten_like(ds, profile))


def factorize(src, n):
    """A random ordered factorization of ``n`` into factors > 1 (``[]`` for 1)."""
    out = []
    while n > 1:
        divs = [d for d in range(2, n + 1) if n % d == 0]
        d = src.choice(divs) if src.bool(0.7) else divs[0]
        out.append(d)
        n //= d
    return out


def factor_sequence(src, shapes):
    """Factors of every leaf of ``shapes`` in order, with the exclusive prefix product at each."""
    fs = []
    for s in shapes:
        fs.extend(factorize(src, s))
    pos = []
    p = 1
    for f in fs:
        pos.append(p)
        p *= f
    return fs, pos, p


def gen_runs(src, fs, pos, total, overflow=True):
    """Admissible rhs leaves ``shape:stride``: disjoint runs of consecutive factors.

    Disjoint runs address different "digits" of the lhs, so their offsets add
    without carries and composition distributes over them.  The last run may
    continue into the unbounded last mode (``overflow``); stride-0 leaves and a
    leaf striding past the end of the lhs may be added.
    """
    m = len(fs)
    leaves = []
    j = 0
    while j < m:
        k = src.int(j, m)
        if k > j and src.bool(0.6):
            shape = prod(fs[j:k])
            if k == m and overflow and src.bool(0.25):
                shape *= src.int(2, 3)      # runs on into the unbounded last mode
            leaves.append((shape, pos[j]))
        j = max(k, j + 1)
    if overflow and src.bool(0.15):
        leaves.append((src.int(2, 3), total * src.int(1, 2)))
    while src.bool(0.2):
        leaves.append((src.int(1, 4), 0))   # broadcast
    if not leaves:
        leaves.append((1, src.choice((0, 1))))
    return src.permutation(leaves)


def gen_rhs_leaves(src, A, overflow=True, weak=True):
    fs, pos, total = factor_sequence(src, flat(A.shape))
    first = next((s for s in flat(A.shape) if s > 1), 1)
    if weak and first >= 3 and src.bool(0.15):
        # CuTe's weak stride condition: a stride that does not divide the first
        # mode, while the whole leaf stays inside that mode
        d = src.int(2, first - 1)
        leaves = [(src.int(1, (first - 1) // d + 1), d)]
        while src.bool(0.2):
            leaves.append((src.int(1, 4), 0))
        return src.permutation(leaves)
    return gen_runs(src, fs, pos, total, overflow)


def layout_from_leaves(src, leaves, max_depth=2):
    profile = nest(src, list(range(len(leaves))), max_depth)
    return Layout(unflatten_like([s for s, _ in leaves], profile),
                  unflatten_like([d for _, d in leaves], profile))


def gen_composition_pair(src, overflow=True, weak=True, a_strides="any"):
    """``(A, B)`` with ``A o B`` admissible (B's image may run past ``size(A)`` if ``overflow``)."""
    A = gen_layout(src, strides=a_strides)
    B = layout_from_leaves(src, gen_rhs_leaves(src, A, overflow, weak))
    return A, B


def gen_divide_pair(src):
    """``(A, B)`` with ``logical_divide(A, B)`` admissible: B made of disjoint runs of A's factors."""
    A = gen_layout(src, strides="any")
    if src.bool(0.15):
        # residue tile of a single-mode layout: rest rounds up
        n = ref_size(A)
        A = Layout(n, src.int(-3, 5))
        return A, Layout(src.int(1, 2 * n + 1), src.choice((1, 1, 2)))
    fs, pos, total = factor_sequence(src, flat(A.shape))
    m = len(fs)
    runs = []
    j = 0
    while j < m:
        k = src.int(j, m)
        if k > j and src.bool(0.6):
            runs.append((prod(fs[j:k]), pos[j]))
        j = max(k, j + 1)
    if not runs or src.bool(0.1):
        runs.append((1, src.choice((0, 1))))
    if src.bool(0.15):
        runs.append((src.int(2, 3), 0))        # a broadcast mode in the tiler
    runs = src.permutation(runs)
    return A, layout_from_leaves(src, runs)


def complement_shape(A, cotarget):
    """The flat modes (shape, stride) of complement(A, cotarget) for a divisible injective A (reference)."""
    modes = sorted((d, s) for s, d in zip(flat(A.shape), flat(A.stride)) if d != 0 and s != 1)
    out = []
    cur = 1
    for d, s in modes:
        out.append((d // cur, cur))
        cur = s * d
    out.append((-(-cotarget // cur), cur))
    return out


def gen_product_pair(src, max_depth=2, max_a=32, max_b=24):
    """``(A, B)`` with ``logical_product(A, B)`` admissible."""
    if src.bool():
        # A whose filter is compact: complement(A, .) is a single mode, any B will do
        A = gen_compact(src, max_leaves=3, max_size=max_a, zeros=True)
        B = gen_layout(src, max_leaves=3, max_size=max_b, strides="nonneg", max_depth=max_depth)
        return A, B
    A = gen_injective(src, max_leaves=3, max_size=max_a, divisible=True, zeros=src.bool(0.3))
    holes = [h for h, _ in complement_shape(A, 1)[:-1]]
    extra = src.int(1, max(1, min(6, max_b // max(1, prod(holes)))))
    fs, pos, total = factor_sequence(src, holes + [extra])
    return A, layout_from_leaves(src, gen_runs(src, fs, pos, total, overflow=True), max_depth)


def gen_tiler_tuple(src, A):
    """A by-mode tiler for ``logical_divide(A, tiler)``: per mode an int dividing it, a layout, or None."""
    modes = list(A.shape) if isinstance(A.shape, tuple) else [A.shape]
    strides = list(A.stride) if isinstance(A.stride, tuple) else [A.stride]
    n = src.int(1, len(modes))
    out = []
    for i in range(n):
        m = Layout(modes[i], strides[i])
        kind = src.int(0, 3)
        if kind == 0:
            fs, _, _ = factor_sequence(src, flat(m.shape))
            out.append(prod(fs[:src.int(0, len(fs))]))     # an int tiler n means n:1: a prefix run
        elif kind == 1:
            out.append(None)
        else:
            out.append(gen_divide_pair_for(src, m))
    return tuple(out)


def gen_divide_pair_for(src, A):
    fs, pos, total = factor_sequence(src, flat(A.shape))
    m = len(fs)
    runs = []
    j = 0
    while j < m:
        k = src.int(j, m)
        if k > j and src.bool(0.6):
            runs.append((prod(fs[j:k]), pos[j]))
        j = max(k, j + 1)
    if not runs:
        runs.append((1, 0))
    runs = src.permutation(runs)
    return layout_from_leaves(src, runs, max_depth=1)


def gen_swizzle_args(src):
    b = src.int(0, 3)
    m = src.int(0, 4)
    s = src.int(max(b, 1), 5) * (1 if src.bool() else -1)
    if abs(s) < b:
        s = b
    return b, m, s


# ---- hypothesis strategies ---------------------------------------------------

if st is not None:
    shapes = strategy(gen_shape)
    layouts = strategy(gen_layout)
    nonneg_layouts = strategy(gen_layout, strides="nonneg")
    compact_layouts = strategy(gen_compact)
    injective_layouts = strategy(gen_injective)
    nesting_layouts = strategy(gen_injective, divisible=False, zeros=True)
    composition_pairs = strategy(gen_composition_pair)
    divide_pairs = strategy(gen_divide_pair)
    product_pairs = strategy(gen_product_pair)
    swizzle_args = strategy(gen_swizzle_args)
