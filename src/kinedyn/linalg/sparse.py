"""Sparse LU with a static pivot order: analyse once (SuperLU), refactorise compiled per step.

Analysis (Python, once per pattern, again only if a pivot degrades): SciPy's SuperLU factorises
a sample matrix with a COLAMD column order and threshold partial pivoting; its row and column
permutations are kept, and the fill pattern of ``B = Pr A Pc`` without further pivoting is
computed symbolically (row by row: the pattern of row i of L\\U is its own pattern plus the U
pattern of every earlier row it eliminates with). Numeric factorisation (compiled, no allocation)
is the up-looking Doolittle elimination on that fixed pattern, so its cost is the true fill,
not n^3; because the pivot sequence is static, the position in L\\U that every update
``b_ij -= l_ik u_kj`` writes is computed once at analysis (``update``), and the numeric phase is
a straight run over that list (no dense row accumulator to scatter into and gather from). The pivot order stays trustworthy while the multipliers stay bounded (threshold
pivoting guarantees |l_ik| <= 1/diag_pivot_thresh = 10 when it is chosen): a multiplier above
``growth_limit`` or a pivot below ``pivot_tol`` times its row's scale returns status 2 so the
caller re-analyses with the current values - unless the work holds a *dense fall-back*
(:func:`with_fallback`, blocks of up to ``FALLBACK_LIMIT`` rows): then the same compiled call
factorises the block densely with partial pivoting instead, and the solutions use those
factors until a factorisation by the static order succeeds again. A crank that turns full
circles degrades every static order of its block four times a turn; the fall-back keeps such
runs in compiled code (each re-analysis is a return to Python: driven four-bar, 20 000 steps,
1.8 -> 0.35 µs per step global, 4.9 -> 0.5 by groups).

Every index array is ``uint32``: Numba indexes with an unsigned integer without the
negative-index wrap-around test it emits for a signed one, which made the Stewart platform's
refactorisation 1.7 -> 1.1 µs and a solution 0.8 -> 0.6 µs (102 coordinates).

Patterns of moderate size also get the same three operations as straight-line machine code
(:mod:`.lu_codegen`, generated at analysis): the compiled protocol functions call it when the
solver has it and the arrays are C-contiguous, else run the loops here; the results are the
same to the bit.

The dense LU (:mod:`.dense`, LAPACK) is the same compiled type, :class:`LU` with its
``lapack`` flag set, so a run kernel compiled for one solver serves the other; the protocol
functions here branch on the flag at run time.
"""
from __future__ import annotations

import os
from typing import NamedTuple

import numba as nb
import numpy as np
import scipy.sparse as sps
import heapq
from scipy.sparse.linalg import splu

from .._jit import INLINED, INLINED_WORKER, overload_inlined
from .._llvm import call
from ..formulations import protocol
from . import lu_codegen
from .lu_codegen import (CODE_WIDTH, FACTORIZE, LU_OFFSET, NO_CODE, ROW_OFFSET, SOLVE,
                         SOLVE_PAIR)
from .lapack import dense_det_sign, dense_factorize, dense_solve
from .small import lu_factor, lu_solve
from .subsystem import Block

OK, SINGULAR, REPIVOT = 0, 1, 2
INDEX = np.uint32  # every index array (see the module docstring)


#: LAPACK's arguments of a sparse solver's work, which never reads them (:class:`LUWork`)
NO_PIVOTS = np.zeros(0, np.int32)
NOT_TRANSPOSED = np.array([ord("N")], np.uint8)


class LU(NamedTuple):
    """The compiled LU solver type: the static-pivot sparse LU of this module or, with
    ``lapack`` set, LAPACK's dense LU of the block (:func:`.dense.dense_lu`: ``source`` and
    ``target`` place the entries in the column-major factors ``LUWork.lu``; the sparse
    pattern's arrays are empty). One type for both, so a kernel compiled for one serves the
    other: the protocol functions branch on ``lapack`` at run time."""
    n: int
    source: np.ndarray     # (nnz_A,) entry positions in the caller's values array
    target: np.ndarray     # (nnz_A,) positions in the LU values
    lu_indptr: np.ndarray  # (n + 1,) row-wise pattern of L\U of B = Pr A Pc
    lu_indices: np.ndarray
    lu_diag: np.ndarray    # (n,) position of each diagonal entry
    row_perm: np.ndarray   # B row i is A row row_perm[i]
    col_perm: np.ndarray   # B column j is A column col_perm[j]
    target_row: np.ndarray  # (nnz_A,) B row of each entry (its row scale)
    fill_pos: np.ndarray   # L\U positions that are not entries of A (fill-in, start at 0)
    update: np.ndarray     # (n_update,) position of each elimination update, in order
    pivot_tol: float
    growth_limit: float
    code: np.ndarray = NO_CODE  # generated code (:mod:`.lu_codegen`, per block) or zeros
    parity: float = 1.0    # det(Pr) det(Pc): det A = parity * the product of the pivots
    lapack: bool = False   # a dense solver (LAPACK)


