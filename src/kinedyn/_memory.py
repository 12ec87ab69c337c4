"""Result arrays whose memory is mapped before a run writes them."""
from __future__ import annotations

import numpy as np


def resident_zeros(shape, dtype=np.float64) -> np.ndarray:
    """``np.zeros(shape, dtype)`` with every page already written once.

    A large ``np.zeros`` is fresh memory from the kernel: each page is mapped and zeroed on the
    first write to it, here about 2.4 µs per 4 KB page (KVM guest). A whole-run kernel that
    records into such arrays paid that inside its timed steps: the Stewart platform's paper
    step took 1.29x as long (2.5 KB of results per step). Allocating the results is not a
    step's work, so the analyses allocate them with this function, before their timers start
    (docs/architecture.md, "Result arrays")."""
    out = np.empty(shape, dtype)
    out.fill(0)
    return out
