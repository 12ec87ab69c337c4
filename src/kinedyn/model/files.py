"""Model files: YAML and JSON, loaded safely, checked with locations, saved exactly.

The format is documented in ``docs/model-format.md``. Loading never executes code: YAML is read
with ``yaml.safe_load`` and every expression goes through :mod:`kinedyn.model.expressions`.
Saving writes the entries exactly as they are stored, so ``load(save(s))`` compiles to the same
arrays as ``s``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from ..errors import ModelError
from .entries import Body, Driver, Force, Input, Joint, Parameter
from .system import GROUND, System

TOP_KEYS = ("name", "dim", "description", "gravity", "euler_sequence", "parameters", "inputs",
            "ground", "bodies", "joints", "drivers", "forces")
# fields that must be strings (names and keywords); everything else is checked by compile()
_STRING_FIELDS = {"name", "type", "kind", "body", "body_a", "body_b", "point", "point_a",
                  "point_b", "axis_a", "axis_b", "ref_a", "ref_b", "joint", "component", "frame",
                  "sequence", "description"}
_ENTRIES = {"bodies": Body, "joints": Joint, "drivers": Driver, "forces": Force}
_REQUIRED = {"bodies": ("name",), "joints": ("name", "type", "body_a", "body_b"),
             "drivers": ("name", "kind"), "forces": ("name", "kind")}


def _file_path(path, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):  # Path(None) says only "expected str, bytes"
        raise TypeError(f"{what} needs the model file's path (a str or os.PathLike), got "
                        f"{path!r}")
    return Path(path)


def load(path) -> System:
    """Read and validate a model file; errors name the file and the location inside it."""
    path = _file_path(path, "load")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelError("model file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read model file: {exc}", file=str(path)) from None
    data = parse_text(text, path)
    try:
        system = from_dict(data)
        system.source = str(path)
        system.validate()
    except ModelError as err:
        raise err.at(file=str(path)) from None
    return system


def parse_text(text: str, path: Path | str = "<string>") -> Any:
    """YAML or JSON text -> plain data (JSON is valid YAML, but JSON files get JSON errors)."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text, object_pairs_hook=_unique_json_object)
        except _DuplicateKey as exc:
            raise ModelError(f"duplicate key {exc.key!r} (a name given twice)",
                             file=str(path)) from None
        except json.JSONDecodeError as exc:
            raise ModelError(f"invalid JSON: {exc.msg}", file=str(path),
                             location=f"line {exc.lineno}, column {exc.colno}") from None
        except RecursionError:
            raise ModelError("invalid JSON: nested too deeply", file=str(path)) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        loc = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        raise ModelError(f"invalid YAML: {exc.problem or exc}", file=str(path),
                         location=loc) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise ModelError(f"invalid YAML: {exc}", file=str(path)) from None


class _DuplicateKey(ValueError):
    def __init__(self, key):
        super().__init__(key)
        self.key = key


