"""Int-tuples: integers and arbitrarily nested tuples of integers.

Shapes, strides and coordinates in CuTe are int-tuples.  Coordinates are
colexicographic: the leftmost mode varies fastest.

>>> product((2, (3, 4))) == 24
True
>>> prefix_product((2, (3, 4))) == (1, (2, 6))
True
>>> idx2crd(7, (2, (3, 4))) == (1, (0, 1))
True
>>> crd2idx((1, (0, 1)), (2, (3, 4))) == 7
True
"""

from functools import reduce

from .errors import LayoutError, LayoutIndexError, LayoutTypeError

__all__ = [
    "is_int", "is_tuple", "product", "size", "rank", "depth", "flatten", "unflatten",
    "prefix_product", "suffix_product", "shape_div", "ceil_div", "shape_min", "congruent",
    "compatible", "weakly_congruent", "idx2crd", "crd2idx", "crd2crd", "elem_less",
    "colex_less", "inner_product", "elem_scale", "repeat_like", "check_shape", "check_int_tuple",
]


def is_int(x):
    """True for Python/numpy integers; bools are not integers here."""
    return type(x) is int or (isinstance(x, int) and not isinstance(x, bool)) or _is_np_int(x)


def _is_np_int(x):
    t = type(x)
    return t.__module__ == "numpy" and hasattr(x, "dtype") and x.dtype.kind in "iu" and x.ndim == 0


def is_tuple(x):
    return isinstance(x, tuple)


def check_int_tuple(op, t, what="value"):
    """Validate and normalise an int-tuple (lists become tuples, numpy ints become ints)."""
    if isinstance(t, (tuple, list)):
        return tuple(check_int_tuple(op, x, what) for x in t)
    if isinstance(t, bool) or not is_int(t):
        raise LayoutTypeError(f"{op}: {what} must be an int or a tuple of ints, got {t!r}")
    return int(t)


def check_shape(op, shape):
    """Validate a shape: an int-tuple of positive integers."""
    shape = check_int_tuple(op, shape, "shape")
    for s in _leaves(shape):
        if s <= 0:
            raise LayoutError(f"{op}: shape entries must be positive, got {s} in {fmt(shape)}")
    return shape


def _leaves(t):
    if isinstance(t, tuple):
        for x in t:
            yield from _leaves(x)
    else:
        yield t


def fmt(t):
    """CuTe's text form of an int-tuple: ``(2,(3,4))``."""
    if isinstance(t, tuple):
        return "(" + ",".join(fmt(x) for x in t) + ")"
    return str(t)


def _num(op, x):
    """An int leaf of a numeric int-tuple operation, or LayoutTypeError naming ``op``."""
    if type(x) is int:
        return x
    if isinstance(x, bool) or not is_int(x):
        raise LayoutTypeError(f"{op}: expected an int or a tuple of ints, got {x!r}")
    return int(x)


def product(t):
    """Product of all leaves; ``product(()) == 1``."""
    if isinstance(t, tuple):
        r = 1
        for x in t:
            r *= product(x)
        return r
    if type(t) is int:
        return t
    return _num("product", t)


size = product


def rank(t):
    """Number of top-level modes; an int has rank 1."""
    return len(t) if isinstance(t, tuple) else 1


def depth(t):
    """Nesting depth; an int has depth 0, ``(2,3)`` depth 1."""
    if isinstance(t, tuple):
        return 1 + max((depth(x) for x in t), default=0)
    return 0


def flatten(t):
    """All leaves in a flat tuple; an int stays an int (as in CuTe)."""
    if isinstance(t, tuple):
        return flat_tuple(t)
    return t


def flat_tuple(t):
    """All leaves in a flat tuple; an int ``x`` gives ``(x,)``."""
    if not isinstance(t, tuple):
        return (t,)
    for x in t:
        if isinstance(x, tuple):
            break
    else:
        return t                      # already flat: the common case, no copy
    out = []
    for x in t:                       # unrolled for depth 2, recursive below that
        if isinstance(x, tuple):
            for y in x:
                if isinstance(y, tuple):
                    _flat_into(y, out)
                else:
                    out.append(y)
        else:
            out.append(x)
    return tuple(out)


def _flat_into(t, out):
    for x in t:
        if isinstance(x, tuple):
            _flat_into(x, out)
        else:
            out.append(x)


def unflatten(flat, profile):
    """Arrange the flat sequence ``flat`` in the nesting of ``profile``.

    >>> unflatten((1, 2, 3), (0, (0, 0))) == (1, (2, 3))
    True
    """
    flat = tuple(flat) if isinstance(flat, (tuple, list)) else (flat,)
    n = len(flat_tuple(profile))
    if len(flat) != n:
        raise LayoutError(f"unflatten: {len(flat)} values do not fit profile {fmt(profile)} with {n} leaves")
    it = iter(flat)

    def build(p):
        if isinstance(p, tuple):
            return tuple(build(x) for x in p)
        return next(it)

    return build(profile)


def repeat_like(t, value):
    """An int-tuple of the profile of ``t`` with every leaf ``value``."""
    if isinstance(t, tuple):
        return tuple(repeat_like(x, value) for x in t)
    return value


