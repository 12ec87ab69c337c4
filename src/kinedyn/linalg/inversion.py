"""Small dense inverses of the HDCA paper, section 3: the adjugate (2 x 2) and LDUP inversion.

* :func:`inverse_2x2` - eq. 53, ``A^-1 = adj(A) / det(A)``; used for the 2 x 2 matrices ``C`` of
  the assembly (eq. 33) and ``D^T xi_11 D`` of the open-chain base connection (eq. 40).
* :func:`ldup_inverse` - eqs. 54-82: Gaussian elimination with partial pivoting, ``P A = L D U``
  (eqs. 60-74), ``D^-1`` (75-76), ``U = D^-1 A_(n-1)`` (77), both unit-triangular inverses by the
  diagonal-wise recurrence (78-79), ``B = U^-1 D^-1`` (80), ``Y = B L^-1`` (81) and the column
  permutation ``A^-1 = Y P`` (82). Used for the 4 x 4 matrix ``eta`` of a closed loop (eq. 43).

Every floating-point operation of the LDUP kernel goes through three primitives (``_mul``,
``_add``, ``_inv``; a subtraction is an addition of a negated operand, as on the paper's FPGA).
The compiled kernel and :func:`count_ldup_operations`, an instrumented pure-Python twin, are
built from the *same* source by :func:`_make_ldup` with different primitives, so the counting
test (section 4.4, eqs. 86-92: ``(n-1) n (n+1)`` multiplications, ``(n-1)^2 n`` additions and
``n`` inversions) checks the kernel that runs.

All kernels are generic in the floating type (float64 or float32 arrays) and allocation-free:
the caller passes the output and a workspace from :func:`ldup_workspace`.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .._jit import INLINED_WORKER

#: Status codes: 0 = ok, 1 = singular (zero pivot or determinant).
OK, SINGULAR = 0, 1


@nb.njit(**INLINED_WORKER)
def inverse_2x2(a, out) -> int:
    """``out = a^-1`` for a 2 x 2 ``a`` by the adjugate method (eq. 53); status 1 if singular.

    Cost: 1 inversion (of the determinant), 6 multiplications, 1 addition.
    """
    det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    if det == 0.0:
        return SINGULAR
    r = 1.0 / det
    a00 = a[0, 0]
    out[0, 0] = a[1, 1] * r
    out[1, 1] = a00 * r
    out[0, 1] = -a[0, 1] * r
    out[1, 0] = -a[1, 0] * r
    return OK


def ldup_workspace(n: int, dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Scratch for :func:`ldup_inverse`: ``(4, n, n)`` floats (A_k, L, L^-1, U^-1 / B) and
    ``(n,)`` pivots."""
    return np.zeros((4, n, n), dtype), np.zeros(n, np.int64)


