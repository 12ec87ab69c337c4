"""Index-3 formulation with the implicit HHT-alpha integrator (stiff models, redundant joints).

The DAE ``M qdd + Phi_q^T lam = Q, Phi(q, t) = 0`` (thesis eq. 2.9, index 3) is integrated with
the constraints kept at *position* level, as in the HHT-I3 method (Negrut, Rampalli, Ottarsson,
Haug 2007). Newmark's formulas give q, qd from the new accelerations ``a``,

    q+ = q + h qd + h^2 ((1/2 - beta) a_n + beta a),   qd+ = qd + h ((1 - gamma) a_n + gamma a),

and the unknowns ``(a, lam)`` solve, by Newton iterations,

    M a + (1 + alpha) (Phi_q^T lam - Q)(q+, qd+, t+) - alpha (Phi_q^T lam - Q)_n = 0,
    Phi(q+, t+) / (beta h^2) = 0,

with ``alpha in [-1/3, 0]`` (numerical damping of high frequencies), ``gamma = (1 - 2 alpha) /
2``, ``beta = (1 - alpha)^2 / 4``. The iteration matrix

    [[M - (1 + alpha) (beta h^2 K + gamma h C), (1 + alpha) Phi_q^T], [Phi_q, 0]],
    K = dQ/dq, C = dQ/dqd (finite differences),

is formed and LU-factorised once per step (modified Newton; one LAPACK ``dgetrf``, then a
``dgetrs`` per iteration), so a stiff spring-damper converges with steps far
beyond the explicit stability limit. With redundant constraints ``Phi_q`` loses rank and the
iteration matrix is singular; every constraint is then kept and each Newton update is the
minimum-norm least-squares solution (the multipliers are not unique, the motion is).

After each step the velocities are projected onto ``Phi_q qd + Phi_t = 0`` (least change in
the M-metric), which HHT-I3 alone leaves to drift at O(h^2). The whole run is compiled; per
step it costs a dense factorisation of size n_q + n_c (this method is for stiff and redundant
models, not for the fastest real-time runs). ``K`` and ``C`` are differenced only in the
coordinates the forces depend on (:func:`force_coordinates`: in natural coordinates gravity
and world-frame point forces are constant, so only springs, joint forces and body-frame forces
contribute columns); the other columns are exactly zero.
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .._jit import INLINED_WORKER
from .._unmanaged import unmanaged
from ..formulations import protocol
from ..kinematics import kernels as K
from ..linalg.lapack import dgetrf, dgetrs
from ..model.compiled import functions_defined
from .stopwatch import Stopwatch


class HHTData(NamedTuple):
    form: tuple
    rows: np.ndarray       # constraint rows kept (all rows when least_squares)
    select: tuple          # the same for the protocol functions (protocol.row_selection)
    n_q: int
    alpha: float
    beta: float
    gamma: float
    tol: float             # on max |Phi| and on the position update
    max_iter: int
    least_squares: bool    # redundant constraints: minimum-norm Newton updates
    fd_step: float         # finite-difference step of K and C
    fd_cols: np.ndarray    # (k,) coordinates Q depends on: the columns of K and C differenced


class HHTWork(NamedTuple):
    form: tuple
    mass_values: np.ndarray
    M: np.ndarray          # (n, n) dense mass
    Minv: np.ndarray       # (n, n) its inverse (constant in natural coordinates)
    jac: np.ndarray        # (nnz,) Jacobian values
    Jd: np.ndarray         # (m, n) dense Jacobian of the kept rows
    A: np.ndarray          # (n + m, n + m) iteration matrix
    r: np.ndarray          # (n + m,) residual / update
    phi: np.ndarray        # (m,)
    Q: np.ndarray          # (n,)
    Qp: np.ndarray         # (n,) scratch for finite differences
    q: np.ndarray          # (n,) trial positions
    qd: np.ndarray         # (n,) trial velocities
    a: np.ndarray          # (n,) accelerations (unknown)
    a_n: np.ndarray        # (n,) accelerations of the last step
    lam: np.ndarray        # (m,)
    f_n: np.ndarray        # (n,) (Phi_q^T lam - Q) of the last step
    ipiv: np.ndarray       # (n + m,) int32 LU pivots of A
    ints: np.ndarray       # [n + m, n + m, 1, info] int32 (LAPACK sizes)
    trans: np.ndarray      # 'T': A is stored row-major, i.e. LAPACK factorises A^T


@nb.njit(**INLINED_WORKER)
def _dense_jacobian(indptr, indices, rows, values, out):
    out[:] = 0.0
    for i in range(rows.shape[0]):
        r = rows[i]
        for p in range(indptr[r], indptr[r + 1]):
            out[i, indices[p]] = values[p]


@nb.njit(**INLINED_WORKER)
def _dense_mass(indptr, indices, values, out):
    out[:] = 0.0
    for i in range(out.shape[0]):
        for p in range(indptr[i], indptr[i + 1]):
            out[i, indices[p]] = values[p]


@nb.njit(cache=True, nogil=True)
def _inverse(A, least_squares):
    """Inverse of the iteration matrix, or its pseudo-inverse (minimum-norm least squares:
    singular values below 1e-10 of the largest dropped) when constraints are redundant."""
    if least_squares:
        return np.linalg.pinv(A, 1e-10)
    return np.linalg.inv(A)


@nb.njit(**INLINED_WORKER)
def _lu_factor(A, ipiv, ints):
    """LU of the row-major A in place (LAPACK sees A^T); returns LAPACK's info."""
    dgetrf(ints[0:].ctypes, ints[0:].ctypes, A.ctypes, ints[0:].ctypes, ipiv.ctypes,
           ints[3:].ctypes)
    return ints[3]


