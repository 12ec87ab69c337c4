"""Kinematics benchmark: µs per kinematic step (four-bar, both Stewart platforms; dense vs sparse;
NumPy reference side by side) and µs per Gough-Stewart forward-kinematics solve.

    python benchmarks/kinematics.py [--quick] [--out DIR]

Same harness as ``kinedyn bench kinematics`` (:mod:`kinedyn.bench.kinematics`): machine
description, medians of repeated runs, ratios measured in the same run; writes
``kinematics.json`` and ``kinematics.md`` to DIR (default results/bench). ``--quick`` takes
well under a minute once the kernels are compiled.
"""
from __future__ import annotations

import sys

from kinedyn.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "kinematics", *sys.argv[1:]]))
