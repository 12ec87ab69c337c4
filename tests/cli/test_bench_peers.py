"""``kinedyn bench peers``: the peers' models of the mechanisms are the same physics as
kinedyn's (cross-checks against kinedyn's reference runs), and the benchmark's rows are right.

The peers are optional (``.[peers]``); their tests are skipped where a peer is not installed.
"""
import math

import numpy as np
import pytest

from kinedyn.bench import peers as P
from kinedyn.bench._peers import exudyn_models, mujoco_models, pinocchio_models
from kinedyn.dynamics import Dynamics
from kinedyn.models import get

T_END = 0.3
MECH = {m.name: m for m in P.mechanisms((8,))}


def reference(name):
    """kinedyn's reference run of a mechanism (RK4 at dt / 10), observables as the peers'."""
    mech = MECH[name]
    res = Dynamics(get(mech.model).compile(), method=mech.reference, integrator="rk4") \
        .simulate(T_END, P.DT / 10, record_every=10 * P.SAMPLE_EVERY)
    return res.time, P._kinedyn_values(res, mech)


def deviation(run, name):
    t, ref = reference(name)
    return P._deviation(run.t, run.values, t, ref)


def test_rows_without_peers():
    """kinedyn alone: a row per method (the four-bar: projection in natural coordinates and
    the embedded joint-coordinate dynamics), each timed against the faster of the two in the
    same round, each at RK4's accuracy (dt = 1e-3) and with its loop closed."""
    rows = P.compare(MECH["four-bar"], "rk4", T_END, 2, {}, log=lambda *a: None)
    assert [r["setup"] for r in rows] == ["projection, rk4", "embedded, rk4"]
    for row in rows:
        assert row["engine"] == "kinedyn" and row["x_kinedyn"] >= 1.0
        assert row["us_per_step"] > 0
        assert row["max_deviation"] < 1e-6
        assert row["loop_gap"] < 1e-10
    assert rows[0]["max_deviation"] < 1e-8  # the reference's own formulation


def test_semi_implicit_euler_deviates_at_first_order():
    """The deviation column measures the integrator: semi-implicit Euler at dt = 1e-3 is
    first order, orders of magnitude further from the reference than RK4."""
    rows = P.compare(MECH["double-pendulum"], "semi-implicit-euler", T_END, 1, {},
                     log=lambda *a: None)
    assert 1e-5 < rows[0]["max_deviation"] < 1e-1


def test_a_failing_peer_gets_a_row_saying_why():
    """A peer engine that fails (here a stand-in raising at its first run) does not stop the
    benchmark: its row names the error, kinedyn's rows are there as usual."""
    import types

    def broken(*args, **kwargs):
        raise RuntimeError("solver diverged")
    peer = types.SimpleNamespace(INTEGRATORS=("rk4",), double_pendulum=broken,
                                 version=lambda: "0.0")
    rows = P.compare(MECH["double-pendulum"], "rk4", T_END, 1, {"Broken": peer},
                     log=lambda *a: None)
    assert [r["engine"] for r in rows] == ["kinedyn", "Broken 0.0"]
    assert rows[1]["setup"] == "failed: RuntimeError: solver diverged"
    assert "us_per_step" not in rows[1]


def test_a_peer_row_and_its_notes():
    """A peer's row: its version and set-up, its time against kinedyn's in the same rounds,
    its deviation (none for a stand-in that returns the reference itself), and its notes
    collected for the report."""
    import types

    from kinedyn.bench._peers import PeerRun
    t, ref = reference("double-pendulum")

    def echo(t_end, dt, integrator, repeat=1, sample_every=10):
        k = int(round(t_end / dt)) // sample_every + 1
        return PeerRun("1.0", "the reference again", 1.0, t[:k], {n: v[:k] for n, v in
                                                                    ref.items()}, "a stand-in")
    peer = types.SimpleNamespace(INTEGRATORS=("rk4",), double_pendulum=echo)
    notes = {}
    # three rounds: with an odd count the median of the ratios 1 / kinedyn's time is 1 / the
    # median time, exactly (two rounds averaged the ratios: off by 3x on a loaded host)
    rows = P.compare(MECH["double-pendulum"], "rk4", T_END, 3, {"Echo": peer},
                     log=lambda *a: None, notes=notes)
    assert [r["engine"] for r in rows] == ["kinedyn", "Echo 1.0"]
    assert rows[1]["setup"] == "the reference again" and rows[1]["max_deviation"] == 0
    assert rows[1]["x_kinedyn"] == pytest.approx(1.0 / rows[0]["us_per_step"], rel=1e-12)
    assert notes == {"Echo, double-pendulum": "a stand-in"}


def test_reference_must_be_sampled_at_the_engines_times():
    t = np.array([0.0, 0.01, 0.02])
    with pytest.raises(ValueError, match="not sampled"):
        P._deviation(t + 0.005, {"x": t}, t, {"x": t})


mujoco = pytest.mark.skipif(not mujoco_models.available(), reason="MuJoCo not installed")


@mujoco
def test_mujoco_open_chains_match_kinedyn():
    """Open chains in MuJoCo's joint coordinates and kinedyn's (natural coordinates for the
    pendulum, HDCA for the cart-pendulum) give the same motion to RK4's accuracy."""
    run = mujoco_models.double_pendulum(T_END, P.DT, "rk4", repeat=1)
    assert run.t[0] == 0 and run.values["theta1"][0] == pytest.approx(math.pi / 2)
    assert deviation(run, "double-pendulum") < 1e-8
    run = mujoco_models.cart_pendulum(8, T_END, P.DT, "rk4", repeat=1)
    assert run.values["angle"][0] == pytest.approx(math.pi / 4)
    assert deviation(run, "cart-pendulum-8") < 1e-8


