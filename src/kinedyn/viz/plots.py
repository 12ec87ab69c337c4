"""Time-history plots of results channels (PNG)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ModelError


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(plt, fig, path) -> Path:
    """Lay out, write (PNG, 110 dpi) and close ``fig``; its path."""
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _figure(n_axes: int):
    plt = _pyplot()
    fig, axes = plt.subplots(n_axes, 1, figsize=(8, 2.2 + 1.8 * n_axes), sharex=True,
                             squeeze=False)
    return plt, fig, axes[:, 0]


def plot_channels(results, patterns, path, title: str | None = None, *,
                  per_axis: int = 6) -> Path:
    """Plot the channels matching the glob ``patterns`` against time.

    Channels are grouped by unit-like suffix so that one axis never mixes positions with
    velocities; at most ``per_axis`` curves share an axis. Returns the PNG path.
    """
    names = results.select(patterns)
    if not names:
        raise ModelError("no channels to plot: give at least one channel name or pattern")
    groups: dict[str, list[str]] = {}
    for n in names:
        suffix = "_dd" if n.endswith("_dd") else "_d" if n.endswith("_d") else ""
        groups.setdefault(suffix, []).append(n)
    chunks = [g[i:i + per_axis] for g in groups.values() for i in range(0, len(g), per_axis)]
    plt, fig, axes = _figure(len(chunks))
    for ax, chunk in zip(axes, chunks):
        for n in chunk:
            ax.plot(results.time, results.channel(n), label=n)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(title or results.summary.get("model", ""))
    return _save(plt, fig, path)


def plot_log(results, patterns, path, title: str, ylabel: str) -> Path:
    """Semi-log plot of non-negative channels (residuals, drift) against time."""
    names = results.select(patterns)
    plt, fig, axes = _figure(1)
    ax = axes[0]
    for n in names:
        y = np.abs(np.asarray(results.channel(n), float))
        ax.semilogy(results.time, np.maximum(y, 1e-18), label=n)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title)
    return _save(plt, fig, path)


def plot_step_times(times, step_us, budget_us: float, path, title: str) -> Path:
    """Per-call step times of a step-by-step run (:mod:`kinedyn.dynamics.stepper`): against
    simulated time, on a log scale, and their distribution, with the real-time budget (the
    step, ``budget_us``) drawn across both."""
    plt = _pyplot()
    step_us = np.asarray(step_us, float)
    fig, (ax, hist) = plt.subplots(1, 2, figsize=(11, 3.8), width_ratios=(3, 1), sharey=True)
    ax.semilogy(times, step_us, ".", ms=2, alpha=0.6, label="one step() call")
    for axis in (ax, hist):
        axis.axhline(budget_us, color="C3", lw=1.2, label=f"budget: dt = {budget_us:g} us")
        axis.axhline(float(np.median(step_us)), color="C2", lw=1, ls="--", label="median")
        axis.grid(True, which="both", alpha=0.3)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("wall time per step (us)")
    ax.legend(fontsize=8, loc="upper right")
    low, high = max(step_us.min(), 1e-3), max(step_us.max(), budget_us)
    hist.hist(step_us, bins=np.geomspace(low, high * 1.01, 60), orientation="horizontal",
              color="C0")
    hist.set_xlabel("calls")
    fig.suptitle(title)
    return _save(plt, fig, path)
