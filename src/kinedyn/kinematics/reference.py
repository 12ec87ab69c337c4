"""NumPy reference of a kinematic simulation: the readable twin of :mod:`.kernels`.

Same algorithm as the compiled run (Group Equations paper eqs. 1-3 on the chosen independent
rows): predict q by Taylor extrapolation, Newton-Raphson ``Phi_q dq = -Phi`` to the tolerance,
then ``Phi_q qd = -Phi_t`` and ``Phi_q qdd = gamma``, with the formulation's NumPy reference
kernels and dense ``numpy.linalg.solve``. Used to test the compiled path and as the baseline of
``kinedyn bench kinematics``; far too slow for real use.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConvergenceError


def reference_step(f, rows, q_guess, t: float, tol: float = 1e-10, max_iter: int = 25):
    """Positions, velocities and accelerations at time t from a guess: ``(q, qd, qdd, iterations)``."""
    q = np.array(q_guess, float)
    for it in range(max_iter + 1):
        phi = f.reference_phi(q, t)[rows]
        if np.abs(phi).max() <= tol:
            break
        if it == max_iter:
            raise ConvergenceError(f"reference Newton-Raphson did not reach {tol:g}", time=t)
        q -= np.linalg.solve(f.reference_phi_q(q, t)[rows], phi)
    J = f.reference_phi_q(q, t)[rows]
    qd = np.linalg.solve(J, -f.reference_phi_t(q, t)[rows])
    qdd = np.linalg.solve(J, f.reference_gamma(q, qd, t)[rows])
    return q, qd, qdd, it


def reference_simulate(f, rows, q0, times, tol: float = 1e-10, max_iter: int = 25):
    """Tracking run over ``times`` from the assembled ``q0``: arrays ``(Q, QD, QDD)``."""
    n = len(times)
    Q, QD, QDD = (np.zeros((n, f.n_q)) for _ in range(3))
    q = np.array(q0, float)
    for k, t in enumerate(times):
        if k > 0:
            h = t - times[k - 1]
            q = Q[k - 1] + h * QD[k - 1] + 0.5 * h * h * QDD[k - 1]
        Q[k], QD[k], QDD[k], _ = reference_step(f, rows, q, t, tol, max_iter)
    return Q, QD, QDD
