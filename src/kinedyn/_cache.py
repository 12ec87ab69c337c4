"""Where kinedyn keeps what it computes once and reuses across runs (Gröbner bases, tuning
choices, generated machine code): ``$KINEDYN_CACHE``, else ``$XDG_CACHE_HOME/kinedyn``, else
``~/.cache/kinedyn``. (Numba's compiled kernels live under ``$XDG_CACHE_HOME/kinedyn/numba``,
see :mod:`kinedyn._numba_cache`.)"""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("KINEDYN_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kinedyn"
