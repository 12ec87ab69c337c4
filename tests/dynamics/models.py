"""Small test models for the dynamics tests (closed forms are known for each)."""
from __future__ import annotations

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
