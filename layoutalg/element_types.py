"""The element types: one registry of every fact about a matrix element type.

Each :class:`ElementType` says how wide the type is, what it is called on the host
(numpy, torch, CuPy) and in PTX, which numba type carries its bits inside a kernel,
and which MMA atom multiplies it with f32 accumulation on each architecture.
``type_bits`` of the algebra, the atom tables (:mod:`mma_atoms`) and the code
emitter (:mod:`codegen`) all read this table, so a new element type is one entry.

>>> element_type("f16").bits
16
>>> element_type("bfloat16").name           # aliases and dtype names are accepted
'bf16'
>>> element_type("f16").mma_atom((8, 0))
'SM80_16x8x16_F32F16F16F32_TN'
>>> element_type("e4m3").torch
'float8_e4m3fn'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import LayoutTypeError

__all__ = ["ElementType", "ELEMENT_TYPES", "element_type", "element_type_names"]


@dataclass(frozen=True)
class ElementType:
    """One element type.

    ``name``: the short name used everywhere in the project ("f16", "e4m3");
    ``bits``: its width; ``kind``: "float", "int" or "bits";
    ``aliases``: other names accepted for it ("half", "float16");
    ``numpy``, ``torch``, ``cupy``: the dtype names of host arrays holding it (None where
    that library has none; torch names are attributes of the ``torch`` module);
    ``ptx``: its name in PTX instruction types; ``storage``: the numba type that carries its
    bits in a kernel (bf16 and the 8-bit floats travel as unsigned integers);
    ``host``: the numpy dtype that holds its values exactly on the host (for emulation);
    ``mma``: (major, minor) compute capability -> the MMA atom (a :mod:`mma_atoms` name)
    that multiplies it with f32 accumulation (f64 for f64), oldest first;
    ``mma_k``: the K of that atom, per architecture.
    """

    name: str
    bits: int
    kind: str
    aliases: tuple = ()
    numpy: str | None = None
    torch: str | None = None
    cupy: str | None = None
    ptx: str | None = None
    storage: str | None = None
    host: str | None = None
    mma: dict = field(default_factory=dict)

    @property
    def nbytes(self):
        """Bytes per element (0 for sub-byte types)."""
        return self.bits // 8

    def mma_atom(self, cc):
        """The MMA atom for compute capability ``cc`` (the newest one it supports), or None."""
        best = None
        for arch in sorted(self.mma):
            if tuple(cc[:2]) >= arch:
                best = self.mma[arch]
        return best

    def __str__(self):
        return self.name


def _t(name, bits, kind, **kw):
    return ElementType(name, bits, kind, **kw)


_ENTRIES = (
    _t("b1", 1, "bits", ptx="b1"),
    _t("s4", 4, "int", aliases=("int4",), ptx="s4"),
    _t("u4", 4, "int", ptx="u4"),
    _t("s8", 8, "int", aliases=("i8", "int8"), numpy="int8", torch="int8", cupy="int8", ptx="s8",
       storage="int8", host="int8"),
    _t("u8", 8, "int", aliases=("uint8",), numpy="uint8", torch="uint8", cupy="uint8", ptx="u8",
       storage="uint8", host="uint8"),
    _t("e4m3", 8, "float", aliases=("f8", "float8_e4m3fn"), torch="float8_e4m3fn", ptx="e4m3",
       storage="uint8", host="float32"),
    _t("e5m2", 8, "float", aliases=("float8_e5m2",), torch="float8_e5m2", ptx="e5m2",
       storage="uint8", host="float32"),
    _t("f16", 16, "float", aliases=("half", "float16"), numpy="float16", torch="float16",
       cupy="float16", ptx="f16", storage="float16", host="float16",
       mma={(8, 0): "SM80_16x8x16_F32F16F16F32_TN"}),
    _t("bf16", 16, "float", aliases=("bfloat16",), torch="bfloat16", ptx="bf16", storage="uint16",
       host="float32", mma={(8, 0): "SM80_16x8x16_F32BF16BF16F32_TN"}),
    _t("u16", 16, "int", aliases=("uint16",), numpy="uint16", torch="uint16", cupy="uint16",
       ptx="u16", storage="uint16", host="uint16"),
    _t("s16", 16, "int", aliases=("int16",), numpy="int16", torch="int16", cupy="int16", ptx="s16",
       storage="int16", host="int16"),
    _t("tf32", 32, "float", numpy="float32", torch="float32", cupy="float32", ptx="tf32",
       storage="float32", host="float32", mma={(8, 0): "SM80_16x8x8_F32TF32TF32F32_TN"}),
    _t("f32", 32, "float", aliases=("float", "float32"), numpy="float32", torch="float32",
       cupy="float32", ptx="f32", storage="float32", host="float32", mma={(5, 0): "UniversalFMA"}),
    _t("s32", 32, "int", aliases=("i32", "int32"), numpy="int32", torch="int32", cupy="int32",
       ptx="s32", storage="int32", host="int32"),
    _t("u32", 32, "int", aliases=("uint32",), numpy="uint32", torch="uint32", cupy="uint32",
       ptx="u32", storage="uint32", host="uint32"),
    _t("f64", 64, "float", aliases=("double", "float64"), numpy="float64", torch="float64",
       cupy="float64", ptx="f64", storage="float64", host="float64",
       mma={(8, 0): "SM80_8x8x4_F64F64F64F64_TN"}),
    _t("s64", 64, "int", aliases=("int64",), numpy="int64", torch="int64", cupy="int64", ptx="s64",
       storage="int64", host="int64"),
    _t("u64", 64, "int", aliases=("uint64",), numpy="uint64", torch="uint64", cupy="uint64",
       ptx="u64", storage="uint64", host="uint64"),
    _t("u128", 128, "bits", ptx="b128"),
)

#: name -> :class:`ElementType`
ELEMENT_TYPES = {e.name: e for e in _ENTRIES}

_BY_NAME = {}
for _e in _ENTRIES:
    for _n in (_e.name, *_e.aliases):
        _BY_NAME[_n.lower()] = _e


def element_type_names():
    """The registered names, narrowest first."""
    return tuple(ELEMENT_TYPES)


def element_type(x, op="element_type"):
    """The :class:`ElementType` named by ``x``.

    ``x``: an :class:`ElementType`, a name or alias ("f16", "half", "bfloat16"), a numpy
    dtype or scalar type, or a torch dtype.  Raises :class:`LayoutTypeError` naming ``op``,
    the value and the choices when ``x`` names no registered type.

    >>> import numpy as np
    >>> element_type(np.float32).name
    'f32'
    """
    if isinstance(x, ElementType):
        return x
    if isinstance(x, str):
        e = _BY_NAME.get(x.lower())
        if e is not None:
            return e
    else:
        mod = type(x).__module__
        if mod.startswith("torch"):                  # torch.float16 -> "float16"
            e = _BY_NAME.get(str(x).rsplit(".", 1)[-1].lower())
            if e is not None:
                return e
        elif x is not None and not isinstance(x, bool):
            try:
                import numpy as np

                dt = np.dtype(x)
            except Exception:
                dt = None
            if dt is not None and dt.kind != "O":
                e = _BY_NAME.get(dt.name.lower())
                if e is not None:
                    return e
    raise LayoutTypeError(f"{op}: unknown element type {x!r}; known: {', '.join(element_type_names())}")
