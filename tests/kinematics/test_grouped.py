"""Group Equations solver: same positions, velocities, accelerations as the global formulation."""
import numpy as np
import pytest
from numba import types

from kinedyn import errors as kd_errors
from kinedyn.errors import ConvergenceError, UnknownNameError
from kinedyn.kinematics import Kinematics, grouped
from kinedyn.linalg import lu_codegen
from kinedyn.linalg.sparse import cost
from kinedyn.models import get

MODELS = ["four-bar-driven", "3-rrr-driven", "gough-stewart-driven", "stewart-paper"]


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


@pytest.fixture(scope="module", params=MODELS)
def model(request):
    return get(request.param).compile()


@pytest.mark.parametrize("solver", ["dense", "sparse"])
def test_groups_match_global(model, solver):
    # converged to 1e-12 so that the two solutions differ by round-off, not by the tolerance
    ref = Kinematics(model, solver="sparse", tol=1e-12).simulate(0.5, 0.01)
    kin = Kinematics(model, solver=solver, strategy="groups", tol=1e-12)
    res = kin.simulate(0.5, 0.01)
    assert len(kin.engine.groups) > 1
    for field in ("q", "qd", "qdd"):
        assert rel(getattr(res, field), getattr(ref, field)) <= 1e-10, field
    # residuals of the whole system at position, velocity and acceleration level
    assert res.residuals.max() <= 1e-9


def test_one_run_kernel_for_every_number_of_groups():
    """The run kernel gets the groups' parts as tables packed from Python (kinedyn._table),
    typed without their number: the four-bar's 2 groups and the 3-RRR's 4 run the same
    compiled kernel, whichever of them compiled it (or loaded it from the disk cache) first;
    and the dense solver is the sparse one's type (kinedyn.linalg.sparse.LU), so it runs that
    kernel too."""
    def converged():
        return [sig for sig in grouped.run_units.signatures if sig[4] is not types.none]

    counts = []
    for solver in ("sparse", "dense"):
        for name in ("four-bar-driven", "3-rrr-driven"):
            kin = Kinematics(get(name).compile(), strategy="groups", solver=solver)
            kin.simulate(0.05, 0.01)
        counts.append(len(converged()))
    assert counts[0] >= 1  # called from Python: compiled or loaded from the cache, it is listed
    solvers = [sig[2].types[0] for sig in converged()]  # the units' solver table
    assert len(set(solvers)) == 1  # one kernel for both solvers, not one per solver or model
    assert counts[1] == counts[0]  # the dense runs compiled nothing new
    assert not any(isinstance(t, types.UniTuple) for sig in converged() for t in sig)


def test_groups_one_time_and_fixed_iterations():
    m = get("stewart-paper").compile()
    a = Kinematics(m, strategy="global").solve(0.3)
    b = Kinematics(m, strategy="groups").solve(0.3)
    for field in ("q", "qd", "qdd"):
        assert rel(getattr(b, field), getattr(a, field)) <= 1e-10
    # the paper's real-time setting: one Newton iteration per step, tracking the trajectory
    g = Kinematics(m, strategy="groups", fixed_iterations=True, max_iter=1).simulate(0.2, 0.01)
    r = Kinematics(m, strategy="global", fixed_iterations=True, max_iter=1).simulate(0.2, 0.01)
    assert np.all(g.iterations == 1)
    assert rel(g.q, r.q) < 1e-6  # both one Newton step from the same prediction
    assert np.abs(g.q - r.q).max() > 0  # ... but not the same step: groups use updated h


def test_group_failure_names_group_and_constraint():
    kin = Kinematics(get("stewart-paper").compile(), strategy="groups", max_iter=1)
    guess = kin.q_assembled.copy()
    guess[kin.engine.groups[3].unknowns[0]] += 0.05
    with pytest.raises(ConvergenceError, match=r"structural group G3 \(") as e:
        kin.solve(0.0, q_guess=guess)  # G3 is one of the six legs, solved as one unit
    assert e.value.constraints and e.value.time == 0.0


