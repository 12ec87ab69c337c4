"""Dense (LAPACK) and static-pivot sparse LU against NumPy, through the protocol life-cycle."""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest
import scipy.sparse as sps

from kinedyn.formulations import protocol
from kinedyn.linalg import sparse
from kinedyn.linalg.dense import dense_lu
from kinedyn.linalg.sparse import (ORDERINGS, REPIVOT, analyse, analyse_keeping_order,
                                   block_diagonal, cost, fill)
from kinedyn.linalg.subsystem import extract


@nb.njit(cache=True)
def factor_solve(solver, work, values, rhs):
    st = protocol.factorize(solver, work, values)
    if st == 0:
        protocol.solve(solver, work, rhs)
    return st


def random_system(n, density, seed):
    rng = np.random.default_rng(seed)
    A = sps.random(n, n, density=density, random_state=rng, format="csr")
    A = A + sps.diags(rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n))
    A = sps.csr_matrix(A)
    A.sort_indices()
    return A


def full_block(A):
    return extract(A.indptr.astype(np.int64), A.indices.astype(np.int64), np.arange(A.shape[0]),
                   np.arange(A.shape[1]))


@pytest.mark.parametrize("n,density,seed", [(5, 0.5, 0), (40, 0.1, 1), (200, 0.02, 2)])
@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_solution_matches_numpy(n, density, seed, kind):
    A = random_system(n, density, seed)
    block = full_block(A)
    solver, work = dense_lu(block) if kind == "dense" else analyse(block, A.data)
    b = np.random.default_rng(seed).standard_normal(n)
    x = b.copy()
    assert factor_solve(solver, work, A.data, x) == 0
    np.testing.assert_allclose(x, np.linalg.solve(A.toarray(), b), rtol=1e-9, atol=1e-12)
    # a matrix's column is not contiguous: LAPACK solves it in the work's scratch, the sparse
    # loops in place; the other column is left alone
    columns = np.zeros((n, 2))
    columns[:, 0] = b
    assert factor_solve(solver, work, A.data, columns[:, 0]) == 0
    np.testing.assert_allclose(columns[:, 0], x, rtol=1e-12, atol=1e-14)
    assert not columns[:, 1].any()


def test_sparse_refactorisation_reuses_the_analysis():
    """New values on the same pattern: same pivot order, still exact."""
    A = random_system(60, 0.08, 3)
    solver, work = analyse(full_block(A), A.data)
    rng = np.random.default_rng(4)
    for _ in range(5):
        values = A.data * (1 + 0.1 * rng.standard_normal(A.nnz))
        M = sps.csr_matrix((values, A.indices, A.indptr), shape=A.shape).toarray()
        b = rng.standard_normal(60)
        x = b.copy()
        assert factor_solve(solver, work, values, x) == 0
        np.testing.assert_allclose(M @ x, b, atol=1e-10)
    assert fill(solver) >= A.nnz


def test_sparse_asks_for_reanalysis_when_the_pivot_order_degrades():
    A = sps.csr_matrix(np.array([[4.0, 1.0], [1.0, 3.0]]))
    solver, work = analyse(full_block(A), A.data)
    bad = np.array([1e-14, 1.0, 1.0, 3.0])  # the chosen first pivot has vanished
    assert factor_solve(solver, work, bad, np.ones(2)) == REPIVOT
    solver2, work2 = analyse(full_block(A), bad)  # re-analysed with the new values
    x = np.ones(2)
    assert factor_solve(solver2, work2, bad, x) == 0
    np.testing.assert_allclose(np.array([[1e-14, 1.0], [1.0, 3.0]]) @ x, np.ones(2), atol=1e-12)


