"""``kinedyn simulate MODEL --method M --integrator I --t-end T --dt DT``: forward dynamics.

Methods (:mod:`kinedyn.dynamics`): ``augmented`` (index-1, optional ``--baumgarte A B``),
``projection``, ``partitioning``, ``penalty``, ``index3`` (HHT-alpha, implicit), ``hdca``
(Hamiltonian divide and conquer, planar chains; see ``kinedyn hdca``), ``embedded`` (symbolic
embedded ODE with closed-form dependent coordinates, models with a symbolic plan such as the
Gough-Stewart platform; see docs/symbolic.md); integrators
``euler``, ``semi-implicit-euler``, ``rk4`` and ``reference`` (adaptive solve_ivp on the
partitioned ODE). ``--hold JOINTS`` removes the drivers and applies the static efforts that
hold the initial pose as constant joint forces (e.g. the six legs of a Gough-Stewart platform).
Writes ``results.csv``, ``results.npz``, ``summary.json`` (wall time, us per step, real-time
factor, max residuals, energy drift) and PNG plots of the energies, the residuals and the
``--plot`` channels, and ``motion.png`` (the mechanism at six instants over its points' paths;
``--animate``: also ``motion.gif``).
"""
from __future__ import annotations

from ..errors import ModelError, run_steps
from ..progress import progress_bar
from .common import (add_input_argument, add_model_argument, add_motion_arguments,
                     check_plot_loads, load_system, motion_files, output_dir, parameters,
                     positive_float, set_inputs, warnings_printed)

METHODS = ("augmented", "projection", "partitioning", "penalty", "index3", "hdca", "embedded")
INTEGRATORS = ("euler", "semi-implicit-euler", "rk4", "reference")


def register(sub) -> None:
    p = sub.add_parser(
        "simulate", help="forward dynamics of a model (methods, integrators, energies, reactions)",
        description="Forward dynamics with a chosen method and integrator. Results go to CSV, "
                    "NPZ, summary.json and PNG plots; the summary is printed.")
    add_model_argument(p)
    add_input_argument(p)
    p.add_argument("--method", choices=METHODS, default="projection",
                   help="dynamics method (default projection)")
    p.add_argument("--integrator", choices=INTEGRATORS, default="rk4",
                   help="fixed-step integrator, or 'reference' (adaptive, partitioning only); "
                        "index3 uses HHT-alpha whatever is given")
    p.add_argument("--t-end", type=positive_float, required=True, metavar="T", help="end time (s)")
    p.add_argument("--dt", type=positive_float, required=True, metavar="DT", help="time step (s)")
    p.add_argument("--record-every", type=int, default=1, metavar="N",
                   help="record every N-th step (default 1)")
    p.add_argument("--solver", choices=("schur", "sparse", "dense"), default=None,
                   help="index-1 linear solver: schur (J M^-1 J^T, default for a constant mass "
                        "matrix), sparse or dense LU of the KKT matrix (dense for the reference "
                        "integrator)")
    p.add_argument("--baumgarte", type=float, nargs=2, default=(0.0, 0.0), metavar=("ALPHA", "BETA"),
                   help="Baumgarte stabilisation of the augmented method (1/s)")
    p.add_argument("--hht-alpha", type=float, default=-0.1,
                   help="HHT numerical damping alpha in [-1/3, 0] (index3, default -0.1)")
    p.add_argument("--hold", metavar="JOINTS",
                   help="comma-separated actuated joints: remove the drivers and hold the initial "
                        "pose with their static efforts (e.g. P1,P2,P3,P4,P5,P6)")
    p.add_argument("--from-equilibrium", action="store_true",
                   help="start at rest from the static equilibrium (kinedyn equilibrium) "
                        "instead of the model's initial configuration")
    p.add_argument("--reactions", action="store_true",
                   help="compute joint reactions and actuator efforts (Newton-Euler) as channels")
    p.add_argument("--plot", action="append", default=[], metavar="CHANNEL",
                   help="channel name or glob pattern to plot (repeatable)")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/<model>-dynamics)")
    add_motion_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _model(args):
    system = load_system(args.model)
    if args.hold:
        from ..dynamics.holding import holding_system
        joints = [j.strip() for j in args.hold.split(",") if j.strip()]
        if not joints:
            raise ModelError("--hold expects a comma-separated list of joint names")
        system = holding_system(system, joints)
    return system.compile(parameters(args))


