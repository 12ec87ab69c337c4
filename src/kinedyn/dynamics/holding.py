"""Static actuator efforts that hold a mechanism at rest, and the model that applies them.

At rest (qd = qdd = 0) the Newton-Euler equations of every body (:mod:`.reactions`) with the
actuated joint freedoms as unknowns give the efforts that balance gravity, springs and the other
loads in the initial configuration. :func:`holding_system` returns the model with its drivers
removed and those efforts applied as constant joint forces (replacing any loads already on the
actuated joints), e.g. the Gough-Stewart platform with its six legs holding its home pose.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..kinematics.analysis import formulation_for
from ..kinematics.assembly import assemble
from .inverse import actuator_list, parse_actuators
from .reactions import reactions


def holding_efforts(system, actuators, t: float = 0.0) -> dict[str, float]:
    """{joint name: effort} holding ``system`` (drivers removed) at rest in its initial
    configuration (assembled at time ``t``): one component per joint, its effort a constant
    force ``hold_<joint>``."""
    actuators = actuator_list(actuators)
    joints = [a.partition(":")[0] for a in actuators]
    twice = sorted({j for j in joints if joints.count(j) > 1})
    if twice:
        raise ModelError(f"joint(s) {', '.join(map(repr, twice))} listed more than once: each "
                         "held joint takes one component")
    free = _without(system, actuators)
    f = formulation_for(free.compile())
    q = assemble(f, f.q0, t)[None]
    zero = np.zeros_like(q)
    act = parse_actuators(f.model, actuators)
    out, residual = reactions(f, np.array([t]), q, zero, zero, act)
    if residual[0] > 1e-8 * max(1.0, max(abs(v[0]) for k, v in out.items())):
        raise ModelError(f"the actuators {list(actuators)} cannot hold {system.name!r} at rest "
                         f"(Newton-Euler residual {residual[0]:.3g})")
    return {name.partition(":")[0]: float(out[f"effort.{name.partition(':')[0]}"][0])
            for name in actuators}


def holding_system(system, actuators, t: float = 0.0):
    """A copy of ``system`` without drivers, with the holding efforts as constant joint forces
    named ``hold_<joint>``."""
    actuators = actuator_list(actuators)
    efforts = holding_efforts(system, actuators, t)
    s = _without(system, actuators)
    for spec in actuators:
        joint, _, comp = spec.partition(":")
        fields = {"joint": joint, "function": repr(efforts[joint])}
        if comp:
            fields["component"] = comp
        s.add_force(f"hold_{joint}", "joint", **fields)
    return s


def _without(system, actuators):
    """Copy without drivers and without the loads already acting on the actuated joints."""
    joints = {a.partition(":")[0] for a in actuators}
    s = system.copy()
    s.drivers = []
    s.forces = [f for f in s.forces if not (f.kind == "joint" and f.joint in joints)]
    return s
