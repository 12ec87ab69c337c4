"""Straight-line machine code for one sparse LU pattern: the factorisation and the triangular
solutions of :mod:`.sparse`, unrolled entry by entry, as LLVM IR compiled by llvmlite.

The static-pivot sparse LU does the same arithmetic at every step on a fixed pattern, so the
index arrays it walks (where each entry goes, which update writes where, where each row ends)
are constants. Unrolled, every position becomes an immediate offset, the entries being
eliminated stay in registers, and no loop exit depends on a row's length, the branches that
variable-length rows make unpredictable. Measured on the Stewart platform's Jacobian (102
coordinates, 462 entries, 588 in L\\U, 498 updates; idle AMD EPYC, medians of 7):
factorisation 1.27 -> 0.74 µs, two solutions in one pass 0.77 -> 0.37 µs, one solution
0.65 -> 0.20 µs.

The generated code does the arithmetic of the loops in :mod:`.sparse` in the same order, with
the same checks (a multiplier above the growth limit, a pivot that is zero or small for its row
returns 2, re-analyse), so the results are bit-identical; the tests compare them.

The IR goes to LLVM's MCJIT in this process (:mod:`kinedyn._llvm`: llvmlite, which Numba
ships, no C compiler needed). Compiling takes about 0.4 s for the Stewart platform and grows
with the pattern (scissor-platform-6x4's global Jacobian, work 9579: about 4 s, paper step
30.6 -> 20.4 µs; 6x9, work 24021: about 18 s, 65.4 -> 47.9 µs), so patterns whose work
(:func:`.sparse.cost`) exceeds ``LIMIT`` keep the loops; the object code is cached on disk
(``lu/`` under :func:`kinedyn._cache.cache_root`) and in memory. Compiled kernels call the
functions through their addresses (:func:`kinedyn._llvm.call`).
"""
from __future__ import annotations

import hashlib

import numpy as np

from .._llvm import HEADER, Function, compile_structure

LIMIT = 12000  # largest pattern work (updates + L\U entries) that gets generated code
TOTAL_LIMIT = 100000  # largest work of the codes one thread runs per step (sparse.with_codes)
# a solver's ``code``: per block of its matrix (one, or the blocks of a block-diagonal solver too
# large for code of its own, see sparse.block_diagonal) the addresses of its three functions,
# then the offsets of its L\U entries and of its rows in the whole solver's arrays
FACTORIZE, SOLVE, SOLVE_PAIR, LU_OFFSET, ROW_OFFSET = range(5)
CODE_WIDTH = 5
NO_CODE = np.zeros(CODE_WIDTH, np.int64)
SWITCH = "KINEDYN_SPARSE_CODEGEN"  # "0": every solver analysed from now on uses the loops


def _factorize_ir(s) -> str:
    """``factorize(values, lu, inv_diag, pivot_tol, growth_limit)``: :func:`.sparse._factorize_w`
    unrolled. A row's entries are SSA values while it is eliminated and stored when it is done;
    later rows load the U entries they read (fewer live values: faster to compile and run)."""
    ptr, ind, dg = (np.asarray(a, np.int64) for a in (s.lu_indptr, s.lu_indices, s.lu_diag))
    f = Function("@factorize(ptr noalias %values, ptr noalias %lu, ptr noalias %inv, "
                 "double %tol, double %growth)")
    entry = {}   # L\U position -> its current SSA value (absent: a fill entry, still 0)
    scale = {}   # row -> max |entry| of B's row (for the pivot test)
    for src, tgt, row in zip(np.asarray(s.source, np.int64), np.asarray(s.target, np.int64),
                             np.asarray(s.target_row, np.int64)):
        v = f.load("%values", src)
        entry[int(tgt)] = v
        a = f.abs(v)
        old = scale.get(int(row), "0.0")
        scale[int(row)] = f.value(f"select i1 {f.value(f'fcmp ogt double {a}, {old}')}, "
                                  f"double {a}, double {old}")
    inv = {}
    for i in range(s.n):
        where = {int(ind[p]): p for p in range(ptr[i], ptr[i + 1])}
        for p in range(ptr[i], dg[i]):
            k = int(ind[p])
            lik = f.value(f"fmul double {entry.get(p, '0.0')}, {inv[k]}")
            entry[p] = lik
            f.exit_if(f.value(f"fcmp ogt double {f.abs(lik)}, %growth"), "repivot")
            for r in range(dg[k] + 1, ptr[k + 1]):
                q = where[int(ind[r])]
                entry[q] = f.sub_product(entry.get(q, "0.0"), lik, f.load("%lu", r))
        piv = entry.get(int(dg[i]), "0.0")
        f.exit_if(f.value(f"fcmp oeq double {piv}, 0.0"), "repivot")
        small = f.value(f"fmul double %tol, {scale.get(i, '0.0')}")
        f.exit_if(f.value(f"fcmp ole double {f.abs(piv)}, {small}"), "repivot")
        inv[i] = f.value(f"fdiv double 1.0, {piv}")
        f.store("%inv", i, inv[i])
        for p in range(ptr[i], ptr[i + 1]):
            f.store("%lu", p, entry.pop(p, "0.0"))
    return f.end({"repivot": 2})


