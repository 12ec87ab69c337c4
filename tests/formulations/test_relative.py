"""Relative joint coordinates: CRBA vs inverse dynamics, finite differences of B and gamma,
agreement with natural coordinates on observables (sparse-relative paper, eqs. 1-4)."""
from __future__ import annotations

import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import ModelError
from kinedyn.dynamics.reactions import reactions
from kinedyn.formulations.relative import Relative
from kinedyn.kinematics.assembly import assemble
from kinedyn.models.planar import G

from .relative_models import spatial_loop

PLANAR = ["double-pendulum", "four-bar", "four-bar-driven", "slider-crank", "slider-crank-driven"]


def formulation(name, numbering="branch"):
    if name == "spatial-loop":
        return Relative(spatial_loop().compile(), numbering)
    return Relative(kinedyn.models.get(name).compile(), numbering)


def _state(f, seed):
    rng = np.random.default_rng(seed)
    return f.q0 + 0.3 * rng.standard_normal(f.n_q), rng.standard_normal(f.n_q)


@pytest.mark.parametrize("name", PLANAR + ["spatial-loop"])
@pytest.mark.parametrize("numbering", ["branch", "rcm"])
def test_crba_equals_unit_acceleration_inverse_dynamics(name, numbering):
    f = formulation(name, numbering)
    q, qd = _state(f, 1)
    M = f.mass(q)
    tau0 = f.inverse_dynamics(q, qd, np.zeros(f.n_q), 0.2)
    cols = np.column_stack([f.inverse_dynamics(q, qd, e, 0.2) - tau0 for e in np.eye(f.n_q)])
    assert np.allclose(M, M.T, atol=1e-13)
    assert np.allclose(M, cols, atol=1e-12 * max(1, np.abs(M).max()))
    assert np.all(np.linalg.eigvalsh(M) > 0)
    # Q = f - b qd is minus the inverse dynamics at zero acceleration
    assert np.allclose(f.forces(q, qd, 0.2), -tau0, atol=1e-12)
    # pattern: a_ij = 0 unless one coordinate lies below the other
    assert np.all(np.abs(M[f.mass_pattern.toarray() == 0]) == 0)


def test_mass_matrix_double_pendulum_closed_form():
    f = formulation("double-pendulum")
    q = np.array([0.3, 0.7])
    # uniform rods m = l = 1: a11 = 5/3 + cos q2, a12 = 1/3 + cos(q2)/2, a22 = 1/3
    c = np.cos(q[1])
    assert np.allclose(f.mass(q), [[5 / 3 + c, 1 / 3 + c / 2], [1 / 3 + c / 2, 1 / 3]],
                       atol=1e-14)


def test_kinetic_energy_is_half_qd_a_qd():
    f = formulation("spatial-loop")
    q, qd = _state(f, 2)
    E = f.energies(q[None], qd[None])
    assert np.isclose(E["kinetic"][0], 0.5 * qd @ f.mass(q) @ qd, rtol=1e-12)


@pytest.mark.parametrize("name", PLANAR + ["spatial-loop"])
def test_jacobian_and_gamma_by_finite_differences(name):
    f = formulation(name)
    q, qd = _state(f, 3)
    t, h = 0.37, 1e-6
    B = f.phi_q(q, t)
    fd = np.column_stack([(f.phi(q + h * e, t) - f.phi(q - h * e, t)) / (2 * h)
                          for e in np.eye(f.n_q)])
    assert np.allclose(B, fd, atol=1e-8)
    assert np.allclose(f.phi_t(q, t), (f.phi(q, t + h) - f.phi(q, t - h)) / (2 * h), atol=1e-8)

    def rate(s):  # phi' along the motion q + s qd at time t + s
        return f.phi_q(q + s * qd, t + s) @ qd + f.phi_t(q + s * qd, t + s)
    gamma_fd = -(rate(h) - rate(-h)) / (2 * h)
    assert np.allclose(f.gamma(q, qd, t), gamma_fd, atol=1e-6)


def test_pattern_covers_jacobian():
    f = formulation("spatial-loop")
    q, _ = _state(f, 4)
    B = f.phi_q(q)
    assert np.all(B[f.jacobian_pattern.toarray() == 0] == 0)


