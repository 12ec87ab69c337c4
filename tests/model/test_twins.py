"""Every library model has a YAML twin in examples/models/ that compiles to the same arrays."""
from pathlib import Path

import numpy as np
import pytest

import kinedyn
from kinedyn.models import MODELS

TWINS = Path(__file__).resolve().parents[2] / "examples" / "models"


def test_every_model_has_exactly_one_twin():
    assert sorted(p.stem for p in TWINS.glob("*.yaml")) == sorted(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_twin_compiles_to_the_same_arrays(name):
    built = MODELS[name].build().compile()
    loaded = kinedyn.load(TWINS / f"{name}.yaml").compile()
    # if this fails after a model changed, regenerate the twin with
    # kinedyn.save(kinedyn.models.get(name), path) and restore its comment header
    assert built.same_as(loaded) == []
    assert loaded.source == str(TWINS / f"{name}.yaml")
    # same_as compares every field; spot-check that it does look at the numbers
    assert np.array_equal(built.body_mass, loaded.body_mass)


@pytest.mark.parametrize("name", ["four-bar", "stewart-paper"])
def test_twin_parameters_change_the_model(name):
    """Parameters in a twin are used symbolically: overriding one moves the geometry."""
    system = kinedyn.load(TWINS / f"{name}.yaml")
    key = {"four-bar": "crank_length", "stewart-paper": "handle_length"}[name]
    base = system.compile()
    bigger = system.compile({key: 2 * base.parameters[key]})
    body = {"four-bar": "crank", "stewart-paper": "handle1"}[name]
    b = base.index("body", body)
    tip = base.index("point", f"{body}.B")
    assert bigger.point_local[tip][0] == pytest.approx(2 * base.point_local[tip][0])
    assert bigger.body_com[b][0] == pytest.approx(2 * base.body_com[b][0])
