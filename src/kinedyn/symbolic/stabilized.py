"""The thesis's constraint-stabilisation baselines on the generated kernels (section 2.1.3).

The same Phi, Phi_q, Phi_t, gamma, M and F kernels the embedded method uses (one generated
module, joint or mixed coordinates: 24 for the Gough-Stewart platform) drive two index-1 ODE
formulations in all n coordinates, integrated with explicit Euler as in Tables 4.10 and 5.2:

* **Baumgarte** (eqs. 2.16, 2.18-2.20): Phi'' + 2 alpha Phi' + beta^2 Phi = 0, i.e.
  Phi_q q'' = gamma - 2 alpha Phi' - beta^2 Phi = gamma_hat, with the multipliers solved
  explicitly, lam = (Phi_q M^-1 Phi_q^T)^-1 (Phi_q M^-1 F - gamma_hat) (an m x m system; M by
  Cholesky) and q'' = M^-1 (F - Phi_q^T lam).
* **Penalty / augmented Lagrangian** (eqs. 2.21-2.23): q''(0) = M^-1 F and, for k >= 1,
  (M + rho Phi_q^T Phi_q) q''(k) = M q''(k-1) - rho Phi_q^T (-gamma + 2 omega zeta Phi'
  + omega^2 Phi) (an n x n system; one iteration is the plain penalty formulation, since
  M q''(0) = F). rho, omega, zeta are scalars (the thesis's multiples of I).

Linear systems use Gaussian elimination with partial pivoting or Cholesky, never a symbolic
inverse. :func:`baumgarte_grid_search` is the thesis's choice of (alpha_B, beta_B): the pair
with the smallest peak constraint violation over the integers 1..20 (section 4.2.5: (1, 18) and
9.5e-6 for the Gough-Stewart platform; section 5.1: (7, 17) for the five-link suspension).
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError, SolverError, check_number, run_steps
from ..io.results import Results
from .analysis import _channels
from .codegen import build_module
from .embedded import EmbeddedDynamics
from .kernels import sines_cosines

METHODS = {"baumgarte": 0, "penalty": 1}


class StabilizedDynamics:
    """Baumgarte or penalty dynamics on an :class:`EmbeddedDynamics`'s generated kernels.

    source: an EmbeddedDynamics (its module, initial state and coordinates are reused) or a
    CompiledModel (an explicit-Euler EmbeddedDynamics is built with ``embedded_options``).
    method: ``baumgarte`` (``alpha``, ``beta``) or ``penalty`` (``rho``, ``omega``, ``zeta``,
    ``iterations``). The start state is the embedded method's consistent one.
    """

    def __init__(self, source, method: str = "baumgarte", *, alpha: float = 5.0,
                 beta: float = 5.0, rho: float = 1e3, omega: float = 10.0, zeta: float = 1.0,
                 iterations: int = 1, **embedded_options):
        if method not in METHODS:
            raise ModelError(f"unknown stabilisation method {method!r}; known: {', '.join(METHODS)}")
        for name, value in {"alpha": alpha, "beta": beta, "zeta": zeta}.items():
            check_number(name, value)
        for name, value in {"rho": rho, "omega": omega}.items():
            check_number(name, value, above=True)
        check_number("penalty iterations", iterations, 1, whole=True)
        emb = source if isinstance(source, EmbeddedDynamics) else \
            EmbeddedDynamics(source, integrator="euler", **embedded_options)
        self.embedded, self.system = emb, emb.system
        self.method = method
        self.alpha, self.beta = float(alpha), float(beta)
        self.rho, self.omega, self.zeta, self.iterations = float(rho), float(omega), float(zeta), int(iterations)
        start = _time.perf_counter()
        self.module = _companion(emb.generated.module)
        self._patterns = _factor_patterns(emb.generated.module, self.system, emb.q_initial)
        self._run(0.0, 1e-3)                       # compile / load from cache
        self.generation_seconds = _time.perf_counter() - start

    def _run(self, t_end: float, dt: float):
        n_steps = int(round(t_end / dt))  # (0 for the warm-up; checked by the callers)
        times = dt * np.arange(n_steps + 1)
        n = self.system.n_q
        Q, QD, QDD = (np.zeros((n_steps + 1, n)) for _ in range(3))
        res, vres, energy = (np.zeros(n_steps + 1) for _ in range(3))
        q, qd = self.embedded.q_initial.copy(), self.embedded.qd_initial.copy()
        wall = _time.perf_counter()
        k = self.module.run_stabilized(METHODS[self.method], times, q, qd, Q, QD, QDD, res, vres,
                                       energy, self.alpha, self.beta, self.rho, self.omega,
                                       self.zeta, self.iterations, self._patterns)
        wall = _time.perf_counter() - wall
        return k, times, (Q, QD, QDD, res, vres, energy), wall

    def peak_violation(self, t_end: float, dt: float) -> float:
        """max |Phi| over a run (inf if it failed or diverged): the grid search's measure."""
        k, _, (_, _, _, res, _, _), _ = self._run(t_end, dt)
        peak = float(res.max())
        return np.inf if k >= 0 or not np.isfinite(peak) else peak

    def simulate(self, t_end: float, dt: float) -> Results:
        """Explicit-Euler run; channels as :class:`EmbeddedDynamics` plus
        ``residual.velocity`` (max |Phi'|)."""
        k, times, (Q, QD, QDD, res, vres, energy), wall = self._run(
            run_steps(0.0, t_end, dt) * dt, dt)
        if k >= 0:
            r = np.zeros(self.system.n_c)          # worst constraints at the last good state
            mod, q = self.embedded.generated.module, Q[max(k - 1, 0)]
            mod.phi(q, sines_cosines(mod, q), times[max(k - 1, 0)], r)
            names = [self.system.constraint_names[i] for i in np.argsort(-np.abs(r))[:3]]
            raise SolverError(f"{self.system.name}: {self._label()} failed (M or "
                              "M + rho Phi_q^T Phi_q not positive definite, a singular "
                              "Phi_q M^-1 Phi_q^T, or the integration diverged)",
                              time=float(times[k]), constraints=names)
        ch = _channels(self.system, Q, QD, QDD, res, np.zeros(len(times), np.int64))
        ch["residual.velocity"] = vres
        ch["energy"] = energy
        summary = {"model": self.system.name, "analysis": "dynamics", "method": self.method,
                   "parameters": self.parameters, "integrator": "euler", "dt": dt,
                   "steps": len(times) - 1, "wall_time_s": wall,
                   "ms_per_simulated_second": wall * 1e3 / t_end,
                   "max_residual": {"position": float(res.max()), "velocity": float(vres.max())},
                   "energy_drift": float(np.abs(energy - energy[0]).max())}
        return Results(times, ch, summary)

    @property
    def parameters(self) -> dict:
        if self.method == "baumgarte":
            return {"alpha": self.alpha, "beta": self.beta}
        return {"rho": self.rho, "omega": self.omega, "zeta": self.zeta,
                "iterations": self.iterations}

    def _label(self) -> str:
        return f"{self.method} {self.parameters}"


