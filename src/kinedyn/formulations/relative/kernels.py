"""Compiled kernels of the relative formulation (protocol implementations).

Spatial vectors are 6-vectors ``(angular; linear)`` in the world frame, linear parts taken at
the world origin (Featherstone's notation), so no frame transforms are needed between links:

* ``calc_kinematics_base_to_tip``: link rotations, origins and motion subspaces ``S_k``;
* ``calc_accelerations_base_to_tip``: ``V_k = V_parent + S_k qd_k`` and the accelerations
  ``A_k = A_parent + (V_k x S_k) qd_k + S_k qdd_k`` (``qdd=None``: the velocity-product
  accelerations, at ``qdd = 0``);
* ``crba``: the mass matrix ``a(q)`` of eq. (1) by the composite-rigid-body algorithm,
  ``a_ij = S_i . Ic_i S_j`` for j an ancestor of i (``Ic`` summed tip-to-base);
* ``rnea_tip_to_base``: recursive Newton-Euler with gravity and applied loads, giving
  ``f - b qd`` of eq. (1) as ``Q = -tau(q, qd, qdd = 0)``;
* loop closure ``Phi``, ``B = Phi_q`` and ``gamma`` of eq. (4) from point/vector kinematics:
  ``dp/dq_k = w_k x p + v_k``, ``du/dq_k = w_k x u`` and the velocity-product (bias)
  accelerations ``a_p = a_0 + alpha x p + w x (v_0 + w x p)``.
"""
from __future__ import annotations

import math

import numba as nb
from numba.extending import overload

from ..._jit import INLINED, WORKER
from ...model.tape_codegen import functions_at
from .. import protocol
from .data import DDIST, DIST, DOT, DOTD, DRIVE, POINT, RelativeData

#: reassociation lets LLVM vectorise the short dot products (results change in the last bits)
_JIT = dict(cache=True, nogil=True, fastmath={"reassoc", "contract"})
#: ... and the plain-array workers without reference counting (kinedyn._jit)
_WORKER = dict(WORKER, fastmath=_JIT["fastmath"])
_LEAF = INLINED  # small array helpers: inlined by LLVM (kinedyn._jit)
# takes the NamedTuples: inlined as Numba IR, so no member is copied or ref-counted
_WRAP = dict(cache=True, nogil=True, inline="always")


# ---- small vector helpers ------------------------------------------------------------------
@nb.njit(**_LEAF)
def _cross(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0], out[1], out[2] = x, y, z


@nb.njit(**_LEAF)
def _dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@nb.njit(**_LEAF)
def _elementary(axis, q, out):
    """Rotation matrix about the unit ``axis`` by ``q`` (Rodrigues)."""
    c, s = math.cos(q), math.sin(q)
    t = 1.0 - c
    x, y, z = axis[0], axis[1], axis[2]
    out[0, 0] = c + t * x * x
    out[0, 1] = t * x * y - s * z
    out[0, 2] = t * x * z + s * y
    out[1, 0] = t * x * y + s * z
    out[1, 1] = c + t * y * y
    out[1, 2] = t * y * z - s * x
    out[2, 0] = t * x * z - s * y
    out[2, 1] = t * y * z + s * x
    out[2, 2] = c + t * z * z


