"""API arguments of the wrong kind, length or value are named: nothing is read past the end of
an array, evaluated as Python, or quietly rounded into another mechanism."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import kinedyn
from kinedyn import ModelError


def test_joint_coordinate_states_of_the_wrong_length_are_named():
    """The relative formulation's compiled kernels do not check bounds: a 1-entry q used to
    return a residual read from memory past its end (1.6e-310)."""
    from kinedyn.formulations.relative import Relative
    f = Relative(kinedyn.models.get("four-bar"))      # a System is compiled
    q = f.q0
    assert f.phi(q).shape == (2,) and f.mass(q).shape == (3, 3)
    for call in (lambda: f.phi([0.1]), lambda: f.phi_q(np.r_[q, 0.0]), lambda: f.phi_t(q[:2]),
                 lambda: f.mass([0.1] * 5), lambda: f.gamma(q, [0.0]),
                 lambda: f.forces(q, np.zeros(2)),
                 lambda: f.inverse_dynamics(q, np.zeros(3), np.zeros(4))):
        with pytest.raises(ModelError, match=r"needs 3 finite numbers \(A.angle, B.angle, "
                                             r"D.angle\), got shape"):
            call()
    with pytest.raises(ModelError, match=r"q needs 3 finite numbers .* non-finite"):
        f.phi([np.nan, 0.0, 0.0])
    with pytest.raises(ModelError, match=r"QD needs 2 rows of 3 coordinates like Q, got shape "
                                         r"\(2, 2\)"):
        f.energies(np.zeros((2, 3)), np.zeros((2, 2)))


def test_natural_reference_evaluations_name_a_state_of_the_wrong_length():
    """The natural formulation's readable NumPy references (and the point and body positions
    built on them) said only what NumPy's matrix product did not like."""
    from kinedyn.formulations.natural import Natural
    f = Natural(kinedyn.models.get("four-bar").compile())
    q = f.q0
    assert f.reference_phi(q).shape == (f.n_c,)
    for call, what in ((lambda: f.reference_phi(q[:3]), "the coordinates"),
                       (lambda: f.reference_phi_q(np.r_[q, 0.0]), "the coordinates"),
                       (lambda: f.reference_gamma(q, q[:2]), "the velocities"),
                       (lambda: f.reference_forces([0.1], q), "the coordinates")):
        with pytest.raises(ModelError, match=f"{what} needs {f.n_q} finite numbers "
                                             r"\(crank.B=coupler.A.x, .*got shape"):
            call()


def test_analyses_take_a_system_and_name_anything_else():
    from kinedyn.dynamics.hdca import HDCA
    from kinedyn.formulations.relative import Relative
    from kinedyn.symbolic import planar_coordinates
    from kinedyn.topology import Topology
    system = kinedyn.models.get("four-bar")
    assert Topology(system).model.name == "four-bar"
    assert Relative(system).n_q == 3 and planar_coordinates(system).n_q == 3
    assert HDCA(kinedyn.models.get("double-pendulum")).h.n_j == 2
    for make in (HDCA, Relative, Topology, planar_coordinates):
        with pytest.raises(TypeError, match="expected a kinedyn System or CompiledModel"):
            make("four-bar")


def test_symbolic_inputs_are_parsed_not_evaluated():
    """``driven`` parses its functions of time as model files do: a string of Python code is
    refused (``sympify`` would have run it), an unknown symbol is named."""
    from kinedyn.symbolic import planar_coordinates
    eqs = planar_coordinates(kinedyn.models.get("four-bar-driven"))
    assert eqs.driven({"crank.angle": "1 + 2*sin(t)"}).inputs[0] == 1 + 2 * sp.sin(
        sp.Symbol("t", real=True))
    with pytest.raises(ModelError, match=r"inputs\['crank.angle'\]: function "
                                         r"\"__import__\('os'\).system\" is not allowed"):
        eqs.driven({"crank.angle": "__import__('os').system('echo unsafe')"})
    with pytest.raises(ModelError, match="unknown name 'x'"):
        eqs.driven({"crank.angle": "x*t"})
    with pytest.raises(ModelError, match="symbols other than t: x"):
        eqs.driven({"crank.angle": sp.Symbol("x") * sp.Symbol("t", real=True)})
    for independent in ([99], [-1], [0, 0]):
        with pytest.raises(ModelError, match="independent coordinates are names or indices 0 "
                                             "to 2, each once"):
            eqs.with_independent(independent)


