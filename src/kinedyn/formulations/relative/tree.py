"""The joint-coordinate tree: every tree joint as a chain of one-coordinate *links*.

A tree joint with k coordinates becomes k links, each an elementary motion (rotation about or
translation along a unit axis) in the frame of the link before it; the child body is rigidly
attached to the last one. A link frame is::

    F_k = F_parent(k) . (link_Rf[k], link_rf[k]) . Motion(link_axis[k], q_k)

so with world quantities the motion subspace of link k is ``S_k = (w, v)`` (spatial vector,
angular part first, linear part at the world origin): revolute ``w = s, v = o x s``; prismatic
``w = 0, v = s`` (``s`` the axis and ``o`` the link origin in the world frame).

Joint coordinates are the model's joint coordinates (``model.entries.JOINT_COORDINATES``):
a revolute angle is measured from ``ref_a`` to ``ref_b`` about ``axis_a``, a prismatic
displacement is ``(p_b - p_a) . axis_a``; spherical and universal joints use rotation angles
from the initial relative orientation (x-y-z sequence for spherical, axis_a then axis_b for
universal); a free joint uses three translations along the parent's axes from the initial
position and yaw-pitch-roll (z-y-x) angles from the initial relative orientation. Planar models
are embedded in 3-D (z = 0, revolute axes +z).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import ModelError
from ...model.compiled import CompiledModel
from ...topology import Topology

R_JOINT, P_JOINT = 0, 1
EX, EY, EZ = np.eye(3)


def lift_vector(v) -> np.ndarray:
    """A planar vector as a 3-D one (z = 0); 3-D vectors unchanged."""
    v = np.asarray(v, float)
    return np.array([v[0], v[1], 0.0]) if v.shape[-1] == 2 else v.copy()


def lift_rotation(R) -> np.ndarray:
    R = np.asarray(R, float)
    if R.shape == (2, 2):
        out = np.eye(3)
        out[:2, :2] = R
        return out
    return R.copy()


def frame_from_axis(axis, ref=None) -> np.ndarray:
    """Rotation whose z column is ``axis`` and x column ``ref`` (or any perpendicular)."""
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    if ref is None or np.linalg.norm(ref - z * (z @ ref)) < 1e-9:
        ref = EX if abs(z[0]) < 0.9 else EY
    x = ref - z * (z @ ref)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def rot(axis: int, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


@dataclass
class JointTree:
    """Links (one per coordinate) in base-to-tip order and the bodies attached to them."""
    model: CompiledModel
    topology: Topology
    link_parent: list = field(default_factory=list)
    link_type: list = field(default_factory=list)
    link_axis: list = field(default_factory=list)
    link_Rf: list = field(default_factory=list)
    link_rf: list = field(default_factory=list)
    link_joint: list = field(default_factory=list)      # model joint of each link
    link_component: list = field(default_factory=list)  # 0 angle / 1 displacement / rotation k
    link_name: list = field(default_factory=list)
    q0: list = field(default_factory=list)

    def __post_init__(self):
        m = self.model
        n_body = m.n_body
        self.body_link = np.full(n_body, -1, np.int64)
        self.body_R = np.tile(np.eye(3), (n_body, 1, 1))
        self.body_r = np.zeros((n_body, 3))
        self.joint_links: dict[int, list[int]] = {}
        self.R0 = [lift_rotation(R) for R in m.body_rotation]
        self.p0 = [lift_vector(p) for p in m.body_position]
        topo = self.topology
        order = [0]
        for b in order:                       # breadth-first over the spanning tree
            order.extend(topo.children[b])
        for b in order[1:]:
            self._add_joint(int(topo.parent_joint[b]), int(topo.parent[b]), b)

    # ---- helpers ---------------------------------------------------------------------------
    def point(self, p: int) -> np.ndarray:
        return lift_vector(self.model.point_local[p])

    def _link(self, parent, kind, axis, Rf, rf, joint, comp, q0):
        self.link_parent.append(parent)
        self.link_type.append(kind)
        self.link_axis.append(np.asarray(axis, float))
        self.link_Rf.append(np.asarray(Rf, float))
        self.link_rf.append(np.asarray(rf, float))
        self.link_joint.append(joint)
        self.link_component.append(comp)
        labels = {("revolute", 0): "angle", ("cylindrical", 0): "angle",
                  ("prismatic", 0): "displacement", ("cylindrical", 1): "displacement"}
        jt = self.model.joint_type_name(joint)
        other = {"free": ("x", "y", "angle") if self.model.dim == 2 else
                 ("x", "y", "z", "yaw", "pitch", "roll"),
                 "spherical": ("rx", "ry", "rz"), "universal": ("angle_a", "angle_b")}
        label = labels.get((jt, comp)) or other[jt][comp]
        self.link_name.append(f"{self.model.joint_name[joint]}.{label}")
        self.q0.append(float(q0))
        self.joint_links.setdefault(joint, []).append(len(self.link_parent) - 1)
        return len(self.link_parent) - 1

    def _attach(self, body, link, R, r):
        self.body_link[body] = link
        self.body_R[body] = R
        self.body_r[body] = r

    def _add_joint(self, j: int, a: int, b: int):
        """Links of tree joint j from parent body a to child body b."""
        m = self.model
        jt = m.joint_type_name(j)
        flip = int(m.joint_body_a[j]) != a   # joint written child-to-parent
        if flip and jt not in ("revolute", "spherical", "free", "fixed"):
            raise ModelError(f"joint {m.joint_name[j]!r} ({jt}) is in the spanning tree with "
                             f"body_a {m.body_name[int(m.joint_body_a[j])]!r} as the child; "
                             "write it with the parent (ground side) as body_a for relative "
                             "coordinates", location=f"joints[{j}]")
        sign = -1.0 if flip else 1.0
        pa_i, pb_i = (m.joint_point_b[j], m.joint_point_a[j]) if flip else \
            (m.joint_point_a[j], m.joint_point_b[j])
        La, Ra_l, ra_l = int(self.body_link[a]), self.body_R[a], self.body_r[a]
        RWa, RWb = self.R0[a], self.R0[b]
        RAB0 = RWa.T @ RWb
        pa = self.point(pa_i) if pa_i >= 0 else np.zeros(3)
        pb = self.point(pb_i) if pb_i >= 0 else np.zeros(3)
        rf = ra_l + Ra_l @ pa
        d2 = m.dim == 2
        name = m.joint_name[j]
        if jt in ("revolute", "cylindrical"):
            ax_a = EZ if d2 else np.asarray(m.joint_axis_a[j], float)
            ax_b = EZ if d2 else np.asarray(m.joint_axis_b[j], float)
            ref_a, ref_b = lift_vector(m.joint_ref_a[j]), lift_vector(m.joint_ref_b[j])
            if flip:
                ax_a, ax_b, ref_a, ref_b = ax_b, ax_a, ref_b, ref_a
            Ca, Cb = frame_from_axis(ax_a, ref_a), frame_from_axis(ax_b, ref_b)
            ra_w, rb_w, az_w = RWa @ Ca[:, 0], RWb @ Cb[:, 0], RWa @ Ca[:, 2]
            angle = sign * np.arctan2(np.cross(ra_w, rb_w) @ az_w, ra_w @ rb_w)
            k = self._link(La, R_JOINT, sign * EZ, Ra_l @ Ca, rf, j, 0, angle)
            if jt == "cylindrical":
                disp = (self.p0[b] + RWb @ pb - self.p0[a] - RWa @ pa) @ (RWa @ Ca[:, 2])
                k = self._link(k, P_JOINT, EZ, np.eye(3), np.zeros(3), j, 1, disp)
            self._attach(b, k, Cb.T, -Cb.T @ pb)
        elif jt == "prismatic":
            ax_a = lift_vector(m.joint_axis_a[j])
            Ca = frame_from_axis(ax_a)
            disp = (self.p0[b] + RWb @ pb - self.p0[a] - RWa @ pa) @ (RWa @ ax_a)
            k = self._link(La, P_JOINT, EZ, Ra_l @ Ca, rf, j, 0, disp)
            Rb = Ca.T @ lift_rotation(m.joint_rotation[j])
            self._attach(b, k, Rb, -Rb @ pb)
        elif jt == "spherical":
            k = La
            for c, axis in enumerate((EX, EY, EZ)):
                k = self._link(k, R_JOINT, axis, Ra_l @ RAB0 if c == 0 else np.eye(3),
                               rf if c == 0 else np.zeros(3), j, c, 0.0)
            self._attach(b, k, np.eye(3), -pb)
        elif jt == "universal":
            ax_a, ax_b = np.asarray(m.joint_axis_a[j], float), np.asarray(m.joint_axis_b[j], float)
            Ca, Cb = frame_from_axis(ax_a), frame_from_axis(ax_b)
            k1 = self._link(La, R_JOINT, EZ, Ra_l @ Ca, rf, j, 0, 0.0)
            k2 = self._link(k1, R_JOINT, EZ, Ca.T @ RAB0 @ Cb, np.zeros(3), j, 1, 0.0)
            self._attach(b, k2, Cb.T, -Cb.T @ pb)
        elif jt == "free":
            pAB = RWa.T @ (self.p0[b] - self.p0[a])
            k = La
            trans = (EX, EY) if d2 else (EX, EY, EZ)
            rots = ((2, EZ),) if d2 else ((2, EZ), (1, EY), (0, EX))
            for c, axis in enumerate(trans):
                k = self._link(k, P_JOINT, axis, Ra_l if c == 0 else np.eye(3),
                               ra_l + Ra_l @ pAB if c == 0 else np.zeros(3), j, c, 0.0)
            for c, (_, axis) in enumerate(rots):
                k = self._link(k, R_JOINT, axis, np.eye(3), np.zeros(3), j, len(trans) + c, 0.0)
            self._attach(b, k, RAB0, np.zeros(3))
        elif jt == "fixed":
            RAB = lift_rotation(m.joint_rotation[j])
            if flip:
                RAB = RAB.T
            Rb = Ra_l @ RAB
            self._attach(b, La, Rb, rf - Rb @ pb)
        else:
            raise ModelError(f"joint {name!r}: a {jt} joint cannot be a spanning-tree joint in "
                             "relative coordinates (it leaves the child body's pose "
                             "undetermined); make it a loop-closure joint by giving the body "
                             "another path to the ground", location=f"joints[{j}]")

    # ---- results ----------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.link_parent)

    def ancestors(self, link: int) -> list[int]:
        """Links from ``link`` down to the ground (``link`` first)."""
        out = []
        while link >= 0:
            out.append(link)
            link = self.link_parent[link]
        return out

    def coupling(self) -> np.ndarray:
        """Boolean (n, n) link coupling of the mass matrix: i ancestor of j or j of i."""
        C = np.zeros((self.n, self.n), bool)
        for k in range(self.n):
            for a in self.ancestors(k):
                C[k, a] = C[a, k] = True
        return C
