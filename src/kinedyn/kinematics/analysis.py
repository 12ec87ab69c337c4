"""Kinematic analysis of a fully driven mechanism: assembly, tracking, velocities, accelerations.

>>> import kinedyn
>>> from kinedyn.kinematics import Kinematics
>>> kin = Kinematics(kinedyn.models.get("four-bar-driven").compile())
>>> res = kin.simulate(t_end=1.0, dt=0.01)
>>> res.channel("joint.D.angle").shape
(101,)
"""
from __future__ import annotations

import math
import time as _time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.optimize as so
import scipy.sparse as sps
from scipy.sparse.csgraph import structural_rank

from .._table import TableCache
from ..errors import (AccuracyWarning, AssemblyError, ConvergenceError, ModelError,
                      SingularConfigurationError, UnknownNameError, check_flag,
                      check_iteration_settings, check_number, coordinates, run_steps)
from ..linalg.dense import dense_lu
from ..linalg.sparse import PivotOrders
from ..linalg.subsystem import extract
from ..model.compiled import (DRIVER_CODE, CompiledModel, compiled_model, functions_defined,
                              require_positive_distances, undefined)
from ..parallel.team import check_workers
from ..progress import reporting
from . import kernels as K
from .assembly import POSE_TIME, _eval_phi_q, assemble, constraint_jacobian, constraint_values
from .diagnose import independent_rows, singular_rows, worst

SOLVERS = ("dense", "sparse")
# largest position residual a fixed-iterations run returns without an AccuracyWarning (the
# paper's one-iteration step at its dt = 0.01 s: 1e-8 on the Stewart platform, 2e-3 at 0.05 s)
FIXED_RESIDUAL_LIMIT = 1e-6
STRATEGIES = ("global", "groups", "auto")


def formulation_for(model_or_formulation, name: str = "natural"):
    """A formulation object from a compiled model or a :class:`~kinedyn.model.System` (compiled
    here, which validates it), or pass a formulation object through."""
    from ..model import System
    if not isinstance(model_or_formulation, (System, CompiledModel)) \
            and hasattr(model_or_formulation, "model"):
        return model_or_formulation  # a formulation object
    model = compiled_model(model_or_formulation)
    if name == "natural":
        from ..formulations.natural import Natural
        return Natural(model)
    raise UnknownNameError("formulation", name, ["natural"])


@dataclass
class KinematicState:
    t: float
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    iterations: int
    residual: float


