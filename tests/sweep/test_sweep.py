"""Design studies (kinedyn.sweep): every case against its closed form, failures recorded, the
samples' distributions, the same numbers serially and on Dask workers, and the errors."""
from __future__ import annotations

import csv
import json
import math
import re
import threading

import numpy as np
import pytest

import kinedyn
from kinedyn import models
from kinedyn.cli import main
from kinedyn.errors import ModelError, UnknownNameError
import kinedyn.sweep.study
from kinedyn.sweep import load_sweep, make_cases, sweep
from kinedyn.sweep.runner import run_case

G = 9.81


def rod(gravity=0.0):
    """A uniform rod (parameters length, mass) pinned at one end, horizontal at t = 0, with a
    motor torque input at its pin: I_O = mass length^2 / 3."""
    s = kinedyn.System("rod", dim=2, gravity=[0, -gravity])
    s.add_parameter("length", 1.0)
    s.add_parameter("mass", 1.0)
    s.add_point("ground", "O", [0, 0])
    s.add_body("link", mass="mass", inertia="mass*length**2/12", com=["length/2", 0],
               points={"O": [0, 0], "E": ["length", 0]})
    s.add_joint("pin", "revolute", "ground", "link", point_a="O", point_b="O")
    s.add_input("torque", 0.0, "motor torque, N m")
    s.add_force("motor", "joint", joint="pin", function="torque")
    return s


def test_slider_crank_stroke_is_twice_the_crank_over_a_grid():
    # dt = 5 ms lands on both dead centres (crank at 45 deg, 1 rev/s: t = 3/8 and 7/8 s)
    res = sweep(models.get("slider-crank-driven"), analysis="kinematics",
                vary={"crank_length": "0.1:0.3:5", "rod_length": [0.4, 0.6]}, t_end=1.0,
                dt=0.005, metrics={"stroke": "range(joint.slide.displacement)",
                                   "closure": "max(residual.position)"}, scheduler="serial")
    assert res.ok.all() and len(res.values) == 10
    # the first name varies slowest, as itertools.product
    np.testing.assert_allclose(res.value("crank_length"),
                               np.repeat(np.linspace(0.1, 0.3, 5), 2))
    np.testing.assert_allclose(res.value("rod_length"), np.tile([0.4, 0.6], 5))
    np.testing.assert_allclose(res.metric("stroke"), 2 * res.value("crank_length"), atol=1e-9)
    assert res.metric("closure").max() < 1e-9
    # (each crank's two rod lengths give strokes equal to round-off: not quite tied ranks)
    assert res.summary["rank_correlation"]["stroke"]["crank_length"] > 0.99
    assert res.summary["statistics"]["stroke"]["case_of_max"] in (8, 9)
    assert res.best("stroke", maximize=True)["crank_length"] == pytest.approx(0.3)


def test_torque_inputs_and_lengths_give_the_closed_form_angles():
    # no gravity, constant torque: angle(T) = tau T^2 / (2 I_O), I_O = m L^2 / 3 (RK4's error
    # on the natural coordinates' circle: 1e-8 at dt = 10 ms, 2e-11 at 2 ms)
    T = 0.5
    res = sweep(rod(), vary={"length": [0.5, 1.0, 2.0], "torque": [-1.0, 0.5]},
                parameters={"mass": 2.0}, metrics={"angle": "final(joint.pin.angle)",
                                                   "rate": "final(joint.pin.angle_d)"},
                t_end=T, dt=0.002, options={"method": "projection"}, scheduler="serial")
    assert res.kinds == ("parameter", "input")
    L, tau = res.value("length"), res.value("torque")
    inertia = 2.0 * L**2 / 3
    np.testing.assert_allclose(res.metric("angle"), tau * T**2 / (2 * inertia), rtol=1e-9)
    np.testing.assert_allclose(res.metric("rate"), tau * T / inertia, rtol=1e-9)


