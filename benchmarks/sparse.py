"""Sparse-relative paper, Table 2, on the vehicle: total time of the 10 s double lane change per
solver and numbering, linear solve alone, real-time factor, lane-change plots.

    python benchmarks/sparse.py [--quick] [--out DIR]

Same as ``kinedyn bench sparse`` (:mod:`kinedyn.bench.sparse`); writes sparse.json and sparse.md
to DIR (default results/bench).
"""
from __future__ import annotations

import sys

from kinedyn.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "sparse", *sys.argv[1:]]))
