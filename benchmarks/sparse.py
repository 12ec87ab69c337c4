"""Sparse-relative paper, Table 2, on the vehicle: ``python benchmarks/sparse.py [--quick]``.

Same as ``kinedyn bench sparse``; writes results/bench/sparse.{json,md} and the lane-change
plots."""
from __future__ import annotations

import sys
from pathlib import Path

from kinedyn.bench.sparse import run

if __name__ == "__main__":
    out = Path("results/bench")
    out.mkdir(parents=True, exist_ok=True)
    report = run(quick="--quick" in sys.argv, out_dir=out)
    js, md = report.write(out)
    print(report.to_markdown())
    print(f"written: {js}, {md}")
