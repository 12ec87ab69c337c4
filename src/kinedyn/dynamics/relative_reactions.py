"""Joint reactions and actuator efforts in relative coordinates (sparse-relative paper, eq. 1).

The motion (q, qd, qdd) of a :class:`~kinedyn.formulations.relative.Relative` model gives

* the multipliers: ``B^T lam = a qdd - Q`` (eq. 1 with ``Q = f - b qd``), solved in the
  least-squares sense (minimum norm with redundant constraints);
* the cut joints' reactions from ``lam``: equation r of a cut joint between bodies a and b
  applies ``lam_r dPhi_r/d(pose)`` to both bodies - for ``e.(p_b - p_a)`` the force
  ``lam e`` on b at p_b (``-lam e`` on a at p_a); for ``u_a.v_b`` the torque ``lam v_b x u_a``
  on b (``lam u_a x v_b`` on a); for ``u_a.(p_b - p_a)`` the force ``lam u_a`` on b at p_b
  (``-lam u_a`` at p_a plus ``lam u_a x d`` on a); for ``|p_b - p_a|^2`` the force
  ``2 lam d`` on b at p_b. The distance drivers' wrenches are built the same way, the joint
  drivers' multipliers are their efforts (generalised forces on the driven coordinate);
* the tree joints' reactions by a Newton-Euler backward pass over the body tree, tip to base:
  each body's wrench ``W = I a + omega x I omega - (applied loads) - (constraint wrenches of
  the cut joints and distance drivers)`` is accumulated into its parent, and the wrench that
  the tree joint of body b transmits is the sum over b's subtree (world frame, moments about
  the world origin). Applied loads (gravity, point forces, springs, joint forces) are those of
  :meth:`kinedyn.dynamics.reactions.ReactionSolver.body_loads`.

Channels, units and signs are those of :func:`kinedyn.dynamics.reactions.reactions`:
``reaction.<joint>.force_<c>`` / ``torque_<c>`` is the wrench of joint j on its body_b (force
at its point_b, world axes), ``effort.<driver>`` the actuator effort.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..formulations.relative.data import DDIST, DIST, DOT, DOTD, DRIVE, POINT
from ..model.compiled import DRIVER_CODE, JOINT_CODE
from .reactions import ReactionSolver


def multipliers(f, times, Q, QD, QDD) -> tuple[np.ndarray, np.ndarray]:
    """``lam`` (n, n_c) of ``B^T lam = a qdd - Q`` along a trajectory and the residual
    ``max |B^T lam - (a qdd - Q)|`` of eq. (1) per state (n,)."""
    lam = np.zeros((len(times), f.n_c))
    residual = np.zeros(len(times))
    for k, t in enumerate(times):
        r = f.mass(Q[k]) @ QDD[k] - f.forces(Q[k], QD[k], t)
        if f.n_c:
            B = f.phi_q(Q[k], t)
            lam[k] = np.linalg.lstsq(B.T, r, rcond=None)[0]
            r = r - B.T @ lam[k]
        residual[k] = np.abs(r).max(initial=0.0)
    return lam, residual


def _world(R, P, link, local, point):
    """World points (``point``) or vectors of a link-frame ``local`` along the states."""
    if link < 0:
        return np.broadcast_to(local, (len(R), 3))
    x = R[:, link] @ local
    return x + P[:, link] if point else x


def constraint_wrenches(f, R, P, lam) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spatial wrenches (n, n_c, 6) = (moment about the world origin; force) that each
    constraint row applies on its body b and on its body a, and ``|p_b - p_a|`` (n, n_c)."""
    d = f.data
    n, m = len(R), f.n_c
    on_b, on_a = np.zeros((n, m, 6)), np.zeros((n, m, 6))
    dist = np.zeros((n, m))
    for r in range(m):
        kind = int(d.con_kind[r])
        if kind == DRIVE:
            continue
        la, lb, L = int(d.con_link_a[r]), int(d.con_link_b[r]), lam[:, r, None]
        pa, pb = _world(R, P, la, d.con_pa[r], True), _world(R, P, lb, d.con_pb[r], True)
        dv = pb - pa
        dist[:, r] = np.linalg.norm(dv, axis=1)
        u = np.broadcast_to(d.con_ua[r], (n, 3)) if kind == POINT else \
            _world(R, P, la, d.con_ua[r], False)
        if kind == DOT:
            v = _world(R, P, lb, d.con_vb[r], False)
            on_b[:, r, :3] = L * np.cross(v, u)
            on_a[:, r, :3] = L * np.cross(u, v)
            continue
        force = 2.0 * L * dv if kind in (DIST, DDIST) else L * u
        on_b[:, r, :3], on_b[:, r, 3:] = np.cross(pb, force), force
        on_a[:, r, :3], on_a[:, r, 3:] = np.cross(pa, -force), -force
        if kind == DOTD:
            on_a[:, r, :3] += L * np.cross(u, dv)
    return on_b, on_a, dist


