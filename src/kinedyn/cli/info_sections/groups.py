"""``kinedyn info MODEL --groups``: structural groups (Group Equations) and a picture of their DAG.

Uses the kinematic analysis' independent constraint rows, so the model must be fully driven.
"""
from __future__ import annotations

import warnings


def add_arguments(parser) -> None:
    parser.add_argument("--groups", action="store_true",
                        help="structural groups of the Group Equations method and their DAG")


def render(ctx) -> str | None:
    if not getattr(ctx.args, "groups", False):
        return None
    from ...errors import KinedynError
    from ...kinematics import Kinematics
    from ...kinematics.groups import describe, find_groups
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            kin = Kinematics(ctx.model)
        except KinedynError as e:
            return f"structural groups: not available ({e})"
    gs = find_groups(kin.f, kin.rows)
    text = "structural groups (Group Equations): " + describe(gs, kin.f)
    if not getattr(ctx.args, "no_graph", False):
        from ...viz.groups import draw_groups
        path = draw_groups(gs, ctx.picture("groups"), title=f"{ctx.model.name}: structural groups")
        text += f"\n  DAG picture: {path}"
    return text
