"""``TiledMMA``: an MMA atom tiled over threads (atom layout) and values (permutation).

The thread arrangement is ``thr_layout_vmnk = tiled_product(atom.thr_id, atom_layout)``
``# (ThrV,ThrM,ThrN,ThrK) -> thread index``.  ``thrfrg_A/B/C`` re-tile a tensor of
shape ``(M,K)``, ``(N,K)``, ``(M,N)`` into ``((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK)))``,
and a thread's slice of that is its partition ``(MMA, MMA_M, MMA_K)``.

>>> mma = make_tiled_mma("SM80_16x8x16_F32F16F16F32_TN", (2, 2, 1), (32, 32, 16))
>>> str(mma.thr_layout_vmnk)                 # (ThrV,ThrM,ThrN,ThrK) -> thread
'(32,2,2,1):(1,32,64,0)'
>>> mma.tile_size_mnk
(32, 32, 16)
"""

from . import algebra as _alg
from .atom import MMAAtom
from .errors import LayoutError, LayoutTypeError
from .inttuple import is_int
from .layout import Layout, make_layout, rank, size
from .tensor import Tensor, get_flat_coord, make_fragment_like

__all__ = ["TiledMMA", "ThrMMA", "make_tiled_mma"]


def _as_atom_layout(x):
    if isinstance(x, Layout):
        return x
    if isinstance(x, tuple) and all(is_int(v) for v in x):
        return Layout(x)
    raise LayoutTypeError(f"make_tiled_mma: atom layout must be a Layout or a tuple of ints, got {x!r}")


class TiledMMA:
    """A tiled MMA.  Build it with :func:`make_tiled_mma`."""

    def __init__(self, atom, atom_layout, permutation):
        self.atom = atom
        self.atom_layout = atom_layout          # (AtomM,AtomN,AtomK) -> atom index
        self.permutation = permutation          # (PermM,PermN,PermK), entries Layout/int/None
        self.thr_layout_vmnk = _alg.tiled_product(atom.thr_id, atom_layout)
        sizes = []
        for i in range(3):
            core = atom.shape_mnk[i] * size(self.thr_layout_vmnk[i + 1])
            p = permutation[i]
            sizes.append(core if p is None else max(core, size(p)))
        self.tile_size_mnk = tuple(sizes)
        self.size = size(self.thr_layout_vmnk)

    def __repr__(self):
        return (f"TiledMMA({self.atom.name}, thr_layout_vmnk={self.thr_layout_vmnk}, "
                f"tile={self.tile_size_mnk[0]}x{self.tile_size_mnk[1]}x{self.tile_size_mnk[2]})")

    def tile_size(self, i):
        return self.tile_size_mnk[i]

    # ---- re-tiling: (M,K) -> ((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK))) ---------
    def _thrfrg(self, t, i, j, atom_tv, ti, tj):
        perm = (self.permutation[i], self.permutation[j])
        t = _alg.logical_divide(t, perm)                                    # (PermI,PermJ)
        a_tile = (Layout(self.atom.shape_mnk[i]), Layout(self.atom.shape_mnk[j]))
        t = _alg.zipped_divide(t, a_tile)                                   # ((AtomI,AtomJ),(RestI,RestJ))
        t = _alg.composition(t, (atom_tv, None))                            # ((ThrV,FrgV),(RestI,RestJ))
        thr_tile = (None, (Layout(size(self.thr_layout_vmnk[ti])), Layout(size(self.thr_layout_vmnk[tj]))))
        return _alg.zipped_divide(t, thr_tile)                              # ((ThrV,(ThrI,ThrJ)),(FrgV,(RestI,RestJ)))

    def thrfrg_A(self, t):
        """``(M,K,...) -> ((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK,...)))``."""
        return self._thrfrg(t, 0, 2, self.atom.layout_a, 1, 3)

    def thrfrg_B(self, t):
        """``(N,K,...) -> ((ThrV,(ThrN,ThrK)),(FrgV,(RestN,RestK,...)))``."""
        return self._thrfrg(t, 1, 2, self.atom.layout_b, 2, 3)

    def thrfrg_C(self, t):
        """``(M,N,...) -> ((ThrV,(ThrM,ThrN)),(FrgV,(RestM,RestN,...)))``."""
        return self._thrfrg(t, 0, 1, self.atom.layout_c, 1, 2)

    # ---- whole-tile TV layouts -----------------------------------------------
    def _thridx_to_thrid(self):
        return _alg.right_inverse(self.thr_layout_vmnk)

    def tv_C(self, t):
        """``(M,N,...) -> (thr_idx, (FrgV,(RestM,RestN,...)))``: ``thrfrg_C`` indexed by thread index."""
        return _alg.composition(self.thrfrg_C(t), (self._thridx_to_thrid(), None))

    def _tv_ab(self, thrfrg, mk, t):
        v = self.thr_layout_vmnk
        # (ThrV,(ThrM,ThrK)) -> (ThrV,(ThrM,ThrN,ThrK)): the other operand's threads broadcast
        if mk == 0:
            inner = Layout((size(v[1]), size(v[2])), (1, 0))
        else:
            inner = Layout((size(v[1]), size(v[2])), (0, 1))
        atile = (None, (inner, None))
        u = _alg.composition(thrfrg(t), (atile, None))
        return _alg.composition(u, (self._thridx_to_thrid(), None))

    def tv_A(self, t):
        """``(M,K,...) -> (thr_idx, (FrgV,(RestM,RestK,...)))``."""
        return self._tv_ab(self.thrfrg_A, 0, t)

    def tv_B(self, t):
        """``(N,K,...) -> (thr_idx, (FrgV,(RestN,RestK,...)))``."""
        return self._tv_ab(self.thrfrg_B, 1, t)

    def get_layoutC_TV(self):
        """``(thread, value) -> (M,N)`` column-major index over the tile."""
        return self.tv_C(Layout((self.tile_size_mnk[0], self.tile_size_mnk[1])))

    def get_layoutA_TV(self):
        """``(thread, value) -> (M,K)`` column-major index over the tile."""
        return self.tv_A(Layout((self.tile_size_mnk[0], self.tile_size_mnk[2])))

    def get_layoutB_TV(self):
        """``(thread, value) -> (N,K)`` column-major index over the tile."""
        return self.tv_B(Layout((self.tile_size_mnk[1], self.tile_size_mnk[2])))

    def get_slice(self, thr_idx):
        if isinstance(thr_idx, bool) or not is_int(thr_idx) or not 0 <= thr_idx < self.size:
            raise LayoutError(f"TiledMMA.get_slice: thread {thr_idx!r} out of range [0, {self.size})")
        return ThrMMA(self, thr_idx)

    get_thread_slice = get_slice

    def _repr_svg_(self):
        from .draw import svg_of

        return svg_of(self)


