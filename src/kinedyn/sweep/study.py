"""``sweep()``: a design study of one model, its cases run in this process or on Dask workers."""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager

import numpy as np

from ..errors import KinedynError, ModelError
from ..progress import reporting
from .cases import _mapping, make_cases
from .metrics import parse_metrics
from .results import SweepResults
from .runner import Study, batches, check_study, default_workers, run_batch, run_case


def sweep(system, *, metrics, vary=None, sample=None, samples: int | None = None,
          seed: int = 0, lhs: bool = False, analysis: str = "dynamics", t_end: float = 1.0,
          dt: float = 1e-3, record_every: int = 1, parameters=None, inputs=None, options=None,
          actuators=None, workers: int | None = None, scheduler=None,
          progress=None) -> SweepResults:
    """Run ``system`` once per case of a design study and reduce each run to ``metrics``.

    ``system``: a :class:`~kinedyn.model.System` (a built-in model from
    :func:`kinedyn.models.get`, a file from :func:`kinedyn.load`), compiled again per case
    with the case's parameters.

    Cases (:func:`~kinedyn.sweep.cases.make_cases`): ``vary`` maps parameter or input names to
    values (their Cartesian product: a grid), ``sample`` maps them to distributions
    (``"normal(mean, std)"``, ``"uniform(low, high)"``, ``"triangular(low, mode, high)"``) of
    which ``samples`` cases are drawn with ``seed`` (by a Latin hypercube with ``lhs``).

    ``metrics``: name -> ``"REDUCTION(CHANNEL)"`` (:data:`~kinedyn.sweep.metrics.REDUCTIONS`:
    ``max``, ``min``, ``absmax``, ``range``, ``mean``, ``rms``, ``std``, ``initial``,
    ``final``) or a callable ``f(results) -> float``.

    The run: ``analysis`` ``"kinematics"`` (a fully driven model) or ``"dynamics"``, from 0 to
    ``t_end`` with step ``dt``; ``options`` are the keywords of
    :class:`~kinedyn.kinematics.Kinematics` or :class:`~kinedyn.dynamics.Dynamics`
    (``method``, ``integrator``, ``solver`` ...); ``parameters`` and ``inputs`` set the
    model's parameters and inputs that are not varied.

    Loads: a metric may read the joint reactions and actuator efforts (``reaction.<joint>.*``,
    ``effort.<joint>``), computed by Newton-Euler only in a study with such a metric. In a
    kinematics study they are the loads that produce the driven motion (inverse dynamics):
    the drivers' own efforts, or with ``actuators`` (joint names, ``"P1, P2"`` or a list, see
    :func:`~kinedyn.dynamics.inverse.parse_actuators`) those of the actuated joints, the drivers
    then only prescribing the motion (a pose-driven platform's leg forces).

    Where: ``scheduler="local"`` starts a local Dask cluster of ``workers`` processes
    (default: one per core), ``"serial"`` runs in this process, an address
    (``"tcp://host:8786"``) or a ``distributed.Client`` uses that cluster. The default, None,
    runs the first cases here for a second and goes on here unless the rest would take more
    than twice the few seconds a local cluster takes to start (:data:`TRIAL_S`,
    :data:`STARTUP_S`); then on a local cluster. One worker runs in this process.
    A script that starts local workers must guard its top level with ``if __name__ ==
    "__main__":`` (each worker imports it).

    A case that fails (its design does not assemble, its run diverges) is recorded with its
    error and the study goes on; a failure of the study's own settings (a metric's unknown
    channel, a method the model cannot use) stops it at the first case. ``progress``: True
    for a progress bar, or a callable ``progress(done, total)``.
    """
    from ..dynamics.inverse import actuator_list, parse_actuators
    from ..model.system import System
    if not isinstance(system, System):
        raise TypeError(f"sweep() takes a kinedyn System (kinedyn.models.get, kinedyn.load), "
                        f"got {type(system).__name__}")
    cases = make_cases(system, vary, sample, samples, seed, lhs)
    parameters, inputs = _mapping(parameters, "parameters"), _mapping(inputs, "inputs")
    fixed = set(parameters) | set(inputs)
    if fixed & set(cases.names):
        raise ModelError(f"{', '.join(sorted(fixed & set(cases.names)))}: both varied and fixed "
                         "(parameters/inputs); give each name one role")
    if actuators is not None:
        actuators = tuple(actuator_list(actuators))
    study = Study(system, cases, parse_metrics(metrics), analysis, dict(options or {}),
                  t_end, dt, record_every, inputs, parameters, actuators)
    check_study(study)
    # the fixed parameters and inputs (and the actuators' names) checked here, not per case
    model = system.compile(study.parameters)
    model.set_inputs(study.inputs)
    if actuators is not None:
        parse_actuators(model, actuators)
    workers = _workers(workers, len(cases))
    _check_scheduler(scheduler)
    start = time.perf_counter()
    with reporting(progress, f"{system.name}: {len(cases)} cases") as update:
        outcomes, where = [], "serial (this process)"
        if scheduler in (None, "serial"):  # None: serially while it pays (see _pays)
            trial = None if scheduler or workers == 1 else _for(TRIAL_S)
            outcomes = _serial(study, update, trial)
        if len(outcomes) < len(cases) and (scheduler not in (None, "serial")
                                           or _pays(outcomes, len(cases) - len(outcomes))):
            with ExitStack() as stack, ThreadPoolExecutor(1) as pool:
                starting = pool.submit(_started, stack, study, scheduler, workers)
                if scheduler is None:  # this process goes on while the workers start
                    outcomes += _serial(study, update, starting.done, outcomes)
                client, shared, where = starting.result()
                done = len(outcomes)
                if done < len(cases):
                    outcomes += _distributed(study, client, shared, update, outcomes)
                    where += (f" (after {done} case{'s' * (done > 1)} in this process)"
                              if done else "")
                else:
                    where = "serial (this process; the cluster started too late)"
        elif len(outcomes) < len(cases):
            outcomes += _serial(study, update, None, outcomes)
    return SweepResults(study, outcomes, time.perf_counter() - start, where)


