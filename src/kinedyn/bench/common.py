"""Shared benchmark harness: machine description, repeated timing with medians, reports.

Every benchmark module ``kinedyn.bench.<name>`` exposes ``run(quick: bool, out_dir: Path) ->
Report``; ``kinedyn bench <name>`` calls it and writes ``<name>.json`` and ``<name>.md``.
The machine is shared and noisy: time each case several times and report medians, measure
compared cases side by side in the same run (:func:`interleaved`: round by round), and print
ratios.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .host import HostClock

#: Where :meth:`Report.add_row` announces each finished row (``kinedyn bench`` sets stderr: a
#: full benchmark runs for most of an hour, and its tables are printed only at the end).
progress: TextIO | None = None


def machine() -> dict:
    """What the numbers were measured on."""
    import numba
    import numpy
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": numpy.__version__, "numba": numba.__version__,
            "numba_threading_layer": _threading_layer(), "system": platform.platform()}


def _threading_layer() -> str:
    import numba
    try:
        return numba.threading_layer()
    except ValueError:
        return "not initialised"


def interleaved(calls: list[Callable[[], object]], repeat: int) -> list[list]:
    """Each call's results over ``repeat`` rounds, after one warm-up each: every round runs
    every call once, in reversed order every other round.

    Compared cases are timed this way rather than one after the other, so their ratio compares
    runs made seconds apart: this host's speed drifts by up to 3x over minutes
    (:mod:`.host`), and back-to-back repeats once gave the same Gough-Stewart separate-Newton
    row 1.37x the triangular run in one ``bench symbolic`` and 0.77x in the next."""
    for call in calls:
        call()
    results = [[] for _ in calls]
    order = list(range(len(calls)))
    for r in range(repeat):
        for i in order if r % 2 == 0 else order[::-1]:
            results[i].append(calls[i]())
    return results


def paired_ratio(base: list[float], other: list[float]) -> float:
    """Median over rounds of ``base[r] / other[r]``: the ratio of two cases timed in the same
    rounds (:func:`interleaved`), each round's pair measured seconds apart. A round in which
    the host was slow for one case only moves one of the ratios; a ratio of the two medians
    can compare one case's fast moment with the other's slow one."""
    if len(base) != len(other) or not base:
        raise ValueError(f"paired rounds needed, got {len(base)} and {len(other)}")
    return float(statistics.median(b / o for b, o in zip(base, other)))


def configured(obj, call: Callable[[], object], **settings) -> Callable[[], object]:
    """``call`` with ``obj``'s attributes set to ``settings`` first (cases sharing one object)."""
    def run():
        for key, value in settings.items():
            setattr(obj, key, value)
        return call()
    return run


def time_call(fn: Callable[[], object], repeat: int = 5, min_time: float = 0.05) -> dict:
    """Median wall time of ``fn()`` over ``repeat`` samples (each sample loops until
    ``min_time`` has passed, so short calls are timed in batches). Seconds per call."""
    fn()  # warm-up (compilation, caches)
    samples = []
    for _ in range(repeat):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        samples.append(elapsed / n)
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples),
            "repeat": repeat}


def per_call_us(fn: Callable[[], object], calls: int, repeat: int,
                min_time: float = 0.02) -> float:
    """Median µs of one call, for ``fn`` making ``calls`` calls in a loop (:func:`time_call`:
    samples of at least ``min_time`` s, so that the loop and not the timer is measured)."""
    return time_call(fn, repeat=repeat, min_time=min_time)["median"] / calls * 1e6


@dataclass
class Report:
    """A benchmark's results: tables of rows (dicts) plus free-form notes."""
    name: str
    settings: dict = field(default_factory=dict)
    tables: dict[str, list[dict]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    machine: dict = field(default_factory=machine)
    host: HostClock = field(default_factory=HostClock)   # load, steal, reference kernel
    started: float = field(default_factory=time.perf_counter)

    def add_row(self, table: str, **row) -> None:
        self.tables.setdefault(table, []).append(row)
        if progress is not None:
            minutes, seconds = divmod(int(time.perf_counter() - self.started), 60)
            first = ", ".join(f"{k} {_fmt(v)}" for k, v in list(row.items())[:4])
            print(f"[{self.name} {minutes}:{seconds:02d}] {table}: {first}", file=progress,
                  flush=True)

    def to_markdown(self) -> str:
        out = [f"# Benchmark: {self.name}", ""]
        out += [f"- machine: {self.machine['cpu']}, {self.machine['cores']} cores, "
                f"Python {self.machine['python']}, NumPy {self.machine['numpy']}, "
                f"Numba {self.machine['numba']} ({self.machine['numba_threading_layer']})"]
        out += [f"- {k}: {v}" for k, v in {**self.host.summary(), **self.settings}.items()]
        for title, rows in self.tables.items():
            if not rows:
                continue
            cols = list(dict.fromkeys(k for r in rows for k in r))
            out += ["", f"## {title}", "", "| " + " | ".join(cols) + " |",
                    "|" + "---|" * len(cols)]
            for r in rows:
                out.append("| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |")
        if self.notes:
            out += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(out) + "\n"

    def write(self, out_dir: Path) -> tuple[Path, Path]:
        self.host.finish()
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        js = out_dir / f"{self.name}.json"
        md = out_dir / f"{self.name}.md"
        js.write_text(json.dumps({"name": self.name, "machine": self.machine,
                                  "host": {"start": self.host.start, "end": self.host.end},
                                  "settings": self.settings, "tables": self.tables,
                                  "notes": self.notes}, indent=2, default=float))
        md.write_text(self.to_markdown())
        return js, md


def _fmt(v) -> str:
    if isinstance(v, float):
        if v == 0 or 1e-3 <= abs(v) < 1e5:
            return f"{v:.4g}"
        return f"{v:.3e}"
    return str(v)
