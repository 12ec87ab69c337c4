"""``kinedyn validate MODEL [MODEL ...]``: check model files (or built-ins) without running them.

Each model is loaded and compiled, and its functions of time are evaluated at t = 0, where runs
start (a driver ``sqrt(t - 0.5)`` is not finite there; a driven distance must be positive); a
problem is reported as the file, the location inside it (e.g. ``joints[3].point_b``) and what is
wrong, with exit code 1 (no traceback).
"""
from __future__ import annotations

import sys

from ..errors import ModelError
from ..model.compiled import undefined
from .common import load_system, parameters


def register(sub) -> None:
    p = sub.add_parser("validate", help="check model files; exit code 1 if any is invalid",
                       description="Load and compile each MODEL (a model file or a built-in "
                                   "name), evaluate its functions of time at t = 0 (where runs "
                                   "start) and report the first problem of each.")
    p.add_argument("models", nargs="+", metavar="MODEL", help="model file(s) or built-in names")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="override a model parameter (repeatable)")
    p.set_defaults(func=run)


def run(args) -> int:
    overrides = parameters(args)
    failed = 0
    for spec in args.models:
        try:
            model = load_system(spec).compile(overrides)
            why = undefined(model, [0.0])
            if why is not None:
                raise ModelError(f"{why}, where runs start", file=spec)
        except ModelError as err:
            failed += 1
            if err.file is None:  # a built-in model, or a --param that does not fit it
                err = err.at(file=spec)
            print(f"invalid: {err}", file=sys.stderr, flush=True)
            continue
        print(f"ok: {spec} ({model.name}: {'planar' if model.dim == 2 else 'spatial'}, "
              f"{model.n_body - 1} bodies, {model.n_joint} joints, {model.n_driver} drivers, "
              f"{len(model.function_text)} functions of time"
              + (f", inputs {', '.join(model.input_names)}" if model.input_names else "")
              + ")", flush=True)
    return 1 if failed else 0
