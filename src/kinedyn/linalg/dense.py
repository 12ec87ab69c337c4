"""Dense LU (LAPACK dgetrf/dgetrs) with the analyse / factorise / solve life-cycle."""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .._jit import INLINED, INLINED_WORKER, overload_inlined
from ..formulations import protocol
from .lapack import dgetrf, dgetrs
from .subsystem import Block


class DenseLU(NamedTuple):
    """LU with partial pivoting of an n x n block. ``source[k]`` is where entry k of the block
    sits in the caller's values array, ``target[k]`` its position in the column-major matrix."""
    n: int
    source: np.ndarray
    target: np.ndarray
    pivot_tol: float


class DenseLUWork(NamedTuple):
    a: np.ndarray      # (n*n,) column-major factors
    ipiv: np.ndarray   # (n,) int32
    ints: np.ndarray   # [n, n (lda), 1 (nrhs), info] int32
    trans: np.ndarray  # 'N'
    scale: np.ndarray  # (n,) row scale of the last matrix


def dense_lu(block: Block, pivot_tol: float = 1e-10) -> tuple[DenseLU, DenseLUWork]:
    """Solver and work for a square block (see :mod:`.subsystem`)."""
    n = block.n
    local_rows = np.repeat(np.arange(n), np.diff(block.indptr))
    target = block.indices * n + local_rows  # column-major
    solver = DenseLU(n, block.source.copy(), target.astype(np.int64), float(pivot_tol))
    work = DenseLUWork(np.zeros(n * n), np.zeros(n, np.int32),
                       np.array([n, n, 1, 0], np.int32), np.array([ord("N")], np.uint8),
                       np.zeros(n))
    return solver, work


@nb.njit(**INLINED_WORKER)
def _factorize_w(n, source, target, pivot_tol, a, ipiv, ints, scale, values):
    a[:] = 0.0
    scale[:] = 0.0
    for k in range(source.shape[0]):
        v = values[source[k]]
        a[target[k]] = v
        r = target[k] % n
        if abs(v) > scale[r]:
            scale[r] = abs(v)
    if n == 0:
        return 0
    dgetrf(ints[0:].ctypes, ints[1:].ctypes, a.ctypes, ints[1:].ctypes, ipiv.ctypes,
           ints[3:].ctypes)
    if ints[3] != 0:
        return 1
    smax = 0.0
    for r in range(n):
        smax = max(smax, scale[r])
    for k in range(n):  # a pivot negligible against the matrix scale: singular
        if abs(a[k * n + k]) <= pivot_tol * smax:
            return 1
    return 0


@nb.njit(**INLINED_WORKER)
def _solve_w(n, a, ipiv, ints, trans, rhs):
    if n == 0:
        return
    dgetrs(trans.ctypes, ints[0:].ctypes, ints[2:].ctypes, a.ctypes, ints[1:].ctypes,
           ipiv.ctypes, rhs.ctypes, ints[1:].ctypes, ints[3:].ctypes)


@nb.njit(cache=True, nogil=True, inline="always")
def dense_factorize(s, w, values):
    return _factorize_w(s.n, s.source, s.target, s.pivot_tol, w.a, w.ipiv, w.ints, w.scale, values)


@nb.njit(cache=True, nogil=True, inline="always")
def dense_solve(s, w, rhs):
    _solve_w(s.n, w.a, w.ipiv, w.ints, w.trans, rhs)


@overload_inlined(protocol.factorize, jit_options=protocol.JIT)
def _ov_factorize(solver, work, values):
    if protocol.is_type(solver, DenseLU):
        return lambda solver, work, values: dense_factorize(solver, work, values)


@overload_inlined(protocol.solve, jit_options=protocol.JIT)
def _ov_solve(solver, work, rhs):
    if protocol.is_type(solver, DenseLU):
        return lambda solver, work, rhs: dense_solve(solver, work, rhs)


@nb.njit(**INLINED)  # into each run kernel's step: a call costs as much as the loop
def _det_sign_w(n, a, ipiv):
    negative = 0  # counted without a branch (see sparse._det_sign_w)
    for k in range(n):  # dgetrf's pivots and its row interchanges (1-based ipiv)
        negative += (a[k * n + k] < 0.0) + (ipiv[k] != k + 1)
    return -1.0 if negative & 1 else 1.0


@overload_inlined(protocol.det_sign, jit_options=protocol.JIT)
def _ov_det_sign(solver, work):
    if protocol.is_type(solver, DenseLU):
        return lambda solver, work: _det_sign_w(solver.n, work.a, work.ipiv)