@nb.njit(**INLINED_WORKER)
def _lu_solve(A, ipiv, ints, trans, r):
    """r <- A^-1 r with the factor of :func:`_lu_factor` (transposed solve of A^T)."""
    dgetrs(trans.ctypes, ints[0:].ctypes, ints[2:].ctypes, A.ctypes, ints[0:].ctypes,
           ipiv.ctypes, r.ctypes, ints[0:].ctypes, ints[3:].ctypes)


@nb.njit(**INLINED_WORKER)
def _jt_lam_minus(indptr, indices, rows, jac, lam, Q, out):
    """out = Phi_q^T lam - Q from the sparse Jacobian values."""
    for i in range(out.shape[0]):
        out[i] = -Q[i]
    for i in range(rows.shape[0]):
        r = rows[i]
        li = lam[i]
        for p in range(indptr[r], indptr[r + 1]):
            out[indices[p]] += jac[p] * li


@nb.njit(cache=True, nogil=True)
def _constraint_force(s, w, q, t, out):
    """out = Phi_q(q)^T lam - Q, with Q evaluated at (w.q, w.qd) by the caller into w.Q."""
    protocol.calc_phi_q(s.form, w.form, q, t, s.select, w.jac)
    _jt_lam_minus(s.form.jac_indptr, s.form.jac_indices, s.rows, w.jac, w.lam, w.Q, out)


@nb.njit(cache=True, nogil=True)
def _iteration_matrix(s, w, t, h):
    """A = [[M - (1+alpha)(beta h^2 K + gamma h C), (1+alpha) J^T], [J, 0]] at (w.q, w.qd)."""
    n, m = s.n_q, s.rows.shape[0]
    c1 = 1.0 + s.alpha
    A = w.A
    A[:] = 0.0
    A[:n, :n] = w.M
    protocol.calc_forces(s.form, w.form, w.q, w.qd, t, w.Q)
    eps = s.fd_step
    for jj in range(s.fd_cols.shape[0]):  # K and C by forward differences, column j
        j = s.fd_cols[jj]
        keep = w.q[j]
        w.q[j] = keep + eps
        protocol.calc_forces(s.form, w.form, w.q, w.qd, t, w.Qp)
        w.q[j] = keep
        for i in range(n):
            A[i, j] -= c1 * s.beta * h * h * (w.Qp[i] - w.Q[i]) / eps
        keep = w.qd[j]
        w.qd[j] = keep + eps
        protocol.calc_forces(s.form, w.form, w.q, w.qd, t, w.Qp)
        w.qd[j] = keep
        for i in range(n):
            A[i, j] -= c1 * s.gamma * h * (w.Qp[i] - w.Q[i]) / eps
    protocol.calc_phi_q(s.form, w.form, w.q, t, s.select, w.jac)
    _dense_jacobian(s.form.jac_indptr, s.form.jac_indices, s.rows, w.jac, w.Jd)
    for i in range(m):
        for j in range(n):
            A[n + i, j] = w.Jd[i, j]
            A[j, n + i] = c1 * w.Jd[i, j]


@nb.njit(cache=True, nogil=True)
def _newmark(s, w, q0, qd0, h):
    """Trial state (w.q, w.qd) from the step's start (q0, qd0), a_n and the unknown a."""
    for i in range(s.n_q):
        w.q[i] = q0[i] + h * qd0[i] + h * h * ((0.5 - s.beta) * w.a_n[i] + s.beta * w.a[i])
        w.qd[i] = qd0[i] + h * ((1.0 - s.gamma) * w.a_n[i] + s.gamma * w.a[i])


