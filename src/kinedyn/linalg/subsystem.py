"""Square subsystems of a sparse matrix: which rows and columns, and where their entries are.

The formulation evaluates its whole Jacobian (or mass matrix) into one CSR data array; a solver
factorises a square block of it - the independent constraints against all coordinates
(global kinematics), one structural group's rows against its dependent coordinates (group
equations), or the dependent coordinates of coordinate partitioning. :func:`extract` gives the
block's own CSR pattern and, for each of its entries, the position in the full data array, so
solvers read the full array directly (no copy per step).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps


@dataclass(frozen=True)
class Block:
    rows: np.ndarray     # (n,) rows of the full matrix
    cols: np.ndarray     # (n,) columns of the full matrix
    indptr: np.ndarray   # CSR pattern of the block (local row/column numbers)
    indices: np.ndarray
    source: np.ndarray   # (nnz,) position of each block entry in the full data array

    @property
    def n(self) -> int:
        return len(self.rows)

    def matrix(self, full_values: np.ndarray) -> sps.csr_matrix:
        return sps.csr_matrix((full_values[self.source], self.indices, self.indptr),
                              shape=(self.n, len(self.cols)))


def extract(indptr: np.ndarray, indices: np.ndarray, rows, cols) -> Block:
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    col_pos = {int(c): k for k, c in enumerate(cols)}
    bptr, bind, src = [0], [], []
    for r in rows:
        entries = [(col_pos[int(indices[p])], p) for p in range(indptr[r], indptr[r + 1])
                   if int(indices[p]) in col_pos]
        entries.sort()
        bind += [c for c, _ in entries]
        src += [p for _, p in entries]
        bptr.append(len(bind))
    return Block(rows, cols, np.array(bptr, np.int64), np.array(bind, np.int64),
                 np.array(src, np.int64))
