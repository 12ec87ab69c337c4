"""Inverse dynamics: the efforts of the actuators fed back into forward dynamics of the
undriven mechanism reproduce the prescribed motion."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

import kinedyn
from kinedyn.dynamics.evaluate import forces, mass_values
from kinedyn.dynamics.implicit import _gamma
from kinedyn.dynamics.inverse import inverse_dynamics
from kinedyn.errors import ModelError, UnknownNameError
from kinedyn.formulations.natural import Natural
from kinedyn.kinematics.assembly import assemble, constraint_jacobian, constraint_values
from kinedyn.models import gough_stewart, stewart_paper


class Forward:
    """Forward dynamics of an undriven model with time-tabulated actuator efforts, by RK4 and
    projection in NumPy (an independent integrator; only the compiled terms are shared)."""

    def __init__(self, system, actuators):
        s0 = system.copy()
        s0.forces = []
        self.f = Natural(s0.compile())
        self.unit = []
        for k, joint in enumerate(actuators):
            s = s0.copy()
            s.add_force(f"unit_{joint}", "joint", joint=joint, function="1")
            self.unit.append(Natural(s.compile()))
        n = self.f.n_q
        M = np.zeros((n, n))
        d = self.f.data
        M[np.repeat(np.arange(n), np.diff(d.mass_indptr)), d.mass_indices] = mass_values(
            self.f, self.f.q0)
        self.M = M

    def acceleration(self, q, qd, t, u):
        f, n = self.f, self.f.n_q
        Q = forces(f, q, qd, t)
        for fk, uk in zip(self.unit, u):
            Q = Q + uk * (forces(fk, q, qd, t) - forces(f, q, qd, t))
        J = constraint_jacobian(f, q, t).toarray()
        A = np.block([[self.M, J.T], [J, np.zeros((len(J), len(J)))]])
        x = np.linalg.lstsq(A, np.concatenate([Q, _gamma(f, q, qd, t, np.arange(f.n_c))]),
                            rcond=1e-12)[0]
        return x[:n]

    def project(self, q, qd, t):
        f = self.f
        for _ in range(5):
            J = constraint_jacobian(f, q, t).toarray()
            q = q - np.linalg.lstsq(J, constraint_values(f, q, t), rcond=1e-12)[0]
        J = constraint_jacobian(f, q, t).toarray()
        return q, qd - np.linalg.lstsq(J, J @ qd, rcond=1e-12)[0]

    def run(self, q, qd, times, efforts):
        u = CubicSpline(times, efforts)
        out = [q]
        for t, h in zip(times[:-1], np.diff(times)):
            def rhs(t, y):
                return np.concatenate([y[len(q):], self.acceleration(y[:len(q)], y[len(q):],
                                                                     t, u(t))])
            y = np.concatenate([q, qd])
            k1 = rhs(t, y)
            k2 = rhs(t + h / 2, y + h / 2 * k1)
            k3 = rhs(t + h / 2, y + h / 2 * k2)
            k4 = rhs(t + h, y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            q, qd = self.project(y[:len(q)], y[len(q):], t + h)
            out.append(q)
        return np.array(out)


def _initial_velocity(fwd, res, points):
    """Undriven velocities matching the driven motion's point velocities at t0 (least squares
    on the points, subject to the undriven constraints)."""
    f = fwd.f
    idx = [f.model.point_name.index(p) for p in points]
    E = f._E.toarray()
    rows = np.concatenate([np.arange(f.dim * e, f.dim * e + f.dim) for e in f.point_entity[idx]])
    fk = res.kin.analysis.f
    v = fk.point_trajectory(res.kin.q[:1], res.kin.qd[:1])[1][0][
        [fk.model.point_name.index(p) for p in points]].ravel()
    J = constraint_jacobian(f, f.q0, 0.0).toarray()
    A = np.vstack([E[rows], 1e3 * J])
    return np.linalg.lstsq(A, np.concatenate([v, np.zeros(len(J))]), rcond=1e-12)[0]


@pytest.mark.parametrize("build,actuators,driven_pts", [
    (gough_stewart, [f"P{i}" for i in range(1, 7)], "platform.P"),
    (stewart_paper, [f"R{i}" for i in range(1, 7)], "terminal.C"),
])
def test_efforts_reproduce_the_motion(build, actuators, driven_pts):
    driven = build(driven=True)
    dt, t_end = 2e-3, 0.12
    res = inverse_dynamics(driven.compile(), actuators, t_end=t_end, dt=dt)
    efforts = np.column_stack([res.channel(f"effort.{a}") for a in actuators])
    assert res.summary["max_newton_euler_residual"] < 1e-8
    assert np.abs(efforts).max() > 0.1                       # real loads, not zeros
    free = build(driven=False)
    free.drivers = []
    fwd = Forward(free, actuators)
    fwd.f.q0[:] = assemble(fwd.f, fwd.f.q0, 0.0)
    points = [p for p in fwd.f.model.point_name if not p.startswith("ground")]
    qd0 = _initial_velocity(fwd, res, points)
    Q = fwd.run(fwd.f.q0.copy(), qd0, res.time, efforts)
    P_fwd = fwd.f.point_trajectory(Q, Q)[0]
    fk = res.kin.analysis.f
    P_ref = fk.point_trajectory(res.kin.q, res.kin.qd)[0]
    for name in [p for p in points if p.startswith(driven_pts)]:
        a = P_fwd[:, fwd.f.model.point_name.index(name)]
        b = P_ref[:, fk.model.point_name.index(name)]
        np.testing.assert_allclose(a, b, atol=1e-6, err_msg=name)
    # and zero efforts do not: the platform sags under gravity
    Q0 = fwd.run(fwd.f.q0.copy(), qd0, res.time[:30], np.zeros((30, len(actuators))))
    sag = fwd.f.point_trajectory(Q0, Q0)[0][-1] - P_ref[29]
    assert np.abs(sag).max() > 1e-4


def test_driver_efforts_of_a_driven_crank_match_the_reactions():
    """actuators=None: efforts of the drivers; a four-bar crank at constant speed."""
    m = kinedyn.models.get("four-bar-driven").compile()
    res = inverse_dynamics(m, None, t_end=0.5, dt=1e-3)
    same = inverse_dynamics(m, ["A"], t_end=0.5, dt=1e-3)
    np.testing.assert_allclose(res.channel("effort.crank_drive"), same.channel("effort.A"),
                               atol=1e-9)
    # power balance: effort * crank speed = d/dt (kinetic + potential energy)
    f = res.kin.analysis.f
    E = f.energies(res.kin.q, res.kin.qd)
    total = E["kinetic"] + E["gravity"]
    power = res.channel("effort.crank_drive") * 2 * np.pi
    np.testing.assert_allclose(np.gradient(total, res.time)[2:-2], power[2:-2], rtol=1e-3,
                               atol=1e-3 * np.abs(power).max())


def test_a_kinematic_runs_loads_equal_a_forward_runs():
    """KinematicResults.reactions (inverse dynamics of the groups strategy's motion) gives the
    driver's effort and the joint reactions of a forward-dynamics run of the same driven
    four-bar (projection / RK4), without computing the run's other channels first."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.kinematics import Kinematics
    m = kinedyn.models.get("four-bar-driven").compile()
    kin = Kinematics(m, strategy="groups").simulate(0.5, 1e-3)
    loads = kin.reactions()
    assert kin._channels is None and set(kin.named(["effort.crank_drive", "joint.A.angle"])) \
        == {"effort.crank_drive", "joint.A.angle"}
    ref = Dynamics(m, method="projection", integrator="rk4").simulate(0.5, 1e-3).reactions()
    for name in ("effort.crank_drive", "reaction.A.force_x", "reaction.C.force_y",
                 "reaction.D.force_x"):
        np.testing.assert_allclose(loads[name], ref[name], atol=1e-6 * np.abs(ref[name]).max())
    assert kin.summary["max_effort"] == {"crank_drive": np.abs(loads["effort.crank_drive"]).max()}
    assert kin.summary["undetermined_efforts"] == []
    assert set(loads) <= set(kin.channels) and "body.coupler.angle" in kin.channels
    with pytest.raises(UnknownNameError, match="unknown actuated joint 'Z'"):
        kin.reactions("A, Z")


def test_bad_actuators_are_named():
    m = gough_stewart(driven=True).compile()
    with pytest.raises(UnknownNameError, match="actuated joint"):
        inverse_dynamics(m, ["P9"], t_end=0.01, dt=1e-3)
    with pytest.raises(ModelError, match="cannot produce"):
        inverse_dynamics(m, ["P1", "P2"], t_end=0.01, dt=1e-3)
    with pytest.raises(ModelError, match="no actuators given"):
        inverse_dynamics(m, " , ", t_end=0.01, dt=1e-3)
    with pytest.raises(ModelError, match=r"actuators are joint names .* got 3"):
        inverse_dynamics(m, 3, t_end=0.01, dt=1e-3)
    with pytest.raises(ModelError, match=r"got \['P1', 2\]"):
        inverse_dynamics(m, ["P1", 2], t_end=0.01, dt=1e-3)


def test_redundant_actuators_are_named_and_their_split_does_the_work():
    """Two actuated freedoms on a one-dof four-bar: the efforts are not unique (a warning names
    both); the minimum-norm split still satisfies Newton-Euler, and its power
    tau_A (w_b - w_a) + tau_B (w_b - w_a) equals the rate of change of the energy."""
    m = kinedyn.models.get("four-bar-driven").compile()
    with pytest.warns(UserWarning, match="A:angle, B:angle are not unique"):
        res = inverse_dynamics(m, "A, B", t_end=0.5, dt=1e-3)
    assert res.summary["undetermined_efforts"] == ["A:angle", "B:angle"]
    assert res.summary["max_newton_euler_residual"] < 1e-9
    f = res.kin.analysis.f
    omega = f.body_motion(res.kin.q, res.kin.qd, res.kin.qdd)["omega"].reshape(len(res.time), -1)
    power = sum(res.channel(f"effort.{j}") * (omega[:, m.joint_body_b[i]] -
                                             omega[:, m.joint_body_a[i]])
                for i, j in enumerate(m.joint_name) if j in ("A", "B"))
    E = f.energies(res.kin.q, res.kin.qd)
    np.testing.assert_allclose(np.gradient(E["kinetic"] + E["gravity"], res.time)[2:-2],
                               power[2:-2], rtol=1e-3, atol=1e-3 * np.abs(power).max())
    # one actuator per degree of freedom: unique, no warning; a string is one name, not letters
    single = inverse_dynamics(m, "A", t_end=0.5, dt=1e-3)
    assert single.summary["undetermined_efforts"] == []
    assert single.summary["actuators"] == ["A"]


def test_holding_efforts_take_a_string_of_joints_as_names():
    """holding_efforts("A") holds the four-bar by its crank joint (it used to be read letter by
    letter); its torque balances gravity: zero virtual power of gravity with the crank."""
    from kinedyn.dynamics.holding import holding_efforts, holding_system
    system = kinedyn.models.get("four-bar-driven")
    assert holding_efforts(system, "A") == holding_efforts(system, ["A"])
    held = holding_system(system, "A").compile()
    res = kinedyn.dynamics.Dynamics(held).simulate(0.2, 1e-3)
    assert np.abs(res.q - res.q[0]).max() < 1e-9          # held at rest
    with pytest.raises(ModelError, match="no actuators given"):
        holding_efforts(system, [])


def test_the_null_space_check_is_bounded_by_the_number_of_unknowns(monkeypatch):
    """Above CHECK_FIRST unknowns the dense null space is not computed: no warning, and the
    summary says None (not checked), not [] (checked, unique)."""
    import warnings

    from kinedyn.dynamics import inverse
    m = kinedyn.models.get("four-bar-driven").compile()
    monkeypatch.setattr(inverse, "CHECK_ALL", 1)       # first sample only: still found
    with pytest.warns(UserWarning, match="not unique"):
        inverse_dynamics(m, "A, B", t_end=0.1, dt=1e-2)
    monkeypatch.setattr(inverse, "CHECK_FIRST", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = inverse_dynamics(m, "A, B", t_end=0.1, dt=1e-2)
    assert res.summary["undetermined_efforts"] is None


def test_relative_coordinates_report_the_drivers_efforts_unchecked():
    """A relative formulation's drivers' efforts come from its multipliers: equal to the
    natural ones; the null-space check (natural Newton-Euler) is not applied (None)."""
    from kinedyn.formulations.relative import Relative
    m = kinedyn.models.get("four-bar-driven").compile()
    rel = inverse_dynamics(Relative(m), None, t_end=0.1, dt=1e-2)
    nat = inverse_dynamics(m, None, t_end=0.1, dt=1e-2)
    assert rel.summary["undetermined_efforts"] is None and nat.summary["undetermined_efforts"] == []
    np.testing.assert_allclose(rel.channel("effort.crank_drive"),
                               nat.channel("effort.crank_drive"), atol=1e-9)
