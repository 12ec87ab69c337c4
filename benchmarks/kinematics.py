"""Kinematics benchmark: µs per kinematic step (four-bar, both Stewart platforms; dense vs sparse;
NumPy reference side by side) and µs per Gough-Stewart forward-kinematics solve.

    python benchmarks/kinematics.py [--quick] [--out DIR]

Same harness as ``kinedyn bench kinematics`` (:mod:`kinedyn.bench.kinematics`): machine
description, medians of repeated runs, ratios measured in the same run; writes
``kinematics.json`` and ``kinematics.md`` to DIR (default results/bench). ``--quick`` takes
well under a minute once the kernels are compiled.
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
    from kinedyn.bench.kinematics import run
    start = time.perf_counter()
    report = run(quick=args.quick, out_dir=Path(args.out))
    report.settings["benchmark wall time"] = f"{time.perf_counter() - start:.1f} s"
    js, md = report.write(Path(args.out))
    print(report.to_markdown())
    print(f"written: {js}, {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
