"""Fast paths of the dynamics methods against the paths they replace: the dense small-system
Schur evaluation, the finite differences of index3 restricted to the coordinates the forces
depend on, and partitioning's chord iterations with a held factor."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics, schur
from kinedyn.dynamics.implicit import force_coordinates
from kinedyn.dynamics.integrators import eval_state_derivative

from .models import loaded_planar, stiff_hanger


def _schur_pair(dyn, project=True):
    f = dyn.f
    out = []
    for dense in (True, False):
        s = schur.build(f, f.mass_dense, dyn.rows, project=project, dense=dense)
        out.append((s, schur.make_work(s, f.make_work())))
    return out


@pytest.mark.parametrize("model", ["double-pendulum", "four-bar", "slider-crank"])
def test_dense_path_is_chosen_and_matches_the_sparse_one(model):
    """Small systems take the dense path automatically; its state derivative (accelerations and
    multipliers) equals the sparse Cholesky's to round-off along a run."""
    m = kinedyn.models.get(model).compile()
    dyn = Dynamics(m, method="projection")
    assert dyn.system.dense and dyn.f.n_q <= schur.DENSE_MAX
    (sd, wd), (ss, ws) = _schur_pair(dyn)
    assert not ss.dense
    res = dyn.simulate(t_end=0.3, dt=1e-3, record_every=30)
    for k, t in enumerate(res.time):
        y = np.concatenate([res.q[k], res.qd[k] + 0.3 * np.sin(np.arange(dyn.f.n_q) + k)])
        a, b = np.zeros_like(y), np.zeros_like(y)
        assert eval_state_derivative(sd, wd, y, t, a) == 0
        assert eval_state_derivative(ss, ws, y, t, b) == 0
        scale = np.abs(b).max()
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(wd.lam, ws.lam, rtol=0, atol=1e-12 * np.abs(ws.lam).max())


@pytest.mark.parametrize("method", ["augmented", "projection"])
def test_dense_run_matches_sparse_run(method):
    """Whole RK4 runs (with the projection's quasi-Newton corrections) agree to round-off, and
    the projection closes positions and velocities to its tolerance."""
    m = kinedyn.models.get("four-bar").compile()
    runs = []
    for path in range(2):   # a new Dynamics each: a second simulate() rebuilds its own system
        dyn = Dynamics(m, method=method)
        dyn.system, dyn.sys_work = _schur_pair(dyn, project=method == "projection")[path]
        runs.append(dyn.simulate(t_end=2.0, dt=1e-3, record_every=50))
    assert runs[0].dyn.system.dense and not runs[1].dyn.system.dense
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-11)
    np.testing.assert_allclose(runs[0].qd, runs[1].qd, rtol=0, atol=1e-10)
    if method == "projection":
        for r in runs:
            assert r.summary["max_residual"]["position"] <= 1e-12
            assert r.summary["max_residual"]["velocity"] <= 1e-12
        assert runs[0].summary["energy"]["max_relative_drift"] < 1e-7


def test_dense_path_reports_a_singular_configuration():
    """A rank-deficient J (two copies of one constraint row) fails the pivot test on both paths."""
    m = kinedyn.models.get("double-pendulum").compile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dyn = Dynamics(m, method="augmented")
    rows = np.array([dyn.rows[0], dyn.rows[0]])
    y = np.concatenate([dyn.q_initial, dyn.qd_initial])
    for dense in (True, False):
        s = schur.build(dyn.f, dyn.f.mass_dense, rows, dense=dense)
        assert eval_state_derivative(s, schur.make_work(s, dyn.f.make_work()), y, 0.0,
                                     np.zeros_like(y)) != 0


def test_force_coordinates():
    """Gravity-only models need no K, C columns; a spring-damper's are its points' coordinates."""
    four = Dynamics(kinedyn.models.get("four-bar").compile(), method="index3")
    assert len(four.hht.data.fd_cols) == 0
    hanger = Dynamics(stiff_hanger().compile(), method="index3")
    cols = hanger.hht.data.fd_cols
    assert 0 < len(cols) <= hanger.f.n_q and set(cols) <= set(range(hanger.f.n_q))
    assert len(force_coordinates(object(), 7)) == 7   # other formulations: every coordinate


@pytest.mark.parametrize("make", [stiff_hanger, loaded_planar])
def test_index3_restricted_differences_match_full_ones(make):
    """K and C differenced only in the force coordinates give the same run as differencing every
    coordinate (the other columns are exactly zero)."""
    m = make().compile()
    runs = []
    for full in (False, True):
        dyn = Dynamics(m, method="index3", hht_alpha=-0.2)
        if full:
            dyn.hht.data = dyn.hht.data._replace(fd_cols=np.arange(dyn.f.n_q, dtype=np.int64))
        runs.append(dyn.simulate(t_end=0.2, dt=2e-3))
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(runs[0].qd, runs[1].qd, rtol=0, atol=1e-10)


