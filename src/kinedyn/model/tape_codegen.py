"""Functions of time as straight-line machine code: a register :class:`~.tape.Program` written out
as LLVM IR (:mod:`kinedyn._llvm`), one function per model.

The interpreter :func:`.tape.eval_program` branches on each instruction's operation and moves
its operands through memory; for one model the program is fixed, so all of that can be done
once. The Taylor rules are not written a second time for this: the Python source of
:func:`.tape.apply_unary` and :func:`.tape.apply_binary` is run once per instruction on
symbolic values (:class:`_Value`) that emit, for each arithmetic operation and ``math``
function they meet, the operation that Numba emits for it (an intrinsic or a libm call,
:mod:`numba.cpython.mathimpl`; a division checks its divisor for zero, as Numba's does). So the
code does the interpreter's floating-point operations on the same operands in the same order:
its values are the interpreter's to the bit (``tests/model/test_tape_codegen.py``). Numbers
that do not depend on time (a constant's derivatives, time's own) stay Python floats while
traced; Python computes them as the interpreter would at run time, in IEEE double.

A rule that branches on a value (ABS, SIGN, STEP, MIN, MAX: a load switched on by a step) is
run once per outcome of its comparisons, the comparisons emitted as the ``fcmp`` Numba emits,
and the results joined by ``select``: the code computes every branch, the interpreter one, and
the value chosen is the same. A branch that divides keeps the interpreter (a division checks its
divisor, and a branch not taken must not raise), as do programs with
``KINEDYN_FUNCTION_CODEGEN=0`` set when the model's formulation is built.
"""
from __future__ import annotations

import hashlib
import os
import types

import numba as nb
import numpy as np

from .._jit import INLINED_WORKER, overload_inlined
from .._llvm import Function, c_float64, call, compile_structure, constant
from .tape import (CONST, INPUT, TIME, Program, apply_binary, apply_unary, build_program,
                   eval_program, is_binary)

SWITCH = "KINEDYN_FUNCTION_CODEGEN"  # "0": formulations built from now on interpret
NAME = "functions_of_time"
NO_CODE = np.zeros(1, np.int64)
#: largest program (registers) written out: LLVM's time grows faster than the code (a
#: synthetic 3865 registers 1.0 s, 6445 1.9 s, 38 695 49 s; the library's largest has 60)
LIMIT = 4000
ZERO_DIVISOR = 1  # the code's return value when a divisor is zero (Numba raises)

#: How Numba lowers each ``math`` function the rules use (numba.cpython.mathimpl): these four
#: as LLVM intrinsics, the others as calls of the libm function of the same name.
_INTRINSICS = ("sin", "cos", "exp", "log")
_LIBM = ("tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sqrt", "atan2")


class Untraceable(Exception):
    """The program cannot be written out as code that does what the interpreter does."""


class _Fork(Exception):
    """A rule met a comparison whose outcome the current run has not decided."""

    def __init__(self, condition: str):
        super().__init__(condition)
        self.condition = condition


def _name(x) -> str:
    return x.name if isinstance(x, _Value) else constant(x)


def _operation(emit, reflected: bool = False):
    """A binary operator of :class:`_Value`: ``emit(code, a, b)`` with the operands in the
    order written (``reflected``: the _Value is the right one, as in ``2.0 * u``)."""
    def method(self, other):
        a, b = (other, self) if reflected else (self, other)
        return emit(self.code, a, b)
    return method


def _instruction(opcode: str):
    return lambda code, a, b: _Value(code, code.f.value(f"{opcode} double {_name(a)}, {_name(b)}"))


def _comparison(predicate: str):
    return lambda code, a, b: _Condition(code, code.f.value(
        f"fcmp {predicate} double {_name(a)}, {_name(b)}"))


def _power(code, a, b):
    return code.call("llvm.pow.f64", a, b)


