"""kinedyn._table: homogeneous tuples indexed at run time by kernels typed without their length."""
import os
import subprocess
import sys
import tempfile

import numba as nb
import numpy as np
import pytest

from kinedyn._table import PackedTable, Table, TableCache


# The entries are plain tuples (a, b, flag), not a NamedTuple of this module: the tables'
# store kernel is cached with kinedyn's kernels, and Numba's cache index pickles every type it
# was compiled for, so a type from a test module would make the index unreadable to a process
# that cannot import that module (`make run` after `make test`). ``flag`` is a member whose
# value representation (i1) differs from its data one (i8).


@nb.njit
def _sums(table, n):
    """Writes each entry's sum of ``a`` (plus 10 where ``flag``) into its ``b[0]``, returns
    the total."""
    total = 0.0
    for i in range(n):
        a, b, flag = table[i]
        b[0] = a.sum() + (10.0 if flag else 0.0)
        total += b[0]
    return total


def _parts(n):
    return tuple((np.arange(k + 1.0), np.zeros(1), k % 2 == 1) for k in range(n))


def test_one_kernel_for_every_length_and_its_stores_kept():
    """Tables of 2, 5 and 3 entries run one compiled kernel, called from Python; each entry
    reads its own arrays and flag, and stores through an entry reach the tuple's arrays."""
    for n in (2, 5, 3):
        parts = _parts(n)
        total = _sums(PackedTable(parts), n)
        sums = [(k + 1) * k / 2 + (10.0 if k % 2 == 1 else 0.0) for k in range(n)]
        assert total == sum(sums)
        assert [p[1][0] for p in parts] == sums
    assert len(_sums.signatures) == 1  # once for all lengths
    assert isinstance(_sums.signatures[0][0], Table)
    # a table's type is made once, with the table, not again at every call
    table = PackedTable(_parts(2))
    assert nb.typeof(table) is nb.typeof(table) is table.numba_type == _sums.signatures[0][0]


def test_a_cache_packs_a_tuple_again_only_when_it_changes():
    cache = TableCache()
    parts, other = _parts(3), _parts(4)
    tables = cache(parts, other)
    first, second = tables
    assert cache(parts, other) is tables  # the same tuples: the same tables, typed once
    assert nb.typeof(tables) is tables.numba_type == nb.typeof((first, second))
    again, changed = cache(parts, _parts(4))
    assert again is first and changed is not second
    assert _sums(changed, 4) == sum((k + 1) * k / 2 + 10.0 * (k % 2) for k in range(4))


def test_a_table_needs_a_non_empty_homogeneous_tuple():
    for bad in ((np.zeros(2), 1.0), ()):
        with pytest.raises(TypeError, match="homogeneous tuple"):
            PackedTable(bad)


def test_the_store_kernels_cache_loads_in_a_process_without_the_tests():
    """The tables' store kernel is cached with kinedyn's kernels; a process that cannot import
    the test modules (``make run`` after ``make test``) must still load its cache index, which
    holds every type it was compiled for (see the note on the entries above)."""
    _sums(PackedTable(_parts(2)), 2)  # compiled or loaded here first
    script = ("import numpy as np; from kinedyn._table import PackedTable; "
              "PackedTable(((np.zeros(1), np.zeros(1), True),))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", script], cwd=tempfile.gettempdir(), env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
