"""``kinedyn bench dynamics``: µs per forward-dynamics step and real-time factor.

Side by side in one run, medians of repeated runs (shared, noisy machine): every explicit method
(``augmented``, ``projection``, ``partitioning``, ``penalty``) with semi-implicit Euler and RK4,
and ``index3`` (HHT-alpha), on the double pendulum, the four-bar (ground 0.4, crank 0.1, coupler
0.4, rocker 0.3 m, 1 kg links, released from rest, crank vertical) and the Gough-Stewart platform,
at dt = 1e-3, with the position residual and the energy drift reached. Peers (MuJoCo, Pinocchio,
Exudyn) are timed only if importable; the issue's anchors are quoted for orientation.
"""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np

from ..dynamics import Dynamics
from ..models import get
from .common import Report

MODELS = ("double-pendulum", "four-bar", "gough-stewart")
RUNS = [(m, i) for m in ("augmented", "projection", "partitioning", "penalty")
        for i in ("semi-implicit-euler", "rk4")] + [("index3", "hht")]


def _median_run(model, method, integrator, t_end, dt, repeat):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {} if method == "index3" else {"integrator": integrator}
        Dynamics(model, method=method, **kw).simulate(10 * dt, dt)  # compile / load, warm up
        samples, res = [], None
        for _ in range(repeat):
            res = Dynamics(model, method=method, **kw).simulate(t_end, dt, record_every=10)
            samples.append(res.summary["us_per_step"])
    return float(np.median(samples)), res.summary


def peers() -> list[str]:
    return [p for p in ("mujoco", "pinocchio", "exudyn") if importlib.util.find_spec(p)]


def run(quick: bool = False, out_dir: Path | None = None) -> Report:
    dt = 1e-3
    t_end = 0.2 if quick else 2.0
    repeat = 3 if quick else 5
    found = peers()
    report = Report("dynamics", settings={
        "step": f"dt = {dt} s, {int(round(t_end / dt))} steps per run, median of {repeat} runs",
        "formulation": "natural coordinates; sparse LU of the KKT / dependent block "
                       "(index3: dense, whole iteration matrix)",
        "anchors": "MuJoCo double pendulum 1.8 us (semi-implicit) / 6.7 us (RK4), four-bar 3.4 us "
                   "(soft loop); Exudyn four-bar 30.6 us closed to 1e-14 m; MuJoCo Gough-Stewart "
                   "11.6 us, legs sagging 0.84 mm (issue 5, this kind of machine)",
        "targets": "four-bar <= 3 us per RK4 step, double pendulum <= 2 us, Gough-Stewart "
                   "<= 15 us with residuals <= 1e-10",
        "peers": ", ".join(found) if found else "none importable (MuJoCo, Pinocchio, Exudyn)"})
    for name in MODELS:
        model = get(name).compile()
        runs = RUNS if name != "gough-stewart" or not quick else \
            [r for r in RUNS if r[1] != "semi-implicit-euler"]
        for method, integrator in runs:
            us, s = _median_run(model, method, integrator, t_end, dt, repeat)
            report.add_row(name, method=method, integrator=integrator, us_per_step=us,
                           real_time_factor=dt * 1e6 / us,
                           max_position_residual=s["max_residual"]["position"],
                           max_relative_energy_drift=s["energy"]["max_relative_drift"])
    report.notes.append("Energy drift on gough-stewart includes the work of its prescribed leg "
                        "forces (the model is not conservative).")
    report.notes.append("Ratios between methods are measured in this run; the anchors in the "
                        "settings were measured elsewhere and are for orientation only.")
    return report
