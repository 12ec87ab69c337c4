"""Assembly: a configuration that satisfies the constraints, from an approximate one.

:func:`assemble` solves the position problem by least squares from a guess, so redundant
constraints and the nearest assembly mode are handled. The model's pose is its configuration at
``POSE_TIME``; assembled at another time, it is followed along the drivers from there
(continuation, :func:`follow_drivers`), so the configuration is the one the mechanism reaches by
moving from its pose, not whichever solution lies nearest a pose the drivers have moved away
from (a driven angle half a turn off, another assembly mode of a six-bar).
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np
import scipy.optimize as so
import scipy.sparse as sps

from ..errors import AssemblyError, ModelError, coordinates
from ..formulations import protocol
from ..model.compiled import (COMPONENT_CODE, DRIVER_CODE, require_positive_distances,
                              undefined)
from .diagnose import worst

POSE_TIME = 0.0  # the time a model's pose (its bodies' positions and orientations) is for
# continuation: largest change of any driver's function (rad, m) per assembly step, the
# number of samples its variation is measured on, and the most steps taken
FOLLOW_STEP = 0.05
FOLLOW_SAMPLES = 1025
FOLLOW_MAX_STEPS = 2000


def constraint_values(f, q, t, work=None, rows=None) -> np.ndarray:
    rows = np.arange(f.n_c) if rows is None else np.asarray(rows, np.int64)
    out = np.zeros(len(rows))
    _eval_phi(f.data, work if work is not None else f.make_work(), np.asarray(q, float), float(t),
              rows, out)
    return out


def constraint_jacobian(f, q, t, work=None) -> sps.csr_matrix:
    values = np.zeros(len(f.data.jac_indices))
    _eval_phi_q(f.data, work if work is not None else f.make_work(), np.asarray(q, float),
                float(t), np.arange(f.n_c), values)
    return sps.csr_matrix((values, f.data.jac_indices, f.data.jac_indptr), shape=(f.n_c, f.n_q))


def assemble(f, q_guess, t: float = 0.0, tol: float = 1e-10, work=None, *,
             pose_time: float | None = None) -> np.ndarray:
    """Satisfy the constraints near an approximate configuration.

    Least squares (SciPy's trust-region reflective solver with the sparse Jacobian) from the
    guess, so redundant constraints and the nearest assembly mode are handled; raises
    :class:`AssemblyError` naming the constraints that cannot be met. ``pose_time``: the time
    the guess is a configuration for (the model's pose: :data:`POSE_TIME`); when it differs from
    ``t`` and the guess assembles there, the assembly is followed along the drivers to ``t``
    (:func:`follow_drivers`).
    """
    work = work if work is not None else f.make_work()
    q_guess = coordinates(f, q_guess, "the initial guess of the coordinates")
    if pose_time is not None and float(pose_time) != float(t) and _driver_functions(f.model).size:
        try:
            q_pose = assemble(f, q_guess, pose_time, tol, work)
        except (AssemblyError, ModelError):  # no pose there: assemble directly at t
            q_pose = None
        if q_pose is not None:
            return follow_drivers(f, q_pose, pose_time, t, tol, work)
    require_positive_distances(f.model, [t])
    phi = constraint_values(f, q_guess, t, work) if f.n_c else np.zeros(0)
    if np.abs(phi).max(initial=0.0) <= tol:
        _require_driven_angles(f, q_guess, t)
        return q_guess.copy()
    if not np.isfinite(phi).all():  # SciPy's least squares would stop on it, saying only that
        why = undefined(f.model, [t])
        raise ModelError(why) if why is not None else AssemblyError(
            "the constraints are not finite at the initial guess", time=t,
            constraints=[f.constraint_names[r] for r in np.flatnonzero(~np.isfinite(phi))])
    sol = so.least_squares(lambda q: constraint_values(f, q, t, work), q_guess,
                           jac=lambda q: constraint_jacobian(f, q, t, work), method="trf",
                           x_scale="jac", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=500)
    phi = constraint_values(f, sol.x, t, work)
    if np.abs(phi).max() > max(tol, 1e-8):
        raise AssemblyError(
            "the constraints cannot be satisfied near the initial configuration (largest "
            f"residual {np.abs(phi).max():.3g}); check the geometry and the drivers at t0",
            time=t, constraints=[f.constraint_names[r] for r in worst(phi)])
    _require_driven_angles(f, sol.x, t)
    return sol.x


def follow_drivers(f, q, t_from: float, t_to: float, tol: float = 1e-10, work=None):
    """The assembly ``q`` at ``t_from`` followed along the drivers to ``t_to``: assembled again
    at times close enough that no driver's function changes by more than ``FOLLOW_STEP`` (rad or
    m) between two of them, each from the one before, so it stays on the branch the mechanism
    moves along (as a run from ``t_from`` would). Raises :class:`AssemblyError` naming the time
    where the assembly was lost (a singular configuration between the two times)."""
    work = work if work is not None else f.make_work()
    m = f.model
    used = _driver_functions(m)
    n = 1
    if used.size:
        grid = np.linspace(t_from, t_to, FOLLOW_SAMPLES)
        require_positive_distances(m, grid)
        values = np.array([m.functions.evaluate(s)[used, 0] for s in grid])
        variation = np.abs(np.diff(values, axis=0)).sum(axis=0).max()
        if not np.isfinite(variation):
            raise ModelError(undefined(m, grid) or "a driver's function is not finite between "
                             f"t = {t_from:.6g} s and {t_to:.6g} s")
        n = int(min(max(math.ceil(variation / FOLLOW_STEP), 1), FOLLOW_MAX_STEPS))
    for s in np.linspace(t_from, t_to, n + 1)[1:]:
        try:
            q = assemble(f, q, float(s), tol, work)
        except AssemblyError as e:
            raise AssemblyError(
                f"following the drivers from the pose at t = {t_from:.6g} s to t = {t_to:.6g} s, "
                f"the assembly was lost ({e.detail})", time=float(s),
                constraints=e.constraints) from None
    return q


def _driver_functions(model) -> np.ndarray:
    """The ids of the functions of time the drivers follow."""
    return np.unique(model.driver_function[model.driver_function >= 0])


def _require_driven_angles(f, q, t: float) -> None:
    """An AssemblyError for a driven joint angle assembled half a turn from its driver. In
    natural coordinates a joint-angle driver is one equation, ``sin(theta) e1.e2 - cos(theta)
    e1 x e2 = 0``, met at theta and at theta + pi; an assembly started from a pose far from
    the driver's value converged to theta + pi with residual 1e-11, and the whole run followed
    the wrong half turn. Assemblies from the model's pose follow the drivers from its time
    (:func:`follow_drivers`), so this is met only where the pose itself is that far off."""
    m = f.model
    drivers = [k for k in range(m.n_driver) if m.driver_kind[k] == DRIVER_CODE["joint"]
               and m.driver_component[k] == COMPONENT_CODE["angle"]]
    if not drivers:
        return
    z = np.zeros((1, f.n_q))
    channels = f.observables(q[None], z, z)
    values = m.functions.evaluate(t)
    for k in drivers:
        name = m.joint_name[m.driver_joint[k]]
        angle = channels.get(f"joint.{name}.angle")
        if angle is None:
            continue
        target = values[m.driver_function[k, 0], 0]
        off = (float(angle[0]) - target + np.pi) % (2 * np.pi) - np.pi
        if abs(off) > np.pi / 2:
            raise AssemblyError(
                f"the driven angle of joint {name!r} assembled at {float(angle[0]):.6g} rad, "
                f"half a turn from its driver's {target:.6g} rad (the driver's equation holds "
                "for both): start from a pose nearer the driven angle (the bodies' "
                "orientation)", time=t, constraints=[f"driver {m.driver_name[k]}"])


@nb.njit(cache=True)
def _eval_phi(data, work, q, t, rows, out):
    protocol.calc_phi(data, work, q, t, rows, out)


@nb.njit(cache=True)
def _eval_phi_q(data, work, q, t, rows, values):
    protocol.calc_phi_q(data, work, q, t, rows, values)
