"""``kinedyn bench peers``: kinedyn against the peers a user would otherwise pick - MuJoCo,
Pinocchio, Exudyn - on the same mechanisms, timed side by side in one run and each engine's
motion checked against a reference.

For each mechanism (:mod:`kinedyn.bench._peers`: double pendulum, the free four-bar, the
N-link cart-pendulum; in the full run also the Gough-Stewart 6-UPS) and integrator, at dt =
1e-3 from the same initial state:

* every engine's whole run is timed in the same rounds (:func:`.common.interleaved`): kinedyn's
  compiled runs (each of its methods for the mechanism, e.g. projection and embedded for the
  loops) and each peer's own stepping loop (MuJoCo's ``rollout`` in C, Exudyn's solver in C++,
  Pinocchio's ABA called from a Python loop); ``x_kinedyn`` is the median over rounds of the
  engine's time over the fastest kinedyn method's in the same round;
* every engine's observables are compared with kinedyn's reference run of the same mechanism
  (RK4 at dt / 10: natural coordinates projected on the constraints, HDCA in joint coordinates
  for the chain): the largest difference over the run, so a soft loop or a first-order
  integrator shows as what it costs in accuracy;
* for the loops, each engine's closure gap (kinedyn: the largest constraint residual).

The peers are optional (``pip install -e ".[peers]"``); an engine that is not importable is
listed as missing and skipped, one that fails gets a row with its error. Each adapter states
its set-up in the table.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from ..dynamics import Dynamics
from ..errors import AccuracyWarning
from ..formulations.hamiltonian import Hamiltonian
from ..models import get
from ._peers import exudyn_models, mujoco_models, pinocchio_models
from .common import Report, interleaved, paired_ratio, per_call_us
from .hdca import _hdca_loop

DT = 1e-3
SAMPLE_EVERY = 10
PEERS = {"MuJoCo": mujoco_models, "Pinocchio": pinocchio_models, "Exudyn": exudyn_models}


#: kinedyn's integrator for each of the benchmark's integrator names; "implicit" is the
#: index-3 formulation with HHT-alpha (kinedyn's implicit method, Exudyn's and MuJoCo's
#: counterparts are generalized-alpha and implicitfast)
KINEDYN_INTEGRATORS = {"semi-implicit-euler": "semi-implicit-euler", "rk4": "rk4",
                       "implicit": "hht"}


@dataclass(frozen=True)
class Mechanism:
    """A mechanism of :mod:`._peers`: kinedyn's model, the methods timed with explicit
    integrators (the implicit one is ``index3``), the method of the reference run, each
    observable as (kinedyn channel, offset): the peers' convention is the channel plus the
    offset; ``adapter``: the name of the peers' function for it, called with ``peer_args``
    first; ``closed``: it has kinematic loops (a closure gap to report)."""
    name: str
    model: str
    methods: tuple
    reference: str
    observables: dict
    adapter: str
    peer_args: tuple = ()
    closed: bool = False

    def kinedyn(self, model, integrator: str) -> list[Dynamics]:
        """kinedyn's dynamics for ``integrator``: one per method, or none where the methods
        have no such integrator (HDCA is explicit)."""
        if integrator != "implicit":
            return [Dynamics(model, method=m, integrator=KINEDYN_INTEGRATORS[integrator])
                    for m in self.methods]
        if "hdca" in self.methods:
            return []
        return [Dynamics(model, method="index3")]


def mechanisms(chain_sizes, spatial: bool = False) -> list[Mechanism]:
    """The benchmark's mechanisms; ``spatial``: also the Gough-Stewart platform (its embedded
    dynamics are generated symbolically the first time: about a minute)."""
    half_pi = math.pi / 2
    out = [Mechanism("double-pendulum", "double-pendulum", ("augmented",), "projection",
                     {"theta1": ("body.rod1.angle", half_pi),
                      "theta2": ("body.rod2.angle", half_pi)}, "double_pendulum"),
           Mechanism("four-bar", "four-bar", ("projection", "embedded"), "projection",
                     {"crank": ("body.crank.angle", 0.0)}, "four_bar", closed=True)]
    if spatial:
        out.append(Mechanism("gough-stewart", "gough-stewart", ("projection", "embedded"),
                             "projection", {c: (f"body.platform.{c}", 0.0) for c in "xyz"},
                             "gough_stewart", closed=True))
    out += [Mechanism(f"cart-pendulum-{n}", f"cart-pendulum-{n}", ("hdca",), "hdca",
                      {"x": ("body.cart.x", 0.0), "angle": ("body.link1.angle", 0.0)},
                      "cart_pendulum", (n,))
            for n in chain_sizes]
    return out


def _kinedyn_values(res, mech: Mechanism) -> dict:
    return {k: res.channel(ch) + off for k, (ch, off) in mech.observables.items()}


def _deviation(t, values: dict, ref_t, ref: dict) -> float:
    """Largest |engine - reference| over the observables at the engine's sample times (the
    reference is recorded at the same instants; rad or m)."""
    idx = np.searchsorted(ref_t, t - 1e-9)
    if np.any(idx >= len(ref_t)) or np.any(np.abs(ref_t[np.minimum(idx, len(ref_t) - 1)] - t)
                                           > 1e-9):
        raise ValueError("the reference run is not sampled at the engine's sample times")
    return float(max(np.max(np.abs(values[k] - ref[k][idx])) for k in ref))


def compare(mech: Mechanism, integrator: str, t_end: float, repeat: int, peers: dict,
            log=print, notes: dict | None = None) -> list[dict]:
    """Rows of one mechanism and integrator: kinedyn's methods first, then each peer that has
    the mechanism and the integrator; times paired round by round (``x_kinedyn``: against the
    fastest kinedyn method of the same round), deviations from the reference. No rows where
    kinedyn has no method for the integrator. ``notes``: a dict that receives each peer's notes
    on the mechanism (:attr:`._peers.PeerRun.notes`), keyed ``"<peer>, <mechanism>"``."""
    model = get(mech.model).compile()
    dyns = mech.kinedyn(model, integrator)
    if not dyns:
        return []
    ref = Dynamics(model, method=mech.reference, integrator="rk4").simulate(
        t_end, DT / 10, record_every=10 * SAMPLE_EVERY)
    ref_values = _kinedyn_values(ref, mech)
    runs, calls = [], []

    def kinedyn_run(k, dyn):
        with warnings.catch_warnings():  # its row reports the gap and the deviation itself
            warnings.simplefilter("ignore", AccuracyWarning)
            res = dyn.simulate(t_end, DT, record_every=SAMPLE_EVERY)
        runs[k] = ("kinedyn", f"{res.summary['method']}, {res.summary['integrator']}", res.time,
                   _kinedyn_values(res, mech), res.summary["max_residual"]["position"])
        return res.summary["us_per_step"]

    def peer_run(k, peer, fn):
        r = fn(*mech.peer_args, t_end, DT, integrator, repeat=1, sample_every=SAMPLE_EVERY)
        if notes is not None and r.notes:
            notes[f"{peer}, {mech.name}"] = r.notes
        runs[k] = (f"{peer} {r.version}", r.setup, r.t, r.values,
                   float(np.max(r.values["gap"])) if "gap" in r.values else None)
        return r.us_per_step

    for dyn in dyns:
        calls.append(partial(kinedyn_run, len(calls), dyn))
    n_kinedyn = len(calls)
    failed = []  # a peer that fails its first run gets a row saying why, and no times
    for peer, module in peers.items():
        fn = getattr(module, mech.adapter, None)
        if fn is None or integrator not in module.INTEGRATORS:
            continue
        try:
            fn(*mech.peer_args, min(t_end, 10 * DT), DT, integrator, repeat=1)
        except Exception as exc:  # noqa: BLE001 - another engine's error, reported as such
            failed.append({"mechanism": mech.name, "integrator": integrator,
                           "engine": f"{peer} {module.version()}",
                           "setup": f"failed: {type(exc).__name__}: {exc}"})
            continue
        calls.append(partial(peer_run, len(calls), peer, fn))
    runs[:] = [None] * len(calls)
    times = interleaved(calls, repeat)
    best = np.min(np.array(times[:n_kinedyn]), axis=0)  # per round
    rows = []
    for (engine, setup, t, values, gap), k_times in zip(runs, times):
        rows.append({"mechanism": mech.name, "integrator": integrator, "engine": engine,
                     "setup": setup, "us_per_step": float(np.median(k_times)),
                     "x_kinedyn": paired_ratio(k_times, list(best)),
                     "max_deviation": _deviation(t, values, ref.time, ref_values),
                     "loop_gap": gap if mech.closed and gap is not None else ""})
        row = rows[-1]
        log(f"{row['mechanism']:18s} {row['integrator']:19s} {row['engine']:16s} "
            f"{setup.split(',')[0][:24]:24s} {row['us_per_step']:10.2f} us/step  "
            f"x{row['x_kinedyn']:6.2f}  deviation {row['max_deviation']:.2e}")
    for row in failed:
        log(f"{row['mechanism']:18s} {row['integrator']:19s} {row['engine']:16s} "
            f"{row['setup']}")
    return rows + failed


#: the peers' functions of one forward-dynamics evaluation of the cart-pendulum chain
EVALUATIONS = {"MuJoCo": "forward_us", "Pinocchio": "aba_us"}


def hdca_evaluation(n: int):
    """kinedyn's HDCA on the ``n``-link chain: a call that returns the µs of one
    state-derivative evaluation at the initial state (a compiled loop of evaluations, as
    ``bench hdca``)."""
    h = Hamiltonian(get(f"cart-pendulum-{n}").compile())
    data = h.make_data()
    z = np.zeros(h.n_j)
    args = (data, h.make_work(data), h.q0.copy(), z, z.copy(), z.copy())
    evals = max(4, 50_000 // n)
    return lambda: per_call_us(lambda: _hdca_loop(*args, evals), evals, 1)


def evaluations(sizes, repeat: int, peers: dict, log=print) -> list[dict]:
    """One forward-dynamics evaluation of the chain, per engine and size, in the same rounds:
    HDCA (O(N)) against Pinocchio's ABA (O(N)) and MuJoCo's ``mj_forward`` (its mass matrix
    factorised); ``x_kinedyn`` as in the whole runs. An engine that refuses a size says why."""
    rows = []
    for n in sizes:
        calls, names, refused = [hdca_evaluation(n)], ["kinedyn HDCA"], {}
        for peer, module in peers.items():
            fn = getattr(module, EVALUATIONS.get(peer, ""), None)
            if fn is None:
                continue
            try:
                fn(n, 1)
            except (ValueError, MemoryError) as exc:  # a model the peer cannot build
                refused[peer] = str(exc)
                continue
            calls.append(lambda fn=fn, n=n: fn(n, 1))
            names.append(peer)
        times = interleaved(calls, repeat)
        row = {"N": n, "kinedyn HDCA us": float(np.median(times[0]))}
        for k, name in enumerate(names[1:], start=1):
            row[f"{name} us"] = float(np.median(times[k]))
            row[f"{name} x_kinedyn"] = paired_ratio(times[k], times[0])
        for name, why in refused.items():
            row[f"{name} us"] = f"refused: {why}"
        log(f"evaluation N = {n:5d}: " + ", ".join(
            f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
            if k != "N"))
        rows.append(row)
    return rows


def run(quick: bool = False, out_dir: Path | None = None) -> Report:
    t_end = 0.2 if quick else 1.0
    repeat = 3 if quick else 7
    integrators = ("rk4",) if quick else tuple(KINEDYN_INTEGRATORS)
    chains = (64,) if quick else (8, 64, 256)
    found = {name: m for name, m in PEERS.items() if m.available()}
    report = Report("peers", settings={
        "step": f"dt = {DT} s, {int(round(t_end / DT))} steps per run, medians of {repeat} "
                f"rounds, every engine once per round",
        "reference": "kinedyn RK4 at dt / 10 (projection in natural coordinates; HDCA for the "
                     "chains)",
        "peers": ", ".join(f"{n} {m.version()}" for n, m in found.items()) or "none",
        "missing": ", ".join(n for n in PEERS if n not in found) or "none"})
    peer_notes: dict = {}
    for mech in mechanisms(chains, spatial=not quick):
        for integrator in integrators:
            for row in compare(mech, integrator, t_end, repeat, found, notes=peer_notes):
                report.add_row("whole runs", **row)
    sizes = (16, 256) if quick else (4, 16, 64, 256, 1024)
    for row in evaluations(sizes, repeat, found):
        report.add_row("chain: one forward-dynamics evaluation", **row)
    report.notes += [
        "x_kinedyn: the engine's time per step over the fastest kinedyn method's, median "
        "over rounds of the ratio in the same round (> 1: kinedyn is faster).",
        "max_deviation: largest difference from the reference over the run, over the "
        "mechanism's observables (rad, or m for the cart and the platform); it holds the "
        "integrator's own error, so compare engines at the same integrator.",
        "loop_gap: the loops' largest closure error, m (kinedyn: its largest constraint "
        "residual)."]
    report.notes += [f"{key}: {text}" for key, text in peer_notes.items()]
    return report
