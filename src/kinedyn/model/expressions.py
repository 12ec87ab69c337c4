"""Safe expressions for model files: numbers, parameters and functions of time.

A model file may write any number as an expression of the model's *parameters*
(``"2*crank_length"``) and every prescribed motion or load as an expression of time ``t`` and the
parameters (``"0.1*sin(2*pi*t/3)"``). Expressions are parsed with Python's :mod:`ast` and converted
node by node into SymPy: only numbers, whitelisted names, the operators ``+ - * / **`` and the
functions in :data:`FUNCTIONS` are accepted. Nothing is ever ``eval``-ed, so a model file can
never execute code.
"""
from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping, Sequence
from numbers import Real
from types import MappingProxyType

import sympy as sp

from ..errors import ModelError

#: The symbol for time in functions of time.
t = sp.Symbol("t", real=True)

#: Functions an expression may call, with their arity.
FUNCTIONS: dict[str, tuple[object, int]] = {
    "sin": (sp.sin, 1), "cos": (sp.cos, 1), "tan": (sp.tan, 1),
    "asin": (sp.asin, 1), "acos": (sp.acos, 1), "atan": (sp.atan, 1), "atan2": (sp.atan2, 2),
    "sinh": (sp.sinh, 1), "cosh": (sp.cosh, 1), "tanh": (sp.tanh, 1),
    "exp": (sp.exp, 1), "log": (sp.log, 1), "sqrt": (sp.sqrt, 1),
    "abs": (sp.Abs, 1), "sign": (sp.sign, 1),
    # step(x) = 1 for x >= 0 else 0 (Heaviside with H(0) = 1)
    "step": (lambda x: sp.Heaviside(x, 1), 1),
    "min": (sp.Min, 2), "max": (sp.Max, 2),
}

#: Named constants.
CONSTANTS = {"pi": sp.pi, "e": sp.E}

_BINOPS = {ast.Add: sp.Add, ast.Sub: lambda a, b: a - b, ast.Mult: sp.Mul,
           ast.Div: lambda a, b: a / b, ast.Pow: sp.Pow}

MAX_LENGTH = 2000  # characters; longer text is certainly not a hand-written formula


def parse(text: object, names: Mapping[str, sp.Expr] | None = None, *,
          allow_time: bool = False, location: str | None = None) -> sp.Expr:
    """Parse ``text`` (a number or an expression string) into a SymPy expression.

    ``names`` maps parameter names to the value (or symbol) substituted for them. ``t`` is allowed
    only with ``allow_time``. Raises :class:`ModelError` for anything else.
    """
    if isinstance(text, bool):
        raise ModelError(f"expected a number or an expression, got {text!r}", location=location)
    if isinstance(text, Real):
        value = _finite_number(text, location)
        return sp.Float(value) if not float(value).is_integer() else sp.Integer(int(value))
    if not isinstance(text, str):
        raise ModelError(f"expected a number or an expression string, got {type(text).__name__} "
                         f"{_short(text)}", location=location)
    if len(text) > MAX_LENGTH:
        raise ModelError(f"expression longer than {MAX_LENGTH} characters", location=location)
    if not text.strip():
        raise ModelError("empty expression", location=location)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ModelError(f"cannot parse expression {text!r}: {exc.msg}", location=location) from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise ModelError(f"cannot parse expression {text!r}: {exc}", location=location) from None
    names = dict(names or {})
    try:
        expr = _convert(tree.body, names, allow_time, text)
    except ModelError as exc:
        raise ModelError(exc.problem, location=location) from None
    except RecursionError:
        raise ModelError(f"expression {text!r} is nested too deeply", location=location) from None
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, ArithmeticError) as exc:
        raise ModelError(f"invalid expression {text!r}: {exc}", location=location) from None
    if expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise ModelError(f"expression {text!r} is not finite", location=location)
    return expr


