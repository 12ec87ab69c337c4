"""Forward dynamics by the Hamiltonian divide-and-conquer algorithm (HDCA paper, section 2).

>>> import kinedyn
>>> from kinedyn.dynamics.hdca import HDCA
>>> res = HDCA(kinedyn.models.get("double-pendulum").compile()).simulate(t_end=0.1, dt=1e-3)
>>> abs(res.channel("energy.total") - res.channel("energy.total")[0]).max() < 1e-8
True

The state ``y = [q; p]`` (joint coordinates, canonical momenta) runs through the same compiled
fixed-step integrators as the other methods (:func:`kinedyn.dynamics.integrators.integrate_fixed`,
a whole run per call); ``precision="float32"`` runs the whole loop in single precision as the
paper's FPGA did. Results carry joint angles and velocities (with the model's joint signs), body
angles, energies and, for a closed loop, the loop-closure errors of the paper's Figs. 12-13.

``Dynamics(model, method="hdca")`` runs the same evaluation as a method among the others
(:class:`HDCAMethod`): the integrator advances ``[q; p]`` and each recorded state is mapped to
natural coordinates (:mod:`kinedyn.formulations.hamiltonian.natural_map`), so its results carry
every output of the other methods (points, bodies, joints, energies, constraint residuals -
the loop closure -, reactions).
"""
from __future__ import annotations

import time as _time
from typing import NamedTuple

import numpy as np

from .._memory import resident_zeros
from ..errors import (ModelError, SolverError, UnknownNameError, check_flag, record_interval,
                      run_steps)
from ..formulations.hamiltonian import DTYPES, Hamiltonian
from ..formulations.hamiltonian import natural_map as NM
from ..formulations import protocol
from ..formulations.hamiltonian.kernels import evaluate_state, evaluate_state_momenta
from ..formulations.hamiltonian.origin import calc_momenta
from ..io.angles import unwrap
from ..io.results import Results
from ..parallel.team import check_workers
from . import integrators as I