def _step(s, w, q0, qd0, t, h):
    """One HHT step from (q0, qd0) at t; on success q0, qd0, a_n, lam, f_n hold step n+1."""
    n, m = s.n_q, s.rows.shape[0]
    t1 = t + h
    w.a[:] = w.a_n
    _newmark(s, w, q0, qd0, h)
    _iteration_matrix(s, w, t1, h)
    # modified Newton: one factorisation per step (pseudo-inverse with redundant constraints)
    if s.least_squares:   # C order, as w.A in the other branch: Ainv @ r stays a contiguous product
        Ainv = np.ascontiguousarray(_inverse(w.A, True))
    else:
        Ainv = w.A
        if _lu_factor(w.A, w.ipiv, w.ints) != 0:
            return K.SINGULAR
    scale = s.beta * h * h
    for it in range(s.max_iter + 1):
        _newmark(s, w, q0, qd0, h)
        protocol.calc_forces(s.form, w.form, w.q, w.qd, t1, w.Q)
        protocol.calc_phi(s.form, w.form, w.q, t1, s.select, w.phi)
        _constraint_force(s, w, w.q, t1, w.Qp)  # Qp = J^T lam - Q
        r = w.r
        for i in range(n):
            v = 0.0
            for j in range(n):
                v += w.M[i, j] * w.a[j]
            r[i] = -(v + (1.0 + s.alpha) * w.Qp[i] - s.alpha * w.f_n[i])
        for i in range(m):
            r[n + i] = -w.phi[i] / scale
        err = K.max_abs(w.phi)
        if err != err or err > 1e6:
            return K.LOST
        if s.least_squares:
            d = Ainv @ r
        else:
            _lu_solve(w.A, w.ipiv, w.ints, w.trans, r)
            d = r
        dq = 0.0
        for i in range(n):
            w.a[i] += d[i]
            dq = max(dq, abs(d[i]) * scale)
        for i in range(m):
            w.lam[i] += d[n + i]
        if err <= s.tol and dq <= s.tol:
            break
        if it == s.max_iter:
            return K.NO_CONVERGENCE
    _newmark(s, w, q0, qd0, h)
    _project_velocity(s, w, t1)
    protocol.calc_forces(s.form, w.form, w.q, w.qd, t1, w.Q)
    _constraint_force(s, w, w.q, t1, w.f_n)
    q0[:] = w.q
    qd0[:] = w.qd
    w.a_n[:] = w.a
    return 0


@nb.njit(cache=True, nogil=True)
def _project_velocity(s, w, t):
    """qd <- qd - M^-1 J^T (J M^-1 J^T)^+ (J qd + Phi_t): least change in the M-metric onto the
    velocity constraints (HHT-I3 keeps only positions on the manifold)."""
    protocol.calc_phi_q(s.form, w.form, w.q, t, s.select, w.jac)
    _dense_jacobian(s.form.jac_indptr, s.form.jac_indices, s.rows, w.jac, w.Jd)
    protocol.calc_phi_t(s.form, w.form, w.q, t, s.select, w.phi)
    v = w.Jd @ w.qd + w.phi
    MJt = w.Minv @ w.Jd.T
    S = w.Jd @ MJt
    mu = np.linalg.pinv(S, 1e-10) @ v if s.least_squares else np.linalg.solve(S, v)
    w.qd[:] -= MJt @ mu


_step_c = nb.njit(cache=True, nogil=True)(_step)


@nb.njit(cache=True, nogil=True)
def hht_run(s_, w_, q_, qd_, t0, h, n_steps, record_every, out_):
    """``n_steps`` HHT steps from (q, qd) at t0 (updated in place); records [q; qd] every
    ``record_every`` steps into out[1:], returns (status, steps done)."""
    s, w = unmanaged(s_), unmanaged(w_)
    q, qd, out = unmanaged(q_), unmanaged(qd_), unmanaged(out_)
    n = s.n_q
    for k in range(n_steps):
        st = _step_c(s, w, q, qd, t0 + k * h, h)
        if st != 0:
            return st, k
        if (k + 1) % record_every == 0:
            row = (k + 1) // record_every
            out[row, :n] = q
            out[row, n:] = qd
    return 0, n_steps


def force_coordinates(data, n_q: int) -> np.ndarray:
    """Coordinates the generalised forces Q(q, qd) can depend on (columns of K = dQ/dq and
    C = dQ/dqd): in natural coordinates those of the entities of spring-dampers, joint forces
    and the axes of body-frame point forces (gravity and world-frame point forces do not depend
    on the state); every coordinate for other formulations."""
    if not hasattr(data, "sp_ent"):
        return np.arange(n_q, dtype=np.int64)
    ents = [int(e) for e in data.sp_ent] + [int(e) for e in data.jf_ent.ravel() if e >= 0]
    ents += [int(e) for i in range(len(data.pf_frame)) if data.pf_frame[i] == 1
             for e in data.pf_axes[i] if e >= 0]
    d = data.dim
    cols = {d * int(data.ent_block[t]) + k for e in ents
            for t in range(data.ent_start[e], data.ent_start[e + 1]) for k in range(d)}
    return np.array(sorted(cols), np.int64)


