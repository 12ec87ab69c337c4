"""Static equilibrium: the configuration where the loads balance the constraint forces.

At rest (qd = qdd = 0) the equations of motion M qdd + Phi_q^T lambda = F (docs/dynamics.md)
reduce to the static equilibrium

    r(q, lambda) = Phi_q(q)^T lambda - F(q, 0, t) = 0,    Phi(q, t) = 0,

for the natural coordinates q and the constraints' multipliers lambda: gravity, springs (their
free lengths and preloads), applied point and joint forces and user forces balanced by the
joints and the drivers. Each iterate is put back on the constraints (Phi = 0) with the
multipliers that balance the loads best there (least squares); the step solves the
saddle-point system [K Phi_q^T; Phi_q 0] [dq; dlambda] = -[r; 0] with the tangent stiffness

    K = d r / d q = sum_i lambda_i Hess(Phi_i) - dF/dq

(the constraints' geometric stiffness and the loads' stiffness) by central differences of r,
shifted towards a stable equilibrium where it is not positive along the free motions
(:meth:`_Statics.iterate`). Redundant constraints are left out (:func:`~kinedyn.kinematics.diagnose.
independent_rows`), as in the kinematic and dynamic analyses.

Small oscillations about it (its natural frequencies and mode shapes) follow from the same
stiffness and the mass matrix on the free motions (:func:`_free_vibration`).

The **stability** of an equilibrium is the sign of the stiffness along the mechanism's free
motions: the eigenvalues of N^T K_s N, with N an orthonormal basis of the null space of Phi_q
and K_s the symmetric part of K (for conservative loads K is symmetric, and N^T K N is the
Hessian of the potential energy on the constraint manifold). All positive: stable; one
negative: unstable (an inverted pendulum); zero ones and no negative: neutral (a free
direction no load resists). A model whose drivers take every freedom has none to judge.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import (AssemblyError, ConvergenceError, ModelError, check_iteration_settings,
                      check_number, coordinates)
from ..io.results import Results
from ..kinematics.analysis import formulation_for
from ..kinematics.assembly import assemble, constraint_jacobian, constraint_values
from ..kinematics.diagnose import independent_rows
from .evaluate import forces

#: relative size below which an eigenvalue of the reduced stiffness counts as zero
NEUTRAL = 1e-7
#: the longest step of an iteration: a fraction of the mechanism's size for points, radians
#: for unit vectors
MAX_STEP = 0.25


@dataclass
class Equilibrium:
    """A static equilibrium (:func:`static_equilibrium`)."""

    q: np.ndarray            # natural coordinates
    multipliers: dict        # {constraint name: lambda}; redundant rows are left out
    residual: dict           # max |Phi| and max |Phi_q^T lambda - F| at the solution
    iterations: int          # Newton-Raphson iterations
    stiffness: np.ndarray    # eigenvalues of the stiffness along the free motions, ascending
    stability: str           # "stable", "unstable", "neutral" or "driven" (no freedom)
    results: Results         # one sample: the channels of the configuration (body.*, ...)
    frequencies: np.ndarray  # Hz, of small free oscillations about it; NaN: a motion that grows
    modes: np.ndarray        # (n_q, k) the mode shapes (velocity directions), one per column

    def channel(self, name: str) -> float:
        """The value of a channel (``body.rod.angle``, ``point.coupler.B.y`` ...) there."""
        return float(self.results.channel(name)[0])


def static_equilibrium(model, *, t: float = 0.0, q=None, tol: float = 1e-10,
                       max_iter: int = 50) -> Equilibrium:
    """The static equilibrium of ``model`` (a System or CompiledModel) at time ``t`` (the
    drivers' and the loads' functions of time are evaluated there), found from ``q``
    (natural coordinates; default: the model's initial configuration, assembled at ``t``):
    the iterates stay on the constraints, and it has converged when the load they leave
    unbalanced, max |Phi_q^T lambda - F|, is at most ``tol`` times the largest generalised
    load. Raises ConvergenceError (naming the worst-balanced coordinates, and the free
    motions nothing resists) when it does not converge in ``max_iter`` iterations; warns
    when the equilibrium found is unstable."""
    from ..formulations.natural import Natural
    f = formulation_for(model)
    if not isinstance(f, Natural):
        raise ModelError(f"static equilibrium is solved in natural coordinates: give the "
                         f"model (a System or CompiledModel), not a {type(f).__name__} "
                         f"formulation")
    check_iteration_settings(tol, max_iter)
    check_number("t", t, -math.inf)
    statics = _Statics(f, float(t), f.q0 if q is None else coordinates(f, q, "q"))
    q, lam, r, err = statics.settle(statics.q_start)
    it = 0
    while err > tol:
        if it == max_iter:
            statics.fail(max_iter, q, lam, r, err)
        q, lam, r, err = statics.iterate(q, lam, r, err, it)
        it += 1
    K = statics.stiffness(q, lam)
    N = _free_motions(statics.jacobian(q), f.n_q)
    stiffness = _along(K, N)
    eig = np.linalg.eigvalsh(stiffness)
    stability = _stability(eig)
    if stability == "unstable":
        warnings.warn(f"the static equilibrium of {f.model.name!r} found at t = {t:g} s is "
                      f"unstable (stiffness {eig[0]:.3g} along one of its free motions: a small "
                      f"disturbance makes it move away)", stacklevel=2)
    frequencies, modes = _free_vibration(stiffness, f.mass_dense, N)
    multipliers = {f.constraint_names[i]: float(v) for i, v in zip(statics.rows, lam)}
    z = np.zeros((1, f.n_q))
    results = Results(np.array([statics.t]), f.observables(q[None], z, z),
                      {"model": f.model.name, "analysis": "statics", "stability": stability})
    phi = constraint_values(f, q, statics.t, statics.work)
    return Equilibrium(q, multipliers, {"position": float(np.abs(phi).max(initial=0.0)),
                                        "force": float(np.abs(r).max(initial=0.0))},
                       it, eig, stability, results, frequencies, modes)


class _Statics:
    """The static equations of formulation ``f`` at time ``t`` and one iteration on them
    (module docstring)."""

    def __init__(self, f, t: float, q):
        self.f, self.t, self.work = f, t, f.make_work()
        self.q_start = q = assemble(f, q, t)
        self.rows, _ = independent_rows(constraint_jacobian(f, q, t, self.work))
        self.zero = np.zeros(f.n_q)
        self.scale = max(float(np.abs(self.load(q)).max(initial=0.0)), 1e-300)
        self.size = _coordinate_sizes(f, q)

    def load(self, x) -> np.ndarray:
        return forces(self.f, x, self.zero, self.t)

    def jacobian(self, x) -> np.ndarray:
        return constraint_jacobian(self.f, x, self.t, self.work)[self.rows].toarray()

    def balance(self, x, lam) -> np.ndarray:
        """Phi_q^T lambda - F: what the loads leave unbalanced."""
        return self.jacobian(x).T @ lam - self.load(x)

    def stiffness(self, x, lam) -> np.ndarray:
        return tangent_stiffness(self.balance, x, lam, 1e-6 * self.size)

    def settle(self, x):
        """``x`` put back on the constraints, with the multipliers that balance the loads
        best there (least squares), the load they leave unbalanced and its share of the
        largest load."""
        f, t = self.f, self.t
        x = assemble(f, x, t, 1e-10, self.work)
        for _ in range(3):  # the least-squares assembly stops near 1e-8: Newton polishes
            phi = constraint_values(f, x, t, self.work, self.rows)
            if np.abs(phi).max(initial=0.0) <= 1e-14 * max(1.0, float(np.abs(x).max())):
                break
            x = x - np.linalg.lstsq(self.jacobian(x), phi, rcond=None)[0]
        J, load = self.jacobian(x), self.load(x)
        lam = np.linalg.lstsq(J.T, load, rcond=None)[0]
        r = J.T @ lam - load  # (balance, with what is at hand)
        return x, lam, r, float(np.abs(r).max(initial=0.0)) / self.scale

    def iterate(self, q, lam, r, err, it: int):
        """One step of the saddle-point system [K Phi_q^T; Phi_q 0], shifted where the
        stiffness along the free motions is not positive (an inflexion, a maximum of the
        potential) so that it lowers the potential (Levenberg-Marquardt), its length limited
        to MAX_STEP of the size of each coordinate: towards a stable equilibrium. Newton's
        own step backtracks on the unbalanced load; the shifted one is taken as it is (the
        load may grow on the way down)."""
        n = self.f.n_q
        K, J = self.stiffness(q, lam), self.jacobian(q)
        eig = np.linalg.eigvalsh(_along(K, _free_motions(J, n)))
        shift = 0.0
        if len(eig) and eig[0] <= NEUTRAL * max(float(np.abs(eig).max()), 1e-300):
            shift = -eig[0] + 1e-3 * max(float(np.abs(eig).max()), float(np.abs(K).max()), 1.0)
        m = len(self.rows)
        A = np.block([[K + shift * np.eye(n), J.T], [J, np.zeros((m, m))]])
        rhs = -np.concatenate([r, np.zeros(m)])
        try:
            dq = np.linalg.solve(A, rhs)[:n]
        except np.linalg.LinAlgError:
            dq = np.linalg.lstsq(A, rhs, rcond=None)[0][:n]
        dq *= min(1.0, MAX_STEP / max(float(np.abs(dq / self.size).max(initial=0.0)), 1e-300))
        for _ in range(12):
            try:
                trial = self.settle(q + dq)
            except (AssemblyError, ConvergenceError):
                trial = None
            if trial is not None and (shift > 0.0 or trial[3] < err):
                return trial
            dq *= 0.5
        if trial is None:
            raise ConvergenceError(
                f"static equilibrium: the constraints cannot be met along the step of "
                f"iteration {it + 1} (unbalanced load {err:.3g} of the largest)", time=self.t)
        return trial  # Newton's step did not lower the load: its shortest try

    def fail(self, max_iter: int, q, lam, r, err):
        names = self.f.coordinate_names
        bad = [names[i] for i in np.argsort(-np.abs(r))[:3]]
        free = _unresisted(self.stiffness(q, lam), _free_motions(self.jacobian(q), len(q)), r)
        why = (f"; nothing resists the loads along a free motion of "
               f"{', '.join(names[i] for i in free)}: there may be no equilibrium (a body "
               f"that floats free under gravity, a constant force on a free slider)"
               if free else "")
        raise ConvergenceError(
            f"static equilibrium not found in {max_iter} iterations (unbalanced load "
            f"{np.abs(r).max():.3g}, {err:.3g} of the largest load, on coordinates "
            f"{', '.join(bad)}){why}: start nearer an equilibrium (q=...) or raise "
            f"max_iter", time=self.t)


def tangent_stiffness(balance, q, lam, step: np.ndarray) -> np.ndarray:
    """d/dq of ``balance(q, lam)`` by central differences, coordinate j moved by ``step[j]``."""
    n = len(q)
    K = np.empty((n, n))
    x = q.copy()
    for j in range(n):
        x[j] = q[j] + step[j]
        plus = balance(x, lam)
        x[j] = q[j] - step[j]
        K[:, j] = (plus - balance(x, lam)) / (2 * step[j])
        x[j] = q[j]
    return K


def _coordinate_sizes(f, q) -> np.ndarray:
    """The size each natural coordinate moves on: the mechanism's extent for points, 1 for
    the components of unit vectors."""
    points = f.point_positions(q)
    extent = float(np.ptp(points, axis=0).max()) if len(points) else 1.0
    extent = extent if extent > 0 else 1.0
    return np.concatenate([np.full(len(b.value), extent if b.kind == "point" else 1.0)
                           for b in f.layout.blocks])


def _free_motions(J, n: int) -> np.ndarray:
    """An orthonormal basis N (n, k) of the free motions: the null space of ``J``."""
    from scipy.linalg import null_space
    return null_space(J) if J.size else np.eye(n)


def _along(K, N) -> np.ndarray:
    """The symmetric part of ``K`` along the free motions ``N``: N^T K_s N."""
    return N.T @ (0.5 * (K + K.T)) @ N


def _unresisted(K, N, r) -> list[int]:
    """The coordinates that move most along the free motions with no stiffness (eigenvalues
    near zero) that the unbalanced load ``r`` pushes along: where the loads have a resultant
    nothing resists. Empty when there is none."""
    eig, V = np.linalg.eigh(_along(K, N))
    small = 1e-6 * max(float(np.abs(eig).max(initial=0.0)), 1e-300)
    load = V.T @ (N.T @ r)  # the load along each free motion
    pushed = (np.abs(eig) <= small) & (np.abs(load) > 1e-6 * max(np.abs(r).max(), 1e-300))
    if not pushed.any():
        return []
    motion = np.abs(N @ V[:, pushed]).max(axis=1)
    return [int(i) for i in np.argsort(-motion)[:3]]


def _free_vibration(stiffness, M, N) -> tuple[np.ndarray, np.ndarray]:
    """Small oscillations about the equilibrium: ``stiffness`` v = w^2 (N^T M N) v on the free
    motions N (``stiffness``: :func:`_along`), the linearised equations of motion there.
    Returns the frequencies w / 2 pi (Hz, ascending; NaN where w^2 < 0, a motion that grows)
    and the mode shapes N v; none when a free motion has no mass."""
    from scipy.linalg import eigh
    if N.shape[1] == 0:
        return np.zeros(0), np.zeros((N.shape[0], 0))
    try:
        w2, V = eigh(stiffness, N.T @ M @ N)
    except np.linalg.LinAlgError:  # a massless free motion: no oscillation to speak of
        return np.zeros(0), np.zeros((N.shape[0], 0))
    small = NEUTRAL * max(float(np.abs(w2).max()), 1e-300)
    w2 = np.where(np.abs(w2) <= small, 0.0, w2)
    with np.errstate(invalid="ignore"):
        return np.sqrt(w2) / (2 * np.pi), N @ V


def _stability(eig) -> str:
    """What the eigenvalues of the stiffness along the free motions (ascending) say (module
    docstring)."""
    if len(eig) == 0:
        return "driven"
    small = NEUTRAL * max(float(np.abs(eig).max()), 1e-300)
    if eig[0] < -small:
        return "unstable"
    if eig[0] <= small:
        return "neutral"
    return "stable"
