"""HDCA study: O(N) scaling, serial vs parallel, float32 vs float64, dense O(N^3) baseline, and the
HDCA paper's figures for its two test cases.

    python benchmarks/hdca.py [--quick] [--out results/hdca]

Writes hdca.json / hdca.md and hdca_scaling.png (the ``kinedyn bench hdca`` harness), then
runs ``kinedyn hdca`` on the double pendulum and the paper's four-bar (RK4, dt = 1e-4 s, 2 s,
float64 with float32 overlaid, natural-coordinate reference) for Figs. 6-7 and 10-13.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from kinedyn.bench import hdca
from kinedyn.cli import main as kinedyn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N up to 1024, shorter runs")
    ap.add_argument("--out", default="results/hdca", help="output folder")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = hdca.run(quick=args.quick, out_dir=out)
    js, md = report.write(out)
    print(report.to_markdown())
    print(f"written: {js}, {md}")
    t_end = "0.5" if args.quick else "2"
    for model in ("double-pendulum", "four-bar-hdca"):
        kinedyn(["hdca", model, "--t-end", t_end, "--dt", "1e-4", "--precision", "both",
                 "--out", str(out / model)])


if __name__ == "__main__":
    main()
