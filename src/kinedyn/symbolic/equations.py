"""Constraint equations Phi(q, t) in joint, absolute or mixed coordinates (thesis ch. 3-4).

:class:`ConstraintSystem` is the symbolic input of the pipeline: named coordinates (angles or
lengths), the constraints as SymPy expressions (angles appear only as ``sin(x)``, ``cos(x)``),
which coordinates are independent, and the initial configuration. It can come from a compiled
model (:func:`planar_coordinates`) or be written by hand from a paper's equations (the spatial
four-bar's (4.12)-(4.14)).

Planar models: every body hanging from its parent by a revolute joint gets its absolute angle
(the thesis's joint coordinates of the slider-crank, theta and beta, are absolute link angles;
they differ from relative joint angles by a constant linear map and keep every constraint of
degree 2 after the sine-cosine substitution); a prismatic joint adds its displacement; bodies
listed in ``absolute`` get their pose (x, y, angle) instead -- the thesis's mixed coordinates
(absolute pose of the 3-RRR end-effector, section 4.2.4). Joints not in the spanning tree
become loop-closure constraints.
"""
from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import sympy as sp

from ..errors import AssemblyError, ModelError, UnknownNameError, check_number, coordinates
from ..model.compiled import DRIVER_CODE, JOINT_CODE, CompiledModel, compiled_model
from ..model.expressions import parse
from ..model import tape as _tape
from .rational import rationalise

T = sp.Symbol("t", real=True)


@dataclass(frozen=True)
class Coordinate:
    name: str
    symbol: sp.Symbol
    angle: bool


