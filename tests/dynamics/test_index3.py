"""Index-3 formulation with HHT-alpha: accuracy order, a stiff spring-damper far beyond the
explicit stability limit, and redundant constraints (a parallelogram with a third crank)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import ModelError

from .models import G, parallelogram, pendulum, stiff_hanger


def test_second_order_and_position_closure():
    model = pendulum(theta0=0.8).compile()
    reference = Dynamics(model, method="partitioning", integrator="reference").simulate(
        t_end=0.5, dt=0.01)
    ref = reference.q[-1]
    runs = [Dynamics(model, method="index3").simulate(t_end=0.5, dt=dt) for dt in (0.01, 0.005)]
    err = [np.abs(r.q[-1] - ref).max() for r in runs]
    assert err[0] / err[1] == pytest.approx(4.0, rel=0.2)
    for r in runs + [reference]:  # both runs report their CPU time, as the explicit ones do
        assert r.summary["cpu_us_per_step"] > 0
    for r in runs:
        assert r.summary["max_residual"]["position"] <= 1e-10
        assert r.summary["max_residual"]["velocity"] <= 1e-10


def test_agrees_with_explicit_methods_on_four_bar():
    m = kinedyn.models.get("four-bar").compile()
    a = Dynamics(m, method="index3").simulate(t_end=1.0, dt=2.5e-4, record_every=40)
    b = Dynamics(m, method="projection").simulate(t_end=1.0, dt=1e-3, record_every=10)
    np.testing.assert_allclose(a.q, b.q, atol=2e-5)
    assert a.summary["energy"]["max_relative_drift"] < 1e-4


def test_stiff_spring_damper_large_steps():
    """omega = 707 rad/s: RK4 is unstable at dt = 5 ms (omega dt = 3.5 > 2.8); HHT is not, and
    settles on the static deflection m g / k."""
    k, mass, free = 1e6, 2.0, 0.5
    model = stiff_hanger(k=k, mass=mass, free=free).compile()
    r = Dynamics(model, method="index3", hht_alpha=-0.3).simulate(t_end=1.0, dt=5e-3)
    y = r.dyn.f.point_trajectory(r.q, r.qd)[0][:, r.dyn.f.model.point_name.index("block.A"), 1]
    assert np.all(np.isfinite(r.q))
    assert y[-1] == pytest.approx(-(free + mass * G / k), abs=1e-9)
    with np.errstate(all="ignore"):
        try:
            e = Dynamics(model, method="projection").simulate(t_end=0.2, dt=5e-3)
            blew_up = not np.all(np.abs(e.q) < 1e3)
        except kinedyn.errors.SolverError:
            blew_up = True
    assert blew_up


def test_redundant_parallelogram():
    """Every constraint kept (minimum-norm Newton updates): the same motion as the explicit
    method, which drops the redundant rows chosen by a rank-revealing QR at set-up."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = parallelogram().compile()
        a = Dynamics(m, method="index3")
        b = Dynamics(m, method="projection")
    assert len(a.redundant) == 1 and a.hht.data.least_squares
    ra = a.simulate(t_end=1.0, dt=5e-4, record_every=20)
    rb = b.simulate(t_end=1.0, dt=1e-3, record_every=10)
    np.testing.assert_allclose(ra.q, rb.q, atol=1e-5)
    assert ra.summary["max_residual"]["position"] <= 1e-10   # all rows, redundant included
    assert ra.summary["energy"]["max_relative_drift"] < 1e-4


def test_alpha_out_of_range_is_an_error():
    with pytest.raises(ModelError, match="hht_alpha"):
        Dynamics(pendulum().compile(), method="index3", hht_alpha=-0.5)