@mujoco
def test_mujoco_four_bar_loop_is_soft():
    """MuJoCo closes the loop with a spring-damper: with its default time constant the loop
    opens by tenths of a millimetre and the motion leaves the reference; with the stiffest
    advised one (2 dt) the gap is some µm and the motion close to the reference."""
    soft = mujoco_models.four_bar(T_END, P.DT, "rk4", repeat=1)
    stiff = mujoco_models.four_bar(T_END, P.DT, "rk4", repeat=1, timeconst=2 * P.DT)
    assert soft.values["gap"][0] < 1e-12 and stiff.values["gap"][0] < 1e-12
    assert soft.values["gap"].max() > 1e-4
    assert 1e-7 < stiff.values["gap"].max() < 2e-5
    assert deviation(soft, "four-bar") > 10 * deviation(stiff, "four-bar")


@mujoco
def test_mujoco_rejects_unknown_integrator():
    with pytest.raises(ValueError, match="unknown integrator 'leapfrog'"):
        mujoco_models.double_pendulum(T_END, P.DT, "leapfrog")


pinocchio = pytest.mark.skipif(not pinocchio_models.available(),
                               reason="Pinocchio not installed")
exudyn = pytest.mark.skipif(not exudyn_models.available(), reason="Exudyn not installed")


@pinocchio
def test_pinocchio_matches_kinedyn():
    """ABA on the open chains and constraintDynamics on the closed four-bar (RK4) follow
    kinedyn's reference: the chains to RK4's accuracy, the four-bar to the 1.7e-7 rad by
    which kinedyn's assembled start differs from the crank's exact pi/2 (grown over the run),
    its loop closed by Baumgarte's correction to well under a micrometre."""
    run = pinocchio_models.double_pendulum(T_END, P.DT, "rk4", repeat=1)
    assert deviation(run, "double-pendulum") < 1e-8
    run = pinocchio_models.cart_pendulum(8, T_END, P.DT, "rk4", repeat=1)
    assert deviation(run, "cart-pendulum-8") < 1e-8
    run = pinocchio_models.four_bar(T_END, P.DT, "rk4", repeat=1)
    assert deviation(run, "four-bar") < 1e-5
    assert run.values["gap"].max() < 1e-8


@pinocchio
def test_pinocchio_aba_and_its_memory_limit(monkeypatch):
    """ABA is timed per call; a chain whose Pinocchio Data (nv^3 derivative tensors) would not
    fit is refused before it is built (here with 20 GiB said to be free: 1025 coordinates
    need about 64 GiB, 257 about 1 GiB)."""
    assert 0 < pinocchio_models.aba_us(4, repeat=1) < 1e4
    monkeypatch.setattr(pinocchio_models, "_available_bytes", lambda: 20.0 * 2 ** 30)
    pinocchio_models._check_data_memory(257)
    with pytest.raises(MemoryError, match="needs ~64.* GiB"):
        pinocchio_models._check_data_memory(1025)


@exudyn
def test_exudyn_matches_kinedyn():
    """Exudyn's kinematic tree (RK4) gives the pendulum's motion to RK4's accuracy; its
    index-3 generalized-alpha keeps the four-bar's loop closed to round-off, at that
    integrator's own (second-order, dissipative) accuracy."""
    run = exudyn_models.double_pendulum(T_END, P.DT, "rk4", repeat=1)
    assert deviation(run, "double-pendulum") < 1e-8
    run = exudyn_models.four_bar(T_END, P.DT, "implicit", repeat=1)
    assert run.values["gap"].max() < 1e-10
    assert deviation(run, "four-bar") < 1e-3


@mujoco
def test_mujoco_gough_stewart_follows_kinedyn_within_its_soft_joints():
    """The 6-UPS in MuJoCo (leg trees, free platform, six connect equalities, the leg forces
    as motor controls) moves its platform as kinedyn's natural coordinates do: with stiff
    joints (time constant 2 dt) to a fraction of a µm, with MuJoCo's default ones the spherical
    joints open by a tenth of a millimetre and the platform's deviation grows with them."""
    mech = next(m for m in P.mechanisms((), spatial=True) if m.name == "gough-stewart")
    res = Dynamics(get(mech.model).compile(), method="projection", integrator="rk4") \
        .simulate(T_END, P.DT / 10, record_every=10 * P.SAMPLE_EVERY)
    ref = P._kinedyn_values(res, mech)
    stiff = mujoco_models.gough_stewart(T_END, P.DT, "rk4", repeat=1, timeconst=2 * P.DT)
    soft = mujoco_models.gough_stewart(T_END, P.DT, "rk4", repeat=1)
    assert stiff.values["z"][0] == pytest.approx(1.5)
    assert P._deviation(stiff.t, stiff.values, res.time, ref) < 1e-5
    assert stiff.values["gap"].max() < 2e-5
    assert soft.values["gap"].max() > 5e-5  # 1.2e-4 m after 0.3 s
    assert P._deviation(soft.t, soft.values, res.time, ref) > \
        10 * P._deviation(stiff.t, stiff.values, res.time, ref)
