"""Group Equations: kinematics solved structural group by structural group (paper, s. 2, eqs 1-3).

For each structural group in the order of its dependency DAG (:mod:`.groups`) the coordinates
of earlier groups are known (h) and the group's own are dependent (phi):

* position, eq. (1): Newton-Raphson ``Phi_phi dphi = -Phi(q_G)`` on the group's rows only;
* velocity, eq. (2): ``Phi_phi phid = -Phi_t - Phi_h hd``;
* acceleration, eq. (3): ``Phi_phi phidd = gamma - Phi_h hdd``.

Each group is a :class:`~.kernels.Plan` (its rows, its columns, its coupling entries Phi_h)
with its own dense or sparse factorisation of Phi_phi (:mod:`kinedyn.linalg`). A run solves
*units* (:class:`Units`): with the sparse solver each DAG level's independent groups as one
block-diagonal system (a thread: its share of a level), with the dense solver each group alone;
every group keeps its own arithmetic and its own iterations (:func:`_converged_unit`). Groups
share the Jacobian values array, where each writes only its own rows, and the formulation
scratch of the thread that solves them (one per thread: its table of functions of time is then
evaluated once per step, not once per group). The per-unit and per-group objects are packed
into homogeneous tuples that compiled code indexes at run time; a whole run is one compiled
call.
"""
from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .._jit import INLINED
from .._table import TableCache
from .._unmanaged import unmanaged
from ..errors import SingularConfigurationError, SolverError
from ..formulations import protocol
from ..linalg.dense import dense_lu
from ..linalg.sparse import PivotOrders, block_diagonal, with_codes
from ..linalg.subsystem import extract
from ..parallel.team import private_copy
from . import kernels as K
from .diagnose import worst
from .groups import find_groups


