"""Bad model files: every error is a ModelError naming the file, the location and the problem."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml

import kinedyn
from kinedyn import ModelError

from .bases import planar, spatial


def _set(path: str, value):
    """A mutation setting ``path`` (dots and [i], as in error locations) to ``value``."""
    def mutate(data):
        *parents, last = _split(path)
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    return mutate


def _split(path):
    out = []
    for part in path.split("."):
        while "[" in part:
            head, _, rest = part.partition("[")
            if head:
                out.append(head)
            index, _, part = rest.partition("]")
            out.append(int(index))
        if part:
            out.append(part)
    return out


def _add_body(data):
    data["bodies"].append({"name": "loose", "mass": 1.0, "inertia": [1, 1, 1]})


def _duplicate_body(data):
    data["bodies"][1]["name"] = "a"


def _negative_distance_driver(data):
    data["drivers"][0] = {"name": "reach", "kind": "distance", "body_a": "ground",
                          "point_a": "Q", "body_b": "b", "point_b": "F", "function": "-L"}


# (id, base model, mutation, expected location, words of the problem)
CASES = [
    ("unknown body", spatial, _set("joints[1].body_b", "nobody"), "joints[1].body_b",
     "unknown body 'nobody'"),
    ("unknown point", spatial, _set("joints[3].point_b", "H"), "joints[3].point_b",
     "unknown point of body 'c' 'H'; known: F, G"),
    ("unknown vector", spatial, _set("joints[2].axis_b", "w"), "joints[2].axis_b",
     "unknown vector of body 'c' 'w'"),
    ("unknown driver joint", spatial, _set("drivers[0].joint", "elbow"), "drivers[0].joint",
     "unknown joint 'elbow'"),
    ("duplicate body", spatial, _duplicate_body, "bodies[1].name", "duplicate body name 'a'"),
    ("duplicate joint", spatial, _set("joints[2].name", "ball"), "joints[2].name",
     "duplicate joint name 'ball'"),
    ("body named ground", spatial, _set("bodies[0].name", "ground"), "bodies[0].name",
     "the ground body exists already"),
    ("zero mass", spatial, _set("bodies[1].mass", 0), "bodies[1].mass", "mass must be positive"),
    ("negative mass", spatial, _set("bodies[2].mass", "-L"), "bodies[2].mass",
     "mass must be positive, got -0.5"),
    ("inertia not positive definite", spatial,
     _set("bodies[1].inertia", [[0.1, 0, 0], [0, -0.1, 0], [0, 0, 0.01]]), "bodies[1].inertia",
     "not positive definite"),
    ("inertia not symmetric", spatial,
     _set("bodies[1].inertia", [[0.1, 0.05, 0], [0, 0.1, 0], [0, 0, 0.01]]), "bodies[1].inertia",
     "not symmetric"),
    ("inertia products not positive definite", spatial,
     _set("bodies[2].inertia", [1, 1, 1, 2, 0, 0]), "bodies[2].inertia", "not positive definite"),
    ("planar inertia zero", planar, _set("bodies[0].inertia", 0), "bodies[0].inertia",
     "inertia must be positive"),
    ("zero-length axis", spatial, _set("bodies[0].vectors.z", [0, 0, 0]), "bodies[0].vectors.z",
     "zero-length vector"),
    ("zero-length ground axis", spatial, _set("ground.vectors.z", [0, "L-L", 0]),
     "ground.vectors.z", "zero-length vector"),
    ("joint to itself", spatial, _set("joints[1].body_b", "a"), "joints[1].body_b",
     "connects body 'a' to itself"),
    ("not connected", spatial, _add_body, "bodies[3]", "not connected to the ground"),
    ("unknown joint type", spatial, _set("joints[0].type", "hinge"), "joints[0].type",
     "unknown joint type 'hinge'"),
    ("joint of the other dimension", planar, _set("joints[0].type", "spherical"),
     "joints[0].type", "exists only in spatial models"),
    ("field a joint does not take", spatial, _set("joints[1].axis_a", "z"), "joints[1].axis_a",
     "spherical joint does not take axis_a"),
    ("unparseable expression", spatial, _set("bodies[0].mass", "2*(L"), "bodies[0].mass",
     "cannot parse expression"),
    ("unsafe call", spatial, _set("drivers[0].function", "__import__('os').system('ls')"),
     "drivers[0].function", "not allowed"),
    ("unsafe attribute", spatial, _set("bodies[0].com[0]", "().__class__"), "bodies[0].com[0]",
     "not allowed"),
    ("unsafe lambda", spatial, _set("forces[0].stiffness", "(lambda: 1)()"),
     "forces[0].stiffness", "not allowed"),
    ("string literal", spatial, _set("parameters.L", "'0.5'"), "parameters[1].value",
     "only numbers are allowed"),
    ("unknown name", spatial, _set("bodies[0].mass", "mass_of_a"), "bodies[0].mass",
     "unknown name 'mass_of_a'"),
    ("time in a constant", spatial, _set("bodies[0].mass", "1 + t"), "bodies[0].mass",
     "time 't' is not allowed here"),
    ("division by zero", spatial, _set("bodies[0].mass", "1/(L-L)"), "bodies[0].mass",
     "not finite"),
    ("infinite constant in a function of time", spatial,
     _set("drivers[0].function", "sinh(1000)*t"), "drivers[0].function", "evaluates to inf"),
    ("complex constant in a function of time", spatial,
     _set("drivers[0].function", "t*log(-1)"), "drivers[0].function", "is not a real number"),
    ("joint name with a dot", spatial, _set("joints[1].name", "a.b"), "joints[1].name",
     "joint name 'a.b' must not contain '.'"),
    ("negative driven distance", spatial, _negative_distance_driver, "drivers[0].function",
     "a driven distance must be positive, got '-L'"),
    ("3-D point in a planar model", planar, _set("bodies[0].points.A", [0, 0, 0]),
     "bodies[0].points.A", "expected 2 components, got 3 (this is a planar model)"),
    ("2-D point in a spatial model", spatial, _set("bodies[1].points.F", [0.5, 0]),
     "bodies[1].points.F", "expected 3 components, got 2 (this is a spatial model)"),
    ("2-D gravity in a spatial model", spatial, _set("gravity", [0, -9.81]), "gravity",
     "expected 3 components"),
    ("planar inertia as a matrix", planar, _set("bodies[0].inertia", [[1, 0], [0, 1]]),
     "bodies[0].inertia", "planar inertia is one number"),
    ("dimension 4", spatial, _set("dim", 4), "dim", "dim must be 2 or 3"),
    ("unknown top-level key", spatial, _set("motors", []), "motors", "unknown key 'motors'"),
    ("missing joint type", spatial, _set("joints[2].type", None), "joints[2].type",
     "missing type"),
    ("unknown driver kind", spatial, _set("drivers[0].kind", "speed"), "drivers[0].kind",
     "unknown driver kind 'speed'"),
    ("negative stiffness", spatial, _set("forces[0].stiffness", -1), "forces[0]",
     "must not be negative"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_bad_input_names_file_location_and_problem(tmp_path, case, fmt):
    _, base, mutate, location, words = case
    data = base()
    mutate(data)
    path = tmp_path / f"model.{fmt}"
    path.write_text(yaml.safe_dump(data, sort_keys=False) if fmt == "yaml" else json.dumps(data))
    with pytest.raises(ModelError) as info:
        kinedyn.load(path)
    err = info.value
    assert err.file == str(path)
    assert err.location == location
    assert words in err.problem
    assert str(err).startswith(f"{path}: {location}: ")


@pytest.mark.parametrize("base", [spatial, planar])
def test_the_base_models_are_valid(tmp_path, base):
    """The cases above fail because of their mutation, not because the base is broken."""
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(base()))
    model = kinedyn.load(path).compile()
    assert model.n_joint == len(base()["joints"])


def test_builder_errors_name_the_location_without_a_file():
    s = kinedyn.System("builder", dim=3)
    s.add_body("a", mass=-1, inertia=[1, 1, 1])
    s.add_joint("j", "spherical", "ground", "a", point_a="O", point_b="O")
    with pytest.raises(ModelError) as info:
        s.compile()
    assert info.value.file is None and info.value.location == "bodies[0].mass"


@pytest.mark.parametrize("text, fmt, words", [
    ("name: x\nground:\n  points:\n    A: [0, 0, 0]\n    A: [1, 0, 0]\n", "yaml",
     "duplicate key 'A'"),
    ('{"name": "x", "bodies": [], "name": "y"}', "json", "duplicate key 'name'"),
    ("bodies: [\n", "yaml", "invalid YAML"),
    ("{\"bodies\": [}", "json", "invalid JSON"),
    ("- just\n- a list\n", "yaml", "mapping at the top level"),
    ("name: !!python/object/apply:os.system ['ls']\n", "yaml", "invalid YAML"),
])
def test_unreadable_files(tmp_path, text, fmt, words):
    path = tmp_path / f"model.{fmt}"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        kinedyn.load(path)
    assert info.value.file == str(path) and words in str(info.value)


def test_missing_file_and_unknown_extension(tmp_path):
    with pytest.raises(ModelError, match="model file not found"):
        kinedyn.load(tmp_path / "nothing.yaml")
    with pytest.raises(ModelError, match="unknown model file extension"):
        kinedyn.save(kinedyn.models.get("four-bar"), tmp_path / "model.txt")


def test_model_error_pickles_with_its_location():
    import pickle
    err = ModelError("mass must be positive", file="m.yaml", location="bodies[0].mass")
    back = pickle.loads(pickle.dumps(err))
    assert (back.file, back.location, str(back)) == (err.file, err.location, str(err))



def test_a_function_of_time_dividing_by_zero_is_named_with_its_time():
    """Only at t = 0.25 (the program is built, and the runs go, up to there): the kinematic
    and the dynamic runs (explicit, HHT, SciPy's reference, the relative formulation's) stop
    with a ModelError naming the function and the time, not a bare ZeroDivisionError from
    compiled code."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.dynamics.relative import RelativeDynamics
    from kinedyn.formulations.relative import Relative
    from kinedyn.kinematics import Kinematics
    from kinedyn.models.planar import four_bar
    driven = four_bar()
    driven.add_driver("crank_drive", "joint", joint="A",
                      function="crank_angle + 0.01*t/(t - 0.25)")
    kin = Kinematics(driven.compile())
    assert np.isfinite(kin.simulate(0.21875, 0.03125).q).all()  # before it: fine
    with pytest.raises(ModelError, match=r"'crank_angle \+ 0.01\*t/\(t - 0.25\)' divides by "
                                         r"zero at t = 0.25 s"):
        kin.simulate(0.5, 0.03125)
    pushed = four_bar()
    # bounded (sinc): the adaptive reference integrator reaches t = 0.25, its segment's end
    push = "0.1*sin(t - 0.25)/(t - 0.25)"
    pushed.add_force("push", "point", body="coupler", point="B", force=["0", push])
    named = re.escape(f"'{push}' divides by zero at t = 0.25 s")
    for options in ({}, {"method": "index3"}, {"method": "partitioning", "integrator": "reference"}):
        with pytest.raises(ModelError, match=named):
            Dynamics(pushed.compile(), **options).simulate(0.5, 0.03125)
    relative = RelativeDynamics(Relative(pushed.compile()), integrator="rk4")
    with pytest.raises(ModelError, match=named):
        relative.simulate(0.5, 0.03125)


