"""``tile_to_shape`` against the CuTe DSL (4.8.1), on cases it computed (``tests/data/tile_to_shape_dsl.json``,
its ``source`` says how): blocks with nested and size-1 modes and non-compact strides, targets of higher rank
and with nested modes.

* Where the DSL computes a layout that is a function (injective on its domain), ``tile_to_shape`` computes the
  same function with the same mode sizes. The DSL does not coalesce the result by the repetitions' profile,
  which CuTe C++ does and ``tile_to_shape`` follows, so the comparison is of the functions, not of the text.
* Where the DSL returns a layout whose tiles overlap (a repetition lands on the block's own offsets: the
  complement of a non-compact block composed with the repetitions carries across one of its modes),
  ``tile_to_shape`` raises a ``LayoutError``: a layout that maps two coordinates of the tile to one offset is
  a silent wrong answer (CuTe C++'s composition states the precondition that rules these cases out).
"""

import json
import os

import numpy as np
import pytest

from layoutalg import Layout, LayoutError, size, tile_to_shape
from layoutalg.numpy_eval import eval_layout

DATA = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tile_to_shape_dsl.json")))


def _tup(x):
    return tuple(_tup(y) for y in x) if isinstance(x, list) else x


def _case(c):
    target = _tup(c["target"])
    return Layout(_tup(c["shape"]), _tup(c["stride"])), target, tuple(range(len(target))), Layout.parse(c["dsl"])


def _mode_sizes(L, target):
    return [size(L[i]) for i in range(len(target))] if len(target) > 1 else [size(L)]


@pytest.mark.parametrize("case", DATA["agree"], ids=lambda c: c["dsl"][:40])
def test_tile_to_shape_computes_the_dsls_function(case):
    block, target, order, want = _case(case)
    got = tile_to_shape(block, target, order)
    assert _mode_sizes(got, target) == _mode_sizes(want, target)
    n = size(got)
    assert n == size(want)
    every = np.arange(n)
    assert (eval_layout(got, every) == eval_layout(want, every)).all()       # at every index
    for i in np.unique(np.linspace(0, n - 1, 257).astype(int)):              # and by the layout's own call
        assert got(int(i)) == want(int(i))


@pytest.mark.parametrize("case", DATA["overlapping"], ids=lambda c: c["dsl"][:40])
def test_tile_to_shape_refuses_where_the_dsls_tiles_overlap(case):
    block, target, order, dsl = _case(case)
    offsets = [dsl(i) for i in range(size(dsl))]
    assert len(set(offsets)) < len(offsets), "the DSL's layout maps two coordinates to one offset"
    with pytest.raises(LayoutError, match=r"tile_to_shape|blocked_product"):
        tile_to_shape(block, target, order)


#: The issue's cases: a rank-4 block whose third mode is ``(1):(1)`` beside non-compact strides, and a nested
#: block tiled to a target of the same rank with size-1 modes; the DSL's answers (4.8.1).
NAMED = [
    ((2, 3, (1,), 4), (1, 4, (1,), 20), (4, 6, 2, 8), "((2,2),(3,2),((1),2),(4,2)):((1,2),(4,80),((1),160),(20,320))"),
    ((2, (1, 3), 1, 2), (8, (1, 2), 1, 16), (4, 6, 3, 4),
     "((2,2),((1,3),2),(1,3),(2,2)):((8,1),((1,2),32),(1,64),(16,192))"),
]


@pytest.mark.parametrize("shape,stride,target,dsl", NAMED)
def test_the_issues_named_cases_compute_the_dsls_function(shape, stride, target, dsl):
    test_tile_to_shape_computes_the_dsls_function({"shape": shape, "stride": stride, "target": target, "dsl": dsl})

