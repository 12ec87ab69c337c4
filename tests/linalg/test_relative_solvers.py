"""Every solver of eqs. (3)/(5)/(6) gives the same accelerations and multipliers (1e-10);
the DBBD Cholesky of Fig. 7 reports FAILED on a non-positive-definite matrix."""
from __future__ import annotations

import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics.relative import RelativeDynamics
from kinedyn.errors import SolverError
from kinedyn.formulations.relative import Relative
from kinedyn.linalg import relative as LR

MODELS = ["four-bar", "slider-crank-driven", "quadruped", "vehicle"]


def _formulation(name, numbering):
    return Relative(kinedyn.models.get(name).compile(), numbering)


def _reference(f, q, qd, t):
    a, B = f.mass(q), f.phi_q(q, t)
    n, m = f.n_q, f.n_c
    K = np.block([[a, B.T], [B, np.zeros((m, m))]])
    z = np.linalg.solve(K, np.concatenate([f.forces(q, qd, t), f.gamma(q, qd, t)]))
    return z[:n], z[n:]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("numbering", ["branch", "tree", "rcm"])
def test_all_solvers_agree(name, numbering):
    f = _formulation(name, numbering)
    rng = np.random.default_rng(5)
    q = f.q0 + 0.05 * rng.standard_normal(f.n_q)
    qd = 0.5 * rng.standard_normal(f.n_q)
    qdd_ref, lam_ref = _reference(f, q, qd, 0.1)
    for solver in LR.SOLVERS[:4]:
        dyn = RelativeDynamics(f, solver=solver)
        qdd, lam = dyn.accelerations(q, qd, 0.1)
        scale = max(1.0, np.abs(qdd_ref).max())
        assert np.allclose(qdd, qdd_ref, rtol=0, atol=1e-10 * scale), solver
        assert np.allclose(lam, lam_ref, rtol=0, atol=1e-10 * max([1.0, *np.abs(lam_ref)]))
    a_vals = sps_values(f, q)
    qdd, lam = LR.solve_splu(f, a_vals, f.phi_q(q, 0.1)[f.jacobian_pattern.nonzero()],
                             np.arange(f.n_c), f.forces(q, qd, 0.1), f.gamma(q, qd, 0.1))
    assert np.allclose(qdd, qdd_ref, rtol=0, atol=1e-10 * max(1.0, np.abs(qdd_ref).max()))


def sps_values(f, q):
    a = f.mass(q)
    return a[f.mass_pattern.nonzero()]


def test_branch_numbering_dbbd_has_no_fill():
    f = _formulation("vehicle", "branch")
    pattern = f.mass_pattern.toarray() != 0
    perm = np.argsort(f.coord)[::-1]
    _, _, nnz_l = LR.dbbd_structure(pattern, perm)
    assert nnz_l == (pattern.sum() + f.n_q) // 2   # lower triangle of a: no fill-in


def test_dbbd_reports_failed_on_indefinite_matrix():
    f = _formulation("four-bar", "branch")
    solver, work = LR.analyse("dbbd", f)
    a = -np.eye(f.n_q)
    vals = a[f.mass_pattern.nonzero()]
    st = LR.solve_accelerations(solver, work, vals, np.zeros(len(f.data.jac_indices)),
                                np.zeros(f.n_q), np.zeros(f.n_c), np.zeros(f.n_q),
                                np.zeros(f.n_c))
    assert st == LR.NOT_SPD
    with pytest.raises(SolverError, match="FAILED.*not positive definite"):
        LR.check(st, work, f)


def test_block_elimination_matches_schur_complement_on_root():
    """Eq. (10): after eliminating the leaves, the root block holds A11 - sum A1i Aii^-1 Ai1."""
    f = _formulation("vehicle", "branch")
    q = f.q0.copy()
    a = f.mass(q)
    solver, work = LR.analyse("block", f)
    LR._factor_a(solver, work, a[f.mass_pattern.nonzero()])
    root = [int(f.coord[k]) for k in range(6)]     # chassis links come first
    rest = [i for i in range(f.n_q) if i not in root]
    schur = a[np.ix_(root, root)] - a[np.ix_(root, rest)] @ np.linalg.solve(
        a[np.ix_(rest, rest)], a[np.ix_(rest, root)])
    L = np.tril(work.A[np.ix_(root, root)])
    assert np.allclose(L @ L.T, schur, atol=1e-10 * np.abs(schur).max())
