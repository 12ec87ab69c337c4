"""`kinedyn models`, `kinedyn validate`, `kinedyn info` through kinedyn.cli.main."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from kinedyn.cli import main
from kinedyn.models import MODELS

TWINS = Path(__file__).resolve().parents[2] / "examples" / "models"


def test_models_lists_every_builtin_with_its_dof(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()
            and line.split()[0] in MODELS}
    assert set(rows) == set(MODELS)
    assert rows["four-bar"][1:4] == ["2-D", "1", "0"]
    assert rows["3-rrr-driven"][1:4] == ["2-D", "3", "3"]
    assert rows["stewart-paper"][1:4] == ["3-D", "6", "6"]
    assert MODELS["slider-crank"].summary in out
    from kinedyn.models import FAMILIES
    assert all(f"{prefix}<N>" in out for prefix in FAMILIES)
    # Gruebler says 0; the Jacobian rank sees the redundant constraint
    assert rows["parallelogram"][2:5] == ["1", "(Gruebler", "0)"]


def test_validate_accepts_files_and_builtins(capsys):
    assert main(["validate", str(TWINS / "four-bar.yaml"), "stewart-paper"]) == 0
    out = capsys.readouterr().out
    assert out.count("ok: ") == 2 and "stewart-paper: spatial, 13 bodies, 18 joints" in out


def test_validate_reports_file_location_and_problem_with_exit_code_1(tmp_path, capsys):
    data = yaml.safe_load((TWINS / "four-bar.yaml").read_text())
    data["joints"][3]["point_b"] = "Z"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(TWINS / "slider-crank.yaml"), str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == (f"invalid: {bad}: joints[3].point_b: unknown point of body "
                                    "'rocker' 'Z'; known: A, B")
    assert "Traceback" not in captured.err and captured.out.startswith("ok: ")


def test_validate_unknown_builtin_and_missing_file(tmp_path, capsys):
    assert main(["validate", "five-bar", str(tmp_path / "none.yaml")]) == 1
    err = capsys.readouterr().err
    assert "unknown model 'five-bar'; known: 3-rrr" in err
    assert f"{tmp_path / 'none.yaml'}: model file not found" in err


def test_validate_evaluates_the_functions_of_time_where_runs_start(tmp_path, capsys):
    """A driver that is not finite at t = 0 (``log(t)``) is invalid: every run would stop at
    its first evaluation."""
    data = yaml.safe_load((TWINS / "four-bar-driven.yaml").read_text())
    data["drivers"][0]["function"] = "crank_angle + log(t)"
    bad = tmp_path / "log.yaml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (f"invalid: {bad}: the function of time 'crank_angle + log(t)' divides "
                           "by zero at t = 0 s, where runs start")


def test_validate_applies_parameters(capsys):
    assert main(["validate", "four-bar", "-p", "link_mass=-1"]) == 1
    assert "bodies[0].mass: mass must be positive, got -1" in capsys.readouterr().err


def test_info_prints_topology_and_writes_the_graph(tmp_path, capsys):
    assert main(["info", "stewart-paper", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "stewart-paper: spatial model, 13 moving bodies + ground, 18 joints, 1 driver" in out
    assert "loops (5 independent; cut joints U2, U3, U4, U5, U6)" in out
    assert "6 x 13 bodies - 72 joint equations = 6" in out
    assert "degrees of freedom left after drivers: 0" in out
    assert "Jacobian rank check (at the assembled initial configuration): mobility 6, left " \
        "after drivers 0: agrees" in out
    picture = tmp_path / "stewart-paper-graph.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"graph picture: {picture}" in out


def test_info_reports_idle_spins_as_such(tmp_path, capsys):
    data = yaml.safe_load((TWINS / "gough-stewart.yaml").read_text())
    for joint in data["joints"]:
        if joint["type"] == "universal":
            joint["type"] = "spherical"
            del joint["axis_a"], joint["axis_b"]
    path = tmp_path / "sps.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["info", str(path), "--out", str(tmp_path), "--format", "svg"]) == 0
    out = capsys.readouterr().out
    assert "= 12" in out
    assert "of which idle spins: 6 (lower1+upper1 spin," in out
    assert "effective mobility 6" in out
    assert (tmp_path / "gough-stewart-graph.svg").read_text().lstrip().startswith("<?xml")


def test_info_with_a_bad_model_is_a_clear_error(capsys):
    assert main(["info", "no-such-model", "--no-graph"]) == 2
    assert "kinedyn info: error: unknown model 'no-such-model'" in capsys.readouterr().err


def test_info_sections_are_discoverable():
    from kinedyn.cli.info import sections
    names = [s.name for s in sections()]
    assert names[:5] == ["bodies", "joints", "loops", "mobility", "graph"]


def test_python_dash_m_kinedyn_runs():
    done = subprocess.run([sys.executable, "-m", "kinedyn", "info", "four-bar", "--no-graph"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "loops (1 independent; cut joints C)" in done.stdout


def test_an_info_section_module_adds_a_flag_and_a_section(tmp_path, monkeypatch, capsys):
    """The documented hook: a module in kinedyn.cli.info_sections is discovered."""
    from kinedyn.cli import info_sections
    (tmp_path / "zz_demo.py").write_text(
        "def add_arguments(parser):\n"
        "    parser.add_argument('--demo', action='store_true')\n"
        "def render(ctx):\n"
        "    if not ctx.args.demo:\n"
        "        return None\n"
        "    return f'demo: {len(ctx.topology.loops)} loops of {ctx.model.name}'\n")
    monkeypatch.setattr(info_sections, "__path__", [*info_sections.__path__, str(tmp_path)])
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["info", "four-bar", "--no-graph"]) == 0
    assert "demo:" not in capsys.readouterr().out
    assert main(["info", "four-bar", "--no-graph", "--demo"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("demo: 1 loops of four-bar")


def test_info_flags_redundant_constraints(capsys):
    assert main(["info", "parallelogram", "--no-graph"]) == 0
    out = capsys.readouterr().out
    assert "= 0\n" in out and "mobility 1, left after drivers 0: 1 more than Gruebler's count, " \
        "so 1 constraint equation(s) are redundant" in out


def test_an_output_folder_that_cannot_be_written_is_refused_before_the_run(
        tmp_path, monkeypatch, capsys):
    """`--out` on a read-only place: a clear error before a benchmark of minutes, not after
    (exit status 2, as for every bad argument); the HDCA command, which wrote after its runs,
    checks its folder first too."""
    import kinedyn.cli.common as common
    import kinedyn.bench.hdca as bench_hdca
    monkeypatch.setattr(common.os, "access", lambda path, mode: False)  # a read-only mount

    def never(**kwargs):
        raise AssertionError("the benchmark ran")
    monkeypatch.setattr(bench_hdca, "run", never)
    assert main(["bench", "hdca", "--quick", "--out", str(tmp_path / "ro")]) == 2
    err = capsys.readouterr().err
    assert f"output folder {str(tmp_path / 'ro')!r} is not writable" in err
    (tmp_path / "file").write_text("")
    assert main(["hdca", "double-pendulum", "--out", str(tmp_path / "file" / "x")]) == 2
    assert "cannot create output folder" in capsys.readouterr().err
