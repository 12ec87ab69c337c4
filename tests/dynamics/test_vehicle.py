"""The vehicle of the sparse-relative paper: structure of Table 1, static equilibrium, the
lane change follows its path, and every linear solver gives the same manoeuvre."""
from __future__ import annotations

import numpy as np
import pytest

import kinedyn
from kinedyn import ModelError
from kinedyn.dynamics.vehicle import ISO3888, LaneChange, path_y
from kinedyn.formulations.relative import Relative
from kinedyn.models.vehicle import vehicle


@pytest.fixture(scope="module")
def f():
    return Relative(kinedyn.models.get("vehicle").compile())


def test_seventeen_coordinates_as_in_table_1(f):
    per_joint = {}
    for name in f.coordinate_names:
        joint = name.split(".")[0]
        per_joint[joint] = per_joint.get(joint, 0) + 1
    assert f.n_q == 17 and f.n_c == 1
    assert per_joint["SCJ0"] == 6 and per_joint["rack"] == 1
    for w in ("fr", "fl"):
        assert per_joint[f"{w}_strut"] + per_joint[f"{w}_camber"] == 3
    for w in ("rr", "rl"):
        assert per_joint[f"{w}_strut"] == 2
    # branch numbering: chassis, FR, FL, RR, RL knuckles, rack (Fig. 6(a) / eq. 7 blocks)
    assert f.coordinate_names[6].startswith("fr_") and f.coordinate_names[-1] == "rack.displacement"


def test_conservative_vehicle_conserves_energy():
    rel = Relative(vehicle(spring_c=0, bushing_c=0, tierod_c=0).compile())
    from kinedyn.dynamics.relative import RelativeDynamics
    rng = np.random.default_rng(0)
    qd0 = 0.3 * rng.standard_normal(rel.n_q)
    qd0[rel.coordinate_names.index("rack.displacement")] = 0.0
    res = RelativeDynamics(rel, solver="block", integrator="rk4", qd0=qd0).simulate(
        0.2, 1e-4, record_every=200)
    E = rel.energies(res.q, res.qd)
    total = E["kinetic"] + E["gravity"] + E["spring"]
    assert np.abs(total - total[0]).max() < 1e-7 * E["kinetic"].max()


def test_static_equilibrium_at_rest(f):
    res = LaneChange(f, speed=0.0, gain=0.0).run(t_end=1.0)
    z = res.q[:, f.coordinate_names.index("SCJ0.z")]
    assert np.abs(z).max() < 5e-3


def test_path_is_the_iso_layout():
    p = np.array([ISO3888[k] for k in ("entry", "change", "lane", "back", "offset")])
    assert path_y(p, 10.0) == 0.0
    assert path_y(p, 15.0 + 30.0 + 10.0) == pytest.approx(3.5)
    assert path_y(p, 15.0 + 15.0) == pytest.approx(1.75)
    assert path_y(p, 200.0) == 0.0


def test_lane_change_follows_path_and_solvers_agree(f):
    runs = {s: LaneChange(f, solver=s).run(t_end=4.0, record_every=50)
            for s in ("reduced", "dbbd", "block", "augmented")}
    ref = runs["reduced"]
    ch = ref.summary_channels()
    assert np.abs(ch["y"] - ch["path_y"]).max() < 0.6
    assert ch["y"].max() > 3.0                         # it did change lanes
    assert np.abs(ch["speed"] - 80 / 3.6).max() < 1.0
    for s, r in runs.items():
        assert np.allclose(r.q, ref.q, atol=1e-8), s


def test_bad_lane_change_settings_are_named(f):
    for kwargs, message in (({"speed": float("nan")}, "speed must be a finite number"),
                            ({"preview": 0.0}, "preview must be a finite number above 0"),
                            ({"tyre": {"zz": 1}}, "tyre: unknown setting"),
                            ({"tyre": {"mu": -1}}, "tyre mu must be a finite number above 0")):
        with pytest.raises(ModelError, match=message):
            LaneChange(f, **kwargs)
    lc = LaneChange(f, speed=0.0, gain=0.0)
    for args, message in (((0.012, 0.0), "need dt > 0"), ((-1.0, 1e-3), "need dt > 0"),
                          ((0.0005, 1.2e-3), "longer than the simulated interval"),
                          ((float("nan"), 1e-3), "t_end must be a finite number")):
        with pytest.raises(ModelError, match=message):
            lc.run(*args)
    with pytest.raises(ModelError, match="record_every must be a finite whole number"):
        lc.run(0.012, 1.2e-3, record_every=2.5)
