"""Adjugate and LDUP inverses (HDCA paper section 3) against LAPACK; section 4.4 counts."""
import numpy as np
import pytest

from kinedyn.linalg.inversion import (SINGULAR, count_ldup_operations, inverse_2x2, ldup_inverse,
                                      ldup_workspace, paper_operation_counts)


def _ldup(a):
    n = a.shape[0]
    out = np.zeros_like(a)
    work, piv = ldup_workspace(n, a.dtype)
    assert ldup_inverse(a, out, work, piv) == 0
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 12])
def test_ldup_matches_lapack_on_random_matrices(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        a = rng.normal(size=(n, n))
        ref = np.linalg.inv(a)
        cond = np.linalg.cond(a)
        err = np.abs(_ldup(a) - ref).max() / np.abs(ref).max()
        assert err < 1e-14 * cond * n


def test_ldup_needs_pivoting_and_handles_ill_conditioning():
    # a zero leading entry: fails without partial pivoting
    a = np.array([[0.0, 2, 1, 0], [1, 0, 0, 3], [4, 1, 0, 0], [0, 0, 5, 1]])
    assert np.allclose(_ldup(a) @ a, np.eye(4), atol=1e-14)
    # Hilbert matrices: cond up to ~1e13; accuracy as LAPACK's, relative to the condition
    for n in (4, 6, 9):
        h = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)
        inv = _ldup(h)
        ref = np.linalg.inv(h)
        cond = np.linalg.cond(h)
        assert np.abs(inv - ref).max() / np.abs(ref).max() < 1e-15 * cond * n
        assert np.abs(inv @ h - np.eye(n)).max() < 1e-16 * cond * n * 10


def test_ldup_float32_and_singular():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 4))
    inv32 = _ldup(a.astype(np.float32))
    assert inv32.dtype == np.float32
    assert np.abs(inv32 - np.linalg.inv(a)).max() < 1e-5 * np.linalg.cond(a)
    s = np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])
    work, piv = ldup_workspace(3)
    assert ldup_inverse(s, np.zeros((3, 3)), work, piv) == SINGULAR


def test_adjugate_2x2():
    rng = np.random.default_rng(5)
    for _ in range(50):
        a = rng.normal(size=(2, 2))
        out = np.zeros((2, 2))
        assert inverse_2x2(a, out) == 0
        assert np.allclose(out, np.linalg.inv(a), rtol=1e-13, atol=1e-13 * np.abs(out).max())
    # ill-conditioned: nearly parallel rows
    a = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-9]])
    out = np.zeros((2, 2))
    inverse_2x2(a, out)
    assert np.abs(out - np.linalg.inv(a)).max() / np.abs(out).max() < 1e-6
    assert inverse_2x2(np.array([[1.0, 2.0], [2.0, 4.0]]), out) == SINGULAR


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_operation_counts_of_section_4_4(n):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, n))
    inv, counts = count_ldup_operations(a)
    assert counts == paper_operation_counts(n)
    assert np.allclose(inv, _ldup(a), rtol=0, atol=1e-12 * np.abs(inv).max())


def test_four_by_four_counts_quoted_in_the_paper():
    _, counts = count_ldup_operations(np.eye(4)[::-1] + 0.1)
    assert (counts["mul"], counts["add"], counts["inv"]) == (60, 36, 4)
