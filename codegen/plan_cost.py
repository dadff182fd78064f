"""What the copies of a GEMM plan cost: bank conflicts and coalescing, from their layouts.

:func:`plan_cost` runs :func:`layoutalg.analyze_shared` on the shared side of each tiled
copy of a :class:`~codegen.plan.GemmPlan` (global -> shared and shared -> registers, for A and
B) over one stage of its shared layout (a ``cp.async`` by the lines of its global source, as
the hardware writes it), and :func:`layoutalg.analyze_global` on the global
side of the global -> shared copies over the CTA's tile of the operand, in a matrix whose
leading dimension is ``ld`` elements (the sectors depend on it only through the alignment
of the rows, and every leading dimension the plan takes is a multiple of 16 bytes).
``GemmPlan.cost`` is this, computed when first asked for.

>>> from codegen import GemmConfig, make_plan
>>> cost = make_plan(GemmConfig.default("f16"), "K", "MN").cost
>>> [(c.name, c.shared.ways) for c in cost.copies]
[('A g2s', 1), ('A s2r', 1), ('B g2s', 1), ('B s2r', 1)]
>>> cost["A g2s"].global_.efficiency[0]
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

from layoutalg import Layout, analyze_global, analyze_shared

__all__ = ["CopyCost", "PlanCost", "plan_cost"]


@dataclass(frozen=True)
class CopyCost:
    """One copy of the plan: ``name`` ("A g2s", "B s2r", ...), its tiled copy, the analysis of
    its shared side and (global -> shared copies) of its global side."""

    name: str
    copy: object
    shared: object
    global_: object = None

    def lines(self):
        """Short lines for a picture: the shared side, and the global side if any."""
        s = self.shared
        w = s.warps[0]
        same = all(x.wavefronts == w.wavefronts for x in s.warps)
        per = "a warp" if same else "warp 0"
        text = (f"smem: {w.instructions} instr., {w.wavefronts} wavefronts {per} (ideal {w.ideal}): "
                + (f"{s.ways}-way bank conflicts" if s.ways > 1 else "conflict-free"))
        out = [text]
        if self.global_ is not None:
            g = self.global_
            eff = g.total_ideal / g.total_sectors if g.total_sectors else 1.0
            out.append(f"gmem: {g.warps[0].requests} requests, {g.warps[0].sectors} sectors a warp "
                       f"({eff:.0%} of the bytes used)")
        return out


@dataclass(frozen=True)
class PlanCost:
    """The :class:`CopyCost` of each copy of a plan, by name."""

    copies: tuple

    def __getitem__(self, name):
        for c in self.copies:
            if c.name == name:
                return c
        raise KeyError(f"PlanCost: no copy named {name!r}; have {[c.name for c in self.copies]}")

    @property
    def conflicts(self):
        """The copies whose shared side has bank conflicts."""
        return tuple(c for c in self.copies if c.shared.ways > 1)

    def report(self):
        out = []
        for c in self.copies:
            out.append(f"{c.name}: {c.shared.describe()}")
            if c.global_ is not None:
                out.append(f"{' ' * len(c.name)}  {c.global_.describe()}")
        return "\n".join(out)


def _gmem_tile(rows, bk, major, ld):
    return Layout((rows, bk), (ld, 1)) if major == "K" else Layout((rows, bk), (1, ld))   # (rows,BK) -> offset


def plan_cost(plan, ld=4096):
    """The :class:`PlanCost` of ``plan`` (a :class:`~codegen.plan.GemmPlan`)."""
    copies = []
    for op in plan.operands:
        g2s, s2r = op.g2s, op.s2r
        gl = _gmem_tile(op.rows, plan.config.bk, op.major, ld)
        src = gl if g2s.tiled_copy.atom.op.kind == "cp_async" else None     # cp.async writes by its source's lines
        copies.append(CopyCost(f"{op.name} g2s", g2s.tiled_copy, analyze_shared(g2s.tiled_copy, op.smem, "D", gmem=src),
                               analyze_global(g2s.tiled_copy, gl, "S")))
        copies.append(CopyCost(f"{op.name} s2r", s2r.tiled_copy, analyze_shared(s2r.tiled_copy, op.smem, "S")))
    return PlanCost(tuple(copies))
