"""Sparse Cholesky ``P S P^T = L L^T`` of a symmetric positive definite matrix with a fixed pattern.

Analysis (Python, once per pattern): a minimum-degree elimination order of the graph of ``S``; the
same elimination gives the column patterns of ``L`` (the neighbours of a node when it is
eliminated), stored column-wise (CSC, diagonal first, rows sorted), and the *row* structure of
``L`` (where ``L[j, k]``, ``k < j``, sits) for the left-looking factorisation. The caller writes
the lower triangle of ``P S P^T`` straight into the factor's value array (:meth:`Cholesky.position`
gives where entry ``(i, j)`` of ``S`` goes; fill positions start at zero) and factorises in place.

Numeric factorisation (compiled, no allocation): left-looking column Cholesky,
``L[:, j] = (S[:, j] - sum_k L[:, k] L[j, k]) / L[j, j]``. No pivoting is needed for SPD matrices;
a pivot ``d_j <= pivot_tol * S_jj`` (the row lost rank against the earlier ones) returns status 1.
Minimum degree leaves the most connected rows for last, where ``L`` is a dense triangle (33 of
the 105 constraints of the Gough-Stewart platform, 3/4 of the flops): updates from columns of
that dense tail are contiguous and run without index indirection (measured 2x faster there).
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .._jit import INLINED_WORKER

SINGULAR = 1


class Cholesky(NamedTuple):
    n: int
    perm: np.ndarray     # (n,) factor row/column j is matrix row/column perm[j]
    col_ptr: np.ndarray  # (n + 1,) CSC pattern of L
    row_idx: np.ndarray  # (nnz_L,) rows of L, diagonal first in each column
    rl_ptr: np.ndarray   # (n + 1,) row structure of L: entries L[j, k], k < j ...
    rl_pos: np.ndarray   # ... their positions in the value array
    rl_col: np.ndarray   # ... and their columns k
    tail: int            # columns tail..n-1 of L form a dense lower triangle
    pivot_tol: float

    def position(self, i: int, j: int) -> int:
        """Position in the value array of entry (i, j) of S (either triangle)."""
        return int(self.positions([(i, j)])[0])

    def positions(self, entries) -> np.ndarray:
        """:meth:`position` of every (i, j) in ``entries``, the inverse permutation formed
        once (the Gough-Stewart's Schur build asked for 3 000 entries one by one: 60 % of a
        ``Dynamics`` set-up)."""
        inv = np.empty(self.n, np.int64)
        inv[self.perm] = np.arange(self.n)
        out = np.empty(len(entries), np.int64)
        for e, (i, j) in enumerate(entries):
            col, row = sorted((int(inv[i]), int(inv[j])))
            start, end = int(self.col_ptr[col]), int(self.col_ptr[col + 1])
            k = start if row == col else start + 1 + int(np.searchsorted(
                self.row_idx[start + 1:end], row))
            if k >= end or self.row_idx[k] != row:
                raise KeyError(f"entry ({i}, {j}) is not in the pattern")
            out[e] = k
        return out


def minimum_degree(n: int, edges) -> tuple[np.ndarray, list[list[int]]]:
    """Elimination order of a graph (minimum degree, ties by index) and, for each eliminated
    node in turn, its neighbours at elimination (the pattern of its column of L)."""
    adj = [set() for _ in range(n)]
    for a, b in edges:
        if a != b:
            adj[a].add(b)
            adj[b].add(a)
    alive = set(range(n))
    order, columns = [], []
    while alive:
        v = min(alive, key=lambda x: (len(adj[x]), x))
        nbrs = adj[v]
        for a in nbrs:
            adj[a].discard(v)
            adj[a] |= nbrs - {a}
        order.append(v)
        columns.append(sorted(nbrs))
        alive.discard(v)
        adj[v] = set()
    return np.array(order, np.int64), columns


def analyse(n: int, edges, pivot_tol: float = 1e-12) -> Cholesky:
    """Cholesky structure of an n x n SPD matrix whose off-diagonal nonzeros are ``edges``."""
    perm, columns = minimum_degree(n, edges)
    inv = np.empty(n, np.int64)
    inv[perm] = np.arange(n)
    col_ptr = np.zeros(n + 1, np.int64)
    rows = []
    for j, nbrs in enumerate(columns):
        col = [j] + sorted(int(inv[v]) for v in nbrs)
        rows.extend(col)
        col_ptr[j + 1] = col_ptr[j] + len(col)
    row_idx = np.array(rows, np.int64)
    by_row = [[] for _ in range(n)]
    for k in range(n):
        for p in range(col_ptr[k] + 1, col_ptr[k + 1]):
            by_row[row_idx[p]].append((p, k))
    rl_ptr = np.zeros(n + 1, np.int64)
    for j in range(n):
        rl_ptr[j + 1] = rl_ptr[j] + len(by_row[j])
    flat = [e for r in by_row for e in r]
    rl_pos = np.array([p for p, _ in flat], np.int64)
    rl_col = np.array([k for _, k in flat], np.int64)
    tail = n
    while tail > 0 and col_ptr[tail] - col_ptr[tail - 1] == n - tail + 1:
        tail -= 1
    return Cholesky(n, perm, col_ptr, row_idx, rl_ptr, rl_pos, rl_col, tail, float(pivot_tol))


@nb.njit(**INLINED_WORKER)
def factorize(col_ptr, row_idx, rl_ptr, rl_pos, rl_col, tail, pivot_tol, lx, w):
    """In place: ``lx`` holds the lower triangle of P S P^T on entry and L on exit; ``w`` is
    (n,) zeros on entry and on exit. Returns 0, or 1 when a pivot is not positive enough."""
    n = col_ptr.shape[0] - 1
    for j in range(n):
        for p in range(col_ptr[j], col_ptr[j + 1]):
            w[row_idx[p]] = lx[p]
        s_jj = w[j]
        for t in range(rl_ptr[j], rl_ptr[j + 1]):
            p = rl_pos[t]
            k = rl_col[t]
            ljk = lx[p]
            if k >= tail:  # dense column: rows j, j+1, ..., n-1
                for i in range(col_ptr[k + 1] - p):
                    w[j + i] -= lx[p + i] * ljk
            else:
                for pp in range(p, col_ptr[k + 1]):
                    w[row_idx[pp]] -= lx[pp] * ljk
        d = w[j]
        if not d > pivot_tol * s_jj:
            for p in range(col_ptr[j], col_ptr[j + 1]):
                w[row_idx[p]] = 0.0
            return SINGULAR
        ljj = np.sqrt(d)
        lx[col_ptr[j]] = ljj
        w[j] = 0.0
        for p in range(col_ptr[j] + 1, col_ptr[j + 1]):
            r = row_idx[p]
            lx[p] = w[r] / ljj
            w[r] = 0.0
    return 0


@nb.njit(**INLINED_WORKER)
def solve(perm, col_ptr, row_idx, tail, lx, x, b):
    """b <- S^-1 b with the factor in ``lx``; ``x`` is (n,) scratch."""
    n = perm.shape[0]
    for j in range(n):
        x[j] = b[perm[j]]
    for j in range(n):  # L y = P b
        v = x[j] / lx[col_ptr[j]]
        x[j] = v
        p0 = col_ptr[j] + 1
        if j >= tail:  # dense column: rows j+1, ..., n-1
            for i in range(col_ptr[j + 1] - p0):
                x[j + 1 + i] -= lx[p0 + i] * v
        else:
            for p in range(p0, col_ptr[j + 1]):
                x[row_idx[p]] -= lx[p] * v
    for j in range(n - 1, -1, -1):  # L^T z = y
        v = x[j]
        p0 = col_ptr[j] + 1
        if j >= tail:
            for i in range(col_ptr[j + 1] - p0):
                v -= lx[p0 + i] * x[j + 1 + i]
        else:
            for p in range(p0, col_ptr[j + 1]):
                v -= lx[p] * x[row_idx[p]]
        x[j] = v / lx[col_ptr[j]]
    for j in range(n):
        b[perm[j]] = x[j]
