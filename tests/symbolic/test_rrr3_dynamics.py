"""3-RRR embedded dynamics in mixed coordinates (thesis 4.2.4, torques t1 = 0.5 sin t,
t2 = -0.25 cos t, t3 = 0.5 sin 2t): per-leg closed forms, exact constraints, and the natural
projection method's trajectory. Generation takes about a minute since the guards of the closed
forms are unevaluated functions (1589 s before)."""
import numpy as np

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.symbolic.embedded import EmbeddedDynamics


def test_rrr3_embedded_agrees_with_projection():
    model = kinedyn.models.get("3-rrr").compile()
    emb = EmbeddedDynamics(model, absolute=["platform"], integrator="rk4")
    assert emb.plan.fully_triangular and len(emb.plan.blocks) == 3
    res = emb.simulate(1.0, 1e-3)
    ref = Dynamics(model, method="projection", integrator="rk4", solver="dense").simulate(1.0, 1e-3)
    assert res.channel("residual.position").max() <= 1e-12
    assert res.channel("iterations").max() == 0
    for c in ("x", "y", "angle"):   # motion from the start (the initial angles differ by 8e-7:
        r = ref.channel(f"body.platform.{c}")       # the natural model's start is assembled)
        a = res.channel(f"body.platform.{c}")
        assert np.abs((a - a[0]) - (r - r[0])).max() <= 5e-7, c
    assert np.ptp(ref.channel("body.platform.x")) > 1e-3          # the torques move it
