"""Dynamics benchmark: µs per forward-dynamics step and real-time factor per method and
integrator (double pendulum, four-bar, Gough-Stewart; dt = 1e-3; residuals and energy drift).

    python benchmarks/dynamics.py [--quick] [--out DIR]

The same harness as ``kinedyn bench dynamics`` (:mod:`kinedyn.bench.dynamics`): machine
description, medians of repeated runs, ratios measured in the same run; writes
``dynamics.json`` and ``dynamics.md`` to DIR (default results/bench).
"""
from __future__ import annotations

import sys

from kinedyn.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "dynamics", *sys.argv[1:]]))
