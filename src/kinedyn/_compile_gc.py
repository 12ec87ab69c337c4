"""Python's cyclic garbage collector paused while Numba compiles.

Numba's compiler builds and drops millions of small Python objects (IR nodes, types, llvmlite
instructions), many of them in reference cycles, so the collector runs often while it works; and
each full collection walks every object alive in the process, Numba's own caches included. On a
cold cache that was 15 % of a test's time (the Freudenstein kinematic test: 13.1 s of 88.5 s in
the collector, 12.0 s of it in 54 full collections). With the collector paused from the start to
the end of each outermost compilation (the ``numba:compile`` events of Numba's event API, which
fire under its global compiler lock, also when a compilation fails) that test took 77 s; what a
compilation leaves in cycles is collected after it, as usual. The price is memory: the garbage
of one compilation waits for its end (peak 0.66 -> 0.86 GB on that test, 0.88 -> 1.36 GB on a
whole RK4 run kernel). Measured and not taken: keeping the young collections and holding back
only the full ones (81 s, peak 0.92 GB). docs/architecture.md, "What the test suite's time is
made of".
"""
from __future__ import annotations

import gc

from numba.core import event


class _PauseCollector(event.Listener):
    """Disables the collector when the outermost compilation starts and enables it again when
    that one ends, unless it was disabled before (by the user: then it stays so)."""

    def __init__(self):
        self.depth = 0  # nested compilations (a kernel's callees are compiled inside it)
        self.resume = False
        self.installed = False

    def on_start(self, ev):
        if self.depth == 0:
            self.resume = gc.isenabled()
            gc.disable()
        self.depth += 1

    def on_end(self, ev):
        self.depth -= 1
        if self.depth == 0 and self.resume:
            gc.enable()


LISTENER = _PauseCollector()


def install() -> None:
    """Register :data:`LISTENER` (once: importing kinedyn again does not add a second)."""
    if not LISTENER.installed:
        event.register("numba:compile", LISTENER)
        LISTENER.installed = True
