"""``kinedyn kinematics``: files written, summary contents, clear errors for bad options."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from kinedyn.cli import main
from kinedyn.linalg.sparse import FALLBACK_SWITCH


def test_run_writes_results_summary_and_plots(tmp_path, capsys):
    out = tmp_path / "fb"
    rc = main(["kinematics", "four-bar-driven", "--t-end", "0.5", "--dt", "0.01", "--solver",
               "dense", "--out", str(out), "--plot", "joint.*.angle", "--plot",
               "point.coupler.B.y", "--no-progress", "--animate"])
    assert rc == 0
    assert {p.name for p in out.iterdir()} == {"results.csv", "results.npz", "summary.json",
                                               "channels.png", "residuals.png", "motion.png",
                                               "motion.gif"}
    from PIL import Image
    with Image.open(out / "motion.gif") as im:  # every one of the 51 samples, in real time
        assert im.n_frames == 51 and im.info["duration"] == 40
    s = json.loads((out / "summary.json").read_text())
    assert s["model"] == "four-bar-driven" and s["solver"] == "dense" and s["steps"] == 51
    assert s["dt"] == pytest.approx(0.01) and s["t_end"] == pytest.approx(0.5)
    assert s["us_per_step"] > 0 and s["wall_time_s"] > 0 and s["cpu_us_per_step"] > 0
    assert max(s["max_residual"].values()) < 1e-9
    data = np.load(out / "results.npz")
    # the crank follows its driver: crank_angle + crank_speed * t
    np.testing.assert_allclose(data["joint.A.angle"], math.pi / 2 + 2 * math.pi * data["time"],
                               atol=1e-12)
    with (out / "results.csv").open() as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    assert header[0] == "time" and len(rows) == 52
    col = header.index("joint.D.angle")
    np.testing.assert_array_equal([float(r[col]) for r in rows[1:]], data["joint.D.angle"])
    assert "us/step" in capsys.readouterr().out


def test_sparse_reanalyses_are_reported(tmp_path, capsys, monkeypatch):
    """The crank's turns make the sparse pivot order degrade; without the dense fall-back of
    small blocks the run re-analyses and says how often and how many of those re-analyses
    took an earlier order, in its output and its summary."""
    monkeypatch.setenv(FALLBACK_SWITCH, "0")
    out = tmp_path / "fb"
    assert main(["kinematics", "four-bar-driven", "--t-end", "3", "--dt", "0.01", "--out",
                 str(out), "--no-progress"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["solver"] == "sparse" and s["sparse_reanalyses"] >= 8
    assert 0 < s["sparse_orders_reused"] <= s["sparse_reanalyses"]
    assert (f"re-analysed {s['sparse_reanalyses']} times, {s['sparse_orders_reused']} of them "
            "with an order analysed before") in capsys.readouterr().out


def test_parameter_override_changes_the_motion(tmp_path):
    out = tmp_path / "sc"
    assert main(["kinematics", "slider-crank-driven", "--t-end", "0.2", "--dt", "0.01", "-p",
                 "crank_speed=1.0", "--out", str(out), "--no-progress"]) == 0
    data = np.load(out / "results.npz")
    np.testing.assert_allclose(data["joint.crank_pin.angle_d"], 1.0, atol=1e-12)
    assert json.loads((out / "summary.json").read_text())["parameters"] == {"crank_speed": 1.0}


def test_reactions_give_the_crank_torque_that_balances_the_power(tmp_path, capsys):
    """--reactions: inverse dynamics of the driven four-bar. The crank's torque times its speed
    is the rate of the mechanism's energy (kinetic + gravity); --actuators A gives the same
    torque as the actuated joint's effort."""
    out = tmp_path / "fb"
    assert main(["kinematics", "four-bar-driven", "--t-end", "1", "--dt", "0.002", "--out",
                 str(out), "--reactions", "--no-progress"]) == 0
    assert {"efforts.png", "residuals.png", "motion.png"} <= {p.name for p in out.iterdir()}
    data = np.load(out / "results.npz")
    s = json.loads((out / "summary.json").read_text())
    torque = data["effort.crank_drive"]
    assert s["max_effort"]["crank_drive"] == pytest.approx(np.abs(torque).max(), rel=1e-12)
    assert s["max_newton_euler_residual"] < 1e-9 and "reaction.D.force_y" in data
    # energy of the three uniform links (mass 1, inertia l^2/12, centre of mass halfway
    # between their end points A and B) from the recorded motion
    energy = 0.0
    for body, length in (("crank", 0.1), ("coupler", 0.4), ("rocker", 0.3)):
        def mid(ch):
            return (data[f"point.{body}.A.{ch}"] + data[f"point.{body}.B.{ch}"]) / 2
        energy = energy + 0.5 * (mid("x_d") ** 2 + mid("y_d") ** 2) + 9.81 * mid("y") \
            + 0.5 * length**2 / 12 * data[f"body.{body}.angle_d"] ** 2
    power = torque * data["joint.A.angle_d"]
    np.testing.assert_allclose(np.gradient(energy, data["time"])[2:-2], power[2:-2],
                               atol=2e-3 * np.abs(power).max())
    text = capsys.readouterr().out
    assert f"max |effort|: crank_drive {s['max_effort']['crank_drive']:.6g}" in text
    # the crank's joint as the actuator: the same torque, under the joint's name
    assert main(["kinematics", "four-bar-driven", "--t-end", "1", "--dt", "0.002", "--out",
                 str(out), "--actuators", "A", "--plot", "effort.*", "--no-progress"]) == 0
    again = np.load(out / "results.npz")
    assert "effort.crank_drive" not in again
    np.testing.assert_allclose(again["effort.A"], torque, atol=1e-9 * np.abs(torque).max())


