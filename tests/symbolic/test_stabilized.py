"""Baumgarte and penalty baselines on the generated kernels (thesis eqs. 2.16-2.23): the
accelerations satisfy their stabilised constraint equations, the augmented-Lagrangian iteration
converges to the Lagrange-multiplier solution, the runs converge (first order, explicit Euler)
to the same trajectory as the embedded method with a violation that shrinks with h, and the
grid search returns the table's minimum."""
import numpy as np
import pytest

import kinedyn
from kinedyn.errors import ModelError
from kinedyn.symbolic.embedded import EmbeddedDynamics
from kinedyn.symbolic.kernels import sines_cosines
from kinedyn.symbolic.stabilized import (StabilizedDynamics, baumgarte_grid_search,
                                         cholesky_pattern)


@pytest.fixture(scope="module")
def slider():
    emb = EmbeddedDynamics(kinedyn.models.get("slider-crank").compile(), integrator="euler")
    return emb, StabilizedDynamics(emb, "baumgarte", alpha=5, beta=5), \
        StabilizedDynamics(emb, "penalty", rho=1e3, omega=10, zeta=1)


def _state(emb, seed=1):
    """An inconsistent state (off the constraint manifold) so every term of gamma_hat counts."""
    rng = np.random.default_rng(seed)
    n = emb.system.n_q
    return emb.q_initial + rng.uniform(-0.05, 0.05, n), rng.uniform(-2, 2, n)


def _rhs(dyn, q, qd, t, method, alpha=5.0, beta=5.0, rho=1e3, omega=10.0, zeta=1.0, it=1):
    mod = dyn.module
    qdd = np.zeros(len(q))
    ws = mod.stabilized_workspace()
    assert mod.stabilized_acceleration(method, q.copy(), qd.copy(), t, alpha, beta, rho, omega,
                                       zeta, it, qdd, ws, dyn._patterns)
    return qdd


def _terms(emb, q, qd, t):
    g = emb.generated.module
    n, m = emb.system.n_q, emb.system.n_c
    J, M = np.zeros((m, n)), np.zeros((n, n))
    phi, pt, gam, F = np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(n)
    sc = sines_cosines(g, q)
    g.phi_q(q, sc, t, J), g.phi(q, sc, t, phi), g.phi_t(q, sc, t, pt), g.gamma(q, qd, sc, t, gam)
    g.mass(q, sc, M), g.forces(q, qd, sc, t, F)
    return J, M, phi, J @ qd + pt, gam, F


def test_baumgarte_acceleration_solves_the_index1_system(slider):
    """M q'' + Phi_q^T lam = F with Phi_q q'' = gamma - 2 alpha Phi' - beta^2 Phi (2.18-2.20),
    checked against a dense NumPy solve of the augmented system."""
    emb, bg, _ = slider
    q, qd = _state(emb)
    J, M, phi, phid, gam, F = _terms(emb, q, qd, 0.2)
    m = len(phi)
    K = np.block([[M, J.T], [J, np.zeros((m, m))]])
    ref = np.linalg.solve(K, np.r_[F, gam - 2 * 3.0 * phid - 7.0 ** 2 * phi])[:len(q)]
    got = _rhs(bg, q, qd, 0.2, 0, alpha=3.0, beta=7.0)
    assert np.abs(got - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max())


def test_penalty_one_iteration_and_augmented_lagrangian_limit(slider):
    """One iteration: (M + rho Phi_q^T Phi_q) q'' = F - rho Phi_q^T (-gamma + 2 omega zeta Phi'
    + omega^2 Phi) (2.21); many iterations (2.23) converge to Baumgarte with alpha = omega zeta,
    beta = omega, whatever rho."""
    emb, _, pen = slider
    q, qd = _state(emb, 2)
    J, M, phi, phid, gam, F = _terms(emb, q, qd, 0.1)
    rho, om, ze = 50.0, 10.0, 0.7
    c = -gam + 2 * om * ze * phid + om ** 2 * phi
    one = np.linalg.solve(M + rho * J.T @ J, F - rho * J.T @ c)
    got = _rhs(pen, q, qd, 0.1, 1, rho=rho, omega=om, zeta=ze, it=1)
    assert np.abs(got - one).max() <= 1e-10 * max(1.0, np.abs(one).max())
    limit = _rhs(pen, q, qd, 0.1, 0, alpha=om * ze, beta=om)
    many = _rhs(pen, q, qd, 0.1, 1, rho=rho, omega=om, zeta=ze, it=60)
    assert np.abs(many - limit).max() <= 1e-8 * np.abs(limit).max()
    assert np.abs(one - limit).max() > 1e-3 * np.abs(limit).max()   # one iteration is not there


def test_runs_converge_to_the_embedded_trajectory_with_shrinking_violation(slider):
    """Explicit Euler is first order: halving h halves both the distance to an RK4 reference
    (embedded, h = 0.1 ms) and the peak constraint violation, which stays bounded."""
    emb, bg, pen = slider
    m = kinedyn.models.get("slider-crank").compile()
    ref = EmbeddedDynamics(m, integrator="rk4").simulate(0.5, 1e-4).channel("coordinate.crank.angle")
    for dyn in (emb, bg, pen):
        err, viol = [], []
        for h in (1e-3, 5e-4):
            res = dyn.simulate(0.5, h)
            err.append(np.abs(res.channel("coordinate.crank.angle") - ref[::int(round(h / 1e-4))]).max())
            viol.append(res.channel("residual.position").max())
        assert 1.6 <= err[0] / err[1] <= 2.4 and err[1] <= 0.02, (dyn, err)
        if dyn is not emb:
            assert viol[0] <= 5e-3 and 1.6 <= viol[0] / viol[1] <= 2.4, viol
    res = bg.simulate(0.5, 1e-3)
    assert res.summary["method"] == "baumgarte" and res.channel("iterations").max() == 0


