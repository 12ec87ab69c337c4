"""A spatial loop for relative-coordinate tests: an R-S-U-R spatial four-bar under gravity
with a spring (mobility 1: 18 - 5 - 5 - 4 - 3)."""
from __future__ import annotations

import numpy as np

import kinedyn as kd


def spatial_loop() -> kd.System:
    s = kd.System("spatial-four-bar", dim=3, gravity=[0, 0, -9.81])
    s.add_point("ground", "A", [0, 0, 0])
    s.add_point("ground", "D", [0.2, 0.3, 0.1])
    s.add_point("ground", "K", [0.0, 0.4, 0.5])
    s.add_vector("ground", "z", [0, 0, 1])
    s.add_vector("ground", "x", [1, 0, 0])
    B, C = np.array([0.1, 0, 0]), np.array([0.2, 0.3, 0.35])
    u = (B - C) / np.linalg.norm(B - C)
    axis_b = np.cross([1, 0, 0], u)
    axis_b /= np.linalg.norm(axis_b)
    s.add_body("crank", mass=1.0, inertia=[1e-3, 4e-3, 4e-3], com=[0.05, 0, 0],
               position=[0, 0, 0], orientation=[0, 0, 0],
               points={"A": [0, 0, 0], "B": [0.1, 0, 0]}, vectors={"z": [0, 0, 1]})
    s.add_body("rocker", mass=1.5, inertia=[[8e-3, 0, 0], [0, 8e-3, 1e-4], [0, 1e-4, 1e-3]],
               com=[0, 0.01, 0.125], position=[0.2, 0.3, 0.1], orientation=[0, 0, 0],
               points={"D": [0, 0, 0], "C": [0, 0, 0.25]}, vectors={"x": [1, 0, 0]})
    s.add_body("coupler", mass=2.0, inertia=[0.03, 0.035, 0.01], com=list((B - C) / 2),
               position=list(C), orientation=[0, 0, 0],
               points={"C": [0, 0, 0], "B": list(B - C), "M": list((B - C) / 2)},
               vectors={"u": list(axis_b)})
    s.add_joint("A", "revolute", "ground", "crank", point_a="A", point_b="A", axis_a="z",
                axis_b="z")
    s.add_joint("D", "revolute", "ground", "rocker", point_a="D", point_b="D", axis_a="x",
                axis_b="x")
    s.add_joint("C", "universal", "rocker", "coupler", point_a="C", point_b="C", axis_a="x",
                axis_b="u")
    s.add_joint("B", "spherical", "crank", "coupler", point_a="B", point_b="B")
    s.add_force("spring", "spring", body_a="ground", point_a="K", body_b="coupler", point_b="M",
                stiffness=80.0, damping=0.0, free_length=0.2)
    return s
