"""Thesis chapter 5 suspensions: the five-link's solution flow (constant-distance constraints
(5.2) for the carrier pose, per-link triangular systems (5.4)-(5.7)) and the double-wishbone's
block-triangular plan; residuals, equality with Newton along trajectories, embedded dynamics
against the natural-coordinate projection method."""
import math

import numpy as np
import pytest
import sympy as sp

import kinedyn
from kinedyn.models.suspension import FIVE_LINK_C, FIVE_LINK_W
from kinedyn.symbolic.equations import T
from kinedyn.symbolic.spatial import spatial_coordinates
from kinedyn.symbolic.triangular import make_plan

from .dep_solve import dep_solve_error


@pytest.fixture(scope="module")
def five_link():
    eqs = spatial_coordinates(kinedyn.models.get("five-link").compile(), absolute=["carrier"],
                              independent=["carrier.z"])
    return eqs, make_plan(eqs, distance_time_limit=5)


def test_five_link_constraints_are_5_1(five_link):
    """Each link's three equations are p + R(phi, theta, psi) W_k - C_k = L_k (c_b, s_a s_b,
    -c_a s_b) (eq. 5.1, the link's x'' axis from C_k to W_k), at random configurations."""
    eqs, _ = five_link
    rng = np.random.default_rng(3)
    f = sp.lambdify(eqs.q, sp.Matrix(eqs.phi), "numpy")
    for _ in range(5):
        q = eqs.q0 + rng.normal(scale=0.3, size=eqs.n_q)
        x, y, z, ph, th, ps = q[:6]
        R = kinedyn.model.rotations.euler_to_matrix([ph, th, ps], "ZYX")
        phi = np.asarray(f(*q), float).ravel()
        for k in range(5):
            C, W = np.array(FIVE_LINK_C[k]) / 1e3, np.array(FIVE_LINK_W[k]) / 1e3
            a, b = q[6 + 2 * k], q[7 + 2 * k]
            L = np.linalg.norm(W - C)
            expect = np.array([x, y, z]) + R @ W - C - L * np.array(
                [math.cos(b), math.sin(a) * math.sin(b), -math.cos(a) * math.sin(b)])
            got = phi[3 * k:3 * k + 3]
            assert min(np.abs(got - expect).max(), np.abs(got + expect).max()) <= 1e-9


def test_five_link_plan_is_the_thesis_solution_flow(five_link):
    """Newton only on the carrier pose from the five constant-distance constraints (5.2),
    then one triangular system per link: c_b linear, s_b quadratic (the two equivalent
    U-joint solutions), c_a and s_a linear -- (5.4)-(5.7), Table 5.1's degrees."""
    eqs, plan = five_link
    first, *links = plan.blocks
    assert first.kind == "newton"
    assert sorted(eqs.coordinates[i].name for i in first.unknowns) == \
        sorted(f"carrier.{c}" for c in ("x", "y", "phi", "theta", "psi"))
    assert all(i >= eqs.n_c for i in first.equations) and len(first.equations) == 5
    assert len(links) == 5 and all(b.kind == "triangular" for b in links)
    for k, b in enumerate(links, start=1):
        assert [s.var.name for s in b.steps] == [f"c_U{k}_beta", f"s_U{k}_beta",
                                                 f"c_U{k}_alpha", f"s_U{k}_alpha"]
        assert [s.degree for s in b.steps] == [1, 2, 1, 1]
        assert len(b.equations) == 3 and len(b.unknowns) == 2
    # the distance constraints do not involve the links' angles
    link_angles = {eqs.coordinates[i].symbol for b in links for i in b.unknowns}
    assert not any(e.free_symbols & link_angles for _, e in plan.derived)
    assert "5 constant-distance constraints" in plan.report()[0]


def test_five_link_triangular_equals_newton_along_the_travel(five_link):
    """z = 0.05 sin(pi t) over a period: the plan's solution satisfies Phi to 1e-12 and
    equals Newton-Raphson on all 15 dependent coordinates, on the selected branch."""
    eqs, plan = five_link
    iz = eqs.index("carrier.z")
    q_nr = eqs.q0.copy()
    for t in np.linspace(0.0, 2.0, 21):
        q = q_nr.copy()
        q[iz] = 0.05 * math.sin(math.pi * t)
        q_nr, _ = eqs.solve_newton(q, tol=1e-14)
        q_tri = plan.solve(q, tol=1e-15)
        assert np.abs(eqs.residual(q_tri)).max() <= 1e-12
        assert np.abs(q_tri - q_nr).max() <= 1e-10
        betas = q_tri[7::2]
        assert (np.sin(betas) > 0).all()          # the initial U-joint solutions throughout


def test_double_wishbone_plan_and_trajectory():
    """Joint coordinates as the thesis (carrier on the upper ball joint's 3-2-1 angles,
    inputs rack and lower-arm angle): Newton on the carrier's four unknowns with the tie
    rod's constant-distance constraint, the tie rod's U-joint angles in closed form; equal
    to Newton along the driven motion."""
    eqs = spatial_coordinates(kinedyn.models.get("double-wishbone-driven").compile())
    plan = make_plan(eqs, distance_time_limit=5)
    assert [b.kind for b in plan.blocks] == ["newton", "triangular"]
    assert len(plan.blocks[0].unknowns) == 4 and len(plan.blocks[1].unknowns) == 2
    q_nr = eqs.q0.copy()
    for t in np.linspace(0.0, 1.0, 11):
        q = q_nr.copy()
        for i, f in eqs.inputs.items():
            q[i] = float(f.subs(T, t))
        q_nr, _ = eqs.solve_newton(q, t, tol=1e-14)
        q_tri = plan.solve(q, t, tol=1e-15)
        assert np.abs(eqs.residual(q_tri, t)).max() <= 1e-12
        assert np.abs(q_tri - q_nr).max() <= 1e-10


