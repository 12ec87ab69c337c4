"""Structural groups of a formulation's independent constraints (Group Equations paper, s. 2-3).

The constraint rows kept by the kinematic solver (independent rows, driver equations included)
and the coordinates each one involves (the fixed sparsity pattern of Phi_q) form a square
incidence; :func:`kinedyn.topology.groups.structural_groups` coarsens its Dulmage-Mendelsohn
blocks by the bodies that own the coordinates (``formulation.body_coordinates()``).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..topology.groups import GroupStructure, structural_groups


def find_groups(f, rows) -> GroupStructure:
    """Structural groups of formulation ``f`` restricted to constraint ``rows`` (n_q of them).

    The groups' ``equations`` are constraint row numbers of ``f``; their ``unknowns`` are
    coordinate numbers.
    """
    rows = np.asarray(rows, np.int64)
    ptr, ind = f.data.jac_indptr, f.data.jac_indices
    incidence = [ind[ptr[r]:ptr[r + 1]].tolist() for r in rows]
    gs = structural_groups(incidence, f.n_q, f.body_coordinates())
    groups = tuple(replace(g, equations=tuple(int(rows[e]) for e in g.equations))
                   for g in gs.groups)
    return replace(gs, groups=groups)


def describe(gs: GroupStructure, f) -> str:
    """The groups in words: level, size, bodies, dependencies."""
    lines = [f"{len(gs.groups)} structural groups on {len(gs.levels)} level(s) "
             f"(from {gs.n_blocks} Dulmage-Mendelsohn blocks); sizes {gs.sizes()}"]
    for k, g in enumerate(gs.groups):
        bodies = ", ".join(g.bodies) or "-"
        deps = ", ".join(f"G{p}" for p in g.depends_on) or "none"
        lines.append(f"  G{k}: level {g.level}, {g.size} coordinates, {len(g.equations)} "
                     f"equations; bodies {bodies}; after {deps}")
    return "\n".join(lines)
