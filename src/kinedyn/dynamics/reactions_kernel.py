"""Reactions over a whole run in one compiled call (the fast path of :mod:`.reactions`).

:class:`~kinedyn.dynamics.reactions.ReactionSolver` is the readable reference: it assembles the
Newton-Euler equations of every moving body per sample in NumPy. Here the same equations are
described once per model by flat tables (:func:`tables`), and :func:`reaction_run` assembles
and solves them for every sample of a trajectory in compiled code:

* every unknown column ``col`` puts a wrench on up to two bodies: a unit force or torque (joint
  reactions, pose drivers) or a unit force along the line of a distance driver, applied at a
  point (``point < 0``: the origin of the body's frame), giving ``A[body rows, col]`` =
  ``(f, (p - c) x f + tau)`` (sparse-relative-coordinates paper: reactions from the motion);
* every freedom of a joint gives a row that must vanish (no wrench along it): a torque along a
  fixed direction, a torque or force along a joint axis (rotated by its body), or, for a rod, a
  force across its line;
* the right-hand side is the inertial minus the applied loads of each body (gravity, point
  forces, spring-dampers with their actuators, joint forces, user forces), the functions of
  time evaluated in the kernel (the user forces, Python or Numba code, before it).

Each sample is solved in the least-squares sense (LAPACK ``gelsd``, minimum norm with the same
rank cutoff as the reference), so redundant constraints get the same minimum-norm reactions.
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from ..model.compiled import COMPONENT_CODE, DRIVER_CODE, FRAME_CODE, JOINT_CODE
from ..model.tape import MAX_STACK, eval_functions

UNIT, ALONG_LINE = 0, 1                                     # wrench kinds of a column
TORQUE_FIXED, TORQUE_AXIS, FORCE_AXIS, ROD_ACROSS_2D, ROD_N1, ROD_N2 = range(6)  # restrictions


class ReactionTables(NamedTuple):
    d: int
    nw: int                 # unknowns per wrench: d forces + (1 or 3) torques
    n_body: int
    n_unknown: int
    n_rows: int             # nw (n_body - 1) body equations + restrictions
    body_mass: np.ndarray   # (n_body,)
    body_inertia: np.ndarray  # (n_body, nt, nt) (2-D: 1 x 1)
    gravity: np.ndarray     # (d,)
    w_col: np.ndarray       # (n_w,) wrench contributions: column, body, point (-1: frame origin)
    w_body: np.ndarray
    w_point: np.ndarray
    w_kind: np.ndarray      # UNIT or ALONG_LINE
    w_unit: np.ndarray      # UNIT: component 0..nw-1 (forces first)
    w_sign: np.ndarray      # +-1
    w_pa: np.ndarray        # ALONG_LINE: the line from point pa to pb
    w_pb: np.ndarray
    r_col0: np.ndarray      # (n_r,) restrictions: first column of the joint's wrench
    r_kind: np.ndarray
    r_body: np.ndarray      # body whose rotation carries the axis (0: ground)
    r_axis: np.ndarray      # (n_r, 3) local axis (TORQUE_AXIS, FORCE_AXIS) or fixed vector
    r_pa: np.ndarray        # rods: points a, b
    r_pb: np.ndarray
    body_com: np.ndarray    # (n_body, d) centre of mass in the body frame
    point_body: np.ndarray  # (n_point,) body of each point
    pf_body: np.ndarray     # point forces: body, point, component functions (n_pf, d), frame
    pf_point: np.ndarray
    pf_fn: np.ndarray
    pf_body_frame: np.ndarray
    sp_pa: np.ndarray       # spring-dampers: points, their bodies, k, c, free length, actuator fn
    sp_pb: np.ndarray
    sp_ba: np.ndarray
    sp_bb: np.ndarray
    sp_k: np.ndarray
    sp_c: np.ndarray
    sp_l0: np.ndarray
    sp_fn: np.ndarray
    jf_a: np.ndarray        # joint forces: bodies a, b, point b, local axis of a, fn, angle?
    jf_b: np.ndarray
    jf_pb: np.ndarray
    jf_axis: np.ndarray     # (n_jf, d)
    jf_fn: np.ndarray
    jf_angle: np.ndarray    # 1: a torque (about the axis in 3-D), 0: a force along the axis
    fn_ops: np.ndarray      # the model's functions of time (tape)
    fn_args: np.ndarray
    fn_start: np.ndarray
    fn_input: np.ndarray    # its inputs (TapeTable.inputs: the same array)


def tables(solver) -> ReactionTables:
    """The reference solver's equations as flat tables (same unknown layout, same rows)."""
    m, d, nw, nt = solver.model, solver.d, solver.nw, solver.nt
    J = JOINT_CODE
    w = []  # (col, body, point, kind, unit, sign, pa, pb)
    r = []  # (col0, kind, body, axis (3,), pa, pb)
    pad = lambda v: np.concatenate([np.asarray(v, float), np.zeros(3 - len(v))])  # noqa: E731
    for j in solver.joints:
        c0 = solver.cols["joint", j]
        a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
        pa, pb = int(m.joint_point_a[j]), int(m.joint_point_b[j])
        at_a = pa if m.joint_type[j] == J["rod"] else pb
        for u in range(nw):
            w.append((c0 + u, b, pb, UNIT, u, 1.0, -1, -1))
            w.append((c0 + u, a, at_a, UNIT, u, -1.0, -1, -1))
        r += [(c0,) + row for row in _restriction_rows(solver, j, pad)]
    for k in range(m.n_driver if solver.use_drivers else 0):
        kind = int(m.driver_kind[k])
        if kind == DRIVER_CODE["distance"]:
            c0 = solver.cols["driver", k]
            pa, pb = int(m.driver_point_a[k]), int(m.driver_point_b[k])
            w.append((c0, int(m.point_body[pb]), pb, ALONG_LINE, 0, 1.0, pa, pb))
            w.append((c0, int(m.point_body[pa]), pa, ALONG_LINE, 0, -1.0, pa, pb))
        elif kind == DRIVER_CODE["pose"]:
            c0 = solver.cols["driver", k]
            for u in range(nw):
                w.append((c0 + u, int(m.driver_body[k]), -1, UNIT, u, 1.0, -1, -1))
    ints = lambda rows, i: np.array([x[i] for x in rows], np.int64)  # noqa: E731
    inertia = np.asarray(m.body_inertia, float).reshape(m.n_body, nt, nt)
    n_jf = len(m.joint_force_name)
    jf_joint = np.asarray(m.joint_force_joint, np.int64).reshape(n_jf)
    angle = COMPONENT_CODE["angle"]
    funcs = m.functions
    return ReactionTables(
        d, nw, m.n_body, solver.n_unknown, nw * (m.n_body - 1) + len(r),
        np.asarray(m.body_mass, float), inertia, np.asarray(m.gravity, float),
        ints(w, 0), ints(w, 1), ints(w, 2), ints(w, 3), ints(w, 4),
        np.array([x[5] for x in w], float), ints(w, 6), ints(w, 7),
        ints(r, 0), ints(r, 1), ints(r, 2), np.array([x[3] for x in r], float).reshape(-1, 3),
        ints(r, 4), ints(r, 5), np.asarray(m.body_com, float).reshape(m.n_body, d),
        np.asarray(m.point_body, np.int64),
        np.asarray(m.point_force_body, np.int64), np.asarray(m.point_force_point, np.int64),
        np.asarray(m.point_force_function, np.int64).reshape(-1, d),
        (np.asarray(m.point_force_frame) == FRAME_CODE["body"]).astype(np.int64),
        np.asarray(m.spring_point_a, np.int64), np.asarray(m.spring_point_b, np.int64),
        np.asarray(m.point_body, np.int64)[np.asarray(m.spring_point_a, np.int64)],
        np.asarray(m.point_body, np.int64)[np.asarray(m.spring_point_b, np.int64)],
        np.asarray(m.spring_stiffness, float), np.asarray(m.spring_damping, float),
        np.asarray(m.spring_free_length, float), np.asarray(m.spring_function, np.int64),
        np.asarray(m.joint_body_a, np.int64)[jf_joint],
        np.asarray(m.joint_body_b, np.int64)[jf_joint],
        np.asarray(m.joint_point_b, np.int64)[jf_joint],
        np.asarray(m.joint_axis_a, float)[jf_joint].reshape(n_jf, d),
        np.asarray(m.joint_force_function, np.int64).reshape(n_jf),
        np.array([int(m.joint_force_component[i] == angle
                      and m.joint_type[jf_joint[i]] != J["prismatic"]) for i in range(n_jf)],
                 np.int64),
        np.asarray(funcs.ops, np.int64), np.asarray(funcs.args, float),
        np.asarray(funcs.start, np.int64), funcs.inputs)


