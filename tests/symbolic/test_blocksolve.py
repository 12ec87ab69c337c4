"""The generated velocity/acceleration level (kinedyn.symbolic.blocksolve, shared sines and
cosines): the Stephenson-III six-bar driven by theta1, whose Phi_d is block lower-triangular
(two 2 x 2 blocks, the second coupled to the first's unknowns)."""
import numpy as np
import pytest

import kinedyn
from kinedyn.models.sixbar import STEPHENSON3_CUT
from kinedyn.symbolic.analysis import TriangularKinematics

from .dep_solve import dep_solve_error, jacobian


@pytest.fixture(scope="module")
def six_bar():
    return TriangularKinematics(kinedyn.models.get("stephenson3-theta1").compile(),
                                joint_angles=True, cut=STEPHENSON3_CUT, time_limit=10)


def test_generated_block_solve_equals_a_dense_solve(six_bar):
    """factor_d / solve_d (adjugate per block, forward substitution over the couplings) equal
    NumPy's solve of the whole Phi_d for several right-hand sides, at states along a run."""
    kin = six_bar
    mod, system = kin.generated.module, kin.system
    assert "lu_factor_block(LU" not in open(mod.__file__).read()    # not the LU loops
    (rows0, cols0), (rows1, cols1) = kin.plan.lu
    assert len(cols0) == len(cols1) == 2      # the second block reads the first's unknowns:
    assert np.any(jacobian(mod, system, system.q0)[np.ix_(list(rows1), list(cols0))] != 0)
    res = kin.simulate(1.0, 1e-2)
    states = [[res.channel(f"coordinate.{c.name}")[k] for c in system.coordinates]
              for k in (0, 37, 81)]
    assert dep_solve_error(system, mod, np.array(states), res.time[[0, 37, 81]]) <= 1e-12


def test_singular_block_is_reported(six_bar):
    """A diagonal block with a zero column: factor_d says False (the run then names the step)."""
    mod, system = six_bar.generated.module, six_bar.system
    J = jacobian(mod, system, system.q0)
    J[:, six_bar.plan.lu[1][1][0]] = 0.0
    assert not mod.factor_d(J, mod.dep_workspace())


def test_velocities_and_accelerations_are_derivatives_of_the_positions(six_bar):
    """The run's qd, qdd (shared sines and cosines, generated block solve) equal central
    differences of its positions and velocities; the closed forms stay exact."""
    h = 1e-4
    res = six_bar.simulate(1.0, h)
    assert res.channel("residual.position").max() <= 1e-12
    for c in six_bar.system.coordinates:
        q, qd, qdd = (res.channel(f"coordinate.{c.name}{s}") for s in ("", "_d", "_dd"))
        fd_v = (q[2:] - q[:-2]) / (2 * h)
        fd_a = (qd[2:] - qd[:-2]) / (2 * h)
        assert np.abs(fd_v - qd[1:-1]).max() <= 1e-6 * max(1.0, np.abs(qd).max()), c.name
        assert np.abs(fd_a - qdd[1:-1]).max() <= 1e-5 * max(1.0, np.abs(qdd).max()), c.name


def test_chained_closed_forms_read_the_earlier_blocks_sines_and_cosines(six_bar):
    """The second block's closed forms (L_beta's beta1, beta4) take the sines and cosines of
    the first block's angles (L_theta's beta2, beta3) from ``sc``, where the first
    block's closed forms wrote them (the normalised (s, c) pair of each atan2), instead of
    taking sin and cos of the angles just computed: the chain of dependent operations loses an
    atan2 followed by a sine per angle. The run stays exact (residual above)."""
    mod, plan = six_bar.generated.module, six_bar.plan
    source = open(mod.__file__).read()
    second = source.split("def tri_1(")[1].split("\ndef ")[0]
    first = [i for i in plan.blocks[0].unknowns if six_bar.system.coordinates[i].angle]
    assert first
    for i in first:
        assert f"sc[{2 * i}]" in second and f"sc[{2 * i + 1}]" in second
        assert f"q[{i}]" not in second
    res = six_bar.simulate(0.5, 1e-3)
    assert res.channel("residual.position").max() <= 1e-12