def test_a_function_of_time_dividing_by_zero_at_the_start_is_named():
    """At t0 the set-up itself evaluates the functions (assembly, consistent velocities, the
    forces of the first build; the formulations evaluate all functions at once): a ModelError
    there too, in the constructors."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.dynamics.relative import RelativeDynamics
    from kinedyn.formulations.relative import Relative
    from kinedyn.models.planar import four_bar
    pushed = four_bar()
    pushed.add_force("push", "point", body="coupler", point="B", force=["0", "0.1/t"])
    driven = four_bar()
    driven.add_driver("crank_drive", "joint", joint="A", function="crank_angle + sin(t)/t")
    for model, text in ((pushed, "0.1/t"), (driven, "crank_angle + sin(t)/t")):
        named = re.escape(f"'{text}' divides by zero at t = 0 s")
        for method in ("augmented", "index3"):
            with pytest.raises(ModelError, match=named):
                Dynamics(model.compile(), method=method)
        with pytest.raises(ModelError, match=named):
            RelativeDynamics(Relative(model.compile()))


def test_a_function_of_time_that_is_not_finite_is_named_with_its_time():
    """sqrt of a negative number is NaN in compiled code, with no error: the run that meets it
    fails (Newton, a singular matrix, SciPy's QR of a re-partitioning, a state turned NaN) and
    the error names the function and the time instead of the symptom."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.kinematics import Kinematics
    from kinedyn.models.planar import four_bar
    at_start = four_bar()
    at_start.add_driver("crank_drive", "joint", joint="A", function="crank_angle + sqrt(t - 0.5)")
    with pytest.raises(ModelError, match=re.escape("'crank_angle + sqrt(t - 0.5)' is not finite "
                                                   "(value nan, rate nan, second rate nan) at "
                                                   "t = 0 s")):
        Kinematics(at_start.compile())
    later = four_bar()
    later.add_driver("crank_drive", "joint", joint="A", function="crank_angle + sqrt(0.505 - t)")
    with pytest.raises(ModelError, match=re.escape("'crank_angle + sqrt(0.505 - t)' is not "
                                                   "finite") + ".* at t = 0.51 s"):
        Kinematics(later.compile()).simulate(1.0, 0.01)
    pushed = four_bar()
    pushed.add_force("push", "point", body="crank", point="B", force=["sqrt(0.052 - t)", "0"])
    named = re.escape("'sqrt(0.052 - t)' is not finite") + r".* at t = (\S+) s"
    # the fixed steps' first stage past 0.052 is RK4's half step; SciPy's is its own
    for options, first in (({"method": "augmented"}, 0.055), ({"method": "partitioning"}, 0.055),
                           ({"method": "index3"}, 0.055),
                           ({"method": "partitioning", "integrator": "reference"}, None)):
        with pytest.raises(ModelError, match=named) as caught:
            Dynamics(pushed.compile(), **options).simulate(0.1, 0.01)
        t = float(re.search(named, str(caught.value)).group(1))
        assert t == first if first is not None else 0.052 < t <= 0.06


def test_builder_arguments_of_the_wrong_kind_are_named():
    """Points given as a list, parameter overrides that are not a mapping: ModelErrors that
    say what was expected, not a TypeError or AttributeError from inside the builder."""
    system = kinedyn.System("s", dim=2)
    system.add_body("rod", mass=1.0, inertia=0.1, points=[1, 2])
    system.add_joint("pin", "revolute", body_a="ground", point_a="O", body_b="rod", point_b="A")
    with pytest.raises(ModelError, match="points must be a mapping of name -> coordinates"):
        system.compile()
    from kinedyn.models import get
    with pytest.raises(ModelError, match="parameters must be a mapping of name -> value, got list"):
        get("four-bar").compile([1, 2])
