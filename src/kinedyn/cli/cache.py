"""``kinedyn cache``: where kinedyn keeps what it computes once, how much of it, and clearing it.

Everything there is derived (compiled kernels, generated machine code, Gröbner bases, tuning
choices): clearing it costs only the time to compute it again, on the next run that needs it.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import ModelError

#: what each folder holds (others are listed by name)
KINDS = {
    "numba": "compiled kernels (Numba), one folder per source version",
    "natural": "generated constraint code (natural coordinates), one module per structure",
    "lu": "generated sparse LU factorisations, one per sparsity pattern",
    "functions": "generated code of functions of time",
    "coupling": "generated group-coupling code (Group Equations)",
    "kernels": "generated symbolic kernels (triangular solvers, embedded dynamics)",
    "cse": "common-subexpression eliminations of symbolic models",
    "groebner": "Groebner bases, per model and parameter set",
    "autotune": "strategy choices of --strategy auto, per model and machine",
}


def register(sub) -> None:
    p = sub.add_parser(
        "cache", help="where the caches are, their sizes; --clear removes them",
        description="List kinedyn's caches (compiled kernels, generated code, Groebner bases, "
                    "tuning choices) with their sizes, or remove them. Everything there is "
                    "computed again when a run needs it.")
    p.add_argument("--clear", nargs="*", metavar="KIND",
                   help="remove the caches of the KINDs listed (default: all of them)")
    p.set_defaults(func=run)


def folders() -> dict[str, Path]:
    """The cache folders by kind: those under :func:`kinedyn._cache.cache_root`, and Numba's
    (:func:`kinedyn._numba_cache.cache_base`; a ``NUMBA_CACHE_DIR`` of the user's own is not
    kinedyn's to list or clear)."""
    from .._cache import cache_root
    from .._numba_cache import cache_base
    root = cache_root()
    out = {p.name: p for p in sorted(root.iterdir()) if p.is_dir()} if root.is_dir() else {}
    numba = cache_base()
    if numba.is_dir():
        out["numba"] = numba
    return out


def _size(path: Path) -> tuple[int, int]:
    """Bytes and files under ``path``."""
    sizes = [f.stat().st_size for f in path.rglob("*") if f.is_file()]
    return sum(sizes), len(sizes)


def run(args) -> int:
    from .._cache import cache_root
    found = folders()
    if args.clear is not None:
        kinds = args.clear or list(found)
        unknown = [k for k in kinds if k not in found]
        if unknown:
            raise ModelError(f"--clear: no cache {unknown[0]!r} here; there are: "
                             f"{', '.join(found) or '(none)'}")
        for kind in kinds:
            size, files = _size(found[kind])
            shutil.rmtree(found[kind], ignore_errors=True)
            print(f"removed {kind}: {files} files, {size / 1e6:.1f} MB ({found[kind]})")
        return 0
    print(f"kinedyn caches under {cache_root()}")
    total = 0
    for kind, path in found.items():
        size, files = _size(path)
        total += size
        print(f"  {kind:<10} {size / 1e6:9.1f} MB {files:7d} files  {KINDS.get(kind, '')}")
    print(f"  {'total':<10} {total / 1e6:9.1f} MB" if found else "  (empty)")
    return 0
