"""The table entries: :class:`MMAOp` (tensor-core and FMA atoms) and :class:`CopyOp`.

Each entry is a frozen dataclass holding what CuTe's ``MMA_Traits`` /
``Copy_Traits`` and the instruction's arch struct say about one instruction:

* ``thr_id``: logical thread id -> physical thread index (lane, or thread of the
  warpgroup), e.g. ``32:1`` or the SM70 quad-pair ``(4,2):(1,16)``;
* MMA ``layout_a``/``layout_b``/``layout_c``: (thread, value) -> column-major index
  into the ``MxK``, ``NxK`` and ``MxN`` tiles;
* copy ``src_layout``/``dst_layout``/``ref_layout``: (thread, value) -> bit index;
* register counts and types per operand (:class:`Regs`), the PTX text, ``min_sm``.

The value index of a layout is the position in the thread's register fragment:
value ``v`` of an operand whose elements are ``b`` bits wide sits in register
``v * b // reg_bits`` at bit ``(v * b) % reg_bits`` (little-endian packing), which
is element ``a_v``/``b_v``/``c_v`` in the PTX ISA's fragment tables.

>>> from layoutalg import Layout
>>> Regs(4, "u32").bits, str(Regs(4, "u32"))
(128, '4 x u32')
"""

from dataclasses import dataclass, field

from layoutalg import Layout, size

from .numerics import ELEMENT_TYPES, REGISTER_TYPES, type_bits

__all__ = ["Regs", "MMAOp", "CopyOp", "MMA_KINDS", "COPY_KINDS"]

MMA_KINDS = ("mma_sync", "wgmma", "fma")
COPY_KINDS = ("universal", "cp_async", "ldsm", "stsm")


@dataclass(frozen=True)
class Regs:
    """``count`` registers of type ``type`` (``"u32"``, ``"f32"``, ``"f64"``, ``"u64"``, ...)."""

    count: int
    type: str

    def __post_init__(self):
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count <= 0:
            raise ValueError(f"Regs: count must be a positive int, got {self.count!r}")
        if self.type != "any" and self.type not in REGISTER_TYPES:
            raise ValueError(f"Regs: unknown register type {self.type!r}; "
                             f"known: {sorted(REGISTER_TYPES)} or 'any'")

    @property
    def bits(self):
        """Total bits (``None`` for ``"any"``)."""
        return None if self.type == "any" else self.count * REGISTER_TYPES[self.type]

    def __str__(self):
        return f"{self.count} x {self.type}"


def _check_layout(op, what, layout):
    if not isinstance(layout, Layout):
        raise TypeError(f"{op}: {what} must be a Layout, got {layout!r}")


def _check_type(op, what, t):
    if t != "any" and t not in ELEMENT_TYPES:
        raise ValueError(f"{op}: {what} {t!r} is not a known element type "
                         f"({sorted(ELEMENT_TYPES)} or 'any')")


