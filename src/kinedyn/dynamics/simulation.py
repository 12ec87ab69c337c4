"""Forward dynamics: build a method on a formulation, set consistent initial conditions, run.

>>> import kinedyn
>>> from kinedyn.dynamics import Dynamics
>>> dyn = Dynamics(kinedyn.models.get("four-bar").compile(), method="projection")
>>> res = dyn.simulate(t_end=1.0, dt=1e-3)
>>> float(res.channel("residual.position").max()) < 1e-10
True
"""
from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps

from .._jit import resolved_call
from .._memory import resident_zeros
from ..errors import (ModelError, SolverError, UnknownNameError, check_baumgarte,
                      check_iteration_settings, check_number, record_interval, run_steps)
from ..formulations import protocol
from ..kinematics import kernels as K
from ..kinematics.analysis import blas_threads, coordinates, formulation_for
from ..kinematics.assembly import POSE_TIME, assemble, constraint_jacobian, constraint_values
from ..kinematics.diagnose import independent_rows, singular_rows, worst
from ..model.compiled import functions_defined, require_positive_distances, undefined
from ..linalg.dense import dense_lu
from ..linalg.sparse import analyse as sparse_analyse
from ..linalg.sparse import with_fallback
from ..linalg.subsystem import extract
from ..progress import reporting
from . import integrators as I
from . import schur
from .schur import mass_blocks
from .layouts import kkt_layout, penalty_layout
from .stopwatch import Stopwatch
from .methods import (REPARTITION, Augmented, AugmentedWork, Partitioned, PartitionedWork,
                      Penalty, PenaltyWork)

METHODS = ("augmented", "projection", "partitioning", "penalty", "index3", "hdca", "embedded")
# methods whose built state is plain arrays in (named) tuples, kept for the next run's start
# (see Dynamics._initial_state); what _build sets for them:
KEPT_METHODS = ("augmented", "projection", "partitioning", "penalty")
#: the options each method reads (besides tol, max_iter, q0, qd0, t0); setting another one is
#: an error, since the run would silently go without it
METHOD_OPTIONS = {
    "augmented": {"integrator", "solver", "baumgarte"},
    "projection": {"integrator", "solver", "baumgarte"},
    "partitioning": {"integrator", "solver", "baumgarte", "influence_limit"},
    "penalty": {"integrator", "solver", "penalty"},
    "index3": {"hht_alpha"},
    "hdca": {"integrator"},
    "embedded": {"integrator", "symbolic"},
}
#: the linear algebra of the methods that do not take ``solver`` (the results' summary reports
#: it instead of ``solver_name``, which only :meth:`Dynamics.acceleration_evaluator` uses there)
OWN_SOLVER = {"index3": "dense LU (HHT Newton iteration)", "hdca": "HDCA recursion",
              "embedded": "generated code of the symbolic plan"}
BUILT = ("system", "sys_work", "y", "n_pos", "independent", "dependent")
SOLVERS = ("schur", "sparse", "dense")


def _require_used_options(method: str, **given) -> None:
    """ModelError naming the options set away from their defaults that ``method`` does not
    read (:data:`METHOD_OPTIONS`), and the methods that do."""
    defaults = inspect.signature(Dynamics).parameters  # (one place for them: the signature)
    if method == "index3" and given["integrator"] == "hht":
        del given["integrator"]  # naming its own integrator is fine
    unused = []
    for name, value in given.items():
        default = defaults[name].default
        try:
            same = value is default or bool(np.all(np.asarray(value, dtype=object)
                                                   == np.asarray(default, dtype=object)))
        except (TypeError, ValueError):
            same = False
        if not same and name not in METHOD_OPTIONS[method]:
            users = [m for m in METHODS if name in METHOD_OPTIONS[m]]
            unused.append(f"{name}={value!r} (read by {', '.join(users)})")
    if unused:
        raise ModelError(f"method {method!r} does not use {'; '.join(unused)}: remove "
                         f"{'it' if len(unused) == 1 else 'them'} or choose a method that "
                         f"reads {'it' if len(unused) == 1 else 'them'}")


