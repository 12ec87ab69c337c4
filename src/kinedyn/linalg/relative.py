"""Solvers of the relative-coordinate equations of motion (sparse-relative paper, section 4).

All solve ``a qdd + B^T lam = Q, B qdd = gamma`` (eq. 3 with the DESIGN sign of ``lam``; the
paper's multiplier is ``-lam``) for a symmetric positive definite ``a`` (n x n, the CRBA mass
matrix) and ``B`` (m x n) of full row rank, with an *analyse once -> factorise -> solve*
life-cycle: :func:`analyse` builds a :class:`RelativeSolver` from the patterns and the tree
(Python, once), :func:`solve_accelerations` factorises and solves each step (compiled).

Methods (``SOLVERS``):

* ``augmented``    dense LU with partial pivoting of the (n+m) square matrix of eq. (3)
  (the baseline);
* ``reduced``      reduced Lagrange multipliers, section 4.1: ``a`` by dense Cholesky, then
  ``(B a^-1 B^T) lam' = gamma - B a^-1 Q`` (eq. 6) and ``a qdd = Q + B^T lam'`` (eq. 5);
* ``dbbd``         the same with the sparse Cholesky of Fig. 7 for DBBD matrices: the row
  structure of L (``NQB``/``IDQB``) and its column structure (``NQF``/``IDQF``) come from the
  tree and the numbering; the border (the root block) is eliminated last, i.e. the
  coordinates are factorised in reverse numbering order (the paper's "sequence of row and
  column numbers changed"), so the branch numbering of Fig. 6(a) gives no fill at all;
  a non-positive pivot stops with Fig. 7's ``FAILED`` (status :data:`NOT_SPD`);
* ``block``        recursive block mass matrix, section 4.3, eqs. (7)-(10), for any tree: the
  blocks (one per tree joint) are eliminated from the leaves inwards onto their ancestors
  (block Cholesky ``A_jj <- A_jj - A_ji A_ii^-1 A_ij``), ending on the root block (the
  vehicle's 6 x 6 chassis of eq. 10), then back-substituted base-to-tip (eq. 9);
* ``splu``         SciPy's SuperLU (a library sparse LU of ``a``, COLAMD ordering) inside the
  reduced method; called from Python per step (see :func:`solve_accelerations_python`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from ..errors import SolverError, UnknownNameError
from .small import cholesky_factor, cholesky_solve, lu_factor, lu_solve

SOLVERS = ("augmented", "reduced", "dbbd", "block", "splu")
AUGMENTED, REDUCED, DBBD, BLOCK = 0, 1, 2, 3
OK, SINGULAR, NOT_SPD = 0, 1, 3
#: reassociation lets LLVM vectorise the short dot products (results change in the last bits)
_JIT = dict(cache=True, nogil=True, fastmath={"reassoc", "contract"})


class RelativeSolver(NamedTuple):
    kind: int
    n: int
    m: int
    mass_indptr: np.ndarray   # pattern of a (CSR, full symmetric)
    mass_indices: np.ndarray
    mass_pos: np.ndarray      # (n, n) CSR position of a[i, j], -1 outside the pattern
    jac_indptr: np.ndarray    # pattern of B (CSR)
    jac_indices: np.ndarray
    perm: np.ndarray          # dbbd: factorisation position -> coordinate
    qb_ptr: np.ndarray        # dbbd: IDQB, row structure of L (columns <= i), CSR
    qb_idx: np.ndarray
    qf_ptr: np.ndarray        # dbbd: IDQF, column structure of L (rows > i), CSR
    qf_idx: np.ndarray
    blk_ptr: np.ndarray       # block: coordinates of each block, tip-to-base order
    blk_idx: np.ndarray
    anc_ptr: np.ndarray       # block: coordinates of the ancestors of each block
    anc_idx: np.ndarray


class RelativeSolverWork(NamedTuple):
    A: np.ndarray     # (n, n) dense working matrix / factor
    P: np.ndarray     # (n, n) dbbd: permuted factor
    K: np.ndarray     # (n + m, n + m) augmented matrix (augmented only)
    piv: np.ndarray   # (n + m,) pivots
    X: np.ndarray     # (m, n) a^-1 B^T, row by row
    Bd: np.ndarray    # (m, n) dense B
    S: np.ndarray     # (m, m) B a^-1 B^T
    y: np.ndarray     # (n,)
    z: np.ndarray     # (n + m,)
    lam: np.ndarray   # (m,)
    fail: np.ndarray  # (1,) coordinate of a failed pivot


# ---- analysis (Python, once) --------------------------------------------------------------
def _csr(lists):
    ptr = np.zeros(len(lists) + 1, np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    idx = np.array([i for x in lists for i in x], np.int64)
    return ptr, idx


def dbbd_structure(pattern: np.ndarray, perm: np.ndarray):
    """IDQB/IDQF lists of the Cholesky factor of ``pattern[perm][:, perm]`` (symbolic
    elimination, fill included)."""
    P = np.asarray(pattern, bool)[np.ix_(perm, perm)].copy()
    n = len(perm)
    for k in range(n):             # fill: eliminating k couples all its later neighbours
        nb_ = np.nonzero(P[k, k + 1:])[0] + k + 1
        P[np.ix_(nb_, nb_)] = True
    L = np.tril(P)
    rows = [list(np.nonzero(L[i, :i + 1])[0]) for i in range(n)]
    cols = [list(np.nonzero(L[i + 1:, i])[0] + i + 1) for i in range(n)]
    return _csr(rows), _csr(cols), int(L.sum())


def analyse(kind: str, formulation, rows=None) -> tuple[RelativeSolver, RelativeSolverWork]:
    """A solver of ``kind`` for a :class:`~kinedyn.formulations.relative.Relative` model
    (``rows``: the constraint rows enforced, default all)."""
    if kind not in SOLVERS or kind == "splu":
        raise UnknownNameError("compiled relative solver", kind, SOLVERS[:4])
    f = formulation
    d = f.data
    n = f.n_q
    rows = np.arange(f.n_c) if rows is None else np.asarray(rows, np.int64)
    jp = [0]
    ji = []
    for r in rows:
        ji += list(d.jac_indices[d.jac_indptr[r]:d.jac_indptr[r + 1]])
        jp.append(len(ji))
    m = len(rows)
    empty = np.zeros(1, np.int64), np.zeros(0, np.int64)
    perm = np.arange(n, dtype=np.int64)
    qb = qf = blk = anc = empty
    if kind == "dbbd":
        perm = np.argsort(f.coord)[::-1].copy()   # coordinates in reverse numbering
        qb, qf, _ = dbbd_structure(f.mass_pattern.toarray() != 0, perm)
    if kind == "block":
        blk, anc = block_structure(f)
    code = {"augmented": AUGMENTED, "reduced": REDUCED, "dbbd": DBBD, "block": BLOCK}[kind]
    pos = np.full((n, n), -1, np.int64)
    for i in range(n):
        pos[i, d.mass_indices[d.mass_indptr[i]:d.mass_indptr[i + 1]]] = \
            np.arange(d.mass_indptr[i], d.mass_indptr[i + 1])
    solver = RelativeSolver(code, n, m, d.mass_indptr, d.mass_indices, pos,
                            np.array(jp, np.int64),
                            np.array(ji, np.int64), perm.astype(np.int64), *qb, *qf, *blk, *anc)
    work = RelativeSolverWork(np.zeros((n, n)), np.zeros((n, n)), np.zeros((n + m, n + m)),
                              np.zeros(n + m, np.int64), np.zeros((m, n)), np.zeros((m, n)),
                              np.zeros((m, m)), np.zeros(n), np.zeros(n + m), np.zeros(m),
                              np.zeros(1, np.int64))
    return solver, work


def block_structure(f):
    """Blocks (coordinates of one tree joint) tip-to-base and their ancestors' coordinates."""
    tree = f.tree
    coord = f.coord
    first = sorted(((links[0], links) for links in tree.joint_links.values()), reverse=True)
    blocks, ancs = [], []
    for head, links in first:
        blocks.append([int(coord[k]) for k in links])
        ancs.append([int(coord[k]) for k in tree.ancestors(int(tree.link_parent[head]))])
    return _csr(blocks), _csr(ancs)


