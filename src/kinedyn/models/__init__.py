"""The model library: every mechanism of the papers plus standard benchmarks.

Each model is a function returning a :class:`~kinedyn.model.System` with documented parameters;
:data:`MODELS` maps the CLI names to them, and ``examples/models/<name>.yaml`` is each one's
model-file twin (it compiles to the same arrays).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from ..errors import UnknownNameError
from ..model import System
from .chains import cart_pendulum
from .planar import double_pendulum, four_bar, parallelogram, rrr3, slider_crank
from .scissor import scissor_platform
from .sixbar import landing_gear, stephenson3
from .scissor import from_name as _scissor_from_name
from .stewart import gough_stewart, stewart_paper
from .suspension import double_wishbone, five_link
from .vehicle import quadruped, vehicle


@dataclass(frozen=True)
class ModelInfo:
    name: str
    build: Callable[[], System]
    summary: str


MODELS: dict[str, ModelInfo] = {m.name: m for m in (
    ModelInfo("double-pendulum", double_pendulum, "planar double pendulum of two uniform rods"),
    ModelInfo("four-bar", four_bar, "planar four-bar 0.4/0.1/0.4/0.3 m, free under gravity"),
    ModelInfo("four-bar-hdca", partial(four_bar, crank=0.3, coupler=0.3, rocker=0.3,
                                       crank_angle=3.141592653589793 / 4),
              "HDCA paper's four-bar: ground 0.4 m, three uniform 0.3 m 1 kg links, alpha0 = pi/4"),
    ModelInfo("four-bar-driven", partial(four_bar, speed=2 * 3.141592653589793),
              "planar four-bar, crank driven at 1 rev/s"),
    ModelInfo("parallelogram", parallelogram,
              "parallelogram with a third parallel crank (one redundant constraint), driven"),
    ModelInfo("slider-crank", slider_crank, "planar slider-crank 0.3/0.4 m (thesis ch. 3)"),
    ModelInfo("slider-crank-driven", partial(slider_crank, speed=2 * 3.141592653589793),
              "slider-crank, crank driven at 1 rev/s"),
    ModelInfo("3-rrr", rrr3, "planar 3-RRR parallel robot with the thesis's motor torques"),
    ModelInfo("3-rrr-driven", partial(rrr3, driven=True), "3-RRR with driven base joints"),
    ModelInfo("stephenson3", stephenson3, "Stephenson-III six-bar (thesis 4.2.2), free under gravity"),
    ModelInfo("stephenson3-beta1", partial(stephenson3, driven="beta1"),
              "Stephenson-III, beta1 = 2.09 + sin(pi t) (block-triangular, thesis Fig. 4.7)"),
    ModelInfo("stephenson3-theta1", partial(stephenson3, driven="theta1"),
              "Stephenson-III, theta1 driven through the same motion (triangular, Fig. 4.8)"),
    ModelInfo("landing-gear", landing_gear, "aircraft nose landing gear (thesis 4.2.3, A.1), free"),
    ModelInfo("landing-gear-driven", partial(landing_gear, driven=True),
              "aircraft nose landing gear retracted by its hydraulic cylinder in 1 s"),
    ModelInfo("gough-stewart", gough_stewart, "Gough-Stewart 6-UPS (thesis A.3-A.4), leg forces"),
    ModelInfo("gough-stewart-driven", partial(gough_stewart, driven=True),
              "Gough-Stewart 6-UPS, platform pose driven (inverse kinematics)"),
    ModelInfo("stewart-paper", stewart_paper,
              "6-RSU Stewart platform of the Group Equations paper, terminal pose driven"),
    ModelInfo("stewart-paper-free", partial(stewart_paper, driven=False),
              "6-RSU Stewart platform, no drivers (6 dof)"),
    ModelInfo("five-link", five_link,
              "five-link suspension (thesis 5.1, A.4), vertical carrier force (5.8), gravity"),
    ModelInfo("double-wishbone-driven", double_wishbone,
              "double-wishbone front-left corner (thesis 5.2, A.6), rack and lower arm driven"),
    ModelInfo("quadruped", quadruped, "quadruped of the sparse-relative paper (Figs. 1-3)"),
    ModelInfo("vehicle", vehicle, "10-body vehicle, MacPherson composite joints (sparse paper)"),
    ModelInfo("scissor-platform-6x1", partial(scissor_platform, 6, 1),
              "6 legs of handle + 1-stage scissor chain + stick (Group Equations benchmark "
              "family scissor-platform-<legs>x<stages>), terminal pose driven"),
)}

#: Parametrised families ``<prefix><N>``: prefix -> (builder of N, summary).
FAMILIES: dict[str, tuple[Callable[[int], System], str]] = {
    "cart-pendulum-": (cart_pendulum, "cart with an N-link pendulum chain (HDCA paper's "
                                      "scalable test), e.g. cart-pendulum-64"),
}

#: Families with several numbers in the name: pattern -> (parser of a name, returning None for
#: other names; summary).
PATTERN_FAMILIES: dict[str, tuple[Callable[[str], System | None], str]] = {
    "scissor-platform-<legs>x<stages>": (_scissor_from_name, "platform with <legs> legs of "
                                         "<stages>-stage scissor chains (Group Equations "
                                         "benchmark), e.g. scissor-platform-16x9"),
}


def get(name: str) -> System:
    """A fresh :class:`System` of a library model by name (or ``<family>-<N>``)."""
    if name in MODELS:
        return MODELS[name].build()
    for prefix, (build, _) in FAMILIES.items():
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return build(int(name[len(prefix):]))
    for parse, _ in PATTERN_FAMILIES.values():
        system = parse(name)
        if system is not None:
            return system
    raise UnknownNameError("model", name, list(MODELS) + [p + "<N>" for p in FAMILIES]
                           + list(PATTERN_FAMILIES))


__all__ = ["MODELS", "ModelInfo", "get", "double_pendulum", "four_bar", "slider_crank", "rrr3",
           "gough_stewart", "stewart_paper", "parallelogram"]
__all__ += ["FAMILIES", "cart_pendulum"]
__all__ += ["PATTERN_FAMILIES", "scissor_platform"]
__all__ += ["stephenson3", "landing_gear"]
__all__ += ["five_link", "double_wishbone"]
