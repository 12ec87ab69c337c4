"""Group Equations: kinematics solved structural group by structural group (paper, s. 2, eqs 1-3).

For each structural group in the order of its dependency DAG (:mod:`.groups`) the coordinates
of earlier groups are known (h) and the group's own are dependent (phi):

* position, eq. (1): Newton-Raphson ``Phi_phi dphi = -Phi(q_G)`` on the group's rows only;
* velocity, eq. (2): ``Phi_phi phid = -Phi_t - Phi_h hd``;
* acceleration, eq. (3): ``Phi_phi phidd = gamma - Phi_h hdd``.

Each group is a :class:`~.kernels.Plan` (its rows, its columns, its coupling entries Phi_h)
with its own dense or sparse factorisation of Phi_phi (:mod:`kinedyn.linalg`; a serial paper
step with the sparse solver takes each DAG level's groups as one block-diagonal system, see
:meth:`GroupEngine._by_units`); groups share
the Jacobian values array, where each writes only its own rows, and the formulation scratch of
the thread that solves them (one per thread: its table of functions of time is then evaluated
once per step, not once per group). The per-group objects are packed into homogeneous
tuples that compiled code indexes at run time; a whole run is one compiled call.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .._jit import INLINED
from .._unmanaged import unmanaged
from ..errors import SingularConfigurationError, SolverError
from ..linalg.dense import dense_lu
from ..linalg.sparse import analyse_keeping_order, block_diagonal, with_codes
from ..linalg.subsystem import extract
from ..parallel.team import private_copy
from . import kernels as K
from .diagnose import worst
from .groups import find_groups


class GroupEngine:
    """Per-group plans, scratch and linear solvers of a :class:`~.analysis.Kinematics`.

    ``order`` lists the groups in DAG order (levels one after the other).
    """

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
        self.pws = tuple(K.PlanWork(np.zeros(g.size), np.zeros(g.size), self.values)
                         for g in gs.groups)
        self.blocks = tuple(extract(ptr, ind, g.equations, g.unknowns) for g in gs.groups)
        self.order = np.array([k for level in gs.levels for k in level], np.int64)
        # the paper's step with the sparse solver: each DAG level's groups as one
        # block-diagonal system (same arithmetic, one pass per level; see _by_units)
        self.level_groups = [tuple(sorted(level)) for level in gs.levels]
        self.levels = (self.make_units(self.level_groups, [self.values] * len(gs.levels))
                       if solver == "sparse" else None)
        self.orderings = [None] * len(gs.groups)  # sparse: each group's column order
        self.runner = None
        if outer > 1:
            from .threads import ThreadedRunner
            self.runner = ThreadedRunner(self, outer)

    def make_units(self, unit_groups, values, zeros=np.zeros) -> "Units":
        """:class:`Units` solving each tuple of independent groups of ``unit_groups`` as one
        block-diagonal system, unit ``i`` on the Jacobian values array ``values[i]``, its
        scratch from ``zeros`` (the threads: :func:`~kinedyn.parallel.team.private_zeros`);
        the solvers are set by :meth:`build`."""
        plans, pws = [], []
        for u, vals in zip(unit_groups, values):
            rows = [r for g in u for r in self.groups[g].equations]
            cols = [c for g in u for c in self.groups[g].unknowns]
            plans.append(K.make_plan(self.kin.f, rows, cols))
            pws.append(K.PlanWork(zeros(len(rows)), zeros(len(rows)), vals))
        return Units(list(unit_groups), tuple(plans), tuple(pws))

    def _unit_solvers(self, units: "Units") -> None:
        """Each unit's solver: the block-diagonal combination of its groups' analyses
        (:func:`kinedyn.linalg.sparse.block_diagonal`), scratch in cache lines of its own."""
        parts = [block_diagonal((self.solvers[g], self.sworks[g]) for g in u)
                 for u in units.groups]
        units.solvers = tuple(s for s, _ in parts)
        units.sworks = tuple(private_copy(w) for _, w in parts)

    def close(self):
        """Stop the worker threads (if any)."""
        if self.runner is not None:
            self.runner.close()
            self.runner = None

    def name(self, g: int) -> str:
        bodies = ", ".join(self.groups[g].bodies[:4]) or "no bodies"
        more = len(self.groups[g].bodies) - 4
        return f"structural group G{g} ({bodies}{f' +{more}' if more > 0 else ''})"

    def build(self, q, t):
        """(Re-)analyse every group's linear solver at configuration ``q``."""
        kin = self.kin
        solvers, sworks = [], []
        values = np.zeros(kin.nnz)
        from .analysis import _eval_phi_q
        _eval_phi_q(kin.data, kin.work, np.asarray(q, float), float(t), kin.all_rows, values)
        for g, block in enumerate(self.blocks):
            if self.solver_name == "dense":
                s, w = dense_lu(block)
            else:
                try:  # each group's cheapest column order, chosen once (kept when re-analysed)
                    self.orderings[g], (s, w) = analyse_keeping_order(
                        block, values, self.orderings[g], codegen=False)
                except RuntimeError:  # SuperLU: "Factor is exactly singular"
                    self.fail(K.SINGULAR, q, t, g)
            solvers.append(s)
            sworks.append(private_copy(w))  # threads factorise groups side by side
        if self.solver_name == "sparse":  # generated code while the groups' code stays small
            solvers = with_codes(solvers, self.outer)
        self.solvers, self.sworks = tuple(solvers), tuple(sworks)
        for units in (self.levels, self.runner and self.runner.units):
            if units is not None:
                self._unit_solvers(units)

    def _by_units(self, fixed) -> bool:
        """Whether a run of this mode solves units of independent groups (the paper's step,
        sparse): a serial run whole DAG levels (:attr:`levels`), a threaded run each worker's
        share of a level (``ThreadedRunner.units``).

        The groups of a level are independent (none reads another's coordinates), so their
        blocks of Phi_phi form a block-diagonal matrix whose factors are the groups' own
        (:func:`kinedyn.linalg.sparse.block_diagonal`): the unit's Phi, Phi_phi, Phi_t and
        gamma in one pass over its rows, one factorisation, one solution - entry for entry the
        arithmetic of each group, however the groups are cut into units (serial and threaded
        results bit-identical). With the groups' pivot rows interleaved, their chains of dependent
        operations (pivot after pivot, multiply-add after multiply-add) overlap instead of
        running one group after the other (docs/group-equations.md, third round: Stewart
        platform 7.1 -> 5.9 us per step on a loaded machine). In the paper's step
        every group does exactly ``max_iter`` iterations, so the unit does too; converged
        runs keep each group's own iteration count (group by group, serial and threaded).
        """
        return bool(fixed) and self.levels is not None

    def _serial_parts(self, fixed):
        """(solvers, works, plans, plan works, order) of what a serial run solves in turn."""
        if self._by_units(fixed):
            lv = self.levels
            return lv.solvers, lv.sworks, lv.plans, lv.pws, np.arange(len(lv.groups))
        return self.solvers, self.sworks, self.plans, self.pws, self.order

    def run(self, times, q, qd, qdd, start, stop, tol, max_iter, fixed, extrapolate, outs):
        """Steps ``start..stop-1``: ``(status, step, failed group)``."""
        if self.runner is not None:
            return self.runner.run(times, q, qd, qdd, start, stop, tol, max_iter, fixed,
                                   extrapolate, outs)
        solvers, sworks, plans, pws, order = self._serial_parts(fixed)
        st, k, u = run_groups(self.kin.data, self.kin.work, solvers, sworks, plans, pws, order,
                              times, q, qd, qdd, start, stop, tol, max_iter, fixed,
                              extrapolate, *outs)
        t = times[min(k, len(times) - 1)]
        return st, k, (self.worst_group(self.levels.groups[u], q, t)
                       if u >= 0 and self._by_units(fixed) else u)

    def worst_group(self, groups, q, t) -> int:
        """The one of ``groups`` (a unit that failed as a whole) with the largest residual
        at q."""
        if len(groups) == 1:
            return groups[0]
        phi = np.abs(self.kin.phi(q, t))
        return max(groups, key=lambda g: phi[list(self.groups[g].equations)].max())

    def fail(self, st, q, t, g):
        """Raise the error of a failed group, naming the group and its worst constraints."""
        kin, grp = self.kin, self.groups[g]
        names = kin.f.constraint_names
        rows = np.array(grp.equations, np.int64)
        phi = kin.phi(q, t)[rows]
        bad = [names[r] for r in rows[worst(phi)]]
        err = float(np.abs(phi).max()) if len(phi) else 0.0
        others: list[str] = []
        try:
            kin._raise(st, q, t, err)
        except SolverError as e:
            cls, detail, others = type(e), e.detail, e.constraints
        else:  # the whole system looks fine: the group's own block is singular
            cls, detail = SingularConfigurationError, "the group's Jacobian block is singular"
        raise cls(f"{self.name(g)}: {detail}", time=t,
                  constraints=bad + [c for c in others if c not in bad]) from None


