"""Angle channels made continuous: :func:`unwrap`, NumPy's ``np.unwrap`` (default discontinuity
pi, period 2 pi) for one series, compiled. NumPy's takes ~30 ns per sample (a difference, a
modulo, a mask and a cumulative sum, each a pass with its own temporary): 1.4 ms for the 15
angles of a 3-s Gough-Stewart run, a quarter of the run's own computing time. Same arithmetic
in the same order, so the same numbers.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def _unwrap(p, out):
    n = p.shape[0]
    if n == 0:
        return
    out[0] = p[0]
    correction = 0.0
    for i in range(1, n):
        d = p[i] - p[i - 1]
        m = (d + math.pi) % (2.0 * math.pi) - math.pi
        if m == -math.pi and d > 0.0:
            m = math.pi
        if abs(d) >= math.pi:     # np.unwrap: no correction below the discontinuity
            correction += m - d
        out[i] = p[i] + correction


def unwrap(p) -> np.ndarray:
    """``p`` (1-D, radians) with every jump of at least pi replaced by its 2 pi complement,
    as ``np.unwrap(p)``."""
    p = np.asarray(p, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"unwrap: need one series (1-D), got shape {p.shape}")
    out = np.empty_like(p)
    _unwrap(p, out)
    return out