@nb.njit(**_WORKER)
def calc_kinematics_base_to_tip(link_parent, link_coord, link_type, link_axis, link_Rf, link_rf,
                                q, R, p, S, E, G):
    """Link frames (R_WL, origin) and world motion subspaces S_k for coordinates q
    (E, G: 3 x 3 scratch)."""
    n = link_parent.shape[0]
    for k in range(n):
        par = link_parent[k]
        qk = q[link_coord[k]]
        # G = R_parent Rf ; origin = p_parent + R_parent rf
        for i in range(3):
            for j in range(3):
                if par >= 0:
                    G[i, j] = (R[par, i, 0] * link_Rf[k, 0, j] + R[par, i, 1] * link_Rf[k, 1, j]
                               + R[par, i, 2] * link_Rf[k, 2, j])
                else:
                    G[i, j] = link_Rf[k, i, j]
            if par >= 0:
                p[k, i] = p[par, i] + (R[par, i, 0] * link_rf[k, 0] + R[par, i, 1] * link_rf[k, 1]
                                       + R[par, i, 2] * link_rf[k, 2])
            else:
                p[k, i] = link_rf[k, i]
        ax = link_axis[k]
        s0 = G[0, 0] * ax[0] + G[0, 1] * ax[1] + G[0, 2] * ax[2]
        s1 = G[1, 0] * ax[0] + G[1, 1] * ax[1] + G[1, 2] * ax[2]
        s2 = G[2, 0] * ax[0] + G[2, 1] * ax[1] + G[2, 2] * ax[2]
        if link_type[k] == 0:
            _elementary(ax, qk, E)
            for i in range(3):
                for j in range(3):
                    R[k, i, j] = G[i, 0] * E[0, j] + G[i, 1] * E[1, j] + G[i, 2] * E[2, j]
            S[k, 0], S[k, 1], S[k, 2] = s0, s1, s2
            # v = o x s
            S[k, 3] = p[k, 1] * s2 - p[k, 2] * s1
            S[k, 4] = p[k, 2] * s0 - p[k, 0] * s2
            S[k, 5] = p[k, 0] * s1 - p[k, 1] * s0
        else:
            for i in range(3):
                for j in range(3):
                    R[k, i, j] = G[i, j]
            p[k, 0] += s0 * qk
            p[k, 1] += s1 * qk
            p[k, 2] += s2 * qk
            S[k, 0] = S[k, 1] = S[k, 2] = 0.0
            S[k, 3], S[k, 4], S[k, 5] = s0, s1, s2


@nb.njit(**_LEAF)
def _crossm(v, m, out):
    """Spatial motion cross product v x m."""
    out[0] = v[1] * m[2] - v[2] * m[1]
    out[1] = v[2] * m[0] - v[0] * m[2]
    out[2] = v[0] * m[1] - v[1] * m[0]
    out[3] = v[1] * m[5] - v[2] * m[4] + v[4] * m[2] - v[5] * m[1]
    out[4] = v[2] * m[3] - v[0] * m[5] + v[5] * m[0] - v[3] * m[2]
    out[5] = v[0] * m[4] - v[1] * m[3] + v[3] * m[1] - v[4] * m[0]


@nb.njit(**_WORKER)
def calc_accelerations_base_to_tip(link_parent, link_coord, S, qd, qdd, V, A, c):
    """Spatial velocities V and spatial accelerations A (no gravity); c: 6-vector scratch.
    ``qdd=None``: the velocity-product accelerations (qdd = 0; Numba compiles that case
    without the term)."""
    n = link_parent.shape[0]
    for k in range(n):
        par = link_parent[k]
        w = qd[link_coord[k]]
        for i in range(6):
            V[k, i] = (V[par, i] if par >= 0 else 0.0) + S[k, i] * w
        _crossm(V[k], S[k], c)
        for i in range(6):
            A[k, i] = (A[par, i] if par >= 0 else 0.0) + c[i] * w
        if qdd is not None:
            for i in range(6):
                A[k, i] += S[k, i] * qdd[link_coord[k]]


@nb.njit(**_WORKER)
def calc_spatial_inertias(link_mass, link_com, link_inertia, R, p, I, RJ, c):
    """World spatial inertia of each link with mass about the world origin (6 x 6); the
    entries of massless links (inside multi-coordinate joints) are not touched (RJ 3 x 3,
    c 3-vector: scratch)."""
    n = link_mass.shape[0]
    for k in range(n):
        m = link_mass[k]
        if m == 0.0:
            continue
        for i in range(3):
            c[i] = p[k, i] + R[k, i, 0] * link_com[k, 0] + R[k, i, 1] * link_com[k, 1] \
                + R[k, i, 2] * link_com[k, 2]
            for j in range(3):
                RJ[i, j] = (R[k, i, 0] * link_inertia[k, 0, j] + R[k, i, 1] * link_inertia[k, 1, j]
                            + R[k, i, 2] * link_inertia[k, 2, j])
        cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
        for i in range(3):
            for j in range(i + 1):  # R J R^T + m (|c|^2 1 - c c^T), symmetric
                v = RJ[i, 0] * R[k, j, 0] + RJ[i, 1] * R[k, j, 1] + RJ[i, 2] * R[k, j, 2] \
                    + m * ((cc if i == j else 0.0) - c[i] * c[j])
                I[k, i, j] = v
                I[k, j, i] = v
                I[k, i, j + 3] = 0.0
                I[k, j, i + 3] = 0.0
                I[k, i + 3, j + 3] = m if i == j else 0.0
                I[k, j + 3, i + 3] = m if i == j else 0.0
        # m [c]x (upper right) and its transpose
        I[k, 0, 4], I[k, 0, 5] = -m * c[2], m * c[1]
        I[k, 1, 3], I[k, 1, 5] = m * c[2], -m * c[0]
        I[k, 2, 3], I[k, 2, 4] = -m * c[1], m * c[0]
        for i in range(3):
            for j in range(3):
                I[k, j + 3, i] = I[k, i, j + 3]


