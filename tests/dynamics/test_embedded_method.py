"""Dynamics(method="embedded"): the symbolic embedded ODE (thesis 3.4.1) recorded in natural
coordinates, cross-checked against the natural-coordinate projection method."""
import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import ModelError, SolverError, UnknownNameError


def test_model_without_a_symbolic_plan_is_a_clear_error():
    with pytest.raises(ModelError, match="symbolic plan.*double-pendulum"):
        Dynamics(kinedyn.models.get("double-pendulum").compile(), method="embedded")


@pytest.mark.parametrize("symbolic, message", [
    ("abc", "symbolic= takes a dict of embedded-dynamics options .* got 'abc'"),
    ({"bogus": 1}, "unknown embedded-dynamics option.s. 'bogus'; the options are absolute, "
                   ".* and the plan's order, time_limit"),
    ({"tol": 1e-3}, "symbolic=.*tol is an argument of Dynamics itself"),
])
def test_bad_symbolic_options_are_named(symbolic, message):
    with pytest.raises(ModelError, match=message):
        Dynamics(kinedyn.models.get("four-bar").compile(), method="embedded", symbolic=symbolic)


def test_unknown_integrator_is_named_before_anything_is_derived():
    """Through Dynamics and the method itself: the error lists the integrators the generated
    run loop has ('reference' runs on the partitioned ODE only)."""
    model = kinedyn.models.get("four-bar").compile()
    with pytest.raises(UnknownNameError, match="unknown integrator 'heun'; known: euler, rk4"):
        Dynamics(model, method="embedded", integrator="heun")
    with pytest.raises(ModelError, match="'reference' integrator runs on the partitioned ODE"):
        Dynamics(model, method="embedded", integrator="reference")
    from kinedyn.dynamics.embedded import EmbeddedMethod
    from kinedyn.kinematics.analysis import formulation_for
    f = formulation_for(model, "natural")
    with pytest.raises(UnknownNameError, match="unknown integrator 'bdf2'; known: euler, rk4, "
                       "semi-implicit-euler"):
        EmbeddedMethod(f, f.q0, np.zeros(f.n_q), 0.0, "bdf2", 1e-10, 20)


def test_open_chain_has_nothing_to_embed():
    """An open chain has no constraints in joint coordinates: asked for a plan anyway, the
    symbolic pipeline says so (it used to fail inside SymPy's jacobian of an empty matrix)."""
    with pytest.raises(ModelError, match="double-pendulum: no constraints"):
        Dynamics(kinedyn.models.get("double-pendulum").compile(), method="embedded",
                 symbolic={})


def test_repartitioning_follows_a_triple_rocker_through_its_limit_positions():
    """A non-Grashof four-bar (every link a rocker) swinging under gravity: embedded in the
    crank angle the run fails where the closed forms lose their root (t = 0.39 s); with
    ``repartition`` it switches between crank, rocker and coupler angles and follows the
    natural-coordinate projection method, the constraints exact throughout (energy drift
    3.1e-5 J against projection's 2.8e-5 J; 1.8e-6 against 1.8e-6 at half the step)."""
    model = kinedyn.models.four_bar(ground=0.4, crank=0.35, coupler=0.3, rocker=0.3).compile()
    with pytest.raises(SolverError, match="best other choice here") as err:
        Dynamics(model, method="embedded", integrator="rk4").simulate(1.0, 1e-3)
    assert 0.3 < err.value.time < 0.5
    emb = Dynamics(model, method="embedded", integrator="rk4",
                   symbolic={"repartition": True}).simulate(1.0, 1e-3)
    ref = Dynamics(model, method="projection", integrator="rk4").simulate(1.0, 1e-3)
    parts = emb.summary["partitions"]
    assert parts[0] == {"t": 0.0, "independent": ["crank.angle"]}
    assert len(parts) >= 4 and {p["independent"][0] for p in parts} == {
        "crank.angle", "coupler.angle", "rocker.angle"}
    assert emb.channel("residual.position").max() <= 1e-12
    for b in ("crank", "coupler", "rocker"):
        a, r = emb.channel(f"body.{b}.angle"), ref.channel(f"body.{b}.angle")
        assert np.ptp(r) > 1.0                       # it swings through its limits
        assert np.abs(a - r).max() <= 1e-5, b
    drift = [np.abs(r.channel("energy.total") - r.channel("energy.total")[0]).max()
             for r in (emb, ref)]
    assert drift[0] <= 1.5 * drift[1]             # RK4's truncation error, as projection's
    # the partitions were derived (and compiled) inside that run, and that time is reported
    # apart from the run's; a second run of the same model reuses them and derives nothing
    assert emb.summary["partition_derivation_s"] > 0.0
    again = Dynamics(model, method="embedded", integrator="rk4",
                     symbolic={"repartition": True}).simulate(1.0, 1e-3)
    assert again.summary["partition_derivation_s"] == 0.0
    assert again.summary["partitions"] == parts
    np.testing.assert_array_equal(again.channel("body.coupler.angle"),
                                  emb.channel("body.coupler.angle"))