def _convert(node: ast.AST, names: Mapping[str, sp.Expr], allow_time: bool, text: str) -> sp.Expr:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ModelError(f"only numbers are allowed as literals in {text!r}, got {node.value!r}")
        if isinstance(node.value, int) and abs(node.value) > 10**18:
            raise ModelError(f"integer literal too large in {text!r}")
        return sp.Integer(node.value) if isinstance(node.value, int) else sp.Float(node.value)
    if isinstance(node, ast.Name):
        if node.id in names:
            return sp.sympify(names[node.id])
        if node.id == "t":
            if not allow_time:
                raise ModelError(f"time 't' is not allowed here (in {text!r}); "
                                 "only parameters and numbers")
            return t
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        known = sorted(set(names) | set(CONSTANTS) | ({"t"} if allow_time else set()))
        raise ModelError(f"unknown name {node.id!r} in {text!r}; allowed names: "
                         f"{', '.join(known)}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a = _convert(node.left, names, allow_time, text)
        b = _convert(node.right, names, allow_time, text)
        if isinstance(node.op, ast.Pow) and b.is_number and abs(float(b)) > 64:
            raise ModelError(f"exponent {b} too large in {text!r}")
        return _BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        a = _convert(node.operand, names, allow_time, text)
        return -a if isinstance(node.op, ast.USub) else a
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            fname = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ModelError(f"function {fname!r} is not allowed in {text!r}; allowed: "
                             f"{', '.join(sorted(FUNCTIONS))}")
        func, arity = FUNCTIONS[node.func.id]
        if node.keywords or len(node.args) != arity:
            raise ModelError(f"{node.func.id}() takes {arity} argument(s) in {text!r}")
        return func(*(_convert(a, names, allow_time, text) for a in node.args))
    raise ModelError(f"{type(node).__name__} is not allowed in expression {text!r}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def _finite_number(value: Real, location: str | None) -> float:
    """A real number as a finite float, or a ModelError (an int beyond the floats included)."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ModelError(f"number {_short(value)} is not finite", location=location)
    return number


@functools.lru_cache(maxsize=16)
def _sympy_values(items: tuple) -> Mapping[str, sp.Expr]:
    """The parameters as exact SymPy numbers (integers stay integers), made once per set of
    values: a model's compile evaluates thousands of fields with the same parameters (making
    them per field took 60 % of compiling a 8000-link chain)."""
    return MappingProxyType({k: sp.Float(v) if not float(v).is_integer() else sp.Integer(int(v))
                             for k, v in items})


@functools.lru_cache(maxsize=4096)
def _names(text: str) -> tuple[str, ...] | None:
    """The names an expression reads, or None when it does not parse (parse says why)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return tuple(sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}))


#: evaluate_number's values by (text, the parameters it names: value, or absent); bounded
_NUMBERS: dict = {}
MAX_NUMBERS = 65536


def evaluate_number(text: object, parameters: Mapping[str, float], *,
                    location: str | None = None) -> float:
    """Evaluate a number field (a number or an expression of the parameters) to a float.

    Values are kept by the text and the values of the parameters it names: a design study
    compiles the model once per case, and most fields do not name the varied parameters
    (the four-bar: 62 % of them; its compile 9.2 -> 3.7 ms)."""
    if isinstance(text, Real) and not isinstance(text, bool):  # no SymPy: ~90 us a number
        return _finite_number(text, location)
    names = _names(text) if isinstance(text, str) and len(text) <= MAX_LENGTH else None
    key = None if names is None else (text, tuple(
        (n, parameters[n]) if n in parameters else n for n in names))
    if key in _NUMBERS:
        return _NUMBERS[key]
    value = _evaluated(text, parameters, location)
    if key is not None:
        if len(_NUMBERS) >= MAX_NUMBERS:
            _NUMBERS.clear()
        _NUMBERS[key] = value
    return value


def _evaluated(text: object, parameters: Mapping[str, float], location: str | None) -> float:
    expr = parse(text, _sympy_values(tuple(parameters.items())), location=location)
    try:
        value = float(expr.evalf())
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"expression {text!r} does not evaluate to a real number",
                         location=location) from None
    if not math.isfinite(value):
        raise ModelError(f"expression {text!r} evaluates to {value}", location=location)
    return value


def time_function(text: object, parameters: Mapping[str, float], *,
                  inputs: Sequence[str] = (), location: str | None = None) -> sp.Expr:
    """Parse a function of time with the parameter values substituted; ``t`` and the symbols
    named ``inputs`` (a model's inputs) are its free symbols."""
    values = _sympy_values(tuple(parameters.items()))
    if inputs:
        values = {**values, **{name: sp.Symbol(name) for name in inputs}}
    expr = parse(text, values, allow_time=True, location=location)
    free = expr.free_symbols - {t} - {sp.Symbol(name) for name in inputs}
    if free:  # cannot happen through parse(), guards programmatic misuse
        raise ModelError(f"expression {text!r} has unknown symbols {free}", location=location)
    return expr
