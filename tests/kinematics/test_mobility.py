"""Jacobian-rank mobility: agrees with Gruebler's count except where geometry makes
constraints redundant (the parallelogram)."""
import pytest

import kinedyn
from kinedyn.kinematics.mobility import jacobian_mobility, mechanism_mobility
from kinedyn.topology import Topology


@pytest.mark.parametrize("name", ["four-bar-driven", "3-rrr-driven", "stewart-paper",
                                  "gough-stewart-driven"])
def test_driven_models_have_no_freedom_left_and_agree_with_gruebler(name):
    system = kinedyn.models.get(name)
    mob = Topology(system.compile()).mobility
    assert jacobian_mobility(system.compile()).dof == mob.dof == 0
    assert mechanism_mobility(system).dof == mob.mobility


def test_parallelogram_is_over_constrained():
    system = kinedyn.models.get("parallelogram")
    mob = Topology(system.compile()).mobility
    assert (mob.mobility, mob.dof) == (0, -1)          # Gruebler: a structure
    own = mechanism_mobility(system)
    assert own.assembled and own.dof == 1              # the geometry: it moves
    assert own.n_c - own.rank == 1                     # one redundant equation
    assert jacobian_mobility(system.compile()).dof == 0


def test_unassemblable_guess_is_reported():
    system = kinedyn.models.get("four-bar")
    # crank + coupler + rocker = 0.8 m cannot span 2 m between the ground pivots
    result = mechanism_mobility(system, {"ground_length": 2.0})
    assert not result.assembled and result.n_q == 4


def test_scissor_platform_moves_like_the_stewart_platform():
    """Gruebler counts -6 (planar tongs loops in space); the Jacobian sees 6 dof, all driven."""
    system = kinedyn.models.get("scissor-platform-6x1")
    assert Topology(system.compile()).mobility.mobility == -6
    assert mechanism_mobility(system).dof == 6
    assert jacobian_mobility(system.compile()).dof == 0
