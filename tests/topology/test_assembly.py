"""Binary assembly trees (HDCA paper Fig. 3) and serial chains read from the models."""
import math

import numpy as np
import pytest

from kinedyn.errors import ModelError
from kinedyn.models import get
from kinedyn.topology import Topology, balanced_tree, serial_chain


@pytest.mark.parametrize("n", list(range(1, 40)) + [64, 100, 4096])
def test_balanced_tree_depth_and_levels(n):
    t = balanced_tree(n)
    assert t.depth == (math.ceil(math.log2(n)) if n > 1 else 0)
    assert len(t.left) == 2 * n - 1
    seen = np.zeros(2 * n - 1, int)
    for level, nodes in enumerate(t.levels, start=1):
        for c in nodes:
            a, b = t.left[c], t.right[c]
            assert t.height[a] < level and t.height[b] < level  # children assembled before
            assert t.last[a] + 1 == t.first[b] == t.joint[c]   # adjacent bodies, joint between
            assert (t.first[c], t.last[c]) == (t.first[a], t.last[b])
            seen[a] += 1
            seen[b] += 1
    assert seen[:-1].tolist() == [1] * (2 * n - 2) and seen[-1] == 0  # a tree with one root
    assert (t.first[t.root], t.last[t.root]) == (0, n - 1)


def test_open_and_closed_chains():
    m = get("cart-pendulum-3").compile()
    ch = serial_chain(Topology(m))
    assert not ch.closed
    assert [m.body_name[b] for b in ch.bodies] == ["cart", "link1", "link2", "link3"]
    assert [m.joint_name[j] for j in ch.joints] == ["slide", "pin1", "pin2", "pin3"]
    m = get("four-bar-hdca").compile()
    ch = serial_chain(Topology(m))
    assert ch.closed
    assert [m.joint_name[j] for j in ch.joints] == ["A", "B", "C", "D"]
    assert ch.reversed == (False, False, False, True)  # D is listed as ground -> rocker
    back = serial_chain(Topology(m), start=1)  # the same loop walked from D
    assert [m.joint_name[j] for j in back.joints] == ["D", "C", "B", "A"]
    assert back.reversed == (False, True, True, True)


def test_branched_models_are_refused_with_the_body_named():
    with pytest.raises(ModelError, match="ground"):
        serial_chain(Topology(get("3-rrr").compile()))
