"""Helpers shared by the sub-commands: model arguments, progress bars, output folders."""
from __future__ import annotations

import argparse
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

from ..errors import AccuracyWarning, ModelError


def add_model_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL",
                        help="built-in model name (see `kinedyn models`) or model file "
                             "(.yaml, .yml, .json)")
    parser.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                        help="override a model parameter (repeatable)")


def parameters(args) -> dict[str, float]:
    """``--param name=value`` pairs as a mapping (values are numbers)."""
    return name_values(args.param, "--param")


def add_input_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE",
                        help="set a model input (a value its forces read; repeatable)")


def set_inputs(model, args) -> dict[str, float]:
    """The ``--input name=value`` pairs set on the compiled ``model``; returns them."""
    values = name_values(args.input, "--input")
    try:
        model.set_inputs(values)
    except ModelError as err:
        raise err.at(location="--input") from None
    return values


def name_values(items, option: str) -> dict[str, float]:
    """``NAME=VALUE`` command-line pairs as a mapping (values are numbers)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ModelError(f"{option} expects NAME=VALUE, got {item!r}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ModelError(f"{option} {name.strip()}: {value!r} is not a number") from None
    return out


def load_system(spec: str):
    """A :class:`~kinedyn.model.System` from a built-in name or a model file path."""
    from .. import models
    from ..model.files import load
    if spec in models.MODELS:
        return models.get(spec)
    path = Path(spec)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.exists():
        return load(path)
    return models.get(spec)  # raises UnknownNameError listing the built-ins


def compile_model(args):
    """Load and compile the model named by ``args.model`` with ``--param`` overrides."""
    return load_system(args.model).compile(parameters(args))


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be positive and finite, got {text}")
    return value


def output_dir(path: str | None, default: str) -> Path:
    """The output folder, created, and checked writable before a command runs (a benchmark
    of many minutes failed only when it came to write its report)."""
    out = Path(path or default)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"cannot create output folder {str(out)!r}: {exc.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ModelError(f"output folder {str(out)!r} is not writable")
    return out


@contextmanager
def warnings_printed(label: str = "note", category=Warning):
    """Warnings of ``category`` raised in the block, each printed after it as ``label:
    message`` (a run's notes on the console, not Python's warning format with file and
    line); an :class:`~kinedyn.errors.AccuracyWarning` (numbers not to be used as they are)
    always as ``warning: message``."""
    from .._jit import quiet_inliner_notes
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category)
        quiet_inliner_notes()  # a note of Numba's inliner on a cold cache is not the run's
        yield
    for w in caught:
        print(f"{'warning' if issubclass(w.category, AccuracyWarning) else label}: {w.message}")


def check_plot(patterns, names) -> None:
    """``--plot`` patterns checked against the channel ``names`` a run will record, before
    the run (a ModelError at ``--plot`` naming the pattern that matches none)."""
    from ..io.results import Results
    try:
        Results([0.0], dict.fromkeys(names)).select(patterns)
    except ModelError as err:
        raise err.at(location="--plot") from None


#: channel prefixes of the joint loads, computed after a run (``Results.reactions``)
LOAD_CHANNELS = ("reaction", "effort")


def check_plot_loads(patterns, names) -> bool:
    """:func:`check_plot` for the patterns other than the joint loads (``reaction.*``,
    ``effort.*``: computed after the run, for the joints the model has); whether any pattern
    asks for the loads."""
    loads = [p for p in patterns if p.startswith(LOAD_CHANNELS)]
    check_plot([p for p in patterns if p not in loads], names)
    return bool(loads)


def add_motion_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--animate", action="store_true",
                        help="also write motion.gif, the mechanism moving (at most 150 "
                             "frames; a second or two)")


def motion_files(results, out: Path, animate: bool, model=None) -> list[Path]:
    """``motion.png`` (the mechanism at six instants over its points' paths) and, with
    ``animate``, ``motion.gif`` (:mod:`kinedyn.viz.motion`; ``model``: bodies with a single
    point drawn to their centre of mass)."""
    from ..viz.motion import animate_motion, draw_motion
    files = [draw_motion(results, out / "motion.png", model=model)]
    if animate:
        files.append(animate_motion(results, out / "motion.gif", model=model))
    return files
