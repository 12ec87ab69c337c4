"""The map between HDCA's joint state and the natural coordinates of the same model.

HDCA integrates joint coordinates and canonical momenta ``y = [q; p]``; the other dynamics
methods and every output of :class:`kinedyn.dynamics.DynamicResults` (points, bodies, joints,
energies, constraint residuals = loop closure, reactions) work on the natural state
``[q_nat; qd_nat]``. Every natural coordinate block is a point or a unit vector fixed in a body
that positions it (:meth:`Natural.body_coordinates`), so

* natural -> joint (initial conditions): body poses, angular velocities and point velocities
  of the natural state give the joint coordinates and rates (:func:`joint_state`); the momenta
  follow from ``qd = G(q) p`` (``G`` the HDCA map, linear in ``p``) by least squares
  (:func:`momenta`), exact for consistent velocities;
* joint -> natural (recording, compiled): after an HDCA evaluation, a point block is
  ``r = o_b + R(theta_b) l`` with velocity ``v_1 + omega Omega (r - h_1)`` from the handle-1
  velocity ``V_1 = [v_1, omega]`` of eq. (11); a vector block ``u = R l``, ``u' = omega Omega u``
  (:func:`to_natural`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from ...errors import ModelError
from .kernels import REVOLUTE


class NaturalMap(NamedTuple):
    """Where each natural coordinate block sits: ``block_body (n_block,)`` chain body index,
    ``block_point (n_block,)`` 1 for a point, 0 for a unit vector, ``block_local (n_block, 2)``
    its coordinates in the body frame."""
    block_body: np.ndarray
    block_point: np.ndarray
    block_local: np.ndarray


def natural_map(h, f, q_nat) -> NaturalMap:
    """The blocks of natural formulation ``f`` attached to the chain bodies of Hamiltonian
    ``h``, body-local coordinates taken at the (assembled) natural coordinates ``q_nat``."""
    m = f.model
    chain_index = {int(b): k for k, b in enumerate(h.chain.bodies)}
    n_block = f.n_q // 2
    body = np.full(n_block, -1, np.int64)
    for name, coords in f.body_coordinates().items():
        b = chain_index[m.body_name.index(name)]
        for c in coords[::2]:
            if body[c // 2] < 0:
                body[c // 2] = b
    if (body < 0).any():
        raise ModelError("HDCA: natural coordinates " + ", ".join(
            f.coordinate_names[2 * k] for k in np.flatnonzero(body < 0)) + " belong to no body")
    origin, R = f.body_positions(q_nat), f.body_rotations(q_nat)
    point = np.array([blk.kind == "point" for blk in f.layout.blocks], np.int64)
    local = np.zeros((n_block, 2))
    model_body = np.asarray(h.chain.bodies)[body]
    for k in range(n_block):
        x = q_nat[2 * k:2 * k + 2] - (origin[model_body[k]] if point[k] else 0.0)
        local[k] = R[model_body[k]].T @ x
    return NaturalMap(body, point, local)


def joint_state(h, f, q_nat, qd_nat) -> tuple[np.ndarray, np.ndarray]:
    """Joint coordinates and rates (HDCA's chain conventions) of a natural state."""
    m = f.model
    ev, evd = f.entity_values(q_nat), f.entity_values(qd_nat, derivative=True)
    points, point_vel = ev[f.point_entity], evd[f.point_entity]
    R = f.body_rotations(q_nat)
    angles = np.arctan2(R[:, 1, 0], R[:, 0, 0])
    omega = np.zeros(m.n_body)
    for b in range(1, m.n_body):
        Rd = np.column_stack([evd[a] for a in f.body_axes[b]])
        omega[b] = (Rd @ R[b].T)[1, 0]
    q = h.joint_coordinates(angles, points)
    qd = np.zeros(h.n_j)
    for k in range(h.n_j):
        ba, pa, bb, pb = h._sides(k)
        if h._arrays["jtype"][k] == REVOLUTE:
            qd[k] = omega[bb] - omega[ba]
        else:
            u = R[ba] @ h._arrays["axis"][k]
            du = omega[ba] * np.array([-u[1], u[0]])
            qd[k] = du @ (points[pb] - points[pa]) + u @ (point_vel[pb] - point_vel[pa])
    return q, qd


def momenta(h, data, work, q, qd, tol: float = 1e-9) -> np.ndarray:
    """Canonical momenta p with ``G(q) p = qd`` (HDCA's joint velocities, eq. 49): the
    minimum-norm least-squares solution, checked to reproduce ``qd``."""
    if not np.any(qd):
        return np.zeros(h.n_j)
    G = np.column_stack([h.state_derivative(q, e, data, work)[0] for e in np.eye(h.n_j)])
    p = np.linalg.lstsq(G, qd, rcond=None)[0]
    err = np.abs(G @ p - qd).max()
    if err > tol * max(1.0, np.abs(qd).max()):
        raise ModelError(f"HDCA: the initial velocities are not admissible for the chain "
                         f"(joint rates {np.round(qd, 6).tolist()}, mismatch {err:.3g})")
    return p


@nb.njit(cache=True, nogil=True, inline="always")
def to_natural(nm, work, out):
    """[q_nat; qd_nat] into ``out`` from the body poses and handle velocities of the last
    HDCA evaluation (``work``)."""
    n = nm.block_body.shape[0]
    for k in range(n):
        b = nm.block_body[k]
        th = work.theta[b]
        c, s = math.cos(th), math.sin(th)
        lx, ly = nm.block_local[k, 0], nm.block_local[k, 1]
        x, y = c * lx - s * ly, s * lx + c * ly
        w = work.V1[b, 2]
        if nm.block_point[k]:
            x += work.origin[b, 0]
            y += work.origin[b, 1]
            vx = work.V1[b, 0] - w * (y - work.joint[b, 1])
            vy = work.V1[b, 1] + w * (x - work.joint[b, 0])
        else:
            vx, vy = -w * y, w * x
        out[2 * k], out[2 * k + 1] = x, y
        out[2 * (n + k)], out[2 * (n + k) + 1] = vx, vy