@dataclass(frozen=True)
class MMAOp:
    """One MMA instruction (or CuTe's ``UniversalFMA``), as data.

    Fields
    ------
    name : CuTe's name, e.g. ``"SM80_16x8x16_F32F16F16F32_TN"``.
    kind : ``"mma_sync"`` (warp ``mma.sync``), ``"wgmma"`` (warpgroup
        ``wgmma.mma_async``) or ``"fma"`` (one-thread ``UniversalFMA``).
    shape_mnk : ``(M, N, K)``.
    thr_id : logical thread -> physical thread (lane, or thread of the warpgroup).
    layout_a : (thread, value) -> ``m + M*k`` in the ``MxK`` tile.
    layout_b : (thread, value) -> ``n + N*k`` in the ``NxK`` tile.
    layout_c : (thread, value) -> ``m + M*n`` in the ``MxN`` tile (C and D share it).
    a_type, b_type, c_type, d_type : element type names.
    a_regs, b_regs, c_regs, d_regs : per-thread registers (:class:`Regs`).
    min_sm : smallest SM version that runs it (0: any).
    ptx : the instruction, e.g. ``"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"``.
    ptx_operands : the operand template, ``{d0,...}, {a0,...}, {b0,...}, {c0,...}``.
    ptx_target : the PTX target it needs (``"sm_80"``, ``"sm_90a"``, ...).
    a_source, b_source : ``"rmem"`` (per-thread registers) or ``"smem_desc"`` (a
        shared-memory matrix descriptor: the wgmma SS operands, whose layouts are
        broadcast over the threads, not per-thread bijections).
    cute_name : CuTe's spelling where it differs (template arguments).
    notes : anything a user must know (saturation, targets, CuTe quirks).
    """

    name: str
    kind: str
    shape_mnk: tuple
    thr_id: Layout
    layout_a: Layout
    layout_b: Layout
    layout_c: Layout
    a_type: str
    b_type: str
    c_type: str
    d_type: str
    a_regs: Regs
    b_regs: Regs
    c_regs: Regs
    d_regs: Regs
    min_sm: int
    ptx: str
    ptx_operands: str = ""
    ptx_target: str = ""
    a_source: str = "rmem"
    b_source: str = "rmem"
    cute_name: str = ""
    notes: str = ""

    def __post_init__(self):
        op = f"MMAOp({self.name!r})"
        if self.kind not in MMA_KINDS:
            raise ValueError(f"{op}: kind must be one of {MMA_KINDS}, got {self.kind!r}")
        if (not isinstance(self.shape_mnk, tuple) or len(self.shape_mnk) != 3
                or not all(isinstance(x, int) and x > 0 for x in self.shape_mnk)):
            raise ValueError(f"{op}: shape_mnk must be three positive ints, got {self.shape_mnk!r}")
        for what in ("thr_id", "layout_a", "layout_b", "layout_c"):
            _check_layout(op, what, getattr(self, what))
        for what in ("a_type", "b_type", "c_type", "d_type"):
            _check_type(op, what, getattr(self, what))
        for what in ("a_regs", "b_regs", "c_regs", "d_regs"):
            if not isinstance(getattr(self, what), Regs):
                raise TypeError(f"{op}: {what} must be a Regs, got {getattr(self, what)!r}")
        for what in ("a_source", "b_source"):
            if getattr(self, what) not in ("rmem", "smem_desc"):
                raise ValueError(f"{op}: {what} must be 'rmem' or 'smem_desc', got {getattr(self, what)!r}")
        nthr = size(self.thr_id)
        for what in ("layout_a", "layout_b", "layout_c"):
            lay = getattr(self, what)
            if size(lay[0]) != nthr:
                raise ValueError(f"{op}: {what} {lay} has {size(lay[0])} threads, thr_id {self.thr_id} has {nthr}")
        if not self.cute_name:
            object.__setattr__(self, "cute_name", self.name)

    # ---- derived ----------------------------------------------------------
    @property
    def num_threads(self):
        """Threads taking part: 32 (warp), 8 (SM70 quad pair), 128 (warpgroup) or 1."""
        return size(self.thr_id)

    @property
    def tile_a(self):
        """``(M, K)``."""
        return (self.shape_mnk[0], self.shape_mnk[2])

    @property
    def tile_b(self):
        """``(N, K)``."""
        return (self.shape_mnk[1], self.shape_mnk[2])

    @property
    def tile_c(self):
        """``(M, N)``."""
        return (self.shape_mnk[0], self.shape_mnk[1])

    def values_per_thread(self, operand):
        """Values each thread holds of operand ``"a"``, ``"b"``, ``"c"`` or ``"d"``."""
        lay = self.layout(operand)
        return size(lay) // size(lay[0])

    def layout(self, operand):
        """The (thread, value) layout of ``"a"``, ``"b"``, ``"c"`` or ``"d"`` (= C's)."""
        table = {"a": self.layout_a, "b": self.layout_b, "c": self.layout_c, "d": self.layout_c}
        if operand not in table:
            raise ValueError(f"{self.name}.layout: operand must be 'a', 'b', 'c' or 'd', got {operand!r}")
        return table[operand]

    def elem_type(self, operand):
        """Element type name of ``"a"``, ``"b"``, ``"c"`` or ``"d"``."""
        table = {"a": self.a_type, "b": self.b_type, "c": self.c_type, "d": self.d_type}
        if operand not in table:
            raise ValueError(f"{self.name}.elem_type: operand must be 'a', 'b', 'c' or 'd', got {operand!r}")
        return table[operand]

    def regs(self, operand):
        """Registers (:class:`Regs`) of ``"a"``, ``"b"``, ``"c"`` or ``"d"``."""
        table = {"a": self.a_regs, "b": self.b_regs, "c": self.c_regs, "d": self.d_regs}
        if operand not in table:
            raise ValueError(f"{self.name}.regs: operand must be 'a', 'b', 'c' or 'd', got {operand!r}")
        return table[operand]

    def source(self, operand):
        """``"rmem"`` or ``"smem_desc"`` for ``"a"``/``"b"``; C and D are always registers."""
        return {"a": self.a_source, "b": self.b_source}.get(operand, "rmem")

    def summary(self):
        """A few lines describing the entry."""
        lines = [f"{self.name}  ({self.kind}, sm_{self.min_sm}+)" if self.min_sm else
                 f"{self.name}  ({self.kind}, any SM)",
                 f"  shape MNK {self.shape_mnk}, threads {self.num_threads}, thr_id {self.thr_id}",
                 f"  A {self.a_type} {self.layout_a}  [{self.a_regs}, {self.a_source}]",
                 f"  B {self.b_type} {self.layout_b}  [{self.b_regs}, {self.b_source}]",
                 f"  C {self.c_type} {self.layout_c}  [{self.c_regs}]",
                 f"  D {self.d_type}  [{self.d_regs}]",
                 f"  ptx {self.ptx} {self.ptx_operands}".rstrip()]
        if self.notes:
            lines.append(f"  note: {self.notes}")
        return "\n".join(lines)