def _layout(x):
    return x.layout if isinstance(x, Tensor) else x


def _with(x, layout):
    return x.with_layout(layout) if isinstance(x, Tensor) else layout


class ThrMMA:
    """One thread's view of a :class:`TiledMMA`."""

    def __init__(self, tiled_mma, thr_idx):
        self.tiled_mma = tiled_mma
        self.thr_idx = thr_idx
        self.thr_vmnk = get_flat_coord(tiled_mma.thr_layout_vmnk, thr_idx)

    def _partition(self, t, thrfrg, a, b, op="partition"):
        if isinstance(t, Tensor):                     # the tile over modes I and J
            tile = self.tiled_mma.tile_size_mnk
            t.check_tiler(op, (tile[a - 1], tile[b - 1]))
        thr = _with(t, thrfrg(_layout(t)))            # ((ThrV,(ThrI,ThrJ)),(FrgV,(RestI,RestJ,...)))
        v = self.thr_vmnk
        r11 = rank(_layout(thr)[1][1])
        return thr[(v[0], (v[a], v[b])), (None, (None,) * r11)]

    def partition_A(self, t):
        """``(M,K,...) -> (MMA, MMA_M, MMA_K, ...)``: this thread's A elements."""
        return self._partition(t, self.tiled_mma.thrfrg_A, 1, 3, "partition_A")

    def partition_B(self, t):
        """``(N,K,...) -> (MMA, MMA_N, MMA_K, ...)``."""
        return self._partition(t, self.tiled_mma.thrfrg_B, 2, 3, "partition_B")

    def partition_C(self, t):
        """``(M,N,...) -> (MMA, MMA_M, MMA_N, ...)``."""
        return self._partition(t, self.tiled_mma.thrfrg_C, 1, 2, "partition_C")

    def _fragment(self, t, part, type_name, dtype):
        p = part(t)
        if dtype is None:       # the operand's type, held as the tensor's engine holds it
            held = getattr(getattr(t, "engine", None), "fragment_dtype", None)
            dtype = held(type_name) if held is not None else _np_type(type_name)
        return make_fragment_like(p, dtype)

    def partition_fragment_A(self, t, dtype=None):
        """A register fragment shaped like ``partition_A(t)``, of the atom's A type (on the
        host a bf16 value is a float32; an engine may say otherwise with
        ``engine.fragment_dtype(type_name)``, as the CUDA simulator's does: uint16 bits)."""
        return self._fragment(t, self.partition_A, self.tiled_mma.atom.a_type, dtype)

    def partition_fragment_B(self, t, dtype=None):
        return self._fragment(t, self.partition_B, self.tiled_mma.atom.b_type, dtype)

    def partition_fragment_C(self, t, dtype=None):
        return self._fragment(t, self.partition_C, self.tiled_mma.atom.c_type, dtype)


