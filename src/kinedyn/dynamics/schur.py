"""Index-1 dynamics by the Schur complement of a constant mass matrix (range-space method).

The augmented system ``[M J^T; J 0][qdd; lam] = [Q; gamma_hat]`` (sparse-relative paper eq. 3;
thesis eqs. 2.16-2.18 with Baumgarte's ``gamma_hat``) is solved by eliminating ``qdd``, which is
the reduced-multiplier form of the sparse-relative paper (eqs. 5-6):

    (J M^-1 J^T) lam = J M^-1 Q - gamma_hat,     qdd = M^-1 Q - M^-1 J^T lam.

In natural coordinates ``M`` is constant, so ``M^-1`` is formed once per model, block by block
(the connected components of ``M``: one per set of coordinates that share bodies), and each
evaluation only forms ``U = M^-1 J^T`` (row i of ``U`` is ``M^-1 J_i^T``, fixed pattern), the
symmetric positive definite ``S = J U`` (fixed pattern, written straight into a sparse Cholesky
factor, :mod:`kinedyn.linalg.cholesky`) and two triangular solves. Every product is a list of
precomputed (target, source, weight) triplets, so the per-step work is proportional to the
nonzeros and allocation-free. ``S`` is SPD wherever ``J`` has full row rank: no pivoting, no
pivot order that can go stale.

The projection of the ``projection`` method (M-metric least change onto ``phi = 0`` and
``phi' = 0``: ``dq = -U S^-1 phi``, ``dv = -U S^-1 phi'``) reuses the factor of the step's last
evaluation: a quasi-Newton iteration whose contraction is the change of ``J`` over a step (about
1e-3 for semi-implicit Euler at dt = 1e-3, much less after RK4, whose last stage is close to the
end point); after two such iterations each further one refactorises at the current point
(Newton). Both residuals are iterated to ``tol``. The check of a corrected position evaluates
``phi`` and ``phi_q`` together (one kernel pass), and that ``phi_q`` is the one the velocity
projection needs.

Small systems (``n_q <= DENSE_MAX``: the double pendulum, the four-bar, the slider-crank) take a
dense path chosen at build time: ``J``, ``U`` and the Cholesky factor of ``S`` as small dense
arrays, and the whole evaluation after the formulation's kernels - ``U``, ``S``, its Cholesky
factor, ``lam`` and ``qdd`` - in one compiled call without index lists. At these sizes the
sparse path's cost was the calls and their argument lists, not the arithmetic (measured on the
double pendulum: 180 ns of the 540 ns of an evaluation).
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np
import scipy.sparse as sps
from scipy.sparse.csgraph import connected_components

from .._jit import INLINED, INLINED_WORKER
from ..formulations import protocol
from ..kinematics import kernels as K
from ..linalg import cholesky as C
from ..linalg.small import cholesky_solve
from .methods import _rate_of_phi

QUASI_NEWTON = 2  # projection iterations with the last evaluation's factor before refactorising
DENSE_MAX = 16    # systems with at most this many coordinates take the dense path


class Schur(NamedTuple):
    form: tuple              # formulation data
    rows: np.ndarray         # (n_c,) constraint rows enforced (independent)
    select: tuple            # the same for the protocol functions (protocol.row_selection)
    n_q: int
    minv_indptr: np.ndarray  # (n_q + 1,) CSR of M^-1 (dense within each block of M)
    minv_indices: np.ndarray
    minv_values: np.ndarray
    u_indptr: np.ndarray     # (n_c + 1,) CSR pattern of U = M^-1 J^T stored by constraint
    u_indices: np.ndarray    # (nnz_U,) coordinates
    ut_pos: np.ndarray       # (k,) U[ut_pos] += ut_w * jac[ut_jac]
    ut_jac: np.ndarray
    ut_w: np.ndarray
    st_pos: np.ndarray       # (m,) L[st_pos] += jac[st_jac] * U[st_u]  (S = J U, lower)
    st_jac: np.ndarray
    st_u: np.ndarray
    chol: tuple              # Cholesky structure of S
    alpha: float             # Baumgarte (0, 0: plain index-1)
    beta: float
    project: bool            # projection method
    tol: float               # projection tolerance on max |phi|
    max_iter: int
    dense: bool              # dense path (n_q <= DENSE_MAX)
    minv: np.ndarray         # (n_q, n_q) M^-1 on the dense path, else (0, 0)


class SchurWork(NamedTuple):
    form: tuple
    Q: np.ndarray      # (n_q,)
    jac: np.ndarray    # (nnz_J,) full Jacobian data
    gamma: np.ndarray  # (n_c,)
    phi: np.ndarray    # (n_c,)
    phit: np.ndarray   # (n_c,)
    a: np.ndarray      # (n_q,) M^-1 Q
    u: np.ndarray      # (nnz_U,)
    lx: np.ndarray     # (nnz_L,) S, then its Cholesky factor
    w: np.ndarray      # (n_c,) zeros (factorisation scratch)
    x: np.ndarray      # (n_c,) solve scratch
    lam: np.ndarray    # (n_c,) multipliers of the last evaluation
    jd: np.ndarray     # dense path: (n_c, n_q) J (entries outside its pattern stay zero)
    ud: np.ndarray     # dense path: (n_c, n_q) U^T (row i = M^-1 J_i^T)
    ld: np.ndarray     # dense path: (n_c, n_c) Cholesky factor of S (lower triangle)


def mass_blocks(M: np.ndarray) -> list[np.ndarray] | None:
    """Coordinates of each connected block of M, or None when M is not positive definite."""
    n_blocks, label = connected_components(sps.csr_matrix(M != 0.0), directed=False)
    blocks = [np.flatnonzero(label == b) for b in range(n_blocks)]
    try:
        for b in blocks:
            np.linalg.cholesky(M[np.ix_(b, b)])
    except np.linalg.LinAlgError:
        return None
    return blocks


def build(f, M, rows, *, alpha=0.0, beta=0.0, project=False, tol=1e-12, max_iter=20,
          pivot_tol=1e-12, dense=None, blocks=None):
    """Schur system and work for formulation ``f`` (its data's ``jac_indptr``, ``jac_indices``)
    with constant mass matrix ``M`` (dense); None when M is not positive definite. ``dense``:
    force (True) or forbid (False) the dense small-system path (default: ``n_q <= DENSE_MAX``).
    ``blocks``: :func:`mass_blocks` of M, when the caller has them."""
    form = f.data
    blocks = mass_blocks(M) if blocks is None else blocks
    if blocks is None:
        return None
    n_q = M.shape[0]
    dense = n_q <= DENSE_MAX if dense is None else bool(dense)
    rows = np.asarray(rows, np.int64)
    n_c = len(rows)
    label = np.empty(n_q, np.int64)
    Minv = np.zeros((n_q, n_q))
    for b, mem in enumerate(blocks):
        label[mem] = b
        Minv[np.ix_(mem, mem)] = np.linalg.inv(M[np.ix_(mem, mem)])
    minv_indptr = np.zeros(n_q + 1, np.int64)
    minv_indices = []
    for c in range(n_q):
        minv_indices.extend(blocks[label[c]])
        minv_indptr[c + 1] = len(minv_indices)
    minv_indices = np.array(minv_indices, np.int64)
    minv_values = Minv[np.repeat(np.arange(n_q), np.diff(minv_indptr)), minv_indices]
    # U = M^-1 J^T by constraint: row i covers the blocks its Jacobian row touches
    jp, ji = form.jac_indptr, form.jac_indices
    jrow = [range(jp[r], jp[r + 1]) for r in rows]
    u_cols = [sorted({int(c) for p in jrow[i] for c in blocks[label[ji[p]]]}) for i in range(n_c)]
    u_indptr = np.zeros(n_c + 1, np.int64)
    u_at = []  # per row: coordinate -> U position
    for i, cols in enumerate(u_cols):
        u_at.append({c: u_indptr[i] + k for k, c in enumerate(cols)})
        u_indptr[i + 1] = u_indptr[i] + len(cols)
    u_indices = np.array([c for cols in u_cols for c in cols], np.int64)
    ut = [(u_at[i][int(c2)], p, Minv[c2, ji[p]]) for i in range(n_c) for p in jrow[i]
          for c2 in blocks[label[ji[p]]]]
    # S = J U: entry (i, j) for constraints sharing a block of M
    by_block = [[] for _ in blocks]
    for i in range(n_c):
        for b in sorted({int(label[ji[p]]) for p in jrow[i]}):
            by_block[b].append(i)
    pairs = sorted({(min(i, j), max(i, j)) for rs in by_block for i in rs for j in rs})
    chol = C.analyse(n_c, [(i, j) for i, j in pairs if i != j], pivot_tol)
    at = dict(zip(pairs, chol.positions(pairs).tolist()))
    st = [(at[i, j], p, u_at[i][int(ji[p])]) for i, j in pairs for p in jrow[j]
          if int(ji[p]) in u_at[i]]
    as_int = lambda x: np.array(x, np.int64).reshape(-1)  # noqa: E731
    system = Schur(form, rows, protocol.row_selection(f, rows), n_q, minv_indptr, minv_indices,
                   minv_values, u_indptr, u_indices,
                   as_int([t[0] for t in ut]), as_int([t[1] for t in ut]),
                   np.array([t[2] for t in ut], float).reshape(-1),
                   as_int([t[0] for t in st]), as_int([t[1] for t in st]),
                   as_int([t[2] for t in st]), chol, float(alpha), float(beta), bool(project),
                   float(tol), int(max_iter), dense, Minv if dense else np.zeros((0, 0)))
    return system


def make_work(system: Schur, form_work) -> SchurWork:
    n_q, n_c = system.n_q, len(system.rows)
    nd, md = (n_q, n_c) if system.dense else (0, 0)
    return SchurWork(form_work, np.zeros(n_q), np.zeros(len(system.form.jac_indices)),
                     np.zeros(n_c), np.zeros(n_c), np.zeros(n_c), np.zeros(n_q),
                     np.zeros(len(system.u_indices)), np.zeros(len(system.chol.row_idx)),
                     np.zeros(n_c), np.zeros(n_c), np.zeros(n_c), np.zeros((md, nd)),
                     np.zeros((md, nd)), np.zeros((md, md)))


# ---- compiled workers (plain arrays) ------------------------------------------------------------
@nb.njit(**INLINED_WORKER)
def _factor(ut_pos, ut_jac, ut_w, st_pos, st_jac, st_u, col_ptr, row_idx, rl_ptr, rl_pos, rl_col,
            tail, pivot_tol, jac, u, lx, w):
    """U = M^-1 J^T, S = J U into the factor storage, Cholesky in place."""
    u[:] = 0.0
    for k in range(ut_pos.shape[0]):
        u[ut_pos[k]] += ut_w[k] * jac[ut_jac[k]]
    lx[:] = 0.0
    for k in range(st_pos.shape[0]):
        lx[st_pos[k]] += jac[st_jac[k]] * u[st_u[k]]
    return C.factorize(col_ptr, row_idx, rl_ptr, rl_pos, rl_col, tail, pivot_tol, lx, w)


@nb.njit(**INLINED_WORKER)
def _accelerations(n, rows, jac_indptr, jac_indices, minv_indptr, minv_indices, minv_values,
                   u_indptr, u_indices, perm, col_ptr, row_idx, tail, jac, u, lx, x, Q, rhs, a,
                   lam, y, ydot):
    """ydot = [qd; M^-1 Q - U lam] with S lam = J M^-1 Q - rhs (rhs: gamma_hat)."""
    for c in range(n):
        v = 0.0
        for p in range(minv_indptr[c], minv_indptr[c + 1]):
            v += minv_values[p] * Q[minv_indices[p]]
        a[c] = v
    for i in range(rows.shape[0]):
        r = rows[i]
        v = -rhs[i]
        for p in range(jac_indptr[r], jac_indptr[r + 1]):
            v += jac[p] * a[jac_indices[p]]
        lam[i] = v
    C.solve(perm, col_ptr, row_idx, tail, lx, x, lam)
    for c in range(n):
        ydot[c] = y[n + c]
        ydot[n + c] = a[c]
    for i in range(rows.shape[0]):
        li = lam[i]
        for p in range(u_indptr[i], u_indptr[i + 1]):
            ydot[n + u_indices[p]] -= li * u[p]


@nb.njit(**INLINED_WORKER)
def _correct(u_indptr, u_indices, u, perm, col_ptr, row_idx, tail, lx, x, r, y, offset):
    """y[offset + c] -= (U S^-1 r)[c] (r is overwritten): least change in the M-metric."""
    C.solve(perm, col_ptr, row_idx, tail, lx, x, r)
    for i in range(r.shape[0]):
        ri = r[i]
        for p in range(u_indptr[i], u_indptr[i + 1]):
            y[offset + u_indices[p]] -= ri * u[p]


# ---- dense path (small systems) -----------------------------------------------------------------
@nb.njit(cache=True, nogil=True, inline="always")
def _dense_factor_body(rows, jac_indptr, jac_indices, minv, pivot_tol, jac, jd, ud, ld):
    """J into jd, U^T = (M^-1 J^T)^T into ud, the Cholesky factor of S = J U into ld (lower);
    0, or 1 when a pivot is not positive enough (as :func:`kinedyn.linalg.cholesky.factorize`)."""
    n = minv.shape[0]
    m = rows.shape[0]
    for i in range(m):
        r = rows[i]
        for p in range(jac_indptr[r], jac_indptr[r + 1]):
            jd[i, jac_indices[p]] = jac[p]
    for i in range(m):
        for c in range(n):
            v = 0.0
            for k in range(n):
                v += minv[c, k] * jd[i, k]
            ud[i, c] = v
    st = 0
    for j in range(m):
        s_jj = 0.0
        for c in range(n):
            s_jj += jd[j, c] * ud[j, c]
        d = s_jj
        for k in range(j):
            d -= ld[j, k] * ld[j, k]
        if not d > pivot_tol * s_jj:
            st = C.SINGULAR
            break
        ljj = np.sqrt(d)
        ld[j, j] = ljj
        for i in range(j + 1, m):
            v = 0.0
            for c in range(n):
                v += jd[i, c] * ud[j, c]
            for k in range(j):
                v -= ld[i, k] * ld[j, k]
            ld[i, j] = v / ljj
    return st


@nb.njit(**INLINED_WORKER)
def _dense_factor(rows, jac_indptr, jac_indices, minv, pivot_tol, jac, jd, ud, ld):
    return _dense_factor_body(rows, jac_indptr, jac_indices, minv, pivot_tol, jac, jd, ud, ld)


@nb.njit(**INLINED)   # LLVM-inlined: see natural/kernels.py
def _dense_derivative(rows, jac_indptr, jac_indices, minv, pivot_tol, jac, jd, ud, ld, Q, gamma,
                      a, lam, y, ydot):
    """The whole Schur evaluation of a small system in one call: factor, then
    ``S lam = J M^-1 Q - gamma_hat`` and ``ydot = [qd; M^-1 Q - U lam]``."""
    st = _dense_factor_body(rows, jac_indptr, jac_indices, minv, pivot_tol, jac, jd, ud, ld)
    if st == 0:
        n = minv.shape[0]
        m = rows.shape[0]
        for c in range(n):
            v = 0.0
            for k in range(n):
                v += minv[c, k] * Q[k]
            a[c] = v
        for i in range(m):
            v = -gamma[i]
            for c in range(n):
                v += jd[i, c] * a[c]
            lam[i] = v
        cholesky_solve(ld, lam.shape[0], lam)
        for c in range(n):
            v = a[c]
            for i in range(m):
                v -= ud[i, c] * lam[i]
            ydot[c] = y[n + c]
            ydot[n + c] = v
    return st


@nb.njit(**INLINED_WORKER)
def _dense_correct(ud, ld, r, y, offset):
    """y[offset + c] -= (U S^-1 r)[c] (r is overwritten), the dense :func:`_correct`."""
    cholesky_solve(ld, r.shape[0], r)
    for c in range(ud.shape[1]):
        v = 0.0
        for i in range(r.shape[0]):
            v += ud[i, c] * r[i]
        y[offset + c] -= v


# ---- protocol implementations (loop-free wrappers, inlined) -------------------------------------
@nb.njit(cache=True, nogil=True, inline="always")
def _refactor(s, w):
    ch = s.chol
    if s.dense:
        st = _dense_factor(s.rows, s.form.jac_indptr, s.form.jac_indices, s.minv, ch.pivot_tol,
                           w.jac, w.jd, w.ud, w.ld)
    else:
        st = _factor(s.ut_pos, s.ut_jac, s.ut_w, s.st_pos, s.st_jac, s.st_u, ch.col_ptr,
                     ch.row_idx, ch.rl_ptr, ch.rl_pos, ch.rl_col, ch.tail, ch.pivot_tol, w.jac,
                     w.u, w.lx, w.w)
    return st


@nb.njit(cache=True, nogil=True, inline="always")
def _apply_correction(s, w, r, y, offset):
    """y[offset:offset + n_q] -= U S^-1 r with the current factor (dense or sparse)."""
    if s.dense:
        _dense_correct(w.ud, w.ld, r, y, offset)
    else:
        ch = s.chol
        _correct(s.u_indptr, s.u_indices, w.u, ch.perm, ch.col_ptr, ch.row_idx, ch.tail, w.lx,
                 w.x, r, y, offset)


@nb.njit(cache=True, nogil=True, inline="always")
def _schur_derivative(s, w, y, t, ydot):
    n = s.n_q
    q = y[:n]
    qd = y[n:]
    form, fw = s.form, w.form
    protocol.calc_forces(form, fw, q, qd, t, w.Q)
    protocol.calc_phi_q(form, fw, q, t, s.select, w.jac)
    protocol.calc_gamma(form, fw, q, qd, t, s.select, w.gamma)
    if s.alpha != 0.0 or s.beta != 0.0:  # Baumgarte: gamma - 2 a phi' - b^2 phi
        protocol.calc_phi(form, fw, q, t, s.select, w.phi)
        protocol.calc_phi_t(form, fw, q, t, s.select, w.phit)
        _baumgarte(s.rows, form.jac_indptr, form.jac_indices, w.jac, qd, s.alpha, s.beta, w.phi,
                   w.phit, w.gamma)
    ch = s.chol
    if s.dense:
        st = _dense_derivative(s.rows, form.jac_indptr, form.jac_indices, s.minv, ch.pivot_tol,
                               w.jac, w.jd, w.ud, w.ld, w.Q, w.gamma, w.a, w.lam, y, ydot)
    else:
        st = _refactor(s, w)
    if st == 0 and not s.dense:  # (one exit: this body is inlined)
        _accelerations(n, s.rows, form.jac_indptr, form.jac_indices, s.minv_indptr,
                       s.minv_indices, s.minv_values, s.u_indptr, s.u_indices, ch.perm, ch.col_ptr,
                       ch.row_idx, ch.tail, w.jac, w.u, w.lx, w.x, w.Q, w.gamma, w.a, w.lam, y,
                       ydot)
    return st


@nb.njit(**INLINED_WORKER)
def _baumgarte(rows, indptr, indices, jac, qd, alpha, beta, phi, phit, gamma):
    """gamma <- gamma - 2 alpha phi' - beta^2 phi (thesis eq. 2.18); phit <- phi'."""
    _rate_of_phi(rows, indptr, indices, jac, qd, phit, phit)
    for i in range(rows.shape[0]):
        gamma[i] -= 2.0 * alpha * phit[i] + beta * beta * phi[i]


@nb.njit(cache=True, nogil=True, inline="always")
def _schur_project(s, w, y, t):
    """q onto phi = 0, then qd onto phi' = 0, each to ``tol``: M-metric least change by
    quasi-Newton iterations with the step's last factor, Newton (refactorised) from the third
    on. A corrected q is checked with phi and phi_q in one pass; that phi_q (at the final q)
    serves the velocity projection."""
    st = 0
    if s.project:  # (one exit: this body is inlined)
        n = s.n_q
        q = y[:n]
        qd = y[n:]
        form, fw = s.form, w.form
        for it in range(s.max_iter + 1):
            if it == 0:
                protocol.calc_phi(form, fw, q, t, s.select, w.phi)
            else:  # w.jac is then Phi_q at this q
                protocol.calc_phi_and_phi_q(form, fw, q, t, s.select, w.phi, w.jac)
            if K.max_abs(w.phi) <= s.tol:
                if it == 0:
                    protocol.calc_phi_q(form, fw, q, t, s.select, w.jac)
                break
            if it == s.max_iter:
                st = K.NO_CONVERGENCE
                break
            if it >= QUASI_NEWTON:
                st = _refactor(s, w)
                if st != 0:
                    break
            _apply_correction(s, w, w.phi, y, 0)
        if st == 0:  # velocities: the same iteration on the linear phi' = J qd + phi_t
            protocol.calc_phi_t(form, fw, q, t, s.select, w.phit)
            for it in range(s.max_iter + 1):
                _rate_of_phi(s.rows, form.jac_indptr, form.jac_indices, w.jac, qd, w.phit, w.phi)
                if K.max_abs(w.phi) <= s.tol:
                    break
                if it == s.max_iter:
                    st = K.NO_CONVERGENCE
                    break
                if it == QUASI_NEWTON:  # Newton: the factor at this q
                    st = _refactor(s, w)
                    if st != 0:
                        break
                _apply_correction(s, w, w.phi, y, n)
    return st


protocol.implement_ode(Schur, _schur_derivative, post=_schur_project, inline="always")