def _make_ldup(mul, add, inv):
    """The LDUP inverse written against the primitives ``mul(a, b)``, ``add(a, b)``, ``inv(a)``."""

    def ldup_inverse(a, out, work, piv):
        n = a.shape[0]
        A = work[0]   # A_k (eq. 68); its diagonal holds the pivots, its strict upper part U
        L = work[1]   # unit lower L (eq. 69), multipliers below the diagonal
        Li = work[2]  # L^-1 (eq. 78)
        B = work[3]   # U^-1 (eqs. 78-79), then B = U^-1 D^-1 (eq. 80)
        for i in range(n):
            piv[i] = i
            for j in range(n):
                A[i, j] = a[i, j]
                L[i, j] = 0.0
                Li[i, j] = 0.0
                B[i, j] = 0.0
        c = out[0]  # the pivots' inverses c_k (eqs. 62, 75) live in out's first row until (81)
        # -- Gaussian elimination with partial pivoting, eqs. 60-74 --------------------------
        for k in range(n - 1):
            p = k
            big = abs(A[k, k])
            for i in range(k + 1, n):  # eq. 60 (a multiplexer on the FPGA: no arithmetic)
                if abs(A[i, k]) > big:
                    big = abs(A[i, k])
                    p = i
            if big == 0.0:
                return SINGULAR
            if p != k:  # eq. 61 on A, eq. 69 on the multipliers found so far
                for j in range(n):
                    A[k, j], A[p, j] = A[p, j], A[k, j]
                for j in range(k):
                    L[k, j], L[p, j] = L[p, j], L[k, j]
                piv[k], piv[p] = piv[p], piv[k]
            c[k] = inv(A[k, k])  # eq. 62
            for i in range(k + 1, n):
                m = mul(c[k], A[i, k])  # eq. 66: one multiplication per sub-diagonal entry
                L[i, k] = m
                A[i, k] = 0.0
                for j in range(k + 1, n):  # eq. 68: (n-k)^2 multiply-adds
                    A[i, j] = add(A[i, j], -mul(m, A[k, j]))
        if A[n - 1, n - 1] == 0.0:
            return SINGULAR
        c[n - 1] = inv(A[n - 1, n - 1])  # eq. 75
        # -- U = D^-1 A_(n-1), eq. 77 (unit diagonal implied) ---------------------------------
        for i in range(n):
            for j in range(i + 1, n):
                A[i, j] = mul(c[i], A[i, j])
        # -- unit-triangular inverses, eq. 78 (L) and 79 (U, by transposition) ---------------
        for i in range(n):
            Li[i, i] = 1.0
            B[i, i] = 1.0
        for d in range(1, n):  # diagonal alpha = d below (L) / above (U) the main one
            for j in range(n - d):
                i = j + d
                sl = -L[i, j]
                su = -A[j, i]
                for k in range(j + 1, i):
                    sl = add(sl, -mul(Li[i, k], L[k, j]))
                    su = add(su, -mul(B[k, i], A[j, k]))
                Li[i, j] = sl
                B[j, i] = su
        # -- B = U^-1 D^-1, eq. 80 (diagonal b_ii = c_i) --------------------------------------
        for j in range(n):
            for i in range(j):
                B[i, j] = mul(B[i, j], c[j])
            B[j, j] = c[j]
        # -- Y = B L^-1 (eq. 81) and the column permutation A^-1 = Y P (eq. 82) ---------------
        for i in range(n):
            for j in range(n):
                k0 = i if i > j else j
                if k0 == j:  # l^_jj = 1: the first term is b_ij itself
                    s = B[i, j]
                    k0 += 1
                else:
                    s = mul(B[i, k0], Li[k0, j])
                    k0 += 1
                for k in range(k0, n):
                    s = add(s, mul(B[i, k], Li[k, j]))
                L[i, j] = s  # L is free now: it holds Y
        for i in range(n):
            for j in range(n):
                out[i, piv[j]] = L[i, j]
        return OK

    return ldup_inverse


@nb.njit(inline="always")
def _mul(a, b):
    return a * b


@nb.njit(inline="always")
def _add(a, b):
    return a + b


@nb.njit(inline="always")
def _inv(a):
    return 1.0 / a


ldup_inverse = nb.njit(**INLINED_WORKER)(_make_ldup(_mul, _add, _inv))
ldup_inverse.__doc__ = """``out = a^-1`` (n x n) by LDUP factorisation and inversion, eqs. 54-82.

``work, piv`` from :func:`ldup_workspace`. Returns 0, or 1 when a pivot is exactly zero.
``a`` is not modified; ``out`` must not alias ``a``."""


class _Counter:
    """Counts the primitives called by the pure-Python twin of the kernel."""

    def __init__(self):
        self.mul = self.add = self.inv = 0

    def primitives(self):
        def mul(a, b):
            self.mul += 1
            return a * b

        def add(a, b):
            self.add += 1
            return a + b

        def inv(a):
            self.inv += 1
            return 1.0 / a
        return mul, add, inv


def count_ldup_operations(a: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """Run the LDUP inverse of ``a`` in pure Python with counting primitives.

    Returns the inverse and ``{"mul": .., "add": .., "inv": ..}`` (section 4.4's counts).
    """
    a = np.asarray(a, float)
    n = a.shape[0]
    counter = _Counter()
    kernel = _make_ldup(*counter.primitives())
    out = np.zeros((n, n))
    work, piv = ldup_workspace(n)
    if kernel(a, out, work, piv) != OK:
        raise np.linalg.LinAlgError("LDUP: zero pivot")
    return out, {"mul": counter.mul, "add": counter.add, "inv": counter.inv}


def paper_operation_counts(n: int) -> dict[str, int]:
    """Section 4.4's totals for an n x n inverse: ``(n-1) n (n+1)`` multiplications,
    ``(n-1)^2 n`` additions, ``n`` inversions (eqs. 86-92)."""
    return {"mul": (n - 1) * n * (n + 1), "add": (n - 1) ** 2 * n, "inv": n}
