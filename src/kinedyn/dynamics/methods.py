"""Forward-dynamics methods as compiled systems for the generic integrators.

Each method is a NamedTuple holding the formulation's data, the constraint rows it enforces
(the independent ones) and a linear solver; its work NamedTuple holds the formulation's work,
the solver's work and scratch. All are written against the protocol, so they run on any
formulation that implements ``calc_mass, calc_forces, calc_phi, calc_phi_q, calc_phi_t,
calc_gamma``.

* ``augmented``  index-1 form ``[M J^T; J 0][qdd; lam] = [Q; gamma_hat]`` (sparse-relative paper
  eq. 3), ``gamma_hat = gamma - 2 alpha phi' - beta^2 phi`` (Baumgarte, thesis eq. 2.16-2.18);
* ``projection`` the same, then positions and velocities projected onto the constraint manifold
  after each step (M-weighted least-change projection, closure to ``tol``);
* ``penalty``    augmented-Lagrangian penalty iteration, thesis eqs. 2.22-2.23:
  ``qdd0 = M^-1 Q``, ``(M + J^T rho J) qdd_k = M qdd_{k-1} - J^T rho (-gamma + 2 omega zeta phi' +
  omega^2 phi)``;
* ``partitioning`` coordinate partitioning (thesis section 2.1.5): only the independent
  coordinates are integrated; dependent positions and velocities are solved from the constraints
  each evaluation (Newton-Raphson, eqs. 1-2 of the Group Equations paper) and accelerations from
  the index-1 system. After each step the influence matrix ``B = -Phi_d^-1 Phi_i`` (thesis eq.
  2.26) is checked: when its largest entry exceeds ``influence_limit`` the dependent block is
  nearly singular (the independent coordinates stop describing the motion, and Newton could jump
  to another assembly branch), and the step returns :data:`REPARTITION` so that the caller picks
  a new partition from the state at the start of the step and repeats it.
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .._jit import INLINED, INLINED_WORKER
from ..formulations import protocol
from ..kinematics import kernels as K

#: Status of a partitioned step whose dependent block became ill-conditioned (choose again).
REPARTITION = 5


class Augmented(NamedTuple):
    form: tuple            # formulation data
    rows: np.ndarray       # constraint rows enforced (independent)
    select: tuple          # the same for the protocol functions (protocol.row_selection)
    n_q: int
    kkt_mass_pos: np.ndarray
    kkt_jac_src: np.ndarray
    kkt_jac_pos: np.ndarray
    kkt_jacT_pos: np.ndarray
    solver: tuple          # linear solver over the KKT pattern (values = KKT data)
    alpha: float           # Baumgarte (0, 0: plain index-1)
    beta: float
    project: bool          # projection method
    tol: float             # projection tolerance on max |phi|
    max_iter: int


class AugmentedWork(NamedTuple):
    form: tuple
    solver: tuple
    mass: np.ndarray   # (nnz_M,)
    jac: np.ndarray    # (nnz_J,) full Jacobian data
    kkt: np.ndarray    # (nnz_KKT,)
    Q: np.ndarray      # (n_q,)
    rhs: np.ndarray    # (n_q + n_c,)
    phi: np.ndarray    # (n_c,)
    phit: np.ndarray   # (n_c,)
    gamma: np.ndarray  # (n_c,)
    lam: np.ndarray    # (n_c,) multipliers of the last evaluation


@nb.njit(**INLINED_WORKER)
def _assemble_kkt(mass_pos, jac_src, jac_pos, jacT_pos, mass, jac, kkt):
    kkt[:] = 0.0
    for k in range(mass_pos.shape[0]):
        kkt[mass_pos[k]] += mass[k]
    for k in range(jac_src.shape[0]):
        v = jac[jac_src[k]]
        kkt[jac_pos[k]] += v
        kkt[jacT_pos[k]] += v


@nb.njit(**INLINED_WORKER)
def _rate_of_phi(rows, indptr, indices, jac, qd, phit, out):
    """out = J qd + phi_t over the rows (phi')."""
    for i in range(rows.shape[0]):
        r = rows[i]
        v = phit[i]
        for p in range(indptr[r], indptr[r + 1]):
            v += jac[p] * qd[indices[p]]
        out[i] = v


@nb.njit(**INLINED_WORKER)
def _unpack(n, y, rhs, lam, ydot):
    for i in range(n):
        ydot[i] = y[n + i]
        ydot[n + i] = rhs[i]
    for i in range(lam.shape[0]):
        lam[i] = rhs[n + i]


def _augmented_derivative(system, work, y, t, ydot):
    n = system.n_q
    nc = system.rows.shape[0]
    q = y[:n]
    qd = y[n:]
    form, fw = system.form, work.form
    protocol.calc_forces(form, fw, q, qd, t, work.Q)
    protocol.calc_mass(form, fw, q, work.mass)
    protocol.calc_phi_q(form, fw, q, t, system.select, work.jac)
    protocol.calc_gamma(form, fw, q, qd, t, system.select, work.gamma)
    _assemble_kkt(system.kkt_mass_pos, system.kkt_jac_src, system.kkt_jac_pos,
                  system.kkt_jacT_pos, work.mass, work.jac, work.kkt)
    rhs = work.rhs
    rhs[:n] = work.Q
    rhs[n:] = work.gamma
    if system.alpha != 0.0 or system.beta != 0.0:  # Baumgarte: gamma - 2 a phi' - b^2 phi
        protocol.calc_phi(form, fw, q, t, system.select, work.phi)
        protocol.calc_phi_t(form, fw, q, t, system.select, work.phit)
        _rate_of_phi(system.rows, form.jac_indptr, form.jac_indices, work.jac, qd, work.phit,
                     work.phit)
        for i in range(nc):
            rhs[n + i] -= 2.0 * system.alpha * work.phit[i] + system.beta ** 2 * work.phi[i]
    st = protocol.factorize(system.solver, work.solver, work.kkt)
    if st != 0:
        return st
    protocol.solve(system.solver, work.solver, rhs)
    _unpack(n, y, rhs, work.lam, ydot)
    return 0


def _augmented_project(system, work, y, t):
    """Project q onto phi = 0 and qd onto phi' = 0, least change in the M-metric.

    [M J^T; J 0][dq; mu] = [0; -phi] (iterated) and [M J^T; J 0][dv; mu] = [0; -phi'].
    """
    if not system.project:
        return 0
    n = system.n_q
    nc = system.rows.shape[0]
    q = y[:n]
    qd = y[n:]
    form, fw = system.form, work.form
    protocol.calc_mass(form, fw, q, work.mass)
    rhs = work.rhs
    for it in range(system.max_iter + 1):
        protocol.calc_phi_and_phi_q(form, fw, q, t, system.select, work.phi, work.jac)
        _assemble_kkt(system.kkt_mass_pos, system.kkt_jac_src, system.kkt_jac_pos,
                      system.kkt_jacT_pos, work.mass, work.jac, work.kkt)
        st = protocol.factorize(system.solver, work.solver, work.kkt)
        if st != 0:
            return st
        if K.max_abs(work.phi) <= system.tol:
            break
        if it == system.max_iter:
            return K.NO_CONVERGENCE
        rhs[:n] = 0.0
        for i in range(nc):
            rhs[n + i] = -work.phi[i]
        protocol.solve(system.solver, work.solver, rhs)
        for i in range(n):
            q[i] += rhs[i]
    protocol.calc_phi_t(form, fw, q, t, system.select, work.phit)
    _rate_of_phi(system.rows, form.jac_indptr, form.jac_indices, work.jac, qd, work.phit,
                 work.phit)
    rhs[:n] = 0.0
    for i in range(nc):
        rhs[n + i] = -work.phit[i]
    protocol.solve(system.solver, work.solver, rhs)
    for i in range(n):
        qd[i] += rhs[i]
    return 0


protocol.implement_ode(Augmented, _augmented_derivative, post=_augmented_project, inline="llvm")


# ---- penalty (augmented Lagrangian) -------------------------------------------------------------
class Penalty(NamedTuple):
    form: tuple
    rows: np.ndarray
    select: tuple          # the rows for the protocol functions (protocol.row_selection)
    n_q: int
    mass_solver: tuple     # solver over the mass pattern (values = mass data)
    pen_mass_pos: np.ndarray
    pair_row: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    pair_pos: np.ndarray
    pen_solver: tuple      # solver over the penalty pattern
    rho: float
    omega: float
    zeta: float
    iterations: int


class PenaltyWork(NamedTuple):
    form: tuple
    mass_solver: tuple
    pen_solver: tuple
    mass: np.ndarray
    jac: np.ndarray
    pen: np.ndarray
    Q: np.ndarray
    qdd: np.ndarray
    rhs: np.ndarray
    phi: np.ndarray
    phit: np.ndarray
    gamma: np.ndarray


@nb.njit(**INLINED_WORKER)
def _assemble_penalty(mass_pos, pair_row, pair_a, pair_b, pair_pos, rho, mass, jac, pen):
    pen[:] = 0.0
    for k in range(mass_pos.shape[0]):
        pen[mass_pos[k]] += mass[k]
    for k in range(pair_a.shape[0]):
        pen[pair_pos[k]] += jac[pair_a[k]] * rho * jac[pair_b[k]]


@nb.njit(**INLINED_WORKER)
def _penalty_rhs(rows, indptr, indices, mass_indptr, mass_indices, mass, jac, qdd, rho, omega,
                 zeta, phi, phid, gamma, out):
    """out = M qdd - J^T rho (-gamma + 2 omega zeta phi' + omega^2 phi)."""
    n = out.shape[0]
    for i in range(n):
        v = 0.0
        for p in range(mass_indptr[i], mass_indptr[i + 1]):
            v += mass[p] * qdd[mass_indices[p]]
        out[i] = v
    for i in range(rows.shape[0]):
        r = rows[i]
        w = rho * (-gamma[i] + 2.0 * omega * zeta * phid[i] + omega * omega * phi[i])
        for p in range(indptr[r], indptr[r + 1]):
            out[indices[p]] -= jac[p] * w


def _penalty_derivative(system, work, y, t, ydot):
    n = system.n_q
    q = y[:n]
    qd = y[n:]
    form, fw = system.form, work.form
    protocol.calc_forces(form, fw, q, qd, t, work.Q)
    protocol.calc_mass(form, fw, q, work.mass)
    protocol.calc_phi_and_phi_q(form, fw, q, t, system.select, work.phi, work.jac)
    protocol.calc_phi_t(form, fw, q, t, system.select, work.phit)
    protocol.calc_gamma(form, fw, q, qd, t, system.select, work.gamma)
    _rate_of_phi(system.rows, form.jac_indptr, form.jac_indices, work.jac, qd, work.phit,
                 work.phit)
    st = protocol.factorize(system.mass_solver, work.mass_solver, work.mass)  # qdd0 = M^-1 Q
    if st != 0:
        return st
    work.qdd[:] = work.Q
    protocol.solve(system.mass_solver, work.mass_solver, work.qdd)
    _assemble_penalty(system.pen_mass_pos, system.pair_row, system.pair_a, system.pair_b,
                      system.pair_pos, system.rho, work.mass, work.jac, work.pen)
    st = protocol.factorize(system.pen_solver, work.pen_solver, work.pen)
    if st != 0:
        return st
    for k in range(system.iterations):
        _penalty_rhs(system.rows, form.jac_indptr, form.jac_indices, form.mass_indptr,
                     form.mass_indices, work.mass, work.jac, work.qdd, system.rho, system.omega,
                     system.zeta, work.phi, work.phit, work.gamma, work.rhs)
        protocol.solve(system.pen_solver, work.pen_solver, work.rhs)
        work.qdd[:] = work.rhs
    for i in range(n):
        ydot[i] = qd[i]
        ydot[n + i] = work.qdd[i]
    return 0


protocol.implement_ode(Penalty, _penalty_derivative, inline="llvm")


# ---- coordinate partitioning --------------------------------------------------------------------
class Partitioned(NamedTuple):
    aug: tuple              # accelerations from the index-1 system (Augmented or schur.Schur)
    independent: np.ndarray  # (n_i,) independent coordinates (integrated)
    plan: tuple             # kinematics Plan: rows x dependent coordinates
    dep_solver: tuple       # solver over the dependent block
    tol: float
    max_iter: int
    influence_limit: float  # largest |B| entry accepted before re-partitioning


class PartitionedWork(NamedTuple):
    aug: tuple              # AugmentedWork or schur.SchurWork
    plan: tuple             # PlanWork
    dep_solver: tuple
    q: np.ndarray           # full coordinates (dependent ones warm-start Newton)
    qd: np.ndarray
    y: np.ndarray           # full state [q; qd] for the index-1 evaluation
    ydot: np.ndarray
    last: np.ndarray        # [time of the last completed state, 1 if the solver holds its factor]


@nb.njit(**INLINED_WORKER)
def _scatter_independent(ind, n, y, q, qd):
    ni = ind.shape[0]
    for k in range(ni):
        q[ind[k]] = y[k]
        qd[ind[k]] = y[ni + k]


@nb.njit(**INLINED_WORKER)
def _extrapolate(cols, h, q, qd):
    for i in range(cols.shape[0]):
        q[cols[i]] += h * qd[cols[i]]


@nb.njit(**INLINED_WORKER)
def _completed(ind, y, t, q, qd, last):
    """True when y at t is the state completed last, whose positions, velocities and factor
    the work still holds: the post-step, the record and the next step's first evaluation all
    meet the step's new state (RK4: 6 completions per step -> 4; semi-implicit Euler 3 -> 1).
    The times are compared to a few ulps (``t + dt`` and ``t0 + (s + 1) dt``); NaN never
    matches."""
    if last[1] == 0.0 or abs(t - last[0]) > 8.0 * np.finfo(np.float64).eps * max(1.0, abs(t)):
        return False
    ni = ind.shape[0]
    for k in range(ni):
        if q[ind[k]] != y[k] or qd[ind[k]] != y[ni + k]:
            return False
    return True


def _complete_state_passes(system, work, y, t):
    """Dependent positions and velocities from the independent state y.

    Positions by chord iterations with the factor of the dependent block held from the last
    completed state (:func:`kinedyn.kinematics.kernels.position_tracking`: one factorisation
    per call, at the solution, which the velocity problem then uses), from the last dependent
    coordinates extrapolated to ``t`` with their velocities; Newton-Raphson when no factor is
    held (the first call, after a failure); nothing to do for the state completed last
    (:func:`_completed`). Compiled twice: LLVM-inlined into the derivative and the post-step
    (a real call copied the method's NamedTuples, about 150 array descriptors, by value and
    called NRT_incref/decref on each, at every evaluation), a real call for a run's first
    record and for Python."""
    aug = system.aug
    n = aug.n_q
    if _completed(system.independent, y, t, work.q, work.qd, work.last):
        return 0
    _scatter_independent(system.independent, n, y, work.q, work.qd)
    held = work.last[1] != 0.0
    if held:
        _extrapolate(system.plan.cols, t - work.last[0], work.q, work.qd)
    st, it, err = K.position_tracking(aug.form, work.aug.form, system.dep_solver,
                                      work.dep_solver, system.plan, work.plan, work.q, t,
                                      system.tol, system.max_iter, held)
    if st != 0:
        work.last[1] = 0.0
    else:
        work.last[0] = t
        work.last[1] = 1.0
        K.velocity(aug.form, work.aug.form, system.dep_solver, work.dep_solver, system.plan,
                   work.plan, work.q, work.qd, t)
        _join(work.q, work.qd, work.y)
    return st


_complete_state = nb.njit(cache=True, nogil=True)(_complete_state_passes)
_complete_state_inlined = nb.njit(**INLINED)(_complete_state_passes)


@nb.njit(**INLINED_WORKER)
def _join(q, qd, y):
    n = q.shape[0]
    for i in range(n):
        y[i] = q[i]
        y[n + i] = qd[i]


@nb.njit(**INLINED_WORKER)
def _gather_independent(ind, n, full_dot, ydot):
    ni = ind.shape[0]
    for k in range(ni):
        ydot[k] = full_dot[ind[k]]
        ydot[ni + k] = full_dot[n + ind[k]]


def _partitioned_derivative(system, work, y, t, ydot):  # compiled by implement_ode, inlined
    st = _complete_state_inlined(system, work, y, t)
    if st == 0:  # (one exit: inlined)
        st = protocol.calc_state_derivative(system.aug, work.aug, work.y, t, work.ydot)
    if st == 0:
        _gather_independent(system.independent, system.aug.n_q, work.ydot, ydot)
    return st


def _partitioned_record(system, work, y, t, out):  # compiled by implement_ode, inlined
    if not _completed(system.independent, y, t, work.q, work.qd, work.last):
        _complete_state(system, work, y, t)  # a run's first record (post_step does the rest)
    out[:] = work.y


def _influence_passes(plan, pw, ind, solver, swork):
    """Largest entry of B = -Phi_d^-1 Phi_i (thesis eq. 2.26), with the dependent block
    factorised at the current state (after :func:`_complete_state`)."""
    worst = 0.0
    for k in range(ind.shape[0]):
        pw.rhs[:] = 0.0
        for c in range(plan.coupling_pos.shape[0]):
            if plan.coupling_col[c] == ind[k]:
                pw.rhs[plan.coupling_row[c]] = -pw.values[plan.coupling_pos[c]]
        protocol.solve(solver, swork, pw.rhs)
        worst = max(worst, K.max_abs(pw.rhs))
    return worst


_influence = nb.njit(**INLINED)(_influence_passes)


@nb.njit(cache=True, nogil=True)
def influence(system, work):
    """:func:`_influence_passes` of a partitioned system, callable from Python (the adaptive
    reference integrator)."""
    return _influence(system.plan, work.plan, system.independent, system.dep_solver,
                      work.dep_solver)


def _partitioned_post(system, work, y, t):  # compiled by implement_ode, inlined
    # inlined like the derivative: as a real call, the completion and the influence cost
    # ~60 % of an RK4 step in reference counts and copies of the NamedTuples' descriptors
    st = _complete_state_inlined(system, work, y, t)
    if st == 0 and _influence(system.plan, work.plan, system.independent, system.dep_solver,
                              work.dep_solver) > system.influence_limit:
        st = REPARTITION
    return st


@nb.njit(cache=True, nogil=True)
def complete_state(system, work, y, t):
    """:func:`_complete_state` callable from Python (the adaptive reference integrator)."""
    return _complete_state(system, work, y, t)


protocol.implement_ode(Partitioned, _partitioned_derivative, post=_partitioned_post,
                       record=_partitioned_record, inline="llvm")
