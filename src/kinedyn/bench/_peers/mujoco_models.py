"""MuJoCo's models of the peer mechanisms (:mod:`kinedyn.bench._peers`), stepped by its own C
loop (``mujoco.rollout``: one call for the whole run, so no Python per step).

MuJoCo works in joint coordinates (hinges about z, the cart's slide along x): an open chain is
its native case. A closed loop is a kinematic tree plus an equality constraint (``connect``, a
ball joint between two bodies' points) that MuJoCo treats as a *soft* constraint: its solver
finds the constraint force of a spring-damper with time constant ``solref[0]`` (0.02 s by
default), so the loop opens under load. The four-bar is run with MuJoCo's default and with the
stiffest setting its documentation advises (time constant 2 ``dt``), and the gap is reported.

The Gough-Stewart 6-UPS (:func:`gough_stewart`, spatial, gravity along -z) is six leg trees
(universal joint = two hinges, prismatic = a slide) and a free platform, closed by six
``connect`` equalities (the spherical joints), soft like the four-bar's; its time-dependent
leg forces are motor actuators whose controls ``rollout`` takes as an open-loop sequence, one
row per step, held constant over the step.

Contacts are disabled (no geometry collides here); every body has an explicit inertia, its
principal axes along the body frame (about z: the planar inertia; about the rod's own axis:
1e-6 kg m^2, which a hinge about z never excites).
"""
from __future__ import annotations

import math
import statistics
import time

import numpy as np

from . import FOUR_BAR, G, PeerRun, four_bar_start, probe

#: MuJoCo's "implicit" integrators are implicit only in the velocity-dependent forces (none
#: here): they would be its Euler again, so they are not offered as the implicit counterpart
INTEGRATORS = {"semi-implicit-euler": "Euler", "rk4": "RK4"}
_AXIAL = 1e-6  # inertia about a rod's own axis (kg m^2): any small positive value


available, version = probe("mujoco")


def _option(dt: float, integrator: str, gravity: str) -> str:
    """MuJoCo's ``<option>``: step, integrator, ``gravity`` (a vector, as text), contacts
    off."""
    if integrator not in INTEGRATORS:
        raise ValueError(f"MuJoCo: unknown integrator {integrator!r}; "
                         f"choose one of {', '.join(INTEGRATORS)}")
    return (f'<option timestep="{dt!r}" integrator="{INTEGRATORS[integrator]}" '
            f'gravity="{gravity}"><flag contact="disable"/></option>')


def _mjcf(dt: float, integrator: str, world: str, more: str = "",
          gravity: str = f"0 {-G!r} 0") -> str:
    """A whole model: explicit inertias, ``<option>`` (:func:`_option`; gravity ``G`` along -y
    by default, the spatial mechanisms pass -z), the ``world``'s bodies, then ``more``
    (actuators, equalities)."""
    return (f'<mujoco><compiler angle="radian" inertiafromgeom="false"/>'
            f'{_option(dt, integrator, gravity)}<worldbody>{world}</worldbody>{more}</mujoco>')


def _soft(timeconst: float | None) -> tuple[str, str]:
    """A ``connect`` equality's ``solref`` attribute for the time constant ``timeconst`` (None:
    MuJoCo's default, 0.02 s), and the same in words for the set-up."""
    if timeconst is None:
        return "", "default solref (0.02 s)"
    return f' solref="{timeconst!r} 1"', f"solref {timeconst:g} s"


def _rod(name: str, length: float, mass: float, angle: float, pos=(0.0, 0.0),
         along: str = "x", inner: str = "", izz: float | None = None) -> str:
    """A rod body rotated by ``angle`` about z from its parent, at ``pos`` in the parent's
    frame, lying along its own +x (or -y: ``along="-y"``), with a hinge about z at its origin;
    ``inner``: child bodies; ``izz``: inertia about z at the centre (None: uniform, m l^2/12)."""
    izz = mass * length ** 2 / 12 if izz is None else izz
    if along == "x":
        com, inertia = f"{length / 2!r} 0 0", f"{_AXIAL} {izz!r} {izz!r}"
    else:
        com, inertia = f"0 {-length / 2!r} 0", f"{izz!r} {_AXIAL} {izz!r}"
    return (f'<body name="{name}" pos="{pos[0]!r} {pos[1]!r} 0" '
            f'euler="0 0 {angle!r}"><joint name="{name}" type="hinge" axis="0 0 1"/>'
            f'<inertial pos="{com}" mass="{mass!r}" diaginertia="{inertia}"/>{inner}</body>')


