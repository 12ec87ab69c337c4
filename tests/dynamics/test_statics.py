"""Static equilibrium (kinedyn.dynamics.statics): closed-form equilibria and stiffnesses,
stability, cross-checks with the dynamics (a mechanism started there stays there) and with
the Newton-Euler holding efforts; bad input."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import brentq

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.dynamics.holding import holding_system
from kinedyn.dynamics.statics import static_equilibrium
from kinedyn.errors import AccuracyWarning, ConvergenceError, ModelError
from kinedyn.models.planar import double_pendulum

G = 9.80665


def test_double_pendulum_hangs_with_its_closed_form_stiffness():
    """Released horizontal (an inflexion of the potential: no curvature there), it is found
    hanging; its stiffness along the free motions is the Hessian of the potential in the rods'
    angles (unit rods: the basis of the free motions is orthonormal in the angles):
    m2 g l2 / 2 and (m1 / 2 + m2) g l1."""
    eq = static_equilibrium(double_pendulum(m1=1.0, m2=2.0).compile())
    assert eq.stability == "stable"
    for rod in ("rod1", "rod2"):
        assert eq.channel(f"body.{rod}.angle") % (2 * math.pi) == pytest.approx(
            1.5 * math.pi, abs=1e-9)
    np.testing.assert_allclose(eq.stiffness, [2.0 * G / 2, (0.5 + 2.0) * G], rtol=1e-6)
    assert eq.residual["position"] < 1e-12 and eq.residual["force"] < 1e-9
    # small oscillations: the linearised equations in the rods' angles, M th'' + K th = 0
    from scipy.linalg import eigh
    m1, m2 = 1.0, 2.0
    M = np.array([[m1 / 3 + m2, m2 / 2], [m2 / 2, m2 / 3]])
    K = np.diag([(m1 / 2 + m2) * G, m2 * G / 2])
    np.testing.assert_allclose(eq.frequencies,
                               np.sqrt(eigh(K, M, eigvals_only=True)) / (2 * math.pi),
                               rtol=1e-6)
    assert eq.modes.shape == (4, 2)


def test_inverted_equilibrium_is_reported_unstable():
    """Started exactly upright it is an equilibrium already (no iteration), with the same
    stiffnesses negated, and a warning."""
    with pytest.warns(UserWarning, match=r"is unstable \(stiffness -"):
        eq = static_equilibrium(double_pendulum(theta1=math.pi, theta2=math.pi).compile())
    assert eq.iterations == 0 and eq.stability == "unstable"
    np.testing.assert_allclose(eq.stiffness, [-1.5 * G, -0.5 * G], rtol=1e-6)
    assert np.isnan(eq.frequencies).all()  # both motions grow


def test_no_load_is_neutral():
    eq = static_equilibrium(double_pendulum(g=0.0).compile())
    assert eq.iterations == 0 and eq.stability == "neutral"
    assert np.abs(eq.stiffness).max() < 1e-9


def _spring_pendulum(k=60.0, l0=0.3, m=2.0):
    s = kinedyn.System("spring-pendulum", dim=2, gravity=[0, -G])
    s.add_point("ground", "O", [0, 0])
    s.add_point("ground", "S", [1.0, 0.5])
    s.add_body("rod", mass=m, inertia=m / 12, com=[0.5, 0], orientation=-math.pi / 2,
               points={"A": [0, 0], "B": [1.0, 0]})
    s.add_joint("pivot", "revolute", "ground", "rod", point_a="O", point_b="A")
    s.add_force("spring", "spring", body_a="ground", point_a="S", body_b="rod", point_b="B",
                stiffness=k, damping=0.0, free_length=l0)
    return s


def test_pendulum_on_a_spring_matches_its_potential():
    """A unit rod of mass m pinned at O, pulled by a spring from S = (1, 0.5) to its tip:
    the equilibrium angle is the minimum of V = m g sin(th) / 2 + k (|B - S| - l0)^2 / 2,
    found by bisection on V'; the stiffness is V''."""
    k, l0, m = 60.0, 0.3, 2.0
    S = np.array([1.0, 0.5])

    def dV(th):
        B = np.array([math.cos(th), math.sin(th)])
        L = np.linalg.norm(B - S)
        return m * G * math.cos(th) / 2 + k * (L - l0) * (B - S) @ [-B[1], B[0]] / L

    th = np.linspace(-math.pi, math.pi, 721)
    roots = [brentq(dV, a, b, xtol=1e-14) for a, b in zip(th[:-1], th[1:])
             if dV(a) * dV(b) < 0]
    d2 = [(dV(x + 1e-6) - dV(x - 1e-6)) / 2e-6 for x in roots]
    stable = [x for x, c in zip(roots, d2) if c > 0]
    eq = static_equilibrium(_spring_pendulum(k, l0, m).compile())
    angle = math.remainder(eq.channel("body.rod.angle"), 2 * math.pi)
    nearest = min(stable, key=lambda x: abs(math.remainder(x - angle, 2 * math.pi)))
    assert abs(math.remainder(angle - nearest, 2 * math.pi)) < 1e-9
    assert eq.stability == "stable"
    assert eq.stiffness[0] == pytest.approx(d2[roots.index(nearest)], rel=1e-5)
    # its natural frequency: V'' over the moment of inertia about the pivot, m / 3
    f0 = math.sqrt(d2[roots.index(nearest)] / (m / 3)) / (2 * math.pi)
    assert eq.frequencies[0] == pytest.approx(f0, rel=1e-5)
    # and the dynamics agree: nudged along its mode, it swings with that period
    model = _spring_pendulum(k, l0, m).compile()
    q0 = eq.q + 1e-3 * eq.modes[:, 0] / np.abs(eq.modes[:, 0]).max()
    res = Dynamics(model, method="projection", q0=q0).simulate(round(3.2 / f0, 2), 1e-3)
    swing = res.channel("body.rod.angle") - eq.channel("body.rod.angle")
    up = np.flatnonzero((swing[:-1] < 0) & (swing[1:] >= 0))
    crossings = res.time[up] - swing[up] * (res.time[up + 1] - res.time[up]) / (
        swing[up + 1] - swing[up])
    assert len(crossings) >= 3
    assert np.diff(crossings).mean() == pytest.approx(1 / f0, rel=1e-3)


