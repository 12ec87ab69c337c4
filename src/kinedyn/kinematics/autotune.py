"""Auto-tuning of the kinematic strategy: ``Kinematics(model, strategy="auto")``.

The Group Equations paper ends (s. 6, future work) with "auto-tuning techniques should be
included in the routines so that they select automatically the best parallel strategy and
library together with the values of some parameters (numbers of threads ...)": its own tables
show that the winner depends on the model (dense LAPACK for small groups, sparse from 60-120
coordinates per group, groups over global, OpenMP x MKL threads by size). Here the candidates -
strategy (global or groups), solver (dense or sparse) and thread combination (outer groups in
parallel x inner BLAS threads, at most the CPU count together) - are timed on the model itself:
each runs the same short trial (``TRIAL_STEPS`` steps of ``TRIAL_DT`` from t0, with the
caller's tolerance and iteration mode), interleaved round by round so that a change of machine
load hits every candidate alike; medians are compared. Candidates more than ``PRUNE`` times
slower than the best after two rounds (the better of their two times: one run can be hit by a
load spike) are not run again.

The choice and the table are cached on disk (``autotune/<key>.json`` under
:func:`kinedyn._cache.cache_root`: ``$KINEDYN_CACHE``, else ``$XDG_CACHE_HOME/kinedyn``), keyed
by a hash of the compiled model's arrays, the kinedyn version, the CPU count and the settings
that change the timing (tolerance, iteration mode, any solver or threads fixed by the caller);
``retune=True`` measures again.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._cache import cache_root
from ..errors import KinedynError, ModelError

TRIAL_STEPS = 30
TRIAL_DT = 0.01
ROUNDS = 5
PRUNE = 4.0  # candidates this many times slower than the best after two rounds are dropped
# 2 (2026-11-27): generated constraint code changed the strategies' relative speed, so the
# choices measured before are dropped; 3 (2026-11-27): so did the generated coupling products
# (the groups' Stewart paper step from 0.94 to 1.01 of global's on one thread); 4 (2026-11-28):
# so did converged steps by units (the groups' converged Stewart step 0.87 -> 0.90-0.93 of global's)
CACHE_FORMAT = 4


@dataclass(frozen=True, order=True)
class Candidate:
    strategy: str          # "global" or "groups"
    solver: str            # "dense" or "sparse"
    threads: tuple         # (outer, inner)

    @property
    def label(self) -> str:
        return f"{self.strategy}-{self.solver} {self.threads[0]}x{self.threads[1]}"


@dataclass
class Tuning:
    """What ``strategy="auto"`` measured and chose.

    ``rows``: one dict per candidate - strategy, solver, outer, inner, ``us_per_step`` (median
    over the rounds it ran, None if it failed), ``rounds``, ``error`` (why it failed) - sorted
    fastest first. ``cached``: loaded from ``path`` instead of measured now.
    """
    choice: Candidate
    rows: list
    key: str
    path: Path | None
    cached: bool
    trial: dict = field(default_factory=dict)

    def table(self) -> str:
        """The measured table (markdown), the choice marked."""
        lines = ["| strategy | solver | threads (outer x inner) | µs per step | vs chosen | rounds |",
                 "|---|---|---|---|---|---|"]
        best = next(r["us_per_step"] for r in self.rows if _candidate(r) == self.choice)
        for r in self.rows:
            mark = " **chosen**" if _candidate(r) == self.choice else ""
            us = r["us_per_step"]
            cells = ([f"{us:.2f}", f"{us / best:.2f}x"] if us is not None
                     else [f"failed: {r['error']}", "-"])
            lines.append(f"| {r['strategy']}{mark} | {r['solver']} | {r['outer']}x{r['inner']} | "
                         + " | ".join(cells) + f" | {r['rounds']} |")
        return "\n".join(lines)

    def __str__(self) -> str:
        how = f"cached in {self.path}" if self.cached else "measured now"
        t = self.trial
        return (f"auto-tuning ({how}; trial {t.get('steps')} steps of {t.get('dt')} s, median "
                f"of up to {t.get('rounds')} interleaved rounds, {t.get('cores')} CPUs): chose "
                f"{self.choice.label}\n{self.table()}")


def _candidate(row) -> Candidate:
    return Candidate(row["strategy"], row["solver"], (int(row["outer"]), int(row["inner"])))


def candidates(widest_level: int, cores: int, solver: str | None = None,
               threads=None) -> list[Candidate]:
    """Every (strategy, solver, threads) worth timing.

    Outer threads (groups of one DAG level at the same time) only for ``groups`` and at most the
    widest level; inner (BLAS) threads only change the dense LAPACK factorisations; together at
    most ``cores``. ``solver`` / ``threads`` given by the caller restrict the set.
    """
    out = []
    for strategy in ("global", "groups"):
        for sol in ("dense", "sparse"):
            if solver is not None and sol != solver:
                continue
            outers = range(1, (min(cores, widest_level) if strategy == "groups" else 1) + 1)
            inners = range(1, (cores if sol == "dense" else 1) + 1)
            for o in outers:
                for i in inners:
                    if o * i <= cores:
                        out.append(Candidate(strategy, sol, (o, i)))
    if threads is not None:
        out = [c for c in out if c.threads[0] == threads[0]
               and (threads[1] is None or c.threads[1] == threads[1])]
    if not out:
        raise ModelError(f"no kinematic strategy can use threads={threads!r} with "
                         f"solver={solver!r} on {cores} CPUs")
    return out


def model_key(model, settings: dict) -> str:
    """Hash of the compiled model's arrays, the kinedyn version, the CPU count and ``settings``."""
    from .. import __version__
    h = hashlib.sha256()
    for name, value in sorted(model.arrays().items()):
        h.update(name.encode())
        if isinstance(value, np.ndarray):
            h.update(f"{value.dtype}{value.shape}".encode())
            h.update(np.ascontiguousarray(value).tobytes())
        else:
            h.update(repr(value).encode())
    h.update(f"kinedyn {__version__}; cpus {os.cpu_count()}; {sorted(settings.items())}".encode())
    return h.hexdigest()[:24]


