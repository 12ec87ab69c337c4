"""Picture of the body-joint graph: bodies as nodes, joints as edges, loops marked.

Tree joints are solid, cut joints (one per independent loop) dashed red; joints that lie on a
loop are drawn in the loop's colour, joints on no loop in grey. Several joints between the same
two bodies are drawn as separate arcs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

FORMATS = ("png", "svg")
_LOOP_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink",
                 "tab:olive", "tab:cyan")


def _layout(topology) -> dict[int, np.ndarray]:
    """Layered positions: the ground at the bottom, each body one layer above its tree parent.

    Within a layer bodies keep the left-to-right order of a depth-first walk of the spanning
    tree (so a branch stays in one column) and are spread evenly, centred.
    """
    order: list[int] = []
    stack = [0]
    while stack:
        b = stack.pop()
        order.append(b)
        stack.extend(reversed(topology.children[b]))
    rank = {b: k for k, b in enumerate(order)}
    layers: dict[int, list[int]] = {}
    for b in order:
        layers.setdefault(int(topology.depth[b]), []).append(b)
    width = max(len(v) for v in layers.values())
    pos = {}
    for depth, bodies in layers.items():
        bodies.sort(key=rank.get)
        for k, b in enumerate(bodies):
            pos[b] = np.array([k - (len(bodies) - 1) / 2, depth * max(1.0, 0.35 * width)])
    return pos


def draw_topology(topology, path, *, title: str | None = None) -> Path:
    """Draw ``topology`` (a :class:`kinedyn.topology.Topology`) to ``path`` (.png or .svg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    path = Path(path)
    m = topology.model
    pos = _layout(topology)
    loop_of: dict[int, int] = {}
    for k, loop in enumerate(topology.loops):
        for j in loop.joints:
            loop_of.setdefault(j, k)
    cuts = set(topology.cut_joints)
    n = m.n_body
    width = max(np.ptp([p[0] for p in pos.values()]), 1.0)
    height = max(np.ptp([p[1] for p in pos.values()]), 1.0)
    fig, ax = plt.subplots(figsize=(min(3.0 + 1.5 * width, 20), min(3.0 + 1.5 * height, 14)))
    pairs: dict[tuple[int, int], list[int]] = {}
    for j in range(m.n_joint):
        a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
        pairs.setdefault((min(a, b), max(a, b)), []).append(j)
    for (a, b), joints in pairs.items():
        d = pos[b] - pos[a]
        # an edge along a layer that skips bodies bends so as not to run through them
        bend = 0.35 if abs(d[1]) < 1e-9 and abs(d[0]) > 1.01 else 0.0
        for k, j in enumerate(joints):
            rad = bend + 0.3 * (k - (len(joints) - 1) / 2)
            colour = "tab:red" if j in cuts else _LOOP_COLOURS[loop_of[j] % len(_LOOP_COLOURS)] \
                if j in loop_of else "0.45"
            style = "--" if j in cuts else "-"
            ax.annotate("", xy=pos[b], xytext=pos[a], zorder=1,
                        arrowprops=dict(arrowstyle="-", color=colour, lw=2.2 if j in cuts else 1.6,
                                        linestyle=style, shrinkA=0, shrinkB=0,
                                        connectionstyle=f"arc3,rad={rad}"))
            # midpoint of the quadratic Bezier curve arc3 draws
            pa, pb = pos[a], pos[b]
            d = pb - pa
            mid = (pa + pb) / 2 + 0.5 * rad * np.array([d[1], -d[0]])
            ax.text(mid[0], mid[1], f"{m.joint_name[j]}\n{m.joint_type_name(j)}", fontsize=7,
                    ha="center", va="center", zorder=3, color=colour if j in cuts else "0.1",
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
    for node in range(n):
        x, y = pos[node]
        ground = node == 0
        ax.text(x, y, m.body_name[node], fontsize=8, ha="center", va="center", zorder=4,
                color="white" if ground else "black", fontweight="bold" if ground else None,
                bbox=dict(boxstyle="square,pad=0.4" if ground else "round,pad=0.35",
                          fc="0.25" if ground else "lightsteelblue", ec="0.1"))
    handles = [Line2D([], [], color="0.45", lw=1.6, label="tree joint"),
               Line2D([], [], color="tab:red", lw=2.2, ls="--", label="cut joint (closes a loop)")]
    handles += [Line2D([], [], color=_LOOP_COLOURS[k % len(_LOOP_COLOURS)], lw=1.6,
                       label=f"loop {k + 1} (cut {m.joint_name[loop.cut_joint]})")
                for k, loop in enumerate(topology.loops[:len(_LOOP_COLOURS)])]
    ax.legend(handles=handles, loc="upper left", fontsize=7, framealpha=0.9)
    ax.set_title(title or f"{m.name}: {n - 1} bodies, {m.n_joint} joints, "
                 f"{len(topology.loops)} loop{'' if len(topology.loops) == 1 else 's'}")
    xs, ys = [p[0] for p in pos.values()], [p[1] for p in pos.values()]
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6 + 0.25 * len(handles))  # room for the legend
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
