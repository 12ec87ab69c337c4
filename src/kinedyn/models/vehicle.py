"""The sparse-relative paper's models: the quadruped (Figs. 1-2) and the 10-body vehicle
(Table 1, Fig. 4) with MacPherson composite joints and compliant tie-rods.

Vehicle (chassis frame: x forward, y left, z up; road z = 0). Bodies of Table 1: chassis, rack,
four knuckles, four wheels; 17 relative coordinates as in the paper: chassis 6 (free joint),
rack 1 (prismatic along the chassis y axis, the one steering driver), front knuckles 3 each,
rear knuckles 2 each.

*MacPherson composite joints* (Choi et al. 2000 replace the strut, lower arm and tie-rod
loops by one joint with few coordinates). Here:

* front (SCJ1): a cylindrical strut joint chassis -> strut tube (suspension travel along the
  vertical strut axis and steer rotation about it), then a revolute camber joint (longitudinal
  axis) tube -> knuckle: 3 coordinates. The strut tube is a light body (2 kg) that carries the
  camber joint; it exists in a real MacPherson strut and is the only body added to Table 1.
* rear (SCJ2): a cylindrical strut joint chassis -> knuckle: travel and toe, 2 coordinates.
* the lower arm is a stiff lateral spring-damper (bushing) chassis -> knuckle that holds the
  front camber; coil-over spring-dampers along the struts carry the load (free lengths set for
  the static corner loads).
* *compliant tie-rods*: the tie-rods are stiff spring-dampers (rack end -> front steering arm;
  chassis -> rear steering arm) instead of rod constraints, so no loop is closed and the only
  constraint is the steering driver (rack displacement), as in the paper (16 dof). The
  steering arms are at the height of the camber axis: lower, a camber rotation would steer the
  wheel and the tyre's side force would feed back into camber (a divergence found at speed).
* wheels are welded to their knuckles (their mass and inertia ride on the knuckle); the wheel
  spin is a separate first-order state of the tyre model (:mod:`kinedyn.dynamics.vehicle`),
  so it adds no relative coordinate (the paper's 17 contain none).
"""
from __future__ import annotations

import numpy as np

from ..model import System
from .planar import G

#: vehicle data (documented choices; the paper gives none): m, kg; lengths, m
VEHICLE = dict(chassis_mass=1200.0, chassis_inertia=(450.0, 1800.0, 2000.0), cg_height=0.55,
               a=1.1, b=1.5, half_track=0.75, wheel_radius=0.31, knuckle_mass=15.0,
               wheel_mass=20.0, strut_mass=2.0, rack_mass=5.0, spring_k=35000.0,
               spring_c=3500.0, bushing_k=6.0e5, bushing_c=3000.0, tierod_k=1.0e6,
               tierod_c=4500.0, arm=0.15)


