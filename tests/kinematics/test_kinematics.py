"""Kinematic analysis: closed forms, solver agreement, finite differences, diagnoses."""
from __future__ import annotations

import math

import numpy as np
import pytest

import kinedyn as kd
from kinedyn.dynamics import Dynamics
from kinedyn.errors import ModelError
from kinedyn.kinematics import Kinematics
from kinedyn.kinematics.parallel import PlatformForwardKinematics
from kinedyn.linalg import sparse
from kinedyn.model.rotations import euler_to_matrix
from kinedyn.models import four_bar, get, slider_crank
from kinedyn.models.stewart import GS_BASE, GS_HOME, GS_PLATFORM, stewart_paper_geometry

T_END, DT = 2.0, 0.002


@pytest.fixture(scope="module")
def runs():
    """Every driven library model simulated with both linear solvers."""
    out = {}
    for name in ("four-bar-driven", "slider-crank-driven", "3-rrr-driven",
                 "gough-stewart-driven", "stewart-paper"):
        for solver in ("dense", "sparse"):
            out[name, solver] = Kinematics(get(name).compile(), solver=solver).simulate(T_END, DT)
    return out


def test_freudenstein(runs):
    """K1 cos(t4) - K2 cos(t2) + K3 = cos(t2 - t4) for crank angle t2 and rocker angle t4."""
    a, b, c, d = 0.1, 0.4, 0.3, 0.4
    res = runs["four-bar-driven", "sparse"]
    t2, t4 = res.channel("joint.A.angle"), res.channel("joint.D.angle")
    K1, K2, K3 = d / a, d / c, (a * a - b * b + c * c + d * d) / (2 * a * c)
    np.testing.assert_allclose(K1 * np.cos(t4) - K2 * np.cos(t2) + K3, np.cos(t2 - t4), atol=1e-12)
    np.testing.assert_allclose(t2, math.pi / 2 + 2 * math.pi * res.time, atol=1e-12)


def test_slider_crank_closed_form(runs):
    l1, l2 = 0.3, 0.4
    res = runs["slider-crank-driven", "dense"]
    th = res.channel("joint.crank_pin.angle")
    s = l1 * np.cos(th) + np.sqrt(l2**2 - (l1 * np.sin(th)) ** 2)
    np.testing.assert_allclose(res.channel("joint.slide.displacement"), s, atol=1e-12)
    w = 2 * math.pi  # piston velocity by the chain rule of the closed form
    sd = -l1 * np.sin(th) * w - (l1**2 * np.sin(th) * np.cos(th) * w) / np.sqrt(l2**2 - (l1 * np.sin(th))**2)
    np.testing.assert_allclose(res.channel("joint.slide.displacement_d"), sd, atol=1e-10)


def pose_functions(t):
    """The gough-stewart-driven pose trajectory, written out independently."""
    p = np.stack([-1.5 + 0.1 * np.sin(np.pi * t), 0.1 * np.sin(2 * np.pi * t),
                  1.5 + 0.05 * np.sin(np.pi * t)], axis=1)
    ang = np.stack([0.1 * np.sin(np.pi * t), 0.05 * np.sin(2 * np.pi * t),
                    0.05 * np.cos(np.pi * t) - 0.05], axis=1)
    return p, np.array([euler_to_matrix(a, "ZYX") for a in ang])


def test_gough_stewart_leg_lengths(runs):
    res = runs["gough-stewart-driven", "sparse"]
    p, R = pose_functions(res.time)
    d = p[:, None, :] + np.einsum("nij,kj->nki", R, np.array(GS_PLATFORM)) - np.array(GS_BASE)
    lengths = np.linalg.norm(d, axis=2)
    for k in range(6):
        np.testing.assert_allclose(res.channel(f"joint.P{k + 1}.displacement"), lengths[:, k],
                                   atol=1e-11)
    np.testing.assert_allclose(res.channel("body.platform.x"), p[:, 0], atol=1e-12)


