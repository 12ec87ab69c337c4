"""Dynamic terms in natural coordinates against virtual work.

Along every virtual displacement ``dq`` the joints allow (null space of Phi_q), the compiled
generalised forces must do the work of the physical loads: ``Q . dq = sum F . dr + tau dtheta +
f ds``, with point displacements, joint angles and slides measured geometrically by finite
differences (the formulation's force kernels are not used on that side).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

from kinedyn.dynamics.evaluate import forces
from kinedyn.formulations.natural import Natural
from kinedyn.kinematics.analysis import assemble, constraint_jacobian

from .models import loaded_planar


def _point(f, name):
    return f.model.point_name.index(name)


def test_generalised_forces_do_the_virtual_work_of_every_load():
    f = Natural(loaded_planar().compile())
    m = f.model
    t = 0.37
    q = assemble(f, f.q0, t)
    J = constraint_jacobian(f, q, t).toarray()
    N = sla.null_space(J)
    assert N.shape[1] == 2
    qd = N @ np.array([0.7, -1.3])                   # a velocity the joints allow
    Q = forces(f, q, qd, t)
    P, PV = (a[0] for a in f.point_trajectory(q, qd))
    R = f.body_rotations(q)
    arm, slider = m.body_name.index("arm"), m.body_name.index("slider")
    sB, aB, aC, sA = (_point(f, n) for n in ("slider.B", "arm.B", "arm.C", "slider.A"))
    gP = _point(f, "ground.P")
    e = P[sB] - P[gP]
    L = np.linalg.norm(e)
    tension = 30 * (L - 0.3) + 2.5 * (e / L) @ (PV[sB] - PV[gP]) - 0.5 * np.sin(t)

    def geometry(x):
        Px, Rx, C = f.point_positions(x), f.body_rotations(x), f.com_positions(x)
        theta = np.arctan2(Rx[arm][1, 0], Rx[arm][0, 0])
        s = (Px[sA] - Px[aC]) @ Rx[arm][:, 0]
        return Px, C, np.linalg.norm(Px[sB] - Px[gP]), theta, s

    h = 1e-6
    for n in N.T:
        (Pp, Cp, Lp, thp, sp), (Pm, Cm, Lm, thm, sm) = geometry(q + h * n), geometry(q - h * n)
        dP, dC = (Pp - Pm) / (2 * h), (Cp - Cm) / (2 * h)
        work = sum(m.body_mass[b] * m.gravity @ dC[b] for b in (arm, slider))
        work += np.array([1.5 * np.cos(t), -2.0]) @ dP[sB]
        work += (R[arm] @ np.array([0.7, t])) @ dP[aB]
        work += -tension * (Lp - Lm) / (2 * h)
        work += (0.8 + 0.1 * t) * (thp - thm) / (2 * h)
        work += -1.1 * (sp - sm) / (2 * h)
        np.testing.assert_allclose(Q @ n, work, rtol=1e-7, atol=1e-8)


def test_mass_matrix_is_constant_and_gives_body_kinetic_energy():
    """M q_dd: the same constant matrix at every q; 1/2 qd M qd equals the bodies' 1/2 m v^2 +
    1/2 w.I w for a rigid velocity (2-D, from centre-of-mass and frame rates)."""
    from kinedyn.dynamics.evaluate import mass_values
    f = Natural(loaded_planar().compile())
    q = assemble(f, f.q0, 0.0)
    m0 = mass_values(f, q)
    np.testing.assert_array_equal(m0, mass_values(f, q + 0.3))
    N = sla.null_space(constraint_jacobian(f, q, 0.0).toarray())
    qd = N @ np.array([1.1, 0.4])
    h = 1e-6
    T = 0.0
    for b in range(1, f.model.n_body):
        vc = (f.com_positions(q + h * qd)[b] - f.com_positions(q - h * qd)[b]) / (2 * h)
        R1, R0 = f.body_rotations(q + h * qd)[b], f.body_rotations(q - h * qd)[b]
        w = (np.arctan2(R1[1, 0], R1[0, 0]) - np.arctan2(R0[1, 0], R0[0, 0])) / (2 * h)
        T += 0.5 * f.model.body_mass[b] * vc @ vc + 0.5 * f.model.body_inertia[b] * w * w
    assert f.kinetic_energy(qd) == pytest.approx(T, rel=1e-8)