def _compile(xml: str):
    """Model and data; MuJoCo's refusal (a chain deeper than its tree limit, about 1000
    bodies) as a ValueError that says so."""
    import mujoco
    try:
        model = mujoco.MjModel.from_xml_string(xml)
    except ValueError as exc:
        raise ValueError(f"MuJoCo refuses the model: {exc}".replace("\n", " ")) from None
    return model, mujoco.MjData(model)


def _run(model, data, t_end: float, repeat: int, control=None):
    """Median µs per step of ``repeat`` rollouts from the model's reference state, and the
    states (nstep x nstate) of the last one. ``control``: None (no actuators), or a callable
    of the step times (an array, k dt for step k) returning the actuator controls (nstep x
    nu); rollout writes row k into ``data.ctrl`` before step k, so the control of a step is
    the value at the step's start, held over the whole step (RK4's stages included)."""
    import mujoco
    from mujoco import rollout
    steps = int(round(t_end / model.opt.timestep))
    ctrl = None
    if control is not None:
        ctrl = np.ascontiguousarray(
            control(np.arange(steps) * model.opt.timestep), dtype=float)[None]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    mujoco.mj_resetData(model, data)
    x0 = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, x0, spec)
    state = np.empty((1, steps, x0.size))
    sensordata = np.empty((1, steps, max(model.nsensordata, 1)))
    times = []
    for _ in range(repeat + 1):  # the first run warms up (thread pool, caches)
        t0 = time.perf_counter()
        rollout.rollout(model, data, x0[None], ctrl, nstep=steps, state=state,
                        sensordata=sensordata[..., :model.nsensordata])
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]) / steps * 1e6, x0, state[0]


def _samples(model, data, x0, states, every: int, read=None):
    """(t, qpos) at t = 0 and every ``every`` steps; ``read``: a callable of ``data`` (its
    state set, nothing computed from it) returning what to sample instead of qpos."""
    import mujoco
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    rows = [x0] + [states[k] for k in range(every - 1, len(states), every)]
    t, qpos = [], []
    for x in rows:
        mujoco.mj_setState(model, data, x, spec)
        t.append(data.time)
        qpos.append(data.qpos.copy() if read is None else read(data))
    return np.array(t), np.array(qpos)


def double_pendulum(t_end: float, dt: float, integrator: str, repeat: int = 3,
                    sample_every: int = 10) -> PeerRun:
    """Two hinged rods, both starting horizontal along +x (hinge angles 0)."""
    rod2 = _rod("rod2", 1.0, 1.0, 0.0, pos=(1.0, 0.0))
    model, data = _compile(_mjcf(dt, integrator, _rod("rod1", 1.0, 1.0, 0.0, inner=rod2)))
    us, x0, states = _run(model, data, t_end, repeat)
    t, qpos = _samples(model, data, x0, states, sample_every)
    theta1 = math.pi / 2 + qpos[:, 0]
    return PeerRun(version(), f"hinges, {INTEGRATORS[integrator]}, dt = {dt}", us, t,
                   {"theta1": theta1, "theta2": theta1 + qpos[:, 1]})


def four_bar(t_end: float, dt: float, integrator: str, repeat: int = 3, sample_every: int = 10,
             timeconst: float | None = None) -> PeerRun:
    """Crank and coupler as a chain from A, the rocker from D, the loop closed at C by a
    ``connect`` equality; ``timeconst``: its ``solref`` time constant (None: MuJoCo's
    default, 0.02 s)."""
    ground, l1, l2, l3 = FOUR_BAR
    crank, coupler, rocker = four_bar_start()
    inner = _rod("coupler", l2, 1.0, coupler - crank, pos=(l1, 0.0))
    solref, soft = _soft(timeconst)
    model, data = _compile(_mjcf(
        dt, integrator, _rod("crank", l1, 1.0, crank, inner=inner)
        + _rod("rocker", l3, 1.0, rocker, pos=(ground, 0.0)),
        f'<equality><connect body1="coupler" body2="rocker" anchor="{l2!r} 0 0"{solref}/>'
        f'</equality>'))
    us, x0, states = _run(model, data, t_end, repeat)
    t, qpos = _samples(model, data, x0, states, sample_every)
    # the gap from the angles: C by the crank and coupler, C by the rocker
    a_crank = crank + qpos[:, 0]
    a_coupler = a_crank + coupler - crank + qpos[:, 1]
    a_rocker = rocker + qpos[:, 2]
    c1 = l1 * np.stack([np.cos(a_crank), np.sin(a_crank)]) + \
        l2 * np.stack([np.cos(a_coupler), np.sin(a_coupler)])
    c2 = np.array([[ground], [0.0]]) + l3 * np.stack([np.cos(a_rocker), np.sin(a_rocker)])
    return PeerRun(version(), f"tree + connect equality, {soft}, "
                   f"{INTEGRATORS[integrator]}, dt = {dt}", us, t,
                   {"crank": a_crank, "gap": np.hypot(*(c1 - c2))},
                   notes="soft loop: the connect constraint is a spring-damper")


