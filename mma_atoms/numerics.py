"""Element and register types of the atom tables: widths, rounding, bit patterns.

Type names are the PTX ones: ``"f16"``, ``"bf16"``, ``"tf32"``, ``"f32"``,
``"f64"``, ``"s8"``, ``"u8"``, ``"s32"``, ``"b1"``, ``"e4m3"``, ``"e5m2"``; register
types add ``"u16"``, ``"u32"``, ``"u64"``, ``"u128"``.  ``"any"`` stands for "any
type" (``UniversalFMA``).

Everything here is numpy only and works element-wise on arrays.

>>> type_bits("bf16"), type_bits("b1"), type_bits("u128")
(16, 1, 128)
>>> float(quantize(1.0009765625 + 2**-12, "f16"))   # f16 keeps 10 mantissa bits
1.0009765625
>>> [float(v) for v in quantize([0.3, 500.0], "e4m3")]   # e4m3 saturates at 448
[0.3125, 448.0]
>>> int(encode([1.0], "f16")[0]) == 0x3C00
True
"""

import numpy as np

from layoutalg.element_types import ELEMENT_TYPES as _REGISTRY

__all__ = [
    "ELEMENT_TYPES", "REGISTER_TYPES", "type_bits", "is_float_type", "is_int_type",
    "quantize", "encode", "decode", "wrap_int", "saturate_s32",
]

# name -> bits, for element types (what a matrix holds; from layoutalg's registry) ...
ELEMENT_TYPES = {e.name: e.bits for e in _REGISTRY.values()
                 if e.name in ("b1", "s8", "u8", "e4m3", "e5m2", "f16", "bf16", "tf32", "f32", "s32", "f64")}
# ... and for register types (what an instruction operand is made of).
REGISTER_TYPES = {"u8": 8, "u16": 16, "u32": 32, "f32": 32, "u64": 64, "f64": 64, "u128": 128}

_FLOATS = {n for n in ELEMENT_TYPES if _REGISTRY[n].kind == "float"}
_INTS = {"b1": (0, 1), "s8": (-128, 127), "u8": (0, 255), "s32": (-2**31, 2**31 - 1)}


def type_bits(name):
    """Bit width of an element or register type name.

    Raises ``ValueError`` naming the type when it is unknown (``"any"`` has no width).
    """
    if not isinstance(name, str):
        raise TypeError(f"type_bits: a type name (str) is needed, got {name!r}")
    if name in ELEMENT_TYPES:
        return ELEMENT_TYPES[name]
    if name in REGISTER_TYPES:
        return REGISTER_TYPES[name]
    raise ValueError(f"type_bits: unknown type {name!r}; known: "
                     f"{sorted(set(ELEMENT_TYPES) | set(REGISTER_TYPES))}")


def is_float_type(name):
    """True for the floating-point element types (f16, bf16, tf32, f32, f64, e4m3, e5m2)."""
    return name in _FLOATS


def is_int_type(name):
    """True for the integer element types (b1, s8, u8, s32)."""
    return name in _INTS


# ---- rounding ---------------------------------------------------------------

