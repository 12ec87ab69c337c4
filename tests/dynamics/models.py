"""Small test models for the dynamics tests (closed forms are known for each)."""
from __future__ import annotations

import math

import kinedyn as kd

G = 9.81


def pendulum(theta0: float = 0.01, length: float = 1.0, mass: float = 2.0,
             angle: str | None = None) -> kd.System:
    """Uniform rod pinned at one end, released from ``theta0`` rad from the downward vertical;
    with ``angle`` the pin is driven to that function of t (angle of the rod's x axis)."""
    s = kd.System("pendulum", dim=2, gravity=[0, -G])
    s.add_point("ground", "O", [0, 0])
    s.add_body("rod", mass=mass, inertia=mass * length**2 / 12, com=[length / 2, 0],
               orientation=theta0 - 1.5707963267948966, points={"A": [0, 0], "B": [length, 0]})
    s.add_joint("pin", "revolute", "ground", "rod", point_a="O", point_b="A")
    if angle is not None:
        s.add_driver("hold", "joint", joint="pin", function=angle)
    return s


def free_body(dim: int = 3) -> kd.System:
    """A free body thrown with gravity (no constraints except its rigidity)."""
    s = kd.System("free", dim=dim, gravity=[0, 0, -G] if dim == 3 else [0, -G])
    z = [0.0] * (dim - 2)
    s.add_body("box", mass=1.7, inertia=[0.02, 0.05, 0.07] if dim == 3 else 0.03,
               com=[0.1, 0.05] + z, position=[0.0, 0.0] + z,
               points={"A": [0, 0] + z, "B": [0.4, 0.1] + z})
    s.add_joint("free", "free", "ground", "box")
    return s


def loaded_planar() -> kd.System:
    """Two bodies with every planar load kind: gravity, world and body-frame point forces, a
    spring-damper with an actuator force, a joint torque and a prismatic force (2 dof)."""
    s = kd.System("loaded", dim=2, gravity=[0.4, -G])
    s.add_point("ground", "O", [0, 0])
    s.add_point("ground", "P", [1.0, 0.3])
    s.add_vector("ground", "x", [1, 0])
    s.add_body("arm", mass=1.2, inertia=0.05, com=[0.3, 0.02], orientation=0.4,
               points={"A": [0, 0], "B": [0.6, 0], "C": [0.2, 0.1]}, vectors={"x": [1, 0]})
    s.add_body("slider", mass=0.8, inertia=0.01, com=[0.05, 0.0], position=[0.5, 0.25],
               orientation=0.4, points={"A": [0, 0], "B": [0.2, 0.05]}, vectors={"x": [1, 0]})
    s.add_joint("pin", "revolute", "ground", "arm", point_a="O", point_b="A")
    s.add_joint("slide", "prismatic", "arm", "slider", point_a="C", point_b="A", axis_a="x",
                axis_b="x")
    s.add_force("push", "point", body="slider", point="B", force=["1.5*cos(t)", "-2"])
    s.add_force("tug", "point", body="arm", point="B", force=["0.7", "t"], frame="body")
    s.add_force("sd", "spring", body_a="ground", point_a="P", body_b="slider", point_b="B",
                stiffness=30, damping=2.5, free_length=0.3, force="0.5*sin(t)")
    s.add_force("motor", "joint", joint="pin", function="0.8 + 0.1*t")
    s.add_force("thrust", "joint", joint="slide", function="-1.1")
    return s


def stiff_hanger(k: float = 1e6, zeta: float = 0.05, mass: float = 2.0, free: float = 0.5):
    """A block on a vertical prismatic guide hanging from a very stiff spring-damper
    (natural frequency sqrt(k/m) ~ 707 rad/s, damping ratio ``zeta``); rests at
    y = -(free + m g / k)."""
    s = kd.System("stiff-hanger", dim=2, gravity=[0, -G])
    s.add_point("ground", "O", [0, 0])
    s.add_vector("ground", "down", [0, -1])
    s.add_body("block", mass=mass, inertia=0.01, position=[0, -free - 0.01],
               points={"A": [0, 0]}, vectors={"down": [0, -1]})
    s.add_joint("guide", "prismatic", "ground", "block", point_a="O", point_b="A",
                axis_a="down", axis_b="down")
    s.add_force("spring", "spring", body_a="ground", point_a="O", body_b="block", point_b="A",
                stiffness=k, damping=2 * zeta * (k * mass) ** 0.5, free_length=free)
    return s


def parallelogram(redundant: bool = True) -> kd.System:
    """Parallelogram linkage (cranks 0.5 m, ground and coupler 1 m, uniform 1 kg links) with a
    third, middle crank making one loop redundant (Phi_q rank-deficient everywhere)."""
    s = kd.System("parallelogram", dim=2, gravity=[0, -G])
    for name, x in (("A", 0.0), ("E", 0.5), ("D", 1.0)):
        s.add_point("ground", name, [x, 0])
    th = 1.0
    c, sn = 0.5 * math.cos(th), 0.5 * math.sin(th)
    for name, x in (("crank1", 0.0), ("crank2", 1.0)) + ((("crank3", 0.5),) if redundant else ()):
        s.add_body(name, mass=1.0, inertia=0.5**2 / 12, com=[0.25, 0], position=[x, 0],
                   orientation=th, points={"A": [0, 0], "B": [0.5, 0]})
    s.add_body("coupler", mass=1.0, inertia=1 / 12, com=[0.5, 0], position=[c, sn],
               orientation=0.0, points={"B": [0, 0], "M": [0.5, 0], "C": [1.0, 0]})
    s.add_joint("A", "revolute", "ground", "crank1", point_a="A", point_b="A")
    s.add_joint("B", "revolute", "crank1", "coupler", point_a="B", point_b="B")
    s.add_joint("D", "revolute", "ground", "crank2", point_a="D", point_b="A")
    s.add_joint("C", "revolute", "crank2", "coupler", point_a="B", point_b="C")
    if redundant:
        s.add_joint("E", "revolute", "ground", "crank3", point_a="E", point_b="A")
        s.add_joint("F", "revolute", "crank3", "coupler", point_a="B", point_b="M")
    return s
