"""layoutalg: CuTe's layout algebra in pure Python.

0-based, colexicographic coordinates and compact column-major default
strides, as in CuTe C++ (CUTLASS).

>>> from layoutalg import Layout, composition
>>> str(composition(Layout((4, 3), (3, 1)), Layout(6, 2)))
'(2,3):(6,1)'
"""

from .errors import LayoutError, LayoutIndexError, LayoutTypeError
from .inttuple import (
    ceil_div, colex_less, compatible, congruent, crd2crd, crd2idx, elem_less, flatten,
    idx2crd, prefix_product, product, shape_div, suffix_product, unflatten, weakly_congruent,
)
from .basis import ArithTuple, E, ScaledBasis
from .layout import (
    Layout, _, cosize, depth, is_layout, make_layout, make_layout_like, make_ordered_layout,
    rank, shape, size, slice_and_offset, stride,
)
from .swizzle import ComposedLayout, Swizzle, make_composed_layout
from .algebra import (
    append, blocked_product, coalesce, complement, composition, downcast, filter, filter_zeros,
    flat_divide, flat_product, flatten_layout, left_inverse, logical_divide, logical_product,
    max_common_layout, max_common_vector, nullspace, raked_product, recast_layout, right_inverse,
    tile_to_shape, tiled_divide, tiled_product, type_bits, upcast, with_shape, zip_layouts,
    zipped_divide, zipped_product,
)
from .expressions import evaluate
from .tensor import (
    ArrayEngine, CoordEngine, PointerEngine, RegisterEngine, Tensor, dice, get_flat_coord,
    group_modes, inner_partition, local_partition, local_tile, make_basis_like,
    make_fragment_like, make_identity_layout, make_identity_tensor, make_tensor, outer_partition,
    recast,
)
from .atom import CopyAtom, MMAAtom
from .tiled_mma import ThrMMA, TiledMMA, make_tiled_mma
from .tiled_copy import (
    ThrCopy, TiledCopy, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B, make_tiled_copy_C,
)
from .cost import (
    GlobalAnalysis, Legality, PerformanceWarning, SharedAnalysis, analyze_global, analyze_shared, check_tma,
    check_wgmma,
)

__version__ = "0.1.0"

__all__ = [
    # errors
    "LayoutError", "LayoutIndexError", "LayoutTypeError",
    # int-tuples
    "product", "size", "rank", "depth", "flatten", "unflatten", "prefix_product",
    "suffix_product", "shape_div", "ceil_div", "congruent", "compatible", "weakly_congruent",
    "idx2crd", "crd2idx", "crd2crd", "elem_less", "colex_less",
    # layouts
    "Layout", "make_layout", "make_ordered_layout", "make_layout_like", "cosize", "shape",
    "stride", "slice_and_offset", "is_layout", "_",
    # bases
    "E", "ScaledBasis", "ArithTuple",
    # swizzle
    "Swizzle", "ComposedLayout", "make_composed_layout",
    # algebra
    "coalesce", "filter", "filter_zeros", "composition", "complement", "right_inverse",
    "left_inverse", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product",
    "raked_product", "tile_to_shape", "upcast", "downcast", "recast_layout", "type_bits",
    "max_common_layout", "max_common_vector", "nullspace", "with_shape", "append",
    "zip_layouts", "flatten_layout",
    # text
    "evaluate",
    # tensors
    "Tensor", "ArrayEngine", "RegisterEngine", "PointerEngine", "CoordEngine", "make_tensor",
    "make_identity_tensor", "make_identity_layout", "make_basis_like", "local_tile",
    "local_partition", "inner_partition", "outer_partition", "make_fragment_like", "recast",
    "group_modes", "get_flat_coord", "dice",
    # atoms and tiled partitioning
    "MMAAtom", "CopyAtom", "TiledMMA", "ThrMMA", "make_tiled_mma", "TiledCopy", "ThrCopy",
    "make_tiled_copy", "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C",
    # what a layout costs: bank conflicts, coalescing, TMA and wgmma legality
    "analyze_shared", "analyze_global", "check_tma", "check_wgmma", "SharedAnalysis", "GlobalAnalysis",
    "Legality", "PerformanceWarning",
]

# CuTe's printing functions (text tables, LaTeX) under CuTe's names. They live with the
# drawing code, a layer above this package's, and are imported on first use.
_PRINTING = ("print_layout", "print_tensor", "print_latex")
__all__ += list(_PRINTING)


def __getattr__(name):
    if name in _PRINTING:
        from .draw import cute_print

        return getattr(cute_print, name)
    raise AttributeError(f"module 'layoutalg' has no attribute {name!r}")
