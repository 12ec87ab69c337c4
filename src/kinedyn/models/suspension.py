"""The thesis's vehicle suspensions (Uchida 2011, chapter 5, Appendix A.4-A.5).

Five-link ("S1" of Knapczyk, a 1980s Mercedes-Benz rear axle; section 5.1, Table A.5): five
rigid links, each on a universal joint at the chassis point C_k (first axis the world x axis,
then the link's rotated y axis: the thesis's alpha_k, beta_k, its local x'' axis along the link)
and a spherical joint at the wheel-carrier point W_k. The data are given in the wheel-hub
frame (mm); the carrier's frame is the hub frame at the design position (z = 0) and its centre
of mass is at the hub origin. Links are steel cylinders of radius 15 mm, the carrier a disc of
radius 150 mm and thickness 20 mm about the hub y axis (the thesis does not give the disc axis;
the spin axis is assumed), density 8000 kg/m^3. Load: the thesis's vertical force (5.8) on the
carrier centre and gravity along -z (the thesis does not say whether gravity acts). Its
constant 183.6 N does not hold these data at z = 0: the generalised weight of the moving parts
there is 151.74 N (effective mass 14.38 kg), so with 183.6 N the carrier rises 0.32 m in 0.6 s
and leaves the assemblable range at t = 0.684 s. The constant is the parameter ``preload``,
by default the static load 151.74 N (the thesis's 183.6 presumably balanced its own, unstated,
inertias); the time-varying part of (5.8) is the thesis's.

Double-wishbone, front-left corner (section 5.2, Table A.6, chassis fixed): upper and lower
control arms on revolute joints to the chassis (axes B-C and E-F) and spherical joints to the
wheel carrier (A, D); the tie rod on a universal joint at the steering rack (J: first axis the
world z, the thesis's alpha; second the rotated x axis, beta) and a
spherical joint at the carrier (I); the rack slides along y at K. The thesis gives no masses
for the arms, tie rod, rack and carrier: the values below are documented choices; the tyre
(21.18 kg, Table A.8) rides on the carrier (its spin is decoupled and omitted).
"""
from __future__ import annotations

import math

import numpy as np

from ..model import System
from .planar import G

#: Table A.5: chassis U-joints C_k and carrier S-joints W_k in the wheel-hub frame, mm
FIVE_LINK_C = [(-103.2, -490.6, -65.6), (309.3, -204.6, -49.6), (200.8, -283.6, -11.6),
               (205.8, -269.6, 95.4), (-1.7, -349.6, 118.4)]
FIVE_LINK_W = [(-47.8, -50.1, -87.9), (34.9, -77.3, -133.8), (139.1, -47.4, -42.1),
               (76.9, -59.7, 85.9), (6.3, -52.2, 119.9)]
DENSITY = 8.0e3        # kg/m^3 (section 5.1)
LINK_RADIUS = 0.015    # m
CARRIER_RADIUS, CARRIER_THICKNESS = 0.15, 0.02

#: thesis eq. (5.8): vertical force on the wheel carrier, N (C0-continuous); its constant
#: 183.6 N is the parameter ``preload`` (default: the static load at z = 0 of these data)
FIVE_LINK_FORCE = ("preload + 1.84*sin(pi*t)*(1 - step(t - 1))"
                   " - 2.38*sin(pi*(t - 1)/3)*(step(t - 1) - step(t - 4))"
                   " + 4.62*sin(pi*t/2)*(step(t - 4) - step(t - 5))"
                   " - 4.62*cos(pi*t)*(step(t - 5) - step(t - 5.5))"
                   " + 6.5*sin(2*pi*t)*step(t - 5.5)")


def _r(x, n=12):
    return [round(float(v), n) for v in np.ravel(x)]


def _rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(b):
    c, s = math.cos(b), math.sin(b)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _cylinder(mass, radius, length):
    """(axial, transverse) central inertia of a solid cylinder."""
    return mass * radius ** 2 / 2, mass * (3 * radius ** 2 + length ** 2) / 12


