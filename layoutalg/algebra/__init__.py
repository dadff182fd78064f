"""The layout algebra: coalesce, composition, complement, inverses, divides and products.

One module per concept, in the order the algebra is taught (each builds on the ones
before it):

* :mod:`~layoutalg.algebra.compose` -- ``coalesce``, ``filter``, ``composition``;
* :mod:`~layoutalg.algebra.inverse` -- ``complement``, ``right_inverse``, ``left_inverse``,
  ``nullspace``, ``max_common_layout``/``max_common_vector``;
* :mod:`~layoutalg.algebra.tiling` -- the divides and products, ``tile_to_shape``;
* :mod:`~layoutalg.algebra.recast` -- ``upcast``, ``downcast``, ``recast_layout``.

Everything is importable from here (``from layoutalg.algebra import composition``) and
from ``layoutalg``.  Objects that wrap a layout (``ComposedLayout``, ``Tensor``) take part
through a plain protocol, ``.layout`` and ``.with_layout(L)`` (see
:func:`layoutalg.algebra._base._layout_like`).

Definitions follow CuTe C++ (CUTLASS ``cute/layout.hpp``).  The loops run on the
flat shape and stride tuples every ``Layout`` carries (``_fs``, ``_fd``, built once
with it), and intermediate results are built with the trusted constructor, so a
call on fresh layouts costs a few microseconds; nothing is memoised (hashing the
arguments of a memo would cost as much as computing).

>>> from layoutalg import Layout
>>> str(composition(Layout((4, 3), (3, 1)), Layout(6, 2)))
'(2,3):(6,1)'
>>> str(complement(Layout(4, 2), 24))
'(2,3):(1,8)'
>>> str(logical_divide(Layout(16, 1), Layout(4, 1)))
'(4,4):(1,4)'
>>> str(logical_product(Layout((2, 2), (4, 1)), Layout(6, 1)))
'((2,2),(2,3)):((4,1),(2,8))'
"""

from .compose import coalesce, composition, filter, filter_zeros, flatten_layout, with_shape
from .inverse import (
    complement, left_inverse, max_common_layout, max_common_vector, nullspace, right_inverse,
)
from .tiling import (
    append, blocked_product, flat_divide, flat_product, logical_divide, logical_product,
    raked_product, tile_to_shape, tiled_divide, tiled_product, zip_layouts, zipped_divide,
    zipped_product,
)
from .recast import downcast, get_nonswizzle_portion, recast_layout, type_bits, upcast
from ..layout import Layout  # noqa: F401  (for the examples above)

__all__ = [
    "coalesce", "filter", "filter_zeros", "composition", "complement", "right_inverse",
    "left_inverse", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product",
    "raked_product", "tile_to_shape", "upcast", "downcast", "recast_layout", "type_bits",
    "max_common_layout", "max_common_vector", "nullspace", "with_shape", "flatten_layout",
    "append", "zip_layouts", "get_nonswizzle_portion",
]
