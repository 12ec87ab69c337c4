"""Six-bar library models of the thesis's section 4.2.2-4.2.3: Stephenson-III and the aircraft
nose landing gear (`groebner-symbolic-realtime-thesis.txt`, Figs. 4.6-4.10, Appendix A.1).

Both have two independent loops, one of 2 local DOF (five links) and one of 1 local DOF (four
links); which coordinate is driven decides whether the position problem is triangular
(thesis Figs. 4.7, 4.8). Conventions as in :mod:`.planar`: a body frame has its origin at its
proximal joint and its x axis along the link; initial orientations are approximate, the
kinematic solver assembles them.
"""
from __future__ import annotations

import math

import numpy as np

from ..model import System
from .planar import G, _link

#: Stephenson-III initial configuration at beta1 = 2.09 rad (assembled to 1e-16 with the data
#: below): absolute angles of coupler, triangle2, rocker and link2 (rad).
_S3_ANGLES = (-1.43800162, -0.65627536, -0.97578361, -0.10917395)
#: theta1 (joint angle triangle1 -> link2) at beta1 = 2.09 and its change at beta1 = 3.09.
_S3_THETA1, _S3_THETA1_SWING = -2.1991739455, -0.3526135649


def stephenson3(driven: str | None = None, g: float = G) -> System:
    """Stephenson-III six-bar of the thesis (section 4.2.2, Fig. 4.6; the figure is missing, so
    the layout is reconstructed from the stated data and documented here).

    Links l1 = l2 = 0.295 m, l3 = 0.26 m, l4 = 0.51 m; two isosceles triangles of base 0.5 m and
    height 0.125 m. Topology (Stephenson chain, a binary link as ground): ``triangle1`` is
    pinned to the ground at O1 = (0, 0) by a corner of its base (joint ``beta1``); the other
    base corner carries ``coupler`` (l3 = 0.26 m, joint ``beta2``), whose far end carries
    ``triangle2`` at a base corner (joint ``beta3``); the other base corner of triangle2 carries
    ``rocker`` (l2 = 0.295 m, joint ``beta4``), pinned to the ground at O2 (joint ``ground2``),
    l4 = 0.51 m from O1 at -47 deg. The triangles' apexes are joined by ``link2`` (l1 = 0.295 m;
    joints ``theta1`` on triangle1 and ``theta_close`` on triangle2). Loops: L_beta = ground -
    triangle1 - coupler - triangle2 - rocker (five links, 2 local DOF), L_theta = triangle1 -
    coupler - triangle2 - link2 (four links, floating, 1 local DOF). This assignment is the one
    (of all assignments of the data to the links) over which beta1 moves farthest without a
    singularity -- 190 deg, covering the thesis's beta1 = 2.09 + sin(pi t) with 37 deg margin --
    and with the apex loop a Grashof four-bar.

    Uniform bars of 2 kg/m (inertia m l^2/12), triangles uniform plates of 2 kg (inertia
    m (a^2 + b^2 + c^2)/36 about the centroid); gravity -y (the thesis gives no inertial data).
    driven: None (free, under gravity), ``"beta1"`` (beta1 = 2.09 + sin(pi t), the thesis's
    block-triangular case, Fig. 4.7) or ``"theta1"`` (theta1 = theta1(0) + dtheta sin(pi t)
    with dtheta the change of theta1 when beta1 goes 2.09 -> 3.09: approximately the same
    motion, fully triangular, Fig. 4.8).
    """
    if driven not in (None, "beta1", "theta1"):
        raise ValueError(f"stephenson3: driven must be None, 'beta1' or 'theta1', got {driven!r}")
    name = "stephenson3" + (f"-{driven}" if driven else "")
    s = System(name, dim=2, gravity=[0, "-g"],
               description="Stephenson-III six-bar (thesis section 4.2.2), two loops of 2 and 1 "
                           "local DOF.")
    for pname, value, text in (("l1", 0.295, "link2 (apex to apex) (m)"),
                               ("l2", 0.295, "rocker (m)"), ("l3", 0.26, "coupler (m)"),
                               ("l4", 0.51, "ground pivot distance O1-O2 (m)"),
                               ("ground_angle", round(math.radians(-47), 12), "direction of O2 from O1 (rad)"),
                               ("base", 0.5, "triangle base (m)"), ("height", 0.125, "triangle height (m)"),
                               ("bar_density", 2.0, "bar mass per length (kg/m)"),
                               ("plate_mass", 2.0, "triangle mass (kg)"), ("beta1_0", 2.09, "initial beta1 (rad)"),
                               ("g", g, "gravity (m/s^2)")):
        s.add_parameter(pname, value, text)
    s.add_point("ground", "O1", [0, 0])
    s.add_point("ground", "O2", ["l4*cos(ground_angle)", "l4*sin(ground_angle)"])
    plate_I = "plate_mass*(base**2 + 2*(base**2/4 + height**2))/36"
    tri_pts = {"O": [0, 0], "P": ["base", 0], "A": ["base/2", "height"]}
    b1 = 2.09
    P1 = 0.5 * np.array([math.cos(b1), math.sin(b1)])
    a_c, a_t2, a_r, a_l = _S3_ANGLES
    Q1 = P1 + 0.26 * np.array([math.cos(a_c), math.sin(a_c)])
    rot = lambda a: np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])  # noqa: E731
    R = Q1 + rot(a_t2) @ [0.5, 0]
    A1 = rot(b1) @ [0.25, 0.125]
    s.add_body("triangle1", mass="plate_mass", inertia=plate_I, com=["base/2", "height/3"],
               orientation="beta1_0", points=tri_pts)
    _link(s, "coupler", "l3", "bar_density*l3", "bar_density*l3**3/12", a_c,
          position=[round(P1[0], 9), round(P1[1], 9)])
    s.add_body("triangle2", mass="plate_mass", inertia=plate_I, com=["base/2", "height/3"],
               orientation=a_t2, position=[round(Q1[0], 9), round(Q1[1], 9)], points=tri_pts)
    _link(s, "rocker", "l2", "bar_density*l2", "bar_density*l2**3/12", a_r,
          position=[round(R[0], 9), round(R[1], 9)])
    _link(s, "link2", "l1", "bar_density*l1", "bar_density*l1**3/12", a_l,
          position=[round(A1[0], 9), round(A1[1], 9)])
    s.add_joint("beta1", "revolute", "ground", "triangle1", point_a="O1", point_b="O")
    s.add_joint("beta2", "revolute", "triangle1", "coupler", point_a="P", point_b="A")
    s.add_joint("beta3", "revolute", "coupler", "triangle2", point_a="B", point_b="O")
    s.add_joint("beta4", "revolute", "triangle2", "rocker", point_a="P", point_b="A")
    s.add_joint("ground2", "revolute", "rocker", "ground", point_a="B", point_b="O2")
    s.add_joint("theta1", "revolute", "triangle1", "link2", point_a="A", point_b="A")
    s.add_joint("theta_close", "revolute", "link2", "triangle2", point_a="B", point_b="A")
    if driven == "beta1":
        s.add_driver("beta1_drive", "joint", joint="beta1", function="beta1_0 + sin(pi*t)")
    elif driven == "theta1":
        s.add_driver("theta1_drive", "joint", joint="theta1",
                     function=f"{_S3_THETA1:.10f} + ({_S3_THETA1_SWING:.10f})*sin(pi*t)")
    return s


