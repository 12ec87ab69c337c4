"""Progress of long runs: a Rich progress bar, or the caller's own ``progress(done, total)``."""
from __future__ import annotations

from contextlib import contextmanager

from .errors import ModelError


@contextmanager
def progress_bar(description: str, enabled: bool = True):
    """A Rich progress bar (cleared when done); yields ``update(done, total)`` (a no-op when
    disabled)."""
    if not enabled:
        yield lambda done, total: None
        return
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done, total):
            bar.update(task, completed=done, total=total)
        yield update


@contextmanager
def reporting(progress, description: str):
    """The ``progress`` argument of a run as what the run calls: None or False, no reports
    (None); True, a progress bar; a callable ``progress(done, total)``, itself. Anything else
    is a :class:`ModelError` before the run (it was a TypeError at the first report)."""
    if progress is None or progress is False:
        yield None
    elif progress is True:
        with progress_bar(description) as update:
            yield update
    elif callable(progress):
        yield progress
    else:
        raise ModelError("progress is True (a progress bar), False/None or a callable "
                         f"progress(done, total), got {progress!r}")
