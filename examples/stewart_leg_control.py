"""Closed-loop control of a Gough-Stewart platform through model inputs, stepped as a real-time
loop would step it (docs/dynamics.md, "Inputs and step-by-step runs").

The six leg forces of the library's ``gough-stewart`` (thesis A.3-A.4, under gravity) become
inputs ``f1 .. f6``. A PID controller on the leg lengths, with the static holding forces as
feed-forward, extends every leg by ``extend`` metres along a smooth (half-cosine) profile:
every step it reads the legs' lengths and rates (``Stepper.observe``), sets the six forces
(``Stepper.set_inputs``) and advances one step of the projection method (RK4, constraints held
to 1e-12).

    python examples/stewart_leg_control.py            # prints the errors and the step times
"""
from __future__ import annotations

import numpy as np

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.dynamics.holding import holding_efforts

LEGS = [f"P{i}" for i in range(1, 7)]


def controlled_platform() -> kinedyn.System:
    """The ``gough-stewart`` model with its six leg forces read from inputs ``f1 .. f6``, each
    starting at the force that holds the home pose at rest."""
    s = kinedyn.models.get("gough-stewart")
    hold = holding_efforts(s, LEGS)
    s.forces = [f for f in s.forces if f.name not in {f"F{i}" for i in range(1, 7)}]
    for i, leg in enumerate(LEGS, start=1):
        s.add_input(f"f{i}", hold[leg], f"force of leg {i}, N (pushes it longer)")
        s.add_force(f"F{i}", "joint", joint=leg, function=f"f{i}")
    return s


def run(extend: float = 0.01, t_end: float = 1.0, dt: float = 1e-3, ramp: float = 0.3,
        omega: float = 30.0, leg_mass: float = 0.35):
    """Extend every leg by ``extend`` (m) from rest at the home pose, the set point moving over
    ``ramp`` seconds: PID gains placing the three poles of a leg carrying ``leg_mass`` (kg) at
    -``omega`` (rad/s), the rate fed back as measured (no derivative of the set point).
    Returns (times, leg extensions (n, 6), stepper)."""
    model = controlled_platform().compile()
    hold = np.array([model.inputs[f"f{i}"] for i in range(1, 7)])
    dyn = Dynamics(model, method="projection", integrator="rk4")
    st = dyn.stepper(dt)
    lengths = [f"joint.{leg}.displacement" for leg in LEGS]
    rates = [f"{name}_d" for name in lengths]
    start = np.array(list(st.observe(*lengths).values()))
    # m (s + omega)^3 = m s^3 + kd s^2 + kp s + ki
    kp, kd, ki = 3 * leg_mass * omega ** 2, 3 * leg_mass * omega, leg_mass * omega ** 3
    integral = np.zeros(6)
    times, extension = [], []
    for _ in range(int(round(t_end / dt))):
        now = st.observe(*lengths, *rates)
        s = np.array([now[n] for n in lengths])
        v = np.array([now[n] for n in rates])
        error = start + extend * (1 - np.cos(np.pi * min(st.t / ramp, 1.0))) / 2 - s
        integral += error * dt
        force = hold + kp * error - kd * v + ki * integral
        st.set_inputs({f"f{i}": force[i - 1] for i in range(1, 7)})
        st.step()
        times.append(st.t)
        extension.append(s - start)
    return np.array(times), np.array(extension), st


if __name__ == "__main__":
    t, ext, st = run()
    final = ext[-1]
    print(f"legs extended by {', '.join(f'{x * 1000:.3f}' for x in final)} mm "
          f"(target 10 mm) after {t[-1]:.2f} s")
    outside = np.flatnonzero(np.any(np.abs(ext - 0.01) >= 1e-4, axis=1))
    print(f"all within 0.1 mm of the target from t = {t[outside[-1] + 1]:.3f} s on (the set "
          "point arrives at 0.3 s)")
    timing = st.timing()
    print(f"compiled step per call: median {timing['median_us']:.1f} us, 99 % "
          f"{timing['p99_us']:.1f} us (budget {timing['dt_us']:.0f} us)")