def _restriction_rows(solver, j, pad):
    """(kind, body, axis, pa, pb) of the rows of joint j, in the reference's order."""
    m, d = solver.model, solver.d
    J = JOINT_CODE
    t = int(m.joint_type[j])
    driven = solver.driven.get(j, set())
    a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
    axis_a, axis_b = pad(m.joint_axis_a[j]), pad(m.joint_axis_b[j])
    pa, pb = int(m.joint_point_a[j]), int(m.joint_point_b[j])
    no_pts = (-1, -1)
    free_angle = COMPONENT_CODE["angle"] not in driven
    free_disp = COMPONENT_CODE["displacement"] not in driven
    out = []
    if t == J["fixed"]:
        return out
    if d == 2:
        if t == J["revolute"] and free_angle:
            out.append((TORQUE_FIXED, 0, pad([1.0])) + no_pts)
        if t == J["prismatic"] and free_disp:
            out.append((FORCE_AXIS, a, axis_a) + no_pts)
        if t == J["rod"]:
            out.append((ROD_ACROSS_2D, 0, pad([])) + (pa, pb))
            out.append((TORQUE_FIXED, 0, pad([1.0])) + no_pts)
        return out
    if t in (J["revolute"], J["cylindrical"]) and free_angle:
        out.append((TORQUE_AXIS, a, axis_a) + no_pts)
    if t in (J["prismatic"], J["cylindrical"]) and free_disp:
        out.append((FORCE_AXIS, a, axis_a) + no_pts)
    if t == J["spherical"]:
        out += [(TORQUE_FIXED, 0, v) + no_pts for v in np.eye(3)]
    if t == J["universal"]:
        out.append((TORQUE_AXIS, a, axis_a) + no_pts)
        out.append((TORQUE_AXIS, b, axis_b) + no_pts)
    if t == J["rod"]:
        out += [(ROD_N1, 0, pad([])) + (pa, pb), (ROD_N2, 0, pad([])) + (pa, pb)]
        out += [(TORQUE_FIXED, 0, v) + no_pts for v in np.eye(3)]
    return out