def test_paper_stewart_actuator_angles(runs):
    """Handle angle closed form: a cos(th) + b sin(th) = k on each leg's tangent axis."""
    res = runs["stewart-paper", "dense"]
    A, B, C, h = stewart_paper_geometry()
    t = res.time
    p = np.stack([0.01 * np.sin(2 * np.pi * t), 0.01 * np.cos(2 * np.pi * t) - 0.01,
                  h + 0.01 * np.sin(4 * np.pi * t)], axis=1)
    ang = np.stack([0.05 * np.sin(2 * np.pi * t), 0.05 * np.sin(4 * np.pi * t),
                    0.05 * np.sin(6 * np.pi * t)], axis=1)
    R = np.array([euler_to_matrix(a, "ZYX") for a in ang])
    lh, ls = 0.08, 0.25
    for k in range(6):
        u = A[k] / np.linalg.norm(A[k])
        axis = np.array([-u[1], u[0], 0.0])
        w = np.cross(axis, u)           # where the arm points after +90 deg about the axis
        Cw = p + R @ C[k]
        r = Cw - A[k]
        a, b = r @ u, r @ w
        kk = (np.sum(r * r, axis=1) + lh**2 - ls**2) / (2 * lh)
        base, half = np.arctan2(b, a), np.arccos(kk / np.hypot(a, b))
        roots = [np.unwrap(base - half), np.unwrap(base + half)]
        th = min(roots, key=lambda r: abs(r[0]))  # the assembly branch through 0 at home
        np.testing.assert_allclose(res.channel(f"joint.R{k + 1}.angle"), th, atol=1e-10)


def test_forward_kinematics_inverts_inverse_kinematics():
    fk = PlatformForwardKinematics(GS_BASE, GS_PLATFORM, GS_HOME)
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = np.array(GS_HOME) + 0.1 * rng.standard_normal(3)
        R = euler_to_matrix(0.1 * rng.standard_normal(3))
        fk.p[:], fk.R[:] = GS_HOME, np.eye(3)
        p1, R1 = fk.solve(fk.leg_lengths(p, R))
        np.testing.assert_allclose(p1, p, atol=1e-12)
        np.testing.assert_allclose(R1, R, atol=1e-12)


def test_forward_kinematics_matches_natural_model():
    """Drive the natural-coordinate Gough-Stewart by its leg lengths: same platform pose."""
    t = np.linspace(0, 1, 21)
    p, R = pose_functions(t)
    fk = PlatformForwardKinematics(GS_BASE, GS_PLATFORM, GS_HOME)
    lengths = np.array([fk.leg_lengths(p[i], R[i]) for i in range(len(t))])
    P, Rf, _ = fk.track(lengths)
    np.testing.assert_allclose(P, p, atol=1e-11)
    s = get("gough-stewart-driven")
    s.drivers.clear()
    s.forces.clear()
    for k in range(6):  # leg lengths as (smooth) functions of time: the same pose trajectory
        s.add_driver(f"leg{k + 1}", "joint", joint=f"P{k + 1}", function=_leg_expression(k))
    res = Kinematics(s.compile()).simulate(1.0, 0.05)
    np.testing.assert_allclose(res.channel("body.platform.x"), p[:, 0], atol=1e-10)
    np.testing.assert_allclose(res.channel("body.platform.z"), p[:, 2], atol=1e-10)


def _leg_expression(k):
    """|p(t) + R(t) P_k - B_k| as an expression of t (matches pose_functions)."""
    import sympy as sp
    t = sp.Symbol("t")
    pos = sp.Matrix([-1.5 + 0.1 * sp.sin(sp.pi * t), 0.1 * sp.sin(2 * sp.pi * t),
                     1.5 + 0.05 * sp.sin(sp.pi * t)])
    R = euler_to_matrix([0.1 * sp.sin(sp.pi * t), 0.05 * sp.sin(2 * sp.pi * t),
                         0.05 * sp.cos(sp.pi * t) - 0.05], "ZYX", lib=sp)
    d = pos + R * sp.Matrix(GS_PLATFORM[k]) - sp.Matrix(GS_BASE[k])
    return str(sp.sqrt(d.dot(d)))


@pytest.mark.parametrize("name", ["four-bar-driven", "slider-crank-driven", "3-rrr-driven",
                                  "gough-stewart-driven", "stewart-paper"])
def test_dense_and_sparse_agree(runs, name):
    a, b = runs[name, "dense"], runs[name, "sparse"]
    for x, y in ((a.q, b.q), (a.qd, b.qd), (a.qdd, b.qdd)):
        np.testing.assert_allclose(x, y, atol=1e-10 * max(1.0, np.abs(x).max()))


