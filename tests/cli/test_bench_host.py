"""Every benchmark report states how fast the host ran (kinedyn.bench.host)."""
import json
import re

import pytest

from kinedyn.bench import common, host


def test_reference_kernel_does_the_work_it_states():
    """The compiled kernel computes its recurrence, as the interpreted Python source does
    (nothing optimised away), and its time per iteration is positive and finite."""
    for n in (1, 10, 1000):
        assert host.reference_kernel(n) == pytest.approx(host.reference_kernel.py_func(n),
                                                         rel=1e-12)
    assert 0.0 < host.reference_ns(samples=3) < 1e6


def test_report_states_load_steal_and_reference_at_start_and_end(tmp_path, monkeypatch):
    """Steal is the hypervisor's share of all CPU time between start and end (/proc/stat)."""
    ticks = iter([(100, 10_000), (150, 11_000)])
    monkeypatch.setattr(host, "_cpu_times", lambda: next(ticks))
    rep = common.Report("fake")
    rep.add_row("sizes", n=1, us=2.0)
    _, md = rep.write(tmp_path)
    text = md.read_text()
    start, end = map(float, re.search(
        r"reference kernel ns per iteration at start, end: ([\d.]+), ([\d.]+)", text).groups())
    assert start > 0 and end > 0
    assert "CPU time stolen by the hypervisor during the run: 5.0 %" in text
    assert re.search(r"load average \(1/5/15 min\) at start, end: [\d./]+, [\d./]+", text)
    data = json.loads((tmp_path / "fake.json").read_text())
    assert data["host"]["start"]["reference_ns"] == pytest.approx(start, abs=0.05)
    assert data["host"]["end"]["steal_percent"] == pytest.approx(5.0)


def test_without_proc_stat_the_steal_line_is_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(host, "_cpu_times", lambda: None)
    _, md = common.Report("fake").write(tmp_path)
    assert "stolen" not in md.read_text() and "reference kernel" in md.read_text()


def test_a_report_shown_while_running_does_not_freeze_its_end(tmp_path, monkeypatch):
    """to_markdown() before write() states the start only; write() then measures the end."""
    ticks = iter([(100, 10_000), (120, 12_000)])
    monkeypatch.setattr(host, "_cpu_times", lambda: next(ticks))
    rep = common.Report("fake")
    early = rep.to_markdown()
    assert "ns per iteration at start:" in early and "stolen" not in early
    assert rep.host.end is None
    _, md = rep.write(tmp_path)
    text = md.read_text()
    assert "at start, end:" in text and "stolen by the hypervisor during the run: 1.0 %" in text
