"""Binary assembly trees for divide-and-conquer dynamics (HDCA paper section 2, Fig. 3).

A planar serial chain ``ground -j0- b0 -j1- b1 ... b(n-1) [-jn- ground]`` is read from the
body-joint graph (:func:`serial_chain`): open when the ground holds one joint, a single closed
loop when it holds two (the four-bar; both ends then get the *base connection* of eqs. 42-44).
:func:`balanced_tree` splits the chain recursively in halves: the leaves are the bodies, an
internal node is the compound body of its two children joined by the joint between them, and
the depth is ``ceil(log2 n)``. Nodes of equal height are independent (:attr:`AssemblyTree.levels`):
the assembly pass runs level by level upwards, the disassembly downwards, each level in parallel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .graph import Topology


@dataclass(frozen=True)
class SerialChain:
    """A chain in traversal order.

    ``bodies (n,)`` model body indices; ``joints (n_j,)`` model joint indices, joint k between
    chain bodies k-1 and k (-1 and n meaning the ground), ``n_j = n`` (open) or ``n + 1``
    (closed); ``reversed (n_j,)`` True where the model lists the joint as (next, previous).
    """
    bodies: tuple[int, ...]
    joints: tuple[int, ...]
    reversed: tuple[bool, ...]
    closed: bool


def serial_chain(topology: Topology, start: int = 0) -> SerialChain:
    """The chain of a model whose bodies each hold at most two joints, hanging from the ground;
    a closed one is walked from its ground joint ``start`` (0: the one listed first, 1: the
    other), and so in either direction."""
    m = topology.model
    g = topology.graph
    name = m.name

    def joints_of(b):
        return sorted(k for _, _, k in g.edges(b, keys=True))

    ground = joints_of(0)
    if len(ground) not in (1, 2):
        raise ModelError(f"HDCA needs a serial chain attached to the ground by one joint (open) "
                         f"or two (closed loop); the ground of {name!r} holds {len(ground)}",
                         location="joints")
    bodies, joints, rev = [], [], []
    prev, j = 0, ground[start if len(ground) == 2 else 0]
    while True:
        a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
        nxt = b if a == prev else a
        joints.append(j)
        rev.append(a != prev)
        if nxt == 0:
            break
        if nxt in bodies:
            raise ModelError(f"HDCA: body {m.body_name[nxt]!r} is reached twice (inner loop)")
        bodies.append(nxt)
        rest = [k for k in joints_of(nxt) if k != j]
        if len(rest) > 1:
            raise ModelError(f"HDCA handles serial chains only: body {m.body_name[nxt]!r} holds "
                             f"{len(rest) + 1} joints", location=f"bodies.{m.body_name[nxt]}")
        if not rest:
            break
        prev, j = nxt, rest[0]
    closed = len(joints) == len(bodies) + 1
    if len(bodies) != m.n_body - 1 or len(joints) != m.n_joint:
        raise ModelError(f"HDCA: the chain from the ground reaches {len(bodies)} of "
                         f"{m.n_body - 1} bodies and {len(joints)} of {m.n_joint} joints")
    if closed and len(ground) != 2:
        raise ModelError("HDCA: the loop does not close at the ground")
    return SerialChain(tuple(bodies), tuple(joints), tuple(rev), closed)


@dataclass(frozen=True)
class AssemblyTree:
    """A binary assembly tree over ``n`` leaves (chain bodies 0..n-1).

    Nodes 0..n-1 are the leaves; internal nodes follow. For node ``c``: ``left[c], right[c]``
    its children (-1 for leaves), ``joint[c]`` the chain joint joining them (= the first body
    of the right child), ``first[c], last[c]`` its first and last body. ``levels`` lists the
    internal nodes by height (children before parents); ``root`` is the last node.
    """
    n: int
    left: np.ndarray
    right: np.ndarray
    joint: np.ndarray
    first: np.ndarray
    last: np.ndarray
    height: np.ndarray
    levels: tuple[np.ndarray, ...]

    @property
    def root(self) -> int:
        return len(self.left) - 1

    @property
    def depth(self) -> int:
        return int(self.height[self.root])

    def level_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(level_ptr (n_levels+1,), level_nodes (n-1,))`` flat form for compiled passes."""
        ptr = np.zeros(len(self.levels) + 1, np.int64)
        ptr[1:] = np.cumsum([len(v) for v in self.levels])
        nodes = np.concatenate(self.levels) if self.levels else np.zeros(0, np.int64)
        return ptr, nodes.astype(np.int64)


def balanced_tree(n: int) -> AssemblyTree:
    """Halve the chain recursively: depth ``ceil(log2 n)`` (paper Fig. 3 for n = 4)."""
    if n < 1:
        raise ModelError("an assembly tree needs at least one body")
    left, right, joint, first, last, height = [], [], [], [], [], []
    for b in range(n):
        for arr, v in ((left, -1), (right, -1), (joint, -1), (first, b), (last, b), (height, 0)):
            arr.append(v)

    def build(lo, hi):  # bodies lo..hi-1 -> node id
        if hi - lo == 1:
            return lo
        mid = (lo + hi + 1) // 2
        a, b = build(lo, mid), build(mid, hi)
        left.append(a)
        right.append(b)
        joint.append(mid)
        first.append(lo)
        last.append(hi - 1)
        height.append(1 + max(height[a], height[b]))
        return len(left) - 1

    build(0, n)
    h = np.array(height, np.int64)
    levels = tuple(np.flatnonzero(h == k).astype(np.int64) for k in range(1, int(h.max()) + 1))
    return AssemblyTree(n, *(np.array(x, np.int64) for x in (left, right, joint, first, last)),
                        h, levels)