@nb.njit(**_WORKER)
def crba(link_parent, link_coord, link_mass, link_rep, rep_parent, mass_pos, S, I, Ic, values,
         f):
    """Composite-rigid-body algorithm: mass-matrix entries a(q) in its CSR pattern.

    Composites are summed tip-to-base over the representative links only (``link_rep``: a
    massless link with one child shares that child's composite), ``a_ij = S_i . Ic_i S_j``
    for j an ancestor of i."""
    n = link_parent.shape[0]
    for k in range(n):
        if link_rep[k] == k:
            if link_mass[k] == 0.0:
                Ic[k, :, :] = 0.0
            else:
                for i in range(6):
                    for j in range(6):
                        Ic[k, i, j] = I[k, i, j]
    for k in range(n - 1, -1, -1):
        up = rep_parent[k]
        if link_rep[k] == k and up >= 0:
            for i in range(6):
                for j in range(6):
                    Ic[up, i, j] += Ic[k, i, j]
    for k in range(n):
        r = link_rep[k]
        for i in range(6):
            s = 0.0
            for j in range(6):
                s += Ic[r, i, j] * S[k, j]
            f[i] = s
        j = k
        while j >= 0:
            v = 0.0
            for i in range(6):
                v += f[i] * S[j, i]
            values[mass_pos[k, j]] = v
            if j != k:
                values[mass_pos[j, k]] = v
            j = link_parent[j]


@nb.njit(**_LEAF)
def _world_point(R, p, link, local, out):
    if link < 0:
        out[0], out[1], out[2] = local[0], local[1], local[2]
    else:
        for i in range(3):
            out[i] = p[link, i] + R[link, i, 0] * local[0] + R[link, i, 1] * local[1] \
                + R[link, i, 2] * local[2]


@nb.njit(**_LEAF)
def _world_vector(R, link, local, out):
    if link < 0:
        out[0], out[1], out[2] = local[0], local[1], local[2]
    else:
        for i in range(3):
            out[i] = R[link, i, 0] * local[0] + R[link, i, 1] * local[1] + R[link, i, 2] * local[2]


@nb.njit(**_LEAF)
def _point_rates(V, A, link, x, vel, acc, is_point):
    """Velocity and velocity-product acceleration of a body-fixed point (or vector) x."""
    if link < 0:
        for i in range(3):
            vel[i] = 0.0
            acc[i] = 0.0
        return
    w0, w1, w2 = V[link, 0], V[link, 1], V[link, 2]
    v0 = w1 * x[2] - w2 * x[1]
    v1 = w2 * x[0] - w0 * x[2]
    v2 = w0 * x[1] - w1 * x[0]
    a0 = A[link, 1] * x[2] - A[link, 2] * x[1]
    a1 = A[link, 2] * x[0] - A[link, 0] * x[2]
    a2 = A[link, 0] * x[1] - A[link, 1] * x[0]
    if is_point:
        v0 += V[link, 3]
        v1 += V[link, 4]
        v2 += V[link, 5]
        a0 += A[link, 3]
        a1 += A[link, 4]
        a2 += A[link, 5]
    vel[0], vel[1], vel[2] = v0, v1, v2
    acc[0] = a0 + w1 * v2 - w2 * v1
    acc[1] = a1 + w2 * v0 - w0 * v2
    acc[2] = a2 + w0 * v1 - w1 * v0


@nb.njit(**_LEAF)
def _point_velocity(V, link, x, vel):
    """Velocity of a body-fixed world point x."""
    if link < 0:
        vel[0] = vel[1] = vel[2] = 0.0
        return
    vel[0] = V[link, 3] + V[link, 1] * x[2] - V[link, 2] * x[1]
    vel[1] = V[link, 4] + V[link, 2] * x[0] - V[link, 0] * x[2]
    vel[2] = V[link, 5] + V[link, 0] * x[1] - V[link, 1] * x[0]