def test_symbolic_tolerances_and_time_limits_are_checked():
    """A NaN tolerance is met by any fraction (it rounded a 0.123 m crank to 0: another
    mechanism), a negative one by none (the search never ended)."""
    from kinedyn.symbolic import make_plan, planar_coordinates, rationalise
    from kinedyn.symbolic.groebner import groebner_basis
    model = kinedyn.models.get("four-bar-driven").compile({"crank_length": 0.1234567891234})
    with pytest.raises(ModelError, match="tol must be a finite number of at least 0, got nan"):
        planar_coordinates(model, tol=float("nan"))
    with pytest.raises(ModelError, match="tol must be a finite number of at least 0, got -1"):
        rationalise(3.14159265, tol=-1)
    assert abs(float(rationalise(0.1234567891234)) - 0.1234567891234) <= 1e-12
    eqs = planar_coordinates(model)
    with pytest.raises(ModelError, match="time_limit must be a finite number above 0, got nan"):
        make_plan(eqs, time_limit=float("nan"))
    x = sp.Symbol("x")
    with pytest.raises(ModelError, match="time_limit must be a finite number above 0"):
        groebner_basis([x], [x], time_limit=0)
    with pytest.raises(ModelError, match=r"generators must be SymPy symbols, got \['x'\]"):
        groebner_basis([x], ["x"])


def test_results_name_requests_they_cannot_serve(tmp_path):
    """One pattern may be a plain string (it was split into characters: "unknown channel
    'j'"); an empty plot, an unknown file format and a channel that is not a name are named."""
    from kinedyn.io.results import Results
    from kinedyn.viz.plots import plot_channels
    res = Results(np.arange(3.0), {"joint.A.angle": np.zeros(3), "joint.B.angle": np.ones(3)})
    assert res.select("joint.A.angle") == ["joint.A.angle"]
    assert res.select(["joint.*"]) == ["joint.A.angle", "joint.B.angle"]
    assert plot_channels(res, "joint.A.angle", tmp_path / "a.png").stat().st_size > 1000
    with pytest.raises(ModelError, match="no channels to plot"):
        plot_channels(res, [], tmp_path / "b.png")
    with pytest.raises(ModelError, match=r"unknown result format\(s\) 'xlsx'; formats: 'csv', "
                                         r"'npz'"):
        res.save(tmp_path, formats=("xlsx",))
    assert [p.name for p in res.save(tmp_path, formats="csv")] == ["results.csv", "summary.json"]
    with pytest.raises(TypeError, match="a channel name is a string, got None"):
        res.channel(None)
    clash = Results(np.arange(3.0), {"time": np.zeros(3)})  # was a TypeError from savez
    with pytest.raises(ModelError, match="a channel may not be named 'time'"):
        clash.save(tmp_path / "clash")
    assert not (tmp_path / "clash").exists()


