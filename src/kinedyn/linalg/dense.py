"""Dense LU (LAPACK dgetrf/dgetrs) with the analyse / factorise / solve life-cycle.

A dense solver is an :class:`.sparse.LU` whose ``lapack`` flag is set: the same compiled type
as the sparse LU, so that a run kernel compiled for one serves the other (each kernel used to
be compiled once per solver type: about a tenth of a cold test suite's compilation). Its
protocol functions branch on the flag at run time and call :mod:`.lapack`'s workers.
"""
from __future__ import annotations

import numpy as np

from .sparse import INDEX, LU, LUWork
from .subsystem import Block


def dense_lu(block: Block, pivot_tol: float = 1e-10) -> tuple[LU, LUWork]:
    """Solver and work for a square block (see :mod:`.subsystem`): LU with partial pivoting,
    the block's entries placed at ``target`` in the column-major factors ``work.lu``, ``work.x``
    the scratch of a strided right-hand side (:func:`.lapack.dense_solve`)."""
    n = block.n
    local_rows = np.repeat(np.arange(n), np.diff(block.indptr))
    target = (block.indices * n + local_rows).astype(INDEX)  # column-major
    empty = np.zeros(0, INDEX)
    solver = LU(n, block.source.astype(INDEX), target, np.zeros(1, INDEX), empty, empty, empty,
                empty, empty, empty, empty, float(pivot_tol), 0.0, lapack=True)
    work = LUWork(np.zeros(n * n), np.zeros(n), np.zeros(0), np.zeros(n), np.zeros(0),
                  np.zeros((0, 0)), np.zeros(0, np.int64), np.zeros(1),
                  ipiv=np.zeros(n, np.int32), ints=np.array([n, n, 1, 0], np.int32))
    return solver, work