def test_sampled_lengths_swing_at_the_energy_rate_and_load_the_pin_with_2_5_mg():
    # released horizontal under gravity: at the bottom omega^2 = m g (L/2) / (m L^2 / 3) = 3g/L;
    # the pin's vertical force m g (0.25 + 2.25 sin^2 phi), phi below the horizontal, peaks
    # there at 2.5 m g whatever the length
    res = sweep(rod(gravity=G), sample={"length": "uniform(0.5, 1.5)"}, samples=6, seed=3,
                metrics={"peak": "absmax(joint.pin.angle_d)",
                         "load": "max(reaction.pin.force_y)"}, parameters={"mass": 2.0},
                t_end=1.0, dt=1e-3, scheduler="serial")
    L = res.value("length")
    assert 0.5 <= L.min() and L.max() <= 1.5 and len(np.unique(L)) == 6
    np.testing.assert_allclose(res.metric("peak"), np.sqrt(3 * G / L), rtol=1e-5)
    np.testing.assert_allclose(res.metric("load"), 2.5 * 2.0 * G, rtol=1e-5)
    assert res.summary["rank_correlation"]["peak"]["length"] == pytest.approx(-1.0)


def test_a_kinematics_study_reads_the_efforts_that_produce_the_motion():
    """Inverse dynamics in a kinematics study. Every link's mass and inertia scale with
    link_mass and the motion does not depend on it, so the crank torque (gravity and inertia
    alike) and the pin loads are linear in it; each case equals its own run's loads; the crank
    joint as the actuator gives the driver's torque."""
    from kinedyn.kinematics import Kinematics
    study = dict(analysis="kinematics", t_end=1.0, dt=2e-3, scheduler="serial",
                 vary={"crank_length": [0.08, 0.1], "link_mass": [1.0, 2.0, 3.0]})
    res = sweep(models.get("four-bar-driven"), metrics={
        "torque": "absmax(effort.crank_drive)", "pin": "max(reaction.D.force_y)",
        "swing": "range(joint.D.angle)"}, **study)
    assert res.ok.all()
    for name in ("torque", "pin"):
        per_mass = res.metric(name).reshape(2, 3) / res.value("link_mass").reshape(2, 3)
        np.testing.assert_allclose(per_mass, per_mass[:, :1] * np.ones(3), rtol=1e-9)
    assert res.metric("torque")[0] != pytest.approx(res.metric("torque")[3], rel=1e-3)
    swing = res.metric("swing").reshape(2, 3)   # the motion is the mass's own
    np.testing.assert_allclose(swing, swing[:, :1] * np.ones(3), rtol=1e-12)
    for i in (0, 5):
        row = res.row(i)
        kin = Kinematics(models.get("four-bar-driven").compile(
            {"crank_length": row["crank_length"], "link_mass": row["link_mass"]})).simulate(
                1.0, 2e-3)
        loads = kin.reactions()
        assert row["torque"] == pytest.approx(np.abs(loads["effort.crank_drive"]).max(),
                                              rel=1e-12)
        assert row["pin"] == pytest.approx(loads["reaction.D.force_y"].max(), rel=1e-12)
    joint = sweep(models.get("four-bar-driven"), actuators="A",
                  metrics={"torque": "absmax(effort.A)"}, **study)
    np.testing.assert_allclose(joint.metric("torque"), res.metric("torque"), rtol=1e-9)
    assert joint.summary["actuators"] == ["A"] and "actuators" not in res.summary


def test_a_design_that_does_not_assemble_is_recorded_and_the_others_run():
    # a 2-m crank puts B 1.6 m or more from D: the coupler and rocker reach 0.7 m
    res = sweep(models.get("four-bar"), vary={"crank_length": [0.1, 2.0, 0.12]}, t_end=0.05,
                dt=1e-3, metrics={"w": "absmax(body.rocker.angle_d)"}, scheduler="serial")
    assert res.ok.tolist() == [True, False, True]
    assert res.errors[1].startswith("AssemblyError") and np.isnan(res.metric("w")[1])
    assert np.isfinite(res.metric("w")[[0, 2]]).all()
    assert res.summary["failed"] == {"AssemblyError": 1} and res.summary["succeeded"] == 2
    assert res.row(1)["error"] == res.errors[1]


