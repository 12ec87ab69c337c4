"""``kinedyn realtime MODEL --dt DT --duration T``: can a model be stepped in real time?

Steps a forward-dynamics run one step per call, as a real-time loop (a controller, hardware in
the loop) does through :meth:`kinedyn.dynamics.Dynamics.stepper`, and reports the wall time of
each call against the step's budget: median, 99th percentile and largest, and the headroom at
the 99th percentile. The same run in one compiled call (``simulate``) is timed beside it, and
its states are compared with the stepped ones (they are equal to the bit). ``--paced`` waits
for the wall clock between steps and counts the steps that finished late. Writes
``step_times.png`` (per-call times over the run and their distribution, with the budget) and
``summary.json``.
"""
from __future__ import annotations

import json
import time

import numpy as np

from ..progress import progress_bar
from .common import (add_input_argument, add_model_argument, compile_model, output_dir,
                     positive_float, set_inputs, warnings_printed)
from .simulate import METHODS

#: percentile of the per-call times the headroom is judged by
PERCENTILE = 99


def register(sub) -> None:
    p = sub.add_parser(
        "realtime", help="step a model one step per call, as a real-time loop, and time it",
        description="Step a forward-dynamics run one step per call, as a controller or "
                    "hardware in the loop would (Dynamics.stepper), and time every call against "
                    "the real-time budget of one step. The same run in one compiled call is "
                    "timed beside it. Writes step_times.png and summary.json.")
    add_model_argument(p)
    add_input_argument(p)
    p.add_argument("--method", choices=[m for m in METHODS if m != "hdca"],
                   default="projection", help="dynamics method (default projection)")
    p.add_argument("--integrator", choices=("euler", "semi-implicit-euler", "rk4"),
                   default="rk4", help="fixed-step integrator (default rk4; index3: HHT)")
    p.add_argument("--dt", type=positive_float, default=1e-3, metavar="DT",
                   help="time step, the real-time budget of one call (s, default 0.001)")
    p.add_argument("--duration", type=positive_float, default=1.0, metavar="T",
                   help="simulated time (s, default 1)")
    p.add_argument("--paced", action="store_true",
                   help="wait for the wall clock between steps (as a real-time loop does) and "
                        "count the steps that finish late")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/<model>-realtime)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..dynamics import Dynamics
    from ..errors import run_steps
    from ..viz.plots import plot_step_times
    steps = run_steps(0.0, args.duration, args.dt, limit=10**7)
    model = compile_model(args)
    set_inputs(model, args)
    out = output_dir(args.out, f"results/{model.name}-realtime")
    integrator = "rk4" if args.method == "index3" else args.integrator
    with warnings_printed():
        dyn = Dynamics(model, method=args.method, integrator=integrator)
        whole = dyn.simulate(steps * args.dt, args.dt)  # one compiled call (and the compile)
        stepper = dyn.stepper(args.dt, realtime=args.paced)
        calls = np.empty(steps)
        with progress_bar(f"{model.name}: {steps} steps, one per call",
                          enabled=not args.no_progress) as update:
            for k in range(steps):
                start = time.perf_counter()
                stepper.step()
                calls[k] = time.perf_counter() - start
                if update and (k + 1) % max(steps // 100, 1) == 0:
                    update(k + 1, steps)
    compiled = stepper.timing()
    difference = float(max(np.abs(stepper.q - whole.q[-1]).max(),
                           np.abs(stepper.qd - whole.qd[-1]).max()))
    us = calls * 1e6
    if args.paced:  # a paced call also waits: what it computed is the compiled time
        us = stepper.step_times() * 1e6
    budget = args.dt * 1e6
    median, high, top = (float(np.median(us)), float(np.percentile(us, PERCENTILE)),
                         float(us.max()))
    summary = {
        "model": model.name, "method": args.method, "integrator": whole.summary["integrator"],
        "dt": args.dt, "steps": steps, "paced": args.paced, "inputs": model.inputs,
        "call_us": {"median": median, f"p{PERCENTILE}": high, "max": top},
        "compiled_us": {"median": compiled["median_us"], f"p{PERCENTILE}": compiled["p99_us"],
                        "max": compiled["max_us"]},
        "whole_run_us_per_step": whole.summary["us_per_step"],
        "headroom": budget / high, "overruns": stepper.overruns if args.paced else None,
        "late_calls": int((us > budget).sum()),
        "max_difference_from_whole_run": difference}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    title = (f"{model.name}: {args.method} / {summary['integrator']}, dt {args.dt:g} s, "
             f"one step per call")
    picture = plot_step_times(whole.time[1:], us, budget, out / "step_times.png", title)
    print(f"{model.name}: {args.method} / {summary['integrator']}, {steps} steps of "
          f"{args.dt:g} s, one per call{' (paced by the wall clock)' if args.paced else ''}")
    print(f"  per call: median {median:.1f} us, {PERCENTILE} % {high:.1f} us, max {top:.1f} us "
          f"(budget {budget:g} us); compiled step {compiled['median_us']:.1f} us, a whole run "
          f"in one call {summary['whole_run_us_per_step']:.2f} us per step")
    verdict = ("fits" if high <= budget else "does NOT fit")
    print(f"  {verdict} real time at dt = {args.dt:g} s: headroom {budget / high:.1f}x at the "
          f"{PERCENTILE}th percentile; {summary['late_calls']} of {steps} calls over budget"
          + (f", {stepper.overruns} steps finished late" if args.paced else ""))
    print(f"  stepped states equal the whole run's to {difference:.1e}")
    print(f"written: {out / 'summary.json'}, {picture}")
    return 0
