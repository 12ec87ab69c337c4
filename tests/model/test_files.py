"""Model files: exact save/load round trips (YAML and JSON), safe parsing, parameters."""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

import kinedyn
from kinedyn import ModelError
from kinedyn.model import expressions as ex
from kinedyn.model.files import to_dict
from kinedyn.models import MODELS

from .bases import spatial


def _systems():
    from formulations.catalog import all_kinds_planar, all_kinds_spatial
    out = {name: info.build for name, info in MODELS.items()}
    out["all-kinds-3d"] = all_kinds_spatial
    out["all-kinds-2d"] = all_kinds_planar
    return out


SYSTEMS = _systems()


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_round_trip_is_exact(tmp_path, name, fmt):
    system = SYSTEMS[name]()
    path = kinedyn.save(system, tmp_path / f"{name}.{fmt}")
    back = kinedyn.load(path)
    assert to_dict(back) == to_dict(system)           # the entries, as written
    assert back.compile().same_as(system.compile()) == []   # every compiled array, bit for bit
    again = kinedyn.save(back, tmp_path / f"again.{fmt}")
    assert again.read_text() == path.read_text()       # saving is a fixed point


def test_same_as_sees_a_one_ulp_change(tmp_path):
    """The round-trip comparison can fail: a change in the last bit of one number is found."""
    system = MODELS["four-bar"].build()
    changed = system.copy()
    changed.bodies[0].mass = math.nextafter(1.0, 2.0)
    assert system.compile().same_as(changed.compile()) == ["body_mass"]


def test_load_and_save_name_arguments_of_the_wrong_kind(tmp_path):
    with pytest.raises(TypeError, match=r"load needs the model file's path \(a str or "
                                        r"os.PathLike\), got None"):
        kinedyn.load(None)
    with pytest.raises(TypeError, match="save needs a kinedyn.System, got CompiledModel"):
        kinedyn.save(MODELS["four-bar"].build().compile(), tmp_path / "x.yaml")
    with pytest.raises(TypeError, match="save needs the model file's path"):
        kinedyn.save(MODELS["four-bar"].build(), 3)


def test_parameters_are_symbolic_and_can_be_overridden():
    system = MODELS["four-bar-driven"].build()
    base = system.compile()
    longer = system.compile({"crank_length": 0.15})
    crank = base.index("body", "crank")
    assert longer.body_com[crank][0] == pytest.approx(0.075)
    assert longer.body_inertia[crank] == pytest.approx(1.0 * 0.15**2 / 12)
    assert base.body_inertia[crank] == pytest.approx(1.0 * 0.1**2 / 12)
    with pytest.raises(ModelError, match="unknown parameter 'crank'"):
        system.compile({"crank": 1.0})


def test_parameters_may_use_earlier_parameters(tmp_path):
    data = spatial()
    data["parameters"] = [{"name": "L", "value": 0.5}, {"name": "g", "value": "2*L + 8.81"}]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    model = kinedyn.load(path).compile()
    assert model.gravity.tolist() == [0, 0, -9.81]
    data["parameters"].reverse()  # g before L: L is unknown when g is evaluated
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ModelError, match="unknown name 'L'") as info:
        kinedyn.load(path)
    assert info.value.location == "parameters[0].value"


@pytest.mark.parametrize("text, value", [
    ("2*pi", 2 * math.pi), ("sqrt(2)/2", math.sqrt(2) / 2), ("-L**2", -0.25), ("e", math.e),
    ("atan2(1, -1)", 3 * math.pi / 4), ("min(L, 0.2) + max(L, 0.2)", 0.7), ("abs(-L)", 0.5),
    ("step(L - 1)", 0.0), ("step(0)", 1.0), ("1e-3", 1e-3), ("+3", 3.0), ("2**-2", 0.25),
])
def test_number_expressions(text, value):
    assert ex.evaluate_number(text, {"L": 0.5}) == pytest.approx(value, rel=1e-15)


def test_a_number_is_kept_by_the_values_of_the_parameters_it_names(monkeypatch):
    """The cache of evaluated fields (a design study compiles its model once per case): another
    value of a parameter the text names gives its new value, another value of one it does not
    name reuses the old; an error is not kept, and names its own location each time."""
    monkeypatch.setattr(ex, "_NUMBERS", {})
    evaluated = []
    fresh = ex._evaluated
    monkeypatch.setattr(ex, "_evaluated", lambda *a: evaluated.append(a[0]) or fresh(*a))
    text = "2*L + sin(pi/7)"
    first = ex.evaluate_number(text, {"L": 0.5, "M": 1.0})
    assert first == pytest.approx(1.0 + math.sin(math.pi / 7), rel=1e-15)
    assert ex.evaluate_number(text, {"L": 0.5, "M": 3.0}) == first
    assert ex.evaluate_number(text, {"L": 0.25, "M": 3.0}) == pytest.approx(
        0.5 + math.sin(math.pi / 7), rel=1e-15)
    assert len(evaluated) == 2
    assert ex.evaluate_number("pi", {"pi": 3.0}) == 3.0 != ex.evaluate_number("pi", {})
    for where in ("a.b", "c.d"):
        with pytest.raises(ModelError, match="unknown name 'L'") as info:
            ex.evaluate_number("2*L", {}, location=where)
        assert info.value.location == where


def test_time_functions_give_value_and_two_derivatives():
    """The tape of a function of time matches its derivatives by finite differences."""
    system = MODELS["stewart-paper"].build()
    model = system.compile()
    h = 1e-4
    for t in (0.0, 0.37, 1.1):
        f0, fp, fm = (model.functions.evaluate(x) for x in (t, t + h, t - h))
        assert np.allclose(f0[:, 1], (fp[:, 0] - fm[:, 0]) / (2 * h), atol=1e-6)
        assert np.allclose(f0[:, 2], (fp[:, 0] - 2 * f0[:, 0] + fm[:, 0]) / h**2, atol=1e-4)
    # the pose driver's rotation entries are those of R = Rz(a) Ry(b) Rx(c)
    k = model.index("driver", "terminal_pose")
    ids = model.driver_function[k]
    vals = model.functions.evaluate(0.2)[:, 0]
    a, b, c = (0.05 * math.sin(w * math.pi * 0.2) for w in (2, 4, 6))
    from kinedyn.model.rotations import euler_to_matrix
    assert np.allclose(vals[ids[3:12]].reshape(3, 3), euler_to_matrix([a, b, c], "ZYX"),
                       atol=1e-14)


@pytest.mark.parametrize("text", ["__import__('os').system('true')", "open('/etc/passwd')",
                                  "(1).__class__", "[1, 2]", "{'a': 1}", "t if t else 1",
                                  "lambda: 1", "eval('1')", "sin(t, 1)", "sin(x=t)", "1 < 2",
                                  "'a' * 3", "t[0]", "9**99"])
def test_unsafe_or_invalid_expressions_are_rejected(text):
    with pytest.raises(ModelError):
        ex.parse(text, {}, allow_time=True)


def test_user_forces_are_not_saved(tmp_path):
    system = MODELS["double-pendulum"].build()
    system.add_user_force("drag", [("rod1", "B")], lambda t, p, v, f: None)
    with pytest.raises(ModelError, match="cannot be saved"):
        kinedyn.save(system, tmp_path / "m.yaml")
