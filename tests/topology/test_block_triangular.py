"""Dulmage-Mendelsohn block-triangular form on incidence patterns decomposed by hand."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import structural_rank

from kinedyn.topology import block_triangular


def _blocks(btf):
    return [(b.equations, b.unknowns, b.level, b.depends_on) for b in btf.blocks]


def test_triangular_chain():
    # x0 = f(), x1 = f(x0), x2 = f(x1): three 1x1 blocks in a chain
    btf = block_triangular([[0], [0, 1], [1, 2]], 3)
    assert _blocks(btf) == [((0,), (0,), 0, ()), ((1,), (1,), 1, (0,)), ((2,), (2,), 2, (1,))]
    assert btf.is_square and btf.levels == ((0,), (1,), (2,))


def test_equation_order_does_not_matter():
    # eq1 gives x2, then eq0 gives x1, then eq2 gives x0
    btf = block_triangular([[1, 2], [2], [0, 1]], 3)
    assert [(b.equations, b.unknowns) for b in btf.blocks] == [((1,), (2,)), ((0,), (1,)),
                                                              ((2,), (0,))]


def test_coupled_block_and_independent_blocks():
    # {x0, x1} solved together, x2 alone (independent of them), x3 needs x1 and x2
    btf = block_triangular([[0, 1], [0, 1], [2], [1, 2, 3]], 4)
    assert btf.sizes() == [2, 1, 1]
    (b0, b1, b2) = btf.blocks
    assert (b0.equations, b0.unknowns) == ((0, 1), (0, 1))
    assert (b1.equations, b1.unknowns) == ((2,), (2,))
    assert (b2.equations, b2.unknowns, b2.depends_on) == ((3,), (3,), (0, 1))
    assert btf.levels == ((0, 1), (2,))   # the first two can run in parallel


def test_stewart_like_terminal_then_independent_legs():
    """A terminal block, then legs that each need only the terminal (Group Equations, Fig. 1c)."""
    incidence = [[0, 1, 2], [0, 1, 2], [0, 1, 2]]  # the terminal's 3 unknowns, fully coupled
    for leg in range(6):
        a, b = 3 + 2 * leg, 4 + 2 * leg
        incidence += [[leg % 3, a, b], [a, b]]
    btf = block_triangular(incidence, 15)
    assert btf.sizes() == [3] + [2] * 6
    assert btf.blocks[0].unknowns == (0, 1, 2)
    assert all(b.depends_on == (0,) and b.level == 1 for b in btf.blocks[1:])
    assert btf.levels == ((0,), (1, 2, 3, 4, 5, 6))


def test_over_determined_part():
    # x0 is given by two equations: one of them is structurally redundant
    btf = block_triangular([[0], [0], [0, 1]], 2)
    assert btf.redundant_equations == (0, 1) and btf.undetermined_unknowns == ()
    assert [(b.equations, b.unknowns) for b in btf.blocks] == [((2,), (1,))]
    assert not btf.is_square


def test_under_determined_part():
    # one equation for x0 and x1 (a missing driver); x2 is determined on its own
    btf = block_triangular([[0, 1], [2]], 3)
    assert btf.undetermined_unknowns == (0, 1) and btf.redundant_equations == ()
    assert [(b.equations, b.unknowns) for b in btf.blocks] == [((1,), (2,))]


def test_bad_unknown_index():
    with pytest.raises(ValueError, match="outside"):
        block_triangular([[0, 3]], 2)


@st.composite
def incidences(draw):
    n = draw(st.integers(1, 9))
    rows = draw(st.lists(st.sets(st.integers(0, n - 1), min_size=1, max_size=3), min_size=1,
                         max_size=10))
    return [sorted(r) for r in rows], n


@settings(max_examples=60, deadline=None)
@given(incidences())
def test_any_pattern_gives_a_valid_block_triangular_form(case):
    """Blocks partition the well-determined part, each block is structurally nonsingular, and
    ordering equations and unknowns by blocks makes that part block lower-triangular."""
    incidence, n = case
    btf = block_triangular(incidence, n)
    eqs = [e for b in btf.blocks for e in b.equations]
    xs = [x for b in btf.blocks for x in b.unknowns]
    assert len(eqs) == len(set(eqs)) == len(xs) == len(set(xs))
    assert not set(eqs) & set(btf.redundant_equations)
    assert not set(xs) & set(btf.undetermined_unknowns)
    A = np.zeros((len(incidence), n), bool)
    for i, row in enumerate(incidence):
        A[i, row] = True
    where = {x: k for k, b in enumerate(btf.blocks) for x in b.unknowns}
    for k, b in enumerate(btf.blocks):
        sub = A[np.ix_(b.equations, b.unknowns)]
        assert structural_rank(csr_matrix(sub.astype(float))) == len(b.unknowns)
        for e in b.equations:  # an equation uses unknowns of its own block or earlier ones
            for x in incidence[e]:
                if x in where:
                    assert where[x] <= k
                    if where[x] < k:  # a direct dependency, recorded in the DAG
                        assert where[x] in b.depends_on
        # the well-determined part never uses an undetermined unknown
        assert not set(np.flatnonzero(A[list(b.equations)].any(axis=0))) & set(
            btf.undetermined_unknowns)

