"""kinedyn._table: homogeneous tuples indexed at run time by kernels typed without their length."""
from typing import NamedTuple

import numba as nb
import numpy as np
import pytest
from numba.core.errors import TypingError

from kinedyn._table import Table, as_table


class Part(NamedTuple):
    a: np.ndarray
    b: np.ndarray


@nb.njit
def _sums(table, n):
    """Writes each entry's sum of ``a`` into its ``b[0]``, returns the total."""
    total = 0.0
    for i in range(n):
        part = table[i]
        part.b[0] = part.a.sum()
        total += part.b[0]
    return total


@nb.njit
def _entry_kernel(parts_, n):
    return _sums(as_table(parts_), n)


def _parts(n):
    return tuple(Part(np.arange(k + 1.0), np.zeros(1)) for k in range(n))


def test_one_kernel_for_every_length_and_its_stores_kept():
    for n in (2, 5, 3):
        parts = _parts(n)
        total = _entry_kernel(parts, n)
        sums = [(k + 1) * k / 2 for k in range(n)]
        assert total == sum(sums)
        assert [p.b[0] for p in parts] == sums  # stores through the entries reach the arrays
    assert len(_entry_kernel.signatures) == 3  # the thin entry kernel: once per length
    assert len(_sums.signatures) == 1          # the kernel on the table: once for all
    assert isinstance(_sums.signatures[0][0], Table)


def test_a_table_needs_a_homogeneous_tuple():
    @nb.njit
    def mixed(x):
        return as_table(x)

    with pytest.raises(TypingError):
        mixed((np.zeros(2), 1.0))
