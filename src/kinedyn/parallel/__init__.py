"""Thread teams for compiled kernels (see :mod:`.team`)."""
from .team import Team, atomic_add, atomic_load, atomic_store, barrier, make_sync, wait_until

__all__ = ["Team", "atomic_add", "atomic_load", "atomic_store", "barrier", "make_sync",
           "wait_until"]