def _penalty_settings(given) -> dict:
    """The penalty method's settings (thesis eqs. 2.21-2.23): the defaults, overridden by
    ``given``, each checked (rho, omega > 0, zeta >= 0, iterations a whole number >= 1)."""
    settings = {"rho": 1e7, "omega": 10.0, "zeta": 1.0, "iterations": 2}
    if given is None:
        return settings
    if not isinstance(given, Mapping):
        raise ModelError(f"penalty must be a mapping of {', '.join(settings)}, got "
                         f"{type(given).__name__}")
    unknown = sorted(set(given) - set(settings))
    if unknown:
        raise ModelError(f"penalty: unknown setting(s) {', '.join(map(repr, unknown))}; "
                         f"settings: {', '.join(settings)}")
    settings.update(given)
    for name in ("rho", "omega"):
        check_number(f"penalty {name}", settings[name], above=True)
    check_number("penalty zeta", settings["zeta"])
    check_number("penalty iterations", settings["iterations"], 1, whole=True)
    return settings


def _solver(kind, indptr, indices, values):
    """Solver of the square matrix ``values`` (CSR pattern ``indptr, indices``): the KKT, mass
    and penalty matrices. A sparse one of a small matrix has the dense fall-back
    (:func:`~kinedyn.linalg.sparse.with_fallback`): a degraded pivot order of these matrices
    means nothing but the order, and a rebuild is a return to Python (the penalty double
    pendulum: 17 in 10 s). Partitioning's dependent block, whose degraded order is the signal
    to choose new coordinates, is analysed apart (:meth:`Dynamics._build_partitioned`)."""
    n = len(indptr) - 1
    block = extract(indptr, indices, np.arange(n), np.arange(n))
    if kind == "dense":
        return dense_lu(block)
    solver, work = sparse_analyse(block, values)
    return solver, with_fallback(work, n)


