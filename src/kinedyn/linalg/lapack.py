"""LAPACK routines callable from cached Numba code, and the dense LU of a block by them.

SciPy exports LAPACK through ``scipy.linalg.cython_lapack``; the function addresses are
registered with LLVM under stable names and declared as external functions, so compiled kernels
call them directly (no Python, no allocation) and Numba can still cache the kernels on disk
(ctypes function pointers would make them uncacheable).
"""
from __future__ import annotations

import llvmlite.binding as llvm
import numba as nb
from numba import types
from numba.extending import get_cython_function_address

from .._jit import INLINED, INLINED_WORKER

_I = types.CPointer(types.int32)
_D = types.CPointer(types.float64)
_C = types.CPointer(types.uint8)

_SIGNATURES = {
    "dgetrf": types.void(_I, _I, _D, _I, _I, _I),               # m, n, a, lda, ipiv, info
    "dgetrs": types.void(_C, _I, _I, _D, _I, _I, _D, _I, _I),   # trans, n, nrhs, a, lda, ipiv, b, ldb, info
    "dpotrf": types.void(_C, _I, _D, _I, _I),                   # uplo, n, a, lda, info
    "dpotrs": types.void(_C, _I, _I, _D, _I, _D, _I, _I),       # uplo, n, nrhs, a, lda, b, ldb, info
}


def _declare(name):
    symbol = f"kinedyn_{name}"
    llvm.add_symbol(symbol, get_cython_function_address("scipy.linalg.cython_lapack", name))
    return types.ExternalFunction(symbol, _SIGNATURES[name])


dgetrf = _declare("dgetrf")
dgetrs = _declare("dgetrs")
dpotrf = _declare("dpotrf")
dpotrs = _declare("dpotrs")


# The dense LU of an n x n block (:func:`.dense.dense_lu`): ``source[k]`` is where entry k of
# the block sits in the caller's values array, ``target[k]`` its position in the column-major
# factors ``a``; ``ints`` holds [n, n (lda), 1 (nrhs), info], ``trans`` 'N', ``scale`` the row
# scales of the last matrix. The LU type's protocol functions (:mod:`.sparse`) call these when
# the solver is a dense one.


@nb.njit(**INLINED_WORKER)
def dense_factorize(n, source, target, pivot_tol, a, ipiv, ints, scale, values):
    """dgetrf of the block of ``values``: 0, or 1 (singular) where LAPACK finds an exactly
    zero pivot or a pivot is negligible against the matrix's largest row scale."""
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
def dense_solve(n, a, ipiv, ints, trans, x, rhs):
    """rhs = A^-1 rhs by dgetrs on the factors of :func:`dense_factorize`. dgetrs reads
    contiguous memory, so a strided ``rhs`` (a matrix's column, a slice with a step) is solved
    in the contiguous scratch ``x`` (n,) and copied back. (The test is on the stride: these
    workers run without Numba's runtime, which ``rhs.flags`` needs.)"""
    if n == 0:
        return
    if rhs.strides[0] == rhs.itemsize:
        _getrs(a, ipiv, ints, trans, rhs)
    else:
        for i in range(n):  # (loops: an array assignment would need the runtime too)
            x[i] = rhs[i]
        _getrs(a, ipiv, ints, trans, x)
        for i in range(n):
            rhs[i] = x[i]


@nb.njit(**INLINED_WORKER)
def _getrs(a, ipiv, ints, trans, b):
    dgetrs(trans.ctypes, ints[0:].ctypes, ints[2:].ctypes, a.ctypes, ints[1:].ctypes,
           ipiv.ctypes, b.ctypes, ints[1:].ctypes, ints[3:].ctypes)


@nb.njit(**INLINED)  # into each run kernel's step: a call costs as much as the loop
def dense_det_sign(n, a, ipiv):
    """The sign of det A from dgetrf's factors."""
    negative = 0  # counted without a branch (see sparse._det_sign_w)
    for k in range(n):  # dgetrf's pivots and its row interchanges (1-based ipiv)
        negative += (a[k * n + k] < 0.0) + (ipiv[k] != k + 1)
    return -1.0 if negative & 1 else 1.0
