"""HDCA (Hamiltonian divide-and-conquer) against independent solutions.

* open chains: pointwise against the dense Lagrangian (CRBA mass matrix, RNEA bias):
  qd = M^-1 p and pd = d(M qd)/dt = M qdd + Mdot qd; trajectories against RK4 on the dense ODE;
* double pendulum and four-bar: trajectories against the natural-coordinate formulation;
* energy conservation, loop closure, serial == parallel, float32 vs float64;
* semi-implicit Euler in [q; p]: the momentum map it needs, and its steps against the velocity
  form on the dense ODE.
"""
import warnings

import numpy as np
import pytest

from kinedyn.dynamics import Dynamics
from kinedyn.dynamics import integrators as I
from kinedyn.dynamics.hdca import HDCA
from kinedyn.dynamics.hdca_team import ThreadedHDCA
from kinedyn.errors import AccuracyWarning, ModelError
from kinedyn.formulations.hamiltonian import Hamiltonian, hdca_derivative
from kinedyn.formulations.hamiltonian.kernels import hdca_derivative_momenta
from kinedyn.formulations.hamiltonian.dense import make_dense, mass_and_bias
from kinedyn.formulations.hamiltonian.origin import momenta
from kinedyn.formulations.hamiltonian.team import make_plan
from kinedyn.models import get


def _dense(h):
    system, dw = make_dense(h.data, h.make_work())

    def mass_bias(q, qd):
        mass_and_bias(h.data, dw.chain, dw, q, qd)
        return dw.M.copy(), dw.b.copy()
    return system, dw, mass_bias


@pytest.mark.parametrize("n", [1, 5, 64])
def test_state_derivative_equals_dense_lagrangian(n):
    h = Hamiltonian(get(f"cart-pendulum-{n}").compile())
    _, _, mass_bias = _dense(h)
    rng = np.random.default_rng(n)
    for _ in range(3):
        q = h.q0 + rng.normal(size=h.n_j)
        p = rng.normal(size=h.n_j)
        qd, pd = h.state_derivative(q, p)
        M, b = mass_bias(q, qd)
        assert np.allclose(M, M.T) and np.all(np.linalg.eigvalsh(M) > 0)
        scale = np.abs(qd).max()
        assert np.abs(qd - np.linalg.solve(M, p)).max() < 1e-11 * np.linalg.cond(M) * scale
        qdd = np.linalg.solve(M, -b)
        eps = 1e-6  # Mdot qd by a central difference along qd (error ~ eps^2)
        Mdot = (mass_bias(q + eps * qd, qd)[0] - mass_bias(q - eps * qd, qd)[0]) / (2 * eps)
        ref = M @ qdd + Mdot @ qd
        assert np.abs(pd - ref).max() < 1e-6 * (1 + np.abs(ref).max())


