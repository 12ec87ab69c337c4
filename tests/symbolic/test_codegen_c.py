"""The C backend of the generated kernels: same CSE'd expressions printed as C, compiled by the
system compiler and called from the Numba solvers -- same numbers as the Numba kernels (to
1e-13; in practice bit for bit), a warning and the Numba kernels when there is no compiler."""
import shutil

import numpy as np
import pytest
import sympy as sp

import kinedyn
from kinedyn.errors import KinedynError
from kinedyn.symbolic.analysis import TriangularKinematics
from kinedyn.symbolic.codegen import Kernel, _c_index, build_module, c_compiler
from kinedyn.symbolic.embedded import EmbeddedDynamics
from kinedyn.symbolic.stabilized import StabilizedDynamics

needs_cc = pytest.mark.skipif(c_compiler() is None, reason="no C compiler")


def _close(a, b, tol=1e-13):
    return np.abs(a - b).max() <= tol * max(1.0, np.abs(b).max())


def _kernels():
    """Every construct the generated kernels use: powers (positive, negative), Piecewise with
    relational guards, Max, Abs, atan2, sqrt, rationals, floats and a 100-digit integer."""
    x, y, z = (sp.Symbol(n, real=True) for n in "xyz")
    big = sp.Integer(10) ** 100 + 7
    reads = {x: "q[0]", y: "q[1]", z: "q[2]"}
    exprs = [x ** 5 - 3 * y ** -3 + sp.Rational(1, 3) * z,
             sp.Piecewise((sp.sqrt(sp.Max(0, x * y - z)), sp.Abs(x) >= sp.Abs(y)), (sp.atan2(y, x), True)),
             (big * x ** 2 - big * y ** 2) / (big * z) + sp.Float(0.1) * sp.sin(x) * sp.cos(z) ** 4,
             sp.exp(-x ** 2) * sp.log(1 + y ** 2) + sp.tan(z / 7)]
    outs = [(f"J[{i // 2}, {i % 2}]", e) for i, e in enumerate(exprs)]
    return [Kernel("mixed", ("q", "t", "J"), reads, outs),
            Kernel("energy", ("q",), reads, [("V", sum(exprs))], returns="V")]


def test_c_index_uses_element_strides():
    assert _c_index("J[2, 5]") == "J[2*J_s0 + 5*J_s1]"
    assert _c_index("q[3]") == "q[3*q_s0]" and _c_index("V") == "V"


@needs_cc
def test_printed_c_equals_numba_on_every_construct():
    nb, _ = build_module("ctest", _kernels(), backend="numba")
    cc, _ = build_module("ctest", _kernels(), backend="c")
    assert (nb.BACKEND, cc.BACKEND) == ("numba", "c")
    rng = np.random.default_rng(3)
    for _ in range(200):
        q = rng.uniform(-2, 2, 3)
        a, b = np.zeros((2, 2)), np.zeros((2, 2))
        nb.mixed(q, 0.0, a)
        cc.mixed(q, 0.0, b)
        assert _close(b, a) and _close(np.array([cc.energy(q)]), np.array([nb.energy(q)]))
        big = np.zeros((3, 4))                  # strided (non-contiguous) arguments
        cc.mixed(np.repeat(q, 2)[::2], 0.0, big[::2, 1::2])
        assert np.array_equal(big[::2, 1::2], b) and big[1].sum() == 0 and big[:, ::2].sum() == 0


@needs_cc
def test_triangular_kinematics_c_equals_numba():
    model = kinedyn.models.get("four-bar-driven").compile()
    nb = TriangularKinematics(model)
    cc = TriangularKinematics(model, backend="c")
    assert cc.backend == "c"
    for solver in ("triangular", "blocks", "newton"):
        nb.position_solver = cc.position_solver = solver
        a, b = nb.simulate(1.0, 1e-3), cc.simulate(1.0, 1e-3)
        for name in a.names("coordinate.*"):
            assert _close(b.channel(name), a.channel(name)), (solver, name)
        assert b.channel("residual.position").max() <= 1e-12 or solver != "triangular"


@needs_cc
def test_embedded_and_stabilized_dynamics_c_equal_numba():
    model = kinedyn.models.get("slider-crank").compile()
    nb = EmbeddedDynamics(model, integrator="euler")
    cc = EmbeddedDynamics(model, integrator="euler", backend="c")
    pairs = [(nb, cc), (StabilizedDynamics(nb, "baumgarte", alpha=5, beta=5),
                        StabilizedDynamics(cc, "baumgarte", alpha=5, beta=5)),
             (StabilizedDynamics(nb, "penalty"), StabilizedDynamics(cc, "penalty"))]
    # the Numba kernels fuse multiply-adds (codegen's fastmath "contract"), gcc -O2 for the
    # generic x86-64 does not: each evaluation differs in the last bits, and 1000 Euler steps
    # of the penalty formulation (condition ~ rho) grow that to 9e-13 (1e-15 for the others)
    for a_dyn, c_dyn in pairs:
        a, b = a_dyn.simulate(1.0, 1e-3), c_dyn.simulate(1.0, 1e-3)
        for name in [*a.names("coordinate.*"), "energy"]:
            assert _close(b.channel(name), a.channel(name), tol=1e-11), (a_dyn, name)


def test_no_compiler_warns_and_falls_back_to_numba(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/kinedyn-cc")
    assert c_compiler() is None
    with pytest.warns(RuntimeWarning, match="no C compiler.*nonexistent.*Numba"):
        mod, _ = build_module("ctest_fallback", _kernels()[:1], backend="c")
    assert mod.BACKEND == "numba"
    J = np.zeros((2, 2))
    mod.mixed(np.array([0.5, 0.2, 1.0]), 0.0, J)
    assert np.all(np.isfinite(J))


@pytest.mark.skipif(shutil.which("false") is None, reason="no `false` program")
def test_compiler_failure_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("CC", shutil.which("false"))
    with pytest.raises(KinedynError, match="C backend: .*-O2 -shared -fPIC.* failed"):
        build_module("ctest_broken", _kernels()[:1], backend="c")
    with pytest.raises(KinedynError, match="known: numba, c"):
        build_module("ctest_broken", _kernels()[:1], backend="fortran")
