"""Group Equations solver: same positions, velocities, accelerations as the global formulation."""
import numpy as np
import pytest

from kinedyn.errors import ConvergenceError, UnknownNameError
from kinedyn.kinematics import Kinematics
from kinedyn.models import get

MODELS = ["four-bar-driven", "3-rrr-driven", "gough-stewart-driven", "stewart-paper"]


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


@pytest.fixture(scope="module", params=MODELS)
def model(request):
    return get(request.param).compile()


@pytest.mark.parametrize("solver", ["dense", "sparse"])
def test_groups_match_global(model, solver):
    # converged to 1e-12 so that the two solutions differ by round-off, not by the tolerance
    ref = Kinematics(model, solver="sparse", tol=1e-12).simulate(0.5, 0.01)
    kin = Kinematics(model, solver=solver, strategy="groups", tol=1e-12)
    res = kin.simulate(0.5, 0.01)
    assert len(kin.engine.groups) > 1
    for field in ("q", "qd", "qdd"):
        assert rel(getattr(res, field), getattr(ref, field)) <= 1e-10, field
    # residuals of the whole system at position, velocity and acceleration level
    assert res.residuals.max() <= 1e-9


def test_groups_one_time_and_fixed_iterations():
    m = get("stewart-paper").compile()
    a = Kinematics(m, strategy="global").solve(0.3)
    b = Kinematics(m, strategy="groups").solve(0.3)
    for field in ("q", "qd", "qdd"):
        assert rel(getattr(b, field), getattr(a, field)) <= 1e-10
    # the paper's real-time setting: one Newton iteration per step, tracking the trajectory
    g = Kinematics(m, strategy="groups", fixed_iterations=True, max_iter=1).simulate(0.2, 0.01)
    r = Kinematics(m, strategy="global", fixed_iterations=True, max_iter=1).simulate(0.2, 0.01)
    assert np.all(g.iterations == 1)
    assert rel(g.q, r.q) < 1e-6  # both one Newton step from the same prediction
    assert np.abs(g.q - r.q).max() > 0  # ... but not the same step: groups use updated h


def test_group_failure_names_group_and_constraint():
    kin = Kinematics(get("stewart-paper").compile(), strategy="groups", max_iter=1)
    guess = kin.q_assembled.copy()
    guess[kin.engine.groups[3].unknowns[0]] += 0.05
    with pytest.raises(ConvergenceError, match=r"structural group G\d \(") as e:
        kin.solve(0.0, q_guess=guess)
    assert e.value.constraints and e.value.time == 0.0


def test_unknown_strategy():
    with pytest.raises(UnknownNameError, match="groups"):
        Kinematics(get("four-bar-driven").compile(), strategy="blocks")
