"""The ``>>>`` examples in the docstrings of the core and partitioning modules run and hold."""

import doctest
import importlib

import pytest

MODULES = [
    "layoutalg", "layoutalg.inttuple", "layoutalg.layout", "layoutalg.algebra", "layoutalg.algebra.compose",
    "layoutalg.algebra.inverse", "layoutalg.algebra.tiling", "layoutalg.algebra.recast", "layoutalg.swizzle",
    "layoutalg.basis", "layoutalg.parse", "layoutalg.expressions", "layoutalg.numpy_eval",
    "layoutalg.tensor", "layoutalg.atom", "layoutalg.tiled_mma", "layoutalg.tiled_copy",
]


@pytest.mark.parametrize("name", MODULES)
def test_doc_examples(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name}: no examples"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