class LUWork(NamedTuple):
    lu: np.ndarray     # L\U values
    x: np.ndarray      # (n,) permuted solution
    x2: np.ndarray     # (n,) permuted second solution (solve_pair)
    scale: np.ndarray  # (n,) row scales of B
    inv_diag: np.ndarray  # (n,) reciprocals of the pivots (of either factorisation)
    dense: np.ndarray  # (n, n) dense factors of B (the fall-back), or (0, 0): none
    piv: np.ndarray    # (n,) int64 their row interchanges, or (0,)
    fallback: np.ndarray  # (1,) 0.0: the static order's factors hold; else det(Pr Pc P) = +-1:
    # the dense ones do (with the parity of their interchanges, for det_sign)
    ipiv: np.ndarray = NO_PIVOTS  # a dense solver's: (n,) int32 dgetrf's row interchanges,
    ints: np.ndarray = NO_PIVOTS  # [n, n, 1, info] int32,
    trans: np.ndarray = NOT_TRANSPOSED  # 'N'; lu then holds its (n * n,) column-major factors


#: Largest block that gets a dense fall-back (:func:`with_fallback`): its n x n copy stays in a
#: core's L1 cache (4.6 kB) and its dense factorisation (n^3 / 3 multiply-adds) costs a few
#: microseconds, a fraction of a return to Python for a re-analysis
FALLBACK_LIMIT = 24
FALLBACK_SWITCH = "KINEDYN_SPARSE_FALLBACK"  # "0": no solver analysed from now on gets one


def sparse_work(n: int, n_lu: int) -> LUWork:
    """Scratch for a solver of ``n`` rows with ``n_lu`` L\\U entries, without a fall-back."""
    return LUWork(np.zeros(n_lu), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n),
                  np.zeros((0, 0)), np.zeros(0, np.int64), np.zeros(1))


def with_fallback(work: LUWork, n: int) -> LUWork:
    """``work`` with room for the dense fall-back (module docstring) when the block has at most
    ``FALLBACK_LIMIT`` rows and the environment variable ``KINEDYN_SPARSE_FALLBACK`` is not
    ``0``; unchanged otherwise. For callers for which a degraded order means nothing but the
    order: the kinematic position problem (whose singular configurations are told by the
    sign of det Phi_q and by the dense factorisation itself) and the dynamics' KKT, mass and
    penalty matrices. Not for coordinate partitioning's dependent block, whose degraded order
    is the signal to choose new dependent coordinates."""
    if n > FALLBACK_LIMIT or os.environ.get(FALLBACK_SWITCH, "1") == "0":
        return work
    return work._replace(dense=np.zeros((n, n)), piv=np.zeros(n, np.int64))


ORDERINGS = ("COLAMD", "MMD_ATA", "MMD_AT_PLUS_A", "NATURAL")  # SuperLU's column orders
#: SuperLU's threshold partial pivoting: a pivot at least this fraction of its column's largest
#: entry, so every multiplier is within 1 / DIAG_PIVOT_THRESH where the order is analysed
DIAG_PIVOT_THRESH = 0.1


#: Largest work (:func:`cost`) of a block-diagonal solver whose blocks' rows are interleaved
#: (:func:`block_diagonal`): about the L2 cache of one core (0.5 MB) in index and value arrays.
INTERLEAVE_LIMIT = 100_000


def cost(solver: LU) -> int:
    """Work of one factorisation and one solution: elimination updates plus L\\U entries."""
    return len(solver.update) + fill(solver)


def analyse(block: Block, sample_values: np.ndarray, pivot_tol: float = 1e-10,
            diag_pivot_thresh: float = DIAG_PIVOT_THRESH, growth_limit: float = 1e3,
            orderings=("COLAMD",), codegen: bool = True) -> tuple[LU, LUWork]:
    """Choose the pivot order from ``sample_values`` (the caller's full values array).

    With several column ``orderings`` (SuperLU's names, e.g. :data:`ORDERINGS`) each is
    analysed and the one with the least :func:`cost` kept (the first on a tie). No single
    fill-reducing heuristic wins on every mechanism: the Stewart platform's Jacobian (102
    coordinates) needs 510 updates with COLAMD and 498 in its natural order, each of its
    six 15 x 15 leg blocks 97 on average with COLAMD and 78 with MMD on AᵀA.

    The chosen analysis gets straight-line code for its pattern (:func:`with_code`) unless
    ``codegen`` is False.
    """
    return _cheapest(block, sample_values, pivot_tol, diag_pivot_thresh, growth_limit,
                     orderings, codegen)[1]


def analyse_keeping_order(block: Block, sample_values: np.ndarray, ordering: str | None = None,
                          codegen: bool = True):
    """``(order, (solver, work))``: :func:`analyse` in the given column ``ordering``, or, when
    it is None (the first analysis), in the cheapest of :data:`ORDERINGS` - each analysed once,
    the cheapest one's analysis returned with its name. A caller that re-analyses during a run
    (a degraded pivot) passes the name back: whether a singular configuration shows as a
    vanishing static pivot depends on the order, so it must not change with the values at the
    point of failure."""
    return _cheapest(block, sample_values, 1e-10, DIAG_PIVOT_THRESH, 1e3,
                     ORDERINGS if ordering is None else (ordering,), codegen)


