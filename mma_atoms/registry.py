"""Look up atom table entries by name.

>>> get("SM80_16x8x16_F32F16F16F32_TN").shape_mnk
(16, 8, 16)
>>> "SM75_U32x4_LDSM_N" in names("ldsm")
True
>>> try:
...     get("SM80_16x8x16_F32F16F16F32_NT")
... except UnknownAtomError as e:
...     print(str(e).splitlines()[1].strip())
did you mean: SM80_16x8x16_F32F16F16F32_TN, ...
"""

import difflib

from .ops import COPY_KINDS, MMA_KINDS, CopyOp, MMAOp

__all__ = ["UnknownAtomError", "get", "names", "all_ops", "KINDS", "GROUPS"]

KINDS = MMA_KINDS + COPY_KINDS
GROUPS = ("mma", "copy")   # "mma": every MMAOp kind, "copy": every CopyOp kind


class UnknownAtomError(KeyError):
    """No entry of that name.  A ``KeyError`` (so a ``LookupError``) whose message lists
    the closest names."""

    def __init__(self, name, suggestions):
        self.name = name
        self.suggestions = tuple(suggestions)
        super().__init__(name)

    def __str__(self):
        msg = f"mma_atoms.get: no atom named {self.name!r}"
        if self.suggestions:
            msg += "\n  did you mean: " + ", ".join(self.suggestions)
        else:
            msg += " (mma_atoms.names() lists them)"
        return msg


_TABLE = None


def _modules():
    from . import (copy_sm75_ldsm, copy_sm80, copy_sm90_stsm, copy_universal, mma_sm70,
                   mma_sm75, mma_sm80, mma_sm89, mma_sm90, mma_universal)

    return (mma_universal, mma_sm70, mma_sm75, mma_sm80, mma_sm89, mma_sm90,
            copy_universal, copy_sm80, copy_sm75_ldsm, copy_sm90_stsm)


def _table():
    global _TABLE
    if _TABLE is None:
        table = {}
        for mod in _modules():
            for op in mod.ENTRIES:
                if op.name in table:
                    raise ValueError(f"mma_atoms registry: duplicate entry {op.name!r} in {mod.__name__}")
                table[op.name] = op
        _TABLE = table
    return _TABLE


def get(name):
    """The entry (:class:`MMAOp` or :class:`CopyOp`) called ``name``.

    Raises :class:`UnknownAtomError` listing close matches when there is none.
    """
    if not isinstance(name, str):
        raise TypeError(f"mma_atoms.get: the name must be a str, got {name!r}")
    table = _table()
    op = table.get(name)
    if op is not None:
        return op
    keys = list(table)
    folded = {k.lower(): k for k in keys}
    exact_ci = [folded[name.lower()]] if name.lower() in folded else []
    close = difflib.get_close_matches(name, keys, n=5, cutoff=0.6)
    close_ci = [folded[k] for k in difflib.get_close_matches(name.lower(), list(folded), n=5, cutoff=0.6)]
    seen, suggestions = set(), []
    for k in exact_ci + close + close_ci:
        if k not in seen:
            seen.add(k)
            suggestions.append(k)
    raise UnknownAtomError(name, suggestions[:5])


def _matches(op, kind):
    if kind is None:
        return True
    if kind == "mma":
        return isinstance(op, MMAOp)
    if kind == "copy":
        return isinstance(op, CopyOp)
    return op.kind == kind


def all_ops(kind=None, sm=None):
    """Entries in table order, optionally of one ``kind`` (or group) and runnable on ``sm``."""
    if kind is not None and kind not in KINDS + GROUPS:
        raise ValueError(f"mma_atoms.names: unknown kind {kind!r}; kinds are {KINDS}, groups {GROUPS}")
    if sm is not None and (isinstance(sm, bool) or not isinstance(sm, int)):
        raise TypeError(f"mma_atoms.names: sm must be an int such as 80, got {sm!r}")
    return [op for op in _table().values()
            if _matches(op, kind) and (sm is None or op.min_sm <= sm)]


def names(kind=None, sm=None):
    """Names of all entries, optionally filtered.

    ``kind``: one of ``"mma_sync"``, ``"wgmma"``, ``"fma"``, ``"universal"``,
    ``"cp_async"``, ``"ldsm"``, ``"stsm"``, or the groups ``"mma"`` / ``"copy"``.
    ``sm``: keep entries whose ``min_sm`` is at most this (e.g. ``80``).
    """
    return [op.name for op in all_ops(kind, sm)]
