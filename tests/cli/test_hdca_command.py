"""``kinedyn hdca`` writes results and the paper's figures; ``kinedyn bench hdca`` helpers."""
import json

import numpy as np

from kinedyn.bench.hdca import scaling_rows, slope
from kinedyn.cli import main


def test_hdca_command_writes_results_and_figures(tmp_path, capsys):
    assert main(["hdca", "four-bar-hdca", "--t-end", "0.05", "--dt", "1e-3", "--precision",
                 "both", "--no-reference", "--out", str(tmp_path)]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert {"results.csv", "summary.json", "four-bar_joint.png", "four-bar_energy.png",
            "four-bar_loop_position.png", "four-bar_loop_angle.png"} <= names
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["method"] == "hdca" and summary["closed_loop"]
    assert summary["max_loop_closure"]["position"] < 1e-8
    assert "loop closure" in capsys.readouterr().out


def test_hdca_command_rejects_unsupported_models(capsys):
    assert main(["hdca", "3-rrr", "--t-end", "0.01", "--dt", "1e-3", "--no-reference"]) == 2
    assert "HDCA" in capsys.readouterr().err


def test_bench_rows_and_slopes():
    rows = scaling_rows([4, 16], repeat=1)
    assert [r["N"] for r in rows] == [4, 16]
    assert all(r["hdca_serial_us"] > 0 and r["dense_us"] > 0 for r in rows)
    for r in rows:  # serial and 2-thread times side by side with their ratio
        assert np.isclose(r["speedup_2threads"], r["hdca_serial_us"] / r["hdca_2threads_us"])
        assert r["load_1min"] >= 0
    line = [{"N": n, "t": 3.0 * n ** 1.5} for n in (64, 128, 256)]
    assert np.isclose(slope(line, "t"), 1.5)


def test_simulate_command_runs_hdca(tmp_path, capsys):
    assert main(["simulate", "four-bar-hdca", "--method", "hdca", "--integrator", "rk4",
                 "--t-end", "0.05", "--dt", "1e-3", "--no-progress", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["method"] == "hdca" and summary["integrator"] == "rk4"
    assert summary["max_residual"]["position"] < 1e-8
    assert "hdca / rk4" in capsys.readouterr().out
    assert main(["simulate", "3-rrr", "--method", "hdca", "--t-end", "0.01", "--dt", "1e-3",
                 "--no-progress"]) == 2
    assert "HDCA" in capsys.readouterr().err
