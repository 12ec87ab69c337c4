"""Fixed-step integrators, compiled once for every system type.

A *system* is any NamedTuple for which :func:`kinedyn.formulations.protocol.calc_state_derivative`
(and optionally :func:`~kinedyn.formulations.protocol.post_step`) are implemented. The state is
``y = [x; v]`` with ``n_pos`` position-like entries ``x`` first. For second-order systems
(``x' = v``, e.g. ``y = [q; qd]``) semi-implicit Euler uses the new velocity directly; for systems
in canonical coordinates (HDCA's ``[q; p]``) it takes the momenta of the new velocity
(:func:`momentum_rate`), evaluates the position derivative again with them at the same position
(``protocol.calc_state_derivative_same_position``), and maps the new velocity back to momenta at
the new position (``protocol.calc_momenta``): the same steps as in ``[q; qd]``.

Integrators (codes): explicit Euler (0), semi-implicit (symplectic) Euler (1), classical RK4 (2).
A whole run executes in one compiled call (:func:`integrate_fixed`); the only allocation is the
scratch array made once by :func:`make_scratch`. Implementations of the protocol functions should
be loop-free wrappers registered with ``inline="always"`` that hand plain arrays to compiled
workers (see :mod:`kinedyn._unmanaged` for why).
"""
from __future__ import annotations

import warnings

import numba as nb
import numpy as np

from .._unmanaged import unmanaged
from ..formulations import protocol

EULER, SEMI_IMPLICIT_EULER, RK4 = 0, 1, 2
INTEGRATORS = {"euler": EULER, "semi-implicit-euler": SEMI_IMPLICIT_EULER, "rk4": RK4}
#: State-derivative evaluations per step (for reports).
EVALUATIONS = {EULER: 1, SEMI_IMPLICIT_EULER: 1, RK4: 4}


def integrator_code(name: str) -> int:
    from ..errors import UnknownNameError
    try:
        return INTEGRATORS[name]
    except KeyError:
        raise UnknownNameError("integrator", name, INTEGRATORS) from None


def _advice(integrator: str) -> str:
    return "use a smaller step" + (" or rk4" if "euler" in integrator else "")


def diverged(integrator: str, dt: float, time: float, detail: str = "",
             finding: str = "the state is no longer finite"):
    """The :class:`~kinedyn.errors.DivergenceError` of a run whose state stopped being finite at
    ``time`` (``detail``: where that was seen; ``finding``: another sign of the divergence)."""
    from ..errors import DivergenceError
    return DivergenceError(f"{finding}{detail}: {integrator} at dt = {dt:g} s is unstable for "
                           f"this model; {_advice(integrator)}", time=time)


def mechanism_size(f) -> float:
    """The largest coordinate of formulation ``f``'s initial configuration, at least 1: the
    scale the divergence and accuracy checks measure constraint violations against."""
    return max(1.0, float(np.abs(f.q0).max(initial=0.0)))


#: energy error, as a share of the largest kinetic energy of the run (the energy it exchanged),
#: above which a run of a model that conserves energy warns
ENERGY_WARNING = 0.1
#: constraint violation, as a share of the mechanism's size (its largest initial coordinate, at
#: least 1), above which a run warns
CLOSURE_WARNING = 1e-3
#: runs shorter than this are not judged on their energy: a first-order step from rest makes an
#: energy error as large as the kinetic energy it starts, which falls as the motion grows
ENERGY_MIN_STEPS = 100
#: a change of energy below this share of the energies' size (``level``) is rounding, not the
#: integrator's error: a mechanism at rest in equilibrium changes by 1e-14 J while its kinetic
#: energy stays near 1e-28 J
ENERGY_ROUNDING = 1e-10


def kinetic_supply(model, kinetic0: float, spring0: float, size: float) -> float:
    """The most kinetic energy a run of ``model`` that conserves energy can reach: the initial
    kinetic and spring energy plus the work of gravity on all its mass over twice its ``size``
    (no body falls farther). A run beyond it has blown up, however short."""
    weight = float(np.sum(model.body_mass[1:]) * np.linalg.norm(model.gravity))
    return float(kinetic0) + float(spring0) + weight * 2.0 * size