def test_a_four_bar_started_at_its_equilibrium_stays_there():
    """The dynamics cross-check: released at rest at the equilibrium, the four-bar under
    gravity does not move (its accelerations vanish). Its energy changes by rounding only
    (1e-14 J against a kinetic energy near 1e-28 J), which is no accuracy warning."""
    model = kinedyn.models.get("four-bar").compile()
    eq = static_equilibrium(model)
    assert eq.stability == "stable" and eq.iterations > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        res = Dynamics(model, method="projection", q0=eq.q).simulate(0.2, 1e-3)
    assert np.abs(res.q - eq.q).max() < 1e-9
    moved = Dynamics(model, method="projection").simulate(0.2, 1e-3)  # from its own pose
    assert np.abs(moved.q - moved.q[0]).max() > 1e-3


def test_held_platform_agrees_with_the_newton_euler_efforts():
    """The Gough-Stewart platform held by the constant leg forces that the Newton-Euler
    equations give (holding_system) is at equilibrium where it starts: no iteration, every
    load balanced. Constant forces have no stiffness, so it is unstable."""
    system = holding_system(kinedyn.models.get("gough-stewart"), [f"P{i}" for i in range(1, 7)])
    with pytest.warns(UserWarning, match="unstable"):
        eq = static_equilibrium(system)
    assert eq.iterations == 0 and eq.residual["force"] < 1e-9
    assert eq.stability == "unstable"


def test_a_driven_model_has_no_freedom_to_judge():
    eq = static_equilibrium(kinedyn.models.get("gough-stewart-driven").compile(), t=0.3)
    assert eq.stability == "driven" and len(eq.stiffness) == 0
    assert eq.residual["position"] < 1e-10 and eq.residual["force"] < 1e-9
    assert any(name.startswith("driver") for name in eq.multipliers)


def test_bad_input():
    model = double_pendulum().compile()
    with pytest.raises(ModelError, match="tol must be a finite number above 0"):
        static_equilibrium(model, tol=-1.0)
    with pytest.raises(ModelError, match="max_iter must be a finite whole number"):
        static_equilibrium(model, max_iter=0)
    with pytest.raises(ModelError, match="q"):
        static_equilibrium(model, q=[0.0, 1.0])
    with pytest.raises(ConvergenceError, match=r"not found in 2 iterations \(unbalanced load"):
        static_equilibrium(model, max_iter=2)
    from kinedyn.formulations.relative import Relative
    with pytest.raises(ModelError, match="solved in natural coordinates: give the model"):
        static_equilibrium(Relative(model))


def test_a_body_falling_free_has_no_equilibrium_and_says_why():
    s = kinedyn.System("falling", dim=2, gravity=[0, -G])
    s.add_body("brick", mass=1.0, inertia=0.1, points={"A": [0, 0], "B": [0.5, 0]})
    s.add_joint("float", "free", "ground", "brick")
    with pytest.raises(ConvergenceError, match=r"nothing resists the loads along a free motion "
                                               r"of brick\..*there may be no equilibrium"):
        static_equilibrium(s.compile(), max_iter=5)


def test_equilibrium_command(tmp_path, capsys):
    import json

    from kinedyn.cli import main
    out = tmp_path / "eq"
    assert main(["equilibrium", "four-bar", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "four-bar: static equilibrium at t = 0 s after" in text
    assert "stable (stiffness along its 1 free motion:" in text
    assert "small oscillations about it: " in text
    s = json.loads((out / "summary.json").read_text())
    assert s["stability"] == "stable" and s["analysis"] == "statics" and len(s["stiffness"]) == 1
    assert s["frequencies_hz"][0] > 0
    eq = static_equilibrium(kinedyn.models.get("four-bar").compile())
    assert s["joint_coordinates"]["joint.A.angle"] == pytest.approx(eq.channel("joint.A.angle"))
    assert {"results.npz", "results.csv", "equilibrium.png"} <= {p.name for p in out.iterdir()}
    assert main(["equilibrium", "four-bar", "--max-iter", "0", "--out", str(out)]) == 2
    assert "--max-iter must be at least 1, got 0" in capsys.readouterr().err


def test_simulate_from_equilibrium(tmp_path, capsys):
    """Released at its static equilibrium, the four-bar stays there; from its own initial
    pose it swings."""
    import json

    from kinedyn.cli import main
    out = tmp_path / "rest"
    assert main(["simulate", "four-bar", "--from-equilibrium", "--t-end", "0.2", "--dt",
                 "1e-3", "--no-progress", "--out", str(out)]) == 0
    assert "starting from its static equilibrium (stable" in capsys.readouterr().out
    assert json.loads((out / "summary.json").read_text())["initial_configuration"] == \
        "static equilibrium"
    angle = np.load(out / "results.npz")["joint.A.angle"]
    eq = static_equilibrium(kinedyn.models.get("four-bar").compile())
    assert np.abs(angle - eq.channel("joint.A.angle")).max() < 1e-9