class PivotOrders:
    """The static pivot orders a run has analysed, taken again where they still hold.

    A static order degrades where an entry it pivots on passes through zero. The natural
    coordinates of a crank that turns full circles put the cosine and the sine of its angle
    on pivots, each of which vanishes twice a turn, and the run keeps coming back to the same
    few orders: the driven four-bar at dt = 0.01 re-analyses 800 times in 20 000 steps, each time
    paying SuperLU's analysis, the symbolic factorisation and SciPy's matrices (about
    0.5 ms). :meth:`analyse` first factorises each of the last :attr:`KEEP` orders of the
    same block (newest first) at the new values, and takes the first one whose multipliers
    stay within the bound a fresh analysis guarantees there (1 / ``DIAG_PIVOT_THRESH`` = 10,
    threshold pivoting) and whose pivots pass the usual test: by that measure it is as good
    there as a new analysis. Only if none does is SuperLU asked, in the column order of the
    first analysis (kept: see :func:`analyse_keeping_order`). The order in use when
    :meth:`analyse` is called is the one that just degraded, and is not taken again. The
    caller asks for a fresh analysis (``reuse=False``) where a vanishing static pivot may mean
    a singular configuration: whether it shows depends on the order, so there the order must
    be SuperLU's, as before (:meth:`.kinematics.Kinematics.simulate`).
    """
    KEEP = 8

    def __init__(self, codegen: bool = True, own=None, fallback: bool = False):
        self.codegen = codegen
        self.own = own        # applied to a new analysis's work (e.g. a thread's own memory)
        self.fallback = fallback  # new analyses' work gets the dense fall-back (with_fallback)
        self.ordering = None  # SuperLU's column order, chosen at the first analysis
        self.kept = []        # [(block, solver, work)], newest first; [0] is the one in use
        self.analyses = 0     # by SuperLU
        self.reused = 0       # kept orders taken again
        self.last_reused = False

    def analyse(self, block: Block, values: np.ndarray,
                reuse: bool = True) -> tuple[LU, LUWork]:
        """A solver for ``block`` whose order holds at ``values`` (the full values array); a new
        analysis without looking at the kept orders when ``reuse`` is False."""
        for k in range(1, len(self.kept) if reuse else 0):
            kept_block, solver, work = self.kept[k]
            if _same_block(kept_block, block) and _holds(solver, work, values):
                self.kept.insert(0, self.kept.pop(k))
                self.reused += 1
                self.last_reused = True
                return solver, work
        self.ordering, (solver, work) = analyse_keeping_order(block, values, self.ordering,
                                                              self.codegen)
        if self.fallback:
            work = with_fallback(work, solver.n)
        if self.own is not None:
            work = self.own(work)
        self.analyses += 1
        self.last_reused = False
        self.kept.insert(0, (block, solver, work))
        del self.kept[self.KEEP:]
        return solver, work


def _same_block(a: Block, b: Block) -> bool:
    return a is b or all(np.array_equal(x, y) for x, y in
                         ((a.source, b.source), (a.indptr, b.indptr), (a.indices, b.indices)))


def _holds(solver: LU, work: LUWork, values: np.ndarray) -> bool:
    """Whether ``solver``'s static order factorises ``values`` with the multipliers a fresh
    threshold-pivoting analysis would guarantee there (:class:`PivotOrders`)."""
    s, w = solver, work
    return _factorize_w(s.n, s.source, s.target, s.target_row, s.fill_pos, s.update,
                        s.lu_indptr, s.lu_indices, s.lu_diag, s.pivot_tol,
                        1.0 / DIAG_PIVOT_THRESH, w.lu, w.scale, w.inv_diag, values) == OK


def _cheapest(block, sample_values, pivot_tol, diag_pivot_thresh, growth_limit, orderings,
              codegen):
    best = None
    for spec in orderings:
        try:
            cand = _analyse_order(block, sample_values, pivot_tol, diag_pivot_thresh,
                                  growth_limit, spec)
        except RuntimeError:  # "Factor is exactly singular": the same for every order
            if best is None and spec == orderings[-1]:
                raise
            continue
        if best is None or cost(cand[0]) < cost(best[1][0]):
            best = (spec, cand)
    spec, (solver, work) = best
    return spec, (with_code(solver, codegen), work)


def with_code(solver: LU, codegen: bool = True) -> LU:
    """The solver with generated straight-line code for its pattern (:mod:`.lu_codegen`; the
    loops when ``codegen`` is False, the pattern is empty or its :func:`cost` exceeds
    ``lu_codegen.LIMIT``, or the environment variable ``KINEDYN_SPARSE_CODEGEN`` is ``0``)."""
    wanted = (codegen and solver.n > 0 and cost(solver) <= lu_codegen.LIMIT
              and os.environ.get(lu_codegen.SWITCH, "1") != "0")
    return solver._replace(code=lu_codegen.compile_solver(solver) if wanted else NO_CODE)


