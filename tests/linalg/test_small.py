"""The small in-place LU and Cholesky (kinedyn.linalg.small) against LAPACK through NumPy."""
import numpy as np
import pytest

from kinedyn.linalg.small import cholesky_factor, cholesky_solve, lu_factor, lu_solve


@pytest.mark.parametrize("n", [1, 2, 6, 13])
def test_solves_like_lapack_with_several_right_hand_sides(n):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    if n > 1:
        A[0, 0] = 0.0                  # forces a row exchange at the first pivot
    B = rng.standard_normal((n, 3))
    F, piv = A.copy(), np.empty(n, np.int64)
    assert lu_factor(F, n, piv)
    for j in range(3):
        x = B[:, j].copy()
        lu_solve(F, n, piv, x)
        np.testing.assert_allclose(x, np.linalg.solve(A, B[:, j]), rtol=1e-10, atol=1e-12)


def test_factors_reproduce_the_permuted_matrix():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((5, 5))
    F, piv = A.copy(), np.empty(5, np.int64)
    assert lu_factor(F, 5, piv)
    L, U = np.tril(F, -1) + np.eye(5), np.triu(F)
    PA = A.copy()
    for k in range(5):
        PA[[k, piv[k]]] = PA[[piv[k], k]]
    np.testing.assert_allclose(L @ U, PA, atol=1e-13)


def test_leading_block_only_and_singular_detection():
    A = np.full((4, 4), 99.0)
    A[:3, :3] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]]   # rank 2
    piv = np.empty(4, np.int64)
    assert not lu_factor(A.copy(), 3, piv)
    assert not lu_factor(np.diag([1.0, 1e-15]), 2, piv[:2], 1e-14)
    assert lu_factor(np.diag([1.0, 1e-15]), 2, piv[:2])     # tol 0: only exact zeros fail


@pytest.mark.parametrize("n", [1, 2, 6, 13])
def test_cholesky_factor_and_solve_like_lapack(n):
    rng = np.random.default_rng(10 + n)
    G = rng.standard_normal((n, n))
    A = G @ G.T + n * np.eye(n)                      # symmetric positive definite
    F = np.full((n + 2, n + 2), np.nan)              # only the leading block is read
    F[:n, :n] = np.triu(np.full((n, n), np.nan), 1) + np.tril(A)   # upper triangle not read
    assert cholesky_factor(F, n) == -1
    np.testing.assert_allclose(np.tril(F[:n, :n]), np.linalg.cholesky(A), rtol=1e-12, atol=1e-13)
    b = rng.standard_normal(n + 1)
    x = b.copy()
    cholesky_solve(F, n, x)
    np.testing.assert_allclose(x[:n], np.linalg.solve(A, b[:n]), rtol=1e-10, atol=1e-12)
    assert x[n] == b[n]                              # beyond n untouched


def test_cholesky_names_the_first_non_positive_pivot():
    A = np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])   # rank-deficient 2x2 block
    assert cholesky_factor(A.copy(), 3) == 1
    assert cholesky_factor(-np.eye(2), 2) == 0
    assert cholesky_factor(np.array([[np.nan]]), 1) == 0
