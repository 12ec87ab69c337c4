"""The entries of a model description, exactly as the user gave them.

Each entry keeps its fields *raw* (numbers or expression strings) so that saving a model writes
back exactly what was loaded; numbers are evaluated only by :meth:`System.compile`. The field
names are the keys of the model-file format (``docs/model-format.md``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable

DRIVER_KINDS = ("joint", "distance", "pose")
FORCE_KINDS = ("point", "spring", "joint")

#: Joint type -> (fields it requires, fields it accepts besides those), per dimension.
JOINT_FIELDS = {
    2: {"revolute": ({"point_a", "point_b"}, {"ref_a", "ref_b"}),
        "prismatic": ({"point_a", "point_b", "axis_a", "axis_b"}, set()),
        "fixed": ({"point_a", "point_b"}, set()),
        "rod": ({"point_a", "point_b"}, {"length"}),
        "free": (set(), set())},
    3: {"revolute": ({"point_a", "point_b", "axis_a", "axis_b"}, {"ref_a", "ref_b"}),
        "prismatic": ({"point_a", "point_b", "axis_a", "axis_b"}, set()),
        "fixed": ({"point_a", "point_b"}, set()),
        "rod": ({"point_a", "point_b"}, {"length"}),
        "spherical": ({"point_a", "point_b"}, set()),
        "universal": ({"point_a", "point_b", "axis_a", "axis_b"}, set()),
        "cylindrical": ({"point_a", "point_b", "axis_a", "axis_b"}, {"ref_a", "ref_b"}),
        "free": (set(), set())},
}
# A "free" joint (floating base: 3 dof in 2-D, 6 in 3-D) constrains nothing; it states that a
# body moves freely relative to another (usually the ground) and gives it a tree parent.

#: Joint type -> its joint coordinates (what a joint driver or joint force acts on).
JOINT_COORDINATES = {"revolute": ("angle",), "prismatic": ("displacement",),
                     "cylindrical": ("angle", "displacement")}


class Entry:
    """Common behaviour: conversion to the plain dict of the file format."""

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or (f.name in ("points", "vectors") and not value):
                continue
            out[f.name] = _plain(value)
        return out


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


@dataclass
class Parameter(Entry):
    """A named number that other fields may use in expressions."""
    name: str
    value: Any
    description: str | None = None


@dataclass
class Input(Entry):
    """A named value that loads (force functions) read, set from outside while a simulation
    runs (a controller's command, hardware in the loop): held over each step."""
    name: str
    value: Any = 0.0
    description: str | None = None


@dataclass
class Body(Entry):
    """A rigid body: inertial data, initial pose, and named points and unit vectors.

    ``com``, ``points`` and ``vectors`` are in body coordinates. ``position`` and ``orientation``
    are the initial (approximate) pose used to assemble the mechanism: a 2-D orientation is an
    angle, a 3-D one is three Euler angles (the system's ``euler_sequence``) or a 3x3 matrix.
    ``inertia`` is about the centre of mass in body axes: a scalar in 2-D; in 3-D a 3x3 matrix,
    three principal moments ``[Ixx, Iyy, Izz]`` or six values ``[Ixx, Iyy, Izz, Ixy, Ixz, Iyz]``.
    """
    name: str
    mass: Any = None
    inertia: Any = None
    com: Any = None
    position: Any = None
    orientation: Any = None
    points: dict = field(default_factory=dict)
    vectors: dict = field(default_factory=dict)
    description: str | None = None


@dataclass
class Joint(Entry):
    """A joint between named points (and unit vectors) of two bodies; any joint may close a loop.

    ``ref_a``/``ref_b`` are optional reference vectors (perpendicular to the axis) from which a
    revolute or cylindrical joint angle is measured; ``length`` is a rod's distance (default: the
    distance in the initial configuration).
    """
    name: str
    type: str
    body_a: str
    body_b: str
    point_a: str | None = None
    point_b: str | None = None
    axis_a: str | None = None
    axis_b: str | None = None
    ref_a: str | None = None
    ref_b: str | None = None
    length: Any = None


@dataclass
class Driver(Entry):
    """Prescribed motion, a function of time.

    kinds: ``joint`` (``joint`` [+ ``component``] follows ``function``), ``distance`` (between
    ``point_a`` of ``body_a`` and ``point_b`` of ``body_b``), ``pose`` (``body``'s origin follows
    ``position`` and its orientation ``orientation``, Euler angles in ``sequence``).
    """
    name: str
    kind: str
    function: Any = None
    joint: str | None = None
    component: str | None = None
    body_a: str | None = None
    point_a: str | None = None
    body_b: str | None = None
    point_b: str | None = None
    body: str | None = None
    position: Any = None
    orientation: Any = None
    sequence: str | None = None


@dataclass
class Force(Entry):
    """An applied load.

    kinds: ``point`` (``force`` vector of functions of time at ``point`` of ``body``, in
    ``frame`` ``world`` or ``body``), ``spring`` (spring-damper between ``point_a`` of ``body_a``
    and ``point_b`` of ``body_b`` with ``stiffness``, ``damping``, ``free_length``; optional
    ``force`` adds a prescribed actuator force along the line), ``joint`` (torque or force
    ``function`` on ``joint`` [+ ``component``]; positive drives the joint coordinate positive).
    """
    name: str
    kind: str
    body: str | None = None
    point: str | None = None
    force: Any = None
    frame: str | None = None
    body_a: str | None = None
    point_a: str | None = None
    body_b: str | None = None
    point_b: str | None = None
    stiffness: Any = None
    damping: Any = None
    free_length: Any = None
    joint: str | None = None
    component: str | None = None
    function: Any = None


@dataclass
class UserForce:
    """A force computed by user code (the documented hook, Python API only).

    ``points`` lists ``(body, point)`` pairs. ``function(t, p, v, f)`` receives the world
    positions ``p (n, dim)`` and velocities ``v (n, dim)`` of those points and writes the world
    forces ``f (n, dim)`` acting on them. Numba compiles it into the force kernels
    (:mod:`kinedyn.model.user_forces`): an ``numba.njit`` function or a plain function Numba
    can compile.
    """
    name: str
    points: list
    function: Callable
