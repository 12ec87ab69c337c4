"""Dense Lagrangian reference for open chains: ``M(q) qdd = -b(q, qd)``, solved in O(N^3).

The independent cross-check of HDCA and the O(N^3) baseline of its benchmark, in the spatial
algebra at the world origin of :mod:`.origin`. The mass matrix comes from the
composite-rigid-body algorithm (``M_ij = s_i^T I^c_max(i,j) s_j``), the bias (Coriolis,
centrifugal, gravity) from the recursive Newton-Euler algorithm with ``qdd = 0`` and the base
accelerated by ``-g``; then ``qdd = M^-1 (-b)`` by LAPACK (``numpy.linalg.solve``). Only the
forward kinematics (joint points and axes) is shared with HDCA.
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .. import protocol
from .kernels import HDCAData, HDCAWork
from .origin import axes_and_inertias, motion_and_forces


class DenseChain(NamedTuple):
    """An open chain's data for the dense method (the state is ``y = [q; qd]``)."""
    chain: HDCAData


class DenseWork(NamedTuple):
    chain: HDCAWork    # its ``spatial`` holds the spatial quantities (:mod:`.origin`)
    M: np.ndarray      # (n_j, n_j)
    b: np.ndarray      # (n_j,) bias


def make_dense(data: HDCAData, work: HDCAWork) -> tuple[DenseChain, DenseWork]:
    if data.closed:
        from ...errors import ModelError
        raise ModelError("the dense reference handles open chains only")
    n, dt = data.n_j, data.mass.dtype
    return DenseChain(data), DenseWork(work, np.zeros((n, n), dt), np.zeros(n, dt))


@nb.njit(cache=True, nogil=True)
def mass_and_bias(data, work, dw, q, qd):
    """Fill ``dw.M`` (CRBA) and ``dw.b`` (RNEA, qdd = 0, gravity included)."""
    n = data.n_j
    axes_and_inertias(data, work, q)
    o = work.spatial
    motion_and_forces(data, o, qd, -data.gravity[0], -data.gravity[1])
    for k in range(n - 1, -1, -1):  # tip to base: subtree forces and composite inertias
        if k + 1 < n:
            for i in range(3):
                o.F[k, i] += o.F[k + 1, i]
                for j in range(3):
                    o.I[k, i, j] += o.I[k + 1, i, j]
        s = o.s[k]
        dw.b[k] = s[0] * o.F[k, 0] + s[1] * o.F[k, 1] + s[2] * o.F[k, 2]
    for j in range(n):  # M_ij = s_i . (I^c_j s_j), i <= j
        I = o.I[j]
        s = o.s[j]
        f0 = I[0, 0] * s[0] + I[0, 1] * s[1] + I[0, 2] * s[2]
        f1 = I[1, 0] * s[0] + I[1, 1] * s[1] + I[1, 2] * s[2]
        f2 = I[2, 0] * s[0] + I[2, 1] * s[1] + I[2, 2] * s[2]
        for i in range(j + 1):
            v = o.s[i, 0] * f0 + o.s[i, 1] * f1 + o.s[i, 2] * f2
            dw.M[i, j] = v
            dw.M[j, i] = v


def dense_derivative(system, work, y, t, ydot):
    data = system.chain
    n = data.n_j
    q, qd = y[:n], y[n:]
    mass_and_bias(data, work.chain, work, q, qd)
    for i in range(n):
        ydot[i] = qd[i]
        work.b[i] = -work.b[i]
    ydot[n:] = np.linalg.solve(work.M, work.b)
    return 0


protocol.implement_ode(DenseChain, dense_derivative)
