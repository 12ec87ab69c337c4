"""The shared thread team: every worker runs, barriers order phases, aborts reach everyone,
published progress makes the producer's writes visible."""
import threading
import time

import numba as nb
import numpy as np
import pytest

from kinedyn.parallel.team import (ABORT, NEVER, PROGRESS, Team, atomic_store, barrier,
                                   first_failure, make_sync, private_copy, private_zeros,
                                   publish_failure, wait_until)


@nb.njit(nogil=True)
def _phases(sync, w, n, slots, rounds, seen):
    """Round r: write r into my slot, barrier, check every slot holds r, barrier."""
    bad = 0
    for r in range(1, rounds + 1):
        slots[w] = r
        barrier(sync, n, w)
        for i in range(n):
            if slots[i] != r:
                bad += 1
        barrier(sync, n, w)
    seen[w] = bad


@nb.njit(nogil=True)
def _abort(sync, w, n, result):
    if w == 1:
        atomic_store(sync, ABORT, 1)
    result[w] = 1 if barrier(sync, n, w) else 0


@nb.njit(nogil=True)
def _abort_in_next_phase(sync, w, n, at, passed):
    """Worker 0 asks to abort right after leaving barrier ``at``, while the others may still be
    inside it: every worker must pass barrier ``at`` and stop at the next one."""
    for r in range(at + 2):
        if not barrier(sync, n, w):
            passed[w] = r
            return
        if w == 0 and r == at:
            atomic_store(sync, ABORT, 1)
    passed[w] = -1


@nb.njit(nogil=True)
def _produce_consume(sync, w, data, bad):
    n = data.shape[0]
    if w == 0:
        for i in range(n):
            data[i] = 3 * i + 1
            atomic_store(sync, PROGRESS, i + 1)
    else:
        for i in range(n):
            wait_until(sync, PROGRESS, i + 1)
            if data[i] != 3 * i + 1:
                bad[0] += 1


@pytest.mark.parametrize("n", [2, 3])
def test_barrier_orders_phases(n):
    sync, slots, seen = make_sync(), np.zeros(n, np.int64), np.full(n, -1, np.int64)
    with Team(n) as team:
        team.run(lambda w: _phases(sync, w, n, slots, 2000, seen))
    assert list(seen) == [0] * n and list(slots) == [2000] * n


def test_abort_reaches_every_worker():
    sync, result = make_sync(), np.full(3, -1, np.int64)
    with Team(3) as team:
        team.run(lambda w: _abort(sync, w, 3, result))
    assert list(result) == [0, 0, 0]


@pytest.mark.parametrize("n", [2, 3])
def test_abort_in_the_next_phase_does_not_split_the_decision(n):
    for at in (0, 1, 5, 50):
        sync, passed = make_sync(n), np.full(n, -2, np.int64)
        with Team(n) as team:
            team.run(lambda w: _abort_in_next_phase(sync, w, n, at, passed))
        assert list(passed) == [at + 1] * n


@nb.njit(nogil=True)
def _run_until_failure(sync, w, n, fail_at, steps, done):
    """Workers without barriers: worker w fails at step fail_at[w] (-1: never); every worker
    stops before the earliest published failing step."""
    for k in range(steps):
        if first_failure(sync, n) <= k:
            return
        if k == fail_at[w]:
            publish_failure(sync, w, k)
            return
        done[w] = k


@pytest.mark.parametrize("n", [2, 3])
def test_workers_without_barriers_stop_at_the_earliest_failure(n):
    """Each worker finishes every step before the earliest failure (so the recorded rows
    before it are complete; a worker ahead of it may have done more); of several failures
    the earliest counts."""
    for fail_at in ([-1] * (n - 1) + [300], [500] + [-1] * (n - 2) + [40], [-1] * n):
        sync, done = make_sync(n), np.full(n, -2, np.int64)
        first = min([k for k in fail_at if k >= 0], default=None)
        with Team(n) as team:
            team.run(lambda w: _run_until_failure(sync, w, n, np.array(fail_at), 100_000, done))
        if first is None:
            assert list(done) == [99_999] * n and first_failure(sync, n) == NEVER
        else:
            assert first_failure(sync, n) == first
            for w in range(n):
                assert done[w] == first - 1 if fail_at[w] == first else done[w] >= first - 1


