"""``kinedyn bench kinematics``: µs per kinematic step and per forward-kinematics solve.

Measured side by side in one run (medians of repeated runs on a shared, noisy machine):

* a full kinematic step (position by Newton-Raphson, velocity, acceleration) of the four-bar and
  both Stewart platforms, global formulation, dense (LAPACK) vs sparse (static-pivot LU), with
  tolerance 1e-10 and with one Newton iteration per step (the paper's tEnd2 = 1), and the same
  tracking run with the NumPy reference kernels;
* the Gough-Stewart forward kinematics (pose from six leg lengths) along a trajectory, compiled
  vs the same Newton iteration written in NumPy.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..kinematics import Kinematics
from ..kinematics.parallel import PlatformForwardKinematics
from ..kinematics.reference import reference_simulate
from ..model.rotations import euler_to_matrix
from ..models import get
from ..models.stewart import GS_BASE, GS_HOME, GS_PLATFORM
from .common import Report

MODELS = ("four-bar-driven", "gough-stewart-driven", "stewart-paper")


def _median_step_us(kin: Kinematics, t_end: float, dt: float, repeat: int) -> tuple[float, dict]:
    kin.simulate(min(t_end, 10 * dt), dt)  # compile and warm up
    samples = []
    res = None
    for _ in range(repeat):
        res = kin.simulate(t_end, dt)
        samples.append(res.summary["us_per_step"])
    return float(np.median(samples)), res.summary


def _median_reference_us(kin: Kinematics, steps: int, dt: float, repeat: int) -> float:
    """The same tracking run with the NumPy reference kernels (:mod:`kinedyn.kinematics.reference`)."""
    times = dt * np.arange(steps)
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        reference_simulate(kin.f, kin.rows, kin.q_assembled, times, kin.tol, kin.max_iter)
        samples.append((time.perf_counter() - t0) / steps * 1e6)
    return float(np.median(samples))


def numpy_forward_kinematics(base, platform, lengths, p, R, tol=1e-12, max_iter=20):
    """The same Newton-Raphson as the compiled solver, in NumPy (the baseline)."""
    for _ in range(max_iter + 1):
        rp = platform @ R.T
        d = p + rp - base
        f = np.einsum("ij,ij->i", d, d) - lengths**2
        if np.abs(f).max() <= tol:
            return p, R
        A = np.hstack([2 * d, 2 * np.cross(rp, d)])
        x = np.linalg.solve(A, -f)
        p = p + x[:3]
        w = x[3:]
        th = np.linalg.norm(w)
        if th > 0:
            k = w / th
            K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
            R = (np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K) @ R
    raise RuntimeError("no convergence")


def run(quick: bool = False, out_dir: Path | None = None) -> Report:
    dt = 1e-3
    t_end = 0.2 if quick else 2.0
    repeat = 3 if quick else 5
    report = Report("kinematics", settings={
        "step": f"dt = {dt} s, {int(t_end / dt)} steps per run, median of {repeat} runs",
        "formulation": "natural coordinates, global (all coordinates in one Newton system)",
        "anchors": "paper's Stewart kinematic iteration 26.5 us (4-core i5, MKL); hand-written "
                   "compiled Gough-Stewart FK 7 us, NumPy 340 us (this kind of machine)",
        "targets": "FK <= 4 us per solve; paper-Stewart full kinematic step <= 10 us (1 core)"})
    for name in MODELS:
        model = get(name).compile()
        row = {"model": name}
        for solver in ("sparse", "dense"):
            for label, opts in (("tol 1e-10", {}), ("1 iteration", {"fixed_iterations": True,
                                                                   "max_iter": 1})):
                kin = Kinematics(model, solver=solver, **opts)
                us, summary = _median_step_us(kin, t_end, dt, repeat)
                row[f"{solver}, {label} (us)"] = us
                row["n_q"] = summary["coordinates"]
                row.setdefault("Newton iterations per step", summary["iterations"]["mean"])
        ref_us = _median_reference_us(Kinematics(model), 10 if quick else 40, dt, repeat)
        row["NumPy reference (us)"] = ref_us
        row["reference / sparse"] = ref_us / row["sparse, tol 1e-10 (us)"]
        report.add_row("kinematic step (position + velocity + acceleration)", **row)
    # forward kinematics along a trajectory
    n = 2000 if quick else 20000
    ts = np.linspace(0.0, 2.0, n)
    P = np.array(GS_HOME) + 0.05 * np.stack([np.sin(ts), np.cos(2 * ts) - 1, np.sin(3 * ts)], 1)
    Rs = [euler_to_matrix([0.1 * np.sin(t), 0.05 * np.sin(2 * t), 0.02 * np.cos(t)]) for t in ts]
    fk = PlatformForwardKinematics(GS_BASE, GS_PLATFORM, P[0], Rs[0])
    lengths = np.array([fk.leg_lengths(P[i], Rs[i]) for i in range(n)])
    fk.track(lengths[:10])
    samples = []
    for _ in range(repeat):
        fk = PlatformForwardKinematics(GS_BASE, GS_PLATFORM, P[0], Rs[0])
        t0 = time.perf_counter()
        out_p, _, iters = fk.track(lengths)
        samples.append((time.perf_counter() - t0) / n * 1e6)
    compiled_us = float(np.median(samples))
    err = float(np.abs(out_p - P).max())
    base, plat = np.array(GS_BASE), np.array(GS_PLATFORM)
    m = min(n, 500)
    samples = []
    for _ in range(repeat):
        p, R = P[0].copy(), Rs[0].copy()
        t0 = time.perf_counter()
        for i in range(m):
            p, R = numpy_forward_kinematics(base, plat, lengths[i], p, R)
        samples.append((time.perf_counter() - t0) / m * 1e6)
    numpy_us = float(np.median(samples))
    fk_cold = PlatformForwardKinematics(GS_BASE, GS_PLATFORM, GS_HOME)
    t0 = time.perf_counter()
    for i in range(0, n, max(1, n // 200)):
        fk_cold.p[:], fk_cold.R[:] = GS_HOME, np.eye(3)
        fk_cold.solve(lengths[i])
    cold_us = (time.perf_counter() - t0) / len(range(0, n, max(1, n // 200))) * 1e6
    report.add_row("Gough-Stewart forward kinematics", method="compiled, tracking",
                   us_per_solve=compiled_us, mean_iterations=float(iters.mean()),
                   max_position_error_m=err)
    report.add_row("Gough-Stewart forward kinematics", method="compiled, from home pose",
                   us_per_solve=cold_us)
    report.add_row("Gough-Stewart forward kinematics", method="NumPy, tracking (same Newton)",
                   us_per_solve=numpy_us, ratio_to_compiled=numpy_us / compiled_us)
    report.notes.append("Ratios are measured in this run; the anchors quoted in the settings "
                        "were measured elsewhere and are for orientation only.")
    return report