@nb.njit(**_LEAF)
def _add_jac(link_parent, link_coord, S, link, x, g, is_point, scale, row):
    """row[coord k] += scale * g . d x / d q_k over the links below ``link``."""
    k = link
    while k >= 0:
        s = (g[0] * (S[k, 1] * x[2] - S[k, 2] * x[1]) + g[1] * (S[k, 2] * x[0] - S[k, 0] * x[2])
             + g[2] * (S[k, 0] * x[1] - S[k, 1] * x[0]))
        if is_point:
            s += g[0] * S[k, 3] + g[1] * S[k, 4] + g[2] * S[k, 5]
        row[link_coord[k]] += scale * s
        k = link_parent[k]


# ---- equations -----------------------------------------------------------------------------
@nb.njit(**_WRAP)
def _equation(data, work, q, r, level, out_row):
    """Value (level 0), Jacobian row into out_row (1), phi_t (2) or gamma (3) of equation r.

    Needs the kinematics (and, for gamma, the velocities) of the current state in ``work``.
    """
    kind = data.con_kind[r]
    fn = data.con_fn[r]
    if kind == DRIVE:
        c = data.link_coord[data.con_coord[r]]
        if level == 0:
            return q[c] - (work.fval[fn, 0] if fn >= 0 else 0.0)
        if level == 1:
            out_row[c] += 1.0
            return 0.0
        if level == 2:
            return -work.fval[fn, 1] if fn >= 0 else 0.0
        return work.fval[fn, 2] if fn >= 0 else 0.0
    R, p, V, A = work.R, work.p, work.V, work.A
    la, lb = data.con_link_a[r], data.con_link_b[r]
    t = work.tmp
    pa, pb, d, u, v = t[0], t[1], t[2], t[3], t[4]
    _world_point(R, p, la, data.con_pa[r], pa)
    _world_point(R, p, lb, data.con_pb[r], pb)
    for i in range(3):
        d[i] = pb[i] - pa[i]
    if kind == POINT:
        for i in range(3):
            u[i] = data.con_ua[r, i]
    else:
        _world_vector(R, la, data.con_ua[r], u)
    _world_vector(R, lb, data.con_vb[r], v)
    if level == 0:
        if kind == POINT:
            return _dot3(u, d)
        if kind == DOT:
            return _dot3(u, v) - data.con_value[r]
        if kind == DOTD:
            return _dot3(u, d) - data.con_value[r]
        if kind == DIST:
            return _dot3(d, d) - data.con_value[r]
        f = work.fval[fn, 0] if fn >= 0 else 0.0
        return _dot3(d, d) - f * f
    if level == 1:
        lp, lc, S = data.link_parent, data.link_coord, work.S
        if kind == POINT or kind == DOTD:
            _add_jac(lp, lc, S, lb, pb, u, True, 1.0, out_row)
            _add_jac(lp, lc, S, la, pa, u, True, -1.0, out_row)
            if kind == DOTD:
                _add_jac(lp, lc, S, la, u, d, False, 1.0, out_row)
        elif kind == DOT:
            _add_jac(lp, lc, S, la, u, v, False, 1.0, out_row)
            _add_jac(lp, lc, S, lb, v, u, False, 1.0, out_row)
        else:
            _add_jac(lp, lc, S, lb, pb, d, True, 2.0, out_row)
            _add_jac(lp, lc, S, la, pa, d, True, -2.0, out_row)
        return 0.0
    if level == 2:
        if kind == DDIST and fn >= 0:
            return -2.0 * work.fval[fn, 0] * work.fval[fn, 1]
        return 0.0
    # gamma = -(velocity-product part of the second derivative) [+ driver terms]
    va, aa, vb_, ab, dd, ddd = t[5], t[6], t[7], t[8], t[9], t[10]
    _point_rates(V, A, la, pa, va, aa, True)
    _point_rates(V, A, lb, pb, vb_, ab, True)
    for i in range(3):
        dd[i] = vb_[i] - va[i]
        ddd[i] = ab[i] - aa[i]
    if kind == POINT:
        return -_dot3(u, ddd)
    if kind == DIST or kind == DDIST:
        g = -2.0 * (_dot3(dd, dd) + _dot3(d, ddd))
        if kind == DDIST and fn >= 0:
            f0, f1, f2 = work.fval[fn, 0], work.fval[fn, 1], work.fval[fn, 2]
            g += 2.0 * (f1 * f1 + f0 * f2)
        return g
    ud, udd = t[11], t[12]
    _point_rates(V, A, la, u, ud, udd, False)
    if kind == DOTD:
        return -(_dot3(udd, d) + 2.0 * _dot3(ud, dd) + _dot3(u, ddd))
    vd, vdd = t[13], t[14]
    _point_rates(V, A, lb, v, vd, vdd, False)
    return -(_dot3(udd, v) + 2.0 * _dot3(ud, vd) + _dot3(u, vdd))


