"""kinedyn.io.angles.unwrap: the same numbers as np.unwrap, compiled."""
from __future__ import annotations

import numpy as np
import pytest

from kinedyn.io.angles import unwrap


def test_unwrap_equals_numpy_to_the_bit():
    rng = np.random.default_rng(7)
    for scale in (0.1, 2.0, 10.0):    # smooth, some wraps, mostly wraps
        p = np.cumsum(rng.normal(0.0, scale, 5000))
        wrapped = np.arctan2(np.sin(p), np.cos(p))
        assert np.array_equal(unwrap(wrapped), np.unwrap(wrapped))
        assert np.array_equal(unwrap(p), np.unwrap(p))
    # a rotating body's angle comes back continuous, to rounding
    t = np.linspace(0.0, 10.0, 2001)
    assert np.abs(unwrap(np.arctan2(np.sin(3 * t), np.cos(3 * t))) - 3 * t).max() < 1e-12


def test_unwrap_edge_cases():
    # jumps of exactly +-pi and 2 pi (the boundary NumPy resolves by the jump's sign)
    p = np.array([0.0, np.pi, 0.0, -np.pi, 2 * np.pi, 0.0, 3 * np.pi, -3 * np.pi])
    assert np.array_equal(unwrap(p), np.unwrap(p))
    assert unwrap(np.array([])).shape == (0,)
    assert np.array_equal(unwrap([1.5]), [1.5])
    with pytest.raises(ValueError, match="1-D"):
        unwrap(np.zeros((3, 2)))
