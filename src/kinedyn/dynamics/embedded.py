"""Embedded dynamics (Uchida's thesis, sections 2.1.5 and 3.4.1) as a method of
:class:`~kinedyn.dynamics.Dynamics`.

``Dynamics(model, method="embedded")`` integrates one ODE per independent coordinate of the
model's *symbolic* coordinates (:mod:`kinedyn.symbolic`: joint or mixed coordinates, dependent
ones from the Groebner-basis triangular plan, generated and compiled kernels; for the
Gough-Stewart platform the platform pose with the legs in closed form). The generated module
also maps every recorded state to the natural coordinates of the same model, so the results
carry every output of the other methods (points, bodies, joints, energies, constraint residuals,
reactions), as ``method="hdca"`` does:

* natural -> symbolic (initial conditions): Gauss-Newton on ``x_nat(q) = q_nat`` with the
  generated map and its Jacobian, then the plan recomputes the dependent coordinates on its
  branch and the velocities follow by least squares (exact for consistent velocities);
* symbolic -> natural (recording, compiled): each natural block is a point or unit vector fixed
  in a body, ``r = o_b(q) + R_b(q) l`` or ``u = R_b(q) l``, with velocities ``J(q) q'``.

Which symbolic coordinates a model uses is in :data:`SYMBOLIC_OPTIONS` (the thesis's choices);
``Dynamics(..., symbolic={...})`` overrides or supplies them (``absolute``, ``joint_angles``,
``cut``, ``independent``, ``position_solver``, plan options); ``"repartition": True`` switches
the independent coordinates where they approach a limit position (:meth:`EmbeddedMethod.run`).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from .._jit import resolved_call
from ..errors import ModelError, check_flag

#: symbolic coordinates per model name (options of :class:`~kinedyn.symbolic.embedded.EmbeddedDynamics`)
SYMBOLIC_OPTIONS = {
    "gough-stewart": {"absolute": ["platform"]},   # thesis 4.2.5: platform pose independent
    "slider-crank": {},
    "four-bar": {},
}
#: generated embedded modules of this process, by model and options
_GENERATED: dict = {}


def _natural_blocks(f):
    """(block, body, body-local coordinates, is point) of every natural coordinate block of
    formulation f: a joint location's coordinates as the model data give them for one of its
    moving bodies (every member is the same point of the mechanism, which the symbolic
    coordinates close exactly); a frame's own extra block from its initial value in the body's
    frame (one body only)."""
    m, d, lay = f.model, f.dim, f.layout
    out = {}
    for loc in [*lay.point_locations, *lay.vector_locations]:
        moving = [(b, l, sgn) for b, l, sgn in loc.members if b != 0]
        if loc.block >= 0 and moving:
            b, l, sgn = moving[0]
            out[loc.block] = (b, np.asarray(l, float) * (1.0 if loc.kind == "point" else sgn))
    for name, coords in f.body_coordinates().items():
        b = m.body_name.index(name)
        for c in coords[::d]:
            k = c // d
            if k not in out:
                x = f.q0[d * k:d * k + d] - (m.body_position[b] if lay.blocks[k].kind == "point" else 0.0)
                out[k] = (b, m.body_rotation[b].T @ x)
    missing = [f.coordinate_names[d * k] for k in range(len(lay.blocks)) if k not in out]
    if missing:
        raise ModelError(f"method 'embedded': natural coordinates {missing[:4]} belong to no body")
    return [(k, *out[k], lay.blocks[k].kind == "point") for k in range(len(lay.blocks))]


class EmbeddedMethod:
    """The generated embedded ODE of a model, stepping ``y = [q_i; qd_i]`` and recording the
    natural state ``[q_nat; qd_nat]`` (see the module docstring)."""

    def __init__(self, f, q_nat, qd_nat, t0, integrator, tol, max_iter, options=None):
        from ..formulations.natural import Natural
        from ..symbolic.analysis import _known
        from ..symbolic.embedded import INTEGRATORS, EmbeddedDynamics
        if not isinstance(f, Natural):
            raise ModelError("method 'embedded' records its states in natural coordinates: give "
                             f"a compiled model, not a {type(f).__name__} formulation")
        m = f.model
        if options is None:
            if m.name not in SYMBOLIC_OPTIONS:
                how = ("symbolic={} derives one in joint coordinates (a minute or more per "
                       "build, more the first time), or "
                       "symbolic={'absolute': [...], ...} in mixed coordinates" if m.dim == 2
                       else "symbolic={'absolute': [...], ...} derives one (mixed coordinates: "
                       "the absolute pose of the bodies named)")
                raise ModelError(
                    f"method 'embedded' needs a symbolic plan: model {m.name!r} has none "
                    f"registered (models with one: {', '.join(sorted(SYMBOLIC_OPTIONS))}); "
                    f"{how} (kinedyn.symbolic)")
            options = SYMBOLIC_OPTIONS[m.name]
        if not isinstance(options, dict):
            raise ModelError("symbolic= takes a dict of embedded-dynamics options (absolute, "
                             f"joint_angles, ...; kinedyn.symbolic), got {options!r}")
        # what this method gives the generated dynamics itself (and the integrator, which it
        # steps with its own code): not for symbolic= to set
        own = {"tol": tol, "max_iter": max_iter, "record": self._outputs, "baselines": False,
               "warm_up": False}
        taken = sorted(set(options) & (set(own) | {"integrator"}))
        if taken:
            raise ModelError(f"symbolic={{...}}: {', '.join(taken)} "
                             f"{'is an argument' if len(taken) == 1 else 'are arguments'} of "
                             "Dynamics itself, not a symbolic option")
        self.repartition = check_flag("symbolic repartition", options.get("repartition", False))
        _known("integrator", integrator, INTEGRATORS)
        self.code = INTEGRATORS[integrator]
        self.blocks = _natural_blocks(f)
        self.f, self.n_nat = f, f.n_q

        key = (m.name, tuple(sorted(m.parameters.items())), repr(sorted(options.items())),
               float(tol), int(max_iter))
        hit = _GENERATED.get(key)
        if hit is not None and not hit[0].same_as(m):
            self.emb = hit[1]          # derivation and code generation take tens of seconds
        else:
            try:
                self.emb = EmbeddedDynamics(m, **own, **options)
            except ModelError as err:
                raise ModelError(f"method 'embedded' on {m.name!r}: {err}") from err
            _GENERATED[key] = (m, self.emb)
        self.mode, self.tol, self.max_iter = self.emb.mode, float(tol), int(max_iter)
        self._use(self.emb)
        self.q, self.qd = self._symbolic_state(np.asarray(q_nat, float), np.asarray(qd_nat, float), t0)
        self.limit = np.inf                  # the influence watched (repartition only)
        if self.repartition:                 # from the best partition at the start, too
            part, self.limit = self.emb._choose(self.emb, self.q, t0, False)
            self._use(part)
        self.partitions = [{"t": float(t0), "independent": list(self.part.independent_names)}]
        self.y0 = np.concatenate([self.q[self.ind], self.qd[self.ind]])
        self.n_pos = len(self.ind)
        self.good_time = None                # of the last good state before a failure
        self.derivation = np.zeros(2)        # wall, CPU s deriving partitions inside runs

    def _use(self, part):
        """Run the partition ``part`` (an EmbeddedDynamics of the same coordinates) from now on."""
        self.part, self.mod = part, part.generated.module
        self.max_residual = part.residual_limit
        sys_ = part.system
        self.ind = np.asarray(sys_.independent, np.int64)
        self.ws, self.W = self.mod.workspace(), self.mod.dep_workspace()
        self.scratch = np.zeros((11, max(2 * len(self.ind), sys_.n_q)))
        self._run_recorded = None  # its compiled overload, resolved at the next run

    # ---- the natural map (symbolic, generated into the embedded module) ------------------------
    def _outputs(self, eqs, qd_sym, q0):
        """Natural coordinates and velocities as expressions of the symbolic q, qd (whose body
        frames are the model's), r = o_b + R_b l or u = R_b l (see :func:`_natural_blocks`)."""
        q = sp.Matrix(eqs.q)
        qd = sp.Matrix(qd_sym)
        out, vel = [], []
        for k, b, local, is_point in self.blocks:
            R, o = eqs.body_R[b], eqs.body_origin[b]
            local = sp.Matrix([sp.Float(v) for v in local])
            r = (o + R * local) if is_point else R * local
            out += list(r)
            vel += list(r.jacobian(q) * qd)
        n = self.n_nat
        return [(f"out[{i}]", e) for i, e in enumerate(out)] + \
               [(f"out[{n + i}]", e) for i, e in enumerate(vel)]

    def _map(self, q, qd):
        out = np.zeros(2 * self.n_nat)
        self.mod.record_outputs(q, qd, out)
        return out

    def _jacobian(self, q):
        n = len(q)
        return np.column_stack([self._map(q, e)[self.n_nat:] for e in np.eye(n)])

    def _symbolic_state(self, q_nat, qd_nat, t):
        """Symbolic (q, qd) of a natural state: Gauss-Newton on the map, the plan's branch."""
        sys_ = self.emb.system
        q = self.emb.q_initial.copy()
        for _ in range(30):
            r = q_nat - self._map(q, np.zeros_like(q))[:self.n_nat]
            if np.abs(r).max() <= 1e-13:
                break
            q += np.linalg.lstsq(self._jacobian(q), r, rcond=None)[0]
        qd = np.linalg.lstsq(self._jacobian(q), qd_nat, rcond=None)[0]
        if self.mod.complete(q, qd, t, self.mode, self.tol, self.max_iter) < 0:
            raise ModelError(f"method 'embedded': the {sys_.name} plan cannot assemble the "
                             f"initial state at t = {t:g}")
        x = self._map(q, qd)
        err = max(np.abs(x[:self.n_nat] - q_nat).max(),
                  np.abs(x[self.n_nat:] - qd_nat).max() / max(1.0, np.abs(qd_nat).max()))
        if err > 1e-8:
            raise ModelError(f"method 'embedded': the initial state is not reproduced by the "
                             f"symbolic coordinates of {sys_.name} on the plan's branch "
                             f"(mismatch {err:.3g})")
        return q, qd

    # ---- running ---------------------------------------------------------------------------------
    def run(self, y, t0, dt, n_steps, record_every, out):
        """(status, steps done) as :func:`kinedyn.dynamics.integrators.integrate_fixed`.

        With ``repartition`` the compiled run stops where the influence |B_d| exceeds its
        limit, or at a failure, and goes on from that state (the last good one) in the
        partition :meth:`~kinedyn.symbolic.embedded.EmbeddedDynamics._choose` takes there: y
        is rewritten in place for its independent coordinates. A failure is retried once per
        step, so the run always advances. A partition taken for the first time is derived and
        compiled there (seconds, once per model); that time is added to ``derivation`` (wall,
        CPU s), which :class:`~.simulation.Dynamics` leaves out of the run's time."""
        first, retried = 0, -1
        self.good_time = None
        while True:
            args = (self.code, self.mode, y, self.q, self.qd, float(t0), float(dt), int(first),
                    int(n_steps), int(record_every), out, float(self.tol), int(self.max_iter),
                    float(self.limit), float(self.max_residual), self.ws, self.W, self.scratch)
            if self._run_recorded is None:  # by the dispatcher, then its overload directly
                # (a stepper calls it once per step)
                (st, k), self._run_recorded = resolved_call(self.mod.run_recorded, args)
            else:
                st, k = self._run_recorded(*args)
            if st == 1 and k > first:
                self.good_time = t0 + (k - 1) * dt
            if st == 0 or not self.repartition or (st == 1 and (k <= first or k <= retried)):
                return st, k
            at = k if st == 2 else k - 1     # the state to go on from
            if st == 1:
                retried = k
            before = self.emb.derivation_seconds.copy()
            part, self.limit = self.emb._choose(self.part, self.q, t0 + at * dt, st == 1)
            self.derivation += self.emb.derivation_seconds - before
            if part is None:
                return st, k
            if part is not self.part:
                self._use(part)
                self.partitions.append({"t": t0 + at * dt,
                                        "independent": list(part.independent_names)})
            nf = len(self.ind)
            y[:nf], y[nf:] = self.q[self.ind], self.qd[self.ind]
            first = at

    def failure(self, t):
        """The error of a failed step at t: with a good state before it, the diagnosis of
        :class:`~kinedyn.symbolic.embedded.EmbeddedDynamics` (conditioning of Phi_d, a limit
        position of the independent coordinates, the best other choice of them)."""
        from ..errors import SolverError
        if self.good_time is not None:
            return self.part._failure(self.q, self.good_time, t)
        names = self.part.system.constraint_names
        return SolverError(f"embedded: the {self.part.position_solver} position solver failed or "
                           "a block of Phi_d became singular", time=t, constraints=list(names[:6]))
