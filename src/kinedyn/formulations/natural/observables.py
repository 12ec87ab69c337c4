"""Named output channels of the natural formulation, from whole trajectories at once.

Entities are linear in q, so every observable of a trajectory follows from three matrix
products ``E Q^T`` (values, velocities, accelerations). Joint coordinates get exact first and
second time derivatives by the product rule; body angular velocity and acceleration follow
from ``R' R^T = [w]x`` and ``R'' R^T = [alpha]x + [w]x^2``.
"""
from __future__ import annotations

import numpy as np

from ...io.angles import unwrap
from ...model.rotations import AXES  # noqa: F401  (documented sequence letters)
from .layout import ANGLE


def _derivs(f, E, c, Q, QD, QDD):
    d = f.dim
    n_e = len(f.entities.items)
    v = (E @ Q.T).T + c
    vd = (E @ QD.T).T
    vdd = (E @ QDD.T).T
    shape = (len(Q), n_e, d)
    return v.reshape(shape), vd.reshape(shape), vdd.reshape(shape)


def _dot3(a, b):
    return np.einsum("...k,...k->...", a, b)


def _triple(a, b, c):
    if a.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return _dot3(np.cross(a, b), c)


def _bilinear(fn, x, y):
    """Value, first and second derivative of a bilinear form of (value, d, dd) triples."""
    (x0, x1, x2), (y0, y1, y2) = x, y
    return fn(x0, y0), fn(x1, y0) + fn(x0, y1), fn(x2, y0) + 2 * fn(x1, y1) + fn(x0, y2)


def _trilinear(fn, x, y, z):
    (x0, x1, x2), (y0, y1, y2), (z0, z1, z2) = x, y, z
    v = fn(x0, y0, z0)
    d = fn(x1, y0, z0) + fn(x0, y1, z0) + fn(x0, y0, z1)
    dd = (fn(x2, y0, z0) + fn(x0, y2, z0) + fn(x0, y0, z2)
          + 2 * (fn(x1, y1, z0) + fn(x1, y0, z1) + fn(x0, y1, z1)))
    return v, d, dd


def observables(f, Q: np.ndarray, QD: np.ndarray, QDD: np.ndarray,
                names=None) -> dict[str, np.ndarray]:
    """Channels ``body.*``, ``point.*``, ``joint.*`` and ``q.*`` (with ``_d``/``_dd`` rates);
    with ``names``, at least those: only the coordinates, bodies, points and joints they name
    are computed (a few channels of one state, a controller's reading between steps, cost
    tens of microseconds instead of milliseconds: the per-body array operations dominate)."""
    m, d = f.model, f.dim
    E, c = f._E, f._c
    V, VD, VDD = _derivs(f, E, c, Q, QD, QDD)
    out: dict[str, np.ndarray] = {}

    def wanted(prefix: str) -> bool:
        return names is None or any(n.startswith(prefix) for n in names)
    for i, name in enumerate(f.coordinate_names):
        if not wanted(f"q.{name}"):
            continue
        out[f"q.{name}"] = Q[:, i]
        out[f"q.{name}_d"] = QD[:, i]
        out[f"q.{name}_dd"] = QDD[:, i]
    comps = "xyz"[:d]
    for b in range(1, m.n_body):
        name = m.body_name[b]
        if not wanted(f"body.{name}."):
            continue
        o = f.body_origin[b]
        for k, ch in enumerate(comps):
            out[f"body.{name}.{ch}"] = V[:, o, k]
            out[f"body.{name}.{ch}_d"] = VD[:, o, k]
            out[f"body.{name}.{ch}_dd"] = VDD[:, o, k]
        axes = f.body_axes[b]
        R = np.stack([V[:, a] for a in axes], axis=-1)       # (n, d, d) columns = axes
        Rd = np.stack([VD[:, a] for a in axes], axis=-1)
        Rdd = np.stack([VDD[:, a] for a in axes], axis=-1)
        W = Rd @ np.swapaxes(R, 1, 2)
        A = Rdd @ np.swapaxes(R, 1, 2) - W @ W
        if d == 2:
            out[f"body.{name}.angle"] = unwrap(np.arctan2(R[:, 1, 0], R[:, 0, 0]))
            out[f"body.{name}.angle_d"] = W[:, 1, 0]
            out[f"body.{name}.angle_dd"] = A[:, 1, 0]
        else:
            yaw = np.arctan2(R[:, 1, 0], R[:, 0, 0])
            pitch = np.arcsin(np.clip(-R[:, 2, 0], -1, 1))
            roll = np.arctan2(R[:, 2, 1], R[:, 2, 2])
            for label, ang in (("yaw", yaw), ("pitch", pitch), ("roll", roll)):
                out[f"body.{name}.{label}"] = unwrap(ang)
            for k, (i, j) in enumerate(((2, 1), (0, 2), (1, 0))):
                out[f"body.{name}.omega_{comps[k]}"] = W[:, i, j]
                out[f"body.{name}.alpha_{comps[k]}"] = A[:, i, j]
    for p in range(m.n_point):
        if not wanted(f"point.{m.point_name[p]}."):
            continue
        e = f.point_entity[p]
        for k, ch in enumerate(comps):
            out[f"point.{m.point_name[p]}.{ch}"] = V[:, e, k]
            out[f"point.{m.point_name[p]}.{ch}_d"] = VD[:, e, k]
            out[f"point.{m.point_name[p]}.{ch}_dd"] = VDD[:, e, k]
    for (j, label), (kind, ids) in f.joint_coordinates.items():
        if not wanted(f"joint.{m.joint_name[j]}.{label}"):
            continue
        trip = [(V[:, i], VD[:, i], VDD[:, i]) for i in ids]
        if kind == ANGLE:
            Dv, Dd, Ddd = _bilinear(_dot3, trip[0], trip[1])
            if d == 2:
                Tv, Td, Tdd = _bilinear(lambda a, b: _triple(a, b, None), trip[0], trip[1])
            else:
                Tv, Td, Tdd = _trilinear(_triple, *trip)
            r2 = Dv * Dv + Tv * Tv
            th = unwrap(np.arctan2(Tv, Dv))
            thd = (Dv * Td - Tv * Dd) / r2
            thdd = (Dv * Tdd - Tv * Ddd) / r2 - 2 * thd * (Dv * Dd + Tv * Td) / r2
            value, rate, acc = th, thd, thdd
        else:
            value, rate, acc = _bilinear(_dot3, trip[0], trip[1])
        name = m.joint_name[j]
        out[f"joint.{name}.{label}"] = value
        out[f"joint.{name}.{label}_d"] = rate
        out[f"joint.{name}.{label}_dd"] = acc
    return out
