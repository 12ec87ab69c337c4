"""Kinematic analysis with a symbolic position solver (thesis chapter 4 kinematic runs).

:class:`TriangularKinematics` is the ``position_solver="triangular"`` counterpart of
:class:`kinedyn.kinematics.Kinematics`: same ``simulate(t_end, dt)`` call, a
:class:`~kinedyn.io.results.Results` with ``body.<name>.angle`` channels (the natural
formulation's names), ``coordinate.<name>`` channels and ``residual.position``. The position
solver can be switched to the Newton baselines on the same generated code
(``"blocks"``: per loop, ``"newton"``: all at once) for honest comparisons.
"""
from __future__ import annotations

import time as _time

import numpy as np
import sympy as sp

from ..errors import AssemblyError, ConvergenceError, ModelError, UnknownNameError, run_steps
from ..io.angles import unwrap
from ..io.results import Results
from ..model.compiled import CompiledModel
from .equations import ConstraintSystem, planar_coordinates
from .spatial import spatial_coordinates
from .kernels import generate, sines_cosines
from .triangular import make_plan

POSITION_SOLVERS = {"triangular": 0, "blocks": 1, "newton": 2}
NEWTON_STARTS = ("extrapolated", "previous")


def coordinates(model: CompiledModel, **options) -> ConstraintSystem:
    """Joint/mixed coordinates of a planar or spatial model (``absolute``, ``independent``)."""
    return (spatial_coordinates if model.dim == 3 else planar_coordinates)(model, **options)


def _planar_options(joint_angles, cut) -> dict:
    """Planar-only coordinate options, passed only when used (spatial models take none)."""
    return {"joint_angles": True, "cut": tuple(cut)} if joint_angles or cut else {}


def _known(kind: str, name: str, table) -> None:
    """A clear error for a ``name`` that ``table`` does not have, listing those it has."""
    if name not in table:
        raise UnknownNameError(kind, name, table)


