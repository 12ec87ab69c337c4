"""Group Equations benchmark (paper s. 5, Tables 2-5): global vs groups, dense vs sparse, threads,
on the paper's Stewart platform and the scissor-platform family.

    python benchmarks/groups.py [--quick] [--out DIR]

The same as ``kinedyn bench groups`` (:mod:`kinedyn.bench.groups`): machine description, medians
of repeated runs, ratios measured side by side; writes ``groups.json`` and ``groups.md``.
"""
import sys

from kinedyn.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "groups", *sys.argv[1:]]))
