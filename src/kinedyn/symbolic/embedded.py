"""Embedded dynamics: one ODE per independent coordinate (thesis section 2.1.5, 3.4.1).

With q = (q_d, q_i) and B = [-Phi_d^-1 Phi_i; I] (eq. 2.24), the velocities are
q' = B q_i' + C (2.26), the accelerations q'' = B q_i'' + (B' q_i' + C') (2.27), and projecting
M q'' + Phi_q^T lam = F onto B eliminates the multipliers:

    (B^T M B) q_i'' = B^T (F - M (B' q_i' + C'))                          (2.28)

B' q_i' + C' is the acceleration with q_i'' = 0, i.e. Phi_d z_d = gamma, z_i = 0. M and F are
generated symbolically in the planar joint/mixed coordinates (M = sum m J_c^T J_c + I J_w^T J_w,
F = gravity + applied forces - sum m J_c^T (J_c' q')), with global CSE; Phi_d, B and B^T M B
are formed and LU-solved numerically at run time -- never a symbolic inverse of M. The dependent
coordinates come from the triangular plan at every evaluation (or its Newton fall-back).
Only q_i and q_i' are integrated (explicit Euler as in the thesis, or RK4).
"""
from __future__ import annotations

import time as _time

import numpy as np
import sympy as sp

from ..errors import ModelError, SingularConfigurationError, SolverError
from ..io.results import Results
from ..model.compiled import FRAME_CODE, CompiledModel
from .analysis import _channels, _planar_options, coordinates
from .codegen import Kernel
from .equations import T, PlanarEquations, _function_expr, _vec
from .spatial import spatial_mass_and_forces
from .kernels import _reads, coordinate_symbols, generate
from .triangular import make_plan

INTEGRATORS = {"euler": 0, "rk4": 1}


def planar_mass_and_forces(eqs: PlanarEquations):
    """M(q) (n x n), F(q, q', t) (n) and the potential energy V(q) of a planar model."""
    m = eqs.model
    q = sp.Matrix(eqs.q)
    qd = sp.Matrix([sp.Symbol(f"{c.symbol.name}_d", real=True) for c in eqs.coordinates])
    n = len(q)
    M = sp.zeros(n, n)
    F = sp.zeros(n, 1)
    V = sp.Integer(0)
    g = _vec(m.gravity, eqs.tol)
    if m.spring_name or m.user_forces:
        raise ModelError(f"{m.name}: the embedded symbolic dynamics support gravity, point and "
                         "joint forces (springs and user forces are not generated yet)")
    for b in range(1, m.n_body):
        mass = sp.nsimplify(float(m.body_mass[b]), rational=True) if m.body_mass[b] else 0
        inertia = float(m.body_inertia[b])
        rc = eqs.point(b, m.body_com[b])
        Jc = rc.jacobian(q)
        Jw = sp.Matrix([eqs.body_angle[b]]).jacobian(q)
        M += mass * (Jc.T * Jc) + sp.Float(inertia) * (Jw.T * Jw)
        acc_v = (Jc * qd).jacobian(q) * qd                # J_c' q'
        F += mass * Jc.T * (g - acc_v)
        V -= mass * (g.T * rc)[0]
    for k in range(len(m.joint_force_name)):
        j, comp = int(m.joint_force_joint[k]), int(m.joint_force_component[k])
        coord = eqs.joint_coordinate(j, comp)
        F += _function_expr(m, int(m.joint_force_function[k])) * sp.Matrix([coord]).jacobian(q).T
    for k in range(len(m.point_force_name)):
        b, p = int(m.point_force_body[k]), int(m.point_force_point[k])
        f = sp.Matrix([_function_expr(m, int(fid)) for fid in m.point_force_function[k]])
        if int(m.point_force_frame[k]) == FRAME_CODE["body"]:
            f = eqs.body_R[b] * f
        F += eqs.point(b, m.point_local[p]).jacobian(q).T * f
    return M, F, V, qd


