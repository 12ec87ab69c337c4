"""Functions of time as a tape for compiled code.

Every prescribed motion and load of a model is a scalar function f(t). At compile time each is
turned into a short postfix program (a *tape*) of the operations below; the compiled kernel
:func:`eval_tape` runs it as a stack machine on truncated Taylor triples (f, f', f''), so the
kinematic and dynamic kernels get a driver's value, velocity and acceleration (for Phi, Phi_t and
gamma) at any time, in compiled code, with no per-model code generation and no Python call.

Tapes of all functions of a model are concatenated: ``ops (n_op,)``, ``args (n_op,)`` and
``start (n_function + 1,)``; function ``k`` is ``ops[start[k]:start[k+1]]``.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numba as nb
import numpy as np
import sympy as sp

from .._jit import INLINED_WORKER
from .expressions import t as T

# Operation codes. Leaf ops push, unary ops replace the top, binary ops pop two and push one.
CONST, TIME, ADD, SUB, MUL, DIV, NEG, POWC, POW = 0, 1, 2, 3, 4, 5, 6, 7, 8
SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH, TANH = 9, 10, 11, 12, 13, 14, 15, 16, 17
EXP, LOG, SQRT, ABS, SIGN, STEP, MIN, MAX, ATAN2 = 18, 19, 20, 21, 22, 23, 24, 25, 26
# An input (a leaf): the value of slot ``arg`` of the table's ``inputs`` array, held constant
# over each evaluation (derivatives 0). Slot 0 of that array is its generation: evaluations
# cached at one time are redone when it changes (:meth:`TapeTable.set_inputs`).
INPUT = 27

_UNARY = {sp.sin: SIN, sp.cos: COS, sp.tan: TAN, sp.asin: ASIN, sp.acos: ACOS, sp.atan: ATAN,
          sp.sinh: SINH, sp.cosh: COSH, sp.tanh: TANH, sp.exp: EXP, sp.log: LOG,
          sp.Abs: ABS, sp.sign: SIGN}
MAX_STACK = 64


def compile_tape(expr: sp.Expr, inputs: Sequence[str] = ()) -> tuple[list[int], list[float]]:
    """Postfix program for a SymPy expression in ``t`` and the symbols named ``inputs`` (input
    k reads slot k + 1 of the table's inputs array; see module docstring)."""
    ops: list[int] = []
    args: list[float] = []
    slots = {sp.Symbol(name): k + 1 for k, name in enumerate(inputs)}
    depth = _emit(sp.sympify(expr), ops, args, slots)
    if depth > MAX_STACK:
        raise ValueError(f"expression needs a stack of {depth} > {MAX_STACK}")
    return ops, args


def _emit(e: sp.Expr, ops: list[int], args: list[float], slots: dict) -> int:
    """Append the program of ``e`` (``slots``: input symbol -> its slot); return the stack
    depth it needs."""
    def push(op, arg=0.0):
        ops.append(op)
        args.append(float(arg))

    if e.is_Number or e in (sp.pi, sp.E) or (e.is_number and not e.free_symbols):
        try:
            value = float(e.evalf())
        except TypeError:
            raise ValueError(f"the constant {e} is not a real number") from None
        if not math.isfinite(value):
            raise ValueError(f"the constant {e} evaluates to {value}")
        push(CONST, value)
        return 1
    if e == T:
        push(TIME)
        return 1
    if e in slots:
        push(INPUT, slots[e])
        return 1
    if isinstance(e, (sp.Add, sp.Mul, sp.Min, sp.Max)):
        op = {sp.Add: ADD, sp.Mul: MUL, sp.Min: MIN, sp.Max: MAX}[type(e)]
        terms = list(e.args)
        depth = _emit(terms[0], ops, args, slots)
        for k, term in enumerate(terms[1:]):
            depth = max(depth, 1 + _emit(term, ops, args, slots))
            push(op)
        return depth
    if isinstance(e, sp.Pow):
        base, ex = e.args
        if ex.is_number:
            x = float(ex)
            if x == -1.0:  # 1/u as a division keeps the tape exact for small u
                push(CONST, 1.0)
                depth = 1 + _emit(base, ops, args, slots)
                push(DIV)
                return depth
            if x == 0.5:
                depth = _emit(base, ops, args, slots)
                push(SQRT)
                return depth
            depth = _emit(base, ops, args, slots)
            push(POWC, x)
            return depth
        d1 = _emit(base, ops, args, slots)
        d2 = 1 + _emit(ex, ops, args, slots)
        push(POW)
        return max(d1, d2)
    if isinstance(e, sp.Heaviside):
        depth = _emit(e.args[0], ops, args, slots)
        push(STEP)
        return depth
    if isinstance(e, sp.atan2):
        d1 = _emit(e.args[0], ops, args, slots)
        d2 = 1 + _emit(e.args[1], ops, args, slots)
        push(ATAN2)
        return max(d1, d2)
    for fn, op in _UNARY.items():
        if isinstance(e, fn):
            depth = _emit(e.args[0], ops, args, slots)
            push(op)
            return depth
    raise ValueError(f"cannot compile {e!r} ({type(e).__name__}) to a tape")


@nb.njit(cache=True, nogil=True, inline="always")
def is_binary(op):
    return op >= ADD and op <= DIV or op == POW or op >= MIN and op <= ATAN2


@nb.njit(cache=True, nogil=True, inline="always")
def apply_binary(op, a0, a1, a2, b0, b1, b2):
    """(a op b) with its first and second time derivatives, a and b as Taylor triples."""
    if op == ADD:
        r0, r1, r2 = a0 + b0, a1 + b1, a2 + b2
    elif op == SUB:
        r0, r1, r2 = a0 - b0, a1 - b1, a2 - b2
    elif op == MUL:
        r0 = a0 * b0
        r1 = a1 * b0 + a0 * b1
        r2 = a2 * b0 + 2.0 * a1 * b1 + a0 * b2
    elif op == DIV:
        r0 = a0 / b0
        r1 = (a1 - r0 * b1) / b0
        r2 = (a2 - 2.0 * r1 * b1 - r0 * b2) / b0
    elif op == POW:  # a**b = exp(b log a), a > 0
        la = math.log(a0)
        la1 = a1 / a0
        la2 = a2 / a0 - la1 * la1
        g0 = b0 * la
        g1 = b1 * la + b0 * la1
        g2 = b2 * la + 2.0 * b1 * la1 + b0 * la2
        r0 = math.exp(g0)
        r1 = r0 * g1
        r2 = r0 * (g2 + g1 * g1)
    elif op == MIN:
        if a0 <= b0:
            r0, r1, r2 = a0, a1, a2
        else:
            r0, r1, r2 = b0, b1, b2
    elif op == MAX:
        if a0 >= b0:
            r0, r1, r2 = a0, a1, a2
        else:
            r0, r1, r2 = b0, b1, b2
    else:  # ATAN2(y=a, x=b)
        r0 = math.atan2(a0, b0)
        q = a0 * a0 + b0 * b0
        n = b0 * a1 - a0 * b1
        n1 = b0 * a2 - a0 * b2
        q1 = 2.0 * (a0 * a1 + b0 * b1)
        r1 = n / q
        r2 = (n1 * q - n * q1) / (q * q)
    return r0, r1, r2


@nb.njit(cache=True, nogil=True, inline="always")
def apply_unary(op, arg, u, u1, u2):
    """f(u) -> (f, f' u', f'' u'^2 + f' u'') for the unary operation ``op`` (``arg``: POWC's
    exponent)."""
    if op == NEG:
        f0, d1, d2 = -u, -1.0, 0.0
    elif op == POWC:
        c = arg
        f0 = u ** c
        d1 = c * u ** (c - 1.0) if c != 1.0 else 1.0
        d2 = c * (c - 1.0) * u ** (c - 2.0) if c != 1.0 and c != 2.0 else (2.0 if c == 2.0 else 0.0)
    elif op == SIN:
        f0 = math.sin(u)
        d1 = math.cos(u)
        d2 = -f0
    elif op == COS:
        f0 = math.cos(u)
        d1 = -math.sin(u)
        d2 = -f0
    elif op == TAN:
        f0 = math.tan(u)
        d1 = 1.0 + f0 * f0
        d2 = 2.0 * f0 * d1
    elif op == ASIN:
        f0 = math.asin(u)
        w = 1.0 - u * u
        d1 = 1.0 / math.sqrt(w)
        d2 = u / (w * math.sqrt(w))
    elif op == ACOS:
        f0 = math.acos(u)
        w = 1.0 - u * u
        d1 = -1.0 / math.sqrt(w)
        d2 = -u / (w * math.sqrt(w))
    elif op == ATAN:
        f0 = math.atan(u)
        w = 1.0 + u * u
        d1 = 1.0 / w
        d2 = -2.0 * u / (w * w)
    elif op == SINH:
        f0 = math.sinh(u)
        d1 = math.cosh(u)
        d2 = f0
    elif op == COSH:
        f0 = math.cosh(u)
        d1 = math.sinh(u)
        d2 = f0
    elif op == TANH:
        f0 = math.tanh(u)
        d1 = 1.0 - f0 * f0
        d2 = -2.0 * f0 * d1
    elif op == EXP:
        f0 = math.exp(u)
        d1 = f0
        d2 = f0
    elif op == LOG:
        f0 = math.log(u)
        d1 = 1.0 / u
        d2 = -d1 * d1
    elif op == SQRT:
        f0 = math.sqrt(u)
        d1 = 0.5 / f0
        d2 = -0.25 / (f0 * u)
    elif op == ABS:
        f0 = abs(u)
        d1 = 1.0 if u >= 0.0 else -1.0
        d2 = 0.0
    elif op == SIGN:
        f0 = 0.0 if u == 0.0 else (1.0 if u > 0.0 else -1.0)
        d1 = 0.0
        d2 = 0.0
    else:  # STEP
        f0 = 1.0 if u >= 0.0 else 0.0
        d1 = 0.0
        d2 = 0.0
    return f0, d1 * u1, d2 * u1 * u1 + d1 * u2


@nb.njit(**INLINED_WORKER)
def eval_tape(ops, args, start, end, time, stack, inputs):
    """Evaluate the tape ``ops[start:end]`` at ``time`` with the ``inputs`` array of its table.

    ``stack`` is scratch of shape ``(MAX_STACK, 3)``. Returns ``(f, f', f'')``.
    """
    sp_ = 0
    for i in range(start, end):
        op = ops[i]
        if op == CONST:
            stack[sp_, 0] = args[i]
            stack[sp_, 1] = 0.0
            stack[sp_, 2] = 0.0
            sp_ += 1
        elif op == INPUT:
            stack[sp_, 0] = inputs[int(args[i])]
            stack[sp_, 1] = 0.0
            stack[sp_, 2] = 0.0
            sp_ += 1
        elif op == TIME:
            stack[sp_, 0] = time
            stack[sp_, 1] = 1.0
            stack[sp_, 2] = 0.0
            sp_ += 1
        elif is_binary(op):  # a (below) op b (top)
            r0, r1, r2 = apply_binary(op, stack[sp_ - 2, 0], stack[sp_ - 2, 1], stack[sp_ - 2, 2],
                                      stack[sp_ - 1, 0], stack[sp_ - 1, 1], stack[sp_ - 1, 2])
            sp_ -= 1
            stack[sp_ - 1, 0] = r0
            stack[sp_ - 1, 1] = r1
            stack[sp_ - 1, 2] = r2
        else:  # unary on the top
            r0, r1, r2 = apply_unary(op, args[i], stack[sp_ - 1, 0], stack[sp_ - 1, 1],
                                     stack[sp_ - 1, 2])
            stack[sp_ - 1, 0] = r0
            stack[sp_ - 1, 1] = r1
            stack[sp_ - 1, 2] = r2
    return stack[0, 0], stack[0, 1], stack[0, 2]


@nb.njit(**INLINED_WORKER)
def eval_functions(ops, args, start, time, out, stack, inputs):
    """Evaluate every function of a tape table at ``time`` into ``out (n_function, 3)``."""
    for k in range(start.shape[0] - 1):
        f0, f1, f2 = eval_tape(ops, args, start[k], start[k + 1], time, stack, inputs)
        out[k, 0] = f0
        out[k, 1] = f1
        out[k, 2] = f2


class Program(NamedTuple):
    """A table of functions of time as one register program (straight-line SSA code).

    Instruction i computes register i (a Taylor triple) from ``op[i]`` with ``arg[i]`` (CONST's
    value, POWC's exponent) and the registers ``a[i]``, ``b[i]`` (-1 unused); function k is
    register ``out[k]``. Built from the tapes by :func:`build_program`.
    """
    op: np.ndarray   # (n_reg,)
    arg: np.ndarray  # (n_reg,)
    a: np.ndarray    # (n_reg,)
    b: np.ndarray    # (n_reg,)
    out: np.ndarray  # (n_function,)


def build_program(ops, args, start) -> Program:
    """Compile concatenated tapes into one :class:`Program`.

    The tapes of a model repeat the same subexpressions (the nine entries of a pose driver's
    rotation matrix share the sines and cosines of three angles; a derived sin/cos driver repeats
    its base function), so each distinct operation on the same operands is computed once (value
    numbering), subexpressions that do not depend on time are folded to constants, and
    instructions no function uses are dropped. The program computes the same operations on the
    same operands as the tapes, so its values are bitwise the same.
    """
    ops, args, start = np.asarray(ops), np.asarray(args, float), np.asarray(start)
    instr: list[tuple[int, float, int, int]] = []
    number: dict = {}
    constant: list[bool] = []
    outs = []
    for k in range(len(start) - 1):
        stack: list[int] = []
        for i in range(start[k], start[k + 1]):
            op = int(ops[i])
            arg = float(args[i]) if op in (CONST, POWC, INPUT) else 0.0
            if op in (CONST, TIME, INPUT):
                operands = ()
            elif is_binary(op):
                operands = (stack.pop(-2), stack.pop())
            else:
                operands = (stack.pop(),)
            key = (op, np.float64(arg).tobytes(), operands)
            if key not in number:
                number[key] = len(instr)
                a, b = (list(operands) + [-1, -1])[:2]
                instr.append((op, arg, a, b))
                constant.append(op == CONST or (op not in (TIME, INPUT)
                                                and all(constant[r] for r in operands)))
            stack.append(number[key])
        if len(stack) != 1:
            raise ValueError(f"function {k}: malformed tape (stack of {len(stack)} at its end)")
        outs.append(stack[0])
    op, arg, a, b = (np.array(x) for x in zip(*instr)) if instr else [np.zeros(0)] * 4
    op, a, b, arg = op.astype(np.int64), a.astype(np.int64), b.astype(np.int64), arg.astype(float)
    # fold: a constant register becomes a CONST. Only the constant instructions are run (their
    # operands are constants too): the others may not be defined at any one time (1/t at 0)
    folded = np.flatnonzero(constant)
    place = np.full(len(op) + 1, -1)  # register -> its place among them (-1 -> -1: none)
    place[folded] = np.arange(len(folded))
    reg = np.zeros((len(folded), 3))
    eval_program(op[folded], arg[folded], place[a[folded]], place[b[folded]], 0.0, reg,
                 np.zeros(1))
    op[folded], arg[folded], a[folded], b[folded] = CONST, reg[:, 0], -1, -1
    used = np.zeros(len(op), bool)
    for r in sorted(set(outs), reverse=True):
        used[r] = True
    for i in range(len(op) - 1, -1, -1):  # operands come before their users
        if used[i]:
            used[[r for r in (a[i], b[i]) if r >= 0]] = True
    new = np.cumsum(used) - 1
    remap = lambda x: np.where(x >= 0, new[np.maximum(x, 0)], -1)  # noqa: E731
    return Program(op[used], arg[used], remap(a[used]), remap(b[used]),
                   new[np.array(outs, np.int64)].astype(np.int64))


@nb.njit(**INLINED_WORKER)
def eval_program(op, arg, a, b, time, reg, inputs):
    """Run a :class:`Program` at ``time`` with its table's ``inputs`` array: ``reg (n_reg, 3)``
    gets every register."""
    for i in range(op.shape[0]):
        o = op[i]
        if o == CONST:
            reg[i, 0] = arg[i]
            reg[i, 1] = 0.0
            reg[i, 2] = 0.0
        elif o == INPUT:
            reg[i, 0] = inputs[int(arg[i])]
            reg[i, 1] = 0.0
            reg[i, 2] = 0.0
        elif o == TIME:
            reg[i, 0] = time
            reg[i, 1] = 1.0
            reg[i, 2] = 0.0
        elif is_binary(o):
            x, y = a[i], b[i]
            r0, r1, r2 = apply_binary(o, reg[x, 0], reg[x, 1], reg[x, 2], reg[y, 0], reg[y, 1],
                                      reg[y, 2])
            reg[i, 0] = r0
            reg[i, 1] = r1
            reg[i, 2] = r2
        else:
            x = a[i]
            r0, r1, r2 = apply_unary(o, arg[i], reg[x, 0], reg[x, 1], reg[x, 2])
            reg[i, 0] = r0
            reg[i, 1] = r1
            reg[i, 2] = r2


@nb.njit(cache=True, nogil=True)
def first_nonpositive(ops, args, start, functions, times, inputs):
    """``(time index, position in functions)`` of the first time at which one of the table's
    ``functions`` has a value <= 0, or ``(-1, -1)``: one compiled pass over a whole run's times
    (a driven distance's check)."""
    stack = np.zeros((MAX_STACK, 3))
    for k in range(times.shape[0]):
        for i in range(functions.shape[0]):
            f = functions[i]
            if eval_tape(ops, args, start[f], start[f + 1], times[k], stack, inputs)[0] <= 0.0:
                return k, i
    return -1, -1


def first_undefined(table: TapeTable, times) -> tuple[int, float, str] | None:
    """``(function, time, what)``: the first of ``times`` at which a function of the table
    divides by zero (the compiled evaluations raise ZeroDivisionError there) or has a value or
    derivative that is not finite (``sqrt`` of a negative number: NaN, which compiled code
    returns without an error), with what went wrong in words; None if there is none."""
    stack = np.zeros((MAX_STACK, 3))
    for t in np.asarray(times, float).ravel():
        try:
            values = table.evaluate(t)
        except ZeroDivisionError:
            for k in range(len(table)):
                try:
                    eval_tape(table.ops, table.args, table.start[k], table.start[k + 1], t, stack,
                              table.inputs)
                except ZeroDivisionError:
                    return k, float(t), "divides by zero"
            continue  # (the table's evaluation and the single tapes' agree: not reached)
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            parts = ", ".join(f"{name} {v:g}" for name, v in zip(
                ("value", "rate", "second rate"), values[k]))
            return k, float(t), f"is not finite ({parts})"
    return None


class TapeTable:
    """The tapes of a list of SymPy expressions in ``t`` and the ``inputs`` symbols,
    concatenated (see module docstring), with the live values of the inputs."""

    def __init__(self, expressions: list[sp.Expr], inputs: Sequence[str] = (),
                 values: Sequence[float] = ()):
        ops: list[int] = []
        args: list[float] = []
        start = [0]
        for e in expressions:
            o, a = compile_tape(e, inputs)
            ops += o
            args += a
            start.append(len(ops))
        self.ops = np.asarray(ops, dtype=np.int64)
        self.args = np.asarray(args, dtype=np.float64)
        self.start = np.asarray(start, dtype=np.int64)
        self.input_names = tuple(inputs)
        #: [generation, input 0, input 1, ...]: the one array every formulation built from the
        #: table reads its inputs from (and its generation, to redo cached evaluations)
        self.inputs = np.zeros(1 + len(self.input_names))
        self.inputs[0] = 1.0
        self.inputs[1:] = values if len(values) else 0.0

    def __len__(self) -> int:
        return len(self.start) - 1

    def set_inputs(self, values: dict[str, float]) -> None:
        """Set inputs by name (checked by the caller) and start a new generation."""
        for name, value in values.items():
            self.inputs[1 + self.input_names.index(name)] = value
        self.inputs[0] += 1.0

    def evaluate(self, time: float) -> np.ndarray:
        """``(n_function, 3)`` array of value, first and second derivative at ``time``."""
        out = np.empty((len(self), 3))
        eval_functions(self.ops, self.args, self.start, float(time), out, np.empty((MAX_STACK, 3)),
                       self.inputs)
        return out
