"""Choosing the independent constraint rows (kinematics.diagnose): the sparse LU that clears a
large Jacobian must give the rank-revealing QR's answer, and hand every case it cannot clear
(redundant rows, a singular configuration) to the QR."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from kinedyn.kinematics.analysis import constraint_jacobian, formulation_for
from kinedyn.kinematics.diagnose import full_row_rank, independent_rows
from kinedyn.models import get

QR_ONLY = 10**9   # sparse_from that never tries the LU


def _jacobian(name):
    f = formulation_for(get(name).compile())
    return constraint_jacobian(f, f.q0, 0.0, f.make_work())


def test_a_large_driven_jacobian_is_cleared_by_the_lu_as_the_qr_finds_it():
    J = _jacobian("scissor-platform-6x9")      # 768 x 768, no redundancy
    assert J.shape[0] >= 400 and sps.issparse(J)
    assert full_row_rank(J)
    rows, redundant = independent_rows(J)                        # the sparse path
    qr_rows, qr_redundant = independent_rows(J.toarray(), sparse_from=QR_ONLY)
    assert np.array_equal(rows, qr_rows) and len(redundant) == len(qr_redundant) == 0


def test_redundant_rows_go_to_the_qr():
    J = _jacobian("parallelogram")                               # a third bar: one redundant
    assert not full_row_rank(J)
    rows, redundant = independent_rows(J, sparse_from=0)         # tries the LU first
    qr_rows, qr_redundant = independent_rows(J.toarray(), sparse_from=QR_ONLY)
    assert len(redundant) == 1
    assert np.array_equal(rows, qr_rows) and np.array_equal(redundant, qr_redundant)


def test_what_the_lu_cannot_show_is_left_to_the_qr():
    rng = np.random.default_rng(3)
    A = sps.random(60, 80, density=0.1, random_state=rng, format="csr") + sps.eye(60, 80)
    assert full_row_rank(A)
    dependent = sps.vstack([A, A[3] - 2.0 * A[7]]).tocsr()    # an exact combination
    assert not full_row_rank(dependent)
    rows, redundant = independent_rows(dependent, sparse_from=0)
    assert len(rows) == 60 and len(redundant) == 1
    nearly = sps.vstack([A[:59], A[3] + 1e-8 * A[5]]).tocsr()  # nearly dependent rows
    assert not full_row_rank(nearly)
    assert not full_row_rank(sps.vstack([A, A]).tocsr()[:, :50])   # more rows than columns
    empty_row = sps.vstack([A[:59], sps.csr_matrix((1, 80))]).tocsr()
    assert not full_row_rank(empty_row)                         # no complete matching
    assert list(independent_rows(empty_row, sparse_from=0)[1]) == [59]