class EmbeddedDynamics:
    """Forward dynamics by embedding with a triangular (or block-triangular) position solver.

    model: CompiledModel of a planar mechanism (``absolute``: bodies in absolute coordinates;
    ``joint_angles``, ``cut``: relative joint angles and loop-closing joints, see
    :func:`~.equations.planar_coordinates`);
    independent: coordinate names (default: the first f in traversal order); integrator:
    ``euler`` (thesis) or ``rk4``; initial: {coordinate name: start value} (the dependent
    ones follow from the plan); qd0: full initial velocities (made consistent); position_solver ``triangular`` | ``blocks`` | ``newton``
    (the Newton baselines on the same generated code); backend ``numba`` | ``c`` (kernels as C
    through the system compiler). Plan options go to :func:`make_plan`.
    """

    def __init__(self, model: CompiledModel, *, absolute=(), joint_angles=False, cut=(), independent=None,
                 integrator: str = "rk4", position_solver: str = "triangular",
                 tol: float = 1e-12, max_iter: int = 20, initial=None, qd0=None,
                 backend: str = "numba", **plan_options):
        from .analysis import POSITION_SOLVERS
        if integrator not in INTEGRATORS:
            raise ModelError(f"unknown integrator {integrator!r}; known: {', '.join(INTEGRATORS)}")
        if position_solver not in POSITION_SOLVERS:
            raise ModelError(f"unknown position solver {position_solver!r}; known: "
                             f"{', '.join(POSITION_SOLVERS)}")
        eqs = coordinates(model, absolute=absolute, independent=independent,
                          **_planar_options(joint_angles, cut))
        if eqs.inputs:
            raise ModelError(f"{model.name}: embedded dynamics needs a model without drivers "
                             "(drivers fix the independent coordinates; use kinematics)")
        for name, value in (initial or {}).items():  # independent coordinates' start values
            eqs.q0[eqs.index(name)] = float(value)
        self.system = eqs
        self.integrator, self.mode = integrator, POSITION_SOLVERS[position_solver]
        self.position_solver = position_solver
        self.tol, self.max_iter = float(tol), int(max_iter)
        start = _time.perf_counter()
        self.plan = make_plan(eqs, **plan_options)
        self.plan_seconds = _time.perf_counter() - start
        start = _time.perf_counter()
        M, F, V, qd_sym = (spatial_mass_and_forces if model.dim == 3 else planar_mass_and_forces)(eqs)
        qs, qds, sub = coordinate_symbols(eqs)
        sub.update({a: b for a, b in zip(qd_sym, qds)})
        tt = sp.Symbol("t")
        sub[T] = tt
        n = eqs.n_q
        Ms = M.xreplace(sub)
        kernels = [
            Kernel("mass", ("q", "M"), _reads(qs),
                   [(f"M[{i}, {j}]", Ms[i, j]) for i in range(n) for j in range(n) if Ms[i, j] != 0]),
            Kernel("forces", ("q", "qd", "t", "F"), _reads(qs, qds),
                   [(f"F[{i}]", sp.expand(F[i].xreplace(sub))) for i in range(n)]),
            Kernel("potential", ("q",), _reads(qs), [("V", V.xreplace(sub))], returns="V"),
        ]
        nz = [(i, j) for i in range(n) for j in range(n) if Ms[i, j] != 0]
        pattern = (f"MNZ_I = np.array({[i for i, _ in nz]}, dtype=np.int64)\n"
                   f"MNZ_J = np.array({[j for _, j in nz]}, dtype=np.int64)\n")
        self.generated = generate(eqs, self.plan, name=f"{model.name}_embedded",
                                  extra_kernels=kernels, extra_source=pattern + _EMBEDDED,
                                  backend=backend)
        self.backend = self.generated.module.BACKEND
        self.generation_seconds = _time.perf_counter() - start
        self.q_initial = self.plan.solve(eqs.q0)
        self.qd_initial = np.zeros(n) if qd0 is None else np.asarray(qd0, float)
        mod = self.generated.module
        q, qd = self.q_initial.copy(), self.qd_initial.copy()
        mod.complete(q, qd, 0.0, 0, 1e-12, 20)   # consistent dependent velocities
        self.qd_initial = qd
        self.simulate(0.0, 1e-3, _warm=True)

    @property
    def operations(self) -> dict:
        return self.generated.operations

    def _failure(self, q, t_good: float, t_fail: float) -> SolverError:
        """Why the run stopped: Phi_d's conditioning at the last good state, the constraints
        of its weakest direction, and the best other choice of one independent coordinate.

        A Phi_d that becomes singular while Phi_q keeps full rank means the independent
        coordinate(s) reach a limit position -- the end of their assemblable range, through
        which the mechanism moves on while they reverse (the free Stephenson-III's beta1 at
        t = 0.375 s) -- so an embedding in them cannot continue past it."""
        sys_ = self.system
        J = sys_.jacobian(q, t_good)
        ind, dep = list(sys_.independent), list(sys_.dependent)
        names = [c.name for c in sys_.coordinates]

        def condition(cols):
            U, sv, _ = np.linalg.svd(J[:, cols])
            return sv[-1] / sv[0], U[:, -1]

        cur, weak = condition(dep)
        full = np.linalg.svd(J, compute_uv=False)
        options = []
        for a in ind:
            for b in dep:
                new = sorted(set(ind) - {a} | {b})
                options.append((condition([i for i in range(sys_.n_q) if i not in new])[0],
                               [names[i] for i in new]))
        best = max(options)
        worst = [sys_.constraint_names[i] for i in np.argsort(-np.abs(weak))[:4]]
        text = (f"{sys_.name}: the {self.position_solver} position solver failed in the embedded "
                f"dynamics (last good state t = {t_good:.6g} s: cond. of Phi_d "
                f"sigma_min/sigma_max = {cur:.2g}, of Phi_q {full[-1] / full[0]:.2g})")
        if cur < 1e-3 and full[-1] / full[0] > 1e-2:
            text += (f"; the independent coordinate(s) {[names[i] for i in ind]} reach a limit "
                     "position (end of their assemblable range, which the motion passes while "
                     "they reverse), so an embedding in them cannot continue; at this state "
                     f"independent={best[1]} gives {best[0]:.2g}")
            return SingularConfigurationError(text, time=t_fail, constraints=worst)
        return SolverError(text + f"; best other choice here: independent={best[1]} "
                           f"({best[0]:.2g})", time=t_fail, constraints=worst)

    def simulate(self, t_end: float, dt: float, *, _warm: bool = False) -> Results:
        """Fixed-step run; channels as :class:`TriangularKinematics` plus ``energy``."""
        n_steps = int(round(t_end / dt))
        if not dt > 0 or (n_steps < 1 and not _warm):
            raise ModelError(f"need dt > 0 and t_end >= dt, got dt={dt}, t_end={t_end}")
        times = dt * np.arange(n_steps + 1)
        n = self.system.n_q
        Q, QD, QDD = (np.zeros((n_steps + 1, n)) for _ in range(3))
        res, energy = np.zeros(n_steps + 1), np.zeros(n_steps + 1)
        it = np.zeros(n_steps + 1, np.int64)
        q, qd = self.q_initial.copy(), self.qd_initial.copy()
        wall = _time.perf_counter()
        try:
            k = self.generated.module.run_embedded(INTEGRATORS[self.integrator], self.mode, times,
                                                   q, qd, Q, QD, QDD, res, energy, it, self.tol,
                                                   self.max_iter)
        except np.linalg.LinAlgError:        # a Newton block met NaN (a closed form lost its root)
            k = int(np.flatnonzero(np.abs(Q).sum(axis=1) > 0).max(initial=0)) + 1
        wall = _time.perf_counter() - wall
        if k < 0 and self.mode == 0 and res.max() > 1e-8:   # a closed form without a real root
            k = int(np.argmax(res > 1e-8))
        if k >= 0:
            raise self._failure(Q[max(k - 1, 0)], float(times[max(k - 1, 0)]), float(times[k]))
        ch = _channels(self.system, Q, QD, QDD, res, it)
        ch["energy"] = energy
        summary = {"model": self.system.name, "analysis": "dynamics", "method": "embedded",
                   "integrator": self.integrator, "position_solver": self.position_solver,
                   "dt": dt, "steps": n_steps, "wall_time_s": wall,
                   "ms_per_simulated_second": wall * 1e3 / max(t_end, 1e-300),
                   "max_residual": {"position": float(res.max())},
                   "energy_drift": float(np.abs(energy - energy[0]).max()),
                   "plan": self.plan.report(), "plan_seconds": self.plan_seconds,
                   "generation_seconds": self.generation_seconds,
                   "independent": [self.system.coordinates[i].name for i in self.system.independent]}
        return Results(times, ch, summary)


