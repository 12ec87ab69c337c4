"""Scalable platforms for the Group Equations benchmark: legs of k-stage scissor chains.

``scissor_platform(legs, stages)`` generalises the paper's 6-RSU Stewart platform (section 3,
:func:`~.stewart.stewart_paper`) so that the size of the leg structural groups can be chosen, as
the paper's scalable experiments (section 5, Tables 2-5: nSG groups of nSG-HS coordinates)
require - but with real mechanisms instead of synthetic matrices.

Each of the ``legs`` legs is a *handle* turning about a horizontal axis tangent to the base
circle (revolute joint at A), a *lazy-tongs* scissor chain of ``stages`` stages standing on the
handle in the handle's plane, and a *stick* from the top of the tongs to the terminal (spherical
joint at the tongs, cardan joint at the terminal). Stage j of the tongs is two bars crossing at
their midpoints (a cylindrical joint along the plane normal, which leaves the midpoint free
along the normal so that the planar loop adds no redundant equation); the bars' ends are pinned
(revolute joints) to the next stage, and the first stage's lower ends to two points of the
handle. Pinned at two points, the tongs are rigid, but only their loop equations make them so:
no stage can be solved before the handle angle is known, and the handle angle only follows from
the stick closing the loop on the terminal. So each leg is **one irreducible structural group**
of ``18 + 12 * stages`` natural coordinates (handle: two pins and a unit vector, 9; each stage:
two new pins and a unit vector per bar, 12; stick: cardan point, cross axis and a unit vector,
9), solved after the terminal group (its pose driven, 12 coordinates); the legs are independent
of each other. ``stages=0`` is the paper's handle-stick leg of 15.

Stage counts giving the paper's leg-group sizes nSG-HS = 15, 30, 60, 120, 240, 360, 480, 720:
:data:`PAPER_STAGES` (sizes 15, 30, 66, 126, 246, 366, 486, 726 - within 6 of the paper's).

Geometry: the paper's Stewart dimensions (pivots on a 0.20 m radius at 120 i +- 15 deg for six
legs; ``legs`` legs are spread the same way in pairs), handles 0.08 m, tongs 0.08 m tall in
total (stage height 0.08 / stages, bars crossing at right angles), sticks 0.25 m, cardans on a
0.12 m radius. Bars 0.02 kg. The terminal pose is driven as in ``stewart-paper``.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import ModelError
from ..model import System
from .limits import check_size
from .planar import G
from .stewart import SP_HANDLE, SP_STICK, _frame_from_z, _matrix, _r, drive_terminal

BASE_RADIUS, TOP_RADIUS, TONGS_HEIGHT = 0.20, 0.12, 0.08
PAPER_STAGES = {15: 0, 30: 1, 60: 4, 120: 9, 240: 19, 360: 29, 480: 39, 720: 59}
NAME = re.compile(r"^scissor-platform-(\d+)x(\d+)$")


def leg_group_size(stages: int) -> int:
    """Natural coordinates of one leg group (handle, tongs, stick)."""
    return 15 if stages == 0 else 18 + 12 * stages


def _angles(legs: int):
    """Pivot and cardan angles: pairs of legs around the circle (6 legs: the paper's)."""
    pairs = (legs + 1) // 2
    out = []
    for k in range(legs):
        sign = -1.0 if k % 2 == 0 else 1.0
        centre = 2 * math.pi / pairs * (k // 2)
        out.append((centre + sign * math.radians(15) * 3 / pairs,
                    centre + sign * math.radians(45) * 3 / pairs))
    return out


def scissor_platform(legs: int = 6, stages: int = 1, g: float = G) -> System:
    """Platform with ``legs`` handle-tongs-stick legs of ``stages``-stage scissor chains."""
    if legs < 3 or stages < 0:
        raise ModelError(f"scissor-platform needs legs >= 3 and stages >= 0, got {legs}x{stages}")
    check_size(f"scissor-platform-{legs}x{stages}", legs * (2 * stages + 2) + 1)
    hs = TONGS_HEIGHT / max(stages, 1)   # stage height
    c = hs / 2                           # half base width: bars cross at right angles
    bar = math.hypot(2 * c, hs)
    s = System(f"scissor-platform-{legs}x{stages}", dim=3, gravity=[0, 0, "-g"],
               description=f"{legs}-leg platform, legs of handle + {stages}-stage scissor chain "
                           "+ stick (Group Equations benchmark family).")
    s.add_parameter("g", g, "gravity (m/s^2)")
    angles = _angles(legs)
    tip_local = np.array([SP_HANDLE - c, 0.0, TONGS_HEIGHT if stages else 0.0])
    # terminal height from the first leg's geometry (all legs are alike by symmetry in pairs)
    radial0 = np.array([math.cos(angles[0][0]), math.sin(angles[0][0]), 0.0])
    C0 = TOP_RADIUS * np.array([math.cos(angles[0][1]), math.sin(angles[0][1]), 0.0])
    D0 = BASE_RADIUS * radial0 + tip_local[0] * radial0 + np.array([0, 0, tip_local[2]])
    h = float(tip_local[2] + math.sqrt(SP_STICK**2 - np.linalg.norm((D0 - C0)[:2]) ** 2))
    home = np.array([0.0, 0.0, h])
    s.add_body("terminal", mass=1.0, inertia=[0.0036, 0.0036, 0.0072], com=[0, 0, 0],
               position=_r(home), orientation=[0, 0, 0],
               points={f"C{k + 1}": _r(TOP_RADIUS * np.array([math.cos(d), math.sin(d), 0.0]))
                       for k, (_, d) in enumerate(angles)},
               vectors={f"v{k + 1}": _r([-math.sin(d), math.cos(d), 0.0])
                        for k, (_, d) in enumerate(angles)})
    for k, (gam, dlt) in enumerate(angles):
        _leg(s, k + 1, gam, dlt, stages, hs, c, bar, home, tip_local)
    drive_terminal(s, h)
    return s


def _leg(s, i, gam, dlt, stages, hs, c, bar, home, tip_local):
    radial = np.array([math.cos(gam), math.sin(gam), 0.0])
    tangent = np.array([-radial[1], radial[0], 0.0])
    A = BASE_RADIUS * radial
    R_h = np.column_stack([radial, tangent, np.cross(radial, tangent)])  # x out, y axis, z up
    s.add_point("ground", f"A{i}", _r(A))
    s.add_vector("ground", f"axis{i}", _r(tangent))
    s.add_vector("ground", f"radial{i}", _r(radial))
    handle_points = {"A": [0, 0, 0]}
    if stages:
        handle_points.update({"Pa": _r([SP_HANDLE - c, 0, 0]), "Pb": _r([SP_HANDLE + c, 0, 0])})
    else:
        handle_points["D"] = _r(tip_local)
    s.add_body(f"handle{i}", mass=0.1, inertia=[1e-6, 0.1 * SP_HANDLE**2 / 12 + 1e-6,
                                                 0.1 * SP_HANDLE**2 / 12 + 1e-6],
               com=[SP_HANDLE / 2, 0, 0], position=_r(A), orientation=_matrix(R_h),
               points=handle_points, vectors={"axis": [0, 1, 0], "arm": [1, 0, 0]})
    s.add_joint(f"R{i}", "revolute", "ground", f"handle{i}", point_a=f"A{i}", point_b="A",
                axis_a=f"axis{i}", axis_b="axis", ref_a=f"radial{i}", ref_b="arm")
    # tongs: bar "u{j}" rises from the a side to the b side, bar "w{j}" from b to a
    rise = math.atan2(hs, 2 * c)
    ends = {}  # (level, side) -> (body, point) of the end already there
    if stages:
        ends[0, "a"] = (f"handle{i}", "Pa")
        ends[0, "b"] = (f"handle{i}", "Pb")
    for j in range(stages):
        z0 = j * hs
        for name, side, other, ang in ((f"u{i}_{j}", "a", "b", rise),
                                       (f"w{i}_{j}", "b", "a", math.pi - rise)):
            x0 = SP_HANDLE - c if side == "a" else SP_HANDLE + c
            R_local = np.array([[math.cos(ang), 0, -math.sin(ang)], [0, 1, 0],
                                [math.sin(ang), 0, math.cos(ang)]])
            start = A + R_h @ np.array([x0, 0.0, z0])
            s.add_body(name, mass=0.02, inertia=[1e-7, 0.02 * bar**2 / 12 + 1e-7,
                                                 0.02 * bar**2 / 12 + 1e-7],
                       com=[bar / 2, 0, 0], position=_r(start), orientation=_matrix(R_h @ R_local),
                       points={"s": [0, 0, 0], "m": _r([bar / 2, 0, 0]), "e": _r([bar, 0, 0])},
                       vectors={"n": [0, 1, 0]})
            body, point = ends[j, side]
            s.add_joint(f"{name}_pin", "revolute", body, name, point_a=point, point_b="s",
                        axis_a="axis" if body.startswith("handle") else "n", axis_b="n")
            ends[j + 1, other] = (name, "e")
        s.add_joint(f"x{i}_{j}", "cylindrical", f"u{i}_{j}", f"w{i}_{j}", point_a="m",
                    point_b="m", axis_a="n", axis_b="n")
    tip_body, tip_point = ends[stages, "a"] if stages else (f"handle{i}", "D")
    D = A + R_h @ tip_local
    Cw = home + TOP_RADIUS * np.array([math.cos(dlt), math.sin(dlt), 0.0])
    v = np.array([-math.sin(dlt), math.cos(dlt), 0.0])
    stick_dir = (Cw - D) / np.linalg.norm(Cw - D)
    R_stick = _frame_from_z(stick_dir, np.cross(v, stick_dir))
    s.add_body(f"stick{i}", mass=0.15, inertia=[0.15 * SP_STICK**2 / 12 + 1e-6,
                                                0.15 * SP_STICK**2 / 12 + 1e-6, 1e-6],
               com=[0, 0, SP_STICK / 2], position=_r(D), orientation=_matrix(R_stick),
               points={"D": [0, 0, 0], "C": [0, 0, SP_STICK]}, vectors={"pin": [1, 0, 0]})
    s.add_joint(f"S{i}", "spherical", tip_body, f"stick{i}", point_a=tip_point, point_b="D")
    s.add_joint(f"U{i}", "universal", f"stick{i}", "terminal", point_a="C", point_b=f"C{i}",
                axis_a="pin", axis_b=f"v{i}")


def from_name(name: str) -> System | None:
    """``scissor-platform-<legs>x<stages>`` -> the model, or None for other names."""
    m = NAME.match(name)
    return None if m is None else scissor_platform(int(m.group(1)), int(m.group(2)))
