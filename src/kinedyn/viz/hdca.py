"""The HDCA paper's result figures (PNG): joint motion (Figs. 6, 10), kinetic energy and its
difference to a reference solution (Figs. 7, 11), loop-closure errors (Figs. 12, 13)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .plots import _figure, _save


def paper_figures(res, out_dir, reference: dict | None = None, label: str = "reference",
                  extra: dict | None = None) -> list[Path]:
    """Figures of an HDCA run ``res`` (:class:`~kinedyn.dynamics.hdca.HDCAResults`).

    ``reference``: channels on the same time grid from another method (``energy.kinetic``,
    ``q.<joint>``-like keys ``joint.<joint>.angle`` / ``_d``) for the difference plots, named
    ``label`` (the paper compared with MSC.ADAMS). ``extra``: more HDCA runs by name (for
    instance the float32 run) whose energy and loop closure are overlaid.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = res.summary["model"]
    t = res.time
    runs = {f"HDCA {res.summary['precision']}": res, **(extra or {})}
    paths = []
    j0 = res.h.joint_names[0]
    plt, fig, axes = _figure(2)
    for key, r in runs.items():
        axes[0].plot(t, r.channel(f"q.{j0}"), label=key)
        axes[1].plot(t, r.channel(f"q.{j0}_d"), label=key)
    if reference is not None and f"joint.{j0}.angle" in reference:
        off = reference[f"joint.{j0}.angle"][0] - res.channel(f"q.{j0}")[0]
        axes[0].plot(t, reference[f"joint.{j0}.angle"] - off, "--", label=label)
        axes[1].plot(t, reference[f"joint.{j0}.angle_d"], "--", label=label)
    axes[0].set_ylabel(f"q {j0} (rad)")
    axes[1].set_ylabel(f"qd {j0} (rad/s)")
    axes[1].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{name}: joint position and velocity")
    paths.append(_save(plt, fig, out / f"{name}_joint.png"))

    plt, fig, axes = _figure(2)
    for key, r in runs.items():
        axes[0].plot(t, r.channel("energy.kinetic"), label=key)
    axes[0].set_ylabel("T (J)")
    if reference is not None:
        T_ref = reference["energy.kinetic"]
        axes[0].plot(t, T_ref, "--", label=label)
        for key, r in runs.items():
            axes[1].plot(t, r.channel("energy.kinetic") - T_ref, label=f"{key} - {label}")
        axes[1].set_ylabel("T - T_ref (J)")
    else:
        for key, r in runs.items():
            E = r.channel("energy.total")
            axes[1].plot(t, E - E[0], label=key)
        axes[1].set_ylabel("E - E(0) (J)")
    axes[1].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{name}: kinetic energy")
    paths.append(_save(plt, fig, out / f"{name}_energy.png"))

    if res.h.closed:
        for key, what, unit in (("position", "vector loop length |r|", "m"),
                                ("angle", "inner angles sum error", "rad")):
            plt, fig, axes = _figure(1)
            for k, r in runs.items():
                axes[0].semilogy(t, np.maximum(np.abs(r.channel(f"closure.{key}")), 1e-18),
                                 label=k)
            axes[0].set_ylabel(f"{what} ({unit})")
            axes[0].set_xlabel("time (s)")
            axes[0].grid(True, which="both", alpha=0.3)
            axes[0].legend(fontsize=8)
            fig.suptitle(f"{name}: loop closure, {what}")
            paths.append(_save(plt, fig, out / f"{name}_loop_{key}.png"))
    return paths


def scaling_plot(rows: list[dict], columns: dict[str, str], path, title: str) -> Path:
    """Log-log time per evaluation against N: ``columns`` maps row keys to legend labels."""
    plt, fig, axes = _figure(1)
    ax = axes[0]
    for key, label in columns.items():
        pts = [(r["N"], r[key]) for r in rows if r.get(key) not in (None, "")]
        if pts:
            x, y = zip(*pts)
            ax.loglog(x, y, "o-", label=label)
    ns = np.array(sorted({r["N"] for r in rows}), float)
    ref = [r for r in rows if r.get("hdca_serial_us")]
    if ref:
        c = ref[-1]["hdca_serial_us"] / ref[-1]["N"]
        ax.loglog(ns, c * ns, ":", color="gray", label="O(N)")
    ax.set_xlabel("N (links)")
    ax.set_ylabel("time per state-derivative evaluation (us)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title)
    return _save(plt, fig, path)
