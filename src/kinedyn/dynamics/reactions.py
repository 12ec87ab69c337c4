"""Joint reactions and actuator efforts by Newton-Euler, from any formulation's motion.

For every moving body b (world frame, moments about its centre of mass c):

    sum F = m a_c,        sum (r - c) x F + sum T = I_w alpha + omega x I_w omega

with the applied loads (gravity, point forces, springs, joint torques/forces) known and the joint
wrenches unknown. Each joint j carries an unknown force F_j and torque T_j acting on its body_b at
its point_b (and -F_j, -T_j on body_a); the joint's freedoms remove the wrench components that
would do work on the allowed motion (a revolute joint transmits no torque about its axis, a
prismatic joint no force along it, ...). A driver adds back the component along the driven
freedom: that component is the actuator effort (the inverse-dynamics result). The system is
solved in the least-squares sense per time step; with redundant constraints the reactions are
not unique and the minimum-norm ones are reported.

This uses only body motion (position, velocity and acceleration of each body), so every
formulation reports comparable reactions.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ..errors import ModelError
from ..model.compiled import COMPONENT_CODE, DRIVER_CODE, FRAME_CODE, JOINT_CODE

_J = JOINT_CODE


def _cross2(a, b):
    return a[0] * b[1] - a[1] * b[0]


class ReactionSolver:
    """Unknown layout and per-step assembly of the Newton-Euler equations of a model.

    ``actuators`` (optional, ``{joint index: {component codes}}``) names the actuated joint
    freedoms instead of the model's drivers: the drivers then only prescribe the motion (they
    transmit nothing) and the actuators' efforts are unknowns - inverse dynamics of a mechanism
    whose motion is given by, e.g., a pose driver on its end effector.
    """

    def __init__(self, f, actuators: dict | None = None):
        self.f = f
        m = self.model = f.model
        d = self.d = m.dim
        self.nf, self.nt = d, (1 if d == 2 else 3)
        self.nw = self.nf + self.nt
        driven = {}  # joint -> set of driven components
        for k in range(m.n_driver):
            if m.driver_kind[k] == DRIVER_CODE["joint"]:
                driven.setdefault(int(m.driver_joint[k]), set()).add(int(m.driver_component[k]))
        self.use_drivers = actuators is None
        self.driven = driven if actuators is None else {j: set(c) for j, c in actuators.items()}
        self.joints = [j for j in range(m.n_joint) if m.joint_type[j] != _J["free"]]
        self.cols = {}
        col = 0
        for j in self.joints:
            self.cols["joint", j] = col
            col += self.nw
        for k in range(m.n_driver if self.use_drivers else 0):
            kind = int(m.driver_kind[k])
            if kind == DRIVER_CODE["distance"]:
                self.cols["driver", k] = col
                col += 1
            elif kind == DRIVER_CODE["pose"]:
                self.cols["driver", k] = col
                col += self.nw
        self.n_unknown = col

    # ---- per step --------------------------------------------------------------------------------
    def solve_step(self, motion, k, P, PV, F, user=None):
        """Reaction vector at step k (motion from body_motion, P/PV point positions/velocities,
        F the model functions of time at this step (n_function, 3), ``user`` the user forces
        (:meth:`body_loads`))."""
        A = self.matrix(motion, k, P)
        rhs = np.zeros(len(A))
        self.body_loads(k, motion, P, PV, F, rhs, motion["R"][k], motion["com"][k], user)
        x, *_ = np.linalg.lstsq(A, rhs, rcond=None)
        return x, float(np.abs(A @ x - rhs).max(initial=0.0))

    def matrix(self, motion, k, P) -> np.ndarray:
        """The Newton-Euler equations' matrix at step k over the unknowns: one force and torque
        block per moving body (the right-hand side: :meth:`body_loads`), then the rows that
        say a joint transmits nothing along its free (unactuated) directions."""
        m, d = self.model, self.d
        nb = m.n_body
        nw = self.nw
        rows_eq = []
        A_body = np.zeros((nw * (nb - 1), self.n_unknown))
        R = motion["R"][k]
        com = motion["com"][k]

        def add_wrench(body, cols, point, force_map, torque_map):
            """Add the contribution of unknowns `cols` (force map (d, n), torque map (nt, n))
            applied at `point` to the equations of `body` (sign included in the maps)."""
            if body == 0:
                return
            r0 = nw * (body - 1)
            arm = point - com[body]
            A_body[r0:r0 + d, cols] += force_map
            if d == 2:
                A_body[r0 + d, cols] += arm[0] * force_map[1] - arm[1] * force_map[0] + torque_map[0]
            else:
                A_body[r0 + d:r0 + nw, cols] += np.cross(arm, force_map.T).T + torque_map

        Id = np.eye(d)
        It = np.eye(self.nt)
        for j in self.joints:
            c0 = self.cols["joint", j]
            cols = np.arange(c0, c0 + nw)
            a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
            pb = P[k, m.joint_point_b[j]]
            fm = np.hstack([Id, np.zeros((d, self.nt))])
            tm = np.hstack([np.zeros((self.nt, d)), It])
            if m.joint_type[j] == _J["rod"]:  # force on b at p_b, reaction on a at p_a
                pa = P[k, m.joint_point_a[j]]
                add_wrench(b, cols, pb, fm, tm)
                add_wrench(a, cols, pa, -fm, -tm)
            else:
                add_wrench(b, cols, pb, fm, tm)
                add_wrench(a, cols, pb, -fm, -tm)
            for row in self._restrictions(j, k, motion, P):
                full = np.zeros(self.n_unknown)
                full[cols] = row
                rows_eq.append(full)
        for kk in range(m.n_driver if self.use_drivers else 0):
            kind = int(m.driver_kind[kk])
            if kind == DRIVER_CODE["distance"]:
                c0 = self.cols["driver", kk]
                pa_i, pb_i = int(m.driver_point_a[kk]), int(m.driver_point_b[kk])
                e = P[k, pb_i] - P[k, pa_i]
                e = e / max(np.linalg.norm(e), 1e-300)
                zt = np.zeros((self.nt, 1))
                add_wrench(int(m.point_body[pb_i]), [c0], P[k, pb_i], e[:, None], zt)
                add_wrench(int(m.point_body[pa_i]), [c0], P[k, pa_i], -e[:, None], zt)
            elif kind == DRIVER_CODE["pose"]:
                c0 = self.cols["driver", kk]
                body = int(m.driver_body[kk])
                origin = com[body] - R[body] @ m.body_com[body]
                add_wrench(body, np.arange(c0, c0 + nw), origin,
                           np.hstack([Id, np.zeros((d, self.nt))]),
                           np.hstack([np.zeros((self.nt, d)), It]))
        return np.vstack([A_body] + ([np.array(rows_eq)] if rows_eq else []))

    def _axis_world(self, j, k, motion, side):
        m = self.model
        body = int(m.joint_body_a[j] if side == "a" else m.joint_body_b[j])
        local = m.joint_axis_a[j] if side == "a" else m.joint_axis_b[j]
        R = motion["R"][k][body] if body else np.eye(self.d)
        return R @ local

    def _restrictions(self, j, k, motion, P):
        """Rows (over the joint's (F, T) unknowns) that must vanish: no wrench along freedoms."""
        m, d, nt = self.model, self.d, self.nt
        t = int(m.joint_type[j])
        driven = self.driven.get(j, set())
        out = []

        def force_along(v):
            return np.concatenate([v, np.zeros(nt)])

        def torque_along(v):
            return np.concatenate([np.zeros(d), v])
        if t == _J["fixed"]:
            return out
        if d == 2:
            if t == _J["revolute"] and COMPONENT_CODE["angle"] not in driven:
                out.append(torque_along(np.ones(1)))
            if t == _J["prismatic"] and COMPONENT_CODE["displacement"] not in driven:
                out.append(force_along(self._axis_world(j, k, motion, "a")))
            if t == _J["rod"]:
                e = P[k, m.joint_point_b[j]] - P[k, m.joint_point_a[j]]
                out.append(force_along(np.array([-e[1], e[0]])))
                out.append(torque_along(np.ones(1)))
            return out
        axis = self._axis_world(j, k, motion, "a") if t in (
            _J["revolute"], _J["prismatic"], _J["cylindrical"], _J["universal"]) else None
        if t in (_J["revolute"], _J["cylindrical"]) and COMPONENT_CODE["angle"] not in driven:
            out.append(torque_along(axis))
        if t in (_J["prismatic"], _J["cylindrical"]) and \
                COMPONENT_CODE["displacement"] not in driven:
            out.append(force_along(axis))
        if t == _J["spherical"]:
            out += [torque_along(v) for v in np.eye(3)]
        if t == _J["universal"]:
            out.append(torque_along(axis))
            out.append(torque_along(self._axis_world(j, k, motion, "b")))
        if t == _J["rod"]:
            e = P[k, m.joint_point_b[j]] - P[k, m.joint_point_a[j]]
            e = e / np.linalg.norm(e)
            n1 = np.cross(e, np.eye(3)[np.argmin(np.abs(e))])
            n1 /= np.linalg.norm(n1)
            out += [force_along(n1), force_along(np.cross(e, n1))]
            out += [torque_along(v) for v in np.eye(3)]
        return out

    def body_loads(self, k, motion, P, PV, F, b, R, com, user=None):
        """Inertial loads minus applied loads (gravity, point forces, springs, joint forces,
        user forces: ``user`` = (points, forces (n, n_up, d)) of :func:`user_point_loads`)
        of every moving body at step k into ``b`` (n_body - 1 blocks of force, then torque
        about the centre of mass)."""
        m, d, nw = self.model, self.d, self.nw
        acc, om, al = motion["com_dd"][k], motion["omega"][k], motion["alpha"][k]
        for body in range(1, m.n_body):
            r0 = nw * (body - 1)
            mass = m.body_mass[body]
            b[r0:r0 + d] = mass * (acc[body] - m.gravity)
            if d == 2:
                b[r0 + d] = m.body_inertia[body] * al[body]
            else:
                Iw = R[body] @ m.body_inertia[body] @ R[body].T
                b[r0 + d:r0 + nw] = Iw @ al[body] + np.cross(om[body], Iw @ om[body])

        def load(body, point, force, torque=None):
            if body == 0:
                return
            r0 = nw * (body - 1)
            b[r0:r0 + d] -= force
            arm = point - com[body]
            if d == 2:
                b[r0 + d] -= _cross2(arm, force) + (0.0 if torque is None else torque)
            else:
                b[r0 + d:r0 + nw] -= np.cross(arm, force) + (0.0 if torque is None else torque)
        for i in range(len(m.point_force_name)):
            body, p = int(m.point_force_body[i]), int(m.point_force_point[i])
            force = np.array([F[fid, 0] for fid in m.point_force_function[i]])
            if m.point_force_frame[i] == FRAME_CODE["body"]:
                force = R[body] @ force
            load(body, P[k, p], force)
        for i in range(len(m.spring_name)):
            pa, pb = int(m.spring_point_a[i]), int(m.spring_point_b[i])
            e = P[k, pb] - P[k, pa]
            length = np.linalg.norm(e)
            if length < 1e-12:
                continue
            u = e / length
            rate = u @ (PV[k, pb] - PV[k, pa])
            tension = m.spring_stiffness[i] * (length - m.spring_free_length[i]) + \
                m.spring_damping[i] * rate
            if m.spring_function[i] >= 0:
                tension -= F[m.spring_function[i], 0]
            load(int(m.point_body[pb]), P[k, pb], -tension * u)
            load(int(m.point_body[pa]), P[k, pa], tension * u)
        for i in range(len(m.joint_force_name)):
            j = int(m.joint_force_joint[i])
            value = F[m.joint_force_function[i], 0]
            a, bb = int(m.joint_body_a[j]), int(m.joint_body_b[j])
            pb = P[k, m.joint_point_b[j]]
            axis = self._axis_world(j, k, motion, "a")
            if m.joint_force_component[i] == COMPONENT_CODE["angle"] and \
                    m.joint_type[j] != JOINT_CODE["prismatic"]:
                torque = value if d == 2 else value * axis  # +tau on b, -tau on a
                zero = np.zeros(d)
                load(bb, pb, zero, torque)
                load(a, pb, zero, -torque)
            else:
                load(bb, pb, value * axis)
                load(a, pb, -value * axis)
        for i, p in enumerate(() if user is None else user[0]):
            load(int(m.point_body[p]), P[k, p], user[1][k, i])


def reactions(f, times, Q, QD, QDD, actuators: dict | None = None,
              reference: bool = False) -> tuple[dict, np.ndarray]:
    """Reaction and effort channels along a trajectory, and the per-step equation residual
    (``actuators``: see :class:`ReactionSolver`; their efforts are ``effort.<joint>``).
    The equations of every sample are assembled and solved in one compiled call
    (:mod:`.reactions_kernel`); ``reference=True`` uses :meth:`ReactionSolver.solve_step`
    (NumPy, per sample) instead. Relative coordinates compute them from their multipliers and a
    backward pass (:mod:`.relative_reactions`)."""
    if getattr(f, "name", "") == "relative":
        if actuators is not None:
            raise ModelError("actuated joints instead of drivers (inverse dynamics, holding "
                             "efforts) need the natural formulation; relative coordinates "
                             "report the drivers' efforts")
        from .relative_reactions import relative_reactions
        return relative_reactions(f, times, Q, QD, QDD)
    solver = ReactionSolver(f, actuators)
    m, d = f.model, f.dim
    motion = f.body_motion(Q, QD, QDD)
    P, PV = f.point_trajectory(Q, QD)
    user = user_point_loads(m, times, P, PV)
    X = np.zeros((len(times), solver.n_unknown))
    residual = np.zeros(len(times))
    if reference:
        for k, t in enumerate(times):
            F = m.functions.evaluate(t) if len(m.functions) else np.zeros((0, 3))
            X[k], residual[k] = solver.solve_step(motion, k, P, PV, F, user)
    else:
        from .reactions_kernel import reaction_run, tables
        n, nb = len(times), m.n_body
        c = np.ascontiguousarray
        reaction_run(tables(solver), c(times, float), c(motion["R"]), c(motion["com"]),
                     c(motion["com_dd"]), c(motion["omega"]).reshape(n, nb, solver.nt),
                     c(motion["alpha"]).reshape(n, nb, solver.nt), c(P), c(PV), *user,
                     X, residual)
    out = {}
    fl = "xyz"[:d]
    tl = ["z"] if d == 2 else list("xyz")
    for j in solver.joints:
        c0 = solver.cols["joint", j]
        name = m.joint_name[j]
        for i, c in enumerate(fl):
            out[f"reaction.{name}.force_{c}"] = X[:, c0 + i]
        for i, c in enumerate(tl):
            out[f"reaction.{name}.torque_{c}"] = X[:, c0 + d + i]
    if not solver.use_drivers:
        for j, comps in solver.driven.items():
            for comp in comps:
                out[f"effort.{m.joint_name[j]}"] = _effort(solver, X, j, comp, motion,
                                                           len(times))
        return out, residual
    for k in range(m.n_driver):
        name = m.driver_name[k]
        kind = int(m.driver_kind[k])
        if kind == DRIVER_CODE["joint"]:
            out[f"effort.{name}"] = _effort(solver, X, int(m.driver_joint[k]),
                                            int(m.driver_component[k]), motion, len(times))
        elif kind == DRIVER_CODE["distance"]:
            out[f"effort.{name}"] = X[:, solver.cols["driver", k]]
        else:
            c0 = solver.cols["driver", k]
            for i, c in enumerate(fl):
                out[f"effort.{name}.force_{c}"] = X[:, c0 + i]
            for i, c in enumerate(tl):
                out[f"effort.{name}.torque_{c}"] = X[:, c0 + d + i]
    return out, residual


def user_point_loads(m, times, P, PV) -> tuple[np.ndarray, np.ndarray]:
    """The user forces of model ``m`` along a trajectory (P, PV: point positions and
    velocities (n, n_point, d) at ``times``): their points (n_up,) and the world forces on them
    (n, n_up, d), each user function called once per sample."""
    points = np.array([p for _, idx, _ in m.user_forces for p in idx], np.int64)
    forces = np.zeros((len(times), len(points), m.dim))
    first = 0
    for name, idx, function in m.user_forces:
        last = first + len(idx)
        for k, t in enumerate(times):
            out = np.zeros((len(idx), m.dim))
            try:
                function(float(t), P[k, idx], PV[k, idx], out)
            except Exception as exc:
                raise ModelError(f"user force {name!r} raised {type(exc).__name__} at t = "
                                 f"{t:.6g} s: {exc}", location="user_forces") from exc
            if not np.isfinite(out).all():
                raise ModelError(f"user force {name!r} returned a non-finite force at t = "
                                 f"{t:.6g} s", location="user_forces")
            forces[k, first:last] = out
        first = last
    return points, forces


def undetermined_efforts(solver, motion, k, P, rcond: float = 1e-9) -> list[str]:
    """The actuated freedoms (``joint`` or ``joint:component``) whose effort the Newton-Euler
    equations at step k leave undetermined: those an unknown vector of the equations' null
    space loads (redundant actuation - more actuated freedoms than the mechanism has degrees
    of freedom - or an actuator singularity). Reactions of an overconstrained mechanism may
    be undetermined too; only efforts are judged here."""
    null = scipy.linalg.null_space(solver.matrix(motion, k, P), rcond=rcond)
    if null.shape[1] == 0:
        return []
    at_k = {key: np.repeat(v[k:k + 1], null.shape[1], axis=0) for key, v in motion.items()}
    names = {code: name for name, code in COMPONENT_CODE.items()}
    return [f"{solver.model.joint_name[j]}:{names[comp]}"
            for j, comps in solver.driven.items() for comp in sorted(comps)
            if np.abs(_effort(solver, null.T, j, comp, at_k, null.shape[1])).max() > 1e-6]


def _effort(solver, X, j, comp, motion, n):
    """The actuated component of joint j's wrench: torque about (2-D: the torque) or force
    along its axis."""
    m, d = solver.model, solver.d
    c0 = solver.cols["joint", j]
    angle = comp == COMPONENT_CODE["angle"] and m.joint_type[j] != JOINT_CODE["prismatic"]
    if d == 2 and angle:
        return X[:, c0 + d]
    block = X[:, c0 + d:c0 + d + 3] if angle else X[:, c0:c0 + d]
    return np.einsum("nk,nk->n", block, _axes(solver, j, n, motion))


def _axes(solver, j, n, motion):
    return np.array([solver._axis_world(j, k, motion, "a") for k in range(n)])
