"""Sparse layouts of the matrices the dynamics methods factorise, built once per model.

* KKT (augmented) matrix of eq. 3 of the sparse-relative-coordinates paper / the index-1 form:
  ``[[M, J^T], [J, 0]]`` with ``J`` the rows of ``phi_q`` kept (independent constraints);
* penalty matrix of the thesis's eq. 2.23: ``M + J^T rho J``.

Each layout is a CSR pattern plus *scatter maps*: where every entry of the mass-matrix data and
of the Jacobian data lands in the layout's data array, so the per-step assembly is a few indexed
additions and the pattern (hence the symbolic factorisation) never changes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps


@dataclass(frozen=True)
class KKTLayout:
    n_q: int
    n_c: int
    indptr: np.ndarray
    indices: np.ndarray
    mass_pos: np.ndarray   # (nnz_M,) KKT position of each mass-matrix entry
    jac_src: np.ndarray    # (k,) position in the full Jacobian data of each kept entry
    jac_pos: np.ndarray    # (k,) KKT position of J (lower-left block)
    jacT_pos: np.ndarray   # (k,) KKT position of J^T (upper-right block)

    @property
    def n(self) -> int:
        return self.n_q + self.n_c

    def matrix(self, mass_values, jac_values) -> sps.csr_matrix:
        data = np.zeros(len(self.indices))
        np.add.at(data, self.mass_pos, mass_values)
        np.add.at(data, self.jac_pos, jac_values[self.jac_src])
        np.add.at(data, self.jacT_pos, jac_values[self.jac_src])
        return sps.csr_matrix((data, self.indices, self.indptr), shape=(self.n, self.n))


def _positions(indptr, indices, rows, cols):
    """CSR data positions of (row, col) pairs (all present in the pattern)."""
    out = np.empty(len(rows), np.int64)
    for k, (r, c) in enumerate(zip(rows, cols)):
        seg = indices[indptr[r]:indptr[r + 1]]
        out[k] = indptr[r] + int(np.searchsorted(seg, c))
    return out


def kkt_layout(mass_indptr, mass_indices, jac_indptr, jac_indices, rows, n_q) -> KKTLayout:
    rows = np.asarray(rows, np.int64)
    n_c = len(rows)
    m_rows = np.repeat(np.arange(n_q), np.diff(mass_indptr))
    m_cols = np.asarray(mass_indices)
    src, j_rows, j_cols = [], [], []
    for i, r in enumerate(rows):
        for p in range(jac_indptr[r], jac_indptr[r + 1]):
            src.append(p)
            j_rows.append(n_q + i)
            j_cols.append(int(jac_indices[p]))
    src = np.array(src, np.int64)
    j_rows, j_cols = np.array(j_rows, np.int64), np.array(j_cols, np.int64)
    all_r = np.concatenate([m_rows, j_rows, j_cols])
    all_c = np.concatenate([m_cols, j_cols, j_rows])
    pattern = sps.csr_matrix((np.ones(len(all_r)), (all_r, all_c)), shape=(n_q + n_c,) * 2)
    pattern.sum_duplicates()
    pattern.sort_indices()
    indptr, indices = pattern.indptr.astype(np.int64), pattern.indices.astype(np.int64)
    return KKTLayout(n_q, n_c, indptr, indices,
                     _positions(indptr, indices, m_rows, m_cols),
                     src, _positions(indptr, indices, j_rows, j_cols),
                     _positions(indptr, indices, j_cols, j_rows))


@dataclass(frozen=True)
class PenaltyLayout:
    """``M + J^T diag(rho) J``: mass entries plus, for every Jacobian row r and every pair of
    its entries (p1, p2), the product J[r, c1] rho_r J[r, c2] added at (c1, c2)."""
    n_q: int
    indptr: np.ndarray
    indices: np.ndarray
    mass_pos: np.ndarray
    pair_row: np.ndarray   # (k,) local constraint row of the pair
    pair_a: np.ndarray     # (k,) Jacobian data position of the first factor
    pair_b: np.ndarray     # (k,) of the second factor
    pair_pos: np.ndarray   # (k,) position in the penalty matrix data


def penalty_layout(mass_indptr, mass_indices, jac_indptr, jac_indices, rows, n_q) -> PenaltyLayout:
    m_rows = np.repeat(np.arange(n_q), np.diff(mass_indptr))
    m_cols = np.asarray(mass_indices)
    pr, pa, pb, pi, pj = [], [], [], [], []
    for i, r in enumerate(rows):
        ps = range(jac_indptr[r], jac_indptr[r + 1])
        for p1 in ps:
            for p2 in ps:
                pr.append(i)
                pa.append(p1)
                pb.append(p2)
                pi.append(int(jac_indices[p1]))
                pj.append(int(jac_indices[p2]))
    all_r = np.concatenate([m_rows, np.array(pi, np.int64)])
    all_c = np.concatenate([m_cols, np.array(pj, np.int64)])
    pattern = sps.csr_matrix((np.ones(len(all_r)), (all_r, all_c)), shape=(n_q, n_q))
    pattern.sum_duplicates()
    pattern.sort_indices()
    indptr, indices = pattern.indptr.astype(np.int64), pattern.indices.astype(np.int64)
    as_int = lambda x: np.array(x, np.int64)  # noqa: E731
    return PenaltyLayout(n_q, indptr, indices, _positions(indptr, indices, m_rows, m_cols),
                         as_int(pr), as_int(pa), as_int(pb),
                         _positions(indptr, indices, np.array(pi, np.int64), np.array(pj, np.int64)))