@pytest.mark.parametrize("n", [8, 64])
def test_trajectory_equals_dense_mass_matrix_solution(n):
    h = Hamiltonian(get(f"cart-pendulum-{n}").compile())
    dt, steps = 2.5e-4, 1200  # RK4 on [q; p] and on [q; qd]: truncation errors ~ dt^4 apart
    res = HDCA(h).simulate(steps * dt, dt, record_every=100)
    system, dw, _ = _dense(h)
    y = np.concatenate([h.q0, np.zeros(h.n_j)])
    out = np.zeros((steps // 100 + 1, 2 * h.n_j))
    st, _ = I.integrate_fixed(system, dw, y, 0.0, dt, steps, I.RK4, h.n_j, True, 100, out,
                              I.make_scratch(len(y)))
    assert st == 0
    scale = np.abs(out[:, h.n_j:]).max()
    assert np.abs(res.q - out[:, :h.n_j]).max() < 1e-9 * max(1.0, scale)
    assert np.abs(res.qd - out[:, h.n_j:]).max() < 2e-8 * max(1.0, scale)


@pytest.mark.parametrize("name", ["cart-pendulum-5", "four-bar-hdca", "four-bar"])
def test_momentum_map(name):
    """``origin.momenta``: HDCA maps the momenta ``p = M(q) qd`` back to ``qd`` (a closed
    chain's: the momenta of its tree, which differ from HDCA's by constraint impulses), an open
    chain's ``p`` is the dense mass matrix times ``qd``, and ``rate`` is the derivative of ``p``
    along ``qd`` at constant ``qd`` (central differences)."""
    h = Hamiltonian(get(name).compile())
    work = h.make_work()
    rng = np.random.default_rng(11)
    q = h.q0 + (0.0 if h.data.closed else rng.normal(size=h.n_j))  # closed: assembled
    qd = h.state_derivative(q, rng.normal(size=h.n_j))[0]  # admissible joint rates
    p, rate = np.zeros(h.n_j), np.zeros(h.n_j)
    momenta(h.data, work, q, qd, p, rate)
    scale = np.abs(qd).max()
    assert scale > 0.1 and np.abs(h.state_derivative(q, p)[0] - qd).max() < 1e-12 * scale
    if not h.data.closed:
        M, _ = _dense(h)[2](q, qd)
        assert np.abs(p - M @ qd).max() < 1e-12 * np.abs(p).max()
    eps = 1e-6
    ends = []
    for sign in (1.0, -1.0):
        pe = np.zeros(h.n_j)
        momenta(h.data, work, q + sign * eps * qd, qd, pe, np.zeros(h.n_j))
        ends.append(pe)
    fd = (ends[0] - ends[1]) / (2 * eps)
    assert np.abs(rate).max() > 1e-2 and np.abs(rate - fd).max() < 1e-7 * np.abs(rate).max()
    # the forward kinematics held in ``work`` (``q_fk``) are reused at their own q only
    for q_held in (q, q + 0.1):
        hdca_derivative(h.data, work, q_held, p, np.zeros(h.n_j), np.zeros(h.n_j))
        assert np.array_equal(work.q_fk, q_held)
        pr, rr = np.zeros(h.n_j), np.zeros(h.n_j)
        momenta(h.data, work, q, qd, pr, rr)
        assert np.array_equal(pr, p) and np.array_equal(rr, rate)


@pytest.mark.parametrize("name", ["cart-pendulum-37", "four-bar", "double-pendulum"])
def test_evaluation_at_the_same_position_is_the_full_one(name):
    """``hdca_derivative_momenta``: the momentum-dependent passes alone, after a full
    evaluation at the same q with other momenta (semi-implicit Euler's second evaluation),
    give the full evaluation's qd and pd bit for bit."""
    h = Hamiltonian(get(name).compile())
    work = h.make_work()
    rng = np.random.default_rng(3)
    q = h.q0 + 0.1 * rng.normal(size=h.n_j)
    p1, p2 = rng.normal(size=h.n_j), rng.normal(size=h.n_j)
    out = [np.zeros(h.n_j) for _ in range(4)]
    assert hdca_derivative(h.data, work, q, p1, out[0], out[1]) == 0
    assert hdca_derivative_momenta(h.data, work, p2, out[2], out[3]) == 0
    qd, pd = h.state_derivative(q, p2)
    assert not np.array_equal(out[0], qd)  # other momenta, other rates
    assert np.array_equal(out[2], qd) and np.array_equal(out[3], pd)


def _semi_implicit(h, t_end, dt, record_every):
    return HDCA(h, integrator="semi-implicit-euler").simulate(t_end, dt,
                                                               record_every=record_every)


@pytest.mark.parametrize("n", [8, 64])
def test_semi_implicit_euler_is_the_velocity_form(n):
    """HDCA's semi-implicit Euler in ``[q; p]`` takes the steps of the velocity form (qd += dt
    qdd; q += dt qd) on the dense ODE in ``[q; qd]``, the peers' scheme: equal up to rounding
    (which the chain's chaos amplifies over the second)."""
    h = Hamiltonian(get(f"cart-pendulum-{n}").compile())
    dt, steps = 1e-3, 1000
    res = _semi_implicit(h, steps * dt, dt, 100)
    system, dw, _ = _dense(h)
    y = np.concatenate([h.q0, np.zeros(h.n_j)])
    out = np.zeros((steps // 100 + 1, 2 * h.n_j))
    st, _ = I.integrate_fixed(system, dw, y, 0.0, dt, steps, I.SEMI_IMPLICIT_EULER, h.n_j, True,
                              100, out, I.make_scratch(len(y)))
    assert st == 0
    scale = np.abs(out[:, h.n_j:]).max()
    assert scale > 1.0
    assert np.abs(res.q - out[:, :h.n_j]).max() < 1e-8
    assert np.abs(res.qd - out[:, h.n_j:]).max() < 1e-8 * scale


def test_semi_implicit_euler_stays_stable_on_a_long_chain():
    """256 links at dt = 1 ms: the explicit ``p += dt pd; q += dt M^-1 p`` diverged after 347
    steps (its velocities carried an extra dt M^-1 Mdot qd); the velocity form keeps the energy
    within 5e-4 (2.2e-4 measured) and follows RK4 to first order."""
    h = Hamiltonian(get("cart-pendulum-256").compile())
    res = _semi_implicit(h, 1.0, 1e-3, 100)
    ref = HDCA(h).simulate(1.0, 1e-3, record_every=100)
    E = res.channel("energy.total")
    assert np.abs(E - E[0]).max() < 5e-4 * np.abs(E[0])
    assert np.abs(res.q[:, :2] - ref.q[:, :2]).max() < 0.02  # cart (m), first link (rad)
    assert np.abs(res.q[-1, 1] - ref.q[-1, 1]) < 1e-3


def test_semi_implicit_euler_converges_on_a_closed_chain():
    """The four-bar: first order against RK4 at dt / 10 (the crank's error about halves with the
    step: 4.2, 2.3 rad after 1 s at 1 and 0.5 ms), the energy error falls faster (10 %, 2.7 %).
    Its new velocities satisfy the loop's velocity
    constraints at the step's start, not its end (the momentum rate leaves out the loop's
    curvature), and the next evaluation projects them: first order all the same."""
    h = Hamiltonian(get("four-bar").compile())
    ref = HDCA(h).simulate(1.0, 1e-4, record_every=100)
    err, drift, warned = [], [], []
    for dt, every in ((1e-3, 10), (5e-4, 20)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = _semi_implicit(h, 1.0, dt, every)
        err.append(np.abs(res.q[:, 0] - ref.q[:, 0]).max())
        drift.append(res.summary["energy"]["max_drift"])
        warned.append(any(isinstance(w.message, AccuracyWarning) for w in caught))
    assert 1.5 < err[0] / err[1] < 2.5 and 2.5 < drift[0] / drift[1]
    assert drift[1] < 0.05 * abs(ref.summary["energy"]["initial"])
    assert warned == [True, False]  # 14 % and 3.6 % of the largest kinetic energy (limit 10 %)


def test_cart_pendulum_conserves_energy_with_rk4():
    res = HDCA(get("cart-pendulum-16").compile()).simulate(1.0, 1e-3, record_every=10)
    E = res.channel("energy.total")
    assert np.ptp(res.channel("energy.kinetic")) > 10.0  # it really moves
    assert np.abs(E - E[0]).max() < 1e-6 * np.abs(res.channel("energy.gravity")).max()
    q = res.channel("q.pin1")
    assert q[0] == pytest.approx(np.pi / 4) and res.channel("q.slide")[0] == 0.0


def _natural(name, t_end, dt):
    dyn = Dynamics(get(name).compile(), method="projection", integrator="rk4")
    res = dyn.simulate(t_end, dt)
    return res, dyn.f.observables(res.q, res.qd, np.zeros_like(res.q))


@pytest.mark.parametrize("name, dt, tol", [("double-pendulum", 1e-3, 1e-8),
                                           ("four-bar-hdca", 2.5e-4, 1e-8)])
def test_agrees_with_natural_coordinates(name, dt, tol):
    t_end = 0.5
    res = HDCA(get(name).compile()).simulate(t_end, dt)
    nat, ch = _natural(name, t_end, dt)
    for b in res.h.body_names:
        d = res.channel(f"body.{b}.angle") - ch[f"body.{b}.angle"]
        d -= 2 * np.pi * np.round(d[0] / (2 * np.pi))
        assert np.abs(d).max() < tol, b
    for j in res.h.joint_names:
        rate = ch[f"joint.{j}.angle_d"]
        assert np.ptp(rate) > 0.5  # moving
        assert np.abs(res.channel(f"q.{j}_d") - rate).max() < 20 * tol, j
        # joint angles: same motion (the zero of the angle is the formulations' own choice)
        d = res.channel(f"q.{j}") - ch[f"joint.{j}.angle"]
        assert np.abs(d - d[0]).max() < tol, j
    if res.h.closed:
        assert res.summary["max_loop_closure"]["position"] < 1e-8
        assert res.summary["max_loop_closure"]["angle"] < 1e-12


@pytest.mark.parametrize("name, workers", [("cart-pendulum-64", 2), ("cart-pendulum-37", 3),
                                           ("four-bar-hdca", 2), ("double-pendulum", 3)])
def test_serial_and_threaded_are_identical(name, workers):
    """The team evaluation (subtrees per worker) and whole threaded runs equal the serial ones
    bit for bit: derivatives at a random state, RK4 / Euler / semi-implicit Euler runs."""
    h = Hamiltonian(get(name).compile())
    rng = np.random.default_rng(7)
    q, p = h.q0 + 0.1 * rng.normal(size=h.n_j), rng.normal(size=h.n_j)
    qd, pd = h.state_derivative(q, p)
    team = ThreadedHDCA(h.data, h.make_work(), workers)
    plan = team.plan
    assert sorted(plan.joints) == list(range(h.n_j))  # every joint rate computed exactly once
    assert sorted(np.concatenate([plan.nodes, plan.top])) == list(range(h.n_b, 2 * h.n_b - 1))
    scratch = np.zeros((6, 2 * h.n_j))
    assert team.derivative(np.concatenate([q, p]), scratch, 3) == 0
    assert np.array_equal(scratch[0], np.concatenate([qd, pd]))
    team.close()
    for integrator in ("rk4", "euler", "semi-implicit-euler"):
        rs = HDCA(h, integrator=integrator).simulate(0.05, 1e-3, record_every=5)
        rp = HDCA(h, integrator=integrator, parallel=True, threads=workers).simulate(
            0.05, 1e-3, record_every=5)
        assert np.ptp(rs.q[:, 0]) > 0 or np.ptp(rs.q[:, -1]) > 0  # it moves
        assert np.array_equal(rs.q, rp.q) and np.array_equal(rs.p, rp.p), integrator


def test_threaded_float32_run_equals_serial():
    m = get("cart-pendulum-16").compile()
    rs = HDCA(m, precision="float32").simulate(0.05, 1e-3, record_every=5)
    rp = HDCA(m, precision="float32", parallel=True).simulate(0.05, 1e-3, record_every=5)
    assert rp.q.dtype == np.float32 and rp.summary["threads"] == 2
    assert np.ptp(rs.q[:, 2]) > 1e-3 and np.array_equal(rs.q, rp.q)
    assert np.array_equal(rs.p, rp.p)


@pytest.mark.parametrize("n, workers", [(64, 2), (37, 3), (2, 3), (1024, 2)])
def test_team_plan_splits_the_chain_into_subtrees(n, workers):
    """Consecutive ranges covering the chain, one subtree each (the root's children for 2
    workers); each internal node owned by the worker whose range holds it, or a top node of the
    leader (the first range's worker) when it straddles a cut (children before parents); each
    joint's rate computed exactly once."""
    h = Hamiltonian(get(f"cart-pendulum-{n}" if n > 2 else "double-pendulum").compile())
    plan = make_plan(h.data, workers)
    spans = sorted(zip(plan.body_lo, plan.body_hi))
    assert spans[0][0] == 0 and spans[-1][1] == h.n_b
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert spans[-1][1] > spans[-1][0]  # the tip's range is never empty
    assert plan.body_lo[plan.leader] == 0 and plan.body_hi[plan.leader] > 0 or h.n_b < workers
    if workers == 2 and h.n_b > 2:
        assert plan.body_hi[1] == plan.body_lo[0] == h.tree.first[h.tree.right[h.tree.root]]
        assert list(plan.top) == [h.tree.root]
    height, first, last = h.tree.height, h.tree.first, h.tree.last
    for w in range(workers):
        nodes = plan.nodes[plan.node_ptr[w]:plan.node_ptr[w + 1]]
        assert all(plan.body_lo[w] <= first[c] and last[c] < plan.body_hi[w] for c in nodes)
        assert np.all(np.diff(height[nodes]) >= 0)  # children before parents
    for c in plan.top:
        assert any(first[c] < lo <= last[c] for lo in plan.body_lo if lo > 0)  # straddles
    assert np.all(np.diff(height[plan.top]) >= 0)
    assert len(plan.top) <= (workers - 1) * max(1, h.tree.depth)
    assert sorted(np.concatenate([plan.nodes, plan.top])) == list(range(h.n_b, 2 * h.n_b - 1))
    assert sorted(plan.joints) == list(range(h.n_j))


def test_float32_tracks_float64():
    m = get("four-bar-hdca").compile()
    r64 = HDCA(m).simulate(0.5, 1e-3)
    r32 = HDCA(m, precision="float32").simulate(0.5, 1e-3)
    assert r32.q.dtype == np.float32
    assert np.abs(r32.q - r64.q).max() < 1e-3
    assert r32.summary["max_loop_closure"]["position"] < 1e-4
    assert r64.summary["max_loop_closure"]["position"] < 1e-8
    E32, E64 = r32.channel("energy.total"), r64.channel("energy.total")
    assert np.abs(E32 - E64).max() < 1e-3 * np.abs(E64).max()


def test_unsupported_models_get_clear_errors():
    with pytest.raises(ModelError, match="HDCA"):
        Hamiltonian(get("3-rrr").compile())
    with pytest.raises(ModelError, match="drivers"):
        Hamiltonian(get("four-bar-driven").compile())
    with pytest.raises(ModelError, match="planar"):
        Hamiltonian(get("gough-stewart").compile())


# ---- HDCA as a method of Dynamics: same integrators, outputs in natural coordinates -------------
def _points(res):
    return {n: res.channel(n) for n in res.names("point.*") if n.endswith((".x", ".y"))}


@pytest.mark.parametrize("name, dt", [("double-pendulum", 1e-3), ("four-bar", 5e-4),
                                      ("cart-pendulum-3", 1e-3), ("slider-crank", 1e-3)])
def test_dynamics_method_hdca_equals_augmented(name, dt):
    """(The slider-crank's loop is walked from its slide, whose ground is body_a: from the
    crank it would reach the slide from the piston's side, which HDCA's prismatic joint does
    not take.)"""
    m = get(name).compile()
    hd = Dynamics(m, method="hdca", integrator="rk4").simulate(0.5, dt, record_every=10)
    aug = Dynamics(m, method="augmented", integrator="rk4").simulate(0.5, dt, record_every=10)
    a, b = _points(hd), _points(aug)
    assert a.keys() == b.keys() and len(a) >= 2
    moved = max(np.ptp(v) for v in b.values())
    assert moved > 0.1
    for k in a:  # RK4 on [q; p] and on [q_nat; qd_nat]: truncation errors ~ dt^4 apart
        assert np.abs(a[k] - b[k]).max() < 1e-7, k
    assert np.abs(hd.qd - aug.qd).max() < 1e-6
    E = hd.channel("energy.total")
    assert np.abs(E - E[0]).max() < 1e-7 * max(1.0, np.abs(hd.channel("energy.kinetic")).max())
    assert hd.summary["method"] == "hdca"
    assert hd.summary["max_residual"]["velocity"] < 1e-9  # velocities satisfy the loop exactly
    assert hd.summary["max_residual"]["position"] < 1e-7  # closure drift: reported, small


def test_dynamics_method_hdca_starts_from_given_velocities():
    """Non-zero initial velocities: momenta from qd = G(q) p (least squares, closed loop)."""
    m = get("four-bar").compile()
    n_q = Dynamics(m, method="augmented").f.n_q
    qd0 = np.random.default_rng(3).normal(size=n_q)  # made consistent by Dynamics
    hd = Dynamics(m, method="hdca", qd0=qd0)
    aug = Dynamics(m, method="augmented", qd0=qd0)
    assert np.ptp(hd.qd_initial) > 0.1
    a, b = hd.simulate(0.2, 5e-4, record_every=20), aug.simulate(0.2, 5e-4, record_every=20)
    assert np.abs(a.q[0] - b.q[0]).max() < 1e-12 and np.abs(a.qd[0] - b.qd[0]).max() < 1e-9
    assert np.abs(a.q - b.q).max() < 1e-7


@pytest.mark.parametrize("integrator", ["euler", "semi-implicit-euler"])
def test_dynamics_method_hdca_runs_the_other_integrators(integrator):
    m = get("double-pendulum").compile()
    res = Dynamics(m, method="hdca", integrator=integrator).simulate(0.2, 1e-4,
                                                                      record_every=100)
    ref = HDCA(m, integrator=integrator).simulate(0.2, 1e-4, record_every=100)
    for b in ref.h.body_names:
        assert np.allclose(res.channel(f"body.{b}.angle"), ref.channel(f"body.{b}.angle"),
                           atol=1e-12, rtol=0)


@pytest.mark.parametrize("name, what", [("3-rrr", "HDCA"), ("four-bar-driven", "drivers"),
                                        ("gough-stewart", "planar")])
def test_dynamics_method_hdca_names_what_is_unsupported(name, what):
    with pytest.raises(ModelError, match=what):
        Dynamics(get(name).compile(), method="hdca")
