"""Exudyn peer: the double pendulum and the four-bar of :mod:`kinedyn.bench._peers` built and
stepped with Exudyn's own objects and solvers.

Two integrators, each with the Exudyn model it can actually solve:

* ``"implicit"``: Exudyn's default implicit solver, generalized-alpha on the index-3 DAE
  (``DynamicSolverType.GeneralizedAlpha`` with its default spectral radius 0.9, Newton on the
  position-level constraints). Each link is an ``ObjectRigidBody2D`` on a ``NodeRigidBody2D``
  (x, y, phi; local x axis along the link), every pin an ``ObjectJointRevolute2D`` between
  two ``MarkerBodyPosition`` markers, gravity a ``LoadMassProportional`` per body. The
  four-bar's loop is closed by the joint at C like the other three joints.
* ``"rk4"``: ``DynamicSolverType.RK44``. Exudyn's explicit solvers do not solve algebraic
  constraints (only a coordinate fixed to ground), so the links form an
  ``ObjectKinematicTree`` in joint coordinates (``RevoluteZ`` joints): the double pendulum is
  then an exact open chain (joint angles as minimal coordinates, no constraint at all). The
  four-bar cannot be a tree: the tree is crank + coupler from A and rocker from D, and the
  joint C is a stiff ``CartesianSpringDamper`` between ``MarkerKinematicTreeRigid`` markers at
  the coupler's and the rocker's ends - a penalty (soft) loop whose gap is reported. Its
  stiffness follows the step, ``k = m_eff (PENALTY_OMEGA_DT / dt)^2`` with damping ratio
  ``PENALTY_DAMPING_RATIO``, so that the closure mode stays inside RK4's stability region at
  any ``dt`` (the gap then scales with dt^2).

Timing covers ``MainSolver*.SolveSteps`` only (the fixed-step loop, sensors storing samples
internally); assembling the system and ``InitializeSolver`` (which resets the state to the
initial values) are outside the timed region. Solution files, sensor files, console output and
rendering are off, so nothing is written to disk.
"""
from __future__ import annotations

import math
import time

import numpy as np

from . import FOUR_BAR, G, PeerRun, four_bar_start, probe

INTEGRATORS = ("rk4", "implicit")

# double pendulum: two uniform rods
DP_LENGTH, DP_MASS = 1.0, 1.0
# four-bar: ground pivots A = (0, 0), D = (FB_GROUND, 0); uniform links of FB_MASS
FB_GROUND, FB_CRANK, FB_COUPLER, FB_ROCKER = FOUR_BAR
FB_MASS = 1.0

# penalty loop of the four-bar with RK4: the smallest effective mass of the closure mode,
# 1 / max eig(J M^-1 J^T) over a crank turn (J: Jacobian of the gap in tree coordinates,
# max eigenvalue 5.45 1/kg); the closure mode's largest omega * dt (RK4 is stable up to 2.8 on
# the imaginary axis) and its damping ratio. Measured at dt = 1e-3 over 1 s against kinedyn:
# omega*dt 1 / 1.5 / 2 gave crank errors 2.3e-3 / 5.0e-4 / 1.8e-4 rad (damping ratio 0.2);
# critical damping dissipates energy and gave 1.2e-2 / 3.1e-3 / 5.7e-4 rad.
PENALTY_MASS = 0.18
PENALTY_OMEGA_DT = 2.0
PENALTY_DAMPING_RATIO = 0.2


available, version = probe("exudyn")


