"""CuTe's printing functions under CuTe's names: ``print_layout``, ``print_tensor``, ``print_latex``.

Each prints to ``file`` (default ``sys.stdout``) what CuTe C++ prints, and returns None:

>>> from layoutalg import Layout
>>> print_layout(Layout((2, 2), (2, 1)))  # doctest: +NORMALIZE_WHITESPACE
(2,2):(2,1)
      0   1
    +---+---+
 0  | 0 | 1 |
    +---+---+
 1  | 2 | 3 |
    +---+---+
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from .layout_pictures import layout_ascii, layout_latex

__all__ = ["print_layout", "print_tensor", "print_latex"]


def print_layout(layout: Any, *, one_based: bool = False, file: TextIO | None = None) -> None:
    """CuTe's ``print_layout(layout)``: the layout, then its table of offsets (rows = mode 0).

    ``one_based=True`` numbers rows, columns and offsets from 1, as MoYe.jl does.
    """
    text = layout_ascii(layout, one_based=one_based)
    print(text, end="" if text.endswith("\n") else "\n", file=file or sys.stdout)


def print_latex(layout: Any, *, file: TextIO | None = None) -> None:
    """CuTe's ``print_latex(layout)``: a standalone LaTeX/TikZ document, cells grey by offset.

    >>> import io
    >>> from layoutalg import Layout
    >>> buf = io.StringIO(); print_latex(Layout(2), file=buf)
    >>> buf.getvalue().splitlines()[0]
    '% Layout: 2:1'
    """
    print(layout_latex(layout), end="", file=file or sys.stdout)


def print_tensor(tensor: Any, *, file: TextIO | None = None) -> None:
    """CuTe's ``print_tensor(tensor)``: the engine and layout, then the values.

    Rank 1 prints as a column, rank 2 as a matrix (rows = mode 0), higher ranks
    with modes 1.. in the columns.

    >>> import numpy as np
    >>> from layoutalg import make_tensor
    >>> print_tensor(make_tensor(np.arange(4).reshape(2, 2)))
    ArrayEngine(int64[4] + 0) o (2,2):(2,1):
     0  1
     2  3
    """
    from ..tensor import Tensor, tensor_values_text

    if not isinstance(tensor, Tensor):
        raise TypeError(f"print_tensor: expected a Tensor, got {type(tensor).__name__}")
    out = file or sys.stdout
    print(f"{tensor.engine!r} o {tensor.layout}:", file=out)
    print(tensor_values_text(tensor), file=out)
