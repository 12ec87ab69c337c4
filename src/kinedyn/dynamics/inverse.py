"""Inverse dynamics: the actuator efforts that produce a prescribed motion.

The motion comes from the model's drivers (kinematic analysis: positions, velocities and
accelerations of every body, Group Equations paper eqs. 1-3). The efforts come from the
Newton-Euler equations of every body (:mod:`.reactions`) with the *actuated joint freedoms* as
unknowns: with ``actuators`` given, the drivers only prescribe the motion and transmit nothing,
so a pose-driven Stewart platform gives the forces of its six legs (or the torques of its six
rotary actuators) rather than a wrench on its platform. With as many independent actuators as
the undriven mechanism has degrees of freedom the efforts are unique. Too few actuators (or an
actuator singularity) show as a Newton-Euler residual: an error. Too many (redundant actuation)
leave the efforts undetermined: the null space of the equations says which, a warning names
them, and the minimum-norm split is reported.

For a model whose drivers are the actuators themselves (a driven crank), ``actuators=None``
reports the efforts of the drivers (``effort.<driver>``): equivalently the driver constraints'
multipliers.
"""
from __future__ import annotations

import time as _time
import warnings

import numpy as np

from ..errors import ModelError, UnknownNameError
from ..io.results import Results
from ..kinematics.analysis import Kinematics
from ..model.compiled import COMPONENT_CODE, JOINT_CODE
from .reactions import ReactionSolver, reactions, undetermined_efforts

_DEFAULT_COMPONENT = {JOINT_CODE["revolute"]: "angle", JOINT_CODE["prismatic"]: "displacement"}


def parse_actuators(model, actuators) -> dict[int, set[int]]:
    """``["P1", "R2:angle", ...]`` or ``"P1, R2:angle"`` -> {joint index: {component code}}
    (revolute: angle, prismatic: displacement; others need ``joint:component``)."""
    out: dict[int, set[int]] = {}
    for spec in actuator_list(actuators):
        name, _, comp = spec.partition(":")
        if name not in model.joint_name:
            raise UnknownNameError("actuated joint", name, model.joint_name)
        j = model.joint_name.index(name)
        comp = comp or _DEFAULT_COMPONENT.get(int(model.joint_type[j]))
        if comp not in COMPONENT_CODE:
            raise ModelError(f"actuator {spec!r}: give the joint's component as "
                             f"'{name}:angle' or '{name}:displacement'")
        if COMPONENT_CODE[comp] in out.setdefault(j, set()):
            raise ModelError(f"actuator {spec!r} is listed twice (joint {name!r}, {comp})")
        out[j].add(COMPONENT_CODE[comp])
    return out


def actuator_list(actuators) -> list[str]:
    """The actuated joints as a list of names: a list or tuple of strings, or one string of
    comma-separated names (not read letter by letter); none, or anything else, is a
    :class:`ModelError`."""
    if isinstance(actuators, str):
        actuators = [a.strip() for a in actuators.split(",") if a.strip()]
    if not isinstance(actuators, (list, tuple)) or not all(isinstance(a, str)
                                                           for a in actuators):
        raise ModelError("actuators are joint names ('P1' or 'R2:angle') or a list of them, "
                         f"got {actuators!r}")
    if not actuators:
        raise ModelError("no actuators given: name the actuated joints")
    return list(actuators)


class InverseResults(Results):
    """Prescribed motion (q, qd, qdd), efforts ``effort.<joint>``, reactions, residual."""

    def __init__(self, kin, times, efforts, summary):
        self.kin = kin
        super().__init__(times, {**kin.channels, **efforts}, summary)


