"""Colours for layout pictures: thread pastels, greyscale by index, shared-memory banks.

Three palettes cover the pictures this package draws:

* :data:`THREAD_COLORS` -- the eight pastel colours CuTe uses for thread-value
  pictures; thread ``t`` gets ``THREAD_COLORS[t % 8]`` (see :func:`thread_color`).
* :data:`GREY_COLORS` -- the eight greys CuTe's ``print_latex`` uses for plain
  layouts; index ``i`` gets ``GREY_COLORS[i % 8]`` (see :func:`grey_color`).
* :data:`BANK_COLORS` -- 32 distinguishable colours, one per shared-memory bank
  (see :func:`bank_of` and :func:`bank_color`).

Every colour is a :class:`Color`: 8-bit RGB plus, where CuTe names it
differently in TikZ (``black!40``), that TikZ spelling, so the LaTeX back-end
writes exactly what CuTe writes.

>>> thread_color(9).hex
'#afffaf'
>>> grey_color(1).tikz
'black!40'
>>> bank_of(33, dtype_bits=32)
1
>>> bank_of(64, dtype_bits=16)   # element 64 of a 16-bit array: byte 128 -> bank 0
0
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

__all__ = [
    "Color",
    "THREAD_COLORS",
    "GREY_COLORS",
    "BANK_COLORS",
    "WHITE",
    "BLACK",
    "HIGHLIGHT",
    "NUM_BANKS",
    "BANK_BYTES",
    "thread_color",
    "grey_color",
    "bank_of",
    "bank_color",
    "as_color",
]


@dataclass(frozen=True)
class Color:
    """An 8-bit RGB colour, optionally with its own TikZ spelling.

    >>> c = Color(175, 175, 255)
    >>> c.hex, c.tikz
    ('#afafff', '{rgb,255:red,175;green,175;blue,255}')
    >>> Color(153, 153, 153, "black!40").tikz
    'black!40'
    """

    r: int
    g: int
    b: int
    tikz_name: str | None = None

    def __post_init__(self) -> None:
        for channel, value in (("r", self.r), ("g", self.g), ("b", self.b)):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
                raise ValueError(
                    f"Color: channel {channel} must be an int in [0, 255], got {value!r}"
                )

    @property
    def hex(self) -> str:
        """``#rrggbb`` (lower case), as SVG and CSS write it."""
        return f"#{self.r:02x}{self.g:02x}{self.b:02x}"

    @property
    def rgb(self) -> tuple[int, int, int]:
        return (self.r, self.g, self.b)

    @property
    def tikz(self) -> str:
        """The colour as a TikZ ``fill=`` value (CuTe's inline ``{rgb,255:...}`` form)."""
        if self.tikz_name:
            return self.tikz_name
        return f"{{rgb,255:red,{self.r};green,{self.g};blue,{self.b}}}"

    @property
    def typst(self) -> str:
        """The colour as a Typst expression: ``rgb(175, 175, 255)``."""
        return f"rgb({self.r}, {self.g}, {self.b})"

    @property
    def luminance(self) -> float:
        """Relative luminance in [0, 1] (sRGB, WCAG formula)."""

        def lin(c: int) -> float:
            s = c / 255.0
            return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

        return 0.2126 * lin(self.r) + 0.7152 * lin(self.g) + 0.0722 * lin(self.b)

    @property
    def is_dark(self) -> bool:
        """True when black text on this colour would be hard to read."""
        return self.luminance < 0.18

    @classmethod
    def from_hex(cls, text: str) -> "Color":
        """``Color.from_hex('#afafff')``; also accepts ``'afafff'`` and ``'#abc'``.

        >>> Color.from_hex('#abc').rgb
        (170, 187, 204)
        """
        if not isinstance(text, str):
            raise TypeError(f"Color.from_hex: expected a str, got {type(text).__name__}")
        s = text[1:] if text.startswith("#") else text
        if len(s) == 3:
            s = "".join(ch * 2 for ch in s)
        if len(s) != 6 or any(ch not in "0123456789abcdefABCDEF" for ch in s):
            raise ValueError(f"Color.from_hex: {text!r} is not a #rrggbb or #rgb colour")
        return cls(int(s[0:2], 16), int(s[2:4], 16), int(s[4:6], 16))

    def __str__(self) -> str:
        return self.hex


WHITE = Color(255, 255, 255, "white")
BLACK = Color(0, 0, 0, "black")
#: Default outline colour for highlighted cells.
HIGHLIGHT = Color(220, 20, 60)

