"""Embedded dynamics: one ODE per independent coordinate (thesis section 2.1.5, 3.4.1).

With q = (q_d, q_i) and B = [-Phi_d^-1 Phi_i; I] (eq. 2.24), the velocities are
q' = B q_i' + C (2.26), the accelerations q'' = B q_i'' + (B' q_i' + C') (2.27), and projecting
M q'' + Phi_q^T lam = F onto B eliminates the multipliers:

    (B^T M B) q_i'' = B^T (F - M (B' q_i' + C'))                          (2.28)

B' q_i' + C' is the acceleration with q_i'' = 0, i.e. Phi_d z_d = gamma, z_i = 0. M and F are
generated symbolically in the planar joint/mixed coordinates (M = sum m J_c^T J_c + I J_w^T J_w,
F = gravity + applied forces - sum m J_c^T (J_c' q')), with global CSE; Phi_d, B and B^T M B
are formed and LU-solved numerically at run time -- never a symbolic inverse of M. The dependent
coordinates come from the triangular plan at every evaluation (or its Newton fall-back).
Only q_i and q_i' are integrated (explicit Euler as in the thesis, or RK4).
"""
from __future__ import annotations

import inspect
import time as _time

import numpy as np
import sympy as sp

from ..errors import ModelError, SingularConfigurationError, SolverError, run_steps
from ..io.results import Results
from ..model.compiled import FRAME_CODE, CompiledModel
from .analysis import _channels, _known, _planar_options, coordinates
from .codegen import Kernel
from .equations import T, PlanarEquations, _function_expr, _vec, require_generated_loads
from .spatial import spatial_mass_and_forces
from .blockwise import blockwise_kernels, uncoupled
from .projection import projection_source
from .kernels import _reads, coordinate_symbols, generate, trig_symbols
from .triangular import make_plan

#: the keyword options of the plan (:func:`.triangular.make_plan`) that the embedded dynamics
#: pass on
PLAN_OPTIONS = tuple(name for name, p in inspect.signature(make_plan).parameters.items()
                     if p.kind == p.KEYWORD_ONLY and name != "tol")  # (tol: the dynamics')

INTEGRATORS = {"euler": 0, "rk4": 1, "semi-implicit-euler": 2}


def _clock() -> np.ndarray:
    """(wall, CPU of this thread) in seconds, to subtract."""
    return np.array([_time.perf_counter(), _time.thread_time()])


def planar_mass_and_forces(eqs: PlanarEquations):
    """M(q) (n x n), F(q, q', t) (n) and the potential energy V(q) of a planar model."""
    m = eqs.model
    q = sp.Matrix(eqs.q)
    qd = sp.Matrix([sp.Symbol(f"{c.symbol.name}_d", real=True) for c in eqs.coordinates])
    n = len(q)
    M = sp.zeros(n, n)
    F = sp.zeros(n, 1)
    V = sp.Integer(0)
    g = _vec(m.gravity, eqs.tol)
    require_generated_loads(m)
    for b in range(1, m.n_body):
        mass = sp.nsimplify(float(m.body_mass[b]), rational=True) if m.body_mass[b] else 0
        inertia = float(m.body_inertia[b])
        rc = eqs.point(b, m.body_com[b])
        Jc = rc.jacobian(q)
        Jw = sp.Matrix([eqs.body_angle[b]]).jacobian(q)
        M += mass * (Jc.T * Jc) + sp.Float(inertia) * (Jw.T * Jw)
        acc_v = (Jc * qd).jacobian(q) * qd                # J_c' q'
        F += mass * Jc.T * (g - acc_v)
        V -= mass * (g.T * rc)[0]
    for k in range(len(m.joint_force_name)):
        j, comp = int(m.joint_force_joint[k]), int(m.joint_force_component[k])
        coord = eqs.joint_coordinate(j, comp)
        F += _function_expr(m, int(m.joint_force_function[k])) * sp.Matrix([coord]).jacobian(q).T
    for k in range(len(m.point_force_name)):
        b, p = int(m.point_force_body[k]), int(m.point_force_point[k])
        f = sp.Matrix([_function_expr(m, int(fid)) for fid in m.point_force_function[k]])
        if int(m.point_force_frame[k]) == FRAME_CODE["body"]:
            f = eqs.body_R[b] * f
        F += eqs.point(b, m.point_local[p]).jacobian(q).T * f
    return M, F, V, qd