_EMBEDDED = '''
@njit(cache=True)
def complete(q, qd, t, mode, tol, max_iter):
    """Dependent positions and velocities from the independent ones; -1 on failure."""
    it = position(mode, q, t, tol, max_iter)
    if it < 0:
        return -1
    if not velocity(q, qd, t, np.zeros((NC_, NQ_)), np.zeros(NC_), dep_workspace()):
        return -1
    return it


@njit(cache=True)
def workspace():
    nf = IND.shape[0]
    return (np.zeros((NC_, NQ_)), np.zeros(NC_), np.zeros((NC_, nf + 1)), np.zeros((NQ_, nf + 1)),
            np.zeros((NQ_, nf)), np.zeros(NQ_), np.zeros((NQ_, NQ_)), np.zeros(NQ_),
            np.zeros((NQ_, nf)), np.zeros((nf, nf)), np.zeros(nf), np.zeros(NQ_))


@njit(cache=True)
def solve_small(A, b):
    """A x = b in place (Gaussian elimination with partial pivoting; b becomes x)."""
    n = b.shape[0]
    for c in range(n):
        p = c
        for r in range(c + 1, n):
            if abs(A[r, c]) > abs(A[p, c]):
                p = r
        if p != c:
            for k in range(n):
                x = A[c, k]
                A[c, k] = A[p, k]
                A[p, k] = x
            x = b[c]
            b[c] = b[p]
            b[p] = x
        for r in range(c + 1, n):
            f = A[r, c] / A[c, c]
            for k in range(c, n):
                A[r, k] -= f * A[c, k]
            b[r] -= f * b[c]
    for r in range(n - 1, -1, -1):
        for k in range(r + 1, n):
            b[r] -= A[r, k] * b[k]
        b[r] /= A[r, r]


@njit(cache=True)
def embedded_rhs(mode, q, qd, t, tol, max_iter, qi_dot, qi_ddot, qdd, ws, W):
    """(B^T M B) qdd_i = B^T (F - M z) (eq. 2.28); q, qd: independent parts in, full out.

    Phi_d is LU-factorised block by block (the plan's loops / legs) once and used for qd_d,
    the columns of B and z = B' qd_i + C'; M is used through its nonzero pattern (MNZ)."""
    J, pt, R, X, B, z, M, F, MB, A, rhs, Mz = ws
    it = position(mode, q, t, tol, max_iter)
    if it < 0:
        return -1
    if not velocity(q, qd, t, J, pt, W):          # numeric LU, never a symbolic inverse
        return -1
    nf = IND.shape[0]
    for r in range(NC_):                           # [-Phi_i | gamma]
        for a in range(nf):
            R[r, a] = -J[r, IND[a]]
    gamma(q, qd, t, R[:, nf])
    solve_d(J, W, R, X)                            # X = [B_d | z_d], z = B' qd_i + C'
    for a in range(nf):
        for c in range(DEP.shape[0]):
            B[DEP[c], a] = X[DEP[c], a]
        B[IND[a], a] = 1.0
    for c in range(DEP.shape[0]):
        z[DEP[c]] = X[DEP[c], nf]
    M[:, :] = 0.0
    mass(q, M)
    forces(q, qd, t, F)
    MB[:, :] = 0.0
    Mz[:] = 0.0
    for e in range(MNZ_I.shape[0]):
        i, j = MNZ_I[e], MNZ_J[e]
        m = M[i, j]
        Mz[i] += m * z[j]
        for a in range(nf):
            MB[i, a] += m * B[j, a]
    for a in range(nf):
        v = 0.0
        for i in range(NQ_):
            v += B[i, a] * (F[i] - Mz[i])
        rhs[a] = v
        for b in range(nf):
            v = 0.0
            for i in range(NQ_):
                v += B[i, a] * MB[i, b]
            A[a, b] = v
    solve_small(A, rhs)
    for i in range(NQ_):
        v = z[i]
        for a in range(nf):
            v += B[i, a] * rhs[a]
        qdd[i] = v
    for a in range(nf):
        qi_dot[a] = qd[IND[a]]
        qi_ddot[a] = rhs[a]
    return it




@njit(cache=True)
def run_embedded(integ, mode, times, q, qd, Q, QD, QDD, RES, ENERGY, ITER, tol, max_iter):
    nf = IND.shape[0]
    k1 = np.zeros(2 * nf)
    k2 = np.zeros(2 * nf)
    k3 = np.zeros(2 * nf)
    k4 = np.zeros(2 * nf)
    y = np.zeros(2 * nf)
    qdd = np.zeros(NQ_)
    r = np.zeros(NC_)
    a1 = np.zeros(nf)
    a2 = np.zeros(nf)
    ws = workspace()
    W = dep_workspace()
    for a in range(nf):
        y[a] = q[IND[a]]
        y[nf + a] = qd[IND[a]]
    for k in range(times.shape[0]):
        t = times[k]
        for a in range(nf):
            q[IND[a]] = y[a]
            qd[IND[a]] = y[nf + a]
        it = embedded_rhs(mode, q, qd, t, tol, max_iter, a1, a2, qdd, ws, W)
        if it < 0:
            return k
        k1[:nf] = a1
        k1[nf:] = a2
        Q[k] = q
        QD[k] = qd
        QDD[k] = qdd
        phi(q, t, r)
        worst = 0.0
        for c in range(NC_):
            worst = max(worst, abs(r[c]))
        RES[k] = worst
        Mq = ws[6]                   # M(q) of this step, from embedded_rhs
        v = 0.0
        for e in range(MNZ_I.shape[0]):
            v += qd[MNZ_I[e]] * Mq[MNZ_I[e], MNZ_J[e]] * qd[MNZ_J[e]]
        ENERGY[k] = 0.5 * v + potential(q)
        ITER[k] = it
        if k == times.shape[0] - 1:
            break
        h = times[k + 1] - t
        if integ == 0:
            y += h * k1
            continue
        for stage in range(3):
            yy = y + (0.5 * h if stage < 2 else h) * (k1 if stage == 0 else (k2 if stage == 1 else k3))
            for a in range(nf):
                q[IND[a]] = yy[a]
                qd[IND[a]] = yy[nf + a]
            ts = t + (0.5 * h if stage < 2 else h)
            if embedded_rhs(mode, q, qd, ts, tol, max_iter, a1, a2, qdd, ws, W) < 0:
                return k
            kk = k2 if stage == 0 else (k3 if stage == 1 else k4)
            kk[:nf] = a1
            kk[nf:] = a2
        y += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return -1
'''
