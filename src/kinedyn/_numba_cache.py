"""Numba's on-disk cache, keyed by the package's source and independent of where it is installed.

Numba checks only the file that holds a cached function, not the functions it calls in other
modules, so after an edit a cached caller could keep stale machine code. kinedyn therefore points
``NUMBA_CACHE_DIR`` (unless the user set it) at a directory named after a hash of all its source
files: a changed source means a fresh cache, an unchanged one reuses it.

Numba also files each module's cache under a hash of the module's *absolute* directory, so a
second checkout of the same sources (a fresh clone, a git worktree, CI) would compile every
kernel again although the source hash says the code is the same. :class:`PackageCacheLocator`
files kinedyn's own modules under their path *inside the package* instead; together with the
source-hash directory that makes the cache a function of the source alone. Numba's source stamp
is already a content hash (not a modification time), so checkouts made at different times agree.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
from pathlib import Path

KEEP = 8  # cache directories of older source versions kept (worktrees and branches share them)
ROOT = Path(__file__).resolve().parent


def _install_locator() -> None:
    """Put :class:`PackageCacheLocator` first in Numba's list of cache locators."""
    from numba.core import caching, config

    # public names since Numba 0.61, underscored before
    base = (getattr(caching, "UserProvidedCacheLocator", None)
            or getattr(caching, "_UserProvidedCacheLocator", None))
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if base is None or impl is None:
        return  # an unknown Numba layout: keep Numba's own locators

    class PackageCacheLocator(base):
        """Caches a kinedyn module's kernels under ``CACHE_DIR/kinedyn/<path in package>``."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            inside = Path(py_file).resolve().parent.relative_to(ROOT)
            self._cache_path = os.path.join(config.CACHE_DIR, "kinedyn", *inside.parts)

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                Path(py_file).resolve().relative_to(ROOT)
            except ValueError:  # not ours (generated modules, user code): Numba's own choice
                return None
            return super().from_function(py_func, py_file)

    classes = impl._locator_classes
    if not any(c.__name__ == PackageCacheLocator.__name__ for c in classes):
        classes.insert(0, PackageCacheLocator)


@functools.lru_cache(maxsize=None)
def source_digest() -> str:
    """Hash of every source file of the package (names and contents), 16 hex digits."""
    digest = hashlib.sha1()
    for path in sorted(ROOT.rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_base() -> Path:
    """The folder of the source versions' caches: ``$XDG_CACHE_HOME/kinedyn/numba``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kinedyn" / "numba"


def configure() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    base = cache_base()
    cache = base / source_digest()
    try:
        cache.mkdir(parents=True, exist_ok=True)
        cache.touch()
    except OSError:
        return  # leave Numba's own choice
    os.environ["NUMBA_CACHE_DIR"] = str(cache)
    config = getattr(sys.modules.get("numba"), "config", None)
    if config is not None:
        config.CACHE_DIR = str(cache)
    _install_locator()
    try:  # prune caches of old source versions
        old = sorted((p for p in base.iterdir() if p.is_dir() and p != cache),
                     key=lambda p: p.stat().st_mtime, reverse=True)
        for p in old[KEEP:]:
            shutil.rmtree(p, ignore_errors=True)
    except OSError:
        pass
