"""Spatial symbolic coordinates (Gough-Stewart platform, thesis section 4.2.5): the derived
constraints are the thesis's (4.32), exact data, per-leg triangular plan equal to Newton along a
trajectory, and embedded dynamics against the natural-coordinate projection method."""
import numpy as np
import pytest
import sympy as sp

import kinedyn
from kinedyn.errors import ModelError
from kinedyn.models.stewart import GS_BASE, GS_PLATFORM
from kinedyn.symbolic import make_plan
from kinedyn.symbolic.spatial import (rational_rotation, rational_unit, spatial_coordinates,
                                      tape_expr)
from kinedyn.model.rotations import euler_to_matrix


def test_exact_unit_vectors_and_rotations():
    rng = np.random.default_rng(1)
    for _ in range(5):
        v = rng.normal(size=3)
        u = rational_unit(v, 1e-10)
        assert sp.simplify((u.T * u)[0] - 1) == 0
        assert np.allclose(np.array(u, float).ravel(), v / np.linalg.norm(v), atol=1e-9)
        R = euler_to_matrix(rng.uniform(-3, 3, 3), "ZYX")
        Rq = rational_rotation(R, 1e-10)
        assert Rq.T * Rq == sp.eye(3) and Rq.det() == 1
        assert np.allclose(np.array(Rq, float), R, atol=1e-9)
    assert rational_unit([1, 0, 0]) == sp.Matrix([1, 0, 0])


@pytest.fixture(scope="module")
def driven():
    return spatial_coordinates(kinedyn.models.get("gough-stewart-driven").compile(),
                               absolute=["platform"])


def test_gough_stewart_constraints_are_thesis_4_32(driven):
    """Phi_k = x + R P_k - B_k - L_k (s_beta, -s_alpha c_beta, c_alpha c_beta) (eq. 4.32, with
    L_k the prismatic displacement between the U- and S-joint points)."""
    eqs = driven
    names = [c.name for c in eqs.coordinates]
    assert names[:6] == [f"platform.{c}" for c in ("x", "y", "z", "phi", "theta", "psi")]
    assert eqs.n_q == 24 and eqs.n_c == 18 and eqs.independent == tuple(range(6))
    rng = np.random.default_rng(0)
    for _ in range(3):
        q = eqs.q0 + rng.normal(scale=0.2, size=24)
        r = eqs.residual(q).reshape(6, 3)
        R = euler_to_matrix(q[3:6], "ZYX")
        for k in range(6):
            al, be = q[names.index(f"U{k + 1}.alpha")], q[names.index(f"U{k + 1}.beta")]
            L = q[names.index(f"P{k + 1}.displacement")]
            u = np.array([np.sin(be), -np.sin(al) * np.cos(be), np.cos(al) * np.cos(be)])
            expect = q[:3] + R @ GS_PLATFORM[k] - GS_BASE[k] - L * u
            assert np.allclose(r[k], expect, atol=1e-13)
    assert np.abs(eqs.residual(eqs.q0)).max() < 1e-14


def test_pose_driver_inputs_follow_the_tape(driven):
    model = driven.model
    tape = model.functions
    for t in (0.0, 0.37, 1.3):
        vals = tape.evaluate(t)[:, 0]
        for fid in range(len(tape)):
            assert float(tape_expr(model, fid).subs(sp.Symbol("t", real=True), t)) == pytest.approx(vals[fid], abs=1e-14)
    # the prescribed 3-2-1 angles reproduce the driver's rotation matrix
    t = 0.8
    ang = [float(driven.inputs[i].subs(sp.Symbol("t", real=True), t)) for i in (3, 4, 5)]
    R = tape.evaluate(t)[3:12, 0].reshape(3, 3)
    assert np.allclose(euler_to_matrix(ang, "ZYX"), R, atol=1e-14)


def test_per_leg_triangular_plan_equals_newton_along_trajectory(driven):
    """Six 3-unknown blocks, each fully triangular (degrees <= 2) in well under the 60 s
    target, and the closed forms equal Newton on the selected branch to 1e-12."""
    plan = make_plan(driven, time_limit=60)
    assert plan.fully_triangular and len(plan.blocks) == 6
    assert sum(b.basis.seconds for b in plan.blocks) < 60
    for k, b in enumerate(plan.blocks):
        names = {driven.coordinates[i].name for i in b.unknowns}
        assert names == {f"U{k + 1}.alpha", f"U{k + 1}.beta", f"P{k + 1}.displacement"}
        assert max(s.degree for s in b.steps) == 2
    T = sp.Symbol("t", real=True)
    f = {i: sp.lambdify(T, e) for i, e in driven.inputs.items()}
    q = driven.q0.copy()
    for t in np.linspace(0.0, 2.0, 41):
        for i, fi in f.items():
            q[i] = fi(t)
        q_tri = plan.solve(q, t)
        q_newton = driven.solve_newton(q, t, tol=1e-14)[0]
        assert np.abs(driven.residual(q_tri, t)).max() <= 1e-12
        assert np.abs(q_tri - q_newton).max() <= 1e-12
        q = q_tri
    # the leg-length branch is the physical one (segments towards each other: L < 2)
    assert np.all(q[18:] > 0) and np.all(q[18:] < 2.0)


def test_unsupported_loop_joint_is_a_clear_error():
    s = kinedyn.System("bad", dim=3)
    s.add_body("a", mass=1, inertia=[1, 1, 1], position=[0, 0, 0], points={"O": [0, 0, 0]},
               vectors={"z": [0, 0, 1]})
    s.add_point("ground", "O", [0, 0, 0])
    s.add_vector("ground", "z", [0, 0, 1])
    s.add_joint("f", "free", "ground", "a")
    with pytest.raises(ModelError, match="absolute coordinates"):
        spatial_coordinates(s.compile())


@pytest.mark.slow
def test_embedded_gough_stewart_agrees_with_projection_method():
    """Thesis run (leg forces +-0.1 sin(2 pi t / 3) N; no gravity): the embedded ODE in the
    platform pose with per-leg triangular legs against the natural-coordinate DAE."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.symbolic.embedded import EmbeddedDynamics
    model = kinedyn.models.gough_stewart(g=0.0).compile()
    t_end, h = 0.5, 1e-3
    ref = Dynamics(model, method="projection", integrator="rk4", solver="dense").simulate(t_end, h)
    emb = EmbeddedDynamics(model, absolute=["platform"], integrator="rk4")
    res = emb.simulate(t_end, h)
    assert res.channel("residual.position").max() <= 1e-12
    assert res.channel("iterations").max() == 0
    for a, b in (("x", "x"), ("y", "y"), ("z", "z"), ("phi", "yaw"), ("theta", "pitch"), ("psi", "roll")):
        r = ref.channel(f"body.platform.{b}")
        assert np.abs(res.channel(f"body.platform.{a}") - r).max() <= 1e-7 + 1e-6 * np.abs(r - r[0]).max(), a
    assert np.abs(res.channel("coordinate.platform.phi")[-1]) > 1e-3    # it does turn
    # per-leg Newton on the same generated code follows the same trajectory
    emb.position_solver, emb.mode, emb.tol = "blocks", 1, 1e-12
    res_b = emb.simulate(t_end, h)
    assert np.abs(res_b.channel("body.platform.phi") - res.channel("body.platform.phi")).max() < 1e-10