class TriangularKinematics:
    """Kinematics of a fully driven model with generated kernels.

    model: CompiledModel (planar joint coordinates, ``absolute`` bodies in mixed coordinates;
    ``joint_angles``, ``cut`` as in :func:`~.equations.planar_coordinates`)
    or a :class:`ConstraintSystem` with ``inputs``. position_solver: ``triangular`` (default),
    ``blocks`` or ``newton``. tol / max_iter apply to Newton (baselines and blocks the plan
    iterates). backend: ``numba`` or ``c`` (kernels compiled by the system C compiler,
    Numba fall-back with a warning when there is none). newton_start: where each step's
    Newton iteration starts (the baselines' and the plan's Newton blocks'): ``"extrapolated"``
    (default, second-order from the previous step's velocity and acceleration) or
    ``"previous"`` (the previous step's positions, as the thesis's baselines). Plan options
    (``time_limit``, ``sine_first``, ``track``, ``order``) go to :func:`make_plan`.
    """

    def __init__(self, model, *, position_solver: str = "triangular", absolute=(),
                 joint_angles: bool = False, cut=(), tol: float = 1e-10, max_iter: int = 20,
                 plan=None, backend: str = "numba", newton_start: str = "extrapolated",
                 **plan_options):
        _known("position solver", position_solver, POSITION_SOLVERS)
        _known("Newton start", newton_start, NEWTON_STARTS)
        self.newton_start = newton_start
        if isinstance(model, CompiledModel):
            model = coordinates(model, absolute=absolute, **_planar_options(joint_angles, cut))
        if not isinstance(model, ConstraintSystem):
            raise ModelError("TriangularKinematics needs a CompiledModel or a ConstraintSystem")
        if set(model.inputs) != set(model.independent):
            raise ModelError(f"{model.name}: kinematic analysis needs every independent "
                             "coordinate driven; use dynamics for free mechanisms")
        self.system = model
        self.position_solver = position_solver
        self.tol, self.max_iter = float(tol), int(max_iter)
        start = _time.perf_counter()
        self.plan = plan or make_plan(model, **plan_options)
        self.plan_seconds = _time.perf_counter() - start
        start = _time.perf_counter()
        self.generated = generate(model, self.plan, backend=backend)
        self.backend = self.generated.module.BACKEND
        self.generation_seconds = _time.perf_counter() - start
        self._warm_up()

    def _no_assembly(self, residual, t):
        raise AssemblyError(f"{self.system.name}: the triangular solution leaves a residual of "
                            f"{residual:.3g} (no real assembly for these inputs)", time=float(t),
                            constraints=list(self.system.constraint_names[:3]))

    @property
    def operations(self) -> dict:
        return self.generated.operations

    def _warm_up(self):
        self.simulate(0.0, 1.0, _warm=True)

    def simulate(self, t_end: float, dt: float, *, t0: float = 0.0, _warm: bool = False) -> Results:
        n = 1 if _warm else run_steps(t0, t_end, dt) + 1  # (the warm-up: no step)
        times = t0 + dt * np.arange(n)
        sys_ = self.system
        Q, QD, QDD = (np.zeros((n, sys_.n_q)) for _ in range(3))
        res, it = np.zeros(n), np.zeros(n, np.int64)
        q = sys_.q0.copy()
        mode = POSITION_SOLVERS[self.position_solver]
        wall = _time.perf_counter()
        iterates = mode > 0 or not self.plan.fully_triangular
        mod = self.generated.module
        k = mod.run(mode, times, q, Q, QD, QDD, res, it, self.tol, self.max_iter,
                    iterates and self.newton_start == "extrapolated", mod.kinematic_workspace(),
                    mod.dep_workspace())
        wall = _time.perf_counter() - wall
        # closed forms are exact; a plan's Newton blocks stop at tol (and the closed forms after
        # them inherit that error), so only a residual far above it means a lost real root
        limit = 1e-8 if self.plan.fully_triangular else max(1e-8, 100 * self.tol)
        if k >= 0:
            if mode == 0:   # q: where step k stopped. Closed forms that lost their real root
                # (a square root clamped at zero) may stop it at a singular Phi_d (the clamped
                # limit position)
                r = np.zeros(sys_.n_c)
                mod.phi(q, sines_cosines(mod, q), float(times[k]), r)
                if not np.abs(r).max() <= limit:
                    self._no_assembly(np.abs(r).max(), times[k])
            raise ConvergenceError(f"{sys_.name}: the {self.position_solver} position solver "
                                   f"failed, or Phi_d is singular there", time=float(times[k]),
                                   constraints=list(sys_.constraint_names[:3]))
        worst = float(res.max())
        if mode == 0 and worst > limit:
            self._no_assembly(worst, times[int(res.argmax())])
        summary = {"model": sys_.name, "analysis": "kinematics", "formulation": "symbolic",
                   "position_solver": self.position_solver, "newton_start": self.newton_start,
                   "coordinates": sys_.n_q,
                   "constraints": sys_.n_c, "steps": n, "dt": dt, "wall_time_s": wall,
                   "us_per_step": wall / n * 1e6, "max_residual": {"position": worst},
                   "plan": self.plan.report(), "plan_seconds": self.plan_seconds,
                   "generation_seconds": self.generation_seconds,
                   "operations": self.operations.get("position_triangular", {})}
        return Results(times, _channels(sys_, Q, QD, QDD, res, it), summary)


def _channels(system, Q, QD, QDD, res, it) -> dict:
    ch = {}
    for i, c in enumerate(system.coordinates):
        q = unwrap(Q[:, i]) if c.angle else Q[:, i]
        ch[f"coordinate.{c.name}"] = q
        ch[f"coordinate.{c.name}_d"] = QD[:, i]
        ch[f"coordinate.{c.name}_dd"] = QDD[:, i]
        body, _, comp = c.name.partition(".")
        if body != "joint" and comp in ("angle", "x", "y", "z", "phi", "theta", "psi"):  # absolute body pose
            ch[f"body.{body}.{comp}"] = q
            ch[f"body.{body}.{comp}_d"] = QD[:, i]
            ch[f"body.{body}.{comp}_dd"] = QDD[:, i]
    for b, expr in enumerate(getattr(system, "body_angle", [])[1:], start=1):
        # every body's angle, a linear function of the angle coordinates (joint angles)
        coef = np.array([float(sp.diff(expr, c.symbol)) for c in system.coordinates])
        const = float(expr.xreplace({c.symbol: 0 for c in system.coordinates}))
        name = system.model.body_name[b]
        ch[f"body.{name}.angle"] = unwrap(Q @ coef + const)
        ch[f"body.{name}.angle_d"] = QD @ coef
        ch[f"body.{name}.angle_dd"] = QDD @ coef
    ch["residual.position"] = res
    ch["iterations"] = it.astype(float)
    return ch
