"""The small in-place LU (kinedyn.linalg.small) against LAPACK through NumPy."""
import numpy as np
import pytest

from kinedyn.linalg.small import lu_factor, lu_solve


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
