"""Spatial algebra of the chain at the world origin: the dense reference and the momentum map.

Featherstone's planar spatial vectors referred to the world origin: a body's velocity ``V =
[v_x, v_y, omega]`` (the velocity of the body point at the origin), a joint's axis ``s =
[r_y, -r_x, 1]`` (revolute at r) or ``[u, 0]`` (prismatic along u), a body's inertia at the
origin eq. (5) of the HDCA paper with ``s_OC`` the centre of mass; ``crm(V) s`` is the rate of
an axis carried by a body moving at V, ``crf(V) h`` that of a momentum. The passes below serve
the dense Lagrangian reference (:mod:`.dense`: composite-rigid-body mass matrix, recursive
Newton-Euler bias) and the momentum map of semi-implicit Euler in ``[q; p]``
(:func:`momenta`). Every chain body k hangs from joint k, so the passes are plain loops base
to tip and back; a closed chain's loop-closing joint carries no body and has no momentum.
The module also registers HDCA's compiled protocol (its derivatives and momenta).
"""
from __future__ import annotations

import numba as nb

from ..._jit import INLINED, INLINED_WORKER
from .. import protocol
from .kernels import (REVOLUTE, HDCAData, OriginWork, evaluate_state, evaluate_state_momenta,
                      kinematics_at)

__all__ = ["OriginWork", "axes_and_inertias", "calc_momenta", "momenta", "motion_and_forces"]


@nb.njit(**INLINED_WORKER)
def axes_and_inertias(data, work, q):
    """Forward kinematics at ``q`` (into ``work``, unless it holds them), then
    ``work.spatial``'s axes and inertias."""
    kinematics_at(data, work, q)
    o = work.spatial
    for k in range(data.n_j):
        if data.jtype[k] == REVOLUTE:
            o.s[k, 0], o.s[k, 1], o.s[k, 2] = work.joint[k, 1], -work.joint[k, 0], 1.0
        else:
            o.s[k, 0], o.s[k, 1], o.s[k, 2] = work.H[k, 0], work.H[k, 1], 0.0
    for b in range(data.n_b):
        m = data.mass[b]
        cx, cy = work.cw[b, 0], work.cw[b, 1]
        I = o.I[b]
        I[0, 0], I[0, 1], I[0, 2] = m, 0.0, -m * cy
        I[1, 0], I[1, 1], I[1, 2] = 0.0, m, m * cx
        I[2, 0], I[2, 1] = -m * cy, m * cx
        I[2, 2] = 1.0 / data.inv_inertia[b] + m * (cx * cx + cy * cy)


@nb.njit(**INLINED_WORKER)
def motion_and_forces(data, o, qd, ax, ay):
    """Base to tip: velocities ``V`` and bias accelerations ``A`` (the base accelerated by
    ``(ax, ay)``, the joint accelerations zero: ``A_k = A_(k-1) + crm(V_(k-1)) s_k qd_k``),
    then each body's ``F = I A + crf(V) I V``."""
    vx = vy = w = 0.0
    al = 0.0
    for k in range(data.n_b):
        s = o.s[k]
        cx = (-w * s[1] + vy * s[2]) * qd[k]  # crm(V_parent) s qd_k
        cy = (w * s[0] - vx * s[2]) * qd[k]
        ax, ay = ax + cx, ay + cy
        vx, vy, w = vx + s[0] * qd[k], vy + s[1] * qd[k], w + s[2] * qd[k]
        o.V[k, 0], o.V[k, 1], o.V[k, 2] = vx, vy, w
        o.A[k, 0], o.A[k, 1], o.A[k, 2] = ax, ay, al
    for k in range(data.n_b):
        I = o.I[k]
        V = o.V[k]
        h0 = I[0, 0] * V[0] + I[0, 1] * V[1] + I[0, 2] * V[2]
        h1 = I[1, 0] * V[0] + I[1, 1] * V[1] + I[1, 2] * V[2]
        for i in range(3):
            o.F[k, i] = I[i, 0] * o.A[k, 0] + I[i, 1] * o.A[k, 1] + I[i, 2] * o.A[k, 2]
        o.F[k, 0] += -V[2] * h1
        o.F[k, 1] += V[2] * h0
        o.F[k, 2] += -V[1] * h0 + V[0] * h1


@nb.njit(cache=True, nogil=True, inline="always")
def momenta(data, work, q, qd, p, rate):
    """The canonical momenta of the joint rates ``qd`` at ``q``, ``p = M(q) qd``, and their
    rate at constant ``qd``, ``rate = (dM/dt) qd`` (dM/dt along ``qd``), in one O(N) pass.

    ``p_k = s_k . sum_(b >= k) I_b V_b``, the momentum of the bodies beyond joint k on its axis,
    so ``rate_k = (crm(V_(k-1)) s_k) . sum I_b V_b + s_k . sum F_b`` with the bodies' ``F`` at
    zero joint accelerations (:func:`motion_and_forces`, no gravity). For a closed chain these
    are the momenta of its tree (the loop-closing joint's 0), which HDCA maps back to ``qd``
    when ``qd`` satisfies the loop's velocity constraints: they differ from HDCA's own by
    constraint impulses only (``Phi_q^T sigma``, mapped to zero). Semi-implicit Euler in
    ``[q; p]`` (:func:`kinedyn.dynamics.integrators.step`) needs both."""
    axes_and_inertias(data, work, q)
    o = work.spatial
    motion_and_forces(data, o, qd, 0.0, 0.0)
    h0 = h1 = h2 = f0 = f1 = f2 = 0.0
    for k in range(data.n_b - 1, -1, -1):
        I, V, F, s = o.I[k], o.V[k], o.F[k], o.s[k]
        h0 += I[0, 0] * V[0] + I[0, 1] * V[1] + I[0, 2] * V[2]
        h1 += I[1, 0] * V[0] + I[1, 1] * V[1] + I[1, 2] * V[2]
        h2 += I[2, 0] * V[0] + I[2, 1] * V[1] + I[2, 2] * V[2]
        f0, f1, f2 = f0 + F[0], f1 + F[1], f2 + F[2]
        if k > 0:
            vx, vy, w = o.V[k - 1, 0], o.V[k - 1, 1], o.V[k - 1, 2]
        else:
            vx = vy = w = 0.0
        d0, d1 = -w * s[1] + vy * s[2], w * s[0] - vx * s[2]  # crm(V_(k-1)) s_k
        p[k] = s[0] * h0 + s[1] * h1 + s[2] * h2
        rate[k] = d0 * h0 + d1 * h1 + s[0] * f0 + s[1] * f1 + s[2] * f2
    for k in range(data.n_b, data.n_j):
        p[k] = 0.0
        rate[k] = 0.0


@nb.njit(**INLINED)
def calc_momenta(data, work, q, qd, p, rate):
    """:func:`momenta` for the integrators (``protocol.calc_momenta``), inlined by LLVM: the
    passes inlined at the Numba IR level into the integrator's step made Numba's SSA check
    warn and a real call copies the NamedTuples (4 us per step on a double pendulum)."""
    momenta(data, work, q, qd, p, rate)


# ---- the compiled protocol: HDCA is itself an ODE on y = [q; p] -------------------------------------
def _derivative(system, work, y, t, ydot):
    return evaluate_state(system, work, y, ydot)


def _derivative_same_position(system, work, y, t, ydot):
    return evaluate_state_momenta(system, work, y, ydot)


protocol.implement_ode(HDCAData, _derivative, momenta=calc_momenta,
                       same_position=_derivative_same_position, inline="llvm")
