"""Pictures of a design study (:class:`kinedyn.sweep.SweepResults`): each metric against each
varied value, and, for sampled studies, each metric's histogram."""
from __future__ import annotations

import numpy as np

from .plots import _pyplot, _save


def plot_sweep(results, path, title: str | None = None, metrics=None):
    """A row per metric (``metrics``: their names, default all), a column per varied parameter
    or input (plus a histogram column when the cases were sampled). A one-name grid is drawn
    as a line; a two-name grid as a line per value of the other name (up to 8); samples as
    points. Failed cases are marked with a red x under the axis. Returns the PNG path."""
    plt = _pyplot()
    names = results.names
    metrics = results.metric_names if metrics is None else list(metrics)
    sampled = "samples" in results.summary["design"]
    cols = len(names) + sampled
    fig, axes = plt.subplots(len(metrics), cols, figsize=(3.6 * cols + 0.6, 2.6 * len(metrics)
                                                          + 0.6), squeeze=False)
    ok = results.ok
    for r, metric in enumerate(metrics):
        y = results.metric(metric)
        for c, name in enumerate(names):
            ax = axes[r, c]
            _against(ax, results, c, y, ok, sampled)
            if (~ok).any():
                ax.plot(results.values[~ok, c], np.full((~ok).sum(), np.nanmin(y[ok])
                        if ok.any() else 0.0), "x", color="tab:red", label="failed")
            ax.set_xlabel(name)
            ax.set_ylabel(metric if c == 0 else "")
            ax.grid(True, alpha=0.3)
        if sampled:
            ax = axes[r, -1]
            ax.hist(y[ok], bins=max(5, min(40, int(np.sqrt(ok.sum())))), color="tab:blue",
                    alpha=0.8)
            ax.set_xlabel(metric)
            ax.set_ylabel("cases")
    s = results.summary
    failed = s["cases"] - s["succeeded"]
    fig.suptitle(title or f"{s['model']}: {s['cases']} cases ({s['analysis']})"
                 + (f", {failed} failed" if failed else ""))
    return _save(plt, fig, path)


def _against(ax, results, c, y, ok, sampled) -> None:
    """Metric ``y`` against varied value ``c``: lines over a grid, points over samples."""
    x, others = results.values[:, c], [j for j in range(len(results.names)) if j != c]
    if sampled or len(others) > 1:
        ax.plot(x[ok], y[ok], ".", alpha=0.6, markersize=4)
        return
    if not others:
        ax.plot(x[ok], y[ok], "o-", markersize=3)
        return
    levels = np.unique(results.values[:, others[0]])
    if len(levels) > 8:
        ax.scatter(x[ok], y[ok], c=results.values[ok, others[0]], s=10)
        return
    for level in levels:
        on = ok & (results.values[:, others[0]] == level)
        ax.plot(x[on], y[on], "o-", markersize=3,
                label=f"{results.names[others[0]]} = {level:g}")
    ax.legend(fontsize=7, loc="best")