def test_pivot_orders_come_back_to_an_earlier_order_that_holds():
    """A crank's block [[c, s], [s, -c]] (c, s: cosine and sine of its angle) over two turns:
    every entry vanishes twice a turn, so each static order degrades there. After the first
    two analyses every re-analysis takes the earlier order again (its multipliers are within
    10 there), never the one that has just degraded, and it solves exactly."""
    block = full_block(sps.csr_matrix(np.ones((2, 2))))
    turn = lambda a: np.array([np.cos(a), np.sin(a), np.sin(a), -np.cos(a)])  # noqa: E731
    orders = sparse.PivotOrders()
    current = orders.analyse(block, turn(0.0))
    failures = 0
    for a in np.arange(1, 65) * np.pi / 16:  # exactly on the zeros of c and s
        rhs = np.array([1.0, -2.0])
        x = rhs.copy()
        if factor_solve(*current, turn(a), x) == REPIVOT:
            failures += 1
            new = orders.analyse(block, turn(a))
            assert new[0] is not current[0]
            current = new
            x = rhs.copy()
            assert factor_solve(*current, turn(a), x) == 0
        np.testing.assert_allclose(turn(a).reshape(2, 2) @ x, rhs, atol=1e-14)
    assert failures == 8  # at every multiple of pi / 2
    assert orders.analyses == 2 and orders.reused == failures - 1 and orders.last_reused
    # another block's orders are not taken for it
    other = full_block(sps.csr_matrix(np.array([[1.0, 1.0], [0.0, 1.0]])))
    orders.analyse(other, np.array([1.0, 2.0, 3.0]))
    assert orders.analyses == 3 and not orders.last_reused



@nb.njit(cache=True)
def factor_solve_pair(solver, work, values, a, b):
    st = protocol.factorize(solver, work, values)
    if st == 0:
        protocol.solve_pair(solver, work, a, b)
    return st


@pytest.mark.parametrize("codegen", [True, False])
def test_dense_fallback_factorises_where_the_static_order_degrades(codegen):
    """A crank's block [[c, s], [s, -c]] and a random 12 x 12 one whose first static pivot is
    made to vanish: with the dense fall-back (with_fallback) the factorisation succeeds in
    the same compiled call; the solutions (one and two right-hand sides, through generated
    code and through the loops and a strided right-hand side) equal NumPy's, det_sign is the
    sign of det A, and once the static order holds again its own factors are used. A
    singular matrix is SINGULAR. Without the fall-back the same values ask for a
    re-analysis."""
    rng = np.random.default_rng(3)
    crank = full_block(sps.csr_matrix(np.ones((2, 2))))
    turn = lambda a: np.array([np.cos(a), np.sin(a), np.sin(a), -np.cos(a)])  # noqa: E731
    A = random_system(12, 0.3, 4)
    cases = [(crank, turn(0.3), turn(np.pi / 2), lambda v: v.reshape(2, 2))]
    plain, _ = analyse(full_block(A), A.data)
    bad = A.data.copy()
    bad[plain.source[np.flatnonzero(plain.target == plain.lu_diag[0])]] = 0.0  # first pivot
    cases.append((full_block(A), A.data, bad,
                  lambda v: sps.csr_matrix((v, A.indices, A.indptr), A.shape).toarray()))
    for block, good, degraded, dense in cases:
        solver, work = analyse(block, good, codegen=codegen)
        assert factor_solve(solver, work, degraded, np.ones(block.n)) == REPIVOT
        work = sparse.with_fallback(work, block.n)
        for values in (degraded, good, degraded):
            M = dense(values)
            rhs = rng.normal(size=(2, block.n))
            x, y = rhs[0].copy(), rhs[1].copy()
            assert factor_solve_pair(solver, work, values, x, y) == 0
            assert (work.fallback[0] != 0.0) == (values is degraded)
            np.testing.assert_allclose(M @ x, rhs[0], atol=1e-10)
            np.testing.assert_allclose(M @ y, rhs[1], atol=1e-10)
            strided = np.zeros(2 * block.n)
            strided[::2] = rhs[0]
            assert factor_solve(solver, work, values, strided[::2]) == 0
            np.testing.assert_allclose(strided[::2], x, rtol=1e-12, atol=1e-14)
            assert factor_det_sign(solver, work, values) == np.sign(np.linalg.det(M)) != 0
    solver, work = analyse(crank, turn(0.3))
    work = sparse.with_fallback(work, 2)
    assert factor_solve(solver, work, np.array([1.0, 2.0, 2.0, 4.0]), np.ones(2)) == 1
    big = sparse.FALLBACK_LIMIT + 1  # no dense copy of a larger block
    assert len(sparse.with_fallback(sparse.sparse_work(big, big), big).piv) == 0