@nb.njit(**_WRAP)
def positions(data, work, q):
    calc_kinematics_base_to_tip(data.link_parent, data.link_coord, data.link_type,
                                data.link_axis, data.link_Rf, data.link_rf, q, work.R, work.p,
                                work.S, work.m33[0], work.m33[1])


@nb.njit(**_WRAP)
def velocities(data, work, qd):
    calc_accelerations_base_to_tip(data.link_parent, data.link_coord, work.S, qd, None, work.V,
                                   work.A, work.v6[0])


@nb.njit(**_WRAP)
def at_time(data, work, t):
    functions_at(data.fp_op, data.fp_arg, data.fp_a, data.fp_b, data.fp_out, data.fp_code,
                 data.fp_input, work.freg, work.fval, t)


@nb.njit(**_WRAP)
def phi_rows(data, work, q, t, rows, out):
    positions(data, work, q)
    at_time(data, work, t)
    for i in range(rows.shape[0]):
        out[i] = _equation(data, work, q, rows[i], 0, work.row)


@nb.njit(**_WRAP)
def phi_t_rows(data, work, q, t, rows, out):
    at_time(data, work, t)
    for i in range(rows.shape[0]):
        out[i] = _equation(data, work, q, rows[i], 2, work.row)


@nb.njit(**_WRAP)
def jacobian_rows(data, work, q, t, rows, values, compute_positions):
    """B entries of the rows into their CSR slots (kinematics recomputed if asked)."""
    if compute_positions:
        positions(data, work, q)
    row = work.row
    for i in range(rows.shape[0]):
        r = rows[i]
        for p in range(data.jac_indptr[r], data.jac_indptr[r + 1]):
            row[data.jac_indices[p]] = 0.0
        _equation(data, work, q, r, 1, row)
        for p in range(data.jac_indptr[r], data.jac_indptr[r + 1]):
            values[p] = row[data.jac_indices[p]]


@nb.njit(**_WRAP)
def gamma_rows(data, work, q, qd, t, rows, out, compute_state):
    if compute_state:
        positions(data, work, q)
        velocities(data, work, qd)
        at_time(data, work, t)
    for i in range(rows.shape[0]):
        out[i] = _equation(data, work, q, rows[i], 3, work.row)


@nb.njit(**_WRAP)
def mass_values(data, work, q, values, compute_positions):
    if compute_positions:
        positions(data, work, q)
    calc_spatial_inertias(data.link_mass, data.link_com, data.link_inertia, work.R, work.p,
                          work.I, work.m33[0], work.v6[0, :3])
    crba(data.link_parent, data.link_coord, data.link_mass, data.link_rep, data.rep_parent,
         data.mass_pos, work.S, work.I, work.Ic, values, work.v6[0])


@nb.njit(**_LEAF)
def _add_point_force(F, link, x, f):
    """Spatial force of a world force f at world point x onto link (moment about the origin)."""
    if link < 0:
        return
    F[link, 0] += x[1] * f[2] - x[2] * f[1]
    F[link, 1] += x[2] * f[0] - x[0] * f[2]
    F[link, 2] += x[0] * f[1] - x[1] * f[0]
    F[link, 3] += f[0]
    F[link, 4] += f[1]
    F[link, 5] += f[2]


