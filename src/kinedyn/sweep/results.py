"""A design study's results: one row per case (its values, metrics, error), saved as CSV and a
JSON summary (statistics of each metric, its rank correlation with each varied value, the
best cases, the time the study took)."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from ..errors import ModelError, UnknownNameError


class SweepResults:
    """The cases of a study and what they gave.

    ``values`` (n_cases, n_names): the parameters and inputs of each case (``names``);
    ``metrics`` (n_cases, n_metrics): NaN where the case failed; ``errors[i]``: None or
    ``"AssemblyError: ..."``; ``warnings[i]``: accuracy warnings of the run; ``seconds[i]``:
    its wall time on its worker.
    """

    def __init__(self, study, outcomes, wall: float, where: str):
        cases = study.cases
        self.model = study.system.name
        self.names, self.kinds, self.values = cases.names, cases.kinds, cases.values
        self.metric_names = tuple(m.name for m in study.metrics)
        self.metrics = np.full((len(cases), len(study.metrics)), np.nan)
        self.errors = [None] * len(cases)
        self.warnings = [()] * len(cases)
        self.seconds = np.full(len(cases), np.nan)
        for o in outcomes:
            if o.values is not None:
                self.metrics[o.index] = o.values
            self.errors[o.index], self.warnings[o.index] = o.error, o.warnings
            self.seconds[o.index] = o.seconds
        self.summary = self._summary(study, wall, where)

    @property
    def ok(self) -> np.ndarray:
        """True for the cases that ran and gave every metric."""
        return np.array([e is None for e in self.errors], dtype=bool)

    def value(self, name: str) -> np.ndarray:
        """A varied parameter or input over the cases."""
        return self.values[:, self._index(self.names, name, "varied parameter or input")]

    def metric(self, name: str) -> np.ndarray:
        """A metric over the cases (NaN where the case failed)."""
        return self.metrics[:, self._index(self.metric_names, name, "metric")]

    def best(self, metric: str, maximize: bool = False) -> dict:
        """The case with the smallest (or largest) ``metric``: its values and metrics."""
        x = self.metric(metric)
        if not np.any(self.ok):
            raise ModelError(f"no case of the study of {self.model!r} ran: no best {metric}")
        i = int(np.nanargmax(x) if maximize else np.nanargmin(x))
        return self.row(i)

    def row(self, i: int) -> dict:
        """Case ``i`` as a mapping: its values, metrics, error and time."""
        out = {"case": i, **dict(zip(self.names, map(float, self.values[i]))),
               **dict(zip(self.metric_names, map(float, self.metrics[i])))}
        out.update(error=self.errors[i] or "", warnings="; ".join(self.warnings[i]),
                   seconds=float(self.seconds[i]))
        return out

    @classmethod
    def load(cls, path) -> "SweepResults":
        """A study written by :meth:`save`, read back: ``path`` is its folder or its
        ``sweep.csv`` / ``sweep.json``. Every problem is a ModelError naming the file and the
        entry: a missing file, a summary without the study's names, a column missing or a
        value that is not a number."""
        path = Path(path)
        folder = path if path.is_dir() else path.parent
        table, summary_path = folder / "sweep.csv", folder / "sweep.json"
        for f in (table, summary_path):
            if not f.is_file():
                raise ModelError(f"{f}: no such file (a study's folder holds the sweep.csv and "
                                 f"sweep.json that SweepResults.save and `kinedyn sweep` write)")
        try:
            summary = json.loads(summary_path.read_text())
            varied, metric_names = dict(summary["varied"]), tuple(summary["metrics"])
            model = str(summary["model"])
        except json.JSONDecodeError as err:
            raise ModelError(f"{summary_path}: not valid JSON ({err.msg}, line {err.lineno})") \
                from None
        except (KeyError, TypeError, ValueError) as err:
            raise ModelError(f"{summary_path}: not a study's summary (no valid {err} entry)") \
                from None
        with table.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        columns = ["case", *varied, *metric_names, "error", "warnings", "seconds"]
        res = cls.__new__(cls)
        res.model, res.names, res.kinds = model, tuple(varied), tuple(varied.values())
        res.metric_names, res.summary = metric_names, summary
        res.values = np.full((len(rows), len(varied)), np.nan)
        res.metrics = np.full((len(rows), len(metric_names)), np.nan)
        res.seconds = np.full(len(rows), np.nan)
        res.errors, res.warnings = [None] * len(rows), [()] * len(rows)
        for i, row in enumerate(rows):
            where = f"{table}: line {i + 2}"
            missing = [c for c in columns if row.get(c) is None]
            if missing:
                raise ModelError(f"{where} has no column {missing[0]!r} (the study's columns: "
                                 f"{', '.join(columns)})")
            try:
                res.values[i] = [float(row[n]) for n in varied]
                res.metrics[i] = [float(row[n]) for n in metric_names]
                res.seconds[i] = float(row["seconds"])
            except ValueError as err:
                raise ModelError(f"{where}: {err}") from None
            res.errors[i] = row["error"] or None
            res.warnings[i] = tuple(row["warnings"].split("; ")) if row["warnings"] else ()
        return res

    def save(self, folder) -> list[Path]:
        """Write ``sweep.csv`` (a row per case) and ``sweep.json`` (the summary)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        table, summary = folder / "sweep.csv", folder / "sweep.json"
        rows = [self.row(i) for i in range(len(self.values))]
        with open(table, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        summary.write_text(json.dumps(self.summary, indent=2, default=_plain) + "\n")
        return [table, summary]

    # ---- summary -------------------------------------------------------------------------
    def _summary(self, study, wall: float, where: str) -> dict:
        ok = self.ok
        seconds = self.seconds[np.isfinite(self.seconds)]
        failures = {}
        for e in self.errors:
            if e:
                kind = e.split(":", 1)[0]
                failures[kind] = failures.get(kind, 0) + 1
        return {
            "model": self.model, "analysis": study.analysis, "options": study.options,
            "t_end": study.t_end, "dt": study.dt, "inputs": study.inputs,
            **({} if study.actuators is None else {"actuators": list(study.actuators)}),
            "design": study.cases.design,
            "varied": dict(zip(self.names, self.kinds)),
            "metrics": {m.name: m.text for m in study.metrics},
            "cases": len(ok), "succeeded": int(ok.sum()), "failed": failures,
            "warned": int(sum(bool(w) for w in self.warnings)),
            "statistics": {m: self._statistics(k) for k, m in enumerate(self.metric_names)},
            "rank_correlation": self._correlations(),
            "where": where, "wall_time_s": wall,
            "case_seconds": {"total": float(seconds.sum()),
                             "median": float(np.median(seconds)) if len(seconds) else None},
            "cases_per_second": len(ok) / wall if wall > 0 else None,
            # the cases' time over the wall time: how many processes were busy on average
            "busy_processes": float(seconds.sum()) / wall if wall > 0 else None,
        }

    def _statistics(self, k: int) -> dict:
        x = self.metrics[self.ok, k]
        if not len(x):
            return {}
        p5, p50, p95 = np.percentile(x, [5, 50, 95])
        best_min, best_max = int(np.flatnonzero(self.ok)[np.argmin(x)]), \
            int(np.flatnonzero(self.ok)[np.argmax(x)])
        return {"min": float(x.min()), "max": float(x.max()), "mean": float(x.mean()),
                "std": float(x.std()), "p5": float(p5), "median": float(p50), "p95": float(p95),
                "case_of_min": best_min, "case_of_max": best_max}

    def _correlations(self) -> dict:
        """Spearman's rank correlation of each metric with each varied value over the cases
        that ran: which design values the metric follows (None where either is constant)."""
        from scipy.stats import spearmanr
        out = {}
        for k, m in enumerate(self.metric_names):
            y = self.metrics[self.ok, k]
            row = {}
            for j, name in enumerate(self.names):
                x = self.values[self.ok, j]
                constant = len(y) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0
                row[name] = None if constant else float(spearmanr(x, y).statistic)
            out[m] = row
        return out

    @staticmethod
    def _index(names, name, kind) -> int:
        try:
            return names.index(name)
        except ValueError:
            raise UnknownNameError(kind, name, names) from None

    def __repr__(self) -> str:
        return (f"SweepResults({self.model!r}, cases={len(self.values)}, "
                f"failed={int((~self.ok).sum())}, metrics={list(self.metric_names)})")


def _plain(x):
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return str(x)
