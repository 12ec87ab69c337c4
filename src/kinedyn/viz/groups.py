"""Picture of the structural-group DAG (Group Equations paper, Figure 1c).

One row per DAG level (level 0 at the top, solved first), one box per group labelled with its
number, size and bodies; arrows from each group to the groups that need its coordinates.
"""
from __future__ import annotations

from pathlib import Path


def draw_groups(structure, path, *, title: str | None = None) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = structure.levels
    width = max(len(lv) for lv in levels)
    pos = {}
    for depth, level in enumerate(levels):
        for k, g in enumerate(level):
            pos[g] = (k - (len(level) - 1) / 2, -depth)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * width), 1.0 + 1.3 * len(levels)))
    for p, g in structure.edges():
        (x0, y0), (x1, y1) = pos[p], pos[g]
        ax.annotate("", xy=(x1, y1 + 0.18), xytext=(x0, y0 - 0.18),
                    arrowprops=dict(arrowstyle="->", color="0.4", lw=0.8))
    for g, (x, y) in pos.items():
        grp = structure.groups[g]
        bodies = ", ".join(grp.bodies[:2]) + (" ..." if len(grp.bodies) > 2 else "")
        ax.text(x, y, f"G{g}: {grp.size}\n{bodies}", ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round", fc="#e8f0fe" if grp.level == 0 else "#fdf3e1",
                          ec="0.3"))
    ax.set_xlim(-width / 2 - 0.3, width / 2 + 0.3)
    ax.set_ylim(-len(levels) + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(title or f"{len(structure.groups)} structural groups, "
                 f"{len(levels)} level(s)", fontsize=9)
    path = Path(path)
    fig.savefig(path, bbox_inches="tight", dpi=120)
    plt.close(fig)
    return path
