"""The Group Equations paper's step (Algorithm 1 with tEnd2 Newton iterations): one
factorisation per iteration, the last one reused for velocities and accelerations."""
import numpy as np
import pytest

from kinedyn.errors import ModelError
from kinedyn.kinematics import Kinematics
from kinedyn.models import get


@pytest.fixture(scope="module")
def stewart():
    return get("stewart-paper").compile()


def paper_update(f, q0, t, blocks):
    """NumPy reference of one paper step over ``blocks`` [(rows, cols)] in order: for each,
    q_phi -= J^-1 Phi, qd_phi = J^-1 (-Phi_t - Phi_h hd), qdd_phi = J^-1 (gamma - Phi_h hdd),
    every matrix (and Phi_t) at the block's point before its correction, gamma after it."""
    q, qd, qdd = q0.copy(), np.zeros_like(q0), np.zeros_like(q0)
    for rows, cols in blocks:
        others = np.setdiff1d(np.arange(len(q)), cols)
        jac = f.reference_phi_q(q, t)[rows]
        J, Jh = jac[:, cols], jac[:, others]
        phi_t = f.reference_phi_t(q, t)[rows]
        q[cols] -= np.linalg.solve(J, f.reference_phi(q, t)[rows])
        qd[cols] = np.linalg.solve(J, -phi_t - Jh @ qd[others])
        qdd[cols] = np.linalg.solve(J, f.reference_gamma(q, qd, t)[rows] - Jh @ qdd[others])
    return q, qd, qdd


@pytest.mark.parametrize("strategy", ["global", "groups"])
def test_one_iteration_is_the_papers_update(stewart, strategy):
    """From a perturbed configuration, one step equals one Newton correction with
    Phi_q(q0) and the velocity / acceleration solutions with that same matrix (the compiled
    kernels against the NumPy reference formulation, group by group for Group Equations)."""
    kin = Kinematics(stewart, strategy=strategy, fixed_iterations=True, max_iter=1)
    rng = np.random.default_rng(4)
    q0 = kin.q_assembled + 1e-3 * rng.standard_normal(kin.f.n_q)
    t = 0.0
    if strategy == "global":
        blocks = [(kin.rows, np.arange(kin.f.n_q))]
    else:
        blocks = [(np.array(g.equations), np.array(g.unknowns))
                  for g in (kin.engine.groups[k] for u in kin.engine.units.groups for k in u)]
        assert len(blocks) == 7
    q, qd, qdd = paper_update(kin.f, q0, t, blocks)
    s = kin.solve(t, q_guess=q0)
    assert s.iterations == 1
    np.testing.assert_allclose(s.q, q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(s.qd, qd, rtol=0, atol=1e-10 * np.abs(qd).max())
    np.testing.assert_allclose(s.qdd, qdd, rtol=0, atol=1e-10 * np.abs(qdd).max())
    # the reported residual is the one the iteration corrected
    assert s.residual == pytest.approx(np.abs(kin.phi(q0, t)[kin.rows]).max(), rel=1e-12)
    # ... and Newton converges quadratically: the new residual is far below it
    assert np.abs(kin.phi(s.q, t)).max() < 1e-2 * s.residual


@pytest.mark.parametrize("strategy", ["global", "groups"])
def test_residuals_after_one_and_two_iterations(stewart, strategy):
    """Tracking a smooth trajectory (dt = 0.01, third-order prediction): one iteration leaves
    a position residual of second order in the prediction error; velocities and
    accelerations carry the first-order error of reusing Phi_q at the predicted point. A
    second iteration takes all three to round-off level (results match the converged run)."""
    ref = Kinematics(stewart, tol=1e-12).simulate(0.5, 0.01)
    vscale, ascale = np.abs(ref.qd).max(), np.abs(ref.qdd).max()
    one = Kinematics(stewart, strategy=strategy, fixed_iterations=True,
                     max_iter=1).simulate(0.5, 0.01)
    two = Kinematics(stewart, strategy=strategy, fixed_iterations=True,
                     max_iter=2).simulate(0.5, 0.01)
    assert np.all(one.iterations == 1) and np.all(two.iterations == 2)
    pos, vel, acc = one.residuals.max(axis=0)
    assert pos < 1e-7 and vel < 1e-3 * vscale and acc < 1e-3 * ascale
    assert np.abs(one.q - ref.q).max() < 1e-7
    pos2, vel2, acc2 = two.residuals.max(axis=0)
    assert pos2 < 1e-12 and vel2 < 1e-6 * vscale and acc2 < 1e-6 * ascale
    assert vel2 < 1e-3 * vel and acc2 < 1e-3 * acc  # the first-order error is gone
    np.testing.assert_allclose(two.q, ref.q, rtol=0, atol=1e-11)


def test_fixed_iterations_need_one():
    with pytest.raises(ModelError, match="max_iter must be a finite whole number of at least 1"):
        Kinematics(get("four-bar-driven").compile(), fixed_iterations=True, max_iter=0)


def test_too_coarse_a_paper_step_warns(stewart):
    """The paper's step never checks a tolerance: with too large a step for its iterations the
    run still returns, but warns, naming how far the constraints are violated, where and
    when; at the paper's dt = 0.01 s the positions are accurate and nothing is said."""
    import warnings

    from kinedyn.errors import AccuracyWarning
    from kinedyn.kinematics.analysis import FIXED_RESIDUAL_LIMIT
    kin = Kinematics(stewart, fixed_iterations=True, max_iter=1)
    with pytest.warns(AccuracyWarning, match=r"violate the constraints by up to .* \(worst: "
                                             r"'.+' at t = .* s\)") as rec:
        res = kin.simulate(2.0, 0.25)
    assert res.summary["max_residual"]["position"] > FIXED_RESIDUAL_LIMIT
    assert "dt = 0.25 s" in str(rec[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        res = kin.simulate(0.5, 0.01)
    assert res.summary["max_residual"]["position"] <= FIXED_RESIDUAL_LIMIT