def warn_if_inaccurate(who: str, integrator: str, dt: float, steps: int, kinetic: np.ndarray,
                       drift: float | None = None, closure: float = 0.0,
                       size: float = 1.0, remedy: str = "",
                       supply: float | None = None, level: float = 0.0) -> None:
    """An :class:`~kinedyn.errors.AccuracyWarning` for a finite run whose numbers are wrong
    anyway: its energy changed by more than :data:`ENERGY_WARNING` of its largest kinetic
    energy although the model conserves it (``drift``: the largest change; None for a model
    that does not conserve energy; runs of fewer than :data:`ENERGY_MIN_STEPS` steps are not
    judged), or its constraints are violated by more than :data:`CLOSURE_WARNING` of the
    mechanism's ``size`` (``closure``: the largest violation; methods that do not enforce the
    positions let them drift; ``remedy``: what else helps then). A run of any length whose
    kinetic energy exceeds ten times its ``supply`` (:func:`kinetic_supply`) warns too. A
    change of energy below :data:`ENERGY_ROUNDING` of ``level`` (the size of the run's energies:
    the largest absolute total, gravity or spring energy) is rounding and never warns."""
    from ..errors import AccuracyWarning
    scale = float(np.max(kinetic, initial=0.0))
    found = []
    if (drift is not None and steps >= ENERGY_MIN_STEPS and scale > 0.0
            and drift > max(ENERGY_WARNING * scale, ENERGY_ROUNDING * level)):
        found.append(f"the energy changed by {drift:.3g} J, {drift / scale:.0%} of the largest "
                     f"kinetic energy ({scale:.3g} J), in a run that conserves it")
    elif drift is not None and supply is not None and scale > 10.0 * supply:
        found.append(f"the kinetic energy reached {scale:.3g} J, more than 10 times the "
                     f"{supply:.3g} J its initial energy and gravity can supply")
    apart = closure > CLOSURE_WARNING * size
    if apart:
        found.append(f"the constraints are violated by up to {closure:.3g}, more than "
                     f"{CLOSURE_WARNING:g} of the mechanism's size ({size:.3g})")
    if found:
        warnings.warn(AccuracyWarning(
            f"{who}: {'; '.join(found)}: {integrator} at dt = {dt:g} s is too coarse here; "
            f"{_advice(integrator)}{remedy if apart else ''}"), stacklevel=4)


def check_finite(states: np.ndarray, times: np.ndarray, integrator: str, dt: float) -> None:
    """Raise :func:`diverged` at the first recorded state (a row of ``states``, recorded at
    ``times``) that is not finite: a run that blew up must not return its numbers. Checked on
    the records after the run: a NaN or infinity, once there, stays."""
    bad = ~np.isfinite(states).all(axis=1)
    if bad.any():
        k = int(np.argmax(bad))
        raise diverged(integrator, dt, float(times[k]),
                       f" (first recorded at this time; the last finite record is at t = "
                       f"{times[max(k - 1, 0)]:.6g} s)")


def stage_times(t_start: float, dt: float, count: int) -> np.ndarray:
    """Every time at which ``count`` fixed steps of ``dt`` from ``t_start`` may evaluate the
    model (step starts, RK4's half steps, step ends): the candidates a
    :class:`~kinedyn.model.compiled.functions_defined` context searches for a zero divisor."""
    return t_start + dt * (np.arange(count)[:, None] + np.array([0.0, 0.5, 1.0]))


def make_scratch(n_y: int) -> np.ndarray:
    """Scratch for :func:`step`: 6 rows of length n_y (k1..k4, trial state, saved state)."""
    return np.zeros((6, n_y))


@nb.njit(cache=True, nogil=True, inline="always")
def momentum_rate(system, work, y, n_pos, scratch):
    """Semi-implicit Euler in ``[q; p]``, between its two evaluations: ``scratch[0, n_pos:] =
    pd - Mdot qd`` (``= M qdd``) at the state ``y`` and its derivative ``scratch[0]``, so that
    the momenta ``p + dt M qdd`` have the velocities ``qd + dt qdd`` at ``q``: the peers'
    ``[q; v]`` form (v += dt a; q += dt v), exactly for open chains (a closed chain's: without
    its loop's curvature term, docs/hdca.md). The explicit ``p += dt pd`` instead adds
    ``dt M^-1 Mdot qd`` to the velocities, and that diverged on a 256-link chain at dt = 1 ms
    (docs/hdca.md). Writes ``M qd`` and ``Mdot qd`` into ``scratch[2]``; the map reuses the
    forward kinematics of the evaluation at ``y`` (the work remembers their ``q``)."""
    k1, m = scratch[0], scratch[2]
    protocol.calc_momenta(system, work, y[:n_pos], k1[:n_pos], m[:n_pos], m[n_pos:])
    for i in range(n_pos, y.shape[0]):
        k1[i] -= m[i]


