"""LAPACK routines callable from cached Numba code.

SciPy exports LAPACK through ``scipy.linalg.cython_lapack``; the function addresses are
registered with LLVM under stable names and declared as external functions, so compiled kernels
call them directly (no Python, no allocation) and Numba can still cache the kernels on disk
(ctypes function pointers would make them uncacheable).
"""
from __future__ import annotations

import llvmlite.binding as llvm
from numba import types
from numba.extending import get_cython_function_address

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
