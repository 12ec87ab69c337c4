"""``kinedyn bench groups``: Group Equations vs the global formulation (paper, s. 5, Tables 2-5).

Measured side by side in one run, round by round (every case once per round), medians of the
rounds; ratios are medians of the per-round ratios (:func:`.common.paired_ratio`):

* **stewart** - the paper's Stewart platform (102 coordinates, groups 12 + 6 x 15): µs per
  step for global-dense (the paper's GMKL), global-sparse (GMA27), groups-dense and
  groups-sparse (GEOMP+MKL / GEOMP+MA27) with 1 and 2 outer threads, in the paper's setting
  (one Newton iteration per step, dt = 0.01; the paper: 26.5 µs per iteration on a 4-core i5)
  and with fully converged steps (tolerance 1e-10); and global-sparse with all the generated
  code (the default: the constraints' and the sparse LU's) against the loops of either and of
  both;
* **scalable** - the ``scissor-platform-<legs>x<stages>`` family (leg groups of
  18 + 12 stages coordinates, close to the paper's nSG-HS): the same four variants, each with
  its best thread combination (listed), speed-ups relative to global-sparse (the paper's
  Figure 2) and the dense/sparse ratio of the groups (the crossover size); and the 2x1
  workers' CPU time side by side against one after the other (what the machine's second core
  delivers to this work);
* **crossover** - factorisation + solution of one leg group's block alone, dense LAPACK LU vs
  static-pivot sparse LU, for growing group sizes: the size where sparse starts to win (the
  paper: between 60 and 120 coordinates per group);
* **threads** - every (outer, inner) combination for one size (the paper's Figure 3).

Also available as ``kinedyn bench group-equations`` (the issue's name).

Global-dense is skipped above ``DENSE_LIMIT`` coordinates (an LU of that size per iteration
takes seconds). Steps per case are scaled so that each case takes a fraction of a second; µs
per step do not depend on the number of steps (the paper's 20 000 outer iterations), which is
printed as the equivalent total.
"""
from __future__ import annotations

import itertools
import os
import warnings
from pathlib import Path
from typing import NamedTuple

import numba as nb
import numpy as np

from .._unmanaged import unmanaged
from ..formulations import protocol
from ..kinematics import Kinematics
from ..kinematics.analysis import blas_threads
from ..formulations.natural import codegen as natural_codegen
from ..linalg import lu_codegen
from ..models import get
from .common import Report, configured, interleaved, paired_ratio, time_call

DT = 0.01
PAPER_STEPS = 20_000
DENSE_LIMIT = 700
VARIANTS = (("global", "dense"), ("global", "sparse"), ("groups", "dense"), ("groups", "sparse"))


def _threads(strategy: str, solver: str, cores: int):
    """Thread combinations (outer, inner) worth trying for a variant."""
    outer = (1, 2) if strategy == "groups" and cores > 1 else (1,)
    inner = (1, 2) if solver == "dense" and cores > 1 else (1,)
    return list(itertools.product(outer, inner))


class Timing(NamedTuple):
    """One case of :func:`_timed`: medians per step (wall µs, CPU µs of the calling thread, CPU
    µs of all threads) and the wall µs of each round (for :func:`.common.paired_ratio`)."""
    us: float
    cpu: float
    cpu_all: float
    rounds: list


def _sparse_last(cases):
    """The cases with the dense ones first: the sparse cases, whose ratios the tables report
    (speed-ups relative to global-sparse), then run next to each other in every round - a
    round's dense runs of a large size take tens of seconds, over which the host's speed
    drifts."""
    return sorted(cases, key=lambda case: case[1] == "sparse")


def _timed(model, cases, steps: int, repeat: int) -> dict:
    """{case: :class:`Timing`}, in the order of ``cases``, over ``repeat`` rounds that run
    every case once (:func:`.common.interleaved`; sparse cases next to each other,
    :func:`_sparse_last`), for cases ``(strategy, solver, threads, fixed)`` of ``model``. The
    calling thread's CPU time is, on a loaded machine, the part of the wall time the run
    really computed (for one outer thread, the whole run); all threads' includes both workers
    with two outer threads."""
    run_order = _sparse_last(cases)
    calls = [configured(kin, lambda kin=kin: kin.simulate(steps * DT, DT).summary,
                        threads=tuple(th))
             for kin, th in ((_kinematics(model, st, so, th[0], fx), th)
                             for st, so, th, fx in run_order)]
    out = {}
    for case, runs in zip(run_order, interleaved(calls, repeat)):
        med = [float(np.median([r[key] for r in runs]))
               for key in ("us_per_step", "cpu_us_per_step", "process_cpu_us_per_step")]
        out[case] = Timing(*med, [r["us_per_step"] for r in runs])
    return {case: out[case] for case in cases}