@dataclass
class ConstraintSystem:
    """Phi(q, t) = 0 with named coordinates.

    coordinates: the n generalised coordinates; phi: the m constraints (SymPy, in the
    coordinate symbols and ``T``); independent: indices of the f = n - m independent ones;
    inputs: for kinematics, index -> prescribed function of ``T`` of independent coordinates;
    q0: an (approximately) assembled configuration.
    """
    name: str
    coordinates: tuple[Coordinate, ...]
    phi: tuple[sp.Expr, ...]
    constraint_names: tuple[str, ...]
    independent: tuple[int, ...] = ()
    inputs: dict = field(default_factory=dict)
    q0: np.ndarray | None = None

    @property
    def q(self) -> tuple[sp.Symbol, ...]:
        return tuple(c.symbol for c in self.coordinates)

    @property
    def n_q(self) -> int:
        return len(self.coordinates)

    @property
    def n_c(self) -> int:
        return len(self.phi)

    @property
    def coordinate_names(self) -> list[str]:
        return [c.name for c in self.coordinates]

    @property
    def dependent(self) -> tuple[int, ...]:
        ind = set(self.independent)
        return tuple(i for i in range(self.n_q) if i not in ind)

    def index(self, name: str) -> int:
        names = [c.name for c in self.coordinates]
        if name not in names:
            raise UnknownNameError("coordinate", name, names)
        return names.index(name)

    def with_independent(self, names) -> "ConstraintSystem":
        """The same equations with other independent coordinates (a new solution flow)."""
        idx = tuple(self.index(n) if isinstance(n, str) else int(n) for n in names)
        bad = [k for k in idx if not 0 <= k < self.n_q]
        if bad or len(set(idx)) != len(idx):
            raise ModelError(f"{self.name}: independent coordinates are names or indices 0 to "
                             f"{self.n_q - 1}, each once; got {list(names)!r}")
        if len(idx) != self.n_q - self.n_c:
            raise ModelError(f"{self.name}: need {self.n_q - self.n_c} independent coordinates, "
                             f"got {len(idx)}")
        return ConstraintSystem(self.name, self.coordinates, self.phi, self.constraint_names,
                                idx, {}, self.q0)

    def driven(self, inputs: dict) -> "ConstraintSystem":
        """The same equations with the named coordinates prescribed as functions of time
        (SymPy expressions or strings in ``t``): a kinematic run of a free model, e.g. the
        thesis's five-link with its carrier height z(t) driven (Fig. 5.3a)."""
        idx = {self.index(n): _time_expression(f, n) for n, f in inputs.items()}
        if len(idx) != self.n_q - self.n_c:
            raise ModelError(f"{self.name}: need {self.n_q - self.n_c} driven coordinates, "
                             f"got {len(idx)}")
        return dataclasses.replace(self, independent=tuple(sorted(idx)), inputs=idx,
                                   q0=self.q0.copy())

    @cached_property
    def phi_q(self) -> sp.Matrix:
        """Jacobian d Phi / d q (m x n)."""
        if not self.phi:  # an open chain: no constraints (SymPy has no Jacobian of a 0-vector)
            return sp.zeros(0, len(self.q))
        return sp.Matrix(self.phi).jacobian(self.q)

    @cached_property
    def phi_t(self) -> sp.Matrix:
        return sp.Matrix(self.phi).diff(T)

    @cached_property
    def numeric(self):
        """NumPy callables ``phi(q, t)`` and ``phi_q(q, t)`` (reference evaluation)."""
        args = (sp.Matrix(self.q), T)
        return (sp.lambdify(args, sp.Matrix(self.phi), "numpy"),
                sp.lambdify(args, self.phi_q, "numpy"))

    def residual(self, q, t=0.0) -> np.ndarray:
        q = coordinates(self, q, "q")
        return np.asarray(self.numeric[0](q, _time(t)), float).ravel()

    def jacobian(self, q, t=0.0) -> np.ndarray:
        return np.asarray(self.numeric[1](coordinates(self, q, "q"), _time(t)), float)

    def solve_newton(self, q_guess, t=0.0, tol=1e-13, max_iter=50) -> tuple[np.ndarray, int]:
        """Newton-Raphson on the dependent coordinates (independent ones held): the baseline and
        the assembly of the initial configuration. Raises AssemblyError naming constraints."""
        q = coordinates(self, q_guess, "q_guess").copy()
        dep = np.array(self.dependent, np.int64)
        for it in range(max_iter):
            r = self.residual(q, t)
            if np.abs(r).max() <= tol:
                return q, it
            J = self.jacobian(q, t)[:, dep]
            q[dep] -= np.linalg.lstsq(J, r, rcond=None)[0]
        r = self.residual(q, t)
        if np.abs(r).max() <= tol * 10:
            return q, max_iter
        worst = [self.constraint_names[i] for i in np.argsort(-np.abs(r))[:3]]
        raise AssemblyError(f"{self.name}: Newton-Raphson did not satisfy the constraints "
                            f"(residual {np.abs(r).max():.3g})", time=t, constraints=worst)


def choose_independent(system: ConstraintSystem, q: np.ndarray, t: float = 0.0) -> tuple[int, ...]:
    """The first coordinates in traversal order whose removal leaves a nonsingular Phi_d
    (thesis section 3.3.1: place the first f coordinates met from the ground into qi)."""
    J = system.jacobian(q, t)
    m = system.n_c
    chosen: list[int] = []
    for k in range(system.n_q):
        if len(chosen) == system.n_q - m:
            break
        rest = [i for i in range(system.n_q) if i not in chosen and i != k]
        if np.linalg.matrix_rank(J[:, rest], tol=1e-9) == m:
            chosen.append(k)
    if len(chosen) != system.n_q - m:
        raise ModelError(f"{system.name}: no set of independent coordinates leaves a nonsingular "
                         "Phi_d at the initial configuration (singular or redundant constraints)")
    return tuple(chosen)


# ---- planar models ----------------------------------------------------------------------------
def _rot(c, s):
    return sp.Matrix([[c, -s], [s, c]])


def _perp(v):
    return sp.Matrix([-v[1], v[0]])


def _num(x, tol):
    return rationalise(float(x), tol)