def _natural_vs_relative(name, model, t_end=1.0):
    nat = Dynamics(model, method="projection", integrator="rk4", solver="dense")
    from kinedyn.formulations.natural import Natural
    fn = nat.f
    assert isinstance(fn, Natural)
    rel = Relative(model)
    q_nat = nat.q_initial
    R = fn.body_rotations(q_nat)
    p = fn.body_positions(q_nat)
    q_rel = rel.coordinates_from_poses(R, p)
    dyn = Dynamics(rel, method="projection", integrator="rk4", solver="dense", q0=q_rel)
    rn = nat.simulate(t_end, 1e-3, record_every=50)
    rr = dyn.simulate(t_end, 1e-3, record_every=50)
    return rn, rr


@pytest.mark.parametrize("name", ["double-pendulum", "four-bar", "slider-crank",
                                  "four-bar-driven", "spatial-loop"])
def test_relative_and_natural_agree_on_observables(name):
    model = spatial_loop().compile() if name == "spatial-loop" else \
        kinedyn.models.get(name).compile()
    rn, rr = _natural_vs_relative(name, model)
    cn, cr = rn.channels, rr.channels
    keys = [k for k in cn if k.startswith("point.") and not k.endswith("_dd")]
    assert len(keys) >= 3 * model.n_point
    scale = max(1.0, max(np.abs(cn[k]).max() for k in keys))
    for k in keys:
        assert np.allclose(cn[k], cr[k], atol=1e-6 * scale), k
    acc = [k for k in cn if k.startswith("point.") and k.endswith("_dd")]
    for k in acc:
        assert np.allclose(cn[k], cr[k], atol=1e-5 * max(1.0, np.abs(cn[k]).max())), k
    for e in ("kinetic", "gravity", "total"):
        assert np.allclose(cn[f"energy.{e}"], cr[f"energy.{e}"],
                           atol=1e-7 * max(1.0, np.abs(cn["energy.kinetic"]).max())), e
    if not model.n_driver:  # free motion conserves energy
        assert rr.summary["energy"]["max_relative_drift"] < 1e-6
    _reactions_agree(rn.reactions(), rr.reactions())


def _reactions_agree(nat, rel):
    """Natural: least-squares Newton-Euler of every body; relative: multipliers at the cut
    joints and the backward pass over the tree. Same channels, per-quantity tolerances."""
    keys = sorted(k for k in nat if k.startswith(("reaction.", "effort.")))
    assert keys == sorted(k for k in rel if k.startswith(("reaction.", "effort.")))
    force = max(1.0, max(np.abs(nat[k]).max() for k in keys if ".force_" in k))
    torque = max(0.1 * force, max((np.abs(nat[k]).max() for k in keys if ".force_" not in k),
                                  default=0.0))
    assert np.abs(rel["residual.newton_euler"]).max() < 1e-9 * force
    for k in keys:
        scale = force if ".force_" in k else torque
        assert np.allclose(rel[k], nat[k], rtol=0, atol=2e-6 * scale), \
            (k, np.abs(rel[k] - nat[k]).max(), scale)


def test_cut_driver_is_a_clear_error():
    s = kinedyn.models.get("four-bar")
    s.add_driver("drive_C", "joint", joint="C", function="t")
    with pytest.raises(ModelError, match="drive_C.*cut"):
        Relative(s.compile())


@pytest.mark.parametrize("theta", [0.4, 1.2, 2.5])
def test_relative_reactions_in_static_equilibrium(theta):
    """A four-bar held at rest by its crank motor: the ground pivots carry the three links'
    weight, the free pivots transmit no torque, and the motor torque (the driver's multiplier,
    equal to the crank joint's reaction torque) is dV/d(crank angle) by virtual work."""
    def held(angle):
        f = Relative(kinedyn.models.four_bar(speed=0.0, crank_angle=angle, g=G).compile())
        return f, assemble(f, f.q0, 0.0, 1e-13)
    f, q = held(theta)
    zero = np.zeros((1, f.n_q))
    out, residual = reactions(f, np.zeros(1), q[None], zero, zero)
    assert residual[0] < 1e-10
    assert np.isclose(out["reaction.A.force_y"][0] + out["reaction.D.force_y"][0], 3 * G,
                      rtol=1e-12)
    assert abs(out["reaction.A.force_x"][0] + out["reaction.D.force_x"][0]) < 1e-11
    for j in "BCD":
        assert abs(out[f"reaction.{j}.torque_z"][0]) < 1e-11, j
    assert np.isclose(out["reaction.A.torque_z"][0], out["effort.crank_drive"][0], rtol=1e-12)
    h = 1e-5
    V = []
    for s in (h, -h):
        g, qs = held(theta + s)
        V.append(g.energies(qs[None], zero)["gravity"][0])
    assert np.isclose(out["effort.crank_drive"][0], (V[0] - V[1]) / (2 * h), rtol=1e-6)