@nb.njit(**_WRAP)
def applied_loads(data, work, t, F):
    """Spatial forces of point forces and springs on each link (F zeroed by the caller)."""
    tmp = work.tmp
    x, f, xa, xb = tmp[0], tmp[1], tmp[2], tmp[3]
    va, vb = tmp[4], tmp[5]
    for i in range(data.pf_link.shape[0]):
        lk = data.pf_link[i]
        for c in range(3):
            fid = data.pf_fn[i, c]
            x[c] = work.fval[fid, 0] if fid >= 0 else 0.0
        if data.pf_frame[i] == 1:  # body axes: R_WL R_LB f
            for c in range(3):
                f[c] = (data.pf_R[i, c, 0] * x[0] + data.pf_R[i, c, 1] * x[1]
                        + data.pf_R[i, c, 2] * x[2])
            _world_vector(work.R, lk, f, x)
        for c in range(3):
            f[c] = x[c]
        _world_point(work.R, work.p, lk, data.pf_point[i], x)
        _add_point_force(F, lk, x, f)
    for i in range(data.sp_k.shape[0]):
        la, lb = data.sp_link_a[i], data.sp_link_b[i]
        _world_point(work.R, work.p, la, data.sp_pa[i], xa)
        _world_point(work.R, work.p, lb, data.sp_pb[i], xb)
        _point_velocity(work.V, la, xa, va)
        _point_velocity(work.V, lb, xb, vb)
        L = math.sqrt((xb[0] - xa[0]) ** 2 + (xb[1] - xa[1]) ** 2 + (xb[2] - xa[2]) ** 2)
        if L < 1e-12:
            continue
        rate = ((xb[0] - xa[0]) * (vb[0] - va[0]) + (xb[1] - xa[1]) * (vb[1] - va[1])
                + (xb[2] - xa[2]) * (vb[2] - va[2])) / L
        tension = data.sp_k[i] * (L - data.sp_l0[i]) + data.sp_c[i] * rate
        if data.sp_fn[i] >= 0:
            tension -= work.fval[data.sp_fn[i], 0]
        for c in range(3):
            f[c] = -tension * (xb[c] - xa[c]) / L
        _add_point_force(F, lb, xb, f)
        for c in range(3):
            f[c] = -f[c]
        _add_point_force(F, la, xa, f)


@nb.njit(**_WRAP)
def rnea_tip_to_base(data, work, out):
    """Q = S_k . (external spatial force of the subtree) - tau_RNEA(q, qd, 0) with gravity.

    Needs positions, velocities, spatial inertias and applied loads (``work.F`` holds the
    external spatial forces on entry and is overwritten).
    """
    n = data.n_q
    g = data.gravity
    h, a = work.v6[0], work.v6[1]
    for k in range(n):
        if data.link_mass[k] == 0.0:       # no inertia: only the applied loads
            for i in range(6):
                work.F[k, i] = -work.F[k, i]
            continue
        for i in range(3):
            a[i] = work.A[k, i]
            a[i + 3] = work.A[k, i + 3] - g[i]
        for i in range(6):
            s = 0.0
            sv = 0.0
            for j in range(6):
                s += work.I[k, i, j] * a[j]
                sv += work.I[k, i, j] * work.V[k, j]
            h[i] = sv
            work.F[k, i] = s - work.F[k, i]
        # + V x* (I V): (w x h_ang + v x h_lin, w x h_lin)
        V = work.V[k]
        work.F[k, 0] += V[1] * h[2] - V[2] * h[1] + V[4] * h[5] - V[5] * h[4]
        work.F[k, 1] += V[2] * h[0] - V[0] * h[2] + V[5] * h[3] - V[3] * h[5]
        work.F[k, 2] += V[0] * h[1] - V[1] * h[0] + V[3] * h[4] - V[4] * h[3]
        work.F[k, 3] += V[1] * h[5] - V[2] * h[4]
        work.F[k, 4] += V[2] * h[3] - V[0] * h[5]
        work.F[k, 5] += V[0] * h[4] - V[1] * h[3]
    for k in range(n - 1, -1, -1):
        tau = 0.0
        for i in range(6):
            tau += work.S[k, i] * work.F[k, i]
        out[data.link_coord[k]] = -tau
        par = data.link_parent[k]
        if par >= 0:
            for i in range(6):
                work.F[par, i] += work.F[k, i]


