"""Spatial parallel robots: the thesis's Gough-Stewart 6-UPS and the Group-Equations paper's
rotary-actuated Stewart platform (6-RSU).

Both compute their home configuration in closed form here, so every body starts assembled.
"""
from __future__ import annotations

import math

import numpy as np

from ..model import System
from .planar import G

# Thesis Table A.3 (Tsai's data): base U-joints B_k and platform S-joints P_k (platform frame), m
GS_BASE = [(-2.120, 1.374, 0.0), (-2.380, 1.224, 0.0), (-2.380, -1.224, 0.0),
           (-2.120, -1.374, 0.0), (0.0, -0.150, 0.0), (0.0, 0.150, 0.0)]
GS_PLATFORM = [(0.170, 0.595, -0.4), (-0.600, 0.150, -0.4), (-0.600, -0.150, -0.4),
               (0.170, -0.595, -0.4), (0.430, -0.445, -0.4), (0.430, 0.445, -0.4)]
GS_HOME = (-1.5, 0.0, 1.5)  # platform centre of mass, orientation zero (see gough_stewart)


def _frame_from_z(z, x_hint):
    """Rotation whose z column is ``z`` and whose x column is ``x_hint`` made perpendicular."""
    z = z / np.linalg.norm(z)
    x = x_hint - z * (z @ x_hint)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def gs_leg(k: int):
    """Leg ``k`` (0-5) of the Gough-Stewart at its home pose: base point B, platform point P
    (world), and its universal joint's angles alpha (about world x) and beta (about the
    segment's y) that turn the segment's z axis onto B -> P."""
    B, P = np.array(GS_BASE[k]), np.array(GS_HOME) + np.array(GS_PLATFORM[k])
    u = (P - B) / np.linalg.norm(P - B)
    return B, P, math.atan2(-u[1], u[2]), math.asin(u[0])


def _r(x, n=12):
    return [round(float(v), n) for v in np.ravel(x)]


def gough_stewart(driven: bool = False, g: float = G) -> System:
    """Gough-Stewart platform 6-UPS with the thesis's data (Appendix A.3-A.4, Tsai).

    Each leg: a lower segment on a universal joint at the base point B_k (first axis the world x
    axis, second the segment's y axis: the thesis's alpha_k, beta_k), a prismatic joint along the
    leg to the upper segment, and a spherical joint at the platform point P_k. Segments are 1.0 m
    long, 0.1 kg, inertia (0.00625, 0.00625, 1e-5) kg m^2 about their centre (the thesis gives a
    zero spin inertia, which is not positive definite; 1e-5 is that of a 0.1 kg tube of 1 cm
    radius). Platform 1.5 kg, 0.08 kg m^2 about each axis, its frame at its centre of mass.
    Home pose (the thesis's Figure 4.12 is missing): centre at (-1.5, 0, 1.5), axes parallel to
    the world, so every leg is about 1.56 m long (prismatic displacement s_k = L_k - 2 ~ -0.44).

    Loads (thesis section 4.2.5): actuator forces F1 = F3 = F5 = -0.1 sin(2 pi t/3) N and
    F2 = F4 = F6 = +0.1 sin(2 pi t/3) N in the prismatic joints, and gravity ``g`` along -z
    (the thesis does not say whether gravity acts: use ``g=0`` to reproduce its runs).
    ``driven=True`` replaces the loads by a pose trajectory of the platform (inverse
    kinematics: leg lengths are the outputs).
    """
    s = System("gough-stewart-driven" if driven else "gough-stewart", dim=3,
               gravity=[0, 0, "-g"], euler_sequence="XYZ",
               description="Gough-Stewart platform 6-UPS, thesis Appendix A.3-A.4 (Tsai's data).")
    for pname, value, text in (("segment_mass", 0.1, "mass of each leg segment (kg)"),
                               ("segment_inertia", 0.00625, "transverse inertia of a segment (kg m^2)"),
                               ("segment_spin_inertia", 1e-5, "axial inertia of a segment (kg m^2)"),
                               ("segment_length", 1.0, "length of each leg segment (m)"),
                               ("platform_mass", 1.5, "kg"), ("platform_inertia", 0.08, "kg m^2"),
                               ("g", g, "gravity (m/s^2)")):
        s.add_parameter(pname, value, text)
    s.add_body("platform", mass="platform_mass",
               inertia=["platform_inertia"] * 3, com=[0, 0, 0], position=list(GS_HOME),
               orientation=[0, 0, 0],
               points={f"P{k + 1}": list(p) for k, p in enumerate(GS_PLATFORM)})
    s.add_vector("ground", "x", [1, 0, 0])
    J = ["segment_inertia", "segment_inertia", "segment_spin_inertia"]
    for k in range(6):
        i = k + 1
        _, P, alpha, beta = gs_leg(k)
        s.add_point("ground", f"B{i}", list(GS_BASE[k]))
        s.add_body(f"lower{i}", mass="segment_mass", inertia=J, com=[0, 0, "segment_length/2"],
                   position=list(GS_BASE[k]), orientation=_r([alpha, beta, 0]),
                   points={"B": [0, 0, 0]}, vectors={"y": [0, 1, 0], "z": [0, 0, 1]})
        s.add_body(f"upper{i}", mass="segment_mass", inertia=J, com=[0, 0, "-segment_length/2"],
                   position=_r(P), orientation=_r([alpha, beta, 0]),
                   points={"P": [0, 0, 0]}, vectors={"z": [0, 0, 1]})
        s.add_joint(f"U{i}", "universal", "ground", f"lower{i}", point_a=f"B{i}", point_b="B",
                    axis_a="x", axis_b="y")
        s.add_joint(f"P{i}", "prismatic", f"lower{i}", f"upper{i}", point_a="B", point_b="P",
                    axis_a="z", axis_b="z")
        s.add_joint(f"S{i}", "spherical", f"upper{i}", "platform", point_a="P", point_b=f"P{i}")
        if not driven:
            sign = "-" if k % 2 == 0 else ""
            s.add_force(f"F{i}", "joint", joint=f"P{i}", function=f"{sign}0.1*sin(2*pi*t/3)")
    if driven:
        s.add_driver("platform_pose", "pose", body="platform",
                     position=["-1.5 + 0.1*sin(pi*t)", "0.1*sin(2*pi*t)", "1.5 + 0.05*sin(pi*t)"],
                     orientation=["0.1*sin(pi*t)", "0.05*sin(2*pi*t)", "0.05*cos(pi*t) - 0.05"],
                     sequence="ZYX")
    return s


