"""Embedded dynamics of the thesis's aircraft landing gear (section 4.2.3): the main strut's
angle A starts at its over-centre lock, so no embedding in it runs (a clear error, not NaN);
re-partitioning starts in the drag-strut angle D, fully triangular, and follows the
natural-coordinate DAE."""
import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import SolverError
from kinedyn.models.sixbar import LANDING_GEAR_CUT
from kinedyn.symbolic.embedded import EmbeddedDynamics


def test_landing_gear_embedded_dynamics():
    model = kinedyn.models.get("landing-gear").compile()
    ref = Dynamics(model, method="projection", integrator="rk4", solver="dense").simulate(0.5, 1e-3)
    assert np.ptp(ref.channel("body.drag_strut.angle")) > 0.1          # it really moves
    emb = EmbeddedDynamics(model, joint_angles=True, cut=LANDING_GEAR_CUT, integrator="rk4",
                           time_limit=10, repartition=True)
    assert emb.independent_names == ("joint.A",)        # the first in traversal order
    here, *others = emb.influences(emb.q_initial)
    assert here[0] > 50 and min(others)[0] < 1 and min(others)[2] == ("joint.D",)
    # re-partitioning starts in the best-conditioned partition: D (|B_d| 0.92 against 66)
    res = emb.simulate(0.5, 1e-3)
    assert res.summary["partitions"] == [{"t": 0.0, "independent": ["joint.D"]}]
    assert emb._partition(("joint.D",), emb.q_initial).plan.fully_triangular
    assert res.channel("residual.position").max() <= 1e-12
    assert res.channel("iterations").max() == 0
    for body in ("main_strut", "drag_strut", "lower_link", "cylinder"):
        a, r = res.channel(f"body.{body}.angle"), ref.channel(f"body.{body}.angle")
        assert np.abs(a - r).max() <= 1e-8, body
    # embedded in A itself the velocities grow without bound: an error, not NaN channels
    with pytest.raises(SolverError):
        emb.simulate(0.5, 1e-3, repartition=False)
