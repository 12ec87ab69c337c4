"""Functions of time as generated code (kinedyn.model.tape_codegen): the same values as the
interpreter to the bit, branches included; the interpreter kept where the code cannot be."""
import numba as nb
import numpy as np
import pytest
import sympy as sp

from kinedyn.model import tape_codegen
from kinedyn.model.expressions import t as T
from kinedyn.model.tape import CONST, MUL, NEG, SUB, TIME, Program, TapeTable
from kinedyn.model.tape_codegen import (NO_CODE, SWITCH, Untraceable, _Code, functions_at,
                                        program_arrays, program_code)
from kinedyn.models import MODELS

# every operation of the tape, each in value, first and second derivative
TRACEABLE = [
    "t", "2.5", "3*t**2 - t/7 + 1", "-(t**3) + 2", "sin(2*t)*cos(t) - tan(0.3*t)",
    "asin(0.4*sin(t)) + acos(0.3*cos(t)) + atan(t)", "sinh(0.5*t)*cosh(0.2*t) + tanh(t)",
    "exp(-t)*log(2 + t**2)", "sqrt(1 + t**2)/(1.5 + sin(t))", "(2 + sin(t))**(1 + 0.5*cos(t))",
    "atan2(sin(t), 1.5 + cos(t))", "(1 + t**2)**1.5 + (2 + t)**2 + (3 + t)**-2.5",
    "1/(2 + cos(3*t))",
]
BRANCHING = ["Abs(sin(t))", "sign(t - 0.5)", "Heaviside(t - 1)*sin(t)", "Min(t, 1) + Max(t**2, 2)",
             "3*sin(t)*(Heaviside(t - 1) - Heaviside(t - 2)) + Abs(t - 1.5)**3"]
TIMES = np.array([-2.1, -0.5, 0.0, 0.37, 0.5, 1.0, 1.3, 1.5, 2.0, 2.71, 5.5, 9.0])


@nb.njit(cache=True)
def _evaluate_with(fp_op, fp_arg, fp_a, fp_b, fp_out, fp_code, fp_input, times):
    out = np.zeros((times.shape[0], fp_out.shape[0], 3))
    freg = np.zeros((fp_op.shape[0], 3))
    for i in range(times.shape[0]):
        functions_at(fp_op, fp_arg, fp_a, fp_b, fp_out, fp_code, fp_input, freg, out[i],
                     times[i])
    return out


def _evaluate(fp_op, fp_arg, fp_a, fp_b, fp_out, fp_code, times, inputs=None):
    """Every function at every time: out[time, function, derivative] (``inputs``: the table's
    inputs array, none by default)."""
    inputs = np.ones(1) if inputs is None else inputs
    return _evaluate_with(fp_op, fp_arg, fp_a, fp_b, fp_out, fp_code, inputs, times)


def _arrays(texts):
    table = TapeTable([sp.sympify(x, locals={"t": T}) for x in texts])
    return program_arrays(table.ops, table.args, table.start, "test")


def _both(arrays, times=TIMES):
    """(generated, interpreted) values of every function at ``times``."""
    args = [arrays[f"fp_{k}"] for k in ("op", "arg", "a", "b", "out")]
    return (_evaluate(*args, arrays["fp_code"], times), _evaluate(*args, NO_CODE, times))


@pytest.mark.parametrize("texts", [TRACEABLE, BRANCHING], ids=["arithmetic", "branches"])
def test_code_is_the_interpreter_to_the_bit(texts):
    arrays = _arrays(texts)
    assert arrays["fp_code"][0] != 0
    coded, interpreted = _both(arrays)
    assert np.array_equal(coded, interpreted)


@pytest.mark.parametrize("text, value, rate", [
    ("sin(2*t)*cos(t) - tan(0.3*t)", lambda t: np.sin(2 * t) * np.cos(t) - np.tan(0.3 * t),
     lambda t: (2 * np.cos(2 * t) * np.cos(t) - np.sin(2 * t) * np.sin(t)
                - 0.3 / np.cos(0.3 * t) ** 2)),
    ("Heaviside(t - 1)*sin(t)", lambda t: np.where(t >= 1, np.sin(t), 0.0),
     lambda t: np.where(t >= 1, np.cos(t), 0.0)),
    ("Min(t, 1) + Max(t**2, 2)", lambda t: np.minimum(t, 1) + np.maximum(t**2, 2),
     lambda t: (t < 1) + np.where(t**2 >= 2, 2 * t, 0.0)),  # (at a kink: either side)
])
def test_closed_forms(text, value, rate):
    coded = _both(_arrays([text]))[0][:, 0]
    assert np.allclose(coded[:, 0], value(TIMES), rtol=1e-14, atol=1e-14)
    assert np.allclose(coded[:, 1], rate(TIMES), rtol=1e-14, atol=1e-14)