def _cart_pendulum_xml(n: int, dt: float, integrator: str) -> str:
    """The cart's slide along x, then ``n`` hinged links along their -y axes, the first at
    pi/4 from the downward vertical."""
    inner = ""
    for k in range(n, 0, -1):
        angle = math.pi / 4 if k == 1 else 0.0
        pos = (0.0, 0.0) if k == 1 else (0.0, -1.0)
        inner = _rod(f"link{k}", 1.0, 0.4, angle, pos=pos, along="-y", inner=inner,
                     izz=0.0333)
    cart = (f'<body name="cart"><joint name="slide" type="slide" axis="1 0 0"/>'
            f'<inertial pos="0 0 0" mass="0.8" diaginertia="0.0833 0.0833 0.0833"/>{inner}'
            f'</body>')
    return _mjcf(dt, integrator, cart)


def cart_pendulum(n: int, t_end: float, dt: float, integrator: str, repeat: int = 3,
                  sample_every: int = 10) -> PeerRun:
    """The cart-pendulum with ``n`` links (:func:`_cart_pendulum_xml`)."""
    model, data = _compile(_cart_pendulum_xml(n, dt, integrator))
    us, x0, states = _run(model, data, t_end, repeat)
    t, qpos = _samples(model, data, x0, states, sample_every)
    return PeerRun(version(), f"slide + {n} hinges, {INTEGRATORS[integrator]}, "
                   f"dt = {dt}", us, t, {"x": qpos[:, 0], "angle": math.pi / 4 + qpos[:, 1]})


