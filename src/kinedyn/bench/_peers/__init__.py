"""Peer engines (MuJoCo, Pinocchio, Exudyn) stepping the same mechanisms as kinedyn, for
``kinedyn bench peers``: each adapter builds the peer's own model of a mechanism from the same
data, runs it with the peer's own integrator loop and returns a :class:`PeerRun` - the peer's
time per step and its observables - so that the benchmark can time both side by side and
compare the peer's motion with kinedyn's reference trajectory.

The mechanisms (planar ones with gravity ``G`` = 9.80665 m/s^2 along -y; all released from
rest):

* ``double-pendulum``: two uniform rods of 1 m and 1 kg (inertia m l^2/12 about the centre),
  the first pinned at the origin, the second at the first's tip; both start horizontal
  (absolute angles pi/2 from the downward vertical, counter-clockwise positive). Observables
  ``theta1``, ``theta2``: each rod's absolute angle from the downward vertical (rad).
* ``four-bar``: ground pivots A = (0, 0) and D = (0.4, 0); crank A-B 0.1 m, coupler B-C
  0.4 m, rocker D-C 0.3 m, uniform links of 1 kg (m l^2/12); the crank starts vertical
  (pi/2 from +x), the coupler and rocker in the upper (open) assembly. Observables ``crank``:
  the crank's angle from +x (rad, continuous); ``gap``: the loop's closure error |C_coupler -
  C_rocker| (m), the distance between the coupler's and the rocker's ends that the joint C
  should hold together.
* ``gough-stewart``: :func:`kinedyn.models.stewart.gough_stewart` (the thesis's 6-UPS with
  Tsai's data, its leg forces +-0.1 sin(2 pi t / 3) N, gravity along -z: the platform falls
  as the legs give way), MuJoCo only. Observables ``x``, ``y``, ``z``: the platform's centre
  of mass (m); ``gap``: the largest of the six spherical joints' closure errors (m).
* ``cart-pendulum-<N>``: :func:`kinedyn.models.chains.cart_pendulum` (cart 0.8 kg on a slider
  along x, N links of 1 m, 0.4 kg, 0.0333 kg m^2 about the centre, the chain straight at pi/4
  from the downward vertical). Observables ``x``: the cart's position (m); ``angle``: the first
  link's absolute angle from the downward vertical (rad).
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

import numpy as np

from ...models.planar import G, _circle_intersection  # noqa: F401 (G: for the peers)

#: the four-bar's ground A-D, crank A-B, coupler B-C and rocker D-C (m)
FOUR_BAR = (0.4, 0.1, 0.4, 0.3)


def four_bar_start() -> tuple[float, float, float]:
    """The four-bar's crank, coupler and rocker angles from +x at the start: the crank
    vertical, C the upper intersection of the circles about B (the coupler) and about D (the
    rocker) - the open assembly, as :func:`kinedyn.models.planar.four_bar` builds it."""
    ground, crank, coupler, rocker = FOUR_BAR
    b = np.array([0.0, crank])
    c = _circle_intersection(b, coupler, np.array([ground, 0.0]), rocker)
    return math.pi / 2, math.atan2(c[1] - b[1], c[0] - b[0]), math.atan2(c[1], c[0] - ground)


@dataclass
class PeerRun:
    """One peer's run of one mechanism.

    ``us_per_step``: wall time per step of the peer's own stepping loop (model building and
    output excluded), the median over ``repeat`` runs; ``t``: the sample times (s) of
    ``values``, each observable of the mechanism (see the module docstring) at those times;
    ``setup``: what the peer was asked to do (integrator, step, constraint treatment) in a few
    words; ``notes``: anything a reader needs to judge the number (for example a soft loop;
    ``kinedyn bench peers`` lists them under its tables)."""
    version: str
    setup: str
    us_per_step: float
    t: np.ndarray
    values: dict[str, np.ndarray]
    notes: str = ""


def probe(package: str):
    """An adapter's ``available()`` (``package`` imports) and ``version()`` (its version
    string); the package is imported only when they are called, so an adapter module always
    imports."""
    def available() -> bool:
        try:
            importlib.import_module(package)
        except ImportError:
            return False
        return True

    def version() -> str:
        return str(importlib.import_module(package).__version__)
    return available, version
