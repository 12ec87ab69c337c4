"""Pinocchio peer: the benchmark mechanisms as Pinocchio kinematic trees, stepped from Python.

Each mechanism is built with ``pinocchio.Model()``: ``addJoint`` (``JointModelRZ`` for a
revolute joint about z, ``JointModelPX`` for the cart's slider) and ``appendBodyToJoint`` with
``pinocchio.Inertia(mass, lever, rotational_inertia)`` (lever = centre of mass in the joint
frame, inertia about the centre of mass; with all rotation axes along z only its zz entry acts),
gravity ``model.gravity`` = (0, -G, 0). Joint coordinates of RZ / PX joints are plain reals, so
``q += dt * v`` is exactly ``pinocchio.integrate``.

Accelerations: ``pinocchio.aba`` (articulated-body algorithm) for the open chains; for the
closed four-bar ``pinocchio.constraintDynamics`` with a ``RigidConstraintModel`` (CONTACT_3D)
closing the loop at C (see :func:`four_bar`). Integrators: ``"rk4"`` (classic RK4 on (q, v),
four evaluations per step) and ``"semi-implicit-euler"`` (v += dt a; q += dt v). Pinocchio has
no fixed-step simulator of its own, so the stepping loop is a Python loop calling Pinocchio's
C++ once per evaluation; its time per step includes that Python overhead (:func:`aba_us` gives
the per-call cost of ``aba`` alone).
"""
from __future__ import annotations

import math
import statistics
import time

import numpy as np

from . import FOUR_BAR, G, PeerRun, four_bar_start, probe

INTEGRATORS = ("rk4", "semi-implicit-euler")

# four-bar geometry (see the package docstring): pivots A = (0, 0), D = (GROUND, 0)
GROUND, CRANK, COUPLER, ROCKER = FOUR_BAR
LINK_MASS = 1.0
# Baumgarte gains of the loop closure (critically damped, omega = 20 rad/s)
BAUMGARTE_KP, BAUMGARTE_KD = 400.0, 40.0
# proximal solver: mu > 0 regularises the loop's redundant (always zero) z row
PROX_ACCURACY, PROX_MU, PROX_MAX_ITER = 1e-12, 1e-8, 10


available, version = probe("pinocchio")


def _new_model():
    import pinocchio as pin
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, -G, 0.0]), np.zeros(3))
    return model


def _at(x: float, y: float):
    """Placement translated by (x, y) in the plane."""
    import pinocchio as pin
    return pin.SE3(np.eye(3), np.array([x, y, 0.0]))


def _link(mass: float, com, izz: float):
    """Body inertia: ``mass`` at ``com`` (joint frame), ``izz`` about the centre of mass (the
    other diagonal entries are set equal; planar motion about z never sees them)."""
    import pinocchio as pin
    return pin.Inertia(mass, np.array([com[0], com[1], 0.0]), np.eye(3) * izz)


def _revolute(model, parent: int, placement, name: str, inertia) -> int:
    import pinocchio as pin
    jid = model.addJoint(parent, pin.JointModelRZ(), placement, name)
    model.appendBodyToJoint(jid, inertia, _at(0.0, 0.0))
    return jid


def _check(integrator: str) -> None:
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")


def _run(acc, q0, t_end: float, dt: float, integrator: str, repeat: int, sample_every: int):
    """Step ``q'' = acc(q, q')`` from (q0, 0) ``repeat`` times with the Python loop; return the
    median wall time per step (µs), the sample times and the sampled q (one row per sample)."""
    _check(integrator)
    n_steps = max(1, int(round(t_end / dt)))
    every = max(1, int(sample_every))
    n_samples = n_steps // every + 1
    h, h2, h6 = dt, 0.5 * dt, dt / 6.0
    times = []
    for _ in range(max(1, int(repeat))):
        q = np.array(q0, dtype=float)
        v = np.zeros_like(q)
        out = np.empty((n_samples, q.size))
        out[0] = q
        k = 1
        start = time.perf_counter()
        if integrator == "rk4":
            for i in range(1, n_steps + 1):
                a1 = acc(q, v)
                v2 = v + h2 * a1
                a2 = acc(q + h2 * v, v2)
                v3 = v + h2 * a2
                a3 = acc(q + h2 * v2, v3)
                v4 = v + h * a3
                a4 = acc(q + h * v3, v4)
                q = q + h6 * (v + 2.0 * (v2 + v3) + v4)
                v = v + h6 * (a1 + 2.0 * (a2 + a3) + a4)
                if i % every == 0:
                    out[k] = q
                    k += 1
        else:
            for i in range(1, n_steps + 1):
                v = v + h * acc(q, v)
                q = q + h * v
                if i % every == 0:
                    out[k] = q
                    k += 1
        times.append((time.perf_counter() - start) / n_steps * 1e6)
    t = np.arange(n_samples) * (every * dt)
    return statistics.median(times), t, out


def _setup(integrator: str, dt: float, what: str) -> str:
    return f"{integrator}, dt = {dt:g} s, {what}"


