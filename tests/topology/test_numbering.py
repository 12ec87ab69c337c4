"""Coordinate numberings (sparse-relative paper, section 3) and the --sparsity report."""
from __future__ import annotations

import numpy as np
import pytest

import kinedyn
from kinedyn.cli.info_sections.sparsity import patterns, show_sparsity
from kinedyn.errors import UnknownNameError
from kinedyn.topology.numbering import bandwidth, coupling, number_coordinates


def test_branch_numbering_is_depth_first():
    # root 0 with two chains 0-1-3 and 0-2-4 (links in base-to-tip order)
    parent = np.array([-1, 0, 0, 1, 2])
    coord = number_coordinates(parent, "branch")
    order = np.argsort(coord)
    assert list(order) == [0, 1, 3, 2, 4]
    assert list(number_coordinates(parent, "tree")) == [0, 1, 2, 3, 4]
    assert sorted(number_coordinates(parent, "rcm")) == [0, 1, 2, 3, 4]
    with pytest.raises(UnknownNameError):
        number_coordinates(parent, "nope")


@pytest.mark.parametrize("name", ["vehicle", "quadruped"])
def test_rcm_minimises_bandwidth(name):
    pats = {p["numbering"]: p for p in patterns(kinedyn.models.get(name).compile())}
    assert pats["rcm"]["bandwidth"] <= min(p["bandwidth"] for p in pats.values())
    assert pats["branch"]["fill"] == 0          # DBBD order of the branch numbering
    for p in pats.values():
        assert p["a"].sum() == pats["branch"]["a"].sum()   # same non-zeros, moved


def test_coupling_is_ancestor_relation():
    C = coupling(np.array([-1, 0, 1, 0]))
    assert C[2, 0] and C[2, 1] and not C[2, 3] and C[3, 0]
    assert bandwidth(C) == 3


def test_show_sparsity_writes_picture(tmp_path):
    text = show_sparsity(kinedyn.models.get("four-bar").compile(),
                         tmp_path / "four-bar-sparsity.png")
    assert "numbering branch" in text and "x x" in text
    assert (tmp_path / "four-bar-sparsity.png").stat().st_size > 1000


def test_info_draws_every_picture_in_the_chosen_format(tmp_path, capsys):
    """``--format svg`` applies to the graph, the structural groups and the sparsity pictures."""
    from kinedyn.cli import main
    assert main(["info", "four-bar-driven", "--groups", "--sparsity", "--format", "svg",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for kind in ("graph", "groups", "sparsity"):
        path = tmp_path / f"four-bar-driven-{kind}.svg"
        assert str(path) in out and path.read_text().lstrip().startswith("<?xml")
    assert not list(tmp_path.glob("*.png"))

