"""Gruebler-Kutzbach mobility: known degrees of freedom, idle spins, and the Jacobian-rank check."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import null_space

import kinedyn
from kinedyn.formulations.natural import Natural
from kinedyn.kinematics.analysis import assemble
from kinedyn.models import MODELS
from kinedyn.topology import Topology

# mechanism mobility (without idle spins) and driver equations of every library model
KNOWN = {"double-pendulum": (2, 0), "four-bar": (1, 0), "four-bar-driven": (1, 1),
         "four-bar-hdca": (1, 0),
         "slider-crank": (1, 0), "slider-crank-driven": (1, 1), "3-rrr": (3, 0),
         "3-rrr-driven": (3, 3), "gough-stewart": (6, 0), "gough-stewart-driven": (6, 6),
         "stewart-paper": (6, 6), "stewart-paper-free": (6, 0),
         # Gruebler's count, not the true mobility 1: the third crank's loop is redundant
         # (tests/kinematics/test_kinematics.py::test_parallelogram_*)
         "parallelogram": (0, 1), "quadruped": (18, 0), "vehicle": (17, 1),
         # Gruebler's count again: each planar scissor stage has redundant equations in 3-D;
         # the Jacobian rank gives the true 6 (tests/kinematics/test_mobility.py)
         "scissor-platform-6x1": (-6, 6),
         "stephenson3": (1, 0), "stephenson3-beta1": (1, 1), "stephenson3-theta1": (1, 1),
         "landing-gear": (1, 0), "landing-gear-driven": (1, 1),
         "five-link": (1, 0), "double-wishbone-driven": (2, 2)}


def test_every_library_model_is_listed():
    assert set(KNOWN) == set(MODELS)


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_library_mobility_equals_known_dof(name):
    mob = Topology(MODELS[name].build().compile()).mobility
    effective, drivers = KNOWN[name]
    assert mob.effective == effective
    assert mob.idle == ()           # no library leg can spin idly (U or R joints hold them)
    assert mob.drivers == drivers
    assert mob.dof == effective - drivers


def sps() -> kinedyn.System:
    """The thesis's Gough-Stewart with spherical instead of universal base joints (6-SPS)."""
    s = kinedyn.models.gough_stewart()
    for j in s.joints:
        if j.type == "universal":
            j.type, j.axis_a, j.axis_b = "spherical", None, None
    return s


def ss_rods() -> kinedyn.System:
    """The Group-Equations Stewart platform with spherical joints at both stick ends (6-RSS)."""
    s = kinedyn.models.stewart_paper(driven=False)
    for j in s.joints:
        if j.type == "universal":
            j.type, j.axis_a, j.axis_b = "spherical", None, None
    return s


def test_sps_legs_spin_idly():
    mob = Topology(sps().compile()).mobility
    assert mob.mobility == 12 and mob.effective == 6
    assert mob.idle == tuple(f"lower{i}+upper{i} spin" for i in range(1, 7))
    assert "6 + 6 idle" in mob.describe()


def test_ss_sticks_spin_idly_but_not_when_a_distance_driver_holds_them():
    s = ss_rods()
    mob = Topology(s.compile()).mobility
    assert mob.idle == tuple(f"stick{i} spin" for i in range(1, 7)) and mob.effective == 6
    s.bodies[2].points["D"] = [0.01, 0, 0.1]          # stick1, off its axis
    s.add_driver("pin", "distance", body_a="ground", point_a="A1", body_b="stick1",
                 point_b="D", function="0.2")
    assert "stick1 spin" not in Topology(s.compile()).mobility.idle


def _jacobian_mobility(system):
    """n_q - rank(Phi_q) at the assembled initial configuration, and the null space."""
    f = Natural(system.compile())
    q = assemble(f, f.q0, 0.0)
    J = f.reference_phi_q(q, 0.0)
    N = null_space(J, rcond=1e-10)
    return f, N


@pytest.mark.parametrize("name", ["double-pendulum", "four-bar", "slider-crank", "3-rrr",
                                  "3-rrr-driven", "gough-stewart", "stewart-paper",
                                  "stewart-paper-free"])
def test_gruebler_agrees_with_jacobian_rank(name):
    """Gruebler's count equals the dimension of the instantaneous motions (null space of
    Phi_q) in natural coordinates: the mechanisms are not over-constrained or singular."""
    system = MODELS[name].build()
    _, N = _jacobian_mobility(system)
    assert N.shape[1] == Topology(system.compile()).mobility.dof


def test_idle_spins_move_no_other_body():
    """6-SPS: 12 instantaneous motions, but only 6 of them move the platform."""
    system = sps()
    f, N = _jacobian_mobility(system)
    assert N.shape[1] == 12
    platform = f.body_coordinates()["platform"]
    assert np.linalg.matrix_rank(N[platform], tol=1e-8) == 6
    # the motions that leave the platform still are as many as the idle spins Gruebler reports
    still = null_space(N[platform], rcond=1e-8)
    assert still.shape[1] == len(Topology(system.compile()).mobility.idle) == 6