def test_sync_array_lines():
    sync = make_sync(3)
    assert sync.ctypes.data % 64 == 0 and not sync.any()
    with pytest.raises(ValueError):
        make_sync(0)


def test_private_memory_has_cache_lines_of_its_own():
    a, b = private_zeros(5), private_zeros((3, 3), np.float32)
    assert a.shape == (5,) and b.shape == (3, 3) and b.dtype == np.float32
    for x in (a, b):
        assert x.ctypes.data % 64 == 0 and x.flags.c_contiguous and not x.any()
        assert x.base.nbytes - (x.ctypes.data - x.base.ctypes.data) >= 64  # last line padded
    lines = lambda x: set(range(x.ctypes.data // 64, (x.ctypes.data + x.nbytes - 1) // 64 + 1))
    assert not lines(a) & lines(b)
    from typing import NamedTuple

    class W(NamedTuple):
        x: np.ndarray
        n: int
        inner: tuple
    w = W(np.arange(3.0), 4, (np.ones(2, np.int64),))
    c = private_copy(w)
    assert type(c) is W and c.n == 4 and c.x.ctypes.data % 64 == 0
    assert np.array_equal(c.x, w.x) and c.x is not w.x
    assert np.array_equal(c.inner[0], w.inner[0]) and c.inner[0].dtype == np.int64


def test_published_progress_makes_writes_visible():
    sync, data, bad = make_sync(), np.zeros(200_000, np.int64), np.zeros(1, np.int64)
    with Team(2) as team:
        team.run(lambda w: _produce_consume(sync, w, data, bad))
    assert bad[0] == 0 and sync[PROGRESS] == len(data)


def test_team_runs_each_worker_on_its_own_thread_and_reraises():
    names = {}
    team = Team(3)
    team.run(lambda w: names.__setitem__(w, threading.get_ident()))
    assert sorted(names) == [0, 1, 2] and len(set(names.values())) == 3
    assert names[0] == threading.get_ident()  # worker 0 is the caller

    def fail(w):
        if w == 2:
            raise RuntimeError("worker 2 failed")
    with pytest.raises(RuntimeError, match="worker 2"):
        team.run(fail)
    team.close()
    with pytest.raises(RuntimeError, match="closed"):
        team.run(lambda w: None)
    with pytest.raises(ValueError):
        Team(0)


def _burn(seconds):
    """Spend ``seconds`` of this thread's CPU time."""
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


def test_run_returns_each_workers_cpu_time_and_runs_one_by_one_on_request():
    with Team(3) as team:
        cpu = team.run(lambda w: _burn(0.03) if w == 2 else None)
        assert cpu.shape == (3,) and cpu[2] >= 0.03 and cpu[0] < 0.03
        calls = []
        cpu = team.run(lambda w: (calls.append((w, threading.get_ident())),
                                  _burn(0.02 * w)), one_by_one=True)
        # in worker order, each alone on the calling thread, each timed on its own
        assert [w for w, _ in calls] == [0, 1, 2]
        assert {ident for _, ident in calls} == {threading.get_ident()}
        assert 0.02 <= cpu[1] < 0.04 <= cpu[2]


def test_dropped_team_lets_its_threads_finish():
    def alive():  # only this team's threads: other tests' closed teams may still be finishing
        return [t for t in threading.enumerate() if t.name.startswith("kinedyn-dropped")]
    team = Team(3, "kinedyn-dropped")
    team.run(lambda w: None)
    assert len(alive()) == 2
    del team  # no close(): the finalizer stops the threads
    for t in alive():
        t.join(timeout=10)
    assert alive() == []