def _vec(v, tol):
    return sp.Matrix([_num(x, tol) for x in v])


class BodyPoints:
    """World points of bodies for a planar or spatial equation set (its ``model``, ``tol``,
    ``body_origin[b]`` and ``body_R[b]``): origin + R · exact local coordinates."""

    def point(self, b: int, local) -> sp.Matrix:
        return self.body_origin[b] + self.body_R[b] * _vec(local, self.tol)

    def joint_point(self, j: int, side: str) -> sp.Matrix:
        m = self.model
        body = int((m.joint_body_a if side == "a" else m.joint_body_b)[j])
        p = int((m.joint_point_a if side == "a" else m.joint_point_b)[j])
        return self.point(body, m.point_local[p])


@dataclass
class PlanarEquations(ConstraintSystem, BodyPoints):
    """A planar model's constraints plus every body's pose as functions of q (for dynamics).

    body_angle[b] (expr), body_R[b] (2x2), body_origin[b] (2x1); ``model`` the compiled model.
    """
    model: CompiledModel | None = None
    slides: dict = field(default_factory=dict)     # tree prismatic joint -> its coordinate
    body_angle: list = field(default_factory=list)
    body_R: list = field(default_factory=list)
    body_origin: list = field(default_factory=list)
    tol: float = 1e-12

    def joint_coordinate(self, j: int, component: int) -> sp.Expr:
        """Revolute angle (component 0) or prismatic displacement, as the natural formulation
        defines them (angle from body a's reference vector to body b's; displacement of b's
        point from a's along a's axis)."""
        m = self.model
        a, b = int(m.joint_body_a[j]), int(m.joint_body_b[j])
        if m.joint_type[j] == JOINT_CODE["revolute"] and component == 0:
            ra, rb = m.joint_ref_a[j], m.joint_ref_b[j]
            return (self.body_angle[b] + _num(np.arctan2(rb[1], rb[0]), self.tol)
                    - self.body_angle[a] - _num(np.arctan2(ra[1], ra[0]), self.tol))
        if m.joint_type[j] == JOINT_CODE["prismatic"] and j in self.slides:
            return self.slides[j]          # (p_b - p_a) . u_a = s by construction
        if m.joint_type[j] == JOINT_CODE["prismatic"]:
            u = self.body_R[a] * _vec(m.joint_axis_a[j], self.tol)
            return ((self.joint_point(j, "b") - self.joint_point(j, "a")).T * u)[0]
        raise ModelError(f"joint {m.joint_name[j]!r} has no coordinate of component {component}")


def grow_tree(model: CompiledModel, known: set, parent_joint: dict, cut) -> None:
    """Grow a spanning tree breadth first from the bodies in ``known`` over the joints for
    which ``cut(j)`` is false: every body reached joins ``known`` with its ``parent_joint``."""
    queue = deque(sorted(known))
    while queue:
        b = queue.popleft()
        for j in range(model.n_joint):
            a_, b_ = int(model.joint_body_a[j]), int(model.joint_body_b[j])
            if b not in (a_, b_) or cut(j):
                continue
            other = b_ if a_ == b else a_
            if other not in known:
                known.add(other)
                parent_joint[other] = j
                queue.append(other)


