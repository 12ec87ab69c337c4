"""Symbolic benchmark: triangular vs Newton position solvers, ms per simulated second
(thesis Tables 4.4-4.10), symbolic preparation and generation time, operation counts.

    python benchmarks/symbolic.py [--quick] [--out DIR]

Same harness as ``kinedyn bench symbolic`` (:mod:`kinedyn.bench.symbolic`); writes
``symbolic.json`` and ``symbolic.md`` to DIR (default results/bench).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs, fewer repeats")
    parser.add_argument("--out", default="results/bench", help="output folder")
    args = parser.parse_args(argv)
    from kinedyn.bench.symbolic import run
    start = time.perf_counter()
    report = run(quick=args.quick, out_dir=Path(args.out))
    report.settings["benchmark wall time"] = f"{time.perf_counter() - start:.1f} s"
    js, md = report.write(Path(args.out))
    print(report.to_markdown())
    print(f"written: {js}, {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