def test_four_bar_conserves_energy_and_follows_projection():
    """Gravity only (conservative): RK4's energy error is its truncation error (fourth order,
    as the projection method's) and every natural output matches the projection method."""
    model = kinedyn.models.get("four-bar").compile()
    drift = []
    for h in (1e-3, 5e-4):
        emb = Dynamics(model, method="embedded", integrator="rk4").simulate(1.0, h)
        e = emb.channel("energy.total")
        drift.append(np.abs(e - e[0]).max())
    assert drift[0] <= 1e-7 and drift[1] <= drift[0] / 12
    ref = Dynamics(model, method="projection", integrator="rk4").simulate(1.0, 5e-4)
    assert emb.channel("residual.position").max() <= 1e-12
    assert emb.channel("residual.velocity").max() <= 1e-12
    for b in ("crank", "coupler", "rocker"):
        a, r = emb.channel(f"body.{b}.angle"), ref.channel(f"body.{b}.angle")
        assert np.abs(r - r[0]).max() > 0.1          # it moves
        assert np.abs(a - r).max() <= 1e-7, b
    for c in ("x", "y"):                             # a point, its velocity and acceleration
        for suffix, tol in (("", 1e-8), ("_d", 1e-6), ("_dd", 1e-5)):
            name = f"point.coupler.B.{c}{suffix}"
            assert np.abs(emb.channel(name) - ref.channel(name)).max() <= tol, name


@pytest.fixture(scope="module")
def gough_stewart():
    """The thesis's run (leg forces +-0.1 sin(2 pi t/3) N, no gravity)."""
    return kinedyn.models.gough_stewart(g=0.0).compile()


@pytest.mark.slow
def test_gough_stewart_agrees_with_projection(gough_stewart):
    t_end, h = 0.5, 1e-3
    emb = Dynamics(gough_stewart, method="embedded", integrator="rk4").simulate(t_end, h)
    ref = Dynamics(gough_stewart, method="projection", integrator="rk4").simulate(t_end, h)
    assert emb.summary["method"] == "embedded"
    assert emb.channel("residual.position").max() <= 1e-12
    assert emb.channel("residual.velocity").max() <= 1e-12
    for c in ("x", "y", "z", "yaw", "pitch", "roll"):
        a, r = emb.channel(f"body.platform.{c}"), ref.channel(f"body.platform.{c}")
        assert np.abs(a - r).max() <= 1e-10 + 1e-7 * np.abs(r - r[0]).max(), c
    assert np.abs(emb.channel("body.platform.yaw")[-1]) > 1e-2        # it does turn
    for k in range(1, 7):                                              # leg lengths
        a, r = emb.channel(f"joint.P{k}.displacement"), ref.channel(f"joint.P{k}.displacement")
        assert np.abs(a - r).max() <= 1e-10, k
    # energy (kinetic; the leg forces do work) equal to the DAE's, and to the work done by the
    # leg forces F_k = -+0.1 sin(2 pi t / 3) N on the leg rates (trapezoidal quadrature)
    e = emb.channel("energy.total")
    assert np.abs(e - ref.channel("energy.total")).max() <= 1e-10
    assert e[-1] > 1e-4
    t = emb.time
    power = sum((-1 if k % 2 else 1) * 0.1 * np.sin(2 * np.pi * t / 3)
                * emb.channel(f"joint.P{k}.displacement_d") for k in range(1, 7))
    work = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(t))])
    assert np.abs(e - e[0] - work).max() <= 1e-4 * np.abs(e).max()
    # explicit and semi-implicit Euler on the same generated code (no regeneration)
    for integ in ("euler", "semi-implicit-euler"):
        e = Dynamics(gough_stewart, method="embedded", integrator=integ).simulate(t_end, h)
        assert e.channel("residual.position").max() <= 1e-12
        yaw = emb.channel("body.platform.yaw")          # first-order methods: O(h) apart
        assert np.abs(e.channel("body.platform.yaw") - yaw).max() < 1e-2 * np.ptp(yaw)
