"""``kinedyn bench symbolic``: triangular vs Newton position solvers (thesis Tables 4.4-4.10).

Measured side by side in one run, as the thesis reports them: **ms of computation per simulated
second** (h = 1 ms; kinematics = position + velocity + acceleration per step; dynamics =
embedded ODE (eq. 2.28) with explicit Euler), medians of repeated whole runs, for

* ``triangular``: the Groebner-basis closed forms (exact, no tolerance),
* ``blocks``: Newton block by block (per loop / per leg: the thesis's "separate Newton"),
* ``newton``: Newton on all dependent coordinates ("single Newton"),

the Newton variants at tolerances 1e-3 and 1e-6 (as the thesis) -- all on the *same*
generated code, so the ratio isolates the position solver. The natural-coordinate DAE methods
of :mod:`kinedyn.dynamics` (index-1 with Baumgarte, penalty) are timed alongside in the full
run. Also reported: symbolic preparation time (Groebner bases; cached on disk afterwards),
code generation + compilation time, and the operation counts of the triangular solver.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..dynamics import Dynamics
from ..errors import SolverError
from ..models import get
from ..symbolic.analysis import TriangularKinematics
from ..symbolic.embedded import EmbeddedDynamics
from ..models.sixbar import LANDING_GEAR_CUT, STEPHENSON3_CUT
from ..symbolic.thesis import spatial_four_bar
from .common import Report, time_call

_S3 = {"joint_angles": True, "cut": STEPHENSON3_CUT, "time_limit": 10}
_LG = {"joint_angles": True, "cut": LANDING_GEAR_CUT, "time_limit": 10}
#: (model, options); the four-bar's branch unknown is chosen automatically (rocker sine)
KINEMATIC = (("slider-crank-driven", {}), ("four-bar-driven", {}),
             ("spatial-four-bar (4.12)-(4.14)", {"order": ["beta2", "beta3", "beta4"]}),
             ("gough-stewart-driven", {"absolute": ["platform"]}),
             ("stephenson3-theta1", _S3), ("stephenson3-beta1", _S3), ("landing-gear-driven", _LG))
#: (model, plan options, embedded options, model parameters); the Gough-Stewart run is the
#: thesis's (section 4.2.5: leg forces only, no gravity) in mixed coordinates (platform pose).
DYNAMIC = (("slider-crank", {}, {}, {}), ("four-bar", {}, {}, {}),
           ("gough-stewart", {}, {"absolute": ["platform"]}, {"g": 0.0}))
#: natural-coordinate DAE baselines: the thesis's tuned Gough-Stewart settings (Table 4.10),
#: generic ones elsewhere
BAUMGARTE = {"gough-stewart": (1.0, 18.0)}
PENALTY = {"gough-stewart": {"rho": 1e3, "omega": 18.0, "zeta": 1.0, "iterations": 1}}
SOLVERS = (("triangular", 1e-12), ("blocks", 1e-3), ("blocks", 1e-6), ("newton", 1e-3),
           ("newton", 1e-6))


def _ms_per_s(call, t_end, repeat):
    return time_call(call, repeat=repeat, min_time=0.0)["median"] * 1e3 / t_end


def run(quick: bool = False, out_dir: Path | None = None) -> Report:
    t_kin, t_dyn, repeat = (1.0, 1.0, 3) if quick else (10.0, 3.0, 5)
    report = Report("symbolic", settings={
        "step": "h = 1 ms", "kinematic run": f"{t_kin:g} s", "dynamic run": f"{t_dyn:g} s, explicit Euler",
        "unit": "ms of computation per simulated second (median of whole runs)",
        "repeats": repeat})
    for name, opts in (KINEMATIC[:3] if quick else KINEMATIC):
        source = spatial_four_bar() if name.startswith("spatial") else get(name).compile()
        kin = TriangularKinematics(source, **opts)
        report.add_row("symbolic preparation", model=name, analysis="kinematics",
                       groebner_s=kin.plan_seconds, generate_and_compile_s=kin.generation_seconds,
                       plan="; ".join(kin.plan.report()))
        ops = kin.operations["position_triangular"]
        report.add_row("triangular position solver: operations", model=name, **ops)
        base = None
        for solver, tol in SOLVERS:
            kin.position_solver, kin.tol = solver, tol
            ms = _ms_per_s(lambda: kin.simulate(t_kin, 1e-3), t_kin, repeat)
            res = kin.simulate(t_kin, 1e-3)
            base = ms if solver == "triangular" else base
            report.add_row("kinematics", model=name, solver=solver,
                           tol="exact" if solver == "triangular" else f"{tol:g}", ms_per_s=ms,
                           ratio_to_triangular=ms / base,
                           max_residual=float(res.channel("residual.position").max()),
                           mean_iterations=float(res.channel("iterations").mean()))
    for name, plan_opts, emb_opts, params in (DYNAMIC[:2] if quick else DYNAMIC):
        model = get(name).compile(params)
        dyn = EmbeddedDynamics(model, integrator="euler", **emb_opts, **plan_opts)
        report.add_row("symbolic preparation", model=name, analysis="embedded dynamics",
                       groebner_s=dyn.plan_seconds, generate_and_compile_s=dyn.generation_seconds,
                       plan="; ".join(dyn.plan.report()))
        report.add_row("triangular position solver: operations", model=name,
                       **dyn.operations["position_triangular"])
        from ..symbolic.analysis import POSITION_SOLVERS
        base = None
        for solver, tol in SOLVERS:
            dyn.position_solver, dyn.mode, dyn.tol = solver, POSITION_SOLVERS[solver], tol
            ms = _ms_per_s(lambda: dyn.simulate(t_dyn, 1e-3), t_dyn, repeat)
            res = dyn.simulate(t_dyn, 1e-3)
            base = ms if solver == "triangular" else base
            report.add_row("embedded dynamics", model=name, solver=solver,
                           tol="exact" if solver == "triangular" else f"{tol:g}", ms_per_s=ms,
                           ratio_to_triangular=ms / base,
                           max_residual=float(res.channel("residual.position").max()),
                           real_time_factor=1e3 / ms)
        if quick:
            continue
        ab = BAUMGARTE.get(name, (5.0, 5.0))
        pen = PENALTY.get(name, {})
        for label, kw in ((f"augmented + Baumgarte {ab}", {"method": "augmented", "baumgarte": ab}),
                          (f"penalty {pen or '(defaults)'}", {"method": "penalty", "penalty": pen})):
            try:
                d = Dynamics(model, integrator="euler", solver="dense", **kw)
                # shorter runs: the natural Gough-Stewart (111 coordinates) costs seconds per
                # simulated second; ms/s is normalised, the violation is over this span
                t_nat = min(t_dyn, 0.5)
                ms = _ms_per_s(lambda: d.simulate(t_nat, 1e-3), t_nat, repeat)
                viol = float(np.abs(d.simulate(t_nat, 1e-3).channel("residual.position")).max())
            except SolverError as err:   # reported, not hidden
                report.add_row("embedded dynamics", model=name, solver=f"natural: {label}",
                               tol="-", ms_per_s="failed", ratio_to_triangular=str(err)[:90])
                continue
            report.add_row("embedded dynamics", model=name, solver=f"natural: {label}", tol="-",
                           ms_per_s=ms, ratio_to_triangular=ms / base, max_residual=viol,
                           real_time_factor=1e3 / ms)
    report.notes += [
        "Same generated code for every position solver of a model: only position() differs.",
        "Newton warm starts from a second-order extrapolation of the previous step, so at 1e-3 it "
        "often needs no iteration at all; the triangular solver never iterates (fixed cost).",
        "Thesis anchors (3 GHz Pentium 4, MSVC): Stephenson-III triangular 3.2x faster than NR "
        "at 1e-3; 3-RRR mixed dynamics 1.76x; Gough-Stewart dynamics 10.3 ms/s, 1.29x vs separate "
        "Newton, 4.2x vs Baumgarte, 8.3x vs penalty (Table 4.10).",
        "Gough-Stewart: mixed coordinates (platform pose independent), per-leg Groebner bases "
        "after intermediate-variable reduction; the natural-coordinate baselines integrate a "
        "different (larger) coordinate set, as the library's DAE methods do.",
    ]
    return report