@pytest.mark.parametrize("fallback", [True, False])
@pytest.mark.parametrize("strategy", ["global", "groups"])
def test_a_turning_crank_stays_in_compiled_code(strategy, fallback, monkeypatch):
    """The driven four-bar's crank turns once a second: its static sparse pivot orders
    degrade four times a turn (the cosine and sine of its angle are pivots). With the dense
    fall-back of its small blocks (the default) the run never returns to Python to re-analyse.
    Without it (``KINEDYN_SPARSE_FALLBACK=0``) it re-analyses, and past the first turn every
    re-analysis takes an order analysed before, without SuperLU. Either run is the dense
    solver's to 1e-10."""
    if not fallback:
        monkeypatch.setenv(sparse.FALLBACK_SWITCH, "0")
    model = get("four-bar-driven").compile()
    kin = Kinematics(model, solver="sparse", strategy=strategy)
    res = kin.simulate(4.0, 0.01)
    dense = Kinematics(model, solver="dense", strategy=strategy).simulate(4.0, 0.01)
    s = res.summary
    orders = [kin.pivot_orders] if kin.engine is None else kin.engine.pivot_orders
    if fallback:
        assert s["sparse_reanalyses"] == 0
        assert all(o.analyses == 1 for o in orders)
    else:
        assert s["sparse_reanalyses"] >= 12
        assert s["sparse_orders_reused"] >= s["sparse_reanalyses"] - 4
        assert all(o.analyses <= 4 for o in orders)
    for x, y in ((dense.q, res.q), (dense.qd, res.qd), (dense.qdd, res.qdd)):
        np.testing.assert_allclose(y, x, atol=1e-10 * max(1.0, np.abs(x).max()))
    assert s["max_residual"]["position"] < 1e-10


@pytest.mark.parametrize("name", ["four-bar-driven", "slider-crank-driven", "3-rrr-driven",
                                  "gough-stewart-driven", "stewart-paper"])
def test_rates_are_derivatives(runs, name):
    """Velocities equal central differences of positions; accelerations of velocities."""
    r = runs[name, "sparse"]
    h = r.time[1] - r.time[0]
    for x, xd in ((r.q, r.qd), (r.qd, r.qdd)):  # five-point stencil, error O(h^4)
        fd = (-x[4:] + 8 * x[3:-1] - 8 * x[1:-3] + x[:-4]) / (12 * h)
        scale = max(1.0, np.abs(xd).max())
        np.testing.assert_allclose(xd[2:-2], fd, atol=5e-6 * scale)
    assert r.summary["max_residual"]["position"] < 1e-9
    assert r.summary["max_residual"]["velocity"] < 1e-9
    assert r.summary["max_residual"]["acceleration"] < 1e-8


def test_singular_configuration_is_diagnosed():
    """A parallelogram four-bar driven through its change point (all links collinear)."""
    for solver in ("dense", "sparse"):
        s = four_bar(ground=0.4, crank=0.1, coupler=0.4, rocker=0.1, crank_angle=math.pi / 2,
                     speed=math.pi / 2)
        with pytest.raises(kd.SingularConfigurationError) as err:
            Kinematics(s.compile(), solver=solver).simulate(1.5, 0.01)
        assert 0.99 <= err.value.time <= 1.02
        assert err.value.constraints and "singular" in str(err.value)


@pytest.mark.parametrize("strategy", ["global", "groups"])
@pytest.mark.parametrize("solver", ["dense", "sparse"])
@pytest.mark.parametrize("dt", [0.003, 7e-4])
def test_a_singular_configuration_between_two_steps_is_found(strategy, solver, dt):
    """The parallelogram four-bar's change point (t = 1 s) falls between two steps of these
    grids: no pivot vanishes and Newton-Raphson converges on either side, but the sign of
    det Phi_q changes, and the run stops at the first step past it, naming the crank's and
    the rocker's constraints. The steps before are kept and unchanged."""
    s = four_bar(ground=0.4, crank=0.1, coupler=0.4, rocker=0.1, crank_angle=math.pi / 2,
                 speed=math.pi / 2)
    kin = Kinematics(s.compile(), solver=solver, strategy=strategy)
    before = kin.simulate(0.99, dt)  # stops short of it: no error
    with pytest.raises(kd.SingularConfigurationError) as err:
        kin.simulate(1.5, dt)
    t = err.value.time
    assert 1.0 < t <= 1.0 + dt + 1e-12
    assert f"determinant changed sign since the step before (t = {t - dt:g} s)" in str(err.value)
    assert any("rocker" in c for c in err.value.constraints)
    assert any("crank" in c for c in err.value.constraints)
    assert before.summary["max_residual"]["position"] < 1e-10


