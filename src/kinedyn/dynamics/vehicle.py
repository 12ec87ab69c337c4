"""Vehicle manoeuvres in relative coordinates: tyres, wheel spin, steering and speed control
(sparse-relative paper, section 5 and Table 2: ISO double lane change, explicit Euler, 1.2 ms).

Tyre model (per wheel, flat road z = 0, documented choice; the paper gives none):

* vertical: ``Fz = max(0, k_t (r0 - h) - c_t h')`` with h the wheel-centre height and the free
  radius ``r0`` chosen so the vehicle starts in static equilibrium;
* slips at the contact point ``p = c - r0 z`` (velocity v_p of the knuckle point there):
  heading ``e_x = (axis x z)/|.|``, ``e_y = z x e_x``; lateral slip angle
  ``alpha = atan(v_y / max(|v_x|, v_min))``, longitudinal slip
  ``kappa = (w r0 - v_x) / max(|v_x|, v_min)``;
* forces by the simplified Magic Formula ``F = mu Fz sin(C atan(B s))`` (Pacejka's
  D-C-B form without E and shifts): ``Fy = -mu Fz sin(Cy atan(By alpha))``,
  ``Fx = mu Fz sin(Cx atan(Bx kappa))``, scaled onto the friction ellipse
  ``|F| <= mu Fz``;
* wheel spin ``I_w w' = T - r0 Fx`` (a separate state per wheel; gyroscopic coupling of the spin
  neglected), drive torque ``T = K_v (v_ref - v_x)`` on the rear wheels.

Steering: a preview path-follower, steer angle ``delta = K_y e`` with ``e`` the lateral
distance at ``L_p`` ahead of the centre of mass from the path, turned into a rack target
``u = -arm delta``; the rack follows it as a second-order actuator (``omega_a``, critically
damped) by the acceleration of the steering driver row, ``gamma = omega_a^2 (u - q) -
2 omega_a q'``.

Path (ISO 3888-1 layout, centre line of the lanes): straight entry of 15 m, a 30 m change to
the 3.5 m offset lane, 25 m offset lane, a 25 m change back, then straight; the changes are
half-cosine blends ``y = 3.5 (1 - cos(pi s / L)) / 2``.
"""
from __future__ import annotations

import math
import time as _time
from typing import NamedTuple

import numba as nb
import numpy as np

from ..errors import ModelError, check_number, run_steps
from ..formulations import protocol
from ..formulations.relative import Relative
from ..formulations.relative.data import to_link
from ..formulations.relative.tree import lift_vector
from ..linalg import relative as LR
from . import integrators as I
from .relative import RelativeDynamics, evaluate

WHEELS = ("fr", "fl", "rr", "rl")
#: path sections (m): entry, change, offset lane, change back; offset (m)
ISO3888 = dict(entry=15.0, change=30.0, lane=25.0, back=25.0, offset=3.5)


class Tyres(NamedTuple):
    link: np.ndarray       # (4,) knuckle link of each wheel
    centre: np.ndarray     # (4, 3) wheel centre in the link frame
    axis: np.ndarray       # (4, 3) spin axis in the link frame
    r0: np.ndarray         # (4,) free radius
    k: float
    c: float
    mu: float
    By: float
    Cy: float
    Bx: float
    Cx: float
    inertia: float
    v_min: float
    driven: np.ndarray     # (4,) 1.0 for driven wheels


class Control(NamedTuple):
    ix: int                # chassis coordinates x, y, yaw; rack coordinate; driver row
    iy: int
    iyaw: int
    irack: int
    row: int
    preview: float
    gain: float
    arm: float
    omega_a: float
    v_ref: float
    k_v: float
    path: np.ndarray       # (5,) entry, change, lane, back, offset


class Vehicle(NamedTuple):
    method: tuple          # RelativeMethod
    tyres: Tyres
    control: Control


class VehicleWork(NamedTuple):
    method: tuple
    forces: np.ndarray     # (4, 4) per wheel: Fx, Fy, Fz, steer command


