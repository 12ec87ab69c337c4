"""``kinedyn bench hdca``: µs per state-derivative evaluation of the N-link cart-pendulum.

Measured side by side in one run (medians of repeats; each sample is a compiled loop of many
evaluations at the initial state, so no Python is timed):

* HDCA serial and HDCA on a team of ``THREADS`` = 2 threads (the assembly tree split by
  subtrees, :mod:`kinedyn.dynamics.hdca_team`; one call per worker for all the evaluations of a
  sample), their samples alternated so both see the same machine load: wall time and the
  process CPU time (all threads, spinning included) per evaluation, the wall speed-up
  ``serial / threads`` and the 1-minute load average of that row;
* HDCA in float32 (serial);
* the dense O(N^3) solution of the same chain: CRBA mass matrix, RNEA bias, LAPACK solve
  (:mod:`kinedyn.formulations.hamiltonian.dense`), up to ``DENSE_MAX`` links;
* log-log slopes of each column, fitted for N >= 64;
* float32 against float64 over a simulated run (RK4): energy drift, loop closure, joint angles.

Anchors (measured elsewhere on this kind of machine, for orientation only): Pinocchio's ABA
94 us at N = 256 (slope 1.0); MuJoCo 860 us at N = 256 (dense, slope -> 3), refuses N = 1024.
Target: HDCA <= 94 us at N = 256, slope <= 1.05 up to N = 4096.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numba as nb
import numpy as np

from ..dynamics.hdca import HDCA
from ..dynamics.hdca_team import ThreadedHDCA
from ..formulations.hamiltonian import Hamiltonian, hdca_derivative
from ..formulations.hamiltonian.dense import make_dense, mass_and_bias
from ..models import get
from .common import Report, per_call_us

THREADS = 2
DENSE_MAX = 1024


@nb.njit(cache=True, nogil=True)
def _hdca_loop(data, work, q, p, qd, pd, n):
    st = 0
    for _ in range(n):
        st |= hdca_derivative(data, work, q, p, qd, pd)
    return st


@nb.njit(cache=True, nogil=True)
def _dense_loop(data, dw, q, qd, n):
    out = np.zeros(q.shape[0])
    for _ in range(n):
        mass_and_bias(data, dw.chain, dw, q, qd)
        out += np.linalg.solve(dw.M, -dw.b)
    return out


def _paired_us(fns, evals: int, repeat: int) -> list[tuple[float, float]]:
    """(wall, CPU) medians in us per evaluation of calls ``fn()`` that each make ``evals``
    evaluations; the samples of the functions alternate. CPU is the calling thread's CPU
    time, or the largest of a team's workers' (``fn`` returns their times) - the busiest
    thread, what the wall time would be with a free core per thread."""
    samples = [([], []) for _ in fns]
    for fn in fns:
        fn()  # warm-up
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            w0, c0 = time.perf_counter(), time.thread_time()
            cpu = fn()
            wall = time.perf_counter() - w0
            cpu = max(cpu) if isinstance(cpu, np.ndarray) else time.thread_time() - c0
            samples[k][0].append(wall / evals * 1e6)
            samples[k][1].append(cpu / evals * 1e6)
    return [(float(np.median(w)), float(np.median(c))) for w, c in samples]


def slope(rows, key, n_min=64) -> float | None:
    pts = [(r["N"], r[key]) for r in rows if r["N"] >= n_min and r.get(key)]
    if len(pts) < 2:
        return None
    x, y = np.log(np.array(pts, float)).T
    return float(np.polyfit(x, y, 1)[0])


def scaling_rows(sizes, repeat: int, log=print) -> list[dict]:
    rows = []
    for n in sizes:
        h = Hamiltonian(get(f"cart-pendulum-{n}").compile())
        rng = np.random.default_rng(n)
        q = h.q0 + 0.1 * rng.normal(size=h.n_j)
        p = rng.normal(size=h.n_j)
        evals = max(4, 50_000 // n)  # about 10-20 ms of work per sample
        row = {"N": n, "tree_depth": h.tree.depth}
        data, data32 = h.make_data(), h.make_data("float32")
        args = (data, h.make_work(data), q, p, np.zeros(h.n_j), np.zeros(h.n_j))
        args32 = (data32, h.make_work(data32), q.astype(np.float32), p.astype(np.float32),
                  np.zeros(h.n_j, np.float32), np.zeros(h.n_j, np.float32))
        team = ThreadedHDCA(data, h.make_work(data), THREADS)
        y, scratch = np.concatenate([q, p]), np.zeros((6, 2 * h.n_j))
        try:
            (sw, sc), (tw, tc) = _paired_us(
                [lambda: _hdca_loop(*args, evals),
                 lambda: (team.derivative(y, scratch, evals), team.cpu.copy())[1]],
                evals, repeat)
        finally:
            team.close()
        row.update(hdca_serial_us=sw, hdca_2threads_us=tw, speedup_2threads=sw / tw,
                   serial_cpu_us=sc, threads_cpu_max_us=tc, cpu_speedup=sc / tc)
        row["hdca_float32_us"] = _paired_us([lambda: _hdca_loop(*args32, evals)], evals,
                                            repeat)[0][0]
        if n <= DENSE_MAX:
            _, dw = make_dense(data, h.make_work(data))
            qd = h.state_derivative(q, p)[0]
            dense_evals = max(1, evals // 8)
            row["dense_us"] = per_call_us(lambda: _dense_loop(data, dw, q, qd, dense_evals),
                                           dense_evals, repeat)
            row["dense_over_hdca"] = row["dense_us"] / row["hdca_serial_us"]
        row["load_1min"] = os.getloadavg()[0]
        log(f"N = {n:5d}: serial {sw:9.1f} us, {THREADS} threads {tw:9.1f} us "
            f"(speed-up {sw / tw:4.2f}); CPU serial {sc:.1f} us, busiest thread {tc:.1f} us "
            f"({sc / tc:4.2f}), load {row['load_1min']:.1f}")
        rows.append(row)
    return rows


def run_rows(sizes, repeat: int, log=print) -> list[dict]:
    """Whole RK4 runs (one compiled call per worker for the run), us per step, serial vs
    threads, samples alternating; CPU as in :func:`_paired_us`."""
    rows = []
    for n in sizes:
        m = get(f"cart-pendulum-{n}").compile()
        serial, threads = HDCA(m), HDCA(m, parallel=True, threads=THREADS)
        steps = max(10, 20_000 // n)
        dt = 1e-3

        def timed(run):
            return run.simulate(steps * dt, dt, record_every=steps)

        (sw, sc), (tw, tc) = _paired_us([lambda: timed(serial),
                                         lambda: (timed(threads), threads._team.cpu.copy())[1]],
                                        steps, repeat)
        threads._team.close()
        row = {"N": n, "steps": steps, "serial_us_per_step": sw, "threads_us_per_step": tw,
               "speedup": sw / tw, "serial_cpu_us": sc, "threads_cpu_max_us": tc,
               "cpu_speedup": sc / tc, "load_1min": os.getloadavg()[0]}
        log(f"RK4 run, N = {n:5d}: serial {sw:9.1f} us/step, {THREADS} threads {tw:9.1f} "
            f"us/step (speed-up {sw / tw:4.2f}; CPU {sc / tc:4.2f}), load {row['load_1min']:.1f}")
        rows.append(row)
    return rows


def precision_rows(t_end: float) -> list[dict]:
    rows = []
    for name in ("double-pendulum", "four-bar-hdca", "cart-pendulum-64"):
        m = get(name).compile()
        r64 = HDCA(m).simulate(t_end, 1e-3, record_every=10)
        r32 = HDCA(m, precision="float32").simulate(t_end, 1e-3, record_every=10)
        row = {"model": name, "t_end_s": t_end,
               "energy_drift_f64_J": r64.summary["energy"]["max_drift"],
               "energy_drift_f32_J": r32.summary["energy"]["max_drift"],
               "max_abs_q32_minus_q64": float(np.abs(r32.q - r64.q).max())}
        if r64.h.closed:
            row["loop_closure_f64_m"] = r64.summary["max_loop_closure"]["position"]
            row["loop_closure_f32_m"] = r32.summary["max_loop_closure"]["position"]
            row["angle_closure_f32_rad"] = r32.summary["max_loop_closure"]["angle"]
        rows.append(row)
    return rows


def run(quick: bool = False, out_dir: Path | None = None) -> Report:
    sizes = [4, 16, 64, 256, 1024] if quick else [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048,
                                                   4096]
    repeat = 3 if quick else 7
    report = Report("hdca", settings={
        "model": "cart-pendulum-N (cart 0.8 kg, links 1 m 0.4 kg), random state near q0",
        "timed": "one state-derivative evaluation (q, p) -> (qd, pd), compiled loop, median "
                 f"of {repeat} samples",
        "parallel": f"team of {THREADS} threads (caller + pool), one subtree of the assembly "
                    "tree each, 5 barriers per evaluation; serial and threaded samples "
                    "alternate; wall time and thread CPU time (serial thread; busiest team "
                    "thread) per evaluation",
        "dense": f"CRBA + RNEA + LAPACK solve, N <= {DENSE_MAX}",
        "anchors": "Pinocchio ABA 94 us at N=256 (slope 1.0); MuJoCo 860 us at N=256 (dense); "
                   "target HDCA <= 94 us at N=256, slope <= 1.05 to N=4096"})
    rows = scaling_rows(sizes, repeat)
    for r in rows:
        report.add_row("time per evaluation vs N", **r)
    for key in ("hdca_serial_us", "hdca_2threads_us", "serial_cpu_us", "threads_cpu_max_us",
                "hdca_float32_us", "dense_us"):
        s = slope(rows, key)
        if s is not None:
            report.add_row("log-log slopes (N >= 64)", column=key, slope=s)
    for r in run_rows([256, 1024] if quick else [64, 256, 1024, 4096], repeat):
        report.add_row(f"whole RK4 runs, serial vs {THREADS} threads (us per step)", **r)
    for r in precision_rows(1.0 if quick else 5.0):
        report.add_row("float32 vs float64 (RK4, dt = 1 ms)", **r)
    if out_dir is not None:
        from ..viz.hdca import scaling_plot
        path = scaling_plot(rows, {"hdca_serial_us": "HDCA serial",
                                   "hdca_2threads_us": "HDCA 2 threads",
                                   "hdca_float32_us": "HDCA float32",
                                   "dense_us": "dense O(N^3)"},
                            Path(out_dir) / "hdca_scaling.png",
                            "cart-pendulum-N: state-derivative evaluation")
        report.notes.append(f"log-log plot: {path}")
    report.notes.append("Threaded timings include waiting for a free core: with other users' "
                        "load (load_1min per row) a worker descheduled behind them stalls the "
                        "other at the next barrier; a wall-time speed-up needs an idle second "
                        "core. CPU columns: thread CPU time of the serial thread and of the "
                        "busiest team thread (waiting at barriers included, descheduled time "
                        "not). Ratios are from this run only.")
    return report