def test_loss_of_assembly_is_diagnosed():
    s = slider_crank()
    s.add_driver("piston", "joint", joint="slide", function="0.6 + 0.15*t")
    with pytest.raises(kd.AssemblyError) as err:
        Kinematics(s.compile()).simulate(1.2, 0.01)
    assert 0.6 < err.value.time < 0.75  # s reaches l1 + l2 = 0.7 at t = 0.667
    assert any("rigid" in c or "slide" in c for c in err.value.constraints)


def test_redundant_constraints_are_reported_and_handled():
    """A parallelogram with a third parallel bar: one constraint is redundant."""
    s = four_bar(ground=0.4, crank=0.1, coupler=0.4, rocker=0.1, crank_angle=math.pi / 2,
                 speed=1.0)
    s.add_point("ground", "E", [0.2, 0])
    s.body("coupler").points["E"] = [0.2, 0]
    s.add_body("bar5", mass=1, inertia=0.001, com=[0, 0], position=[0.2, 0],
               orientation=math.pi / 2, points={"A": [0, 0], "B": [0.1, 0]})
    s.add_joint("E1", "revolute", "ground", "bar5", point_a="E", point_b="A")
    s.add_joint("E2", "revolute", "bar5", "coupler", point_a="B", point_b="E")
    with pytest.warns(UserWarning, match="redundant"):
        kin = Kinematics(s.compile())
    assert len(kin.redundant) == 1
    res = kin.simulate(1.0, 0.01)
    assert res.summary["redundant_constraints"]
    assert max(res.summary["max_residual"].values()) < 1e-9  # redundant rows satisfied too


@pytest.fixture(scope="module")
def parallelogram_runs():
    out = {}
    for solver in ("dense", "sparse"):
        with pytest.warns(UserWarning, match=r"1 redundant constraint\(s\).*body bar: rigid"):
            kin = Kinematics(get("parallelogram").compile(), solver=solver)
        out[solver] = kin.simulate(1.0, 0.004)
    return out


def test_parallelogram_redundant_constraint_dense_and_sparse(parallelogram_runs):
    """The library parallelogram (three parallel cranks): the same redundant row is dropped by
    both solvers, they agree, and the motion is the parallelogram's closed form: every crank at
    the driven angle, the coupler translating without turning."""
    d, s = parallelogram_runs["dense"], parallelogram_runs["sparse"]
    for r in (d, s):
        assert r.summary["redundant_constraints"] == ["body bar: rigid d1.d1"]
        th = math.pi / 2 + np.sin(2 * math.pi * r.time)
        for joint in ("A", "E", "D"):
            np.testing.assert_allclose(r.channel(f"joint.{joint}.angle"), th, atol=1e-9)
        np.testing.assert_allclose(r.channel("body.coupler.angle"), 0.0, atol=1e-9)
        w = 2 * math.pi
        thd, thdd = w * np.cos(w * r.time), -w * w * np.sin(w * r.time)
        for point in ("coupler.F", "bar.B", "coupler.B"):  # every coupler point: r (cos, sin)(th)
            np.testing.assert_allclose(r.channel(f"point.{point}.x_d"),
                                       -0.1 * np.sin(th) * thd, atol=1e-10)
            np.testing.assert_allclose(r.channel(f"point.{point}.y_dd"),
                                       0.1 * (np.cos(th) * thdd - np.sin(th) * thd**2), atol=1e-9)
        assert max(r.summary["max_residual"].values()) < 1e-9  # the dropped row holds too
    for x, y in ((d.q, s.q), (d.qd, s.qd), (d.qdd, s.qdd)):
        np.testing.assert_allclose(x, y, atol=1e-10 * max(1.0, np.abs(x).max()))