@pytest.fixture(scope="module")
def five_link_embedded():
    from kinedyn.symbolic.embedded import EmbeddedDynamics
    model = kinedyn.models.get("five-link").compile()
    return model, EmbeddedDynamics(model, absolute=["carrier"], independent=["carrier.z"],
                                   integrator="rk4", tol=1e-13)


@pytest.mark.slow
def test_five_link_embedded_dynamics(five_link_embedded):
    """Static load: at rest under gravity and the default preload the carrier does not
    accelerate; the thesis's force (5.8) then moves it, and the embedded ODE in z follows
    the natural-coordinate projection method, with Phi satisfied to 1e-12 (Newton on the
    pose at 1e-13, triangular links) and the per-link Newton baseline equal."""
    from kinedyn.dynamics import Dynamics
    model, emb = five_link_embedded
    res = emb.simulate(0.5, 1e-3)
    assert abs(res.channel("coordinate.carrier.z_dd")[0]) < 1e-3      # static load
    assert res.channel("residual.position").max() <= 1e-12
    z = res.channel("body.carrier.z")
    assert z.max() > 0.005                                             # (5.8) lifts it
    ref = Dynamics(model, method="projection", integrator="rk4", solver="dense").simulate(0.5, 1e-3)
    assert np.abs(z - ref.channel("body.carrier.z")).max() <= 1e-6
    assert np.abs(res.channel("body.carrier.x") - ref.channel("body.carrier.x")).max() <= 1e-6
    # Gauss-Newton per link after the pose Newton (stops on a step below tol: a link's three
    # equations are consistent only to the pose's tolerance)
    emb.position_solver, emb.mode, emb.tol = "blocks", 1, 1e-12
    res_b = emb.simulate(0.5, 1e-3)
    emb.position_solver, emb.mode, emb.tol = "triangular", 0, 1e-13
    assert np.abs(res_b.channel("body.carrier.z") - z).max() <= 1e-9


@pytest.mark.slow
def test_five_link_velocity_level_through_the_rod_reduction(five_link_embedded):
    """Phi_d (15 x 15) is solved as the 5 x 5 carrier-pose block of the differentiated
    distance constraints (rod k's row: its left null vector times its three equations) and a
    3 x 2 block per link; equal to the full 15 x 15 solve to 1e-12 along the motion."""
    from kinedyn.symbolic.kernels import rod_reduction
    _, emb = five_link_embedded
    sys_ = emb.system
    Jq = sp.Matrix([e for e in sys_.phi]).jacobian(sys_.q)
    core_rows, core_cols, rod_rows, rod_cols = rod_reduction(sys_, emb.plan, Jq)
    assert core_rows == [] and len(core_cols) == 5 and len(rod_rows) == 5
    res = emb.simulate(0.5, 1e-3)
    names = [c.name for c in sys_.coordinates]
    Q = np.column_stack([res.channel(f"coordinate.{n}") for n in names])
    k = np.arange(0, 501, 50)
    assert dep_solve_error(sys_, emb.generated.module, Q[k], res.time[k]) <= 1e-12


@pytest.mark.slow
def test_double_wishbone_velocity_level_through_the_rod_reduction():
    """The double-wishbone's Phi_d (6 x 6): the lower ball joint's three equations and the
    tie rod's reduced row give the 4 x 4 core block, then the tie rod's 3 x 2 block; equal to
    the full solve to 1e-12 along the driven motion, and the kinematic run's velocities and
    accelerations equal central differences of its positions (to their O(h^2) error)."""
    from kinedyn.symbolic.analysis import TriangularKinematics
    from kinedyn.symbolic.kernels import rod_reduction
    kin = TriangularKinematics(kinedyn.models.get("double-wishbone-driven").compile(),
                               time_limit=10)
    sys_ = kin.system
    Jq = sp.Matrix([e for e in sys_.phi]).jacobian(sys_.q)
    core_rows, core_cols, rod_rows, rod_cols = rod_reduction(sys_, kin.plan, Jq)
    assert len(core_rows) == 3 and len(core_cols) == 4 and len(rod_rows) == 1
    res = kin.simulate(1.0, 1e-3)
    names = [c.name for c in sys_.coordinates]
    Q = np.column_stack([res.channel(f"coordinate.{n}") for n in names])
    k = np.arange(0, 1001, 100)
    assert dep_solve_error(sys_, kin.generated.module, Q[k], res.time[k]) <= 1e-12
    for n in names:
        x, v, a = (res.channel(f"coordinate.{n}{s}") for s in ("", "_d", "_dd"))
        assert np.abs((x[2:] - x[:-2]) / 2e-3 - v[1:-1]).max() <= 1e-4 * max(1.0, np.abs(v).max())
        assert np.abs((v[2:] - v[:-2]) / 2e-3 - a[1:-1]).max() <= 1e-3 * max(1.0, np.abs(a).max())
