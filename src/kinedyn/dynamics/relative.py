"""Forward dynamics in relative coordinates with the paper's solvers (sparse-relative, sec. 4).

:class:`RelativeDynamics` integrates ``y = [q; qd]`` with a fixed-step integrator (the paper:
explicit Euler at 1.2 ms); each evaluation is one fused, compiled pass - kinematics base-to-tip
once, the mass matrix a(q) (CRBA), ``f - b qd`` (RNEA), B and gamma (eq. 4), then a linear
solver of :mod:`kinedyn.linalg.relative` for eqs. (3) / (5)-(6), with optional Baumgarte
stabilisation ``gamma - 2 alpha Phi' - beta^2 Phi`` of the constraint drift.

>>> import kinedyn
>>> from kinedyn.formulations.relative import Relative
>>> dyn = RelativeDynamics(Relative(kinedyn.models.get("four-bar").compile()), solver="block")
>>> res = dyn.simulate(t_end=0.5, dt=1e-3)
>>> bool(abs(res.q[-1] - res.q[0]).max() > 0)
True
"""
from __future__ import annotations

import math
import time as _time
from typing import NamedTuple

import numba as nb
import numpy as np

from ..errors import (UnknownNameError, check_baumgarte, check_number, coordinates,
                      record_interval, run_steps)
from ..formulations import protocol
from ..formulations.relative import kernels as RK
from ..kinematics.assembly import POSE_TIME, assemble
from ..linalg import relative as LR
from ..model.compiled import functions_defined, require_positive_distances
from . import integrators as I


class RelativeMethod(NamedTuple):
    form: tuple            # RelativeData
    rows: np.ndarray       # every constraint row
    solver: tuple          # RelativeSolver
    alpha: float           # Baumgarte
    beta: float


class RelativeMethodWork(NamedTuple):
    form: tuple
    solver: tuple
    mass: np.ndarray       # (nnz_a,)
    jac: np.ndarray        # (nnz_B,)
    Q: np.ndarray          # (n,)
    gamma: np.ndarray      # (m,)
    phi: np.ndarray        # (m,)
    phit: np.ndarray       # (m,)
    qdd: np.ndarray        # (n,)
    lam: np.ndarray        # (m,)
    solve_time: np.ndarray  # (1,) unused placeholder for symmetry with Python timing


@nb.njit(cache=True, nogil=True, inline="always")
def evaluate(system, work, q, qd, t):
    """Fill a, Q = f - b qd, B and (stabilised) gamma at one state (one kinematic pass)."""
    data, fw = system.form, work.form
    RK.positions(data, fw, q)
    RK.velocities(data, fw, qd)
    RK.at_time(data, fw, t)
    RK.mass_values(data, fw, q, work.mass, False)
    RK.force_values(data, fw, q, qd, t, work.Q, False)
    RK.jacobian_rows(data, fw, q, t, system.rows, work.jac, False)
    RK.gamma_rows(data, fw, q, qd, t, system.rows, work.gamma, False)
    if system.alpha != 0.0 or system.beta != 0.0:
        RK.phi_rows(data, fw, q, t, system.rows, work.phi)
        RK.phi_t_rows(data, fw, q, t, system.rows, work.phit)
        for i in range(system.rows.shape[0]):
            r = system.rows[i]
            rate = work.phit[i]
            for p in range(data.jac_indptr[r], data.jac_indptr[r + 1]):
                rate += work.jac[p] * qd[data.jac_indices[p]]
            work.gamma[i] -= 2.0 * system.alpha * rate + system.beta ** 2 * work.phi[i]


def _derivative(system, work, y, t, ydot):
    n = system.form.n_q
    q = y[:n]
    qd = y[n:]
    evaluate(system, work, q, qd, t)
    st = LR.solve_accelerations(system.solver, work.solver, work.mass, work.jac, work.Q,
                                work.gamma, work.qdd, work.lam)
    if st != 0:
        return st
    for i in range(n):
        ydot[i] = qd[i]
        ydot[n + i] = work.qdd[i]
    return 0


protocol.implement_ode(RelativeMethod, _derivative, inline="llvm")


@nb.njit(cache=True, nogil=True)
def time_linear_solves(system, work, n_repeat):
    """Repeat only the linear solve at the current a, B, Q, gamma (for timing it alone)."""
    st = 0
    for _ in range(n_repeat):
        st = LR.solve_accelerations(system.solver, work.solver, work.mass, work.jac, work.Q,
                                    work.gamma, work.qdd, work.lam)
    return st