@nb.njit(**_WRAP)
def force_values(data, work, q, qd, t, out, compute_state):
    """f - b qd of eq. (1): gravity, applied loads, joint forces and velocity terms."""
    if compute_state:
        positions(data, work, q)
        calc_spatial_inertias(data.link_mass, data.link_com, data.link_inertia, work.R,
                              work.p, work.I, work.m33[0], work.v6[0, :3])
        velocities(data, work, qd)
        at_time(data, work, t)
    work.F[:] = 0.0
    applied_loads(data, work, t, work.F)
    rnea_tip_to_base(data, work, out)
    for i in range(data.jf_coord.shape[0]):
        out[data.link_coord[data.jf_coord[i]]] += work.fval[data.jf_fn[i], 0]


@nb.njit(**_WRAP)
def inverse_dynamics(data, work, q, qd, qdd, t, out):
    """tau = a qdd + b qd - f (unconstrained), by RNEA with full accelerations."""
    positions(data, work, q)
    calc_spatial_inertias(data.link_mass, data.link_com, data.link_inertia, work.R, work.p,
                          work.I, work.m33[0], work.v6[0, :3])
    calc_accelerations_base_to_tip(data.link_parent, data.link_coord, work.S, qd, qdd, work.V,
                                   work.A, work.v6[0])
    at_time(data, work, t)
    work.F[:] = 0.0
    applied_loads(data, work, t, work.F)
    rnea_tip_to_base(data, work, out)
    for i in range(data.n_q):
        out[i] = -out[i]
    for i in range(data.jf_coord.shape[0]):
        out[data.link_coord[data.jf_coord[i]]] -= work.fval[data.jf_fn[i], 0]


# ---- protocol ------------------------------------------------------------------------------
@overload(protocol.calc_phi, jit_options=protocol.JIT)
def _calc_phi(data, work, q, t, rows, phi):
    if protocol.is_type(data, RelativeData):
        return lambda data, work, q, t, rows, phi: phi_rows(data, work, q, t, rows, phi)


@overload(protocol.calc_phi_q, jit_options=protocol.JIT)
def _calc_phi_q(data, work, q, t, rows, values):
    if protocol.is_type(data, RelativeData):
        return lambda data, work, q, t, rows, values: jacobian_rows(data, work, q, t, rows,
                                                                    values, True)


@overload(protocol.calc_phi_t, jit_options=protocol.JIT)
def _calc_phi_t(data, work, q, t, rows, out):
    if protocol.is_type(data, RelativeData):
        return lambda data, work, q, t, rows, out: phi_t_rows(data, work, q, t, rows, out)


@overload(protocol.calc_gamma, jit_options=protocol.JIT)
def _calc_gamma(data, work, q, qd, t, rows, out):
    if protocol.is_type(data, RelativeData):
        return lambda data, work, q, qd, t, rows, out: gamma_rows(data, work, q, qd, t, rows,
                                                                  out, True)


@overload(protocol.calc_mass, jit_options=protocol.JIT)
def _calc_mass(data, work, q, values):
    if protocol.is_type(data, RelativeData):
        return lambda data, work, q, values: mass_values(data, work, q, values, True)


@overload(protocol.calc_forces, jit_options=protocol.JIT)
def _calc_forces(data, work, q, qd, t, out):
    if protocol.is_type(data, RelativeData):
        return lambda data, work, q, qd, t, out: force_values(data, work, q, qd, t, out, True)


@nb.njit(**_JIT)
def trajectory(data, work, Q, QD, QDD, R, P, V, A, kinetic):
    """Link frames, spatial velocities and accelerations (no gravity) and kinetic energy
    (1/2 sum V.I V) of every state of a trajectory: R (m, n, 3, 3), P (m, n, 3), V, A (m, n, 6)."""
    for s in range(Q.shape[0]):
        positions(data, work, Q[s])
        calc_spatial_inertias(data.link_mass, data.link_com, data.link_inertia, work.R, work.p,
                              work.I, work.m33[0], work.v6[0, :3])
        calc_accelerations_base_to_tip(data.link_parent, data.link_coord, work.S, QD[s], QDD[s],
                                       work.V, work.A, work.v6[0])
        T = 0.0
        for k in range(data.n_q):
            if data.link_mass[k] == 0.0:
                continue
            for i in range(6):
                for j in range(6):
                    T += 0.5 * work.V[k, i] * work.I[k, i, j] * work.V[k, j]
        kinetic[s] = T
        R[s] = work.R
        P[s] = work.p
        V[s] = work.V
        A[s] = work.A