def test_grid_search_returns_the_minimum_and_restores_parameters(slider):
    _, bg, _ = slider
    grid = baumgarte_grid_search(bg, 0.3, 1e-3, alphas=(1, 5, 20), betas=(1, 10, 20))
    assert grid.peak.shape == (3, 3) and np.all(np.isfinite(grid.peak))
    i, j = np.unravel_index(np.argmin(grid.peak), grid.peak.shape)
    assert grid.best == (grid.alphas[i], grid.betas[j]) and grid.best_peak == grid.peak.min()
    assert grid.best_peak < grid.peak[0, 0]            # stiffer stabilisation helps here
    assert (bg.alpha, bg.beta) == (5.0, 5.0)
    bg.alpha, bg.beta = grid.best
    try:
        assert bg.peak_violation(0.3, 1e-3) == grid.best_peak
    finally:
        bg.alpha, bg.beta = 5.0, 5.0
    assert len(grid.rows()) == 3 and "beta=10" in grid.rows()[0]


def test_unstable_parameters_are_reported_not_hidden(slider):
    """beta = 1/h-scale stiffness makes explicit Euler diverge: inf in the grid, an error in a run."""
    _, bg, _ = slider
    bg.alpha, bg.beta = 1.0, 3000.0
    try:
        assert bg.peak_violation(0.2, 1e-3) == np.inf
        with pytest.raises(kinedyn.errors.SolverError, match="baumgarte"):
            bg.simulate(0.2, 1e-3)
    finally:
        bg.alpha, bg.beta = 5.0, 5.0
    with pytest.raises(ModelError, match="known: baumgarte, penalty"):
        StabilizedDynamics(bg.embedded, "projection")


def test_cholesky_pattern_includes_fill():
    """An arrow matrix pointing up-left fills completely; a banded one keeps its band."""
    arrow = np.eye(5, dtype=bool)
    arrow[0, :] = arrow[:, 0] = True
    ptr, idx = cholesky_pattern(arrow)
    assert [list(idx[ptr[i]:ptr[i + 1]]) for i in range(5)] == [[], [0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]
    band = np.eye(5, dtype=bool) | np.eye(5, k=1, dtype=bool) | np.eye(5, k=-1, dtype=bool)
    ptr, idx = cholesky_pattern(band)
    assert [list(idx[ptr[i]:ptr[i + 1]]) for i in range(5)] == [[], [0], [1], [2], [3]]


@pytest.mark.slow
def test_gough_stewart_baselines_follow_the_embedded_run():
    """The thesis's run (section 4.2.5, 24 mixed coordinates, leg forces, no gravity): Baumgarte
    (1, 18) and the one-iteration penalty keep |Phi| at the thesis's order (9.5e-6, 1.3e-5)
    and follow the embedded platform pose."""
    model = kinedyn.models.get("gough-stewart").compile({"g": 0.0})
    emb = EmbeddedDynamics(model, integrator="euler", absolute=["platform"])
    ref = emb.simulate(1.0, 1e-3)
    for dyn, peak in ((StabilizedDynamics(emb, "baumgarte", alpha=1, beta=18), 2e-5),
                      (StabilizedDynamics(emb, "penalty", rho=1e3, omega=18, zeta=1), 1e-4)):
        res = dyn.simulate(1.0, 1e-3)
        assert 1e-9 < res.channel("residual.position").max() <= peak
        for name in ref.names("body.platform.*"):
            if not name.endswith("_dd"):
                assert np.abs(res.channel(name) - ref.channel(name)).max() <= 2e-3, name


def test_run_times_and_factors_are_checked_as_every_run_does(slider):
    """The generated-code runs share the times check of the other runs (an infinite end
    overflowed, a tiny dt tried to allocate petabytes, dt = 0 divided by zero) and the
    stabilisation factors are checked (beta = NaN failed later, blamed on a joint)."""
    emb, baumgarte, _ = slider
    for run in (emb.simulate, baumgarte.simulate):
        for args, message in (((float("inf"), 0.01), "t_end must be a finite number"),
                              ((0.1, 0.0), "need dt > 0"),
                              ((1e6, 1e-9), "limit 1e\\+09")):
            with pytest.raises(ModelError, match=message):
                run(*args)
        with pytest.warns(UserWarning, match="dt = 0.03 s does not divide"):
            assert run(0.1, 0.03).time[-1] == pytest.approx(0.09)
    for kwargs, message in (({"beta": float("nan")}, "beta must be a finite number"),
                            ({"alpha": -1}, "alpha must be a finite number of at least 0"),
                            ({"rho": 0}, "rho must be a finite number above 0"),
                            ({"iterations": 1.5}, "penalty iterations must be a finite whole")):
        with pytest.raises(ModelError, match=message):
            StabilizedDynamics(emb, **kwargs)