def planar_coordinates(model: CompiledModel, absolute=(), independent=None,
                       tol: float = 1e-12, joint_angles: bool = False, cut=()) -> PlanarEquations:
    """Joint (or mixed, with ``absolute`` body names) coordinates of a planar model.

    Data are rationalised to ``tol`` (:func:`rationalise`), so the numeric and the exact
    pipelines see the same mechanism. ``independent``: coordinate names; default the driven
    joint coordinates, else the first f in traversal order (:func:`choose_independent`).

    joint_angles: revolute tree joints get their *relative* angle (coordinate
    ``joint.<name>``) instead of the child's absolute angle, and every cut joint's
    constraints are written in the frame of the nearest common ancestor of its two bodies,
    so a loop that does not touch the ground involves only its own joint angles (the
    Stephenson-III's floating four-bar, thesis section 4.2.2). cut: joint names kept out of
    the spanning tree (they become the loop-closure constraints; the thesis's choice of
    which joint closes each loop).
    """
    model = compiled_model(model)
    if model.dim != 2:
        raise ModelError(f"{model.name}: symbolic joint coordinates are implemented for planar "
                         "models; write spatial constraints as a ConstraintSystem")
    supported = {JOINT_CODE[k] for k in ("revolute", "prismatic", "fixed", "rod")}
    for j in range(model.n_joint):
        if int(model.joint_type[j]) not in supported:
            raise ModelError(f"{model.name}: joint {model.joint_name[j]!r} is a "
                             f"{model.joint_type_name(j)} joint; symbolic planar coordinates "
                             "support revolute, prismatic, fixed and rod joints")
    abs_bodies = [model.index("body", b) for b in absolute]
    cut_joints = {model.index("joint", j) for j in cut}
    nb = model.n_body
    known = {0, *abs_bodies}
    parent_joint = {}  # a tree from the ground and the absolute bodies; rods are cut
    grow_tree(model, known, parent_joint,
              lambda j: model.joint_type[j] == JOINT_CODE["rod"] or j in cut_joints)
    loose = [model.body_name[b] for b in range(1, nb) if b not in known]
    if loose:
        raise ModelError(f"{model.name}: bodies {loose} hang only from rods; give them absolute "
                         "coordinates")
    coords: list[Coordinate] = []
    q0: list[float] = []
    angle = [sp.Integer(0)] * nb
    R = [sp.eye(2)] * nb
    origin = [sp.zeros(2, 1)] * nb
    rel = {}   # body -> (R, p): pose in its parent's frame, where free of the parent's angle

    def new(name, is_angle, value):
        sym = sp.Symbol(name.replace(".", "_"), real=True)
        coords.append(Coordinate(name, sym, is_angle))
        q0.append(float(value))
        return sym

    order = sorted(known - {0}, key=lambda b: (b not in abs_bodies, _depth(b, parent_joint, model), b))
    eqs = PlanarEquations(model.name, (), (), (), model=model, body_angle=angle, body_R=R,
                          body_origin=origin, tol=tol)
    for b in order:
        name = model.body_name[b]
        R0, p0 = model.body_rotation[b], model.body_position[b]
        a0 = float(np.arctan2(R0[1, 0], R0[0, 0]))
        if b in abs_bodies:
            th = new(f"{name}.angle", True, a0)
            angle[b], R[b] = th, _rot(sp.cos(th), sp.sin(th))
            origin[b] = sp.Matrix([new(f"{name}.x", False, p0[0]), new(f"{name}.y", False, p0[1])])
            continue
        j = parent_joint[b]
        child_is_b = int(model.joint_body_b[j]) == b
        par = int(model.joint_body_a[j] if child_is_b else model.joint_body_b[j])
        pa_local = model.point_local[model.joint_point_a[j] if child_is_b else model.joint_point_b[j]]
        pb_local = model.point_local[model.joint_point_b[j] if child_is_b else model.joint_point_a[j]]
        jt = int(model.joint_type[j])
        if jt == JOINT_CODE["revolute"]:
            if joint_angles:
                Rp0 = model.body_rotation[par]
                th = new(f"joint.{model.joint_name[j]}", True, a0 - np.arctan2(Rp0[1, 0], Rp0[0, 0]))
                Rrel = _rot(sp.cos(th), sp.sin(th))
                angle[b], R[b] = angle[par] + th, R[par] * Rrel
                rel[b] = (Rrel, _vec(pa_local, tol) - Rrel * _vec(pb_local, tol))
            else:
                th = new(f"{name}.angle", True, a0)
                angle[b], R[b] = th, _rot(sp.cos(th), sp.sin(th))
            origin[b] = eqs.point(par, pa_local) - R[b] * _vec(pb_local, tol)
        else:  # prismatic / fixed: orientation locked to the parent's
            Rrel = model.joint_rotation[j] if child_is_b else model.joint_rotation[j].T
            delta = float(np.arctan2(Rrel[1, 0], Rrel[0, 0]))
            angle[b] = angle[par] + _num(delta, tol)
            Rrel = sp.Matrix(2, 2, [_num(x, tol) for x in Rrel.ravel()])
            R[b] = R[par] * Rrel
            origin[b] = eqs.point(par, pa_local) - R[b] * _vec(pb_local, tol)
            rel[b] = (Rrel, _vec(pa_local, tol) - Rrel * _vec(pb_local, tol))
            if jt == JOINT_CODE["prismatic"]:
                a_side = int(model.joint_body_a[j])
                u_local = model.joint_axis_a[j]
                Ra = R[par] if child_is_b else R[b]
                u = Ra * _vec(u_local, tol)
                pw = lambda bb, pl: model.body_position[bb] + model.body_rotation[bb] @ pl  # noqa: E731
                d0 = float((pw(b, pb_local) - pw(par, pa_local)) @ (
                    model.body_rotation[a_side] @ u_local)) * (1 if child_is_b else -1)
                s = new(f"{name}.{model.joint_name[j]}", False, d0)
                eqs.slides[j] = s
                origin[b] = origin[b] + (s if child_is_b else -s) * u
                u_par = _vec(u_local, tol) if child_is_b else rel[b][0] * _vec(u_local, tol)
                rel[b] = (rel[b][0], rel[b][1] + (s if child_is_b else -s) * u_par)
        eqs.body_angle, eqs.body_R, eqs.body_origin = angle, R, origin
    phi, names = [], []
    tree = set(parent_joint.values())
    for j in range(model.n_joint):
        if j in tree:
            continue
        jn, jt = model.joint_name[j], int(model.joint_type[j])
        a, b = int(model.joint_body_a[j]), int(model.joint_body_b[j])
        Rl, pl = _loop_frame(a, b, parent_joint, model, rel, R, origin) if joint_angles else (R, origin)
        pa = pl[a] + Rl[a] * _vec(model.point_local[model.joint_point_a[j]], tol)
        pb = pl[b] + Rl[b] * _vec(model.point_local[model.joint_point_b[j]], tol)
        if jt in (JOINT_CODE["revolute"], JOINT_CODE["fixed"]):
            phi += list(pb - pa)
            names += [f"joint {jn}: x", f"joint {jn}: y"]
        if jt == JOINT_CODE["prismatic"]:
            u = Rl[a] * _vec(model.joint_axis_a[j], tol)
            phi.append(sp.expand(((pb - pa).T * _perp(u))[0]))
            names.append(f"joint {jn}: normal")
        if jt in (JOINT_CODE["prismatic"], JOINT_CODE["fixed"]):
            # a's x axis parallel to where the locked relative rotation puts it on b
            ua, ub = Rl[a] * sp.Matrix([1, 0]), Rl[b] * _vec(model.joint_rotation[j].T @ [1, 0], tol)
            phi.append(sp.expand(ua[0] * ub[1] - ua[1] * ub[0]))
            names.append(f"joint {jn}: angle")
        if jt == JOINT_CODE["rod"]:
            d = pb - pa
            phi.append(sp.expand((d.T * d)[0] - _num(model.joint_length[j], tol) ** 2))
            names.append(f"joint {jn}: length")
    eqs.coordinates, eqs.phi, eqs.constraint_names = tuple(coords), tuple(sp.expand(e) for e in phi), tuple(names)
    eqs.q0 = np.array(q0)
    return assemble(eqs, _driver_inputs(eqs, tol), independent)


