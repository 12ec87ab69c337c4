"""User forces (``System.add_user_force``): compiled into every natural-coordinate method's
force kernel, into the reactions, and their failures reported by name and time."""
from __future__ import annotations

import math

import numba as nb
import numpy as np
import pytest

from kinedyn.dynamics.reactions import reactions
from kinedyn.dynamics.simulation import Dynamics
from kinedyn.errors import ModelError

from .models import G, pendulum

LIFT = 50.0     # N, upward at the rod's tip
DAMPING = 0.8   # N s/m, viscous drag at the tip
THETA0 = 0.4    # rad from the downward vertical


@nb.njit
def lift(t, p, v, out):
    out[0, 1] = LIFT


def drag(t, p, v, out):  # a plain function: Numba compiles it
    for k in range(2):
        out[0, k] = -DAMPING * v[0, k]


def _pendulum(name="lift", function=lift, point_force=False):
    s = pendulum(theta0=THETA0)
    if point_force:
        s.add_force("lift", "point", body="rod", point="B", force=[0, LIFT])
    else:
        s.add_user_force(name, [("rod", "B")], function)
    return s.compile()


@pytest.mark.parametrize("method", ["augmented", "projection", "partitioning", "penalty",
                                    "index3"])
def test_a_user_force_drives_every_natural_method(method):
    """Released from rest: joint acceleration (L cos phi (F - m g / 2)) / (m L^2 / 3) (phi the
    rod's angle from x); and the run equals the one with the same built-in point force."""
    run = Dynamics(_pendulum(), method=method).simulate(0.2, 0.001)
    same = Dynamics(_pendulum(point_force=True), method=method).simulate(0.2, 0.001)
    phi, m, L = THETA0 - math.pi / 2, 2.0, 1.0
    expected = L * math.cos(phi) * (LIFT - m * G / 2) / (m * L**2 / 3)
    assert expected > 20  # the lift wins: the rod swings up, against gravity
    acc = run.channel("joint.pin.angle_dd")[0]
    np.testing.assert_allclose(acc, expected, rtol=1e-3 if method == "index3" else 1e-9)
    for channel in ("joint.pin.angle", "joint.pin.angle_d", "point.rod.B.y"):
        np.testing.assert_allclose(run.channel(channel), same.channel(channel), rtol=0,
                                   atol=1e-12)


def test_a_velocity_dependent_user_force_dissipates_its_power():
    """Viscous drag at the tip: E(t) - E(0) = -c int |v_B|^2 dt (trapezoid on 0.1 ms)."""
    run = Dynamics(_pendulum("drag", drag), method="projection").simulate(1.0, 1e-4)
    speed2 = run.channel("point.rod.B.x_d") ** 2 + run.channel("point.rod.B.y_d") ** 2
    dissipated = DAMPING * np.concatenate(
        [[0.0], np.cumsum(0.5 * (speed2[1:] + speed2[:-1]) * np.diff(run.time))])
    energy = run.channel("energy.total")
    assert dissipated[-1] > 0.05  # J: the drag matters
    np.testing.assert_allclose(energy - energy[0], -dissipated, rtol=0, atol=1e-6)


def test_the_reactions_include_the_user_forces():
    """Pin reaction with the user force = with the same built-in point force (compiled and
    reference paths), and it differs from the reaction without the lift by the lift."""
    out = {}
    for key, model in (("user", _pendulum()), ("point", _pendulum(point_force=True))):
        run = Dynamics(model, method="projection").simulate(0.1, 0.001)
        for ref in (False, True):
            out[key, ref] = reactions(run.dyn.f, run.time, run.q, run.qd, run.qdd,
                                      reference=ref)[0]
    for ref in (False, True):
        for name, value in out["point", ref].items():
            np.testing.assert_allclose(out["user", ref][name], value, rtol=1e-10, atol=1e-9)
    assert abs(out["user", False]["reaction.pin.force_y"][0]) > 1.0


@nb.njit
def _raises(t, p, v, out):
    if t > 0.05:
        raise ValueError("sensor lost")
    out[0, 1] = 1.0


@nb.njit
def _nan_late(t, p, v, out):
    out[0, 0] = np.nan if t > 0.02 else 0.0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # Numba prints it
def test_a_failing_user_force_is_named_with_its_time():
    with pytest.raises(ModelError, match=r"user force 'flaky' raised an exception .*t = 0\.05"):
        Dynamics(_pendulum("flaky", _raises), method="augmented").simulate(0.2, 0.01)
    with pytest.raises(ModelError, match=r"user force 'nan' returned a non-finite force at "
                                         r"t = 0\.0[23]"):
        Dynamics(_pendulum("nan", _nan_late), method="projection").simulate(0.2, 0.01)


def test_a_user_force_numba_cannot_compile_is_a_model_error():
    def uses_python(t, p, v, out):
        out[0, 0] = len(open("/dev/null").name)  # open(): not in nopython mode

    with pytest.raises(ModelError, match="user force 'py'.*Numba cannot compile"):
        Dynamics(_pendulum("py", uses_python), method="augmented")


def test_methods_without_user_forces_refuse_them_by_name():
    with pytest.raises(ModelError, match="user forces: lift"):
        Dynamics(_pendulum(), method="hdca")