def test_a_local_dask_cluster_gives_the_serial_numbers(tmp_path, monkeypatch):
    study = dict(vary={"length": [0.5, 1.0, 1.5, 2.0]}, sample={"torque": "normal(1, 0.2)"},
                 samples=3, seed=1, t_end=0.2, dt=0.01, metrics={
                     "angle": "final(joint.pin.angle)",
                     "tip": lambda r: float(np.max(r.channel("point.link.E.y")))})
    serial = sweep(rod(), scheduler="serial", **study)
    assert sweep(rod(), **study).summary["where"] == "serial (this process)"  # 12 short cases
    local = sweep(rod(), workers=2, scheduler="local", **study)
    assert local.summary["where"] == "local Dask cluster, 2 worker processes"
    np.testing.assert_array_equal(local.metrics, serial.metrics)
    # the default scheduler tries a case here, then (thresholds 0: it pays) starts a local
    # cluster and goes on here meanwhile; this process's cases wait for the cluster to be up
    # (a loaded host took more than 12 s) so that cases are left to it
    began, ready = threading.Event(), threading.Event()
    start_cluster = kinedyn.sweep.study._started

    def started(*args):
        began.set()
        out = start_cluster(*args)
        ready.set()
        return out

    def case_here(*args):
        if began.is_set():
            ready.wait(300)
        return run_case(*args)
    monkeypatch.setattr(kinedyn.sweep.study, "TRIAL_S", 0.0)
    monkeypatch.setattr(kinedyn.sweep.study, "STARTUP_S", 0.0)
    monkeypatch.setattr(kinedyn.sweep.study, "_started", started)
    monkeypatch.setattr(kinedyn.sweep.study, "run_case", case_here)
    local = sweep(rod(), workers=2, **study)
    assert re.fullmatch(r"local Dask cluster, 2 worker processes \(after \d cases? in this "
                        r"process\)", local.summary["where"])
    np.testing.assert_array_equal(local.values, serial.values)
    np.testing.assert_array_equal(local.metrics, serial.metrics)
    # common random numbers: each length meets the same three torques
    np.testing.assert_array_equal(serial.value("torque").reshape(4, 3),
                                  np.tile(serial.value("torque")[:3], (4, 1)))
    files = local.save(tmp_path)
    rows = list(csv.DictReader(open(files[0])))
    assert len(rows) == 12 and float(rows[5]["angle"]) == local.metric("angle")[5]
    summary = json.loads(files[1].read_text())
    assert summary["design"]["samples"] == 3 and summary["cases"] == 12