# ---- the Group Equations paper's Stewart platform ---------------------------------------------
SP_BASE_RADIUS = 0.20     # handle pivots A_k
SP_PLATFORM_RADIUS = 0.12  # cardan joints C_k on the terminal
SP_HANDLE = 0.08          # handle A_k -> B_k
SP_STICK = 0.25           # stick B_k -> C_k
SP_BASE_HALF = math.radians(15)   # pivots at 120 i +- 15 deg
SP_TOP_HALF = math.radians(45)    # cardans at 120 i +- 45 deg


def stewart_paper_geometry():
    """Home geometry: pivots A, handle tips B, cardan points C (terminal frame), height h."""
    A, B, C = [], [], []
    for k in range(6):
        sign = -1.0 if k % 2 == 0 else 1.0
        gam = 2 * math.pi / 3 * (k // 2) + sign * SP_BASE_HALF
        dlt = 2 * math.pi / 3 * (k // 2) + sign * SP_TOP_HALF
        radial = np.array([math.cos(gam), math.sin(gam), 0.0])
        A.append(SP_BASE_RADIUS * radial)
        B.append((SP_BASE_RADIUS + SP_HANDLE) * radial)
        C.append(SP_PLATFORM_RADIUS * np.array([math.cos(dlt), math.sin(dlt), 0.0]))
    horiz = np.linalg.norm(B[0][:2] - C[0][:2])
    h = math.sqrt(SP_STICK**2 - horiz**2)
    return np.array(A), np.array(B), np.array(C), h


def stewart_paper(driven: bool = True, g: float = G) -> System:
    """The Stewart platform of the Group Equations paper (section 3, Figure 1), 6-RSU.

    Six handles turn about horizontal axes tangent to the base circle at A_k (revolute joints,
    the rotary actuators); each handle tip B_k carries a spherical joint to a stick, and each
    stick reaches the terminal through a cardan (universal) joint at C_k. The paper gives no
    dimensions; these are: pivots on a 0.20 m radius at 120 i +- 15 deg, handles 0.08 m, sticks
    0.25 m, cardans on a 0.12 m radius at 120 i +- 45 deg of the terminal. At home the handles
    are horizontal and point outwards (actuator angle 0) and the terminal is level at height
    h ~ 0.167 m. Masses: handle 0.1 kg, stick 0.15 kg, terminal 1.0 kg (a 0.12 m disc).

    ``driven=True`` (the paper's use: inverse kinematics) prescribes the terminal pose, a
    1 cm / 0.05 rad oscillation about home; the actuator angles are outputs. ``driven=False``
    leaves the mechanism free (6 dof) for dynamics, with actuator torques to be added.
    """
    A, B, C, h = stewart_paper_geometry()
    s = System("stewart-paper" if driven else "stewart-paper-free", dim=3,
               gravity=[0, 0, "-g"],
               description="Rotary-actuated Stewart platform (6-RSU) of the Group Equations paper.")
    s.add_parameter("g", g, "gravity (m/s^2)")
    s.add_parameter("handle_length", SP_HANDLE, "handle A-B (m)")
    s.add_parameter("stick_length", SP_STICK, "stick B-C (m)")
    home = np.array([0.0, 0.0, h])
    s.add_body("terminal", mass=1.0, inertia=[0.0036, 0.0036, 0.0072], com=[0, 0, 0],
               position=_r(home), orientation=[0, 0, 0],
               points={f"C{k + 1}": _r(C[k]) for k in range(6)},
               vectors={f"v{k + 1}": _r([-C[k][1], C[k][0], 0.0]) for k in range(6)})
    for k in range(6):
        i = k + 1
        radial = A[k] / np.linalg.norm(A[k])
        tangent = np.array([-radial[1], radial[0], 0.0])
        s.add_point("ground", f"A{i}", _r(A[k]))
        s.add_vector("ground", f"axis{i}", _r(tangent))
        s.add_vector("ground", f"radial{i}", _r(radial))
        R_handle = np.column_stack([radial, tangent, np.cross(radial, tangent)])
        s.add_body(f"handle{i}", mass=0.1, inertia=[1e-6, 0.1 * SP_HANDLE**2 / 12 + 1e-6,
                                                     0.1 * SP_HANDLE**2 / 12 + 1e-6],
                   com=["handle_length/2", 0, 0], position=_r(A[k]), orientation=_matrix(R_handle),
                   points={"A": [0, 0, 0], "B": ["handle_length", 0, 0]},
                   vectors={"axis": [0, 1, 0], "arm": [1, 0, 0]})
        Cw = home + C[k]
        v = np.array([-C[k][1], C[k][0], 0.0]) / np.linalg.norm(C[k])
        stick_dir = (Cw - B[k]) / np.linalg.norm(Cw - B[k])
        u_s = np.cross(v, stick_dir)
        R_stick = _frame_from_z(stick_dir, u_s)
        s.add_body(f"stick{i}", mass=0.15, inertia=[0.15 * SP_STICK**2 / 12 + 1e-6,
                                                    0.15 * SP_STICK**2 / 12 + 1e-6, 1e-6],
                   com=[0, 0, "stick_length/2"], position=_r(B[k]), orientation=_matrix(R_stick),
                   points={"B": [0, 0, 0], "C": [0, 0, "stick_length"]},
                   vectors={"pin": [1, 0, 0]})
        s.add_joint(f"R{i}", "revolute", "ground", f"handle{i}", point_a=f"A{i}", point_b="A",
                    axis_a=f"axis{i}", axis_b="axis", ref_a=f"radial{i}", ref_b="arm")
        s.add_joint(f"S{i}", "spherical", f"handle{i}", f"stick{i}", point_a="B", point_b="B")
        s.add_joint(f"U{i}", "universal", f"stick{i}", "terminal", point_a="C", point_b=f"C{i}",
                    axis_a="pin", axis_b=f"v{i}")
    if driven:
        drive_terminal(s, h)
    return s


def drive_terminal(s: System, h: float) -> None:
    """The paper's terminal trajectory (also the scalable platforms'): small periodic
    translations about the home height ``h`` and ZYX rotations of up to 0.05 rad."""
    s.add_driver("terminal_pose", "pose", body="terminal",
                 position=["0.01*sin(2*pi*t)", "0.01*cos(2*pi*t) - 0.01",
                           f"{h!r} + 0.01*sin(4*pi*t)"],
                 orientation=["0.05*sin(2*pi*t)", "0.05*sin(4*pi*t)", "0.05*sin(6*pi*t)"],
                 sequence="ZYX")


def _matrix(R):
    return [_r(row) for row in R]