class GroupEngine:
    """Per-group plans, scratch and linear solvers of a :class:`~.analysis.Kinematics`, and
    the :class:`Units` a serial run solves in turn (:meth:`unit_groups`)."""

    def __init__(self, kin, solver: str, outer: int = 1):
        f = kin.f
        self.kin = kin
        self.solver_name = solver
        self.outer = outer
        self.structure = gs = find_groups(f, kin.rows)
        self.groups = gs.groups
        ptr, ind = kin.data.jac_indptr, kin.data.jac_indices
        self.values = np.zeros(kin.nnz)  # shared: each group writes its own rows only
        self.plans = tuple(K.make_plan(f, g.equations, g.unknowns) for g in gs.groups)
        self.pws = tuple(K.PlanWork(np.zeros(g.size), np.zeros(g.size), self.values,
                                    np.zeros(1)) for g in gs.groups)
        self.blocks = tuple(extract(ptr, ind, g.equations, g.unknowns) for g in gs.groups)
        self.level_groups = [tuple(sorted(level)) for level in gs.levels]
        self._units = None               # the serial run's (:attr:`units`), made on first use
        self.tables = TableCache()       # the groups' parts packed for the run kernels
        self.solvers = self.sworks = None  # the groups' (:meth:`build`)
        # sparse: each group's orders analysed so far (code is added for the whole engine)
        # and each one's scratch in memory of its own (threads factorise groups side by side)
        self.pivot_orders = [PivotOrders(codegen=False, own=private_copy, fallback=True)
                             for _ in gs.groups]
        self.runner = None
        if outer > 1:
            from .threads import ThreadedRunner
            self.runner = ThreadedRunner(self, outer)

    @property
    def units(self) -> "Units":
        """The units a serial run solves in turn (:meth:`serial_units`)."""
        return self.serial_units()

    def serial_units(self) -> "Units":
        """The units a serial run solves in turn, made on first use and given the solvers of
        the last :meth:`build`. An engine with threads runs the units of its runner, and these
        only after :meth:`close`: their plans (generated code over a whole DAG level's rows)
        and block-diagonal solvers are not made before (scissor-platform-22x29 on two
        threads: 1.8 s of its 17.5 s set-up)."""
        if self._units is None:
            groups = self.unit_groups(self.level_groups)
            self._units = self.make_units(groups, groups, [self.values] * len(groups))
        if self._units.solvers is None and self.solvers is not None:
            self.unit_solvers(self._units, self.solvers, self.sworks)
        return self._units

    def unit_groups(self, levels) -> list[tuple]:
        """The units solved in turn for the groups of ``levels`` (lists of independent groups,
        in order): each level as one unit with the sparse solver (one block-diagonal system,
        :func:`~kinedyn.linalg.sparse.block_diagonal`), each group alone with the dense one
        (whose LAPACK factors have no block-diagonal combination). The groups of a unit keep
        their own arithmetic (:func:`_converged_unit`); what a unit adds is one pass over all
        its rows per evaluation, factorisation and solution instead of one per group: with the
        groups' pivot rows interleaved, their chains of dependent operations overlap, and the
        fixed cost of each call into generated code is paid once per unit (docs/group-equations.md,
        third round: Stewart platform paper step 7.1 -> 5.9 us on a loaded machine; converged
        steps: "2026-11-28: converged steps by units")."""
        if self.solver_name == "sparse":
            return [tuple(level) for level in levels if level]
        return [(g,) for level in levels for g in level]

    def make_units(self, unit_groups, members, values, zeros=np.zeros) -> "Units":
        """:class:`Units` for the tuples of groups ``unit_groups``; ``members[i]``: the indices of
        unit ``i``'s groups in the group tuples the run gets (the engine's, or a thread's
        instances); unit ``i`` works on the Jacobian values array ``values[i]``, its scratch
        from ``zeros`` (the threads: :func:`~kinedyn.parallel.team.private_zeros`). A unit of
        one group has that group's plan. The solvers are set by :meth:`unit_solvers`."""
        plans, pws, works = [], [], []
        for u, mine, vals in zip(unit_groups, members, values):
            rows = [r for g in u for r in self.groups[g].equations]
            cols = [c for g in u for c in self.groups[g].unknowns]
            plans.append(self.plans[u[0]] if len(u) == 1 else K.make_plan(self.kin.f, rows, cols))
            pws.append(K.PlanWork(zeros(len(rows)), zeros(len(rows)), vals, zeros(1)))
            bounds = np.cumsum([0] + [self.groups[g].size for g in u])
            works.append(UnitWork(bounds.astype(np.int64), np.array(mine, np.int64),
                                  zeros(len(u)), zeros(len(u), np.uint8),
                                  zeros(1, np.int64)))
        return Units(list(unit_groups), tuple(plans), tuple(pws), tuple(works))

    def unit_solvers(self, units: "Units", solvers, sworks) -> None:
        """Each unit's solver from its groups' (``solvers``/``sworks``: the tuples its members
        index): with the sparse solver their block-diagonal combination
        (:func:`kinedyn.linalg.sparse.block_diagonal`), scratch in cache lines of its own; a
        dense unit (one group) shares its group's."""
        if self.solver_name != "sparse":
            units.solvers = tuple(solvers[w.members[0]] for w in units.works)
            units.sworks = tuple(sworks[w.members[0]] for w in units.works)
            return
        parts = [block_diagonal((solvers[m], sworks[m]) for m in w.members) for w in units.works]
        units.solvers = tuple(s for s, _ in parts)
        # a unit of one group has that group's scratch, which is its own already (build)
        units.sworks = tuple(private_copy(sw) if len(w.members) > 1 else sw
                             for (_, sw), w in zip(parts, units.works))

    def close(self):
        """Stop the worker threads (if any)."""
        if self.runner is not None:
            self.runner.close()
            self.runner = None

    def name(self, g: int) -> str:
        bodies = ", ".join(self.groups[g].bodies[:4]) or "no bodies"
        more = len(self.groups[g].bodies) - 4
        return f"structural group G{g} ({bodies}{f' +{more}' if more > 0 else ''})"

    def build(self, q, t, reuse: bool = True):
        """(Re-)analyse every group's linear solver at configuration ``q``, taking pivot orders
        analysed before where they hold there if ``reuse`` (:class:`.sparse.PivotOrders`)."""
        kin = self.kin
        solvers, sworks = [], []
        values = np.zeros(kin.nnz)
        from .assembly import _eval_phi_q
        _eval_phi_q(kin.data, kin.work, np.asarray(q, float), float(t), kin.all_rows, values)
        for g, block in enumerate(self.blocks):
            if self.solver_name == "dense":
                s, w = dense_lu(block)
                w = private_copy(w)  # threads factorise groups side by side
            else:
                try:  # an earlier order that holds here, else a new analysis
                    s, w = self.pivot_orders[g].analyse(block, values, reuse)
                except RuntimeError:  # SuperLU: "Factor is exactly singular"
                    self.fail(K.SINGULAR, q, t, g)
            solvers.append(s)
            sworks.append(w)
        if self.solver_name == "sparse":  # generated code while the groups' code stays small
            solvers = with_codes(solvers, self.outer)
        self.solvers, self.sworks = tuple(solvers), tuple(sworks)
        if self._units is not None:      # the serial units take the new solvers
            self._units.solvers = self._units.sworks = None
        if self.runner is None:          # now, not inside the next (timed) run
            self.serial_units()

    def run(self, times, q, qd, qdd, start, stop, tol, max_iter, fixed, extrapolate, outs):
        """Steps ``start..stop-1``: ``(status, step, failed group)``."""
        if self.runner is not None:
            return self.runner.run(times, q, qd, qdd, start, stop, tol, max_iter, fixed,
                                   extrapolate, outs)
        u = self.units
        st, k, i = run_units(self.kin.data, self.kin.work, u.tables(), len(u.plans),
                             None if fixed else self.group_tables(), times, q, qd, qdd, start,
                             stop, tol, max_iter, extrapolate, *outs)
        return st, k, (self.failed_group(u, i, q, times[min(k, len(times) - 1)]) if i >= 0
                       else -1)

    def group_tables(self) -> tuple:
        """The groups' (solvers, solver works, plans, plan works) packed as tables
        (:mod:`kinedyn._table`): what a converged step takes for its groups' own
        Newton-Raphson."""
        return self.tables(self.solvers, self.sworks, self.plans, self.pws)

    def failed_group(self, units: "Units", i: int, q, t) -> int:
        """The group whose failure stopped unit ``i``: the member it names
        (:attr:`UnitWork.failed`), or - when the unit failed as a whole (its factorisation, the
        paper's step) - its group with the largest residual at q."""
        j = int(units.works[i].failed[0])
        return units.groups[i][j] if j >= 0 else self.worst_group(units.groups[i], q, t)

    def worst_group(self, groups, q, t) -> int:
        """The one of ``groups`` (a unit that failed as a whole) with the largest residual
        at q."""
        if len(groups) == 1:
            return groups[0]
        phi = np.abs(self.kin.phi(q, t))
        return max(groups, key=lambda g: phi[list(self.groups[g].equations)].max())

    def fail(self, st, q, t, g, before=None):
        """Raise the error of a failed group, naming the group and its worst constraints
        (``before``: the time of the step before, see :meth:`.analysis.Kinematics._raise`)."""
        kin, grp = self.kin, self.groups[g]
        names = kin.f.constraint_names
        rows = np.array(grp.equations, np.int64)
        phi = kin.phi(q, t)[rows]
        bad = [names[r] for r in rows[worst(phi)]]
        err = float(np.abs(phi).max()) if len(phi) else 0.0
        others: list[str] = []
        try:
            kin._raise(st, q, t, err, before)
        except SolverError as e:
            cls, detail, others = type(e), e.detail, e.constraints
        else:  # the whole system looks fine: the group's own block is singular
            cls, detail = SingularConfigurationError, "the group's Jacobian block is singular"
        raise cls(f"{self.name(g)}: {detail}", time=t,
                  constraints=bad + [c for c in others if c not in bad]) from None