def test_samples_follow_their_distributions_and_seeds():
    s = rod()
    a = make_cases(s, sample={"length": "normal(1, 0.1)", "mass": ("uniform", 2, 3)},
                   samples=4000, seed=7)
    L, m = a.values.T
    assert abs(L.mean() - 1) < 4 * 0.1 / math.sqrt(4000) and abs(L.std() - 0.1) < 0.005
    assert 2 <= m.min() and m.max() <= 3 and abs(m.mean() - 2.5) < 0.02
    np.testing.assert_array_equal(make_cases(s, sample={"length": "normal(1, 0.1)",
                                             "mass": ("uniform", 2, 3)},
                                             samples=4000, seed=7).values, a.values)
    assert not np.array_equal(make_cases(s, sample={"length": "normal(1, 0.1)"}, samples=5,
                                         seed=8).values, a.values[:5, :1])
    # a Latin hypercube puts exactly one sample in each of n equally likely strata
    n = 50
    h = make_cases(s, sample={"length": "uniform(0, 1)", "mass": "triangular(1, 1.5, 3)"},
                   samples=n, lhs=True)
    from scipy import stats
    u = np.column_stack([h.values[:, 0], stats.triang(0.25, loc=1, scale=2).cdf(h.values[:, 1])])
    for j in range(2):
        assert sorted(np.floor(u[:, j] * n).astype(int)) == list(range(n))


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(vary={"lenght": [1]}), UnknownNameError, "unknown parameter or input of 'rod' "
                                                   "'lenght'; known: length, mass, torque"),
    (dict(), ModelError, "a study needs something to vary"),
    (dict(vary={"length": "1:2"}), ModelError, "vary.length: expected a number"),
    (dict(vary={"length": "1:2:0"}), ModelError, "whole number n >= 1"),
    (dict(vary={"length": [1, "x"]}), ModelError, "vary.length: expected a number, got 'x'"),
    (dict(vary={"length": [1, float("nan")]}), ModelError, "expected a number, got nan"),
    (dict(sample={"length": "gauss(1, 2)"}, samples=3), UnknownNameError,
     "unknown distribution 'gauss'"),
    (dict(sample={"length": "normal(1, -2)"}, samples=3), ModelError, "std > 0"),
    (dict(sample={"length": "uniform(2, 1)"}, samples=3), ModelError, "low < high"),
    (dict(sample={"length": "normal(1)"}, samples=3), ModelError, r"takes \(mean, std\)"),
    (dict(sample={"length": "normal(1, 0.1)"}), ModelError, "samples must be a whole number"),
    (dict(sample={"length": "normal(1, 0.1)"}, samples=2, seed=-1), ModelError, "seed"),
    (dict(vary={"length": [1]}, samples=3), ModelError, "'samples' counts draws"),
    (dict(vary={"length": [1]}, sample={"length": "normal(1, 0.1)"}, samples=2), ModelError,
     "given both in 'vary' and in 'sample'"),
    (dict(vary={"length": [1]}, parameters={"length": 2}), ModelError, "both varied and fixed"),
    (dict(vary={"length": [1]}, parameters=[("mass", 2)]), ModelError,
     "parameters must be a mapping"),
    (dict(vary={"length": [1]}, metrics={}), ModelError, "at least one metric"),
    (dict(vary={"length": [1]}, metrics={"m": "biggest(joint.pin.angle)"}), UnknownNameError,
     "unknown reduction 'biggest'"),
    (dict(vary={"length": [1]}, metrics={"m": "max joint.pin.angle"}), ModelError,
     "expected REDUCTION"),
    (dict(vary={"length": [1]}, options={"methd": "projection"}), ModelError,
     "dynamics options: .*methd.*allowed: .*method"),
    (dict(vary={"length": [1]}, analysis="statics"), ModelError, "analysis must be one of"),
    (dict(vary={"length": [1]}, dt=-1.0), ModelError, "need dt > 0"),
    (dict(vary={"length": [1]}, inputs={"torq": 1.0}), UnknownNameError, "unknown input"),
    (dict(vary={"length": [1]}, workers=0), ModelError, "workers must be"),
    (dict(vary={"length": [1, 2]}, scheduler=3), ModelError, "scheduler is None"),
    (dict(vary={"length": [1, 2]}, scheduler="lcoal"), ModelError, "got 'lcoal'"),
    (dict(vary={"length": [1]}, analysis="kinematics", record_every=2), ModelError,
     "record_every applies to dynamics"),
    (dict(vary={"length": [1]}, actuators="pin"), ModelError,
     "actuators apply to a kinematics study"),
    (dict(vary={"length": [1]}, analysis="kinematics", actuators="pn"), UnknownNameError,
     "unknown actuated joint 'pn'"),
    (dict(vary={"length": [1]}, analysis="kinematics", actuators=[]), ModelError,
     "no actuators given"),
])
def test_bad_studies_are_refused_before_they_run(kwargs, error, message):
    study = dict(metrics={"a": "final(joint.pin.angle)"}, t_end=0.1, dt=0.01, workers=2)
    study.update(kwargs)
    with pytest.raises(error, match=message):
        sweep(rod(), **study)


@pytest.mark.parametrize("kwargs, message", [
    (dict(metrics={"a": "max(joint.pn.angle)"}), "case 0 failed at its metric, and so would "
                                                 "every case: .*metric 'a'.*'joint.pn.angle'"),
    (dict(metrics={"a": lambda r: "high"}), "metric 'a' gave 'high', not a number"),
    (dict(analysis="kinematics"), "case 0 failed at its set-up.*every degree of freedom driven"),
])
def test_a_failure_every_case_would_share_stops_the_study(kwargs, message):
    study = dict(vary={"length": [1.0, 2.0]}, metrics={"a": "final(joint.pin.angle)"},
                 t_end=0.1, dt=0.01, scheduler="serial")
    study.update(kwargs)
    with pytest.raises(ModelError, match=message):
        sweep(rod(), **study)


