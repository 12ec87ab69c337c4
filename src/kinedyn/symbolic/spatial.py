"""Spatial constraint equations in joint or mixed coordinates (thesis sections 4.2.5, 5.1-5.2).

:func:`spatial_coordinates` derives a :class:`ConstraintSystem` from a 3-D model: bodies listed
in ``absolute`` get their pose -- origin (x, y, z) and 3-2-1 Euler angles (phi, theta, psi),
``R_WB = Rz(phi) Ry(theta) Rx(psi)`` -- the thesis's mixed coordinates (Gough-Stewart platform,
eq. 4.32; five-link wheel carrier, eq. 5.1); every other body hangs from the ground or an
absolute body through the spanning tree, with the joint's own coordinates:

=============  ==========================================================================
revolute       angle theta about the axis a:            R_AB = Rot(a, theta) R_ref
universal      alpha about a (in A), beta about b (in B): R_AB = Rot(a, alpha) R_ref Rot(b, beta)
prismatic      displacement s along a (natural definition (p_b - p_a) . a), orientation locked
cylindrical    angle and displacement about / along a
spherical      3-2-1 Euler angles (zeta, eta, xi) of the relative rotation
fixed          nothing (locked)
=============  ==========================================================================

Joints outside the tree (and every rod) close loops: point coincidence (spherical, universal,
revolute, fixed), axis perpendicularity (universal), axis alignment (revolute), rod length.
For the Gough-Stewart platform with ``absolute=["platform"]`` each leg's spherical joint gives
the three equations (4.32) in (alpha_k, beta_k, s_k) and the platform pose.

All data are made exact: numbers by :func:`rationalise`, unit axes as rational points of the
unit sphere (inverse stereographic projection), constant rotations from rational quaternions --
so every constant rotation stays exactly orthogonal and the polynomial bases see a genuine
mechanism within ``tol`` of the model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from ..errors import ModelError
from ..model.compiled import (DRIVER_CODE, FRAME_CODE, JOINT_CODE, CompiledModel,
                              compiled_model)
from ..model.rotations import euler_to_matrix, matrix_to_euler
from ..model import tape as _tape
from .equations import (assemble, BodyPoints, ConstraintSystem, Coordinate, grow_tree, _num,
                        require_generated_loads, T, _vec)

SEQUENCE = "ZYX"   # absolute bodies and tree spherical joints: the thesis's 3-2-1 angles


# ---- exact data ---------------------------------------------------------------------------------
def rational_unit(v, tol: float = 1e-12) -> sp.Matrix:
    """A rational vector of exactly unit length within ~tol of the direction of ``v``
    (stereographic projection from the pole opposite to v's largest component)."""
    v = np.asarray(v, float) / np.linalg.norm(v)
    k = int(np.argmax(np.abs(v)))
    sign = 1 if v[k] > 0 else -1
    others = [i for i in range(3) if i != k]
    u = [_num(v[i] / (1.0 + sign * v[k]), tol / 4) for i in others]  # projection from -sign e_k
    n2 = u[0] ** 2 + u[1] ** 2
    out = [sp.Integer(0)] * 3
    out[others[0]], out[others[1]] = 2 * u[0] / (1 + n2), 2 * u[1] / (1 + n2)
    out[k] = sign * (1 - n2) / (1 + n2)
    return sp.Matrix(out)


def rational_rotation(R, tol: float = 1e-12) -> sp.Matrix:
    """An exactly orthogonal rational rotation within ~tol of ``R`` (rational quaternion)."""
    R = np.asarray(R, float)
    if np.allclose(R, np.eye(3), atol=tol):
        return sp.eye(3)
    from scipy.spatial.transform import Rotation
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    w, x, y, z = (_num(c, tol / 8) for c in (w, x, y, z))
    n = w ** 2 + x ** 2 + y ** 2 + z ** 2
    return sp.Matrix([[w**2 + x**2 - y**2 - z**2, 2 * (x*y - w*z), 2 * (x*z + w*y)],
                      [2 * (x*y + w*z), w**2 - x**2 + y**2 - z**2, 2 * (y*z - w*x)],
                      [2 * (x*z - w*y), 2 * (y*z + w*x), w**2 - x**2 - y**2 + z**2]]) / n


def axis_rotation(a: sp.Matrix, angle) -> sp.Matrix:
    """Rodrigues' rotation about the unit axis ``a`` (exact for rational unit a)."""
    c, s = sp.cos(angle), sp.sin(angle)
    K = sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return sp.expand(c * sp.eye(3) + s * K + (1 - c) * (a * a.T))


def _perpendiculars(a: sp.Matrix):
    """Two exact vectors spanning the plane perpendicular to ``a``."""
    e = sp.Matrix([1, 0, 0]) if abs(a[0]) <= max(abs(a[1]), abs(a[2])) else sp.Matrix([0, 1, 0])
    u = a.cross(e)
    return u, a.cross(u)


def _signed_angle(u, v, axis) -> float:
    """Angle from u to v about ``axis`` (vectors roughly perpendicular to it)."""
    return float(np.arctan2(np.cross(u, v) @ axis, u @ v))


def tape_expr(model: CompiledModel, fid: int) -> sp.Expr:
    """The SymPy expression of compiled function ``fid`` (decoded from its postfix tape)."""
    tab = model.functions
    stack: list = []
    binary = {_tape.ADD: lambda a, b: a + b, _tape.SUB: lambda a, b: a - b,
              _tape.MUL: lambda a, b: a * b, _tape.DIV: lambda a, b: a / b,
              _tape.POW: lambda a, b: a ** b, _tape.MIN: sp.Min, _tape.MAX: sp.Max,
              _tape.ATAN2: sp.atan2}
    unary = {op: fn for fn, op in _tape._UNARY.items()}
    unary.update({_tape.NEG: lambda a: -a, _tape.SQRT: sp.sqrt, _tape.STEP: sp.Heaviside})
    for k in range(int(tab.start[fid]), int(tab.start[fid + 1])):
        op, arg = int(tab.ops[k]), float(tab.args[k])
        if op == _tape.CONST:
            stack.append(sp.Float(arg) if arg != int(arg) else sp.Integer(int(arg)))
        elif op == _tape.TIME:
            stack.append(T)
        elif op == _tape.POWC:
            stack.append(stack.pop() ** (int(arg) if arg == int(arg) else sp.Float(arg)))
        elif op in binary:
            b_, a_ = stack.pop(), stack.pop()
            stack.append(binary[op](a_, b_))
        else:
            stack.append(unary[op](stack.pop()))
    return stack[0]


# ---- the equations ------------------------------------------------------------------------------
@dataclass
class SpatialEquations(ConstraintSystem, BodyPoints):
    """A spatial model's constraints plus every body's pose as functions of q (for dynamics).

    body_R[b] (3x3), body_origin[b] (3x1), body_omega[b] (3 x n_q): world angular-velocity
    Jacobian (omega_W = body_omega[b] q'); joint_coordinates: joint index -> {component: expr}.
    """
    model: CompiledModel | None = None
    body_R: list = field(default_factory=list)
    body_origin: list = field(default_factory=list)
    body_omega: list = field(default_factory=list)
    joint_coordinates: dict = field(default_factory=dict)
    tol: float = 1e-12
    reduce_knowns: bool = True   # plan option: intermediate-variable reduction (see make_plan)
    rods: tuple = ()             # Rod legs (see :func:`_rods`), used by make_plan

    def joint_coordinate(self, j: int, component: int) -> sp.Expr:
        """A tree joint's angle (component 0) or displacement (component 1) as a coordinate;
        a prismatic joint's displacement also for component 0 (the natural definition)."""
        m = self.model
        comps = self.joint_coordinates.get(j, {})
        if m.joint_type[j] == JOINT_CODE["prismatic"]:
            component = 1
        if component not in comps:
            raise ModelError(f"{m.name}: joint {m.joint_name[j]!r} has no symbolic coordinate of "
                             f"component {component} (drive/load joints of the spanning tree)")
        return comps[component]


def _tree(model: CompiledModel, roots):
    """Spanning tree from ``roots``, breadth first, over joints with few coordinates first:
    spherical joints join the tree only where nothing else reaches a body (they are the
    natural cut joints, 3 equations and no gimbal-locked Euler angles); rods are always cut.
    Returns the set of reached bodies and the parent joint of each."""
    known, parent_joint = set(roots), {}
    for cut in ({JOINT_CODE["spherical"], JOINT_CODE["rod"]}, {JOINT_CODE["rod"]}):
        grow_tree(model, known, parent_joint, lambda j: int(model.joint_type[j]) in cut)
    return known, parent_joint


_TREE_TYPES = {JOINT_CODE[k] for k in ("revolute", "universal", "prismatic", "cylindrical",
                                        "spherical", "fixed")}


def spatial_coordinates(model: CompiledModel, absolute=(), independent=None,
                        tol: float = 1e-12) -> SpatialEquations:
    """Joint (or mixed, with ``absolute`` body names) coordinates of a spatial model.

    ``independent``: coordinate names (default: the driven coordinates, else the first f met
    from the ground, :func:`choose_independent`). Coordinate names: ``<body>.x|y|z|phi|theta|psi``
    for absolute bodies, ``<joint>.angle`` / ``.displacement`` / ``.alpha`` / ``.beta`` /
    ``.zeta|eta|xi`` for tree joints.
    """
    model = compiled_model(model)
    if model.dim != 3:
        raise ModelError(f"{model.name}: spatial_coordinates needs a 3-D model (planar: "
                         "planar_coordinates)")
    abs_bodies = [model.index("body", b) for b in absolute]
    known, parent_joint = _tree(model, {0, *abs_bodies})
    loose = [model.body_name[b] for b in range(1, model.n_body) if b not in known]
    if loose:
        raise ModelError(f"{model.name}: bodies {loose} hang only from rods; give them absolute "
                         "coordinates")
    for b, j in parent_joint.items():
        if int(model.joint_type[j]) not in _TREE_TYPES:
            raise ModelError(f"{model.name}: joint {model.joint_name[j]!r} "
                             f"({model.joint_type_name(j)}) cannot be a tree joint of the "
                             "symbolic coordinates; give body "
                             f"{model.body_name[b]!r} absolute coordinates")
    nb = model.n_body
    eqs = SpatialEquations(model.name, (), (), (), model=model, body_R=[sp.eye(3)] * nb,
                           body_origin=[sp.zeros(3, 1)] * nb, tol=tol)
    coords: list[Coordinate] = []
    q0: list[float] = []
    omega_cols: list[list] = [[] for _ in range(nb)]   # (coordinate index, world axis expr)

    def new(name, is_angle, value):
        sym = sp.Symbol(name.replace(".", "_"), real=True)
        coords.append(Coordinate(name, sym, is_angle))
        q0.append(float(value))
        return sym, len(coords) - 1

    def depth(b):
        d = 0
        while b in parent_joint:
            j = parent_joint[b]
            b = int(model.joint_body_a[j]) if int(model.joint_body_b[j]) == b else int(model.joint_body_b[j])
            d += 1
        return d

    R, origin = eqs.body_R, eqs.body_origin
    for b in sorted(known - {0}, key=lambda b: (b not in abs_bodies, depth(b), b)):
        name = model.body_name[b]
        if b in abs_bodies:
            p0, a0 = model.body_position[b], matrix_to_euler(model.body_rotation[b], SEQUENCE)
            origin[b] = sp.Matrix([new(f"{name}.{c}", False, p0[i])[0] for i, c in enumerate("xyz")])
            ang = [new(f"{name}.{c}", True, a0[i]) for i, c in enumerate(("phi", "theta", "psi"))]
            R[b] = euler_to_matrix([s for s, _ in ang], SEQUENCE, lib=sp)
            omega_cols[b] = _euler_axes(sp.eye(3), ang)
            continue
        _tree_joint(model, eqs, parent_joint[b], b, new, omega_cols, tol)
    n = len(coords)
    eqs.body_omega = []
    for b in range(nb):
        W = sp.zeros(3, n)
        for i, axis in omega_cols[b]:
            W[:, i] += axis
        eqs.body_omega.append(W)
    phi, names = _cut_constraints(model, eqs, set(parent_joint.values()), tol)
    eqs.coordinates, eqs.phi, eqs.constraint_names = tuple(coords), tuple(phi), tuple(names)
    eqs.q0 = np.array(q0)
    eqs.rods = _rods(model, eqs, parent_joint, names, tol)
    return assemble(eqs, _inputs(eqs), independent)


@dataclass(frozen=True)
class Rod:
    """A binary link on a point joint (universal or spherical tree joint) at one end and a
    spherical cut joint at the other: its coordinates appear only in the cut's three
    equations, which imply the constant-distance constraint ``distance`` = |p_a - p_b|^2 - L^2
    = 0 between the two joint points on the neighbouring bodies (thesis eq. 5.2, [66]),
    free of the link's own coordinates."""
    name: str
    equations: tuple[int, ...]
    coordinates: tuple[int, ...]
    distance: sp.Expr


def _rods(model, eqs, parent_joint, names, tol) -> tuple:
    point_joints = {JOINT_CODE["universal"], JOINT_CODE["spherical"]}
    out = []
    for j in range(model.n_joint):
        if j in parent_joint.values() or int(model.joint_type[j]) != JOINT_CODE["spherical"]:
            continue
        for side, far in (("a", "b"), ("b", "a")):
            link = int((model.joint_body_a if side == "a" else model.joint_body_b)[j])
            pj = parent_joint.get(link)
            joints = [k for k in range(model.n_joint)
                      if link in (int(model.joint_body_a[k]), int(model.joint_body_b[k]))]
            if pj is None or int(model.joint_type[pj]) not in point_joints or len(joints) != 2:
                continue
            near = "a" if int(model.joint_body_b[pj]) == link else "b"   # parent's side of pj
            lp = lambda k, sd: _vec(model.point_local[int(  # noqa: E731
                (model.joint_point_a if sd == "a" else model.joint_point_b)[k])], tol)
            arm = lp(pj, "b" if near == "a" else "a") - lp(j, side)
            d = eqs.joint_point(pj, near) - eqs.joint_point(j, far)
            prefix = f"{model.joint_name[pj]}."
            out.append(Rod(model.body_name[link],
                           tuple(i for i, n in enumerate(names)
                                 if n.startswith(f"joint {model.joint_name[j]}:")),
                           tuple(i for i, c in enumerate(eqs.coordinates) if c.name.startswith(prefix)),
                           sp.expand((d.T * d)[0] - (arm.T * arm)[0])))
            break
    return tuple(out)


def _euler_axes(R_parent, ang):
    """World axes of the 3-2-1 Euler angle rates: z, Rz(phi) y, Rz(phi) Ry(theta) x."""
    (ph, i0), (th, i1), (_, i2) = ang
    Rz = euler_to_matrix([ph, 0, 0], SEQUENCE, lib=sp)
    Rzy = euler_to_matrix([ph, th, 0], SEQUENCE, lib=sp)
    return [(i0, R_parent * sp.Matrix([0, 0, 1])), (i1, R_parent * Rz * sp.Matrix([0, 1, 0])),
            (i2, R_parent * Rzy * sp.Matrix([1, 0, 0]))]


def _tree_joint(model, eqs, j, child, new, omega_cols, tol):
    """Pose of ``child`` across tree joint ``j`` from its parent, new coordinates as needed."""
    a, b = int(model.joint_body_a[j]), int(model.joint_body_b[j])
    parent = a if child == b else b
    jt, jn = int(model.joint_type[j]), model.joint_name[j]
    Ra0, Rb0 = model.body_rotation[a], model.body_rotation[b]
    R0 = Ra0.T @ Rb0                                           # initial R_AB
    ax_a, ax_b = model.joint_axis_a[j], model.joint_axis_b[j]
    pa_l, pb_l = model.point_local[model.joint_point_a[j]], model.point_local[model.joint_point_b[j]]
    comps = {}
    axes = []            # (coordinate index, axis expressed in A) for the angular velocity
    shift = sp.zeros(3, 1)   # extra offset of the joint point along a (in A)
    if jt in (JOINT_CODE["revolute"], JOINT_CODE["cylindrical"]):
        a_ = rational_unit(ax_a, tol)
        F = lambda u, r: np.column_stack([u, r, np.cross(u, r)])  # noqa: E731
        Rref = rational_rotation(F(ax_a, model.joint_ref_a[j]) @ F(ax_b, model.joint_ref_b[j]).T, tol)
        th0 = _signed_angle(model.joint_ref_a[j], R0 @ model.joint_ref_b[j], ax_a)
        th, i = new(f"{jn}.angle", True, th0)
        Rab = axis_rotation(a_, th) * Rref
        comps[0] = th
        axes.append((i, a_))
    elif jt == JOINT_CODE["universal"]:
        a_ = rational_unit(ax_a, tol)
        if abs(float(np.dot(ax_a, ax_b))) < 1e-14:
            Rref, b_ = sp.eye(3), rational_unit(ax_b, tol)
        else:   # rotate b into the plane perpendicular to a (exactly rational)
            bp = ax_b - ax_a * (ax_a @ ax_b)
            axis = np.cross(ax_b, bp)
            ang = np.arctan2(np.linalg.norm(axis), ax_b @ bp / np.linalg.norm(bp))
            from scipy.spatial.transform import Rotation
            Rref = rational_rotation(Rotation.from_rotvec(axis / np.linalg.norm(axis) * ang).as_matrix(), tol)
            b_ = Rref * rational_unit(ax_b, tol)
        bf, af = np.array(b_, float).ravel(), np.array(a_, float).ravel()
        al0 = _signed_angle(bf, R0 @ ax_b, ax_a)        # R0 Rref^T b' = Rot(a, alpha0) b'
        rest = np.array(axis_rotation(a_, -al0), float) @ R0 @ np.array(Rref, float).T
        be0 = _signed_angle(af, rest @ af, bf)           # rest = Rot(b', beta0)
        al, i = new(f"{jn}.alpha", True, al0)
        be, k = new(f"{jn}.beta", True, be0)
        Rab = axis_rotation(a_, al) * axis_rotation(b_, be) * Rref
        axes += [(i, a_), (k, axis_rotation(a_, al) * b_)]
    elif jt == JOINT_CODE["spherical"]:
        e0 = matrix_to_euler(R0, SEQUENCE)
        ang = [new(f"{jn}.{c}", True, e0[m_]) for m_, c in enumerate(("zeta", "eta", "xi"))]
        Rab = euler_to_matrix([s for s, _ in ang], SEQUENCE, lib=sp)
        axes += _euler_axes(sp.eye(3), ang)
    else:  # prismatic, fixed: orientation locked
        Rab = rational_rotation(model.joint_rotation[j], tol)
    if jt in (JOINT_CODE["prismatic"], JOINT_CODE["cylindrical"]):
        a_ = rational_unit(ax_a, tol)
        pw = lambda bb, pl: model.body_position[bb] + model.body_rotation[bb] @ pl  # noqa: E731
        d0 = float((pw(b, pb_l) - pw(a, pa_l)) @ (Ra0 @ ax_a))
        s, _ = new(f"{jn}.displacement", False, d0)
        shift = s * a_
        comps[1] = s
    eqs.joint_coordinates[j] = comps
    R, origin = eqs.body_R, eqs.body_origin
    if child == b:
        R[b] = R[a] * Rab
        origin[b] = origin[a] + R[a] * (_vec(pa_l, tol) + shift) - R[b] * _vec(pb_l, tol)
    else:
        R[a] = R[b] * Rab.T
        origin[a] = origin[b] + R[b] * _vec(pb_l, tol) - R[a] * (_vec(pa_l, tol) + shift)
    sign = 1 if child == b else -1
    omega_cols[child] = list(omega_cols[parent]) + [(i, sign * (R[a] * ax)) for i, ax in axes]


def _cut_constraints(model, eqs, tree, tol):
    phi, names = [], []
    for j in range(model.n_joint):
        if j in tree:
            continue
        jn, jt = model.joint_name[j], int(model.joint_type[j])
        a, b = int(model.joint_body_a[j]), int(model.joint_body_b[j])
        pa, pb = eqs.joint_point(j, "a"), eqs.joint_point(j, "b")
        if jt in (JOINT_CODE["revolute"], JOINT_CODE["spherical"], JOINT_CODE["universal"],
                  JOINT_CODE["fixed"]):
            phi += list(pb - pa)
            names += [f"joint {jn}: {c}" for c in "xyz"]
        if jt == JOINT_CODE["universal"]:
            ua = eqs.body_R[a] * rational_unit(model.joint_axis_a[j], tol)
            ub = eqs.body_R[b] * rational_unit(model.joint_axis_b[j], tol)
            phi.append((ua.T * ub)[0])
            names.append(f"joint {jn}: perpendicular axes")
        elif jt == JOINT_CODE["revolute"]:
            ub = eqs.body_R[b] * rational_unit(model.joint_axis_b[j], tol)
            for k, u in enumerate(_perpendiculars(rational_unit(model.joint_axis_a[j], tol))):
                phi.append(((eqs.body_R[a] * u).T * ub)[0])
                names.append(f"joint {jn}: axis {k}")
        elif jt == JOINT_CODE["rod"]:
            d = pb - pa
            phi.append((d.T * d)[0] - _num(model.joint_length[j], tol) ** 2)
            names.append(f"joint {jn}: length")
        elif jt not in (JOINT_CODE["spherical"],):
            raise ModelError(f"{model.name}: joint {jn!r} ({model.joint_type_name(j)}) closes a "
                             "loop; symbolic loop closure supports spherical, universal, "
                             "revolute and rod joints (put it in the tree or make a body absolute)")
    return [sp.expand(e) for e in phi], names


def _inputs(eqs: SpatialEquations) -> dict:
    """Drivers as prescribed coordinates: joint drivers of tree joints, pose drivers of
    absolute bodies (3-2-1 angles recovered from the prescribed R_WB(t))."""
    m = eqs.model
    out = {}
    names = [c.name for c in eqs.coordinates]
    for k in range(m.n_driver):
        kind, dn = int(m.driver_kind[k]), m.driver_name[k]
        fn = m.driver_function[k]
        if kind == DRIVER_CODE["joint"]:
            expr = eqs.joint_coordinate(int(m.driver_joint[k]), int(m.driver_component[k]))
            out[eqs.q.index(expr)] = tape_expr(m, int(fn[0]))
        elif kind == DRIVER_CODE["pose"]:
            body = m.body_name[int(m.driver_body[k])]
            if f"{body}.x" not in names:
                raise ModelError(f"{m.name}: pose driver {dn!r} drives body {body!r}, which has "
                                 "no absolute coordinates (pass absolute=[...])")
            f = [tape_expr(m, int(fn[i])) for i in range(12)]
            Rt = sp.Matrix(3, 3, f[3:])
            ang = (sp.atan2(Rt[1, 0], Rt[0, 0]), sp.asin(-Rt[2, 0]), sp.atan2(Rt[2, 1], Rt[2, 2]))
            for c, e in zip(("x", "y", "z", "phi", "theta", "psi"), (*f[:3], *ang)):
                out[names.index(f"{body}.{c}")] = e
        else:
            raise ModelError(f"{m.name}: driver {dn!r} is a distance driver; symbolic "
                             "coordinates take joint and pose drivers")
    return out


# ---- dynamics ---------------------------------------------------------------------------------
def spatial_mass_and_forces(eqs: SpatialEquations):
    """M(q) (n x n), F(q, q', t) (n) and V(q) of a spatial model (thesis eq. 2.28 inputs).

    T = sum 1/2 m |J_c q'|^2 + 1/2 (J_w q')^T I_W (J_w q') with the world angular-velocity
    Jacobian J_w and I_W = R I_B R^T; F = gravity + applied loads - the velocity terms
    m J_c^T (J_c' q') + J_w^T (I_W (J_w' q') + w x I_W w) (Newton-Euler in the world frame,
    I_W' w = w x I_W w).
    """
    m = eqs.model
    require_generated_loads(m)
    q = sp.Matrix(eqs.q)
    qd = sp.Matrix([sp.Symbol(f"{c.symbol.name}_d", real=True) for c in eqs.coordinates])
    n = len(q)
    M, F, V = sp.zeros(n, n), sp.zeros(n, 1), sp.Integer(0)
    g = _vec(m.gravity, eqs.tol)
    for b in range(1, m.n_body):
        mass = _num(m.body_mass[b], eqs.tol)
        rc = eqs.point(b, m.body_com[b])
        Jc = rc.jacobian(q)
        Jw = eqs.body_omega[b]
        Rb = eqs.body_R[b]
        IW = Rb * sp.Matrix(3, 3, [_num(x, eqs.tol) for x in np.ravel(m.body_inertia[b])]) * Rb.T
        w = Jw * qd
        M += mass * (Jc.T * Jc) + Jw.T * IW * Jw
        F += mass * Jc.T * (g - (Jc * qd).jacobian(q) * qd)
        F -= Jw.T * (IW * (w.jacobian(q) * qd) + w.cross(IW * w))
        V -= mass * (g.T * rc)[0]
    for k in range(len(m.joint_force_name)):
        j, comp = int(m.joint_force_joint[k]), int(m.joint_force_component[k])
        coord = eqs.joint_coordinate(j, comp)
        F += tape_expr(m, int(m.joint_force_function[k])) * sp.Matrix([coord]).jacobian(q).T
    for k in range(len(m.point_force_name)):
        b, p = int(m.point_force_body[k]), int(m.point_force_point[k])
        f = sp.Matrix([tape_expr(m, int(fid)) for fid in m.point_force_function[k]])
        if int(m.point_force_frame[k]) == FRAME_CODE["body"]:
            f = eqs.body_R[b] * f
        F += eqs.point(b, m.point_local[p]).jacobian(q).T * f
    return M, F, V, qd
