"""``kinedyn equilibrium MODEL``: the static equilibrium of a model and its stability.

Newton-Raphson on the static equations Phi_q^T lambda = F, Phi = 0 from the model's initial
configuration (:func:`kinedyn.dynamics.statics.static_equilibrium`). Prints the stability
(the stiffness along each free motion), the frequencies of small oscillations about it, the
joint coordinates there and the residuals; writes
``results.csv``/``results.npz`` (one sample: every channel of the configuration),
``summary.json`` and ``equilibrium.png`` (the mechanism drawn there).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .common import add_model_argument, compile_model, output_dir, positive_float, \
    warnings_printed


def register(sub) -> None:
    p = sub.add_parser(
        "equilibrium", help="static equilibrium of a model under its loads, and its stability",
        description="Static equilibrium: the configuration where gravity, springs and the "
                    "applied forces balance the joints and drivers, found by Newton-Raphson "
                    "from the model's initial configuration, with its stability (the "
                    "stiffness along each free motion). Writes the configuration's channels, "
                    "summary.json and a picture.")
    add_model_argument(p)
    p.add_argument("--t", type=float, default=0.0, metavar="T",
                   help="time at which drivers and loads are evaluated (s, default 0)")
    p.add_argument("--tol", type=positive_float, default=1e-10,
                   help="tolerance on the unbalanced load, relative to the largest load "
                        "(default 1e-10)")
    p.add_argument("--max-iter", type=int, default=50, metavar="N",
                   help="iteration limit (default 50)")
    p.add_argument("--out", metavar="DIR",
                   help="output folder (default results/<model>-equilibrium)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..dynamics.statics import static_equilibrium
    from ..viz.motion import draw_motion
    if args.max_iter < 1:
        raise ModelError(f"--max-iter must be at least 1, got {args.max_iter}")
    model = compile_model(args)
    out = output_dir(args.out, f"results/{model.name}-equilibrium")
    with warnings_printed():
        eq = static_equilibrium(model, t=args.t, tol=args.tol, max_iter=args.max_iter)
    res = eq.results
    joints = {n: float(v[0]) for n, v in res.channels.items()
              if n.startswith("joint.") and not n.endswith(("_d", "_dd"))}
    res.summary.update({
        "t": args.t, "iterations": eq.iterations, "stability": eq.stability,
        "stiffness": eq.stiffness.tolist(), "residual": eq.residual,
        "frequencies_hz": [None if np.isnan(x) else float(x) for x in eq.frequencies],
        "joint_coordinates": joints, "multipliers": eq.multipliers})
    files = res.save(out)
    files.append(draw_motion(res, out / "equilibrium.png", frames=1,
                             title=f"{model.name}: static equilibrium ({eq.stability})",
                             model=model))
    free = len(eq.stiffness)
    stiff = ", ".join(f"{k:.4g}" for k in eq.stiffness[:8]) + (" ..." if free > 8 else "")
    print(f"{model.name}: static equilibrium at t = {args.t:g} s after {eq.iterations} "
          f"iterations: {eq.stability}"
          + (f" (stiffness along its {free} free motion{'s' * (free > 1)}: {stiff})"
             if free else " (the drivers take every freedom)"))
    if len(eq.frequencies) and not np.isnan(eq.frequencies).all():
        hz = ", ".join("grows" if np.isnan(x) else f"{x:.4g}" for x in eq.frequencies[:8])
        print(f"small oscillations about it: {hz}{' ...' if free > 8 else ''} Hz")
    for name, value in list(joints.items())[:12]:
        unit = "rad" if name.endswith("angle") else "m"
        print(f"  {name:40s} {value: .6g} {unit}")
    if len(joints) > 12:
        print(f"  ... {len(joints) - 12} more in summary.json")
    print(f"residuals: constraints {eq.residual['position']:.2e}, unbalanced load "
          f"{eq.residual['force']:.2e}; max |lambda| "
          f"{max(np.abs(list(eq.multipliers.values())), default=0.0):.4g}")
    print("written: " + ", ".join(str(f) for f in files))
    return 0
