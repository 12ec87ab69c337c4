"""Reactions (Newton-Euler from the computed motion) on resting mechanisms, by hand."""
from __future__ import annotations

import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics

from .models import G, pendulum


def rest(model, t_end=0.05):
    r = Dynamics(model.compile(), method="projection").simulate(t_end=t_end, dt=1e-3)
    out = r.reactions()
    assert np.abs(r.qd).max() < 1e-9           # it really rests
    assert np.abs(out["residual.newton_euler"]).max() < 1e-9
    return r, out


def test_hanging_pendulum_pin_carries_the_weight():
    r, out = rest(pendulum(theta0=0.0, mass=2.0))
    np.testing.assert_allclose(out["reaction.pin.force_x"], 0.0, atol=1e-9)
    np.testing.assert_allclose(out["reaction.pin.force_y"], 2.0 * G, rtol=1e-10)


def test_held_pendulum_motor_torque_is_weight_times_half_length():
    """A horizontal rod held by its driven pin: force m g up, torque m g L / 2."""
    r, out = rest(pendulum(theta0=np.pi / 2, length=0.8, mass=1.5, angle="0"))
    np.testing.assert_allclose(out["reaction.pin.force_y"], 1.5 * G, rtol=1e-10)
    np.testing.assert_allclose(out["effort.hold"], 1.5 * G * 0.4, rtol=1e-10)


def test_held_four_bar_balances_gravity():
    """Crank held at rest: the two ground pivots carry the three links' weight, and the motor
    torque is dV/d(crank angle) (virtual work, V from assembled neighbouring poses)."""
    def model(angle):
        return kinedyn.models.four_bar(speed=0.0, crank_angle=angle, g=G)
    theta = 1.2
    r, out = rest(model(theta))
    vertical = out["reaction.A.force_y"] + out["reaction.D.force_y"]
    np.testing.assert_allclose(vertical, 3 * 1.0 * G, rtol=1e-9)
    np.testing.assert_allclose(out["reaction.A.force_x"] + out["reaction.D.force_x"], 0.0,
                               atol=1e-9)
    h = 1e-5
    V = [Dynamics(model(theta + s).compile()).f.potential_energy(
        Dynamics(model(theta + s).compile()).q_initial) for s in (h, -h)]
    np.testing.assert_allclose(out["effort.crank_drive"], (V[0] - V[1]) / (2 * h), rtol=1e-6)


@pytest.mark.parametrize("method", ["augmented", "partitioning"])
def test_reactions_agree_across_methods_in_motion(method):
    """Reactions depend only on the motion: a free four-bar gives the same pivot forces."""
    runs = {m: Dynamics(kinedyn.models.get("four-bar").compile(), method=m).simulate(
        t_end=0.3, dt=1e-3, record_every=10) for m in ("projection", method)}
    a, b = (runs[m].reactions() for m in ("projection", method))
    for k in ("reaction.A.force_x", "reaction.B.force_y", "reaction.D.force_y"):
        np.testing.assert_allclose(b[k], a[k], atol=1e-5, err_msg=k)


@pytest.mark.parametrize("name", ["four-bar", "slider-crank", "gough-stewart", "loaded"])
def test_compiled_reactions_match_the_reference(name):
    """The compiled whole-run kernel gives the NumPy reference's reactions and residuals
    (every load kind: the 'loaded' model has world and body-frame point forces, an actuated
    spring-damper and joint torques / forces)."""
    from kinedyn.dynamics.reactions import reactions
    from .models import loaded_planar
    m = loaded_planar().compile() if name == "loaded" else kinedyn.models.get(name).compile()
    r = Dynamics(m, method="projection").simulate(t_end=0.1, dt=1e-3, record_every=10)
    fast, res_fast = reactions(r.dyn.f, r.time, r.q, r.qd, r.qdd)
    ref, res_ref = reactions(r.dyn.f, r.time, r.q, r.qd, r.qdd, reference=True)
    assert fast.keys() == ref.keys()
    scale = max(np.abs(v).max() for v in ref.values())
    for k in ref:
        np.testing.assert_allclose(fast[k], ref[k], rtol=0, atol=1e-12 * scale, err_msg=k)
    np.testing.assert_allclose(res_fast, res_ref, rtol=0, atol=1e-12 * scale)


def test_compiled_inverse_dynamics_matches_the_reference():
    """Actuated joints instead of drivers (inverse dynamics of the Gough-Stewart legs)."""
    from kinedyn.dynamics.inverse import inverse_dynamics, parse_actuators
    from kinedyn.dynamics.reactions import reactions
    legs = ["P1", "P2", "P3", "P4", "P5", "P6"]
    fast = inverse_dynamics(kinedyn.models.get("gough-stewart-driven").compile(), legs,
                            t_end=0.05, dt=1e-2)
    kin = fast.kin
    f = kin.f if hasattr(kin, "f") else kin.analysis.f
    ref, _ = reactions(f, kin.time, kin.q, kin.qd, kin.qdd, parse_actuators(f.model, legs),
                       reference=True)
    for leg in legs:
        np.testing.assert_allclose(fast.channel(f"effort.{leg}"), ref[f"effort.{leg}"],
                                   rtol=1e-10, atol=1e-10)


def test_an_actuator_listed_twice_is_named():
    """The same joint component twice would be one actuator counted twice: refused, naming it."""
    from kinedyn.dynamics.inverse import parse_actuators
    from kinedyn.errors import ModelError
    model = kinedyn.models.get("gough-stewart-driven").compile()
    assert parse_actuators(model, ["P1", "P2"]) == {model.joint_name.index("P1"): {1},
                                                   model.joint_name.index("P2"): {1}}
    with pytest.raises(ModelError, match=r"actuator 'P1:displacement' is listed twice "
                                         r"\(joint 'P1', displacement\)"):
        parse_actuators(model, ["P1", "P1:displacement"])