class HDCA:
    """HDCA forward dynamics of a planar chain model.

    Parameters
    ----------
    model: CompiledModel or a :class:`~kinedyn.formulations.hamiltonian.Hamiltonian`.
    integrator: ``euler``, ``semi-implicit-euler`` or ``rk4``.
    precision: ``float64`` or ``float32``.
    parallel: run on a team of ``threads`` threads, the assembly tree split by subtrees
        (:mod:`.hdca_team`; bit-for-bit the serial result).
    q0, p0: initial joint coordinates (default: the model's configuration) and canonical
        momenta (default zero: released from rest).
    """

    def __init__(self, model, *, integrator: str = "rk4", precision: str = "float64",
                 parallel: bool = False, threads: int = 2, q0=None, p0=None):
        if precision not in DTYPES:
            raise UnknownNameError("precision", precision, DTYPES)
        self.parallel = check_flag("parallel", parallel)
        if self.parallel:
            check_workers("threads", threads)
        self.h = model if isinstance(model, Hamiltonian) else Hamiltonian(model)
        self.integrator = integrator
        self.integrator_code = I.integrator_code(integrator)
        self.precision = precision
        self.threads = int(threads) if self.parallel else 1
        self.data = self.h.make_data(precision)
        self.work = self.h.make_work(self.data)
        self._team = None
        dt = self.data.mass.dtype
        n = self.h.n_j
        q = self.h.q0 if q0 is None else np.asarray(q0, float)
        p = np.zeros(n) if p0 is None else np.asarray(p0, float)
        if q.shape != (n,) or p.shape != (n,) or not np.isfinite([q, p]).all():
            raise ModelError(f"q0 and p0 need {n} finite numbers (joints "
                             f"{', '.join(self.h.joint_names)}), got {q!r} and {p!r}")
        self.y0 = np.concatenate([q, p]).astype(dt)

    def simulate(self, t_end: float, dt: float, *, record_every: int = 1, t0: float = 0.0):
        n_steps = run_steps(t0, t_end, dt)
        record_every = record_interval(record_every, n_steps, t0, dt)
        y = self.y0.copy()
        out = resident_zeros((n_steps // record_every + 1, len(y)), y.dtype)  # before the timer
        scratch = np.zeros((6, len(y)), y.dtype)
        if self.parallel and self._team is None:
            from .hdca_team import ThreadedHDCA
            self._team = ThreadedHDCA(self.data, self.work, self.threads)

        def advance(y, n, out):
            if self.parallel:
                return self._team.run(y, dt, n, self.integrator_code, record_every, out, scratch)
            return I.integrate_fixed(self.data, self.work, y, t0, dt, n, self.integrator_code,
                                     self.h.n_j, False, record_every, out, scratch)
        advance(y.copy(), 0, out[:1].copy())  # load (or compile) the kernel outside the timing
        start = _time.perf_counter()
        st, k = advance(y, n_steps, out)
        wall = _time.perf_counter() - start
        if st != 0:
            raise SolverError("HDCA: singular joint constraint matrix (C of eq. 33 or eta of "
                              "eq. 43)", time=t0 + k * dt, constraints=list(self.h.joint_names))
        times = t0 + dt * record_every * np.arange(len(out))
        I.check_finite(out, times, self.integrator, dt)
        return HDCAResults(self, times, out, wall, n_steps, dt)


def _size(model) -> float:
    """The mechanism's size for :func:`~.integrators.warn_if_inaccurate`: the largest
    coordinate of the model's body origins, at least 1."""
    pts = model.body_position[model.point_body]
    return max(1.0, float(np.abs(pts).max(initial=0.0)))


class HDCAResults(Results):
    """States ``q, p`` and derived ``qd``, energies, loop closure, body angles."""

    def __init__(self, run: HDCA, times, Y, wall, n_steps, dt):
        h = run.h
        n = h.n_j
        self.q, self.p = Y[:, :n], Y[:, n:]
        out = h.outputs(Y, run.data)
        self.qd, self.theta = out["qd"], out["theta"]
        self.energy = {"kinetic": out["energy"][:, 0], "gravity": out["energy"][:, 1]}
        self.energy["total"] = self.energy["kinetic"] + self.energy["gravity"]
        self.closure = out["closure"]
        total = self.energy["total"]
        summary = {
            "model": h.model.name, "analysis": "dynamics", "formulation": "hamiltonian",
            "method": "hdca", "integrator": run.integrator, "precision": run.precision,
            "parallel": run.parallel, "threads": run.threads, "bodies": h.n_b, "joints": n, "closed_loop": h.closed,
            "tree_depth": h.tree.depth, "t0": float(times[0]), "t_end": float(times[-1]),
            "dt": dt, "steps": n_steps, "wall_time_s": wall,
            "us_per_step": wall / max(n_steps, 1) * 1e6,
            "energy": {"initial": float(total[0]), "final": float(total[-1]),
                       "max_drift": float(np.abs(total - total[0]).max())},
        }
        if h.closed:
            summary["max_loop_closure"] = {"position": float(self.closure[:, 0].max()),
                                           "angle": float(np.abs(self.closure[:, 1]).max())}
        I.warn_if_inaccurate("HDCA", run.integrator, dt, n_steps, self.energy["kinetic"],
                             summary["energy"]["max_drift"],
                             summary.get("max_loop_closure", {}).get("position", 0.0),
                             _size(h.model), supply=I.kinetic_supply(
                                 h.model, self.energy["kinetic"][0], 0.0, _size(h.model)),
                             level=max(float(np.abs(self.energy[k]).max(initial=0.0))
                                       for k in ("total", "gravity")))
        super().__init__(times, None, summary)
        self.h = h

    def _compute_channels(self, names=None) -> dict:  # (all of them)
        h = self.h
        ch = {}
        for k, name in enumerate(h.joint_names):
            sign = h.joint_sign[k]
            ch[f"q.{name}"] = sign * self.q[:, k]
            ch[f"q.{name}_d"] = sign * self.qd[:, k]
            ch[f"p.{name}"] = sign * self.p[:, k]
        for b, name in enumerate(h.body_names):
            ch[f"body.{name}.angle"] = unwrap(self.theta[:, b])
        for k, v in self.energy.items():
            ch[f"energy.{k}"] = v
        if h.closed:
            ch["closure.position"] = self.closure[:, 0]
            ch["closure.angle"] = self.closure[:, 1]
        return ch


# ---- HDCA as a method of kinedyn.dynamics.Dynamics --------------------------------------------------
class HDCAMethod(NamedTuple):
    hdca: tuple      # HDCAData
    natural: tuple   # NaturalMap: where the recorded natural coordinates sit on the chain


class HDCAMethodWork(NamedTuple):
    hdca: tuple      # HDCAWork
    ydot: np.ndarray  # (2 n_j,) derivative scratch of the recording evaluation


def _method_derivative(system, work, y, t, ydot):
    return evaluate_state(system.hdca, work.hdca, y, ydot)


def _method_record(system, work, y, t, out):
    # inlined as the derivative is: a call of ``hdca_derivative`` copied both NamedTuples by
    # value, and LLVM inlined it only when it was compiled with the run (docs/architecture.md)
    evaluate_state(system.hdca, work.hdca, y, work.ydot)
    NM.to_natural(system.natural, work.hdca, out)


def _method_momenta(system, work, q, qd, p, rate):
    calc_momenta(system.hdca, work.hdca, q, qd, p, rate)


def _method_derivative_same_position(system, work, y, t, ydot):
    return evaluate_state_momenta(system.hdca, work.hdca, y, ydot)


protocol.implement_ode(HDCAMethod, _method_derivative, record=_method_record,
                       momenta=_method_momenta, same_position=_method_derivative_same_position,
                       inline="llvm")


def dynamics_method(f, q_nat, qd_nat):
    """``(hamiltonian, system, work, y0)`` of HDCA for :class:`~kinedyn.dynamics.Dynamics`
    on the natural formulation ``f``, starting from the natural state ``(q_nat, qd_nat)``."""
    from ..formulations.natural import Natural
    if not isinstance(f, Natural):
        raise ModelError("method 'hdca' records its states in natural coordinates: give a "
                         f"compiled model, not a {type(f).__name__} formulation")
    h = Hamiltonian(f.model)
    work = h.make_work()
    q, qd = NM.joint_state(h, f, q_nat, qd_nat)
    p = NM.momenta(h, h.data, work, q, qd)
    system = HDCAMethod(h.data, NM.natural_map(h, f, q_nat))
    return h, system, HDCAMethodWork(work, np.zeros(2 * h.n_j)), np.concatenate([q, p])
