"""Code generation: global common-subexpression elimination and Numba kernels (thesis 3.4.2).

A kernel is a list of outputs (array element <- SymPy expression) over inputs (arrays and
scalars). All outputs of one kernel go through a single :func:`sympy.cse`, so a subexpression
shared by several outputs -- a sine, a square root, an earlier unknown of a triangular system
(which is inlined into the later ones first, so that CSE recovers the recursion and whatever
else they share) -- is computed once. Source files are written to the kinedyn cache keyed by a
hash of their text and compiled by Numba with ``cache=True``, so a model's kernels compile once
per machine. :func:`count_operations` reports multiplications, divisions, additions, functions
and temporaries, as the thesis's Tables 3.2, 4.1, 4.2 and 4.7 do.

``backend="c"`` emits the same CSE'd kernels as C (SymPy's C99 printer; the thesis exported its
Maple code to C), compiles them with the system compiler (``$CC``, else ``cc``/``gcc``:
``-O2 -shared -fPIC``) into a library cached by a hash of its source, and replaces each kernel
by a small Numba function calling the C symbol (``numba.types.ExternalFunction``, resolved by
name, so the Numba callers still cache), so every compiled solver and run loop above the
kernels is unchanged. Without a compiler a warning is given and Numba kernels are used. The CSE
itself is cached on disk (keyed by the kernel's expressions), so a second build -- another
backend, another process -- skips it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field

import sympy as sp
from sympy.printing.c import C99CodePrinter
from sympy.printing.pycode import PythonCodePrinter

from ..errors import KinedynError, ModelError
from .groebner import cache_dir, canonical_text

BACKENDS = ("numba", "c")
SCALAR_ARGS = ("t",)     # kernel arguments that are scalars; all others are float64 arrays
_VERSION = "3"      # of the printed kernels (part of the CSE cache key)


#: SymPy's "basic" CSE preprocessing (signs, common factors and the rational content of sums
#: pulled out, so that scaled copies of one polynomial become one subexpression) is tried on
#: expression trees of at most this many nodes, repeated subtrees counted each time: its time
#: grows with that tree (about 80 us per node), not with the DAG that CSE works on. The
#: landing gear's inlined triangular system, 1.9 M nodes: 153 s, for 432 operations against 359
#: without it; the Gough-Stewart legs' fused closed forms, 172 k nodes: 14 s, 537 against 568;
#: a landing-gear step of 31 k nodes: 2.4 s, 112 against 206 (:func:`operation_total`).
BASIC_CSE_NODES = 200_000


def _cse(exprs, optimizations):
    return sp.cse(exprs, symbols=sp.numbered_symbols("x"), optimizations=optimizations,
                  order="none")


def tree_size(exprs) -> int:
    """Nodes of the expression trees, every repeated subtree counted each time it occurs
    (memoised per distinct subexpression: linear in the DAG; iterative: trees run deep)."""
    memo = {}
    stack = list(exprs)
    while stack:
        e = stack[-1]
        if e in memo:
            stack.pop()
            continue
        pending = [a for a in e.args if a not in memo]
        if pending:
            stack.extend(pending)
            continue
        memo[e] = 1 + sum(memo[a] for a in e.args)
        stack.pop()
    return sum(memo[e] for e in exprs)


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

    def _print_Float(self, e):
        return repr(float(e))


class _CPrinter(C99CodePrinter):
    """C99 with the same constants as :class:`_Printer` and integer powers by the same
    repeated squaring Numba uses for ``x**n`` (``kd_ipow``), so both backends round alike."""

    def _print_Integer(self, e):
        return _printer._print_Integer(e)

    _print_Rational = _Printer._print_Rational
    _print_Half = _Printer._print_Half
    _print_Float = _Printer._print_Float

    def _print_Pow(self, e):
        if e.exp.is_Integer and int(e.exp) >= 2:
            return f"kd_ipow({self._print(e.base)}, {int(e.exp)})"
        if e.exp.is_Integer and int(e.exp) <= -1:
            return f"(1.0/kd_ipow({self._print(e.base)}, {-int(e.exp)}))"
        return super()._print_Pow(e)

    def _print_Function(self, e):
        """The triangular guards (``Clamp``: max(d, 0); ``Nearer``: x if |u| <= |v| else y)."""
        name = type(e).__name__
        if name == "Clamp":
            return f"fmax({self._print(e.args[0])}, 0.0)"
        if name == "Nearer":
            u, v, x, y = (self._print(a) for a in e.args)
            return f"((fabs({u}) <= fabs({v})) ? ({x}) : ({y}))"
        return super()._print_Function(e)


_printer = _Printer({"standard": "python3", "fully_qualified_modules": True})
_cprinter = _CPrinter()

_C_HEADER = """#include <math.h>
static inline double kd_ipow(double a, long n) {   /* Numba's int_power: repeated squaring */
    double r = 1.0;
    for (;;) {
        if (n & 1) r *= a;
        n >>= 1;
        if (!n) break;
        a *= a;
    }
    return r;
}
"""


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

    def _exprs(self) -> list:
        return [sp.sympify(e) for _, e in self.outputs]

    def plain_cse(self):
        """SymPy's CSE of all outputs without its preprocessing: (replacements, reduced)."""
        return _cse(self._exprs(), None)

    def cse(self, plain=None):
        """One CSE over all outputs: the plain one (``plain``, if already computed) or, for
        trees of at most :data:`BASIC_CSE_NODES` nodes, the one after SymPy's ``"basic"``
        preprocessing, whichever has fewer operations (:func:`operation_total`)."""
        exprs = self._exprs()
        plain = plain or self.plain_cse()
        if tree_size(exprs) > BASIC_CSE_NODES:
            return plain
        return min(plain, _cse(exprs, "basic"), key=lambda r: operation_total(*r))

    def _printed(self) -> dict:
        """CSE once, print for both backends; cached on disk by the kernel's content, keyed by
        its plain CSE in canonical order: as compact as the kernel's DAG, where the outputs'
        own text spells out every repeated subtree (the landing gear's inlined triangular
        system: 22.6 MB and 9.4 s of ``srepr``; its plain CSE takes 0.13 s)."""
        if getattr(self, "_cache", None) is not None:
            return self._cache
        plain = self.plain_cse()
        path = cache_dir().parent / "cse" / f"{self.name}_{self.cache_key(plain)[:24]}.json"
        try:
            self._cache = json.loads(path.read_text())
            return self._cache
        except (OSError, ValueError):
            pass
        repl, reduced = self.cse(plain)
        used = set()
        for e in [*(r for _, r in repl), *reduced]:
            used |= {s for s in sp.sympify(e).free_symbols}
        reads = [(s, src) for s, src in self.reads.items() if s in used]
        lines = [f"    {s.name} = {src}" for s, src in reads]
        lines += [f"    {s.name} = {code(e)}" for s, e in repl]
        lines += [f"    {t} = {code(e)}" for (t, _), e in zip(self.outputs, reduced)]
        if self.returns:
            lines.append(f"    return {self.returns}")
        if not lines:
            lines.append("    return")
        body = [f"    const double {s.name} = {_c_index(src)};" for s, src in reads]
        body += [f"    const double {s.name} = {_cprinter.doprint(e)};" for s, e in repl]
        for (t, _), e in zip(self.outputs, reduced):
            target = _c_index(t)
            body.append(f"    {'double ' if target == t else ''}{target} = {_cprinter.doprint(e)};")
        if self.returns:
            body.append(f"    return {self.returns};")
        self._cache = {"python": "\n".join(lines), "c": "\n".join(body),
                       "ops": count_operations(repl, reduced)}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self._cache))
        tmp.replace(path)
        return self._cache

    def cache_key(self, plain=None) -> str:
        """The same in every process for the same kernel (SymPy's canonical argument order)
        and the same rule for choosing its CSE (:data:`BASIC_CSE_NODES`)."""
        plain = plain or self.plain_cse()
        return hashlib.sha256(json.dumps(
            [_VERSION, BASIC_CSE_NODES, sp.__version__, self.name, list(self.args),
             self.returns, [(str(k), v) for k, v in self.reads.items()],
             [t for t, _ in self.outputs],
             canonical_text(sp.Tuple(*(sp.Tuple(*r) for r in plain[0]), *plain[1]))]
        ).encode()).hexdigest()

    def source(self) -> tuple[str, dict]:
        p = self._printed()
        return f"def {self.name}({', '.join(self.args)}):\n{p['python']}\n", p["ops"]

    def arrays(self) -> dict:
        """{array argument: number of indices}; every argument but the time ``t`` is an
        array (1-D unless indexed with two subscripts)."""
        dims = {a: 1 for a in self.args if a not in SCALAR_ARGS}
        for text in [*self.reads.values(), *(t for t, _ in self.outputs)]:
            m = _INDEXED.fullmatch(text)
            if m and m.group(1) in dims:
                dims[m.group(1)] = len(m.group(2).split(","))
        return dims

    def c_source(self, symbol: str) -> str:
        """``void|double <symbol>(double *a, long a_s0[, long a_s1], double t, ...)``."""
        dims = self.arrays()
        params = []
        for a in self.args:
            params += [f"double *{a}", *(f"long {a}_s{d}" for d in range(dims[a]))] \
                if a in dims else [f"double {a}"]
        kind = "double" if self.returns else "void"
        return f"{kind} {symbol}({', '.join(params)}) {{\n{self._printed()['c']}\n}}\n"

    def c_wrapper(self, symbol: str) -> str:
        """Numba source: the ExternalFunction declaration and a same-named kernel calling it."""
        dims = self.arrays()
        types_, call = [], []
        for a in self.args:
            if a in dims:
                types_ += ["types.intp"] * (1 + dims[a])
                call += [f"{a}.ctypes.data", *(f"{a}.strides[{d}] // 8" for d in range(dims[a]))]
            else:
                types_.append("types.float64")
                call.append(a)
        ret = "types.float64" if self.returns else "types.void"
        return (f"_c_{self.name} = types.ExternalFunction({symbol!r}, {ret}({', '.join(types_)}))\n\n\n"
                f"@njit(cache=True, _nrt=False)\ndef {self.name}({', '.join(self.args)}):\n"
                f"    {'return ' if self.returns else ''}_c_{self.name}({', '.join(call)})\n")