def factor_flops(solver: RelativeSolver) -> int:
    """Multiply-adds of one factorisation of ``a`` (the paper's measure of the methods):
    dense Cholesky ``sum_j j (n - j)``; DBBD ``sum_i r_i (r_i - 1) / 2`` over the rows of
    IDQB; recursive block: per block of s coordinates with c ancestors, its Cholesky,
    ``c s (s - 1) / 2`` for ``L^-1 A_i,anc`` and ``s c (c + 1) / 2`` for the Schur update."""
    n = solver.n
    if solver.kind == DBBD:
        r = np.diff(solver.qb_ptr)
        return int(np.sum(r * (r - 1) // 2))
    if solver.kind == BLOCK:
        total = 0
        for s_, c in zip(np.diff(solver.blk_ptr), np.diff(solver.anc_ptr)):
            total += sum(j * (s_ - j) for j in range(s_)) + c * s_ * (s_ - 1) // 2 \
                + s_ * c * (c + 1) // 2
        return int(total)
    return int(sum(j * (n - j) for j in range(n)))


# ---- dense kernels -----------------------------------------------------------------------
@nb.njit(**_JIT)
def _scatter(indptr, indices, values, A):
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            A[i, indices[p]] = values[p]


@nb.njit(**_JIT)
def dbbd_factorize(perm, qb_ptr, qb_idx, A):
    """Fig. 7(a) on the permuted matrix, A[i, j] = a[perm[i], perm[j]] (lower triangle).

    For each row i and each column jp of its structure IDQB (ascending, ending with i):
    ``sum = A(i, jp) - sum_k A(i, k) A(jp, k)`` over the earlier columns k of row i, then
    ``A(i, i) = sqrt(sum)`` (``FAILED`` if sum <= 0) or ``A(i, jp) = sum / A(jp, jp)``.
    Returns -1 or the failing position."""
    n = perm.shape[0]
    for i in range(n):
        for a in range(qb_ptr[i], qb_ptr[i + 1]):
            jp = qb_idx[a]
            s = A[i, jp]
            for b in range(qb_ptr[i], a):
                k = qb_idx[b]
                s -= A[i, k] * A[jp, k]
            if jp == i:
                if s <= 0.0:
                    return i
                A[i, i] = math.sqrt(s)
            else:
                A[i, jp] = s / A[jp, jp]
    return -1


@nb.njit(**_JIT)
def dbbd_solve(perm, qb_ptr, qb_idx, qf_ptr, qf_idx, A, b, x):
    """Fig. 7(b): forward over IDQB, backward over IDQF; b, x in coordinate order."""
    n = perm.shape[0]
    for i in range(n):
        s = b[perm[i]]
        for a in range(qb_ptr[i], qb_ptr[i + 1] - 1):
            k = qb_idx[a]
            s -= A[i, k] * x[k]
        x[i] = s / A[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for a in range(qf_ptr[i], qf_ptr[i + 1]):
            k = qf_idx[a]
            s -= A[k, i] * x[k]
        x[i] = s / A[i, i]
    for i in range(n):          # back to coordinate order (b as scratch)
        b[perm[i]] = x[i]


# ---- section 4.3: recursive block mass matrix --------------------------------------------
@nb.njit(**_JIT)
def block_factorize(blk_ptr, blk_idx, anc_ptr, anc_idx, A):
    """Eliminate blocks leaves-inwards: L_i = chol(A_ii), X_i = L_i^-1 A_i,anc stored in
    A[i, anc], ancestors updated A_anc,anc -= X_i^T X_i (eq. 10). Returns -1 or failing row."""
    for b in range(blk_ptr.shape[0] - 1):
        b0, b1 = blk_ptr[b], blk_ptr[b + 1]
        a0, a1 = anc_ptr[b], anc_ptr[b + 1]
        for jj in range(b0, b1):               # Cholesky of the diagonal block
            j = blk_idx[jj]
            s = A[j, j]
            for kk in range(b0, jj):
                s -= A[j, blk_idx[kk]] ** 2
            if s <= 0.0:
                return j
            d = math.sqrt(s)
            A[j, j] = d
            for ii in range(jj + 1, b1):
                i = blk_idx[ii]
                s = A[i, j]
                for kk in range(b0, jj):
                    s -= A[i, blk_idx[kk]] * A[j, blk_idx[kk]]
                A[i, j] = s / d
        for cc in range(a0, a1):               # X = L^-1 A_i,anc (forward substitution)
            c = anc_idx[cc]
            for ii in range(b0, b1):
                i = blk_idx[ii]
                s = A[i, c]
                for kk in range(b0, ii):
                    s -= A[i, blk_idx[kk]] * A[blk_idx[kk], c]
                A[i, c] = s / A[i, i]
        for cc in range(a0, a1):               # Schur complement onto the ancestors
            c = anc_idx[cc]
            for ee in range(a0, cc + 1):
                e = anc_idx[ee]
                s = 0.0
                for ii in range(b0, b1):
                    s += A[blk_idx[ii], c] * A[blk_idx[ii], e]
                A[c, e] -= s
                if e != c:
                    A[e, c] -= s
    return -1


@nb.njit(**_JIT)
def block_solve(blk_ptr, blk_idx, anc_ptr, anc_idx, A, x):
    """Forward tip-to-base (y_i = L_i^-1 F_i, F_anc -= X_i^T y_i), back base-to-tip (eq. 9)."""
    nb_ = blk_ptr.shape[0] - 1
    for b in range(nb_):
        b0, b1 = blk_ptr[b], blk_ptr[b + 1]
        for ii in range(b0, b1):
            i = blk_idx[ii]
            s = x[i]
            for kk in range(b0, ii):
                s -= A[i, blk_idx[kk]] * x[blk_idx[kk]]
            x[i] = s / A[i, i]
        for cc in range(anc_ptr[b], anc_ptr[b + 1]):
            c = anc_idx[cc]
            s = 0.0
            for ii in range(b0, b1):
                s += A[blk_idx[ii], c] * x[blk_idx[ii]]
            x[c] -= s
    for b in range(nb_ - 1, -1, -1):
        b0, b1 = blk_ptr[b], blk_ptr[b + 1]
        for ii in range(b1 - 1, b0 - 1, -1):
            i = blk_idx[ii]
            s = x[i]
            for cc in range(anc_ptr[b], anc_ptr[b + 1]):
                c = anc_idx[cc]
                s -= A[i, c] * x[c]
            for kk in range(ii + 1, b1):
                s -= A[blk_idx[kk], i] * x[blk_idx[kk]]
            x[i] = s / A[i, i]


# ---- the step ------------------------------------------------------------------------------
@nb.njit(**_JIT)
def _gather(pos, values, A, lower):
    """A[i, j] = a_ij from its CSR values (zero outside the pattern): the lower triangle or
    all of A, so no separate zeroing pass is needed."""
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1 if lower else n):
            p = pos[i, j]
            A[i, j] = values[p] if p >= 0 else 0.0


@nb.njit(cache=True, nogil=True, inline="always")
def _factor_a(solver, work, a_values):
    """Factorise a (values in its CSR pattern); returns -1 or the coordinate of a failed pivot."""
    if solver.kind == DBBD:
        perm, P, pos = solver.perm, work.P, solver.mass_pos
        for i in range(solver.n):            # P a P^T on the structure of L only (fill: 0)
            for t in range(solver.qb_ptr[i], solver.qb_ptr[i + 1]):
                p = pos[perm[i], perm[solver.qb_idx[t]]]
                P[i, solver.qb_idx[t]] = a_values[p] if p >= 0 else 0.0
        r = dbbd_factorize(perm, solver.qb_ptr, solver.qb_idx, P)
        return perm[r] if r >= 0 else -1
    if solver.kind == BLOCK:
        _gather(solver.mass_pos, a_values, work.A, False)
        return block_factorize(solver.blk_ptr, solver.blk_idx, solver.anc_ptr, solver.anc_idx,
                               work.A)
    _gather(solver.mass_pos, a_values, work.A, True)
    return cholesky_factor(work.A, solver.n)


@nb.njit(cache=True, nogil=True, inline="always")
def _solve_a(solver, work, b):
    """b <- a^-1 b with the current factorisation."""
    if solver.kind == DBBD:
        dbbd_solve(solver.perm, solver.qb_ptr, solver.qb_idx, solver.qf_ptr, solver.qf_idx,
                   work.P, b, work.z)
    elif solver.kind == BLOCK:
        block_solve(solver.blk_ptr, solver.blk_idx, solver.anc_ptr, solver.anc_idx, work.A, b)
    else:
        cholesky_solve(work.A, solver.n, b)


@nb.njit(cache=True, nogil=True, inline="always")
def solve_accelerations(solver, work, a_values, B_values, Q, gamma, qdd, lam):
    """qdd and lam of ``a qdd + B^T lam = Q, B qdd = gamma``; returns a status (0 ok,
    1 singular, 3 ``a`` not positive definite: coordinate in ``work.fail[0]``)."""
    n, m = solver.n, solver.m
    Bd = work.Bd
    Bd[:, :] = 0.0
    for r in range(m):
        for p in range(solver.jac_indptr[r], solver.jac_indptr[r + 1]):
            Bd[r, solver.jac_indices[p]] = B_values[p]
    if solver.kind == AUGMENTED:                      # eq. (3), dense LU
        K = work.K
        K[:, :] = 0.0
        _scatter(solver.mass_indptr, solver.mass_indices, a_values, K)
        for r in range(m):
            for j in range(n):
                K[n + r, j] = Bd[r, j]
                K[j, n + r] = Bd[r, j]
        if not lu_factor(K, n + m, work.piv):
            return SINGULAR
        z = work.z
        for i in range(n):
            z[i] = Q[i]
        for r in range(m):
            z[n + r] = gamma[r]
        lu_solve(K, n + m, work.piv, z)
        for i in range(n):
            qdd[i] = z[i]
        for r in range(m):
            lam[r] = z[n + r]
        return OK
    bad = _factor_a(solver, work, a_values)
    if bad >= 0:
        work.fail[0] = bad
        return NOT_SPD
    y = work.y                                        # y = a^-1 Q
    for i in range(n):
        y[i] = Q[i]
    _solve_a(solver, work, y)
    X, S = work.X, work.S
    for r in range(m):                                # X_r = a^-1 B_r^T
        for i in range(n):
            X[r, i] = Bd[r, i]
        _solve_a(solver, work, X[r])
    for r in range(m):                                # eq. (6): S lam' = gamma - B y
        s = gamma[r]
        for i in range(n):
            s -= Bd[r, i] * y[i]
        work.lam[r] = s
        for c in range(r + 1):
            v = 0.0
            for i in range(n):
                v += Bd[r, i] * X[c, i]
            S[r, c] = v
    if cholesky_factor(S, m) >= 0:
        return SINGULAR
    cholesky_solve(S, m, work.lam)
    for i in range(n):                                # eq. (5): qdd = y + X^T lam'
        v = y[i]
        for r in range(m):
            v += X[r, i] * work.lam[r]
        qdd[i] = v
    for r in range(m):
        lam[r] = -work.lam[r]
    return OK


def solve_splu(f, a_values, B_values, rows, Q, gamma):
    """The library choice: SciPy SuperLU of a inside the reduced method (Python per call)."""
    import scipy.sparse as sps
    import scipy.sparse.linalg as spla
    d = f.data
    a = sps.csc_matrix(sps.csr_matrix((a_values, d.mass_indices, d.mass_indptr),
                                      shape=(f.n_q, f.n_q)))
    B = sps.csr_matrix((B_values, d.jac_indices, d.jac_indptr), shape=(f.n_c, f.n_q))[rows]
    lu = spla.splu(a, permc_spec="COLAMD", diag_pivot_thresh=0.0)
    y = lu.solve(Q)
    X = lu.solve(B.T.toarray()) if B.shape[0] else np.zeros((f.n_q, 0))
    lam_p = np.linalg.solve(B @ X, gamma - B @ y) if B.shape[0] else np.zeros(0)
    return y + X @ lam_p, -lam_p


def check(status, work, f, t=None):
    """Raise the solver error of a non-zero status (names the coordinate or constraints)."""
    if status == OK:
        return
    if status == NOT_SPD:
        raise SolverError(f"sparse Cholesky FAILED (Fig. 7): the mass matrix is not positive "
                          f"definite at coordinate {f.coordinate_names[int(work.fail[0])]!r}",
                          time=t, constraints=[])
    raise SolverError("B a^-1 B^T is singular: redundant or degenerate loop-closure "
                      "constraints", time=t, constraints=list(f.constraint_names))
