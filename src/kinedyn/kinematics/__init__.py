"""Position, velocity and acceleration analysis (Group Equations paper eqs. 1-3)."""
from .analysis import Kinematics, KinematicState
from .results import KinematicResults

__all__ = ["Kinematics", "KinematicState", "KinematicResults"]
