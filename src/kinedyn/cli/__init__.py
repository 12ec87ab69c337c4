"""The ``kinedyn`` command.

Each sub-command lives in its own module of this package and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (called with the parsed arguments, returning an exit
code). Modules are discovered, so adding a command never edits a shared list. Errors kinedyn
raises on purpose (bad model, bad argument, solver failure) are printed as one clear message
with exit code 2; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from ..errors import KinedynError

_EPILOG = """\
MODEL is a built-in model name (see `kinedyn models`) or a model file (.yaml, .yml, .json).
Run `kinedyn COMMAND --help` for the options of a command."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kinedyn",
        description="Real-time kinematics and dynamics of closed-loop multibody systems.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"kinedyn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "common":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "register"):  # helper packages (e.g. info_sections) have none
            module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except KinedynError as err:
        print(f"kinedyn {args.command}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # an output file that cannot be written (a folder, no permission)
        where = f"{err.filename}: " if err.filename else ""
        print(f"kinedyn {args.command}: error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kinedyn {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # python -m kinedyn.cli
    sys.exit(main())
