"""Design studies: parameter sweeps and Monte Carlo runs of one model, on Dask workers.

``kinedyn.sweep.sweep(system, vary=..., sample=..., metrics=...)`` compiles the model once per
case with the case's parameters (and sets its inputs), runs the kinematic or dynamic analysis,
and reduces each run to a few numbers (``range(joint.slide.displacement)``); the cases run on a
local Dask cluster of one process per core (or a scheduler's cluster, or in this process). It
returns :class:`SweepResults`: a row per case, failures recorded with their error, statistics
and rank correlations in ``summary``. ``kinedyn sweep`` is its command; docs/design-studies.md.
"""
from .cases import DISTRIBUTIONS, Cases, make_cases
from .metrics import REDUCTIONS, Metric, parse_metrics
from .results import SweepResults
from .study import sweep

__all__ = ["sweep", "SweepResults", "Cases", "make_cases", "Metric", "parse_metrics",
           "DISTRIBUTIONS", "REDUCTIONS"]
