"""How fast the host ran while a benchmark was measured.

This machine is a virtual one on a shared host. The same compiled code has run up to three
times slower for hours at a time while the load average inside the machine stayed at 1 (other
virtual machines on the same cores and caches). The load average alone cannot tell such a phase
from a quiet one, so every report states three things at its start and end:

* the load average (processes competing *inside* the machine);
* the share of CPU time the hypervisor gave to other guests (``steal`` in ``/proc/stat``),
  over the run;
* the time of a fixed compiled reference kernel: the scalar floating-point work the generated
  kernels do (multiply-add chains, a square root, a sine and an ``atan2`` per iteration, all in
  registers). A run whose reference time rose from start to end was slowed by the host, and
  runs of different days compare through it.
"""
from __future__ import annotations

import math
import os
import statistics
import time

import numba as nb

#: Iterations of the reference kernel per sample (about 5 ms on this host: 46 ns each).
REFERENCE_ITERATIONS = 100_000


@nb.njit(cache=True)
def reference_kernel(n: int) -> float:
    """A dependent chain of ``n`` iterations: 6 multiplications, 5 additions, one division,
    sqrt, sin and atan2 each (the mix of a closed-form position solver)."""
    x, y, s = 0.3, 0.7, 0.0
    for _ in range(n):
        r = math.sqrt(x * x + y * y + 1e-3)
        a = math.atan2(y, x)
        x = 0.5 * (x + y / r) + 1e-3 * math.sin(a)
        y = 0.25 * r * y + 0.5 * x + 0.1
        s += a * r
    return s + x + y


def reference_ns(samples: int = 7) -> float:
    """Median ns per iteration of :func:`reference_kernel` over ``samples`` timed calls."""
    reference_kernel(10)                    # compile or load from the cache
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        reference_kernel(REFERENCE_ITERATIONS)
        times.append(time.perf_counter() - start)
    return statistics.median(times) / REFERENCE_ITERATIONS * 1e9


def _cpu_times() -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs since boot, or None where /proc/stat is missing."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    steal = fields[7] if len(fields) > 7 else 0
    return steal, sum(fields[:8])


def _load() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


class HostClock:
    """Host conditions at the start of a benchmark (made at construction) and, with
    :meth:`finish`, at its end: ``summary()`` gives the report lines."""

    def __init__(self):
        self.start = {"load": _load(), "reference_ns": reference_ns()}
        self._cpu0 = _cpu_times()
        self.end = None

    def finish(self) -> None:
        if self.end is None:
            self.end = {"load": _load(), "reference_ns": reference_ns()}
            cpu1 = _cpu_times()
            if self._cpu0 and cpu1 and cpu1[1] > self._cpu0[1]:
                self.end["steal_percent"] = 100.0 * (cpu1[0] - self._cpu0[0]) / (
                    cpu1[1] - self._cpu0[1])

    def summary(self) -> dict:
        """Report lines; before :meth:`finish` (a report shown while its benchmark runs) the
        start values alone, so showing it early does not freeze the end."""
        points = [self.start] + ([self.end] if self.end is not None else [])
        when = "at start" if self.end is None else "at start, end"
        out = {f"load average (1/5/15 min) {when}": ", ".join(e["load"] for e in points),
               f"reference kernel ns per iteration {when}":
                   ", ".join(f"{e['reference_ns']:.1f}" for e in points) + " " + _READING}
        if self.end is not None and "steal_percent" in self.end:
            out["CPU time stolen by the hypervisor during the run"] = \
                f"{self.end['steal_percent']:.1f} %"
        return out


_READING = "(kinedyn.bench.host; higher = a slower host)"