def cache_dir() -> Path:
    return cache_root() / "autotune"


def _load(path: Path, key: str, allowed: list[Candidate]) -> Tuning | None:
    try:
        data = json.loads(path.read_text())
        if data.get("format") != CACHE_FORMAT or data.get("key") != key:
            return None
        choice = _candidate(data["choice"])
        if choice not in allowed:
            return None
        return Tuning(choice, data["rows"], key, path, True, data.get("trial", {}))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable or foreign file: measure again


def _save(t: Tuning, model_name: str) -> None:
    data = {"format": CACHE_FORMAT, "key": t.key, "model": model_name,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "choice": {"strategy": t.choice.strategy, "solver": t.choice.solver,
                       "outer": t.choice.threads[0], "inner": t.choice.threads[1]},
            "rows": t.rows, "trial": t.trial}
    try:
        t.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = t.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(t.path)  # atomic: a concurrent reader sees the old or the new file
    except OSError as err:
        warnings.warn(f"auto-tuning: could not cache the choice in {t.path}: {err}",
                      stacklevel=3)
        t.path = None


def tune(model, *, widest_level: int, tol: float, max_iter: int, fixed: bool, t0: float = 0.0,
         q_guess=None, solver: str | None = None, threads=None, retune: bool = False,
         steps: int = TRIAL_STEPS, dt: float = TRIAL_DT, rounds: int = ROUNDS) -> Tuning:
    """Time the candidates on ``model`` (a CompiledModel) and choose the fastest (cached).

    ``widest_level``: the number of groups on the widest level of the model's structural-group
    DAG (the caller, :class:`~.analysis.Kinematics`, knows it once its rows are chosen), the
    most outer threads worth trying. On a cache hit nothing else is built or run."""
    from .analysis import Kinematics
    cores = os.cpu_count() or 1
    settings = {"tol": float(tol), "max_iter": int(max_iter), "fixed": bool(fixed),
                "solver": solver, "threads": None if threads is None else list(threads)}
    key = model_key(model, settings)
    path = cache_dir() / f"{key}.json"
    allowed = candidates(widest_level, cores, solver, threads)
    if not retune:
        cached = _load(path, key, allowed)
        if cached is not None:
            return cached
    trial = {"steps": int(steps), "dt": float(dt), "rounds": int(rounds), "cores": cores}
    rows = _measure(Kinematics, model, allowed, tol, max_iter, fixed, t0, q_guess, trial)
    ok = [r for r in rows if r["us_per_step"] is not None]
    if not ok:
        raise ModelError(f"auto-tuning: every candidate failed the trial of {steps} steps of "
                         f"{dt:g} s from t0 = {t0:g}: {rows[0]['error']}")
    tuning = Tuning(_candidate(ok[0]), rows, key, path, False, trial)
    _save(tuning, model.name)
    return tuning


def _build(Kinematics, model, c: Candidate, tol, max_iter, fixed, t0, q_guess):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # redundant-row notes: the chosen one repeats them
        return Kinematics(model, strategy=c.strategy, solver=c.solver, threads=c.threads,
                          tol=tol, max_iter=max_iter, fixed_iterations=fixed, t0=t0,
                          q_guess=q_guess)


def _measure(Kinematics, model, allowed, tol, max_iter, fixed, t0, q_guess, trial) -> list[dict]:
    """Interleaved rounds of the trial for every candidate; one row per candidate."""
    t_end = t0 + trial["steps"] * trial["dt"]
    runs, times, errors = {}, {c: [] for c in allowed}, {}
    for c in allowed:
        try:
            runs[c] = _build(Kinematics, model, c, tol, max_iter, fixed, t0, q_guess)
            runs[c].simulate(t0 + 2 * trial["dt"], trial["dt"], t0=t0)  # warm caches
        except KinedynError as err:
            errors[c] = f"{type(err).__name__}: {err}".splitlines()[0]
    try:
        for r in range(trial["rounds"]):
            for c in list(runs):
                try:
                    times[c].append(runs[c].simulate(t_end, trial["dt"], t0=t0)
                                    .summary["us_per_step"])
                except KinedynError as err:
                    errors[c] = f"{type(err).__name__}: {err}".splitlines()[0]
                    times[c] = []
                    _close(runs.pop(c))
            if r == 1 and runs:
                best = min(min(times[c]) for c in runs)
                for c in [c for c in runs if min(times[c]) > PRUNE * best]:
                    _close(runs.pop(c))
    finally:
        for kin in runs.values():
            _close(kin)
    rows = [{"strategy": c.strategy, "solver": c.solver, "outer": c.threads[0],
             "inner": c.threads[1],
             "us_per_step": float(np.median(times[c])) if times[c] else None,
             "rounds": len(times[c]), "error": errors.get(c)} for c in allowed]
    rows.sort(key=lambda r: (r["us_per_step"] is None, r["us_per_step"] or 0.0))
    return rows


def _close(kin) -> None:
    if kin.engine is not None:
        kin.engine.close()


__all__ = ["Candidate", "Tuning", "candidates", "model_key", "cache_dir", "tune"]
