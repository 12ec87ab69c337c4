"""The scalable scissor-platform family: structure (one irreducible group per leg), kinematics."""
import numpy as np
import pytest

from kinedyn.errors import ModelError, UnknownNameError
from kinedyn.kinematics import Kinematics
from kinedyn.models import get
from kinedyn.models.scissor import PAPER_STAGES, leg_group_size


@pytest.mark.parametrize("legs,stages", [(6, 0), (3, 2), (6, 4)])
def test_one_irreducible_group_per_leg(legs, stages):
    kin = Kinematics(get(f"scissor-platform-{legs}x{stages}").compile(), strategy="groups")
    gs = kin.engine.structure
    assert gs.sizes() == [12] + [leg_group_size(stages)] * legs
    assert gs.levels == ((0,), tuple(range(1, legs + 1)))
    assert kin.f.n_q == 12 + legs * leg_group_size(stages) and len(kin.redundant) == 0
    # the tongs cannot be solved stage by stage: far fewer groups than finest blocks would
    # allow if they were separable; each leg group holds every body of its leg
    for i, g in enumerate(gs.groups[1:], start=1):
        assert {f"handle{i}", f"stick{i}"} <= set(g.bodies)
        assert len(g.bodies) == 2 + 2 * stages


def test_scissor_kinematics_residuals_and_groups_match_global():
    m = get("scissor-platform-6x2").compile()
    ref = Kinematics(m, tol=1e-12).simulate(0.1, 0.001)
    res = Kinematics(m, strategy="groups", tol=1e-12).simulate(0.1, 0.001)
    assert ref.residuals.max() <= 1e-9 and res.residuals.max() <= 1e-9
    for field in ("q", "qd", "qdd"):
        a, b = getattr(res, field), getattr(ref, field)
        assert np.abs(a - b).max() / max(1.0, np.abs(b).max()) <= 1e-10
    # velocities are the time derivative of positions (central differences)
    fd = (ref.q[2:] - ref.q[:-2]) / 0.002
    assert np.abs(fd - ref.qd[1:-1]).max() < 1e-3 * max(1.0, np.abs(ref.qd).max())


def test_paper_sizes_are_close():
    for target, stages in PAPER_STAGES.items():
        assert abs(leg_group_size(stages) - target) <= 6


def test_bad_names():
    with pytest.raises(ModelError, match="legs >= 3"):
        get("scissor-platform-2x1")
    with pytest.raises(UnknownNameError, match="scissor-platform-<legs>x<stages>"):
        get("scissor-platform-6")


def test_family_members_beyond_the_size_limit_are_refused_before_building():
    """A mistyped size would have exhausted the memory before saying anything."""
    with pytest.raises(ModelError, match=r"scissor-platform-100000000x100000000 would have "
                                         r"20,000,000,200,000,001 bodies; the model families are "
                                         r"built up to 100,000"):
        get("scissor-platform-100000000x100000000")
    with pytest.raises(ModelError, match="cart-pendulum-100000000000 would have"):
        get("cart-pendulum-100000000000")
    assert len(get("cart-pendulum-3").bodies) == 4