@nb.njit(cache=True)
def factor_det_sign(solver, work, values):
    if protocol.factorize(solver, work, values) != 0:
        return 0.0
    return protocol.det_sign(solver, work)


@pytest.mark.parametrize("seed", range(6))
def test_determinant_sign_is_numpys_whatever_the_pivot_order(seed):
    """det_sign (the pivots' signs and the permutations' parities) is the sign of NumPy's
    determinant: dense LU, sparse LU in every column order, and block-diagonal solvers."""
    A = random_system(30, 0.1, seed)
    want = np.sign(np.linalg.det(A.toarray()))
    for order in ORDERINGS:
        s, w = analyse(full_block(A), A.data, orderings=(order,))
        assert factor_det_sign(s, w, A.data) == want != 0, order
    assert factor_det_sign(*dense_lu(full_block(A)), A.data) == want
    B = random_system(12, 0.2, seed + 10)
    values = np.concatenate([A.data, B.data])  # B's entries after A's
    b = full_block(B)
    b = type(b)(b.rows, b.cols, b.indptr, b.indices, b.source + A.nnz)
    s, w = block_diagonal([analyse(full_block(A), values), analyse(b, values)])
    both = np.linalg.det(sps.block_diag([A, B]).toarray())
    assert factor_det_sign(s, w, values) == np.sign(both) != 0


def test_permutation_sign():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 17):
        p = rng.permutation(n)
        assert sparse.permutation_sign(p) == np.linalg.det(np.eye(n)[p])


def test_dense_and_sparse_solvers_share_one_compiled_type():
    """A dense (LAPACK) and a sparse solver are one Numba type, so a kernel compiled for one
    serves the other (one compilation, not one per solver); on the same kernel both solve a
    pair of right-hand sides (contiguous or strided) as NumPy does, and both tell the
    determinant's sign."""
    A = random_system(25, 0.15, 7)
    block = full_block(A)
    dense, sparse_ = dense_lu(block), analyse(block, A.data)
    assert nb.typeof(dense) == nb.typeof(sparse_)
    rhs = np.random.default_rng(8).standard_normal((2, 25))
    want = np.linalg.solve(A.toarray(), rhs.T).T
    compiled = []
    for solver, work in (dense, sparse_):
        x, y = rhs[0].copy(), rhs[1].copy()
        assert factor_solve_pair(solver, work, A.data, x, y) == 0
        np.testing.assert_allclose(np.stack([x, y]), want, rtol=1e-9, atol=1e-12)
        assert factor_det_sign(solver, work, A.data) == np.sign(np.linalg.det(A.toarray()))
        columns = np.zeros((25, 3))  # two strided right-hand sides, one scratch for both
        columns[:, 0], columns[:, 2] = rhs
        assert factor_solve_pair(solver, work, A.data, columns[:, 0], columns[:, 2]) == 0
        np.testing.assert_allclose(columns[:, [0, 2]].T, want, rtol=1e-9, atol=1e-12)
        assert not columns[:, 1].any()
        compiled.append((list(factor_solve_pair.signatures), list(factor_det_sign.signatures)))
    assert compiled[0] == compiled[1]  # the sparse solver compiled nothing new