class Kinematics:
    """Position, velocity and acceleration analysis (global formulation).

    Parameters
    ----------
    model: a CompiledModel (natural coordinates are used) or a formulation object.
    solver: ``"sparse"`` (static-pivot sparse LU, default) or ``"dense"`` (LAPACK LU).
    tol: Newton tolerance on max |Phi| (model units: m or m^2).
    max_iter: iteration limit; with ``fixed_iterations=True`` exactly ``max_iter`` (>= 1) Newton
        iterations are done per step, as in real-time use (the paper's tEnd2), one
        factorisation each, the last one reused for velocities and accelerations
        (:func:`.kernels.paper_step`).
    t0: time of the initial assembly.
    strategy: ``"global"`` (all coordinates at once) or ``"groups"`` (Group Equations: structural
        groups in the order of their dependency DAG, see :mod:`.grouped`); same results.
        ``"auto"`` times the strategies, solvers and thread combinations on this model with a
        short trial and uses the fastest (:mod:`.autotune`; the measured table is
        ``self.tuning``); a ``solver`` or ``threads`` given restricts what it tries. The choice
        is cached per model on disk; ``retune=True`` measures again.
    threads: ``(outer, inner)`` or ``outer``: ``outer`` threads solve the independent groups of
        a DAG level at the same time (``strategy="groups"``, :mod:`.threads`); ``inner`` limits
        the threads of the BLAS/LAPACK library inside each factorisation (None: its default).
        Default ``(1, None)``.
    """

    def __init__(self, model, *, solver: str | None = None, tol: float = 1e-10,
                 max_iter: int = 25, fixed_iterations: bool = False, t0: float = 0.0,
                 q_guess=None, strategy: str = "global", threads=None, retune: bool = False):
        if solver is not None and solver not in SOLVERS:
            raise UnknownNameError("linear solver", solver, SOLVERS)
        if strategy not in STRATEGIES:
            raise UnknownNameError("kinematic strategy", strategy, STRATEGIES)
        if threads is not None:
            given = (threads,) if np.isscalar(threads) else tuple(threads)
            if len(given) not in (1, 2):
                raise ModelError(f"threads is OUTER or (OUTER, INNER), got {threads!r}")
            outer, inner = (given + (None,))[:2]
            check_workers("outer threads", outer)
            if inner is not None:
                check_number("inner threads", inner, 1, whole=True)
            threads = (int(outer), None if inner is None else int(inner))
        check_iteration_settings(tol, max_iter)
        check_flag("retune", retune)
        check_number("t0", t0, -math.inf)
        self.t0 = float(t0)
        self.f = formulation_for(model)
        self.model = self.f.model
        self._distance_driven = bool((self.model.driver_kind == DRIVER_CODE["distance"]).any())
        self.tuning = None
        self.engine = None
        # sparse global: the orders analysed so far, each with the dense fall-back for a small
        # block (a degraded order of the position problem means nothing but the order)
        self.pivot_orders = PivotOrders(fallback=True)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.fixed = check_flag("fixed_iterations", fixed_iterations)
        self.work = self.f.make_work()
        self.data = self.f.data
        self._parts = TableCache()  # what the global run kernel takes (kernels.run_parts)
        self.nnz = len(self.data.jac_indices)
        self.all_rows = np.arange(self.f.n_c)
        q = (self.assemble(self.f.q0, t0, pose_time=POSE_TIME) if q_guess is None
             else self.assemble(q_guess, t0))
        self.q_assembled = q
        J = self._select_rows(q, t0)
        rows, redundant = self.rows, self.redundant
        self.reselections = 0
        if len(redundant):
            names = [self.f.constraint_names[r] for r in redundant]
            warnings.warn(f"{len(redundant)} redundant constraint(s) ignored by the solver (kept "
                          f"in residual reports): {', '.join(names[:6])}", stacklevel=2)
        if len(rows) < self.f.n_q and structural_rank(sps.csr_matrix(J != 0)) >= self.f.n_q:
            # enough equations by structure but not numerically: a singular configuration
            raise SingularConfigurationError(
                f"the initial configuration is singular (Jacobian rank {len(rows)} of "
                f"{self.f.n_q}): a dead centre or bifurcation point; start elsewhere",
                time=t0, constraints=[self.f.constraint_names[r]
                                      for r in singular_rows(J.toarray())])
        if len(rows) < self.f.n_q:
            raise ModelError(
                f"kinematic analysis needs every degree of freedom driven, but {self.model.name!r} "
                f"has {self.f.n_q - len(rows)} left after its drivers (Jacobian rank {len(rows)} "
                f"of {self.f.n_q} coordinates); add drivers or use dynamics")
        if strategy == "auto":  # the rows are known now: no other analysis is built on a cache hit
            from .autotune import tune
            from .groups import find_groups
            widest = max(len(level) for level in find_groups(self.f, self.rows).levels)
            self.tuning = tune(self.model, widest_level=widest, tol=tol, max_iter=max_iter,
                               fixed=fixed_iterations, t0=t0, q_guess=q_guess, solver=solver,
                               threads=threads, retune=retune)
            choice = self.tuning.choice
            strategy, solver, threads = choice.strategy, choice.solver, choice.threads
        threads = threads or (1, None)
        if threads[0] > 1 and strategy != "groups":
            raise ModelError("outer threads solve structural groups in parallel: they need "
                             "strategy='groups'")
        self.strategy = strategy
        self.threads = threads
        self.solver_name = solver or "sparse"
        self._make_engine()
        self._note_idle_threads()
        self._build_solver(q, t0)
        self._warm_up()

    def _warm_up(self):
        """Compile (or load from the cache) the run kernel for these types now, so that the
        wall time of :meth:`simulate` measures the steps, not the compiler (an empty run)."""
        q = self.q_assembled.copy()
        self._run(np.zeros(1), q, np.zeros_like(q), np.zeros_like(q), 0, 0, True,
                  K.outputs(1, self.f.n_q))

    def _run(self, times, q, qd, qdd, start, stop, extrapolate, outs):
        """Steps ``start..stop-1`` over ``times`` by the run kernel - the global one or the
        structural groups' - writing ``outs`` (:func:`.kernels.outputs`): ``(status, step,
        failed group or -1)``. One-time solutions are one-step runs, so that every analysis
        compiles one kernel per model type."""
        with functions_defined(self.model, times[start:stop]):
            if self.engine is None:
                parts = K.run_parts(self._parts, self.data, self.work, self.solver, self.swork,
                                    self.plan, self.pw)
                st, k = K.run(parts, times, q, qd, qdd, start, stop, self.tol, self.max_iter,
                              self.fixed, extrapolate, *outs)
                return st, k, -1
            return self.engine.run(times, q, qd, qdd, start, stop, self.tol, self.max_iter,
                                   self.fixed, extrapolate, outs)

    def _select_rows(self, q, t) -> np.ndarray:
        """Keep the constraint rows that are independent at q (rank-revealing QR of Phi_q, see
        :func:`.diagnose.independent_rows`); the rest are redundant. Same rows for the dense and
        the sparse solver. Returns the full Jacobian at q (sparse)."""
        J = self.jacobian(q, t)
        self.rows, self.redundant = independent_rows(J)
        self.plan = K.make_plan(self.f, self.rows, np.arange(self.f.n_q))
        self.pw = K.make_plan_work(self.plan, self.nnz)
        self.block = None  # their square system, extracted when a global solver needs it
        return J

    def _make_engine(self) -> None:
        """The structural groups of the chosen rows (``strategy="groups"``)."""
        if self.strategy == "groups":
            from .grouped import GroupEngine
            if self.engine is not None:
                self.engine.close()
            self.engine = GroupEngine(self, self.solver_name, self.threads[0])

    def _note_idle_threads(self) -> None:
        """A warning when more outer threads are asked for than any level of the groups' DAG
        has groups: the others can only wait at every level's barrier (the four-bar's two
        groups are one per level: 2 threads took 30 us per step against 4.8 on one)."""
        if self.engine is None or self.threads[0] == 1:
            return
        widest = max(len(level) for level in self.engine.structure.levels)
        if self.threads[0] > widest:
            warnings.warn(f"{self.threads[0]} outer threads, but no level of the structural "
                          f"groups of {self.model.name!r} has more than {widest} group(s): "
                          f"{self.threads[0] - widest} thread(s) can only wait (use fewer "
                          "threads, or strategy='auto')", stacklevel=3)

    def _recover(self, q, t, reuse: bool = True) -> None:
        """After a singular factorisation: choose the independent rows again where the
        mechanism is now (a redundant set of constraints is redundant only up to a point: a
        parallelogram's third bar is what keeps it assembled through the collinear
        position), and re-analyse the sparse pivot order - taking one analysed before where
        it holds, if ``reuse`` (:class:`~kinedyn.linalg.sparse.PivotOrders`)."""
        if len(self.redundant):
            self._select_rows(q, t)
            self._make_engine()
            self.reselections += 1
        self._build_solver(q, t, reuse)

    def _orders_reused(self) -> bool:
        """Whether the last sparse (re-)analysis took earlier pivot orders only (no SuperLU)."""
        orders = [self.pivot_orders] if self.engine is None else self.engine.pivot_orders
        return self.solver_name == "sparse" and all(o.last_reused for o in orders)

    def _recoverable(self, st) -> bool:
        if st == K.PASSED:  # only other rows have another determinant
            return len(self.redundant) > 0
        return st in (K.REPIVOT, K.SINGULAR) and (self.solver_name == "sparse"
                                                  or len(self.redundant) > 0)

    # ---- pieces ------------------------------------------------------------------------------
    def phi(self, q, t=0.0) -> np.ndarray:
        return constraint_values(self.f, q, t, self.work)

    def jacobian(self, q, t=0.0) -> sps.csr_matrix:
        return constraint_jacobian(self.f, q, t, self.work)

    def _build_solver(self, q, t, reuse: bool = True):
        if self.engine is not None:
            self.engine.build(q, t, reuse)
            return
        if self.block is None:
            self.block = extract(self.data.jac_indptr, self.data.jac_indices, self.plan.rows,
                                 self.plan.cols)
        block = self.block
        if self.solver_name == "dense":
            self.solver, self.swork = dense_lu(block)
        else:
            values = np.zeros(self.nnz)
            _eval_phi_q(self.data, self.work, q, float(t), self.all_rows, values)
            try:  # an earlier order that holds here, else a new analysis
                self.solver, self.swork = self.pivot_orders.analyse(block, values, reuse)
            except RuntimeError:  # SuperLU: "Factor is exactly singular"
                self._raise(K.SINGULAR, q, t, float(np.abs(self.phi(q, t)).max()))

    def assemble(self, q_guess: np.ndarray, t: float = 0.0, *,
                 pose_time: float | None = None) -> np.ndarray:
        """Satisfy the constraints near an approximate configuration (see
        :func:`~.assembly.assemble`)."""
        with functions_defined(self.model, [t]):
            return assemble(self.f, q_guess, t, self.tol, self.work, pose_time=pose_time)

    # ---- one time ---------------------------------------------------------------------------
    def solve(self, t: float, q_guess=None) -> KinematicState:
        """Positions (from ``q_guess``, default the last assembly), velocities, accelerations."""
        check_number("t", t, -math.inf)
        if self._distance_driven:  # (a run checks all its times up front: simulate)
            require_positive_distances(self.model, [t])
        # (a NaN guess would only show as a failed Newton iteration; the compiled step does not
        # check bounds)
        start = self.q_assembled if q_guess is None else coordinates(self.f, q_guess, "q_guess")
        for attempt in range(2):
            q = start.copy()
            qd = np.zeros(self.f.n_q)
            qdd = np.zeros(self.f.n_q)
            outs = K.outputs(1, self.f.n_q)
            with blas_threads(self.threads[1]):
                st, _, group = self._run(np.array([float(t)]), q, qd, qdd, 0, 1, False, outs)
            if st == K.OK:
                return KinematicState(t, q, qd, qdd, int(outs[4][0]), float(outs[3][0]))
            if attempt == 0 and self._recoverable(st):
                self._recover(start, t)
                continue
            if self.engine is not None:
                self.engine.fail(st, q, t, group)
            self._raise(st, q, t, float(np.abs(self.phi(q, t)[self.rows]).max()))

    def _raise(self, st, q, t, err, before=None):
        """Turn a failed solve into the right error, naming constraints and time (``before``:
        the time of the step before, where there was one).

        The Jacobian's smallest singular value tells a singular configuration (rank lost); a
        least-squares solve from the failed iterate tells whether the constraints can still be
        satisfied (singular configuration, e.g. a dead centre) or not (loss of assembly: the
        drivers ask for a configuration outside the workspace).
        """
        why = undefined(self.model, [t])  # NaN drivers stop Newton with no other sign
        if why is not None:
            raise ModelError(why)
        names = self.f.constraint_names
        J = self.jacobian(q, t).toarray()[self.rows]
        if not (np.isfinite(q).all() and np.isfinite(J).all()):
            raise ConvergenceError("Newton-Raphson diverged: its iterate is not finite; try a "
                                   "smaller step", time=t, constraints=[])
        if st == K.PASSED:  # q is past the singular configuration (kernels.watch_singular)
            raise SingularConfigurationError(
                "the constraint Jacobian's determinant changed sign since the step before"
                f"{'' if before is None else f' (t = {before:g} s)'}: the mechanism went "
                "through a singular configuration (a dead centre or a bifurcation, where the "
                "drivers do not fix its motion) between the two steps; if it has none there, "
                "the step is too long for the drivers' motion (reduce dt)",
                time=t, constraints=[names[r] for r in self.rows[singular_rows(J)]])
        scaled = J / np.maximum(np.abs(J).max(axis=1, keepdims=True), 1e-300)
        sv = np.linalg.svd(scaled, compute_uv=False)
        rank_lost = sv[-1] < 1e-8 * sv[0]
        reachable = True
        if st in (K.NO_CONVERGENCE, K.LOST) or rank_lost:
            sol = so.least_squares(lambda x: self.phi(x, t)[self.rows], q,
                                   jac=lambda x: self.jacobian(x, t)[self.rows], method="trf",
                                   xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200)
            reachable = np.abs(sol.fun).max() <= max(1e3 * self.tol, 1e-7)
        if not reachable:
            phi = self.phi(q, t)
            raise AssemblyError(
                "the constraints cannot be satisfied: the drivers ask for a configuration "
                "outside the workspace (end of travel)", time=t,
                constraints=[names[r] for r in worst(phi)])
        if rank_lost or st in (K.SINGULAR, K.REPIVOT):
            rows = self.rows[singular_rows(J)]
            raise SingularConfigurationError(
                "the constraint Jacobian is singular (a dead-centre or bifurcation "
                "configuration): the mechanism cannot be driven through it",
                time=t, constraints=[names[r] for r in rows])
        phi = self.phi(q, t)
        bad = [names[r] for r in worst(phi)]
        raise ConvergenceError(f"Newton-Raphson did not reach {self.tol:g} in {self.max_iter} "
                               f"iterations (residual {err:.3g}); try a smaller step or more "
                               "iterations", time=t, constraints=bad)

    # ---- whole runs ---------------------------------------------------------------------------
    def simulate(self, t_end: float, dt: float, *, t0: float | None = None, progress=None,
                 extrapolate: bool = True):
        """A kinematic simulation from ``t0`` (default: the assembly's, the constructor's
        ``t0``) to ``t_end`` with step ``dt`` (compiled loop).

        ``progress``: True for a progress bar, or a callable ``progress(done, total)`` (the CLI
        passes its own bar); the run is cut into chunks only to report progress and to
        re-analyse the sparse pivot order if a pivot degrades.
        """
        with reporting(progress, f"{self.model.name}: kinematics") as report:
            return self._simulate(t_end, dt, t0, report, extrapolate)

    def _simulate(self, t_end, dt, t0, progress, extrapolate):
        from .results import KinematicResults
        t0 = self.t0 if t0 is None else t0
        check_flag("extrapolate", extrapolate)
        n = run_steps(t0, t_end, dt) + 1
        nq = self.f.n_q
        outs = K.outputs(n, nq)  # (first: it says when they would not fit in memory)
        times = t0 + dt * np.arange(n)
        require_positive_distances(self.model, times)
        out_q, out_qd, out_qdd, out_res, out_iter = outs
        q = self.q_assembled.copy()
        qd, qdd = np.zeros(nq), np.zeros(nq)
        chunk = max(1, n // 100) if progress else n
        start, last_failure = 0, -1
        self.reanalyses = self.orders_reused = 0
        workers = None  # outer threads: each worker's CPU seconds, summed over the runs
        wall, cpu, proc = _time.perf_counter(), _time.thread_time(), _time.process_time()
        while start < n:
            stop = min(n, start + chunk)
            with blas_threads(self.threads[1]):
                st, k, group = self._run(times, q, qd, qdd, start, stop, extrapolate, outs)
            # read now: a recovery below may replace the engine and its runner
            runner = self.engine.runner if self.engine is not None else None
            if runner is not None:
                workers = runner.last_cpu if workers is None else workers + runner.last_cpu
            if st != K.OK:
                # a degraded static pivot order (or redundant rows that stopped being
                # redundant): recover at the last converged state and retry the step;
                # failing twice at the same step means a true singularity. An order that
                # did not hold for one step (failing again at the next one) says the
                # configuration is near singular: whether that shows as a vanishing static
                # pivot depends on the order, so it is analysed afresh, not taken again
                if self._recoverable(st) and k != last_failure:
                    reuse = k > last_failure + 1
                    last_failure = k
                    if k > 0:
                        q[:], qd[:], qdd[:] = out_q[k - 1], out_qd[k - 1], out_qdd[k - 1]
                        h = times[k] - times[k - 1]  # rows independent where the step starts
                        self._recover(q + h * qd + 0.5 * h * h * qdd, times[k], reuse)
                    else:
                        self._recover(q, times[0], reuse)
                    self.reanalyses += 1
                    self.orders_reused += self._orders_reused()
                    start = k
                    continue
                before = times[k - 1] if k > 0 else None
                if self.engine is not None:
                    self.engine.fail(st, q, times[k], group, before)
                self._raise(st, q, times[k], float(np.abs(self.phi(q, times[k])).max()), before)
            start = stop
            if progress:
                progress(start, n)
        wall, cpu = _time.perf_counter() - wall, _time.thread_time() - cpu
        proc = _time.process_time() - proc
        res = KinematicResults(self, times, out_q, out_qd, out_qdd, out_res, out_iter, wall,
                               cpu, proc, workers)
        if self.fixed:
            self._check_fixed_accuracy(res)
        elif len(self.redundant):
            self._check_redundant(res)
        return res

    def _check_redundant(self, res) -> None:
        """AssemblyError when the constraints the solver ignored as redundant (dependent on the
        others where they were selected) are violated along the run: they contradict the others
        there (two drivers of one motion with different functions, say), and the positions,
        which satisfy only the others, are not a solution of the model. The residuals in
        ``res`` are over every constraint; the solved ones hold to ``tol``."""
        pos = res.residuals[:, 0]
        bad = ~(pos <= max(1e3 * self.tol, 1e-8))  # NaN included
        if not bad.any():
            return
        k = int(np.argmax(bad))   # the first time: where they part
        t = float(res.time[k])
        phi = np.abs(self.phi(res.q[k], t))
        names = self.f.constraint_names
        ignored = sorted(self.redundant, key=lambda r: -phi[r])
        raise AssemblyError(
            f"the constraints cannot all be satisfied: {len(self.redundant)} constraint(s) that "
            "the solver ignored as redundant where the run started contradict the others from "
            f"here on (violated by {pos[k]:.3g} here, up to {np.nanmax(pos):.3g} later; two "
            "drivers of one motion?)", time=t, constraints=[names[r] for r in ignored[:6]])

    def _check_fixed_accuracy(self, res) -> None:
        """Warn (:class:`~kinedyn.errors.AccuracyWarning`) when a run with a fixed number of
        Newton iterations per step (the paper's step, which never checks a tolerance) returns
        positions that violate the constraints by more than ``FIXED_RESIDUAL_LIMIT``: too large
        a step for that many iterations, or a lost assembly. The residuals are in the results
        either way; the warning makes sure nobody uses such numbers without noticing."""
        pos = res.residuals[:, 0]
        k = int(np.argmax(np.where(np.isfinite(pos), pos, np.inf)))
        if pos[k] <= FIXED_RESIDUAL_LIMIT:
            return
        t = float(res.time[k])
        phi = self.phi(res.q[k], t)
        name = self.f.constraint_names[worst(phi, 1)[0]] if np.isfinite(phi).any() else "all"
        warnings.warn(f"fixed_iterations=True ({self.max_iter} Newton iteration(s) per step, "
                      f"dt = {res.summary['dt']:.4g} s): the positions violate the constraints "
                      f"by up to {pos[k]:.3g} (worst: '{name}' at t = {t:.4g} s); use a "
                      "smaller step, more iterations (max_iter) or converged steps "
                      "(fixed_iterations=False)", AccuracyWarning, stacklevel=3)


_CONTROLLER = None


def blas_threads(n):
    """Context limiting the BLAS/LAPACK threads to ``n`` (the paper's MKL level); None: as is."""
    global _CONTROLLER
    if n is None:
        import contextlib
        return contextlib.nullcontext()
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=int(n), user_api="blas")