def test_unknown_strategy():
    with pytest.raises(UnknownNameError, match="groups"):
        Kinematics(get("four-bar-driven").compile(), strategy="blocks")


@pytest.mark.parametrize("solver", ["dense", "sparse"])
def test_threads_give_the_serial_results(solver):
    """Independent groups on two threads (nogil workers, each with its copy of the terminal
    group, no barrier): every group does the same arithmetic as in the serial order, so the
    results are the same."""
    m = get("stewart-paper").compile()
    one = Kinematics(m, solver=solver, strategy="groups")
    serial = one.simulate(0.3, 0.01)
    kin = Kinematics(m, solver=solver, strategy="groups", threads=(2, 1))
    par = kin.simulate(0.3, 0.01)
    for field in ("q", "qd", "qdd"):
        np.testing.assert_array_equal(getattr(par, field), getattr(serial, field))
    np.testing.assert_array_equal(par.iterations, serial.iterations)
    assert kin.engine.runner is not None and par.summary["strategy"] == "groups"
    assert kin.engine.runner.replicate  # one terminal group first: no barriers
    cpu = par.summary["worker_cpu_us_per_step"]
    assert len(cpu) == 2 and min(cpu) > 0
    # the diagnostic run of the workers one after the other on the calling thread: the same
    # arithmetic, the same rows
    kin.engine.runner.one_by_one = True
    alone = kin.simulate(0.3, 0.01)
    kin.engine.runner.one_by_one = False
    for field in ("q", "qd", "qdd", "iterations"):
        np.testing.assert_array_equal(getattr(alone, field), getattr(serial, field))
    # in chunks of 2 steps (a progress bar; each chunk starts with full Newton-Raphson): each
    # worker's record of the last accelerations carries over from chunk to chunk
    chunks = [k.simulate(0.6, 0.01, progress=lambda done, total: None) for k in (one, kin)]
    for field in ("q", "qd", "qdd"):
        np.testing.assert_array_equal(getattr(chunks[1], field), getattr(chunks[0], field))
    # coarse steps (up to 11 iterations per step): each group still iterates on its own, in a
    # unit of six legs (serial) or of three (each thread)
    coarse = [k.simulate(1.0, 0.1) for k in (one, kin)]
    for field in ("q", "qd", "qdd", "iterations"):
        np.testing.assert_array_equal(getattr(coarse[1], field), getattr(coarse[0], field))
    kin.engine.close()


@pytest.mark.parametrize("solver", ["dense", "sparse"])
def test_a_unit_keeps_its_groups_own_iterations(solver):
    """Converged steps: a unit's groups each do their own chord and Newton-Raphson iterations,
    as if solved alone. The Stewart platform's terminal group (alone on the first level, so
    independent of the legs) solved by the global run kernel on its plan alone gives the
    same coordinates, bit for bit, at a fine and at a coarse step."""
    from kinedyn._table import TableCache
    from kinedyn.kinematics import kernels as K
    from kinedyn.parallel.team import private_copy
    m = get("stewart-paper").compile()
    for dt in (0.01, 0.1):
        kin = Kinematics(m, solver=solver, strategy="groups", tol=1e-10, max_iter=40)
        res = kin.simulate(1.0, dt)
        e = kin.engine
        (g,) = e.units.groups[0]
        cols = e.plans[g].cols
        n, q = len(res.time), kin.q_assembled.copy()
        outs = K.outputs(n, len(q))
        pw = K.PlanWork(np.zeros(len(cols)), np.zeros(len(cols)), np.zeros(kin.nnz),
                        np.zeros(1))
        parts = K.run_parts(TableCache(), kin.data, kin.work, e.solvers[g],
                            private_copy(e.sworks[g]), e.plans[g], pw)
        st, _ = K.run(parts, res.time, q, np.zeros_like(q), np.zeros_like(q), 0, n, kin.tol,
                      kin.max_iter, False, True, *outs)
        assert st == K.OK
        for got, alone in zip((res.q, res.qd, res.qdd), outs[:3]):
            np.testing.assert_array_equal(got[:, cols], alone[:, cols])
        assert res.iterations.max() > 4  # chord iterations, not one Newton step