def run(args) -> int:
    from ..dynamics import Dynamics
    from ..dynamics.results import channel_names
    from ..viz.plots import plot_channels, plot_log
    if args.record_every < 1:
        raise ModelError(f"--record-every must be at least 1, got {args.record_every}")
    steps = run_steps(0.0, args.t_end, args.dt, limit=10**7, warn=False)  # the run warns
    model = _model(args)
    set_inputs(model, args)
    integrator = "rk4" if args.method == "index3" else args.integrator
    q0 = None
    with warnings_printed():
        if args.from_equilibrium:
            from ..dynamics.statics import static_equilibrium
            eq = static_equilibrium(model)
            q0 = eq.q
            print(f"{model.name}: starting from its static equilibrium ({eq.stability}, "
                  f"{eq.iterations} iterations)")
        dyn = Dynamics(model, method=args.method, integrator=integrator, solver=args.solver,
                       baumgarte=tuple(args.baumgarte), hht_alpha=args.hht_alpha, q0=q0)
    plot_loads = check_plot_loads(args.plot, channel_names(dyn.f))
    out = output_dir(args.out, f"results/{model.name}-dynamics")
    with warnings_printed(), progress_bar(
            f"{model.name}: {steps} steps", enabled=not args.no_progress) as update:
        res = dyn.simulate(args.t_end, args.dt, record_every=args.record_every, progress=update)
    if args.reactions or plot_loads:
        res.reactions()
    res.summary["parameters"] = {k: float(v) for k, v in parameters(args).items()}
    if model.input_names:
        res.summary["inputs"] = model.inputs
    if args.from_equilibrium:
        res.summary["initial_configuration"] = "static equilibrium"
    if args.hold:
        res.summary["held_by"] = [j.strip() for j in args.hold.split(",")]
    files = res.save(out)
    title = f"{model.name}: {args.method} / {res.summary['integrator']}, dt {args.dt:g} s"
    files.append(plot_channels(res, ["energy.*"], out / "energies.png", title=title))
    files.append(plot_log(res, ["residual.position", "residual.velocity"], out / "residuals.png",
                          f"{model.name}: constraint residuals", "max |residual|"))
    if args.plot:
        files.append(plot_channels(res, args.plot, out / "channels.png", title=title))
    files += motion_files(res, out, args.animate, model)
    print_summary(res.summary)
    print("written: " + ", ".join(str(f) for f in files))
    return 0


def print_summary(s: dict) -> None:
    r, e = s["max_residual"], s["energy"]
    print(f"{s['model']}: {s['method']} / {s['integrator']}, {s['steps']} steps of {s['dt']:g} s "
          f"({s['coordinates']} coordinates, {s['constraints']} constraints, "
          f"{s['degrees_of_freedom']} dof)")
    cpu = s.get("cpu_us_per_step")
    print(f"  wall {s['wall_time_s']:.3f} s, {s['us_per_step']:.2f} us/step"
          + (f" ({cpu:.2f} us CPU)" if cpu is not None else "")
          + f", real-time factor {s['real_time_factor']:.1f}")
    print(f"  max residuals: position {r['position']:.2e}, velocity {r['velocity']:.2e}")
    change = ("max drift" if e.get("conserved", True) else
              "max change (not conserved: drivers or forces do work)")
    print(f"  energy: initial {e['initial']:.6g} J, final {e['final']:.6g} J, "
          f"{change} {e['max_drift']:.3g} J (relative {e['max_relative_drift']:.2e})")
