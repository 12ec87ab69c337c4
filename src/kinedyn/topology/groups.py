"""Structural groups (Group Equations paper, sections 2-3) and their dependency DAG.

The finest solvable blocks of the constraint equations (Dulmage-Mendelsohn, :mod:`.structure`)
are often smaller than a mechanism's structural groups: a pose driver gives one linear
equation per coordinate, a point attached to a known body is a linear function of that body's
coordinates. The paper's groups are sets of *bodies* that are solved together, so blocks are
coarsened by the bodies that own them:

1. each body's frame coordinates (the points and vectors that position it) fall into a few
   blocks; the body is *positioned* by the last of them in the solution order;
2. bodies are visited in the order they are positioned; the blocks of a body not yet claimed
   by an earlier-positioned body are merged into one candidate group (so a driven crank stays
   an input group of its own, and the dyad it drives forms the next group);
3. a candidate that only completes bodies begun in one other candidate (a body's own unit
   vector, fixed after its points) joins that candidate, so a body is never split;
4. merging can make two candidate groups depend on each other (a handle whose tip point needs
   the stick's end point, a stick that needs the handle's tip): the strongly connected
   components of the candidate-group graph are merged, which gives an acyclic group graph.

For the paper's Stewart platform (Figure 1c) this yields the terminal (12 coordinates) and,
after it, six independent handle-stick groups of 15. Groups on one level of the DAG do not
depend on each other and can be solved in parallel.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from .structure import block_triangular


@dataclass(frozen=True)
class StructuralGroup:
    """Equations (indices into the incidence) that determine these unknowns together."""
    equations: tuple[int, ...]
    unknowns: tuple[int, ...]
    bodies: tuple[str, ...]        # bodies positioned by this group
    level: int                     # 0 = needs no other group
    depends_on: tuple[int, ...]    # groups that must be solved first

    @property
    def size(self) -> int:
        return len(self.unknowns)


@dataclass(frozen=True)
class GroupStructure:
    """Structural groups in a valid solution order, with the levels of their DAG."""
    groups: tuple[StructuralGroup, ...]
    levels: tuple[tuple[int, ...], ...]
    n_blocks: int                  # number of the finest (Dulmage-Mendelsohn) blocks

    def sizes(self) -> list[int]:
        return [g.size for g in self.groups]

    def edges(self) -> list[tuple[int, int]]:
        return [(p, k) for k, g in enumerate(self.groups) for p in g.depends_on]


def structural_groups(incidence: Sequence[Sequence[int]], n_unknowns: int,
                      body_unknowns: Mapping[str, Sequence[int]]) -> GroupStructure:
    """Coarsen the block-triangular form of a square system into structural groups.

    Parameters
    ----------
    incidence: for each equation, the unknowns it involves (known coordinates removed).
    n_unknowns: number of unknowns; the system must be structurally square and non-singular.
    body_unknowns: for each body (in the model's order), the unknowns of its frame.
    """
    btf = block_triangular(incidence, n_unknowns)
    if not btf.is_square:
        raise ValueError(
            f"the equations are not structurally square: {len(btf.redundant_equations)} "
            f"redundant equation(s), {len(btf.undetermined_unknowns)} undetermined unknown(s)")
    block_of = {}
    for k, b in enumerate(btf.blocks):
        for u in b.unknowns:
            block_of[u] = k
    # 1-2. candidate groups: blocks claimed by bodies in the order the bodies are positioned
    frames = {name: sorted({block_of[u] for u in us}) for name, us in body_unknowns.items() if us}
    owner = [-1] * len(btf.blocks)
    candidates: list[list[int]] = []
    cand_bodies: list[list[str]] = []
    for name in sorted(frames, key=lambda n: frames[n][-1]):  # stable: model order on ties
        own = [k for k in frames[name] if owner[k] < 0]
        if not own:
            cand_bodies[owner[frames[name][-1]]].append(name)
            continue
        for k in own:
            owner[k] = len(candidates)
        candidates.append(own)
        cand_bodies.append([name])
    for k in range(len(btf.blocks)):  # blocks outside every frame stay groups of their own
        if owner[k] < 0:
            owner[k] = len(candidates)
            candidates.append([k])
            cand_bodies.append([])
    # 3. a candidate that only completes bodies already started in one other candidate (say a
    # body's own unit vector, fixed after its points) joins it: groups never split a body
    parent = list(range(len(candidates)))

    def find(m):
        while parent[m] != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m
    for m in range(len(candidates)):
        others = [{owner[k] for k in frames[b]} - {m} for b in cand_bodies[m]]
        if others and all(others) and len(set().union(*others)) == 1:
            parent[find(m)] = find(next(iter(others[0])))
    root = [find(m) for m in range(len(candidates))]
    merged: dict[int, list[int]] = {}
    for m in range(len(candidates)):
        merged.setdefault(root[m], []).append(m)
    owner = [root[o] for o in owner]
    candidates = [sorted(k for m in merged.get(r, []) for k in candidates[m])
                  for r in range(len(candidates))]
    cand_bodies = [[b for m in merged.get(r, []) for b in cand_bodies[m]]
                   for r in range(len(candidates))]
    # 4. dependencies between candidates; cycles merged
    g = nx.DiGraph()
    g.add_nodes_from(r for r in range(len(candidates)) if candidates[r])
    for k, b in enumerate(btf.blocks):
        for p in b.depends_on:
            if owner[p] != owner[k]:
                g.add_edge(owner[p], owner[k])
    cond = nx.condensation(g)
    order = list(nx.lexicographical_topological_sort(
        cond, key=lambda c: min(min(candidates[m]) for m in cond.nodes[c]["members"])))
    index = {c: i for i, c in enumerate(order)}
    groups: list[StructuralGroup] = []
    for c in order:
        members = sorted(cond.nodes[c]["members"], key=lambda m: min(candidates[m]))
        blocks = sorted(k for m in members for k in candidates[m])
        eqs = tuple(sorted(e for k in blocks for e in btf.blocks[k].equations))
        unknowns = tuple(sorted(u for k in blocks for u in btf.blocks[k].unknowns))
        deps = tuple(sorted(index[p] for p in cond.predecessors(c)))
        level = 1 + max((groups[p].level for p in deps), default=-1)
        groups.append(StructuralGroup(eqs, unknowns, tuple(b for m in members
                                                           for b in cand_bodies[m]),
                                      level, deps))
    n_levels = 1 + max((gr.level for gr in groups), default=-1)
    levels = tuple(tuple(k for k, gr in enumerate(groups) if gr.level == lv)
                   for lv in range(n_levels))
    return GroupStructure(tuple(groups), levels, len(btf.blocks))