#: CuTe's thread colours (TikzColor_TV / SVGColor_TV): thread t -> THREAD_COLORS[t % 8].
THREAD_COLORS: tuple[Color, ...] = (
    Color(175, 175, 255),
    Color(175, 255, 175),
    Color(255, 255, 175),
    Color(255, 175, 175),
    Color(210, 210, 255),
    Color(210, 255, 210),
    Color(255, 255, 210),
    Color(255, 210, 210),
)


def _grey(percent_black: int) -> Color:
    level = int(255 * (100 - percent_black) / 100 + 0.5)
    return Color(level, level, level, f"black!{percent_black:02d}")


#: CuTe's print_latex greys (TikzColor_BWx8): index i -> GREY_COLORS[i % 8].
GREY_COLORS: tuple[Color, ...] = tuple(_grey(p) for p in (0, 40, 20, 60, 10, 50, 30, 70))

#: Number of shared-memory banks and the width of one bank in bytes.
NUM_BANKS = 32
BANK_BYTES = 4

#: One colour per shared-memory bank. Banks 0-15 are light, 16-31 strong; within a
#: tier consecutive banks are 7/16 of the colour wheel apart, so neighbours differ.
BANK_COLORS: tuple[Color, ...] = tuple(
    Color.from_hex(h)
    for h in (
        "#ff9e9e", "#9effdb", "#ff9ee7", "#aaff9e", "#cf9eff", "#f3ff9e", "#9eb6ff", "#ffc29e",
        "#9effff", "#ff9ec2", "#9effb6", "#f39eff", "#cfff9e", "#aa9eff", "#ffe79e", "#9edbff",
        "#e04343", "#43e0a5", "#e043b9", "#57e043", "#9243e0", "#cde043", "#436be0", "#e07e43",
        "#43e0e0", "#e0437e", "#43e06b", "#cd43e0", "#92e043", "#5743e0", "#e0b943", "#43a5e0",
    )
)


def _check_int(op: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return operator.index(value)  # numpy integers
        except TypeError:
            raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__} {value!r}") from None
    return value


def thread_color(thread: int) -> Color:
    """CuTe's colour for a thread: ``THREAD_COLORS[thread % 8]``.

    >>> thread_color(0).rgb, thread_color(8).rgb
    ((175, 175, 255), (175, 175, 255))
    """
    t = _check_int("thread_color", "thread", thread)
    return THREAD_COLORS[t % len(THREAD_COLORS)]


def grey_color(index: int) -> Color:
    """CuTe's greyscale for a layout index: ``GREY_COLORS[index % 8]``.

    >>> [grey_color(i).tikz for i in range(3)]
    ['black!00', 'black!40', 'black!20']
    """
    i = _check_int("grey_color", "index", index)
    return GREY_COLORS[i % len(GREY_COLORS)]


def bank_of(index: int, dtype_bits: int = 16) -> int:
    """Shared-memory bank of element ``index`` of an array of ``dtype_bits``-bit elements.

    The byte offset is ``index * dtype_bits // 8`` and the bank is
    ``(byte_offset // 4) % 32`` (32 banks of 4 bytes).

    >>> bank_of(2, 16), bank_of(3, 16), bank_of(32, 32), bank_of(15, 4)
    (1, 1, 0, 1)
    """
    i = _check_int("bank_of", "index", index)
    bits = _check_int("bank_of", "dtype_bits", dtype_bits)
    if bits <= 0:
        raise ValueError(f"bank_of: dtype_bits must be positive, got {bits}")
    if i < 0:
        raise ValueError(f"bank_of: index must be non-negative, got {i}")
    byte_offset = (i * bits) // 8
    return (byte_offset // BANK_BYTES) % NUM_BANKS


def bank_color(bank: int) -> Color:
    """Colour of a shared-memory bank (``0 <= bank < 32``).

    >>> bank_color(0).hex
    '#ff9e9e'
    """
    b = _check_int("bank_color", "bank", bank)
    if not 0 <= b < NUM_BANKS:
        raise ValueError(f"bank_color: bank must be in [0, {NUM_BANKS}), got {b}")
    return BANK_COLORS[b]


def as_color(value: object, op: str = "as_color") -> Color | None:
    """Coerce ``None``, a :class:`Color`, ``'#rrggbb'`` or an ``(r, g, b)`` tuple to a Color.

    >>> as_color((1, 2, 3)).hex
    '#010203'
    >>> as_color(None) is None
    True
    """
    if value is None or isinstance(value, Color):
        return value
    if isinstance(value, str):
        return Color.from_hex(value)
    if isinstance(value, (tuple, list)) and len(value) == 3:
        return Color(*(int(v) for v in value))
    raise TypeError(
        f"{op}: a colour must be a Color, '#rrggbb' or an (r, g, b) tuple, got {value!r}"
    )
