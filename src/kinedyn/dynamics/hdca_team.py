"""Whole HDCA runs on a thread team: one compiled call per worker for the entire run.

Each worker of a :class:`kinedyn.parallel.team.Team` runs :func:`team_worker`: every step's
stages evaluate the state derivative with :func:`~kinedyn.formulations.hamiltonian.team.evaluate_part`
(the worker's subtree of the assembly tree), and the worker applies the integrator's update to
the entries of the joints it computed, so no other synchronisation than the evaluation's
barriers is needed (semi-implicit Euler adds its momentum map, a serial pass over the chain by
the team's leader between barriers). The updates are the per-entry
formulas of :func:`kinedyn.dynamics.integrators.step` (same operations in the same order), so
a threaded run equals the serial ``integrate_fixed`` run bit for bit.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .._unmanaged import unmanaged
from ..formulations import protocol
from ..formulations.hamiltonian.team import evaluate_part, make_plan
from ..parallel.team import Team, barrier, make_sync
from .integrators import EULER, RK4, SEMI_IMPLICIT_EULER, momentum_rate

DERIVATIVE = -1  # "method" of a run that only evaluates the derivative n_steps times (timing)


@nb.njit(cache=True, nogil=True, inline="always")
def _update(method, stage, i, n, y, scratch, dt):
    """Stage ``stage``'s update of state entry ``i`` (integrators.step, first-order system)."""
    if method == EULER:
        y[i] += dt * scratch[0, i]
    elif method == SEMI_IMPLICIT_EULER:
        if stage == 0:  # the trial state: q, the momenta of the new velocities
            scratch[4, i] = y[i] + dt * scratch[0, i] if i >= n else y[i]
        elif i < n:
            y[i] += dt * scratch[1, i]
    elif method == RK4:
        yt = scratch[4]
        if stage == 0:
            yt[i] = y[i] + 0.5 * dt * scratch[0, i]
        elif stage == 1:
            yt[i] = y[i] + 0.5 * dt * scratch[1, i]
        elif stage == 2:
            yt[i] = y[i] + dt * scratch[2, i]
        else:
            y[i] += dt / 6.0 * (scratch[0, i] + 2.0 * scratch[1, i] + 2.0 * scratch[2, i]
                                + scratch[3, i])


@nb.njit(cache=True, nogil=True, inline="always")
def _copy_joints(joints, lo, hi, n, src, dst):
    for a in range(lo, hi):
        k = joints[a]
        dst[k] = src[k]
        dst[n + k] = src[n + k]


@nb.njit(cache=True, nogil=True, inline="always")
def _leader_pass(data, work, plan, w, sync, y, scratch, end):
    """Semi-implicit Euler's momentum map, a serial pass over the chain, by the team's leader
    between two barriers (every worker's rates in, its result out to all): before the second
    evaluation :func:`~kinedyn.dynamics.integrators.momentum_rate`, at the step's ``end`` the
    momenta of the new velocities at the new position, as the serial step."""
    n = data.n_j
    barrier(sync, plan.n_workers, w)
    if w == plan.leader:
        if end:
            protocol.calc_momenta(data, work, y[:n], scratch[1, :n], y[n:], scratch[2, n:])
        else:
            momentum_rate(data, work, y, n, scratch)
    barrier(sync, plan.n_workers, w)


@nb.njit(cache=True, nogil=True)
def team_worker(data_, work_, plan_, w, sync_, y_, dt, n_steps, method, record_every, out_,
                scratch_, status_):
    """Worker ``w``: ``n_steps`` steps of ``method`` from ``y`` (in place); rows of ``out``
    (``n_steps // record_every + 1``, row 0 filled by the caller) receive its joints' states.
    ``scratch (6, 2 n_j)``: k1..k4, trial state, saved state; with ``method = DERIVATIVE``
    the derivative at ``y`` is evaluated ``n_steps`` times into ``scratch[0]``.
    ``status[w] = (status, steps done)``; on failure ``y`` is the state before the failed step."""
    data, work, plan = unmanaged(data_), unmanaged(work_), unmanaged(plan_)
    y, out, scratch = unmanaged(y_), unmanaged(out_), unmanaged(scratch_)
    sync, status = unmanaged(sync_), unmanaged(status_)  # shared: no reference counts to bounce
    n = data.n_j
    own, own_lo, own_hi = plan.joints, plan.joint_ptr[w], plan.joint_ptr[w + 1]
    saved = scratch[5]
    n_stages = 4 if method == RK4 else (2 if method == SEMI_IMPLICIT_EULER else 1)
    semi_implicit = method == SEMI_IMPLICIT_EULER
    for s in range(n_steps):
        _copy_joints(own, own_lo, own_hi, n, y, saved)
        for stage in range(n_stages):
            src = scratch[4] if stage > 0 else y
            kd = scratch[stage]
            st = evaluate_part(data, work, plan, w, sync, src[:n], src[n:], kd[:n], kd[n:])
            if st != 0:
                _copy_joints(own, own_lo, own_hi, n, saved, y)
                status[w, 0], status[w, 1] = st, s
                return
            if semi_implicit and stage == 0:
                _leader_pass(data, work, plan, w, sync, y, scratch, False)
            for a in range(own_lo, own_hi):
                _update(method, stage, own[a], n, y, scratch, dt)
                _update(method, stage, n + own[a], n, y, scratch, dt)
        if semi_implicit:
            _leader_pass(data, work, plan, w, sync, y, scratch, True)
        if method != DERIVATIVE and (s + 1) % record_every == 0:
            _copy_joints(own, own_lo, own_hi, n, y, out[(s + 1) // record_every])
    status[w, 0], status[w, 1] = 0, n_steps


class ThreadedHDCA:
    """HDCA runs (or repeated evaluations) of one ``HDCAData`` on a team of ``n_workers``
    threads kept alive between runs; ``work`` is shared (workers write disjoint parts).
    After a run, ``cpu[w]`` is worker ``w``'s thread CPU time (s), waiting included."""

    def __init__(self, data, work, n_workers: int = 2):
        self.data, self.work = data, work
        self.plan = make_plan(data, n_workers)
        self.team = Team(n_workers, "kinedyn-hdca")
        self.status = np.zeros((n_workers, 2), np.int64)
        self.cpu = np.zeros(n_workers)

    def run(self, y, dt, n_steps, method, record_every, out, scratch) -> tuple[int, int]:
        """As :func:`~kinedyn.dynamics.integrators.integrate_fixed` (``out[0]`` = ``y``):
        ``(status, steps done)``."""
        sync = make_sync(self.plan.n_workers)
        out[0] = y

        def fn(w):
            team_worker(self.data, self.work, self.plan, w, sync, y, dt, n_steps, method,
                        record_every, out, scratch, self.status)
        self.cpu[:] = self.team.run(fn)
        st = self.status[:, 0]
        return (int(st.max()), int(self.status[:, 1].min())) if st.any() else (0, n_steps)

    def derivative(self, y, scratch, repeat: int = 1) -> int:
        """``scratch[0] = ydot(y)``, evaluated ``repeat`` times; the status."""
        return self.run(y, 0.0, repeat, DERIVATIVE, 1, np.empty((1, len(y)), y.dtype), scratch)[0]

    def close(self):
        self.team.close()
