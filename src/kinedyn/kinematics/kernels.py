"""Compiled position, velocity and acceleration problems on a square subsystem.

A subsystem (:class:`Plan`) is a set of constraint rows and the coordinates they determine (all
coordinates for the global formulation; one structural group's dependent coordinates for Group
Equations; the dependent coordinates for coordinate partitioning). For it:

* position (Group Equations paper eq. 1): Newton-Raphson ``Phi_phi dphi = -Phi``;
* velocity (eq. 2): ``Phi_phi phid = -Phi_t - Phi_h hd``;
* acceleration (eq. 3): ``Phi_phi phidd = gamma - Phi_h hdd``;

where h are the coordinates outside the subsystem (known) and the ``Phi_h`` products use the
coupling entries of the full Jacobian. Everything here works on any formulation data and any
solver through the protocol functions.

Status codes: 0 ok, 1 singular Jacobian, 2 re-analyse the sparse pivot order, 3 no convergence
within the iteration limit, 4 loss of assembly (the residual grew or is not finite).
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .._jit import INLINED, INLINED_WORKER, overload_inlined
from .._llvm import c_float64, call
from .._memory import resident_zeros
from .._table import TableCache, Tables
from .._unmanaged import unmanaged
from ..formulations import protocol
from .coupling import compile_coupling

OK, SINGULAR, REPIVOT, NO_CONVERGENCE, LOST = 0, 1, 2, 3, 4
PASSED = 5  # det Phi_q changed sign since the step before: a singular configuration passed
DIVERGENCE = 1e3  # residual growth factor that means loss of assembly
CHORD_RATE = 0.25  # chord iterations continue while each cuts the residual at least this much
# the per-step problems are inlined by LLVM into the loops that call them (a run, a structural
# group, a dynamics method): a real call passing the formulation's NamedTuples cost more than the
# arithmetic of a small group (Stewart platform: 88 -> 60 us per global step, groups 122 -> 81)
_STEP = INLINED


class Plan(NamedTuple):
    rows: np.ndarray          # (n,) constraint rows
    cols: np.ndarray          # (n,) coordinates solved for
    coupling_pos: np.ndarray  # Jacobian entries of these rows in columns outside cols
    coupling_col: np.ndarray
    coupling_row: np.ndarray  # local row (0..n-1)
    select: object            # the rows as the formulation's kernels take them (see make_plan)
    couple_code: int          # address of the coupling product's code, 0: the loop (couple)


class PlanWork(NamedTuple):
    phi: np.ndarray     # (n,)
    rhs: np.ndarray     # (n,)
    values: np.ndarray  # full Jacobian values (nnz,)
    det_sign: np.ndarray  # (1,) sign of det Phi_q at the last step (:func:`watch_singular`)


def make_plan(f, rows, cols) -> Plan:
    """The plan of constraint ``rows`` solved for coordinates ``cols`` of formulation ``f``.
    Its ``select`` is what the protocol functions get for the rows: the formulation's
    ``row_selection(rows)`` where it has one (the natural formulation lists the entities the
    rows read, :class:`~kinedyn.formulations.natural.data.RowSet`), else the rows."""
    jac_indptr, jac_indices = f.data.jac_indptr, f.data.jac_indices
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    inside = set(int(c) for c in cols)
    pos, col, row = [], [], []
    for i, r in enumerate(rows):
        for p in range(jac_indptr[r], jac_indptr[r + 1]):
            if int(jac_indices[p]) not in inside:
                pos.append(p)
                col.append(int(jac_indices[p]))
                row.append(i)
    # unsigned: Numba indexes with them without a negative-index test (couple's loop)
    ix = lambda x: np.array(x, np.uint32)  # noqa: E731
    return Plan(rows, cols, ix(pos), ix(col), ix(row), protocol.row_selection(f, rows),
                compile_coupling(pos, col, row))


def make_plan_work(plan: Plan, nnz: int) -> PlanWork:
    n = len(plan.rows)
    return PlanWork(np.zeros(n), np.zeros(n), np.zeros(nnz), np.zeros(1))


def outputs(n_rows: int, n: int) -> tuple:
    """``(out_q, out_qd, out_qdd, out_res, out_iter)`` of :func:`run` for ``n_rows`` steps of
    ``n`` coordinates, their memory mapped before the run (:func:`.resident_zeros`)."""
    return (resident_zeros((n_rows, n)), resident_zeros((n_rows, n)),
            resident_zeros((n_rows, n)), resident_zeros(n_rows), resident_zeros(n_rows, np.int64))


@nb.njit(**INLINED_WORKER)
def max_abs(x):
    m = 0.0
    for v in x:
        a = abs(v)
        if a > m or a != a:
            m = a if a == a else np.inf
    return m


@nb.njit(cache=True, nogil=True, inline="always")
def newton_update(solver, swork, plan, pw, q):
    """q[cols] -= A^-1 phi with the factorisation the solver holds (A = Phi_q, current or held)."""
    for i in range(pw.phi.shape[0]):
        pw.rhs[i] = -pw.phi[i]
    protocol.solve(solver, swork, pw.rhs)
    for i in range(plan.cols.shape[0]):
        q[plan.cols[i]] += pw.rhs[i]


@nb.njit(**_STEP)
def _iterate(data, work, solver, swork, plan, pw, q, t, tol, first, evaluate):
    """The checks and the factorisation of one Newton-Raphson iterate (shared by
    :func:`position` and :func:`paper_step`): Phi and Phi_q at q in one pass over the rows
    (unless the caller has them: ``evaluate`` False), LOST on a NaN or a residual growing past
    DIVERGENCE times the first one, then Phi_q factorised. Returns ``(status, max |Phi|, first
    residual)``; status OK: the solver holds the factorisation at q."""
    if evaluate:
        protocol.calc_phi_and_phi_q(data, work, q, t, plan.select, pw.phi, pw.values)
    err = max_abs(pw.phi)
    if err != err or err == np.inf:
        return LOST, err, first
    if first < 0.0:
        first = err
    elif err > DIVERGENCE * max(first, tol):
        return LOST, err, first
    return protocol.factorize(solver, swork, pw.values), err, first


@nb.njit(**_STEP)
def position(data, work, solver, swork, plan, pw, q, t, tol, max_iter, evaluated=False):
    """Newton-Raphson on the plan's rows for its columns to max |Phi| <= tol, q updated in
    place (for the paper's fixed number of iterations see :func:`paper_step`). ``evaluated``: the
    caller already put Phi and Phi_q at q into ``pw``. Returns ``(status, iterations,
    residual)``; on return with status 0 the solver holds the factorisation of the Jacobian at
    the returned q.
    """
    first = -1.0
    it = 0
    while True:
        st, err, first = _iterate(data, work, solver, swork, plan, pw, q, t, tol, first,
                                  not (evaluated and it == 0))
        if st != OK:
            return st, it, err
        if err <= tol:
            return OK, it, err
        if it >= max_iter:
            return NO_CONVERGENCE, it, err
        newton_update(solver, swork, plan, pw, q)
        it += 1


@nb.njit(**_STEP)
def position_tracking(data, work, solver, swork, plan, pw, q, t, tol, max_iter, chord):
    """Position problem along a trajectory: chord (modified Newton) iterations with the
    factorisation the solver already holds - the Jacobian at the previous step's solution -
    then one factorisation at the solution for the velocity and acceleration problems.

    From an extrapolated guess the chord iteration contracts by about the relative change of
    the Jacobian over one step, so it converges in as many iterations as Newton-Raphson but
    factorises once per step instead of once per iteration plus once at the solution. If the
    residual falls by less than ``CHORD_RATE`` per iteration (a large step, a fast change of
    the Jacobian), it continues with full Newton-Raphson (:func:`position`) from there.
    After a chord update Phi and Phi_q are evaluated together (one pass; Phi_q is needed
    there whether the iteration has converged or continues with Newton-Raphson).
    ``chord`` False (no factorisation held): Newton-Raphson from the start. Same statuses and
    return values as :func:`position`, which has this one call site so that the kernels that
    inline it hold one copy (compile time).
    """
    it = 0
    prev = np.inf
    while chord:
        if it == 0:
            protocol.calc_phi(data, work, q, t, plan.select, pw.phi)
        else:
            protocol.calc_phi_and_phi_q(data, work, q, t, plan.select, pw.phi, pw.values)
        err = max_abs(pw.phi)
        if err != err or err == np.inf:
            return LOST, it, err
        if err <= tol:
            if it == 0:  # Phi again with Phi_q: the Jacobian-alone worker of the natural
                # formulation is inlined (for the dynamics) and slows this loop (four-bar
                # 1.22 -> 1.56 us per step)
                protocol.calc_phi_and_phi_q(data, work, q, t, plan.select, pw.phi, pw.values)
            return protocol.factorize(solver, swork, pw.values), it, err
        if it >= max_iter or err > CHORD_RATE * prev:
            break
        prev = err
        newton_update(solver, swork, plan, pw, q)
        it += 1
    st, more, err = position(data, work, solver, swork, plan, pw, q, t, tol, max_iter - it,
                             it > 0)
    return st, it + more, err


@nb.njit(**_STEP)
def velocity_rhs(data, work, plan, values, q, qd, t, out):
    """out = -Phi_t - Phi_h hd (eq. 2), the coupling entries Phi_h from ``values``."""
    protocol.calc_phi_t(data, work, q, t, plan.select, out)
    for i in range(out.shape[0]):
        out[i] = -out[i]
    couple(plan, values, qd, out)


def _coupled(plan, values, x, out):
    """Run the plan's generated coupling product (:mod:`.coupling`): True; or False when it
    has none or an array is not C-contiguous float64 (the caller runs the loop)."""


@overload_inlined(_coupled, jit_options=protocol.JIT)
def _ov_coupled(plan, values, x, out):
    if not all(c_float64(a) for a in (values, x, out)):
        return lambda plan, values, x, out: False

    def impl(plan, values, x, out):
        if plan.couple_code == 0:
            return False
        call(plan.couple_code, (values, x, out), (0, 0, 0), ())
        return True
    return impl


@nb.njit(**_STEP)
def couple(plan, values, x, out):
    """out -= Phi_h x: the coupling of the plan's rows to the known coordinates (generated
    code where the plan has it, :mod:`.coupling`)."""
    if _coupled(plan, values, x, out):
        return
    for k in range(plan.coupling_pos.shape[0]):
        out[plan.coupling_row[k]] -= values[plan.coupling_pos[k]] * x[plan.coupling_col[k]]


@nb.njit(**_STEP)
def velocity(data, work, solver, swork, plan, pw, q, qd, t):
    """Solve the velocity problem with the current factorisation; qd[cols] updated."""
    velocity_rhs(data, work, plan, pw.values, q, qd, t, pw.rhs)
    protocol.solve(solver, swork, pw.rhs)
    for i in range(plan.cols.shape[0]):
        qd[plan.cols[i]] = pw.rhs[i]


@nb.njit(**_STEP)
def acceleration(data, work, solver, swork, plan, pw, q, qd, qdd, t):
    """Solve the acceleration problem with the current factorisation; qdd[cols] updated."""
    protocol.calc_gamma(data, work, q, qd, t, plan.select, pw.rhs)
    couple(plan, pw.values, qdd, pw.rhs)
    protocol.solve(solver, swork, pw.rhs)
    for i in range(plan.cols.shape[0]):
        qdd[plan.cols[i]] = pw.rhs[i]


@nb.njit(**_STEP)
def paper_step(data, work, solver, swork, plan, pw, q, qd, t, tol, n_iter):
    """The Group Equations paper's step (Algorithm 1, lines 4-5, with tEnd2 = ``n_iter``):
    exactly ``n_iter`` Newton-Raphson iterations (eq. 1) from q, then velocities (eq. 2) - and
    accelerations (eq. 3), which its callers solve after it - with **one factorisation per
    iteration and none more**.

    Each iteration factorises Phi_phi at its own iterate q_k and corrects q. The last
    factorisation, of Phi_phi(q_{n-1}) - the Jacobian the last correction used - also serves
    the velocity and acceleration problems: the velocity right-hand side -Phi_t - Phi_h hd is
    taken at the same point q_{n-1} and solved in the same pass over the factors as the last
    correction (``solve_pair``); gamma is taken at the corrected q and the new velocities.
    So the step's results satisfy the constraints to second order in the correction: with
    dq = q_n - q_{n-1}, |Phi(q_n)| = O(|dq|^2) (Newton), and the velocity and acceleration
    equations at q_n hold up to O(|dq|) (the Jacobian is the one at q_{n-1}).

    Returns ``(status, n_iter, residual)`` with the residual max |Phi(q_{n-1})| that the last
    iteration corrected (the residuals of the returned state are measured afterwards,
    :func:`.results.residual_history`). ``n_iter >= 1``.
    """
    first = -1.0
    err = 0.0
    last = n_iter - 1
    for it in range(n_iter):
        st, err, first = _iterate(data, work, solver, swork, plan, pw, q, t, tol, first, True)
        if st != OK:
            return st, it, err
        for i in range(pw.phi.shape[0]):
            pw.rhs[i] = -pw.phi[i]
        if it < last:
            protocol.solve(solver, swork, pw.rhs)
        else:  # the last correction and the velocities in one pass (phi is free now)
            velocity_rhs(data, work, plan, pw.values, q, qd, t, pw.phi)
            protocol.solve_pair(solver, swork, pw.rhs, pw.phi)
            for i in range(plan.cols.shape[0]):
                qd[plan.cols[i]] = pw.phi[i]
        for i in range(plan.cols.shape[0]):
            q[plan.cols[i]] += pw.rhs[i]
    return OK, n_iter, err


@nb.njit(**_STEP)
def watch_singular(solver, swork, pw, first):
    """PASSED if the sign of det Phi_q (of the plan's rows and columns, factorised at this
    step's solution) differs from the step before's, else OK; ``first``: a new trajectory, no
    step before. The determinant is continuous along a trajectory, so a change of sign means
    that it vanished in between: the mechanism went through a singular configuration (a dead
    centre or a bifurcation, where the drivers no longer fix its motion) between two steps.
    Without this watch such a passage shows only if a step falls near enough to it for a
    pivot to vanish or Newton-Raphson to fail, so it depends on the time grid (the
    parallelogram four-bar's change point was found at dt = 0.01, where a step hits it
    exactly, and not at dt = 0.003; docs/kinematics.md, "Diagnoses"). The sign does not depend
    on the pivot order (:func:`kinedyn.formulations.protocol.det_sign`), so a re-analysis
    keeps the reference; rows chosen again (redundant constraints) come with a new plan work,
    whose reference is 0 (none). Converged steps only: the paper's step (a fixed number of
    iterations) may leave the constraints far from satisfied (:class:`~kinedyn.errors.
    AccuracyWarning`), where the sign at its iterate says nothing about the mechanism (the
    Stewart platform at dt = 0.25 with one iteration changed it without any singular
    configuration)."""
    sign = protocol.det_sign(solver, swork)
    if first or pw.det_sign[0] == 0.0:
        pw.det_sign[0] = sign
        return OK
    return OK if sign == pw.det_sign[0] else PASSED


@nb.njit(**_STEP)
def predict(times, k, q, qd, qdd, out_qdd):
    """Tracking prediction of q at step ``k`` from step ``k - 1``: third-order Taylor
    extrapolation, the jerk from the accelerations of the last two steps (read back from
    ``out_qdd``); second order at step 1, none at step 0."""
    t = times[k]
    if k > 1:
        h = t - times[k - 1]
        c = h * h * h / (6.0 * (times[k - 1] - times[k - 2]))
        for i in range(q.shape[0]):
            q[i] += h * qd[i] + 0.5 * h * h * qdd[i] + c * (qdd[i] - out_qdd[k - 2, i])
    elif k > 0:
        h = t - times[k - 1]
        for i in range(q.shape[0]):
            q[i] += h * qd[i] + 0.5 * h * h * qdd[i]


def run_parts(cache: TableCache, data, work, solver, swork, plan, pw) -> Tables:
    """What :func:`run` takes for the formulation's data and work, the solver and its work,
    the plan and its work: each packed as a one-entry table by ``cache`` (again only when it
    is another object). Passed as NamedTuples, the six (87 arrays on the four-bar) took 25-42
    µs of Numba's argument typing and unboxing per call, packed 11-21 µs: what a one-step
    ``solve()`` from Python pays beyond the step (docs/architecture.md)."""
    return cache((data,), (work,), (solver,), (swork,), (plan,), (pw,))


@nb.njit(cache=True, nogil=True)
def run(parts, times_, q_, qd_, qdd_, start, stop, tol, max_iter, fixed, extrapolate, out_q_,
        out_qd_, out_qdd_, out_res_, out_iter_):
    """Steps ``start..stop-1`` of a kinematic simulation over ``times``; ``parts`` from
    :func:`run_parts`.

    ``q, qd, qdd`` hold the state of step ``start - 1`` (or the assembled guess when
    ``start == 0``) and are updated in place. Each step predicts q by a third-order Taylor
    extrapolation (tracking mode; the jerk from the accelerations of the last two steps, read
    back from ``out_qdd``), solves positions - by chord iterations (:func:`position_tracking`)
    after the first step, unless ``fixed``: then by exactly ``max_iter`` Newton-Raphson
    iterations, as in the paper - then velocities and accelerations, and writes row ``k``.
    With ``fixed`` each step is the paper's (:func:`paper_step`: ``max_iter`` Newton
    iterations, one factorisation each, the last one reused for velocities and accelerations).
    Returns ``(status, step)``: the first failing step, or ``stop``. Every array is used
    through an unmanaged view: the inlined sub-problems would otherwise count references to
    q, qd, qdd atomically about 30 times per step (docs/architecture.md). Every sub-problem
    has one call site here, and the step is written out in the loop rather than as a function
    of its own: each function inlined by LLVM is compiled on its own as well (compile time).
    """
    data, work, solver, swork = parts[0][0], parts[1][0], parts[2][0], parts[3][0]
    plan, pw = parts[4][0], parts[5][0]  # (a table's entries load as unmanaged views)
    times, q, qd, qdd = unmanaged(times_), unmanaged(q_), unmanaged(qd_), unmanaged(qdd_)
    out_q, out_qd, out_qdd = unmanaged(out_q_), unmanaged(out_qd_), unmanaged(out_qdd_)
    out_res, out_iter = unmanaged(out_res_), unmanaged(out_iter_)
    for k in range(start, stop):
        t = times[k]
        if extrapolate:
            predict(times, k, q, qd, qdd, out_qdd)
        if fixed:
            st, it, err = paper_step(data, work, solver, swork, plan, pw, q, qd, t, tol,
                                     max_iter)
        else:  # chord iterations from the factorisation of the step before (tracking)
            st, it, err = position_tracking(data, work, solver, swork, plan, pw, q, t, tol,
                                            max_iter, k > start)
            if st == OK:
                velocity(data, work, solver, swork, plan, pw, q, qd, t)
        if st == OK:
            acceleration(data, work, solver, swork, plan, pw, q, qd, qdd, t)
            if not fixed:
                st = watch_singular(solver, swork, pw, k == 0)
        if st != OK:
            return st, k
        out_q[k] = q
        out_qd[k] = qd
        out_qdd[k] = qdd
        out_res[k] = err
        out_iter[k] = it
    return OK, stop