def test_info_goes_on_where_the_sparsity_section_does_not_apply(tmp_path, capsys):
    """The relative coordinates take no pose driver: the section says so and the command
    ends normally, as --groups does on a model it cannot decompose."""
    from kinedyn.cli import main
    assert main(["info", "stewart-paper", "--sparsity", "--no-graph", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("sparsity of the relative-coordinate matrices: not available (drivers[0]: driver "
            "'terminal_pose': pose drivers are not supported" in out)



def test_hdca_and_joint_coordinate_settings_are_named():
    from kinedyn.dynamics.hdca import HDCA
    from kinedyn.dynamics.relative import RelativeDynamics
    from kinedyn.errors import UnknownNameError
    from kinedyn.formulations.relative import Relative
    pendulum = kinedyn.models.get("double-pendulum").compile()
    with pytest.raises(UnknownNameError, match="unknown precision 'float16'; known: float32"):
        HDCA(pendulum, precision="float16")
    with pytest.raises(ModelError, match="threads must be a finite whole number of at least 1, "
                                         "got 2.5"):
        HDCA(pendulum, parallel=True, threads=2.5)
    with pytest.raises(ModelError, match=r"q0 and p0 need 2 finite numbers \(joints shoulder, "
                                         r"elbow\)"):
        HDCA(pendulum, q0=[np.nan, 0.0])
    f = Relative(pendulum)
    with pytest.raises(ModelError, match=r"baumgarte needs two numbers \(alpha, beta\), got "
                                         r"\(1.0,\)"):
        RelativeDynamics(f, baumgarte=(1.0,))
    with pytest.raises(ModelError, match="baumgarte beta must be a finite number"):
        RelativeDynamics(f, baumgarte=(1.0, np.nan))
    with pytest.raises(ModelError, match="t0 must be a finite number, got nan"):
        RelativeDynamics(f, t0=np.nan)


def test_builder_names_gravity_and_user_force_points_of_the_wrong_kind():
    for gravity, shown in ((9.81, "9.81"), ("0,-9.81", "'0,-9.81'")):
        with pytest.raises(ModelError, match=f"gravity: expected a list of 2 numbers, got "
                                             f"{shown}"):
            kinedyn.System("x", dim=2, gravity=gravity).compile()
    with pytest.raises(ModelError, match="user force 'u': points are \\(body, point\\) pairs, "
                                         "got 'link'"):
        kinedyn.models.get("four-bar").add_user_force("u", "link", lambda *a: None)


def test_validate_names_the_model_a_parameter_does_not_fit(capsys):
    from kinedyn.cli import main
    assert main(["validate", "-p", "nosuch=1", "four-bar", "double-pendulum"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("invalid: four-bar: parameters: unknown parameter 'nosuch'")
    assert err[1].startswith("invalid: double-pendulum: parameters: unknown parameter 'nosuch'")


def test_symbolic_states_and_times_are_checked():
    """A NaN guess reached LAPACK (which printed 'DLASCL parameter' lines), a short state a
    bare unpacking or index error, a string time was taken."""
    from kinedyn.symbolic import make_plan, planar_coordinates
    eqs = planar_coordinates(kinedyn.models.get("four-bar-driven"))
    plan = make_plan(eqs)
    names = r"\(crank.angle, rocker.angle, coupler.angle\)"
    with pytest.raises(ModelError, match=f"q_guess needs 3 finite numbers {names}, got shape "
                                         r"\(3,\) with non-finite entries"):
        eqs.solve_newton([np.nan] * 3)
    for call in (lambda: eqs.residual([0.0]), lambda: eqs.jacobian([0.0] * 4),
                 lambda: plan.solve([0.0])):
        with pytest.raises(ModelError, match=f"q needs 3 finite numbers {names}"):
            call()
    with pytest.raises(ModelError, match="t must be a finite number, got 'a'"):
        plan.solve(eqs.q0, "a")
    np.testing.assert_allclose(eqs.residual(plan.solve(eqs.q0, 0.1), 0.1), 0.0, atol=1e-12)


def test_progress_is_a_bar_a_callable_or_nothing():
    """progress=True shows a progress bar (it was "'bool' object is not callable" at the first
    report); a callable gets (done, total) up to the whole run; anything else is a ModelError
    before the run."""
    import kinedyn
    from kinedyn.dynamics import Dynamics
    from kinedyn.kinematics import Kinematics
    kin = Kinematics(kinedyn.models.get("four-bar-driven").compile())
    seen = []
    res = kin.simulate(0.5, 1e-3, progress=lambda done, total: seen.append((done, total)))
    assert len(seen) >= 50 and seen[-1][1] == len(res.time) and seen[-1][0] <= len(res.time)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    bar = kin.simulate(0.5, 1e-3, progress=True)
    np.testing.assert_array_equal(bar.q, res.q)          # reporting does not change the run
    dyn = Dynamics(kinedyn.models.get("four-bar").compile())
    np.testing.assert_array_equal(dyn.simulate(0.5, 1e-3, progress=True).q,
                                  dyn.simulate(0.5, 1e-3, progress=False).q)
    for bad in (1, "yes"):
        with pytest.raises(ModelError, match=r"progress is True \(a progress bar\), "
                                             r"False/None or a callable"):
            kin.simulate(0.1, 1e-2, progress=bad)
        with pytest.raises(ModelError, match="progress is True"):
            dyn.simulate(0.1, 1e-2, progress=bad)
