"""Pictures of the mechanism in motion (kinedyn.viz.motion): each body's outline from its
points, drawn at the positions the results record; rigid outlines along real runs; the files
written; clear errors."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import ModelError
from kinedyn.formulations.natural import Natural
from kinedyn.io.results import Results
from kinedyn.kinematics import Kinematics
from kinedyn.viz import motion
from kinedyn.viz.motion import Sketch, animate_motion, draw_motion, outline


def _cycle(segments) -> set:
    """The vertices of a closed polygon given as segments, checked to be one cycle."""
    degree = {}
    for a, b in segments:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    assert all(d == 2 for d in degree.values()), segments
    return set(degree)


def test_outline_of_a_bar_a_plate_and_a_block():
    # collinear: the extreme points (the middle one is a joint on the bar)
    assert sorted(outline(np.array([[0.0, 0], [2, 0], [1, 0]]))[0]) == [0, 1]
    # fewer than two distinct points: nothing to draw
    assert outline(np.zeros((1, 2))) == [] and outline(np.zeros((3, 3))) == []
    # a plate with a point inside: the square's corners, once round
    square = np.array([[0.0, 0], [1, 0], [1, 1], [0, 1], [0.4, 0.5]])
    seg = outline(square)
    assert len(seg) == 4 and _cycle(seg) == {0, 1, 2, 3}
    # a tilted hexagon in space (a Stewart platform's plate): its six sides
    a = np.linspace(0, 2 * np.pi, 7)[:-1]
    flat = np.column_stack([np.cos(a), np.sin(a), np.zeros(6)])
    c, s = np.cos(0.7), np.sin(0.7)
    tilt = flat @ np.array([[1, 0, 0], [0, c, s], [0, -s, c]]) + [0.3, -1, 2]
    seg = outline(tilt)
    assert len(seg) == 6 and _cycle(seg) == set(range(6))
    for i, j in seg:  # sides, not diagonals
        assert np.linalg.norm(tilt[i] - tilt[j]) == pytest.approx(1.0)
    # a block: the cube's 12 edges, without the diagonals of its triangulated faces
    cube = np.array([[x, y, z] for x in (0, 1) for y in (0, 2) for z in (0, 3)], float)
    seg = outline(cube)
    assert len(seg) == 12
    assert sorted(np.linalg.norm(cube[i] - cube[j]) for i, j in seg) == [1] * 4 + [2] * 4 + [3] * 4


def _segment_lengths(sketch, P):
    seg = np.concatenate([s for s in sketch.segments[1:] if len(s)])
    return np.linalg.norm(P[:, seg[:, 0]] - P[:, seg[:, 1]], axis=-1), seg


@pytest.mark.parametrize("name", ["four-bar-driven", "stewart-paper"])
def test_positions_are_the_model_points_and_outlines_stay_rigid(name):
    """The sketch, read from the channels alone, has the model's points, bodies and world
    positions; each body's outline keeps its lengths along the run."""
    model = kinedyn.models.get(name).compile()
    kin = Kinematics(model)
    res = kin.simulate(t_end=0.5, dt=0.01)
    sketch = Sketch(res)
    assert sketch.dim == model.dim and sorted(sketch.point_names) == sorted(model.point_name)
    assert sorted(sketch.body_names) == sorted(model.body_name)
    assert sketch.body_names[0] == "ground" and len(sketch.ground_points) == sum(
        b == 0 for b in model.point_body)
    P = sketch.P
    order = [model.point_name.index(n) for n in sketch.point_names]
    f = Natural(model)
    for k in (0, 17, len(res.time) - 1):
        np.testing.assert_allclose(P[k], f.point_positions(res.q[k])[order], atol=1e-12)
    lengths, seg = _segment_lengths(sketch, P)
    assert len(seg) >= model.n_body - 1             # every moving body is drawn
    assert np.ptp(P[:, sketch.moving_points], axis=0).max() > 0.01  # and the mechanism moves
    np.testing.assert_allclose(lengths, lengths[:1].repeat(len(lengths), 0), atol=1e-9)
    # the ground's points do not move
    assert np.ptp(P[:, sketch.ground_points], axis=0).max() == 0.0


def test_dynamics_results_are_drawn_too(tmp_path):
    """A free double pendulum (dynamics, projection method): its bars keep their lengths in
    the drawing as the run keeps its constraints."""
    model = kinedyn.models.get("double-pendulum").compile()
    res = Dynamics(model, method="projection").simulate(0.5, 1e-3, record_every=10)
    sketch = Sketch(res)
    lengths, _ = _segment_lengths(sketch, sketch.P)
    np.testing.assert_allclose(lengths, lengths[:1].repeat(len(lengths), 0), atol=1e-8)
    assert draw_motion(res, tmp_path / "m.png").stat().st_size > 10_000


