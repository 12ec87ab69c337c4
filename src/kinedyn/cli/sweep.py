"""``kinedyn sweep MODEL --vary NAME=A:B:N --metric NAME=REDUCTION(CHANNEL)``: a design study.

Runs the model once per case (a grid of parameter or input values with ``--vary``, random or
Latin-hypercube samples of distributions with ``--sample``, or both) on a local Dask cluster
of one worker process per core (``--workers``, or ``--scheduler`` an address or ``serial``), and
reduces each run to the ``--metric`` numbers. Cases that fail (a design that does not assemble,
a run that diverges) are recorded with their error. Writes ``sweep.csv`` (a row per case),
``sweep.json`` (statistics, rank correlations, best cases, timing) and ``sweep.png`` (each
metric against each varied value); prints the cases (or their statistics) and the best ones.
"""
from __future__ import annotations

import argparse

from ..errors import ModelError
from .common import (add_input_argument, add_model_argument, load_system, name_values,
                     output_dir, parameters, positive_float, warnings_printed)
from .simulate import INTEGRATORS, METHODS

_EPILOG = """\
examples:
  kinedyn sweep slider-crank-driven --vary crank_length=0.1:0.3:9 --t-end 1 --dt 0.005 \\
      --metric stroke="range(joint.slide.displacement)"
  kinedyn sweep four-bar --sample crank_length="normal(0.1, 0.002)" --samples 200 --lhs \\
      --t-end 1 --dt 1e-3 --metric "absmax(body.rocker.angle_d)"
  kinedyn sweep four-bar-driven --vary crank_length=0.08:0.12:5 --t-end 1 --dt 1e-3 \\
      --metric torque="absmax(effort.crank_drive)"

A metric is REDUCTION(CHANNEL), optionally named NAME=REDUCTION(CHANNEL); reductions: max, min,
absmax, range, mean, rms, std, initial, final; channels are a run's result names
(kinedyn simulate --plot shows them), and the joint loads reaction.<joint>.force_x ... and
effort.<joint> (Newton-Euler; in a kinematics study the efforts that produce the driven motion:
the drivers', or those of --actuators). Distributions: normal(mean, std), uniform(low, high),
triangular(low, mode, high)."""

#: cases printed one per line at most; above, the statistics
SHOWN = 20


def register(sub) -> None:
    p = sub.add_parser(
        "sweep", help="design study: run a model over a grid or samples of its parameters",
        description="Run a model once per case of a design study, on parallel worker "
                    "processes (Dask), and reduce each run to a few metrics. Writes sweep.csv, "
                    "sweep.json and sweep.png.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(p)
    add_input_argument(p)
    p.add_argument("--vary", action="append", default=[], metavar="NAME=A:B:N|V1,V2",
                   help="a grid axis: N values from A to B, or the values listed, of a "
                        "parameter or input (repeatable: their Cartesian product)")
    p.add_argument("--sample", action="append", default=[], metavar="NAME=DIST",
                   help="a parameter or input drawn from normal(mean, std), uniform(low, high) "
                        "or triangular(low, mode, high) (repeatable)")
    p.add_argument("--samples", type=int, metavar="N",
                   help="number of samples of --sample (default 100)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the samples (default 0)")
    p.add_argument("--lhs", action="store_true",
                   help="draw the samples by a Latin hypercube instead of independently")
    p.add_argument("--metric", action="append", default=[], metavar="[NAME=]REDUCTION(CHANNEL)",
                   help="what to measure of each run (repeatable, at least one)")
    p.add_argument("--analysis", choices=("kinematics", "dynamics"),
                   help="default: kinematics for a model with drivers, dynamics otherwise")
    p.add_argument("--t-end", type=positive_float, required=True, metavar="T",
                   help="end time of each run (s)")
    p.add_argument("--dt", type=positive_float, required=True, metavar="DT", help="time step (s)")
    p.add_argument("--method", choices=METHODS, help="dynamics method (default projection)")
    p.add_argument("--integrator", choices=INTEGRATORS, help="dynamics integrator (default rk4)")
    p.add_argument("--record-every", type=int, default=1, metavar="N",
                   help="dynamics: record every N-th step (default 1)")
    p.add_argument("--actuators", metavar="JOINTS",
                   help="kinematics: comma-separated actuated joints whose efforts "
                        "(effort.<joint>) the metrics read instead of the drivers' "
                        "(inverse dynamics), e.g. P1,P2,P3,P4,P5,P6")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of the local cluster (default: one per core)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a Dask scheduler's address (tcp://host:8786) to run on its cluster, "
                        "or 'serial' to run in this process")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/<model>-sweep)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..sweep import sweep
    from ..viz.sweep import plot_sweep
    system = load_system(args.model)
    analysis = args.analysis or ("kinematics" if system.drivers else "dynamics")
    options = {}
    for key in ("method", "integrator"):
        if getattr(args, key) is not None:
            if analysis != "dynamics":
                raise ModelError(f"--{key} applies to dynamics (this study runs {analysis})")
            options[key] = getattr(args, key)
    if args.samples is not None and not args.sample:
        raise ModelError("--samples counts draws of --sample distributions; none were given")
    out = output_dir(args.out, f"results/{system.name}-sweep")
    with warnings_printed():
        res = sweep(system, vary=_pairs(args.vary, "--vary"), sample=_pairs(args.sample,
                    "--sample"), samples=(args.samples or 100) if args.sample else None,
                    seed=args.seed, lhs=args.lhs, metrics=_metrics(args.metric),
                    analysis=analysis, t_end=args.t_end, dt=args.dt,
                    record_every=args.record_every, parameters=parameters(args),
                    inputs=name_values(args.input, "--input"), options=options,
                    actuators=args.actuators, workers=args.workers, scheduler=args.scheduler,
                    progress=not args.no_progress)
    files = res.save(out) + [plot_sweep(res, out / "sweep.png")]
    print_report(res)
    print("written: " + ", ".join(str(f) for f in files))
    return 0


