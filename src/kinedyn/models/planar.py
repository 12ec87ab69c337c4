"""Planar library models: double pendulum, four-bar, slider-crank, 3-RRR parallel robot.

Conventions: every link's body frame has its origin at its proximal joint and its x axis along
the link; the centre of mass is at mid-link; body orientations are the world angle of the x axis.
Initial orientations are an approximate configuration; the kinematic solver assembles it.
"""
from __future__ import annotations

import math

import numpy as np

from ..model import System

G = 9.80665  # standard gravity, m/s^2


def _link(s: System, name: str, length: str, mass: str, inertia: str, orientation,
          position=None, points=None) -> None:
    """A uniform link of the given length with points A (origin) and B (tip)."""
    pts = {"A": [0, 0], "B": [length, 0]}
    pts.update(points or {})
    s.add_body(name, mass=mass, inertia=inertia, com=[f"{length}/2", 0],
               position=position, orientation=orientation, points=pts)


def double_pendulum(l1: float = 1.0, l2: float = 1.0, m1: float = 1.0, m2: float = 1.0,
                    theta1: float = math.pi / 2, theta2: float = math.pi / 2,
                    g: float = G) -> System:
    """Double pendulum of two uniform rods, pinned at the origin, under gravity -y.

    Parameters: rod lengths ``l1``, ``l2`` (m), masses ``m1``, ``m2`` (kg, inertia m l^2/12
    about the centre), initial *absolute* angles ``theta1``, ``theta2`` of each rod from the
    downward vertical (rad, counter-clockwise), gravity ``g``. Released from rest.
    """
    s = System("double-pendulum", dim=2, gravity=[0, "-g"],
               description="Double pendulum of two uniform rods (revolute joints).")
    for name, value, text in (("l1", l1, "length of rod 1 (m)"), ("l2", l2, "length of rod 2 (m)"),
                              ("m1", m1, "mass of rod 1 (kg)"), ("m2", m2, "mass of rod 2 (kg)"),
                              ("theta1", theta1, "initial angle of rod 1 from the downward vertical (rad)"),
                              ("theta2", theta2, "initial angle of rod 2 from the downward vertical (rad)"),
                              ("g", g, "gravity (m/s^2)")):
        s.add_parameter(name, value, text)
    s.add_point("ground", "O", [0, 0])
    _link(s, "rod1", "l1", "m1", "m1*l1**2/12", "theta1 - pi/2")
    _link(s, "rod2", "l2", "m2", "m2*l2**2/12", "theta2 - pi/2",
          position=["l1*sin(theta1)", "-l1*cos(theta1)"])
    s.add_joint("shoulder", "revolute", "ground", "rod1", point_a="O", point_b="A")
    s.add_joint("elbow", "revolute", "rod1", "rod2", point_a="B", point_b="A")
    return s


def four_bar(ground: float = 0.4, crank: float = 0.1, coupler: float = 0.4, rocker: float = 0.3,
             mass: float = 1.0, crank_angle: float = math.pi / 2, speed: float | None = None,
             g: float = G) -> System:
    """Planar four-bar linkage A-B-C-D with ground pivots A = (0, 0) and D = (ground, 0).

    Uniform links of ``mass`` kg each (inertia m l^2/12). The crank starts at ``crank_angle``
    (rad from +x; default vertical); coupler and rocker start in the upper (open) assembly.
    With ``speed`` (rad/s) the crank is driven, ``crank_angle + speed*t``; without it the linkage
    moves freely under gravity -y (released from rest). Defaults: ground 0.4, crank 0.1, coupler
    0.4, rocker 0.3 m (a Grashof crank-rocker).
    """
    name = "four-bar" if speed is None else "four-bar-driven"
    s = System(name, dim=2, gravity=[0, "-g"],
               description="Planar four-bar linkage (4 revolute joints, one loop).")
    for pname, value, text in (("ground_length", ground, "distance between ground pivots A-D (m)"),
                               ("crank_length", crank, "crank A-B (m)"),
                               ("coupler_length", coupler, "coupler B-C (m)"),
                               ("rocker_length", rocker, "rocker D-C (m)"),
                               ("link_mass", mass, "mass of each moving link (kg)"),
                               ("crank_angle", crank_angle, "initial crank angle from +x (rad)"),
                               ("g", g, "gravity (m/s^2)")):
        s.add_parameter(pname, value, text)
    if speed is not None:
        s.add_parameter("crank_speed", speed, "crank speed (rad/s)")
    # approximate initial configuration: circle-circle intersection for the default lengths
    B = crank * np.array([math.cos(crank_angle), math.sin(crank_angle)])
    C = _circle_intersection(B, coupler, np.array([ground, 0.0]), rocker)
    coupler_angle = math.atan2(C[1] - B[1], C[0] - B[0])
    rocker_angle = math.atan2(C[1], C[0] - ground)
    s.add_point("ground", "A", [0, 0])
    s.add_point("ground", "D", ["ground_length", 0])
    _link(s, "crank", "crank_length", "link_mass", "link_mass*crank_length**2/12", "crank_angle")
    _link(s, "coupler", "coupler_length", "link_mass", "link_mass*coupler_length**2/12",
          round(coupler_angle, 6), position=[round(B[0], 6), round(B[1], 6)])
    _link(s, "rocker", "rocker_length", "link_mass", "link_mass*rocker_length**2/12",
          round(rocker_angle, 6), position=["ground_length", 0])
    s.add_joint("A", "revolute", "ground", "crank", point_a="A", point_b="A")
    s.add_joint("B", "revolute", "crank", "coupler", point_a="B", point_b="A")
    s.add_joint("C", "revolute", "coupler", "rocker", point_a="B", point_b="B")
    s.add_joint("D", "revolute", "ground", "rocker", point_a="D", point_b="A")
    if speed is not None:
        s.add_driver("crank_drive", "joint", joint="A", function="crank_angle + crank_speed*t")
    return s