@dataclass
class BaumgarteGrid:
    """Peak constraint violation over a grid of Baumgarte parameters (rows alpha, columns beta)."""
    alphas: np.ndarray
    betas: np.ndarray
    peak: np.ndarray        # (len(alphas), len(betas)), inf where the run failed or diverged
    best: tuple             # (alpha, beta) with the smallest peak
    best_peak: float

    def rows(self) -> list[dict]:
        """The table as rows {alpha, beta=<b>: peak} (for reports)."""
        return [{"alpha": float(a), **{f"beta={b:g}": float(v) for b, v in zip(self.betas, row)}}
                for a, row in zip(self.alphas, self.peak)]


def baumgarte_grid_search(dyn: StabilizedDynamics, t_end: float, dt: float = 1e-3,
                          alphas=range(1, 21), betas=range(1, 21)) -> BaumgarteGrid:
    """The thesis's tuning (section 4.2.5): run Baumgarte for every (alpha_B, beta_B) on the
    grid (integers 1..20 by default) and keep the pair with the smallest peak violation.
    ``dyn``'s own parameters are restored afterwards."""
    if dyn.method != "baumgarte":
        raise ModelError("baumgarte_grid_search needs a StabilizedDynamics(method='baumgarte')")
    alphas, betas = np.asarray(list(alphas), float), np.asarray(list(betas), float)
    peak = np.full((len(alphas), len(betas)), np.inf)
    saved = dyn.alpha, dyn.beta
    try:
        for i, a in enumerate(alphas):
            for j, b in enumerate(betas):
                dyn.alpha, dyn.beta = a, b
                peak[i, j] = dyn.peak_violation(t_end, dt)
    finally:
        dyn.alpha, dyn.beta = saved
    i, j = np.unravel_index(np.argmin(peak), peak.shape)
    return BaumgarteGrid(alphas, betas, peak, (float(alphas[i]), float(betas[j])), float(peak[i, j]))


