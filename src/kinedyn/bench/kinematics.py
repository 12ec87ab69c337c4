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


def _median_step_us(kin: Kinematics, t_end: float, dt: float,
                    repeat: int) -> tuple[float, float, dict]:
    """Median wall time and median CPU time of this thread per step (the CPU time does not
    count the time the shared machine gives to other processes)."""
    kin.simulate(min(t_end, 10 * dt), dt)  # compile and warm up
    wall, cpu = [], []
    res = None
    for _ in range(repeat):
        res = kin.simulate(t_end, dt)
        cpu.append(res.summary["cpu_us_per_step"])
        wall.append(res.summary["us_per_step"])
    return float(np.median(wall)), float(np.median(cpu)), res.summary


def _median_reference_us(kin: Kinematics, steps: int, dt: float,
                         repeat: int) -> tuple[float, float]:
    """The same tracking run with the NumPy reference kernels
    (:mod:`kinedyn.kinematics.reference`): median wall and CPU time per step."""
    times = dt * np.arange(steps)
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.thread_time()
        reference_simulate(kin.f, kin.rows, kin.q_assembled, times, kin.tol, kin.max_iter)
        wall.append((time.perf_counter() - t0) / steps * 1e6)
        cpu.append((time.thread_time() - c0) / steps * 1e6)
    return float(np.median(wall)), float(np.median(cpu))


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
                us, cpu_us, summary = _median_step_us(kin, t_end, dt, repeat)
                row[f"{solver}, {label} (us)"] = us
                if not opts:
                    row[f"{solver}, {label} (us CPU)"] = cpu_us
                row["n_q"] = summary["coordinates"]
                row.setdefault("Newton iterations per step", summary["iterations"]["mean"])
        ref_us, ref_cpu = _median_reference_us(Kinematics(model), 10 if quick else 40, dt, repeat)
        row["NumPy reference (us)"] = ref_us
        row["NumPy reference (us CPU)"] = ref_cpu
        row["reference / sparse (CPU)"] = ref_cpu / row["sparse, tol 1e-10 (us CPU)"]
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
    cpu = []
    for _ in range(repeat):
        fk = PlatformForwardKinematics(GS_BASE, GS_PLATFORM, P[0], Rs[0])
        t0, c0 = time.perf_counter(), time.thread_time()
        out_p, _, iters = fk.track(lengths)
        samples.append((time.perf_counter() - t0) / n * 1e6)
        cpu.append((time.thread_time() - c0) / n * 1e6)
    compiled_us, compiled_cpu = float(np.median(samples)), float(np.median(cpu))
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
                   us_per_solve=compiled_us, us_CPU=compiled_cpu,
                   mean_iterations=float(iters.mean()),
                   max_position_error_m=err)
    report.add_row("Gough-Stewart forward kinematics", method="compiled, from home pose",
                   us_per_solve=cold_us)
    report.add_row("Gough-Stewart forward kinematics", method="NumPy, tracking (same Newton)",
                   us_per_solve=numpy_us, ratio_to_compiled=numpy_us / compiled_us)
    report.notes.append("Ratios are measured in this run; the anchors quoted in the settings "
                        "were measured elsewhere and are for orientation only.")
    report.notes.append("(us) columns are wall time, (us CPU) the CPU time of the benchmark "
                        "thread (a shared machine inflates wall times).")
    return report