def double_pendulum(t_end: float, dt: float, integrator: str, repeat: int = 3,
                    sample_every: int = 10) -> PeerRun:
    """Double pendulum (two 1 m, 1 kg rods, both released horizontal) with Exudyn.

    ``rk4``: ``ObjectKinematicTree`` with two ``RevoluteZ`` joints (joint coordinates: rod 1's
    angle, rod 2's angle relative to rod 1) and RK44; ``implicit``: two ``ObjectRigidBody2D``
    and two ``ObjectJointRevolute2D`` with generalized-alpha. Observables ``theta1``,
    ``theta2``: absolute angles of the rods from the downward vertical (rad, CCW)."""
    _check(integrator, dt, t_end, repeat, sample_every)
    import exudyn as exu
    th0 = (math.pi / 2, math.pi / 2)
    if integrator == "rk4":
        mbs, sc, sensor = _tree(exu, [-1, 0], [[0, 0], [DP_LENGTH, 0]], [DP_LENGTH] * 2,
                                [DP_MASS] * 2, [th0[0] - math.pi / 2, th0[1] - th0[0]])
        us, t, (q,) = _run(exu, mbs, [sensor], t_end, dt, integrator, repeat, sample_every)
        values = {"theta1": q[:, 0] + math.pi / 2, "theta2": q[:, 0] + q[:, 1] + math.pi / 2}
        setup = (f"ObjectKinematicTree, 2 RevoluteZ joints (minimal coordinates), "
                 f"RK44, dt={dt:g}")
        notes = "open chain in joint coordinates: no constraints to enforce"
    else:
        L, m = DP_LENGTH, DP_MASS
        u1 = (math.sin(th0[0]), -math.cos(th0[0]))               # rod directions
        u2 = (math.sin(th0[1]), -math.cos(th0[1]))
        mbs, sc, sensors, markers = _bodies2d(exu, [
            ((L / 2 * u1[0], L / 2 * u1[1]), th0[0] - math.pi / 2, L, m),
            ((L * u1[0] + L / 2 * u2[0], L * u1[1] + L / 2 * u2[1]), th0[1] - math.pi / 2, L, m)])
        ground = _ground_markers(mbs, [(0.0, 0.0)])
        _revolute(mbs, ground[0], markers[0][0])
        _revolute(mbs, markers[0][1], markers[1][0])
        us, t, (q1, q2) = _run(exu, mbs, sensors, t_end, dt, integrator, repeat, sample_every)
        values = {"theta1": q1[:, 2] + math.pi / 2, "theta2": q2[:, 2] + math.pi / 2}
        setup = (f"2 ObjectRigidBody2D + 2 ObjectJointRevolute2D, generalized-alpha index 3 "
                 f"(rho_inf 0.9), dt={dt:g}")
        notes = "Exudyn's default implicit solver: Newton on the index-3 DAE each step"
    return PeerRun(version(), setup, us, t, values, notes)


