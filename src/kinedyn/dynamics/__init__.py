"""Forward and inverse dynamics: methods, integrators, reactions."""
from .results import DynamicResults
from .simulation import METHODS, Dynamics

__all__ = ["Dynamics", "DynamicResults", "METHODS"]