def _unique_json_object(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that rejects a key given twice in one mapping.

    Plain YAML keeps the last value silently, so two points with the same name would lose one.
    """

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # unhashable key: the base class reports it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"duplicate key {key!r} (a name given twice)", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def from_dict(data: Any) -> System:
    """Build a :class:`System` from file data, checking its structure with locations."""
    if not isinstance(data, dict):
        raise ModelError(f"a model file must be a mapping at the top level, got "
                         f"{type(data).__name__}")
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise ModelError(f"unknown key {unknown[0]!r}; allowed: {', '.join(TOP_KEYS)}",
                         location=str(unknown[0]))
    dim = data.get("dim", 3)
    if isinstance(dim, bool) or dim not in (2, 3):
        raise ModelError(f"dim must be 2 or 3, got {dim!r}", location="dim")
    for key in ("name", "description", "euler_sequence"):
        if key in data and data[key] is not None and not isinstance(data[key], str):
            raise ModelError(f"{key} must be a string", location=key)
    s = System(data.get("name") or "model", dim, description=data.get("description"),
               euler_sequence=data.get("euler_sequence") or "ZYX")
    s.gravity = data.get("gravity")
    s.parameters = _named_values(data.get("parameters"), "parameters", Parameter)
    s.inputs = _named_values(data.get("inputs"), "inputs", Input)
    ground = data.get("ground") or {}
    if not isinstance(ground, dict):
        raise ModelError("ground must be a mapping with points and vectors", location="ground")
    extra = set(ground) - {"points", "vectors"}
    if extra:
        raise ModelError(f"ground takes only points and vectors, not {sorted(extra)[0]!r}",
                         location="ground")
    s.ground = Body(GROUND, points=_mapping(ground.get("points"), "ground.points"),
                    vectors=_mapping(ground.get("vectors"), "ground.vectors"))
    for key, cls in _ENTRIES.items():
        setattr(s, key, _entries(data.get(key), key, cls))
    return s


def _named_values(value, key: str, cls):
    """The ``parameters`` (``cls`` Parameter: value required) or ``inputs`` (Input: value 0 by
    default) of a file: a mapping name: value, or a list of {name, value, description}."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [cls(str(k), v) for k, v in value.items()]
    if not isinstance(value, list):
        raise ModelError(f"{key} must be a mapping name: value or a list of "
                         "{name, value, description}", location=key)
    out = []
    for i, p in enumerate(value):
        loc = f"{key}[{i}]"
        if not isinstance(p, dict):
            raise ModelError("expected {name, value, description}", location=loc)
        extra = set(p) - {"name", "value", "description"}
        if extra:
            raise ModelError(f"unknown key {sorted(map(str, extra))[0]!r}; allowed: name, value, "
                             "description", location=loc)
        for field in ("name", "description"):
            if p.get(field) is not None and not isinstance(p[field], str):
                raise ModelError(f"{field} must be a string", location=f"{loc}.{field}")
        if "name" not in p or (cls is Parameter and "value" not in p):
            raise ModelError("a parameter needs name and value" if cls is Parameter else
                             "an input needs a name", location=loc)
        out.append(cls(p["name"], p.get("value", 0.0), p.get("description")))
    return out


def _mapping(value, loc):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ModelError("expected a mapping of name -> coordinates", location=loc)
    for k in value:
        if not isinstance(k, str):
            raise ModelError(f"name {k!r} must be a string", location=loc)
    return dict(value)


def _entries(value, key, cls):
    if value is None:
        return []
    if not isinstance(value, list):
        raise ModelError(f"{key} must be a list", location=key)
    allowed = [f for f in cls.__dataclass_fields__]
    out = []
    for i, item in enumerate(value):
        loc = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise ModelError(f"expected a mapping, got {type(item).__name__}", location=loc)
        for k in item:
            if k not in allowed:
                raise ModelError(f"unknown key {k!r}; allowed: {', '.join(allowed)}", location=loc)
        for k in _REQUIRED[key]:
            if item.get(k) is None:
                raise ModelError(f"missing {k}", location=f"{loc}.{k}")
        for k, v in item.items():
            if k in _STRING_FIELDS and v is not None and not isinstance(v, str):
                raise ModelError(f"{k} must be a string, got {type(v).__name__}",
                                 location=f"{loc}.{k}")
        fields = dict(item)
        if cls is Body:
            fields["points"] = _mapping(item.get("points"), f"{loc}.points")
            fields["vectors"] = _mapping(item.get("vectors"), f"{loc}.vectors")
        out.append(cls(**fields))
    return out


def to_dict(system: System) -> dict:
    """The file data of a system (the inverse of :func:`from_dict`)."""
    if system.user_forces:
        raise ModelError(f"user force {system.user_forces[0].name!r} is Python code and cannot be "
                         "saved in a model file (model files never contain code)")
    out: dict[str, Any] = {"name": system.name, "dim": system.dim}
    if system.description:
        out["description"] = system.description
    if system.gravity is not None:
        out["gravity"] = system.gravity
    if system.dim == 3 and system.euler_sequence != "ZYX":
        out["euler_sequence"] = system.euler_sequence
    if system.parameters:
        if any(p.description for p in system.parameters):
            out["parameters"] = [p.to_dict() for p in system.parameters]
        else:
            out["parameters"] = {p.name: p.value for p in system.parameters}
    if system.inputs:
        out["inputs"] = [u.to_dict() for u in system.inputs]
    ground = {k: v for k, v in (("points", system.ground.points),
                                ("vectors", system.ground.vectors)) if v}
    if ground:
        out["ground"] = ground
    for key in _ENTRIES:
        entries = getattr(system, key)
        if entries:
            out[key] = [e.to_dict() for e in entries]
    return out


class _Dumper(yaml.SafeDumper):
    pass


def _represent_list(dumper, data):
    # short lists of scalars in flow style: "[0.0, 1.0, 0.0]"
    flow = len(data) <= 12 and all(not isinstance(v, (list, dict)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def save(system: System, path) -> Path:
    """Write ``system`` as YAML (``.yaml``/``.yml``) or JSON (``.json``)."""
    if not isinstance(system, System):
        raise TypeError(f"save needs a kinedyn.System, got {type(system).__name__}")
    path = _file_path(path, "save")
    data = to_dict(system)
    if path.suffix.lower() == ".json":
        text = json.dumps(data, indent=2) + "\n"
    elif path.suffix.lower() in (".yaml", ".yml"):
        text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    else:
        raise ModelError(f"unknown model file extension {path.suffix!r}; use .yaml, .yml or .json",
                         file=str(path))
    path.write_text(text, encoding="utf-8")
    return path
