"""``kinedyn models``: the built-in models with their dimension, mobility and drivers."""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("models", help="list the built-in models",
                       description="List the built-in models (usable wherever MODEL is asked): "
                                   "dimension, degrees of freedom of the mechanism (Gruebler-"
                                   "Kutzbach), equations removed by drivers, description.")
    p.set_defaults(func=run)


def rows() -> list[list[str]]:
    """One row per built-in model: name, dim, dof, driven, description."""
    from .. import models
    from ..topology import Topology
    out = []
    for name, info in models.MODELS.items():
        mob = Topology(info.build().compile()).mobility
        dof = str(mob.effective) + (f"+{len(mob.idle)} idle" if mob.idle else "")
        out.append([name, f"{mob.dim}-D", dof, str(mob.drivers), info.summary])
    return out


def run(args) -> int:
    from .info import _table
    print(_table(rows(), ["name", "dim", "dof", "driven", "description"]))
    print("\n  dof: mobility of the mechanism; driven: equations its drivers prescribe "
          "(dof - driven = 0: kinematically driven)")
    return 0