def with_codes(solvers, threads: int = 1) -> list[LU]:
    """:func:`with_code` for several solvers that a run on ``threads`` threads uses at every
    step (the structural groups of a kinematic analysis), when their total :func:`cost` per
    thread is within ``lu_codegen.TOTAL_LIMIT``; beyond it all keep the loops. Straight-line
    code is as long as the work it does, and many large codes run one after the other no
    longer stay in the core's caches. Serial paper step against global-sparse (loops) in the
    same run: scissor-platform-22x29, 22 legs of work 10 700 each (235 000), 1666 against
    828 µs with every leg's code, 637 against 759 µs with the loops; 22x19 (150 000) 0.96 of
    global with the code, 0.86 with the loops; 16x29 (170 000) 0.84 with the code; 22x9
    (66 000) 0.69 with the code, 0.86 with the loops."""
    solvers = list(solvers)
    coded = sum(cost(s) for s in solvers) <= lu_codegen.TOTAL_LIMIT * max(threads, 1)
    return [with_code(s, coded) for s in solvers]


def _analyse_order(block, sample_values, pivot_tol, diag_pivot_thresh, growth_limit, spec):
    n = block.n
    A = block.matrix(sample_values).tocsc()
    if n == 0:
        empty = np.zeros(0, INDEX)
        return (LU(0, empty, empty, np.zeros(1, INDEX), empty, empty, empty, empty, empty,
                   empty, empty, pivot_tol, growth_limit),
                sparse_work(0, 0))
    lu = splu(A, permc_spec=spec, diag_pivot_thresh=diag_pivot_thresh,
              options={"SymmetricMode": False})
    # Pr A Pc = L U with A row i -> B row perm_r[i] and A column i -> B column perm_c[i]
    inv_row = np.asarray(lu.perm_r, np.int64)
    inv_col = np.asarray(lu.perm_c, np.int64)
    row_perm = np.empty(n, np.int64)
    row_perm[inv_row] = np.arange(n)
    col_perm = np.empty(n, np.int64)
    col_perm[inv_col] = np.arange(n)
    # symbolic factorisation of B, row by row
    Acsr = block.matrix(sample_values)
    rows_pattern = [set() for _ in range(n)]
    for r in range(n):
        for p in range(Acsr.indptr[r], Acsr.indptr[r + 1]):
            rows_pattern[inv_row[r]].add(int(inv_col[Acsr.indices[p]]))
    upper: list[list[int]] = []
    patterns = []
    for i in range(n):
        pat = set(rows_pattern[i]) | {i}
        pending = sorted(k for k in pat if k < i)
        done = set()
        heap = list(pending)
        heapq.heapify(heap)
        while heap:
            k = heapq.heappop(heap)
            if k in done:
                continue
            done.add(k)
            for j in upper[k]:
                if j not in pat:
                    pat.add(j)
                    if j < i:
                        heapq.heappush(heap, j)
        cols = sorted(pat)
        patterns.append(cols)
        upper.append([j for j in cols if j > i])
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum([len(p) for p in patterns])
    indices = np.concatenate([np.array(p, np.int64) for p in patterns])
    diag = np.array([indptr[i] + patterns[i].index(i) for i in range(n)], np.int64)
    pos = {}
    for i in range(n):
        for k, c in enumerate(patterns[i]):
            pos[(i, c)] = indptr[i] + k
    target = np.empty(len(block.source), np.int64)
    local_rows = np.repeat(np.arange(n), np.diff(block.indptr))
    for k in range(len(block.source)):
        target[k] = pos[(int(inv_row[local_rows[k]]), int(inv_col[block.indices[k]]))]
    fill_pos = np.setdiff1d(np.arange(len(indices)), target).astype(np.int64)
    update = [pos[(i, c)] for i in range(n) for k in patterns[i] if k < i
              for c in upper[k]]  # the order _factorize_w consumes them
    ix = lambda a: np.asarray(a).astype(INDEX)  # noqa: E731
    solver = LU(n, ix(block.source), ix(target), ix(indptr), ix(indices), ix(diag),
                ix(row_perm), ix(col_perm), ix(inv_row[local_rows]), ix(fill_pos), ix(update),
                float(pivot_tol), float(growth_limit),
                parity=permutation_sign(row_perm) * permutation_sign(col_perm))
    return solver, sparse_work(n, len(indices))


