"""Generated straight-line sparse LU (kinedyn.linalg.lu_codegen) against the loops it unrolls:
the same factors, pivots, statuses and solutions to the bit, through the compiled protocol."""
from __future__ import annotations

import warnings

import numba as nb
import numpy as np
import pytest
import scipy.sparse as sps

from kinedyn import _llvm
from kinedyn.formulations import protocol
from kinedyn.linalg import lu_codegen
from kinedyn.linalg.sparse import (NO_CODE, ORDERINGS, REPIVOT, analyse, block_diagonal,
                                   with_code)
from kinedyn.linalg.sparse import cost as sparse_cost
from kinedyn.linalg.sparse import with_codes

from .test_lu import full_block, random_system


@nb.njit(cache=True)
def factor_and_solve(solver, work, values, a, b, c):
    """Factorise, solve ``a`` alone and ``b, c`` as a pair (all through the protocol)."""
    st = protocol.factorize(solver, work, values)
    if st == 0:
        protocol.solve(solver, work, a)
        protocol.solve_pair(solver, work, b, c)
    return st


def loops_of(solver_work):
    """The same solver without its generated code, on a copy of its work arrays."""
    solver, work = solver_work
    return solver._replace(code=NO_CODE), type(work)(*[w.copy() for w in work])


def both(block, values, **kw):
    """The same analysis with generated code and with the loops (separate work arrays)."""
    coded = analyse(block, values, **kw)
    assert coded[0].code[0] != 0, "expected generated code for this pattern"
    return coded, loops_of(coded)


def run(solver_work, values, rhs):
    solver, work = solver_work
    a, b, c = rhs.copy(), 2.0 * rhs, -rhs[::-1].copy()
    st = factor_and_solve(solver, work, values, a, b, c)
    return st, work, (a, b, c)


@pytest.mark.parametrize("n,density,seed", [(1, 1.0, 0), (6, 0.5, 1), (40, 0.1, 2),
                                            (100, 0.02, 3)])
def test_generated_code_equals_the_loops_bit_for_bit(n, density, seed):
    A = random_system(n, density, seed)
    coded, plain = both(full_block(A), A.data, orderings=ORDERINGS)
    rng = np.random.default_rng(seed)
    for trial in range(3):  # new values on the same pattern
        values = A.data * (1 + 0.2 * rng.standard_normal(A.nnz)) if trial else A.data
        rhs = rng.standard_normal(n)
        st1, w1, x1 = run(coded, values, rhs)
        st2, w2, x2 = run(plain, values, rhs)
        assert st1 == st2 == 0
        np.testing.assert_array_equal(w1.lu, w2.lu)
        np.testing.assert_array_equal(w1.inv_diag, w2.inv_diag)
        for u, v in zip(x1, x2):
            np.testing.assert_array_equal(u, v)
        M = sps.csr_matrix((values, A.indices, A.indptr), shape=A.shape).toarray()
        np.testing.assert_allclose(M @ x1[0], rhs, atol=1e-9)
        np.testing.assert_allclose(M @ x1[2], -rhs[::-1], atol=1e-9)


def test_generated_code_asks_for_reanalysis_as_the_loops_do():
    """A vanished pivot, a pivot small for its row, a multiplier past the growth limit: the
    same status 2 from both."""
    A = sps.csr_matrix(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 2.0, 5.0]]))
    coded, plain = both(full_block(A), A.data)
    cases = {"zero pivot": np.array([0.0, 1.0, 1.0, 3.0, 1.0, 2.0, 5.0]),
             "small pivot": np.array([1e-14, 1.0, 1.0, 3.0, 1.0, 2.0, 5.0]),
             "growth": np.array([1e-5, 1.0, 1.0, 3.0, 1.0, 2.0, 5.0]),
             "nan": np.array([np.nan, 1.0, 1.0, 3.0, 1.0, 2.0, 5.0])}
    for name, values in cases.items():
        st1 = run(coded, values, np.ones(3))[0]
        st2 = run(plain, values, np.ones(3))[0]
        assert st1 == st2, name
        if name != "nan":  # NaN passes the pivot tests in both (the caller checks residuals)
            assert st1 == REPIVOT, name


@nb.njit(cache=True)
def solve_strided(solver, work, values, rhs2d):
    protocol.factorize(solver, work, values)
    protocol.solve(solver, work, rhs2d[:, 0])  # a column: not C-contiguous, the loops run


def test_non_contiguous_right_hand_side_uses_the_loops():
    A = random_system(30, 0.1, 7)
    (coded, work), _ = both(full_block(A), A.data)
    rhs = np.random.default_rng(7).standard_normal((30, 2))
    expected = rhs[:, 0].copy()
    factor_and_solve(coded, work, A.data, expected, np.zeros(30), np.zeros(30))
    solve_strided(coded, work, A.data, rhs)
    np.testing.assert_array_equal(rhs[:, 0], expected)


def test_large_patterns_keep_the_loops(monkeypatch):
    A = random_system(40, 0.1, 8)
    monkeypatch.setattr(lu_codegen, "LIMIT", 10)
    solver, _ = analyse(full_block(A), A.data)
    assert not solver.code.any()
    assert not with_code(solver, codegen=True).code.any()


