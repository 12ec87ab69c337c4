"""Structural decomposition of a system of equations: block-triangular form and its DAG.

Given which unknowns each equation involves (the incidence pattern, with the known coordinates
already removed), the Dulmage-Mendelsohn decomposition finds the finest ordering in which the
equations can be solved block after block: a maximum matching pairs each equation with an
unknown it determines, and the strongly connected components of the resulting dependency graph
are the irreducible blocks. Blocks that do not depend on each other can be solved in parallel;
this is the structural-group analysis of the Group Equations paper (section 2-3) done
automatically for any model.

Equations left unmatched are structurally redundant (over-determined part); unknowns left
unmatched are not determined by the equations (under-determined part: missing drivers).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx
from networkx.algorithms import bipartite


@dataclass(frozen=True)
class Block:
    """An irreducible block: these equations determine these unknowns together."""
    equations: tuple[int, ...]
    unknowns: tuple[int, ...]
    level: int                     # 0 = depends on nothing; k = longest dependency chain
    depends_on: tuple[int, ...]    # indices of blocks that must be solved first


@dataclass(frozen=True)
class BlockTriangularForm:
    """Blocks in a valid solution order, with the over- and under-determined parts."""
    blocks: tuple[Block, ...]
    redundant_equations: tuple[int, ...] = ()
    undetermined_unknowns: tuple[int, ...] = ()
    n_equations: int = 0
    n_unknowns: int = 0
    levels: tuple[tuple[int, ...], ...] = field(default=())

    @property
    def is_square(self) -> bool:
        return not self.redundant_equations and not self.undetermined_unknowns

    def sizes(self) -> list[int]:
        return [len(b.unknowns) for b in self.blocks]


def block_triangular(incidence: Sequence[Sequence[int]], n_unknowns: int) -> BlockTriangularForm:
    """Dulmage-Mendelsohn block-triangular form.

    Parameters
    ----------
    incidence: for each equation, the unknowns (0..n_unknowns-1) it involves.
    n_unknowns: number of unknowns.

    Returns the irreducible blocks of the square (well-determined) part in a topological order
    (every block after the blocks it depends on), each with its dependency level, plus the
    equations of the over-determined part and the unknowns of the under-determined part.
    """
    n_eq = len(incidence)
    g = nx.Graph()
    eqs = [("e", i) for i in range(n_eq)]
    xs = [("x", j) for j in range(n_unknowns)]
    g.add_nodes_from(eqs, bipartite=0)
    g.add_nodes_from(xs, bipartite=1)
    for i, row in enumerate(incidence):
        for j in row:
            if not 0 <= j < n_unknowns:
                raise ValueError(f"equation {i} refers to unknown {j} outside 0..{n_unknowns - 1}")
            g.add_edge(("e", i), ("x", j))
    matching = bipartite.hopcroft_karp_matching(g, top_nodes=eqs)
    eq_of = {j: matching[("x", j)][1] for j in range(n_unknowns) if ("x", j) in matching}
    x_of = {i: matching[("e", i)][1] for i in range(n_eq) if ("e", i) in matching}

    # Over-determined part: equations reachable from an unmatched equation by alternating paths
    # (equation -> unknown it involves -> the equation matched to that unknown).
    over_eq = set(i for i in range(n_eq) if i not in x_of)
    over_x: set[int] = set()
    stack = list(over_eq)
    while stack:
        i = stack.pop()
        for j in incidence[i]:
            if j not in over_x:
                over_x.add(j)
                k = eq_of.get(j)
                if k is not None and k not in over_eq:
                    over_eq.add(k)
                    stack.append(k)
    # Under-determined part: unknowns reachable from an unmatched unknown by alternating paths
    # (unknown -> equation involving it -> the unknown matched to that equation).
    by_unknown: list[list[int]] = [[] for _ in range(n_unknowns)]
    for i, row in enumerate(incidence):
        for j in row:
            by_unknown[j].append(i)
    under_x = set(j for j in range(n_unknowns) if j not in eq_of)
    under_eq: set[int] = set()
    stack = list(under_x)
    while stack:
        j = stack.pop()
        for i in by_unknown[j]:
            if i not in under_eq:
                under_eq.add(i)
                k = x_of.get(i)
                if k is not None and k not in under_x:
                    under_x.add(k)
                    stack.append(k)

    # Square part: dependency graph on matched pairs; unknown u (matched to e) depends on the
    # other unknowns of e.
    square = [j for j in range(n_unknowns) if j in eq_of and j not in over_x and j not in under_x]
    in_square = set(square)
    dg = nx.DiGraph()
    dg.add_nodes_from(square)
    for u in square:
        for v in incidence[eq_of[u]]:
            if v != u and v in in_square:
                dg.add_edge(v, u)  # v must be known before u's block
    cond = nx.condensation(dg)
    order = list(nx.lexicographical_topological_sort(
        cond, key=lambda c: min(cond.nodes[c]["members"])))
    index = {c: k for k, c in enumerate(order)}
    level: dict[int, int] = {}
    blocks = []
    for c in order:
        preds = sorted(index[p] for p in cond.predecessors(c))
        level[c] = 1 + max((level[order[p]] for p in preds), default=-1)
        members = sorted(cond.nodes[c]["members"])
        blocks.append(Block(tuple(sorted(eq_of[u] for u in members)), tuple(members), level[c],
                            tuple(preds)))
    n_levels = 1 + max(level.values(), default=-1)
    levels = tuple(tuple(k for k, b in enumerate(blocks) if b.level == lv) for lv in range(n_levels))
    return BlockTriangularForm(tuple(blocks), tuple(sorted(over_eq)), tuple(sorted(under_x)),
                               n_eq, n_unknowns, levels)
