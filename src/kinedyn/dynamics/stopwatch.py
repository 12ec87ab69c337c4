"""The time a dynamic run spends in its integration calls, summed over the calls."""
from __future__ import annotations

import time
from contextlib import contextmanager


class Stopwatch:
    """Wall seconds and the calling thread's CPU seconds spent inside :meth:`timing` blocks:
    the compiled calls of a fixed-step or HHT run, or the segments of the adaptive reference,
    not the re-analyses, records and progress reports between them."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    @contextmanager
    def timing(self):
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.wall += time.perf_counter() - wall
            self.cpu += time.thread_time() - cpu
