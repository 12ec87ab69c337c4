"""Design studies: parameter sweeps and Monte Carlo runs of one model, on Dask workers.

``kinedyn.sweep.sweep(system, vary=..., sample=..., metrics=...)`` compiles the model once per
case with the case's parameters (and sets its inputs), runs the kinematic or dynamic analysis,
and reduces each run to a few numbers (``range(joint.slide.displacement)``); the cases run on a
local Dask cluster of one process per core (or a scheduler's cluster, or in this process). It
returns :class:`SweepResults`: a row per case, failures recorded with their error, statistics
and rank correlations in ``summary``; :func:`load_sweep` reads a saved study back. ``kinedyn
sweep`` is its command, ``kinedyn plot`` draws a saved study again; docs/design-studies.md.
"""
from .cases import DISTRIBUTIONS, Cases, make_cases
from .metrics import REDUCTIONS, Metric, parse_metrics
from .results import SweepResults
from .study import sweep

#: a study saved by :meth:`SweepResults.save` (or ``kinedyn sweep``), read back
load_sweep = SweepResults.load

__all__ = ["sweep", "load_sweep", "SweepResults", "Cases", "make_cases", "Metric", "parse_metrics",
           "DISTRIBUTIONS", "REDUCTIONS"]