class UnitWork(NamedTuple):
    """A unit's bookkeeping of its groups (:func:`_converged_unit`)."""
    bounds: np.ndarray   # (m + 1,) group j's local rows and columns: bounds[j] .. bounds[j+1]-1
    members: np.ndarray  # (m,) the groups' indices in the run's group tuples (their Newton)
    prev: np.ndarray     # (m,) each group's residual at its last chord iterate
    done: np.ndarray     # (m,) uint8: 1 once the group has converged in this step
    failed: np.ndarray   # (1,) the group j whose failure stopped the run; -1: the unit as a whole


class Units:
    """Independent structural groups solved together (:meth:`GroupEngine.unit_groups`), each
    tuple of ``groups`` as one system: its plan, plan work and :class:`UnitWork`, and - after
    :meth:`GroupEngine.unit_solvers` - its solver and solver work."""

    def __init__(self, groups, plans, pws, works):
        self.groups, self.plans, self.pws, self.works = groups, plans, pws, works
        self.solvers = self.sworks = None
        self._tables = TableCache()

    def tables(self) -> tuple:
        """What the run kernels take, each tuple packed as a table (again only when it has
        changed): (solvers, solver works, plans, plan works, unit works)."""
        return self._tables(self.solvers, self.sworks, self.plans, self.pws, self.works)


