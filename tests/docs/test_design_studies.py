"""docs/design-studies.md stays true: its Python example runs and finds what it says."""
import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "design-studies.md"


def test_python_example_runs_and_the_peak_follows_the_crank(tmp_path, monkeypatch):
    code = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1)
    assert "samples=500" in code and 'options={"method": "projection"}' in code
    # fewer cases, in this process (the Dask path has its own test)
    code = code.replace("samples=500", "samples=24").replace(
        'options={"method": "projection"})', 'options={"method": "projection"}, '
        'scheduler="serial")')
    monkeypatch.chdir(tmp_path)
    scope = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, str(DOC), "exec"), scope)
    res = scope["res"]
    assert res.ok.all() and len(res.values) == 24
    ranks = res.summary["rank_correlation"]["peak"]
    assert ranks["crank_length"] > 0.99 and abs(ranks["link_mass"]) < 0.6
    assert res.metric("drift").max() < 1e-10   # projection keeps the loop closed
    assert (tmp_path / "out" / "sweep.csv").exists()
    assert pytest.approx(0.1, abs=0.002) == res.value("crank_length").mean()