def _round_bits_f32(x, keep_mantissa, truncate=False):
    """Round float32 values to ``keep_mantissa`` mantissa bits (nearest-even, or truncate)."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    drop = 23 - keep_mantissa
    if truncate:
        out = (bits >> drop) << drop
    else:
        lsb = (bits >> drop) & 1
        out = ((bits + (1 << (drop - 1)) - 1 + lsb) >> drop) << drop
    finite = np.isfinite(x)
    out = np.where(finite, out, bits)
    return (out & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def _minifloat_params(name):
    # (exponent bits, mantissa bits, largest finite, has infinity)
    if name == "e4m3":
        return 4, 3, 448.0, False
    if name == "e5m2":
        return 5, 2, 57344.0, True
    raise ValueError(f"_minifloat_params: {name!r} is not an 8-bit float type")


def _quantize_minifloat(x, name):
    ebits, mbits, top, has_inf = _minifloat_params(name)
    bias = 2 ** (ebits - 1) - 1
    emin = 1 - bias
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(ax > 0, ax, 1.0)))
    e = np.maximum(e, emin)
    step = np.exp2(e - mbits)
    q = np.round(ax / step) * step          # np.round is round-half-even
    if has_inf:
        q = np.where(q > top, np.inf, q)
    else:
        q = np.minimum(q, top)               # e4m3 has no infinity: saturate
    q = np.where(np.isnan(x), np.nan, q)
    return np.copysign(q, x)


def quantize(x, name):
    """Round values to what type ``name`` can hold, returned as float64 or int64 arrays.

    * ``f16``: numpy's float16 (round to nearest even); ``bf16``: nearest even on the
      upper 16 bits of float32; ``tf32``: the low 13 mantissa bits of float32 are
      dropped (the tensor core reads only the upper 19 bits of a .tf32 register);
      ``e4m3``/``e5m2``: nearest even, e4m3 saturating at 448 (it has no infinity);
      ``f32``/``f64``: float32/float64.
    * integer types wrap to their width (two's complement), as the bits in a register
      would be read: ``quantize(130, "s8") == -126``; ``b1`` keeps the low bit.
    """
    if name == "f16":
        return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)
    if name == "bf16":
        return _round_bits_f32(x, 7).astype(np.float64)
    if name == "tf32":
        return _round_bits_f32(x, 10, truncate=True).astype(np.float64)
    if name == "f32":
        return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)
    if name == "f64":
        return np.asarray(x, dtype=np.float64)
    if name in ("e4m3", "e5m2"):
        return _quantize_minifloat(x, name)
    if name in _INTS:
        return wrap_int(x, name)
    raise ValueError(f"quantize: unknown element type {name!r}")


def wrap_int(x, name):
    """Integers reduced to type ``name`` (b1, s8, u8, s32) by keeping the low bits."""
    if name not in _INTS:
        raise ValueError(f"wrap_int: {name!r} is not an integer element type")
    a = np.asarray(x)
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise ValueError(f"wrap_int: {name} values must be integers, got non-integral input")
    a = a.astype(np.int64)
    bits = type_bits(name)
    a = a & ((1 << bits) - 1)
    lo, _ = _INTS[name]
    if lo < 0:
        a = np.where(a >= (1 << (bits - 1)), a - (1 << bits), a)
    return a


def saturate_s32(x):
    """Clamp integers to the int32 range (``.satfinite`` on an s32 accumulator)."""
    return np.clip(np.asarray(x, dtype=np.int64), -2**31, 2**31 - 1)


# ---- bit patterns -------------------------------------------------------------

def _minifloat_table(name):
    ebits, mbits, top, has_inf = _minifloat_params(name)
    bias = 2 ** (ebits - 1) - 1
    vals = np.empty(256)
    for code in range(256):
        s = -1.0 if code & 0x80 else 1.0
        e = (code >> mbits) & ((1 << ebits) - 1)
        m = code & ((1 << mbits) - 1)
        if e == 0:
            v = m * 2.0 ** (1 - bias - mbits)
        else:
            v = (1 + m / 2 ** mbits) * 2.0 ** (e - bias)
        if name == "e4m3" and e == 15 and m == 7:
            v = np.nan
        if has_inf and e == (1 << ebits) - 1:
            v = np.inf if m == 0 else np.nan
        vals[code] = s * v
    return vals


_TABLES = {}


def _table(name):
    if name not in _TABLES:
        _TABLES[name] = _minifloat_table(name)
    return _TABLES[name]


def encode(x, name):
    """Bit patterns (as uint64) of values of element type ``name``.

    Values are first quantized (see :func:`quantize`), so any real input is accepted
    for float types.
    """
    q = quantize(x, name)
    if name == "f16":
        return q.astype(np.float16).view(np.uint16).astype(np.uint64)
    if name in ("bf16",):
        return (q.astype(np.float32).view(np.uint32) >> 16).astype(np.uint64)
    if name in ("tf32", "f32"):
        return q.astype(np.float32).view(np.uint32).astype(np.uint64)
    if name == "f64":
        return q.astype(np.float64).view(np.uint64)
    if name in ("e4m3", "e5m2"):
        tab = _table(name)
        flat = np.atleast_1d(q).ravel()
        out = np.empty(flat.shape, dtype=np.uint64)
        order = np.argsort(tab[:128])
        pos_vals = tab[:128][order]
        for i, v in enumerate(flat):
            if np.isnan(v):
                out[i] = 0x7F
                continue
            if np.isinf(v):
                code = 0x7C
            else:
                j = int(np.searchsorted(pos_vals, abs(v)))
                code = int(order[j])
            out[i] = code | (0x80 if np.signbit(v) else 0)
        return out.reshape(np.shape(q))
    if name in _INTS:
        return (q & ((1 << type_bits(name)) - 1)).astype(np.uint64)
    raise ValueError(f"encode: unknown element type {name!r}")


def decode(bits, name):
    """Values of element type ``name`` from bit patterns (float64 or int64 arrays)."""
    b = np.asarray(bits).astype(np.uint64)
    if name == "f16":
        return (b & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)
    if name == "bf16":
        return ((b & 0xFFFF) << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    if name in ("tf32", "f32"):
        v = (b & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)
        return quantize(v, "tf32") if name == "tf32" else v
    if name == "f64":
        return b.view(np.float64).copy()
    if name in ("e4m3", "e5m2"):
        return _table(name)[(b & 0xFF).astype(np.int64)]
    if name in _INTS:
        return wrap_int((b & ((1 << type_bits(name)) - 1)).astype(np.int64), name)
    raise ValueError(f"decode: unknown element type {name!r}")
