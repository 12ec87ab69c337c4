"""Independent structural groups solved at the same time (the paper's OpenMP level, s. 4).

A pool of persistent Python threads each calls :func:`run_worker` once per run; the kernel is
compiled with ``nogil=True``, so the threads really run in parallel and the whole run - every
step, every level of the group DAG - happens inside compiled code. No allocation, no GIL, no
Python per step. Worker ``w`` *owns* the groups assigned to it on each level (consecutive
groups, balanced by size, :func:`assign_groups`) and records their coordinates. The DAG's
order is kept in one of two ways (:func:`with_ancestors` chooses):

* **Replicated ancestors**, where that adds no arithmetic to the busiest worker - the usual
  case: the paper's Stewart platform and the scissor family have one terminal group that
  every leg reads, and a level of one group keeps all workers but one idle anyway. Each
  worker also solves the ancestors of its groups that others own, in private copies of q, qd
  and qdd, so it never waits for another worker: **no barrier in the whole run**, and a
  worker that the machine pauses delays no other. The copies are bit for bit the owner's (the
  same code on the same inputs). A worker that fails publishes its step; the others finish
  the steps before it and stop (:func:`~kinedyn.parallel.team.first_failure`).
* **A barrier per level** otherwise: the workers share q, qd and qdd and wait at a barrier
  after each level until every worker has finished it (the next level reads their
  coordinates).

The barrier is a spin barrier on atomic integers (each worker publishes its arrivals on its
own cache line), yielding the core after a while so that an oversubscribed machine does not
stall. The pool, the atomics and the barrier are the shared :mod:`kinedyn.parallel.team`
(also used by threaded HDCA); their names stay importable from here.

Each worker extrapolates from its own record of the last accelerations and keeps its own
residual and iteration maxima (reduced afterwards), so workers never write the same memory.
The paper's MKL level (threads inside each group's linear algebra) is set with
``threadpoolctl`` around the run.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .._jit import INLINED
from .._memory import resident_zeros
from .._table import TableCache
from .._unmanaged import unmanaged
from ..parallel.team import (ABORT, LINE, NEVER, SPINS, Team, atomic_add,  # noqa: F401
                             atomic_load, atomic_store, barrier, first_failure, make_sync,
                             private_copy, private_zeros, publish_failure, sched_yield)
from . import kernels as K
from .grouped import unit_step


# ---- the worker kernel ------------------------------------------------------------------------
@nb.njit(**INLINED)
def predict(times, k, cols, q, qd, qdd, qdd_old):
    """Tracking prediction of ``q[cols]`` at step ``k`` from step ``k - 1``, as the global run
    (:func:`.kernels.predict`): third-order Taylor extrapolation, the jerk from the
    accelerations of the last two steps; second order at step 1, none at step 0.
    ``qdd_old[cols]`` holds the accelerations of step ``k - 2`` on entry and those of step
    ``k - 1`` on return: each worker keeps its own (the recorded ones of a group that another
    worker owns may not be written yet)."""
    if k == 0:
        return
    h = times[k] - times[k - 1]
    c = h * h * h / (6.0 * (times[k - 1] - times[k - 2])) if k > 1 else 0.0
    for i in range(cols.shape[0]):
        j = cols[i]
        jerk = qdd[j] - qdd_old[j] if k > 1 else 0.0
        qdd_old[j] = qdd[j]
        q[j] += h * qd[j] + 0.5 * h * h * qdd[j] + c * jerk


@nb.njit(cache=True, nogil=True)
def run_worker(data_, works, units, unit_ptr_, groups, n_levels, w, n_workers, replicate,
               sync_, times_, state_, record_, stage_, start, stop, tol, max_iter, extrapolate,
               out_q_, out_qd_, out_qdd_, out_res_, out_iter_, status_):
    """Worker ``w`` of ``n_workers``: steps ``start..stop-1`` for its groups.

    Units ``unit_ptr[w * n_levels + lv]`` to ``unit_ptr[w * n_levels + lv + 1] - 1`` (their
    solvers to unit works, :meth:`~.grouped.Units.tables`) are what it solves on level ``lv``
    (:func:`~.grouped.unit_step`): its groups (and, with ``replicate``, its copies of the
    ancestors others own) - with the sparse solver as one block-diagonal system, with the dense
    one group by group - each with scratch of its own. ``groups``: the group instances'
    (solvers, solver works, plans, plan works), which the units' members index (their own
    Newton-Raphson in converged steps); None: the paper's step (a kernel of its own, as
    :func:`~.grouped.run_units`). ``works``: the formulation scratch of every worker.
    ``state[r]`` holds q, qd, qdd and the accelerations of the step before (:func:`predict`);
    ``r = w`` with ``replicate``, else the shared ``r = 0`` and a barrier after every level.
    Worker ``w`` records column ``c`` as ``record[w, c]`` says (:func:`recording`): straight
    into the output rows (``DIRECT``), into ``stage[w, :, k, record[w, c]]`` (a column near
    another worker's in the output rows, copied there after the run) or not at all
    (``NOT_MINE``). Every array is used through an unmanaged
    view: the arrays both workers use (sync, and q, qd, qdd at barriers) would otherwise have
    their reference counts incremented and decremented atomically by both cores at every
    inlined sub-problem, one cache line bouncing between them (Stewart platform, paper step,
    two workers: 63 -> 5.0 us per step). ``out_res``/``out_iter`` are (n_workers, n_steps);
    ``status[w]`` receives (status, step, unit) of a failure (status 0 when the worker
    finished). The parts and the works come as tables packed from Python, so the kernel is
    compiled once for every number of units, groups and workers (as
    :func:`~.grouped.run_units`); it makes the views of its arrays here."""
    data, unit_ptr = unmanaged(data_), unmanaged(unit_ptr_)
    sync, times, state = unmanaged(sync_), unmanaged(times_), unmanaged(state_)
    record, stage = unmanaged(record_), unmanaged(stage_)
    out_q, out_qd, out_qdd = unmanaged(out_q_), unmanaged(out_qd_), unmanaged(out_qdd_)
    out_res, out_iter, status = unmanaged(out_res_), unmanaged(out_iter_), unmanaged(status_)
    work = works[w]
    n = record.shape[1]
    r = w if replicate else 0
    q, qd, qdd, qdd_old = state[r, 0, :n], state[r, 1, :n], state[r, 2, :n], state[w, 3, :n]
    status[w, 0] = K.OK
    status[w, 1] = stop
    status[w, 2] = -1
    for k in range(start, stop):
        if replicate and first_failure(sync, n_workers) <= k:
            return
        t = times[k]
        track = k > start  # chord iterations from the factorisation held (converged only)
        it_max, err_max = 0, 0.0
        for lv in range(n_levels):
            a = w * n_levels + lv
            for u in range(unit_ptr[a], unit_ptr[a + 1]):
                cols = units[2][u].cols
                if extrapolate:
                    predict(times, k, cols, q, qd, qdd, qdd_old)
                st, it, err = unit_step(data, work, units, groups, u, q, qd, qdd, t, tol,
                                        max_iter, track, k == 0)
                if st != K.OK:
                    status[w, 0] = st
                    status[w, 1] = k
                    status[w, 2] = u
                    if replicate:
                        publish_failure(sync, w, k)
                        return
                    atomic_store(sync, ABORT, 1)
                    break
                it_max = max(it_max, it)
                err_max = max(err_max, err)
                for i in range(cols.shape[0]):
                    c = cols[i]
                    s = record[w, c]
                    if s == DIRECT:
                        out_q[k, c] = q[c]
                        out_qd[k, c] = qd[c]
                        out_qdd[k, c] = qdd[c]
                    elif s >= 0:
                        stage[w, 0, k, s] = q[c]
                        stage[w, 1, k, s] = qd[c]
                        stage[w, 2, k, s] = qdd[c]
            if not replicate and not barrier(sync, n_workers, w):
                return
        out_res[w, k] = err_max
        out_iter[w, k] = it_max


DIRECT, NOT_MINE = -1, -2  # record[w, c]: written to the output rows / by another worker


def recording(owner, n_workers: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """How each worker records its columns of the output rows: ``(record, staged)``.

    ``record[w, c]``: ``DIRECT`` (into the output arrays), ``NOT_MINE`` (``owner[c] != w``) or
    the column's slot in worker ``w``'s staging rows; ``staged[w]``: the columns in ``w``'s
    slots, copied into the output arrays after the run. A column is staged when one of the
    ``LINE - 1`` columns before it, in memory order (a row's last column precedes the next
    row's first), is another worker's: then no cache line of the output holds columns that two
    workers write directly, whatever the arrays' alignment. Where the workers' columns met,
    one line of each output array moved between the two cores at every step (and one more
    across the row ends): Stewart platform, paper step, two workers, 1.90 us per step against
    1.59 without recording, measured in a fast host phase (docs/group-equations.md)."""
    n = len(owner)
    record = np.full((n_workers, n), NOT_MINE, np.int64)
    staged: list[list[int]] = [[] for _ in range(n_workers)]
    for c in range(n):
        w = owner[c]
        if any(owner[(c - d) % n] != w for d in range(1, LINE)):
            record[w, c] = len(staged[w])
            staged[w].append(c)
        else:
            record[w, c] = DIRECT
    return record, [np.array(cols, np.int64) for cols in staged]


def _contiguous_split(loads, n_parts):
    """Cut ``loads`` (in order) into ``n_parts`` consecutive runs with the smallest largest
    sum (dynamic programming over the cut points): ``n_parts + 1`` boundaries."""
    n = len(loads)
    pre = np.concatenate([[0.0], np.cumsum(loads, dtype=float)])
    best = np.full((n_parts + 1, n + 1), np.inf)
    cut = np.zeros((n_parts + 1, n + 1), np.int64)
    best[0, 0] = 0.0
    for k in range(1, n_parts + 1):
        for j in range(n + 1):
            for i in range(j + 1):
                v = max(best[k - 1, i], pre[j] - pre[i])
                if v < best[k, j]:
                    best[k, j], cut[k, j] = v, i
    bounds = [n]
    for k in range(n_parts, 0, -1):
        bounds.append(int(cut[k, bounds[-1]]))
    return bounds[::-1]


def assign_groups(structure, n_workers: int) -> list[list[list[int]]]:
    """The groups each worker owns, per level (``[w][level]``): the groups of each level, in
    the order of their coordinates, cut into ``n_workers`` consecutive runs of balanced cost (a
    group's cost taken as its size squared). Consecutive groups hold neighbouring coordinates
    (and scratch), so each worker writes one stretch of the shared arrays, which meet another
    worker's in one cache line at most; spreading equal legs alternately over the workers
    (largest-first balancing) made every leg boundary a line that both cores write at every
    step."""
    n_levels = len(structure.levels)
    lists = [[[] for _ in range(n_levels)] for _ in range(n_workers)]
    for lv, level in enumerate(structure.levels):
        order = sorted(level, key=lambda g: min(structure.groups[g].unknowns, default=0))
        loads = [structure.groups[g].size ** 2 for g in order]
        bounds = _contiguous_split(loads, n_workers)
        for w in range(n_workers):
            lists[w][lv] = sorted(order[bounds[w]:bounds[w + 1]])
    return lists


def with_ancestors(structure, own) -> tuple[bool, list[list[list[int]]]]:
    """``(replicate, solve)``: whether each worker should also solve the ancestors of its
    groups that others own (``own`` from :func:`assign_groups`), and what each worker then
    solves per level.

    Replication pays where the busiest worker's share with its copies of ancestors costs no
    more than the run with a barrier per level, whose length is the sum over the levels of
    the busiest worker's share of each (cost: group size squared): then the barriers go and
    no arithmetic is added to the longest path. A DAG whose first level has one group (the
    paper's Stewart platform: the terminal, then the six legs) always qualifies."""
    groups = structure.groups
    cost = [g.size ** 2 for g in groups]
    ancestors: list[set[int]] = []
    for g in groups:  # groups come in a valid solution order
        ancestors.append(set(g.depends_on).union(*(ancestors[p] for p in g.depends_on)))
    solve = []
    for lists in own:
        mine = {g for level in lists for g in level}
        needed = mine.union(*(ancestors[g] for g in mine))
        solve.append([sorted(g for g in level if g in needed) for level in structure.levels])
    with_barriers = sum(max(sum(cost[g] for g in lists[lv]) for lists in own)
                        for lv in range(len(structure.levels)))
    replicated = max(sum(cost[g] for level in lists for g in level) for lists in solve)
    return (True, solve) if replicated <= with_barriers else (False, own)


def _flat(lists) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, items)`` of per-worker, per-level lists: items of worker w on level lv at
    ``items[ptr[w * n_levels + lv]:ptr[w * n_levels + lv + 1]]``."""
    ptr, flat = [0], []
    for per_level in lists:
        for items in per_level:
            flat += list(items)
            ptr.append(len(flat))
    return np.array(ptr, np.int64), np.array(flat, np.int64)


class ThreadedRunner:
    """Runs a :class:`~.grouped.GroupEngine` on ``n_workers`` threads (persistent pool).

    ``own``: the groups each worker owns per level (:func:`assign_groups`); ``solve``: what it
    solves (its own, and with ``replicate`` its copies of their ancestors,
    :func:`with_ancestors`); ``instances``: the group of each entry of the run's tuples, in
    the order of ``solve``, worker after worker."""

    def __init__(self, engine, n_workers: int):
        self.engine = engine
        self.n = n = int(n_workers)
        structure = engine.structure
        self.n_levels = len(structure.levels)
        self.own = assign_groups(structure, n)
        self.replicate, self.solve = with_ancestors(structure, self.own)
        self.solve_ptr, self.instances = _flat(self.solve)
        self.instance_worker = np.repeat(np.arange(n), np.diff(self.solve_ptr[::self.n_levels]))
        self.sync = make_sync(n)
        self.status = np.zeros((n, 3), np.int64)
        f = engine.kin.f
        self.owner = np.zeros(f.n_q, np.int64)  # the worker recording each coordinate
        self.group_owner = np.zeros(len(engine.plans), np.int64)
        for w in range(n):
            for level in self.own[w]:
                self.group_owner[level] = w
                for g in level:
                    self.owner[engine.plans[g].cols] = w
        self.record, self.staged = recording(self.owner, n)
        self._stage = private_zeros((n, 3, 0, 1))  # grown to a run's rows (run)
        # what a worker writes lies in cache lines of its own: its state (q, qd, qdd, the
        # accelerations before), the formulation scratch, each group's residual and right-hand
        # side, and a Jacobian values array per worker (the groups' rows interleave in the
        # shared one; a group's rows are read by its solver alone)
        self.state = private_zeros((n, 4, -(-f.n_q // 8) * 8))
        self.works = tuple(private_copy(f.make_work()) for _ in range(n))
        self.tables = TableCache()  # the groups' parts packed for the run kernel
        self.work_table = TableCache()  # and the workers' formulation works
        values = [private_zeros(len(engine.values)) for _ in range(n)]
        self.plans = tuple(engine.plans[g] for g in self.instances)
        self.pws = tuple(K.PlanWork(private_zeros(len(engine.pws[g].phi)),
                                    private_zeros(len(engine.pws[g].rhs)), values[w],
                                    private_zeros(1))
                         for g, w in zip(self.instances, self.instance_worker))
        self.solvers = self.sworks = None
        self._built_from = None
        # what a worker solves on a level, as units (GroupEngine.unit_groups: its share of the
        # level as one block-diagonal system with the sparse solver, the same arithmetic as the
        # serial run's whole levels; the groups' chains of dependent operations overlap:
        # scissor-platform-22x4 paper step 116 -> 96 us serial), whose members are instances
        groups, members, unit_values, ptr = [], [], [], [0]
        for w in range(n):
            for lv, level in enumerate(self.solve[w]):
                a = w * self.n_levels + lv
                instance = dict(zip(level, range(self.solve_ptr[a], self.solve_ptr[a + 1])))
                for u in engine.unit_groups([level]):
                    groups.append(u)
                    members.append([instance[g] for g in u])
                    unit_values.append(values[w])
                ptr.append(len(groups))
        self.unit_ptr = np.array(ptr, np.int64)
        self.units = engine.make_units(groups, members, unit_values, private_zeros)
        self.team = Team(n, "kinedyn-group")
        # each worker's thread CPU seconds in the last run (Kinematics.simulate sums them over
        # its runs); one_by_one: the workers run in turn on the calling thread, each alone
        # (Team.run; a diagnostic, only where no barrier makes them wait for each other)
        self.last_cpu = np.zeros(n)
        self.one_by_one = False

    def _instance_solvers(self):
        """The solvers of the group instances and of the units, after each (re-)analysis by the
        engine: a group solved by its owner uses the engine's solver scratch (so the state
        after a run is where the serial engine keeps it), a copy of an ancestor scratch of its
        own."""
        e = self.engine
        if self._built_from is not e.sworks:
            self.solvers = tuple(e.solvers[g] for g in self.instances)
            self.sworks = tuple(e.sworks[g] if self.group_owner[g] == w
                                else private_copy(e.sworks[g])
                                for g, w in zip(self.instances, self.instance_worker))
            e.unit_solvers(self.units, self.solvers, self.sworks)
            self._built_from = e.sworks

    def run(self, times, q, qd, qdd, start, stop, tol, max_iter, fixed, extrapolate, outs):
        if self.one_by_one and not self.replicate:
            raise ValueError("one_by_one: these workers meet at a barrier after every DAG level, "
                             "so they cannot run one after the other")
        e = self.engine
        out_q, out_qd, out_qdd, out_res, out_iter = outs
        n_q = len(q)
        res_w, it_w = resident_zeros((self.n, len(times))), resident_zeros((self.n, len(times)),
                                                                            np.int64)
        n_rows = out_q.shape[0]
        if self._stage.shape[2] < n_rows:  # mapped before the run (private_zeros)
            self._stage = private_zeros((self.n, 3, n_rows, max(1, *map(len, self.staged))))
        self.sync[:] = 0
        state = self.state[:, :, :n_q]
        state[:, 0], state[:, 1], state[:, 2] = q, qd, qdd
        if start >= 2:
            state[:, 3] = out_qdd[start - 2]
        self._instance_solvers()
        units = self.units.tables()
        works, = self.work_table(self.works)
        groups = self.tables(self.solvers, self.sworks, self.plans, self.pws)
        parts = (units, self.unit_ptr, None if fixed else groups)
        rest = (self.n, self.replicate, self.sync, times, self.state, self.record, self._stage,
                start, stop, tol, max_iter, extrapolate, out_q, out_qd, out_qdd, res_w, it_w,
                self.status)

        def work(w):
            run_worker(e.kin.data, works, *parts, self.n_levels, w, *rest)

        self.last_cpu = self.team.run(work, one_by_one=self.one_by_one)
        for w, cols in enumerate(self.staged):
            for out, stage in zip((out_q, out_qd, out_qdd), self._stage[w]):
                out[start:stop, cols] = stage[start:stop, :len(cols)]
        out_res[start:stop] = res_w[:, start:stop].max(axis=0)
        out_iter[start:stop] = it_w[:, start:stop].max(axis=0)
        failed = [w for w in range(self.n) if self.status[w, 0] != K.OK]
        if failed:
            w = min(failed, key=lambda w: self.status[w, 1])
            st, k, p = (int(x) for x in self.status[w])
            # the failing worker's state: its group and that group's ancestors at step k
            row = w if self.replicate else 0
            q[:], qd[:], qdd[:] = state[row, 0], state[row, 1], state[row, 2]
            return st, k, e.failed_group(self.units, p, q, times[k])
        # each coordinate from the state row of the worker that owns it (shared row 0 with
        # barriers)
        owner = self.owner if self.replicate else np.zeros(n_q, np.int64)
        cols = np.arange(n_q)
        q[:], qd[:], qdd[:] = state[owner, 0, cols], state[owner, 1, cols], state[owner, 2, cols]
        return K.OK, stop, -1

    def close(self):
        self.team.close()
