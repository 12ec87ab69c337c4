"""Spanning tree, cut joints and loops of the body-joint graph."""
from __future__ import annotations

import networkx as nx
import pytest

import kinedyn
from kinedyn.models import MODELS
from kinedyn.topology import Topology

# independent loops = joints - moving bodies (connected graph): cyclomatic number
LOOPS = {"double-pendulum": 0, "four-bar": 1, "slider-crank": 1, "3-rrr": 2,
         "gough-stewart": 5, "stewart-paper": 5}


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_tree_and_loops_are_consistent(name):
    m = MODELS[name].build().compile()
    top = Topology(m)
    assert len(top.loops) == len(top.cut_joints) == LOOPS[name]
    assert len(top.tree_joints) == m.n_body - 1
    assert set(top.tree_joints) | set(top.cut_joints) == set(range(m.n_joint))
    # the tree joints form a spanning tree of the bodies
    tree = nx.Graph([(int(m.joint_body_a[j]), int(m.joint_body_b[j])) for j in top.tree_joints])
    assert nx.is_tree(tree) and tree.number_of_nodes() == m.n_body
    for b in range(1, m.n_body):  # breadth-first: every branch is as short as possible
        assert top.depth[b] == nx.shortest_path_length(nx.Graph(top.graph), 0, b)
    for loop in top.loops:
        # a loop is a closed walk: consecutive bodies are joined by its joints
        assert loop.joints[0] == loop.cut_joint
        assert [j for j in loop.joints if j in top.cut_joints] == [loop.cut_joint]
        ends = [frozenset((int(m.joint_body_a[j]), int(m.joint_body_b[j]))) for j in loop.joints]
        ring = list(loop.bodies) + [loop.bodies[0]]
        assert sorted(map(sorted, ends)) == sorted(sorted((a, b)) for a, b in zip(ring, ring[1:]))


def test_four_bar_cuts_the_joint_farthest_from_the_ground():
    m = MODELS["four-bar"].build().compile()
    top = Topology(m)
    assert [m.joint_name[j] for j in top.cut_joints] == ["C"]
    loop = top.loops[0]
    assert [m.body_name[b] for b in loop.bodies] == ["coupler", "crank", "ground", "rocker"]


def test_stewart_paper_loops_close_through_the_terminal():
    m = MODELS["stewart-paper"].build().compile()
    top = Topology(m)
    assert [m.joint_name[j] for j in top.cut_joints] == ["U2", "U3", "U4", "U5", "U6"]
    for k, loop in enumerate(top.loops, start=2):
        assert {m.body_name[b] for b in loop.bodies} == {
            "ground", "handle1", "stick1", "terminal", f"handle{k}", f"stick{k}"}


def test_tree_prefers_the_joint_with_more_equations():
    """Between two joints reaching a body at the same depth, the stiffer one goes in the tree."""
    s = kinedyn.System("two-ways", dim=3)
    s.add_point("ground", "O", [0, 0, 0])
    s.add_point("ground", "P", [1, 0, 0])
    s.add_vector("ground", "z", [0, 0, 1])
    s.add_body("b", mass=1, inertia=[1, 1, 1], points={"O": [0, 0, 0], "P": [1, 0, 0]},
               vectors={"z": [0, 0, 1]})
    s.add_joint("ball", "spherical", "ground", "b", point_a="O", point_b="O")
    s.add_joint("hinge", "revolute", "ground", "b", point_a="P", point_b="P", axis_a="z",
                axis_b="z")
    top = Topology(s.compile())
    assert top.tree_joints == (1,) and top.cut_joints == (0,)
    assert top.loops[0].bodies == (0, 1) or top.loops[0].bodies == (1, 0)
