"""Embedded dynamics of the thesis's six-bars (section 4.2.2-4.2.3): the free Stephenson-III's
beta1 reaches a limit position (a clear error, not garbage), the landing gear runs fully
triangular with its drag-strut angle independent and follows the natural-coordinate DAE."""
import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import SingularConfigurationError, SolverError
from kinedyn.models.sixbar import LANDING_GEAR_CUT, STEPHENSON3_CUT
from kinedyn.symbolic.embedded import EmbeddedDynamics


def test_stephenson3_beta1_limit_position_is_reported():
    """Released from rest at beta1 = 2.09 the linkage swings beta1 up to 4.003 rad at
    t = 0.375 s (natural-coordinate run) and back while the other links move on: Phi_d in
    the beta1 embedding becomes singular there (Phi_q keeps full rank). Up to there the
    embedded run (4-unknown Newton block) follows the natural-coordinate DAE."""
    model = kinedyn.models.get("stephenson3").compile()
    ref = Dynamics(model, method="projection", integrator="rk4", solver="dense").simulate(0.6, 1e-3)
    beta1 = ref.channel("body.triangle1.angle")
    assert 0.36 < beta1.argmax() * 1e-3 < 0.39 and 0.3 < beta1.argmax() * 1e-3
    emb = EmbeddedDynamics(model, joint_angles=True, cut=STEPHENSON3_CUT, integrator="rk4",
                           time_limit=10)
    res = emb.simulate(0.3, 1e-3)          # the swing before the limit position
    assert res.channel("residual.position").max() <= 1e-12
    for body in ("triangle1", "coupler", "triangle2", "rocker", "link2"):
        a, r = res.channel(f"body.{body}.angle"), ref.channel(f"body.{body}.angle")[:301]
        assert np.abs(a - r).max() <= 1e-6, body
    emb = EmbeddedDynamics(model, joint_angles=True, cut=STEPHENSON3_CUT, integrator="euler",
                           time_limit=10)
    with pytest.raises(SingularConfigurationError, match="limit position") as err:
        emb.simulate(1.0, 1e-3)
    assert 0.36 < err.value.time < 0.39
    assert any("ground2" in c or "theta_close" in c for c in err.value.constraints)


def test_landing_gear_embedded_dynamics():
    model = kinedyn.models.get("landing-gear").compile()
    ref = Dynamics(model, method="projection", integrator="rk4", solver="dense").simulate(0.5, 1e-3)
    emb = EmbeddedDynamics(model, joint_angles=True, cut=LANDING_GEAR_CUT, integrator="rk4",
                           time_limit=10, independent=["joint.D"])
    assert emb.plan.fully_triangular
    res = emb.simulate(0.5, 1e-3)
    assert res.channel("residual.position").max() <= 1e-12
    assert res.channel("iterations").max() == 0
    for body in ("main_strut", "drag_strut", "lower_link", "cylinder"):
        a, r = res.channel(f"body.{body}.angle"), ref.channel(f"body.{body}.angle")
        assert np.abs(a - r).max() <= 1e-8, body
    assert np.ptp(ref.channel("body.drag_strut.angle")) > 0.1          # it really moves
    # the main strut's angle starts at the over-centre lock: no embedding in it
    bad = EmbeddedDynamics(model, joint_angles=True, cut=LANDING_GEAR_CUT, integrator="rk4",
                           time_limit=10)
    with pytest.raises(SolverError):
        bad.simulate(0.5, 1e-3)