def _natural_motion(f, bm, d):
    """Body motion in the layout of :meth:`Natural.body_motion` (d-dimensional)."""
    m = f.model
    com_local = np.array([np.pad(m.body_com[b], (0, 3 - d)) for b in range(m.n_body)])
    r = np.einsum("nbij,bj->nbi", bm["R"], com_local)
    w, al = bm["omega"], bm["alpha"]
    com = bm["origin"] + r
    com_dd = bm["origin_dd"] + np.cross(al, r) + np.cross(w, np.cross(w, r))
    motion = {"R": bm["R"][..., :d, :d], "com": com[..., :d], "com_dd": com_dd[..., :d],
              "omega": w if d == 3 else w[..., 2], "alpha": al if d == 3 else al[..., 2]}
    return motion, com


def relative_reactions(f, times, Q, QD, QDD) -> tuple[dict, np.ndarray]:
    """Reaction and effort channels of a relative-coordinate trajectory and the residual of
    eq. (1) per state (see the module docstring)."""
    m, d = f.model, f.dim
    times = np.atleast_1d(np.asarray(times, float))
    Q, QD, QDD = (np.atleast_2d(np.asarray(x, float)) for x in (Q, QD, QDD))
    n = len(times)
    lam, residual = multipliers(f, times, Q, QD, QDD)
    R, P, _, _, _ = f._states(Q, QD, QDD)
    on_b, on_a, dist = constraint_wrenches(f, R, P, lam)
    bm = f.body_motion(Q, QD, QDD)
    motion, com = _natural_motion(f, bm, d)
    X, XV, _ = f.point_motion(Q, QD, QDD)
    ns = ReactionSolver(f)
    nw, nb = ns.nw, m.n_body
    # per body: inertial minus applied loads, about the world origin
    W = np.zeros((n, nb, 6))
    b = np.zeros(nw * (nb - 1))
    for k, t in enumerate(times):
        F = m.functions.evaluate(t) if len(m.functions) else np.zeros((0, 3))
        b[:] = 0.0
        ns.body_loads(k, motion, X[..., :d], XV[..., :d], F, b, motion["R"][k], motion["com"][k])
        rows = b.reshape(nb - 1, nw)
        force = np.pad(rows[:, :d], ((0, 0), (0, 3 - d)))          # planar: z = 0
        torque = np.pad(rows[:, d:], ((0, 0), (3 - (nw - d), 0)))   # planar: about z
        W[k, 1:, 3:] = force
        W[k, 1:, :3] = torque + np.cross(com[k, 1:], force)
    # minus the constraint wrenches of the cut joints and distance drivers
    for r, e in enumerate(f.equations):
        W[:, e.body_b] -= on_b[:, r]
        W[:, e.body_a] -= on_a[:, r]
    # backward pass over the body tree: wrench transmitted into each body's subtree
    topo = f.topology
    order = [0]
    for body in order:
        order.extend(int(c) for c in topo.children[body])
    sub = W.copy()
    for body in reversed(order[1:]):
        sub[:, int(topo.parent[body])] += sub[:, body]
    out = {}
    fl, tl = "xyz"[:d], ("z",) if d == 2 else tuple("xyz")

    def emit(j, wrench):
        """Channels of the wrench (about the origin) on joint j's body_b, moved to point_b."""
        pb = X[:, m.joint_point_b[j]]
        torque = wrench[:, :3] - np.cross(pb, wrench[:, 3:])
        for i, c in enumerate(fl):
            out[f"reaction.{m.joint_name[j]}.force_{c}"] = wrench[:, 3 + i]
        for c in tl:
            out[f"reaction.{m.joint_name[j]}.torque_{c}"] = torque[:, "xyz".index(c)]
    tree_joint = {int(topo.parent_joint[body]): body for body in order[1:]}
    owner = {}
    for r, e in enumerate(f.equations):
        owner.setdefault(e.owner, []).append(r)
    for j in range(m.n_joint):
        if m.joint_type[j] == JOINT_CODE["free"]:
            continue
        if j in tree_joint:
            child = tree_joint[j]
            emit(j, sub[:, child] if child == int(m.joint_body_b[j]) else -sub[:, child])
        else:
            emit(j, on_b[:, owner[m.joint_name[j]]].sum(axis=1))
    for k in range(m.n_driver):
        name, kind = m.driver_name[k], int(m.driver_kind[k])
        r = owner[name][0]
        if kind == DRIVER_CODE["joint"]:
            out[f"effort.{name}"] = lam[:, r]
        elif kind == DRIVER_CODE["distance"]:
            out[f"effort.{name}"] = 2.0 * lam[:, r] * dist[:, r]
        else:
            raise ModelError(f"driver {name!r}: pose drivers are not supported in relative "
                             "coordinates", location=f"drivers[{k}]")
    return out, residual
