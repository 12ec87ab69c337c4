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
    assert [t.ms for t in timed] == pytest.approx([0.3e3 / 2.0, 0.5e3 / 0.5])  # ms per sim. s
    assert [t.res.summary["wall_time_s"] for t in timed] == [0.3, 0.5]   # the last run's
    # the second row over the first, round by round: 200/100, 1800/200, 1000/150 -> median
    assert timed[1].ratio_to(timed[0]) == pytest.approx(1000 / 150)
    assert timed[1].rounds == pytest.approx([200, 1800, 1000])


def test_configured_cases_share_one_object_without_leaking_settings():
    obj = SimpleNamespace(tol=None)
    first = configured(obj, lambda: obj.tol, tol=1e-3)
    second = configured(obj, lambda: obj.tol, tol=1e-6)
    assert [first(), second(), first()] == [1e-3, 1e-6, 1e-3]


def test_paired_ratio_compares_cases_within_each_round():
    from kinedyn.bench.common import paired_ratio
    # round 2: only the first case met a slow host; round 3: both did. Per round the ratio is
    # 2, 20, 2 -> 2; the ratio of the two medians (100 / 5) would say 20
    assert paired_ratio([10.0, 100.0, 100.0], [5.0, 5.0, 50.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="paired rounds"):
        paired_ratio([1.0, 2.0], [1.0])


def test_group_bench_runs_the_sparse_cases_next_to_each_other():
    from kinedyn.bench.groups import VARIANTS, _sparse_last, _threads
    cases = [(st, so, th, True) for st, so in VARIANTS for th in _threads(st, so, 2)]
    solvers = [so for _, so, _, _ in _sparse_last(cases)]
    first_sparse = solvers.index("sparse")
    assert set(solvers[first_sparse:]) == {"sparse"} and len(solvers) == len(cases)


def test_group_bench_reports_cases_in_the_callers_order(monkeypatch):
    """The rounds run the sparse cases last; the table keeps the order it was asked for."""
    from kinedyn.bench import groups as G
    ran = []

    def kinematics(model, strategy, solver, outer, fixed):
        def simulate(t_end, dt):
            ran.append(solver)
            return SimpleNamespace(summary={"us_per_step": 2.0 if solver == "dense" else 1.0,
                                            "cpu_us_per_step": 1.0,
                                            "process_cpu_us_per_step": 1.0})
        return SimpleNamespace(simulate=simulate, threads=None)

    monkeypatch.setattr(G, "_kinematics", kinematics)
    cases = [("global", "sparse", (1, 1), True), ("groups", "dense", (1, 1), True),
             ("groups", "sparse", (2, 1), True)]
    timed = G._timed(None, cases, steps=1, repeat=2)
    assert list(timed) == cases
    # warm-ups, then round 1 and round 2 (reversed): the two sparse cases always adjacent
    assert ran == ["dense", "sparse", "sparse"] * 2 + ["sparse", "sparse", "dense"]
    assert [t.us for t in timed.values()] == [1.0, 2.0, 1.0]
    assert timed[cases[1]].rounds == [2.0, 2.0]