def test_a_structure_builds_its_code_once(monkeypatch):
    """A re-analysis that comes back to an order it had (the four-bar's pivots: 800
    re-analyses in 20 000 steps) reuses that order's code without building its IR again; the
    reused code still equals the loops to the bit. Another order builds its own."""
    built = []
    module_ir = lu_codegen.module_ir
    monkeypatch.setattr(lu_codegen, "module_ir", lambda s: built.append(s.n) or module_ir(s))
    monkeypatch.setattr(_llvm, "_STRUCTURES", {})
    A = random_system(12, 0.3, 11)
    first = analyse(full_block(A), A.data)
    again = analyse(full_block(A), A.data)
    assert len(built) == 1
    np.testing.assert_array_equal(again[0].code, first[0].code)
    rhs = np.linspace(-1.0, 2.0, 12)
    for u, v in zip(run(again, A.data, rhs)[2], run(loops_of(first), A.data, rhs)[2]):
        np.testing.assert_array_equal(u, v)
    natural = analyse(full_block(A), A.data, orderings=("NATURAL",))
    assert not np.array_equal(natural[0].col_perm, first[0].col_perm)
    assert len(built) == 2


def test_object_code_is_cached_on_disk(monkeypatch, tmp_path):
    """A second process would load the machine code instead of compiling: the object file is
    written, and an engine built from it (memory cache cleared) gives the same results."""
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(_llvm, "_ENGINES", {})
    A = random_system(25, 0.15, 9)
    first, plain = both(full_block(A), A.data)
    files = list((tmp_path / "lu").glob("*.o"))
    assert len(files) == 1 and files[0].stat().st_size > 0
    monkeypatch.setattr(_llvm, "_ENGINES", {})
    again = analyse(full_block(A), A.data)
    rhs = np.arange(25.0)
    x1, x2 = run(again, A.data, rhs)[2], run(plain, A.data, rhs)[2]
    for u, v in zip(x1, x2):
        np.testing.assert_array_equal(u, v)
    assert list((tmp_path / "lu").glob("*.o")) == files


def diagonal_parts(sizes=(5, 9, 9)):
    """Analyses of random blocks whose entries lie one after the other in ``values``."""
    blocks = [random_system(n, 0.3, 30 + n) for n in sizes]
    values = np.concatenate([B.data for B in blocks])
    parts, start = [], 0
    for B in blocks:
        blk = full_block(B)
        blk = type(blk)(blk.rows, blk.cols, blk.indptr, blk.indices, blk.source + start)
        parts.append(analyse(blk, values))
        start += B.nnz
    return parts, values


def test_block_diagonal_solver_gets_its_own_code():
    parts, values = diagonal_parts()
    coded, work = block_diagonal(parts)
    assert coded.code[0] != 0 and len(coded.code) == lu_codegen.CODE_WIDTH
    plain = loops_of((coded, work))
    rhs = np.random.default_rng(3).standard_normal(23)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x1, x2 = run((coded, work), values, rhs)[2], run(plain, values, rhs)[2]
    for u, v in zip(x1, x2):
        np.testing.assert_array_equal(u, v)


def test_large_block_diagonal_solver_calls_each_blocks_code(monkeypatch):
    """Past the code limit the blocks follow each other and each block's own code runs on its
    part of the arrays: the same factors and solutions as the loops and as each block alone,
    and a block that asks for re-analysis makes the whole ask."""
    parts, values = diagonal_parts((5, 9, 9, 7))
    monkeypatch.setattr(lu_codegen, "LIMIT", max(sparse_cost(s) for s, _ in parts))
    coded, work = block_diagonal(parts)
    assert len(coded.code) == 4 * lu_codegen.CODE_WIDTH
    plain = loops_of((coded, work))
    rng = np.random.default_rng(4)
    rhs = rng.standard_normal(30)
    x1, x2 = run((coded, work), values, rhs)[2], run(plain, values, rhs)[2]
    for u, v in zip(x1, x2):
        np.testing.assert_array_equal(u, v)
    start = 0
    for k, part in enumerate(parts):  # each block alone
        n = part[0].n
        alone = run(part, values, rhs[start:start + n])[2]
        for u, v in zip(x1[:2], alone[:2]):
            np.testing.assert_array_equal(u[start:start + n], v)
        start += n
    bad = values.copy()
    s3 = parts[2][0]
    bad[np.asarray(s3.source)] = 0.0  # block 3 singular: its first pivot is zero
    assert run((coded, work), bad, rhs)[0] == REPIVOT == run(plain, bad, rhs)[0]


def test_solvers_of_one_run_share_a_code_budget(monkeypatch):
    """Several solvers used at every step get code only while their total work per thread is
    within ``TOTAL_LIMIT`` (long straight-line codes run in turn leave the caches)."""
    parts, _ = diagonal_parts((5, 9, 9))
    plain = [s._replace(code=NO_CODE) for s, _ in parts]
    total = sum(sparse_cost(s) for s in plain)
    monkeypatch.setattr(lu_codegen, "TOTAL_LIMIT", total)
    assert all(s.code[0] != 0 for s in with_codes(plain))
    monkeypatch.setattr(lu_codegen, "TOTAL_LIMIT", total - 1)
    assert not any(s.code.any() for s in with_codes(plain))
    monkeypatch.setattr(lu_codegen, "TOTAL_LIMIT", (total + 1) // 2)  # per thread
    assert all(s.code[0] != 0 for s in with_codes(plain, threads=2))
