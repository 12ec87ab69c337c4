"""The builder: :class:`System` describes a mechanism; :meth:`System.compile` freezes it.

A system is a bookkeeper (DESIGN principle 1): it stores entries exactly as given, checks them,
and compiles them into a :class:`~kinedyn.model.compiled.CompiledModel`. It never does numerics
per time step.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import numpy as np
import sympy as sp

from ..errors import ModelError, UnknownNameError
from . import expressions as ex
from .compiled import (COMPONENT_CODE, DRIVER_CODE, DRIVER_WIDTH, FRAME_CODE, JOINT_CODE,
                       CompiledModel)
from .entries import (DRIVER_KINDS, FORCE_KINDS, JOINT_COORDINATES, JOINT_FIELDS, Body, Driver,
                      Force, Input, Joint, Parameter, UserForce)
from .rotations import check_sequence, euler_to_matrix, is_rotation, planar_matrix
from .tape import TapeTable, compile_tape

GROUND = "ground"


class System:
    """A multibody system under construction.

    Parameters
    ----------
    name: the model's name.
    dim: 2 (planar) or 3 (spatial).
    gravity: gravity vector (m/s^2), default zero.
    euler_sequence: sequence of the 3-D Euler angles used by body orientations (default ``ZYX``).

    Example
    -------
    >>> s = System("pendulum", dim=2, gravity=[0, -9.81])
    >>> s.add_point("ground", "O", [0, 0])
    >>> _ = s.add_body("link", mass=1.0, inertia=1/12, com=[0.5, 0], points={"O": [0, 0]})
    >>> _ = s.add_joint("pin", "revolute", "ground", "link", point_a="O", point_b="O")
    >>> s.compile().n_body
    2
    """

    def __init__(self, name: str = "model", dim: int = 3, *, gravity: Sequence | None = None,
                 euler_sequence: str = "ZYX", description: str | None = None):
        if dim not in (2, 3):
            raise ModelError(f"dim must be 2 or 3, got {dim!r}", location="dim")
        self.name = str(name)
        self.dim = int(dim)
        self.description = description
        self.gravity = _raw(gravity)  # (checked by compile: "expected a list of d numbers")
        self.euler_sequence = euler_sequence
        self.parameters: list[Parameter] = []
        self.inputs: list[Input] = []
        self.ground = Body(GROUND)
        self.bodies: list[Body] = []
        self.joints: list[Joint] = []
        self.drivers: list[Driver] = []
        self.forces: list[Force] = []
        self.user_forces: list[UserForce] = []
        self.source: str | None = None  # the model file this system was loaded from

    # ---- building ------------------------------------------------------------------------
    def add_parameter(self, name: str, value, description: str | None = None) -> Parameter:
        """A named number usable in any numeric field and in functions of time."""
        entry = Parameter(str(name), _raw(value), description)
        self.parameters.append(entry)
        return entry

    def add_input(self, name: str, value=0.0, description: str | None = None) -> Input:
        """A named value that force functions may read, set while a simulation runs
        (:meth:`~kinedyn.model.compiled.CompiledModel.set_inputs`, :meth:`kinedyn.dynamics.
        Dynamics.stepper`); ``value``: its value until set (a number or an expression of the
        parameters)."""
        entry = Input(str(name), _raw(value), description)
        self.inputs.append(entry)
        return entry

    def add_body(self, name: str, *, mass, inertia, com=None, position=None, orientation=None,
                 points: Mapping | None = None, vectors: Mapping | None = None,
                 description: str | None = None) -> Body:
        """A rigid body (see :class:`~kinedyn.model.entries.Body` for the fields)."""
        entry = Body(str(name), _raw(mass), _raw(inertia), _raw(com), _raw(position),
                     _raw(orientation), _named(points), _named(vectors), description)
        self.bodies.append(entry)
        return entry

    def add_point(self, body: str, name: str, coordinates) -> None:
        """Add a named point (body coordinates) to ``body`` (``"ground"`` included)."""
        self._body_entry(body).points[str(name)] = _raw(coordinates)

    def add_vector(self, body: str, name: str, components) -> None:
        """Add a named unit vector (body coordinates, normalised at compile time) to ``body``."""
        self._body_entry(body).vectors[str(name)] = _raw(components)

    def add_joint(self, name: str, type: str, body_a: str, body_b: str, *, point_a=None,
                  point_b=None, axis_a=None, axis_b=None, ref_a=None, ref_b=None,
                  length=None) -> Joint:
        """A joint between two bodies (see :class:`~kinedyn.model.entries.Joint`)."""
        entry = Joint(str(name), str(type), str(body_a), str(body_b), point_a, point_b, axis_a,
                      axis_b, ref_a, ref_b, _raw(length))
        self.joints.append(entry)
        return entry

    def add_driver(self, name: str, kind: str, **fields) -> Driver:
        """Prescribed motion (see :class:`~kinedyn.model.entries.Driver`)."""
        entry = _make(Driver, name, kind, fields, "driver")
        self.drivers.append(entry)
        return entry

    def add_force(self, name: str, kind: str, **fields) -> Force:
        """An applied load (see :class:`~kinedyn.model.entries.Force`)."""
        entry = _make(Force, name, kind, fields, "force")
        self.forces.append(entry)
        return entry

    def add_user_force(self, name: str, points: Sequence[tuple[str, str]],
                       function: Callable) -> UserForce:
        """The user-force hook (see :class:`~kinedyn.model.entries.UserForce`)."""
        if not callable(function):
            raise ModelError(f"user force {name!r}: function is not callable")
        if isinstance(points, str) or not all(
                isinstance(x, (tuple, list)) and len(x) == 2 for x in points):
            raise ModelError(f"user force {name!r}: points are (body, point) pairs, got "
                             f"{points!r}")
        entry = UserForce(str(name), [(str(b), str(p)) for b, p in points], function)
        self.user_forces.append(entry)
        return entry

    def set_gravity(self, vector) -> None:
        self.gravity = _raw(vector)

    def _body_entry(self, name: str) -> Body:
        if name == GROUND:
            return self.ground
        for b in self.bodies:
            if b.name == name:
                return b
        raise UnknownNameError("body", name, [GROUND] + [b.name for b in self.bodies])

    def body(self, name: str) -> Body:
        """The entry of a body (``"ground"`` included)."""
        return self._body_entry(name)

    def copy(self) -> "System":
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        return (f"System({self.name!r}, dim={self.dim}, bodies={len(self.bodies)}, "
                f"joints={len(self.joints)}, drivers={len(self.drivers)}, "
                f"forces={len(self.forces) + len(self.user_forces)})")

    # ---- checking and compiling ----------------------------------------------------------
    def validate(self) -> None:
        """Check the whole description; raise :class:`ModelError` naming the first problem."""
        self.compile()

    def compile(self, parameters: Mapping[str, float] | None = None) -> CompiledModel:
        """Validate and freeze into a :class:`CompiledModel`.

        ``parameters`` overrides parameter values (for design studies) without changing the
        system.
        """
        if parameters is not None and not isinstance(parameters, Mapping):
            raise ModelError(f"parameters must be a mapping of name -> value, got "
                             f"{type(parameters).__name__}")
        try:
            return _Compiler(self, parameters or {}).run()
        except ModelError as err:
            if self.source and not err.file:
                raise err.at(file=self.source) from None
            raise


def _named(entries):
    """Points or vectors as given to a builder: a mapping of name -> coordinates is stored as
    plain values; anything else is kept for the compiler to report (it names the body)."""
    if isinstance(entries, Mapping):
        return {str(k): _raw(v) for k, v in entries.items()}
    return {} if entries is None else _raw(entries)


def _raw(value):
    """Store user values as plain Python (lists, floats, strings) for exact round trips."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, np.ndarray):
        return _raw(value.tolist())
    if isinstance(value, (list, tuple)):
        return [_raw(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    return value


def _make(cls, name, kind, fields, what):
    allowed = {f for f in cls.__dataclass_fields__} - {"name", "kind"}
    unknown = set(fields) - allowed
    if unknown:
        raise ModelError(f"{what} {name!r}: unknown field(s) {sorted(unknown)}; "
                         f"allowed: {sorted(allowed)}")
    return cls(str(name), str(kind), **{k: _raw(v) for k, v in fields.items()})


class _Compiler:
    """One pass that checks every entry (with its location) and builds the arrays."""

    def __init__(self, system: System, overrides: Mapping[str, float]):
        self.s = system
        self.d = system.dim
        self.overrides = dict(overrides)

    # -- helpers ------------------------------------------------------------------------------
    def num(self, value, loc: str) -> float:
        return ex.evaluate_number(value, self.params, location=loc)

    def vec(self, value, loc: str, length: int | None = None) -> np.ndarray:
        length = self.d if length is None else length
        if not isinstance(value, (list, tuple)):
            raise ModelError(f"expected a list of {length} numbers, got {ex._short(value)}",
                             location=loc)
        if len(value) != length:
            hint = (" (this is a planar model)" if self.d == 2 and len(value) == 3 else
                    " (this is a spatial model)" if self.d == 3 and len(value) == 2 else "")
            raise ModelError(f"expected {length} components, got {len(value)}{hint}", location=loc)
        return np.array([self.num(v, f"{loc}[{i}]") for i, v in enumerate(value)])

    def func(self, value, loc: str) -> int:
        """Register a function of time; return its id."""
        expr = ex.time_function(value, self.params, inputs=self.input_names, location=loc)
        return self.func_expr(expr, str(value), loc)

    def func_expr(self, expr: sp.Expr, text: str, loc: str) -> int:
        read = sorted(str(x) for x in expr.free_symbols if str(x) in self.input_names)
        if read and not self.inputs_allowed:
            raise ModelError(f"a driver cannot read inputs ({', '.join(read)} in {text!r}): it "
                             "prescribes a motion with its velocity and acceleration, which a "
                             "value set from outside and held over each step does not have; "
                             "inputs act on loads (forces)", location=loc)
        try:  # the tape is built for the whole table later; check this one where it is written
            compile_tape(expr, self.input_names)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ModelError(f"cannot use {text!r} as a function of time: {exc}",
                             location=loc) from None
        self.fn_exprs.append(expr)
        self.fn_text.append(text)
        return len(self.fn_exprs) - 1

    def name_of(self, value, loc: str) -> str:
        if not isinstance(value, str) or not value:
            raise ModelError(f"expected a non-empty name, got {ex._short(value)}", location=loc)
        return value

    def entry_name(self, value, loc: str, kind: str) -> str:
        """The name of a body, joint, driver or force: a dot would make its output channels
        (``joint.NAME.angle``) ambiguous."""
        name = self.name_of(value, loc)
        if "." in name:
            raise ModelError(f"{kind} name {name!r} must not contain '.'", location=loc)
        return name

    def lookup(self, table: dict, kind: str, name, loc: str) -> int:
        name = self.name_of(name, loc)
        if name not in table:
            raise UnknownNameError(kind, name, table.keys(), location=loc)
        return table[name]

    # -- the pass --------------------------------------------------------------------------------
    def run(self) -> CompiledModel:
        s, d = self.s, self.d
        self.fn_exprs: list[sp.Expr] = []
        self.fn_text: list[str] = []
        self._parameters()
        self._inputs()
        gravity = (np.zeros(d) if s.gravity is None else self.vec(s.gravity, "gravity"))
        try:
            self.seq = check_sequence(s.euler_sequence)
        except ValueError as exc:
            raise ModelError(str(exc), location="euler_sequence") from None
        self._bodies()
        self._joints()
        self._connectivity()
        self.inputs_allowed = False
        drivers = self._drivers()
        self.inputs_allowed = True
        forces = self._forces()
        try:
            table = TapeTable(self.fn_exprs, self.input_names, self.input_values)
        except (ValueError, TypeError) as exc:
            raise ModelError(f"cannot compile a function of time: {exc}") from None
        return CompiledModel(
            name=s.name, dim=d, source=s.source, parameters=MappingProxyType(dict(self.params)),
            body_name=tuple(self.body_names), body_mass=self.body_mass, body_com=self.body_com,
            body_inertia=self.body_inertia, body_position=self.body_pos,
            body_rotation=self.body_rot,
            point_name=tuple(self.point_names), point_body=np.array(self.point_body, np.int64),
            point_local=np.array(self.point_local, float).reshape(-1, d),
            vector_name=tuple(self.vector_names), vector_body=np.array(self.vector_body, np.int64),
            vector_local=np.array(self.vector_local, float).reshape(-1, d),
            **self.joint_arrays, **drivers, gravity=gravity, **forces,
            functions=table, function_text=tuple(self.fn_text))

    def identifier(self, value, loc: str, kind: str) -> str:
        """The name of a parameter or input: an identifier that expressions can use."""
        name = self.name_of(value, loc)
        if not name.isidentifier() or name in ex.CONSTANTS or name in ex.FUNCTIONS or name == "t":
            raise ModelError(f"{kind} name {name!r} is not a valid identifier or is "
                             "reserved (t, pi, e, function names)", location=loc)
        return name

    def _inputs(self):
        self.input_names: tuple[str, ...] = ()
        self.input_values: list[float] = []
        for i, u in enumerate(self.s.inputs):
            loc = f"inputs[{i}]"
            name = self.identifier(u.name, f"{loc}.name", "input")
            if name in self.params or name in self.input_names:
                raise ModelError(f"input {name!r} has the name of "
                                 f"{'a parameter' if name in self.params else 'another input'}",
                                 location=f"{loc}.name")
            self.input_names += (name,)
            self.input_values.append(self.num(0.0 if u.value is None else u.value,
                                              f"{loc}.value"))

    def _parameters(self):
        self.params: dict[str, float] = {}
        seen = set()
        for i, p in enumerate(self.s.parameters):
            loc = f"parameters[{i}]"
            name = self.identifier(p.name, f"{loc}.name", "parameter")
            if name in seen:
                raise ModelError(f"duplicate parameter {name!r}", location=f"{loc}.name")
            seen.add(name)
            value = self.overrides[name] if name in self.overrides else p.value
            self.params[name] = ex.evaluate_number(value, self.params, location=f"{loc}.value")
        unknown = set(self.overrides) - seen
        if unknown:
            raise UnknownNameError("parameter", sorted(unknown)[0], seen, location="parameters")

    def _bodies(self):
        s, d = self.s, self.d
        n = len(s.bodies) + 1
        self.body_names = [GROUND]
        self.body_index = {GROUND: 0}
        self.body_mass = np.zeros(n)
        self.body_com = np.zeros((n, d))
        self.body_inertia = np.zeros(n) if d == 2 else np.zeros((n, 3, 3))
        self.body_pos = np.zeros((n, d))
        self.body_rot = np.tile(np.eye(d), (n, 1, 1))
        self.point_names, self.point_body, self.point_local = [], [], []
        self.vector_names, self.vector_body, self.vector_local = [], [], []
        self.points: list[dict[str, int]] = [{}]
        self.vectors: list[dict[str, int]] = [{}]
        self._geometry(0, s.ground, "ground")
        for i, b in enumerate(s.bodies, start=1):
            loc = f"bodies[{i - 1}]"
            name = self.entry_name(b.name, f"{loc}.name", "body")
            if name in self.body_index:
                raise ModelError(f"duplicate body name {name!r}" +
                                 (" (the ground body exists already)" if name == GROUND else ""),
                                 location=f"{loc}.name")
            self.body_index[name] = i
            self.body_names.append(name)
            if b.mass is None:
                raise ModelError("missing mass", location=f"{loc}.mass")
            mass = self.num(b.mass, f"{loc}.mass")
            if not mass > 0:
                raise ModelError(f"mass must be positive, got {mass:g}", location=f"{loc}.mass")
            self.body_mass[i] = mass
            if b.inertia is None:
                raise ModelError("missing inertia", location=f"{loc}.inertia")
            self.body_inertia[i] = self._inertia(b.inertia, f"{loc}.inertia")
            if b.com is not None:
                self.body_com[i] = self.vec(b.com, f"{loc}.com")
            if b.position is not None:
                self.body_pos[i] = self.vec(b.position, f"{loc}.position")
            if b.orientation is not None:
                self.body_rot[i] = self._orientation(b.orientation, f"{loc}.orientation")
            self.points.append({})
            self.vectors.append({})
            self._geometry(i, b, loc)

    def _inertia(self, value, loc):
        if self.d == 2:
            if isinstance(value, (list, tuple)):
                raise ModelError("planar inertia is one number (about the centre of mass)",
                                 location=loc)
            inertia = self.num(value, loc)
            if not inertia > 0:
                raise ModelError(f"inertia must be positive, got {inertia:g}", location=loc)
            return inertia
        if not isinstance(value, (list, tuple)):
            raise ModelError("spatial inertia is a 3x3 matrix, [Ixx, Iyy, Izz] or "
                             "[Ixx, Iyy, Izz, Ixy, Ixz, Iyz]", location=loc)
        if len(value) == 3 and all(isinstance(r, (list, tuple)) for r in value):
            J = np.array([self.vec(r, f"{loc}[{k}]", 3) for k, r in enumerate(value)])
            if not np.allclose(J, J.T, rtol=1e-12, atol=1e-15 * max(1.0, abs(J).max())):
                raise ModelError("inertia matrix is not symmetric", location=loc)
        elif len(value) == 3:
            J = np.diag(self.vec(value, loc, 3))
        elif len(value) == 6:
            xx, yy, zz, xy, xz, yz = self.vec(value, loc, 6)
            J = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        else:
            raise ModelError(f"spatial inertia needs 3x3, 3 or 6 numbers, got {len(value)}",
                             location=loc)
        eig = np.linalg.eigvalsh(J)
        if not eig.min() > 0:
            raise ModelError(f"inertia is not positive definite (eigenvalues {eig.round(12)})",
                             location=loc)
        return J

    def _orientation(self, value, loc):
        if self.d == 2:
            if isinstance(value, (list, tuple)):
                raise ModelError("planar orientation is one angle (rad)", location=loc)
            return planar_matrix(self.num(value, loc))
        if isinstance(value, (list, tuple)) and len(value) == 3 and all(
                isinstance(r, (list, tuple)) for r in value):
            R = np.array([self.vec(r, f"{loc}[{k}]", 3) for k, r in enumerate(value)])
            if not is_rotation(R, 1e-6):
                raise ModelError("orientation matrix is not a rotation", location=loc)
            u, _, vt = np.linalg.svd(R)  # re-orthonormalise to full precision
            return u @ vt
        return euler_to_matrix(self.vec(value, loc, 3), self.seq)

    def _geometry(self, i, b: Body, loc):
        name = self.body_names[i]
        for kind, table, names, owners, locals_ in (
                ("points", self.points[i], self.point_names, self.point_body, self.point_local),
                ("vectors", self.vectors[i], self.vector_names, self.vector_body,
                 self.vector_local)):
            entries = getattr(b, kind)
            if not isinstance(entries, dict):
                raise ModelError(f"{kind} must be a mapping of name -> coordinates",
                                 location=f"{loc}.{kind}")
            for pname, coords in entries.items():
                ploc = f"{loc}.{kind}.{pname}"
                if not isinstance(pname, str) or not pname or "." in pname:
                    raise ModelError(f"invalid {kind[:-1]} name {pname!r}", location=ploc)
                value = self.vec(coords, ploc)
                if kind == "vectors":
                    norm = np.linalg.norm(value)
                    if not norm > 1e-12:
                        raise ModelError("zero-length vector", location=ploc)
                    value = value / norm
                table[pname] = len(names)
                names.append(f"{name}.{pname}")
                owners.append(i)
                locals_.append(value)

    def _joints(self):
        s, d = self.s, self.d
        m = len(s.joints)
        arr = dict(joint_body_a=np.zeros(m, np.int64), joint_body_b=np.zeros(m, np.int64),
                   joint_point_a=np.full(m, -1, np.int64), joint_point_b=np.full(m, -1, np.int64),
                   joint_axis_a=np.zeros((m, d)), joint_axis_b=np.zeros((m, d)),
                   joint_ref_a=np.zeros((m, d)), joint_ref_b=np.zeros((m, d)),
                   joint_rotation=np.tile(np.eye(d), (m, 1, 1)), joint_length=np.full(m, np.nan),
                   joint_type=np.zeros(m, np.int64))
        self.joint_index: dict[str, int] = {}
        names = []
        for j, jt in enumerate(s.joints):
            loc = f"joints[{j}]"
            name = self.entry_name(jt.name, f"{loc}.name", "joint")
            if name in self.joint_index:
                raise ModelError(f"duplicate joint name {name!r}", location=f"{loc}.name")
            self.joint_index[name] = j
            names.append(name)
            types = JOINT_FIELDS[d]
            if jt.type not in types:
                other = JOINT_FIELDS[5 - d]
                hint = (f" ({jt.type!r} exists only in {'spatial' if d == 2 else 'planar'} "
                        "models)") if jt.type in other else ""
                raise ModelError(f"unknown joint type {jt.type!r}{hint}; {'planar' if d == 2 else 'spatial'} "
                                 f"types: {', '.join(types)}", location=f"{loc}.type")
            arr["joint_type"][j] = JOINT_CODE[jt.type]
            a = self.lookup(self.body_index, "body", jt.body_a, f"{loc}.body_a")
            b = self.lookup(self.body_index, "body", jt.body_b, f"{loc}.body_b")
            if a == b:
                raise ModelError(f"joint connects body {jt.body_a!r} to itself",
                                 location=f"{loc}.body_b")
            arr["joint_body_a"][j], arr["joint_body_b"][j] = a, b
            required, optional = types[jt.type]
            for fname in ("point_a", "point_b", "axis_a", "axis_b", "ref_a", "ref_b", "length"):
                value = getattr(jt, fname)
                if fname in required and value is None:
                    raise ModelError(f"a {jt.type} joint needs {fname}", location=f"{loc}.{fname}")
                if value is not None and fname not in required | optional:
                    raise ModelError(f"a {jt.type} joint does not take {fname}",
                                     location=f"{loc}.{fname}")
            if jt.type != "free":
                pa = self.lookup(self.points[a], f"point of body {jt.body_a!r}", jt.point_a,
                                 f"{loc}.point_a")
                pb = self.lookup(self.points[b], f"point of body {jt.body_b!r}", jt.point_b,
                                 f"{loc}.point_b")
                arr["joint_point_a"][j], arr["joint_point_b"][j] = pa, pb
            Ra, Rb = self.body_rot[a], self.body_rot[b]
            if jt.axis_a is not None:
                ua = self.vector_local[self.lookup(self.vectors[a], f"vector of body {jt.body_a!r}",
                                                   jt.axis_a, f"{loc}.axis_a")]
                ub = self.vector_local[self.lookup(self.vectors[b], f"vector of body {jt.body_b!r}",
                                                   jt.axis_b, f"{loc}.axis_b")]
                arr["joint_axis_a"][j], arr["joint_axis_b"][j] = ua, ub
            if jt.type in ("revolute", "cylindrical"):
                arr["joint_ref_a"][j] = self._reference(a, jt.ref_a, arr["joint_axis_a"][j],
                                                        jt.body_a, f"{loc}.ref_a")
                arr["joint_ref_b"][j] = self._reference(b, jt.ref_b, arr["joint_axis_b"][j],
                                                        jt.body_b, f"{loc}.ref_b")
            if jt.type in ("fixed", "prismatic"):
                arr["joint_rotation"][j] = Ra.T @ Rb
            if jt.type == "rod":
                if jt.length is None:
                    length = np.linalg.norm(self._world_point(pb) - self._world_point(pa))
                else:
                    length = self.num(jt.length, f"{loc}.length")
                if not length > 0:
                    raise ModelError(f"rod length must be positive, got {length:g}",
                                     location=f"{loc}.length")
                arr["joint_length"][j] = length
        self.joint_arrays = dict(joint_name=tuple(names), **arr)

    def _reference(self, body, ref, axis, body_name, loc):
        """Unit reference vector perpendicular to the axis (2-D: axis is +z, any vector)."""
        if ref is not None:
            v = self.vector_local[self.lookup(self.vectors[body], f"vector of body {body_name!r}",
                                              ref, loc)].copy()
        else:
            v = np.eye(self.d)[0]
        if self.d == 3:
            v = v - axis * (axis @ v)
            if np.linalg.norm(v) < 1e-6:
                if ref is not None:
                    raise ModelError("reference vector is parallel to the joint axis", location=loc)
                v = np.eye(3)[1] - axis * axis[1]
        return v / np.linalg.norm(v)

    def _world_point(self, p):
        b = self.point_body[p]
        return self.body_pos[b] + self.body_rot[b] @ self.point_local[p]

    def _connectivity(self):
        parent = list(range(len(self.body_names)))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        for a, b in zip(self.joint_arrays["joint_body_a"], self.joint_arrays["joint_body_b"]):
            parent[find(int(a))] = find(int(b))
        for i, name in enumerate(self.body_names[1:], start=1):
            if find(i) != find(0):
                raise ModelError(f"body {name!r} is not connected to the ground by any chain of "
                                 "joints; give a free-floating body a 'free' joint to the ground",
                                 location=f"bodies[{i - 1}]")

    def _drivers(self):
        s = self.s
        m = len(s.drivers)
        out = dict(driver_kind=np.zeros(m, np.int64), driver_joint=np.full(m, -1, np.int64),
                   driver_component=np.full(m, -1, np.int64), driver_body=np.full(m, -1, np.int64),
                   driver_point_a=np.full(m, -1, np.int64), driver_point_b=np.full(m, -1, np.int64),
                   driver_function=np.full((m, DRIVER_WIDTH), -1, np.int64))
        names = []
        for k, dr in enumerate(s.drivers):
            loc = f"drivers[{k}]"
            name = self.entry_name(dr.name, f"{loc}.name", "driver")
            if name in names:
                raise ModelError(f"duplicate driver name {name!r}", location=f"{loc}.name")
            names.append(name)
            if dr.kind not in DRIVER_KINDS:
                raise ModelError(f"unknown driver kind {dr.kind!r}; kinds: {', '.join(DRIVER_KINDS)}",
                                 location=f"{loc}.kind")
            self._only(dr, {"joint": {"function", "joint", "component"},
                            "distance": {"function", "body_a", "point_a", "body_b", "point_b"},
                            "pose": {"body", "position", "orientation", "sequence"}}[dr.kind], loc,
                       f"a {dr.kind} driver")
            out["driver_kind"][k] = DRIVER_CODE[dr.kind]
            if dr.kind == "joint":
                j, comp = self._joint_coordinate(dr.joint, dr.component, loc)
                out["driver_joint"][k], out["driver_component"][k] = j, comp
                out["driver_function"][k, 0] = self._required_func(dr.function, f"{loc}.function")
            elif dr.kind == "distance":
                out["driver_point_a"][k] = self._body_point(dr.body_a, dr.point_a, loc, "a")
                out["driver_point_b"][k] = self._body_point(dr.body_b, dr.point_b, loc, "b")
                f = out["driver_function"][k, 0] = self._required_func(dr.function,
                                                                        f"{loc}.function")
                value = self.fn_exprs[f]
                if value.is_number and not value > 0:  # the constraint holds its square
                    raise ModelError(f"a driven distance must be positive, got {dr.function!r} "
                                     "(its constraint holds the squared distance: the points "
                                     "would be driven apart by its magnitude)",
                                     location=f"{loc}.function")
            else:
                body = self.lookup(self.body_index, "body", dr.body, f"{loc}.body")
                if body == 0:
                    raise ModelError("the ground cannot be driven", location=f"{loc}.body")
                out["driver_body"][k] = body
                out["driver_function"][k] = self._pose_functions(dr, loc)
        return dict(driver_name=tuple(names), **out)

    def _only(self, entry, allowed, loc, what):
        for fname in entry.__dataclass_fields__:
            if fname in ("name", "kind") or getattr(entry, fname) is None:
                continue
            if fname not in allowed:
                raise ModelError(f"{what} does not take {fname}; it takes "
                                 f"{', '.join(sorted(allowed))}", location=f"{loc}.{fname}")

    def _required_func(self, value, loc):
        if value is None:
            raise ModelError("missing function of time", location=loc)
        return self.func(value, loc)

    def _joint_coordinate(self, joint, component, loc):
        j = self.lookup(self.joint_index, "joint", joint, f"{loc}.joint")
        jtype = self.s.joints[j].type
        coords = JOINT_COORDINATES.get(jtype)
        if not coords:
            raise ModelError(f"joint {joint!r} is a {jtype} joint, which has no joint coordinate "
                             "to drive or load (revolute, prismatic, cylindrical have)",
                             location=f"{loc}.joint")
        if component is None:
            if len(coords) > 1:
                raise ModelError(f"joint {joint!r} ({jtype}) has coordinates {coords}; say which "
                                 "with component", location=f"{loc}.component")
            component = coords[0]
        if component not in coords:
            raise ModelError(f"joint {joint!r} ({jtype}) has no component {component!r}; it has "
                             f"{', '.join(coords)}", location=f"{loc}.component")
        return j, COMPONENT_CODE[component]

    def _body_point(self, body, point, loc, side):
        b = self.lookup(self.body_index, "body", body, f"{loc}.body_{side}")
        return self.lookup(self.points[b], f"point of body {body!r}", point, f"{loc}.point_{side}")

    def _pose_functions(self, dr, loc):
        d = self.d
        ids = np.full(DRIVER_WIDTH, -1, np.int64)
        if not isinstance(dr.position, (list, tuple)) or len(dr.position) != d:
            raise ModelError(f"position needs {d} functions of time", location=f"{loc}.position")
        for i, f in enumerate(dr.position):
            ids[i] = self.func(f, f"{loc}.position[{i}]")
        n_angle = 1 if d == 2 else 3
        orientation = dr.orientation
        if d == 2 and not isinstance(orientation, (list, tuple)):
            orientation = [orientation]
        if not isinstance(orientation, (list, tuple)) or len(orientation) != n_angle:
            raise ModelError(f"orientation needs {n_angle} function(s) of time (angles, rad)",
                             location=f"{loc}.orientation")
        angles = [ex.time_function(a, self.params, inputs=self.input_names,
                                   location=f"{loc}.orientation[{i}]")
                  for i, a in enumerate(orientation)]
        if d == 2:
            R = planar_matrix(angles[0], lib=sp)
        else:
            try:
                seq = check_sequence(dr.sequence or self.seq)
            except ValueError as exc:
                raise ModelError(str(exc), location=f"{loc}.sequence") from None
            R = euler_to_matrix(angles, seq, lib=sp)
        for r in range(d):
            for c in range(d):
                ids[d + r * d + c] = self.func_expr(sp.simplify(R[r, c]) if d == 2 else R[r, c],
                                                    f"{dr.name}: R[{r},{c}]",
                                                    f"{loc}.orientation")
        return ids

    def _forces(self):
        s, d = self.s, self.d
        pf, sp_, jf = [], [], []
        names = set()
        for k, f in enumerate(s.forces):
            loc = f"forces[{k}]"
            name = self.entry_name(f.name, f"{loc}.name", "force")
            if name in names:
                raise ModelError(f"duplicate force name {name!r}", location=f"{loc}.name")
            names.add(name)
            if f.kind not in FORCE_KINDS:
                raise ModelError(f"unknown force kind {f.kind!r}; kinds: {', '.join(FORCE_KINDS)}",
                                 location=f"{loc}.kind")
            self._only(f, {"point": {"body", "point", "force", "frame"},
                           "spring": {"body_a", "point_a", "body_b", "point_b", "stiffness",
                                      "damping", "free_length", "force"},
                           "joint": {"joint", "component", "function"}}[f.kind], loc,
                       f"a {f.kind} force")
            if f.kind == "point":
                b = self.lookup(self.body_index, "body", f.body, f"{loc}.body")
                p = self.lookup(self.points[b], f"point of body {f.body!r}", f.point, f"{loc}.point")
                frame = f.frame or "world"
                if frame not in FRAME_CODE:
                    raise ModelError(f"frame must be 'world' or 'body', got {frame!r}",
                                     location=f"{loc}.frame")
                if not isinstance(f.force, (list, tuple)) or len(f.force) != d:
                    raise ModelError(f"force needs {d} functions of time", location=f"{loc}.force")
                fns = [self.func(c, f"{loc}.force[{i}]") for i, c in enumerate(f.force)]
                pf.append((name, b, p, FRAME_CODE[frame], fns))
            elif f.kind == "spring":
                pa = self._body_point(f.body_a, f.point_a, loc, "a")
                pb = self._body_point(f.body_b, f.point_b, loc, "b")
                k_ = self.num(f.stiffness if f.stiffness is not None else 0, f"{loc}.stiffness")
                c_ = self.num(f.damping if f.damping is not None else 0, f"{loc}.damping")
                if k_ < 0 or c_ < 0:
                    raise ModelError("stiffness and damping must not be negative", location=loc)
                if f.free_length is None:
                    L0 = np.linalg.norm(self._world_point(pb) - self._world_point(pa))
                else:
                    L0 = self.num(f.free_length, f"{loc}.free_length")
                    if L0 < 0:
                        raise ModelError("free length must not be negative",
                                         location=f"{loc}.free_length")
                fn = -1 if f.force is None else self.func(f.force, f"{loc}.force")
                sp_.append((name, pa, pb, k_, c_, L0, fn))
            else:
                j, comp = self._joint_coordinate(f.joint, f.component, loc)
                jf.append((name, j, comp, self._required_func(f.function, f"{loc}.function")))
        users = []
        for k, u in enumerate(s.user_forces):
            loc = f"user_forces[{k}]"
            if u.name in names:
                raise ModelError(f"duplicate force name {u.name!r}", location=f"{loc}.name")
            names.add(u.name)
            idx = np.array([self._body_point(b, p, loc, "a") for b, p in u.points], np.int64)
            idx.flags.writeable = False
            users.append((u.name, idx, u.function))

        def col(rows, i, dtype, shape=(0,)):
            return np.array([r[i] for r in rows], dtype).reshape((len(rows),) + shape[1:])
        return dict(
            point_force_name=tuple(r[0] for r in pf), point_force_body=col(pf, 1, np.int64),
            point_force_point=col(pf, 2, np.int64), point_force_frame=col(pf, 3, np.int64),
            point_force_function=col(pf, 4, np.int64, (0, d)),
            spring_name=tuple(r[0] for r in sp_), spring_point_a=col(sp_, 1, np.int64),
            spring_point_b=col(sp_, 2, np.int64), spring_stiffness=col(sp_, 3, float),
            spring_damping=col(sp_, 4, float), spring_free_length=col(sp_, 5, float),
            spring_function=col(sp_, 6, np.int64),
            joint_force_name=tuple(r[0] for r in jf), joint_force_joint=col(jf, 1, np.int64),
            joint_force_component=col(jf, 2, np.int64), joint_force_function=col(jf, 3, np.int64),
            user_forces=tuple(users))
