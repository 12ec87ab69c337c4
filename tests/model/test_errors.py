"""Bad model files: every error is a ModelError naming the file, the location and the problem."""
from __future__ import annotations

import json

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
