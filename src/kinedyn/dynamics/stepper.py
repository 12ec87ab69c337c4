"""A dynamics run advanced step by step from outside: real-time control, hardware in the loop,
driving simulators.

:meth:`Dynamics.simulate <kinedyn.dynamics.simulation.Dynamics.simulate>` runs a whole
interval in one compiled call. A controller or a piece of hardware in the loop instead reads
the state after each step and sets the model's **inputs** (``System.add_input``, a model
file's ``inputs``: values that force functions read) before the next one. A
:class:`Stepper` does that with the same compiled step as ``simulate``: each
:meth:`Stepper.step` is one compiled call of ``n`` steps from the current state, with the
same failure handling (a pivot order re-analysed or a partition changed where a step fails, a
blown-up state raised as :class:`~kinedyn.errors.DivergenceError`). Stepping ``n`` steps at
a time with inputs unchanged gives the states of ``simulate`` bit for bit.

Inputs are held over each step (zero-order hold, as a digital controller's output): an input
set between steps k and k + 1 acts from t_k on, through every stage of the step.
"""
from __future__ import annotations

import collections
import time
import weakref

import numpy as np

from .._jit import resolved_call
from ..errors import ModelError, UnknownNameError, check_number
from ..kinematics.analysis import blas_threads
from ..model.compiled import functions_defined, undefined
from .implicit import hht_run
from . import integrators as I

#: how many of the latest calls :meth:`Stepper.timing` summarises
TIMED_CALLS = 100_000
#: below this wait (s) a real-time stepper spins instead of sleeping (sleep overshoots by
#: 50-100 us on a loaded Linux machine)
SPIN = 2e-4