class RelativeResults(NamedTuple):
    time: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    wall: float
    steps: int


class RelativeDynamics:
    """Relative-coordinate forward dynamics with a chosen linear solver.

    Parameters: ``f`` a :class:`~kinedyn.formulations.relative.Relative`; ``solver`` one of
    ``augmented, reduced, dbbd, block`` (:mod:`kinedyn.linalg.relative`); ``integrator``
    ``euler`` (default, as the paper), ``semi-implicit-euler`` or ``rk4``; ``baumgarte``
    ``(alpha, beta)``; ``q0`` (assembled from ``f.q0`` by default), ``qd0`` (default zero,
    made consistent).
    """

    def __init__(self, f, *, solver: str = "reduced", integrator: str = "euler",
                 baumgarte=(0.0, 0.0), q0=None, qd0=None, t0: float = 0.0):
        if solver not in LR.SOLVERS[:4]:
            raise UnknownNameError("relative-coordinate solver", solver, LR.SOLVERS[:4])
        baumgarte = check_baumgarte(baumgarte)
        check_number("t0", t0, -math.inf)
        self.f = f
        self.solver_name = solver
        self.integrator = integrator
        self.code = I.integrator_code(integrator)
        self.t0 = float(t0)
        with functions_defined(f.model, (self.t0,)):
            q = assemble(f, f.q0 if q0 is None else q0, t0, 1e-12,
                         pose_time=POSE_TIME if q0 is None else None)
            qd = np.zeros(f.n_q) if qd0 is None else coordinates(f, qd0, "qd0").copy()
            if f.n_c:
                B = f.phi_q(q, t0)
                r = B @ qd + f.phi_t(q, t0)
                qd -= np.linalg.lstsq(B, r, rcond=None)[0]
        self.q_initial, self.qd_initial = q, qd
        rows = np.arange(f.n_c, dtype=np.int64)
        solver_, swork = LR.analyse(solver, f, rows)
        self.system = RelativeMethod(f.data, rows, solver_, float(baumgarte[0]),
                                     float(baumgarte[1]))
        m = f.n_c
        self.work = RelativeMethodWork(f.make_work(), swork, np.zeros(len(f.data.mass_indices)),
                                       np.zeros(len(f.data.jac_indices)), np.zeros(f.n_q),
                                       np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(f.n_q),
                                       np.zeros(m), np.zeros(1))

    def accelerations(self, q, qd, t: float = 0.0):
        """qdd and lam at one state (raises the solver's error on failure)."""
        n = self.f.n_q
        y = np.concatenate([q, qd]).astype(float)
        ydot = np.zeros(2 * n)
        with functions_defined(self.f.model, (float(t),)):
            st = _derivative_c(self.system, self.work, y, float(t), ydot)
        LR.check(st, self.work.solver, self.f, t)
        return ydot[n:].copy(), self.work.lam.copy()

    def simulate(self, t_end: float, dt: float, *, record_every: int = 1) -> RelativeResults:
        n_steps = run_steps(self.t0, t_end, dt)
        record_every = record_interval(record_every, n_steps, self.t0, dt)
        require_positive_distances(self.f.model, lambda: self.t0 + dt * np.arange(n_steps + 1))
        n = self.f.n_q
        out = np.zeros((n_steps // record_every + 1, 2 * n))
        y = np.concatenate([self.q_initial, self.qd_initial])
        scratch = I.make_scratch(2 * n)
        start = _time.perf_counter()
        with functions_defined(self.f.model, lambda: I.stage_times(self.t0, dt, n_steps)):
            st, k = I.integrate_fixed(self.system, self.work, y, self.t0, dt, n_steps,
                                      self.code, n, True, record_every, out, scratch)
        wall = _time.perf_counter() - start
        LR.check(st, self.work.solver, self.f, self.t0 + k * dt)
        times = self.t0 + dt * record_every * np.arange(len(out))
        I.check_finite(out, times, self.integrator, dt)
        return RelativeResults(times, out[:, :n], out[:, n:], wall, n_steps)


@nb.njit(cache=True)
def _derivative_c(system, work, y, t, ydot):
    return protocol.calc_state_derivative(system, work, y, t, ydot)