def parallelogram(ground: float = 0.4, crank: float = 0.1, bar_offset: float = 0.2,
                  mass: float = 1.0, crank_angle: float = math.pi / 2, amplitude: float = 1.0,
                  frequency: float = 1.0, g: float = G) -> System:
    """Parallelogram linkage with a third parallel crank: an over-constrained mechanism.

    Ground pivots A = (0, 0), E = (``bar_offset``, 0) and D = (``ground``, 0); three equal cranks
    (``crank`` m) from A, E and D carry a coupler of length ``ground`` at B, F and C. Any two
    cranks make a parallelogram four-bar; the third adds a loop whose closure equations are
    satisfied identically, so one constraint is redundant (Grubler counts 0 dof, the true
    mobility is 1). The crank at A is driven,
    ``crank_angle + amplitude sin(2 pi frequency t)``; the default swing (pi/2 +- 1 rad) stays
    away from the collinear positions (crank angle 0 or pi), which are singular configurations
    of every parallelogram. Uniform links of ``mass`` kg each, gravity -y.
    """
    s = System("parallelogram", dim=2, gravity=[0, "-g"],
               description="Parallelogram with a third parallel crank (redundant constraint).")
    for pname, value, text in (("ground_length", ground, "distance A-D = coupler length (m)"),
                               ("crank_length", crank, "length of each of the three cranks (m)"),
                               ("bar_offset", bar_offset, "ground pivot E of the third crank (m)"),
                               ("link_mass", mass, "mass of each moving link (kg)"),
                               ("crank_angle", crank_angle, "mean crank angle from +x (rad)"),
                               ("amplitude", amplitude, "crank swing amplitude (rad)"),
                               ("frequency", frequency, "crank swing frequency (Hz)"),
                               ("g", g, "gravity (m/s^2)")):
        s.add_parameter(pname, value, text)
    tip = ["crank_length*cos(crank_angle)", "crank_length*sin(crank_angle)"]
    s.add_point("ground", "A", [0, 0])
    s.add_point("ground", "E", ["bar_offset", 0])
    s.add_point("ground", "D", ["ground_length", 0])
    inertia = "link_mass*crank_length**2/12"
    _link(s, "crank", "crank_length", "link_mass", inertia, "crank_angle")
    _link(s, "bar", "crank_length", "link_mass", inertia, "crank_angle", position=["bar_offset", 0])
    _link(s, "rocker", "crank_length", "link_mass", inertia, "crank_angle",
          position=["ground_length", 0])
    _link(s, "coupler", "ground_length", "link_mass", "link_mass*ground_length**2/12", 0,
          position=tip, points={"F": ["bar_offset", 0]})
    s.add_joint("A", "revolute", "ground", "crank", point_a="A", point_b="A")
    s.add_joint("E", "revolute", "ground", "bar", point_a="E", point_b="A")
    s.add_joint("D", "revolute", "ground", "rocker", point_a="D", point_b="A")
    s.add_joint("B", "revolute", "crank", "coupler", point_a="B", point_b="A")
    s.add_joint("F", "revolute", "bar", "coupler", point_a="B", point_b="F")
    s.add_joint("C", "revolute", "rocker", "coupler", point_a="B", point_b="B")
    s.add_driver("crank_drive", "joint", joint="A",
                 function="crank_angle + amplitude*sin(2*pi*frequency*t)")
    return s


