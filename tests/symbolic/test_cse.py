"""Global common-subexpression elimination of the generated kernels (thesis 3.4.2): the cheaper
of the plain CSE and SymPy's preprocessed one, the plain one alone on huge trees, the same values
as the expressions, and cache keys that every process agrees on."""
import math
import os
import subprocess
import sys

import sympy as sp

from kinedyn.symbolic.codegen import (BASIC_CSE_NODES, Kernel, _cse, operation_total,
                                      tree_size)

x, y = sp.symbols("x y", real=True)


def _values(repl, reduced, point):
    """The CSE'd outputs evaluated step by step, as the generated code does."""
    env = dict(point)
    for s, e in repl:
        env[s] = sp.Float(e.xreplace(env).evalf(30), 30)
    return [float(e.xreplace(env).evalf(30)) for e in reduced]


def test_the_cheaper_of_plain_and_preprocessed_cse_is_kept():
    """A common factor of sums (the preprocessing factors it out: 14 -> 8 operations) and one
    polynomial at two scales (the preprocessing splits the scale off as sqrt(10)/100, 20 -> 23
    operations): each kernel gets the cheaper, with the values of its expressions."""
    s = y + y ** 2 + sp.cos(y)
    factored = [sp.expand(sp.sin(x) * s), sp.expand(sp.cos(x) * s)]
    p = sp.sin(x) ** 2 * sp.cos(y) + 3 * sp.sin(x) * sp.cos(y) ** 2 - 7 * sp.sin(x) + 2
    scaled = [sp.sqrt(p / 1000), sp.sqrt(sp.Rational(3, 7) * p)]
    point = {x: sp.Float(0.3), y: sp.Float(1.1)}
    for outputs, (n_plain, n_basic) in ((factored, (14, 8)), (scaled, (20, 23))):
        plain, basic = _cse(outputs, None), _cse(outputs, "basic")
        assert (operation_total(*plain), operation_total(*basic)) == (n_plain, n_basic)
        chosen = Kernel("k", ("q",), {}, [(f"out[{i}]", e) for i, e in enumerate(outputs)]).cse()
        assert chosen == (basic if n_basic < n_plain else plain)
        expected = [float(e.xreplace(point).evalf(30)) for e in outputs]
        for got, want in zip(_values(*chosen, point), expected):
            assert math.isclose(got, want, rel_tol=1e-14)


def test_tree_size_counts_repeats_and_huge_trees_get_the_plain_cse():
    """e(k+1) = e(k)**2 + sin(e(k)) repeats e(k) twice: 5*2**k - 4 tree nodes (x: 1; the Add,
    Pow, its exponent 2 and sin add 4), a DAG of a few nodes per level."""
    e, v = x, -0.5
    for k in range(1, 21):
        e, v = e ** 2 + sp.sin(e), v * v + math.sin(v)
        if k in (1, 2, 10):
            assert tree_size([e]) == 5 * 2 ** k - 4
    assert tree_size([e]) == 5 * 2 ** 20 - 4 > BASIC_CSE_NODES
    kernel = Kernel("k", ("q",), {}, [("out[0]", e)])
    chosen = kernel.cse()
    assert chosen == _cse([e], None) and len(chosen[0]) <= 3 * 20
    assert math.isclose(_values(*chosen, {x: sp.Float(-0.5)})[0], v, rel_tol=1e-13)


_KEY = """
import sys
import sympy as sp
from kinedyn.symbolic.codegen import Kernel
x, y = sp.symbols("x y", real=True)
terms = [sp.sin(x) * y, 3 * x ** 2, -sp.cos(y) / 7, x * y ** 3, sp.Integer(int(sys.argv[2]))]
if sys.argv[1] == "reversed":
    terms = terms[::-1]
e = sp.Add(*terms)
outputs = [("out[0]", e), ("out[1]", sp.sqrt(e ** 2 + x))]
print(Kernel("k", ("q",), {x: "q[0]", y: "q[1]"}, outputs).cache_key())
"""


def test_cache_keys_agree_between_processes():
    """Built in another order under another hash seed, a kernel has the same key; another
    kernel (one constant changed) has another."""
    def key(order, seed, constant=5):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        run = subprocess.run([sys.executable, "-c", _KEY, order, str(constant)], env=env,
                             capture_output=True, text=True, check=True)
        return run.stdout.strip()

    first = key("forward", 1)
    assert len(first) == 64
    assert key("reversed", 2) == first == key("forward", 3)
    assert key("forward", 1, constant=6) != first