def slider(name: str) -> kd.System:
    """A slider on the x axis (point P) from x = -2, with ground points O = (0, 0), C = (0, 1)."""
    s = kd.System(name, dim=2, gravity=[0, 0])
    s.add_point("ground", "O", [0, 0])
    s.add_point("ground", "C", [0, 1])
    s.add_vector("ground", "x", [1, 0])
    s.add_body("slider", mass=1, inertia=0.01, com=[0, 0], position=[-2, 0], orientation=0,
               points={"P": [0, 0]}, vectors={"x": [1, 0]})
    s.add_joint("slide", "prismatic", "ground", "slider", point_a="O", point_b="P",
                axis_a="x", axis_b="x")
    return s


def redundant_slider() -> kd.System:
    """A slider on the x axis driven twice: by its displacement x = -2 + 3t and by a cable from
    C = (0, 1) of length sqrt(1 + x^2). At t = 0 the rank-revealing QR keeps the axis and the
    cable and drops the push; at x = 0 (t = 2/3) axis and cable rows become parallel, so the
    rows must be chosen again to pass."""
    s = slider("redundant-slider")
    s.add_driver("push", "joint", joint="slide", function="-2 + 3*t")
    s.add_driver("cable", "distance", body_a="ground", point_a="C", body_b="slider", point_b="P",
                 function="sqrt(1 + (-2 + 3*t)**2)")
    return s


def cable_slider(length: str) -> kd.System:
    """The slider pulled by a cable from the origin O of driven ``length``."""
    s = slider("cable-slider")
    s.add_driver("cable", "distance", body_a="ground", point_a="O", body_b="slider", point_b="P",
                 function=length)
    return s


def test_a_driven_distance_that_is_not_positive_is_named_with_its_time():
    """The constraint of a distance driver holds the squared distance, so a negative length
    would run with its magnitude and a zero one makes the row's gradient vanish. A run checks
    its times up front and names the driver, its function, value and time; the assembly
    checks its own time."""
    kin = Kinematics(cable_slider("2 - 3*t").compile())
    np.testing.assert_allclose(kin.simulate(0.6, 0.1).channel("point.slider.P.x"),
                               -(2 - 3 * np.arange(7) * 0.1), atol=1e-10)
    with pytest.raises(ModelError, match=r"distance driver 'cable' drives the distance "
                       r"'2 - 3\*t', which is -0\.1 at t = 0\.7 s: a driven distance must stay "
                       r"positive"):
        kin.simulate(1.0, 0.1)
    assert kin.solve(0.6).q[0] == pytest.approx(-0.2)
    with pytest.raises(ModelError, match=r"'2 - 3\*t', which is -0\.1 at t = 0\.7 s"):
        kin.solve(0.7)  # (one-time solves are checked too: it solved for the magnitude)
    with pytest.raises(ModelError, match=r"'-2 - t', which is -2 at t = 0 s"):
        Kinematics(cable_slider("-2 - t").compile())
    from kinedyn.dynamics import Dynamics
    dyn = Dynamics(cable_slider("2 - 3*t").compile(), method="projection")
    with pytest.raises(ModelError, match=r"which is 0 at t = 0\.666666667 s"):
        dyn.simulate(1.0, 1 / 30)


@pytest.mark.parametrize("solver", ["dense", "sparse"])
def test_redundant_rows_are_chosen_again_where_they_stop_being_redundant(solver):
    with pytest.warns(UserWarning, match="driver push"):
        kin = Kinematics(redundant_slider().compile(), solver=solver)
    res = kin.simulate(1.0, 1 / 30)  # step 20 lands on x = 0
    assert res.summary["redundant_reselections"] == 1
    assert res.summary["redundant_constraints"] == ["driver cable: distance"]
    np.testing.assert_allclose(res.channel("point.slider.P.x"), -2 + 3 * res.time, atol=1e-12)
    np.testing.assert_allclose(res.channel("point.slider.P.x_d"), 3.0, atol=1e-9)
    assert max(res.summary["max_residual"].values()) < 1e-9


def test_undriven_mechanism_is_refused():
    with pytest.raises(kd.ModelError, match="1 left"):
        Kinematics(slider_crank().compile())