@nb.njit(cache=True, nogil=True)
def path_y(path, x):
    """Lateral position of the lane-change centre line at distance x (m)."""
    entry, change, lane, back, off = path[0], path[1], path[2], path[3], path[4]
    if x <= entry:
        return 0.0
    s = x - entry
    if s < change:
        return off * 0.5 * (1.0 - math.cos(math.pi * s / change))
    s -= change
    if s < lane:
        return off
    s -= lane
    if s < back:
        return off * 0.5 * (1.0 + math.cos(math.pi * s / back))
    return 0.0


@nb.njit(cache=True, nogil=True, inline="always")
def tyre_forces(ty, fw, data, q, wheel_w, Q, out, wdot):
    """Add tyre forces to Q (via the links below each knuckle) and the spin accelerations."""
    R, p, V, S = fw.R, fw.p, fw.V, fw.S
    for i in range(4):
        k = ty.link[i]
        c = fw.tmp[0]
        a = fw.tmp[1]
        for j in range(3):
            c[j] = p[k, j] + R[k, j, 0] * ty.centre[i, 0] + R[k, j, 1] * ty.centre[i, 1] \
                + R[k, j, 2] * ty.centre[i, 2]
            a[j] = R[k, j, 0] * ty.axis[i, 0] + R[k, j, 1] * ty.axis[i, 1] + R[k, j, 2] * ty.axis[i, 2]
        r0 = ty.r0[i]
        px, py, pz = c[0], c[1], c[2] - r0
        w0, w1, w2 = V[k, 0], V[k, 1], V[k, 2]
        vx = V[k, 3] + w1 * pz - w2 * py            # velocity of the knuckle point at p
        vy = V[k, 4] + w2 * px - w0 * pz
        vcz = V[k, 5] + w0 * c[1] - w1 * c[0]
        fz = ty.k * (r0 - c[2]) - ty.c * vcz
        if fz < 0.0 or c[2] > r0:
            fz = 0.0
        ex0, ex1 = a[1], -a[0]                      # axis x z
        nrm = math.sqrt(ex0 * ex0 + ex1 * ex1)
        ex0 /= nrm
        ex1 /= nrm
        ey0, ey1 = -ex1, ex0                        # z x e_x
        ux = vx * ex0 + vy * ex1
        uy = vx * ey0 + vy * ey1
        den = max(abs(ux), ty.v_min)
        alpha = math.atan(uy / den)
        kappa = (wheel_w[i] * r0 - ux) / den
        fy = -ty.mu * fz * math.sin(ty.Cy * math.atan(ty.By * alpha))
        fx = ty.mu * fz * math.sin(ty.Cx * math.atan(ty.Bx * kappa))
        tot = math.sqrt(fx * fx + fy * fy)
        lim = ty.mu * fz
        if tot > lim and tot > 0.0:
            fx *= lim / tot
            fy *= lim / tot
        F0 = fx * ex0 + fy * ey0
        F1 = fx * ex1 + fy * ey1
        F2 = fz
        out[i, 0], out[i, 1], out[i, 2] = fx, fy, fz
        wdot[i] = -r0 * fx / ty.inertia
        # generalised force: Q_k += S_k . (p x F, F) over the links below the knuckle
        m0 = py * F2 - pz * F1
        m1 = pz * F0 - px * F2
        m2 = px * F1 - py * F0
        j = k
        while j >= 0:
            Q[data.link_coord[j]] += (S[j, 0] * m0 + S[j, 1] * m1 + S[j, 2] * m2
                                      + S[j, 3] * F0 + S[j, 4] * F1 + S[j, 5] * F2)
            j = data.link_parent[j]