def _circle_intersection(c1, r1, c2, r2, upper=True):
    d = np.linalg.norm(c2 - c1)
    a = (r1**2 - r2**2 + d**2) / (2 * d)
    h = math.sqrt(max(r1**2 - a**2, 0.0))
    e = (c2 - c1) / d
    n = np.array([-e[1], e[0]])
    p = c1 + a * e + (h if upper else -h) * n
    q = c1 + a * e - (h if upper else -h) * n
    return p if p[1] >= q[1] else q


def slider_crank(crank: float = 0.3, rod: float = 0.4, crank_mass: float = 1.0,
                 rod_mass: float = 1.0, piston_mass: float = 0.5, crank_angle: float = math.pi / 4,
                 speed: float | None = None, g: float = G) -> System:
    """Planar slider-crank of the thesis's chapter 3 (crank 0.3 m, rod 0.4 m).

    The crank pivots at the origin, the piston slides on the x axis (prismatic joint along x,
    through the origin). Uniform crank and rod, piston a point-like block (inertia 1e-3 kg m^2).
    The thesis gives no masses; the defaults here are documented choices. With ``speed`` (rad/s)
    the crank is driven, ``crank_angle + speed*t``; otherwise it moves under gravity -y.
    """
    name = "slider-crank" if speed is None else "slider-crank-driven"
    s = System(name, dim=2, gravity=[0, "-g"],
               description="Planar slider-crank (3 revolute + 1 prismatic joint, one loop).")
    for pname, value, text in (("crank_length", crank, "crank (m)"),
                               ("rod_length", rod, "connecting rod (m)"),
                               ("crank_mass", crank_mass, "crank mass (kg)"),
                               ("rod_mass", rod_mass, "rod mass (kg)"),
                               ("piston_mass", piston_mass, "piston mass (kg)"),
                               ("crank_angle", crank_angle, "initial crank angle (rad)"),
                               ("g", g, "gravity (m/s^2)")):
        s.add_parameter(pname, value, text)
    if speed is not None:
        s.add_parameter("crank_speed", speed, "crank speed (rad/s)")
    B = crank * np.array([math.cos(crank_angle), math.sin(crank_angle)])
    x_piston = B[0] + math.sqrt(rod**2 - B[1] ** 2)
    rod_angle = math.atan2(-B[1], x_piston - B[0])
    s.add_point("ground", "O", [0, 0])
    s.add_vector("ground", "slide", [1, 0])
    _link(s, "crank", "crank_length", "crank_mass", "crank_mass*crank_length**2/12", "crank_angle")
    _link(s, "rod", "rod_length", "rod_mass", "rod_mass*rod_length**2/12", round(rod_angle, 6),
          position=[round(B[0], 6), round(B[1], 6)])
    s.add_body("piston", mass="piston_mass", inertia=1e-3, com=[0, 0],
               position=[round(x_piston, 6), 0], points={"P": [0, 0]}, vectors={"slide": [1, 0]})
    s.add_joint("crank_pin", "revolute", "ground", "crank", point_a="O", point_b="A")
    s.add_joint("rod_pin", "revolute", "crank", "rod", point_a="B", point_b="A")
    s.add_joint("piston_pin", "revolute", "rod", "piston", point_a="B", point_b="P")
    s.add_joint("slide", "prismatic", "ground", "piston", point_a="O", point_b="P",
                axis_a="slide", axis_b="slide")
    if speed is not None:
        s.add_driver("crank_drive", "joint", joint="crank_pin",
                     function="crank_angle + crank_speed*t")
    return s


