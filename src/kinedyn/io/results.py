"""A simulation's results: named channels over time, saved as CSV, NPZ and summary.json."""
from __future__ import annotations

import csv
import fnmatch
import json
from pathlib import Path

import numpy as np

from ..errors import ModelError, UnknownNameError


class Results:
    """Time histories of named channels plus a summary.

    ``channels`` maps a channel name (``body.crank.angle``, ``point.coupler.B.x_d``,
    ``residual.position`` ...) to an array over ``time``. Subclasses may compute channels
    lazily by overriding :meth:`_compute_channels`.
    """

    def __init__(self, time: np.ndarray, channels: dict | None = None,
                 summary: dict | None = None):
        self.time = np.asarray(time)
        self._channels = channels
        self.summary = dict(summary or {})

    def _compute_channels(self) -> dict:
        return {}

    @property
    def channels(self) -> dict[str, np.ndarray]:
        if self._channels is None:
            self._channels = self._compute_channels()
        return self._channels

    def names(self, pattern: str = "*") -> list[str]:
        return [n for n in self.channels if fnmatch.fnmatchcase(n, pattern)]

    def channel(self, name: str) -> np.ndarray:
        if not isinstance(name, str):
            raise TypeError(f"a channel name is a string, got {name!r}")
        try:
            return self.channels[name]
        except KeyError:
            close = [n for n in self.channels if name.split(".")[0] in n][:40]
            raise UnknownNameError("channel", name, close or list(self.channels)[:40]) from None

    def select(self, patterns) -> list[str]:
        """Channel names matching any of the glob ``patterns`` (errors for a pattern that
        matches nothing; one pattern may be given as a plain string)."""
        patterns = [patterns] if isinstance(patterns, str) else list(patterns)
        out = []
        for p in patterns:
            hits = self.names(p)
            if not hits:
                self.channel(p)  # raises with suggestions
            out += [h for h in hits if h not in out]
        return out

    def save(self, out_dir, formats=("csv", "npz")) -> list[Path]:
        """Write ``results.csv`` and/or ``results.npz`` (``formats``) and ``summary.json``."""
        formats = [formats] if isinstance(formats, str) else list(formats)
        unknown = [f for f in formats if f not in ("csv", "npz")]
        if unknown:
            raise ModelError(f"unknown result format(s) {', '.join(map(repr, unknown))}; "
                             "formats: 'csv', 'npz'")
        names = list(self.channels)
        if "time" in names:  # the first column of both files
            raise ModelError("a channel may not be named 'time': the results' time column has "
                             "that name (rename the channel)")
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        if "npz" in formats:
            path = out / "results.npz"
            np.savez_compressed(path, time=self.time, **{n: self.channels[n] for n in names})
            written.append(path)
        if "csv" in formats:
            path = out / "results.csv"
            with path.open("w", newline="") as fh:
                w = csv.writer(fh)
                w.writerow(["time"] + names)
                data = np.column_stack([self.time] + [self.channels[n] for n in names])
                for row in data:
                    w.writerow([repr(float(x)) for x in row])
            written.append(path)
        path = out / "summary.json"
        path.write_text(json.dumps(self.summary, indent=2, default=_json_default) + "\n")
        written.append(path)
        return written


def _json_default(x):
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)