#: a study with the default scheduler runs its first cases in this process for this long (s),
#: then goes on there unless the rest would take longer than STARTUP_S * 2 (s) serially: a
#: local cluster takes about 3 s to start and to load the kernels into its workers here, and
#: two workers save at most half of the rest. If it pays, this process goes on with the cases
#: while the cluster starts and its workers load the kernels.
TRIAL_S, STARTUP_S = 1.0, 3.0


def _pays(outcomes, rest: int) -> bool:
    """Whether a local cluster would finish the ``rest`` of the cases sooner than this
    process, judged by the cases run so far (the first is left out: it loads the kernels)."""
    seconds = [o.seconds for o in outcomes[1:]] or [o.seconds for o in outcomes]
    return bool(seconds) and float(np.median(seconds)) * rest > 2 * STARTUP_S


def _check_scheduler(scheduler) -> None:
    if scheduler in (None, "serial", "local") or (isinstance(scheduler, str)
                                                 and "://" in scheduler):
        return
    from distributed import Client
    if isinstance(scheduler, Client):
        return
    raise ModelError(f"scheduler is None (by the cost of a case), 'local', 'serial', the "
                     f"address of a Dask scheduler such as 'tcp://host:8786' or a "
                     f"distributed.Client, got {scheduler!r}")


def _workers(workers, n_cases: int) -> int:
    if workers is None:
        return max(1, min(default_workers(), n_cases))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ModelError(f"workers must be a whole number >= 1, got {workers!r}")
    return min(workers, n_cases)


def _for(seconds: float):
    """A stop condition: true once ``seconds`` have passed from now."""
    end = time.perf_counter() + seconds
    return lambda: time.perf_counter() > end


def _serial(study: Study, update, stop=None, earlier=()) -> list:
    """Cases in this process from the first not in ``earlier``: all of them, or until
    ``stop()`` is true after one."""
    outcomes, n = list(earlier), len(study.cases)
    for i in range(len(outcomes), n):
        outcomes.append(_checked(run_case(study, i), outcomes))
        if update:
            update(i + 1, n)
        if stop is not None and stop():
            break
    return outcomes[len(earlier):]


def _started(stack: ExitStack, study: Study, scheduler, workers: int):
    """A Dask client (closed with ``stack``) with the study sent to its workers; on a local
    cluster started for the default scheduler, each worker has also run a case, so that it
    has loaded the compiled kernels (about 3 s here) while this process ran cases."""
    client, where = stack.enter_context(_client(None if scheduler == "local" else scheduler,
                                                workers))
    shared = client.scatter(study, broadcast=True)
    if scheduler is None:
        warm = [client.submit(run_batch, shared, [0], workers=[w], pure=False,
                              allow_other_workers=False) for w in client.nthreads()]
        client.gather(warm)
    return client, shared, where


def _distributed(study: Study, client, shared, update, earlier) -> list:
    """The cases after the ``earlier`` outcomes, on the client's workers."""
    from distributed import as_completed
    indices = range(len(earlier), len(study.cases))
    tasks = [client.submit(run_batch, shared, [indices[k] for k in b], pure=False)
             for b in batches(len(indices), len(client.nthreads()))]
    outcomes = list(earlier)
    try:
        for task in as_completed(tasks, loop=client.loop):
            for outcome in task.result():
                outcomes.append(_checked(outcome, outcomes))
            if update:
                update(len(outcomes), len(study.cases))
    finally:
        client.cancel(tasks)
    return sorted(outcomes[len(earlier):], key=lambda o: o.index)


def _checked(outcome, earlier):
    """``outcome``, unless it is a failure of the study's settings before any case worked:
    then the study stops with that error (every case would fail alike)."""
    if outcome.error and outcome.study_error and not any(o.values for o in earlier):
        raise ModelError(f"case {outcome.index} failed at its {outcome.stage}, and so would "
                         f"every case: {outcome.error}")
    return outcome


@contextmanager
def _client(scheduler, workers: int):
    """A Dask client: of a local cluster of ``workers`` processes (None), of the scheduler at
    an address, or the one given; yields it and a description."""
    from distributed import Client, LocalCluster
    if isinstance(scheduler, Client):
        yield scheduler, f"Dask client {scheduler.scheduler.address}"
        return
    if scheduler is None:
        try:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.CRITICAL)
        except RuntimeError as err:
            raise KinedynError(
                f"the local Dask workers did not start ({err}); a script that runs a study on "
                "local workers must guard its top level with `if __name__ == \"__main__\":` "
                "(each worker imports it), or pass scheduler='serial'") from None
        with cluster:
            yield from _closing(Client(cluster, set_as_default=False),
                                f"local Dask cluster, {workers} worker processes")
        return
    try:
        client = Client(scheduler, timeout=10, set_as_default=False)
    except (OSError, ValueError) as err:  # (timeouts are OSErrors)
        raise ModelError(f"cannot reach the Dask scheduler at {scheduler!r}: {err}") from None
    yield from _closing(client, f"Dask scheduler {scheduler}")


def _closing(client, where: str):
    """Yield ``(client, where)``, then close the client. Not ``with client``: that sets a
    context variable, which must be reset in the thread that set it, and the default scheduler
    starts its cluster in a thread of its own."""
    try:
        yield client, where
    finally:
        client.close()