def _pairs(items, option: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise ModelError(f"{option} expects NAME=SPEC, got {item!r}")
        if name.strip() in out:
            raise ModelError(f"{option} {name.strip()}: given twice")
        out[name.strip()] = spec.strip()
    return out


def _metrics(items) -> dict[str, str]:
    """``[NAME=]REDUCTION(CHANNEL)`` texts, named by NAME or by the text itself."""
    if not items:
        raise ModelError("--metric: give at least one, e.g. --metric 'max(body.crank.angle)'")
    out = {}
    for item in items:
        name, sep, spec = item.partition("=")
        name, spec = (name.strip(), spec) if sep and "(" not in name else (item.strip(), item)
        out[name] = spec
    return out


def print_report(res) -> None:
    s = res.summary
    failed = s["cases"] - s["succeeded"]
    print(f"{s['model']}: {s['cases']} cases of {s['analysis']} to t = {s['t_end']:g} s, "
          f"dt {s['dt']:g} s; {s['where']}: {s['wall_time_s']:.1f} s wall, "
          f"{s['cases_per_second']:.1f} cases/s, median case {s['case_seconds']['median']:.3g} s"
          f", {s['busy_processes']:.2f} processes busy on average")
    if failed:
        kinds = ", ".join(f"{n} {k}" for k, n in s["failed"].items())
        first = next(i for i, e in enumerate(res.errors) if e)
        print(f"  {failed} failed ({kinds}); first, case {first}: {res.errors[first]}")
    if s["warned"]:
        print(f"  {s['warned']} runs warned of their accuracy (sweep.csv, column 'warnings')")
    cols = list(res.names) + list(res.metric_names)
    if s["cases"] <= SHOWN:
        print("  " + "  ".join(f"{c:>14.14s}" for c in ["case", *cols]))
        for i in range(s["cases"]):
            row = res.row(i)
            cells = [f"{row[c]:14.6g}" for c in cols]
            print("  " + "  ".join([f"{i:>14d}", *cells])
                  + (f"  {row['error'][:60]}" if row["error"] else ""))
    for m, st in s["statistics"].items():
        if not st:
            continue
        print(f"  {m}: min {st['min']:.6g} (case {st['case_of_min']}), max {st['max']:.6g} "
              f"(case {st['case_of_max']}), mean {st['mean']:.6g}, std {st['std']:.3g}, "
              f"p5-p95 {st['p5']:.6g} .. {st['p95']:.6g}")
        ranks = {k: v for k, v in s["rank_correlation"][m].items() if v is not None}
        if ranks:
            print("    rank correlation: " + ", ".join(f"{k} {v:+.2f}" for k, v in ranks.items()))
