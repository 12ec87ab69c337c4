"""The compiled model: a frozen struct of plain NumPy arrays (no names looked up per step).

Shapes use ``d`` for the dimension (2 or 3). Body 0 is the ground. Index arrays use -1 for
"none". Every array is read-only.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from types import MappingProxyType

import numpy as np

from ..errors import ModelError, UnknownNameError
from .tape import INPUT, TapeTable, first_nonpositive, first_undefined
from .user_forces import UserForceFailure, failure

# integer codes of joint types, driver kinds and force frames used in compiled arrays
JOINT_CODE = {"revolute": 0, "prismatic": 1, "fixed": 2, "rod": 3, "spherical": 4,
              "universal": 5, "cylindrical": 6, "free": 7}
JOINT_NAME = {v: k for k, v in JOINT_CODE.items()}
DRIVER_CODE = {"joint": 0, "distance": 1, "pose": 2}
COMPONENT_CODE = {"angle": 0, "displacement": 1}
FRAME_CODE = {"world": 0, "body": 1}
DRIVER_WIDTH = 12  # pose driver in 3-D: 3 position + 9 rotation-matrix entries


@dataclass(frozen=True, eq=False)
class CompiledModel:
    """Immutable arrays of a validated :class:`~kinedyn.model.System`.

    Attributes (shapes)
    -------------------
    name, dim, source (model file or None), parameters (read-only mapping name -> value)

    body_name (n_body,) tuple; body_mass (n_body,); body_com (n_body, d);
    body_inertia (n_body,) in 2-D, (n_body, 3, 3) in 3-D, about the centre of mass, body axes;
    body_position (n_body, d) and body_rotation (n_body, d, d): initial pose (R_WB).

    point_name (n_point,) tuple ``"body.point"``; point_body (n_point,); point_local (n_point, d).
    vector_name (n_vector,); vector_body (n_vector,); vector_local (n_vector, d), unit length.

    joint_name (n_joint,); joint_type (n_joint,) codes of JOINT_CODE; joint_body_a/b (n_joint,);
    joint_point_a/b (n_joint,) point indices; joint_axis_a/b, joint_ref_a/b (n_joint, d) unit
    vectors in the frames of body a / b (zeros where unused; in 2-D the axis is +z and these hold
    the prismatic slide direction); joint_rotation (n_joint, d, d): relative orientation R_AB
    locked by fixed and prismatic joints; joint_length (n_joint,): rod length (NaN otherwise).

    driver_name; driver_kind (n_driver,) codes of DRIVER_CODE; driver_joint, driver_component,
    driver_body, driver_point_a, driver_point_b (n_driver,); driver_function (n_driver, 12):
    function ids (joint/distance: column 0; pose: position in columns 0..d-1, then the d*d
    entries of R_WB(t) row by row), -1 where unused.

    gravity (d,)
    point_force_name; point_force_body, point_force_point, point_force_frame (n_pf,);
    point_force_function (n_pf, d) function ids.
    spring_name; spring_point_a, spring_point_b (n_spring,) point indices; spring_stiffness,
    spring_damping, spring_free_length (n_spring,); spring_function (n_spring,) id of an
    actuator force along the line or -1.
    joint_force_name; joint_force_joint, joint_force_component, joint_force_function (n_jf,).
    user_forces: tuple of (name, point indices (k,), callable).

    functions: :class:`~kinedyn.model.tape.TapeTable` of every function of time;
    function_text (n_function,) the expressions as written, for reports.
    """

    name: str
    dim: int
    source: str | None
    parameters: MappingProxyType
    body_name: tuple
    body_mass: np.ndarray
    body_com: np.ndarray
    body_inertia: np.ndarray
    body_position: np.ndarray
    body_rotation: np.ndarray
    point_name: tuple
    point_body: np.ndarray
    point_local: np.ndarray
    vector_name: tuple
    vector_body: np.ndarray
    vector_local: np.ndarray
    joint_name: tuple
    joint_type: np.ndarray
    joint_body_a: np.ndarray
    joint_body_b: np.ndarray
    joint_point_a: np.ndarray
    joint_point_b: np.ndarray
    joint_axis_a: np.ndarray
    joint_axis_b: np.ndarray
    joint_ref_a: np.ndarray
    joint_ref_b: np.ndarray
    joint_rotation: np.ndarray
    joint_length: np.ndarray
    driver_name: tuple
    driver_kind: np.ndarray
    driver_joint: np.ndarray
    driver_component: np.ndarray
    driver_body: np.ndarray
    driver_point_a: np.ndarray
    driver_point_b: np.ndarray
    driver_function: np.ndarray
    gravity: np.ndarray
    point_force_name: tuple
    point_force_body: np.ndarray
    point_force_point: np.ndarray
    point_force_frame: np.ndarray
    point_force_function: np.ndarray
    spring_name: tuple
    spring_point_a: np.ndarray
    spring_point_b: np.ndarray
    spring_stiffness: np.ndarray
    spring_damping: np.ndarray
    spring_free_length: np.ndarray
    spring_function: np.ndarray
    joint_force_name: tuple
    joint_force_joint: np.ndarray
    joint_force_component: np.ndarray
    joint_force_function: np.ndarray
    user_forces: tuple
    functions: TapeTable
    function_text: tuple

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        for arr in (self.functions.ops, self.functions.args, self.functions.start):
            arr.flags.writeable = False

    # sizes ---------------------------------------------------------------------------------
    n_body = property(lambda self: len(self.body_name))
    n_point = property(lambda self: len(self.point_name))
    n_vector = property(lambda self: len(self.vector_name))
    n_joint = property(lambda self: len(self.joint_name))
    n_driver = property(lambda self: len(self.driver_name))

    def joint_type_name(self, j: int) -> str:
        return JOINT_NAME[int(self.joint_type[j])]

    # inputs ------------------------------------------------------------------------------------
    @property
    def input_names(self) -> tuple[str, ...]:
        """The model's inputs (``System.add_input``, a model file's ``inputs``)."""
        return self.functions.input_names

    @property
    def inputs(self) -> dict[str, float]:
        """The inputs' current values, by name."""
        return dict(zip(self.input_names, self.functions.inputs[1:].tolist()))

    def set_inputs(self, values: dict | None = None, /, **named) -> None:
        """Set inputs by name: every analysis built on this compiled model reads them from
        its next evaluation on, held constant until set again (derivatives zero). Checked
        first: an unknown name or a value that is not a finite real number changes nothing."""
        given = {**(values or {}), **named}
        checked = {}
        for name, value in given.items():
            if name not in self.input_names:
                raise UnknownNameError("input", name, self.input_names)
            try:
                number = float(value)
            except (TypeError, ValueError):
                number = float("nan")
            if isinstance(value, bool) or not np.isfinite(number):
                raise ModelError(f"input {name!r} of {self.name!r} must be a finite number, got "
                                 f"{value!r}")
            checked[name] = number
        self.functions.set_inputs(checked)

    def index(self, kind: str, name: str) -> int:
        """Index of a named body, point (``"body.point"``), vector, joint or driver."""
        from ..errors import UnknownNameError
        names = {"body": self.body_name, "point": self.point_name, "vector": self.vector_name,
                 "joint": self.joint_name, "driver": self.driver_name}[kind]
        try:
            return names.index(name)
        except ValueError:
            raise UnknownNameError(kind, name, names) from None

    def arrays(self) -> dict[str, object]:
        """Every field as a plain value (arrays, tuples, numbers) for comparisons and reports."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "functions":
                out["function_ops"], out["function_args"], out["function_start"] = (
                    value.ops, value.args, value.start)
            elif f.name == "parameters":
                out[f.name] = dict(value)
            elif f.name == "user_forces":
                out[f.name] = tuple((n, tuple(p)) for n, p, _ in value)
            elif f.name != "source":
                out[f.name] = value
        return out

    def same_as(self, other: "CompiledModel") -> list[str]:
        """Names of the fields that differ from ``other`` (empty when identical)."""
        a, b = self.arrays(), other.arrays()
        diff = []
        for key in a:
            x, y = a[key], b[key]
            if isinstance(x, np.ndarray):
                same = (isinstance(y, np.ndarray) and x.shape == y.shape and x.dtype == y.dtype
                        and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))
            else:
                same = x == y
            if not same:
                diff.append(key)
        return diff



def compiled_model(model) -> CompiledModel:
    """``model`` as a :class:`CompiledModel`: a :class:`~kinedyn.model.System` is compiled
    (which validates it); anything else is a TypeError that says what is expected."""
    from .system import System
    if isinstance(model, System):
        return model.compile()
    if not isinstance(model, CompiledModel):
        raise TypeError(f"expected a kinedyn System or CompiledModel (kinedyn.models.get(name), "
                        f"kinedyn.load(path)), got {type(model).__name__}")
    return model


def undefined(model: CompiledModel, times) -> str | None:
    """Why a run over ``times`` (or a function returning them) failed, if a function of time
    was undefined at one of them, or a driven distance not positive: the first such function
    and time, in words; else None. Checked on failures only (a whole run's times: microseconds
    each)."""
    times = np.asarray(times() if callable(times) else times, float).ravel()
    found = first_undefined(model.functions, times)
    if found is not None:
        k, t, what = found
        return (f"the function of time {model.function_text[k]!r} {what} at t = {t:.9g} s"
                + _inputs_read(model, k))
    return nonpositive_distance(model, times)


def _inputs_read(model: CompiledModel, k: int) -> str:
    """The values of the inputs function ``k`` reads, in words ("" if none)."""
    tab = model.functions
    ops, args = tab.ops[tab.start[k]:tab.start[k + 1]], tab.args[tab.start[k]:tab.start[k + 1]]
    slots = sorted({int(a) for o, a in zip(ops, args) if o == INPUT})
    if not slots:
        return ""
    return " with the input(s) " + ", ".join(f"{tab.input_names[s - 1]} = {tab.inputs[s]:.6g}"
                                             for s in slots)


def nonpositive_distance(model: CompiledModel, times) -> str | None:
    """The first distance driver whose function is not positive at one of ``times`` (or a
    function returning them, called only for a model with distance drivers), with the
    time and value, in words; else None. A distance driver's constraint holds the squared
    distance, so a negative function would drive the points apart by its magnitude and a zero
    one makes the constraint's gradient vanish: each run checks its times up front
    (:func:`require_positive_distances`), in one compiled pass (~50 ns per time)."""
    drivers = np.flatnonzero(model.driver_kind == DRIVER_CODE["distance"])
    if drivers.size == 0:
        return None
    table = model.functions
    functions = np.ascontiguousarray(model.driver_function[drivers, 0])
    times = np.asarray(times() if callable(times) else times, float).ravel()
    with functions_defined(model, times):
        k, i = first_nonpositive(table.ops, table.args, table.start, functions, times,
                                 table.inputs)
    if k < 0:
        return None
    f = functions[i]
    value = table.evaluate(times[k])[f, 0]
    return (f"the distance driver {model.driver_name[drivers[i]]!r} drives the distance "
            f"{model.function_text[f]!r}, which is {value:.6g} at t = {times[k]:.9g} s: a driven "
            "distance must stay positive (its constraint holds the squared distance)")


def require_positive_distances(model: CompiledModel, times) -> None:
    """A :class:`ModelError` naming the first driven distance that is not positive at one of a
    run's ``times`` (or a function returning them, called only for a model with distance
    drivers) (:func:`nonpositive_distance`)."""
    why = nonpositive_distance(model, times)
    if why is not None:
        raise ModelError(why)


class functions_defined:  # noqa: N801 (used as a context: ``with functions_defined(...):``)
    """Context turning a ZeroDivisionError (or a LinAlgError: a NaN in compiled LAPACK) of
    compiled code into a :class:`ModelError` that names the function of time that was
    undefined and the first of ``times`` (those the code evaluated: steps, stages; or a
    function returning them, called only then) where it was (:func:`undefined`); and a failed
    user force (:class:`.user_forces.UserForceFailure`) into one that names the force. Any
    other such error passes on as it is. A plain class: entered at every one-step ``solve()``, it costs a
    fraction of a microsecond."""
    __slots__ = ("model", "times")

    def __init__(self, model: CompiledModel, times):
        self.model, self.times = model, times

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, traceback) -> bool:
        if kind is not None and issubclass(kind, UserForceFailure):
            raise ModelError(failure(self.model), location="user_forces") from None
        # a zero divisor raises; a NaN reaches compiled LAPACK, which refuses it
        if kind is None or not issubclass(kind, (ZeroDivisionError, np.linalg.LinAlgError)):
            return False
        why = undefined(self.model, self.times)
        if why is None:
            return False
        raise ModelError(why) from None
