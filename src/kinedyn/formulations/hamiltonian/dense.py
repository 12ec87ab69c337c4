"""Dense Lagrangian reference for open chains: ``M(q) qdd = -b(q, qd)``, solved in O(N^3).

The independent cross-check of HDCA and the O(N^3) baseline of its benchmark. Spatial vectors
are referred to the world origin (Featherstone's planar spatial algebra): a joint's axis is
``s = [r_y, -r_x, 1]`` (revolute at r) or ``[u, 0]`` (prismatic along u); a body's inertia at
the origin is eq. (5) of the HDCA paper with ``s_OC`` the centre of mass. The mass matrix comes
from the composite-rigid-body algorithm (``M_ij = s_i^T I^c_max(i,j) s_j``), the bias
(Coriolis, centrifugal, gravity) from the recursive Newton-Euler algorithm with ``qdd = 0`` and
the base accelerated by ``-g``; then ``qdd = M^-1 (-b)`` by LAPACK (``numpy.linalg.solve``).
Only the forward kinematics (joint points and axes) is shared with HDCA.
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .. import protocol
from .kernels import REVOLUTE, HDCAData, HDCAWork, forward_kinematics


class DenseChain(NamedTuple):
    """An open chain's data for the dense method (the state is ``y = [q; qd]``)."""
    chain: HDCAData


class DenseWork(NamedTuple):
    chain: HDCAWork
    s: np.ndarray      # (n_j, 3) joint axes at the origin
    I: np.ndarray      # (n_b, 3, 3) body inertias at the origin, then composite inertias
    M: np.ndarray      # (n_j, n_j)
    b: np.ndarray      # (n_j,) bias
    V: np.ndarray      # (n_b, 3) body spatial velocities
    A: np.ndarray      # (n_b, 3) bias accelerations
    F: np.ndarray      # (n_b, 3) forces, then subtree forces


def make_dense(data: HDCAData, work: HDCAWork) -> tuple[DenseChain, DenseWork]:
    if data.closed:
        from ...errors import ModelError
        raise ModelError("the dense reference handles open chains only")
    n, nb_ = data.n_j, data.n_b
    dt = data.mass.dtype
    return DenseChain(data), DenseWork(work, np.zeros((n, 3), dt), np.zeros((nb_, 3, 3), dt),
                                       np.zeros((n, n), dt), np.zeros(n, dt),
                                       np.zeros((nb_, 3), dt), np.zeros((nb_, 3), dt),
                                       np.zeros((nb_, 3), dt))


@nb.njit(cache=True, nogil=True)
def _axes_and_inertias(data, work, dw, q):
    forward_kinematics(data, work, q, 0, data.n_b)
    for k in range(data.n_j):
        if data.jtype[k] == REVOLUTE:
            dw.s[k, 0], dw.s[k, 1], dw.s[k, 2] = work.joint[k, 1], -work.joint[k, 0], 1.0
        else:
            dw.s[k, 0], dw.s[k, 1], dw.s[k, 2] = work.H[k, 0], work.H[k, 1], 0.0
    for b in range(data.n_b):
        m = data.mass[b]
        cx, cy = work.cw[b, 0], work.cw[b, 1]
        I = dw.I[b]
        I[0, 0], I[0, 1], I[0, 2] = m, 0.0, -m * cy
        I[1, 0], I[1, 1], I[1, 2] = 0.0, m, m * cx
        I[2, 0], I[2, 1] = -m * cy, m * cx
        I[2, 2] = 1.0 / data.inv_inertia[b] + m * (cx * cx + cy * cy)


@nb.njit(cache=True, nogil=True)
def mass_and_bias(data, work, dw, q, qd):
    """Fill ``dw.M`` (CRBA) and ``dw.b`` (RNEA, qdd = 0, gravity included)."""
    n = data.n_j
    _axes_and_inertias(data, work, dw, q)
    vx = vy = w = 0.0
    ax, ay, al = -data.gravity[0], -data.gravity[1], 0.0
    for k in range(n):  # base to tip: velocities and bias accelerations
        s = dw.s[k]
        # a += crm(V_parent) s qd_k
        cx = (-w * s[1] + vy * s[2]) * qd[k]
        cy = (w * s[0] - vx * s[2]) * qd[k]
        ax, ay = ax + cx, ay + cy
        vx, vy, w = vx + s[0] * qd[k], vy + s[1] * qd[k], w + s[2] * qd[k]
        dw.V[k, 0], dw.V[k, 1], dw.V[k, 2] = vx, vy, w
        dw.A[k, 0], dw.A[k, 1], dw.A[k, 2] = ax, ay, al
    for k in range(n):  # f = I a + crf(V) I V
        I = dw.I[k]
        V = dw.V[k]
        h0 = I[0, 0] * V[0] + I[0, 1] * V[1] + I[0, 2] * V[2]
        h1 = I[1, 0] * V[0] + I[1, 1] * V[1] + I[1, 2] * V[2]
        for i in range(3):
            dw.F[k, i] = I[i, 0] * dw.A[k, 0] + I[i, 1] * dw.A[k, 1] + I[i, 2] * dw.A[k, 2]
        dw.F[k, 0] += -V[2] * h1
        dw.F[k, 1] += V[2] * h0
        dw.F[k, 2] += -V[1] * h0 + V[0] * h1
    for k in range(n - 1, -1, -1):  # tip to base: subtree forces and composite inertias
        if k + 1 < n:
            for i in range(3):
                dw.F[k, i] += dw.F[k + 1, i]
                for j in range(3):
                    dw.I[k, i, j] += dw.I[k + 1, i, j]
        s = dw.s[k]
        dw.b[k] = s[0] * dw.F[k, 0] + s[1] * dw.F[k, 1] + s[2] * dw.F[k, 2]
    for j in range(n):  # M_ij = s_i . (I^c_j s_j), i <= j
        I = dw.I[j]
        s = dw.s[j]
        f0 = I[0, 0] * s[0] + I[0, 1] * s[1] + I[0, 2] * s[2]
        f1 = I[1, 0] * s[0] + I[1, 1] * s[1] + I[1, 2] * s[2]
        f2 = I[2, 0] * s[0] + I[2, 1] * s[1] + I[2, 2] * s[2]
        for i in range(j + 1):
            v = dw.s[i, 0] * f0 + dw.s[i, 1] * f1 + dw.s[i, 2] * f2
            dw.M[i, j] = v
            dw.M[j, i] = v


def dense_derivative(system, work, y, t, ydot):
    data = system.chain
    n = data.n_j
    q, qd = y[:n], y[n:]
    mass_and_bias(data, work.chain, work, q, qd)
    for i in range(n):
        ydot[i] = qd[i]
        work.b[i] = -work.b[i]
    ydot[n:] = np.linalg.solve(work.M, work.b)
    return 0


protocol.implement_ode(DenseChain, dense_derivative)