class Units:
    """Independent structural groups solved together, each tuple of ``groups`` as one
    block-diagonal system (:meth:`GroupEngine._by_units`): its plan and plan work, and - after
    :meth:`GroupEngine.build` - its solver and solver work."""

    def __init__(self, groups, plans, pws):
        self.groups, self.plans, self.pws = groups, plans, pws
        self.solvers = self.sworks = None


@nb.njit(**INLINED)
def _group_pva(data, work, solvers, sworks, plans, pws, g, q, qd, qdd, t, tol, max_iter, fixed,
               track):
    """Position (eq. 1), velocity (eq. 2) and acceleration (eq. 3) of group ``g``
    (:func:`.kernels.step`: the paper's step with ``fixed``, else converged).

    ``track``: the group's solver holds the factorisation of its block at the previous step's
    solution, so the position problem starts with chord iterations
    (:func:`.kernels.position_tracking`: one factorisation per step instead of one per Newton
    iteration plus one at the solution). Inlined by LLVM (``forceinline``, as are the kernels
    it calls) into its callers, so the tuples of every group are never copied into a call
    frame; only group ``g``'s members are picked out, once.
    """
    return K.step(data, work, solvers[g], sworks[g], plans[g], pws[g], q, qd, qdd, t, tol,
                  max_iter, fixed, track)