def four_bar(t_end: float, dt: float, integrator: str, repeat: int = 3,
             sample_every: int = 10) -> PeerRun:
    """Four-bar linkage (crank 0.1, coupler 0.4, rocker 0.3 m, ground 0.4 m) with Exudyn.

    ``implicit``: three ``ObjectRigidBody2D`` and four ``ObjectJointRevolute2D`` (the loop closed
    by Exudyn's index-3 constraints) with generalized-alpha; ``rk4``: ``ObjectKinematicTree``
    (crank-coupler chain from A, rocker from D) with the joint C as a penalty
    ``CartesianSpringDamper`` and RK44. Observables ``crank``: the crank's angle from +x (rad,
    continuous); ``gap``: |C on coupler - C on rocker| (m), from the bodies' poses."""
    _check(integrator, dt, t_end, repeat, sample_every)
    import exudyn as exu
    l1, l2, l3, m = FB_CRANK, FB_COUPLER, FB_ROCKER, FB_MASS
    a0, b0, r0 = four_bar_start()  # crank, coupler and rocker angles from +x
    b_pt = (l1 * math.cos(a0), l1 * math.sin(a0))
    c_pt = (b_pt[0] + l2 * math.cos(b0), b_pt[1] + l2 * math.sin(b0))
    if integrator == "rk4":
        k = PENALTY_MASS * (PENALTY_OMEGA_DT / dt) ** 2
        d = 2.0 * PENALTY_DAMPING_RATIO * PENALTY_MASS * PENALTY_OMEGA_DT / dt
        mbs, sc, sensor = _tree(exu, [-1, 0, -1], [[0, 0], [l1, 0], [FB_GROUND, 0]],
                                [l1, l2, l3], [m] * 3, [a0, b0 - a0, r0],
                                penalty=((1, l2), (2, l3), k, d))
        us, t, (q,) = _run(exu, mbs, [sensor], t_end, dt, integrator, repeat, sample_every)
        crank, coupler, rocker = q[:, 0], q[:, 0] + q[:, 1], q[:, 2]
        c_coupler = (l1 * np.cos(crank) + l2 * np.cos(coupler),
                     l1 * np.sin(crank) + l2 * np.sin(coupler))
        c_rocker = (FB_GROUND + l3 * np.cos(rocker), l3 * np.sin(rocker))
        setup = (f"ObjectKinematicTree (3 RevoluteZ) + penalty CartesianSpringDamper at C "
                 f"(k={k:.3g} N/m, d={d:.3g} Ns/m), RK44, dt={dt:g}")
        notes = ("soft loop: Exudyn's explicit solvers cannot enforce joints, so C is a "
                 f"penalty spring (omega*dt <= {PENALTY_OMEGA_DT:g}, damping ratio "
                 f"{PENALTY_DAMPING_RATIO:g}); the gap is its stretch (scales with dt^2)")
    else:
        mbs, sc, sensors, markers = _bodies2d(exu, [
            ((b_pt[0] / 2, b_pt[1] / 2), a0, l1, m),
            (((b_pt[0] + c_pt[0]) / 2, (b_pt[1] + c_pt[1]) / 2), b0, l2, m),
            (((FB_GROUND + c_pt[0]) / 2, c_pt[1] / 2), r0, l3, m)])
        ground = _ground_markers(mbs, [(0.0, 0.0), (FB_GROUND, 0.0)])
        _revolute(mbs, ground[0], markers[0][0])            # A
        _revolute(mbs, markers[0][1], markers[1][0])        # B
        _revolute(mbs, markers[1][1], markers[2][1])        # C closes the loop
        _revolute(mbs, ground[1], markers[2][0])            # D
        us, t, (qa, qb, qr) = _run(exu, mbs, sensors, t_end, dt, integrator, repeat,
                                   sample_every)
        crank = qa[:, 2]
        c_coupler = (qb[:, 0] + l2 / 2 * np.cos(qb[:, 2]), qb[:, 1] + l2 / 2 * np.sin(qb[:, 2]))
        c_rocker = (qr[:, 0] + l3 / 2 * np.cos(qr[:, 2]), qr[:, 1] + l3 / 2 * np.sin(qr[:, 2]))
        setup = (f"3 ObjectRigidBody2D + 4 ObjectJointRevolute2D, generalized-alpha index 3 "
                 f"(rho_inf 0.9), dt={dt:g}")
        notes = "loop closed by Exudyn's position-level constraints (Newton tolerance)"
    gap = np.hypot(c_coupler[0] - c_rocker[0], c_coupler[1] - c_rocker[1])
    return PeerRun(version(), setup, us, t, {"crank": crank, "gap": gap}, notes)


# --- model building -----------------------------------------------------------------------

def _check(integrator, dt, t_end, repeat, sample_every):
    if integrator not in INTEGRATORS:
        raise ValueError(f"unknown integrator {integrator!r} for Exudyn: use one of "
                         f"{', '.join(INTEGRATORS)}")
    if not (dt > 0 and t_end > 0 and repeat >= 1 and sample_every >= 1):
        raise ValueError("need dt > 0, t_end > 0, repeat >= 1 and sample_every >= 1")


