"""Embedded dynamics of the thesis's Stephenson-III (section 4.2.2): the free linkage's beta1
reaches a limit position (a clear error, not garbage) and, re-partitioned during the run,
the linkage passes it. The landing gear is in test_landing_gear_dynamics.py (a file of its own
so that the two run on different test workers)."""
import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import SingularConfigurationError
from kinedyn.models.sixbar import STEPHENSON3_CUT
from kinedyn.symbolic.embedded import EmbeddedDynamics


@pytest.fixture(scope="module")
def stephenson3():
    """The free Stephenson-III embedded in beta1 (4-unknown torn block), built once: the
    integrator and re-partitioning are chosen per run."""
    model = kinedyn.models.get("stephenson3").compile()
    return model, EmbeddedDynamics(model, joint_angles=True, cut=STEPHENSON3_CUT,
                                   integrator="rk4", time_limit=10)


def test_stephenson3_beta1_limit_position_is_reported(stephenson3):
    """Released from rest at beta1 = 2.09 the linkage swings beta1 up to 4.003 rad at
    t = 0.375 s (natural-coordinate run) and back while the other links move on: Phi_d in
    the beta1 embedding becomes singular there (Phi_q keeps full rank). Up to there the
    embedded run (4-unknown Newton block) follows the natural-coordinate DAE."""
    model, emb = stephenson3
    ref = Dynamics(model, method="projection", integrator="rk4", solver="dense").simulate(0.6, 1e-3)
    beta1 = ref.channel("body.triangle1.angle")
    assert 0.36 < beta1.argmax() * 1e-3 < 0.39 and 0.3 < beta1.argmax() * 1e-3
    res = emb.simulate(0.3, 1e-3)          # the swing before the limit position
    assert res.channel("residual.position").max() <= 1e-12
    for body in ("triangle1", "coupler", "triangle2", "rocker", "link2"):
        a, r = res.channel(f"body.{body}.angle"), ref.channel(f"body.{body}.angle")[:301]
        assert np.abs(a - r).max() <= 1e-6, body
    with pytest.raises(SingularConfigurationError, match="limit position") as err:
        emb.simulate(1.0, 1e-3, integrator="euler")
    assert 0.36 < err.value.time < 0.39
    assert any("ground2" in c or "theta_close" in c for c in err.value.constraints)
    assert "repartition=True" in str(err.value)


def _wrapped(a):
    return np.abs(np.angle(np.exp(1j * a)))


def test_stephenson3_repartitions_through_its_limit_positions(stephenson3):
    """With ``repartition=True`` the run switches its independent coordinate where |B_d|
    grows: beta1 -> beta3 before beta1's limit position (0.375 s), -> beta4 before beta3's
    (0.443 s), ... It follows the natural-coordinate DAE through both, and conserves energy
    (gravity only). At h = 1 ms the beta3 plan also passes the crossing of its two beta1
    cosine roots (0.574 s), where a root chosen by its value alone swapped assembly modes
    (an energy jump of 0.016 J in one step; RK4 itself changes it by up to 5e-4 J per step
    in the fast swing); at h = 0.25 ms a step lands so near it that the
    closed form loses accuracy (residual 4e-7), which counts as a failure of that partition:
    the run switches to the best other one there."""
    model, emb = stephenson3
    for dt, angle_tol, jump in ((2.5e-4, 1e-6, 1e-6), (1e-3, 1e-3, 2e-3)):
        ref = Dynamics(model, method="projection", integrator="rk4",
                       solver="dense").simulate(0.6, dt)
        res = emb.simulate(0.6, dt, repartition=True)
        parts = res.summary["partitions"]
        assert parts[0] == {"t": 0.0, "independent": ["joint.beta1"]}
        assert 0.3 < parts[1]["t"] < 0.375 and parts[1]["independent"] == ["joint.beta3"]
        assert any(0.375 < p["t"] < 0.443 and p["independent"] == ["joint.beta4"] for p in parts)
        assert res.channel("residual.position").max() <= 1e-10
        for body in ("triangle1", "coupler", "triangle2", "rocker", "link2"):
            a, r = res.channel(f"body.{body}.angle"), ref.channel(f"body.{body}.angle")
            assert _wrapped(a - r).max() <= angle_tol, (dt, body)
        energy = res.channel("energy")
        assert np.abs(np.diff(energy)).max() <= jump, dt      # no step jumps to the other mode
    assert parts[-1]["t"] < 0.574 and parts[-1]["independent"] == ["joint.beta3"]