@dataclass(frozen=True)
class CopyOp:
    """One copy instruction, as data.

    Fields
    ------
    name : e.g. ``"SM75_U32x4_LDSM_N"``, ``"UniversalCopy_128"``.
    kind : ``"universal"``, ``"cp_async"``, ``"ldsm"`` or ``"stsm"``.
    thr_id : logical thread -> physical thread.
    src_layout, dst_layout, ref_layout : (thread, value) -> bit index, as CuTe's
        ``Copy_Traits`` (the bit numbering is the traits' own, shared by the three).
    src_regs, dst_regs : operand registers (:class:`Regs`); ``u128`` marks a 16-byte
        shared-memory row the instruction addresses (ldmatrix source, stmatrix dest).
    min_sm, ptx, ptx_operands, ptx_target : as for :class:`MMAOp`.
    value_bits : bits moved per thread where that is the op's parameter
        (UniversalCopy, cp.async), else ``None``.
    elem_bits : matrix element width for ldmatrix/stmatrix (16), else ``None``.
    num_matrices : 8x8 matrices moved (ldmatrix/stmatrix), else ``None``.
    transpose : ``.trans`` (ldmatrix/stmatrix).
    src_space, dst_space : ``"gmem"``, ``"smem"``, ``"rmem"`` or ``"any"``.
    cute_name, notes : as for :class:`MMAOp`.
    """

    name: str
    kind: str
    thr_id: Layout
    src_layout: Layout
    dst_layout: Layout
    ref_layout: Layout
    src_regs: Regs
    dst_regs: Regs
    min_sm: int
    ptx: str
    ptx_operands: str = ""
    ptx_target: str = ""
    value_bits: int = None
    elem_bits: int = None
    num_matrices: int = None
    transpose: bool = False
    src_space: str = "any"
    dst_space: str = "any"
    cute_name: str = ""
    notes: str = ""

    def __post_init__(self):
        op = f"CopyOp({self.name!r})"
        if self.kind not in COPY_KINDS:
            raise ValueError(f"{op}: kind must be one of {COPY_KINDS}, got {self.kind!r}")
        for what in ("thr_id", "src_layout", "dst_layout", "ref_layout"):
            _check_layout(op, what, getattr(self, what))
        for what in ("src_regs", "dst_regs"):
            if not isinstance(getattr(self, what), Regs):
                raise TypeError(f"{op}: {what} must be a Regs, got {getattr(self, what)!r}")
        nthr = size(self.thr_id)
        for what in ("src_layout", "dst_layout", "ref_layout"):
            lay = getattr(self, what)
            if size(lay[0]) != nthr:
                raise ValueError(f"{op}: {what} {lay} has {size(lay[0])} threads, thr_id has {nthr}")
        for what in ("src_space", "dst_space"):
            if getattr(self, what) not in ("gmem", "smem", "rmem", "any"):
                raise ValueError(f"{op}: {what} must be gmem/smem/rmem/any, got {getattr(self, what)!r}")
        if not self.cute_name:
            object.__setattr__(self, "cute_name", self.name)

    @property
    def num_threads(self):
        """Threads taking part: 1 (universal, cp.async) or 32 (ldmatrix, stmatrix)."""
        return size(self.thr_id)

    @property
    def num_bits(self):
        """Bits the whole instruction moves (size of the reference layout's image)."""
        return size(self.ref_layout)

    def summary(self):
        """A few lines describing the entry."""
        lines = [f"{self.name}  ({self.kind}, sm_{self.min_sm}+)" if self.min_sm else
                 f"{self.name}  ({self.kind}, any SM)",
                 f"  threads {self.num_threads}, thr_id {self.thr_id}",
                 f"  src {self.src_layout}  [{self.src_regs}, {self.src_space}]",
                 f"  dst {self.dst_layout}  [{self.dst_regs}, {self.dst_space}]",
                 f"  ref {self.ref_layout}",
                 f"  ptx {self.ptx} {self.ptx_operands}".rstrip()]
        if self.notes:
            lines.append(f"  note: {self.notes}")
        return "\n".join(lines)


