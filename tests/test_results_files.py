"""Saved results read back (kinedyn.load_results) and drawn again (kinedyn plot): exact round
trips through NPZ and CSV, clear errors for broken files."""
from __future__ import annotations

import json

import numpy as np
import pytest

import kinedyn
from kinedyn.cli import main
from kinedyn.errors import ModelError
from kinedyn.kinematics import Kinematics
from kinedyn.viz.motion import Sketch


@pytest.fixture(scope="module")
def run():
    model = kinedyn.models.get("four-bar-driven").compile()
    return Kinematics(model).simulate(t_end=0.3, dt=0.01)


@pytest.mark.parametrize("fmt", ["npz", "csv"])
def test_round_trip_is_exact(run, tmp_path, fmt):
    run.save(tmp_path, formats=fmt)
    back = kinedyn.load_results(tmp_path)          # the folder: the one file it holds
    np.testing.assert_array_equal(back.time, run.time)
    assert list(back.channels) == list(run.channels)
    for name, values in run.channels.items():
        np.testing.assert_array_equal(back.channel(name), values)
    assert back.summary == json.loads((tmp_path / "summary.json").read_text())
    assert back.summary["model"] == "four-bar-driven"
    # read back, the mechanism is the same: its sketch has the same positions
    np.testing.assert_array_equal(Sketch(back).P, Sketch(run).P)


def test_folder_prefers_npz_and_files_are_read_by_name(run, tmp_path):
    run.save(tmp_path)
    csv_path = tmp_path / "results.csv"
    lines = csv_path.read_text().splitlines()
    csv_path.write_text("\n".join(lines[:3]) + "\n")    # a shorter CSV beside the NPZ
    assert len(kinedyn.load_results(tmp_path).time) == len(run.time)
    assert len(kinedyn.load_results(csv_path).time) == 2


def _broken(tmp_path, text):
    path = tmp_path / "results.csv"
    path.write_text(text)
    return path


def test_broken_files_are_named(run, tmp_path):
    with pytest.raises(ModelError, match="no such results file or folder"):
        kinedyn.load_results(tmp_path / "nothing")
    with pytest.raises(ModelError, match="no results.npz or results.csv in this folder"):
        kinedyn.load_results(tmp_path)
    with pytest.raises(ModelError, match="first row must be the header, starting with 'time'"):
        kinedyn.load_results(_broken(tmp_path, "t,a\n0,1\n"))
    with pytest.raises(ModelError, match="line 3 has 1 values, the header 2"):
        kinedyn.load_results(_broken(tmp_path, "time,a\n0,1\n0.1\n"))
    with pytest.raises(ModelError, match=r"results.csv: line 2, column 'a': 'x' is not a number"):
        kinedyn.load_results(_broken(tmp_path, "time,a\n0,x\n"))
    with pytest.raises(ModelError, match="no samples"):
        kinedyn.load_results(_broken(tmp_path, "time,a\n"))
    npz = tmp_path / "other.npz"
    np.savez(npz, a=np.zeros(3))
    with pytest.raises(ModelError, match="other.npz: no 'time' array"):
        kinedyn.load_results(npz)
    np.savez(npz, time=np.zeros(3), a=np.zeros(2))
    with pytest.raises(ModelError, match="channel 'a' has 2 values, time has 3"):
        kinedyn.load_results(npz)
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ModelError, match="read from .npz or .csv files, not .txt"):
        kinedyn.load_results(tmp_path / "notes.txt")
    run.save(tmp_path / "r", formats="npz")
    (tmp_path / "r" / "summary.json").write_text("{broken")
    with pytest.raises(ModelError, match=r"summary.json: not valid JSON"):
        kinedyn.load_results(tmp_path / "r")


def test_plot_command_draws_saved_results(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["kinematics", "four-bar-driven", "--t-end", "0.4", "--dt", "0.01", "--out",
                 str(out), "--no-progress"]) == 0
    (out / "motion.png").unlink()
    capsys.readouterr()
    assert main(["plot", str(out), "--plot", "joint.*.angle", "--animate", "--max-frames",
                 "12", "--frames", "3"]) == 0
    assert {"motion.png", "motion.gif", "channels.png"} <= {p.name for p in out.iterdir()}
    from PIL import Image
    with Image.open(out / "motion.gif") as im:
        assert im.n_frames == 12
    text = capsys.readouterr().out
    assert "four-bar-driven: 41 samples" in text and "t = 0 .. 0.4 s" in text
    assert "drawn with model 'four-bar-driven'" in text  # the summary's built-in model
    # elsewhere, from the CSV
    assert main(["plot", str(out / "results.csv"), "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "motion.png").is_file()
    # bad input: one line naming the problem, exit code 2
    assert main(["plot", str(out), "--plot", "joint.Q.angle"]) == 2
    assert "--plot: unknown channel 'joint.Q.angle'" in capsys.readouterr().err
    assert main(["plot", str(tmp_path / "none")]) == 2
    assert "no such results file or folder" in capsys.readouterr().err
    assert main(["plot", str(out), "--model", "no-such-model"]) == 2
    assert "no-such-model" in capsys.readouterr().err
    assert main(["plot", str(out), "--frames", "0"]) == 2
    assert "frames must be a finite whole number of at least 1, got 0" in capsys.readouterr().err


@pytest.mark.parametrize("analysis", ["kinematics", "dynamics"])
def test_named_channels_equal_the_full_set_and_skip_the_accelerations(analysis):
    from kinedyn.dynamics import Dynamics
    name = "four-bar-driven" if analysis == "kinematics" else "four-bar"
    model = kinedyn.models.get(name).compile()
    make = (lambda: Kinematics(model)) if analysis == "kinematics" else (lambda: Dynamics(model))
    wanted = ["body.rocker.angle_d", "point.coupler.B.x", "residual.position"]
    if analysis == "dynamics":
        wanted.append("energy.total")
    lazy = make().simulate(0.3, 0.01)
    part = lazy.named(wanted + ["no.such.channel"])
    assert list(part) == wanted                      # what exists, in the order asked
    if analysis == "dynamics":   # the accelerations are evaluated again only when asked for
        assert "qdd" not in vars(lazy)
        np.testing.assert_array_equal(lazy.named(["joint.C.angle_dd"])["joint.C.angle_dd"],
                                      make().simulate(0.3, 0.01).channel("joint.C.angle_dd"))
    full = make().simulate(0.3, 0.01)
    for n in wanted:
        np.testing.assert_array_equal(part[n], full.channel(n))
    assert full.named(["body.rocker.angle_d"])["body.rocker.angle_d"] is full.channels[
        "body.rocker.angle_d"]                        # computed already: the same arrays
