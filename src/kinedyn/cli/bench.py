"""``kinedyn bench NAME|all [--quick] [--out DIR]``: run benchmarks, write JSON + markdown."""
from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
import time
from pathlib import Path

from ..bench import common as bench_common
from ..errors import UnknownNameError
from .common import output_dir


ALIASES = {"group-equations": "groups"}  # the names of benchmarks


def available() -> list[str]:
    """The benchmarks: the modules of :mod:`kinedyn.bench` that define a ``run`` (its helpers,
    ``common`` and ``host``, do not: listing them made ``kinedyn bench all`` fail). Read from
    the sources, not imported: the list is built for every ``kinedyn`` command (the help
    text), and importing the benchmarks cost 0.7 s of its 1.6 s start."""
    from .. import bench
    return sorted(m.name for m in pkgutil.iter_modules(bench.__path__)
                  if not (m.name.startswith("_") or m.ispkg)
                  and _defines_run(m.module_finder.path, m.name))


def _defines_run(folder: str, name: str) -> bool:
    tree = ast.parse((Path(folder) / f"{name}.py").read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body)


def register(sub) -> None:
    aliases = ", ".join(f"{a} = {b}" for a, b in ALIASES.items())
    p = sub.add_parser("bench", help="run benchmarks (timings as medians, ratios side by side)",
                       description="Run a benchmark and write <name>.json and <name>.md. "
                                   f"Benchmarks: {', '.join(available())}, or all "
                                   f"(aliases: {aliases}).")
    p.add_argument("name", metavar="NAME", help="benchmark name or 'all'")
    p.add_argument("--quick", action="store_true", help="short runs (under a minute each)")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/bench)")
    p.add_argument("--no-progress", action="store_true",
                   help="do not announce each finished row on stderr")
    p.set_defaults(func=run)


def run(args) -> int:
    names = available()
    chosen = names if args.name == "all" else [ALIASES.get(args.name, args.name)]
    for name in chosen:
        if name not in names:
            raise UnknownNameError("benchmark", name, names + list(ALIASES) + ["all"])
    out = output_dir(args.out, "results/bench")
    bench_common.progress = None if args.no_progress else sys.stderr
    try:
        _run_each(chosen, args.quick, out)
    finally:
        bench_common.progress = None
    return 0


def _run_each(chosen: list[str], quick: bool, out) -> None:
    for name in chosen:
        module = importlib.import_module(f"kinedyn.bench.{name}")
        start = time.perf_counter()
        report = module.run(quick=quick, out_dir=out)
        report.settings["benchmark wall time"] = f"{time.perf_counter() - start:.1f} s"
        js, md = report.write(out)
        print(report.to_markdown())
        print(f"written: {js}, {md}")