def _np_type(name):
    """The numpy dtype that holds values of element type ``name`` on the host."""
    import numpy as np

    from .element_types import ELEMENT_TYPES

    e = ELEMENT_TYPES.get(name)
    return np.dtype(e.host) if e is not None and e.host else np.dtype(np.uint32 if name == "b1" else np.float32)


def make_tiled_mma(atom, atom_layout=(1, 1, 1), permutation=(None, None, None)):
    """Tile ``atom`` over ``atom_layout`` (threads) and ``permutation`` (values).

    ``atom``: an :class:`MMAAtom`, a table entry or its name.  ``atom_layout``: a layout or
    shape ``(AtomM,AtomN,AtomK)`` of atoms; ``permutation``: up to three entries
    (layout, int or ``None``) that set and permute the tile in M, N and K.
    """
    if not isinstance(atom, MMAAtom):
        atom = MMAAtom(atom)
    lay = _as_atom_layout(atom_layout)
    if rank(lay) > 3:
        raise LayoutError(f"make_tiled_mma: atom layout {lay} has more than 3 modes")
    lay = _alg.append(lay, 3)
    if not _is_permutation(lay):
        raise LayoutError(
            f"make_tiled_mma: atom layout {lay} does not number the {size(lay)} atoms 0..{size(lay) - 1} "
            f"once each, so the atoms' threads would overlap or leave gaps")
    perm = tuple(permutation) if isinstance(permutation, (tuple, list)) else (permutation,)
    if len(perm) > 3:
        raise LayoutError(f"make_tiled_mma: permutation {perm!r} has more than 3 entries")
    perm = perm + (None,) * (3 - len(perm))
    for p in perm:
        if p is not None and not isinstance(p, Layout) and not (is_int(p) and not isinstance(p, bool) and p > 0):
            raise LayoutTypeError(f"make_tiled_mma: permutation entries must be layouts, positive ints or None, got {p!r}")
    perm = tuple(Layout(p) if is_int(p) and not isinstance(p, bool) else p for p in perm)
    for i, (p, n) in enumerate(zip(perm, atom.shape_mnk)):
        core = n * size(lay[i])
        if p is not None and size(p) % core:
            raise LayoutError(
                f"make_tiled_mma: permutation size {size(p)} in mode {'MNK'[i]} is not a multiple of "
                f"atom size {n} x {size(lay[i])} atoms = {core}")
        if p is not None and not _is_injective(p):
            raise LayoutError(
                f"make_tiled_mma: permutation {p} in mode {'MNK'[i]} sends two coordinates to the "
                f"same place (it must be injective)")
    return TiledMMA(atom, lay, perm)


def _image(layout):
    try:
        return sorted(layout(i) for i in range(size(layout)))
    except (LayoutError, TypeError):
        return None


def _is_permutation(layout):
    """True when ``layout`` maps its domain onto ``[0, size)`` one-to-one."""
    return _image(layout) == list(range(size(layout)))


def _is_injective(layout):
    image = _image(layout)
    return image is not None and len(set(image)) == len(image)
