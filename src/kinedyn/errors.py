"""Exceptions raised by kinedyn, and the checks of input that every analysis shares
(:func:`run_steps` of a run's times, :func:`check_number` of a setting, :func:`coordinates` of a
state vector).

Two families:

* :class:`ModelError` -- the *input* is wrong (a model file, a builder call, a parameter, a CLI
  argument). The message names the file, the location inside it (``joints[3].point_b``) and the
  problem.
* :class:`SolverError` -- the *numerics* failed (no convergence, singular configuration, loss of
  assembly). The message names the constraint(s) involved and the simulation time.
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable

import numpy as np


class KinedynError(Exception):
    """Base class of every error kinedyn raises on purpose."""


class ModelError(KinedynError, ValueError):
    """Invalid model description.

    Parameters
    ----------
    problem:
        What is wrong, in words a user understands.
    file:
        The model file, when the model came from one.
    location:
        Where inside the model, e.g. ``joints[3].point_b`` or ``bodies.crank.mass``.
    """

    def __init__(self, problem: str, *, file: str | None = None, location: str | None = None):
        self.problem = problem
        self.file = None if file is None else str(file)
        self.location = location
        super().__init__(self._format())

    def _format(self) -> str:
        where = ": ".join(str(x) for x in (self.file, self.location) if x)
        return f"{where}: {self.problem}" if where else self.problem

    def at(self, *, file: str | None = None, location: str | None = None) -> "ModelError":
        """Return a copy with the file and/or an outer location prefix filled in."""
        loc = self.location
        if location:
            loc = f"{location}.{loc}" if loc and not loc.startswith("[") else f"{location}{loc or ''}"
        err = type(self).__new__(type(self))
        ModelError.__init__(err, self.problem, file=file or self.file, location=loc)
        return err

    def __reduce__(self):  # picklable for Dask workers
        return (_rebuild_model_error, (type(self), self.problem, self.file, self.location))


def _rebuild_model_error(cls, problem, file, location):
    err = cls.__new__(cls)
    ModelError.__init__(err, problem, file=file, location=location)
    return err


class UnknownNameError(ModelError, KeyError):
    """A name that does not exist; the message lists the names that do."""

    def __init__(self, kind: str, name: str, known: Iterable[str], *, file=None, location=None):
        known = sorted(known)
        shown = ", ".join(known[:30]) + (" ..." if len(known) > 30 else "")
        super().__init__(f"unknown {kind} {name!r}; known: {shown or '(none)'}",
                         file=file, location=location)

    __str__ = ModelError.__str__  # KeyError would quote the message


class SolverError(KinedynError, RuntimeError):
    """A numerical method could not produce a trustworthy answer.

    Attributes
    ----------
    time: simulation time of the failure (``None`` for static problems).
    constraints: names of the constraint equations involved (worst first).
    """

    kind = "solver failure"

    def __init__(self, detail: str, *, time: float | None = None,
                 constraints: Iterable[str] = ()):
        self.detail = detail
        self.time = time
        self.constraints = list(constraints)
        parts = [self.kind]
        if time is not None:
            parts.append(f"at t = {time:.6g} s")
        msg = " ".join(parts) + f": {detail}"
        if self.constraints:
            msg += "; constraints involved: " + ", ".join(self.constraints[:8])
            if len(self.constraints) > 8:
                msg += f" (+{len(self.constraints) - 8} more)"
        super().__init__(msg)


class ConvergenceError(SolverError):
    """Newton-Raphson (or another iteration) did not reach its tolerance."""

    kind = "no convergence"


class SingularConfigurationError(SolverError):
    """The constraint Jacobian lost rank: a singular (bifurcation, dead-centre) configuration."""

    kind = "singular configuration"


class AssemblyError(SolverError):
    """The constraints cannot be satisfied near the given configuration (loss of assembly)."""

    kind = "loss of assembly"


class DivergenceError(SolverError):
    """A fixed-step run blew up: its state stopped being finite (an explicit step too large for
    the model's fastest motion)."""

    kind = "divergence"


class AccuracyWarning(UserWarning):
    """A run finished but its results violate the constraints by more than a run of that kind
    should (e.g. the Group Equations paper's fixed number of Newton iterations per step, taken
    with too large a step): the message names the worst constraint and the time."""


def check_iteration_settings(tol: float, max_iter: int) -> None:
    """A :class:`ModelError` unless Newton's tolerance is a positive finite number and its
    iteration limit at least 1 (a NaN tolerance is never met: every step would fail, blamed on
    the mechanism)."""
    check_number("tol", tol, 0.0, above=True)
    check_number("max_iter", max_iter, 1, whole=True)


def check_number(name: str, value, low: float = 0.0, *, above: bool = False,
                 whole: bool = False) -> None:
    """A :class:`ModelError` unless ``value`` is a finite number (a whole one if ``whole``) at
    least ``low`` (above it if ``above``): the settings of a method, checked before they are
    used (a NaN or negative factor runs, and its wrong numbers are blamed on the step)."""
    kind = numbers.Integral if whole else numbers.Real
    ok = (isinstance(value, kind) and not isinstance(value, bool) and math.isfinite(value)
          and (value > low if above else value >= low))
    if not ok:
        bound = "" if low == -math.inf else f" {'above' if above else 'of at least'} {low:g}"
        hint = " (a float: give an int)" if whole and isinstance(value, float) else ""
        raise ModelError(f"{name} must be a finite {'whole ' if whole else ''}number{bound}, "
                         f"got {value!r}{hint}")


def check_flag(name: str, value) -> bool:
    """``value`` if it is True or False (NumPy's too), else a :class:`ModelError`: a switch
    given as ``"no"`` or ``0.5`` would be read as true and silently change the method."""
    if not isinstance(value, (bool, np.bool_)):
        raise ModelError(f"{name} is True or False, got {value!r}")
    return bool(value)


def check_baumgarte(baumgarte) -> tuple[float, float]:
    """Baumgarte's ``(alpha, beta)`` (1/s), two finite numbers >= 0, as floats."""
    if not (isinstance(baumgarte, (tuple, list)) and len(baumgarte) == 2):
        raise ModelError(f"baumgarte needs two numbers (alpha, beta), got {baumgarte!r}")
    for name, value in zip(("alpha", "beta"), baumgarte):
        check_number(f"baumgarte {name}", value)
    return float(baumgarte[0]), float(baumgarte[1])


def run_steps(t0: float, t_end: float, dt: float, limit: int = 10**9, warn: bool = True) -> int:
    """The number of whole steps of ``dt`` from ``t0`` to ``t_end`` (the nearest: every run
    counts them so), or a :class:`ModelError` when the times are not finite numbers, the interval
    is empty, ``dt`` is not positive or longer than the interval, or the steps exceed ``limit``
    (the arrays of a longer run would not fit in memory). A ``dt`` that does not divide the
    interval is warned about (unless not ``warn``: a check ahead of the run that will warn): the
    run ends at the nearest whole step, not at ``t_end``."""
    for name, value in {"t0": t0, "t_end": t_end, "dt": dt}.items():
        check_number(name, value, -math.inf)
    if not dt > 0 or not t_end > t0:
        raise ModelError(f"need dt > 0 and t_end > t0, got dt={dt:g}, t0={t0:g}, t_end={t_end:g}")
    ratio = (t_end - t0) / dt
    if not ratio <= limit:
        raise ModelError(f"dt {dt:g} over {t_end - t0:g} s gives {ratio:.3g} steps (limit "
                         f"{limit:.0e}); use a larger dt")
    n = int(round(ratio))
    if n < 1:
        raise ModelError(f"dt ({dt:g}) is longer than the simulated interval from t0 to t_end "
                         f"({t_end - t0:g} s): no step to take")
    if warn and abs(n - ratio) > 1e-6 * max(ratio, 1.0):
        warnings.warn(f"dt = {dt:g} s does not divide the interval from t0 = {t0:g} to t_end = "
                      f"{t_end:g} s: the run takes {n} whole steps and ends at "
                      f"t = {t0 + n * dt:.9g} s", UserWarning, stacklevel=3)
    return n


def record_interval(record_every, n_steps: int, t0: float, dt: float) -> int:
    """``record_every`` checked (a whole number >= 1) for a run of ``n_steps`` steps of ``dt``
    from ``t0``, warning when it does not divide them (the last record is then before the
    run's end)."""
    check_number("record_every", record_every, 1, whole=True)
    if n_steps % record_every:
        warnings.warn(f"record_every = {record_every} does not divide the run's {n_steps} "
                      f"steps: the last record is at t = "
                      f"{t0 + n_steps // record_every * record_every * dt:.9g} s",
                      UserWarning, stacklevel=3)
    return int(record_every)


def coordinates(f, value, what: str) -> np.ndarray:
    """``value`` as a float vector of one finite number per coordinate of ``f`` (a formulation:
    ``n_q``, ``coordinate_names``), or a ModelError saying what it should be (an initial guess,
    velocities, ...). Compiled kernels do not check bounds: a short vector would be read past
    its end."""
    try:
        vector = np.asarray(value, float)
    except (TypeError, ValueError):
        vector = None
    if vector is None or vector.shape != (f.n_q,) or not np.isfinite(vector).all():
        shown = "shape " + str(vector.shape) if vector is not None else repr(value)[:60]
        names = ", ".join(f.coordinate_names[:8]) + (", ..." if f.n_q > 8 else "")
        raise ModelError(f"{what} needs {f.n_q} finite numbers ({names}), got {shown}"
                         + (" with non-finite entries" if vector is not None
                            and vector.shape == (f.n_q,) else ""))
    return vector
