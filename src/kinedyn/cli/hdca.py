"""``kinedyn hdca MODEL --t-end T --dt DT``: forward dynamics by HDCA (Hamiltonian divide and conquer).

Planar serial chains, open or closed through the ground (double pendulum, four-bar,
cart-pendulum-<N>). Writes ``results.csv``, ``results.npz``, ``summary.json`` and the HDCA
paper's figures: joint position/velocity (Figs. 6, 10), kinetic energy and its difference to the
natural-coordinate solution (Figs. 7, 11; ``--no-reference`` skips it), and for closed loops the
loop-closure errors (Figs. 12, 13). ``--precision both`` overlays float32 on float64.
"""
from __future__ import annotations

from ..errors import AccuracyWarning
from .common import (add_model_argument, compile_model, output_dir, positive_float,
                     warnings_printed)


def register(sub) -> None:
    p = sub.add_parser("hdca", help="forward dynamics of a planar chain by HDCA (paper figures)",
                       description=__doc__.split("\n\n", 1)[1])
    add_model_argument(p)
    p.add_argument("--t-end", type=positive_float, default=2.0, metavar="T",
                   help="end time (s, default 2)")
    p.add_argument("--dt", type=positive_float, default=1e-4, metavar="DT",
                   help="time step (s, default 1e-4 as in the paper)")
    p.add_argument("--integrator", choices=("euler", "semi-implicit-euler", "rk4"),
                   default="rk4", help="fixed-step integrator (default rk4; the paper used euler)")
    p.add_argument("--precision", choices=("float64", "float32", "both"), default="float64",
                   help="arithmetic (default float64; both: float32 overlaid)")
    p.add_argument("--parallel", action="store_true",
                   help="run on a team of 2 threads (one subtree of the assembly tree each)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the natural-coordinate reference solution")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/<model>-hdca)")
    p.set_defaults(func=run)


def run(args) -> int:
    import numpy as np

    from ..dynamics.hdca import HDCA
    from ..viz.hdca import paper_figures
    from .kinematics import check_times
    check_times(0.0, args.t_end, args.dt)
    model = compile_model(args)
    out = output_dir(args.out, f"results/{model.name}-hdca")
    record = max(1, int(round(1e-3 / args.dt)))  # record at about 1 kHz
    first = "float32" if args.precision == "float32" else "float64"
    with warnings_printed("warning", AccuracyWarning):  # a run's energy warning
        res = HDCA(model, integrator=args.integrator, precision=first,
                   parallel=args.parallel).simulate(args.t_end, args.dt, record_every=record)
        if args.precision == "both":
            r32 = HDCA(model, integrator=args.integrator, precision="float32",
                       parallel=args.parallel).simulate(args.t_end, args.dt,
                                                        record_every=record)
    extra = {}
    if args.precision == "both":
        extra["HDCA float32"] = r32
        res.summary["float32"] = {k: r32.summary[k] for k in ("energy", "max_loop_closure")
                                  if k in r32.summary}
        res.summary["float32"]["max_abs_q_difference"] = float(np.abs(r32.q - res.q).max())
    reference = None
    if not args.no_reference:
        from ..dynamics import Dynamics
        with warnings_printed():
            dyn = Dynamics(model, method="projection", integrator=args.integrator)
            nat = dyn.simulate(args.t_end, args.dt, record_every=record)
        reference = dyn.f.observables(nat.q, nat.qd, np.zeros_like(nat.q))
        reference["energy.kinetic"] = nat.energy["kinetic"]
        res.summary["max_kinetic_energy_difference_to_natural"] = float(
            np.abs(res.channel("energy.kinetic") - nat.energy["kinetic"]).max())
    written = res.save(out)
    written += paper_figures(res, out, reference, "natural coordinates", extra)
    s = res.summary
    print(f"{s['model']}: HDCA, {s['bodies']} bodies, tree depth {s['tree_depth']}, "
          f"{s['steps']} {s['integrator']} steps of {s['dt']:g} s, {s['us_per_step']:.2f} us/step")
    print(f"  energy drift {s['energy']['max_drift']:.3e} J")
    if "max_loop_closure" in s:
        print(f"  loop closure: position {s['max_loop_closure']['position']:.3e} m, "
              f"angle {s['max_loop_closure']['angle']:.3e} rad")
    if "float32" in s:
        f = s["float32"]
        print(f"  float32: energy drift {f['energy']['max_drift']:.3e} J, max |q32 - q64| "
              f"{f['max_abs_q_difference']:.3e}" + (
                  f", loop closure {f['max_loop_closure']['position']:.3e} m"
                  if "max_loop_closure" in f else ""))
    if reference is not None:
        print(f"  max |T - T_natural| {s['max_kinetic_energy_difference_to_natural']:.3e} J")
    print("written: " + ", ".join(str(p) for p in written))
    return 0