@pytest.mark.parametrize("argv, message", [
    (["--plot", "joint.Q.angle"], "--plot: unknown channel 'joint.Q.angle'"),
    (["--actuators", "Z"], "--actuators: unknown actuated joint 'Z'"),
    (["--actuators", ","], "no actuators given"),
    (["--dt", "2"], "dt (2) is longer than the simulated interval"),
    (["--t0", "3"], "--t-end (1) must be greater than --t0 (3)"),
    (["--t0=-inf"], "t0 must be a finite number, got -inf"),
    (["--t-end", "1e300", "--dt", "1e-300"], "gives inf steps (limit 1e+07); use a larger dt"),
    (["--max-iter", "0"], "--max-iter must be at least 1"),
    (["--param", "crank_speed"], "--param expects NAME=VALUE"),
    (["--strategy", "groups", "--threads", "65"], "at most 64 outer threads"),
])
def test_bad_options_give_clear_errors(tmp_path, capsys, argv, message):
    base = ["kinematics", "four-bar-driven", "--t-end", "1", "--dt", "0.01", "--out",
            str(tmp_path), "--no-progress"]
    assert main(base + argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_undriven_model_is_refused(tmp_path, capsys):
    assert main(["kinematics", "four-bar", "--t-end", "1", "--dt", "0.01", "--out",
                 str(tmp_path), "--no-progress"]) == 2
    assert "every degree of freedom driven" in capsys.readouterr().err


@pytest.mark.parametrize("times", [["--t-end", "1", "--dt", "-0.1"], ["--t-end", "inf", "--dt",
                                                                         "0.1"]])
def test_negative_step_or_infinite_time_is_an_argument_error(tmp_path, capsys, times):
    with pytest.raises(SystemExit):
        main(["kinematics", "four-bar-driven", *times])
    assert "must be positive and finite" in capsys.readouterr().err


def test_an_output_file_that_cannot_be_written_is_named(tmp_path, capsys):
    (tmp_path / "results.npz").mkdir()   # a folder where the results file goes
    assert main(["kinematics", "four-bar-driven", "--t-end", "0.1", "--dt", "0.01", "--out",
                 str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "results.npz: Is a directory" in err and "Traceback" not in err


def test_strategy_auto_prints_the_measured_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    argv = ["kinematics", "four-bar-driven", "--t-end", "0.2", "--dt", "0.01", "--strategy",
            "auto", "--out", str(tmp_path / "a"), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "auto-tuning (measured now" in out and "**chosen**" in out
    for variant in ("| global | dense |", "| global | sparse |", "| groups | sparse |"):
        assert variant in out.replace(" **chosen**", "")
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["auto_tuning"]["choice"].startswith(s["strategy"] + "-" + s["solver"])
    assert main(argv + ["--threads", "1"]) == 0  # threads fixed: strategy and solver tuned
    assert "measured now" in capsys.readouterr().out
    assert main(argv) == 0
    assert "auto-tuning (cached in" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--retune"], "--retune re-measures the auto-tuning: it needs --strategy auto"),
    (["--threads", "2"], "outer threads solve structural groups in parallel"),
])
def test_strategy_options_give_clear_errors(tmp_path, capsys, argv, message):
    base = ["kinematics", "four-bar-driven", "--t-end", "1", "--dt", "0.01", "--out",
            str(tmp_path), "--no-progress"]
    assert main(base + argv) == 2
    assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(base + ["--threads", "2x0"])
    assert "expected OUTER or OUTERxINNER" in capsys.readouterr().err


def test_bench_knows_the_issue_name(capsys):
    from kinedyn.cli.bench import ALIASES, available
    assert ALIASES["group-equations"] in available()
    # only benchmarks: `bench all` runs each of them (the helper module `host` has no run)
    assert "host" not in available() and "common" not in available() and "peers" in available()
    assert main(["bench", "no-such-bench"]) == 2
    assert "group-equations" in capsys.readouterr().err


def test_bench_announces_each_row_on_stderr(tmp_path, monkeypatch, capsys):
    """A benchmark runs for most of an hour: each finished row is announced as it comes."""
    import sys
    import types

    from kinedyn.bench import common
    from kinedyn.cli import bench

    def run(quick, out_dir):
        rep = common.Report("fake")
        rep.add_row("sizes", legs=6, stages=1, us=12.5, note="4th", more="5th, not shown")
        rep.add_row("sizes", legs=22, stages=29, us=380.0)
        return rep

    monkeypatch.setattr(bench, "available", lambda: ["fake"])
    monkeypatch.setitem(sys.modules, "kinedyn.bench.fake", types.SimpleNamespace(run=run))
    assert main(["bench", "fake", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["[fake 0:00] sizes: legs 6, stages 1, us 12.5, note 4th",
                   "[fake 0:00] sizes: legs 22, stages 29, us 380"]
    assert common.progress is None  # reset after the run
    assert (tmp_path / "fake.md").read_text().count("| 22 | 29 | 380 |") == 1
    assert main(["bench", "fake", "--out", str(tmp_path), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_a_step_that_does_not_divide_the_interval_is_noted_once(tmp_path, capsys):
    assert main(["kinematics", "four-bar-driven", "--t-end", "1", "--dt", "0.3", "--out",
                 str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("note: dt = 0.3 s does not divide the interval") == 1
    assert "ends at t = 0.9 s" in out
