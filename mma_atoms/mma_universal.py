"""CuTe's ``UniversalFMA``: one thread, a 1x1x1 product ``d = a * b + c`` of any type.

The registry entry ``"UniversalFMA"`` has type ``"any"``; :func:`universal_fma`
makes a typed one (``"UniversalFMA<f32,f32,f32,f32>"``, D,A,B,C order like CuTe's
``UniversalFMA<D,A,B,C>``).

>>> universal_fma("f32").ptx
'fma.rn.f32'
"""

from layoutalg import Layout

from .ops import MMAOp, Regs

__all__ = ["ENTRIES", "universal_fma"]

ONE_THREAD = Layout(1, 0)                                                # T1 -> thread
ONE_VALUE = Layout((1, 1), (0, 0))                                       # (T1,V1) -> (M1,N1)

_PTX = {"f16": "fma.rn.f16", "bf16": "fma.rn.bf16", "f32": "fma.rn.f32", "f64": "fma.rn.f64",
        "s32": "mad.lo.s32"}
_REG = {"f16": "u16", "bf16": "u16", "f32": "f32", "f64": "f64", "s32": "u32", "s8": "u8",
        "u8": "u8", "tf32": "u32", "e4m3": "u8", "e5m2": "u8"}


def universal_fma(d_type, a_type=None, b_type=None, c_type=None):
    """A typed ``UniversalFMA<D,A,B,C>`` entry (A, B and C default to D's type)."""
    a_type = a_type or d_type
    b_type = b_type or d_type
    c_type = c_type or d_type
    types = (d_type, a_type, b_type, c_type)
    for t in types:
        if t not in _REG:
            raise ValueError(f"universal_fma: no register type for element type {t!r}; "
                             f"known: {sorted(_REG)}")
    same = len(set(types)) == 1
    return MMAOp(
        name=f"UniversalFMA<{','.join(types)}>", kind="fma", shape_mnk=(1, 1, 1),
        thr_id=ONE_THREAD, layout_a=ONE_VALUE, layout_b=ONE_VALUE, layout_c=ONE_VALUE,
        a_type=a_type, b_type=b_type, c_type=c_type, d_type=d_type,
        a_regs=Regs(1, _REG[a_type]), b_regs=Regs(1, _REG[b_type]), c_regs=Regs(1, _REG[c_type]),
        d_regs=Regs(1, _REG[d_type]), min_sm=0,
        ptx=_PTX.get(d_type, "") if same else "",
        ptx_operands="d, a, b, c", ptx_target="",
        notes="plain C++ d = a * b + c; the compiler picks the instruction")


ENTRIES = (
    MMAOp(name="UniversalFMA", kind="fma", shape_mnk=(1, 1, 1), thr_id=ONE_THREAD,
          layout_a=ONE_VALUE, layout_b=ONE_VALUE, layout_c=ONE_VALUE,
          a_type="any", b_type="any", c_type="any", d_type="any",
          a_regs=Regs(1, "any"), b_regs=Regs(1, "any"), c_regs=Regs(1, "any"),
          d_regs=Regs(1, "any"), min_sm=0, ptx="fma", ptx_operands="d, a, b, c",
          cute_name="UniversalFMA<D,A,B,C>",
          notes="any element type; plain C++ d = a * b + c (fma.rn.f32, fma.rn.f64, mad.lo.s32, ...); "
                "use universal_fma(d, a, b, c) for a typed entry"),
)