_BUILT: dict = {}


def _kinematics(model, strategy, solver, outer, fixed) -> Kinematics:
    """One analysis per (model, strategy, solver, outer threads, mode), reused across cases."""
    key = (model.name, strategy, solver, outer, fixed)
    if key not in _BUILT:
        kw = dict(fixed_iterations=True, max_iter=1) if fixed else dict(tol=1e-10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _BUILT[key] = Kinematics(model, solver=solver, strategy=strategy,
                                     threads=(outer, 1), **kw)
    return _BUILT[key]


def _release():
    for kin in _BUILT.values():
        if kin.engine is not None:
            kin.engine.close()
    _BUILT.clear()


def _together_vs_one_by_one(model, steps: int, repeat: int) -> dict:
    """Columns of the scalable table: the groups-sparse 2x1 paper step's busiest worker, in CPU
    µs per step, with the workers running at the same time (as always) and, in the same
    rounds, one after the other on the calling thread (``ThreadedRunner.one_by_one``), and
    the paired ratio. The work is the same either way, so a ratio above 1 is what running side
    by side costs on this machine: cores that slow each other down (shared caches, a host
    that places both virtual CPUs on one physical core), or lines both workers write. Empty
    where the workers meet at barriers (they cannot run one by one) or with one core."""
    kin = _kinematics(model, "groups", "sparse", 2, True)
    runner = kin.engine.runner
    if runner is None or not runner.replicate:
        return {}

    def busiest():
        return max(kin.simulate(steps * DT, DT).summary["worker_cpu_us_per_step"])
    together, alone = interleaved([configured(runner, busiest, one_by_one=flag)
                                   for flag in (False, True)], repeat)
    runner.one_by_one = False
    return {"groups-sparse 2x1 busiest worker cpu µs (together)": float(np.median(together)),
            "groups-sparse 2x1 busiest worker cpu µs (one by one)": float(np.median(alone)),
            "groups-sparse 2x1 together / one by one": paired_ratio(together, alone)}


def _steps_for(n_q: int, quick: bool) -> int:
    budget = 5e4 if quick else 2e6  # coordinates x steps per case
    return int(max(20, min(2000, budget / n_q)))


@nb.njit(cache=True, nogil=True)
def _factor_solve(solver_, swork_, values, rhs, n):
    """``n`` factorisations + solutions of one block (the linear algebra of a Newton step)."""
    solver, swork = unmanaged(solver_), unmanaged(swork_)
    st = 0
    for _ in range(n):
        st = max(st, protocol.factorize(solver, swork, values))
        for i in range(rhs.shape[0]):
            rhs[i] = 1.0
        protocol.solve(solver, swork, rhs)
    return st


def _generated_vs_loops(rep: Report, model, steps: int, repeat: int) -> None:
    """Global-sparse paper step with all generated straight-line code (the default: the
    constraints', :mod:`kinedyn.formulations.natural.codegen`, and the sparse LU's,
    :mod:`kinedyn.linalg.lu_codegen`), with the loops for one of them, and with the loops for
    both, alternated run by run."""
    variants = {"generated": (), "constraint loops": (natural_codegen.SWITCH,),
                "LU loops": (lu_codegen.SWITCH,),
                "all loops": (natural_codegen.SWITCH, lu_codegen.SWITCH)}
    kins = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for switches in variants.values():
            os.environ.update({name: "0" for name in switches})
            try:
                kins.append(Kinematics(model, solver="sparse", fixed_iterations=True,
                                       max_iter=1))
            finally:
                for name in switches:
                    del os.environ[name]
    with blas_threads(1):
        runs = interleaved([lambda kin=kin: kin.simulate(steps * DT, DT).summary
                            for kin in kins], repeat)
    us = [[r["us_per_step"] for r in rs] for rs in runs]
    for name, times in zip(variants, us):
        rep.add_row("stewart-paper: generated code vs loops (global sparse, 1 Newton iteration, "
                    "1 thread)", code=name, us_per_step=float(np.median(times)),
                    over_generated=paired_ratio(times, us[0]))


def _crossover(rep: Report, quick: bool, repeat: int) -> None:
    """Dense vs sparse LU of the leg group's block, by group size (one thread each)."""
    ratios = []
    for stages in ((0, 1, 4, 9) if quick else (0, 1, 2, 4, 6, 9, 14, 19, 29)):
        model = get(f"scissor-platform-6x{stages}").compile()
        us = {}
        for solver in ("dense", "sparse"):
            kin = _kinematics(model, "groups", solver, 1, True)
            kin.simulate(2 * DT, DT)  # the shared Jacobian values at a real configuration
            e = kin.engine
            g = int(np.argmax(e.structure.sizes()))
            rhs = np.ones(e.structure.sizes()[g])
            loops = 50
            with blas_threads(1):
                sec = time_call(lambda: _factor_solve(e.solvers[g], e.sworks[g], e.values, rhs,
                                                      loops), repeat=repeat, min_time=0.02)
            us[solver] = sec["median"] / loops * 1e6
        size = len(rhs)
        ratios.append((size, us["dense"] / us["sparse"]))
        rep.add_row("crossover: one leg group's LU (factorise + solve), dense vs sparse",
                    group_size=size, dense_us=us["dense"], sparse_us=us["sparse"],
                    dense_over_sparse=ratios[-1][1])
        _release()
    wins = [n for n, r in ratios if r > 1.0]
    if not wins:
        text = f"dense LU wins up to the largest group tried ({ratios[-1][0]} coordinates)"
    elif wins[0] == ratios[0][0]:
        text = (f"sparse LU wins from the smallest group tried ({ratios[0][0]} coordinates): "
                "the crossover lies below it")
    else:
        below = max(n for n, _ in ratios if n < wins[0])
        text = f"crossover between {below} and {wins[0]} coordinates per group"
    rep.settings["dense/sparse crossover (this machine)"] = text
    rep.notes.append(f"dense/sparse crossover per group: {text} (the paper: between 60 and 120)")


def run(quick: bool = False, out_dir: Path | None = None) -> Report:
    cores = os.cpu_count() or 1
    repeat = 3 if quick else 5
    rep = Report("groups", settings={
        "dt": DT, "paper iterations": PAPER_STEPS,
        "repeat": f"{repeat} runs per case, median", "cores": cores,
        "variants": "global-dense (GMKL), global-sparse (GMA27), groups-dense, groups-sparse; "
                    "threads = (outer groups in parallel, inner BLAS)"})
    # ---- the paper's Stewart platform ------------------------------------------------------
    m = get("stewart-paper").compile()
    steps = 2000  # 10-20 ms per run: shorter runs measured the host more than the step
    for fixed, label in ((True, "1 Newton iteration per step (paper)"),
                         (False, "converged to 1e-10")):
        timed = _timed(m, [(strategy, solver, th, fixed) for strategy, solver in VARIANTS
                           for th in _threads(strategy, solver, cores)], steps, repeat)
        ref = timed["global", "sparse", (1, 1), fixed]
        for (strategy, solver, th, _), t in timed.items():
            rep.add_row("stewart-paper: µs per step", mode=label, strategy=strategy,
                        solver=solver, threads=f"{th[0]}x{th[1]}", us_per_step=t.us,
                        seconds_for_20000=t.us * PAPER_STEPS * 1e-6,
                        vs_global_sparse=paired_ratio(ref.rounds, t.rounds),
                        cpu_us_calling_thread=t.cpu, cpu_us_all_threads=t.cpu_all,
                        cpu_vs_global_sparse=ref.cpu / t.cpu if th == (1, 1) else "")
    _generated_vs_loops(rep, m, steps, repeat)
    rep.notes.append("paper (s. 5): Stewart platform 0.53 s for 20 000 iterations = 26.5 µs per "
                     "iteration on a 4-core Intel i5 with MKL")
    rep.notes.append("cpu_us_calling_thread: CPU time of the thread that runs the steps (with one "
                     "thread, all of the run's work): on a machine shared with other jobs it "
                     "leaves out the time the run waited for a core, which inflates the wall "
                     "times; cpu_vs_global_sparse compares the 1x1 cases on it")
    # ---- the scalable family ------------------------------------------------------------------
    legs_list = (6,) if quick else (6, 16, 22)
    stages_list = (1, 9) if quick else (1, 4, 9, 19, 29)
    for legs, stages in itertools.product(legs_list, stages_list):
        _release()  # keep only the current size's analyses (the last one serves the threads table)
        model = get(f"scissor-platform-{legs}x{stages}").compile()
        probe = _kinematics(model, "groups", "sparse", 1, True)
        n_q, sizes = probe.f.n_q, probe.engine.structure.sizes()
        row = {"legs": legs, "stages": stages, "coordinates": n_q, "terminal": sizes[0],
               "leg_group": max(sizes[1:])}
        best = {}
        variants = [v for v in VARIANTS if v != ("global", "dense") or n_q <= DENSE_LIMIT]
        timed = _timed(model, [(strategy, solver, th, True) for strategy, solver in variants
                               for th in _threads(strategy, solver, cores)],
                       _steps_for(n_q, quick), repeat)
        for strategy, solver in variants:
            mine = {th: t for (st, so, th, _), t in timed.items() if (st, so) == (strategy, solver)}
            th = min(mine, key=lambda c: mine[c].us)    # the fastest thread combination
            best[strategy, solver] = mine[th]
            row[f"{strategy}-{solver} µs"] = mine[th].us
            row[f"{strategy}-{solver} threads"] = f"{th[0]}x{th[1]}"
            if solver == "sparse":  # every thread combination, with CPU (loaded machine)
                for c in sorted(mine):
                    tag = f"{strategy}-sparse {c[0]}x{c[1]}"
                    row[f"{tag} µs"], row[f"{tag} cpu µs (stepping thread)"], \
                        row[f"{tag} cpu µs (all threads)"] = mine[c][:3]
        base = best["global", "sparse"]
        for key, t in best.items():  # per round: the cases of a round ran side by side
            row[f"speed-up {key[0]}-{key[1]}"] = paired_ratio(base.rounds, t.rounds)
        row["groups dense/sparse"] = paired_ratio(best["groups", "dense"].rounds,
                                                  best["groups", "sparse"].rounds)
        if cores > 1:
            row.update(_together_vs_one_by_one(model, _steps_for(n_q, quick), repeat))
        rep.add_row("scalable: µs per step, 1 Newton iteration, best threads", **row)
        combos_size = (model, n_q, legs, stages)
    # ---- thread combinations (Figure 3) -------------------------------------------------------
    model, n_q, legs, stages = combos_size
    combos = itertools.product(("dense", "sparse"),
                               itertools.product((1, 2) if cores > 1 else (1,), repeat=2))
    timed = _timed(model, [("groups", solver, th, True) for solver, th in combos],
                   _steps_for(n_q, quick), repeat)
    for (_, solver, th, _), t in timed.items():
        rep.add_row(f"threads: groups on scissor-platform-{legs}x{stages} ({n_q} coordinates)",
                    solver=solver, outer=th[0], inner=th[1], us_per_step=t.us)
    _release()
    # ---- dense / sparse crossover per group -------------------------------------------------------
    _crossover(rep, quick, repeat)
    rep.notes.append("busiest worker cpu µs (together / one by one): the groups-sparse 2x1 "
                     "workers' largest CPU time per step when they run at the same time and when "
                     "the calling thread runs them one after the other (same work, same rounds); "
                     "together / one by one > 1: the cores slowed each other down, which no "
                     "division of the work can avoid")
    rep.notes.append("speed-up = global-sparse time / variant time (paper Figure 2), the median "
                     "over rounds of the two cases' ratio in the same round (vs_global_sparse "
                     "too; the µs columns are medians of each case alone); groups dense/sparse "
                     "> 1 means sparse group matrices win (the paper's crossover lies between 60 "
                     "and 120 coordinates per group)")
    return rep