class _Value:
    """A float64 known at run time: an SSA value of the function being emitted. Arithmetic on it
    emits the instruction Numba emits for it; a comparison gives a :class:`_Condition`."""
    __slots__ = ("code", "name")

    def __init__(self, code: _Code, name: str):
        self.code, self.name = code, name

    __add__, __radd__ = _operation(_instruction("fadd")), _operation(_instruction("fadd"), True)
    __sub__, __rsub__ = _operation(_instruction("fsub")), _operation(_instruction("fsub"), True)
    __mul__, __rmul__ = _operation(_instruction("fmul")), _operation(_instruction("fmul"), True)
    __truediv__ = _operation(lambda code, a, b: code.divide(a, b))
    __rtruediv__ = _operation(lambda code, a, b: code.divide(a, b), True)
    __pow__, __rpow__ = _operation(_power), _operation(_power, True)
    # Numba's comparisons of floats (numba.cpython.numbers): ordered, but != unordered; the
    # reflected ones need nothing (Python turns 1.0 < u into u > 1.0)
    __lt__, __le__ = _operation(_comparison("olt")), _operation(_comparison("ole"))
    __gt__, __ge__ = _operation(_comparison("ogt")), _operation(_comparison("oge"))
    __eq__, __ne__ = _operation(_comparison("oeq")), _operation(_comparison("une"))
    __hash__ = None

    def __neg__(self):
        return _Value(self.code, self.code.f.value(f"fneg double {self.name}"))

    def __abs__(self):
        return self.code.call("llvm.fabs.f64", self)


class _Condition:
    """An ``i1`` comparison result; used as a Python ``bool`` it takes the outcome the current
    run decided for it (:meth:`_Code.apply`)."""
    __slots__ = ("code", "name")

    def __init__(self, code: _Code, name: str):
        self.code, self.name = code, name

    def __bool__(self) -> bool:
        return self.code.decide(self.name)


class _Code:
    """The function being emitted, ``@functions_of_time(ptr %fval, ptr %inputs, double %t)``,
    with the functions it declares."""

    def __init__(self):
        self.f = Function(f"@{NAME}(ptr noalias %fval, ptr noalias %inputs, double %t)")
        self.declared: dict[str, str] = {}
        self.time = _Value(self, "%t")
        self.outcomes: list[bool] = []  # of the comparisons the current run will meet
        self.branching = False  # whether the current run follows decided outcomes
        # the rules' ``math``: each function emits Numba's lowering of it for run-time values
        self.math = types.SimpleNamespace(**{
            fn: (lambda *x, fn=fn: self.call(f"llvm.{fn}.f64" if fn in _INTRINSICS else fn, *x))
            for fn in (*_INTRINSICS, *_LIBM)})

    def decide(self, condition: str) -> bool:
        if not self.outcomes:
            raise _Fork(condition)
        return self.outcomes.pop(0)

    def apply(self, rule, *args) -> tuple:
        """``rule(*args)`` (a Taylor triple) for every outcome of the comparisons it meets,
        joined by ``select`` on those comparisons."""
        return self._apply(rule, args, [])

    def _apply(self, rule, args, decided: list) -> tuple:
        self.outcomes, self.branching = list(decided), bool(decided)
        try:
            return tuple(rule(*args))
        except _Fork as fork:
            condition = fork.condition
        on_true = self._apply(rule, args, decided + [True])
        on_false = self._apply(rule, args, decided + [False])
        return tuple(x if x is y else _Value(self, self.f.value(
            f"select i1 {condition}, double {_name(x)}, double {_name(y)}"))
            for x, y in zip(on_true, on_false))

    def call(self, function: str, *args) -> _Value:
        pure = "" if function.startswith("llvm.") else " nounwind readonly"
        params = ", ".join(["double"] * len(args))
        self.declared[function] = f"declare double @{function}({params}){pure}"
        operands = ", ".join(f"double {_name(x)}" for x in args)
        return _Value(self, self.f.value(f"call double @{function}({operands})"))

    def divide(self, a, b) -> _Value:
        if self.branching:
            raise Untraceable  # (see the module docstring)
        if not isinstance(b, _Value):
            if b == 0.0:
                raise Untraceable  # Numba raises at every call: leave that to the interpreter
        else:
            self.f.exit_if(self.f.value(f"fcmp oeq double {b.name}, 0.0"), "zero_divisor")
        return _Value(self, self.f.value(f"fdiv double {_name(a)}, {_name(b)}"))

    def text(self) -> str:
        body = self.f.end({"zero_divisor": ZERO_DIVISOR})
        return "\n".join([*sorted(self.declared.values()), body])


def _traced(rule, code: _Code):
    """The rule's Python function, its ``math`` replaced by the code's."""
    fn = rule.py_func
    return types.FunctionType(fn.__code__, {**fn.__globals__, "math": code.math}, fn.__name__,
                              fn.__defaults__, fn.__closure__)