def test_subtraction_and_negation():
    """SUB and NEG, which SymPy's expressions never produce (t - 2 is t + (-2)), in a program
    written by hand: t - 2, -(t - 2), -(t - 2) t."""
    program = Program(np.array([TIME, CONST, SUB, NEG, MUL]), np.array([0, 2.0, 0, 0, 0]),
                      np.array([-1, -1, 0, 2, 3]), np.array([-1, -1, 1, -1, 0]),
                      np.array([2, 3, 4]))
    arrays = {f"fp_{k}": v for k, v in program._asdict().items()}
    arrays["fp_code"] = program_code(program, "test")
    assert arrays["fp_code"][0] != 0
    coded, interpreted = _both(arrays)
    assert np.array_equal(coded, interpreted)
    t = TIMES[:, None]
    assert np.allclose(coded[:, 2], np.hstack([-(t - 2) * t, -2 * t + 2, -2 + 0 * t]),
                       rtol=1e-15, atol=1e-15)


def test_derivatives_match_finite_differences():
    arrays = _arrays(TRACEABLE)
    h = 1e-4
    t = np.array([0.2, 0.9, 1.7])
    f0, fp, fm = (_both(arrays, x)[0] for x in (t, t + h, t - h))
    assert np.allclose(f0[..., 1], (fp[..., 0] - fm[..., 0]) / (2 * h), rtol=1e-6, atol=1e-7)
    assert np.allclose(f0[..., 2], (fp[..., 0] - 2 * f0[..., 0] + fm[..., 0]) / h**2,
                       rtol=1e-4, atol=1e-4)


def test_a_branch_that_divides_keeps_the_interpreter():
    """The code computes every branch; a division checks its divisor, which a branch the
    interpreter does not take must not do: such a rule is not written out."""
    code = _Code()
    with pytest.raises(Untraceable):
        code.apply(lambda u: (1.0 / u if u > 0.0 else 0.0, 0.0, 0.0), code.time)
    # outside a branch, a division is written out (with its check)
    assert code.apply(lambda u: (1.0 / u, 0.0, 0.0), code.time)[0].name.startswith("%v")


def test_a_zero_divisor_raises_as_in_the_interpreter():
    """1/t: undefined at t = 0 only (building its program once evaluated it there, to fold
    the constants, and raised)."""
    arrays = _arrays(["1/t"])
    assert arrays["fp_code"][0] != 0
    args = [arrays[f"fp_{k}"] for k in ("op", "arg", "a", "b", "out")]
    for code in (arrays["fp_code"], NO_CODE):
        assert np.array_equal(_evaluate(*args, code, np.array([0.5]))[0, 0], [2.0, -4.0, 16.0])
        with pytest.raises(ZeroDivisionError):
            _evaluate(*args, code, np.array([0.0]))


def test_switch_limit_and_empty_programs_interpret(monkeypatch):
    assert _arrays([])["fp_code"][0] == 0
    monkeypatch.setattr(tape_codegen, "LIMIT", len(_arrays(TRACEABLE)["fp_op"]) - 1)
    assert _arrays(TRACEABLE)["fp_code"][0] == 0
    monkeypatch.undo()
    monkeypatch.setenv(SWITCH, "0")
    assert _arrays(TRACEABLE)["fp_code"][0] == 0


@pytest.mark.parametrize("name", [n for n in MODELS])
def test_every_library_model_gets_code_with_the_interpreter_values(name):
    model = MODELS[name].build().compile()
    f = model.functions
    if len(f) == 0:
        pytest.skip("no functions of time")
    arrays = program_arrays(f.ops, f.args, f.start, name)
    assert arrays["fp_code"][0] != 0
    times = np.concatenate([TIMES, np.linspace(0.0, 6.0, 61)])
    coded, interpreted = _both(arrays, times)
    assert np.array_equal(coded, interpreted)
    assert np.array_equal(coded, np.stack([f.evaluate(x) for x in times]))  # the tapes'


def _formulations(make, model, monkeypatch):
    """The formulation built with the code and without it."""
    out = []
    for switch in ("1", "0"):
        monkeypatch.setenv(SWITCH, switch)
        out.append(make(model))
        assert (out[-1].data.fp_code[0] != 0) == (switch == "1")
    return out


@pytest.mark.parametrize("formulation", ["natural", "relative"])
def test_the_formulations_run_the_code(formulation, monkeypatch):
    """Phi of a driven model is the same to the bit with and without the code (and the
    relative formulation's Phi_t and gamma; the natural one's are in the run below)."""
    from kinedyn.formulations.natural import Natural
    from kinedyn.formulations.relative import Relative
    from kinedyn.kinematics.assembly import constraint_values
    make = {"natural": Natural, "relative": Relative}[formulation]
    model = MODELS["four-bar-driven"].build().compile()
    coded, interpreted = _formulations(make, model, monkeypatch)
    rng = np.random.default_rng(7)
    for t in (0.0, 0.3, 1.7):
        q, qd = coded.q0 + 0.01 * rng.standard_normal(coded.n_q), rng.standard_normal(coded.n_q)
        pairs = [(constraint_values(f, q, t, f.make_work()) for f in (coded, interpreted))]
        if formulation == "relative":
            pairs += [(f.phi_t(q, t) for f in (coded, interpreted)),
                      (f.gamma(q, qd, t) for f in (coded, interpreted))]
        for a, b in pairs:
            assert np.array_equal(a, b)
    assert not np.array_equal(constraint_values(coded, q, 0.0, coded.make_work()),
                              constraint_values(coded, q, 1.7, coded.make_work()))  # driven


