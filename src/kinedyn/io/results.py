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
        self._added: dict[str, np.ndarray] = {}   # channels computed later (add_channels)
        self.summary = dict(summary or {})

    def _compute_channels(self, names=None) -> dict:
        """Every channel, or at least the channels ``names`` that exist (subclasses that
        compute channels lazily)."""
        return {}

    @property
    def channels(self) -> dict[str, np.ndarray]:
        if self._channels is None:
            self._channels = {**self._compute_channels(), **self._added}
        return self._channels

    def add_channels(self, values: dict[str, np.ndarray]) -> None:
        """Add channels computed after the run (joint reactions, efforts), without computing
        the lazy ones first."""
        self._added.update(values)
        if self._channels is not None:
            self._channels.update(values)

    def named(self, names) -> dict[str, np.ndarray]:
        """The channels ``names`` that exist. Until every channel is computed, only these are
        (a design study's metrics read one or two channels of a run, and all of them can cost
        more than the run: the four-bar's 1000 steps take 2.8 ms, its channels 6 ms)."""
        names = list(names)
        part = {**self._compute_channels(names), **self._added} if self._channels is None \
            else self._channels
        return {n: part[n] for n in names if n in part}

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


def load_results(path) -> Results:
    """Results written by :meth:`Results.save`, read back: ``path`` is their folder (its
    ``results.npz``, else its ``results.csv``) or one of those files; ``summary.json`` beside
    them becomes the summary when it is there. Every problem is a ModelError naming the file:
    a missing file, an NPZ or CSV without a ``time`` column first, a CSV row of the wrong
    length or with a value that is not a number, channels of another length than time."""
    path = Path(path)
    if path.is_dir():
        found = [path / n for n in ("results.npz", "results.csv") if (path / n).is_file()]
        if not found:
            raise ModelError(f"{path}: no results.npz or results.csv in this folder (the files "
                             f"Results.save and the kinematics and simulate commands write)")
        path = found[0]
    elif not path.is_file():
        raise ModelError(f"{path}: no such results file or folder")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        channels = _read_npz(path)
    elif suffix == ".csv":
        channels = _read_csv(path)
    else:
        raise ModelError(f"{path}: results are read from .npz or .csv files, not "
                         f"{suffix or 'files without a suffix'}")
    time = channels.pop("time")
    if not len(time):
        raise ModelError(f"{path}: no samples (a header without values)")
    for name, values in channels.items():
        if values.shape != time.shape:
            raise ModelError(f"{path}: channel {name!r} has {len(values)} values, time has "
                             f"{len(time)}")
    summary_path = path.parent / "summary.json"
    summary = {}
    if summary_path.is_file():
        try:
            summary = json.loads(summary_path.read_text())
        except json.JSONDecodeError as err:
            raise ModelError(f"{summary_path}: not valid JSON ({err.msg}, line {err.lineno})") \
                from None
    return Results(time, channels, summary)


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            channels = {n: np.asarray(data[n], float) for n in data.files}
    except (OSError, ValueError) as err:
        raise ModelError(f"{path}: not a readable NPZ file ({err})") from None
    if "time" not in channels:
        raise ModelError(f"{path}: no 'time' array (results.npz files hold time and one array "
                         f"per channel)")
    return channels


def _read_csv(path: Path) -> dict[str, np.ndarray]:
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or not rows[0] or rows[0][0] != "time":
        raise ModelError(f"{path}: the first row must be the header, starting with 'time'")
    header, width = rows[0], len(rows[0])
    data = np.empty((len(rows) - 1, width))
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise ModelError(f"{path}: line {i} has {len(row)} values, the header {width}")
        try:
            data[i - 2] = [float(x) for x in row]
        except ValueError:
            bad = next(k for k, x in enumerate(row) if not _is_number(x))
            raise ModelError(f"{path}: line {i}, column {header[bad]!r}: {row[bad]!r} is not "
                             f"a number") from None
    return {name: data[:, k].copy() for k, name in enumerate(header)}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _json_default(x):
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)