# ---- compiled -------------------------------------------------------------------------------------
@nb.njit(cache=True, nogil=True)
def _rotate(R, body, local, d, out):
    """out = R[body] @ local (the ground's axes are the world's)."""
    for i in range(d):
        if body == 0:
            out[i] = local[i]
        else:
            v = 0.0
            for k in range(d):
                v += R[body, i, k] * local[k]
            out[i] = v


@nb.njit(cache=True, nogil=True)
def _add_wrench(A, col, body, nw, d, arm, f, tau, sign):
    """A[rows of body, col] += sign (f, arm x f + tau)."""
    if body == 0:
        return
    r0 = nw * (body - 1)
    for i in range(d):
        A[r0 + i, col] += sign * f[i]
    if d == 2:
        A[r0 + 2, col] += sign * (arm[0] * f[1] - arm[1] * f[0] + tau[0])
    else:
        A[r0 + 3, col] += sign * (arm[1] * f[2] - arm[2] * f[1] + tau[0])
        A[r0 + 4, col] += sign * (arm[2] * f[0] - arm[0] * f[2] + tau[1])
        A[r0 + 5, col] += sign * (arm[0] * f[1] - arm[1] * f[0] + tau[2])


@nb.njit(cache=True, nogil=True)
def _load(b, body, nw, d, arm, f, tau, sign):
    """b[rows of body] -= sign (f, arm x f + tau): an applied load moved to the right."""
    if body == 0:
        return
    r0 = nw * (body - 1)
    for i in range(d):
        b[r0 + i] -= sign * f[i]
    if d == 2:
        b[r0 + 2] -= sign * (arm[0] * f[1] - arm[1] * f[0] + tau[0])
    else:
        b[r0 + 3] -= sign * (arm[1] * f[2] - arm[2] * f[1] + tau[0])
        b[r0 + 4] -= sign * (arm[2] * f[0] - arm[0] * f[2] + tau[1])
        b[r0 + 5] -= sign * (arm[0] * f[1] - arm[1] * f[0] + tau[2])