#: generalised weight of the moving parts at z = 0 (B^T of gravity, N) with the data below:
#: the preload that holds the suspension at its design position (test_suspension checks it)
FIVE_LINK_STATIC_LOAD = 151.74


def five_link(g: float = G, preload: float = FIVE_LINK_STATIC_LOAD) -> System:
    """Five-link suspension, thesis section 5.1 / Table A.5 (see the module docstring).

    Link k's frame: origin at C_k, x axis along C_k -> W_k, orientation Rx(alpha_k) Ry(beta_k)
    (so the link direction is (c_beta, s_alpha s_beta, -c_alpha s_beta), eq. 5.1), sin(beta_k)
    > 0 (of the two equivalent U-joint solutions). Mixed coordinates with the carrier absolute
    give the thesis's q = {x, y, z, phi, theta, psi, alpha_1..5, beta_1..5}; qi = {z}.
    """
    s = System("five-link", dim=3, gravity=[0, 0, "-g"],
               description="Five-link suspension (Knapczyk's S1), thesis section 5.1 and "
                           "Table A.5; vertical force (5.8) on the carrier")
    s.add_parameter("g", g, "gravity (m/s^2)")
    s.add_parameter("preload", preload, "constant part of the carrier force (5.8), N (thesis "
                    "183.6; default the static load at z = 0 of these data)")
    mc = DENSITY * math.pi * CARRIER_RADIUS ** 2 * CARRIER_THICKNESS
    ax, tr = _cylinder(mc, CARRIER_RADIUS, CARRIER_THICKNESS)
    W = np.array(FIVE_LINK_W) / 1000.0
    C = np.array(FIVE_LINK_C) / 1000.0
    s.add_body("carrier", mass=round(mc, 12), inertia=_r([tr, ax, tr]), com=[0, 0, 0],
               position=[0, 0, 0], orientation=[0, 0, 0],
               points={"hub": [0, 0, 0], **{f"W{k + 1}": _r(W[k]) for k in range(5)}})
    s.add_vector("ground", "x", [1, 0, 0])
    for k in range(5):
        i = k + 1
        d = W[k] - C[k]
        L = float(np.linalg.norm(d))
        u = d / L
        beta = math.acos(u[0])
        alpha = math.atan2(u[1], -u[2])
        m = DENSITY * math.pi * LINK_RADIUS ** 2 * L
        la, lt = _cylinder(m, LINK_RADIUS, L)
        s.add_point("ground", f"C{i}", _r(C[k]))
        s.add_body(f"link{i}", mass=round(m, 12), inertia=_r([la, lt, lt]), com=[round(L / 2, 12), 0, 0],
                   position=_r(C[k]), orientation=[_r(row) for row in _rx(alpha) @ _ry(beta)],
                   points={"C": [0, 0, 0], "W": [round(L, 12), 0, 0]}, vectors={"y": [0, 1, 0]})
        s.add_joint(f"U{i}", "universal", "ground", f"link{i}", point_a=f"C{i}", point_b="C",
                    axis_a="x", axis_b="y")
        s.add_joint(f"S{i}", "spherical", f"link{i}", "carrier", point_a="W", point_b=f"W{i}")
    s.add_force("Fz", "point", body="carrier", point="hub", frame="world",
                force=[0, 0, FIVE_LINK_FORCE])
    return s


#: Table A.6: front-left hardpoints, mm
DW_FRONT = {"A": (-18.3, 540.7, 428.5), "B": (-86.9, 360.0, 412.6), "C": (52.2, 360.0, 428.5),
            "D": (17.3, 615.5, 159.5), "E": (-79.3, 352.0, 191.6), "F": (119.0, 352.0, 165.9),
            "G": (0.0, 635.0, 290.5), "H": (-0.1, 579.0, 290.0), "I": (149.9, 579.0, 290.0),
            "J": (40.0, 303.3, 298.5), "K": (40.0, 0.0, 298.6), "L": (14.6, 543.5, 180.5),
            "M": (-37.5, 340.5, 562.5)}
#: documented choices (the thesis gives none but the tyre's 21.18 kg): kg
DW_MASS = {"upper_arm": 1.5, "lower_arm": 3.0, "carrier": 10.0 + 21.18, "tie_rod": 0.5,
           "rack": 2.0}


