"""Design-study benchmark: cases per second of a Monte Carlo and a grid study, serially, on a
local Dask cluster and with the default scheduler, side by side in the same rounds.

    python benchmarks/sweep.py [--quick] [--out DIR]

The same harness as ``kinedyn bench sweep`` (:mod:`kinedyn.bench.sweep`): machine description,
medians of repeated runs, ratios measured in the same run; writes ``sweep.json`` and
``sweep.md`` to DIR (default results/bench).
"""
from __future__ import annotations

import sys

from kinedyn.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "sweep", *sys.argv[1:]]))