def forward_us(n: int, repeat: int = 7) -> float:
    """Median µs of one ``mj_forward`` (MuJoCo's whole forward dynamics: positions, the mass
    matrix and its factorisation, velocities, accelerations) of the ``n``-link cart-pendulum
    at its initial state (:func:`~kinedyn.bench.common.per_call_us` over a Python loop of
    calls)."""
    import mujoco
    from ..common import per_call_us
    model, data = _compile(_cart_pendulum_xml(n, 1e-3, "rk4"))
    calls = max(2, 20_000 // n)

    def loop():
        for _ in range(calls):
            mujoco.mj_forward(model, data)
    return per_call_us(loop, calls, repeat)


def _gough_stewart_xml(dt: float, integrator: str, timeconst: float | None) -> str:
    """The 6-UPS platform (:func:`kinedyn.models.stewart.gough_stewart`) at its home pose.

    Platform: a free body (``freejoint``) with its frame at its centre of mass. Each leg k: a
    tree from the world - the lower segment, a body at B_k oriented like kinedyn's (``euler``
    alpha_k, beta_k in MuJoCo's default intrinsic x-y-z sequence, so its +z points from B_k
    to P_k), with two hinges at its origin: the universal joint, the first about world x (in
    the body frame R0^T e_x = (cos beta, 0, sin beta); the first of a body's joints turns the
    later ones' axes, not its own), the second about the segment's own y; the upper segment, a
    child body at P_k (L_k along the lower's z) with a slide joint along z, the prismatic
    joint, and a ``motor`` actuator on it (gear 1: the control is the joint force, positive
    extending the leg, as kinedyn's joint force on the displacement). The spherical joint at
    P_k is a ``connect`` equality between the upper segment's origin and the platform, soft
    (``solref`` time constant ``timeconst``; None: MuJoCo's default, 0.02 s)."""
    from ...models.stewart import GS_HOME, gough_stewart, gs_leg
    home = np.array(GS_HOME, dtype=float)
    par = {e.name: float(e.value) for e in gough_stewart().parameters}  # masses, inertias
    half = par["segment_length"] / 2
    seg = (f'mass="{par["segment_mass"]!r}" diaginertia="{par["segment_inertia"]!r} '
           f'{par["segment_inertia"]!r} {par["segment_spin_inertia"]!r}"')
    plat = f'{par["platform_inertia"]!r}'
    solref = _soft(timeconst)[0]
    legs, motors, connects = [], [], []
    for k in range(6):
        i = k + 1
        B, P, alpha, beta = gs_leg(k)
        bx, by, bz = (float(v) for v in B)
        length = float(np.linalg.norm(P - B))
        upper = (f'<body name="upper{i}" pos="0 0 {length!r}">'
                 f'<joint name="slide{i}" type="slide" axis="0 0 1"/>'
                 f'<inertial pos="0 0 {-half!r}" {seg}/></body>')
        legs.append(f'<body name="lower{i}" pos="{bx!r} {by!r} {bz!r}" '
                    f'euler="{alpha!r} {beta!r} 0">'
                    f'<joint name="ux{i}" type="hinge" '
                    f'axis="{math.cos(beta)!r} 0 {math.sin(beta)!r}"/>'
                    f'<joint name="uy{i}" type="hinge" axis="0 1 0"/>'
                    f'<inertial pos="0 0 {half!r}" {seg}/>{upper}</body>')
        motors.append(f'<motor name="F{i}" joint="slide{i}" gear="1"/>')
        connects.append(f'<connect body1="upper{i}" body2="platform" anchor="0 0 0"{solref}/>')
    platform = (f'<body name="platform" pos="{" ".join(repr(float(v)) for v in home)}"><freejoint/>'
                f'<inertial pos="0 0 0" mass="{par["platform_mass"]!r}" '
                f'diaginertia="{plat} {plat} {plat}"/></body>')
    return _mjcf(dt, integrator, platform + "".join(legs),
                 f'<actuator>{"".join(motors)}</actuator>'
                 f'<equality>{"".join(connects)}</equality>', gravity=f"0 0 {-par['g']!r}")


def gough_stewart(t_end: float, dt: float, integrator: str, repeat: int = 3,
                  sample_every: int = 10, timeconst: float | None = None) -> PeerRun:
    """The Gough-Stewart 6-UPS (:func:`_gough_stewart_xml`): six leg trees and a free
    platform, the six spherical joints ``connect`` equalities, the leg forces F1 = F3 = F5 =
    -0.1 sin(2 pi t/3) N and F2 = F4 = F6 = +0.1 sin(2 pi t/3) N the six motors' controls,
    precomputed for every step (``rollout`` takes an open-loop control sequence: no Python per
    step). Observables ``x``, ``y``, ``z``: the platform's centre of mass (m); ``gap``: the
    largest over the legs of |P_k on the upper segment - P_k on the platform| (m)."""
    import mujoco
    from ...models.stewart import GS_PLATFORM
    model, data = _compile(_gough_stewart_xml(dt, integrator, timeconst))
    sign = np.array([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
    us, x0, states = _run(model, data, t_end, repeat,
                          control=lambda t: np.outer(0.1 * np.sin(2 * math.pi * t / 3), sign))
    plat = model.body("platform").id
    upper = [model.body(f"upper{i}").id for i in range(1, 7)]
    points = np.array(GS_PLATFORM)  # P_k in the platform frame

    def read(d):
        mujoco.mj_kinematics(model, d)
        on_platform = d.xpos[plat] + points @ d.xmat[plat].reshape(3, 3).T
        gap = np.linalg.norm(d.xpos[upper] - on_platform, axis=1).max()
        return np.array([*d.xipos[plat], gap])

    t, obs = _samples(model, data, x0, states, sample_every, read=read)
    soft = _soft(timeconst)[1]
    return PeerRun(version(), f"6 leg trees + free platform + 6 connect equalities, "
                   f"{soft}, {INTEGRATORS[integrator]}, dt = {dt}", us, t,
                   {"x": obs[:, 0], "y": obs[:, 1], "z": obs[:, 2], "gap": obs[:, 3]},
                   notes="soft loops: each connect constraint is a spring-damper; the leg "
                         "forces are motor controls taken at each step's start time and "
                         "held over the step (RK4's stages included)")