def test_fixed_iteration_mode_matches_tolerance_mode():
    a = Kinematics(get("stewart-paper").compile()).simulate(0.5, 0.01)
    b = Kinematics(get("stewart-paper").compile(), fixed_iterations=True, max_iter=2).simulate(0.5, 0.01)
    np.testing.assert_allclose(a.q, b.q, atol=1e-10)  # both converged beyond 1e-10
    assert np.all(b.iterations == 2)


def test_results_saved(tmp_path, runs):
    res = runs["four-bar-driven", "sparse"]
    files = res.save(tmp_path)
    names = {f.name for f in files}
    assert names == {"results.csv", "results.npz", "summary.json"}
    data = np.load(tmp_path / "results.npz")
    np.testing.assert_array_equal(data["joint.A.angle"], res.channel("joint.A.angle"))
    import json
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"] == len(res.time) and summary["max_residual"]["position"] < 1e-9
    with pytest.raises(kd.UnknownNameError):
        res.channel("joint.nope.angle")


@pytest.mark.parametrize("name, steps", [("four-bar-driven", 60), ("slider-crank-driven", 60),
                                         ("3-rrr-driven", 30), ("stewart-paper", 20)])
def test_compiled_run_matches_numpy_reference(name, steps):
    """The compiled run (chord iterations, third-order predictor, sparse LU) against the
    readable NumPy reference (full Newton, second-order predictor, numpy.linalg.solve): both
    solve to 1e-12, so they agree to about that."""
    from kinedyn.kinematics.reference import reference_simulate
    kin = Kinematics(get(name).compile(), tol=1e-12)
    res = kin.simulate(steps * 0.01, 0.01)
    Q, QD, QDD = reference_simulate(kin.f, kin.rows, kin.q_assembled, res.time, tol=1e-12)
    for x, y in ((res.q, Q), (res.qd, QD), (res.qdd, QDD)):
        np.testing.assert_allclose(x, y, atol=1e-9 * max(1.0, np.abs(y).max()))


@pytest.mark.parametrize("name, t0", [("four-bar-driven", 0.3), ("slider-crank-driven", 0.6),
                                      ("stephenson3-theta1", 0.3)])
def test_an_assembly_at_t0_is_the_one_reached_from_the_pose(name, t0):
    """The pose is the configuration at t = 0; assembled at another t0 it is followed along the
    drivers (continuation), so the run from t0 is the run from 0 from that time on. Assembled
    directly at t0 from the pose, the four-bar's crank (driven at pi/2 + 2 pi t) landed on
    theta + pi at t0 = 0.3 s (a joint-angle driver's equation holds for both), the
    slider-crank's at 0.6 s, and the Stephenson III six-bar on another assembly mode, 0.30 off
    in its coordinates: each a valid configuration, none the one the mechanism moves to."""
    model = get(name).compile()
    ref = Kinematics(model).simulate(t0 + 0.05, 1e-2)
    run = Kinematics(model, t0=t0).simulate(t0 + 0.05, 1e-2)
    k = int(round(t0 / 1e-2))
    assert run.time[0] == pytest.approx(t0)
    np.testing.assert_allclose(run.q, ref.q[k:], atol=1e-9)
    dyn = Dynamics(model, t0=t0)
    np.testing.assert_allclose(dyn.q_initial, ref.q[k], atol=1e-9)


def test_a_driven_angle_assembled_half_a_turn_off_is_an_error():
    """Where the pose itself is half a turn from a joint-angle driver at its time (the crank
    drawn at pi/2, driven from 3 pi/2), the assembly lands on theta + pi, which the driver's
    equation also admits: an AssemblyError naming the driver, not a run half a turn off."""
    from kinedyn.errors import AssemblyError
    system = get("four-bar-driven")
    system.drivers[0].function = "crank_angle + pi + crank_speed*t"
    model = system.compile()
    with pytest.raises(AssemblyError, match=r"the driven angle of joint 'A' assembled at "
                                            r"1.5708 rad, half a turn from its driver's "
                                            r"4.71239 rad"):
        Kinematics(model)
    with pytest.raises(AssemblyError, match=r"assembled at 1.8\d+ rad, half a turn from its "
                                            r"driver's 5.0265"):
        Kinematics(model, t0=0.05)  # (no pose at 0 to follow: assembled directly at t0)