def block_diagonal(parts) -> tuple[LU, LUWork]:
    """One solver for the block-diagonal matrix of several analysed blocks ``parts``
    [(LU, LUWork)]: block k's rows and columns follow those of the blocks before it (its
    local numbering shifted by their sizes).

    The factors of a block-diagonal matrix are the blocks' own factors: every pivot, fill
    entry and elimination update is a block's, so one factorisation or solution of the whole
    does, entry for entry and in the same order within each block, the arithmetic of each
    block alone (bit-identical results), in one call instead of one per block. The blocks'
    pivot rows are *interleaved* (the first pivot of every block, then the second of every
    block, ...): a block's elimination and its triangular solutions are chains of dependent
    multiply-adds, and consecutive rows of different blocks are independent, so the processor
    overlaps the chains of several blocks (the order of each block's own rows is unchanged).
    Used for the independent structural groups of one DAG level
    (:mod:`kinedyn.kinematics.grouped`).

    Interleaving pays while the whole fits a core's caches: past :data:`INTERLEAVE_LIMIT` of
    work the blocks are laid out one after the other, so that the rows a block's updates
    read stay near each other (same arithmetic, same results). Serial paper step of
    scissor-platform-22x29 (22 legs of 365 coordinates, work 235 000, no generated code),
    interleaved against block after block in the same process: 1397 against 1057 µs, and
    1557 against 1471 µs in a second run; 16x29 (170 000) 980 against 917 µs.

    The whole gets generated code of its own (:func:`with_code`) when its work is within
    ``lu_codegen.LIMIT``. Beyond that, when every block has code, the blocks are laid out one
    after the other instead (not interleaved) and the whole calls each block's code on its
    part of the arrays, so no large pattern is compiled (scissor-platform-22x4: a DAG level of
    22 legs of 65 coordinates, work 16 600, its serial paper step 98-101 -> 80-84 µs; a
    thread's 11 legs as one code took about 90 s to compile).
    """
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    tols = {(s.pivot_tol, s.growth_limit) for s, _ in parts}
    if len(tols) != 1:
        raise ValueError(f"blocks analysed with different pivot thresholds: {sorted(tols)}")
    (pivot_tol, growth_limit), = tols
    i64 = lambda a: np.asarray(a, np.int64)  # noqa: E731
    sizes = [s.n for s, _ in parts]
    offset = np.concatenate([[0], np.cumsum(sizes)])  # block rows / columns in the matrix
    coded = all(s.code[FACTORIZE] != 0 for s, _ in parts)
    total = sum(cost(s) for s, _ in parts)
    by_blocks = coded and total > lu_codegen.LIMIT
    # new pivot number of (block, pivot i): round robin over the blocks that have a pivot i, or
    # block after block when each block keeps its own code or the whole is too large
    order = sorted(((i, k) for k, n in enumerate(sizes) for i in range(n)),
                   key=(lambda ik: (ik[1], ik[0]))
                   if by_blocks or total > INTERLEAVE_LIMIT else None)
    new = [np.zeros(n, np.int64) for n in sizes]
    for r, (i, k) in enumerate(order):
        new[k][i] = r
    n = len(order)
    indptr, indices, diag, row_perm, col_perm, update = [0], [], [], [], [], []
    lu_start = [np.zeros(m, np.int64) for m in sizes]  # new L\U position of each old row
    for r, (i, k) in enumerate(order):  # the rows' patterns, in the new order
        s = parts[k][0]
        ptr = i64(s.lu_indptr)
        lu_start[k][i] = indptr[-1]
        indices.append(new[k][i64(s.lu_indices[ptr[i]:ptr[i + 1]])])
        diag.append(indptr[-1] + int(s.lu_diag[i]) - ptr[i])
        row_perm.append(int(s.row_perm[i]) + offset[k])
        col_perm.append(int(s.col_perm[i]) + offset[k])
        indptr.append(indptr[-1] + ptr[i + 1] - ptr[i])

    def moved(k, pos):
        """New L\\U positions of block k's old positions ``pos``."""
        ptr = i64(parts[k][0].lu_indptr)
        pos = i64(pos)
        row = np.searchsorted(ptr, pos, side="right") - 1
        return lu_start[k][row] + pos - ptr[row]

    starts = [_update_starts(s) for s, _ in parts]
    for i, k in order:  # each old row's elimination updates, in the new row order
        a, b = starts[k][i], starts[k][i + 1]
        update.append(moved(k, parts[k][0].update[a:b]))
    target = np.concatenate([moved(k, s.target) for k, (s, _) in enumerate(parts)])
    target_row = np.concatenate([new[k][i64(s.target_row)] for k, (s, _) in enumerate(parts)])
    fill_pos = np.concatenate([moved(k, s.fill_pos) for k, (s, _) in enumerate(parts)])
    source = np.concatenate([i64(s.source) for s, _ in parts])
    ix = lambda a: np.asarray(a).astype(INDEX)  # noqa: E731
    solver = LU(n, ix(source), ix(target), ix(indptr), ix(np.concatenate(indices)), ix(diag),
                ix(row_perm), ix(col_perm), ix(target_row), ix(np.sort(fill_pos)),
                ix(np.concatenate(update)), pivot_tol, growth_limit,
                parity=permutation_sign(row_perm) * permutation_sign(col_perm))
    if by_blocks:  # each block's code on its L\U entries and rows, which now follow each other
        code = []
        for k, (s, _) in enumerate(parts):
            c = np.array(s.code, np.int64).reshape(-1, CODE_WIDTH)
            c[:, LU_OFFSET] += lu_start[k][0]
            c[:, ROW_OFFSET] += offset[k]
            code.append(c.ravel())
        solver = solver._replace(code=np.concatenate(code))
    else:
        solver = with_code(solver, coded)
    work = sparse_work(n, indptr[-1])
    if all(len(w.piv) for _, w in parts):  # each block has one: so has the whole, if small
        work = with_fallback(work, n)
    return solver, work


def _update_starts(s: LU) -> np.ndarray:
    """(n + 1,) where each row's elimination updates start in ``s.update``: the rows consume
    the list in order, one update per entry of U's row k for each multiplier l_ik."""
    ptr, ind, dg = (np.asarray(a, np.int64) for a in (s.lu_indptr, s.lu_indices, s.lu_diag))
    u_len = ptr[1:] - dg - 1  # entries of U's row k right of the diagonal
    per_row = [int(u_len[ind[ptr[j]:dg[j]]].sum()) for j in range(s.n)]
    return np.concatenate([[0], np.cumsum(per_row)]).astype(np.int64)


