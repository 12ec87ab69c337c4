"""Results of a forward-dynamics run: states, observables, energies, residuals, reactions."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ..errors import SolverError
from ..io.results import Results
from ..kinematics.results import residual_history
from . import integrators as I
from .evaluate import state_derivatives


def channel_names(f) -> list[str]:
    """Names of the channels a dynamic run with formulation ``f`` records (before reactions),
    known before running it (to check user requests early)."""
    q, z = f.q0[None], np.zeros((1, f.n_q))
    return (list(f.observables(q, z, z)) + [f"energy.{k}" for k in (*f.energies(q, z), "total")]
            + ["residual.position", "residual.velocity"])


def is_acceleration(channel: str) -> bool:
    """Whether a channel of the natural observables is an acceleration (``x_dd``, a 3-D
    body's ``alpha_x``)."""
    return channel.endswith("_dd") or ".alpha_" in channel


def _conserves_energy(f) -> bool:
    """True for a model whose total energy (kinetic, gravity, springs) is constant: no
    drivers, dampers, applied forces, actuators or user forces."""
    d = f.data
    loads = [getattr(d, k, None) for k in ("pf_ent", "jf_ent", "sp_c", "sp_fn")]
    if any(x is None for x in loads) or len(f.model.driver_name) or f.model.user_forces:
        return False  # (a formulation without these arrays: not judged)
    pf_ent, jf_ent, sp_c, sp_fn = loads
    return len(pf_ent) == 0 and len(jf_ent) == 0 and not np.any(sp_c) and np.all(sp_fn < 0)


class DynamicResults(Results):
    def __init__(self, dyn, times, Y, wall, n_steps, dt, cpu=None):
        self.dyn = dyn
        f = dyn.f
        n = f.n_q
        self.q, self.qd = Y[:, :n], Y[:, n:]
        res = np.zeros((len(times), 3))
        residual_history(f.data, f.make_work(), times, self.q, self.qd, np.zeros_like(self.q),
                         np.arange(f.n_c), f.data.jac_indptr, f.data.jac_indices, res)
        self.residuals = res
        E = f.energies(self.q, self.qd)
        total = E["kinetic"] + E["gravity"] + E["spring"]
        scale = max(abs(total[0]), float(np.abs(E["kinetic"]).max()), 1e-300)
        self.energy = {**E, "total": total}
        simulated = n_steps * dt
        from .simulation import OWN_SOLVER  # (simulation imports this module)
        summary = {
            "model": f.model.name, "analysis": "dynamics", "formulation": f.name,
            "method": dyn.method, "integrator": dyn.integrator_run,
            "solver": OWN_SOLVER.get(dyn.method, dyn.solver_name), "coordinates": f.n_q,
            "constraints": f.n_c,
            "degrees_of_freedom": dyn.dof,
            "redundant_constraints": [f.constraint_names[r] for r in dyn.redundant],
            "t0": float(times[0]), "t_end": float(times[-1]), "dt": dt, "steps": n_steps,
            "recorded": len(times), "wall_time_s": wall,
            "us_per_step": wall / max(n_steps, 1) * 1e6,
            "real_time_factor": simulated / wall if wall > 0 else float("inf"),
            # CPU time of the stepping thread: on a shared, loaded machine the wall time also
            # counts the time other processes held the core
            "cpu_us_per_step": None if cpu is None else cpu / max(n_steps, 1) * 1e6,
            "max_residual": {"position": float(res[:, 0].max()),
                             "velocity": float(res[:, 1].max())},
            # conserved: no drivers, dampers or applied forces, so a change is an error
            "energy": {"initial": float(total[0]), "final": float(total[-1]),
                       "conserved": _conserves_energy(f),
                       "max_drift": float(np.abs(total - total[0]).max()),
                       "max_relative_drift": float(np.abs(total - total[0]).max() / scale)},
        }
        I.warn_if_inaccurate(
            f"method {dyn.method!r}", dyn.integrator_run, dt, n_steps, E["kinetic"],
            summary["energy"]["max_drift"] if summary["energy"]["conserved"] else None,
            summary["max_residual"]["position"],
            I.mechanism_size(f),
            "" if dyn.method in ("projection", "partitioning", "index3", "embedded") else
            ", or a method that keeps the positions on the constraints (projection, "
            "partitioning)",
            supply=I.kinetic_supply(f.model, E["kinetic"][0], E["spring"][0],
                                    I.mechanism_size(f)),
            level=max(float(np.abs(self.energy[k]).max(initial=0.0))
                      for k in ("total", "gravity", "spring")))
        if dyn.method == "augmented" and any(dyn.baumgarte):
            summary["baumgarte"] = list(dyn.baumgarte)
        if dyn.method == "penalty":
            summary["penalty"] = dict(dyn.penalty)
        if dyn.method == "embedded" and dyn.embedded.repartition:
            summary["partitions"] = list(dyn.embedded.partitions)
            summary["partition_derivation_s"] = float(dyn.embedded.derivation[0])  # not in wall
        super().__init__(times, None, summary)

    @cached_property
    def qdd(self) -> np.ndarray:
        """Accelerations of the recorded states (from the index-1 equations at each state)."""
        system, work = self.dyn.acceleration_evaluator()
        Y = np.hstack([self.q, self.qd])
        out = np.zeros_like(Y)
        k = 0
        while k < len(Y):
            st = state_derivatives(system, work, self.time[k:], Y[k:], out[k:])
            if st == 0:
                break
            # The sparse solver's static pivots come from the initial configuration and can go
            # bad along the run (the integrator re-analyses there too): find the failing sample,
            # re-analyse at it and carry on from it.
            while state_derivatives(system, work, self.time[k:k + 1], Y[k:k + 1],
                                    out[k:k + 1]) == 0:
                k += 1
            system, work = self.dyn.acceleration_evaluator(self.q[k])
            st = state_derivatives(system, work, self.time[k:k + 1], Y[k:k + 1], out[k:k + 1])
            if st != 0:
                raise SolverError(f"constrained accelerations cannot be evaluated at "
                                  f"t = {self.time[k]:.6g} s (status {st}): the constraint "
                                  f"Jacobian is singular there")
            k += 1
        return out[:, self.q.shape[1]:]

    def _compute_channels(self, names=None) -> dict:
        # the accelerations are evaluated again at every recorded state: only when asked for
        qdd = self.qdd if names is None or any(map(is_acceleration, names)) else \
            np.full_like(self.q, np.nan)
        ch = self.dyn.f.observables(self.q, self.qd, qdd, names=names)
        for k, v in self.energy.items():
            ch[f"energy.{k}"] = v
        ch["residual.position"] = self.residuals[:, 0]
        ch["residual.velocity"] = self.residuals[:, 1]
        return ch

    def reactions(self) -> dict[str, np.ndarray]:
        """Joint reactions and actuator efforts (Newton-Euler); also added to the channels."""
        from .reactions import reactions
        out, residual = reactions(self.dyn.f, self.time, self.q, self.qd, self.qdd)
        out["residual.newton_euler"] = residual
        self.add_channels(out)
        return out