@nb.njit(cache=True, nogil=True, inline="always")
def step(system, work, y, t, dt, method, n_pos, second_order, scratch):
    """Advance ``y`` in place from ``t`` to ``t + dt``; return a status (0 = ok).

    Inlined into its callers: a real call that receives the method's NamedTuples cost 5 us per
    step on the four-bar (measured), more than the four derivative evaluations of RK4. The
    derivative has a single call site, in a loop over the stages, because every call site is
    inlined whole: one site instead of five halved the compilation of each whole-run kernel
    and made the steps faster (docs/architecture.md). The one other site, semi-implicit
    Euler's second evaluation of a ``[q; p]`` system at the same position, is an empty
    default for every other system.
    """
    n = y.shape[0]
    yt = scratch[4]
    if method == RK4:
        n_evaluations = 4
    elif method == SEMI_IMPLICIT_EULER and not second_order:
        n_evaluations = 2
    else:
        n_evaluations = 1
    for stage in range(n_evaluations):
        if stage == 0:
            ts = t
            yt[:] = y
        elif method == RK4:
            # classical RK4: stages at t + h/2, t + h/2, t + h from the previous slope
            c = 1.0 if stage == 3 else 0.5
            ts = t + c * dt
            k_previous = scratch[stage - 1]
            for i in range(n):
                yt[i] = y[i] + c * dt * k_previous[i]
        else:
            # semi-implicit Euler in [q; p]: the momenta of the step's new velocities,
            # p + dt (pd - Mdot qd), whose velocities (the second evaluation's qd) are
            # qd + dt qdd (momentum_rate)
            ts = t
            momentum_rate(system, work, y, n_pos, scratch)
            yt[:] = y
            for i in range(n_pos, n):
                yt[i] = y[i] + dt * scratch[0, i]
        if stage == 1 and method == SEMI_IMPLICIT_EULER:  # (first order) q as at stage 0
            st = protocol.calc_state_derivative_same_position(system, work, yt, ts, scratch[1])
        else:
            st = protocol.calc_state_derivative(system, work, yt, ts, scratch[stage])
        if st != 0:
            return st
    k1 = scratch[0]
    if method == EULER:
        for i in range(n):
            y[i] += dt * k1[i]
    elif method == SEMI_IMPLICIT_EULER:
        if second_order:
            for i in range(n_pos, n):
                y[i] += dt * k1[i]
            for i in range(n_pos):
                y[i] += dt * y[n_pos + i]
        else:
            k2 = scratch[1]
            for i in range(n_pos):
                y[i] += dt * k2[i]
            # the momenta of those velocities at the new position: the next step reads them
            # back as they are
            protocol.calc_momenta(system, work, y[:n_pos], k2[:n_pos], y[n_pos:],
                                  scratch[2, n_pos:])
    else:
        k2 = scratch[1]
        k3 = scratch[2]
        k4 = scratch[3]
        for i in range(n):
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    return protocol.post_step(system, work, y, t + dt)


@nb.njit(cache=True, nogil=True)
def integrate_fixed(system_, work_, y_, t0, dt, n_steps, method, n_pos, second_order,
                    record_every, out_y_, scratch_):
    """Run ``n_steps`` steps from ``t0``; record ``y`` every ``record_every`` steps.

    ``out_y`` has ``n_steps // record_every + 1`` rows of the recorded state
    (:func:`~kinedyn.formulations.protocol.record_state`); row 0 is the initial state. Returns
    ``(status, steps_done)``: on a nonzero status the run stops and ``y`` is the state at the
    start of the failed step.
    """
    system, work = unmanaged(system_), unmanaged(work_)
    y, out_y, scratch = unmanaged(y_), unmanaged(out_y_), unmanaged(scratch_)
    protocol.record_state(system, work, y, t0, out_y[0])
    saved = scratch[5]
    for s in range(n_steps):
        saved[:] = y
        st = step(system, work, y, t0 + s * dt, dt, method, n_pos, second_order, scratch)
        if st != 0:
            y[:] = saved
            return st, s
        if (s + 1) % record_every == 0:
            protocol.record_state(system, work, y, t0 + (s + 1) * dt,
                                  out_y[(s + 1) // record_every])
    return 0, n_steps


@nb.njit(cache=True, nogil=True)
def eval_state_derivative(system, work, y, t, ydot):
    """The state derivative callable from Python (adaptive SciPy reference integrators)."""
    return protocol.calc_state_derivative(system, work, y, t, ydot)
