"""Embedded dynamics (thesis eq. 2.28) against the natural-coordinate DAE methods, energy
conservation, exact constraints, and the Newton position solvers on the same generated code."""
import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import UnknownNameError
from kinedyn.symbolic.embedded import EmbeddedDynamics

T_END, H = 2.0, 1e-3


@pytest.fixture(scope="module", params=[("slider-crank", "crank", ("rod",), ()),
                                        ("four-bar", "crank", ("coupler", "rocker"), ("rocker.angle",))])
def pair(request):
    """(the four-bar's rocker sine tells its assembly modes apart; its cosine does not at crank
    angle pi, see test_triangular.test_fixed_sign_on_a_mode_blind_unknown_jumps_branch)"""
    name, driver_body, others, sine_first = request.param
    model = kinedyn.models.get(name).compile()
    ref = Dynamics(model, method="projection", integrator="rk4", solver="dense").simulate(T_END, H)
    start = ref.channel(f"body.{driver_body}.angle")[0]
    emb = EmbeddedDynamics(model, integrator="rk4", initial={f"{driver_body}.angle": start},
                           sine_first=sine_first)
    return model, ref, emb, (driver_body, *others)


def test_embedded_agrees_with_projection_method(pair):
    model, ref, emb, bodies = pair
    res = emb.simulate(T_END, H)
    assert [emb.system.coordinates[i].name for i in emb.system.independent] == [f"{bodies[0]}.angle"]
    for b in bodies:
        for suffix, tol in (("", 1e-6), ("_d", 1e-5)):
            a, r = res.channel(f"body.{b}.angle{suffix}"), ref.channel(f"body.{b}.angle{suffix}")
            assert np.abs(a - r).max() <= tol * max(1.0, np.abs(r).max()), (b, suffix)


def test_unknown_integrator_and_position_solver_are_named(pair):
    """Names are checked before anything is derived, and per run: the error lists the
    known ones."""
    model, _, emb, _ = pair
    with pytest.raises(UnknownNameError, match="unknown integrator 'rk5'; known: euler, rk4"):
        emb.simulate(0.1, H, integrator="rk5")
    with pytest.raises(UnknownNameError, match="unknown integrator 'heun'"):
        EmbeddedDynamics(model, integrator="heun")
    with pytest.raises(UnknownNameError, match="unknown position solver 'secant'.*triangular"):
        EmbeddedDynamics(model, position_solver="secant")


def test_exact_constraints_and_energy(pair):
    """Triangular positions: residual at round-off every step; RK4 at 1 ms conserves energy."""
    _, _, emb, _ = pair
    res = emb.simulate(T_END, H)
    assert res.channel("residual.position").max() <= 1e-12
    assert res.summary["energy_drift"] <= 1e-7
    assert res.channel("iterations").max() == 0      # no iteration anywhere
    assert np.ptp(res.channel("body.crank.angle")) > 0.5   # it really moved


def test_explicit_euler_gains_energy_and_newton_solvers_agree():
    """Explicit Euler (the thesis's integrator) drifts -- energy grows -- while constraints stay
    exact; the Newton position solvers on the same code follow the same trajectory."""
    model = kinedyn.models.get("slider-crank").compile()
    tri = EmbeddedDynamics(model, integrator="euler").simulate(1.0, H)
    e = tri.channel("energy")
    assert e[-1] > e[0] and tri.channel("residual.position").max() <= 1e-12
    nr = EmbeddedDynamics(model, integrator="euler", position_solver="newton").simulate(1.0, H)
    assert nr.channel("iterations").max() >= 1
    assert np.abs(nr.channel("body.rod.angle") - tri.channel("body.rod.angle")).max() <= 1e-9