def test_dense_reports_singular_matrix():
    A = sps.csr_matrix(np.array([[1.0, 2.0], [2.0, 4.0 + 1e-14]]))
    solver, work = dense_lu(full_block(A))
    assert factor_solve(solver, work, A.data, np.ones(2)) == 1


def test_subsystem_extraction_and_coupling():
    """A square block of a rectangular matrix, with entries read from the full data array."""
    A = sps.csr_matrix(np.arange(1.0, 21.0).reshape(4, 5))
    block = extract(A.indptr.astype(np.int64), A.indices.astype(np.int64), [1, 3], [4, 0])
    np.testing.assert_array_equal(block.matrix(A.data).toarray(), [[10.0, 6.0], [20.0, 16.0]])


def test_cheapest_ordering_is_kept_and_exact():
    """Several column orders: the kept analysis is no costlier than COLAMD's and solves as
    exactly."""
    for seed in range(4):
        A = random_system(80, 0.05, 10 + seed)
        colamd, _ = analyse(full_block(A), A.data)
        solver, work = analyse(full_block(A), A.data, orderings=ORDERINGS)
        assert cost(solver) <= cost(colamd)
        # the first analysis names its order and is the one analyse keeps; passing the name
        # back (a re-analysis during a run) keeps that order
        order, (first, _) = analyse_keeping_order(full_block(A), A.data)
        assert order in ORDERINGS and cost(first) == cost(solver)
        again, (second, _) = analyse_keeping_order(full_block(A), A.data, order)
        assert again == order and cost(second) == cost(first)
        b = np.random.default_rng(seed).standard_normal(80)
        x = b.copy()
        assert factor_solve(solver, work, A.data, x) == 0
        np.testing.assert_allclose(A.toarray() @ x, b, atol=1e-10)


@pytest.mark.parametrize("interleaved", [True, False])
def test_block_diagonal_does_each_blocks_arithmetic(interleaved, monkeypatch):
    """Blocks of different sizes (a shared values array, each block reading its own entries):
    the block-diagonal solver's solution is, bit for bit, each block's own, and solves the
    block-diagonal matrix - with the blocks' pivot rows interleaved (small wholes) or the
    blocks one after the other (work past ``INTERLEAVE_LIMIT``)."""
    if not interleaved:
        monkeypatch.setattr(sparse, "INTERLEAVE_LIMIT", 0)
    blocks = [random_system(n, 0.3, 20 + n) for n in (7, 12, 3, 12)]
    values = np.concatenate([B.data for B in blocks])
    parts, start = [], 0
    for B in blocks:  # each block's entries sit at its own positions of ``values``
        blk = full_block(B)
        blk = type(blk)(blk.rows, blk.cols, blk.indptr, blk.indices, blk.source + start)
        parts.append(analyse(blk, values, orderings=ORDERINGS))
        start += B.nnz
    rng = np.random.default_rng(5)
    b = rng.standard_normal(sum(B.shape[0] for B in blocks))
    solver, work = block_diagonal(parts)
    x = b.copy()
    assert factor_solve(solver, work, values, x) == 0
    offset = 0
    for (s, w), B in zip(parts, blocks):
        n = B.shape[0]
        xb = b[offset:offset + n].copy()
        assert factor_solve(s, w, values, xb) == 0
        np.testing.assert_array_equal(x[offset:offset + n], xb)
        offset += n
    np.testing.assert_allclose(sps.block_diag(blocks).toarray() @ x, b, atol=1e-10)
    assert fill(solver) == sum(fill(s) for s, _ in parts)
    # the block of each pivot row: 0 1 2 3 0 1 3 ... interleaved, 0 ... 0 1 ... 1 ... in turn
    offsets = np.cumsum([B.shape[0] for B in blocks])
    block_of = np.searchsorted(offsets, np.asarray(solver.row_perm), side="right")
    if interleaved:
        assert list(block_of[:4]) == [0, 1, 2, 3]
    else:
        assert list(block_of) == sorted(block_of)
