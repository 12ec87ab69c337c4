"""kinedyn.symbolic.projection: the generated A = B^T M B, rhs = B^T (F - M z) equals the dense
products, for M read from upper-triangle storage (block-wise path) and from a full matrix
(general path), with the independent coordinates anywhere in q."""
from __future__ import annotations

import numpy as np

from kinedyn.symbolic.projection import projection_source, tree_sum


def _project(source):
    # plain Python: the same arithmetic
    namespace = {"njit": lambda **options: (lambda f: f), "inlined": lambda f: f}
    exec(source, namespace)
    return namespace["project"]


def _case(rng, n, independent):
    """A symmetric positive definite M with a block pattern, B with identity rows at the
    independent coordinates, z zero there."""
    blocks = np.array_split(rng.permutation(n), 3)
    M = np.zeros((n, n))
    for b in blocks:
        X = rng.normal(size=(len(b), len(b)))
        M[np.ix_(b, b)] = X @ X.T + len(b) * np.eye(len(b))
    B = rng.normal(size=(n, len(independent)))
    B[independent] = np.eye(len(independent))
    z = rng.normal(size=n)
    z[independent] = 0.0
    return M, B, z, rng.normal(size=n)


def test_generated_projection_equals_the_dense_products():
    rng = np.random.default_rng(5)
    n, independent = 11, [7, 2, 9]
    M, B, z, F = _case(rng, n, independent)
    upper = [(i, j) for i in range(n) for j in range(i, n) if M[i, j] != 0]
    stored = np.array([M[i, j] for i, j in upper])
    both = [(i, j, f"M[{e}]") for e, (i, j) in enumerate(upper)] + \
        [(j, i, f"M[{e}]") for e, (i, j) in enumerate(upper) if i != j]
    full = [(i, j, f"M[{i}, {j}]") for i in range(n) for j in range(n) if M[i, j] != 0]
    for entries, values in ((both, stored), (full, M)):
        A, rhs = np.full((3, 3), np.nan), np.full(3, np.nan)
        _project(projection_source(n, independent, entries))(B, z, values, F, A, rhs)
        scale = np.abs(B.T @ M @ B).max()
        assert np.abs(A - B.T @ M @ B).max() <= 1e-13 * scale
        assert np.abs(rhs - B.T @ (F - M @ z)).max() <= 1e-13 * np.abs(rhs).max()
        assert np.array_equal(A, A.T)


def test_the_independent_rows_and_zero_entries_cost_nothing():
    # B's identity rows are read as constants, never as B[i, a] of an independent row i
    n, independent = 5, [0, 3]
    entries = [(i, j, f"M[{i}, {j}]") for i in range(n) for j in range(n)]
    source = projection_source(n, independent, entries)
    for i in independent:
        assert f"B[{i}, " not in source and f"z[{i}]" not in source
    assert tree_sum([]) == "0.0" and tree_sum(["a"]) == "a"
    assert tree_sum(list("abcde")) == "((a + b) + (c + (d + e)))"


def test_only_what_the_upper_triangle_reads_is_computed():
    # the independent row 3 (column 1) of M B is needed for A[1, 1:] only
    entries = [(i, j, f"M[{i}, {j}]") for i in range(5) for j in range(5)]
    source = projection_source(5, [0, 3], entries)
    assert "mb3_1 =" in source and "mb3_0 =" not in source
    assert "mb0_0 =" in source and "mb0_1 =" in source and "mb1_0 =" in source