def assemble(eqs: ConstraintSystem, inputs: dict, independent=None) -> ConstraintSystem:
    """Finish a derived equation set: the independent coordinates (given by name, else the
    driven ones, else chosen at the assembled configuration, thesis §3.3.1), the initial
    configuration assembled from ``eqs.q0`` with the inputs held, and the dof check."""
    if independent is not None:
        eqs.independent = tuple(eqs.index(n) for n in independent)
    elif inputs:
        eqs.independent = tuple(sorted(inputs))
    eqs.inputs = inputs
    if eqs.independent:  # assemble the initial configuration with the inputs held
        q = eqs.q0.copy()
        for i, f in inputs.items():
            q[i] = float(f.subs(T, 0))
        eqs.q0 = eqs.solve_newton(q)[0]
    else:
        eqs.independent = ()
        eqs.q0 = _assemble_free(eqs)
        eqs.independent = choose_independent(eqs, eqs.q0)
    if len(eqs.independent) != eqs.n_q - eqs.n_c:
        rank = int(np.linalg.matrix_rank(eqs.jacobian(eqs.q0, 0.0), tol=1e-9))
        if rank < eqs.n_c:  # the count of degrees of freedom is wrong, not the choice
            raise ModelError(
                f"{eqs.model.name}: {eqs.n_c - rank} of its {eqs.n_c} constraints in symbolic "
                f"coordinates are redundant at the initial configuration (rank {rank}; e.g. a "
                "parallelogram's extra bar); triangularisation and embedding need independent "
                "constraints: remove the redundant joint, or use a natural-coordinate method "
                "(they set redundant rows aside)")
        raise ModelError(f"{eqs.model.name}: {eqs.n_q} coordinates and {eqs.n_c} constraints "
                         f"leave {eqs.n_q - eqs.n_c} degrees of freedom, but "
                         f"{len(eqs.independent)} coordinates are independent (given or driven)")
    return eqs


