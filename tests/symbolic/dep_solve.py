"""Shared check of a generated module's velocity-level solve of Phi_d."""
import numpy as np

from kinedyn.symbolic.kernels import sines_cosines


def jacobian(mod, system, q, t=0.0) -> np.ndarray:
    """Phi_q at (q, t) by the generated kernel (sines and cosines by the module's trig)."""
    J = np.zeros((system.n_c, system.n_q))
    mod.phi_q(q, sines_cosines(mod, q), t, J)
    return J


def dep_solve_error(system, mod, states, times) -> float:
    """The generated factor_d / solve_d against NumPy's solve of the whole Phi_d, for three
    random right-hand sides at each given state: the largest relative difference (Phi_d X_d = R
    itself is asserted to 1e-12)."""
    dep = list(system.dependent)
    rng = np.random.default_rng(7)
    worst = 0.0
    for q, t in zip(states, times):
        J = jacobian(mod, system, q, t)
        W = mod.dep_workspace()
        assert mod.factor_d(J, W)
        R = rng.normal(size=(system.n_c, 3))
        X = np.zeros((system.n_q, 3))
        mod.solve_d(J, W, R, X)
        ref = np.linalg.solve(J[:, dep], R)
        worst = max(worst, float(np.abs(X[dep] - ref).max() / np.abs(ref).max()))
        assert np.abs(J[:, dep] @ X[dep] - R).max() <= 1e-12 * np.abs(R).max() * np.abs(J).max()
    return worst
