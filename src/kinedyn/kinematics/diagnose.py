"""Diagnoses in words: redundant constraints, singular configurations, worst residuals."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla


def independent_rows(J: np.ndarray, tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Rows of J that are linearly independent (kept) and the redundant rest.

    QR with column pivoting of J^T orders the rows by how much new direction each adds; rows
    whose diagonal of R is below ``tol`` times the largest are linear combinations of the
    others (redundant constraints, e.g. the fifth bar of a parallelogram).
    """
    if J.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    scale = np.maximum(np.abs(J).max(axis=1, keepdims=True), 1e-300)
    _, R, piv = sla.qr((J / scale).T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > tol * max(diag[0], 1e-300))) if diag.size else 0
    return np.sort(piv[:rank]).astype(np.int64), np.sort(piv[rank:]).astype(np.int64)


def singular_rows(J: np.ndarray, count: int = 6) -> np.ndarray:
    """Rows taking part in the rank loss of J: largest entries of the left null vector."""
    scale = np.maximum(np.abs(J).max(axis=1, keepdims=True), 1e-300)
    U, s, _ = np.linalg.svd(J / scale)
    u = np.abs(U[:, -1]) if len(s) == J.shape[0] else np.abs(U[:, len(s):]).max(axis=1)
    order = np.argsort(-u)
    return order[:count][u[order[:count]] > 0.05 * u[order[0]]]


def worst(phi: np.ndarray, count: int = 3) -> np.ndarray:
    return np.argsort(-np.abs(phi))[:count]