class EmbeddedDynamics:
    """Forward dynamics by embedding with a triangular (or block-triangular) position solver.

    model: CompiledModel of a planar mechanism (``absolute``: bodies in absolute coordinates;
    ``joint_angles``, ``cut``: relative joint angles and loop-closing joints, see
    :func:`~.equations.planar_coordinates`);
    independent: coordinate names (default: the first f in traversal order); integrator:
    ``euler`` (thesis) or ``rk4``; initial: {coordinate name: start value} (the dependent
    ones follow from the plan); qd0: full initial velocities (made consistent); position_solver
    ``triangular`` | ``blocks`` | ``newton`` (the Newton baselines on the same generated code);
    backend ``numba`` | ``c`` (kernels as C through the system compiler); blockwise: the
    per-block evaluation of :mod:`.blockwise` where the plan allows it (else the general block
    LU); baselines: also generate the general Phi_q, gamma, M, F kernels that
    :mod:`.stabilized` runs on (off for ``Dynamics(method="embedded")``); record:
    ``record(eqs, qd_symbols, q0) -> [(target, expr)]``, outputs generated as
    ``record_outputs(q, qd, out)`` (the natural-coordinate map of
    ``Dynamics(method="embedded")``). Plan options go to :func:`make_plan`.

    repartition: switch the independent coordinates during a run (generalized coordinate
    partitioning) instead of stopping where they reach a limit position. The compiled run
    watches the influence matrix B_d = -Phi_d^-1 Phi_i; when its largest entry exceeds
    ``max(influence_limit, 2 |B_0|)`` (|B_0|: at the last choice) the run stops at that
    recorded state, the single exchange of an independent and a dependent coordinate with the
    smallest |B_d| there is taken if it at least halves it, and the run goes on in that
    partition's own plan and kernels (derived and compiled on first use, then kept). The same
    criterion as ``Dynamics(method="partitioning")``; off by default, as in the thesis.
    """

    def __init__(self, model: CompiledModel, *, absolute=(), joint_angles=False, cut=(), independent=None,
                 integrator: str = "rk4", position_solver: str = "triangular",
                 tol: float = 1e-12, max_iter: int = 20, initial=None, qd0=None,
                 backend: str = "numba", blockwise: bool = True, baselines: bool = True,
                 record=None, warm_up: bool = True, repartition: bool = False,
                 influence_limit: float = 1.5, **plan_options):
        from .analysis import POSITION_SOLVERS
        unknown = sorted(set(plan_options) - set(PLAN_OPTIONS))
        if unknown:
            known = sorted(set(inspect.signature(EmbeddedDynamics).parameters) - {"model",
                                                                                  "plan_options"})
            raise ModelError(f"unknown embedded-dynamics option(s) "
                             f"{', '.join(map(repr, unknown))}; the options are "
                             f"{', '.join(known)} and the plan's {', '.join(PLAN_OPTIONS)}")
        if not influence_limit > 0:
            raise ModelError(f"influence_limit must be > 0, got {influence_limit!r}")
        # what a partition of the same mechanism is built from (see _partition)
        self._options = dict(absolute=absolute, joint_angles=joint_angles, cut=cut,
                             integrator=integrator, position_solver=position_solver, tol=tol,
                             max_iter=max_iter, backend=backend, blockwise=blockwise,
                             baselines=baselines, record=record, warm_up=warm_up,
                             **plan_options)
        self.model, self.repartition = model, bool(repartition)
        self.influence_limit = float(influence_limit)
        _known("integrator", integrator, INTEGRATORS)
        _known("position solver", position_solver, POSITION_SOLVERS)
        eqs = coordinates(model, absolute=absolute, independent=independent,
                          **_planar_options(joint_angles, cut))
        if eqs.inputs:
            raise ModelError(f"{model.name}: embedded dynamics needs a model without drivers "
                             "(drivers fix the independent coordinates; use kinematics)")
        for name, value in (initial or {}).items():  # independent coordinates' start values
            eqs.q0[eqs.index(name)] = float(value)
        self.system = eqs
        self._partitions: dict[tuple[str, ...], EmbeddedDynamics] = {}   # see _partition
        self.derivation_seconds = np.zeros(2)   # wall, CPU s building those partitions so far
        self.integrator, self.mode = integrator, POSITION_SOLVERS[position_solver]
        self.position_solver = position_solver
        self.tol, self.max_iter = float(tol), int(max_iter)
        start = _time.perf_counter()
        self.plan = make_plan(eqs, **plan_options)
        self.plan_seconds = _time.perf_counter() - start
        start = _time.perf_counter()
        M, F, V, qd_sym = (spatial_mass_and_forces if model.dim == 3 else planar_mass_and_forces)(eqs)
        qs, qds, sub = coordinate_symbols(eqs)
        sub.update({a: b for a, b in zip(qd_sym, qds)})
        tt = sp.Symbol("t")
        sub[T] = tt
        n = eqs.n_q
        Ms = M.xreplace(sub)
        kernels = [Kernel("potential", ("q",), _reads(qs), [("V", V.xreplace(sub))], returns="V")]
        if record is not None:   # extra recorded outputs (e.g. natural coordinates)
            out = [(t_, e.xreplace(sub)) for t_, e in record(eqs, qd_sym, self.plan.solve(eqs.q0))]
            kernels.append(Kernel("record_outputs", ("q", "qd", "out"), _reads(qs, qds), out))
        Jq = sp.Matrix([e.xreplace(sub) for e in eqs.phi]).jacobian(qs)
        self.blockwise = blockwise and uncoupled(eqs, self.plan, Jq)
        source = ""
        if self.blockwise:          # per block (leg): small inverses, no general block solve
            extra, source = blockwise_kernels(eqs, self.plan, M, F, qs, qds, sub, _reads(qs, qds))
            kernels += extra
        if baselines or not self.blockwise:   # the general kernels (also for .stabilized)
            trig, rs = trig_symbols(eqs, qs)       # sines and cosines from trig(q, sc)
            rs.update(_reads(qs, qds))
            kernels += [
                Kernel("mass", ("q", "sc", "M"), rs,
                       [(f"M[{i}, {j}]", Ms[i, j].xreplace(trig)) for i in range(n)
                        for j in range(n) if Ms[i, j] != 0]),
                Kernel("forces", ("q", "qd", "sc", "t", "F"), rs,
                       [(f"F[{i}]", sp.expand(F[i].xreplace(sub)).xreplace(trig))
                        for i in range(n)])]
            nz = [(i, j) for i in range(n) for j in range(n) if Ms[i, j] != 0]
            source += (f"MNZ_I = np.array({[i for i, _ in nz]}, dtype=np.int64)\n"
                       f"MNZ_J = np.array({[j for _, j in nz]}, dtype=np.int64)\n" + _SOLVE_SMALL)
        if not self.blockwise:
            source += _GENERAL + "\n\n" + projection_source(
                n, eqs.independent, [(i, j, f"M[{i}, {j}]") for i, j in nz])
        if record is None:
            source += _NO_RECORD
        self.generated = generate(eqs, self.plan, name=f"{model.name}_embedded",
                                  with_gamma=baselines or not self.blockwise, extra_kernels=kernels,
                                  extra_source=source + _EMBEDDED, backend=backend)
        self.backend = self.generated.module.BACKEND
        self.generation_seconds = _time.perf_counter() - start
        self.q_initial = self.plan.solve(eqs.q0)
        self.qd_initial = np.zeros(n) if qd0 is None else np.asarray(qd0, float)
        mod = self.generated.module
        q, qd = self.q_initial.copy(), self.qd_initial.copy()
        mod.complete(q, qd, 0.0, 0, 1e-12, 20)   # consistent dependent velocities
        self.qd_initial = qd
        if warm_up:
            self.simulate(0.0, 1e-3, _warm=True)

    @property
    def operations(self) -> dict:
        return self.generated.operations

    def influences(self, q, t: float = 0.0) -> list[tuple[float, float, tuple[str, ...]]]:
        """(largest |B_d|, sigma_min/sigma_max of Phi_d, independent names) at state q for this
        partition (first) and every exchange of one independent for one dependent coordinate
        (a singular Phi_d: infinite influence, conditioning 0)."""
        sys_ = self.system
        J = sys_.jacobian(q, t)
        names = [c.name for c in sys_.coordinates]
        ind = list(sys_.independent)
        choices = [ind] + [sorted(set(ind) - {a} | {b}) for a in ind for b in sys_.dependent]
        out = []
        for new in choices:
            dep = [i for i in range(sys_.n_q) if i not in new]
            sv = np.linalg.svd(J[:, dep], compute_uv=False)
            cond = sv[-1] / sv[0] if sv[0] > 0 else 0.0
            gain = np.abs(np.linalg.solve(J[:, dep], J[:, new])).max() if cond > 1e-14 else np.inf
            out.append((float(gain), float(cond), tuple(names[i] for i in new)))
        return out

    def _failure(self, q, t_good: float, t_fail: float) -> SolverError:
        """Why the run stopped: Phi_d's conditioning at the last good state, the constraints
        of its weakest direction, and the best other choice of one independent coordinate.

        A Phi_d that becomes singular while Phi_q keeps full rank means the independent
        coordinate(s) reach a limit position -- the end of their assemblable range, through
        which the mechanism moves on while they reverse (the free Stephenson-III's beta1 at
        t = 0.375 s) -- so an embedding in them cannot continue past it."""
        sys_ = self.system
        J = sys_.jacobian(q, t_good)
        weak = np.linalg.svd(J[:, list(sys_.dependent)])[0][:, -1]   # the degenerate combination
        full = np.linalg.svd(J, compute_uv=False)
        here, *others = self.influences(q, t_good)
        best = max(others, key=lambda o: o[1])
        worst = [sys_.constraint_names[i] for i in np.argsort(-np.abs(weak))[:4]]
        text = (f"{sys_.name}: the {self.position_solver} position solver failed in the embedded "
                f"dynamics (last good state t = {t_good:.6g} s: cond. of Phi_d "
                f"sigma_min/sigma_max = {here[1]:.2g}, of Phi_q {full[-1] / full[0]:.2g})")
        if here[1] < 1e-3 and full[-1] / full[0] > 1e-2:
            text += (f"; the independent coordinate(s) {list(here[2])} reach a limit "
                     "position (end of their assemblable range, which the motion passes while "
                     "they reverse), so an embedding in them cannot continue; at this state "
                     f"independent={list(best[2])} gives {best[1]:.2g} (repartition=True "
                     "switches during the run)")
            return SingularConfigurationError(text, time=t_fail, constraints=worst)
        return SolverError(text + f"; best other choice here: independent={list(best[2])} "
                           f"({best[1]:.2g})", time=t_fail, constraints=worst)

    def _partition(self, names: tuple[str, ...], q) -> "EmbeddedDynamics":
        """The same mechanism embedded in the independent coordinates ``names``, its branches
        chosen at state q (built on first use, then kept: the closed forms then track the
        nearest root from whatever state a later switch starts at). Building one adds its wall
        and CPU time to ``derivation_seconds``."""
        self._partitions.setdefault(self.independent_names, self)
        if names not in self._partitions:
            clock = _clock()
            start = dict(zip((c.name for c in self.system.coordinates), map(float, q)))
            self._partitions[names] = EmbeddedDynamics(
                self.model, independent=list(names), initial=start, **self._options)
            self.derivation_seconds += _clock() - clock
        return self._partitions[names]

    @property
    def residual_limit(self) -> float:
        """The largest constraint residual a step may leave with the triangular position
        solver (a closed form that lost its real root returns wrong positions, not an error);
        infinite with Newton, which checks its own convergence."""
        if self.mode != 0:
            return np.inf
        return 1e-8 if self.plan.fully_triangular else max(1e-8, 100 * self.tol)

    @property
    def independent_names(self) -> tuple[str, ...]:
        return tuple(self.system.coordinates[i].name for i in self.system.independent)

    def simulate(self, t_end: float, dt: float, *, integrator: str | None = None,
                 repartition: bool | None = None, _warm: bool = False) -> Results:
        """Fixed-step run; channels as :class:`TriangularKinematics` plus ``energy``; with
        ``repartition`` the summary lists the partitions used and when they began.
        ``integrator`` and ``repartition`` override the constructor's for this run (both are
        run-time choices of the generated code: no new derivation)."""
        integrator = self.integrator if integrator is None else integrator
        _known("integrator", integrator, INTEGRATORS)
        repartition = self.repartition if repartition is None else bool(repartition)
        n_steps = 0 if _warm else run_steps(0.0, t_end, dt)  # (the warm-up: no step)
        times = dt * np.arange(n_steps + 1)
        n = self.system.n_q
        Q, QD, QDD = (np.zeros((n_steps + 1, n)) for _ in range(3))
        res, energy = np.zeros(n_steps + 1), np.zeros(n_steps + 1)
        it = np.zeros(n_steps + 1, np.int64)
        q, qd = self.q_initial.copy(), self.qd_initial.copy()
        part, start, wall, cpu, limit = self, 0, 0.0, 0.0, np.inf
        if repartition:                      # from the best partition at the start, too
            part, limit = self._choose(self, q, 0.0, False)
        partitions = [{"t": 0.0, "independent": list(part.independent_names)}]
        while True:
            status, k, seconds = part._run(integrator, times[start:], q, qd, Q[start:],
                                           QD[start:], QDD[start:], res[start:],
                                           energy[start:], it[start:], limit)
            k += start
            wall, cpu = wall + seconds[0], cpu + seconds[1]
            if status == 0:
                break
            at = k if status == 2 else k - 1           # the last recorded, good state
            if status == 1 and (not repartition or at <= start):
                raise part._failure(Q[max(at, 0)], float(times[max(at, 0)]), float(times[k]))
            chosen, limit = self._choose(part, Q[at], float(times[at]), status == 1)
            if chosen is None:
                raise part._failure(Q[at], float(times[at]), float(times[k]))
            if chosen is not part:
                partitions.append({"t": float(times[at]),
                                   "independent": list(chosen.independent_names)})
            part, q, qd, start = chosen, Q[at].copy(), QD[at].copy(), at
        ch = _channels(self.system, Q, QD, QDD, res, it)
        ch["energy"] = energy
        summary = {"model": self.system.name, "analysis": "dynamics", "method": "embedded",
                   "integrator": integrator, "position_solver": self.position_solver,
                   "dt": dt, "steps": n_steps, "wall_time_s": wall,
                   "ms_per_simulated_second": wall * 1e3 / max(t_end, 1e-300),
                   "cpu_ms_per_simulated_second": cpu * 1e3 / max(t_end, 1e-300),
                   "max_residual": {"position": float(res.max())},
                   "energy_drift": float(np.abs(energy - energy[0]).max()),
                   "plan": self.plan.report(), "plan_seconds": self.plan_seconds,
                   "generation_seconds": self.generation_seconds,
                   "independent": list(self.independent_names)}
        if repartition:
            summary["partitions"] = partitions
        return Results(times, ch, summary)

    def _choose(self, part, q, t: float, failed: bool):
        """(partition, influence limit) to go on with from state q at t, after ``part``
        exceeded its limit (or ``failed`` there): the single exchange with the smallest
        |B_d| if it at least halves part's -- after a failure any other that is regular
        there (a closed form can fail where Phi_d is fine: a root lost where two roots nearly
        merge) --, else part with a doubled limit, or None after a failure."""
        here, *others = part.influences(q, t)
        best = min(others, default=(np.inf, 0.0, ()))
        if best[0] <= 0.5 * here[0] or (failed and best[0] < np.inf):
            return self._partition(best[2], q), max(self.influence_limit, 2.0 * best[0])
        if failed:
            return None, np.inf
        return part, max(self.influence_limit, 2.0 * here[0])

    def _run(self, integrator, times, q, qd, Q, QD, QDD, res, energy, it, max_influence):
        """One compiled run of this partition over ``times`` from the full state (q, qd):
        (status, step, (wall s, CPU s)) as ``run_embedded``; a closed form that lost its real
        root (residual > 1e-8 where the plan is exact) counts as a failure of that step."""
        wall, cpu = _time.perf_counter(), _time.thread_time()
        mod = self.generated.module     # the workspaces' owners live here for the run
        ws, W = mod.workspace(), mod.dep_workspace()
        scratch = np.zeros((9, max(2 * len(self.system.independent), self.system.n_q)))
        # a Newton block that meets a NaN (a closed form lost its root) or a singular step
        # matrix fails its step (status 1), as any other failed evaluation
        status, k = mod.run_embedded(INTEGRATORS[integrator], self.mode, times, q, qd, Q, QD, QDD,
                                     res, energy, it, self.tol, self.max_iter, max_influence, ws,
                                     W, scratch)
        seconds = (_time.perf_counter() - wall, _time.thread_time() - cpu)
        bad = np.flatnonzero(~(res[:k + 1] <= self.residual_limit)) if self.mode == 0 else ()
        if len(bad):
            status, k = 1, int(bad[0])
        return status, k, seconds


