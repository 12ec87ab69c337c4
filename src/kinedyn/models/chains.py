"""Scalable chains for O(N) dynamics: a cart carrying an N-link pendulum (HDCA benchmark).

Cart: 0.8 kg, 0.0833 kg m^2, sliding along the world x axis (prismatic joint through the
origin). Links: 1 m, 0.4 kg, 0.0333 kg m^2 about the centre, the first pinned to the cart,
each next one to the previous tip. Gravity 9.80665 m/s^2 along -y. Initial joint coordinates
(0, pi/4, 0, ..., 0): cart at the origin, the whole chain straight at pi/4 from the downward
vertical, at rest. Link frames: origin at the proximal pin, the link along the frame's -y axis,
so a link's orientation is its angle from the downward vertical and the HDCA joint coordinates
(relative angles) start exactly at (0, pi/4, 0, ..., 0).
"""
from __future__ import annotations

import math

from ..errors import ModelError
from ..model import System
from .limits import check_size
from .planar import G


def cart_pendulum(n: int = 4, *, link_length: float = 1.0, link_mass: float = 0.4,
                  link_inertia: float = 0.0333, cart_mass: float = 0.8,
                  cart_inertia: float = 0.0833, angle: float = math.pi / 4,
                  g: float = G) -> System:
    """Cart with an ``n``-link pendulum chain (``n`` >= 1); ``angle`` is the first link's
    initial angle from the downward vertical (the others start aligned with it)."""
    if int(n) != n or n < 1:
        raise ModelError(f"cart-pendulum needs a positive whole number of links, got {n!r}")
    n = int(n)
    check_size(f"cart-pendulum-{n}", n + 1)
    s = System(f"cart-pendulum-{n}", dim=2, gravity=[0, "-g"],
               description=f"Cart on a slider carrying a {n}-link pendulum chain.")
    for name, value, text in (("link_length", link_length, "length of each link (m)"),
                              ("link_mass", link_mass, "mass of each link (kg)"),
                              ("link_inertia", link_inertia, "link inertia about its centre (kg m^2)"),
                              ("cart_mass", cart_mass, "cart mass (kg)"),
                              ("cart_inertia", cart_inertia, "cart inertia (kg m^2)"),
                              ("angle", angle, "initial angle of the chain from the downward vertical (rad)"),
                              ("g", g, "gravity (m/s^2)")):
        s.add_parameter(name, value, text)
    s.add_point("ground", "O", [0, 0])
    s.add_vector("ground", "slide", [1, 0])
    s.add_body("cart", mass="cart_mass", inertia="cart_inertia", com=[0, 0], position=[0, 0],
               orientation=0, points={"P": [0, 0]}, vectors={"slide": [1, 0]})
    s.add_joint("slide", "prismatic", "ground", "cart", point_a="O", point_b="P",
                axis_a="slide", axis_b="slide")
    dx, dy = math.sin(angle) * link_length, -math.cos(angle) * link_length
    prev, prev_point = "cart", "P"
    for k in range(1, n + 1):
        name = f"link{k}"
        s.add_body(name, mass="link_mass", inertia="link_inertia", com=[0, "-link_length/2"],
                   position=[(k - 1) * dx, (k - 1) * dy], orientation="angle",
                   points={"A": [0, 0], "B": [0, "-link_length"]})
        s.add_joint(f"pin{k}", "revolute", prev, name, point_a=prev_point, point_b="A")
        prev, prev_point = name, "B"
    return s
