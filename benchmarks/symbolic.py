"""Symbolic benchmark: triangular vs Newton position solvers, ms per simulated second
(thesis Tables 4.4-4.10), symbolic preparation and generation time, operation counts.

    python benchmarks/symbolic.py [--quick] [--out DIR]

Same harness as ``kinedyn bench symbolic`` (:mod:`kinedyn.bench.symbolic`); writes
``symbolic.json`` and ``symbolic.md`` to DIR (default results/bench).
"""
from __future__ import annotations

import sys

from kinedyn.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "symbolic", *sys.argv[1:]]))