#: Stephenson-III spanning tree of the thesis (q = beta1..beta4, theta1): the joints closing
#: the loops.
STEPHENSON3_CUT = ("ground2", "theta_close")

#: Landing gear deployed configuration (Table A.1): absolute angles of main strut, drag
#: strut, piston and lower link (rad), assembled with the body points below.
_LG_ANGLES = (5.38961270e-05, 0.919165991, 0.0841984304, 0.932590996)


def landing_gear(driven: bool = False, unit: float = 1e-3, g: float = G) -> System:
    """Aircraft nose landing gear of the thesis (section 4.2.3, Figs. 4.9-4.10, Appendix A.1).

    Geometry in the drawing units of Table A.1 times ``unit`` (default 1 mm: the designer's
    figure is undimensioned): fuselage pivots A = (0, 0) (main strut) and D = (231, 62) (drag
    strut). Main strut: B = (42, 62), F = (25, -212), wheel W = (18, -530) in its frame (its
    deployed pose is the fuselage frame); drag strut: C = (6.08, 16.97), E = (-164.4, 0) in a
    frame at D turned by the thesis's -theta_D (these body points reproduce (4.26)-(4.29)
    exactly and Table A.1 to 0.3 units); lower link F-E of 178.4; hydraulic cylinder B-C: a
    ``piston`` pinned to the main strut at B slides (joint ``stroke``, p_BC) in a ``cylinder``
    pinned to the drag strut at C. Loops ABCD (five links with the slider, 2 local DOF) and
    ADEF (four-bar, 1 local DOF); the thesis's q = {theta_A, theta_B, theta_D, theta_F, p_BC}.

    Masses (the thesis gives none; documented choices): main strut with wheel 25 kg (centre of
    mass at (20, -350)), drag strut 3 kg, lower link 2 kg, piston 1 kg, cylinder 2 kg, bars
    with inertia m l^2/12; gravity -y. ``driven=True``: p_BC goes from the deployed 179.8 to the
    stowed 284.6 units in 1 s, p(t) = p0 + (p1 - p0)(1 - cos(pi t))/2 (retraction; the lower
    loop stays away from its deployed toggle).
    """
    s = System("landing-gear-driven" if driven else "landing-gear", dim=2, gravity=[0, "-g"],
               description="Aircraft nose landing gear (thesis section 4.2.3, Appendix A.1).")
    for pname, value, text in (("unit", unit, "drawing unit (m)"),
                               ("strut_mass", 25.0, "main strut with wheel (kg)"),
                               ("drag_mass", 3.0, "drag strut (kg)"), ("lower_mass", 2.0, "lower link (kg)"),
                               ("piston_mass", 1.0, "piston (kg)"), ("cylinder_mass", 2.0, "cylinder (kg)"),
                               ("g", g, "gravity (m/s^2)")):
        s.add_parameter(pname, value, text)
    if driven:
        s.add_parameter("stroke_deployed", 179.83506332, "p_BC deployed (units)")
        s.add_parameter("stroke_stowed", round(math.hypot(283.9, 20.0), 8), "p_BC stowed (units)")
    u = lambda *v: [f"{x}*unit" for x in v]  # noqa: E731
    a_main, a_drag, a_piston, a_lower = _LG_ANGLES
    rot = lambda a: np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])  # noqa: E731
    D = np.array([231.0, 62.0])
    B = rot(a_main) @ [42.0, 62.0]
    C = B + 179.83506332 * np.array([math.cos(a_piston), math.sin(a_piston)])
    F = rot(a_main) @ [25.0, -212.0]
    pos = lambda p: [round(p[0] * unit, 9), round(p[1] * unit, 9)]  # noqa: E731
    s.add_point("ground", "A", [0, 0])
    s.add_point("ground", "D", u(231, 62))
    s.add_body("main_strut", mass="strut_mass", inertia="strut_mass*(560*unit)**2/12",
               com=u(20, -350), orientation=a_main,
               points={"A": [0, 0], "B": u(42, 62), "F": u(25, -212), "W": u(18, -530)})
    s.add_body("drag_strut", mass="drag_mass", inertia="drag_mass*(170*unit)**2/12",
               com=u(-82.2, 0), orientation=a_drag, position=pos(D),
               points={"D": [0, 0], "C": u(6.08, 16.97), "E": u(-164.4, 0)})
    s.add_body("lower_link", mass="lower_mass", inertia="lower_mass*(178.4*unit)**2/12",
               com=u(89.2, 0), orientation=a_lower, position=pos(F),
               points={"F": [0, 0], "E": u(178.4, 0)})
    s.add_body("piston", mass="piston_mass", inertia="piston_mass*(120*unit)**2/12",
               com=u(60, 0), orientation=a_piston, position=pos(B),
               points={"B": [0, 0]}, vectors={"axis": [1, 0]})
    s.add_body("cylinder", mass="cylinder_mass", inertia="cylinder_mass*(150*unit)**2/12",
               com=u(-75, 0), orientation=a_piston, position=pos(C),
               points={"C": [0, 0]}, vectors={"axis": [1, 0]})
    s.add_joint("A", "revolute", "ground", "main_strut", point_a="A", point_b="A")
    s.add_joint("D", "revolute", "ground", "drag_strut", point_a="D", point_b="D")
    s.add_joint("B", "revolute", "main_strut", "piston", point_a="B", point_b="B")
    s.add_joint("stroke", "prismatic", "piston", "cylinder", point_a="B", point_b="C",
                axis_a="axis", axis_b="axis")
    s.add_joint("F", "revolute", "main_strut", "lower_link", point_a="F", point_b="F")
    s.add_joint("C", "revolute", "cylinder", "drag_strut", point_a="C", point_b="C")
    s.add_joint("E", "revolute", "lower_link", "drag_strut", point_a="E", point_b="E")
    if driven:
        s.add_driver("retract", "joint", joint="stroke",
                     function="unit*(stroke_deployed + (stroke_stowed - stroke_deployed)*(1 - cos(pi*t))/2)")
    return s


#: The landing gear's loop-closing joints in the thesis's formulation (4.26)-(4.29).
LANDING_GEAR_CUT = ("C", "E")
