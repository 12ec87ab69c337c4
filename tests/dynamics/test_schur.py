"""The Schur-complement (reduced multiplier) solution of the index-1 system against the KKT LU."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.dynamics.evaluate import state_derivatives
from kinedyn.errors import ModelError


def _derivatives(dyn, Y, times):
    system, work = dyn.acceleration_evaluator()
    out = np.zeros_like(Y)
    assert state_derivatives(system, work, times, Y, out) == 0
    return out


@pytest.mark.parametrize("model", ["four-bar", "slider-crank", "gough-stewart"])
def test_same_accelerations_as_the_kkt_solvers(model):
    """qdd (and hence lam) from J M^-1 J^T equal the sparse and dense KKT solutions at states
    along a run, including velocity-dependent gamma."""
    m = kinedyn.models.get(model).compile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = {s: Dynamics(m, method="projection", solver=s) for s in ("schur", "sparse", "dense")}
    res = runs["dense"].simulate(t_end=0.2, dt=1e-3, record_every=20)
    Y = np.hstack([res.q, res.qd])
    out = {s: _derivatives(d, Y, res.time) for s, d in runs.items()}
    scale = np.abs(out["dense"]).max()
    for s in ("schur", "sparse"):
        np.testing.assert_allclose(out[s], out["dense"], atol=1e-9 * scale, err_msg=s)


@pytest.mark.parametrize("method", ["augmented", "projection", "partitioning"])
def test_same_trajectory_as_the_kkt_solver(method):
    m = kinedyn.models.get("four-bar").compile()
    a = Dynamics(m, method=method, solver="schur").simulate(t_end=1.0, dt=1e-3, record_every=10)
    b = Dynamics(m, method=method, solver="dense").simulate(t_end=1.0, dt=1e-3, record_every=10)
    np.testing.assert_allclose(a.q, b.q, atol=1e-9)
    if method != "augmented":
        assert a.summary["max_residual"]["position"] <= 1e-10
        assert a.summary["max_residual"]["velocity"] <= 1e-10


def test_schur_is_the_default_and_baumgarte_matches():
    m = kinedyn.models.get("four-bar").compile()
    a = Dynamics(m, method="augmented", baumgarte=(5.0, 5.0))
    assert a.solver_name == "schur"
    b = Dynamics(m, method="augmented", baumgarte=(5.0, 5.0), solver="dense")
    ra = a.simulate(t_end=1.0, dt=1e-3, record_every=10)
    rb = b.simulate(t_end=1.0, dt=1e-3, record_every=10)
    np.testing.assert_allclose(ra.q, rb.q, atol=1e-10)


def test_schur_needs_a_constant_positive_definite_mass():
    from kinedyn.dynamics.schur import build
    m = kinedyn.models.get("four-bar").compile()
    d = Dynamics(m, method="augmented")
    M = d.f.mass_dense.copy()
    M[0, :] = M[:, 0] = 0.0  # a massless coordinate
    assert build(d.f, M, d.rows) is None
    with pytest.raises(ModelError, match="schur"):
        d.f.mass_dense = M
        Dynamics(d.f, method="augmented", solver="schur")


def test_projection_closes_positions_and_velocities_after_semi_implicit_steps():
    """Semi-implicit Euler moves q by O(dt) per step: the projection's quasi-Newton iterations
    (factor from the start of the step) still close both levels to the tolerance."""
    m = kinedyn.models.get("gough-stewart").compile()
    r = Dynamics(m, method="projection", integrator="semi-implicit-euler").simulate(
        t_end=0.1, dt=1e-3, record_every=10)
    assert r.summary["max_residual"]["position"] <= 1e-10
    assert r.summary["max_residual"]["velocity"] <= 1e-10
