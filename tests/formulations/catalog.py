"""Test models that use every joint type, driver kind and force kind (planar and spatial).

They need not be drivable: the finite-difference checks evaluate the equations at arbitrary
coordinates.
"""
from __future__ import annotations

import kinedyn as kd


def all_kinds_spatial() -> kd.System:
    s = kd.System("all-kinds-3d", dim=3, gravity=[0, 0, -9.81])
    s.add_point("ground", "O", [0, 0, 0])
    s.add_point("ground", "P", [1, 0, 0])
    s.add_point("ground", "Q", [0, 1, 0])
    s.add_vector("ground", "z", [0, 0, 1])
    s.add_vector("ground", "x", [1, 0, 0])
    s.add_vector("ground", "y", [0, 1, 0])
    inertia = [[0.02, 0.001, 0], [0.001, 0.03, 0.002], [0, 0.002, 0.04]]

    def body(name, pos, orient=(0.1, 0.2, 0.3)):
        s.add_body(name, mass=1.3, inertia=inertia, com=[0.1, -0.05, 0.02], position=pos,
                   orientation=list(orient),
                   points={"A": [0, 0, 0], "B": [0.5, 0.1, 0], "C": [0.1, 0.4, 0.2]},
                   vectors={"z": [0, 0, 1], "x": [1, 0, 0], "y": [0, 1, 0]})
    for i, name in enumerate(["rev", "pri", "sph", "uni", "cyl", "fix", "rodb", "free"]):
        body(name, [0.3 * i, 0.1, 0.2], (0.1 * i, -0.2, 0.05 * i))
    s.add_joint("j_rev", "revolute", "ground", "rev", point_a="O", point_b="A",
                axis_a="z", axis_b="z")
    s.add_joint("j_pri", "prismatic", "rev", "pri", point_a="B", point_b="A",
                axis_a="x", axis_b="x")
    s.add_joint("j_sph", "spherical", "pri", "sph", point_a="B", point_b="A")
    s.add_joint("j_uni", "universal", "sph", "uni", point_a="B", point_b="A",
                axis_a="y", axis_b="x")
    s.add_joint("j_cyl", "cylindrical", "uni", "cyl", point_a="B", point_b="A",
                axis_a="z", axis_b="z")
    s.add_joint("j_fix", "fixed", "cyl", "fix", point_a="B", point_b="A")
    s.add_joint("j_rod", "rod", "fix", "rodb", point_a="B", point_b="A", length=0.7)
    s.add_joint("j_loop", "spherical", "rodb", "ground", point_a="C", point_b="P")
    s.add_joint("j_free", "free", "ground", "free")
    s.add_joint("j_loop2", "universal", "free", "rev", point_a="A", point_b="C",
                axis_a="x", axis_b="z")
    s.add_driver("d_rev", "joint", joint="j_rev", function="0.3*sin(2*t)")
    s.add_driver("d_pri", "joint", joint="j_pri", function="0.1 + 0.05*t**2")
    s.add_driver("d_cyl_a", "joint", joint="j_cyl", component="angle", function="0.2*cos(t)")
    s.add_driver("d_cyl_s", "joint", joint="j_cyl", component="displacement",
                 function="0.1*exp(-t)")
    s.add_driver("d_dist", "distance", body_a="ground", point_a="Q", body_b="uni", point_b="C",
                 function="1.2 + 0.1*sin(t)")
    s.add_driver("d_pose", "pose", body="free", position=["0.1*t", "0.2", "0.3 + 0.1*sin(t)"],
                 orientation=["0.1*t", "0.2*sin(t)", "0.05"], sequence="ZYX")
    s.add_force("f_world", "point", body="sph", point="B", force=["1", "2*sin(t)", "-3"])
    s.add_force("f_body", "point", body="uni", point="C", force=["0.5", "t", "1"], frame="body")
    s.add_force("spring", "spring", body_a="ground", point_a="Q", body_b="cyl", point_b="C",
                stiffness=100, damping=3, free_length=0.5, force="2*sin(t)")
    s.add_force("torque", "joint", joint="j_rev", function="1.5*cos(t)")
    s.add_force("push", "joint", joint="j_pri", function="-2")
    s.add_force("cyl_torque", "joint", joint="j_cyl", component="angle", function="0.3")
    return s


def all_kinds_planar() -> kd.System:
    s = kd.System("all-kinds-2d", dim=2, gravity=[0.5, -9.81])
    s.add_point("ground", "O", [0, 0])
    s.add_point("ground", "P", [1, 0])
    s.add_vector("ground", "x", [1, 0])

    def body(name, pos, angle):
        s.add_body(name, mass=0.7, inertia=0.02, com=[0.2, 0.05], position=pos, orientation=angle,
                   points={"A": [0, 0], "B": [0.5, 0], "C": [0.2, 0.3]}, vectors={"x": [1, 0]})
    for i, name in enumerate(["rev", "pri", "fix", "rodb", "free"]):
        body(name, [0.2 * i, 0.1 * i], 0.3 * i)
    s.add_joint("j_rev", "revolute", "ground", "rev", point_a="O", point_b="A")
    s.add_joint("j_pri", "prismatic", "rev", "pri", point_a="B", point_b="A", axis_a="x",
                axis_b="x")
    s.add_joint("j_fix", "fixed", "pri", "fix", point_a="B", point_b="A")
    s.add_joint("j_rod", "rod", "fix", "rodb", point_a="B", point_b="A", length=0.6)
    s.add_joint("j_loop", "revolute", "rodb", "ground", point_a="C", point_b="P")
    s.add_joint("j_free", "free", "ground", "free")
    s.add_joint("j_loop2", "revolute", "free", "pri", point_a="A", point_b="C")
    s.add_driver("d_rev", "joint", joint="j_rev", function="0.3*sin(2*t)")
    s.add_driver("d_pri", "joint", joint="j_pri", function="0.1 + 0.05*t**2")
    s.add_driver("d_dist", "distance", body_a="ground", point_a="P", body_b="fix", point_b="C",
                 function="0.9 + 0.1*sin(t)")
    s.add_driver("d_pose", "pose", body="free", position=["0.1*t", "0.2"], orientation="0.3*t")
    s.add_force("f_world", "point", body="rev", point="B", force=["1", "2*sin(t)"])
    s.add_force("f_body", "point", body="fix", point="C", force=["0.5", "t"], frame="body")
    s.add_force("spring", "spring", body_a="ground", point_a="P", body_b="rodb", point_b="B",
                stiffness=50, damping=2, free_length=0.4, force="1")
    s.add_force("torque", "joint", joint="j_rev", function="1.5*cos(t)")
    s.add_force("push", "joint", joint="j_pri", function="-2")
    return s
