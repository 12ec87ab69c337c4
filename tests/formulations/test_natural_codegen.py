"""Generated constraint code of the natural formulation (kinedyn.formulations.natural.codegen)
against the loops it unrolls: Phi with Phi_q, Phi, Phi_t and gamma equal to the bit on every
library model and on test models with every joint, driver and equation kind (planar and
spatial), for all rows and for row subsets in any order; the size limit, the switch and the
disk cache; and kinematic and dynamic runs that are the same trajectories with and without the
code."""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from kinedyn import _llvm
from kinedyn.dynamics import Dynamics
from kinedyn.formulations import protocol
from kinedyn.formulations.natural import Natural, codegen
from kinedyn.formulations.natural.layout import ANGLE
from kinedyn.kinematics import Kinematics
from kinedyn.models import MODELS, get

from .catalog import all_kinds_planar, all_kinds_spatial

BUILDERS = {**{n: (lambda n=n: get(n)) for n in MODELS},
            "all-kinds-3d": all_kinds_spatial, "all-kinds-2d": all_kinds_planar}


@nb.njit(cache=True)
def evaluate(data, work, q, qd, t, rows, phi, values, phi_alone, values_alone, phi_t, gamma):
    """The protocol calls that run generated code (each one or its loops): Phi_q alone runs
    Phi with Phi_q's."""
    protocol.calc_phi_and_phi_q(data, work, q, t, rows, phi, values)
    protocol.calc_phi_q(data, work, q, t, rows, values_alone)
    protocol.calc_phi(data, work, q, t, rows, phi_alone)
    protocol.calc_phi_t(data, work, q, t, rows, phi_t)
    protocol.calc_gamma(data, work, q, qd, t, rows, gamma)


def outputs(f, selection, q, qd, t):
    """(phi, Jacobian entries of the rows, the same alone, phi_t, gamma) through
    ``selection``."""
    n, D = len(selection.rows), f.data
    phi, alone, pt, gam = (np.full(n, np.nan) for _ in range(4))
    values, values_alone = (np.full(len(D.jac_indices), np.nan) for _ in range(2))
    evaluate(D, f.make_work(), q, qd, t, selection, phi, values, alone, values_alone, pt, gam)
    entries = np.concatenate([np.arange(D.jac_indptr[r], D.jac_indptr[r + 1])
                              for r in selection.rows])
    return phi, values[entries], alone, values_alone[entries], pt, gam


