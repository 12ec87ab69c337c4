"""Forward dynamics: energy, closure, closed forms, methods against each other and against the
adaptive reference (SciPy solve_ivp, rtol 1e-10, on the partitioned ODE)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.dynamics import integrators as I
from kinedyn.errors import ModelError, UnknownNameError

from .models import G, free_body, pendulum

EXPLICIT = ("augmented", "projection", "partitioning", "penalty")
# relative energy drift allowed over 10 s of RK4 at dt = 1e-3 (conservative models)
DRIFT = {"augmented": 2e-5, "projection": 1e-7, "partitioning": 1.5e-6, "penalty": 1e-6}


def run(model, method="projection", t_end=1.0, dt=1e-3, record_every=1, **kw):
    m = kinedyn.models.get(model).compile() if isinstance(model, str) else model.compile()
    return Dynamics(m, method=method, **kw).simulate(t_end=t_end, dt=dt,
                                                     record_every=record_every)


@pytest.fixture(scope="module")
def reference():
    cache = {}

    def get(model, t_end=2.0):
        if (model, t_end) not in cache:
            cache[model, t_end] = run(model, "partitioning", t_end, 1e-3, 10,
                                      integrator="reference")
        return cache[model, t_end]
    return get


@pytest.mark.parametrize("model", ["double-pendulum", "four-bar", "slider-crank"])
@pytest.mark.parametrize("method", EXPLICIT)
def test_energy_conserved_rk4(model, method):
    r = run(model, method, t_end=10.0)
    e = r.summary["energy"]
    assert e["max_relative_drift"] <= DRIFT[method], e
    if method in ("projection", "partitioning"):
        assert r.summary["max_residual"]["position"] <= 1e-10
        assert r.summary["max_residual"]["velocity"] <= 1e-10


def test_reference_repartitions_between_recorded_samples():
    """The adaptive reference watches the partition at every accepted step, not only at the
    recorded samples: with samples 1 s apart the four-bar passes configurations where its first
    partition is singular, and the run still conserves energy and equals the run sampled every
    0.1 s at the shared times (before, it kept the degraded partition and lost 65 % of its
    energy on another assembly branch)."""
    coarse = run("four-bar", "partitioning", t_end=6.0, dt=1.0, integrator="reference")
    fine = run("four-bar", "partitioning", t_end=6.0, dt=0.1, integrator="reference")
    assert coarse.summary["energy"]["max_relative_drift"] <= 1e-8
    assert coarse.dyn.reanalyses >= 2
    np.testing.assert_allclose(coarse.q, fine.q[::10], atol=1e-6)
    np.testing.assert_allclose(coarse.qd, fine.qd[::10], atol=1e-5)
    assert coarse.summary["max_residual"]["position"] <= 1e-10


@pytest.mark.parametrize("integrator,order", [("euler", 1), ("semi-implicit-euler", 1),
                                               ("rk4", 4)])
def test_integrator_convergence_order(integrator, order):
    """Halving dt divides the end-point error against the adaptive reference by 2^order."""
    model = pendulum(theta0=0.8)
    ref = run(model, "partitioning", t_end=0.5, dt=0.01,
              integrator="reference").q[-1]
    dts = (0.01, 0.005) if order == 1 else (0.05, 0.025)
    err = [np.abs(run(model, "projection", t_end=0.5, dt=dt, integrator=integrator).q[-1]
                  - ref).max() for dt in dts]
    assert err[0] / err[1] == pytest.approx(2.0**order, rel=0.15)


def test_pendulum_small_angle_period():
    """T = 2 pi sqrt(I_O / (m g l/2)) (1 + theta0^2/16) for a uniform rod pinned at an end."""
    L, th0 = 1.0, 0.02
    r = run(pendulum(theta0=th0, length=L), "partitioning", t_end=6.0)
    x = _tip_x(r)
    t = r.time
    up = np.where((x[:-1] > 0) & (x[1:] <= 0))[0]   # downward zero crossings, interpolated
    tc = t[up] + x[up] / (x[up] - x[up + 1]) * (t[1] - t[0])
    period = np.diff(tc).mean()
    expected = 2 * math.pi * math.sqrt((L**2 / 3) / (G * L / 2)) * (1 + th0**2 / 16)
    assert period == pytest.approx(expected, rel=1e-6)


def _tip_x(r):
    f = r.dyn.f
    P, _ = f.point_trajectory(r.q, r.qd)
    return P[:, f.model.point_name.index("rod.B"), 0]


@pytest.mark.parametrize("method", ["augmented", "partitioning"])
def test_free_body_falls_and_spins(method):
    """Centre of mass on a parabola; torque-free rotation keeps the angular momentum."""
    m = free_body(3).compile()
    dyn = Dynamics(m, method=method)
    f = dyn.f
    # throw it: centre of mass velocity v0 and spin about a principal axis (exact rigid rate)
    q = dyn.q_initial
    v0, w = np.array([1.0, -0.5, 3.0]), np.array([0.0, 0.0, 4.0])
    com0 = f.com_positions(q)[1]
    ev = f.entity_values(q)
    # velocity of every entity of the body: v0 + w x (x - com) for points, w x u for vectors
    E, c = f._E.toarray(), f._c
    target = []
    for i, ent in enumerate(f.entities.items):
        val = ev[i]
        is_point = np.abs(c[3 * i:3 * i + 3]).max() > 0 or i in f.com_entity or \
            i in f.point_entity or i in f.body_origin
        target.append(v0 + np.cross(w, val - com0) if is_point else np.cross(w, val))
    qd, *_ = np.linalg.lstsq(E, np.concatenate(target), rcond=None)
    dyn = Dynamics(m, method=method, q0=q, qd0=qd)
    r = dyn.simulate(t_end=1.0, dt=1e-3)
    com = f._trajectory(r.q)[:, f.com_entity[1]]
    t = r.time[:, None]
    expected = com0 + v0 * t + 0.5 * np.array([0, 0, -G]) * t**2
    np.testing.assert_allclose(com, expected, atol=1e-9)
    assert r.summary["energy"]["max_relative_drift"] < 1e-8


def double_pendulum_angles(t_end, l1=1.0, l2=1.0, m1=1.0, m2=1.0, th=(math.pi / 2,) * 2):
    """Closed-form equations of motion of two uniform rods in absolute angles (Lagrange),
    integrated by solve_ivp at rtol 1e-12: an implementation independent of kinedyn."""
    I1, I2 = m1 * l1**2 / 12, m2 * l2**2 / 12
    k = m2 * l1 * l2 / 2

    def rhs(t, y):
        a, b, wa, wb = y
        s, c = math.sin(a - b), math.cos(a - b)
        M = np.array([[m1 * l1**2 / 4 + I1 + m2 * l1**2, k * c], [k * c, m2 * l2**2 / 4 + I2]])
        F = np.array([-k * s * wb**2 - (m1 * l1 / 2 + m2 * l1) * G * math.sin(a),
                      k * s * wa**2 - m2 * G * l2 / 2 * math.sin(b)])
        return [wa, wb, *np.linalg.solve(M, F)]
    return lambda t: solve_ivp(rhs, (0, t_end), [*th, 0, 0], method="DOP853", rtol=1e-12,
                               atol=1e-13, t_eval=t).y


def test_double_pendulum_against_closed_form(reference):
    p = dict(model=kinedyn.models.double_pendulum(g=G))
    r = Dynamics(p["model"].compile(), method="partitioning", integrator="reference").simulate(
        t_end=2.0, dt=1e-3, record_every=10)
    f = r.dyn.f
    P, _ = f.point_trajectory(r.q, r.qd)
    tip = P[:, f.model.point_name.index("rod2.B")]
    a, b, *_ = double_pendulum_angles(2.0)(r.time)
    np.testing.assert_allclose(tip[:, 0], np.sin(a) + np.sin(b), atol=1e-7)
    np.testing.assert_allclose(tip[:, 1], -np.cos(a) - np.cos(b), atol=1e-7)
    # and every fixed-step method agrees with it to its own truncation error
    for method in EXPLICIT:
        rr = Dynamics(p["model"].compile(), method=method).simulate(t_end=2.0, dt=1e-3,
                                                                     record_every=10)
        np.testing.assert_allclose(rr.q, r.q, atol=1e-6)


@pytest.mark.parametrize("model", ["four-bar", "slider-crank"])
def test_methods_agree_with_reference(model, reference):
    ref = reference(model)
    for method in EXPLICIT:
        r = run(model, method, t_end=2.0, record_every=10)
        # observables: every model point
        P = r.dyn.f.point_trajectory(r.q, r.qd)[0]
        Pref = ref.dyn.f.point_trajectory(ref.q, ref.qd)[0]
        # RK4's truncation error at dt = 1e-3: augmented drifts off the manifold; partitioning
        # integrates independent coordinates whose choice changes as the four-bar turns
        # (2.2e-5 here; its fourth order is checked in test_fast_paths)
        atol = {"augmented": 1e-4, "partitioning": 5e-5}.get(method, 2e-5)
        np.testing.assert_allclose(P, Pref, atol=atol, err_msg=method)
    assert ref.summary["energy"]["max_relative_drift"] < 1e-8


def test_every_run_starts_from_the_initial_state():
    """A second simulate() repeats the first bit for bit, as a new Dynamics would: the first
    run advanced the state in place (and partitioning re-partitioned as the four-bar turns),
    which a second run once started from while labelling its time from t0."""
    m = kinedyn.models.get("four-bar").compile()
    for method in EXPLICIT:
        dyn = Dynamics(m, method=method)
        first, second = (dyn.simulate(t_end=2.0, dt=1e-3, record_every=10) for _ in range(2))
        np.testing.assert_array_equal(second.q, first.q, err_msg=method)
        np.testing.assert_array_equal(second.qd, first.qd, err_msg=method)
        np.testing.assert_array_equal(second.q[0], dyn.q_initial, err_msg=method)


def _signatures():
    return {d: len(d.signatures) for d in (I.integrate_fixed, I.eval_state_derivative)}


def test_a_changed_setting_takes_effect_in_the_next_run():
    """Later runs start from the objects built at t0, reset in place (no second analysis, no
    new types to compile), unless a setting they were built from has changed: then they are
    built again, as a new Dynamics with that setting would be."""
    m = kinedyn.models.get("four-bar").compile()
    for method, attribute, value in (("augmented", "baumgarte", (5.0, 50.0)),
                                     ("penalty", "penalty", {"rho": 1e5, "omega": 10.0,
                                                             "zeta": 1.0, "iterations": 2})):
        dyn = Dynamics(m, method=method)
        first = dyn.simulate(t_end=0.5, dt=1e-3)
        compiled = _signatures()
        again = dyn.simulate(t_end=0.5, dt=1e-3)
        np.testing.assert_array_equal(again.q, first.q)
        assert _signatures() == compiled   # the same objects and types: nothing compiled again
        setattr(dyn, attribute, value)
        changed = dyn.simulate(t_end=0.5, dt=1e-3)
        fresh = Dynamics(m, method=method, **{attribute: value}).simulate(t_end=0.5, dt=1e-3)
        np.testing.assert_array_equal(changed.q, fresh.q, err_msg=method)
        assert not np.array_equal(changed.q, first.q), method


def test_methods_agree_on_gough_stewart():
    runs = {m: run("gough-stewart", m, t_end=0.5, record_every=10) for m in EXPLICIT}
    base = runs["projection"]
    for m, r in runs.items():
        np.testing.assert_allclose(r.q, base.q, atol=1e-7, err_msg=m)
    for m in ("projection", "partitioning"):
        assert runs[m].summary["max_residual"]["position"] <= 1e-10


def test_bad_input_is_named():
    with pytest.raises(UnknownNameError, match="dynamics method"):
        Dynamics(kinedyn.models.get("four-bar").compile(), method="magic")
    with pytest.raises(ModelError, match="partitioning"):
        Dynamics(kinedyn.models.get("four-bar").compile(), method="augmented",
                 integrator="reference")
    with pytest.raises(ModelError, match="dt > 0"):
        Dynamics(kinedyn.models.get("four-bar").compile()).simulate(t_end=1.0, dt=0.0)


def test_recorded_accelerations_survive_a_change_of_sparse_pivots():
    """The slider-crank's crank passes positions where the initial sparse pivots go singular;
    the recorded accelerations are re-analysed there and equal the dense solver's."""
    sparse = run("slider-crank", "projection", t_end=2.0, solver="sparse")
    dense = run("slider-crank", "projection", t_end=2.0, solver="dense")
    np.testing.assert_allclose(sparse.q, dense.q, atol=1e-9)
    scale = np.abs(dense.qdd).max()
    np.testing.assert_allclose(sparse.qdd, dense.qdd, atol=1e-8 * scale)