def _solve_ir(s, name: str, n_rhs: int) -> str:
    """``name(lu, inv_diag, rhs_0, ...)``: :func:`.sparse._solve_w` (one right-hand side) or
    :func:`.sparse._solve_pair_w` (two, in one pass) unrolled; every right-hand side is read
    before any solution is written, so they are solved in place."""
    ptr, ind, dg = (np.asarray(a, np.int64) for a in (s.lu_indptr, s.lu_indices, s.lu_diag))
    rhs = [f"%r{j}" for j in range(n_rhs)]
    f = Function(f"@{name}(ptr noalias %lu, ptr noalias %inv, "
                 + ", ".join(f"ptr noalias {r}" for r in rhs) + ")")
    factor = {}

    def lu(p):
        if p not in factor:
            factor[p] = f.load("%lu", p)
        return factor[p]
    x = [[""] * s.n for _ in rhs]
    for i in range(s.n):  # L y = Pr b (unit diagonal)
        for j, r in enumerate(rhs):
            v = f.load(r, s.row_perm[i])
            for p in range(ptr[i], dg[i]):
                v = f.sub_product(v, lu(p), x[j][ind[p]])
            x[j][i] = v
    for i in range(s.n - 1, -1, -1):  # U z = y
        d = f.load("%inv", i)
        for j in range(n_rhs):
            v = x[j][i]
            for p in range(dg[i] + 1, ptr[i + 1]):
                v = f.sub_product(v, lu(p), x[j][ind[p]])
            x[j][i] = f.value(f"fmul double {v}, {d}")
    for i in range(s.n):  # x = Pc z
        for j, r in enumerate(rhs):
            f.store(r, s.col_perm[i], x[j][i])
    return f.end()


def module_ir(solver) -> str:
    """The LLVM IR of a solver's three functions (``factorize``, ``solve``, ``solve_pair``)."""
    return "\n".join([HEADER, _factorize_ir(solver), _solve_ir(solver, "solve", 1),
                      _solve_ir(solver, "solve_pair", 2)])


def structure_key(solver) -> bytes:
    """What :func:`module_ir` reads of a solver - its order, fill pattern and the map of the
    matrix's values into it - as one digest."""
    h = hashlib.sha256(str(solver.n).encode())
    for a in (solver.lu_indptr, solver.lu_indices, solver.lu_diag, solver.source, solver.target,
              solver.target_row, solver.row_perm, solver.col_perm):
        h.update(np.ascontiguousarray(a, np.int64).tobytes())
    return h.digest()


def compile_solver(solver) -> np.ndarray:
    """The solver's ``code``: addresses ``[factorize, solve, solve_pair, 0, 0]`` of its generated
    functions (int64), or :data:`NO_CODE` (zeros: use the loops) when LLVM refuses the IR.
    Whether a pattern gets code at all (its work against ``LIMIT``, the
    ``KINEDYN_SPARSE_CODEGEN`` switch) is decided by :func:`.sparse.with_code`. Kept per
    structure for the process: a run that re-analyses its pivot order often comes back to the
    same orders (the four-bar: 800 re-analyses in 20 000 steps), and building the IR again
    took most of a re-analysis."""
    addresses = compile_structure(structure_key(solver), lambda: module_ir(solver),
                                  ("factorize", "solve", "solve_pair"), "lu",
                                  f"sparse LU of a {solver.n} x {solver.n} pattern")
    # a new array: callers may write offsets into it (block_diagonal)
    return NO_CODE.copy() if addresses is None else np.concatenate([addresses, [0, 0]])
