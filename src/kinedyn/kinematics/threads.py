"""Independent structural groups solved at the same time (the paper's OpenMP level, s. 4).

A pool of persistent Python threads each calls :func:`run_worker` once per run; the kernel is
compiled with ``nogil=True``, so the threads really run in parallel and the whole run - every
step, every level of the group DAG - happens inside compiled code. Worker ``w`` solves the
groups assigned to it on each level (balanced by size), then waits at a barrier until every
worker has finished that level (the next level reads their coordinates). The barrier is a
spin barrier on atomic integers (each worker publishes its arrivals on its own cache line),
yielding the core after a while so that an oversubscribed machine does not stall. No allocation, no GIL, no Python per step. The
pool, the atomics and the barrier are the shared :mod:`kinedyn.parallel.team` (also used by
threaded HDCA); their names stay importable from here.

Each worker extrapolates and records only the coordinates of its own groups, and keeps its own
residual and iteration maxima (reduced afterwards), so workers never write the same memory.
The paper's MKL level (threads inside each group's linear algebra) is set with
``threadpoolctl`` around the run.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .._unmanaged import unmanaged
from ..parallel.team import (ABORT, SPINS, Team, atomic_add, atomic_load,  # noqa: F401
                             atomic_store, barrier, make_sync, private_copy,
                             private_zeros, sched_yield)
from . import kernels as K
from .grouped import _group_pva, predict


# ---- the worker kernel ------------------------------------------------------------------------
@nb.njit(cache=True, nogil=True)
def run_worker(data_, works_, solvers_, sworks_, plans_, pws_, assign_ptr_, assign_, n_levels, w,
               n_workers, sync_, times_, q_, qd_, qdd_, start, stop, tol, max_iter, fixed,
               extrapolate, out_q_, out_qd_, out_qdd_, out_res_, out_iter_, status_):
    """Worker ``w`` of ``n_workers``: steps ``start..stop-1`` for its groups.

    ``assign[assign_ptr[w * n_levels + lv]: assign_ptr[w * n_levels + lv + 1]]`` are its groups
    on level ``lv`` - or, in the paper's step with the sparse solver, its one unit (its groups
    of the level as one block-diagonal system, :class:`~.grouped.Units`), indexing the tuples
    of the units instead of the groups'. Every array is used through an unmanaged view: the
    arrays both workers use (q, qd, qdd, sync) would otherwise have their reference counts
    incremented and decremented atomically by both cores at every inlined sub-problem, one
    cache line bouncing between them (Stewart platform, paper step, two workers: 63 -> 5.0 us
    per step). ``out_res``/``out_iter`` are (n_workers, n_steps); ``status[w]`` receives
    (status, step, group) of a failure (status 0 when the worker finished).
    """
    data, works, solvers, sworks = unmanaged(data_), unmanaged(works_), unmanaged(solvers_), \
        unmanaged(sworks_)
    plans, pws = unmanaged(plans_), unmanaged(pws_)
    assign_ptr, assign, times = unmanaged(assign_ptr_), unmanaged(assign_), unmanaged(times_)
    q, qd, qdd = unmanaged(q_), unmanaged(qd_), unmanaged(qdd_)
    out_q, out_qd, out_qdd = unmanaged(out_q_), unmanaged(out_qd_), unmanaged(out_qdd_)
    out_res, out_iter = unmanaged(out_res_), unmanaged(out_iter_)
    sync, status = unmanaged(sync_), unmanaged(status_)
    work = works[w]
    status[w, 0] = K.OK
    status[w, 1] = stop
    status[w, 2] = -1
    for k in range(start, stop):
        t = times[k]
        track = k > start and not fixed
        it_max, err_max = 0, 0.0
        for lv in range(n_levels):
            a = w * n_levels + lv
            for p in range(assign_ptr[a], assign_ptr[a + 1]):
                g = assign[p]
                cols = plans[g].cols
                if extrapolate:
                    predict(times, k, cols, q, qd, qdd, out_qdd)
                st, it, err = _group_pva(data, work, solvers, sworks, plans, pws, g, q, qd, qdd,
                                         t, tol, max_iter, fixed, track)
                if st != K.OK:
                    status[w, 0] = st
                    status[w, 1] = k
                    status[w, 2] = g
                    atomic_store(sync, ABORT, 1)
                    break
                it_max = max(it_max, it)
                err_max = max(err_max, err)
                for i in range(cols.shape[0]):
                    c = cols[i]
                    out_q[k, c] = q[c]
                    out_qd[k, c] = qd[c]
                    out_qdd[k, c] = qdd[c]
            if not barrier(sync, n_workers, w):
                return
        out_res[w, k] = err_max
        out_iter[w, k] = it_max


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


def assign_groups(structure, n_workers: int):
    """The groups of each level, in the order of their coordinates, cut into ``n_workers``
    consecutive runs of balanced cost (a group's cost taken as its size squared). Consecutive
    groups hold neighbouring coordinates (and scratch), so each worker writes one stretch of
    the shared arrays, which meet another worker's in one cache line at most; spreading
    equal legs alternately over the workers (largest-first balancing) made every leg boundary
    a line that both cores write at every step."""
    n_levels = len(structure.levels)
    lists = [[[] for _ in range(n_levels)] for _ in range(n_workers)]
    for lv, level in enumerate(structure.levels):
        order = sorted(level, key=lambda g: min(structure.groups[g].unknowns, default=0))
        loads = [structure.groups[g].size ** 2 for g in order]
        bounds = _contiguous_split(loads, n_workers)
        for w in range(n_workers):
            lists[w][lv] = order[bounds[w]:bounds[w + 1]]
    ptr, flat = [0], []
    for w in range(n_workers):
        for lv in range(n_levels):
            flat += sorted(lists[w][lv])
            ptr.append(len(flat))
    return np.array(ptr, np.int64), np.array(flat, np.int64), n_levels


class ThreadedRunner:
    """Runs a :class:`~.grouped.GroupEngine` on ``n_workers`` threads (persistent pool)."""

    def __init__(self, engine, n_workers: int):
        self.engine = engine
        self.n = int(n_workers)
        self.assign_ptr, self.assign, self.n_levels = assign_groups(engine.structure, self.n)
        self.sync = make_sync(self.n)
        self.status = np.zeros((self.n, 3), np.int64)
        # what a worker writes lies in cache lines of its own: the formulation scratch, each
        # group's residual and right-hand side, and a Jacobian values array per worker (the
        # groups' rows interleave in the shared one; a group's rows are read by it alone)
        f = engine.kin.f
        self.works = tuple(private_copy(f.make_work()) for _ in range(self.n))
        owner = np.zeros(len(engine.plans), np.int64)
        for w in range(self.n):
            owner[self.assign[self.assign_ptr[w * self.n_levels]:
                              self.assign_ptr[(w + 1) * self.n_levels]]] = w
        values = [private_zeros(len(engine.values)) for _ in range(self.n)]
        self.pws = tuple(K.PlanWork(private_zeros(len(pw.phi)), private_zeros(len(pw.rhs)),
                                    values[owner[g]]) for g, pw in enumerate(engine.pws))
        # the paper's step (sparse): each worker's groups of a level as one block-diagonal
        # system, as the serial run does with whole levels (the same arithmetic; the groups'
        # chains of dependent operations overlap: scissor-platform-22x4 116 -> 96 us serial)
        self.units = None
        if engine.levels is not None:
            ptr, groups, unit_values = [0], [], []
            for a in range(self.n * self.n_levels):  # a = w * n_levels + lv
                mine = tuple(self.assign[self.assign_ptr[a]:self.assign_ptr[a + 1]])
                if mine:
                    groups.append(mine)
                    unit_values.append(values[a // self.n_levels])
                ptr.append(len(groups))
            self.unit_ptr = np.array(ptr, np.int64)
            self.unit_assign = np.arange(len(groups), dtype=np.int64)
            self.units = engine.make_units(groups, unit_values, private_zeros)
        self.team = Team(self.n, "kinedyn-group")

    def run(self, times, q, qd, qdd, start, stop, tol, max_iter, fixed, extrapolate, outs):
        e = self.engine
        out_q, out_qd, out_qdd, out_res, out_iter = outs
        n = len(times)
        res_w, it_w = np.zeros((self.n, n)), np.zeros((self.n, n), np.int64)
        self.sync[:] = 0
        by_unit = e._by_units(fixed)
        if by_unit:
            u = self.units
            parts = (u.solvers, u.sworks, u.plans, u.pws, self.unit_ptr, self.unit_assign)
        else:
            parts = (e.solvers, e.sworks, e.plans, self.pws, self.assign_ptr, self.assign)

        def work(w):
            run_worker(e.kin.data, self.works, *parts, self.n_levels, w, self.n, self.sync,
                       times, q, qd, qdd, start, stop, tol, max_iter, fixed, extrapolate, out_q,
                       out_qd, out_qdd, res_w, it_w, self.status)

        self.team.run(work)
        out_res[start:stop] = res_w[:, start:stop].max(axis=0)
        out_iter[start:stop] = it_w[:, start:stop].max(axis=0)
        failed = [w for w in range(self.n) if self.status[w, 0] != K.OK]
        if failed:
            w = min(failed, key=lambda w: self.status[w, 1])
            st, k, g = (int(x) for x in self.status[w])
            if by_unit:  # a unit failed as a whole: its group with the largest residual
                g = e.worst_group(self.units.groups[g], q, times[k])
            return st, k, g
        return K.OK, stop, -1

    def close(self):
        self.team.close()