def _writeable_arrays(value, found=None) -> list:
    """The writeable arrays in ``value``'s dicts, lists and (named) tuples, each once."""
    found = {} if found is None else found
    if isinstance(value, np.ndarray):
        if value.flags.writeable:
            found.setdefault(id(value), value)
    elif isinstance(value, dict):
        for v in value.values():
            _writeable_arrays(v, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _writeable_arrays(v, found)
    return list(found.values())


class Dynamics:
    """Forward dynamics of a model with a chosen method and fixed-step integrator.

    Parameters
    ----------
    model: CompiledModel (natural coordinates) or a formulation object.
    method: ``augmented`` (index-1, optional Baumgarte ``baumgarte=(alpha, beta)``),
        ``projection`` (index-1 + projection after each step, closure to ``tol``),
        ``partitioning`` (independent coordinates integrated, dependent ones solved),
        ``penalty`` (augmented-Lagrangian penalty, ``penalty=dict(rho, omega, zeta, iterations)``),
        ``index3`` (HHT-alpha implicit integration of the index-3 DAE, see :mod:`.implicit`),
        ``hdca`` (Hamiltonian divide and conquer on joint coordinates and momenta, planar
        chains; states recorded in natural coordinates, see :mod:`.hdca`), ``embedded`` (one
        ODE per independent coordinate of the model's symbolic coordinates, dependent ones from
        the Groebner-basis triangular plan, generated code; states recorded in natural
        coordinates, see :mod:`.embedded`; ``symbolic=`` its coordinate and plan options).
    integrator: ``euler``, ``semi-implicit-euler`` or ``rk4`` (``index3`` has its own);
        ``reference`` (``partitioning`` only): adaptive SciPy ``solve_ivp`` (DOP853, rtol 1e-10)
        on the partitioned ODE, for validation (see :mod:`.reference`).
    solver: the index-1 linear system: ``schur`` (default for a constant, positive definite mass
        matrix, as in natural coordinates: Schur complement ``J M^-1 J^T`` with M inverted once,
        sparse Cholesky, see :mod:`.schur`), ``sparse`` (LU of the whole KKT matrix with a static
        pivot order) or ``dense`` (LAPACK LU; the default for the ``reference`` integrator, whose
        trial states can move far within one adaptive step, beyond what a static sparse pivot
        order tolerates). The dependent block of ``partitioning`` uses sparse LU for ``schur``.
    q0, qd0: initial coordinates (default: the model's initial configuration, assembled) and
        velocities (default zero; made consistent with the velocity constraints).
    """

    def __init__(self, model, *, method: str = "augmented", integrator: str = "rk4",
                 solver: str | None = None, baumgarte: tuple[float, float] = (0.0, 0.0),
                 penalty: dict | None = None, tol: float = 1e-12, max_iter: int = 20,
                 q0=None, qd0=None, t0: float = 0.0, hht_alpha: float = -0.1,
                 influence_limit: float = 1.5, symbolic: dict | None = None):
        if method not in METHODS:
            raise UnknownNameError("dynamics method", method, METHODS)
        _require_used_options(method, integrator=integrator, solver=solver,
                              baumgarte=baumgarte, penalty=penalty, hht_alpha=hht_alpha,
                              influence_limit=influence_limit, symbolic=symbolic)
        self.f = f = formulation_for(model)
        mass = getattr(f, "mass_dense", None)  # formulations with a constant mass matrix
        # its connected blocks where the Schur solver is asked for or may be chosen (None: no
        # constant mass matrix, or not positive definite)
        self._mass_blocks = (mass_blocks(mass) if mass is not None and (
            solver == "schur" or solver is None and integrator != "reference") else None)
        if solver is None:
            solver = ("dense" if integrator == "reference" else
                      "schur" if self._mass_blocks is not None else "sparse")
        if solver not in SOLVERS:
            raise UnknownNameError("linear solver", solver, SOLVERS)
        if solver == "schur" and self._mass_blocks is None:
            raise ModelError("the 'schur' solver needs a constant, positive definite mass matrix "
                             f"(natural coordinates, every coordinate with mass); {f.name!r} on "
                             f"{f.model.name!r} has none: use solver='sparse' or 'dense'")
        self.model = f.model
        self.method, self.solver_name = method, solver
        self.integrator = integrator
        #: the integrator that runs: index3 has its own (HHT-alpha), whatever ``integrator`` says
        self.integrator_run = "hht" if method == "index3" else integrator
        if integrator == "reference" and method != "partitioning":
            raise ModelError("the 'reference' integrator runs on the partitioned ODE: use "
                             f"method='partitioning' (got method={method!r})")
        self.integrator_code = (I.integrator_code(integrator)
                                if method != "index3" and integrator != "reference" else -1)
        check_iteration_settings(tol, max_iter)
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.baumgarte = check_baumgarte(baumgarte)
        self.penalty = _penalty_settings(penalty)
        check_number("hht_alpha", hht_alpha, -np.inf)  # its range: HHT's own check (index3)
        self.hht_alpha = float(hht_alpha)
        check_number("influence_limit", influence_limit, 1.0, above=True)
        self.influence_limit = float(influence_limit)
        self.symbolic = symbolic
        self.t0 = float(t0)
        with functions_defined(self.model, (self.t0,)):  # everything below evaluates at t0
            self._start(q0, qd0)

    def _start(self, q0, qd0):
        """The initial state (assembled, consistent), the system's analysis and its build."""
        f, t0, method = self.f, self.t0, self.method
        self.work = f.make_work()
        q = assemble(f, f.q0 if q0 is None else q0, t0, min(self.tol * 100, 1e-10), self.work,
                     pose_time=POSE_TIME if q0 is None else None)
        rows, redundant = independent_rows(constraint_jacobian(f, q, t0, self.work))
        self.rows, self.redundant = rows, redundant
        self.select = protocol.row_selection(f, rows)  # what the compiled methods evaluate
        if len(redundant):
            warnings.warn(f"{len(redundant)} redundant constraint(s) ignored by the solver: "
                          + ", ".join(f.constraint_names[r] for r in redundant[:6]), stacklevel=3)
        self.dof = f.n_q - len(rows)
        self.mass_pattern = (f.data.mass_indptr, f.data.mass_indices)
        qd = np.zeros(f.n_q) if qd0 is None else coordinates(f, qd0, "qd0").copy()
        self.q_initial, self.qd_initial = q, self._consistent_velocity(q, qd, t0)
        if method in ("penalty", "index3"):
            self._require_regular_mass(q)
        self._build(q, self.qd_initial, t0)
        self._ran = False   # a run advances the state and may rebuild the system (see simulate)
        self.stepping = None  # the Stepper whose run the state is (stepper)
        self._initial = self._keep()

    # ---- construction ----------------------------------------------------------------------
    def _require_regular_mass(self, q):
        """ModelError unless the mass matrix is regular: the penalty method's first iterate
        (qdd0 = M^-1 Q, thesis eq. 2.22) and HHT's start invert it. A body flat or slender in
        some direction has no inertia about it, so natural coordinates can have massless
        directions that only the constraints fix (the Group Equations paper's Stewart platform:
        its terminal plate's normal); the other methods need M regular on the constrained
        motion only."""
        n = self.f.n_q
        indptr, indices = self.mass_pattern
        M = sps.csr_matrix((self._mass(q), indices, indptr), shape=(n, n)).toarray()
        w, V = np.linalg.eigh(0.5 * (M + M.T))
        null = w <= 1e-12 * max(float(np.abs(w).max(initial=0.0)), 1e-300)
        if null.any():
            weight = np.abs(V[:, null]).sum(axis=1)
            names = [self.f.coordinate_names[i] for i in np.argsort(-weight)[:int(null.sum())]]
            raise ModelError(
                f"method {self.method!r} inverts the mass matrix, and that of {self.model.name!r} "
                f"is singular ({int(null.sum())} massless direction(s), mostly along "
                f"{', '.join(names)}): use method 'augmented', 'projection' or 'partitioning', "
                "which need the mass only along the motion the constraints allow",
                location="bodies")

    def _mass(self, q):
        from .evaluate import mass_values
        return mass_values(self.f, q)

    def _consistent_velocity(self, q, qd, t):
        """Least change (M-metric) making J qd + phi_t = 0."""
        from .evaluate import phi_t_values
        if len(self.rows) == 0:
            return qd
        J = constraint_jacobian(self.f, q, t, self.work).toarray()[self.rows]
        M = sps.csr_matrix((self._mass(q), self.mass_pattern[1], self.mass_pattern[0]),
                           shape=(self.f.n_q, self.f.n_q)).toarray()
        r = J @ qd + phi_t_values(self.f, q, t, self.rows)
        KKT = np.block([[M, J.T], [J, np.zeros((len(self.rows),) * 2)]])
        dv = np.linalg.solve(KKT, np.concatenate([np.zeros(self.f.n_q), -r]))[:self.f.n_q]
        return qd + dv

    def _kkt(self, q, t):
        f = self.f
        lay = kkt_layout(*self.mass_pattern, f.data.jac_indptr, f.data.jac_indices, self.rows,
                         f.n_q)
        jac = constraint_jacobian(f, q, t, self.work).data
        kkt = lay.matrix(self._mass(q), jac)
        solver, swork = _solver(self.solver_name, lay.indptr, lay.indices, kkt.data)
        return lay, solver, swork

    def _augmented(self, q, t, project):
        f = self.f
        if self.solver_name == "schur":
            system = schur.build(f, f.mass_dense, self.rows, alpha=self.baumgarte[0],
                                 beta=self.baumgarte[1], project=project, tol=self.tol,
                                 max_iter=self.max_iter, blocks=self._mass_blocks)
            return system, schur.make_work(system, f.make_work())
        lay, solver, swork = self._kkt(q, t)
        n_c = len(self.rows)
        system = Augmented(f.data, self.rows, self.select, f.n_q, lay.mass_pos, lay.jac_src,
                           lay.jac_pos, lay.jacT_pos, solver, self.baumgarte[0], self.baumgarte[1],
                           bool(project), self.tol, self.max_iter)
        work = AugmentedWork(f.make_work(), swork, np.zeros(len(self.mass_pattern[1])),
                             np.zeros(len(f.data.jac_indices)), np.zeros(len(lay.indices)),
                             np.zeros(f.n_q), np.zeros(f.n_q + n_c), np.zeros(n_c),
                             np.zeros(n_c), np.zeros(n_c), np.zeros(n_c))
        return system, work

    def _build(self, q, qd, t):
        f = self.f
        if self.method in ("augmented", "projection"):
            self.system, self.sys_work = self._augmented(q, t, self.method == "projection")
            self.y = np.concatenate([q, qd])
            self.n_pos = f.n_q
        elif self.method == "penalty":
            self._build_penalty(q, t)
            self.y = np.concatenate([q, qd])
            self.n_pos = f.n_q
        elif self.method == "partitioning":
            self._build_partitioned(q, qd, t)
        elif self.method == "hdca":
            from .hdca import dynamics_method
            self.hamiltonian, self.system, self.sys_work, self.y = dynamics_method(f, q, qd)
            self.n_pos = self.hamiltonian.n_j
        elif self.method == "embedded":
            from .embedded import EmbeddedMethod
            self.embedded = EmbeddedMethod(f, q, qd, t, self.integrator, self.tol, self.max_iter,
                                           self.symbolic)
            self.y, self.n_pos = self.embedded.y0.copy(), self.embedded.n_pos
        else:
            from .implicit import HHT
            self.hht = HHT(self, q, qd, t)

    def _build_penalty(self, q, t):
        f = self.f
        p = self.penalty
        mass = self._mass(q)
        ms, mw = _solver(self.solver_name, *self.mass_pattern, mass)
        lay = penalty_layout(*self.mass_pattern, f.data.jac_indptr, f.data.jac_indices,
                             self.rows, f.n_q)
        jac = constraint_jacobian(f, q, t, self.work).data
        pen = np.zeros(len(lay.indices))
        np.add.at(pen, lay.mass_pos, mass)
        np.add.at(pen, lay.pair_pos, jac[lay.pair_a] * p["rho"] * jac[lay.pair_b])
        ps, pw = _solver(self.solver_name, lay.indptr, lay.indices, pen)
        n_c = len(self.rows)
        self.system = Penalty(f.data, self.rows, self.select, f.n_q, ms, lay.mass_pos,
                              lay.pair_row, lay.pair_a, lay.pair_b, lay.pair_pos, ps, float(p["rho"]),
                              float(p["omega"]), float(p["zeta"]), int(p["iterations"]))
        self.sys_work = PenaltyWork(f.make_work(), mw, pw, np.zeros(len(mass)),
                                    np.zeros(len(f.data.jac_indices)), np.zeros(len(pen)),
                                    np.zeros(f.n_q), np.zeros(f.n_q), np.zeros(f.n_q),
                                    np.zeros(n_c), np.zeros(n_c), np.zeros(n_c))

    def _build_partitioned(self, q, qd, t):
        """Dependent coordinates: the pivot columns of a QR with column pivoting of J (the
        best-conditioned square block); the others are integrated. The run re-partitions when
        the influence matrix B = -Phi_d^-1 Phi_i grows beyond ``max(influence_limit, 2 |B_0|)``
        (``|B_0|`` its largest entry for the new partition)."""
        f = self.f
        J = constraint_jacobian(f, q, t, self.work).toarray()[self.rows]
        n_c = len(self.rows)
        if n_c:
            _, _, piv = sla.qr(J, mode="economic", pivoting=True)
            dep = np.sort(piv[:n_c])
        else:
            dep = np.zeros(0, np.int64)
        ind = np.setdiff1d(np.arange(f.n_q), dep)
        self.independent, self.dependent = ind, dep
        aug, aug_work = self._augmented(q, t, False)
        plan = K.make_plan(f, self.rows, dep)
        pw = K.make_plan_work(plan, len(f.data.jac_indices))
        block = extract(f.data.jac_indptr, f.data.jac_indices, self.rows, dep)
        jac = constraint_jacobian(f, q, t, self.work).data
        if self.solver_name == "dense":  # ("schur" applies to the index-1 system only)
            ds, dw = dense_lu(block)
        else:
            ds, dw = sparse_analyse(block, jac)
        B0 = np.linalg.solve(J[:, dep], J[:, ind]) if n_c else np.zeros((0, 0))
        limit = max(self.influence_limit, 2.0 * float(np.abs(B0).max(initial=0.0)))
        self.system = Partitioned(aug, ind, plan, ds, self.tol, self.max_iter, limit)
        self.sys_work = PartitionedWork(aug_work, pw, dw, q.copy(), qd.copy(),
                                        np.zeros(2 * f.n_q), np.zeros(2 * f.n_q),
                                        np.array([float(t), 0.0]))
        self.y = np.concatenate([q[ind], qd[ind]])
        self.n_pos = len(ind)

    def acceleration_evaluator(self, q=None):
        """An index-1 (augmented, no Baumgarte) system on the full state [q; qd]: exact
        constrained accelerations of any state, whatever method produced it. The sparse solver
        is analysed at ``q`` (default: the initial configuration)."""
        q = self.q_initial if q is None else q
        saved = self.baumgarte
        self.baumgarte = (0.0, 0.0)
        try:
            return self._augmented(q, self.t0, False)
        finally:
            self.baumgarte = saved

    def _build_key(self) -> tuple:
        """Everything ``_build`` reads at the initial state (the attributes are public)."""
        return (self.method, self.solver_name, self.baumgarte, tuple(sorted(self.penalty.items())),
                self.tol, self.max_iter, self.influence_limit, self.t0,
                self.q_initial.tobytes(), self.qd_initial.tobytes())

    def _keep(self):
        """(key, the built objects, (array, its values) of each writeable array in them) for
        :meth:`_initial_state`, or None."""
        if self.method not in KEPT_METHODS:
            return None
        built = {n: getattr(self, n) for n in BUILT if hasattr(self, n)}
        inputs = self.model.functions.inputs  # set from outside: never reset
        return self._build_key(), built, [(a, a.copy()) for a in _writeable_arrays(built)
                                          if a is not inputs]

    def _initial_state(self):
        """The state ``_build`` gives at the initial state: the objects built first, their
        writeable arrays reset in place to the values they had then, unless something
        ``_build`` reads has changed since. In place, because new arrays could differ in type
        (layout, read-only flag) and make Numba compile the whole run again. Building again
        costs more than short runs (the Gough-Stewart's Schur analysis 14 ms, partitioning's
        60 ms of orderings and generated solver code, against 1 ms for 0.01 s simulated)."""
        if self._initial is not None and self._initial[0] == self._build_key():
            _, built, arrays = self._initial
            for live, values in arrays:
                live[...] = values
            for name, value in built.items():
                setattr(self, name, value)
            return
        self._build(self.q_initial.copy(), self.qd_initial.copy(), self.t0)
        self._initial = self._keep()

    # ---- running ---------------------------------------------------------------------------------
    def simulate(self, t_end: float, dt: float, *, record_every: int = 1, progress=None):
        """Run from the initial state to ``t_end`` with step ``dt`` (compiled whole-run loop).

        Every call starts from the initial state, as a new ``Dynamics`` would: a run advances
        the state in place and may re-partition or re-analyse the system on the way, so a
        later call first rebuilds them at the initial state (outside the timed run).
        ``progress``: True for a progress bar, or a callable ``progress(done, total)``."""
        from .results import DynamicResults
        n_steps = run_steps(self.t0, t_end, dt)
        record_every = record_interval(record_every, n_steps, self.t0, dt)
        require_positive_distances(self.model, lambda: self.t0 + dt * np.arange(n_steps + 1))
        if self._ran:
            self._initial_state()
        self._ran, self._dt, self.stepping = True, dt, None
        n_rec = n_steps // record_every + 1
        out = resident_zeros((n_rec, 2 * self.f.n_q))  # mapped before the timed run
        self.reanalyses = 0
        # one BLAS thread: the dense LAPACK calls per step (solver="dense", index3) are small,
        # and OpenBLAS threads spinning against a loaded machine made them 18x slower in wall
        # time (natural Gough-Stewart, dense Baumgarte: 39 ms per step at 2.2 ms of CPU)
        report = reporting(progress, f"{self.model.name}: {self.method}")
        with blas_threads(1), report as progress:
            if self.method == "index3":
                wall, cpu = self.hht.run(n_steps, dt, record_every, out, progress)
            elif self.integrator == "reference":
                from .reference import run_reference
                wall, cpu = run_reference(self, n_steps, dt, record_every, out, progress)
            else:
                wall, cpu = self._run_explicit(n_steps, dt, record_every, out, progress)
        times = self.t0 + dt * record_every * np.arange(n_rec)
        finite = np.isfinite(out).all(axis=1)   # one pass over the records (they may be GBs)
        if not finite.all():  # a NaN load makes every state NaN within its step
            k = int(np.argmin(finite))
            self._require_defined(times[max(k - 1, 0)], record_every)
            I.check_finite(out, times, self.integrator_run, dt)
        return DynamicResults(self, times, out, wall, n_steps, dt, cpu=cpu)

    def _run_explicit(self, n_steps, dt, record_every, out, progress):
        # progress every 1 %, but at least 2000 steps per compiled call: each call costs
        # microseconds (the 5-step chunks of a short run doubled the four-bar's us per step)
        per_call = max(n_steps // 100, 2000)
        chunk = n_steps if not progress else max(record_every,
                                                 per_call // record_every * record_every)
        done, last_failure, watch = 0, -1, Stopwatch()
        advance = self._advancer(dt)
        advance(self.y.copy(), self.t0, 0, out[:1].copy(), record_every)  # load (or compile)
        row = np.empty((2, out.shape[1]))
        while done < n_steps:
            # after a retried failure, ``done`` is inside a record interval: finish the interval
            # in a row of its own (its last state is the interval's record), then the schedule
            # resumes
            rest = -done % record_every
            count = min(rest or chunk, n_steps - done)
            t_start = self.t0 + done * dt
            stages = lambda: I.stage_times(t_start, dt, count)  # noqa: E731 (on failure only)
            with watch.timing(), functions_defined(self.model, stages):
                if rest:
                    st, k = advance(self.y, t_start, count, row, rest)
                else:
                    st, k = advance(self.y, t_start, count, out[done // record_every:],
                                    record_every)
            if st != 0:
                done = last_failure = self._recover(st, done + k, last_failure)
                continue
            done += count
            if rest and count == rest:
                out[done // record_every] = row[1]
            if progress:
                progress(done, n_steps)
        wall, cpu = watch.wall, watch.cpu
        if self.method == "embedded":   # partitions derived on first use are not the run's time
            wall, cpu = wall - self.embedded.derivation[0], cpu - self.embedded.derivation[1]
        return wall, cpu

    def _advancer(self, dt):
        """``advance(y, t_start, count, rec, every) -> (status, steps done)``: ``count`` steps
        of ``dt`` of the compiled run loop (explicit integrators) from the state ``y`` at
        ``t_start``, in place, recording every ``every``-th state in ``rec[1:]`` (``rec[0]``:
        the start; full [q; qd])."""
        if self.method == "embedded":   # generated run loop (kinedyn.symbolic)
            return lambda y, t_start, count, rec, every: self.embedded.run(
                y, t_start, dt, count, every, rec)
        scratch = I.make_scratch(len(self.y))
        second_order = self.method != "hdca"  # HDCA integrates [q; p], not [q; qd]
        resolved = [None, None, None]  # the system and work it was resolved for, the function

        def advance(y, t_start, count, rec, every):
            args = (self.system, self.sys_work, y, float(t_start), dt, int(count),
                    self.integrator_code, int(self.n_pos), second_order, int(every), rec, scratch)
            if resolved[0] is not self.system or resolved[1] is not self.sys_work:
                # (again after a re-analysis): this call by the dispatcher, the next ones not
                result, run = resolved_call(I.integrate_fixed, args)
                resolved[:] = self.system, self.sys_work, run
                return result
            return resolved[2](*args)
        return advance

    def _recover(self, status, failed: int, last_failure: int) -> int:
        """After step ``failed`` (counted from t0) stopped a run with ``status``, with
        ``self.y`` the state at its start: re-analyse the pivot order or re-partition there
        (:meth:`_rebuild_from_state`), so that the run goes on from it; returns ``failed``.
        HDCA and embedded have nothing to redo, and a failure no later than the last one
        retried is raised, so a run always advances (re-partitioning at an earlier recorded
        state could alternate between two partitions forever)."""
        t = self.t0 + failed * self._dt
        if failed <= last_failure or self.method in ("hdca", "embedded"):
            self._raise(status, self.y, t)
        self._rebuild_from_state(self.y, t, status)
        self.reanalyses += 1
        return failed

    def stepper(self, dt: float, *, realtime: bool = False):
        """A :class:`~.stepper.Stepper`: this run advanced step by step from outside, from the
        initial state, with the model's inputs set between steps (real-time control, hardware
        in the loop). ``realtime``: each :meth:`~.stepper.Stepper.step` first waits until the
        wall clock reaches its simulated time."""
        from .stepper import Stepper
        return Stepper(self, dt, realtime=realtime)

    def _full_state(self, y, t):
        """Full (q, qd) of the integrator state y at time t."""
        n = self.f.n_q
        if self.method == "partitioning":
            return self._complete_dense(y, t)
        return y[:n].copy(), y[n:].copy()

    def _complete_dense(self, y, t):
        """Dependent positions (dense Newton) and velocities of the partitioned state y: the
        robust path taken when a step failed, whatever state the compiled work was left in."""
        from .evaluate import phi_t_values
        f, ind, dep, rows = self.f, self.independent, self.dependent, self.rows
        ni = len(ind)
        q, qd = self.sys_work.q.copy(), np.zeros(f.n_q)
        q[ind], qd[ind] = y[:ni], y[ni:]
        for _ in range(self.max_iter):
            phi = constraint_values(f, q, t, self.work)[rows]
            J = constraint_jacobian(f, q, t, self.work).toarray()[rows]
            if np.abs(phi).max(initial=0.0) <= self.tol:
                break
            q[dep] -= np.linalg.solve(J[:, dep], phi)
        rhs = -phi_t_values(f, q, t, rows) - J[:, ind] @ qd[ind]
        qd[dep] = np.linalg.solve(J[:, dep], rhs)
        return q, qd

    def _require_defined(self, t, steps=1):
        """ModelError if a function of time was undefined in the ``steps`` steps from t or in
        the step before (NaN loads make the methods fail with no other sign, or in SciPy's QR
        at a re-partitioning; the embedded method reports a step at its end)."""
        k = max(int(round((t - self.t0) / self._dt)) - 1, 0)  # as the runs count their times
        why = undefined(self.model, I.stage_times(self.t0 + k * self._dt, self._dt,
                                                  steps + (t > self.t0)))
        if why is not None:
            raise ModelError(why)

    def _rebuild_from_state(self, y, t, status):
        self._require_defined(t)
        q, qd = self._full_state(y, t)
        try:
            self._build(q, qd, t)
        except (RuntimeError, np.linalg.LinAlgError) as e:
            if "singular" not in str(e).lower():  # (SuperLU's and LAPACK's words for it)
                raise
            self._raise(K.SINGULAR, y, t)  # a matrix singular at the failed step's start
        if status == REPARTITION:
            self.repartitions = getattr(self, "repartitions", 0) + 1

    def _raise(self, st, y, t):
        self._require_defined(t)
        if self.method == "embedded":
            raise self.embedded.failure(t)
        if self.method == "hdca":
            raise SolverError("HDCA: a joint constraint matrix became singular (C of eq. 33 or "
                              "eta of eq. 43)", time=t,
                              constraints=list(self.hamiltonian.joint_names))
        q, qd = self._full_state(y, t)
        names = self.f.constraint_names
        J = constraint_jacobian(self.f, q, t, self.work).toarray()[self.rows]
        if not (np.isfinite(q).all() and np.isfinite(qd).all() and np.isfinite(J).all()):
            raise I.diverged(self.integrator_run, self._dt, t, " (the step failed from there)")
        phi = constraint_values(self.f, q, t, self.work)
        size = I.mechanism_size(self.f) ** 2
        if np.abs(phi).max(initial=0.0) > size:
            # constraints violated by more than the mechanism's own size (the largest initial
            # coordinate squared: rigid-body constraints are quadratic in lengths): it came
            # apart, and a singular matrix or a failed Newton iteration there is its symptom
            k = int(np.argmax(np.abs(phi)))
            raise I.diverged(self.integrator_run, self._dt, t, " (the step failed from there)",
                             f"the mechanism came apart: constraint {names[k]} is violated by "
                             f"{abs(phi[k]):.3g}, the coordinates reach {np.abs(q).max():.3g} "
                             f"and the velocities {np.abs(qd).max():.3g}")
        if st == REPARTITION:  # again, at the step just re-partitioned
            dep = ", ".join(self.f.coordinate_names[c] for c in self.dependent)
            raise SolverError(
                "coordinate partitioning: the partition chosen at the start of this step "
                f"(dependent {dep}) became ill-conditioned within the step too (its influence "
                "matrix |B| grew past its limit); the mechanism moves too far in one step "
                f"(velocities up to {np.abs(qd).max():.3g}): reduce the step or use RK4",
                time=t)
        if st in (K.SINGULAR, K.REPIVOT):
            rows = self.rows[singular_rows(J)] if len(self.rows) else []
            raise SolverError("the system matrix became singular (a singular configuration of "
                              "the mechanism or a constraint set that lost rank)", time=t,
                              constraints=[names[r] for r in rows])
        raise SolverError(f"the {self.method} method failed (status {st}): Newton-Raphson on the "
                          "constraints did not converge; reduce the step", time=t,
                          constraints=[names[r] for r in worst(phi)])