def test_sweep_takes_a_system():
    with pytest.raises(TypeError, match="takes a kinedyn System"):
        sweep(rod().compile(), vary={"length": [1]}, metrics=["final(joint.pin.angle)"])


def test_the_sweep_command_writes_its_table_summary_and_picture(tmp_path, capsys):
    out = tmp_path / "sc"
    assert main(["sweep", "slider-crank-driven", "--vary", "crank_length=0.1,0.2",
                 "-p", "rod_length=0.5", "--t-end", "1", "--dt", "0.005", "--metric",
                 "stroke=range(joint.slide.displacement)", "--metric",
                 "max(joint.slide.displacement)", "--scheduler", "serial", "--no-progress",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 cases of kinematics" in text and "stroke: min 0.2 (case 0), max 0.4 (case 1)" in text
    rows = list(csv.DictReader(open(out / "sweep.csv")))
    assert [float(r["stroke"]) for r in rows] == pytest.approx([0.2, 0.4], abs=1e-9)
    # top dead centre: crank + rod (0.5 fixed by -p)
    assert [float(r["max(joint.slide.displacement)"]) for r in rows] == pytest.approx(
        [0.6, 0.7], abs=1e-9)
    summary = json.loads((out / "sweep.json").read_text())
    assert summary["analysis"] == "kinematics" and summary["succeeded"] == 2
    assert (out / "sweep.png").stat().st_size > 10_000
    # read back: the same cases, metrics and summary; drawn again by `kinedyn plot`
    back = load_sweep(out / "sweep.json")
    assert back.names == ("crank_length",) and back.kinds == ("parameter",)
    np.testing.assert_allclose(back.metric("stroke"), [0.2, 0.4], atol=1e-9)
    assert back.ok.all() and back.summary == summary and back.row(1)["case"] == 1
    assert back.best("stroke", maximize=True)["crank_length"] == pytest.approx(0.2)
    (out / "sweep.png").unlink()
    assert main(["plot", str(out), "--plot", "str*"]) == 0
    again = capsys.readouterr().out
    assert "stroke: min 0.2 (case 0), max 0.4 (case 1)" in again and "sweep.png" in again
    assert (out / "sweep.png").stat().st_size > 10_000


def test_a_saved_study_with_failures_reads_back_and_bad_files_are_named(tmp_path, capsys):
    res = sweep(models.get("four-bar"), vary={"crank_length": [0.1, 2.0]}, t_end=0.02,
                dt=1e-3, metrics={"w": "absmax(body.rocker.angle_d)"}, scheduler="serial")
    res.save(tmp_path)
    back = load_sweep(tmp_path)
    assert back.ok.tolist() == [True, False] and back.errors == res.errors
    np.testing.assert_array_equal(back.metrics, res.metrics)      # NaN where it failed
    np.testing.assert_array_equal(back.values, res.values)
    assert back.warnings == res.warnings and "failed=1" in repr(back)
    for argv, message in ((["--plot", "v"], "--plot: unknown metric 'v'; known: w"),
                          (["--animate"], "--animate draws a run's motion")):
        assert main(["plot", str(tmp_path), *argv]) == 2
        assert message in capsys.readouterr().err
    table = (tmp_path / "sweep.csv").read_text().splitlines()
    (tmp_path / "sweep.csv").write_text("\n".join([table[0], table[1].replace("0.1", "a", 1)]))
    with pytest.raises(ModelError, match=r"sweep.csv: line 2: could not convert .*'a'"):
        load_sweep(tmp_path)
    (tmp_path / "sweep.csv").write_text("case,crank_length,v,error,warnings,seconds\n0,1,1,,,1\n")
    with pytest.raises(ModelError, match="line 2 has no column 'w'"):
        load_sweep(tmp_path)
    (tmp_path / "sweep.json").unlink()
    with pytest.raises(ModelError, match="sweep.json: no such file"):
        load_sweep(tmp_path / "sweep.csv")


@pytest.mark.parametrize("argv, message", [
    (["--vary", "crank_length"], "--vary expects NAME=SPEC"),
    (["--vary", "crank_length=1", "--vary", "crank_length=2"], "given twice"),
    (["--vary", "crank_length=1", "--samples", "5"], "--samples counts draws"),
    (["--vary", "crank_length=1", "--method", "projection"], "--method applies to dynamics"),
    (["--vary", "crank_length=1", "--analysis", "dynamics", "--actuators", "crank_pin"],
     "actuators apply to a kinematics study"),
    (["--sample", "crank_length=normal(0.3)"], "takes (mean, std)"),
])
def test_the_sweep_command_names_bad_arguments(argv, message, capsys, tmp_path):
    base = ["sweep", "slider-crank-driven", "--t-end", "1", "--dt", "0.01", "--metric",
            "max(joint.slide.displacement)", "--scheduler", "serial", "--out", str(tmp_path)]
    assert main(base + argv) == 2
    assert message in capsys.readouterr().err.replace("\\", "")


def test_the_sweep_command_needs_a_metric(capsys, tmp_path):
    assert main(["sweep", "four-bar", "--vary", "crank_length=0.1", "--t-end", "1", "--dt",
                 "0.01", "--out", str(tmp_path)]) == 2
    assert "--metric: give at least one" in capsys.readouterr().err


def test_the_sweep_benchmark_times_every_way_on_the_same_cases(monkeypatch):
    import kinedyn.bench.sweep as bench
    small = {k: {**v, **({"samples": 4} if "samples" in v else
                         {"vary": {"crank_length": "0.1:0.2:2", "rod_length": [0.5, 0.6]}})}
             for k, v in bench._studies(quick=True).items()}
    monkeypatch.setattr(bench, "_studies", lambda quick: small)
    report = bench.run(quick=True)
    four_bar, crank = (report.tables[t] for t in small)
    for rows in (four_bar, crank):
        assert [r["way"] for r in rows] == ["serial", "local", "default"]
        assert all(r["same_metrics"] for r in rows)       # every way: the same numbers
        assert rows[0]["speedup_vs_serial"] == 1.0
        assert rows[1]["where"].startswith("local Dask cluster")
        assert rows[2]["where"] == "serial (this process)"   # 4 short cases: not worth it
    split = report.tables["one four-bar case (ms)"][0]
    assert 0 < split["compiled_run"] < split["whole_case"] == four_bar[0]["median_case_ms"]


def test_a_long_study_keeps_a_bounded_amount_of_generated_code(tmp_path, monkeypatch):
    """The constraints' code serves every geometry (one module for the study, on disk). The
    functions of time are each case's own when a varied speed enters them: kept, they grew a
    worker by 60 kB and the disk cache by a file per case; now at most KEEP_TRANSIENT of them
    stay in memory and none goes to the disk."""
    from kinedyn import _llvm
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    for name, value in (("_ENGINES", {}), ("_STRUCTURES", {}), ("_RECENT", {}),
                        ("KEEP_TRANSIENT", 4)):   # (as in a new process)
        monkeypatch.setattr(_llvm, name, value)
    study = dict(vary={"crank_speed": "5:7:6", "crank_length": [0.1, 0.11]}, analysis="kinematics",
                 t_end=0.05, dt=1e-3, metrics={"p": "absmax(body.rocker.angle_d)"},
                 scheduler="serial")
    first = sweep(models.get("four-bar-driven"), **study)
    assert first.ok.all()
    kept = len(_llvm._ENGINES)
    assert len(_llvm._RECENT) == 4 and set(_llvm._RECENT) <= set(_llvm._ENGINES)
    again = sweep(models.get("four-bar-driven"), **study)
    assert len(_llvm._ENGINES) == kept
    np.testing.assert_array_equal(again.metrics, first.metrics)
    assert len(list((tmp_path / "natural").glob("*.o"))) == 1
    assert not list((tmp_path / "functions").glob("*.o"))
