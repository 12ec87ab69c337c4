"""Compiled evaluations callable from Python (post-processing, set-up), on any formulation."""
from __future__ import annotations

import numba as nb
import numpy as np

from ..formulations import protocol


@nb.njit(cache=True)
def _mass(data, work, q, out):
    protocol.calc_mass(data, work, q, out)


@nb.njit(cache=True)
def _forces(data, work, q, qd, t, out):
    protocol.calc_forces(data, work, q, qd, t, out)


@nb.njit(cache=True)
def _phi_t(data, work, q, t, rows, out):
    protocol.calc_phi_t(data, work, q, t, rows, out)


def mass_values(f, q) -> np.ndarray:
    out = np.zeros(len(f.data.mass_indices))
    _mass(f.data, f.make_work(), np.asarray(q, float), out)
    return out


def forces(f, q, qd, t) -> np.ndarray:
    out = np.zeros(f.n_q)
    _forces(f.data, f.make_work(), np.asarray(q, float), np.asarray(qd, float), float(t), out)
    return out


def phi_t_values(f, q, t, rows) -> np.ndarray:
    rows = np.asarray(rows, np.int64)
    out = np.zeros(len(rows))
    _phi_t(f.data, f.make_work(), np.asarray(q, float), float(t), rows, out)
    return out


@nb.njit(cache=True)
def state_derivatives(system, work, times, Y, out):
    """Derivative of the recorded states (for accelerations); returns the first bad status."""
    for k in range(times.shape[0]):
        st = protocol.calc_state_derivative(system, work, Y[k], times[k], out[k])
        if st != 0:
            return st
    return 0
