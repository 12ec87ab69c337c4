"""Small dense LU with partial pivoting and Cholesky, in place and allocation-free, for compiled
kernels.

For the few-unknown systems that are solved many times per step (a 6 x 6 platform Jacobian,
the dense augmented matrix of a small relative-coordinate model), where a LAPACK call through
a wrapper costs more than the arithmetic. The factors overwrite ``A`` (unit lower L below the
diagonal, U on and above it) and ``piv[k]`` records the row swapped with row k (LAPACK's
convention), so :func:`lu_solve` can be called for any number of right-hand sides.
:func:`cholesky_factor` / :func:`cholesky_solve` do the same for symmetric positive definite
matrices (the Schur complement of a small natural-coordinate model, the reduced-multiplier and
mass matrices of a small relative-coordinate model).
"""

from __future__ import annotations

import math

import numba as nb

from .._jit import INLINED_WORKER


@nb.njit(**INLINED_WORKER)
def lu_factor(A, n, piv, tol=0.0):
    """Factorise the leading n x n block of ``A`` in place; False when a pivot column has no
    entry larger than ``tol`` in magnitude (singular to that tolerance)."""
    return lu_factor_block(A, 0, n, piv, tol)


@nb.njit(**INLINED_WORKER)
def lu_factor_block(A, s0, s1, piv, tol=0.0):
    """Factorise the diagonal block ``A[s0:s1, s0:s1]`` in place (rows swapped within the
    block; ``piv[k]``, k in [s0, s1), is the row of ``A`` swapped with row k); False when a
    pivot column has no entry larger than ``tol`` in magnitude. Serves :func:`lu_factor` and the
    block-by-block factorisations of the generated symbolic kernels (Phi_d per loop or leg)."""
    for k in range(s0, s1):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, s1):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                p = i
        piv[k] = p
        if big <= tol:
            return False
        if p != k:
            for j in range(s0, s1):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        inv = 1.0 / A[k, k]
        for i in range(k + 1, s1):
            A[i, k] *= inv
            l = A[i, k]
            if l != 0.0:
                for j in range(k + 1, s1):
                    A[i, j] -= l * A[k, j]
    return True


@nb.njit(**INLINED_WORKER)
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


@nb.njit(**INLINED_WORKER)
def cholesky_factor(A, n):
    """Cholesky factor L (A = L L^T) of the leading n x n block of the symmetric ``A`` in its
    lower triangle, in place (the upper triangle is not read); -1, or the first row whose pivot
    is not positive (``A`` not positive definite)."""
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= A[j, k] * A[j, k]
        if not d > 0.0:
            return j
        d = math.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, n):
            v = A[i, j]
            for k in range(j):
                v -= A[i, k] * A[j, k]
            A[i, j] = v / d
    return -1


@nb.njit(cache=True, nogil=True, inline="always")
def cholesky_solve(L, n, b):
    """Overwrite ``b[:n]`` with the solution of L L^T x = b, L the lower triangle of ``L``
    (:func:`cholesky_factor`); inlined into its callers, where it runs a few times per step."""
    for i in range(n):
        v = b[i]
        for k in range(i):
            v -= L[i, k] * b[k]
        b[i] = v / L[i, i]
    for i in range(n - 1, -1, -1):
        v = b[i]
        for k in range(i + 1, n):
            v -= L[k, i] * b[k]
        b[i] = v / L[i, i]
