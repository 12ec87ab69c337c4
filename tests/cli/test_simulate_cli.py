"""``kinedyn simulate``: results, summary and plots; the holding option; bad input."""
import json

import numpy as np

from kinedyn.cli import main
from kinedyn.dynamics.holding import holding_efforts
from kinedyn.models import get


def test_simulate_writes_results_summary_and_plots(tmp_path, capsys):
    assert main(["simulate", "four-bar-driven", "--method", "partitioning", "--t-end", "0.05",
                 "--dt", "1e-3", "--reactions", "--plot", "effort.*", "--no-progress",
                 "--out", str(tmp_path)]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert {"results.csv", "results.npz", "summary.json", "energies.png", "residuals.png",
            "channels.png", "motion.png"} <= names and "motion.gif" not in names
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["method"] == "partitioning" and s["steps"] == 50
    assert s["max_residual"]["position"] < 1e-10
    assert {"wall_time_s", "us_per_step", "real_time_factor", "energy"} <= set(s)
    data = np.load(tmp_path / "results.npz")
    assert "effort.crank_drive" in data.files and "energy.kinetic" in data.files
    out = capsys.readouterr().out
    assert "real-time factor" in out
    # the driven crank does work: the change of energy is not called a drift
    assert s["energy"]["conserved"] is False
    assert "max change (not conserved: drivers or forces do work)" in out


def test_hold_keeps_the_stewart_platform_at_rest(tmp_path):
    """Static leg forces hold the platform: it stays at rest (and they carry its weight)."""
    efforts = holding_efforts(get("gough-stewart"), [f"P{i}" for i in range(1, 7)])
    assert len(efforts) == 6 and all(v != 0 for v in efforts.values())
    assert main(["simulate", "gough-stewart", "--hold", "P1,P2,P3,P4,P5,P6", "--t-end", "0.1",
                 "--dt", "1e-3", "--no-progress", "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["held_by"] == [f"P{i}" for i in range(1, 7)]
    assert s["energy"]["max_drift"] < 1e-9     # nothing moves
    assert s["energy"]["conserved"] is False   # (the holding forces could do work)
    assert s["degrees_of_freedom"] == 6


def test_plot_channels_are_checked_before_the_run(tmp_path, capsys):
    """An unknown --plot channel is named before the run (it used to run and write everything
    first); reaction and effort channels, computed after the run, are not pre-checked."""
    out = tmp_path / "run"
    assert main(["simulate", "four-bar", "--t-end", "0.1", "--dt", "1e-3", "--plot", "nosuch",
                 "--no-progress", "--out", str(out)]) == 2
    assert "--plot: unknown channel 'nosuch'" in capsys.readouterr().err
    assert not out.exists()


def test_bad_options_are_named(capsys):
    assert main(["simulate", "four-bar", "--t-end", "0.1", "--dt", "1e-3",
                 "--record-every", "0"]) == 2
    assert "--record-every" in capsys.readouterr().err
    assert main(["simulate", "four-bar", "--t-end", "0.1", "--dt", "1e-3", "--hold", "Z9"]) == 2
    assert "Z9" in capsys.readouterr().err
    assert main(["simulate", "four-bar-driven", "--t-end", "0.1", "--dt", "1e-3", "--hold",
                 "A,B,A"]) == 2
    assert ("joint(s) 'A' listed more than once: each held joint takes one component"
            in capsys.readouterr().err)


def test_an_inaccurate_run_prints_its_warning(tmp_path, capsys):
    """The run's AccuracyWarning is printed as a note of the run, after it, not in Python's
    warning format: HDCA's semi-implicit Euler on the HDCA paper's four-bar, 10 s at 1 ms."""
    assert main(["simulate", "four-bar-hdca", "--method", "hdca", "--integrator",
                 "semi-implicit-euler", "--t-end", "10", "--dt", "1e-3", "--record-every",
                 "10", "--no-progress", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "warning: method 'hdca': the energy changed by" in out
    assert "the constraints are violated by up to" in out
    assert "AccuracyWarning" not in out
