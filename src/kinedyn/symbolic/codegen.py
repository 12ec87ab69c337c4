"""Code generation: global common-subexpression elimination and Numba kernels (thesis 3.4.2).

A kernel is a list of outputs (array element <- SymPy expression) over inputs (arrays and
scalars). All outputs of one kernel go through a single :func:`sympy.cse`, so a subexpression
shared by several outputs -- a sine, a square root, an earlier unknown of a triangular system
(which is inlined into the later ones first, so that CSE recovers the recursion and whatever
else they share) -- is computed once. Source files are written to the kinedyn cache keyed by a
hash of their text and compiled by Numba with ``cache=True``, so a model's kernels compile once
per machine. :func:`count_operations` reports multiplications, divisions, additions, functions
and temporaries, as the thesis's Tables 3.2, 4.1, 4.2 and 4.7 do.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass, field

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from .groebner import cache_dir


class _Printer(PythonCodePrinter):
    """Plain ``math`` code Numba compiles: no NumPy calls, floats for rationals and for
    integers beyond 2**53 (Groebner-basis coefficients reach 10**100 -- the 3-RRR legs' with
    data rationalised at 1e-12; Numba cannot type an integer literal outside int64)."""

    def _print_Integer(self, e):
        return str(int(e)) if abs(int(e)) <= 2 ** 53 else repr(float(e))

    def _print_Rational(self, e):
        return repr(float(e))

    def _print_Half(self, e):
        return "0.5"


_printer = _Printer({"standard": "python3", "fully_qualified_modules": True})


def code(expr) -> str:
    return _printer.doprint(expr)


@dataclass
class Kernel:
    """``def name(args): <reads>; <cse>; <writes>`` with ``outputs`` = [(target, expr)]."""
    name: str
    args: tuple[str, ...]
    reads: dict = field(default_factory=dict)      # symbol -> source text (e.g. "q[3]")
    outputs: list = field(default_factory=list)    # (target text, expr)
    returns: str | None = None

    def cse(self):
        exprs = [e for _, e in self.outputs]
        return sp.cse(exprs, symbols=sp.numbered_symbols("x"), optimizations="basic", order="none")

    def source(self) -> tuple[str, dict]:
        repl, reduced = self.cse()
        used = set()
        for e in [*(r for _, r in repl), *reduced]:
            used |= {s for s in sp.sympify(e).free_symbols}
        lines = [f"def {self.name}({', '.join(self.args)}):"]
        lines += [f"    {s.name} = {src}" for s, src in self.reads.items() if s in used]
        lines += [f"    {s.name} = {code(e)}" for s, e in repl]
        lines += [f"    {t} = {code(e)}" for (t, _), e in zip(self.outputs, reduced)]
        if self.returns:
            lines.append(f"    return {self.returns}")
        if len(lines) == 1:
            lines.append("    return")
        return "\n".join(lines) + "\n", count_operations(repl, reduced)


def count_operations(replacements, reduced) -> dict:
    """Operation counts of CSE'd code (the thesis counts multiplications and additions)."""
    c = {"mul": 0, "div": 0, "add": 0, "functions": 0, "comparisons": 0,
         "temporaries": len(replacements)}

    def walk(e):
        if not isinstance(e, sp.Basic) or e.is_Atom:
            return
        if e.is_Add:
            c["add"] += len(e.args) - 1
        elif e.is_Mul:
            num, den = [], []
            for a in e.args:
                if a.is_Pow and a.exp.is_negative:
                    den.append(a)
                elif a not in (sp.S.NegativeOne,):
                    num.append(a)
            c["mul"] += max(len(num) - 1, 0)
            c["div"] += 1 if den else 0
            c["mul"] += max(len(den) - 1, 0)
            for a in e.args:
                if a.is_Pow and a.exp.is_negative:
                    walk(a.base) if a.exp == -1 else walk(sp.Pow(a.base, -a.exp))
                else:
                    walk(a)
            return
        elif e.is_Pow:
            n = e.exp
            if n.is_Integer and n > 1:
                c["mul"] += int(n) - 1
            elif n == sp.S.Half:
                c["functions"] += 1
            elif n.is_Integer and n < 0:
                c["div"] += 1
                c["mul"] += int(-n) - 1
            else:
                c["functions"] += 1
        elif isinstance(e, sp.Piecewise):
            c["comparisons"] += len(e.args) - 1
        elif getattr(e, "is_guard", False):     # triangular.Clamp / Nearer
            c["comparisons"] += 1
        elif isinstance(e, (sp.Le, sp.Ge, sp.Lt, sp.Gt)):
            pass
        elif isinstance(e, sp.Function):
            c["functions"] += 1
        for a in e.args:
            walk(a)

    for _, r in replacements:
        walk(r)
    for r in reduced:
        walk(r)
    return c


def build_module(name: str, kernels: list[Kernel], extra: str = "", header: str = ""):
    """Write the kernels (each ``@njit(cache=True)``) plus ``extra`` source to a cached file
    and import it. Returns (module, {kernel name: operation counts})."""
    parts = ["import math", "import numpy as np", "from numba import njit", header, ""]
    ops = {}
    for k in kernels:
        src, ops[k.name] = k.source()
        parts += ["@njit(cache=True)", src]
    parts.append(extra)
    text = "\n".join(parts)
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    folder = cache_dir().parent / "kernels"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_{digest}.py".replace("-", "_")
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    modname = f"kinedyn_generated_{name}_{digest}".replace("-", "_")
    if modname in sys.modules:
        return sys.modules[modname], ops
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return module, ops
