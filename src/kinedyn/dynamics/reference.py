"""Adaptive high-accuracy reference: SciPy ``solve_ivp`` on the coordinate-partitioned ODE.

Validation only (not real time): the state is the independent coordinates and velocities
(thesis section 2.1.5, eq. 2.26), the right-hand side is the compiled ``partitioning`` method's,
so the constraints hold to the Newton tolerance at every evaluation and the only error is the
adaptive integrator's (``rtol``, ``atol``). The partition is watched at every accepted step: a
terminal ``solve_ivp`` event fires where the largest entry of the influence matrix ``B`` reaches
the run's limit (or the dependent coordinates stop converging), and the run chooses the partition
again there and goes on, as the fixed-step run does after each step. Checking only at the recorded
samples would let a long output interval carry a degraded partition across a singular block,
where Newton's method lands on another assembly branch.
"""
from __future__ import annotations


import numpy as np
from scipy.integrate import solve_ivp

from ..errors import ModelError, SolverError
from ..model.compiled import functions_defined, undefined
from .integrators import eval_state_derivative
from .methods import complete_state, influence
from .stopwatch import Stopwatch

#: Default tolerances of the reference (issue 5: rtol 1e-10).
RTOL, ATOL = 1e-10, 1e-12


#: Re-partitions allowed within one recorded interval before the run gives up (a partition that
#: degrades again at once means no partition of the dependent block is well conditioned).
MAX_REPARTITIONS = 100


class _Failed(Exception):
    def __init__(self, status):
        self.status = status


def _degraded_partition(dyn):
    """Terminal event of ``solve_ivp``: positive while the partition is sound, i.e. the dependent
    coordinates converge at (t, y) and the influence matrix stays below the run's limit."""
    system, work = dyn.system, dyn.sys_work

    def margin(t, y):
        with functions_defined(dyn.model, (t,)):
            if complete_state(system, work, y, t) != 0:
                return -1.0
        return system.influence_limit - influence(system, work)
    margin.terminal, margin.direction = True, -1
    return margin


def _segment(dyn, t_a, t_b, rtol, atol, method) -> int:
    """Integrate dyn.y from t_a to t_b in place, re-partitioning wherever the partition degrades,
    and complete the state; return a status."""
    for _ in range(MAX_REPARTITIONS):
        t_a = _integrate(dyn, t_a, t_b, rtol, atol, method)
        if t_a is None:
            break
        q, qd = dyn._full_state(dyn.y, t_a)
        dyn._build(q, qd, t_a)
        dyn.reanalyses += 1
    else:
        raise SolverError(f"the coordinate partition degraded {MAX_REPARTITIONS} times within "
                          "one recorded interval: no partition of the dependent coordinates is "
                          "well conditioned here (a singular configuration?)", time=t_a)
    with functions_defined(dyn.model, (t_b,)):
        return complete_state(dyn.system, dyn.sys_work, dyn.y, t_b)


def _integrate(dyn, t_a, t_b, rtol, atol, method):
    """Integrate dyn.y from t_a towards t_b in place; return the time where the partition
    degraded (the state is there), or None at t_b."""
    system, work = dyn.system, dyn.sys_work
    ydot = np.zeros_like(dyn.y)

    def rhs(t, y):
        with functions_defined(dyn.model, (t,)):
            st = eval_state_derivative(system, work, y, t, ydot)
        if st != 0 or not np.isfinite(ydot).all():
            why = undefined(dyn.model, (t,))  # NaN loads: SciPy would only shrink its step
            if why is not None:
                raise ModelError(why)
        if st != 0:
            raise _Failed(st)
        return ydot.copy()
    sol = solve_ivp(rhs, (t_a, t_b), dyn.y, method=method, rtol=rtol, atol=atol,
                    events=_degraded_partition(dyn))
    if not sol.success:
        raise SolverError(f"solve_ivp: {sol.message}", time=t_a)
    dyn.y[:] = sol.y[:, -1]
    return float(sol.t[-1]) if sol.status == 1 else None


def run_reference(dyn, n_steps: int, dt: float, record_every: int, out: np.ndarray, progress,
                  rtol: float = RTOL, atol: float = ATOL,
                  method: str = "DOP853") -> tuple[float, float]:
    """Fill ``out`` (recorded full states [q; qd]) like the fixed-step runs; return the wall and
    thread CPU seconds of the integration."""
    n = dyn.f.n_q
    n_rec = out.shape[0]
    out[0, :n], out[0, n:] = dyn.q_initial, dyn.qd_initial
    watch = Stopwatch()
    for k in range(1, n_rec):
        t_a = dyn.t0 + (k - 1) * record_every * dt
        t_b = dyn.t0 + k * record_every * dt
        for attempt in range(2):  # a failed evaluation: re-partition at t_a and retry once
            y_a = dyn.y.copy()
            with watch.timing():
                try:
                    st = _segment(dyn, t_a, t_b, rtol, atol, method)
                except _Failed as e:
                    st = e.status
            if st == 0:
                break
            if attempt == 1:
                dyn._raise(st, y_a, t_a)
            q, qd = dyn._full_state(y_a, t_a)
            dyn._build(q, qd, t_a)
            dyn.reanalyses += 1
        out[k, :n], out[k, n:] = dyn.sys_work.q, dyn.sys_work.qd
        if progress:
            progress(k * record_every, n_steps)
    return watch.wall, watch.cpu
