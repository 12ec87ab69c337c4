"""Structural groups: the paper's Stewart platform (Fig. 1c), driven linkages, DAG validity."""
import networkx as nx
import numpy as np
import pytest

import kinedyn
from kinedyn.kinematics import Kinematics
from kinedyn.kinematics.groups import describe, find_groups
from kinedyn.topology.groups import structural_groups

MODELS = ["four-bar-driven", "slider-crank-driven", "3-rrr-driven", "gough-stewart-driven",
          "stewart-paper"]


@pytest.fixture(scope="module", params=MODELS)
def kin(request):
    return Kinematics(kinedyn.models.get(request.param).compile())


def test_stewart_paper_terminal_then_six_handle_stick_groups():
    k = Kinematics(kinedyn.models.get("stewart-paper").compile())
    gs = find_groups(k.f, k.rows)
    assert gs.sizes() == [12] + [15] * 6
    assert gs.levels == ((0,), (1, 2, 3, 4, 5, 6))
    assert gs.groups[0].bodies == ("terminal",)
    for i, g in enumerate(gs.groups[1:], start=1):
        assert sorted(g.bodies) == [f"handle{i}", f"stick{i}"]
        assert g.depends_on == (0,)
    assert "G6: level 1, 15 coordinates" in describe(gs, k.f)


def test_driven_crank_is_an_input_group():
    k = Kinematics(kinedyn.models.get("four-bar-driven").compile())
    gs = find_groups(k.f, k.rows)
    assert gs.sizes() == [2, 2]
    assert gs.groups[0].bodies == ("crank",) and gs.groups[1].depends_on == (0,)
    k = Kinematics(kinedyn.models.get("3-rrr-driven").compile())
    gs = find_groups(k.f, k.rows)
    assert gs.sizes() == [2, 2, 2, 6] and gs.levels == ((0, 1, 2), (3,))


def test_groups_partition_and_respect_dependencies(kin):
    """Every kept row and coordinate in exactly one group; a group's equations involve only
    its own coordinates and those of groups it (transitively) depends on; groups square."""
    gs = find_groups(kin.f, kin.rows)
    rows = sorted(r for g in gs.groups for r in g.equations)
    cols = sorted(c for g in gs.groups for c in g.unknowns)
    assert rows == sorted(kin.rows.tolist()) and cols == list(range(kin.f.n_q))
    dag = nx.DiGraph(gs.edges())
    dag.add_nodes_from(range(len(gs.groups)))
    assert nx.is_directed_acyclic_graph(dag)
    group_of = {c: k for k, g in enumerate(gs.groups) for c in g.unknowns}
    ptr, ind = kin.data.jac_indptr, kin.data.jac_indices
    for k, g in enumerate(gs.groups):
        assert len(g.equations) == g.size
        allowed = nx.ancestors(dag, k) | {k}
        for r in g.equations:
            assert {group_of[int(c)] for c in ind[ptr[r]:ptr[r + 1]]} <= allowed
        assert g.level == 1 + max((gs.groups[p].level for p in g.depends_on), default=-1)
    # numerically solvable: each group's Jacobian block has full rank at the assembly
    J = kin.jacobian(kin.q_assembled).toarray()
    for g in gs.groups:
        assert np.linalg.matrix_rank(J[np.ix_(g.equations, g.unknowns)]) == g.size


def test_cycles_between_bodies_are_merged():
    # body a owns x0, body b owns x1, x2; x1 needs x0 and x2, x0 needs x2: blocks {x2}, {x0}, {x1}
    incidence = [[2], [0, 2], [1, 0, 2]]
    gs = structural_groups(incidence, 3, {"b": [1, 2], "a": [0]})
    # b claims {x2, x1}, a claims {x0}; x0 needs x2 (b) and x1 needs x0 (a): one group
    assert gs.sizes() == [3] and gs.n_blocks == 3
    gs = structural_groups(incidence, 3, {"a": [0], "c": [2]})
    assert gs.sizes() == [1, 1, 1] and gs.levels == ((0,), (1,), (2,))


def test_non_square_is_rejected():
    with pytest.raises(ValueError, match="not structurally square"):
        structural_groups([[0], [0]], 2, {})