_LOOP_NOTE = ("Python stepping loop (Pinocchio has no fixed-step simulator): each evaluation is "
              "one Python->C++ call, so the time per step includes interpreter overhead")


# --------------------------------------------------------------------------- double pendulum

def _double_pendulum_model():
    """Two RZ joints; rod frames hang along -y, so q1 is rod 1's angle from the downward
    vertical and q2 rod 2's angle relative to rod 1."""
    model = _new_model()
    rod = _link(1.0, (0.0, -0.5), 1.0 / 12.0)
    j1 = _revolute(model, 0, _at(0.0, 0.0), "shoulder", rod)
    _revolute(model, j1, _at(0.0, -1.0), "elbow", rod)
    return model


def double_pendulum(t_end: float, dt: float, integrator: str, repeat: int = 3,
                    sample_every: int = 10) -> PeerRun:
    """Double pendulum with ``pinocchio.aba``; observables ``theta1`` = q1, ``theta2`` = q1+q2."""
    import pinocchio as pin
    model = _double_pendulum_model()
    data, tau = model.createData(), np.zeros(model.nv)
    aba = pin.aba

    def acc(q, v):
        return aba(model, data, q, v, tau)

    us, t, qs = _run(acc, [math.pi / 2, 0.0], t_end, dt, integrator, repeat, sample_every)
    return PeerRun(version(), _setup(integrator, dt, "pinocchio.aba, 2 RZ joints"),
                   us, t, {"theta1": qs[:, 0].copy(), "theta2": qs[:, 0] + qs[:, 1]},
                   notes=_LOOP_NOTE)


# ------------------------------------------------------------------------------ cart pendulum

def _available_bytes() -> float:
    """MemAvailable from /proc/meminfo (inf where it cannot be read)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return math.inf


def _check_data_memory(nv: int) -> None:
    """``Model.createData`` allocates second-order derivative tensors (``d2tau_dqdq`` and three
    more, nv^3 doubles each) whatever algorithm is used, ~64 nv^3 bytes at its peak (8.6 GB at
    nv = 513); refuse before the operating system kills the process."""
    need = 64.0 * nv ** 3 + 400.0 * nv ** 2
    if need > 0.8 * _available_bytes():
        raise MemoryError(f"pinocchio Data for nv = {nv} needs ~{need / 2**30:.1f} GiB (nv^3 "
                          f"derivative tensors); only {_available_bytes() / 2**30:.1f} GiB free")


def _cart_pendulum_model(n: int):
    """PX slider carrying the cart, then ``n`` RZ joints (links hanging along -y in their
    frames, as in :func:`kinedyn.models.chains.cart_pendulum`); q = (x, relative angles)."""
    import pinocchio as pin
    if int(n) != n or n < 1:
        raise ValueError(f"cart-pendulum needs a positive whole number of links, got {n!r}")
    model = _new_model()
    cart = model.addJoint(0, pin.JointModelPX(), _at(0.0, 0.0), "slide")
    model.appendBodyToJoint(cart, _link(0.8, (0.0, 0.0), 0.0833), _at(0.0, 0.0))
    link = _link(0.4, (0.0, -0.5), 0.0333)
    parent = _revolute(model, cart, _at(0.0, 0.0), "pin1", link)
    for k in range(2, int(n) + 1):
        parent = _revolute(model, parent, _at(0.0, -1.0), f"pin{k}", link)
    _check_data_memory(model.nv)
    q0 = np.zeros(model.nq)
    q0[1] = math.pi / 4
    return model, q0


def cart_pendulum(n: int, t_end: float, dt: float, integrator: str, repeat: int = 3,
                  sample_every: int = 10) -> PeerRun:
    """Cart with an ``n``-link pendulum with ``pinocchio.aba``; observables ``x`` = q[0],
    ``angle`` = q[1] (the first link's absolute angle, as the cart does not rotate)."""
    import pinocchio as pin
    model, q0 = _cart_pendulum_model(n)
    data, tau = model.createData(), np.zeros(model.nv)
    aba = pin.aba

    def acc(q, v):
        return aba(model, data, q, v, tau)

    us, t, qs = _run(acc, q0, t_end, dt, integrator, repeat, sample_every)
    return PeerRun(version(),
                   _setup(integrator, dt, f"pinocchio.aba, PX + {int(n)} RZ joints"),
                   us, t, {"x": qs[:, 0].copy(), "angle": qs[:, 1].copy()}, notes=_LOOP_NOTE)


def aba_us(n: int, repeat: int = 7) -> float:
    """Median µs of one ``pinocchio.aba`` call on cart-pendulum-``n`` at its initial state
    (:func:`~kinedyn.bench.common.per_call_us` over a Python loop of 200 calls). Raises
    ``MemoryError`` when Pinocchio's Data (nv^3 tensors) would not fit in memory (n = 1024
    needs ~64 GiB)."""
    import pinocchio as pin
    from ..common import per_call_us
    model, q = _cart_pendulum_model(n)
    data, v, tau = model.createData(), np.zeros(model.nv), np.zeros(model.nv)
    aba, calls = pin.aba, 200

    def loop():
        for _ in range(calls):
            aba(model, data, q, v, tau)
    return per_call_us(loop, calls, repeat)


# ---------------------------------------------------------------------------------- four-bar

def _four_bar_model():
    """Tree A-crank-coupler (RZ at A, RZ at B) and D-rocker (RZ at D), links along +x in their
    frames; the loop is closed at C by a CONTACT_3D ``RigidConstraintModel`` between the
    coupler's end (joint B, x = COUPLER) and the rocker's end (joint D, x = ROCKER), frames
    LOCAL, with Baumgarte gains. Returns model, constraint models, q0 = (crank angle, coupler
    angle relative to the crank, rocker angle)."""
    import pinocchio as pin
    model = _new_model()

    def uniform(length):
        return _link(LINK_MASS, (length / 2, 0.0), LINK_MASS * length ** 2 / 12)

    ja = _revolute(model, 0, _at(0.0, 0.0), "A", uniform(CRANK))
    jb = _revolute(model, ja, _at(CRANK, 0.0), "B", uniform(COUPLER))
    jd = _revolute(model, 0, _at(GROUND, 0.0), "D", uniform(ROCKER))
    loop = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, model, jb, _at(COUPLER, 0.0),
                                    jd, _at(ROCKER, 0.0), pin.ReferenceFrame.LOCAL)
    loop.name = "C"
    loop.setBaumgarteCorrectorParameters(
        pin.BaumgarteCorrectorParameters(BAUMGARTE_KP, BAUMGARTE_KD))
    constraints = pin.StdVec_RigidConstraintModel()
    constraints.append(loop)
    crank, coupler, rocker = four_bar_start()
    return model, constraints, np.array([crank, coupler - crank, rocker])


