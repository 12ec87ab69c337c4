"""``kinedyn models``: the built-in models with their dimension, mobility and drivers."""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("models", help="list the built-in models",
                       description="List the built-in models (usable wherever MODEL is asked): "
                                   "dimension, degrees of freedom of the mechanism (Gruebler-"
                                   "Kutzbach), equations removed by drivers, description.")
    p.set_defaults(func=run)


def rows() -> list[list[str]]:
    """One row per built-in model: name, dim, dof, driven, description.

    dof is the mechanism's mobility from the rank of its constraint Jacobian (drivers removed),
    which sees redundant constraints Gruebler's count misses; idle spins are shown apart.
    """
    from .. import models
    from ..kinematics.mobility import mechanism_mobility
    from ..topology import Topology
    out = []
    for name, info in models.MODELS.items():
        system = info.build()
        mob = Topology(system.compile()).mobility
        dof = mechanism_mobility(system).dof - len(mob.idle)
        text = str(dof) + (f"+{len(mob.idle)} idle" if mob.idle else "")
        if dof != mob.effective:
            text += f" (Gruebler {mob.effective})"
        out.append([name, f"{mob.dim}-D", text, str(mob.drivers), info.summary])
    return out


def run(args) -> int:
    from ..models import FAMILIES
    from .info import _table
    print(_table(rows(), ["name", "dim", "dof", "driven", "description"]))
    print("\n  dof: mobility of the mechanism (rank of its constraint Jacobian); driven: "
          "equations its drivers prescribe (dof - driven = 0: kinematically driven)")
    if FAMILIES:
        print("\n  families (N = size):")
        for prefix, (_, summary) in FAMILIES.items():
            print(f"  {prefix}<N>  {summary}")
    from ..models import PATTERN_FAMILIES
    for pattern, (_, summary) in PATTERN_FAMILIES.items():
        print(f"  {pattern}  {summary}")
    return 0
