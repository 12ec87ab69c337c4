"""``kinedyn plot RESULTS``: pictures from saved results, without running again.

Reads the results a run saved (``results.npz`` or ``results.csv`` in a folder, and its
``summary.json``: :func:`kinedyn.load_results`) and draws the mechanism's motion
(``motion.png``; ``--animate``: ``motion.gif``; :mod:`kinedyn.viz.motion`) and the
``--plot`` channels (``channels.png``), by default into the results' own folder. A design
study's folder (``sweep.csv`` and ``sweep.json``: :func:`kinedyn.sweep.load_sweep`) gets its
report printed again and ``sweep.png`` drawn again, of the ``--plot`` metrics.
"""
from __future__ import annotations

from pathlib import Path

from .common import check_plot, load_system, output_dir


def register(sub) -> None:
    p = sub.add_parser(
        "plot", help="draw saved results again: the mechanism's motion, chosen channels, a "
                     "design study's metrics",
        description="Pictures from the results of an earlier run (a folder written by "
                    "`kinedyn kinematics` or `kinedyn simulate`, or its results.npz / "
                    "results.csv): the mechanism at a few instants over its points' paths "
                    "(motion.png), optionally animated (motion.gif), and the --plot channels "
                    "(channels.png). A design study's folder (written by `kinedyn sweep`, or "
                    "its sweep.csv / sweep.json): its report again and sweep.png, of the "
                    "--plot metrics. Nothing is simulated again.")
    p.add_argument("results", metavar="RESULTS",
                   help="results folder, or its results.npz / results.csv; or a design "
                        "study's folder, or its sweep.csv / sweep.json")
    p.add_argument("--plot", action="append", default=[], metavar="CHANNEL",
                   help="channel name or glob pattern to plot (repeatable); of a study, its "
                        "metrics (default all)")
    p.add_argument("--frames", type=int, default=6, metavar="N",
                   help="instants drawn in motion.png (default 6)")
    p.add_argument("--animate", action="store_true", help="also write motion.gif")
    p.add_argument("--max-frames", type=int, default=150, metavar="N",
                   help="frame limit of motion.gif (default 150)")
    p.add_argument("--model", metavar="MODEL",
                   help="the model the results are of (built-in name or model file), so that "
                        "bodies with a single point are drawn to their centre of mass "
                        "(default: the summary's model when it is a built-in one, with the "
                        "summary's parameters)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: the results' folder)")
    p.set_defaults(func=run)


#: the files of a saved design study (``kinedyn sweep``, ``SweepResults.save``)
STUDY_FILES = ("sweep.csv", "sweep.json")


def run(args) -> int:
    source = Path(args.results)
    if (source / STUDY_FILES[0]).is_file() or source.name in STUDY_FILES:
        return _study(args, source)
    from ..io.results import load_results
    from ..viz.motion import animate_motion, draw_motion
    from ..viz.plots import plot_channels
    res = load_results(args.results)
    out = output_dir(args.out, str(source if source.is_dir() else source.parent))
    check_plot(args.plot, res.channels)  # before anything is drawn
    name = res.summary.get("model", source.name)
    model = _model(args.model, res.summary)
    files = [draw_motion(res, out / "motion.png", frames=args.frames, model=model)]
    if args.animate:
        files.append(animate_motion(res, out / "motion.gif", max_frames=args.max_frames,
                                    model=model))
    if args.plot:
        files.append(plot_channels(res, args.plot, out / "channels.png", title=name))
    print(f"{name}: {len(res.time)} samples, {len(res.channels)} channels, "
          f"t = {res.time[0]:g} .. {res.time[-1]:g} s"
          + (f"; drawn with model {model.name!r}" if model is not None else ""))
    print("written: " + ", ".join(str(f) for f in files))
    return 0


def _study(args, source: Path) -> int:
    """A saved design study: its report printed again and ``sweep.png`` drawn again, of the
    ``--plot`` metrics (names or glob patterns; default all)."""
    import fnmatch

    from ..errors import ModelError, UnknownNameError
    from ..sweep import load_sweep
    from ..viz.sweep import plot_sweep
    from .sweep import print_report
    given = [o for o, v in (("--animate", args.animate), ("--model", args.model),
                            ("--frames", args.frames != 6), ("--max-frames",
                                                             args.max_frames != 150)) if v]
    if given:
        raise ModelError(f"{given[0]} draws a run's motion; {source} is a design study "
                         "(its pictures are the metrics against the varied values)")
    res = load_sweep(source)
    metrics = []
    for pattern in args.plot:
        hits = [m for m in res.metric_names if fnmatch.fnmatchcase(m, pattern)]
        if not hits:
            raise UnknownNameError("metric", pattern, res.metric_names, location="--plot")
        metrics += [h for h in hits if h not in metrics]
    out = output_dir(args.out, str(source if source.is_dir() else source.parent))
    print_report(res)
    files = [plot_sweep(res, out / "sweep.png", metrics=metrics or None)]
    print("written: " + ", ".join(str(f) for f in files))
    return 0


def _model(spec, summary):
    """The compiled model given by ``--model``, else the summary's built-in model with the
    summary's parameters, else None."""
    from .. import models
    if spec is None:
        spec = summary.get("model")
        if spec not in models.MODELS:
            return None
    return load_system(spec).compile(summary.get("parameters") or {})