def _rod_inertia(m, length):
    """3D inertia about the centre of a slender rod along its local x axis."""
    i = m * length ** 2 / 12.0
    return np.diag([0.0, i, i])


def _tree(exu, parents, offsets, lengths, masses, q0, penalty=None):
    """A planar ``ObjectKinematicTree`` of uniform rods with ``RevoluteZ`` joints.

    Link ``i`` hangs from link ``parents[i]`` (-1: ground) at ``offsets[i]`` in the parent's
    frame; its local x axis runs along the rod (joint angle 0: parallel to the parent's x
    axis), its centre at ``lengths[i] / 2``. ``q0``: initial joint angles (relative).
    ``penalty``: ``((link, x), (link, x), k, d)`` joins two link points by a Cartesian
    spring-damper. Returns the system, its container and a sensor of the joint angles."""
    from exudyn.itemInterface import (MarkerKinematicTreeRigid, NodeGenericODE2,
                                      ObjectConnectorCartesianSpringDamper,
                                      ObjectKinematicTree, SensorNode)
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    n = len(parents)
    node = mbs.AddNode(NodeGenericODE2(numberOfODE2Coordinates=n, referenceCoordinates=[0.0] * n,
                                       initialCoordinates=list(q0),
                                       initialCoordinates_t=[0.0] * n))
    tree = mbs.AddObject(ObjectKinematicTree(
        nodeNumber=node, jointTypes=[exu.JointType.RevoluteZ] * n, linkParents=list(parents),
        jointTransformations=exu.Matrix3DList([np.eye(3)] * n),
        jointOffsets=exu.Vector3DList([[x, y, 0.0] for x, y in offsets]),
        linkInertiasCOM=exu.Matrix3DList([_rod_inertia(m, l) for m, l in zip(masses, lengths)]),
        linkCOMs=exu.Vector3DList([[l / 2.0, 0.0, 0.0] for l in lengths]),
        linkMasses=list(masses), gravity=[0.0, -G, 0.0]))
    if penalty is not None:
        (la, xa), (lb, xb), k, d = penalty
        ma = mbs.AddMarker(MarkerKinematicTreeRigid(objectNumber=tree, linkNumber=la,
                                                    localPosition=[xa, 0.0, 0.0]))
        mb = mbs.AddMarker(MarkerKinematicTreeRigid(objectNumber=tree, linkNumber=lb,
                                                    localPosition=[xb, 0.0, 0.0]))
        mbs.AddObject(ObjectConnectorCartesianSpringDamper(
            markerNumbers=[ma, mb], stiffness=[k, k, k], damping=[d, d, d]))
    sensor = mbs.AddSensor(SensorNode(nodeNumber=node, storeInternal=True, writeToFile=False,
                                      outputVariableType=exu.OutputVariableType.Coordinates))
    return mbs, sc, sensor


def _bodies2d(exu, links):
    """``ObjectRigidBody2D`` uniform rods under gravity; ``links``: (centre, angle, length,
    mass), the local x axis along the rod. Each node's reference coordinates are the initial
    pose (x, y, phi); its sensor stores the displacement from it, so each sensor is returned
    as ``(sensor, reference)`` for :func:`_run` to add the two. Returns the system, its
    container, the sensors and per body its end markers (at -length/2 and +length/2)."""
    from exudyn.itemInterface import (LoadMassProportional, MarkerBodyMass, MarkerBodyPosition,
                                      NodeRigidBody2D, ObjectRigidBody2D, SensorNode)
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    sensors, markers = [], []
    for (x, y), phi, length, m in links:
        node = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[x, y, phi],
                                           initialCoordinates=[0.0, 0.0, 0.0],
                                           initialVelocities=[0.0, 0.0, 0.0]))
        body = mbs.AddObject(ObjectRigidBody2D(
            nodeNumber=node, mass=m, inertia=m * length ** 2 / 12.0))
        mass_marker = mbs.AddMarker(MarkerBodyMass(bodyNumber=body))
        mbs.AddLoad(LoadMassProportional(markerNumber=mass_marker, loadVector=[0.0, -G, 0.0]))
        sensor = mbs.AddSensor(SensorNode(nodeNumber=node, storeInternal=True, writeToFile=False,
                                          outputVariableType=exu.OutputVariableType.Coordinates))
        sensors.append((sensor, (x, y, phi)))
        markers.append(tuple(mbs.AddMarker(MarkerBodyPosition(bodyNumber=body,
                                                              localPosition=[s * length / 2, 0, 0]))
                             for s in (-1.0, 1.0)))
    return mbs, sc, sensors, markers


