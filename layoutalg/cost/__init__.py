"""What a layout costs on the hardware, computed from the layout alone.

* :func:`analyze_shared` -- the bank conflicts of a tiled copy's shared-memory side:
  instructions, wavefronts, the ideal, and which threads collide in which bank;
* :func:`analyze_global` -- the coalescing of its global side: requests, 32-byte sectors,
  the ideal;
* :func:`check_tma` and :func:`check_wgmma` -- whether a shared-memory layout can be a TMA
  box's destination or a wgmma operand, and if not which rule fails.

Each rule is written down in its module (:mod:`~layoutalg.cost.banks`,
:mod:`~layoutalg.cost.sectors`, :mod:`~layoutalg.cost.legality`) with its source;
``benchmarks/bank_conflicts.py`` compares the counts with an H100's counters.
"""

from .access import CopyAccesses, copy_accesses
from .banks import (
    BankCollision, PerformanceWarning, SharedAnalysis, SharedInstruction, WarpShared, analyze_shared,
)
from .sectors import GlobalAnalysis, WarpGlobal, analyze_global
from .legality import Legality, check_tma, check_wgmma

__all__ = [
    "analyze_shared", "analyze_global", "check_tma", "check_wgmma", "Legality", "SharedAnalysis",
    "GlobalAnalysis", "WarpShared", "WarpGlobal", "SharedInstruction", "BankCollision", "PerformanceWarning",
    "CopyAccesses", "copy_accesses",
]
