"""README.md stays true: its Python example runs, its model file loads, runs and errs as shown."""
import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

import kinedyn

README = Path(__file__).resolve().parents[2] / "README.md"


def _block(lang: str) -> str:
    return re.search(rf"```{lang}\n(.*?)```", README.read_text(encoding="utf-8"), re.S).group(1)


def test_python_example_prints_the_stroke():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_block("python"), "README.md", "exec"), {})
    assert out.getvalue().startswith("piston stroke 0.600 m\n")


def test_model_file_example_loads_and_swings(tmp_path):
    from kinedyn.kinematics import Kinematics
    path = tmp_path / "pendulum.yaml"
    path.write_text(_block("yaml"))
    res = Kinematics(kinedyn.load(path).compile()).simulate(t_end=0.5, dt=0.05)
    angle = res.channel("joint.pivot.angle")
    assert np.allclose(angle, -np.pi / 2 + 0.3 * np.sin(2 * np.pi * res.time), atol=1e-9)


def test_model_file_error_example_is_what_users_see(tmp_path):
    path = tmp_path / "pendulum.yaml"
    path.write_text(_block("yaml").replace("point_b: A}", "point_b: C}"))
    with pytest.raises(kinedyn.ModelError) as info:
        kinedyn.load(path)
    shown = re.search(r"`pendulum\.yaml: (joints.*?)`", README.read_text()).group(1)
    assert str(info.value) == f"{path}: {shown}"
