"""Diagnoses in words: redundant constraints, singular configurations, worst residuals."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
from scipy.sparse.csgraph import maximum_bipartite_matching
from scipy.sparse.linalg import splu

#: from this many rows on, :func:`independent_rows` first tries to show full row rank by a
#: sparse LU (:func:`full_row_rank`) before the dense QR
SPARSE_ROWS = 400
#: :func:`full_row_rank`: smallest LU pivot, relative to the largest, that counts as certainly
#: nonzero (far above the QR's rank tolerance 1e-9: LU pivots are no rank-revealing measure)
PIVOT_RATIO = 1e-6


def independent_rows(J, tol: float = 1e-9, sparse_from: int = SPARSE_ROWS
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Rows of J (dense or sparse) that are linearly independent (kept) and the redundant rest.

    QR with column pivoting of J^T orders the rows by how much new direction each adds; rows
    whose diagonal of R is below ``tol`` times the largest are linear combinations of the
    others (redundant constraints, e.g. the fifth bar of a parallelogram).

    The QR is dense, O(m² n): 92 s for the 8064 rows of scissor-platform-22x29, most of
    building its kinematic analysis. From ``sparse_from`` rows on, a sparse LU that shows
    every row independent (:func:`full_row_rank`, 0.01 s there) answers first; only a
    Jacobian it cannot clear (redundant constraints, a singular configuration) goes to the QR.
    """
    if J.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if J.shape[0] >= sparse_from and full_row_rank(J):
        return np.arange(J.shape[0], dtype=np.int64), np.zeros(0, np.int64)
    J = J.toarray() if sps.issparse(J) else np.asarray(J)
    _, R, piv = sla.qr((J / _row_scales(J)[:, None]).T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > tol * max(diag[0], 1e-300))) if diag.size else 0
    return np.sort(piv[:rank]).astype(np.int64), np.sort(piv[rank:]).astype(np.int64)


def full_row_rank(J, ratio: float = PIVOT_RATIO) -> bool:
    """True when the rows of J (m x n, dense or sparse) are shown independent: with the rows
    scaled as for the QR, a maximum matching of rows to columns in J's pattern picks m
    columns, and the sparse LU (partial pivoting) of those columns has no pivot below
    ``ratio`` times the largest. A nonsingular square part means full row rank. False means
    not shown (more rows than columns, no complete matching, a small pivot, or an exactly
    singular factor), not rank-deficient: the caller then decides by the QR."""
    J = sps.csr_matrix(J, dtype=float)
    m, n = J.shape
    if m > n:
        return False
    A = sps.diags(1.0 / _row_scales(J)) @ J
    A.eliminate_zeros()
    cols = maximum_bipartite_matching(A, perm_type="column")   # row i -> its column
    if (cols < 0).any():
        return False
    try:
        lu = splu(A[:, cols].tocsc(), permc_spec="COLAMD", diag_pivot_thresh=1.0)
    except RuntimeError:   # SuperLU: "Factor is exactly singular"
        return False
    pivots = np.abs(lu.U.diagonal())
    return bool(pivots.min() > ratio * pivots.max())


def _row_scales(J) -> np.ndarray:
    """Each row's largest |entry| (J dense or sparse; at least 1e-300): the rank tests compare
    the rows at unit max-norm."""
    big = abs(J).max(axis=1)
    return np.maximum(big.toarray().ravel() if sps.issparse(big) else np.ravel(big), 1e-300)


def singular_rows(J: np.ndarray, count: int = 6) -> np.ndarray:
    """Rows taking part in the rank loss of J: largest entries of the left null vector."""
    U, s, _ = np.linalg.svd(J / _row_scales(J)[:, None])
    u = np.abs(U[:, -1]) if len(s) == J.shape[0] else np.abs(U[:, len(s):]).max(axis=1)
    order = np.argsort(-u)
    return order[:count][u[order[:count]] > 0.05 * u[order[0]]]


def worst(phi: np.ndarray, count: int = 3) -> np.ndarray:
    return np.argsort(-np.abs(phi))[:count]