def permutation_sign(perm) -> float:
    """The sign of permutation ``perm`` (its determinant): -1.0 for an odd number of
    transpositions, +1.0 for an even one (a cycle of length L is L - 1 transpositions)."""
    perm = np.asarray(perm, np.int64)
    seen = np.zeros(len(perm), bool)
    odd = 0
    for start in range(len(perm)):
        j, length = start, 0
        while not seen[j]:
            seen[j] = True
            j = perm[j]
            length += 1
        odd ^= max(length - 1, 0) & 1
    return -1.0 if odd else 1.0


def fill(solver: LU) -> int:
    """Number of entries of L\\U (the cost driver)."""
    return int(solver.lu_indptr[-1])


@nb.njit(**INLINED_WORKER)
def _factorize_w(n, source, target, target_row, fill_pos, update, lu_indptr, lu_indices, lu_diag,
                 pivot_tol, growth_limit, lu, scale, inv_diag, values):
    for p in fill_pos:
        lu[p] = 0.0
    for i in range(n):
        scale[i] = 0.0
    for k in range(source.shape[0]):  # B = Pr A Pc into the pattern, and the row scales of B
        v = values[source[k]]
        lu[target[k]] = v
        i = target_row[k]
        if abs(v) > scale[i]:
            scale[i] = abs(v)
    c = 0
    for i in range(n):  # row i of L\U: eliminate with earlier rows, in increasing column order
        for p in range(lu_indptr[i], lu_diag[i]):
            k = lu_indices[p]
            lik = lu[p] * inv_diag[k]
            if abs(lik) > growth_limit:
                return REPIVOT
            lu[p] = lik
            for r in range(lu_diag[k] + 1, lu_indptr[k + 1]):  # b_ij -= l_ik u_kj
                lu[update[c]] -= lik * lu[r]
                c += 1
        piv = lu[lu_diag[i]]
        if piv == 0.0 or abs(piv) <= pivot_tol * scale[i]:
            return REPIVOT
        inv_diag[i] = 1.0 / piv
    return OK


@nb.njit(**INLINED_WORKER)
def _solve_w(n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag, x, rhs):
    for i in range(n):  # L y = Pr b (unit diagonal)
        v = rhs[row_perm[i]]
        for p in range(lu_indptr[i], lu_diag[i]):
            v -= lu[p] * x[lu_indices[p]]
        x[i] = v
    for i in range(n - 1, -1, -1):  # U z = y
        v = x[i]
        for p in range(lu_diag[i] + 1, lu_indptr[i + 1]):
            v -= lu[p] * x[lu_indices[p]]
        x[i] = v * inv_diag[i]
    for j in range(n):  # x = Pc z
        rhs[col_perm[j]] = x[j]


@nb.njit(**INLINED_WORKER)
def _solve_pair_w(n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag, x, y, a,
                  b):
    """Two right-hand sides in one pass over the factors: the two recurrences are independent,
    so the second costs little more than loading its values (a single solution is bound by
    the latency of its chain of multiply-adds)."""
    for i in range(n):
        u = a[row_perm[i]]
        v = b[row_perm[i]]
        for p in range(lu_indptr[i], lu_diag[i]):
            u -= lu[p] * x[lu_indices[p]]
            v -= lu[p] * y[lu_indices[p]]
        x[i] = u
        y[i] = v
    for i in range(n - 1, -1, -1):
        u = x[i]
        v = y[i]
        for p in range(lu_diag[i] + 1, lu_indptr[i + 1]):
            u -= lu[p] * x[lu_indices[p]]
            v -= lu[p] * y[lu_indices[p]]
        x[i] = u * inv_diag[i]
        y[i] = v * inv_diag[i]
    for j in range(n):
        a[col_perm[j]] = x[j]
        b[col_perm[j]] = y[j]


@nb.njit(**INLINED_WORKER)
def _fall_back_w(st, n, source, target, target_row, lu_indices, pivot_tol, parity, values,
                 dense, piv, fallback, inv_diag):
    """The status ``st`` of a factorisation by the static order, settled: where the order
    degraded (REPIVOT) and the work has a dense fall-back (:func:`with_fallback`), B = Pr A Pc
    is factorised densely with partial pivoting instead (OK; SINGULAR where a whole pivot
    column is within ``pivot_tol`` of the largest entry: the dense solver's test, which tells
    the parallelogram's change point), ``fallback[0]`` set to the parity that det_sign reads
    and ``inv_diag`` to the reciprocals of its pivots. (Rows scaled to 1 first made the test
    relative to each row, like the static order's, but passed the change point: tried and
    reverted.)"""
    fallback[0] = 0.0  # the static factors, or none (set below once the dense ones hold)
    if st != REPIVOT or dense.shape[0] == 0:
        return st
    for i in range(n):
        for j in range(n):
            dense[i, j] = 0.0
    big = 0.0
    for k in range(source.shape[0]):
        v = values[source[k]]
        dense[target_row[k], lu_indices[target[k]]] = v
        big = max(big, abs(v))
    if not lu_factor(dense, n, piv, pivot_tol * big):
        return SINGULAR
    sign = parity  # det A = det(Pr) det(Pc) det B, det B = (-1)^(interchanges) prod U_kk
    for k in range(n):
        if piv[k] != k:
            sign = -sign
        inv_diag[k] = 1.0 / dense[k, k]
    fallback[0] = sign
    return OK


