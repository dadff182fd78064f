"""The ``>>>`` examples in the docstrings of the core and partitioning modules run and hold."""

import doctest
import importlib

import pytest

MODULES = [
    "layoutalg", "layoutalg.inttuple", "layoutalg.layout", "layoutalg.algebra", "layoutalg.algebra.compose",
    "layoutalg.algebra.inverse", "layoutalg.algebra.tiling", "layoutalg.algebra.recast", "layoutalg.swizzle",
    "layoutalg.basis", "layoutalg.parse", "layoutalg.expressions", "layoutalg.numpy_eval",
    "layoutalg.tensor", "layoutalg.atom", "layoutalg.tiled_mma", "layoutalg.tiled_copy",
    "layoutalg.cost.access", "layoutalg.cost.banks", "layoutalg.cost.sectors", "layoutalg.cost.legality",
    "codegen.cute.dynamic", "codegen.cute.device_tensor", "codegen.cute.offsets",
    "codegen.cute.atom_plan", "codegen.cute.params", "codegen.args", "codegen.cute.api", "codegen.cute.types",
    "codegen.cute.sim", "codegen.attention_schedule",
]


@pytest.mark.parametrize("name", MODULES)
def test_doc_examples(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name}: no examples"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_algebra_functions_state_their_conditions():
    """Every public function of the algebra has a post-condition and an example."""
    import inspect

    import layoutalg.algebra as algebra

    missing = [name for name in algebra.__all__
               if not all(k in (inspect.getdoc(getattr(algebra, name)) or "") for k in ("Post:", ">>>"))]
    assert not missing, f"without 'Post:' or an example: {missing}"