_INDEXED = re.compile(r"(\w+)\[([^\]]+)\]")


def _c_index(text: str) -> str:
    """``J[2, 5]`` -> ``J[2*J_s0 + 5*J_s1]`` (element strides passed with each array)."""
    m = _INDEXED.fullmatch(text)
    if not m:
        return text
    name, idx = m.group(1), [i.strip() for i in m.group(2).split(",")]
    return f"{name}[{' + '.join(f'{i}*{name}_s{d}' for d, i in enumerate(idx))}]"


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


def operation_total(replacements, reduced) -> int:
    """Arithmetic operations, function calls and comparisons of CSE'd code (no temporaries)."""
    c = count_operations(replacements, reduced)
    return sum(v for k, v in c.items() if k != "temporaries")


def c_compiler() -> str | None:
    """``$CC`` if set, else the first of cc, gcc, clang on the PATH (None: no C backend)."""
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc)
    return next((p for p in map(shutil.which, ("cc", "gcc", "clang")) if p), None)


def _compile_c(name: str, kernels: list[Kernel]):
    """C library of the kernels (cached by source hash) loaded into the process; returns the
    Numba wrapper source, or None (with a warning) when there is no compiler."""
    cc = c_compiler()
    if cc is None:
        where = f"$CC={os.environ['CC']!r} not found" if os.environ.get("CC") else \
            "no cc, gcc or clang on the PATH"
        warnings.warn(f"backend='c': no C compiler ({where}; set $CC or install one); "
                      "using the Numba kernels instead", RuntimeWarning, stacklevel=4)
        return None
    bodies = {k.name: k.c_source(f"KD_PREFIX_{k.name}") for k in kernels}
    digest = hashlib.sha256("".join(bodies.values()).encode()).hexdigest()[:16]
    prefix = f"kd_{digest}"
    text = _C_HEADER + "\n".join(b.replace("KD_PREFIX", prefix) for b in bodies.values())
    folder = cache_dir().parent / "clib"
    folder.mkdir(parents=True, exist_ok=True)
    lib = folder / f"{name}_{digest}.so".replace("-", "_")
    if not lib.exists():
        src = lib.with_suffix(f".{os.getpid()}.c")   # per process: builds may run side by side
        src.write_text(text)
        tmp = lib.with_suffix(f".{os.getpid()}.so")
        cmd = [cc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(src), "-lm"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise KinedynError(f"C backend: {' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
        tmp.replace(lib)
        src.replace(lib.with_suffix(".c"))            # the source kept beside its library
    import llvmlite.binding as llvm
    llvm.load_library_permanently(str(lib))
    return "\n\n".join(k.c_wrapper(f"{prefix}_{k.name}") for k in kernels)


_NJIT = '''

def njit(*args, **options):
    """IEEE division (inf, nan) as in the C kernels: a closed form past a limit position
    divides by its vanished root, and the run's residual and NaN checks then name the step,
    where Python's error model raised ZeroDivisionError out of the compiled run. A product
    added to a sum may become one fused multiply-add (``contract``: one rounding instead of
    two, nothing reordered): the Gough-Stewart's embedded step 1.65 -> 1.54 us."""
    return numba.njit(*args, error_model="numpy", fastmath={"contract"}, **options)


def inlined(function):
    """Inlined by LLVM into its compiled callers, never called from Python (kinedyn._jit.INLINED).
    For the run loops' helpers that take a workspace tuple: a real call passes every array
    descriptor of the tuple by value, and the embedded slider-crank's Euler step took 621 ns
    with embedded_rhs, advance, residual and kinetic_energy called, 165 ns with them inlined."""
    return njit(**INLINED)(function)
'''


def build_module(name: str, kernels: list[Kernel], extra: str = "", header: str = "",
                 backend: str = "numba"):
    """Write the kernels (each ``@njit(cache=True)``, or for ``backend="c"`` a Numba wrapper
    of its compiled C function) plus ``extra`` source to a cached file and import it.
    Returns (module, {kernel name: operation counts})."""
    if backend not in BACKENDS:
        raise ModelError(f"unknown code-generation backend {backend!r}; known: {', '.join(BACKENDS)}")
    parts = ["import math", "import numpy as np", "import numba", "from numba import types",
             "from kinedyn._unmanaged import unmanaged", "from kinedyn._jit import INLINED", _NJIT,
             header, ""]
    ops = {k.name: k.source()[1] for k in kernels}
    wrappers = _compile_c(name, kernels) if backend == "c" and kernels else None
    if wrappers is not None:
        parts.append(wrappers)
        name = f"{name}_c"
    else:
        for k in kernels:
            # straight-line code into its output arrays: no reference counting (kinedyn._jit.WORKER)
            parts += ["@njit(cache=True, _nrt=False)", k.source()[0]]
    parts.append(extra)
    text = "\n".join(parts)
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    folder = cache_dir().parent / "kernels"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_{digest}.py".replace("-", "_")
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    modname = f"kinedyn_generated_{name}_{digest}".replace("-", "_")
    if modname in sys.modules:
        return sys.modules[modname], ops
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    module.BACKEND = "c" if wrappers is not None else "numba"
    return module, ops