def operand_list(prefix, n):
    """``"{d0, d1}"``-style PTX operand group."""
    return "{" + ", ".join(f"{prefix}{i}" for i in range(n)) + "}"


def mma_operands(d, a, b, c):
    """The ``d, a, b, c`` operand template of an ``mma.sync`` with these register counts."""
    return ", ".join(operand_list(p, n) for p, n in (("d", d), ("a", a), ("b", b), ("c", c)))


def mma_sync(name, shape_mnk, thr_id, layout_a, layout_b, layout_c, types, regs, min_sm, ptx,
             ptx_target=None, notes=""):
    """Build an ``mma.sync`` entry.

    ``types`` is ``(d, a, b, c)`` element types, ``regs`` is ``(d, a, b, c)`` as
    ``(count, type)`` pairs: the order of CuTe's names (``F32F16F16F32`` = D,A,B,C)
    and of the PTX operands.
    """
    (td, ta, tb, tc), (rd, ra, rb, rc) = types, tuple(Regs(*r) for r in regs)
    return MMAOp(
        name=name, kind="mma_sync", shape_mnk=tuple(shape_mnk), thr_id=thr_id,
        layout_a=layout_a, layout_b=layout_b, layout_c=layout_c,
        a_type=ta, b_type=tb, c_type=tc, d_type=td,
        a_regs=ra, b_regs=rb, c_regs=rc, d_regs=rd, min_sm=min_sm, ptx=ptx,
        ptx_operands=mma_operands(rd.count, ra.count, rb.count, rc.count),
        ptx_target=ptx_target or f"sm_{min_sm}", notes=notes)