def test_a_kinematic_run_is_the_same_with_and_without_the_code(monkeypatch):
    from kinedyn.formulations.natural import Natural
    from kinedyn.kinematics import Kinematics
    model = MODELS["stewart-paper"].build().compile()
    runs = [Kinematics(f).simulate(0.3, 1e-3) for f in _formulations(Natural, model, monkeypatch)]
    for quantity in ("q", "qd", "qdd"):
        assert np.array_equal(getattr(runs[0], quantity), getattr(runs[1], quantity))
    assert np.ptp(runs[0].q, axis=0).max() > 0.01  # the platform moved


def _random_expression(rng, depth):
    """A random expression in t over every operation of the tape (domain errors included:
    the code must give the interpreter's NaN and infinity too)."""
    if depth == 0 or rng.random() < 0.2:  # (every leaf depends on t: SymPy would evaluate
        # constant subtrees itself)
        return sp.Float(round(rng.uniform(-2, 2), 3)) * T + sp.Float(round(rng.uniform(-1, 1), 2))
    a = _random_expression(rng, depth - 1)
    kind = rng.integers(0, 6)
    if kind == 0:
        unary = [sp.sin, sp.cos, sp.tan, sp.asin, sp.acos, sp.atan, sp.sinh, sp.cosh, sp.tanh,
                 sp.exp, sp.log, sp.sqrt, sp.Abs, sp.sign, sp.Heaviside]
        return unary[rng.integers(len(unary))](a)
    if kind == 1:
        return a ** sp.Float(rng.choice([-2.5, -1, 0.5, 2, 3, 1.7]))
    b = _random_expression(rng, depth - 1)
    binary = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x / y, lambda x, y: x ** y,
              sp.Min, sp.Max, sp.atan2, lambda x, y: x - y]
    return binary[rng.integers(len(binary))](a, b)


def _at(args, code, t):
    """Values at one time, or the error raised."""
    try:
        return _evaluate(*args, code, np.array([t]))
    except ZeroDivisionError as exc:
        return type(exc)


@pytest.mark.parametrize("seed", range(4))
def test_random_programs_are_the_interpreter_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    expressions = [_random_expression(rng, 4) for _ in range(12)]
    table = TapeTable(expressions)
    arrays = program_arrays(table.ops, table.args, table.start, "fuzz")
    assert arrays["fp_code"][0] != 0
    args = [arrays[f"fp_{k}"] for k in ("op", "arg", "a", "b", "out")]
    for t in np.concatenate([np.linspace(-3, 3, 31), [0.5, 1.0, -1.0]]):
        coded, interpreted = _at(args, arrays["fp_code"], t), _at(args, NO_CODE, t)
        if isinstance(coded, np.ndarray) and isinstance(interpreted, np.ndarray):
            assert np.array_equal(coded, interpreted, equal_nan=True), (t, expressions)
        else:
            assert coded is interpreted, (t, expressions)


def test_inputs_are_read_at_each_call_by_code_and_interpreter():
    """Inputs (kinedyn.model.tape.INPUT): a value per call, derivatives zero, the generated code
    equal to the interpreter; a time-only subexpression beside them is still folded."""
    u, v = sp.symbols("u v")
    exprs = [3 * u * sp.sin(T) + v, u ** 2, sp.cos(2 * sp.pi / 3) * v]
    table = TapeTable(exprs, inputs=("u", "v"), values=(0.5, -2.0))
    arrays = program_arrays(table.ops, table.args, table.start, "inputs")
    assert arrays["fp_code"][0] != 0
    args = [arrays[f"fp_{k}"] for k in ("op", "arg", "a", "b", "out")]
    for values in ((0.5, -2.0), (1.25, 4.0)):
        table.set_inputs(dict(zip(("u", "v"), values)))
        a, b = values
        coded = _evaluate(*args, arrays["fp_code"], TIMES, table.inputs)
        interpreted = _evaluate(*args, NO_CODE, TIMES, table.inputs)
        assert np.array_equal(coded, interpreted)
        assert np.array_equal(coded, np.stack([table.evaluate(x) for x in TIMES]))  # the tapes'
        s, c = np.sin(TIMES), np.cos(TIMES)
        assert np.allclose(coded[:, :, 0], np.stack([3 * a * s + b, a ** 2 + 0 * s,
                                                  -0.5 * b + 0 * s], axis=1), rtol=1e-15)
        assert np.allclose(coded[:, :, 1], np.stack([3 * a * c, 0 * s, 0 * s], axis=1), rtol=1e-15)
        assert np.allclose(coded[:, :, 2], np.stack([-3 * a * s, 0 * s, 0 * s], axis=1), rtol=1e-15)
    assert table.inputs[0] == 3.0  # the generation: made, then set twice
