"""Relative (joint) coordinates on the spanning tree with loop-closure constraints.

Sparse-relative paper (Choi, Yoo, Im), section 2: the equations of motion

    a(q) qdd + b qd = f + B^T lam   (1),     Phi(q) = 0   (2),     B qdd = gamma   (4)

with q the joint coordinates of the spanning tree (:mod:`kinedyn.topology`), a(q) the mass
matrix by the composite-rigid-body algorithm, ``f - b qd`` by recursive Newton-Euler, and the
cut joints closing the loops as constraints (see :mod:`.kernels`, :mod:`.data`, :mod:`.tree`).
It implements the compiled protocol, so :class:`~kinedyn.dynamics.Dynamics` and
:class:`~kinedyn.kinematics.Kinematics` run on it unchanged (``M = a``, ``Q = f - b qd``,
``phi_q = B``); the paper's solvers of eqs. (3), (5), (6) are in :mod:`kinedyn.linalg.relative`
and :mod:`kinedyn.dynamics.relative`.

>>> import kinedyn
>>> f = Relative(kinedyn.models.get("four-bar").compile())
>>> f.n_q, f.n_c, f.cut_joints
(3, 2, ('C',))
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sps

from ...errors import ModelError, coordinates
from ...io.angles import unwrap
from ...model.compiled import CompiledModel, compiled_model
from ...topology import Topology
from ...topology.numbering import number_coordinates
from . import kernels as K
from .data import RelativeData, RelativeWork, build_data, cut_equations, driver_equations, make_work
from .tree import JointTree


class Relative:
    """A model in relative joint coordinates.

    Parameters
    ----------
    model: the compiled model.
    numbering: coordinate numbering, ``branch`` (paper's rule, default), ``tree`` or ``rcm``
        (see :mod:`kinedyn.topology.numbering`).

    Attributes: ``n_q``, ``n_c``, ``q0`` (from the initial poses, not yet assembled),
    ``coordinate_names``, ``constraint_names``, ``data`` (RelativeData), ``tree``.
    """

    name = "relative"

    def __init__(self, model: CompiledModel, numbering: str = "branch"):
        self.model = model = compiled_model(model)
        self.dim = model.dim
        self.topology = topo = Topology(model)
        self.tree = tree = JointTree(model, topo)
        self.numbering = numbering
        self.coord = coord = number_coordinates(tree.link_parent, numbering)
        self.cut_joints = tuple(model.joint_name[j] for j in topo.cut_joints)
        eqs = [e for j in topo.cut_joints for e in cut_equations(tree, j)]
        eqs += driver_equations(tree)
        self.equations = eqs
        self.n_q, self.n_c = tree.n, len(eqs)
        self.q0 = np.zeros(self.n_q)
        self.q0[coord] = tree.q0
        names = [""] * self.n_q
        for k, nm in enumerate(tree.link_name):
            names[coord[k]] = nm
        self.coordinate_names = tuple(names)
        self.constraint_names = tuple(e.name for e in eqs)
        self.constraint_owner = tuple(e.owner for e in eqs)
        self.data: RelativeData = build_data(tree, eqs, coord)

    def make_work(self) -> RelativeWork:
        return make_work(self.data)

    # ---- patterns --------------------------------------------------------------------------
    @cached_property
    def jacobian_pattern(self) -> sps.csr_matrix:
        d = self.data
        return sps.csr_matrix((np.ones(len(d.jac_indices)), d.jac_indices, d.jac_indptr),
                              shape=(self.n_c, self.n_q))

    @cached_property
    def mass_pattern(self) -> sps.csr_matrix:
        d = self.data
        return sps.csr_matrix((np.ones(len(d.mass_indices)), d.mass_indices, d.mass_indptr),
                              shape=(self.n_q, self.n_q))

    # ---- evaluations from Python (dense, for tests and set-up) ---------------------------------
    def mass(self, q) -> np.ndarray:
        vals = np.zeros(len(self.data.mass_indices))
        K.mass_values(self.data, self.make_work(), coordinates(self, q, "q"), vals, True)
        return sps.csr_matrix((vals, self.data.mass_indices, self.data.mass_indptr),
                              shape=(self.n_q, self.n_q)).toarray()

    def forces(self, q, qd, t: float = 0.0) -> np.ndarray:
        out = np.zeros(self.n_q)
        K.force_values(self.data, self.make_work(), coordinates(self, q, "q"),
                       coordinates(self, qd, "qd"), float(t), out, True)
        return out

    def inverse_dynamics(self, q, qd, qdd, t: float = 0.0) -> np.ndarray:
        """tau = a qdd + b qd - f of the tree (no loop closure), by RNEA."""
        out = np.zeros(self.n_q)
        K.inverse_dynamics(self.data, self.make_work(), *(coordinates(self, x, name) for x, name
                                                          in ((q, "q"), (qd, "qd"), (qdd, "qdd"))),
                           float(t), out)
        return out

    def phi(self, q, t: float = 0.0) -> np.ndarray:
        out = np.zeros(self.n_c)
        K.phi_rows(self.data, self.make_work(), coordinates(self, q, "q"), float(t),
                   np.arange(self.n_c), out)
        return out

    def phi_q(self, q, t: float = 0.0) -> np.ndarray:
        vals = np.zeros(len(self.data.jac_indices))
        K.jacobian_rows(self.data, self.make_work(), coordinates(self, q, "q"), float(t),
                        np.arange(self.n_c), vals, True)
        return sps.csr_matrix((vals, self.data.jac_indices, self.data.jac_indptr),
                              shape=(self.n_c, self.n_q)).toarray()

    def phi_t(self, q, t: float = 0.0) -> np.ndarray:
        out = np.zeros(self.n_c)
        K.phi_t_rows(self.data, self.make_work(), coordinates(self, q, "q"), float(t),
                     np.arange(self.n_c), out)
        return out

    def gamma(self, q, qd, t: float = 0.0) -> np.ndarray:
        out = np.zeros(self.n_c)
        K.gamma_rows(self.data, self.make_work(), coordinates(self, q, "q"),
                     coordinates(self, qd, "qd"),
                     float(t), np.arange(self.n_c), out, True)
        return out

    # ---- outputs -------------------------------------------------------------------------------
    def _states(self, Q, QD, QDD):
        Q, QD, QDD = (np.atleast_2d(np.asarray(x, float)) for x in (Q, QD, QDD))
        m, n = len(Q), self.n_q
        for name, X in (("Q", Q), ("QD", QD), ("QDD", QDD)):  # (read unchecked by the kernel)
            if X.shape != (m, n):
                raise ModelError(f"{name} needs {m} rows of {n} coordinates like Q, got shape "
                                 f"{X.shape}")
        R, P = np.zeros((m, n, 3, 3)), np.zeros((m, n, 3))
        V, A = np.zeros((m, n, 6)), np.zeros((m, n, 6))
        T = np.zeros(m)
        K.trajectory(self.data, self.make_work(), Q, QD, QDD, R, P, V, A, T)
        return R, P, V, A, T

    def body_motion(self, Q, QD, QDD) -> dict:
        """World frames and rates of every body (n, n_body, ...): ``R``, ``origin``,
        ``origin_d``, ``origin_dd``, ``omega``, ``alpha`` (3-vectors), ``link`` frames too."""
        R, P, V, A, T = self._states(Q, QD, QDD)
        m, nb = len(R), self.model.n_body
        out = {k: np.zeros((m, nb, 3)) for k in ("origin", "origin_d", "origin_dd", "omega",
                                                 "alpha")}
        out["R"] = np.tile(np.eye(3), (m, nb, 1, 1))
        tr = self.tree
        for b in range(nb):
            k = int(tr.body_link[b])
            if k < 0:
                out["R"][:, b] = tr.body_R[b]
                out["origin"][:, b] = tr.body_r[b]
                continue
            Rl = R[:, k]
            out["R"][:, b] = Rl @ tr.body_R[b]
            o = P[:, k] + Rl @ tr.body_r[b]
            w, al = V[:, k, :3], A[:, k, :3]
            vo = V[:, k, 3:] + np.cross(w, o)
            out["origin"][:, b], out["origin_d"][:, b] = o, vo
            out["origin_dd"][:, b] = A[:, k, 3:] + np.cross(al, o) + np.cross(w, vo)
            out["omega"][:, b], out["alpha"][:, b] = w, al
        out["kinetic"] = T
        return out

    def point_motion(self, Q, QD, QDD):
        """World positions, velocities, accelerations of every model point (n, n_point, 3)."""
        bm = self.body_motion(Q, QD, QDD)
        m = self.model
        pl = np.array([np.pad(m.point_local[p], (0, 3 - self.dim)) for p in range(m.n_point)])
        b = np.asarray(m.point_body, np.int64)
        r = np.einsum("nbij,bj->nbi", bm["R"][:, b], pl)
        x = bm["origin"][:, b] + r
        w, al = bm["omega"][:, b], bm["alpha"][:, b]
        v = bm["origin_d"][:, b] + np.cross(w, r)
        a = bm["origin_dd"][:, b] + np.cross(al, r) + np.cross(w, np.cross(w, r))
        return x, v, a

    def observables(self, Q, QD, QDD, names=None) -> dict[str, np.ndarray]:
        """Channels ``q.*``, ``body.*``, ``point.*`` (with ``_d``/``_dd``), like natural
        (all of them: ``names``, the channels wanted, is accepted as natural's is)."""
        Q, QD, QDD = (np.atleast_2d(x) for x in (Q, QD, QDD))
        m, d = self.model, self.dim
        out: dict[str, np.ndarray] = {}
        for i, name in enumerate(self.coordinate_names):
            out[f"q.{name}"], out[f"q.{name}_d"], out[f"q.{name}_dd"] = Q[:, i], QD[:, i], QDD[:, i]
        bm = self.body_motion(Q, QD, QDD)
        comps = "xyz"[:d]
        for b in range(1, m.n_body):
            nm = m.body_name[b]
            for k, ch in enumerate(comps):
                out[f"body.{nm}.{ch}"] = bm["origin"][:, b, k]
                out[f"body.{nm}.{ch}_d"] = bm["origin_d"][:, b, k]
                out[f"body.{nm}.{ch}_dd"] = bm["origin_dd"][:, b, k]
            R = bm["R"][:, b]
            if d == 2:
                out[f"body.{nm}.angle"] = unwrap(np.arctan2(R[:, 1, 0], R[:, 0, 0]))
                out[f"body.{nm}.angle_d"] = bm["omega"][:, b, 2]
                out[f"body.{nm}.angle_dd"] = bm["alpha"][:, b, 2]
            else:
                out[f"body.{nm}.yaw"] = unwrap(np.arctan2(R[:, 1, 0], R[:, 0, 0]))
                out[f"body.{nm}.pitch"] = np.arcsin(np.clip(-R[:, 2, 0], -1, 1))
                out[f"body.{nm}.roll"] = unwrap(np.arctan2(R[:, 2, 1], R[:, 2, 2]))
                for k, ch in enumerate(comps):
                    out[f"body.{nm}.omega_{ch}"] = bm["omega"][:, b, k]
                    out[f"body.{nm}.alpha_{ch}"] = bm["alpha"][:, b, k]
        x, v, a = self.point_motion(Q, QD, QDD)
        for p in range(m.n_point):
            for k, ch in enumerate(comps):
                out[f"point.{m.point_name[p]}.{ch}"] = x[:, p, k]
                out[f"point.{m.point_name[p]}.{ch}_d"] = v[:, p, k]
                out[f"point.{m.point_name[p]}.{ch}_dd"] = a[:, p, k]
        for k, nm in enumerate(self.tree.link_name):
            j = nm.rsplit(".", 1)[-1]
            if j in ("angle", "displacement"):
                i = self.coord[k]
                out[f"joint.{nm}"], out[f"joint.{nm}_d"], out[f"joint.{nm}_dd"] = (
                    Q[:, i], QD[:, i], QDD[:, i])
        return out

    def coordinates_from_poses(self, R, p, q_guess=None) -> np.ndarray:
        """Joint coordinates that put every body at the given poses ``R (n_body, d, d)``,
        ``p (n_body, d)`` (for instance a configuration from another formulation): a least-
        squares fit from ``q_guess`` (default q0), so angles keep their branch."""
        import scipy.optimize as so
        d = self.dim
        target = np.concatenate([np.asarray(R, float)[1:, :d, :d].ravel(),
                                 np.asarray(p, float)[1:, :d].ravel()])

        def residual(q):
            bm = self.body_motion(q[None], np.zeros((1, self.n_q)), np.zeros((1, self.n_q)))
            x = np.concatenate([bm["R"][0, 1:, :d, :d].ravel(), bm["origin"][0, 1:, :d].ravel()])
            return x - target
        sol = so.least_squares(residual, self.q0 if q_guess is None else q_guess, xtol=1e-15,
                               ftol=1e-15, gtol=1e-15)
        return sol.x

    def energies(self, Q, QD) -> dict:
        """Kinetic, gravity potential and spring energy along a trajectory (n,) each."""
        m = self.model
        Q, QD = np.atleast_2d(Q), np.atleast_2d(QD)
        bm = self.body_motion(Q, QD, np.zeros_like(Q))
        g = np.pad(m.gravity, (0, 3 - self.dim))
        com = np.array([np.pad(m.body_com[b], (0, 3 - self.dim)) for b in range(m.n_body)])
        c = bm["origin"] + np.einsum("nbij,bj->nbi", bm["R"], com)
        gravity = -np.einsum("b,nbk,k->n", m.body_mass[1:], c[:, 1:], g)
        spring = np.zeros(len(Q))
        if len(m.spring_name):
            x, _, _ = self.point_motion(Q, QD, np.zeros_like(Q))
            L = np.linalg.norm(x[:, m.spring_point_b] - x[:, m.spring_point_a], axis=-1)
            spring = 0.5 * np.sum(m.spring_stiffness * (L - m.spring_free_length) ** 2, axis=1)
        return {"kinetic": bm["kinetic"], "gravity": gravity, "spring": spring}


__all__ = ["Relative", "RelativeData", "RelativeWork"]
