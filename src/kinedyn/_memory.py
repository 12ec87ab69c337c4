"""Result arrays whose memory is mapped before a run writes them."""
from __future__ import annotations

import os

import numpy as np

from .errors import ModelError


def available_bytes() -> int | None:
    """Memory the system can still give (``MemAvailable`` of ``/proc/meminfo``; free
    physical pages elsewhere), or None when it cannot tell."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def resident_zeros(shape, dtype=np.float64) -> np.ndarray:
    """``np.zeros(shape, dtype)`` with every page already written once.

    A large ``np.zeros`` is fresh memory from the kernel: each page is mapped and zeroed on the
    first write to it, here about 2.4 µs per 4 KB page (KVM guest). A whole-run kernel that
    records into such arrays paid that inside its timed steps: the Stewart platform's paper
    step took 1.29x as long (2.5 KB of results per step). Allocating the results is not a
    step's work, so the analyses allocate them with this function, before their timers start
    (docs/architecture.md, "Result arrays").

    Results larger than the memory available are a :class:`ModelError` before the run (a
    mistyped ``dt = 1e-9`` would otherwise swap the machine to a halt or end in a bare
    MemoryError after minutes of filling pages)."""
    n_bytes = int(np.prod(shape, dtype=np.float64)) * np.dtype(dtype).itemsize
    free = available_bytes() if n_bytes > 2**28 else None  # (only large arrays are checked)
    if free is not None and n_bytes > 0.9 * free:
        rows = shape[0] if np.ndim(shape) else shape
        raise ModelError(f"the results of this run ({rows:,} recorded steps) need "
                         f"{n_bytes / 2**30:.3g} GB, more than the {free / 2**30:.3g} GB of "
                         "memory available: use a larger dt or a shorter run (or record only "
                         "every k-th step: record_every, where the analysis has it)")
    out = np.empty(shape, dtype)
    out.fill(0)
    return out