@nb.njit(**INLINED_WORKER)
def _fallback_solve_w(n, row_perm, col_perm, dense, piv, x, rhs):
    """rhs = A^-1 rhs by the dense fall-back's factors of B = Pr A Pc."""
    for i in range(n):
        x[i] = rhs[row_perm[i]]
    lu_solve(dense, n, piv, x)
    for j in range(n):
        rhs[col_perm[j]] = x[j]


@nb.njit(**INLINED_WORKER)
def _loop_solve_w(n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag, x, rhs,
                  dense, piv, fallback, lapack, ipiv, ints, trans):
    if lapack:
        dense_solve(n, lu, ipiv, ints, trans, x, rhs)
    elif fallback[0] != 0.0:
        _fallback_solve_w(n, row_perm, col_perm, dense, piv, x, rhs)
    else:
        _solve_w(n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag, x, rhs)


@nb.njit(**INLINED_WORKER)
def _loop_solve_pair_w(n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag, x,
                       y, a, b, dense, piv, fallback, lapack, ipiv, ints, trans):
    if lapack:
        dense_solve(n, lu, ipiv, ints, trans, x, a)
        dense_solve(n, lu, ipiv, ints, trans, x, b)
    elif fallback[0] != 0.0:
        _fallback_solve_w(n, row_perm, col_perm, dense, piv, x, a)
        _fallback_solve_w(n, row_perm, col_perm, dense, piv, x, b)
    else:
        _solve_pair_w(n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag, x, y,
                      a, b)


@nb.njit(**INLINED_WORKER)
def _loop_factorize_w(n, source, target, target_row, fill_pos, update, lu_indptr, lu_indices,
                      lu_diag, pivot_tol, growth_limit, lu, scale, inv_diag, values, lapack,
                      ipiv, ints):
    """:func:`_factorize_w`, or LAPACK's dense factorisation for a dense solver."""
    if lapack:
        return dense_factorize(n, source, target, pivot_tol, lu, ipiv, ints, scale, values)
    return _factorize_w(n, source, target, target_row, fill_pos, update, lu_indptr, lu_indices,
                        lu_diag, pivot_tol, growth_limit, lu, scale, inv_diag, values)


@nb.njit(cache=True, nogil=True, inline="always")
def sparse_factorize(s, w, values):
    return _fall_back_w(_loop_factorize_w(s.n, s.source, s.target, s.target_row, s.fill_pos,
                                          s.update, s.lu_indptr, s.lu_indices, s.lu_diag,
                                          s.pivot_tol, s.growth_limit, w.lu, w.scale,
                                          w.inv_diag, values, s.lapack, w.ipiv, w.ints),
                        s.n, s.source, s.target, s.target_row, s.lu_indices, s.pivot_tol,
                        s.parity, values, w.dense, w.piv, w.fallback, w.inv_diag)


@nb.njit(cache=True, nogil=True, inline="always")
def sparse_solve(s, w, rhs):
    _loop_solve_w(s.n, s.lu_indptr, s.lu_indices, s.lu_diag, s.row_perm, s.col_perm, w.lu,
                  w.inv_diag, w.x, rhs, w.dense, w.piv, w.fallback, s.lapack, w.ipiv, w.ints,
                  w.trans)


@nb.njit(cache=True, nogil=True, inline="always")
def sparse_solve_pair(s, w, a, b):
    _loop_solve_pair_w(s.n, s.lu_indptr, s.lu_indices, s.lu_diag, s.row_perm, s.col_perm, w.lu,
                       w.inv_diag, w.x, w.x2, a, b, w.dense, w.piv, w.fallback, s.lapack,
                       w.ipiv, w.ints, w.trans)


# the same operations by the solver's generated code when it has some (C-contiguous arrays only:
# the code gets their data pointers), else by the loops above. The choice is made in these
# plain-array workers: a branch in the IR-inlined wrappers made Numba's inliner warn
# (NumbaIRAssumptionWarning) in every integrator that inlines them.
# Each block of ``code`` (one, or the blocks of a block-diagonal solver, see block_diagonal) is
# called on its part of the arrays.
@nb.njit(**INLINED_WORKER)
def _coded_factorize_w(code, n, source, target, target_row, fill_pos, update, lu_indptr,
                       lu_indices, lu_diag, pivot_tol, growth_limit, lu, scale, inv_diag, values,
                       lapack, ipiv, ints):
    if code[FACTORIZE] != 0:  # (a dense solver has none)
        for b in range(0, code.shape[0], CODE_WIDTH):
            st = call(code[b + FACTORIZE], (values, lu, inv_diag),
                      (0, code[b + LU_OFFSET], code[b + ROW_OFFSET]), (pivot_tol, growth_limit))
            if st != OK:
                return st
        return OK
    return _loop_factorize_w(n, source, target, target_row, fill_pos, update, lu_indptr,
                             lu_indices, lu_diag, pivot_tol, growth_limit, lu, scale, inv_diag,
                             values, lapack, ipiv, ints)