def inverse_dynamics(model, actuators=None, *, t_end: float, dt: float, t0: float = 0.0,
                     progress=None, **kinematics_options) -> InverseResults:
    """Efforts of ``actuators`` (joint names, see :func:`parse_actuators`; ``None``: the drivers)
    along the motion the model's drivers prescribe, from ``t0`` to ``t_end`` every ``dt``."""
    analysis = Kinematics(model, t0=t0, **kinematics_options)
    act = None if actuators is None else parse_actuators(analysis.f.model, actuators)
    start = _time.perf_counter()
    kin = analysis.simulate(t_end, dt, t0=t0, progress=progress)
    out, summary = motion_loads(analysis.f, kin, act, stacklevel=3)
    summary = {"model": analysis.f.model.name, "analysis": "inverse-dynamics",
               "t0": t0, "t_end": float(kin.time[-1]), "dt": dt, "samples": len(kin.time),
               "wall_time_s": _time.perf_counter() - start, **summary}
    return InverseResults(kin, kin.time, out, summary)


def motion_loads(f, kin, actuators: dict | None, stacklevel: int = 2) -> tuple[dict, dict]:
    """Joint reactions and actuator efforts (``effort.<joint>``) that produce the motion of the
    kinematic results ``kin`` (formulation ``f``; ``actuators`` parsed by
    :func:`parse_actuators`, None: the drivers), with the Newton-Euler residual per sample,
    and the summary entries that go with them (``actuators``, ``max_effort``,
    ``max_newton_euler_residual``, ``undetermined_efforts``). Efforts that are not unique are
    warned of; actuators that cannot produce the motion are a :class:`ModelError`."""
    out, residual = reactions(f, kin.time, kin.q, kin.qd, kin.qdd, actuators)
    out["residual.newton_euler"] = residual
    efforts = {k: v for k, v in out.items() if k.startswith("effort.")}
    scale = max(1.0, max((float(np.abs(v).max()) for v in efforts.values()), default=1.0))
    summary = {"actuators": sorted(k[len("effort."):] for k in efforts),
               "max_effort": {k[len("effort."):]: float(np.abs(v).max())
                              for k, v in efforts.items()},
               "max_newton_euler_residual": float(residual.max(initial=0.0)),
               "undetermined_efforts": _undetermined(f, actuators, kin)}
    if summary["undetermined_efforts"]:
        warnings.warn(
            f"inverse dynamics of {f.model.name!r}: the efforts of "
            f"{', '.join(summary['undetermined_efforts'])} are not unique (more actuated "
            "freedoms than the undriven mechanism has degrees of freedom, or an actuator "
            "singularity); the minimum-norm split is reported", stacklevel=stacklevel + 1)
    if summary["max_newton_euler_residual"] > 1e-6 * scale:
        raise ModelError(
            f"inverse dynamics of {f.model.name!r}: the actuators {summary['actuators']} cannot "
            f"produce the prescribed motion (Newton-Euler residual "
            f"{summary['max_newton_euler_residual']:.3g}); give one actuated freedom per "
            "degree of freedom of the undriven mechanism, away from actuator singularities")
    return out, summary


#: the dense null space (an SVD) costs about 5 s at 2600 unknowns (a 290-body platform):
#: beyond ``CHECK_ALL`` unknowns only the first sample is checked, beyond ``CHECK_FIRST`` none
CHECK_ALL, CHECK_FIRST = 1000, 3000


def _undetermined(f, actuators, kin) -> list[str] | None:
    """The actuated freedoms whose efforts are not unique at the first, middle or last sample
    (:func:`.reactions.undetermined_efforts`; redundant actuation is structural, a singular
    actuator pose is caught where the residual check does not see it); None: not checked
    (more than ``CHECK_FIRST`` unknowns, or relative coordinates: their drivers' efforts come
    from the multipliers, :mod:`.relative_reactions`)."""
    if getattr(f, "name", "") == "relative":
        return None
    solver = ReactionSolver(f, actuators)
    if solver.n_unknown > CHECK_FIRST:
        return None
    n = len(kin.time)
    samples = {0} if solver.n_unknown > CHECK_ALL else {0, n // 2, n - 1}
    out: list[str] = []
    for k in sorted(samples):
        s = slice(k, k + 1)
        motion = f.body_motion(kin.q[s], kin.qd[s], kin.qdd[s])
        P = f.point_trajectory(kin.q[s], kin.qd[s])[0]
        out += [a for a in undetermined_efforts(solver, motion, 0, P) if a not in out]
    return out
