"""The element-type registry: one entry per type, consistent with numpy, the atom tables
and type_bits."""

import numpy as np
import pytest

import mma_atoms
from layoutalg import type_bits
from layoutalg.element_types import ELEMENT_TYPES, element_type
from layoutalg.errors import LayoutTypeError


@pytest.mark.parametrize("name", list(ELEMENT_TYPES))
def test_every_name_and_alias_finds_its_entry(name):
    e = ELEMENT_TYPES[name]
    assert element_type(name) is e
    for alias in e.aliases:
        assert element_type(alias) is e
        assert element_type(alias.upper()) is e
    assert type_bits(name) == e.bits


@pytest.mark.parametrize("e", list(ELEMENT_TYPES.values()), ids=lambda e: e.name)
def test_host_dtypes_agree_with_the_width(e):
    if e.numpy is not None:
        assert np.dtype(e.numpy).itemsize * 8 == e.bits
        assert element_type(np.dtype(e.numpy)).bits == e.bits
    if e.storage is not None:
        assert np.dtype(e.storage).itemsize * 8 == e.bits     # the kernel carries the bits unchanged
    if e.host is not None:
        assert np.dtype(e.host).itemsize * 8 >= e.bits        # the host holds every value exactly


@pytest.mark.parametrize("e", [e for e in ELEMENT_TYPES.values() if e.mma], ids=lambda e: e.name)
def test_mma_atoms_exist_in_the_tables_and_take_the_type(e):
    for cc, atom in e.mma.items():
        op = mma_atoms.get(atom)
        assert e.mma_atom(cc) == atom
        assert op.a_type in (e.name, "any")


def test_mma_atom_picks_the_newest_supported_architecture():
    f16 = element_type("f16")
    assert f16.mma_atom((7, 5)) is None
    assert f16.mma_atom((9, 0)) == f16.mma_atom((8, 0))


@pytest.mark.parametrize("bad", ["f17", "", "half-float", None, 3.5, object()])
def test_unknown_types_are_named_with_the_choices(bad):
    with pytest.raises(LayoutTypeError, match=r"unknown element type .*known: b1, s4"):
        element_type(bad, "op")


def test_numpy_scalar_types_and_torch_names():
    assert element_type(np.float64).name == "f64"
    assert element_type("float8_e4m3fn").name == "e4m3"
    assert element_type("bfloat16").torch == "bfloat16"
