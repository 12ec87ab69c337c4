"""``kinedyn bench dynamics``: µs per forward-dynamics step and real-time factor.

Side by side in one run, medians of repeated runs (shared, noisy machine): every explicit method
(``augmented``, ``projection``, ``partitioning``, ``penalty``) with semi-implicit Euler and RK4,
and ``index3`` (HHT-alpha), on the double pendulum, the four-bar (ground 0.4, crank 0.1, coupler
0.4, rocker 0.3 m, 1 kg links, released from rest, crank vertical) and the Gough-Stewart platform,
at dt = 1e-3, with the position residual and the energy drift reached. The index-1 system is
solved by the Schur complement of the constant mass matrix (``solver="schur"``, the default);
``augmented`` and ``projection`` are also timed with the sparse LU of the whole KKT matrix
(``solver="sparse"``, the previous default) so the speed-up is measured in the same run. Both
the wall time and the CPU time of the stepping thread are reported: on a loaded machine the wall
time also counts the time other processes held the core. The issue's anchors (MuJoCo, Exudyn)
are quoted for orientation; ``kinedyn bench peers`` (:mod:`.peers`) times the peers that are
installed side by side with kinedyn.
"""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np

from ..dynamics import Dynamics
from ..dynamics.embedded import SYMBOLIC_OPTIONS
from ..models import get
from .common import Report

MODELS = ("double-pendulum", "four-bar", "gough-stewart")
RUNS = [(m, i, "schur") for m in ("augmented", "projection", "partitioning", "penalty")
        for i in ("semi-implicit-euler", "rk4")] + [("index3", "hht", "dense")]
KKT = [(m, i, "sparse") for m in ("augmented", "projection")
       for i in ("semi-implicit-euler", "rk4")]
#: the natural-coordinate Baumgarte baseline of docs/symbolic.md (thesis Table 4.10 settings,
#: dense LU of the KKT matrix, explicit Euler): 67 ms per step there, from BLAS threads
BAUMGARTE = ("augmented", "euler", "dense", (1.0, 18.0))
#: the symbolic embedded method (kinedyn.symbolic: generated code, legs in closed form) where the
#: model has a symbolic plan; the first construction derives and compiles it (not timed)
EMBEDDED = [("embedded", i, "-") for i in ("semi-implicit-euler", "rk4")]


def _median_run(model, method, integrator, solver, t_end, dt, repeat, baumgarte=(0.0, 0.0)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = ({} if method == "index3" else {"integrator": integrator} if method == "embedded"
              else {"integrator": integrator, "solver": solver, "baumgarte": baumgarte})
        Dynamics(model, method=method, **kw).simulate(10 * dt, dt)  # compile / load, warm up
        wall, cpu, res = [], [], None
        for _ in range(repeat):
            res = Dynamics(model, method=method, **kw).simulate(t_end, dt, record_every=10)
            wall.append(res.summary["us_per_step"])
            cpu.append(res.summary.get("cpu_us_per_step") or np.nan)
    return float(np.median(wall)), float(np.median(cpu)), res.summary


def peers() -> list[str]:
    return [p for p in ("mujoco", "pinocchio", "exudyn") if importlib.util.find_spec(p)]


def run(quick: bool = False, out_dir: Path | None = None) -> Report:
    dt = 1e-3
    t_end = 0.2 if quick else 2.0
    repeat = 3 if quick else 5
    found = peers()
    report = Report("dynamics", settings={
        "step": f"dt = {dt} s, {int(round(t_end / dt))} steps per run, median of {repeat} runs",
        "formulation": "natural coordinates; index-1 system by the Schur complement J M^-1 J^T "
                       "(sparse Cholesky, M inverted once) or by sparse LU of the KKT matrix; "
                       "dependent block of partitioning: sparse LU; index3: dense; embedded: "
                       "symbolic joint/mixed coordinates (Gough-Stewart: platform pose), "
                       "dependent ones in closed form, recorded in natural coordinates",
        "anchors": "MuJoCo double pendulum 1.8 us (semi-implicit) / 6.7 us (RK4), four-bar 3.4 us "
                   "(soft loop); Exudyn four-bar 30.6 us closed to 1e-14 m; MuJoCo Gough-Stewart "
                   "11.6 us, legs sagging 0.84 mm (issue 5, this kind of machine)",
        "targets": "four-bar <= 3 us per RK4 step, double pendulum <= 2 us, Gough-Stewart "
                   "<= 15 us with residuals <= 1e-10",
        "peers": ", ".join(found) if found else "none importable (MuJoCo, Pinocchio, Exudyn)"})
    for name in MODELS:
        model = get(name).compile()
        runs = RUNS + KKT + (EMBEDDED if name in SYMBOLIC_OPTIONS else [])
        if name == "gough-stewart" and quick:
            runs = [r for r in runs if r[1] != "semi-implicit-euler" or r[0] == "projection"]
        if name == "gough-stewart":
            runs = runs + [BAUMGARTE]
        kkt_cpu = {}
        for method, integrator, solver, *ab in runs:
            wall, cpu, s = _median_run(model, method, integrator, solver, t_end, dt, repeat,
                                       *ab)
            if solver == "sparse":
                kkt_cpu[method, integrator] = cpu
            if ab:
                method = f"{method} + Baumgarte {ab[0]}"
            report.add_row(name, method=method, integrator=integrator, solver=solver,
                           us_per_step=wall, cpu_us_per_step=cpu,
                           real_time_factor=dt * 1e6 / wall,
                           max_position_residual=s["max_residual"]["position"],
                           max_velocity_residual=s["max_residual"]["velocity"],
                           max_relative_energy_drift=s["energy"]["max_relative_drift"])
        for row in report.tables[name]:
            before = kkt_cpu.get((row["method"], row["integrator"]))
            if row["solver"] == "schur" and before:
                row["speedup_vs_kkt_cpu"] = before / row["cpu_us_per_step"]
    report.notes.append("Energy drift on gough-stewart includes the work of its prescribed leg "
                        "forces (the model is not conservative).")
    report.notes.append("us_per_step is wall time, cpu_us_per_step the CPU time of the stepping "
                        "thread; speedup_vs_kkt_cpu compares the Schur solver with the sparse KKT "
                        "LU (previous default) for the same method and integrator, same run.")
    report.notes.append("Ratios between methods are measured in this run; the anchors in the "
                        "settings were measured elsewhere and are for orientation only.")
    return report
