"""Adaptive high-accuracy reference: SciPy ``solve_ivp`` on the coordinate-partitioned ODE.

Validation only (not real time): the state is the independent coordinates and velocities
(thesis section 2.1.5, eq. 2.26), the right-hand side is the compiled ``partitioning`` method's,
so the constraints hold to the Newton tolerance at every evaluation and the only error is the
adaptive integrator's (``rtol``, ``atol``). Between recorded samples the partition is checked
(influence matrix ``B``) and chosen again when it degrades, exactly as the fixed-step run does.
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


class _Failed(Exception):
    def __init__(self, status):
        self.status = status


def _segment(dyn, t_a, t_b, rtol, atol, method) -> int:
    """Integrate dyn.y from t_a to t_b in place and complete the state; return a status."""
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
    sol = solve_ivp(rhs, (t_a, t_b), dyn.y, method=method, rtol=rtol, atol=atol)
    if not sol.success:
        raise SolverError(f"solve_ivp: {sol.message}", time=t_a)
    dyn.y[:] = sol.y[:, -1]
    with functions_defined(dyn.model, (t_b,)):
        return complete_state(system, work, dyn.y, t_b)


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
        system, work = dyn.system, dyn.sys_work
        out[k, :n], out[k, n:] = work.q, work.qd
        if influence(system, work) > system.influence_limit:
            dyn._build(work.q.copy(), work.qd.copy(), t_b)
            dyn.reanalyses += 1
        if progress:
            progress(k * record_every, n_steps)
    return watch.wall, watch.cpu