@pytest.mark.parametrize("fixed", [False, True])
def test_threads_with_barriers_give_the_serial_results(monkeypatch, fixed):
    """Where copies of ancestors would lengthen the busiest worker's path, the workers share
    one state and meet at a barrier after every level: the same results, bit for bit."""
    from kinedyn.kinematics import threads
    monkeypatch.setattr(threads, "with_ancestors", lambda structure, own: (False, own))
    m = get("scissor-platform-6x1").compile()
    kw = dict(strategy="groups", fixed_iterations=fixed, max_iter=2 if fixed else 30)
    serial = Kinematics(m, **kw).simulate(0.2, 0.01)
    kin = Kinematics(m, threads=(2, 1), **kw)
    r = kin.engine.runner
    assert not r.replicate and r.solve == r.own
    par = kin.simulate(0.2, 0.01)
    for field in ("q", "qd", "qdd"):
        np.testing.assert_array_equal(getattr(par, field), getattr(serial, field))
    r.one_by_one = True  # worker 0 would wait at the first barrier for ever
    with pytest.raises(ValueError, match="barrier"):
        kin.simulate(0.2, 0.01)
    kin.engine.close()


def _structure(sizes, depends_on):
    """A group structure of groups of the given sizes and dependencies (levels from them)."""
    from kinedyn.topology.groups import GroupStructure, StructuralGroup
    level: list[int] = []
    groups, start = [], 0
    for size, deps in zip(sizes, depends_on):
        level.append(1 + max((level[p] for p in deps), default=-1))
        unknowns = tuple(range(start, start + size))
        groups.append(StructuralGroup(unknowns, unknowns, (), level[-1], tuple(deps)))
        start += size
    levels = tuple(tuple(g for g in range(len(sizes)) if level[g] == lv)
                   for lv in range(max(level) + 1))
    return GroupStructure(tuple(groups), levels, len(sizes))


def test_workers_copy_ancestors_only_where_no_worker_gets_longer():
    """Copies of the ancestors replace the barriers where the busiest worker's share with its
    copies (sum of size squared) is no longer than the sum of each level's busiest share."""
    from kinedyn.kinematics.threads import assign_groups, with_ancestors
    # the paper's Stewart platform: terminal (12), then six legs (15) that read it
    stewart = _structure([12] + [15] * 6, [()] + [(0,)] * 6)
    own = assign_groups(stewart, 2)
    assert [lists[1] for lists in own] == [[1, 2, 3], [4, 5, 6]]
    assert sorted(own[0][0] + own[1][0]) == [0]  # one worker owns the terminal
    assert with_ancestors(stewart, own) == (True, [[[0], [1, 2, 3]], [[0], [4, 5, 6]]])
    # two large groups first, each small one reads both: copies would double the large work
    wide = _structure([20, 20, 3, 3], [(), (), (0, 1), (0, 1)])
    own = assign_groups(wide, 2)
    assert with_ancestors(wide, own) == (False, own)
    # independent groups only: nothing to copy, and no barrier either
    flat = _structure([8, 8, 8], [(), (), ()])
    own = assign_groups(flat, 2)
    assert with_ancestors(flat, own) == (True, own)