@nb.njit(cache=True, nogil=True)
def reaction_run(tb, times, R, com, acc, omega, alpha, P, PV, user_points, user_forces, X,
                 residual):
    """Reactions of every sample k into X[k] (n_unknown) and max |A x - b| into residual[k].

    R (n, n_body, d, d), com and acc (n, n_body, d) centres of mass and their accelerations,
    omega and alpha (n, n_body, nt), P and PV (n, n_point, d) point positions and velocities,
    user_points (n_up,) and user_forces (n, n_up, d) the user forces
    (:func:`.reactions.user_point_loads`).
    """
    d, nw = tb.d, tb.nw
    nb_ = tb.n_body
    n_eq = tb.n_rows
    A = np.zeros((n_eq, tb.n_unknown))
    b = np.zeros(n_eq)
    F = np.zeros((tb.fn_start.shape[0] - 1, 3))
    stack = np.zeros((MAX_STACK, 3))
    arm = np.zeros(3)
    f = np.zeros(3)
    tau = np.zeros(3)
    zero = np.zeros(3)
    e = np.zeros(3)
    Iw = np.zeros((3, 3))
    rcond = np.finfo(np.float64).eps * max(n_eq, tb.n_unknown)
    for k in range(times.shape[0]):
        eval_functions(tb.fn_ops, tb.fn_args, tb.fn_start, times[k], F, stack, tb.fn_input)
        A[:] = 0.0
        b[:] = 0.0
        # inertial loads: m (a - g); I alpha (2-D) or I_w alpha + omega x I_w omega
        for body in range(1, nb_):
            r0 = nw * (body - 1)
            for i in range(d):
                b[r0 + i] = tb.body_mass[body] * (acc[k, body, i] - tb.gravity[i])
            if d == 2:
                b[r0 + 2] = tb.body_inertia[body, 0, 0] * alpha[k, body, 0]
            else:
                for i in range(3):
                    for j in range(3):
                        v = 0.0
                        for p in range(3):
                            for q in range(3):
                                v += R[k, body, i, p] * tb.body_inertia[body, p, q] * \
                                    R[k, body, j, q]
                        Iw[i, j] = v
                for i in range(3):
                    f[i] = 0.0
                    tau[i] = 0.0
                    for j in range(3):
                        f[i] += Iw[i, j] * omega[k, body, j]
                        tau[i] += Iw[i, j] * alpha[k, body, j]
                w0, w1, w2 = omega[k, body, 0], omega[k, body, 1], omega[k, body, 2]
                b[r0 + 3] = tau[0] + w1 * f[2] - w2 * f[1]
                b[r0 + 4] = tau[1] + w2 * f[0] - w0 * f[2]
                b[r0 + 5] = tau[2] + w0 * f[1] - w1 * f[0]
        # applied loads
        for i in range(tb.pf_body.shape[0]):
            body = tb.pf_body[i]
            for c in range(d):
                e[c] = F[tb.pf_fn[i, c], 0]
            if tb.pf_body_frame[i]:
                _rotate(R[k], body, e, d, f)
            else:
                for c in range(d):
                    f[c] = e[c]
            for c in range(d):
                arm[c] = P[k, tb.pf_point[i], c] - com[k, body, c]
            _load(b, body, nw, d, arm, f, zero, 1.0)
        for i in range(user_points.shape[0]):
            p = user_points[i]
            body = tb.point_body[p]
            for c in range(d):
                f[c] = user_forces[k, i, c]
                arm[c] = P[k, p, c] - com[k, body, c]
            _load(b, body, nw, d, arm, f, zero, 1.0)
        for i in range(tb.sp_pa.shape[0]):
            pa, pb = tb.sp_pa[i], tb.sp_pb[i]
            length = 0.0
            for c in range(d):
                e[c] = P[k, pb, c] - P[k, pa, c]
                length += e[c] * e[c]
            length = np.sqrt(length)
            if length < 1e-12:
                continue
            rate = 0.0
            for c in range(d):
                e[c] /= length
                rate += e[c] * (PV[k, pb, c] - PV[k, pa, c])
            tension = tb.sp_k[i] * (length - tb.sp_l0[i]) + tb.sp_c[i] * rate
            if tb.sp_fn[i] >= 0:
                tension -= F[tb.sp_fn[i], 0]
            for c in range(d):
                f[c] = -tension * e[c]
                arm[c] = P[k, pb, c] - com[k, tb.sp_bb[i], c]
            _load(b, tb.sp_bb[i], nw, d, arm, f, zero, 1.0)
            for c in range(d):
                arm[c] = P[k, pa, c] - com[k, tb.sp_ba[i], c]
            _load(b, tb.sp_ba[i], nw, d, arm, f, zero, -1.0)
        for i in range(tb.jf_a.shape[0]):
            value = F[tb.jf_fn[i], 0]
            _rotate(R[k], tb.jf_a[i], tb.jf_axis[i], d, e)
            for c in range(3):
                f[c] = 0.0
                tau[c] = 0.0
            if tb.jf_angle[i]:
                if d == 2:
                    tau[0] = value
                else:
                    for c in range(3):
                        tau[c] = value * e[c]
            else:
                for c in range(d):
                    f[c] = value * e[c]
            pb = tb.jf_pb[i]
            for side in range(2):
                body = tb.jf_b[i] if side == 0 else tb.jf_a[i]
                for c in range(d):
                    arm[c] = P[k, pb, c] - com[k, body, c]
                _load(b, body, nw, d, arm, f, tau, 1.0 if side == 0 else -1.0)
        # unknown wrenches
        for i in range(tb.w_col.shape[0]):
            body = tb.w_body[i]
            if body == 0:
                continue
            for c in range(3):
                f[c] = 0.0
                tau[c] = 0.0
            if tb.w_kind[i] == UNIT:
                u = tb.w_unit[i]
                if u < d:
                    f[u] = 1.0
                else:
                    tau[u - d] = 1.0
            else:
                norm = 0.0
                for c in range(d):
                    f[c] = P[k, tb.w_pb[i], c] - P[k, tb.w_pa[i], c]
                    norm += f[c] * f[c]
                norm = max(np.sqrt(norm), 1e-300)
                for c in range(d):
                    f[c] /= norm
            p = tb.w_point[i]
            for c in range(d):
                if p >= 0:
                    arm[c] = P[k, p, c] - com[k, body, c]
                else:  # frame origin: com - R body_com
                    v = 0.0
                    for j in range(d):
                        v += R[k, body, c, j] * tb.body_com[body, j]
                    arm[c] = -v
            _add_wrench(A, tb.w_col[i], body, nw, d, arm, f, tau, tb.w_sign[i])
        # restrictions: no wrench along the joints' freedoms
        row = nw * (nb_ - 1)
        for i in range(tb.r_kind.shape[0]):
            c0 = tb.r_col0[i]
            kind = tb.r_kind[i]
            if kind == TORQUE_FIXED:
                for c in range(nw - d):
                    A[row, c0 + d + c] = tb.r_axis[i, c]
            elif kind == TORQUE_AXIS or kind == FORCE_AXIS:
                _rotate(R[k], tb.r_body[i], tb.r_axis[i], d, e)
                off = d if kind == TORQUE_AXIS else 0
                for c in range(d):
                    A[row, c0 + off + c] = e[c]
            else:
                for c in range(d):
                    e[c] = P[k, tb.r_pb[i], c] - P[k, tb.r_pa[i], c]
                if kind == ROD_ACROSS_2D:
                    A[row, c0] = -e[1]
                    A[row, c0 + 1] = e[0]
                else:  # 3-D: n1 = e x (axis of e's smallest component), n2 = e x n1
                    norm = np.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
                    for c in range(3):
                        e[c] /= norm
                    s = 0
                    for c in range(1, 3):
                        if abs(e[c]) < abs(e[s]):
                            s = c
                    for c in range(3):
                        arm[c] = 0.0
                    arm[s] = 1.0
                    n1x = e[1] * arm[2] - e[2] * arm[1]
                    n1y = e[2] * arm[0] - e[0] * arm[2]
                    n1z = e[0] * arm[1] - e[1] * arm[0]
                    norm = np.sqrt(n1x * n1x + n1y * n1y + n1z * n1z)
                    n1x, n1y, n1z = n1x / norm, n1y / norm, n1z / norm
                    if kind == ROD_N1:
                        A[row, c0], A[row, c0 + 1], A[row, c0 + 2] = n1x, n1y, n1z
                    else:
                        A[row, c0] = e[1] * n1z - e[2] * n1y
                        A[row, c0 + 1] = e[2] * n1x - e[0] * n1z
                        A[row, c0 + 2] = e[0] * n1y - e[1] * n1x
            row += 1
        x = np.linalg.lstsq(A, b, rcond)[0]
        X[k] = x
        err = 0.0
        for i in range(n_eq):
            v = -b[i]
            for j in range(x.shape[0]):
                v += A[i, j] * x[j]
            err = max(err, abs(v))
        residual[k] = err
