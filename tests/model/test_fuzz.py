"""Property: a mutated model file either loads or raises ModelError, never another exception.

Seeds are valid model files that use every joint type, driver kind and force kind plus two
library twins. Mutations act on the data (replace, delete, duplicate, insert, swap) and on the
text (truncate, splice a character). A mutant that does load must also survive the topology
analysis and an exact save/load round trip.
"""
from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kinedyn
from kinedyn import ModelError
from kinedyn.model.entries import Body, Driver, Force, Joint
from kinedyn.model.files import TOP_KEYS, to_dict
from kinedyn.topology import Topology

from .bases import planar, spatial

TWINS = Path(__file__).resolve().parents[2] / "examples" / "models"


def _seeds() -> dict[str, dict]:
    from formulations.catalog import all_kinds_planar, all_kinds_spatial
    seeds = {"spatial": spatial(), "planar": planar(),
             "all-kinds-3d": to_dict(all_kinds_spatial()),
             "all-kinds-2d": to_dict(all_kinds_planar())}
    for name in ("four-bar-driven", "stewart-paper"):
        seeds[name] = yaml.safe_load((TWINS / f"{name}.yaml").read_text())
    return seeds


SEEDS = _seeds()

NASTY = ["ground", "A", "B", "O", "z", "revolute", "spherical", "prismatic", "free", "pose",
         "joint", "spring", "t", "pi", "-1", "0", "1e400", "9**9**9", "1/0", "sin(t)",
         "sqrt(-1)", "log(0)", "acos(2)", "__import__('os')", "().__class__", "x" * 3000,
         "a.b", "", " ", "[1, 2]", "crank_length", "step(t)", "atan2(1)", "10**100", "2**70",
         "max(t, 1, 2)", "lambda: 0", "t if t else 1"]
FIELDS = sorted({f for cls in (Body, Joint, Driver, Force) for f in cls.__dataclass_fields__}
                | set(TOP_KEYS))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.integers(),
                    st.floats(), st.sampled_from(NASTY), st.text(max_size=8))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=4),
                   st.lists(st.lists(st.floats(-2, 2), min_size=3, max_size=3), min_size=3,
                            max_size=3),
                   st.dictionaries(st.sampled_from(NASTY[:12]), SCALARS, max_size=2))


def _mutate(doc, draw) -> None:
    """Walk down a random path of the data and change what is there."""
    node = doc
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        child = node[key]
        if isinstance(child, (dict, list)) and child and draw(st.integers(0, 3)) > 0:
            node = child
            continue
        op = draw(st.sampled_from(["replace", "delete", "duplicate", "insert", "swap"]))
        if op == "replace":
            node[key] = draw(VALUES)
        elif op == "delete":
            del node[key]
        elif op == "duplicate":
            if isinstance(node, list):
                node.insert(key, copy.deepcopy(child))
            else:
                node[draw(st.sampled_from(NASTY[:12]))] = copy.deepcopy(child)
        elif op == "insert":
            if isinstance(node, list):
                node.insert(key, draw(VALUES))
            else:
                node[draw(st.sampled_from(FIELDS) | st.text(max_size=6))] = draw(VALUES)
        else:
            other = draw(st.sampled_from(keys))
            node[key], node[other] = node[other], node[key]
        return


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_model_files_raise_only_model_error(data):
    doc = copy.deepcopy(SEEDS[data.draw(st.sampled_from(sorted(SEEDS)), label="seed")])
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        _mutate(doc, data.draw)
    fmt = data.draw(st.sampled_from(["yaml", "json"]), label="format")
    text = (yaml.safe_dump(doc, sort_keys=False, allow_unicode=True) if fmt == "yaml"
            else json.dumps(doc))
    if data.draw(st.integers(0, 4), label="text mutation") == 0:
        cut = data.draw(st.integers(0, len(text)))
        text = text[:cut] + data.draw(st.sampled_from(["", ":", "[", "{", "\t", "- ", "\x00"])) \
            + text[cut + data.draw(st.integers(0, 3)):]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"mutant.{fmt}"
        path.write_text(text, encoding="utf-8")
        try:
            system = kinedyn.load(path)
        except ModelError as err:
            assert err.file == str(path)
            return
        model = system.compile()
        Topology(model).summary()
        back = Path(tmp) / f"back.{fmt}"
        kinedyn.save(system, back)
        assert kinedyn.load(back).compile().same_as(model) == []
