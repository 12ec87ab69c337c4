"""A run that blows up says so: a fixed-step integration whose state stops being finite
raises :class:`DivergenceError` with the time, the integrator and the step, instead of
returning its numbers (or failing later inside NumPy); an HDCA run that loses its energy
(its models conserve it) warns."""
import warnings

import numpy as np
import pytest

from kinedyn.dynamics import Dynamics
from kinedyn.dynamics.hdca import HDCA
from kinedyn.errors import AccuracyWarning, DivergenceError
from kinedyn.models import get


@pytest.fixture(scope="module")
def pendulum():
    return get("double-pendulum").compile()


def test_hdca_run_that_blows_up_raises(pendulum):
    """Explicit Euler at dt = 0.05 s on the double pendulum (released horizontal) gains energy
    every step; its state overflows after about 8 s."""
    with pytest.raises(DivergenceError, match=r"euler at dt = 0.05 s .* smaller step or rk4") as e:
        HDCA(pendulum, integrator="euler").simulate(20.0, 0.05)
    assert 1.0 < e.value.time < 20.0
    with pytest.raises(DivergenceError, match=r"rk4 at dt = 0.5 s .*use a smaller step$"):
        HDCA(pendulum).simulate(20.0, 0.5)


def test_hdca_run_that_loses_its_energy_warns(pendulum):
    """Euler at dt = 0.02 s: finite, but the energy it conserves changed by most of the energy
    exchanged; RK4 at 1 ms does not warn."""
    with pytest.warns(AccuracyWarning, match=r"HDCA: the energy changed by .* euler at dt = 0.02"):
        res = HDCA(pendulum, integrator="euler").simulate(20.0, 0.02)
    E, T = res.channel("energy.total"), res.channel("energy.kinetic")
    assert np.isfinite(E).all() and np.abs(E - E[0]).max() > 0.1 * T.max()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        res = HDCA(pendulum).simulate(2.0, 1e-3)
    E = res.channel("energy.total")
    assert np.abs(E - E[0]).max() < 1e-6 * res.channel("energy.kinetic").max()


def test_dynamics_run_that_blows_up_raises(pendulum):
    """The augmented method with Euler at dt = 0.05 s: its projection fails on a state that is
    no longer finite. That is reported as the divergence it is (it used to end in NumPy's
    "SVD did not converge" while the failure was diagnosed)."""
    with pytest.raises(DivergenceError, match=r"euler at dt = 0.05 s") as e:
        Dynamics(pendulum, method="augmented", integrator="euler").simulate(200.0, 0.05)
    assert 1.0 < e.value.time < 200.0


def test_mechanism_that_came_apart_is_a_divergence_not_a_singularity():
    """The penalty method with Euler at dt = 0.01 s on the four-bar: its states stay finite, but
    by t = 0.9 s they violate the constraints by about 2e4 (the model measures 0.35 m) and the
    system matrix turns singular. That is reported as the divergence it is, with the worst
    constraint and the state's size; it was "the system matrix became singular"."""
    with pytest.raises(DivergenceError, match=r"came apart: constraint .* violated by .*"
                                              r"euler at dt = 0.01 s") as e:
        Dynamics(get("four-bar").compile(), method="penalty", integrator="euler").simulate(
            5.0, 0.01)
    assert 0.1 < e.value.time < 5.0
    # a step that keeps the mechanism together runs through
    res = Dynamics(get("four-bar").compile(), method="penalty", integrator="euler").simulate(
        1.0, 1e-3)
    assert np.isfinite(res.q).all()


def test_dynamics_run_that_is_inaccurate_warns():
    """Finite, but wrong: HDCA's semi-implicit Euler on the four-bar (no curvature term in the
    loop) for 10 s ends with the loop 7 cm open and nearly all of the energy it conserves lost.
    That returned its numbers silently through ``Dynamics``; it warns now, as ``HDCA`` did, and
    names both findings. RK4 on the same model does not warn, nor does a model whose energy
    changes by the work of its motor torques (the 3-RRR)."""
    m = get("four-bar-hdca").compile()
    with pytest.warns(AccuracyWarning, match=r"method 'hdca': the energy changed by .* of the "
                      r"largest kinetic energy .*; the constraints are violated by up to .* "
                      r"semi-implicit-euler at dt = 0.001 s .* or rk4, or a method that keeps"):
        res = Dynamics(m, method="hdca", integrator="semi-implicit-euler").simulate(
            10.0, 1e-3, record_every=10)
    assert res.summary["max_residual"]["position"] > 1e-2
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        Dynamics(m, method="hdca", integrator="rk4").simulate(2.0, 1e-3, record_every=10)
        rrr = Dynamics(get("3-rrr").compile(), method="projection").simulate(
            3.0, 1e-3, record_every=10)
    assert rrr.summary["energy"]["max_relative_drift"] > 0.5  # the torques' work


def test_a_short_run_that_blows_up_warns(pendulum):
    """Runs under 100 steps are not judged on their energy drift (a first step from rest
    errs by the energy it starts), but a kinetic energy beyond what the initial energy and
    gravity can supply is wrong at any length: RK4 at dt = 0.3 s on the HDCA four-bar reached
    9e99 J in 3 steps, with only a closure warning."""
    from kinedyn.models import get as model
    with pytest.warns(AccuracyWarning, match=r"HDCA: the kinetic energy reached .* more than 10 "
                                             r"times the .* J its initial energy and gravity can "
                                             r"supply"):
        HDCA(model("four-bar").compile()).simulate(0.9, 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        HDCA(pendulum).simulate(0.05, 1e-3)   # 50 steps from rest: judged and fine
        Dynamics(pendulum, method="projection").simulate(0.05, 1e-3)
