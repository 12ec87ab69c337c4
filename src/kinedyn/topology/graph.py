"""The body-joint graph of a compiled model: spanning tree, cut joints, loops, mobility.

Bodies are vertices and joints are edges (a multigraph: two bodies may share several joints).
The spanning tree is grown breadth-first from the ground, so every body hangs from the ground by
the shortest possible branch; where a body can be reached by several joints at the same depth,
the joint that removes more freedoms (more constraint equations) goes into the tree, so the cut
joints, whose equations become loop-closure constraints in relative coordinates, are the cheap
ones (sparse-relative-coordinates paper, section 3: short branches, few closure equations).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from ..model.compiled import JOINT_CODE, CompiledModel, compiled_model

#: Constraint equations per joint type (planar, spatial): Gruebler-Kutzbach weights.
JOINT_CONSTRAINTS = {
    2: {"revolute": 2, "prismatic": 2, "fixed": 3, "rod": 1, "free": 0},
    3: {"revolute": 5, "prismatic": 5, "fixed": 6, "rod": 1, "spherical": 3, "universal": 4,
        "cylindrical": 4, "free": 0},
}
#: Equations removed by each driver kind (joint, distance, pose).
DRIVER_EQUATIONS = {2: (1, 1, 3), 3: (1, 1, 6)}


@dataclass(frozen=True)
class Loop:
    """An independent kinematic loop: the cut joint and the tree joints that close with it."""
    cut_joint: int
    joints: tuple[int, ...]   # joints around the loop, the cut joint first
    bodies: tuple[int, ...]   # bodies around the loop


@dataclass(frozen=True)
class Mobility:
    """Gruebler-Kutzbach count.

    ``mobility`` is the free motion of the unactuated mechanism, ``idle`` the part of it that
    moves no other body (a link held only by two ball joints spinning about its own axis),
    ``drivers`` the equations the drivers add, and ``dof`` what is left after the drivers.
    """
    dim: int
    n_moving_bodies: int
    joint_equations: int
    mobility: int
    idle: tuple[str, ...]
    drivers: int

    @property
    def dof(self) -> int:
        return self.mobility - self.drivers

    @property
    def effective(self) -> int:
        """Mobility without the idle spins."""
        return self.mobility - len(self.idle)

    def describe(self) -> str:
        text = f"{self.mobility}"
        if self.idle:
            text = f"{self.effective} + {len(self.idle)} idle ({', '.join(self.idle)})"
        return text


class Topology:
    """Graph analysis of a :class:`CompiledModel` (never mutates it)."""

    def __init__(self, model: CompiledModel):
        self.model = model = compiled_model(model)
        self.dim = model.dim
        g = nx.MultiGraph()
        g.add_nodes_from(range(model.n_body))
        for j in range(model.n_joint):
            g.add_edge(int(model.joint_body_a[j]), int(model.joint_body_b[j]), key=j)
        self.graph = g
        self.parent, self.parent_joint, self.depth = self._spanning_tree()

    def _spanning_tree(self):
        m = self.model
        n = m.n_body
        weights = JOINT_CONSTRAINTS[self.dim]
        depth = np.full(n, -1, np.int64)
        depth[0] = 0
        queue = deque([0])
        while queue:  # breadth-first depths from the ground
            b = queue.popleft()
            for nb in sorted(self.graph.neighbors(b)):
                if depth[nb] < 0:
                    depth[nb] = depth[b] + 1
                    queue.append(nb)
        parent = np.full(n, -1, np.int64)
        parent_joint = np.full(n, -1, np.int64)
        for b in range(1, n):
            best = None
            for a, _, j in self.graph.edges(b, keys=True):
                other = int(m.joint_body_a[j] if m.joint_body_b[j] == b else m.joint_body_b[j])
                if depth[other] != depth[b] - 1:
                    continue
                key = (-weights[m.joint_type_name(j)], j)
                if best is None or key < best[0]:
                    best = (key, j, other)
            parent[b], parent_joint[b] = best[2], best[1]
        return parent, parent_joint, depth

    # ---- tree and loops --------------------------------------------------------------------------
    @cached_property
    def tree_joints(self) -> tuple[int, ...]:
        return tuple(sorted(int(j) for j in self.parent_joint[1:]))

    @cached_property
    def cut_joints(self) -> tuple[int, ...]:
        tree = set(self.tree_joints)
        return tuple(j for j in range(self.model.n_joint) if j not in tree)

    def path_to_ground(self, body: int) -> list[int]:
        """Joints from ``body`` down to the ground along the tree."""
        out = []
        while body != 0:
            out.append(int(self.parent_joint[body]))
            body = int(self.parent[body])
        return out

    @cached_property
    def loops(self) -> tuple[Loop, ...]:
        m = self.model
        loops = []
        for c in self.cut_joints:
            a, b = int(m.joint_body_a[c]), int(m.joint_body_b[c])
            pa, pb = self._body_path(a), self._body_path(b)
            common = set(pa) & set(pb)
            top = next(x for x in pa if x in common)  # lowest common ancestor
            up = pa[:pa.index(top) + 1]
            down = pb[:pb.index(top)]
            bodies = tuple(up + down[::-1])
            joints = [c]
            for x in pa[:pa.index(top)]:
                joints.append(int(self.parent_joint[x]))
            for x in pb[:pb.index(top)][::-1]:
                joints.append(int(self.parent_joint[x]))
            loops.append(Loop(c, tuple(joints), bodies))
        return tuple(loops)

    def _body_path(self, body):
        out = [body]
        while body != 0:
            body = int(self.parent[body])
            out.append(body)
        return out

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        kids = [[] for _ in range(self.model.n_body)]
        for b in range(1, self.model.n_body):
            kids[int(self.parent[b])].append(b)
        return tuple(tuple(k) for k in kids)

    # ---- mobility ------------------------------------------------------------------------------
    @cached_property
    def mobility(self) -> Mobility:
        m, d = self.model, self.dim
        body_dof = 3 if d == 2 else 6
        eq = sum(JOINT_CONSTRAINTS[d][m.joint_type_name(j)] for j in range(m.n_joint))
        moving = m.n_body - 1
        drivers = sum(DRIVER_EQUATIONS[d][int(k)] for k in m.driver_kind)
        return Mobility(d, moving, eq, body_dof * moving - eq, self._idle_spins(), drivers)

    def _idle_spins(self) -> tuple[str, ...]:
        """Serial chains of bodies held only by two ball joints (spherical or rod ends).

        Along a chain of bodies that each have exactly two joints, the bodies between two
        consecutive ball joints can turn rigidly about the line through the two ball centres
        without moving anything else (the joints between them only constrain relative motion):
        Gruebler counts that spin as a degree of freedom, but it is idle. Examples: an S-S
        link, an S-P-S leg of a Gough-Stewart platform. Bodies carrying a pose or distance
        driver are never idle.
        """
        m = self.model
        if self.dim == 2:
            return ()
        ball = (JOINT_CODE["spherical"], JOINT_CODE["rod"])
        joints_of = [[] for _ in range(m.n_body)]
        for j in range(m.n_joint):
            joints_of[int(m.joint_body_a[j])].append(j)
            joints_of[int(m.joint_body_b[j])].append(j)
        inner = {b for b in range(1, m.n_body) if len(joints_of[b]) == 2}
        driven = {int(m.driver_body[k]) for k in range(m.n_driver)}
        for points in (m.driver_point_a, m.driver_point_b):
            driven |= {int(m.point_body[p]) for p in points if p >= 0}
        seen: set[int] = set()
        idle = []
        for start in sorted(inner):
            if start in seen:
                continue
            bodies, joints = self._chain(start, inner, joints_of)
            seen.update(bodies)
            # joints[i] precedes bodies[i]; joints[-1] ends the chain
            balls = [i for i, j in enumerate(joints) if m.joint_type[j] in ball]
            for lo, hi in zip(balls, balls[1:]):
                group = bodies[lo:hi]
                if driven & set(group):
                    continue
                centres = [self._world_joint_point(joints[lo], group[0]),
                           self._world_joint_point(joints[hi], group[-1])]
                if np.linalg.norm(centres[0] - centres[1]) < 1e-9:
                    continue
                names = sorted(m.body_name[b] for b in group)
                idle.append(f"{'+'.join(names)} spin")
        return tuple(sorted(idle))

    def _chain(self, start, inner, joints_of):
        """The maximal chain of two-joint bodies through ``start``, in order: bodies
        ``b_0..b_k`` and joints ``j_0..j_k+1`` with ``j_i`` before ``b_i``."""
        sides = []
        for first in joints_of[start]:
            bodies, joints, body, j = [], [first], start, first
            while True:
                other = self._other_body(j, body)
                if other not in inner or other == start or other in bodies:
                    break
                bodies.append(other)
                j = next(k for k in joints_of[other] if k != j)
                joints.append(j)
                body = other
            sides.append((bodies, joints))
        (left_b, left_j), (right_b, right_j) = sides
        return left_b[::-1] + [start] + right_b, left_j[::-1] + right_j

    def _other_body(self, j: int, body: int) -> int:
        m = self.model
        return int(m.joint_body_b[j] if m.joint_body_a[j] == body else m.joint_body_a[j])

    def _world_joint_point(self, j: int, body: int) -> np.ndarray:
        """Initial world position of joint ``j``'s point on ``body``."""
        m = self.model
        p = int(m.joint_point_a[j] if m.joint_body_a[j] == body else m.joint_point_b[j])
        return m.body_position[body] + m.body_rotation[body] @ m.point_local[p]

    # ---- reports ---------------------------------------------------------------------------------
    def summary(self) -> dict:
        m = self.model
        mob = self.mobility
        return {
            "bodies": m.n_body - 1, "joints": m.n_joint, "loops": len(self.loops),
            "cut_joints": [m.joint_name[j] for j in self.cut_joints],
            "mobility": mob.mobility, "idle": list(mob.idle),
            "drivers": mob.drivers, "dof": mob.dof,
        }