def test_a_system_is_accepted_and_other_objects_are_refused():
    """Dynamics compiles (and thereby validates) a System; anything else is a clear TypeError."""
    system = kinedyn.models.get("four-bar")
    r = Dynamics(system, method="projection").simulate(t_end=0.01, dt=1e-3)
    assert r.q.shape[0] == 11
    with pytest.raises(TypeError, match="expected a kinedyn System or CompiledModel"):
        Dynamics(42)


def test_methods_that_invert_the_mass_matrix_refuse_a_singular_one():
    """The Group Equations paper's Stewart platform, free: its terminal plate has no inertia
    about its normal, so its natural-coordinate mass matrix is singular (the constraints fix
    those directions). ``penalty`` (qdd0 = M^-1 Q) and ``index3`` (HHT's start) invert M; they
    stopped in SciPy's "Factor is exactly singular" and NumPy's "Singular matrix". They refuse
    the model by name now, with the coordinates and the methods that run it."""
    m = kinedyn.models.get("stewart-paper-free").compile()
    for method in ("penalty", "index3"):
        with pytest.raises(ModelError, match=rf"method '{method}' inverts the mass matrix.*"
                                             r"singular \(3 massless.*terminal\.u3\.x.*"
                                             r"'augmented', 'projection' or 'partitioning'"):
            Dynamics(m, method=method)
    res = Dynamics(m, method="projection").simulate(t_end=0.05, dt=1e-3)
    assert res.summary["max_residual"]["position"] <= 1e-10
