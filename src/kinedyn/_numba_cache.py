"""Numba's on-disk cache, keyed by the package's source.

Numba checks only the timestamp of the file that holds a cached function, not of the functions it
calls in other modules, so after an edit a cached caller could keep stale machine code. kinedyn
therefore points ``NUMBA_CACHE_DIR`` (unless the user set it) at a directory named after a hash
of all its source files: a changed source means a fresh cache, an unchanged one reuses it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

KEEP = 4  # cache directories of older source versions kept


def configure() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    root = Path(__file__).resolve().parent
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kinedyn" / "numba"
    cache = base / digest.hexdigest()[:16]
    try:
        cache.mkdir(parents=True, exist_ok=True)
        cache.touch()
    except OSError:
        return  # leave Numba's own choice
    os.environ["NUMBA_CACHE_DIR"] = str(cache)
    config = getattr(sys.modules.get("numba"), "config", None)
    if config is not None:
        config.CACHE_DIR = str(cache)
    try:  # prune caches of old source versions
        old = sorted((p for p in base.iterdir() if p.is_dir() and p != cache),
                     key=lambda p: p.stat().st_mtime, reverse=True)
        for p in old[KEEP:]:
            shutil.rmtree(p, ignore_errors=True)
    except OSError:
        pass