def prefix_product(t, init=1):
    """Exclusive prefix product, hierarchical: ``prefix_product((2,(3,4))) == (1,(2,6))``."""
    if isinstance(t, tuple):
        out = []
        for x in t:
            out.append(prefix_product(x, init))
            init = init * product(x)
        return tuple(out)
    _num("prefix_product", t)
    return init


def suffix_product(t, init=1):
    """Exclusive suffix product (row-major strides): ``suffix_product((2,3,4)) == (12,4,1)``."""
    if isinstance(t, tuple):
        out = []
        for x in reversed(t):
            out.append(suffix_product(x, init))
            init = init * product(x)
        return tuple(reversed(out))
    _num("suffix_product", t)
    return init


def _int_shape_div(a, b, op="shape_div"):
    a, b = _num(op, a), _num(op, b)
    if b == 0:
        raise LayoutError(f"{op}: division by zero ({a} / {b})")
    if a % b != 0 and b % a != 0:
        raise LayoutError(f"{op}: neither of {a} and {b} divides the other")
    return (a + b - 1) // b if a >= 0 else -((-a + b - 1) // b)


def shape_div(a, b):
    """CuTe's shape_div: ``a / b`` where one divides the other, rounding ``a < b`` up to 1.

    For a tuple ``a`` and int ``b``, ``b`` is divided out of the modes from the left.
    """
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) != len(b):
                raise LayoutError(f"shape_div: ranks differ ({fmt(a)} / {fmt(b)})")
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out = []
        for x in a:
            out.append(shape_div(x, b))
            b = shape_div(b, product(x))
        return tuple(out)
    if isinstance(b, tuple):
        return shape_div(a, product(b))
    return _int_shape_div(a, b)


def shape_min(a, b):
    """Elementwise min for ints (the only form the algebra needs)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        raise LayoutError(f"shape_min: expects ints, got {fmt(a)} and {fmt(b)}")
    return min(a, b)


def ceil_div(a, b):
    """Ceiling division.

    ints: ``(a + b - 1) // b``; tuple / tuple: by mode (missing modes of ``b`` count as 1);
    tuple / int: ``b`` is divided out of the modes from the left, as in CuTe.
    """
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(b) > len(a):
                raise LayoutError(f"ceil_div: divisor {fmt(b)} has more modes than {fmt(a)}")
            b = b + (1,) * (len(a) - len(b))
            return tuple(ceil_div(x, y) for x, y in zip(a, b))
        out = []
        for x in a:
            out.append(ceil_div(x, b))
            b = ceil_div(b, product(x))
        return tuple(out)
    if isinstance(b, tuple):
        b = product(b)
    a, b = _num("ceil_div", a), _num("ceil_div", b)
    if b == 0:
        raise LayoutError(f"ceil_div: division by zero ({a} / {b})")
    return -(-a // b)


def elem_scale(a, b):
    """Elementwise product of congruent int-tuples."""
    if isinstance(a, tuple):
        return tuple(elem_scale(x, y) for x, y in zip(a, b))
    return a * product(b)


def congruent(a, b):
    """True when ``a`` and ``b`` have the same nesting profile."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple) and not isinstance(b, tuple)


def weakly_congruent(a, b):
    """True when ``b`` refines ``a``: every leaf of ``a`` may stand for a subtree of ``b``."""
    if not isinstance(a, tuple):
        return True
    if not isinstance(b, tuple):
        return False
    return len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))


def compatible(a, b):
    """True when coordinates of ``a`` can index ``b``: sizes agree and ``b`` refines ``a``."""
    if not isinstance(a, tuple):
        return a == product(b)
    if not isinstance(b, tuple):
        return False
    return len(a) == len(b) and all(compatible(x, y) for x, y in zip(a, b))


def idx2crd(idx, shape, stride=None):
    """Colexicographic coordinate of ``idx`` in ``shape``.

    An int index with a tuple shape gives a coordinate congruent to the shape; a
    tuple index with a tuple shape is converted mode by mode.  With ``stride``
    given, computes ``(idx // stride) % shape`` at each leaf (CuTe's 3-argument form).
    """
    idx = check_int_tuple("idx2crd", idx, "index")
    shape = check_shape("idx2crd", shape)
    if stride is not None:
        stride = check_int_tuple("idx2crd", stride, "stride")
        if any(d == 0 for d in _leaves(stride)):
            raise LayoutError(f"idx2crd: strides must be non-zero, got {fmt(stride)}")
    return _idx2crd(idx, shape, stride)