_SOLVE_SMALL = '''
@njit(cache=True)
def solve_small(A, b):
    """A x = b in place (Gaussian elimination with partial pivoting; b becomes x)."""
    n = b.shape[0]
    for c in range(n):
        p = c
        for r in range(c + 1, n):
            if abs(A[r, c]) > abs(A[p, c]):
                p = r
        if p != c:
            for k in range(n):
                x = A[c, k]
                A[c, k] = A[p, k]
                A[p, k] = x
            x = b[c]
            b[c] = b[p]
            b[p] = x
        for r in range(c + 1, n):
            f = A[r, c] / A[c, c]
            for k in range(c, n):
                A[r, k] -= f * A[c, k]
            b[r] -= f * b[c]
    for r in range(n - 1, -1, -1):
        for k in range(r + 1, n):
            b[r] -= A[r, k] * b[k]
        b[r] /= A[r, r]
'''

_GENERAL = '''
B_SLOT_ = 4   # where workspace() keeps B (influence())
P_SLOT_ = 10   # and position_workspace(), whose [5] holds the sines and cosines (residual())


@njit(cache=True)
def workspace():
    nf = IND.shape[0]
    return (np.zeros((NC_, NQ_)), np.zeros(NC_), np.zeros((NC_, nf + 1)), np.zeros((NQ_, nf + 1)),
            np.zeros((NQ_, nf)), np.zeros(NQ_), np.zeros((NQ_, NQ_)), np.zeros(NQ_),
            np.zeros((nf, nf)), np.zeros(nf), position_workspace())


@inlined
def embedded_rhs(mode, q, qd, t, tol, max_iter, qi_dot, qi_ddot, qdd, ws, W):
    """(B^T M B) qdd_i = B^T (F - M z) (eq. 2.28); q, qd: independent parts in, full out.

    Phi_d is factorised block by block (the plan's loops / legs; kinedyn.symbolic.blocksolve
    or LU) once and used for qd_d, the columns of B and z = B' qd_i + C'; M is used through its
    nonzero pattern."""
    J, pt, R, X, B, z, M, F, A, rhs, P = ws
    sc = P[5]
    it = position(mode, q, t, tol, max_iter, P)
    if it < 0:
        return -1
    trig_after(mode, q, sc)                     # read by every kernel below
    if not velocity(q, qd, sc, t, J, pt, W):      # numeric, never a symbolic inverse
        return -1
    nf = IND.shape[0]
    for r in range(NC_):                           # [-Phi_i | gamma]
        for a in range(nf):
            R[r, a] = -J[r, IND[a]]
    gamma(q, qd, sc, t, R[:, nf])
    solve_d(J, W, R, X)                            # X = [B_d | z_d], z = B' qd_i + C'
    for a in range(nf):
        for c in range(DEP.shape[0]):
            B[DEP[c], a] = X[DEP[c], a]
        B[IND[a], a] = 1.0
    for c in range(DEP.shape[0]):
        z[DEP[c]] = X[DEP[c], nf]
    M[:, :] = 0.0
    mass(q, sc, M)
    forces(q, qd, sc, t, F)
    project(B, z, M, F, A, rhs)     # B^T M B, B^T (F - M z) (kinedyn.symbolic.projection)
    solve_small(A, rhs)
    accelerations(B, z, rhs, qd, qdd, qi_dot, qi_ddot)
    return it


@inlined
def kinetic_energy(qd, ws):
    M = ws[6]                   # M(q) of the last embedded_rhs
    v = 0.0
    for e in range(MNZ_I.shape[0]):
        v += qd[MNZ_I[e]] * M[MNZ_I[e], MNZ_J[e]] * qd[MNZ_J[e]]
    return 0.5 * v


@inlined
def residual(q, t, r, ws):
    """Phi at the q of the last embedded_rhs (whose sines and cosines ws holds)."""
    phi(q, ws[P_SLOT_][5], t, r)
'''

