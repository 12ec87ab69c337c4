import os
import shutil
from pathlib import Path

import pytest
import sympy

from kinedyn._numba_cache import source_digest

KEEP = 4  # cache directories of older source versions kept


@pytest.fixture(autouse=True, scope="session")
def _symbolic_cache(tmp_path_factory):
    """Groebner bases, CSE results and generated modules cached per version of the sources.

    They are computed for real once per version of kinedyn's sources and SymPy (any edit of a
    source file starts a new directory, as for the Numba cache in ``kinedyn._numba_cache``) and
    then reused by later runs, so a repeated run checks the same derivations without paying for
    them again. ``KINEDYN_FRESH_SYMBOLIC=1`` derives everything again in a per-session
    directory.
    """
    if os.environ.get("KINEDYN_FRESH_SYMBOLIC"):
        root = tmp_path_factory.mktemp("kinedyn-cache")
    else:
        base = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kinedyn"
                / "tests")
        root = base / f"{source_digest()}-sympy{sympy.__version__}"
        root.mkdir(parents=True, exist_ok=True)
        old = sorted((p for p in base.iterdir() if p.is_dir() and p != root),
                     key=lambda p: p.stat().st_mtime, reverse=True)
        for p in old[KEEP:]:
            shutil.rmtree(p, ignore_errors=True)
    mp = pytest.MonkeyPatch()
    mp.setenv("KINEDYN_CACHE", str(root))
    yield
    mp.undo()
