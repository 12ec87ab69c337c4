"""Sparse Cholesky with a fixed pattern (minimum-degree order) against NumPy."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

from kinedyn.linalg import cholesky as C


def random_spd(n, density, seed):
    rng = np.random.default_rng(seed)
    B = sps.random(n, n, density=density, random_state=rng, format="csr")
    A = (B @ B.T + sps.identity(n) * 0.5).toarray()
    return A


def factor(A, ch):
    lx = np.zeros(len(ch.row_idx))
    for i, j in zip(*np.nonzero(np.tril(A))):
        lx[ch.position(i, j)] = A[i, j]
    w = np.zeros(ch.n)
    st = C.factorize(ch.col_ptr, ch.row_idx, ch.rl_ptr, ch.rl_pos, ch.rl_col, ch.tail,
                     ch.pivot_tol, lx, w)
    return st, lx, w


@pytest.mark.parametrize("n,density,seed", [(1, 1.0, 0), (6, 0.4, 1), (60, 0.04, 2),
                                            (150, 0.01, 3), (12, 1.0, 5)])
def test_solution_matches_numpy(n, density, seed):
    A = random_spd(n, density, seed)
    edges = [(i, j) for i, j in zip(*np.nonzero(A)) if i < j]
    ch = C.analyse(n, edges)
    st, lx, w = factor(A, ch)
    assert st == 0
    assert not w.any()  # scratch left clean for the next factorisation
    b = np.random.default_rng(seed).normal(size=n)
    x = b.copy()
    C.solve(ch.perm, ch.col_ptr, ch.row_idx, ch.tail, lx, np.zeros(n), x)
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)
    if density == 1.0:
        assert ch.tail == 0  # a dense matrix is all dense tail
    # the factor is L of P A P^T
    L = sps.csc_matrix((lx, ch.row_idx, ch.col_ptr), shape=(n, n)).toarray()
    P = A[np.ix_(ch.perm, ch.perm)]
    np.testing.assert_allclose(L @ L.T, P, atol=1e-12 * np.abs(A).max())


def test_minimum_degree_avoids_fill_on_an_arrow():
    """An arrow matrix (row 0 full) has no fill when the hub is eliminated last."""
    n = 30
    edges = [(0, k) for k in range(1, n)]
    ch = C.analyse(n, edges)
    assert ch.perm[-1] == 0 or ch.perm[-2] == 0
    assert len(ch.row_idx) <= n + (n - 1) + 1


def test_rank_loss_is_reported():
    rng = np.random.default_rng(4)
    J = rng.normal(size=(4, 7))
    J[3] = J[0] - 2.0 * J[1]  # dependent row
    S = J @ J.T
    ch = C.analyse(4, [(i, j) for i in range(4) for j in range(i + 1, 4)])
    st, _, w = factor(S, ch)
    assert st == C.SINGULAR
    assert not w.any()
