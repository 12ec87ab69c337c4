"""kinedyn: real-time kinematics and dynamics of closed-loop multibody systems.

Describe a mechanism (:class:`System` or a model file), compile it, then analyse it with any of
the formulations: natural coordinates (global or group equations), relative coordinates with
sparse solvers, the Hamiltonian divide-and-conquer algorithm, or the symbolic (Groebner
triangularised) pipeline.
"""
from ._numba_cache import configure as _configure_numba_cache

_configure_numba_cache()

from . import _jit  # noqa: E402,F401  (Numba's fixes, installed before anything compiles)
from ._compile_gc import install as _pause_collector_while_compiling  # noqa: E402

_pause_collector_while_compiling()

from .errors import (AssemblyError, ConvergenceError, KinedynError,  # noqa: E402
                     ModelError, SingularConfigurationError, SolverError, UnknownNameError)
from .model import CompiledModel, System  # noqa: E402
from . import models  # noqa: E402,F401  (the model library: kinedyn.models.get(name))

__version__ = "0.1.0"

__all__ = ["System", "CompiledModel", "ModelError", "UnknownNameError", "SolverError",
           "ConvergenceError", "SingularConfigurationError", "AssemblyError", "KinedynError",
           "load", "save", "load_results", "__version__"]


def load(path):
    """Load a model file (YAML or JSON) into a :class:`System` (see docs/model-format.md)."""
    from .model.files import load as _load
    return _load(path)


def save(system, path):
    """Save a :class:`System` to a YAML or JSON model file; loading it back is exact."""
    from .model.files import save as _save
    return _save(system, path)


def load_results(path):
    """Results saved by a run (``Results.save``, ``kinedyn kinematics``/``simulate``), read
    back from their folder or file: channels over time and the summary
    (:func:`kinedyn.io.results.load_results`)."""
    from .io.results import load_results as _load_results
    return _load_results(path)
