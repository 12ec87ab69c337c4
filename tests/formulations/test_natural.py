"""Natural coordinates: every kernel against its NumPy reference and against finite differences,
the mass matrix against body kinetic energy, generalised forces against virtual work and the
potential energy."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

from kinedyn.formulations.natural import Natural
from kinedyn.formulations.natural.kernels import (natural_forces, natural_gamma, natural_phi,
                                                  natural_phi_q, natural_phi_t)
from kinedyn.models import MODELS, get

from .catalog import all_kinds_planar, all_kinds_spatial

MODEL_NAMES = list(MODELS)
BUILDERS = {**{n: (lambda n=n: get(n)) for n in MODEL_NAMES},
            "all-kinds-3d": all_kinds_spatial, "all-kinds-2d": all_kinds_planar}


@pytest.fixture(scope="module", params=list(BUILDERS))
def case(request):
    f = Natural(BUILDERS[request.param]().compile())
    rng = np.random.default_rng(abs(hash(request.param)) % 2**32)
    q = f.q0 + 0.05 * rng.standard_normal(f.n_q)
    qd = rng.standard_normal(f.n_q)
    return f, q, qd, 0.37


def compiled(f, q, qd, t):
    D, w = f.data, f.make_work()
    rows = np.arange(f.n_c)
    phi, pt, gam = np.zeros(f.n_c), np.zeros(f.n_c), np.zeros(f.n_c)
    vals = np.zeros(len(D.jac_indices))
    Q = np.zeros(f.n_q)
    natural_phi(D, w, q, t, rows, phi)
    natural_phi_q(D, w, q, t, rows, vals)
    natural_phi_t(D, w, q, t, rows, pt)
    natural_gamma(D, w, q, qd, t, rows, gam)
    natural_forces(D, w, q, qd, t, Q)
    J = sps.csr_matrix((vals, D.jac_indices, D.jac_indptr), shape=(f.n_c, f.n_q)).toarray()
    return phi, J, pt, gam, Q


def test_compiled_matches_reference(case):
    f, q, qd, t = case
    phi, J, pt, gam, Q = compiled(f, q, qd, t)
    np.testing.assert_allclose(phi, f.reference_phi(q, t), atol=1e-14)
    np.testing.assert_allclose(J, f.reference_phi_q(q, t), atol=1e-13)
    np.testing.assert_allclose(pt, f.reference_phi_t(q, t), atol=1e-13)
    np.testing.assert_allclose(gam, f.reference_gamma(q, qd, t), atol=1e-12)
    np.testing.assert_allclose(Q, f.reference_forces(q, qd, t), atol=1e-11)


@pytest.mark.parametrize("listed", [False, True], ids=["row array", "row set"])
def test_compiled_subset_of_rows(case, listed):
    """Evaluating a subset of rows (a structural group) gives those rows of the full result,
    to the bit, whether the rows come as an array (entities looked up per row) or as a
    ``RowSet`` (its entities computed in one loop)."""
    f, q, qd, t = case
    phi_all, J_all, pt_all, gam_all, _ = compiled(f, q, qd, t)
    rows = np.arange(f.n_c)[::3].copy()
    select = f.row_selection(rows) if listed else rows
    if listed:
        ents = f.data.con_ent[rows]
        assert set(select.ents) == set(ents[ents >= 0].tolist())
    D, w = f.data, f.make_work()
    phi, pt, gam = np.zeros(len(rows)), np.zeros(len(rows)), np.zeros(len(rows))
    vals = np.zeros(len(D.jac_indices))
    natural_phi(D, w, q, t, select, phi)
    natural_phi_q(D, w, q, t, select, vals)
    natural_phi_t(D, w, q, t, select, pt)
    natural_gamma(D, w, q, qd, t, select, gam)
    J = sps.csr_matrix((vals, D.jac_indices, D.jac_indptr), shape=(f.n_c, f.n_q)).toarray()
    np.testing.assert_array_equal(phi, phi_all[rows])
    np.testing.assert_array_equal(J[rows], J_all[rows])
    np.testing.assert_array_equal(pt, pt_all[rows])
    np.testing.assert_array_equal(gam, gam_all[rows])


def test_jacobian_finite_differences(case):
    f, q, _, t = case
    h = 1e-6
    fd = np.column_stack([(f.reference_phi(q + h * e, t) - f.reference_phi(q - h * e, t)) / (2 * h)
                          for e in np.eye(f.n_q)])
    np.testing.assert_allclose(f.reference_phi_q(q, t), fd, atol=2e-8 * max(1, np.abs(fd).max()))


def test_phi_t_finite_differences(case):
    f, q, _, t = case
    h = 1e-6
    fd = (f.reference_phi(q, t + h) - f.reference_phi(q, t - h)) / (2 * h)
    np.testing.assert_allclose(f.reference_phi_t(q, t), fd, atol=1e-7)


def test_gamma_finite_differences(case):
    """gamma = -d/dt (phi_q qd + phi_t) along q(s) = q + s qd, t + s, with qdd = 0."""
    f, q, qd, t = case
    h = 1e-6

    def rate(s):
        return f.reference_phi_q(q + s * qd, t + s) @ qd + f.reference_phi_t(q + s * qd, t + s)
    fd = -(rate(h) - rate(-h)) / (2 * h)
    np.testing.assert_allclose(f.reference_gamma(q, qd, t), fd, atol=1e-6 * max(1, np.abs(fd).max()))


def test_jacobian_pattern_holds_every_nonzero(case):
    f, q, _, t = case
    J = f.reference_phi_q(q, t)
    pattern = f.jacobian_pattern.toarray() != 0
    assert not np.any((np.abs(J) > 0) & ~pattern)


def body_kinetic_energy(f, q, qd):
    """1/2 sum (m |v_c|^2 + w . I w) from body frames (independent of the mass matrix)."""
    m, d = f.model, f.dim
    ev, evd = f.entity_values(q), f.entity_values(qd, derivative=True)
    T = 0.0
    for b in range(1, m.n_body):
        vc = evd[f.com_entity[b]]
        R = np.column_stack([ev[a] for a in f.body_axes[b]])
        Rd = np.column_stack([evd[a] for a in f.body_axes[b]])
        W = R.T @ Rd  # body-frame angular velocity (skew)
        if d == 2:
            T += 0.5 * m.body_mass[b] * vc @ vc + 0.5 * m.body_inertia[b] * W[1, 0] ** 2
        else:
            w = np.array([W[2, 1], W[0, 2], W[1, 0]])
            T += 0.5 * m.body_mass[b] * vc @ vc + 0.5 * w @ m.body_inertia[b] @ w
    return T


def rigidity(f, q):
    """Residuals of d_i . d_j = D_i . D_j over every body frame (pose-driven bodies included)
    and their Jacobian by finite differences (independent of the formulation's equations)."""
    pairs = []
    for fr in f.layout.frames[1:]:
        D = fr.local_directions
        dirs = fr.directions if D.shape[1] == len(fr.directions) else fr.directions
        for i in range(len(dirs)):
            for j in range(i, len(dirs)):
                pairs.append((dirs[i], dirs[j], float(D[:, i] @ D[:, j])))

    def res(x):
        return np.array([a.value(x) @ b.value(x) - c for a, b, c in pairs])
    h = 1e-7
    J = np.column_stack([(res(q + h * e) - res(q - h * e)) / (2 * h) for e in np.eye(f.n_q)])
    return res(q), J


def test_mass_matrix_kinetic_energy(case):
    """For rigid motions of every body, qd^T M qd / 2 equals the bodies' kinetic energy computed
    from their centre-of-mass velocities and angular velocities (M is never used there)."""
    f, _, _, t = case
    q = f.q0.copy()
    for _ in range(20):  # Gauss-Newton onto rigid frames (orthonormal rotations)
        r, J = rigidity(f, q)
        q -= np.linalg.pinv(J) @ r
    r, J = rigidity(f, q)
    assert np.abs(r).max() < 1e-10
    qd = np.random.default_rng(3).standard_normal(f.n_q)
    qd -= np.linalg.pinv(J) @ (J @ qd)  # rigid body velocities
    assert f.kinetic_energy(qd) == pytest.approx(body_kinetic_energy(f, q, qd), rel=1e-8)


def test_conservative_forces_are_minus_potential_gradient():
    """Gravity and an undamped spring: Q = -dV/dq (virtual work), by finite differences."""
    import kinedyn as kd
    for dim in (2, 3):
        s = kd.System("cons", dim=dim, gravity=[0.3, -9.81] + ([1.2] if dim == 3 else []))
        z = [0] * (dim - 2)
        s.add_point("ground", "O", [0, 0] + z)
        s.add_body("b", mass=2.0, inertia=0.1 if dim == 2 else [0.1, 0.2, 0.3],
                   com=[0.3, 0.1] + z, position=[0.1, 0.2] + z,
                   points={"A": [0, 0] + z, "B": [0.6, 0] + z})
        s.add_joint("free", "free", "ground", "b")
        s.add_force("k", "spring", body_a="ground", point_a="O", body_b="b", point_b="B",
                    stiffness=40, free_length=0.3)
        f = Natural(s.compile())
        q = f.q0 + 0.1 * np.random.default_rng(dim).standard_normal(f.n_q)
        h = 1e-6
        grad = np.array([(f.potential_energy(q + h * e) - f.potential_energy(q - h * e)) / (2 * h)
                         for e in np.eye(f.n_q)])
        np.testing.assert_allclose(f.reference_forces(q, np.zeros(f.n_q)), -grad, atol=1e-6)


def test_paper_stewart_coordinates():
    """Terminal: point + three unit vectors (12); each handle-stick pair 15 coordinates."""
    f = Natural(get("stewart-paper").compile())
    assert f.n_q == 12 + 6 * 15
    assert f.n_c == f.n_q