@nb.njit(cache=True, nogil=True)
def run_groups(data_, work_, solvers_, sworks_, plans_, pws_, order_, times_, q_, qd_, qdd_,
               start, stop, tol, max_iter, fixed, extrapolate, out_q_, out_qd_, out_qdd_,
               out_res_, out_iter_):
    """Steps ``start..stop-1`` unit by unit in ``order`` - structural groups, or whole DAG
    levels in the paper's step (:meth:`GroupEngine._by_units`) - (see :func:`.kernels.run` for
    the tracking). Returns ``(status, step, failing unit)``."""
    data, work, solvers, sworks = unmanaged(data_), unmanaged(work_), unmanaged(solvers_), \
        unmanaged(sworks_)
    plans, pws = unmanaged(plans_), unmanaged(pws_)
    order, times, q, qd, qdd = unmanaged(order_), unmanaged(times_), unmanaged(q_), \
        unmanaged(qd_), unmanaged(qdd_)
    out_q, out_qd, out_qdd = unmanaged(out_q_), unmanaged(out_qd_), unmanaged(out_qdd_)
    out_res, out_iter = unmanaged(out_res_), unmanaged(out_iter_)
    for k in range(start, stop):
        t = times[k]
        if extrapolate:  # every coordinate at once (the threads: each its groups', same values)
            K.predict(times, k, q, qd, qdd, out_qdd)
        track = k > start and not fixed  # the paper's fixed Newton iterations: no chord
        it_max, err_max = 0, 0.0
        for i in range(order.shape[0]):
            g = order[i]
            st, it, err = _group_pva(data, work, solvers, sworks, plans, pws, g, q, qd, qdd, t,
                                     tol, max_iter, fixed, track)
            if st != K.OK:
                return st, k, g
            it_max = max(it_max, it)
            err_max = max(err_max, err)
        out_q[k] = q
        out_qd[k] = qd
        out_qdd[k] = qdd
        out_res[k] = err_max
        out_iter[k] = it_max
    return K.OK, stop, -1