@nb.njit(**INLINED)
def _converged_unit(data, work, solver, swork, plan, pw, uw, groups, q, qd, t, tol, max_iter,
                    track):
    """Positions (eq. 1) and velocities (eq. 2) of a unit's groups, converged to ``tol``, each
    group with **its own iterations**, as if solved alone (:func:`.kernels.position_tracking`):
    chord iterations with the factorisation the unit holds from the previous step (``track``)
    while each cuts the group's residual by ``CHORD_RATE``; a group that converges stops
    moving; a group whose chord iteration stalls, and every group at a run's first step,
    continues with Newton-Raphson alone, on its own plan and solver
    (``groups[.][uw.members[j]]``). The unit's share is the passes over all its rows: Phi (and
    Phi_q) per chord iteration, the chord solution, and - once every group has converged - one
    factorisation at the solution and the velocity problem.

    The groups are independent (none reads another's coordinates), so the block-diagonal
    factors and solutions are each group's own, entry for entry: a group's results do not
    depend on which other groups share its unit (serial levels, a thread's share, one group
    alone: bit for bit the same). Returns ``(status, iterations, residual)``, the largest over
    the groups; on a failure ``uw.failed`` names the group (-1: the unit's factorisation).
    Written with one call site per formulation function (compile time). Inlined by LLVM, not
    at the Numba IR level. Inlined there (``inline="always"``), its chord iterations once fell
    back to Newton-Raphson: Numba's dead-code elimination deleted the store of the chord's
    right-hand side, a gap in its alias analysis that :mod:`kinedyn._jit` now closes. With it
    closed the two are identical to the bit (Stewart platform, both solvers, paper and
    converged steps), but the IR-inlined form compiled no faster (151.9 s against 149.7 s: the
    standalone copy saved, the callers larger). A step of a unit is checked bit for bit against
    each group solved alone (tests/kinematics/test_grouped.py).
    """
    m = uw.members.shape[0]
    for j in range(m):
        uw.done[j] = 0
        uw.prev[j] = np.inf
    left, it, it_max, err_max = m, 0, 0, 0.0
    while True:
        if track:  # Phi at the prediction; Phi and Phi_q at a chord iterate, or at the
            # prediction when every group converged there (their factorisation needs Phi_q)
            if it > 0 or left == 0:
                protocol.calc_phi_and_phi_q(data, work, q, t, plan.select, pw.phi, pw.values)
            else:
                protocol.calc_phi(data, work, q, t, plan.select, pw.phi)
        if left == 0:
            break
        for j in range(m):
            if uw.done[j]:
                continue
            if track:
                err = K.max_abs(pw.phi[uw.bounds[j]:uw.bounds[j + 1]])
                if err != err or err == np.inf:
                    uw.failed[0] = j
                    return K.LOST, it, err
                if err <= tol:
                    uw.done[j] = 1
                    left -= 1
                    it_max, err_max = max(it_max, it), max(err_max, err)
                    continue
                if it < max_iter and err <= K.CHORD_RATE * uw.prev[j]:
                    uw.prev[j] = err
                    continue
            g = uw.members[j]  # Newton-Raphson for this group alone, from here
            st, more, err = K.position(data, work, groups[0][g], groups[1][g], groups[2][g],
                                       groups[3][g], q, t, tol, max_iter - it)
            if st != K.OK:
                uw.failed[0] = j
                return st, it + more, err
            uw.done[j] = 1
            left -= 1
            it_max, err_max = max(it_max, it + more), max(err_max, err)
        if left == 0:
            if track and it == 0:
                continue  # the pass above evaluated Phi only
            break
        for i in range(pw.phi.shape[0]):  # a chord iteration of the groups still moving
            pw.rhs[i] = -pw.phi[i]
        protocol.solve(solver, swork, pw.rhs)
        for j in range(m):
            if not uw.done[j]:
                for i in range(uw.bounds[j], uw.bounds[j + 1]):
                    q[plan.cols[i]] += pw.rhs[i]
        it += 1
    st = protocol.factorize(solver, swork, pw.values)
    if st == K.OK:
        K.velocity(data, work, solver, swork, plan, pw, q, qd, t)
    return st, it_max, err_max