def rrr3(driven: bool = False, platform_angle: float = math.radians(35)) -> System:
    """Planar 3-RRR parallel robot of the thesis (Appendix A.2, Gosselin & Angeles design).

    Horizontal plane (no gravity). Base pivots at an equilateral triangle of 1.0 m sides,
    A1 = (0, 0), A2 = (1, 0), A3 = (0.5, sqrt(3)/2). Proximal links 0.4 m, 3 kg, 0.04 kg m^2;
    distal links 0.6 m, 4 kg, 0.12 kg m^2; end-effector an equilateral triangle of 0.4 m sides,
    8 kg, 0.0817 kg m^2 (Table A.2; the thesis does not say what its "length" is, here the
    side). Initial configuration (the thesis's Figure 4.11 is missing): end-effector centroid
    on the base centroid, turned by ``platform_angle`` (default 35 deg, where the
    forward-kinematics Jacobian is best conditioned, condition number 8.6 against 23 for the
    unturned platform), every elbow bent counter-clockwise.
    Loads: base-joint torques tau1 = 0.5 sin t, tau2 = -0.25 cos t, tau3 = 0.5 sin 2t N m.
    ``driven=True`` instead prescribes the three base-joint angles (small oscillations about
    the initial configuration) for kinematic analysis.
    """
    s = System("3-rrr-driven" if driven else "3-rrr", dim=2, gravity=[0, 0],
               description="Planar 3-RRR parallel robot (thesis Appendix A.2), horizontal plane.")
    for pname, value, text in (("base_side", 1.0, "side of the base triangle (m)"),
                               ("proximal_length", 0.4, "proximal links (m)"),
                               ("distal_length", 0.6, "distal links (m)"),
                               ("platform_side", 0.4, "side of the end-effector triangle (m)"),
                               ("proximal_mass", 3.0, "kg"), ("proximal_inertia", 0.04, "kg m^2"),
                               ("distal_mass", 4.0, "kg"), ("distal_inertia", 0.12, "kg m^2"),
                               ("platform_mass", 8.0, "kg"), ("platform_inertia", 0.0817, "kg m^2")):
        s.add_parameter(pname, value, text)
    lp, ld, side, ps = 0.4, 0.6, 1.0, 0.4
    base = [np.array([0.0, 0.0]), np.array([side, 0.0]), np.array([side / 2, side * math.sqrt(3) / 2])]
    centre = sum(base) / 3
    base_expr = [[0, 0], ["base_side", 0], ["base_side/2", "base_side*sqrt(3)/2"]]
    plat_local = [(v - centre) / np.linalg.norm(v - centre) * ps / math.sqrt(3) for v in base]
    plat_expr = [[f"platform_side/sqrt(3)*({d[0]:.17g})", f"platform_side/sqrt(3)*({d[1]:.17g})"]
                 for d in ((v - centre) / np.linalg.norm(v - centre) for v in base)]
    s.add_body("platform", mass="platform_mass", inertia="platform_inertia", com=[0, 0],
               position=[round(centre[0], 9), round(centre[1], 9)],
               orientation=round(platform_angle, 9),
               points={f"P{k + 1}": plat_expr[k] for k in range(3)})
    turn = np.array([[math.cos(platform_angle), -math.sin(platform_angle)],
                     [math.sin(platform_angle), math.cos(platform_angle)]])
    angles = []
    for k in range(3):
        A, P = base[k], centre + turn @ plat_local[k]
        # counter-clockwise elbow: the elbow to the left of A->P
        d = P - A
        cands = [_circle_intersection(A, lp, P, ld, True), _circle_intersection(A, lp, P, ld, False)]
        elbow = max(cands, key=lambda e: d[0] * (e - A)[1] - d[1] * (e - A)[0])
        a1 = math.atan2(elbow[1] - A[1], elbow[0] - A[0])
        a2 = math.atan2(P[1] - elbow[1], P[0] - elbow[0])
        angles.append(a1)
        s.add_point("ground", f"A{k + 1}", base_expr[k])
        _link(s, f"proximal{k + 1}", "proximal_length", "proximal_mass", "proximal_inertia",
              round(a1, 6), position=[round(A[0], 9), round(A[1], 9)])
        _link(s, f"distal{k + 1}", "distal_length", "distal_mass", "distal_inertia", round(a2, 6),
              position=[round(elbow[0], 6), round(elbow[1], 6)])
    for k in range(3):
        i = k + 1
        s.add_joint(f"base{i}", "revolute", "ground", f"proximal{i}", point_a=f"A{i}", point_b="A")
        s.add_joint(f"elbow{i}", "revolute", f"proximal{i}", f"distal{i}", point_a="B", point_b="A")
        s.add_joint(f"wrist{i}", "revolute", f"distal{i}", "platform", point_a="B", point_b=f"P{i}")
    if driven:
        for k in range(3):
            s.add_driver(f"motor{k + 1}", "joint", joint=f"base{k + 1}",
                         function=f"{angles[k]:.6f} + 0.05*sin(t + {2 * k}*pi/3)")
    else:
        for k, f in enumerate(("0.5*sin(t)", "-0.25*cos(t)", "0.5*sin(2*t)")):
            s.add_force(f"tau{k + 1}", "joint", joint=f"base{k + 1}", function=f)
    return s
