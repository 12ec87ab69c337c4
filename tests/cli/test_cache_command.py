"""``kinedyn cache``: the caches listed with their sizes, cleared by kind, bad kinds named."""
from __future__ import annotations

from kinedyn.cli import main


def test_the_caches_are_listed_and_cleared_by_kind(tmp_path, monkeypatch, capsys):
    root, xdg = tmp_path / "kd", tmp_path / "xdg"
    monkeypatch.setenv("KINEDYN_CACHE", str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    for path, size in ((root / "lu" / "a.o", 1_500_000), (root / "lu" / "b.o", 500_000),
                       (root / "groebner" / "x.json", 100),
                       (xdg / "kinedyn" / "numba" / "0123" / "k.nbc", 3_000_000)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0" * size)
    assert main(["cache"]) == 0
    text = capsys.readouterr().out
    assert f"kinedyn caches under {root}" in text
    lines = {line.split()[0]: line.split() for line in text.splitlines()[1:]}
    assert lines["lu"][1:4] == ["2.0", "MB", "2"] and "sparse LU" in " ".join(lines["lu"])
    assert lines["numba"][1:4] == ["3.0", "MB", "1"] and lines["groebner"][3] == "1"
    assert lines["total"][1] == "5.0"
    assert main(["cache", "--clear", "lu", "numba"]) == 0
    assert "removed lu: 2 files, 2.0 MB" in capsys.readouterr().out
    assert not (root / "lu").exists() and not (xdg / "kinedyn" / "numba").exists()
    assert (root / "groebner" / "x.json").is_file()
    assert main(["cache", "--clear", "lu"]) == 2
    assert "--clear: no cache 'lu' here; there are: groebner" in capsys.readouterr().err
    assert main(["cache", "--clear"]) == 0 and not (root / "groebner").exists()
    assert main(["cache"]) == 0 and "(empty)" in capsys.readouterr().out
