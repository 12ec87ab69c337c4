"""Results of a kinematic simulation: coordinates, observables and constraint residuals."""
from __future__ import annotations

import numba as nb
import numpy as np

from .._unmanaged import unmanaged
from ..formulations import protocol
from ..io.results import Results


@nb.njit(cache=True)
def _residual_history(data_, work_, times_, Q_, QD_, QDD_, rows_, indptr_, indices_, scratch_,
                      values_, out_):
    data, work, times, Q, QD, QDD = unmanaged(data_), unmanaged(work_), unmanaged(times_), \
        unmanaged(Q_), unmanaged(QD_), unmanaged(QDD_)
    rows, indptr, indices = unmanaged(rows_), unmanaged(indptr_), unmanaged(indices_)
    scratch, values, out = unmanaged(scratch_), unmanaged(values_), unmanaged(out_)
    n_c = rows.shape[0]
    phi, pt, gam = scratch[0], scratch[1], scratch[2]
    for k in range(times.shape[0]):
        t = times[k]
        protocol.calc_phi(data, work, Q[k], t, rows, phi)
        protocol.calc_phi_t(data, work, Q[k], t, rows, pt)
        protocol.calc_gamma(data, work, Q[k], QD[k], t, rows, gam)
        protocol.calc_phi_q(data, work, Q[k], t, rows, values)
        rp = 0.0
        rv = 0.0
        ra = 0.0
        for i in range(n_c):
            r = rows[i]
            v = pt[i]
            a = -gam[i]
            for p in range(indptr[r], indptr[r + 1]):
                v += values[p] * QD[k, indices[p]]
                a += values[p] * QDD[k, indices[p]]
            rp = max(rp, abs(phi[i]))
            rv = max(rv, abs(v))
            ra = max(ra, abs(a))
        out[k, 0] = rp
        out[k, 1] = rv
        out[k, 2] = ra


def residual_history(data, work, times, Q, QD, QDD, rows, indptr, indices, out):
    """out[k] = max |Phi|, max |Phi_q qd + Phi_t|, max |Phi_q qdd - gamma| at step k (compiled,
    on unmanaged views: no reference counting per step, see :mod:`kinedyn._unmanaged`)."""
    _residual_history(data, work, times, Q, QD, QDD, rows, indptr, indices,
                      np.zeros((3, len(rows))), np.zeros(len(indices)), out)


RESIDUAL_CHANNELS = ("residual.position", "residual.velocity", "residual.acceleration")


def channel_names(f) -> list[str]:
    """Names of the channels a kinematic simulation with formulation ``f`` records, known
    before running it (to check user requests early)."""
    z = np.zeros((1, f.n_q))
    return list(f.observables(f.q0[None], z, z)) + list(RESIDUAL_CHANNELS) + ["iterations"]


class KinematicResults(Results):
    def __init__(self, analysis, times, Q, QD, QDD, residual, iterations, wall, cpu=None,
                 process_cpu=None, worker_cpu=None):
        self.analysis = analysis
        self.q, self.qd, self.qdd = Q, QD, QDD
        self.iterations = iterations
        f = analysis.f
        res = np.zeros((len(times), 3))
        residual_history(f.data, f.make_work(), times, Q, QD, QDD, analysis.all_rows,
                         f.data.jac_indptr, f.data.jac_indices, res)
        self.residuals = res
        n = len(times)
        summary = {
            "model": f.model.name, "analysis": "kinematics", "formulation": f.name,
            "strategy": analysis.strategy, "solver": analysis.solver_name,
            "coordinates": f.n_q, "constraints": f.n_c,
            "redundant_constraints": [f.constraint_names[r] for r in analysis.redundant],
            "redundant_reselections": analysis.reselections,
            "t0": float(times[0]), "t_end": float(times[-1]),
            "dt": float(times[1] - times[0]) if n > 1 else 0.0, "steps": n,
            "tolerance": analysis.tol, "max_iterations": analysis.max_iter,
            "fixed_iterations": analysis.fixed,
            "sparse_reanalyses": getattr(analysis, "reanalyses", 0),
            # ... of which took pivot orders this analysis had used before, without SuperLU
            "sparse_orders_reused": getattr(analysis, "orders_reused", 0),
            "iterations": {"mean": float(iterations.mean()), "max": int(iterations.max())},
            "wall_time_s": wall, "us_per_step": wall / n * 1e6,
            # CPU time of the simulating thread: what the steps cost on a busy machine
            "cpu_us_per_step": None if cpu is None else cpu / n * 1e6,
            # ... and of every thread of the process (outer worker threads included)
            "process_cpu_us_per_step": None if process_cpu is None else process_cpu / n * 1e6,
            "max_residual": {"position": float(res[:, 0].max()), "velocity": float(res[:, 1].max()),
                             "acceleration": float(res[:, 2].max())},
        }
        if worker_cpu is not None:  # outer threads: each worker's CPU time, waits included
            summary["worker_cpu_us_per_step"] = [float(c) / n * 1e6 for c in worker_cpu]
        if analysis.engine is not None:
            summary["group_sizes"] = analysis.engine.structure.sizes()
        summary["threads"] = list(analysis.threads)
        tuning = getattr(analysis, "tuning", None)
        if tuning is not None:
            summary["auto_tuning"] = {"choice": tuning.choice.label, "cached": tuning.cached,
                                      "trial": tuning.trial, "candidates": tuning.rows}
        super().__init__(times, None, summary)

    def reactions(self, actuators=None) -> dict[str, np.ndarray]:
        """The joint reactions and actuator efforts that produce this motion (inverse
        dynamics: Newton-Euler on every body, :func:`kinedyn.dynamics.inverse.motion_loads`),
        also added to the channels: ``reaction.<joint>.force_x`` ... and ``effort.<joint>``,
        with ``residual.newton_euler``. ``actuators``: the actuated joints (``"P1, P2"``,
        ``["R1:angle"]``), whose efforts replace the drivers' (the drivers then only prescribe
        the motion); None: the drivers' own efforts (a driven crank's torque). The summary
        gets ``max_effort`` and the checks' results; actuators that cannot produce the
        motion are a :class:`~kinedyn.errors.ModelError`."""
        from ..dynamics.inverse import motion_loads, parse_actuators
        f = self.analysis.f
        act = None if actuators is None else parse_actuators(f.model, actuators)
        out, summary = motion_loads(f, self, act)
        self.summary.update(summary)
        self.add_channels(out)
        return out

    def _compute_channels(self, names=None) -> dict:
        ch = self.analysis.f.observables(self.q, self.qd, self.qdd, names=names)
        for k, name in enumerate(RESIDUAL_CHANNELS):
            ch[name] = self.residuals[:, k]
        ch["iterations"] = self.iterations.astype(float)
        return ch
