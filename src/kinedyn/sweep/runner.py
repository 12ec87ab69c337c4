"""Running the cases of a study: in this process, or on Dask workers.

A case compiles the model with its parameters, sets its inputs, builds the analysis, runs it and
reduces the results to the study's metrics (:func:`run_case`). What a case can fail of (a design
that does not assemble, a run that diverges, a parameter the model refuses) is recorded with the
case, as a design study needs: the other cases go on. A failure that every case would share (an
unknown channel in a metric, a method the model cannot use) stops the study at its first case.

Dask: cases go to the workers in batches (a task costs about 3 ms of scheduling, as much as a
short kinematic run), the study itself (model, cases, metrics) is sent to every worker once,
and results are gathered as they complete, for the progress bar.
"""
from __future__ import annotations

import inspect
import math
import os
import time
import warnings
from dataclasses import dataclass, field

from .._llvm import transient_code
from ..errors import AccuracyWarning, KinedynError, ModelError
from .cases import Cases
from .metrics import evaluate

ANALYSES = ("kinematics", "dynamics")

#: the stages of a case, in order; a ModelError at "set-up" or "metric" is the study's own
STAGES = ("model", "set-up", "run", "metric")


@dataclass(frozen=True)
class Study:
    """Everything a worker needs to run any case (sent to each worker once)."""
    system: object                  # kinedyn.model.System
    cases: Cases
    metrics: tuple
    analysis: str
    options: dict
    t_end: float
    dt: float
    record_every: int = 1
    inputs: dict = field(default_factory=dict)
    parameters: dict = field(default_factory=dict)   # fixed overrides, under the case's
    actuators: tuple | None = None  # kinematics: the joints whose efforts replace the drivers'

    def analysis_class(self):
        if self.analysis == "kinematics":
            from ..kinematics import Kinematics
            return Kinematics
        from ..dynamics import Dynamics
        return Dynamics


@dataclass(frozen=True)
class Outcome:
    """One case's metrics (None when it failed), or its error and the stage it failed at."""
    index: int
    values: tuple | None
    error: str | None
    stage: str | None
    warnings: tuple[str, ...]
    seconds: float
    refused: bool = False       # the error is a ModelError (bad input, not failed numerics)

    @property
    def study_error(self) -> bool:
        """A failure of the study's settings rather than of this case's design: input refused
        at the analysis' set-up or by a metric."""
        return self.refused and self.stage in ("set-up", "metric")


def check_study(study: Study) -> None:
    """Settings checked in the client before any case runs: the analysis, its options'
    names and the run's times."""
    from ..errors import record_interval, run_steps
    if study.analysis not in ANALYSES:
        raise ModelError(f"analysis must be one of {', '.join(ANALYSES)}, got {study.analysis!r}")
    cls = study.analysis_class()
    try:
        inspect.signature(cls).bind(None, **study.options)
    except TypeError as err:
        allowed = [p for p in inspect.signature(cls).parameters if p != "model"]
        raise ModelError(f"{study.analysis} options: {err}; allowed: "
                         f"{', '.join(allowed)}") from None
    steps = run_steps(0.0, study.t_end, study.dt)
    if study.analysis == "dynamics":
        record_interval(study.record_every, steps, 0.0, study.dt)
    elif study.record_every != 1:
        raise ModelError("record_every applies to dynamics; a kinematic run records every step")
    if study.actuators is not None and study.analysis != "kinematics":
        raise ModelError("actuators apply to a kinematics study (inverse dynamics: the efforts "
                         "of the actuated joints that produce the driven motion); a dynamics "
                         "run reports its drivers' efforts")


def run_case(study: Study, i: int) -> Outcome:
    """Run case ``i`` of ``study`` (in this process). Only numbers leave it: code generated
    for this case alone (its functions of time, when a varied parameter enters them) is freed
    after it, once later cases have made enough of their own
    (:func:`kinedyn._llvm.transient_code`), so a callable metric must not keep the results."""
    parameters, inputs = study.cases.overrides(i)
    stage, start = STAGES[0], time.perf_counter()
    # the code generated for this case's parameters serves it only: freed after it
    with transient_code(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AccuracyWarning)
        try:
            model = study.system.compile({**study.parameters, **parameters})
            model.set_inputs({**study.inputs, **inputs})
            stage = "set-up"
            analysis = study.analysis_class()(model, **study.options)
            stage = "run"
            extra = {"record_every": study.record_every} if study.analysis == "dynamics" else {}
            results = analysis.simulate(study.t_end, study.dt, **extra)
            stage = "metric"
            values = evaluate(study.metrics, results, study.actuators)
            error, stage = None, None
        except KinedynError as err:
            values, error = None, err
    notes = tuple(str(w.message) for w in caught if issubclass(w.category, AccuracyWarning))
    return Outcome(i, values, error and f"{type(error).__name__}: {error}", stage, notes,
                   time.perf_counter() - start, isinstance(error, ModelError))


def run_batch(study: Study, indices) -> list[Outcome]:
    """Run the cases ``indices`` one after the other (a Dask task)."""
    return [run_case(study, i) for i in indices]


def batches(n: int, workers: int, per_worker: int = 16) -> list[range]:
    """``n`` cases cut into about ``per_worker`` tasks per worker (at least one case each)."""
    size = max(1, math.ceil(n / (workers * per_worker)))
    return [range(k, min(n, k + size)) for k in range(0, n, size)]


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