def vehicle(g: float = G, **overrides) -> System:
    p = {**VEHICLE, **overrides}
    s = System("vehicle", dim=3, gravity=[0, 0, -g],
               description="10-body vehicle of the sparse-relative paper (Table 1, Fig. 4) with "
                           "MacPherson composite joints and compliant tie-rods")
    h, r, w, arm = p["cg_height"], p["wheel_radius"], p["half_track"], p["arm"]
    s.add_vector("ground", "z", [0, 0, 1])
    s.add_body("chassis", mass=p["chassis_mass"], inertia=list(p["chassis_inertia"]),
               com=[0, 0, 0], position=[0, 0, h], orientation=[0, 0, 0],
               vectors={"z": [0, 0, 1], "y": [0, 1, 0]})
    s.add_joint("SCJ0", "free", "ground", "chassis")
    corners = [("fr", p["a"], -1), ("fl", p["a"], 1), ("rr", -p["b"], -1), ("rl", -p["b"], 1)]
    unsprung = p["knuckle_mass"] + p["wheel_mass"]
    L = p["a"] + p["b"]
    sprung = p["chassis_mass"] + p["rack_mass"]
    for name, x, side in corners:
        front = x > 0
        y_strut = side * (w - 0.05)
        # static corner load on the coil-over (sprung share plus the strut tube)
        load = sprung * g * (p["b"] if front else p["a"]) / L / 2 + (p["strut_mass"] * g if front else 0)
        top = [x, y_strut, 0.20]                       # strut top, chassis frame
        s.add_point("chassis", f"{name}_top", top)
        s.add_point("chassis", f"{name}_arm", [x, side * 0.35, 0.25 - h])
        wc = np.array([x, side * w, r])                # wheel centre, world
        knuckle = f"{name}_knuckle"
        kpts = {"C": [0, 0, 0], "low": [0, -side * 0.05, 0.04],
                "top": [0, -side * 0.05, h + 0.20 - r], "arm": [0, -side * 0.03, 0.25 - r],
                "steer": [-arm, -side * 0.05, 0.04]}
        s.add_body(knuckle, mass=p["knuckle_mass"], inertia=[0.3, 0.2, 0.3], com=[0, 0, 0],
                   position=list(wc), orientation=[0, 0, 0], points=kpts,
                   vectors={"z": [0, 0, 1], "x": [1, 0, 0]})
        if front:
            tube = f"{name}_strut"
            s.add_body(tube, mass=p["strut_mass"], inertia=[0.05, 0.05, 0.005],
                       com=[0, 0, 0.2], position=[x, y_strut, r + 0.04], orientation=[0, 0, 0],
                       points={"L": [0, 0, 0], "top": [0, 0, h + 0.20 - r - 0.04]},
                       vectors={"z": [0, 0, 1], "x": [1, 0, 0]})
            s.add_joint(f"{name}_strut", "cylindrical", "chassis", tube, point_a=f"{name}_top",
                        point_b="top", axis_a="z", axis_b="z")
            s.add_joint(f"{name}_camber", "revolute", tube, knuckle, point_a="L", point_b="low",
                        axis_a="x", axis_b="x")
        else:
            s.add_joint(f"{name}_strut", "cylindrical", "chassis", knuckle, point_a=f"{name}_top",
                        point_b="top", axis_a="z", axis_b="z")
        s.add_body(f"{name}_wheel", mass=p["wheel_mass"], inertia=[0.6, 1.0, 0.6], com=[0, 0, 0],
                   position=list(wc), orientation=[0, 0, 0], points={"C": [0, 0, 0]},
                   vectors={"axis": [0, 1, 0]})
        s.add_joint(f"{name}_hub", "fixed", knuckle, f"{name}_wheel", point_a="C", point_b="C")
        length = h + 0.20 - r - 0.04
        s.add_force(f"{name}_coilover", "spring", body_a="chassis", point_a=f"{name}_top",
                    body_b=knuckle, point_b="low", stiffness=p["spring_k"],
                    damping=p["spring_c"], free_length=length + load / p["spring_k"])
        s.add_force(f"{name}_bushing", "spring", body_a="chassis", point_a=f"{name}_arm",
                    body_b=knuckle, point_b="arm", stiffness=p["bushing_k"],
                    damping=p["bushing_c"], free_length=abs(side * (w - 0.03) - side * 0.35))
        if not front:
            s.add_point("chassis", f"{name}_tierod", [x - arm, side * 0.40, r + 0.04 - h])
            s.add_force(f"{name}_tierod", "spring", body_a="chassis", point_a=f"{name}_tierod",
                        body_b=knuckle, point_b="steer", stiffness=p["tierod_k"],
                        damping=p["tierod_c"], free_length=w - 0.05 - 0.40)
        _ = unsprung
    s.add_body("rack", mass=p["rack_mass"], inertia=[0.05, 0.001, 0.05], com=[0, 0, 0],
               position=[p["a"] - arm, 0, r + 0.04], orientation=[0, 0, 0],
               points={"O": [0, 0, 0], "fr": [0, -0.40, 0], "fl": [0, 0.40, 0]},
               vectors={"y": [0, 1, 0]})
    s.add_point("chassis", "rack", [p["a"] - arm, 0, r + 0.04 - h])
    s.add_joint("rack", "prismatic", "chassis", "rack", point_a="rack", point_b="O",
                axis_a="y", axis_b="y")
    for name, side in (("fr", -1), ("fl", 1)):
        s.add_force(f"{name}_tierod", "spring", body_a="rack", point_a=name,
                    body_b=f"{name}_knuckle", point_b="steer", stiffness=p["tierod_k"],
                    damping=p["tierod_c"], free_length=w - 0.05 - 0.40)
    s.add_driver("steering", "joint", joint="rack", function="0")
    return s


def quadruped(g: float = G) -> System:
    """The quadruped of Figs. 1-2: a trunk on a free joint and four legs, each a universal hip
    (abduction, flexion) and a revolute knee: 6 + 4 x 3 = 18 relative coordinates, an open
    tree (no loop), whose mass-matrix pattern is that of Fig. 3."""
    s = System("quadruped", dim=3, gravity=[0, 0, -g],
               description="Quadruped of the sparse-relative paper (Figs. 1-3)")
    s.add_body("trunk", mass=30.0, inertia=[0.6, 2.0, 2.3], com=[0, 0, 0], position=[0, 0, 0.8],
               orientation=[0, 0, 0],
               points={f"hip_{n}": [x, y, 0] for n, x, y in (("fr", 0.5, -0.2), ("fl", 0.5, 0.2),
                                                            ("rr", -0.5, -0.2), ("rl", -0.5, 0.2))},
               vectors={"x": [1, 0, 0], "y": [0, 1, 0]})
    s.add_joint("trunk", "free", "ground", "trunk")
    for n, x, y in (("fr", 0.5, -0.2), ("fl", 0.5, 0.2), ("rr", -0.5, -0.2), ("rl", -0.5, 0.2)):
        s.add_body(f"{n}_thigh", mass=2.0, inertia=[0.02, 0.02, 0.002], com=[0, 0, -0.2],
                   position=[x, y, 0.8], orientation=[0, 0, 0],
                   points={"hip": [0, 0, 0], "knee": [0, 0, -0.4]},
                   vectors={"x": [1, 0, 0], "y": [0, 1, 0]})
        s.add_body(f"{n}_shank", mass=1.0, inertia=[0.01, 0.01, 0.001], com=[0, 0, -0.2],
                   position=[x, y, 0.4], orientation=[0, 0.2, 0],
                   points={"knee": [0, 0, 0], "foot": [0, 0, -0.4]},
                   vectors={"y": [0, 1, 0]})
        s.add_joint(f"{n}_hip", "universal", "trunk", f"{n}_thigh", point_a=f"hip_{n}",
                    point_b="hip", axis_a="x", axis_b="y")
        s.add_joint(f"{n}_knee", "revolute", f"{n}_thigh", f"{n}_shank", point_a="knee",
                    point_b="knee", axis_a="y", axis_b="y")
    return s