def program_ir(program: Program) -> str | None:
    """The LLVM IR of ``@functions_of_time(fval, inputs, t)``, which writes ``fval
    (n_function, 3)`` as :func:`.tape.eval_program` and the copy of its outputs do, reading
    the inputs' slots from ``inputs`` (once per call), and returns 0 (or :data:`ZERO_DIVISOR`);
    None when a rule cannot be traced."""
    code = _Code()
    unary, binary = _traced(apply_unary, code), _traced(apply_binary, code)
    reg: list[tuple] = []
    try:
        for i, op in enumerate(int(o) for o in program.op):
            if op == CONST:
                reg.append((float(program.arg[i]), 0.0, 0.0))
            elif op == TIME:
                reg.append((code.time, 1.0, 0.0))
            elif op == INPUT:
                reg.append((_Value(code, code.f.read("%inputs", int(program.arg[i]))), 0.0, 0.0))
            elif is_binary(op):
                reg.append(code.apply(binary, op, *reg[program.a[i]], *reg[program.b[i]]))
            else:
                reg.append(code.apply(unary, op, float(program.arg[i]), *reg[program.a[i]]))
    except (Untraceable, ArithmeticError):  # (Python raised on numbers the code would not)
        return None
    for k, r in enumerate(program.out):
        for c in range(3):
            code.f.store("%fval", 3 * k + c, _name(reg[r][c]))
    return code.text()


def program_code(program: Program, subject: str) -> np.ndarray:
    """``[address]`` of the program's generated function (:func:`program_ir`), or
    :data:`NO_CODE` (interpret) for an empty or untraceable program, one above :data:`LIMIT`,
    with ``KINEDYN_FUNCTION_CODEGEN=0``, or when LLVM refuses the IR (a warning naming
    ``subject``)."""
    if (len(program.out) == 0 or len(program.op) > LIMIT
            or os.environ.get(SWITCH, "1") == "0"):
        return NO_CODE
    code = compile_structure(program_key(program), lambda: program_ir(program), (NAME,),
                             "functions", f"{subject}: functions of time")
    return NO_CODE if code is None else code


def program_key(program: Program) -> bytes:
    """A digest of all :func:`program_ir` reads: the program's arrays (its constants too)."""
    h = hashlib.sha256()
    for a in map(np.ascontiguousarray, program):
        h.update(f"{a.shape} {a.dtype.char}".encode())
        h.update(a.tobytes())
    return h.digest()


def run_program_code(code, fval, inputs, t):
    """In compiled code: run the generated function ``code[0]`` of :func:`program_code` into
    ``fval`` at ``t`` with the table's ``inputs``: True; False when there is none (``code[0] ==
    0``) or ``fval`` is not C-contiguous float64 (the caller interprets). A zero divisor raises
    ZeroDivisionError, as the interpreter's division does."""


@overload_inlined(run_program_code, jit_options={"cache": True, "nogil": True})
def _ov_run_program_code(code, fval, inputs, t):
    if not (c_float64(fval) and c_float64(inputs)):
        return lambda code, fval, inputs, t: False

    def impl(code, fval, inputs, t):
        if code[0] == 0:
            return False
        if call(code[0], (fval, inputs), (0, 0), (float(t),)) != 0:
            raise ZeroDivisionError("division by zero")
        return True
    return impl


def program_arrays(ops, args, start, subject: str) -> dict:
    """The arrays with which a formulation's data carry its functions of time (the
    concatenated tapes ``ops, args, start``): the register program
    (:func:`.tape.build_program`) as ``fp_op, fp_arg, fp_a, fp_b, fp_out`` and its code
    (:func:`program_code`) as ``fp_code``."""
    program = build_program(ops, args, start)
    return {**{f"fp_{k}": v for k, v in program._asdict().items()},
            "fp_code": program_code(program, subject)}


@nb.njit(**INLINED_WORKER)
def functions_at(fp_op, fp_arg, fp_a, fp_b, fp_out, fp_code, fp_input, freg, fval, t):
    """``fval (n_function, 3)``: every function of time of :func:`program_arrays` at ``t`` (value,
    first and second derivative) with the inputs ``fp_input`` (the table's
    :attr:`~.tape.TapeTable.inputs`), by its generated code or else by the interpreter
    (``freg (n_reg, 3)``: its registers)."""
    if run_program_code(fp_code, fval, fp_input, t):
        return
    eval_program(fp_op, fp_arg, fp_a, fp_b, t, freg, fp_input)
    for k in range(fp_out.shape[0]):
        r = fp_out[k]
        fval[k, 0] = freg[r, 0]
        fval[k, 1] = freg[r, 1]
        fval[k, 2] = freg[r, 2]