def double_wishbone(driven: bool = True, g: float = G) -> System:
    """Front-left double-wishbone corner, thesis section 5.2 / Table A.6 (module docstring).

    ``driven=True``: the rack displacement (+-10 mm, the thesis's +-270 deg of steering wheel
    on a typical 40 mm/rev rack) and the lower-arm angle (+-0.15 rad, about +-45 mm of wheel
    travel; the thesis drives the carrier's spherical-joint angle xi, which maps one-to-one to
    the vertical travel like the lower-arm angle) are prescribed: a kinematic model with the
    thesis's two inputs.
    """
    s = System("double-wishbone-driven" if driven else "double-wishbone", dim=3,
               gravity=[0, 0, "-g"],
               description="Double-wishbone suspension, front-left corner, thesis section 5.2 "
                           "and Table A.6 (chassis fixed)")
    s.add_parameter("g", g, "gravity (m/s^2)")
    P = {k: np.array(v) / 1000.0 for k, v in DW_FRONT.items()}

    def body(name, origin, points, com, vectors=None):
        pts = {k: _r(P[k] - origin) for k in points}
        pts.update({"O": [0, 0, 0]})
        m = DW_MASS[name]
        s.add_body(name, mass=m, inertia=[0.02 * m, 0.02 * m, 0.02 * m], com=_r(com - origin),
                   position=_r(origin), orientation=[0, 0, 0], points=pts,
                   vectors=vectors or {})

    body("upper_arm", P["B"], "ABC", (P["A"] + P["B"] + P["C"]) / 3,
         {"axis": _r((P["C"] - P["B"]) / np.linalg.norm(P["C"] - P["B"]))})
    lo = (P["F"] - P["E"]) / np.linalg.norm(P["F"] - P["E"])
    arm = P["D"] - P["E"] - lo * (lo @ (P["D"] - P["E"]))       # lower-arm angle reference
    body("lower_arm", P["E"], "DEF", (P["D"] + P["E"] + P["F"]) / 3,
         {"axis": _r(lo), "arm": _r(arm / np.linalg.norm(arm))})
    body("carrier", P["G"], "ADIGH", P["G"])
    body("tie_rod", P["J"], "IJ", (P["I"] + P["J"]) / 2, {"z": [0, 0, 1], "x": [1, 0, 0]})
    body("rack", P["K"], "JK", P["K"], {"y": [0, 1, 0], "z": [0, 0, 1]})
    for k in "BCEFK":
        s.add_point("ground", k, _r(P[k]))
    s.add_vector("ground", "ub", _r((P["C"] - P["B"]) / np.linalg.norm(P["C"] - P["B"])))
    s.add_vector("ground", "lo", _r(lo))
    s.add_vector("ground", "arm", _r(arm / np.linalg.norm(arm)))
    s.add_vector("ground", "y", [0, 1, 0])
    s.add_joint("upper", "revolute", "ground", "upper_arm", point_a="B", point_b="B",
                axis_a="ub", axis_b="axis")
    s.add_joint("lower", "revolute", "ground", "lower_arm", point_a="E", point_b="E",
                axis_a="lo", axis_b="axis", ref_a="arm", ref_b="arm")
    s.add_joint("rack", "prismatic", "ground", "rack", point_a="K", point_b="K",
                axis_a="y", axis_b="y")
    s.add_joint("upper_ball", "spherical", "upper_arm", "carrier", point_a="A", point_b="A")
    s.add_joint("lower_ball", "spherical", "lower_arm", "carrier", point_a="D", point_b="D")
    s.add_joint("tie_rod_inner", "universal", "rack", "tie_rod", point_a="J", point_b="J",
                axis_a="z", axis_b="x")
    s.add_joint("tie_rod_outer", "spherical", "tie_rod", "carrier", point_a="I", point_b="I")
    if driven:
        s.add_driver("steer", "joint", joint="rack", component="displacement",
                     function="0.01*sin(pi*t)")
        s.add_driver("travel", "joint", joint="lower", component="angle",
                     function="0.15*sin(2*pi*t)")
    return s
