"""Forward kinematics of six-legged parallel platforms (Gough-Stewart): pose from leg lengths.

Unknowns: platform position p and orientation R; equations (one per leg k)
``f_k = |p + R P_k - B_k|^2 - L_k^2 = 0`` with base joints B_k and platform joints P_k (platform
frame). Newton-Raphson with the analytic Jacobian ``d f_k = 2 d_k . dp + 2 (R P_k x d_k) . dtheta``
(d_k = p + R P_k - B_k), the rotation updated on SO(3) by ``R <- exp([dtheta]x) R`` (Rodrigues),
and the 6x6 LU with partial pivoting of :mod:`kinedyn.linalg.small` - all compiled, allocation-free. Tracking a
trajectory warm-starts from the previous pose.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..errors import ConvergenceError, SingularConfigurationError
from ..linalg.small import lu_factor, lu_solve


@nb.njit(cache=True, nogil=True)
def _rotate(R, w):
    """R <- exp([w]x) R (Rodrigues)."""
    th = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if th < 1e-300:
        return
    kx, ky, kz = w[0] / th, w[1] / th, w[2] / th
    c, s = math.cos(th), math.sin(th)
    v = 1.0 - c
    e00, e01, e02 = c + kx * kx * v, kx * ky * v - kz * s, kx * kz * v + ky * s
    e10, e11, e12 = ky * kx * v + kz * s, c + ky * ky * v, ky * kz * v - kx * s
    e20, e21, e22 = kz * kx * v - ky * s, kz * ky * v + kx * s, c + kz * kz * v
    for j in range(3):
        a0, a1, a2 = R[0, j], R[1, j], R[2, j]
        R[0, j] = e00 * a0 + e01 * a1 + e02 * a2
        R[1, j] = e10 * a0 + e11 * a1 + e12 * a2
        R[2, j] = e20 * a0 + e21 * a1 + e22 * a2


@nb.njit(cache=True, nogil=True)
def forward_kinematics_solve(base, platform, lengths, p, R, tol, max_iter, A, b, w, piv):
    """Newton iterations in place on (p, R). Returns (status, iterations, residual):
    status 0 converged, 1 singular Jacobian, 3 no convergence."""
    err = 0.0
    for it in range(max_iter + 1):
        err = 0.0
        for k in range(6):
            rp0 = R[0, 0] * platform[k, 0] + R[0, 1] * platform[k, 1] + R[0, 2] * platform[k, 2]
            rp1 = R[1, 0] * platform[k, 0] + R[1, 1] * platform[k, 1] + R[1, 2] * platform[k, 2]
            rp2 = R[2, 0] * platform[k, 0] + R[2, 1] * platform[k, 1] + R[2, 2] * platform[k, 2]
            d0 = p[0] + rp0 - base[k, 0]
            d1 = p[1] + rp1 - base[k, 1]
            d2 = p[2] + rp2 - base[k, 2]
            f = d0 * d0 + d1 * d1 + d2 * d2 - lengths[k] * lengths[k]
            err = max(err, abs(f))
            b[k] = -f
            A[k, 0] = 2.0 * d0
            A[k, 1] = 2.0 * d1
            A[k, 2] = 2.0 * d2
            A[k, 3] = 2.0 * (rp1 * d2 - rp2 * d1)
            A[k, 4] = 2.0 * (rp2 * d0 - rp0 * d2)
            A[k, 5] = 2.0 * (rp0 * d1 - rp1 * d0)
        if err <= tol:
            return 0, it, err
        if it == max_iter:
            break
        if not lu_factor(A, 6, piv, 1e-14):
            return 1, it, err
        lu_solve(A, 6, piv, b)
        p[0] += b[0]
        p[1] += b[1]
        p[2] += b[2]
        w[0], w[1], w[2] = b[3], b[4], b[5]
        _rotate(R, w)
    return 3, max_iter, err


@nb.njit(cache=True, nogil=True)
def forward_kinematics_track(base, platform, lengths, p, R, tol, max_iter, out_p, out_R, out_it):
    """Forward kinematics along rows of ``lengths`` (n, 6), each warm-started from the last."""
    A = np.empty((6, 6))
    b = np.empty(6)
    w = np.empty(3)
    piv = np.empty(6, np.int64)
    for i in range(lengths.shape[0]):
        st, it, err = forward_kinematics_solve(base, platform, lengths[i], p, R, tol, max_iter,
                                               A, b, w, piv)
        if st != 0:
            return st, i
        out_p[i] = p
        out_R[i] = R
        out_it[i] = it
    return 0, lengths.shape[0]


class PlatformForwardKinematics:
    """Pose of a six-legged platform from its leg lengths.

    Parameters: ``base`` (6, 3) base joint positions (world), ``platform`` (6, 3) platform joint
    positions (platform frame), a starting pose (``p0``, ``R0``), tolerance on
    max |L_k^2 - |d_k|^2| (m^2) and iteration limit.

    >>> from kinedyn.models.stewart import GS_BASE, GS_PLATFORM, GS_HOME
    >>> fk = PlatformForwardKinematics(GS_BASE, GS_PLATFORM, GS_HOME)
    >>> p, R = fk.solve(fk.leg_lengths(GS_HOME, np.eye(3)))
    """

    def __init__(self, base, platform, p0, R0=None, tol: float = 1e-12, max_iter: int = 20):
        self.base = np.ascontiguousarray(base, float).reshape(6, 3)
        self.platform = np.ascontiguousarray(platform, float).reshape(6, 3)
        self.p = np.array(p0, float).reshape(3)
        self.R = np.eye(3) if R0 is None else np.array(R0, float).reshape(3, 3)
        self.tol, self.max_iter = float(tol), int(max_iter)
        self._A, self._b, self._w = np.empty((6, 6)), np.empty(6), np.empty(3)
        self._piv = np.empty(6, np.int64)

    def leg_lengths(self, p, R) -> np.ndarray:
        """Inverse kinematics: |p + R P_k - B_k|."""
        d = np.asarray(p, float) + self.platform @ np.asarray(R, float).T - self.base
        return np.linalg.norm(d, axis=1)

    def solve(self, lengths) -> tuple[np.ndarray, np.ndarray]:
        """Pose (p, R) for the leg lengths, warm-started from the previous solution."""
        L = np.ascontiguousarray(lengths, float).reshape(6)
        st, it, err = forward_kinematics_solve(self.base, self.platform, L, self.p, self.R,
                                               self.tol, self.max_iter, self._A, self._b, self._w,
                                               self._piv)
        self._check(st, err, None)
        return self.p.copy(), self.R.copy()

    def track(self, lengths) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Poses along a trajectory of leg lengths (n, 6): positions (n, 3), rotations
        (n, 3, 3), iterations (n,)."""
        L = np.ascontiguousarray(lengths, float).reshape(-1, 6)
        n = len(L)
        out_p, out_R, out_it = np.zeros((n, 3)), np.zeros((n, 3, 3)), np.zeros(n, np.int64)
        st, i = forward_kinematics_track(self.base, self.platform, L, self.p, self.R, self.tol,
                                         self.max_iter, out_p, out_R, out_it)
        self._check(st, float("nan"), i)
        return out_p, out_R, out_it

    def _check(self, st, err, index):
        where = "" if index is None else f" at sample {index}"
        if st == 1:
            raise SingularConfigurationError(f"the platform Jacobian is singular{where}",
                                             constraints=[f"leg {k + 1}" for k in range(6)])
        if st == 3:
            raise ConvergenceError(f"forward kinematics did not converge{where} (residual "
                                   f"{err:.3g}); the leg lengths may be unreachable")