def _parent(b, parent_joint, model):
    j = parent_joint[b]
    a_, b_ = int(model.joint_body_a[j]), int(model.joint_body_b[j])
    return a_ if b_ == b else b_


def _loop_frame(a, b, parent_joint, model, rel, R, origin):
    """Poses of the loop's bodies in the frame of its middle body (world frame when the loop
    passes a body whose pose relative to its parent is not free of the parent's coordinates,
    e.g. an absolute body): {body: R}, {body: origin}. The loop a -> common ancestor -> b is
    walked from its middle both ways, so each side carries about half the joint rotations and
    the closure polynomials have about half the degree of the ground-frame ones (the
    Stephenson-III's five-link loop: degree 2 instead of 4 in the s, c variables)."""
    def chain(x):
        out = [x]
        while x in parent_joint:
            x = _parent(x, parent_joint, model)
            out.append(x)
        return out
    ca, cb = chain(a), chain(b)
    common = next((x for x in ca if x in cb), None)
    if common is None:
        return R, origin
    path = ca[:ca.index(common) + 1] + cb[:cb.index(common)][::-1]     # a ... common ... b
    if any(x not in rel for x in path if x != common):
        return R, origin
    k = len(path) // 2
    Rl, pl = {path[k]: sp.eye(2)}, {path[k]: sp.zeros(2, 1)}
    for seq in (path[k + 1:], path[:k][::-1]):
        prev = path[k]
        for x in seq:
            if x in parent_joint and _parent(x, parent_joint, model) == prev:   # x below prev
                Rl[x], pl[x] = Rl[prev] * rel[x][0], pl[prev] + Rl[prev] * rel[x][1]
            else:                                                              # x above prev
                Rr, tr = rel[prev]
                Rl[x] = Rl[prev] * Rr.T
                pl[x] = pl[prev] - Rl[x] * tr
            prev = x
    return Rl, pl


def _depth(b, parent_joint, model):
    d = 0
    while b in parent_joint:
        j = parent_joint[b]
        a_, b_ = int(model.joint_body_a[j]), int(model.joint_body_b[j])
        b = a_ if b_ == b else b_
        d += 1
    return d


