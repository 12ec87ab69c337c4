"""Generated kernels: triangular position solver in compiled runs vs the natural-coordinate
Newton kinematics (positions, velocities, accelerations), Newton baselines on the same code,
operation counts."""
import numpy as np
import pytest

import kinedyn
from kinedyn.kinematics import Kinematics
from kinedyn.symbolic.analysis import TriangularKinematics


@pytest.fixture(scope="module")
def four_bar():
    model = kinedyn.models.get("four-bar-driven").compile()
    return model, TriangularKinematics(model, sine_first=["rocker.angle"], track=False)


def test_triangular_run_matches_natural_newton(four_bar):
    model, kin = four_bar
    res = kin.simulate(2.0, 1e-3)
    assert res.channel("residual.position").max() <= 1e-12
    nat = Kinematics(model, tol=1e-12).simulate(2.0, 1e-3)
    for body in ("coupler", "rocker"):
        for suffix, tol in (("", 1e-9), ("_d", 1e-7), ("_dd", 1e-5)):
            a = res.channel(f"body.{body}.angle{suffix}")
            b = nat.channel(f"body.{body}.angle{suffix}")
            if suffix == "":
                a, b = a - a[0], b - b[0]
            assert np.abs(a - b).max() <= tol * max(1.0, np.abs(b).max()), (body, suffix)


def test_newton_baselines_on_generated_code_agree(four_bar):
    model, kin = four_bar
    ref = kin.simulate(1.0, 1e-3)
    for solver in ("blocks", "newton"):
        other = TriangularKinematics(model, position_solver=solver, plan=kin.plan, tol=1e-12)
        res = other.simulate(1.0, 1e-3)
        assert res.channel("iterations").max() >= 1          # really iterating
        for name in ("coordinate.rocker.angle", "coordinate.coupler.angle"):
            assert np.abs(res.channel(name) - ref.channel(name)).max() <= 1e-10


def test_newton_start_previous_step(four_bar):
    """newton_start="previous" (the thesis's baselines) starts each step's Newton iteration
    from the previous positions: more iterations than from the extrapolated state, the same
    trajectory; an unknown start is named."""
    model, kin = four_bar
    runs = {}
    for start in ("extrapolated", "previous"):
        other = TriangularKinematics(model, position_solver="newton", plan=kin.plan, tol=1e-12,
                                     newton_start=start)
        runs[start] = other.simulate(1.0, 1e-3)
        assert runs[start].summary["newton_start"] == start
    it = {k: r.channel("iterations")[1:].mean() for k, r in runs.items()}
    assert it["previous"] >= it["extrapolated"] + 1.0, it
    a, b = (runs[k].channel("coordinate.rocker.angle") for k in runs)
    assert np.abs(a - b).max() <= 1e-10
    with pytest.raises(kinedyn.errors.UnknownNameError, match="Newton start 'guess'"):
        TriangularKinematics(model, plan=kin.plan, newton_start="guess")


def test_operation_counts_reported(four_bar):
    _, kin = four_bar
    ops = kin.operations["position_triangular"]
    assert ops["functions"] >= 2 and ops["mul"] > 0 and ops["temporaries"] > 0
    # fixed cost: the triangular run does no iterations
    assert kin.simulate(0.5, 1e-3).channel("iterations").max() == 0


def test_unreachable_input_is_reported():
    """A slider-crank with the rod shorter than the crank cannot turn fully: the square root's
    argument goes negative and the run reports it with the time."""
    s = kinedyn.models.slider_crank(crank=0.3, rod=0.25, crank_angle=0.0, speed=6.283185307179586)
    kin = TriangularKinematics(s.compile())
    with pytest.raises(kinedyn.errors.AssemblyError, match="residual"):
        kin.simulate(1.0, 1e-3)


def test_symbolic_benchmark_is_discovered():
    from kinedyn.cli.bench import available
    assert "symbolic" in available()


def test_spatial_four_bar_kinematics_exact_over_ten_revolutions():
    """Thesis Table 4.3 run (beta1 = 2 pi t, 10 s, 1 ms): the triangular solver keeps the
    residual of (4.12)-(4.14) at round-off without any tolerance; Newton per block and on all
    coordinates follow the same branch."""
    from kinedyn.symbolic.thesis import spatial_four_bar
    system = spatial_four_bar()
    kin = TriangularKinematics(system, order=["beta2", "beta3", "beta4"])
    assert kin.plan.fully_triangular and [len(b.unknowns) for b in kin.plan.blocks] == [1, 2]
    res = kin.simulate(10.0, 1e-3)
    assert res.channel("residual.position").max() <= 1e-13
    for solver in ("blocks", "newton"):
        kin.position_solver, kin.tol = solver, 1e-12
        other = kin.simulate(10.0, 1e-3)
        for c in ("beta2", "beta3", "beta4"):
            assert np.abs(other.channel(f"coordinate.{c}") - res.channel(f"coordinate.{c}")).max() <= 1e-9
