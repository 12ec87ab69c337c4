"""``kinedyn info MODEL``: bodies, joints, loops, mobility, and a picture of the body-joint graph.

The report is a list of *sections*, each a function ``render(ctx) -> str | None`` of an
:class:`InfoContext` (the loaded system, its compiled model, its topology, the parsed arguments
and the output folder). The built-in sections (bodies, joints, loops, mobility) always print.

Adding a section (e.g. ``--groups`` for structural groups, ``--sparsity`` for the Jacobian
pattern) never edits this file: create a module ``src/kinedyn/cli/info_sections/<name>.py`` with

``add_arguments(parser)``
    adds the section's flag(s) to the ``info`` parser, e.g.
    ``parser.add_argument("--groups", action="store_true", help="structural groups")``;
``render(ctx)``
    returns the section's text, or ``None`` when its flag was not given. It may write files
    into ``ctx.out_dir()`` (created on first use) and mention them in its text.

Modules in ``info_sections`` are discovered in name order and their sections print after the
built-in ones. :func:`sections` lists them (the tests use it).
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from .common import add_model_argument, load_system, output_dir, parameters

DEFAULT_OUT = "results/info"


@dataclass
class InfoContext:
    """What a section can use: ``system``, ``model`` (compiled), ``topology``, ``args``."""
    system: object
    model: object
    args: object
    _out: Path | None = field(default=None, repr=False)

    @cached_property
    def topology(self):
        from ..topology import Topology
        return Topology(self.model)

    def out_dir(self) -> Path:
        """The output folder (``--out``, default ``results/info``), created on first use."""
        if self._out is None:
            self._out = output_dir(self.args.out, DEFAULT_OUT)
        return self._out

    def picture(self, kind: str) -> Path:
        """``<out>/<model>-<kind>.<--format>``: where a section draws its picture."""
        stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in self.model.name)
        return self.out_dir() / f"{stem or 'model'}-{kind}.{getattr(self.args, 'format', 'png')}"


@dataclass(frozen=True)
class Section:
    name: str
    render: Callable[[InfoContext], str | None]
    add_arguments: Callable | None = None


def sections() -> list[Section]:
    """Built-in sections, then the ones discovered in ``kinedyn.cli.info_sections``."""
    out = [Section("bodies", _bodies), Section("joints", _joints), Section("loops", _loops),
           Section("mobility", _mobility), Section("graph", _graph)]
    from . import info_sections
    for mod in sorted(pkgutil.iter_modules(info_sections.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"{info_sections.__name__}.{mod.name}")
        out.append(Section(mod.name, module.render, getattr(module, "add_arguments", None)))
    return out


def register(sub) -> None:
    p = sub.add_parser("info", help="bodies, joints, loops and mobility of a model; graph picture",
                       description="Print the topology of a model (bodies, joints, loops with "
                                   "their cut joints, Gruebler-Kutzbach mobility with idle spins) "
                                   "and draw its body-joint graph.")
    add_model_argument(p)
    p.add_argument("--out", metavar="DIR", help=f"folder for the graph picture (default "
                                                f"{DEFAULT_OUT})")
    p.add_argument("--format", choices=("png", "svg"), default="png",
                   help="picture format (default png)")
    p.add_argument("--no-graph", action="store_true", help="do not draw the graph picture")
    for section in sections():
        if section.add_arguments:
            section.add_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    system = load_system(args.model)
    model = system.compile(parameters(args))
    ctx = InfoContext(system, model, args)
    print(_header(ctx))
    for section in sections():
        text = section.render(ctx)
        if text:
            print()
            print(text.rstrip("\n"))
    return 0


# ---- built-in sections --------------------------------------------------------------------------
def _header(ctx) -> str:
    m, s = ctx.model, ctx.system
    kind = "planar" if m.dim == 2 else "spatial"
    source = m.source or "built-in model"
    lines = [f"{m.name}: {kind} model, {m.n_body - 1} moving bodies + ground, {m.n_joint} joints, "
             f"{m.n_driver} driver{'' if m.n_driver == 1 else 's'} ({source})"]
    if s.description:
        lines.append(s.description)
    if m.parameters:
        lines.append("parameters: " + ", ".join(f"{k} = {v:g}" for k, v in m.parameters.items()))
    if m.input_names:
        lines.append("inputs (set while a run steps; read by its forces): "
                     + ", ".join(f"{k} = {v:g}" for k, v in m.inputs.items()))
    return "\n".join(lines)


def _table(rows: list[list[str]], header: list[str]) -> str:
    rows = [header] + rows
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    return "\n".join("  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip()
                     for r in rows)


def _bodies(ctx) -> str:
    m = ctx.model
    rows = []
    own: dict[tuple[str, int], list[str]] = {}  # (kind, body): its names, in one pass
    for kind, names, owners in (("points", m.point_name, m.point_body),
                                ("vectors", m.vector_name, m.vector_body)):
        for n, o in zip(names, owners):
            own.setdefault((kind, int(o)), []).append(n.split(".", 1)[1])
    for b in range(m.n_body):
        if b == 0:
            mass, inertia = "-", "-"
        else:
            mass = f"{m.body_mass[b]:.4g}"
            J = m.body_inertia[b]
            inertia = (f"{J:.4g}" if m.dim == 2 else
                       " ".join(f"{x:.3g}" for x in np.diag(J)) +
                       ("" if np.count_nonzero(J - np.diag(np.diag(J))) == 0 else " (+products)"))
        rows.append([m.body_name[b], mass, inertia, _names(own.get(("points", b), [])),
                     _names(own.get(("vectors", b), []))])
    return (f"bodies ({m.n_body - 1} + ground)\n" +
            _table(rows, ["name", "mass kg", "inertia kg m^2", "points", "vectors"]))


def _names(names, limit=6) -> str:
    if not names:
        return "-"
    return ", ".join(names[:limit]) + (f" (+{len(names) - limit})" if len(names) > limit else "")


def _joints(ctx) -> str:
    m, top = ctx.model, ctx.topology
    cuts = set(top.cut_joints)
    loops_of: dict[int, list[str]] = {}
    for k, loop in enumerate(top.loops):
        for j in loop.joints:
            loops_of.setdefault(j, []).append(str(k + 1))
    rows = []
    for j in range(m.n_joint):
        a, b = m.body_name[m.joint_body_a[j]], m.body_name[m.joint_body_b[j]]
        role = "cut" if j in cuts else "tree"
        rows.append([m.joint_name[j], m.joint_type_name(j), f"{a} - {b}", role,
                     ",".join(loops_of.get(j, [])) or "-"])
    return f"joints ({m.n_joint})\n" + _table(rows, ["name", "type", "bodies", "role", "loops"])


def _loops(ctx) -> str:
    m, top = ctx.model, ctx.topology
    if not top.loops:
        return "loops: none (open tree)"
    lines = [f"loops ({len(top.loops)} independent; cut joints "
             f"{', '.join(m.joint_name[j] for j in top.cut_joints)})"]
    for k, loop in enumerate(top.loops):
        lines.append(f"  {k + 1}. cut {m.joint_name[loop.cut_joint]}: "
                     f"{' - '.join(m.body_name[b] for b in loop.bodies)} "
                     f"(joints {', '.join(m.joint_name[j] for j in loop.joints)})")
    return "\n".join(lines)


def _mobility(ctx) -> str:
    m, mob = ctx.model, ctx.topology.mobility
    per_body = 3 if m.dim == 2 else 6
    lines = ["mobility (Gruebler-Kutzbach)",
             f"  {per_body} x {mob.n_moving_bodies} bodies - {mob.joint_equations} joint equations "
             f"= {mob.mobility}"]
    if mob.idle:
        lines.append(f"  of which idle spins: {len(mob.idle)} ({', '.join(mob.idle)}): they move "
                     f"no other body, effective mobility {mob.effective}")
    else:
        lines.append("  idle spins: none")
    if m.n_driver:
        kinds = ", ".join(f"{n} ({('joint', 'distance', 'pose')[int(k)]})"
                          for n, k in zip(m.driver_name, m.driver_kind))
        lines.append(f"  drivers: {mob.drivers} equation{'' if mob.drivers == 1 else 's'}: {kinds}")
    free = mob.dof - len(mob.idle)
    lines.append(f"  degrees of freedom left after drivers: {mob.dof}"
                 + (f" ({free} without idle spins)" if mob.idle else "")
                 + ("  (kinematically driven)" if free == 0 else ""))
    lines.append(_jacobian_check(ctx, mob))
    return "\n".join(lines)


def _jacobian_check(ctx, mob) -> str:
    """Gruebler's count against the rank of the constraint Jacobian (natural coordinates)."""
    from ..kinematics.mobility import TooLargeForRank, jacobian_mobility, mechanism_mobility
    try:
        own = mechanism_mobility(ctx.system, parameters(ctx.args))
        driven = jacobian_mobility(ctx.model) if ctx.model.n_driver else own
    except TooLargeForRank as e:
        return f"  Jacobian rank check: skipped ({e})"
    where = ("at the assembled initial configuration" if own.assembled and driven.assembled
             else "at the initial guess, which could not be assembled")
    text = (f"  Jacobian rank check ({where}): mobility {own.dof}, left after drivers "
            f"{driven.dof}")
    extra = own.dof - mob.mobility
    if extra == 0 and driven.dof == mob.dof:
        return text + ": agrees"
    if extra > 0:
        return (text + f": {extra} more than Gruebler's count, so {extra} constraint equation(s) "
                "are redundant (over-constrained geometry)")
    return text + ": differs from Gruebler's count (a singular configuration?)"


def _graph(ctx) -> str | None:
    if ctx.args.no_graph:
        return None
    from ..viz.graph import draw_topology
    path = ctx.picture("graph")
    draw_topology(ctx.topology, path)
    return f"graph picture: {path}"