def test_threads_take_consecutive_groups():
    """Each worker gets one run of neighbouring groups per level (not every other leg), the
    runs balanced: the Stewart platform's six legs split three and three, in coordinate order,
    and every group of a level goes to exactly one worker."""
    from kinedyn.kinematics.threads import _contiguous_split
    assert _contiguous_split([1, 1, 1, 1, 1, 1], 2) == [0, 3, 6]
    assert _contiguous_split([9, 1, 1, 1, 4], 2) == [0, 1, 5]
    assert _contiguous_split([5], 2) in ([0, 0, 1], [0, 1, 1])
    kin = Kinematics(get("stewart-paper").compile(), strategy="groups", threads=(2, 1))
    r, gs = kin.engine.runner, kin.engine.structure
    for lv, level in enumerate(gs.levels):
        mine = [r.own[w][lv] for w in range(2)]
        assert sorted(mine[0] + mine[1]) == sorted(level)
        if len(level) == 6:
            assert [len(m) for m in mine] == [3, 3]
            first = [sorted(min(gs.groups[g].unknowns) for g in m) for m in mine]
            assert first[0][-1] < first[1][0]  # worker 0's legs all before worker 1's
    kin.engine.close()


def test_no_output_cache_line_is_written_directly_by_two_workers():
    """Columns near another worker's go through the worker's staging rows (copied after the
    run): for any start of the output array in a cache line, no line of its rows holds columns
    two workers write directly, every column is recorded exactly once, and columns far from a
    boundary are written directly. Then the Stewart platform's threaded run records its rows
    in full (the serial results, column by column)."""
    from kinedyn.kinematics.threads import DIRECT, NOT_MINE, recording
    rng = np.random.default_rng(3)
    cases = [np.repeat([0, 1, 0], [12, 45, 45]), np.repeat([1, 0, 1, 2], [5, 3, 30, 9]),
             rng.integers(0, 3, 40), np.zeros(20, np.int64)]
    for owner in cases:
        n, n_workers = len(owner), owner.max() + 1
        record, staged = recording(owner, n_workers)
        assert ((record >= 0) | (record == DIRECT)).sum(axis=0).tolist() == [1] * n
        for w in range(n_workers):
            assert (record[w, owner != w] == NOT_MINE).all()
            assert record[w, staged[w]].tolist() == list(range(len(staged[w])))
        direct = np.where((record == DIRECT).any(axis=0), owner, -1)
        for offset in range(8):  # the array's first element at this slot of a line
            flat = np.concatenate([np.full(offset, -1), np.tile(direct, 3)])
            for line in flat[:len(flat) // 8 * 8].reshape(-1, 8):
                assert len(set(line[line >= 0].tolist())) <= 1, (owner, offset, line)
    assert recording(np.zeros(20, np.int64), 1)[1][0].size == 0  # one worker: all direct
    owner = np.repeat([0, 1, 0], [12, 45, 45])
    far = [c for c in range(len(owner)) if len(set(owner[c - 7:c + 1])) == 1 and c >= 7]
    assert (recording(owner, 2)[0][owner[far], far] == DIRECT).all()
    m = get("stewart-paper").compile()
    kw = dict(strategy="groups", fixed_iterations=True, max_iter=1)
    serial = Kinematics(m, **kw).simulate(0.2, 0.01)
    kin = Kinematics(m, threads=(2, 1), **kw)
    assert sum(map(len, kin.engine.runner.staged)) > 0
    par = kin.simulate(0.2, 0.01)
    for field in ("q", "qd", "qdd"):
        np.testing.assert_array_equal(getattr(par, field), getattr(serial, field))
    kin.engine.close()


def test_paper_step_by_level_gives_each_groups_arithmetic():
    """The paper's step, sparse: a serial run solves each DAG level's independent groups as one
    block-diagonal system, each thread its share of a level - the same arithmetic, so the same
    results bit for bit (scissor platform: legs of 30 coordinates)."""
    for name in ("stewart-paper", "scissor-platform-6x1"):
        m = get(name).compile()
        kw = dict(strategy="groups", fixed_iterations=True, max_iter=2)
        kin = Kinematics(m, **kw)
        assert len(kin.engine.units.plans) == 2  # the terminal group, the legs
        serial = kin.simulate(0.3, 0.01)
        threaded = Kinematics(m, threads=(2, 1), **kw)
        r = threaded.engine.runner  # what a worker solves on a level is one unit
        for w in range(2):
            for lv, level in enumerate(kin.engine.level_groups):
                a = w * r.n_levels + lv
                mine = tuple(r.solve[w][lv])
                units = [r.units.groups[u] for u in range(r.unit_ptr[a], r.unit_ptr[a + 1])]
                assert units == ([mine] if mine else []) and set(mine) <= set(level)
        par = threaded.simulate(0.3, 0.01)
        for field in ("q", "qd", "qdd"):
            np.testing.assert_array_equal(getattr(par, field), getattr(serial, field))
        threaded.engine.close()


def test_large_levels_call_each_groups_code(monkeypatch):
    """A level whose block-diagonal system is too large for code of its own calls each group's
    generated LU on its part of the arrays: the same results, bit for bit, as the level
    compiled as one, serial and threaded."""
    m = get("scissor-platform-6x1").compile()
    kw = dict(strategy="groups", fixed_iterations=True, max_iter=2)
    whole = Kinematics(m, **kw)
    legs = whole.engine.units.solvers[1]
    assert len(legs.code) == lu_codegen.CODE_WIDTH  # one code for the six legs together
    expected = whole.simulate(0.3, 0.01)
    monkeypatch.setattr(lu_codegen, "LIMIT", max(cost(s) for s in whole.engine.solvers))
    for threads in ((1, 1), (2, 1)):
        kin = Kinematics(m, threads=threads, **kw)
        units = kin.engine.units if threads[0] == 1 else kin.engine.runner.units
        several = [(s, g) for s, g in zip(units.solvers, units.groups) if len(g) > 1]
        assert several and all(len(s.code) == lu_codegen.CODE_WIDTH * len(g) for s, g in several)
        got = kin.simulate(0.3, 0.01)
        for field in ("q", "qd", "qdd"):
            np.testing.assert_array_equal(getattr(got, field), getattr(expected, field))
        kin.engine.close()


def test_threaded_failure_names_group():
    """A trajectory leaving the workspace: the worker that fails stops every worker (at the
    failing step, without barriers) and the error names its group."""
    m = get("stewart-paper").compile()
    kin = Kinematics(m, strategy="groups", threads=2, max_iter=3)
    with pytest.raises(kd_errors.SolverError, match=r"structural group G\d") as e:
        kin.simulate(0.5, 0.25)  # far too coarse a step for 3 iterations
    assert e.value.time is not None and e.value.constraints


def test_a_failed_unit_names_its_worst_group():
    """A unit of several groups (a level, a worker's share) fails as a whole: the error names
    its group with the largest residual."""
    kin = Kinematics(get("stewart-paper").compile(), strategy="groups")
    e = kin.engine
    legs = e.level_groups[1]
    q = kin.q_assembled.copy()
    q[e.groups[legs[4]].unknowns[0]] += 0.1
    assert e.worst_group(legs, q, 0.0) == legs[4]
    assert e.worst_group(legs[:2], q, 0.0) in legs[:2]
    assert e.worst_group((legs[3],), q, 0.0) == legs[3]


def test_outer_threads_need_groups():
    with pytest.raises(kd_errors.ModelError, match="strategy='groups'"):
        Kinematics(get("four-bar-driven").compile(), threads=(2, 1))


def test_threads_beyond_the_widest_level_are_warned_about():
    """The four-bar's groups are one per level: a second outer thread can only wait (30 us a
    step against 4.8 on one thread here); the Stewart platform's six legs keep two busy."""
    import warnings
    with pytest.warns(UserWarning, match=r"2 outer threads, but no level of the structural "
                                         r"groups of 'four-bar-driven' has more than 1 "
                                         r"group\(s\): 1 thread\(s\) can only wait"):
        Kinematics(get("four-bar-driven").compile(), strategy="groups", threads=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Kinematics(get("stewart-paper").compile(), strategy="groups", threads=2)