def _derivative(system, work, y, t, ydot):
    meth, mw = system.method, work.method
    data = meth.form
    n = data.n_q
    q = y[:n]
    qd = y[n:2 * n]
    wheel_w = y[2 * n:]
    evaluate(meth, mw, q, qd, t)
    ty, ct = system.tyres, system.control
    tyre_forces(ty, mw.form, data, q, wheel_w, mw.Q, work.forces, ydot[2 * n:])
    # speed control: drive torque on the driven wheels
    yaw = q[ct.iyaw]
    vx = math.cos(yaw) * qd[ct.ix] + math.sin(yaw) * qd[ct.iy]
    torque = ct.k_v * (ct.v_ref - vx)
    for i in range(4):
        ydot[2 * n + i] += ty.driven[i] * torque / ty.inertia
    # steering: preview path follower -> rack target -> actuator acceleration (driver row)
    xp = q[ct.ix] + ct.preview * math.cos(yaw)
    yp = q[ct.iy] + ct.preview * math.sin(yaw)
    delta = ct.gain * (path_y(ct.path, xp) - yp)
    u = -ct.arm * delta
    work.forces[0, 3] = delta
    wa = ct.omega_a
    mw.gamma[ct.row] = wa * wa * (u - q[ct.irack]) - 2.0 * wa * qd[ct.irack]
    st = LR.solve_accelerations(meth.solver, mw.solver, mw.mass, mw.jac, mw.Q, mw.gamma,
                                mw.qdd, mw.lam)
    if st != 0:
        return st
    for i in range(n):
        ydot[i] = qd[i]
        ydot[n + i] = mw.qdd[i]
    return 0


protocol.implement_ode(Vehicle, _derivative, inline="llvm")


class LaneChangeResults(NamedTuple):
    time: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    wheel_speed: np.ndarray
    wall: float
    steps: int
    f: Relative

    def channel(self, name: str) -> np.ndarray:
        return self.f.coordinate_names.index(name)

    def summary_channels(self) -> dict[str, np.ndarray]:
        """Path, lateral acceleration (vehicle frame, finite differences of the recorded
        velocity), yaw rate, suspension travel of each strut."""
        names = self.f.coordinate_names
        ix, iy, iyaw = (names.index(f"SCJ0.{c}") for c in ("x", "y", "yaw"))
        x, y, yaw = self.q[:, ix], self.q[:, iy], self.q[:, iyaw]
        vx, vy = self.qd[:, ix], self.qd[:, iy]
        ax, ay = np.gradient(vx, self.time), np.gradient(vy, self.time)
        out = {"time": self.time, "x": x, "y": y,
               "path_y": np.array([path_y(_path(), xi) for xi in x]),
               "lateral_acceleration": -np.sin(yaw) * ax + np.cos(yaw) * ay,
               "yaw_rate": self.qd[:, names.index("SCJ0.yaw")],
               "speed": np.cos(yaw) * vx + np.sin(yaw) * vy}
        for w in WHEELS:
            i = names.index(f"{w}_strut.displacement")
            out[f"travel_{w}"] = self.q[:, i] - self.q[0, i]
        return out


def _path():
    p = ISO3888
    return np.array([p["entry"], p["change"], p["lane"], p["back"], p["offset"]])