def test_a_pose_is_drawn_where_the_points_are():
    """What the animation draws in a frame is each body's outline at that frame's points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    model = kinedyn.models.get("four-bar-driven").compile()
    res = Kinematics(model).simulate(t_end=0.2, dt=0.01)
    sketch = Sketch(res)
    P = sketch.P
    fig, ax = plt.subplots()
    pose = motion._Pose(sketch, ax)
    pose.update(P[7])
    for b, collection in pose.bodies:
        drawn = np.array(collection.get_segments())
        np.testing.assert_array_equal(drawn, P[7][sketch.segments[b]])
    np.testing.assert_array_equal(np.column_stack(pose.fixed.get_data()),
                                  P[7][sketch.ground_points])
    plt.close(fig)


def test_files(tmp_path):
    import matplotlib.pyplot as plt
    model = kinedyn.models.get("stewart-paper").compile()
    res = Kinematics(model).simulate(t_end=0.3, dt=0.01)          # 31 samples
    png = draw_motion(res, tmp_path / "motion.png", frames=4)
    with Image.open(png) as im:
        rgb = np.asarray(im.convert("RGB")).reshape(-1, 3)
        assert im.size[0] > 500 and len(np.unique(rgb, axis=0)) > 50
    gif = animate_motion(res, tmp_path / "motion.gif", max_frames=10, fps=5)
    with Image.open(gif) as im:
        assert im.n_frames == 10 and im.info["duration"] == 200
        im.seek(0)
        first = np.asarray(im.convert("RGB")).copy()
        im.seek(9)
        last = np.asarray(im.convert("RGB"))
    assert (first != last).any()                                  # the platform moved
    # default: every sample (31 < 150 frames), in real time (31 frames over 0.3 s: capped)
    with Image.open(animate_motion(res, tmp_path / "all.gif")) as im:
        assert im.n_frames == 31 and im.info["duration"] == 40
    assert plt.get_fignums() == []                                # no figure left open


def test_bad_input(tmp_path):
    model = kinedyn.models.get("four-bar-driven").compile()
    res = Kinematics(model).simulate(t_end=0.1, dt=0.01)
    bare = Results(res.time, {"body.crank.angle": res.channel("body.crank.angle")},
                   {"model": "four-bar-driven"})
    with pytest.raises(ModelError, match=r"record no point positions .*1 channels, e\.g\. "
                                         r"body\.crank\.angle"):
        draw_motion(bare, tmp_path / "m.png")
    with pytest.raises(ModelError, match="frames must be a finite whole number of at least 1, got 0"):
        draw_motion(res, tmp_path / "m.png", frames=0)
    with pytest.raises(ModelError, match="GIF: give a path ending in .gif"):
        animate_motion(res, tmp_path / "m.mp4")
    with pytest.raises(ModelError, match=r"fps must be a finite whole number .*\(a float: give an int\)"):
        animate_motion(res, tmp_path / "m.gif", fps=2.5)


def _lone_point_pendulum():
    s = kinedyn.System("lone", dim=2, gravity=[0, -9.81])
    s.add_point("ground", "O", [0, 0])
    s.add_body("rod", mass=1.0, inertia=0.1, com=[0.5, 0.1], orientation=-1.0,
               points={"A": [0, 0]})
    s.add_joint("pin", "revolute", "ground", "rod", point_a="O", point_b="A")
    return s.compile()


@pytest.mark.parametrize("case", ["planar", "spatial"])
def test_a_body_with_one_point_is_drawn_to_its_centre_of_mass(case):
    """Gough-Stewart legs (cylinder and piston, each with one joint point at its frame's
    origin) and a planar pendulum with only its pivot: with the model, each is drawn from its
    point to its centre of mass, which the sketch places from the recorded origin and angles
    exactly where the formulation has it; without the model it is a dot."""
    if case == "planar":
        model = _lone_point_pendulum()
        res = Dynamics(model, method="projection").simulate(0.5, 1e-3, record_every=50)
        body = "rod"
    else:
        model = kinedyn.models.get("gough-stewart-driven").compile()
        res = Kinematics(model).simulate(t_end=0.5, dt=0.01)
        body = "lower3"
    sketch = Sketch(res, model)
    i = sketch.point_names.index(f"{body}.(centre of mass)")
    b = model.body_name.index(body)
    f = Natural(model)
    for k in (0, len(res.time) // 2, len(res.time) - 1):
        np.testing.assert_allclose(sketch.P[k, i], f.com_positions(res.q[k])[b], atol=1e-12)
    assert len(sketch.segments[sketch.body_names.index(body)]) == 1
    assert len(Sketch(res).segments[sketch.body_names.index(body)]) == 0
