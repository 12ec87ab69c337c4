"""Small dense LU with partial pivoting, in place and allocation-free, for compiled kernels.

For the few-unknown systems that are solved many times per step (a 6 x 6 platform Jacobian,
the dense augmented matrix of a small relative-coordinate model), where a LAPACK call through
a wrapper costs more than the arithmetic. The factors overwrite ``A`` (unit lower L below the
diagonal, U on and above it) and ``piv[k]`` records the row swapped with row k (LAPACK's
convention), so :func:`lu_solve` can be called for any number of right-hand sides.
"""
from __future__ import annotations

import numba as nb


@nb.njit(cache=True, nogil=True)
def lu_factor(A, n, piv, tol=0.0):
    """Factorise the leading n x n block of ``A`` in place; False when a pivot column has no
    entry larger than ``tol`` in magnitude (singular to that tolerance)."""
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                p = i
        piv[k] = p
        if big <= tol:
            return False
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
            l = A[i, k]
            if l != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= l * A[k, j]
    return True


@nb.njit(cache=True, nogil=True)
def lu_solve(A, n, piv, b):
    """Overwrite ``b`` with the solution of A x = b from the factors of :func:`lu_factor`."""
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= A[i, k] * b[k]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= A[i, k] * b[k]
        b[i] = s / A[i, i]