def test_partitioning_chord_iterations_close_and_conserve():
    """Partitioning with chord iterations from extrapolated dependent coordinates keeps the
    closure at its tolerance, conserves energy, re-partitions as the four-bar turns (each time
    going on from the failed step, never back to an earlier record: that could alternate
    between two partitions forever) and converges to the adaptive reference at RK4's order."""
    m = kinedyn.models.get("four-bar").compile()
    ref = Dynamics(m, method="partitioning", integrator="reference").simulate(
        t_end=2.0, dt=1e-3, record_every=20)
    errors = []
    for dt, every in ((1e-3, 20), (5e-4, 40)):
        dyn = Dynamics(m, method="partitioning")
        p = dyn.simulate(t_end=2.0, dt=dt, record_every=every)
        assert dyn.reanalyses >= 1
        assert p.summary["max_residual"]["position"] <= 1e-10
        assert p.summary["max_residual"]["velocity"] <= 1e-10
        assert p.summary["energy"]["max_relative_drift"] < 1e-6
        errors.append(np.abs(p.q - ref.q).max())
    # RK4's truncation error (the augmented method is 2.3e-5 off at dt = 1e-3 too), 4th order
    assert errors[0] < 5e-5
    assert errors[1] < errors[0] / 8


def test_re_partitioning_within_a_record_interval():
    """The four-bar re-partitions 23 times in 3 s, so a run recorded every 0.1 s meets two
    re-partitions inside one record interval. Such a run once stopped at t = 0.479 s with "the
    system matrix became singular": the steps that finished an interval after a re-partition
    were not retried themselves. It runs through, and its records are those of the run
    recorded at every step to the closure's tolerance: a record meets the state the post-step
    completed and solves nothing again. (The two runs' compiled calls start at different steps,
    so their step times, and the chord iterations' extrapolated starts, differ in the last
    bits.)"""
    m = kinedyn.models.get("four-bar").compile()
    dense = Dynamics(m, method="partitioning")
    every = dense.simulate(t_end=3.0, dt=1e-3)
    sparse = Dynamics(m, method="partitioning")
    sampled = sparse.simulate(t_end=3.0, dt=1e-3, record_every=100)
    assert sparse.reanalyses == dense.reanalyses >= 20
    np.testing.assert_allclose(sampled.q, every.q[::100], rtol=0, atol=1e-11)
    np.testing.assert_allclose(sampled.qd, every.qd[::100], rtol=0, atol=1e-10)
    assert sampled.summary["max_residual"]["position"] <= 1e-10
    # a run whose length is not a multiple of the record interval ends inside one
    short = Dynamics(m, method="partitioning").simulate(t_end=2.95, dt=1e-3, record_every=100)
    np.testing.assert_allclose(short.q, every.q[:2951:100], rtol=0, atol=1e-11)


def test_penalty_matrix_falls_back_instead_of_rebuilding(monkeypatch):
    """The double pendulum's penalty matrix M + Phi_q^T alpha Phi_q degrades its static sparse
    pivot order as the pendulum swings. With the dense fall-back of small blocks (the
    default) the run never stops to rebuild; without it (``KINEDYN_SPARSE_FALLBACK=0``) each
    degradation is a rebuild in Python. The two runs are the same motion up to rounding,
    which the penalty matrix (rho = 1e7 against unit masses) and 3 s of a double pendulum
    magnify: they differ from each other by 8e-9, as the run with LAPACK's dense solver
    differs from either (5e-9), and by 10x less than the penalty method from the augmented
    one (7e-8)."""
    from kinedyn.linalg.sparse import FALLBACK_SWITCH
    m = kinedyn.models.get("double-pendulum").compile()
    runs = []
    for fallback in ("1", "0"):
        monkeypatch.setenv(FALLBACK_SWITCH, fallback)
        dyn = Dynamics(m, method="penalty")
        runs.append((dyn.simulate(t_end=3.0, dt=1e-3, record_every=10), dyn.reanalyses))
    (kept, none), (rebuilt, some) = runs
    assert none == 0 and some >= 3
    lapack = Dynamics(m, method="penalty", solver="dense").simulate(t_end=3.0, dt=1e-3,
                                                                    record_every=10)
    for a, b in ((kept, rebuilt), (kept, lapack), (rebuilt, lapack)):
        assert np.abs(a.q - b.q).max() < 2e-8
        assert np.abs(a.qd - b.qd).max() < 2e-7
