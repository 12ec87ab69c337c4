"""Rotation matrices from angles, numerically (NumPy) or symbolically (SymPy).

Convention: an orientation ``[a, b, c]`` with sequence ``"ZYX"`` (the default, yaw-pitch-roll,
the thesis's 3-2-1 angles) means the *intrinsic* rotation ``R_WB = Rz(a) @ Ry(b) @ Rx(c)``: the
columns of ``R_WB`` are the body axes expressed in the world frame. Any sequence of three axes
letters is accepted (``"XYZ"``, ``"ZXZ"`` ...). In 2-D an orientation is one angle.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

AXES = {"X": 0, "Y": 1, "Z": 2}


def _elementary(axis: int, angle, lib):
    c, s = lib.cos(angle), lib.sin(angle)
    one, zero = (1, 0)
    if axis == 0:
        rows = [[one, zero, zero], [zero, c, -s], [zero, s, c]]
    elif axis == 1:
        rows = [[c, zero, s], [zero, one, zero], [-s, zero, c]]
    else:
        rows = [[c, -s, zero], [s, c, zero], [zero, zero, one]]
    return sp.Matrix(rows) if lib is sp else np.array(rows, dtype=float)


def check_sequence(sequence: str) -> str:
    seq = str(sequence).upper()
    if len(seq) != 3 or any(ch not in AXES for ch in seq) or seq[0] == seq[1] or seq[1] == seq[2]:
        raise ValueError(f"invalid Euler sequence {sequence!r}: three of X/Y/Z, "
                         "no axis twice in a row (e.g. 'ZYX', 'XYZ', 'ZXZ')")
    return seq


def euler_to_matrix(angles, sequence: str = "ZYX", lib=np):
    """Intrinsic Euler angles -> rotation matrix (``lib`` is ``numpy`` or ``sympy``)."""
    seq = check_sequence(sequence)
    R = _elementary(AXES[seq[0]], angles[0], lib)
    for axis, angle in zip(seq[1:], angles[1:]):
        R = R @ _elementary(AXES[axis], angle, lib) if lib is np else R * _elementary(AXES[axis], angle, lib)
    return R


def planar_matrix(angle, lib=np):
    """2-D rotation by ``angle``."""
    c, s = lib.cos(angle), lib.sin(angle)
    return sp.Matrix([[c, -s], [s, c]]) if lib is sp else np.array([[c, -s], [s, c]], dtype=float)


def matrix_to_euler(R: np.ndarray, sequence: str = "ZYX") -> np.ndarray:
    """Inverse of :func:`euler_to_matrix` (one of the two solutions), via SciPy."""
    from scipy.spatial.transform import Rotation
    return Rotation.from_matrix(np.asarray(R, float)).as_euler(check_sequence(sequence).upper())


def is_rotation(R: np.ndarray, tol: float = 1e-9) -> bool:
    R = np.asarray(R, float)
    return (R.shape in ((2, 2), (3, 3)) and np.allclose(R.T @ R, np.eye(len(R)), atol=tol)
            and abs(np.linalg.det(R) - 1.0) < tol)