def cholesky_pattern(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row pattern of the Cholesky factor of a symmetric matrix with nonzero ``mask``
    (symbolic factorisation: fill-in included). Returns (ptr, idx): row i's columns < i."""
    P = np.tril(np.asarray(mask, bool) | np.asarray(mask, bool).T, -1)
    n = P.shape[0]
    for j in range(n):
        rows = np.flatnonzero(P[j + 1:, j]) + j + 1
        for a in rows:                 # eliminating column j couples its rows
            P[a, rows[rows < a]] = True
    idx = [np.flatnonzero(P[i, :i]) for i in range(n)]
    ptr = np.cumsum([0] + [len(r) for r in idx]).astype(np.int64)
    return ptr, (np.concatenate(idx) if n else np.zeros(0)).astype(np.int64)


def _factor_patterns(generated, system, q0):
    """Patterns of M and of M + rho Phi_q^T Phi_q, with Phi_q's structure from its values at
    q0 and at two random configurations (a structural nonzero is nonzero there almost surely)."""
    n, m = system.n_q, system.n_c
    mass = np.zeros((n, n), bool)
    mass[generated.MNZ_I, generated.MNZ_J] = True
    jac = np.zeros((m, n), bool)
    rng = np.random.default_rng(0)
    for q in (q0, q0 + rng.uniform(-0.3, 0.3, n), q0 + rng.uniform(-0.3, 0.3, n)):
        J = np.zeros((m, n))
        generated.phi_q(np.asarray(q, float), sines_cosines(generated, q), 0.37, J)
        jac |= J != 0
    aug = mass | ((jac.T.astype(int) @ jac.astype(int)) > 0)
    return (*cholesky_pattern(mass | np.eye(n, dtype=bool)), *cholesky_pattern(aug | np.eye(n, dtype=bool)))


def _companion(generated):
    """The run kernels, compiled against the embedded module's generated kernels."""
    header = (f"from {generated.__name__} import (trig, phi, phi_q, phi_t, gamma, mass, forces, "
              "potential, solve_small, largest, NQ_, NC_, MNZ_I, MNZ_J)")
    name = generated.__name__.removeprefix("kinedyn_generated_") + "_stabilized"
    module, _ = build_module(name, [], _SOURCE, header)
    return module


_SOURCE = '''
@njit(cache=True)
def cholesky(A, ptr, idx):
    """A = L L^T in place (lower triangle) over L's structural pattern (row i: columns
    idx[ptr[i]:ptr[i + 1]] < i, ascending, fill included); False if not positive definite."""
    n = A.shape[0]
    for i in range(n):
        d = A[i, i]
        for e in range(ptr[i], ptr[i + 1]):
            j = idx[e]
            v = A[i, j]
            for f in range(ptr[i], e):
                v -= A[i, idx[f]] * A[j, idx[f]]
            v /= A[j, j]
            A[i, j] = v
            d -= v * v
        if not d > 0.0:
            return False
        A[i, i] = math.sqrt(d)
    return True


@njit(cache=True)
def cholesky_solve(L, B, ptr, idx):
    """L L^T X = B in place for the columns of B (L from cholesky, same pattern)."""
    n = L.shape[0]
    for m in range(B.shape[1]):
        for i in range(n):
            v = B[i, m]
            for e in range(ptr[i], ptr[i + 1]):
                v -= L[i, idx[e]] * B[idx[e], m]
            B[i, m] = v / L[i, i]
        for i in range(n - 1, -1, -1):
            x = B[i, m] / L[i, i]
            B[i, m] = x
            for e in range(ptr[i], ptr[i + 1]):
                B[idx[e], m] -= L[i, idx[e]] * x


@njit(cache=True)
def stabilized_workspace():
    return (np.zeros((NC_, NQ_)), np.zeros(NC_), np.zeros(NC_), np.zeros(NC_),
            np.zeros((NQ_, NQ_)), np.zeros(NQ_), np.zeros((NQ_, NQ_)), np.zeros((NQ_, NC_ + 1)),
            np.zeros((NC_, NC_)), np.zeros(NC_), np.zeros((NQ_, 1)), np.zeros(1),
            np.zeros(2 * NQ_))


@inlined
def stabilized_rhs(method, q, qd, t, alpha, beta, rho, omega, zeta, iterations, qdd, ws, pat):
    """q'' of Baumgarte (method 0, eqs. 2.18-2.20) or the augmented-Lagrangian penalty
    (method 1, eqs. 2.22-2.23); ws[3] = Phi, ws[1] = Phi', ws[11][0] = kinetic energy.
    False if M (Baumgarte) or M + rho Phi_q^T Phi_q (penalty) is not positive definite."""
    J, pt, g, r, M, F, A, Y, S, lam, x, kin, sc = ws
    mptr, midx, aptr, aidx = pat
    trig(q, sc)                    # once: every kernel below reads its sines and cosines
    J[:, :] = 0.0
    phi_q(q, sc, t, J)
    phi_t(q, sc, t, pt)
    phi(q, sc, t, r)
    gamma(q, qd, sc, t, g)
    M[:, :] = 0.0
    mass(q, sc, M)
    forces(q, qd, sc, t, F)
    v = 0.0
    for e in range(MNZ_I.shape[0]):
        v += qd[MNZ_I[e]] * M[MNZ_I[e], MNZ_J[e]] * qd[MNZ_J[e]]
    kin[0] = 0.5 * v
    for i in range(NC_):                       # Phi' = Phi_q q' + Phi_t
        v = pt[i]
        for j in range(NQ_):
            v += J[i, j] * qd[j]
        pt[i] = v
    if method == 0:
        for i in range(NC_):                   # gamma_hat (2.18)
            g[i] -= 2.0 * alpha * pt[i] + beta * beta * r[i]
        if not cholesky(M, mptr, midx):
            return False
        for j in range(NQ_):                   # Y = M^-1 [Phi_q^T | F]
            for i in range(NC_):
                Y[j, i] = J[i, j]
            Y[j, NC_] = F[j]
        cholesky_solve(M, Y, mptr, midx)
        S[:, :] = 0.0                          # Phi_q M^-1 Phi_q^T lam = Phi_q M^-1 F - gamma_hat
        for i in range(NC_):
            v = -g[i]
            for k in range(NQ_):
                a = J[i, k]
                if a != 0.0:                   # Phi_q is sparse (a leg row: 9 of 24)
                    v += a * Y[k, NC_]
                    for j in range(i, NC_):
                        S[i, j] += a * Y[k, j]
            lam[i] = v
            for j in range(i):                 # symmetric
                S[i, j] = S[j, i]
        solve_small(S, lam)                    # Gaussian elimination, partial pivoting
        for k in range(NQ_):                   # q'' = M^-1 F - M^-1 Phi_q^T lam (2.20)
            v = Y[k, NC_]
            for i in range(NC_):
                v -= Y[k, i] * lam[i]
            qdd[k] = v
        return True
    for i in range(NC_):                       # c = -gamma + 2 omega zeta Phi' + omega^2 Phi
        g[i] = -g[i] + 2.0 * omega * zeta * pt[i] + omega * omega * r[i]
    for i in range(NQ_):                       # A = M + rho Phi_q^T Phi_q
        for j in range(NQ_):
            A[i, j] = M[i, j]
    for c in range(NC_):
        for i in range(NQ_):
            if J[c, i] != 0.0:
                f = rho * J[c, i]
                for j in range(NQ_):
                    A[i, j] += f * J[c, j]
    if not cholesky(A, aptr, aidx):
        return False
    for it in range(iterations):               # (2.23), q''(0) = M^-1 F: M q''(0) = F
        for i in range(NQ_):
            v = 0.0
            if it == 0:
                v = F[i]
            else:
                for j in range(NQ_):
                    v += M[i, j] * qdd[j]
            for c in range(NC_):
                v -= rho * J[c, i] * g[c]
            x[i, 0] = v
        cholesky_solve(A, x, aptr, aidx)
        for i in range(NQ_):
            qdd[i] = x[i, 0]
    return True


@njit(cache=True)
def stabilized_acceleration(method, q, qd, t, alpha, beta, rho, omega, zeta, iterations, qdd, ws,
                            pat):
    """stabilized_rhs for callers in Python (the run inlines it; compiled on first call)."""
    return stabilized_rhs(method, q, qd, t, alpha, beta, rho, omega, zeta, iterations, qdd, ws,
                          pat)


@njit(cache=True)
def run_stabilized(method, times, q, qd, Q, QD, QDD, RES, VRES, ENERGY, alpha, beta, rho,
                   omega, zeta, iterations, pat):
    """Explicit Euler on (q, q'); returns -1 or the index of the failed step."""
    ws = stabilized_workspace()
    qdd = np.zeros(NQ_)
    for k in range(times.shape[0]):
        t = times[k]
        if not stabilized_rhs(method, q, qd, t, alpha, beta, rho, omega, zeta, iterations,
                              qdd, ws, pat):
            return k
        Q[k] = q
        QD[k] = qd
        QDD[k] = qdd
        worst = largest(ws[3])                 # NaN if Phi has one
        RES[k] = worst
        VRES[k] = largest(ws[1])
        ENERGY[k] = ws[11][0] + potential(q)
        if not worst < 1e3:                    # diverged (or NaN): stop here
            RES[k] = np.inf
            return k
        if k == times.shape[0] - 1:
            break
        h = times[k + 1] - t
        for i in range(NQ_):
            q[i] += h * qd[i]
            qd[i] += h * qdd[i]
    return -1
'''