def _four_bar_gap(model, qs) -> np.ndarray:
    """|C on the coupler - C on the rocker| for each row of ``qs`` (forward kinematics)."""
    import pinocchio as pin
    data = model.createData()
    jb, jd = model.getJointId("B"), model.getJointId("D")
    gap = np.empty(len(qs))
    for i, q in enumerate(qs):
        pin.forwardKinematics(model, data, q)
        c1 = data.oMi[jb].act(np.array([COUPLER, 0.0, 0.0]))
        c2 = data.oMi[jd].act(np.array([ROCKER, 0.0, 0.0]))
        gap[i] = np.linalg.norm(c1 - c2)
    return gap


def four_bar(t_end: float, dt: float, integrator: str, repeat: int = 3,
             sample_every: int = 10) -> PeerRun:
    """Closed-loop four-bar with ``pinocchio.constraintDynamics`` (after
    ``initConstraintDynamics``) and ``ProximalSettings``.

    The loop joint C is a CONTACT_3D constraint (3 rows) on a planar loop whose motion never
    leaves the plane, so its z row is identically zero and the KKT system is singular: with
    mu = 0 Pinocchio returns NaN. The proximal (augmented-Lagrangian) iterations with
    mu = 1e-8 handle it (z force 0, 2-3 iterations, accelerations equal to a least-squares KKT
    solve to 1e-13). The constraint's Baumgarte corrector (Kp = 400, Kd = 40) pulls position and
    velocity drift back; observables ``crank`` = q[0] (continuous) and ``gap`` = |C_coupler -
    C_rocker| by forward kinematics after the timed loop."""
    import pinocchio as pin
    model, constraints, q0 = _four_bar_model()
    data, tau = model.createData(), np.zeros(model.nv)
    cdata = pin.StdVec_RigidConstraintData()
    for c in constraints:
        cdata.append(c.createData())
    pin.initConstraintDynamics(model, data, constraints, cdata)
    prox = pin.ProximalSettings(PROX_ACCURACY, PROX_MU, PROX_MAX_ITER)
    dyn = pin.constraintDynamics

    def acc(q, v):
        return dyn(model, data, q, v, tau, constraints, cdata, prox)

    us, t, qs = _run(acc, q0, t_end, dt, integrator, repeat, sample_every)
    gap = _four_bar_gap(model, qs)
    notes = (f"{_LOOP_NOTE}; closed loop: RigidConstraintModel CONTACT_3D at C (coupler end - "
             f"rocker end), constraintDynamics with ProximalSettings(accuracy {PROX_ACCURACY:g}, "
             f"mu {PROX_MU:g}, max_iter {PROX_MAX_ITER}) because the planar loop's z row is "
             f"redundant, Baumgarte Kp = {BAUMGARTE_KP:g}, Kd = {BAUMGARTE_KD:g}")
    return PeerRun(version(),
                   _setup(integrator, dt, "constraintDynamics, CONTACT_3D loop + Baumgarte"),
                   us, t, {"crank": qs[:, 0].copy(), "gap": gap}, notes=notes)
