"""``kinedyn kinematics MODEL --t-end T --dt DT``: kinematic simulation of a fully driven model.

Positions by Newton-Raphson (tracking mode), velocities and accelerations each step (Group
Equations paper eqs. 1-3, global formulation in natural coordinates). Writes ``results.csv``,
``results.npz`` and ``summary.json`` to the output folder, plus ``channels.png`` for the
``--plot`` channels, ``residuals.png`` (constraint residuals at position, velocity and
acceleration level), with ``--reactions`` or ``--actuators`` the joint loads that produce the
motion (inverse dynamics) as channels and ``efforts.png``, and ``motion.png`` (the mechanism
at six instants over its points' paths; ``--animate``: also ``motion.gif``,
:mod:`kinedyn.viz.motion`).
"""
from __future__ import annotations

from ..errors import ModelError, run_steps
from ..progress import progress_bar
from .common import (add_model_argument, add_motion_arguments, check_plot_loads, compile_model,
                     motion_files, output_dir, parameters, positive_float, warnings_printed)


def register(sub) -> None:
    p = sub.add_parser(
        "kinematics", help="kinematic simulation (position, velocity, acceleration) of a driven model",
        description="Kinematic simulation of a model whose degrees of freedom are all driven: "
                    "Newton-Raphson positions tracked from step to step, then velocities and "
                    "accelerations. Results go to CSV, NPZ, summary.json and PNG plots, "
                    "with a picture of the mechanism's motion (and a GIF with --animate).")
    add_model_argument(p)
    p.add_argument("--t-end", type=positive_float, required=True, metavar="T",
                   help="end time (s)")
    p.add_argument("--dt", type=positive_float, required=True, metavar="DT", help="time step (s)")
    p.add_argument("--t0", type=float, default=0.0, metavar="T0",
                   help="start time, where the model is assembled (s, default 0)")
    p.add_argument("--solver", choices=("dense", "sparse"), default=None,
                   help="linear solver: LAPACK dense LU or static-pivot sparse LU (default; "
                        "with --strategy auto: tuned unless given)")
    p.add_argument("--strategy", choices=("global", "groups", "auto"), default="global",
                   help="global formulation (default), Group Equations (structural groups in "
                        "DAG order) or auto (time the candidates on this model, use the "
                        "fastest, print the table; the choice is cached per model)")
    p.add_argument("--threads", type=threads_spec, default=None, metavar="OUTER[xINNER]",
                   help="threads: OUTER structural groups in parallel (groups strategy) x INNER "
                        "BLAS threads, e.g. 2 or 2x1 (with --strategy auto: tuned unless given)")
    p.add_argument("--retune", action="store_true",
                   help="with --strategy auto: measure again instead of using the cached choice")
    p.add_argument("--tol", type=positive_float, default=1e-10,
                   help="Newton tolerance on max |Phi| (default 1e-10)")
    p.add_argument("--max-iter", type=int, default=25, metavar="N",
                   help="Newton iteration limit (default 25)")
    p.add_argument("--fixed-iterations", action="store_true",
                   help="do exactly --max-iter Newton iterations per step (real-time mode)")
    p.add_argument("--reactions", action="store_true",
                   help="inverse dynamics: the joint reactions and the drivers' efforts that "
                        "produce the motion (Newton-Euler) as channels, plotted in efforts.png")
    p.add_argument("--actuators", metavar="JOINTS",
                   help="comma-separated actuated joints whose efforts replace the drivers' "
                        "(implies --reactions; the drivers then only prescribe the motion), "
                        "e.g. P1,P2,P3,P4,P5,P6 or R1:angle")
    p.add_argument("--plot", action="append", default=[], metavar="CHANNEL",
                   help="channel name or glob pattern to plot (repeatable), e.g. "
                        "'joint.A.angle', 'body.platform.*' or 'effort.*'")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/<model>-kinematics)")
    add_motion_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def threads_spec(text: str) -> tuple:
    """``OUTER`` or ``OUTERxINNER`` (positive integers)."""
    import argparse
    try:
        parts = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        parts = ()
    if len(parts) not in (1, 2) or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"expected OUTER or OUTERxINNER (positive integers, "
                                         f"e.g. 2 or 2x1), got {text!r}")
    return parts if len(parts) == 2 else (parts[0], None)


