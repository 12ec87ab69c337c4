"""Model description: the builder API, model files, and the compiled model."""
from .compiled import CompiledModel
from .entries import Body, Driver, Force, Joint, Parameter, UserForce
from .system import GROUND, System

__all__ = ["System", "CompiledModel", "Body", "Joint", "Driver", "Force", "Parameter",
           "UserForce", "GROUND"]
