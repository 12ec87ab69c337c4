"""``kinedyn bench symbolic`` times the rows of a model side by side (round by round)."""
from types import SimpleNamespace

import pytest

from kinedyn.bench.symbolic import _configured, _interleaved_ms_per_s


def test_rows_are_timed_in_alternating_rounds_and_normalised_by_their_own_run():
    log, walls = [], {"a": iter([9.0, 0.2, 0.4, 0.3]), "b": iter([9.0, 0.1, 0.9, 0.5])}

    def call(name):
        def run():
            log.append(name)
            return SimpleNamespace(summary={"wall_time_s": next(walls[name])})
        return run

    ms = _interleaved_ms_per_s([(call("a"), 2.0), (call("b"), 0.5)], repeat=3)
    # warm-ups first, then rounds a b / b a / a b: a drift in host speed hits every row alike
    assert log == ["a", "b", "a", "b", "b", "a", "a", "b"]
    # medians of the timed runs only (the warm-up's 9 s is left out), in ms per simulated s
    assert ms == pytest.approx([0.3e3 / 2.0, 0.5e3 / 0.5])


def test_configured_rows_share_one_object_without_leaking_settings():
    obj = SimpleNamespace(tol=None)
    first = _configured(obj, lambda: obj.tol, tol=1e-3)
    second = _configured(obj, lambda: obj.tol, tol=1e-6)
    assert [first(), second(), first()] == [1e-3, 1e-6, 1e-3]