def check_times(t0: float, t_end: float, dt: float) -> int:
    """Number of samples of the run (steps + 1), or a ModelError naming the bad option."""
    if not t_end > t0:
        raise ModelError(f"--t-end ({t_end:g}) must be greater than --t0 ({t0:g})")
    return run_steps(t0, t_end, dt, limit=10**7, warn=False) + 1  # the run warns


def run(args) -> int:
    from ..dynamics.inverse import parse_actuators
    from ..kinematics import Kinematics
    from ..kinematics.results import channel_names
    from ..viz.plots import plot_channels, plot_log
    if args.max_iter < 1:
        raise ModelError(f"--max-iter must be at least 1, got {args.max_iter}")
    if args.retune and args.strategy != "auto":
        raise ModelError("--retune re-measures the auto-tuning: it needs --strategy auto")
    steps = check_times(args.t0, args.t_end, args.dt)
    model = compile_model(args)
    with warnings_printed():
        kin = Kinematics(model, solver=args.solver, tol=args.tol, max_iter=args.max_iter,
                         fixed_iterations=args.fixed_iterations, t0=args.t0,
                         strategy=args.strategy, threads=args.threads, retune=args.retune)
    if kin.tuning is not None:
        print(kin.tuning)
    loads = check_plot_loads(args.plot, channel_names(kin.f)) or args.reactions or \
        args.actuators is not None
    if args.actuators is not None:  # named before the run, not after it
        try:
            parse_actuators(model, args.actuators)
        except ModelError as err:
            raise err.at(location="--actuators") from None
    out = output_dir(args.out, f"results/{model.name}-kinematics")
    with warnings_printed(), progress_bar(f"{model.name}: {steps} steps",
                                          enabled=not args.no_progress) as update:
        res = kin.simulate(args.t_end, args.dt, t0=args.t0, progress=update)
    if loads:
        with warnings_printed():
            res.reactions(args.actuators)
    res.summary["parameters"] = {k: float(v) for k, v in parameters(args).items()}
    files = res.save(out)
    if args.plot:
        files.append(plot_channels(res, args.plot, out / "channels.png",
                                   title=f"{model.name}: kinematics ({kin.solver_name})"))
    files.append(plot_log(res, ["residual.*"], out / "residuals.png",
                          f"{model.name}: constraint residuals", "max |residual|"))
    if loads:
        files.append(plot_channels(res, ["effort.*"], out / "efforts.png",
                                   title=f"{model.name}: efforts that produce the motion"))
    files += motion_files(res, out, args.animate, model)
    s = res.summary
    r = s["max_residual"]
    print(f"{model.name}: {s['steps']} steps of {s['dt']:g} s, {kin.strategy} strategy, "
          f"{s['solver']} solver, threads {kin.threads[0]}x{kin.threads[1] or 'default'}, "
          f"{s['us_per_step']:.2f} us/step ({s['cpu_us_per_step']:.2f} us CPU; "
          f"{s['wall_time_s']:.3f} s), "
          f"Newton iterations mean {s['iterations']['mean']:.2f} max {s['iterations']['max']}")
    print(f"max residuals: position {r['position']:.2e}, velocity {r['velocity']:.2e}, "
          f"acceleration {r['acceleration']:.2e}")
    if s["sparse_reanalyses"]:  # each a return to Python: a visible cost in short steps
        print(f"sparse pivot order re-analysed {s['sparse_reanalyses']} times, "
              f"{s['sparse_orders_reused']} of them with an order analysed before")
    if loads:
        print("max |effort|: " + ", ".join(f"{k} {v:.6g}" for k, v in s["max_effort"].items())
              + f"; Newton-Euler residual {s['max_newton_euler_residual']:.2e}")
    print("written: " + ", ".join(str(f) for f in files))
    return 0