def _assemble_free(eqs: ConstraintSystem) -> np.ndarray:
    """Least-squares assembly of every coordinate near the model's initial pose."""
    import scipy.optimize as so
    if not eqs.n_c:  # an open chain: every coordinate is free
        return np.asarray(eqs.q0, float).copy()
    sol = so.least_squares(lambda x: eqs.residual(x), eqs.q0, jac=lambda x: eqs.jacobian(x),
                           xtol=1e-15, ftol=1e-15, gtol=1e-15, method="trf")
    if np.abs(sol.fun).max() > 1e-10:
        raise AssemblyError(f"{eqs.name}: the initial configuration cannot be assembled",
                            time=0.0, constraints=list(eqs.constraint_names[:3]))
    return sol.x


def _time(t) -> float:
    check_number("t", t, -math.inf)
    return float(t)


def _time_expression(value, name: str) -> sp.Expr:
    """A driven coordinate's function of time: a SymPy expression in ``t``, or a number or
    string parsed as the model files' expressions are (never ``sympify``, which runs Python)."""
    if isinstance(value, sp.Basic):
        expr = value
    else:
        expr = parse(value, allow_time=True, location=f"inputs[{name!r}]")
    unknown = expr.free_symbols - {T}
    if unknown:
        raise ModelError(f"the function of time {value!r} has symbols other than t: "
                         f"{', '.join(sorted(map(str, unknown)))}", location=f"inputs[{name!r}]")
    return expr


def require_generated_loads(m: CompiledModel) -> None:
    """ModelError unless the embedded dynamics can generate every load of ``m``: gravity, point
    and joint forces whose functions are of time alone (generated code holds them fixed, so
    an input, set from outside during a run, cannot reach it)."""
    if m.spring_name or m.user_forces:
        raise ModelError(f"{m.name}: the embedded symbolic dynamics support gravity, point and "
                         "joint forces (springs and user forces are not generated yet)")
    if (m.functions.ops == _tape.INPUT).any():
        raise ModelError(f"{m.name}: the embedded symbolic dynamics generate their loads as "
                         f"functions of time; its forces read inputs ({', '.join(m.input_names)}"
                         "), which only the natural-coordinate methods and the joint-coordinate "
                         "dynamics read: use method='projection' (or another of those)")


def _function_expr(model: CompiledModel, fid: int) -> sp.Expr:
    text = model.function_text[fid]
    local = {k: sp.Float(v) for k, v in model.parameters.items()}
    local.update(t=T, pi=sp.pi)
    return sp.sympify(text, locals=local)


def _driver_inputs(eqs: PlanarEquations, tol) -> dict:
    """Joint drivers turned into prescribed coordinates: coordinate index -> function of t."""
    m = eqs.model
    out = {}
    for k in range(m.n_driver):
        if m.driver_kind[k] != DRIVER_CODE["joint"]:
            raise ModelError(f"{m.name}: driver {m.driver_name[k]!r} is not a joint driver; "
                             "symbolic coordinates take joint drivers only")
        j = int(m.driver_joint[k])
        expr = sp.expand(eqs.joint_coordinate(j, int(m.driver_component[k])))
        syms = [s for s in expr.free_symbols if s != T]
        if len(syms) != 1 or sp.diff(expr, syms[0]) not in (1, -1):
            raise ModelError(f"{m.name}: driver {m.driver_name[k]!r} drives a joint whose "
                             "coordinate is not one of the symbolic coordinates (drive joints "
                             "to the ground or to an absolute body)")
        sym = syms[0]
        i = eqs.q.index(sym)
        f = _function_expr(m, int(m.driver_function[k, 0]))
        sign = sp.diff(expr, sym)
        out[i] = sp.nsimplify(sign) * (f - (expr - sign * sym))
    return out