def _ground_markers(mbs, points):
    """One ``ObjectGround`` with a position marker at each of ``points``."""
    from exudyn.itemInterface import MarkerBodyPosition, ObjectGround
    ground = mbs.AddObject(ObjectGround())
    return [mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[x, y, 0.0]))
            for x, y in points]


def _revolute(mbs, marker_a, marker_b):
    """A planar pin (two algebraic equations, index 3) between two position markers."""
    from exudyn.itemInterface import ObjectJointRevolute2D
    mbs.AddObject(ObjectJointRevolute2D(markerNumbers=[marker_a, marker_b]))


# --- running ------------------------------------------------------------------------------

def _settings(exu, t_end, dt, integrator, sample_every):
    """Fixed-step settings, every output off; sensors keep samples in memory."""
    n_steps = int(round(t_end / dt))
    s = exu.SimulationSettings()
    ti = s.timeIntegration
    ti.startTime, ti.endTime, ti.numberOfSteps = 0.0, n_steps * dt, n_steps
    ti.verboseMode = 0
    ti.verboseModeFile = 0
    ti.adaptiveStep = False                       # fixed step: a failed step is an error
    ti.automaticStepSize = False
    if integrator == "rk4":
        ti.solverType = exu.DynamicSolverType.RK44
        ti.explicit.computeEndOfStepAccelerations = False   # 4 RHS evaluations per step
    else:
        ti.solverType = exu.DynamicSolverType.GeneralizedAlpha
    s.solution.file.write = False
    s.solution.restart.write = False
    s.solution.sensors.active = True
    s.solution.sensors.writePeriod = sample_every * dt
    s.show.computationTime = False
    s.show.globalTimers = False
    s.show.statistics = False
    return s, n_steps


def _run(exu, mbs, sensors, t_end, dt, integrator, repeat, sample_every):
    """Run ``repeat`` times from the initial state; time ``SolveSteps`` only.

    Returns the median µs per step, the sample times (t = 0 and every ``sample_every`` steps;
    Exudyn adds the end time when it is off that grid) and, per sensor, the stored samples
    (reference coordinates added for 2D-body sensors given as ``(sensor, reference)``)."""
    mbs.Assemble()
    settings, n_steps = _settings(exu, t_end, dt, integrator, sample_every)
    if integrator == "rk4":
        solver = exu.MainSolverExplicit()
    else:
        solver = exu.MainSolverImplicitSecondOrder()
    times = []
    for _ in range(repeat):
        solver.InitializeSolver(mbs, settings)     # resets to the initial values
        start = time.perf_counter()
        ok = solver.SolveSteps(mbs, settings)
        times.append(time.perf_counter() - start)
        solver.FinalizeSolver(mbs, settings)
        if not ok:
            raise RuntimeError(f"Exudyn {integrator} failed: {solver.GetErrorString()}")
    t, out = None, []
    for sensor in sensors:
        sensor, ref = sensor if isinstance(sensor, tuple) else (sensor, None)
        data = np.array(mbs.GetSensorStoredData(sensor), dtype=float)
        t = data[:, 0]
        q = data[:, 1:]
        out.append(q if ref is None else q + np.asarray(ref))
    return float(np.median(times)) / n_steps * 1e6, t, out