@nb.njit(**INLINED_WORKER)
def _coded_solve_w(code, n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag, x,
                   rhs, dense, piv, fallback, lapack, ipiv, ints, trans):
    if code[SOLVE] != 0 and fallback[0] == 0.0:
        for b in range(0, code.shape[0], CODE_WIDTH):
            r = code[b + ROW_OFFSET]
            call(code[b + SOLVE], (lu, inv_diag, rhs), (code[b + LU_OFFSET], r, r), ())
    else:
        _loop_solve_w(n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag, x,
                      rhs, dense, piv, fallback, lapack, ipiv, ints, trans)


@nb.njit(**INLINED_WORKER)
def _coded_solve_pair_w(code, n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag,
                        x, y, a, b, dense, piv, fallback, lapack, ipiv, ints, trans):
    if code[SOLVE_PAIR] != 0 and fallback[0] == 0.0:
        for k in range(0, code.shape[0], CODE_WIDTH):
            r = code[k + ROW_OFFSET]
            call(code[k + SOLVE_PAIR], (lu, inv_diag, a, b), (code[k + LU_OFFSET], r, r, r), ())
    else:
        _loop_solve_pair_w(n, lu_indptr, lu_indices, lu_diag, row_perm, col_perm, lu, inv_diag,
                           x, y, a, b, dense, piv, fallback, lapack, ipiv, ints, trans)


@nb.njit(cache=True, nogil=True, inline="always")
def coded_factorize(s, w, values):
    return _fall_back_w(_coded_factorize_w(s.code, s.n, s.source, s.target, s.target_row,
                                           s.fill_pos, s.update, s.lu_indptr, s.lu_indices,
                                           s.lu_diag, s.pivot_tol, s.growth_limit, w.lu,
                                           w.scale, w.inv_diag, values, s.lapack, w.ipiv,
                                           w.ints),
                        s.n, s.source, s.target, s.target_row, s.lu_indices, s.pivot_tol,
                        s.parity, values, w.dense, w.piv, w.fallback, w.inv_diag)


@nb.njit(cache=True, nogil=True, inline="always")
def coded_solve(s, w, rhs):
    _coded_solve_w(s.code, s.n, s.lu_indptr, s.lu_indices, s.lu_diag, s.row_perm, s.col_perm,
                   w.lu, w.inv_diag, w.x, rhs, w.dense, w.piv, w.fallback, s.lapack, w.ipiv,
                   w.ints, w.trans)


@nb.njit(cache=True, nogil=True, inline="always")
def coded_solve_pair(s, w, a, b):
    _coded_solve_pair_w(s.code, s.n, s.lu_indptr, s.lu_indices, s.lu_diag, s.row_perm,
                        s.col_perm, w.lu, w.inv_diag, w.x, w.x2, a, b, w.dense, w.piv,
                        w.fallback, s.lapack, w.ipiv, w.ints, w.trans)


def _contiguous(*arrays) -> bool:
    return all(getattr(a, "layout", "") == "C" for a in arrays)


@overload_inlined(protocol.factorize, jit_options=protocol.JIT)
def _ov_factorize(solver, work, values):
    if protocol.is_type(solver, LU):
        if _contiguous(values):
            return lambda solver, work, values: coded_factorize(solver, work, values)
        return lambda solver, work, values: sparse_factorize(solver, work, values)


protocol.FUSED_SOLVE_PAIR.add(LU)


@overload_inlined(protocol.solve_pair, jit_options=protocol.JIT)
def _ov_solve_pair(solver, work, a, b):
    if protocol.is_type(solver, LU):
        if _contiguous(a, b):
            return lambda solver, work, a, b: coded_solve_pair(solver, work, a, b)
        return lambda solver, work, a, b: sparse_solve_pair(solver, work, a, b)


@nb.njit(**INLINED)  # into each run kernel's step: a call costs as much as the loop
def _det_sign_w(parity, inv_diag, fallback, lapack, n, lu, ipiv):
    if lapack:
        return dense_det_sign(n, lu, ipiv)
    if fallback[0] != 0.0:  # the dense fall-back's factors hold (its own parity)
        parity = fallback[0]
    # a count, not a sign flipped on a test: the pivots' signs are irregular, and a branch on
    # each mispredicted about half the time (Stewart platform, converged step: 4.1 -> 4.4 us)
    negative = 0
    for i in range(inv_diag.shape[0]):
        negative += inv_diag[i] < 0.0
    return -parity if negative & 1 else parity


@overload_inlined(protocol.det_sign, jit_options=protocol.JIT)
def _ov_det_sign(solver, work):
    if protocol.is_type(solver, LU):
        return lambda solver, work: _det_sign_w(solver.parity, work.inv_diag, work.fallback,
                                                solver.lapack, solver.n, work.lu, work.ipiv)


@overload_inlined(protocol.solve, jit_options=protocol.JIT)
def _ov_solve(solver, work, rhs):
    if protocol.is_type(solver, LU):
        if _contiguous(rhs):
            return lambda solver, work, rhs: coded_solve(solver, work, rhs)
        return lambda solver, work, rhs: sparse_solve(solver, work, rhs)


def csr(block: Block, values: np.ndarray) -> sps.csr_matrix:
    return block.matrix(values)