def assert_same(f, selection, rng):
    assert selection.code.all(), "expected generated code for these rows"
    loops = selection._replace(code=codegen.NO_CODE)
    for trial in range(3):  # near the assembly and far from it, several times
        q = f.q0 + (0.05 if trial == 0 else 1.0) * rng.standard_normal(f.n_q)
        qd = rng.standard_normal(f.n_q)
        t = 0.37 + trial
        for a, b, what in zip(outputs(f, selection, q, qd, t), outputs(f, loops, q, qd, t),
                              ("phi", "phi_q", "phi alone", "phi_q alone", "phi_t", "gamma")):
            assert np.isfinite(a).all(), what
            np.testing.assert_array_equal(a, b, err_msg=what)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_generated_code_equals_the_loops_bit_for_bit(name):
    f = Natural(BUILDERS[name]().compile())
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    assert_same(f, f.row_selection(np.arange(f.n_c)), rng)
    if f.n_c > 2:  # a subset in another order (a structural group's rows are not sorted)
        rows = rng.permutation(f.n_c)[: max(2, f.n_c // 2)]
        assert_same(f, f.row_selection(rows), rng)


def test_the_models_cover_every_equation_kind_in_two_and_three_dimensions():
    kinds = {}
    for build in (all_kinds_planar, all_kinds_spatial):
        f = Natural(build().compile())
        kinds[f.dim] = set(np.unique(f.data.con_kind).tolist())
    assert kinds[2] == kinds[3] == {0, 1, ANGLE}


def test_large_row_sets_and_the_switch_keep_the_loops(monkeypatch):
    f = Natural(get("four-bar").compile())
    rows = np.arange(f.n_c)
    assert f.row_selection(rows).code.all()
    monkeypatch.setattr(codegen, "LIMIT", codegen.work(f.data, rows) - 1)
    assert not f.row_selection(rows).code.any()
    monkeypatch.undo()
    monkeypatch.setenv(codegen.SWITCH, "0")
    assert not f.row_selection(rows).code.any()


def test_rows_are_split_into_functions_of_bounded_size(monkeypatch):
    """Large sets are compiled as several functions (compile time), with the same results."""
    f = Natural(get("stewart-paper").compile())
    monkeypatch.setattr(codegen, "CHUNK", 40)
    text = codegen.module_ir(f.data, np.arange(f.n_c))
    assert text.count("define internal") >= 4 * 5
    assert_same(f, f.row_selection(np.arange(f.n_c)), np.random.default_rng(3))


def test_the_code_serves_every_geometry_of_a_model(monkeypatch):
    """The coefficients are read from data.coef, not written into the code: two four-bars of
    other lengths and ground pivot get the code of the first without its IR being built again,
    and each equals its loops to the bit."""
    built = []
    module_ir = codegen.module_ir
    monkeypatch.setattr(codegen, "module_ir", lambda d, r: built.append(1) or module_ir(d, r))
    monkeypatch.setattr(_llvm, "_STRUCTURES", {})
    system, rng = get("four-bar"), np.random.default_rng(5)
    forms = [Natural(system.compile(p)) for p in (
        {}, {"crank_length": 0.113, "ground_length": 0.43},
        {"coupler_length": 0.37, "rocker_length": 0.29})]
    selections = [f.row_selection(np.arange(f.n_c)) for f in forms]
    assert len(built) == 1
    for f, selection in zip(forms, selections):
        np.testing.assert_array_equal(selection.code, selections[0].code)
        assert_same(f, selection, rng)
    assert not np.array_equal(forms[1].data.coef, forms[0].data.coef)


def test_the_structure_key_sees_what_the_code_depends_on():
    """Another value of a coefficient keeps the key, unless it becomes 0, 1 or -1 (which the
    code leaves out); another structure (rows, pattern) changes it."""
    f = Natural(get("stewart-paper").compile())
    D, rows = f.data, np.arange(f.n_c)
    key = codegen.structure_key(D, rows)
    general = int(np.flatnonzero(~np.isin(D.ent_alpha, (0.0, 1.0, -1.0)))[0])
    for value, same in ((D.ent_alpha[general] * 1.1, True), (0.0, False), (1.0, False),
                        (-1.0, False)):
        alpha = D.ent_alpha.copy()
        alpha[general] = value
        assert (codegen.structure_key(D._replace(ent_alpha=alpha), rows) == key) == same, value
    assert codegen.structure_key(D, rows[::-1]) != key
    assert codegen.structure_key(D._replace(jc_pos=D.jc_pos[::-1].copy()), rows) != key


def test_the_code_reads_only_what_its_key_covers():
    """module_ir reads nothing of the data but the structure and the coefficients the key
    covers: built from those alone, it is the same IR."""
    for f in (Natural(all_kinds_planar().compile()), Natural(all_kinds_spatial().compile())):
        fields = ("dim", *codegen.STRUCTURE, *codegen.COEFFICIENTS)
        only = type("Only", (), {k: getattr(f.data, k) for k in fields})()
        rows = np.arange(f.n_c)
        assert codegen.module_ir(only, rows) == codegen.module_ir(f.data, rows)


def test_object_code_is_cached_on_disk(monkeypatch, tmp_path):
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(_llvm, "_ENGINES", {})
    f = Natural(get("slider-crank").compile())
    rows = np.arange(f.n_c)
    first = f.row_selection(rows)
    files = list((tmp_path / "natural").glob("*.o"))
    assert len(files) == 1 and files[0].stat().st_size > 0
    monkeypatch.setattr(_llvm, "_ENGINES", {})  # a new process: loaded, not compiled
    again = f.row_selection(rows)
    assert list((tmp_path / "natural").glob("*.o")) == files
    rng = np.random.default_rng(4)
    q, qd = f.q0 + 0.1 * rng.standard_normal(f.n_q), rng.standard_normal(f.n_q)
    for a, b in zip(outputs(f, first, q, qd, 0.2), outputs(f, again, q, qd, 0.2)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("strategy", ["global", "groups"])
def test_a_kinematic_run_is_the_same_with_and_without_the_code(monkeypatch, strategy):
    """The paper's Stewart platform, paper step and converged: the same trajectory to the bit
    (the generated code rounds as the loops do)."""
    model = get("stewart-paper").compile()
    runs = []
    for switch in ("1", "0"):
        monkeypatch.setenv(codegen.SWITCH, switch)
        for fixed in (True, False):
            kin = Kinematics(model, solver="sparse", strategy=strategy, fixed_iterations=fixed,
                             max_iter=1 if fixed else 20)
            plan = kin.plan if strategy == "global" else kin.engine.plans[1]
            assert bool(plan.select.code.all()) == (switch == "1")
            runs.append(kin.simulate(0.3, 0.01))
    for a, b in zip(runs[:2], runs[2:]):
        for x, y in ((a.q, b.q), (a.qd, b.qd), (a.qdd, b.qdd)):
            np.testing.assert_array_equal(x, y)


# every system type (Schur dense and sparse, KKT, penalty, HHT) in kernels the suite compiles
@pytest.mark.parametrize("model, method, options", [
    ("four-bar", "projection", {}),
    ("slider-crank", "projection", {"solver": "sparse"}),
    ("four-bar", "index3", {}),
    ("gough-stewart", "augmented", {}),
    ("gough-stewart", "penalty", {}),
])
def test_a_dynamic_run_is_the_same_with_and_without_the_code(monkeypatch, model, method, options):
    """The dynamics methods evaluate the constraints through the generated code of their rows:
    the same trajectory to the bit as with the loops."""
    compiled = get(model).compile()
    runs = []
    for switch in ("1", "0"):
        monkeypatch.setenv(codegen.SWITCH, switch)
        dyn = Dynamics(compiled, method=method, **options)
        assert bool(dyn.select.code.all()) == (switch == "1")
        runs.append(dyn.simulate(t_end=0.2, dt=1e-3, record_every=20))
    for x, y in ((runs[0].q, runs[1].q), (runs[0].qd, runs[1].qd)):
        assert np.isfinite(x).all()
        np.testing.assert_array_equal(x, y)
