"""Generated coupling products (kinedyn.kinematics.coupling) against the loop they unroll and
against the dense product: out -= Phi_h x equal to the bit, for the structural groups of the
paper's Stewart platform and of a scissor platform, for code cut into many parts, and for a
pattern whose rows come back after other rows; plus when plans get code and when not."""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from kinedyn import _llvm
from kinedyn.kinematics import Kinematics, coupling
from kinedyn.kinematics import kernels as K
from kinedyn.models import get


@nb.njit(cache=True)
def couple(plan, values, x, out):
    K.couple(plan, values, x, out)


def products(plan, values, x, out0):
    """``out0 - Phi_h x`` by the plan's code and by the loop."""
    coded, looped = out0.copy(), out0.copy()
    couple(plan, values, x, coded)
    couple(plan._replace(couple_code=0), values, x, looped)
    return coded, looped


@pytest.fixture(scope="module")
def stewart_groups():
    return Kinematics(get("stewart-paper"), strategy="groups", solver="sparse")


@pytest.mark.parametrize("model", ["stewart-paper", "scissor-platform-6x4"])
def test_code_equals_the_loop_and_the_dense_product(model, stewart_groups):
    kin = (stewart_groups if model == "stewart-paper"
           else Kinematics(get(model), strategy="groups", solver="sparse"))
    rng = np.random.default_rng(3)
    jac = kin.jacobian(kin.q_assembled + 0.1 * rng.standard_normal(kin.f.n_q))
    values, J = jac.data.copy(), jac.toarray()  # values in the formulation's entry order
    plans = list(kin.engine.plans) + list(kin.engine.units.plans)
    coupled = [p for p in plans if len(p.coupling_pos)]
    assert coupled, "the legs read the terminal group's coordinates"
    for plan in plans:
        assert (plan.couple_code != 0) == (len(plan.coupling_pos) > 0)
    for plan in coupled:
        x = rng.standard_normal(kin.f.n_q)
        out0 = rng.standard_normal(len(plan.rows))
        coded, looped = products(plan, values, x, out0)
        np.testing.assert_array_equal(coded, looped)
        known = np.setdiff1d(np.arange(kin.f.n_q), plan.cols)
        dense = out0 - J[np.ix_(plan.rows, known)] @ x[known]
        np.testing.assert_allclose(coded, dense, rtol=1e-12, atol=1e-12)


def test_many_parts_and_returning_rows(monkeypatch, tmp_path, stewart_groups):
    """Rows that come back after others and code cut into parts of 7 entries: the same
    subtractions in the same order as the loop."""
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(coupling, "CHUNK", 7)
    rng = np.random.default_rng(5)
    n_rows, n_x, nnz, entries = 9, 20, 60, 50
    pos = rng.permutation(nnz)[:entries].astype(np.uint32)
    col = rng.integers(0, n_x, entries).astype(np.uint32)
    row = rng.integers(0, n_rows, entries).astype(np.uint32)
    assert np.any(np.diff(row.astype(int)) < 0)
    plan = stewart_groups.engine.plans[0]._replace(
        coupling_pos=pos, coupling_col=col, coupling_row=row,
        couple_code=coupling.compile_coupling(pos, col, row))
    assert plan.couple_code != 0
    assert coupling.module_ir(pos, col, row).count("define internal") == -(-entries // 7)
    values, x = rng.standard_normal(nnz), rng.standard_normal(n_x)
    out0 = rng.standard_normal(n_rows)
    coded, looped = products(plan, values, x, out0)
    np.testing.assert_array_equal(coded, looped)
    dense = out0.copy()
    np.subtract.at(dense, row, values[pos] * x[col])
    np.testing.assert_allclose(coded, dense, rtol=1e-13, atol=1e-13)
    assert list(tmp_path.glob("coupling/*.o")), "the object code is cached on disk"


def test_when_plans_get_code(monkeypatch):
    assert coupling.compile_coupling([], [], []) == 0
    assert coupling.compile_coupling([0], [1], [0]) != 0
    monkeypatch.setattr(coupling, "LIMIT", 2)
    assert coupling.compile_coupling([0, 1, 2], [1, 1, 1], [0, 0, 0]) == 0
    monkeypatch.undo()
    monkeypatch.setenv(coupling.SWITCH, "0")
    assert coupling.compile_coupling([0], [1], [0]) == 0


def test_llvm_refusal_falls_back_to_the_loop(monkeypatch):
    def refuse(*args):
        raise RuntimeError("bad IR")
    monkeypatch.setattr(_llvm, "compile_module", refuse)
    with pytest.warns(RuntimeWarning, match="using the loop"):
        assert coupling.compile_coupling([0], [1], [0]) == 0