@nb.njit(**INLINED)
def unit_step(data, work, units, groups, u, q, qd, qdd, t, tol, max_iter, track, first):
    """Positions, velocities and accelerations of unit ``u`` (``units``: :meth:`Units.tables`).
    Without ``groups`` (None) the paper's step (:func:`.kernels.paper_step`: ``max_iter``
    Newton-Raphson iterations of the whole unit, every group doing exactly that many); with the
    groups' (solvers, solver works, plans, plan works) converged, each group with its own
    iterations (:func:`_converged_unit`; ``track``: the unit holds the factorisation of the
    previous step's solution); then the accelerations (eq. 3). Numba prunes the branch that
    ``groups``' type excludes, so each run kernel holds one kind of step. Inlined by LLVM
    (``forceinline``, as are the kernels it calls) into its callers, so the tuples are never
    copied into a call frame; only unit ``u``'s members are picked out, once. Each unit
    watches the sign of its own determinant in converged steps (:func:`.kernels.
    watch_singular`; ``first``: a new trajectory): the global Jacobian's is the product of the
    units' (block triangular)."""
    solver, swork, plan, pw = units[0][u], units[1][u], units[2][u], units[3][u]
    units[4][u].failed[0] = -1
    if groups is None:
        st, it, err = K.paper_step(data, work, solver, swork, plan, pw, q, qd, t, tol, max_iter)
    else:
        st, it, err = _converged_unit(data, work, solver, swork, plan, pw, units[4][u], groups,
                                      q, qd, t, tol, max_iter, track)
    if st == K.OK:
        K.acceleration(data, work, solver, swork, plan, pw, q, qd, qdd, t)
        if groups is not None:  # converged steps only (see watch_singular)
            st = K.watch_singular(solver, swork, pw, first)
    return st, it, err


@nb.njit(cache=True, nogil=True)
def run_units(data_, work_, units, n_units, groups, times_, q_, qd_, qdd_, start, stop, tol,
              max_iter, extrapolate, out_q_, out_qd_, out_qdd_, out_res_, out_iter_):
    """Steps ``start..stop-1``, unit by unit (:func:`unit_step`; see :func:`.kernels.run` for
    the tracking): the units' (solvers, solver works, plans, plan works, unit works) and their
    number, then their groups' (solvers, solver works, plans, plan works) - converged to
    ``tol`` - or None: the paper's step (``max_iter`` Newton-Raphson iterations per step).
    Returns ``(status, step, failing unit)``.

    Each part comes as a table packed from Python (:class:`~kinedyn._table.PackedTable`,
    typed without the number of entries), so a four-bar (2 groups), a 3-RRR (4) and a
    Stewart platform (7) run the same kernel, called from Python without an entry kernel
    (which would link this one into its own code once per number of units: docs/
    architecture.md). None is a type of its own, so Numba compiles the two modes as two
    kernels and prunes the branch the other takes: the paper's kernel does not hold the
    converged step (one kernel for both took 0.1 us more per paper step, Stewart platform,
    2.4 us). The views of the arrays are made here, where LLVM sees their memory-info as
    null. Written as one kernel, not a loop function inlined into one kernel per mode: each
    inlined layer is compiled on its own as well (docs/architecture.md, "What the test
    suite's time is made of")."""
    data, work, times = unmanaged(data_), unmanaged(work_), unmanaged(times_)
    q, qd, qdd = unmanaged(q_), unmanaged(qd_), unmanaged(qdd_)
    out_q, out_qd, out_qdd = unmanaged(out_q_), unmanaged(out_qd_), unmanaged(out_qdd_)
    out_res, out_iter = unmanaged(out_res_), unmanaged(out_iter_)
    for k in range(start, stop):
        t = times[k]
        if extrapolate:  # every coordinate at once (the threads: each its groups', same values)
            K.predict(times, k, q, qd, qdd, out_qdd)
        track = k > start  # chord iterations from the factorisation held (converged only)
        it_max, err_max = 0, 0.0
        for u in range(n_units):
            st, it, err = unit_step(data, work, units, groups, u, q, qd, qdd, t, tol, max_iter,
                                    track, k == 0)
            if st != K.OK:
                return st, k, u
            it_max = max(it_max, it)
            err_max = max(err_max, err)
        out_q[k] = q
        out_qd[k] = qd
        out_qdd[k] = qdd
        out_res[k] = err_max
        out_iter[k] = it_max
    return K.OK, stop, -1