class LaneChange:
    """The double lane change of Table 2 on the vehicle model, with a chosen linear solver.

    ``speed`` m/s (default 80 km/h), ``preview`` m, ``gain`` rad/m, ``arm`` the steering-arm
    length (m) that turns a steer angle into rack travel, ``tyre`` overrides of the tyre data.
    """

    def __init__(self, f: Relative, *, solver: str = "reduced", speed: float = 80 / 3.6,
                 preview: float = 20.0, gain: float = 0.03, omega_a: float = 60.0,
                 k_v: float = 400.0, arm: float = 0.15, tyre: dict | None = None):
        m = f.model
        names = f.coordinate_names
        self.f = f
        for name, value in {"preview": preview, "omega_a": omega_a}.items():
            check_number(name, value, above=True)
        for name, value in {"speed": speed, "gain": gain, "k_v": k_v, "arm": arm}.items():
            check_number(name, value)
        tp = dict(k=2.0e5, c=800.0, mu=0.9, By=10.0, Cy=1.3, Bx=12.0, Cx=1.65, inertia=1.0,
                  v_min=1.0)
        unknown = sorted(set(tyre or {}) - set(tp))
        if unknown:
            raise ModelError(f"tyre: unknown setting(s) {', '.join(map(repr, unknown))}; "
                             f"settings: {', '.join(tp)}")
        tp.update(tyre or {})
        for name, value in tp.items():
            check_number(f"tyre {name}", value, above=True)
        self.base = RelativeDynamics(f, solver=solver, integrator="euler")
        links, centres, axes, r0 = [], [], [], []
        g = -m.gravity[2]
        static = self._static_loads(f, g)
        for i, w in enumerate(WHEELS):
            b = m.body_name.index(f"{w}_wheel")
            links.append(int(f.tree.body_link[b]))
            centres.append(to_link(f.tree, b, point=np.zeros(3)))
            axes.append(to_link(f.tree, b, vector=lift_vector(m.vector_local[
                m.vector_name.index(f"{w}_wheel.axis")])))
            r0.append(float(f.tree.p0[b][2]) + static[i] / tp["k"])
        self.tyres = Tyres(np.array(links, np.int64), np.array(centres), np.array(axes),
                           np.array(r0), tp["k"], tp["c"], tp["mu"], tp["By"], tp["Cy"],
                           tp["Bx"], tp["Cx"], tp["inertia"], tp["v_min"],
                           np.array([0.0, 0.0, 1.0, 1.0]))
        self.control = Control(names.index("SCJ0.x"), names.index("SCJ0.y"),
                               names.index("SCJ0.yaw"), names.index("rack.displacement"),
                               f.constraint_names.index("steering: driver"), float(preview),
                               float(gain), float(arm), float(omega_a), float(speed), float(k_v),
                               _path())
        self.system = Vehicle(self.base.system, self.tyres, self.control)
        self.work = VehicleWork(self.base.work, np.zeros((4, 4)))
        n = f.n_q
        qd0 = np.zeros(n)
        qd0[self.control.ix] = speed
        self.y0 = np.concatenate([self.base.q_initial, qd0, np.full(4, speed) / self.tyres.r0])

    @staticmethod
    def _static_loads(f, g):
        m = f.model
        sprung = sum(m.body_mass[m.body_name.index(b)] for b in m.body_name
                     if not any(b.startswith(w) for w in WHEELS))
        # wheel loads from the axle positions (static moment balance of the whole vehicle)
        xs = {w: float(f.tree.p0[m.body_name.index(f"{w}_wheel")][0]) for w in WHEELS}
        total = float(sum(m.body_mass[1:])) * g
        xf, xr = xs["fr"], xs["rr"]
        xcg = sum(float(m.body_mass[b]) * float(f.tree.p0[b][0]) for b in range(1, m.n_body)) \
            / float(sum(m.body_mass[1:]))
        front = total * (xcg - xr) / (xf - xr) / 2
        rear = total / 2 - front
        _ = sprung
        return [front, front, rear, rear]

    def run(self, t_end: float = 10.0, dt: float = 1.2e-3, record_every: int = 10):
        """The manoeuvre from t = 0 in the nearest whole number of steps to ``t_end`` (the
        paper's 10 s at 1.2 ms: 8333 steps, so no warning that dt or ``record_every`` does
        not divide them)."""
        n_steps = run_steps(0.0, t_end, dt, warn=False)
        check_number("record_every", record_every, 1, whole=True)
        y = self.y0.copy()
        out = np.zeros((n_steps // record_every + 1, len(y)))
        scratch = I.make_scratch(len(y))
        start = _time.perf_counter()
        st, k = I.integrate_fixed(self.system, self.work, y, 0.0, dt, n_steps, I.EULER,
                                  self.f.n_q, True, record_every, out, scratch)
        wall = _time.perf_counter() - start
        LR.check(st, self.work.method.solver, self.f, k * dt)
        n = self.f.n_q
        times = dt * record_every * np.arange(len(out))
        I.check_finite(out, times, "euler", dt)
        return LaneChangeResults(times, out[:, :n], out[:, n:2 * n], out[:, 2 * n:], wall,
                                 n_steps, self.f)