_NO_RECORD = '''
@njit(cache=True)
def record_outputs(q, qd, out):
    pass
'''

_EMBEDDED = '''
@inlined
def accelerations(B, z, qdd_i, qd, qdd, qi_dot, qi_ddot):
    """qdd = B qdd_i + z (every coordinate) and the independent state's derivative."""
    nf = IND.shape[0]
    for i in range(NQ_):
        v = z[i]
        for a in range(nf):
            v += B[i, a] * qdd_i[a]
        qdd[i] = v
    for a in range(nf):
        qi_dot[a] = qd[IND[a]]
        qi_ddot[a] = qdd_i[a]


@njit(cache=True)
def complete(q, qd, t, mode, tol, max_iter):
    """Dependent positions and velocities from the independent ones; -1 on failure."""
    it = position(mode, q, t, tol, max_iter, position_workspace())
    if it < 0:
        return -1
    sc = np.zeros(2 * NQ_)
    trig(q, sc)
    if not velocity(q, qd, sc, t, np.zeros((NC_, NQ_)), np.zeros(NC_), dep_workspace()):
        return -1
    return it


@inlined
def advance(integ, mode, y, q, qd, t, h, tol, max_iter, k1, k2, k3, k4, yy, a1, a2, qdd, ws, W):
    """One step of y = [q_i; qd_i] from t (k1: its derivative at t, already evaluated);
    0 = explicit Euler, 1 = RK4, 2 = semi-implicit Euler. False if an evaluation failed."""
    nf = IND.shape[0]
    if integ == 0:
        for a in range(2 * nf):
            y[a] += h * k1[a]
        return True
    if integ == 2:
        for a in range(nf):
            y[nf + a] += h * k1[nf + a]
            y[a] += h * y[nf + a]
        return True
    for stage in range(3):
        c = 0.5 * h if stage < 2 else h
        kk = k1 if stage == 0 else (k2 if stage == 1 else k3)
        for a in range(2 * nf):
            yy[a] = y[a] + c * kk[a]
        for a in range(nf):
            q[IND[a]] = yy[a]
            qd[IND[a]] = yy[nf + a]
        if embedded_rhs(mode, q, qd, t + c, tol, max_iter, a1, a2, qdd, ws, W) < 0:
            return False
        kk = k2 if stage == 0 else (k3 if stage == 1 else k4)
        for a in range(nf):
            kk[a] = a1[a]
            kk[nf + a] = a2[a]
    for a in range(2 * nf):
        y[a] += h / 6.0 * (k1[a] + 2.0 * k2[a] + 2.0 * k3[a] + k4[a])
    return True


@inlined
def influence(ws):
    """Largest entry of B_d = -Phi_d^-1 Phi_i at the last embedded_rhs: the gain from the
    independent to the dependent velocities, unbounded as Phi_d becomes singular (the
    re-partition monitor, as the natural-coordinate ``partitioning`` method's)."""
    B = ws[B_SLOT_]
    worst = 0.0
    for c in range(DEP.shape[0]):
        for a in range(IND.shape[0]):
            worst = max(worst, abs(B[DEP[c], a]))
    return worst


@njit(cache=True)
def run_embedded(integ, mode, times, q_, qd_, Q, QD, QDD, RES, ENERGY, ITER, tol, max_iter,
                 max_influence, ws_, W_, scratch_):
    """Whole run from (q, qd) over ``times``, every step recorded. Returns (status, step):
    (0, last) done; (1, k) an evaluation of step k failed; (2, k) step k is recorded and its
    influence() exceeds ``max_influence`` (time to re-partition).
    Arrays handed down the hot path are unmanaged views (no reference counting per call,
    see kinedyn._unmanaged). Their owners -- workspace(), dep_workspace() and scratch
    (9, max(2 f, n)) -- are arguments, so the caller keeps them alive for the whole run: an
    owner allocated here would be released by Numba after its last use (the unmanaged() call)
    and its memory handed to the next allocation (a Newton block's, when the blocks still
    allocated their arrays: the Stephenson-III run that stopped after three steps)."""
    nf = IND.shape[0]
    r = np.zeros(NC_)
    ws, W, S = unmanaged(ws_), unmanaged(W_), unmanaged(scratch_)
    q, qd = unmanaged(q_), unmanaged(qd_)
    k1, k2, k3, k4, yy, y = S[0, :2 * nf], S[1, :2 * nf], S[2, :2 * nf], S[3, :2 * nf], \
        S[4, :2 * nf], S[5, :2 * nf]
    a1, a2, qdd = S[6, :nf], S[7, :nf], S[8, :NQ_]
    for a in range(nf):
        y[a] = q[IND[a]]
        y[nf + a] = qd[IND[a]]
    last = times.shape[0] - 1
    for k in range(times.shape[0]):
        t = times[k]
        for a in range(nf):
            q[IND[a]] = y[a]
            qd[IND[a]] = y[nf + a]
        it = embedded_rhs(mode, q, qd, t, tol, max_iter, a1, a2, qdd, ws, W)
        if it < 0:
            return 1, k
        for a in range(nf):
            k1[a] = a1[a]
            k1[nf + a] = a2[a]
        Q[k] = q
        QD[k] = qd
        QDD[k] = qdd
        residual(q, t, r, ws)
        RES[k] = largest(r)
        ENERGY[k] = kinetic_energy(qd, ws) + potential(q)
        ITER[k] = it
        if not abs(ENERGY[k]) < np.inf:   # NaN or overflow: the state is lost (a singular
            return 1, k                   # embedding's velocities grow without bound)
        if k == last:
            break
        if max_influence < np.inf and influence(ws) > max_influence:   # only when watched
            return 2, k
        if not advance(integ, mode, y, q, qd, t, times[k + 1] - t, tol, max_iter, k1, k2, k3, k4,
                       yy, a1, a2, qdd, ws, W):
            return 1, k + 1
    return 0, last


@njit(cache=True)
def run_recorded(integ, mode, y_, q_, qd_, t0, dt, first, n_steps, record_every, out_, tol,
                 max_iter, max_influence, max_residual, ws_, W_, scratch_):
    """Steps ``first..n_steps`` of y = [q_i; qd_i] (step s at t0 + s dt), recording
    ``record_outputs(q, qd)`` at the steps that are multiples of ``record_every`` into ``out``
    (row s // record_every); q, qd: the full state of the last evaluation (its dependent part
    is the branch reference); scratch (11, max(2 f, n)). Returns (status, step):
    (0, n_steps) done; (1, k) the state of step k could not be reached or evaluated, and y, q,
    qd hold the last good one, step k - 1 (unchanged if k = first); (2, k) step k is recorded
    and influence() exceeds ``max_influence`` (time to re-partition; y is that state). A
    constraint residual above ``max_residual`` fails the step: a closed form that lost its real
    root (Clamp holds the square root at zero) returns wrong positions, not an error."""
    nf = IND.shape[0]
    r = np.zeros(NC_)
    y, q, qd, out, scratch = unmanaged(y_), unmanaged(q_), unmanaged(qd_), unmanaged(out_), \
        unmanaged(scratch_)
    ws, W = unmanaged(ws_), unmanaged(W_)
    k1, k2, k3, k4, yy, saved = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5]
    a1, a2, qdd = scratch[6, :nf], scratch[7, :nf], scratch[8, :NQ_]
    q_good, qd_good = scratch[9, :NQ_], scratch[10, :NQ_]
    for s in range(first, n_steps + 1):
        t = t0 + s * dt
        for a in range(nf):
            q[IND[a]] = y[a]
            qd[IND[a]] = y[nf + a]
        ok = embedded_rhs(mode, q, qd, t, tol, max_iter, a1, a2, qdd, ws, W) >= 0
        if ok and max_residual < np.inf:
            residual(q, t, r, ws)
            ok = largest(r) <= max_residual
        if not ok:
            if s > first:                # back to the last good state, step s - 1
                for a in range(2 * nf):
                    y[a] = saved[a]
                q[:] = q_good
                qd[:] = qd_good
            return 1, s
        if s % record_every == 0:
            record_outputs(q, qd, out[s // record_every])
        if s == n_steps:
            break
        if max_influence < np.inf and influence(ws) > max_influence:   # only when watched
            return 2, s
        for a in range(nf):
            k1[a] = a1[a]
            k1[nf + a] = a2[a]
        for a in range(2 * nf):
            saved[a] = y[a]
        q_good[:] = q
        qd_good[:] = qd
        if not advance(integ, mode, y, q, qd, t, dt, tol, max_iter, k1, k2, k3, k4, yy, a1, a2,
                       qdd, ws, W):
            for a in range(2 * nf):
                y[a] = saved[a]
            q[:] = q_good
            qd[:] = qd_good
            return 1, s + 1
    return 0, n_steps
'''
