"""``kinedyn bench sweep``: cases per second of a design study, serially and on Dask workers.

One Monte Carlo study (:func:`kinedyn.sweep.sweep`) of the four-bar (crank length normal
around 0.1 m, link masses uniform in 0.9-1.1 kg; projection/RK4, 1 s at dt = 1 ms; one metric,
the rocker's peak rate) and one grid study of the driven slider-crank's kinematics (crank and
rod lengths; 1 s at dt = 5 ms; the stroke), each run three ways side by side in the same rounds
(:func:`.common.interleaved`): in this process (``serial``), on a local Dask cluster of one
worker per core (``local``, its start-up included: a study pays it), and with the default
scheduler (``default``: the first cases here, then the cluster if it pays). Reported: the
wall time, cases per second, the speed-up over serial (median of the per-round ratios), the
processes busy on average, the median case; and whether every way gave the same metrics
(they must, bit for bit). A last table sets a four-bar case against its compiled run alone.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..models import get
from ..sweep import sweep
from ..sweep.runner import default_workers
from .common import Report, interleaved, paired_ratio

WAYS = ("serial", "local", "default")


def _studies(quick: bool) -> dict[str, dict]:
    n = 120 if quick else 1000
    return {
        f"four-bar dynamics, {n} samples": dict(
            system=get("four-bar"), samples=n, seed=0,
            sample={"crank_length": "normal(0.1, 0.002)", "link_mass": "uniform(0.9, 1.1)"},
            metrics={"peak": "absmax(body.rocker.angle_d)"}, t_end=1.0, dt=1e-3,
            options={"method": "projection", "integrator": "rk4"}),
        f"slider-crank kinematics, {n} grid points": dict(
            system=get("slider-crank-driven"), analysis="kinematics", t_end=1.0, dt=0.005,
            vary={"crank_length": f"0.1:0.3:{n // 10}", "rod_length": "0.4:0.8:10"},
            metrics={"stroke": "range(joint.slide.displacement)"}),
    }


def _way(study: dict, way: str, workers: int):
    scheduler = {"serial": "serial", "local": "local", "default": None}[way]

    def call():
        return sweep(**study, workers=workers, scheduler=scheduler)
    return call


def run(quick: bool = False, out_dir: Path | None = None) -> Report:
    workers = default_workers()
    repeat = 1 if quick else 3
    report = Report("sweep", settings={
        "studies": "four-bar Monte Carlo (projection/RK4, 1 s at dt = 1 ms, peak rocker rate); "
                   "slider-crank grid (kinematics, 1 s at dt = 5 ms, stroke)",
        "ways": f"serial (this process); local Dask cluster of {workers} worker processes, "
                "start-up included; default scheduler (first cases here, the cluster if it "
                "pays)",
        "timing": f"every way once per round, {repeat} round(s) after a warm-up, alternating "
                  "order; wall medians, speed-up = median of per-round ratios"})
    for title, study in _studies(quick).items():
        calls = [_way(study, way, workers) for way in WAYS]
        rounds = interleaved(calls, repeat)
        walls = [[r.summary["wall_time_s"] for r in results] for results in rounds]
        same = all(np.array_equal(results[0].metrics, other.metrics, equal_nan=True)
                   for results in rounds for other in rounds[0] + results)
        for way, results, wall in zip(WAYS, rounds, walls):
            s = results[-1].summary
            report.add_row(title, way=way, wall_s=float(np.median(wall)),
                           cases_per_s=s["cases"] / float(np.median(wall)),
                           speedup_vs_serial=paired_ratio(walls[0], wall),
                           busy_processes=s["busy_processes"],
                           median_case_ms=s["case_seconds"]["median"] * 1e3,
                           where=s["where"], same_metrics=same)
    _case_split(report, next(iter(_studies(quick))))
    report.notes.append("A local cluster's start-up (about 0.7 s) and its workers' import of "
                        "kinedyn and of the compiled kernels (1-2 s) are part of its wall time.")
    report.notes.append("On this shared 2-vCPU host two busy processes do not always run at "
                        "full speed together: busy_processes near 2 with a speed-up well "
                        "under 2 means each case ran slower on the workers.")
    return report


def _case_split(report: Report, title: str) -> None:
    """A four-bar case of the serial way against its compiled run alone (the same run, timed
    by its own summary, median of 10)."""
    from ..dynamics import Dynamics
    dyn = Dynamics(get("four-bar").compile(), method="projection", integrator="rk4")
    run = float(np.median([dyn.simulate(1.0, 1e-3).summary["wall_time_s"]
                           for _ in range(10)])) * 1e3
    whole = report.tables[title][0]["median_case_ms"]
    report.add_row("one four-bar case (ms)", whole_case=whole, compiled_run=run,
                   set_up_and_rest=whole - run, run_share=run / whole)