class Stepper:
    """One run of a :class:`~kinedyn.dynamics.simulation.Dynamics`, advanced by
    :meth:`step` (made by :meth:`Dynamics.stepper
    <kinedyn.dynamics.simulation.Dynamics.stepper>`; it starts from the initial state, as
    ``simulate`` does, and a later ``simulate`` or stepper of the same object starts again).

    Attributes: ``t`` (s) and ``steps`` done; ``q``, ``qd``: the full natural coordinates and
    velocities after the last step (copies); ``overruns``: real-time steps that finished after
    their time (``realtime=True``).
    """

    def __init__(self, dyn, dt: float, *, realtime: bool = False):
        check_number("dt", dt, 0.0, above=True)
        if dyn.integrator_run == "reference":
            raise ModelError("the 'reference' integrator is adaptive and has no fixed step to "
                             "advance by: step with 'rk4', 'euler' or 'semi-implicit-euler'")
        self.dyn, self.dt, self.realtime = dyn, float(dt), bool(realtime)
        self._blas = None
        self._calls = collections.deque(maxlen=TIMED_CALLS)
        self.reset()

    # ---- state ---------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the initial state at t0 (the model's inputs keep their values)."""
        dyn = self.dyn
        if dyn._ran:
            dyn._initial_state()
        dyn._ran, dyn._dt, dyn.reanalyses, dyn.stepping = True, self.dt, 0, self
        n = dyn.f.n_q
        self._row = np.empty((2, 2 * n))
        self._row[1, :n], self._row[1, n:] = dyn.q_initial, dyn.qd_initial
        self.steps, self.overruns = 0, 0
        self._last_failure = -1
        self._start_wall = None
        self._calls.clear()
        if dyn.method == "index3" or dyn.solver_name == "dense":
            self._one_blas_thread()
        if dyn.method == "index3":
            self._advance, self._hht = self._hht_advance, None
        else:
            advance = dyn._advancer(self.dt)
            self._advance = lambda t, count: advance(dyn.y, t, count, self._row, max(count, 1))
        with functions_defined(dyn.model, (dyn.t0,)):
            self._advance(dyn.t0, 0)  # load (or compile) the run kernel now, not in a step

    def _one_blas_thread(self) -> None:
        """One BLAS thread for the dense LAPACK calls of the steps, as inside ``simulate``
        (two threads spinning against a loaded machine made them many times slower, and they
        round differently), held until :meth:`close`: setting and restoring it takes 20 us,
        more than many steps."""
        if self._blas is None:
            limit = blas_threads(1)
            self._blas = weakref.finalize(self, limit.restore_original_limits)

    def close(self) -> None:
        """Give the BLAS threads back (a stepper of a method that calls LAPACK holds them to
        one while it is open; also on garbage collection, or at the end of a ``with``
        block)."""
        if self._blas is not None:
            self._blas()
            self._blas = None

    def __enter__(self) -> "Stepper":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _hht_advance(self, t, count):
        """``count`` HHT steps from ``t``, the end state recorded in ``_row[1]``."""
        h = self.dyn.hht
        args = (h.data, h.work, h.q, h.qd, t, self.dt, count, max(count, 1), self._row)
        if self._hht is None or self._hht[0] is not h:  # by the dispatcher, then directly
            result, run = resolved_call(hht_run, args)
            self._hht = h, run
            return result
        return self._hht[1](*args)

    @property
    def t(self) -> float:
        """The simulated time of the current state (s)."""
        return self.dyn.t0 + self.steps * self.dt

    @property
    def q(self) -> np.ndarray:
        return self._row[1, :self.dyn.f.n_q].copy()

    @property
    def qd(self) -> np.ndarray:
        return self._row[1, self.dyn.f.n_q:].copy()

    def observe(self, *names: str) -> dict[str, float]:
        """Channels of the current state by name, as a run's results name them
        (``joint.pin.angle``, ``point.coupler.C.x_d``, ``body.platform.z``; all of them without
        names). Accelerations (``_dd``) are not known between steps: NaN."""
        f = self.dyn.f
        state = self.q[None], self.qd[None], np.full((1, f.n_q), np.nan)
        obs = f.observables(*state, names=names or None)  # only what is named
        unknown = [n for n in names if n not in obs]
        if unknown:
            raise UnknownNameError("channel", unknown[0], f.observables(*state))
        return {n: float(obs[n][0]) for n in (names or obs)}

    def set_inputs(self, values: dict | None = None, /, **named) -> None:
        """Set the model's inputs for the next steps (:meth:`CompiledModel.set_inputs
        <kinedyn.model.compiled.CompiledModel.set_inputs>`)."""
        self.dyn.model.set_inputs(values, **named)

    # ---- stepping ------------------------------------------------------------------------
    def step(self, n: int = 1) -> float:
        """Advance ``n`` steps (one compiled call); returns the new time. With ``realtime``,
        first waits until the wall clock, started at the first step, reaches the new time."""
        if n != 1:
            check_number("n", n, 1, whole=True)
        dyn, n = self.dyn, int(n)
        if dyn.stepping is not self:
            raise ModelError("this stepper's run was started again by a later simulate() or "
                             "stepper() of the same Dynamics: call reset() to start it again "
                             "from the initial state, or make a stepper per run")
        if self.realtime and self._start_wall is None:  # the clock starts with the first step
            self._start_wall = time.perf_counter() - (self.t - dyn.t0)
        done, wall = 0, 0.0
        while done < n:
            count, start = n - done, self.steps + done
            t_start = dyn.t0 + start * self.dt
            stages = lambda: I.stage_times(t_start, self.dt, count)  # noqa: E731 (failures)
            before = time.perf_counter()
            with functions_defined(dyn.model, stages):
                st, k = self._advance(t_start, count)
            wall += time.perf_counter() - before
            if st != 0:
                self._require_defined(t_start, count)
                if dyn.method == "index3":
                    y = np.concatenate([dyn.hht.q, dyn.hht.qd])
                    dyn._raise(st, y, t_start + k * self.dt)
                # on from the failed step's start, re-analysed (the steps before it are made)
                self._last_failure = dyn._recover(st, start + k, self._last_failure)
                done += k
                continue
            done = n
        self.steps += n
        end = self._row[1]
        if not np.isfinite(end.dot(end)):  # (a NaN or infinity anywhere)
            self._require_defined(self.t - n * self.dt, n)
            raise I.diverged(dyn.integrator_run, self.dt, self.t,
                             f" (within the {n} step(s) from t = {self.t - n * self.dt:.6g} s)")
        self._calls.append(wall / n)
        if self.realtime:
            self._wait_for(self.t - dyn.t0)
        return self.t

    def _require_defined(self, t_start: float, count: int) -> None:
        """ModelError naming a function of time (or of the inputs as now set) undefined in the
        ``count`` steps from ``t_start``: those run with the inputs as they are now."""
        why = undefined(self.dyn.model, I.stage_times(t_start, self.dt, count))
        if why is not None:
            raise ModelError(why)

    def _wait_for(self, elapsed: float) -> None:
        """Wait until ``elapsed`` seconds of wall clock since the first step began; a step
        already late counts as an overrun."""
        now = time.perf_counter()
        due = self._start_wall + elapsed
        if now > due:
            self.overruns += 1
            return
        while due - now > SPIN:
            time.sleep((due - now) - SPIN)
            now = time.perf_counter()
        while time.perf_counter() < due:
            pass

    def step_times(self) -> np.ndarray:
        """Wall seconds per step of the compiled call of each of the latest :meth:`step`
        calls (up to :data:`TIMED_CALLS`), oldest first."""
        return np.asarray(self._calls, float)

    def timing(self) -> dict:
        """Wall time of the compiled calls of the latest :meth:`step` calls (up to
        :data:`TIMED_CALLS`), in microseconds per step: median, 99th percentile and largest,
        with the number of calls and the step."""
        if not self._calls:
            return {"calls": 0}
        us = self.step_times() * 1e6
        return {"calls": len(us), "median_us": float(np.median(us)),
                "p99_us": float(np.percentile(us, 99)), "max_us": float(us.max()),
                "dt_us": self.dt * 1e6, "overruns": self.overruns}