class HHT:
    """Set-up and run of the HHT-I3 method for a :class:`~kinedyn.dynamics.Dynamics`."""

    def __init__(self, dyn, q, qd, t):
        f = dyn.f
        self.dyn = dyn
        alpha = dyn.hht_alpha
        if not -1.0 / 3.0 <= alpha <= 0.0:
            from ..errors import ModelError
            raise ModelError(f"hht_alpha must lie in [-1/3, 0], got {alpha}")
        least_squares = len(dyn.redundant) > 0
        rows = np.arange(f.n_c, dtype=np.int64) if least_squares else dyn.rows
        n, m = f.n_q, len(rows)
        self.data = HHTData(f.data, rows, protocol.row_selection(f, rows), n, alpha,
                            (1 - alpha) ** 2 / 4, (1 - 2 * alpha) / 2, min(dyn.tol * 100, 1e-10),
                            dyn.max_iter, least_squares, 1e-7, force_coordinates(f.data, n))
        self.work = HHTWork(f.make_work(), dyn._mass(q), np.zeros((n, n)), np.zeros((n, n)),
                            np.zeros(len(f.data.jac_indices)), np.zeros((m, n)),
                            np.zeros((n + m, n + m)), np.zeros(n + m), np.zeros(m),
                            np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n),
                            np.zeros(n), np.zeros(m), np.zeros(n), np.zeros(n + m, np.int32),
                            np.array([n + m, n + m, 1, 0], np.int32),
                            np.array([ord("T")], np.uint8))
        _dense_mass(f.data.mass_indptr, f.data.mass_indices, self.work.mass_values, self.work.M)
        self.work.Minv[:] = np.linalg.inv(self.work.M)
        self.q, self.qd, self.t = q.copy(), qd.copy(), float(t)
        self._initial_accelerations()

    def _initial_accelerations(self):
        """Consistent a_0, lam_0 from the index-1 system (least squares if redundant)."""
        from .evaluate import forces
        from ..kinematics.assembly import constraint_jacobian
        f, w, s = self.dyn.f, self.work, self.data
        J = constraint_jacobian(f, self.q, self.t).toarray()[s.rows]
        gamma = _gamma(f, self.q, self.qd, self.t, s.rows)
        Q = forces(f, self.q, self.qd, self.t)
        n, m = f.n_q, len(s.rows)
        A = np.block([[w.M, J.T], [J, np.zeros((m, m))]])
        x = np.linalg.lstsq(A, np.concatenate([Q, gamma]), rcond=1e-12)[0]
        w.a_n[:], w.lam[:] = x[:n], x[n:]
        w.f_n[:] = J.T @ w.lam - Q

    def run(self, n_steps, dt, record_every, out, progress) -> tuple[float, float]:
        """Fill ``out`` (recorded full states [q; qd]); return the wall and thread CPU seconds
        of the compiled calls."""
        n = self.dyn.f.n_q
        out[0, :n], out[0, n:] = self.q, self.qd
        hht_run(self.data, self.work, self.q.copy(), self.qd.copy(), self.t, dt, 0, 1, out[:1])
        chunk = n_steps if not progress else max(record_every, (n_steps // 100) //
                                                 record_every * record_every)
        done, watch = 0, Stopwatch()
        while done < n_steps:
            count = min(chunk, n_steps - done)
            t_start = self.t + done * dt
            ends = lambda: t_start + dt * np.arange(1, count + 1)  # noqa: E731 (HHT: t_n+1 only)
            with watch.timing(), functions_defined(self.dyn.model, ends):
                st, k = hht_run(self.data, self.work, self.q, self.qd, self.t + done * dt, dt,
                                count, record_every, out[done // record_every:])
            if st != 0:
                y = np.concatenate([self.q, self.qd])
                self.dyn._raise(st, y, self.t + (done + k) * dt)
            done += count
            if progress:
                progress(done, n_steps)
        return watch.wall, watch.cpu

    @property
    def multipliers(self) -> np.ndarray:
        """Multipliers of the last step (over ``data.rows``)."""
        return self.work.lam.copy()


def _gamma(f, q, qd, t, rows):
    out = np.zeros(len(rows))
    _gamma_c(f.data, f.make_work(), np.asarray(q, float), np.asarray(qd, float), float(t),
             np.asarray(rows, np.int64), out)
    return out


@nb.njit(cache=True)
def _gamma_c(data, work, q, qd, t, rows, out):
    protocol.calc_gamma(data, work, q, qd, t, rows, out)
