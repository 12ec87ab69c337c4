"""Benchmarks time compared cases side by side, round by round (kinedyn.bench.common)."""
from types import SimpleNamespace

import pytest

from kinedyn.bench.common import configured, interleaved
from kinedyn.bench.symbolic import _interleaved_ms_per_s


def _recording(log, name, values):
    values = iter(values)

    def run():
        log.append(name)
        return next(values)
    return run


def test_cases_run_in_alternating_rounds_after_one_warm_up_each():
    log = []
    out = interleaved([_recording(log, "a", "wxyz"), _recording(log, "b", "WXYZ")], repeat=3)
    # warm-ups first, then rounds a b / b a / a b: a drift in host speed hits every case alike
    assert log == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert out == [list("xyz"), list("XYZ")]       # the warm-ups' results are left out


def test_symbolic_rows_are_medians_normalised_by_their_own_run_length():
    def run(walls):
        return lambda it=iter(walls): SimpleNamespace(summary={"wall_time_s": next(it)})

    timed = _interleaved_ms_per_s([(run([9.0, 0.2, 0.4, 0.3]), 2.0),
                                   (run([9.0, 0.1, 0.9, 0.5]), 0.5)], repeat=3)
    ms = [m for m, _ in timed]
    assert ms == pytest.approx([0.3e3 / 2.0, 0.5e3 / 0.5])   # ms per simulated second
    assert [res.summary["wall_time_s"] for _, res in timed] == [0.3, 0.5]   # the last run's


def test_configured_cases_share_one_object_without_leaking_settings():
    obj = SimpleNamespace(tol=None)
    first = configured(obj, lambda: obj.tol, tol=1e-3)
    second = configured(obj, lambda: obj.tol, tol=1e-6)
    assert [first(), second(), first()] == [1e-3, 1e-6, 1e-3]
