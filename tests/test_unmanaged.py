"""``kinedyn._unmanaged``: views without reference counting are only valid while their owner
lives, and inside a compiled function only an *argument* is guaranteed to (Numba releases a
local array right after its last use). Checked two ways: the views of an argument survive
allocations made after them, and no call site in the package (including the code templates
that the symbolic code generator writes out) makes a view of a local array. And a store through
a view is kept where nothing reads it again in the function (Numba's dead-code elimination)."""
import ast
import pathlib
from typing import NamedTuple

import numpy as np
from numba import njit

import kinedyn
from kinedyn._unmanaged import unmanaged

SRC = pathlib.Path(kinedyn.__file__).parent


@njit
def _fill_then_allocate(a_, n_alloc):
    a = unmanaged(a_)
    for i in range(a.shape[0]):
        a[i] = 1.0
    s = 0.0
    for _ in range(n_alloc):                 # allocations after the view was made
        b = np.full(a.shape[0], 7.0)
        s += b[0]
    return a.sum(), s


def test_views_of_arguments_survive_later_allocations():
    a = np.zeros(1000)
    total, s = _fill_then_allocate(a, 5)
    assert total == 1000.0 and s == 35.0
    assert np.all(a == 1.0)


class _Work(NamedTuple):
    a: np.ndarray
    b: np.ndarray


@njit(inline="always")
def _fill(work):
    for i in range(work.a.shape[0]):
        work.a[i] = i + 1.0
    work.b[0] = -1.0


@njit
def _fill_views(work_, b_):
    _fill(unmanaged(work_))  # inlined: the stores are the function's last use of the views
    b = unmanaged(b_)
    b[1] = 2.0


def test_stores_through_views_are_kept():
    """Nothing in the function reads the views after these stores. Numba's dead-code
    elimination (run after each IR inlining, here ``unmanaged``'s) deletes such stores into
    arrays it takes for the function's own, unless it knows they alias an argument (a call's
    result may: kinedyn._jit._CARRIERS)."""
    work, b = _Work(np.zeros(3), np.zeros(2)), np.zeros(2)
    _fill_views(work, b)
    np.testing.assert_array_equal(work.a, [1.0, 2.0, 3.0])
    assert work.b[0] == -1.0 and b[1] == 2.0


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            yield node


def _bad_calls(tree):
    """(function, line, argument) of ``unmanaged(x)`` where x is not built from a parameter."""
    bad = []
    for fn in _functions(tree):
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        body = fn.body if isinstance(fn.body, list) else [fn.body]
        for stmt in body:
            for node in ast.walk(stmt):
                if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "unmanaged"):
                    continue
                arg = node.args[0]
                while isinstance(arg, (ast.Subscript, ast.Attribute)):   # y[:n], data.x
                    arg = arg.value
                if not (isinstance(arg, ast.Name) and arg.id in params):
                    bad.append((getattr(fn, "name", "<lambda>"), node.lineno, ast.unparse(node)))
    return bad


def _sources():
    """Every package module, plus the string constants that are compiled code templates."""
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "_unmanaged.py":
            continue
        text = path.read_text()
        tree = ast.parse(text)
        yield str(path.relative_to(SRC)), tree
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and "@njit" in node.value and "unmanaged(" in node.value:
                yield f"{path.relative_to(SRC)}:{node.lineno} (template)", ast.parse(node.value)


def test_unmanaged_views_are_made_only_of_arguments():
    found, bad = 0, []
    for where, tree in _sources():
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", None) == "unmanaged"]
        found += len(calls)
        bad += [(where, *b) for b in _bad_calls(tree)]
    assert found > 10                     # the check sees the call sites (templates included)
    assert not bad, bad