def _idx2crd(idx, shape, stride=None):
    if stride is None:
        # CuTe's two-argument idx2crd: a tuple coordinate is converted mode by mode,
        # each mode against its *own* compact strides; an int with an int shape is
        # already a natural coordinate.
        if isinstance(idx, tuple):
            if not isinstance(shape, tuple) or len(idx) != len(shape):
                raise LayoutError(f"idx2crd: coordinate {fmt(idx)} does not match shape {fmt(shape)}")
            return tuple(_idx2crd(i, s) for i, s in zip(idx, shape))
        if not isinstance(shape, tuple):
            return _num("idx2crd", idx)
        stride = prefix_product(shape)
    if isinstance(idx, tuple):
        if not isinstance(shape, tuple) or len(idx) != len(shape):
            raise LayoutError(f"idx2crd: coordinate {fmt(idx)} does not match shape {fmt(shape)}")
        return tuple(_idx2crd(i, s, d) for i, s, d in zip(idx, shape, stride))
    if isinstance(shape, tuple):
        return tuple(_idx2crd(idx, s, d) for s, d in zip(shape, stride))
    if type(idx) is not int:
        idx = _num("idx2crd", idx)
    return (idx // stride) % shape


def crd2idx(crd, shape, stride=None):
    """Index of coordinate ``crd``: its inner product with ``stride``.

    ``stride`` defaults to the compact column-major strides of ``shape``.  An int
    coordinate with a tuple shape is first split colexicographically; the last
    mode takes the remainder unbounded, as in CuTe.
    """
    crd = check_int_tuple("crd2idx", crd, "coordinate")
    shape = check_shape("crd2idx", shape)
    if stride is None:
        stride = prefix_product(shape)
    else:
        stride = _check_strides("crd2idx", stride)
    try:
        return _crd2idx(crd, shape, stride)
    except (TypeError, ZeroDivisionError) as e:
        raise LayoutTypeError(
            f"crd2idx: coordinate {fmt(crd)}, shape {fmt(shape)} and stride {fmt(stride)} do not fit ({e})") from None


def _check_strides(op, d):
    from .basis import ScaledBasis

    if isinstance(d, (tuple, list)):
        return tuple(_check_strides(op, x) for x in d)
    if isinstance(d, ScaledBasis):
        return d
    if isinstance(d, bool) or not is_int(d):
        raise LayoutTypeError(f"{op}: stride must be an int or a tuple of ints, got {d!r}")
    return int(d)


def _crd2idx(crd, shape, stride):
    if isinstance(crd, tuple):
        if not isinstance(shape, tuple) or len(crd) != len(shape):
            raise LayoutError(f"crd2idx: coordinate {fmt(crd)} does not match shape {fmt(shape)}")
        r = 0
        for c, s, d in zip(crd, shape, stride):
            r = r + _crd2idx(c, s, d)
        return r
    if isinstance(shape, tuple):
        if type(crd) is not int:
            crd = _num("crd2idx", crd)
        if len(shape) == 0:
            return 0
        r = 0
        last = len(shape) - 1
        for k, (s, d) in enumerate(zip(shape, stride)):
            if k == last:
                r = r + _crd2idx(crd, s, d)
            else:
                n = product(s)
                r = r + _crd2idx(crd % n, s, d)
                crd = crd // n
        return r
    if type(crd) is not int:
        crd = _num("crd2idx", crd)
    return crd * stride


def crd2crd(crd, src_shape, dst_shape):
    """Convert a coordinate of ``src_shape`` into the coordinate of ``dst_shape`` with the same index."""
    if isinstance(crd, tuple) and isinstance(dst_shape, tuple) and isinstance(src_shape, tuple):
        if len(crd) != len(src_shape):
            raise LayoutError(f"crd2crd: coordinate {fmt(crd)} does not match shape {fmt(src_shape)}")
        if len(src_shape) == len(dst_shape):
            return tuple(crd2crd(c, s, d) for c, s, d in zip(crd, src_shape, dst_shape))
    if not compatible(product(src_shape), dst_shape):
        raise LayoutError(f"crd2crd: sizes of {fmt(src_shape)} and {fmt(dst_shape)} differ")
    return idx2crd(crd2idx(crd, src_shape), dst_shape)


def elem_less(a, b):
    """True when every leaf of ``a`` is less than the matching leaf of ``b`` (missing modes of ``a`` count as 0).

    ``elem_less(coord, shape)`` is the residue predicate: the coordinate lies inside the shape.
    """
    if isinstance(a, tuple):
        if not isinstance(b, tuple):
            raise LayoutError(f"elem_less: {fmt(a)} has more modes than {fmt(b)}")
        if len(a) > len(b):
            raise LayoutError(f"elem_less: {fmt(a)} has more modes than {fmt(b)}")
        return all(elem_less(x, y) for x, y in zip(a, b))
    if isinstance(b, tuple):
        raise LayoutError(f"elem_less: cannot compare int {a} with tuple {fmt(b)}")
    return a < b


def colex_less(a, b):
    """Colexicographic order of congruent coordinates: the rightmost mode is most significant."""
    fa, fb = flat_tuple(a), flat_tuple(b)
    if len(fa) != len(fb):
        raise LayoutError(f"colex_less: coordinates {fmt(a)} and {fmt(b)} are not congruent")
    for x, y in zip(reversed(fa), reversed(fb)):
        if x != y:
            return x < y
    return False


def inner_product(a, b):
    """Sum of elementwise products of congruent int-tuples."""
    if isinstance(a, tuple):
        return reduce(lambda acc, xy: acc + inner_product(*xy), zip(a, b), 0)
    return a * b
