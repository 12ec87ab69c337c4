"""strategy="auto": times every candidate on the model, uses the fastest, caches the choice."""
import os

import numpy as np
import pytest

from kinedyn.errors import ModelError
from kinedyn.kinematics import Kinematics, autotune
from kinedyn.models import get


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))  # kinedyn._cache.cache_root
    return tmp_path / "autotune"


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


def test_auto_measures_every_candidate_and_matches_global(cache):
    m = get("stewart-paper").compile()
    kin = Kinematics(m, strategy="auto", tol=1e-12)
    t = kin.tuning
    assert not t.cached and t.path.parent == cache and t.path.exists()
    # the table lists every candidate: both strategies and solvers, the thread combinations
    # (outer <= widest DAG level = 6 handle-stick groups, outer x inner <= CPUs)
    cores = os.cpu_count() or 1
    expected = autotune.candidates(6, cores)
    assert sorted(autotune._candidate(r) for r in t.rows) == sorted(expected)
    assert {(c.strategy, c.solver) for c in expected} == {
        ("global", "dense"), ("global", "sparse"), ("groups", "dense"), ("groups", "sparse")}
    assert all(r["us_per_step"] > 0 and r["rounds"] >= 1 and r["error"] is None for r in t.rows)
    # the choice is the fastest measured, and the analysis uses it
    assert t.rows[0]["us_per_step"] == min(r["us_per_step"] for r in t.rows)
    assert autotune._candidate(t.rows[0]) == t.choice
    assert (kin.strategy, kin.solver_name, kin.threads) == (t.choice.strategy, t.choice.solver,
                                                            t.choice.threads)
    text = str(t)
    assert t.choice.label in text and text.count("\n| ") == len(t.rows) + 1
    # same positions, velocities and accelerations as the global formulation
    ref = Kinematics(m, strategy="global", tol=1e-12).simulate(0.5, 0.01)
    res = kin.simulate(0.5, 0.01)
    for field in ("q", "qd", "qdd"):
        assert rel(getattr(res, field), getattr(ref, field)) <= 1e-10, field
    assert res.summary["auto_tuning"]["choice"] == t.choice.label
    kin.engine is not None and kin.engine.close()


def test_cache_is_hit_the_second_time_and_retune_measures_again(cache, monkeypatch):
    m = get("four-bar-driven").compile()
    first = Kinematics(m, strategy="auto").tuning
    assert [p.stem for p in cache.glob("*.json")] == [first.key]
    measured, built = [], []
    real, real_build = autotune._measure, autotune._build
    monkeypatch.setattr(autotune, "_measure", lambda *a: measured.append(1) or real(*a))
    monkeypatch.setattr(autotune, "_build", lambda *a: built.append(1) or real_build(*a))
    second = Kinematics(m, strategy="auto").tuning
    assert second.cached and not measured and not built  # a hit builds no other analysis
    assert second.choice == first.choice and second.rows == first.rows
    assert "cached in" in str(second)
    third = Kinematics(m, strategy="auto", retune=True).tuning
    assert not third.cached and measured == [1]
    # a different model (parameter changed), a restricted solver: other keys, measured anew
    other = get("four-bar-driven").compile(parameters={"crank_speed": 1.0})
    assert autotune.model_key(other, {}) != autotune.model_key(m, {})
    dense = Kinematics(m, strategy="auto", solver="dense").tuning
    assert not dense.cached and measured == [1, 1] and dense.key != first.key
    assert {r["solver"] for r in dense.rows} == {"dense"}


def test_key_depends_on_cpu_count_and_bad_cache_is_remeasured(cache, monkeypatch):
    m = get("four-bar-driven").compile()
    first = Kinematics(m, strategy="auto").tuning
    first.path.write_text("{not json")
    again = Kinematics(m, strategy="auto").tuning
    assert not again.cached and again.key == first.key
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    single = Kinematics(m, strategy="auto").tuning
    assert single.key != first.key and not single.cached
    assert all(r["outer"] == 1 and r["inner"] == 1 for r in single.rows)


def test_candidates_respect_limits():
    cs = autotune.candidates(6, 2)
    assert all(c.threads[0] * c.threads[1] <= 2 for c in cs)
    assert all(c.threads[0] == 1 for c in cs if c.strategy == "global")
    assert all(c.threads[1] == 1 for c in cs if c.solver == "sparse")
    assert autotune.candidates(1, 4, solver="sparse") == [
        autotune.Candidate("global", "sparse", (1, 1)), autotune.Candidate("groups", "sparse", (1, 1))]
    with pytest.raises(ModelError, match="threads"):
        autotune.candidates(1, 2, threads=(2, None))
