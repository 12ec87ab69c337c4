"""Functions of time undefined at some times (a zero divisor, NaN from sqrt of a negative
number): every kinematic and dynamic run, and the set-up at t0, stops with a ModelError that
names the function and the first time, not with the symptom (docs/model-format.md)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from kinedyn import ModelError


def test_a_function_of_time_dividing_by_zero_is_named_with_its_time():
    """Only at t = 0.25 (the program is built, and the runs go, up to there): the kinematic
    and the dynamic runs (explicit, HHT, SciPy's reference, the relative formulation's) stop
    with a ModelError naming the function and the time, not a bare ZeroDivisionError from
    compiled code."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.dynamics.relative import RelativeDynamics
    from kinedyn.formulations.relative import Relative
    from kinedyn.kinematics import Kinematics
    from kinedyn.models.planar import four_bar
    driven = four_bar()
    driven.add_driver("crank_drive", "joint", joint="A",
                      function="crank_angle + 0.01*t/(t - 0.25)")
    kin = Kinematics(driven.compile())
    assert np.isfinite(kin.simulate(0.21875, 0.03125).q).all()  # before it: fine
    with pytest.raises(ModelError, match=r"'crank_angle \+ 0.01\*t/\(t - 0.25\)' divides by "
                                         r"zero at t = 0.25 s"):
        kin.simulate(0.5, 0.03125)
    pushed = four_bar()
    # bounded (sinc): the adaptive reference integrator reaches t = 0.25, its segment's end
    push = "0.1*sin(t - 0.25)/(t - 0.25)"
    pushed.add_force("push", "point", body="coupler", point="B", force=["0", push])
    named = re.escape(f"'{push}' divides by zero at t = 0.25 s")
    for options in ({}, {"method": "index3"},
                    {"method": "partitioning", "integrator": "reference"}):
        with pytest.raises(ModelError, match=named):
            Dynamics(pushed.compile(), **options).simulate(0.5, 0.03125)
    relative = RelativeDynamics(Relative(pushed.compile()), integrator="rk4")
    with pytest.raises(ModelError, match=named):
        relative.simulate(0.5, 0.03125)


def test_a_function_of_time_dividing_by_zero_at_the_start_is_named():
    """At t0 the set-up itself evaluates the functions (assembly, consistent velocities, the
    forces of the first build; the formulations evaluate all functions at once): a ModelError
    there too, in the constructors."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.dynamics.relative import RelativeDynamics
    from kinedyn.formulations.relative import Relative
    from kinedyn.models.planar import four_bar
    pushed = four_bar()
    pushed.add_force("push", "point", body="coupler", point="B", force=["0", "0.1/t"])
    driven = four_bar()
    driven.add_driver("crank_drive", "joint", joint="A", function="crank_angle + sin(t)/t")
    for model, text in ((pushed, "0.1/t"), (driven, "crank_angle + sin(t)/t")):
        named = re.escape(f"'{text}' divides by zero at t = 0 s")
        for method in ("augmented", "index3"):
            with pytest.raises(ModelError, match=named):
                Dynamics(model.compile(), method=method)
        with pytest.raises(ModelError, match=named):
            RelativeDynamics(Relative(model.compile()))


def test_a_function_of_time_that_is_not_finite_is_named_with_its_time():
    """sqrt of a negative number is NaN in compiled code, with no error: the run that meets it
    fails (Newton, a singular matrix, SciPy's QR of a re-partitioning, a state turned NaN) and
    the error names the function and the time instead of the symptom."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.kinematics import Kinematics
    from kinedyn.models.planar import four_bar
    at_start = four_bar()
    at_start.add_driver("crank_drive", "joint", joint="A", function="crank_angle + sqrt(t - 0.5)")
    with pytest.raises(ModelError, match=re.escape("'crank_angle + sqrt(t - 0.5)' is not finite "
                                                   "(value nan, rate nan, second rate nan) at "
                                                   "t = 0 s")):
        Kinematics(at_start.compile())
    later = four_bar()
    later.add_driver("crank_drive", "joint", joint="A", function="crank_angle + sqrt(0.505 - t)")
    with pytest.raises(ModelError, match=re.escape("'crank_angle + sqrt(0.505 - t)' is not "
                                                   "finite") + ".* at t = 0.51 s"):
        Kinematics(later.compile()).simulate(1.0, 0.01)
    pushed = four_bar()
    pushed.add_force("push", "point", body="crank", point="B", force=["sqrt(0.052 - t)", "0"])
    named = re.escape("'sqrt(0.052 - t)' is not finite") + r".* at t = (\S+) s"
    # the fixed steps' first stage past 0.052 is RK4's half step; SciPy's is its own
    for options, first in (({"method": "augmented"}, 0.055), ({"method": "partitioning"}, 0.055),
                           ({"method": "index3"}, 0.055),
                           ({"method": "partitioning", "integrator": "reference"}, None)):
        with pytest.raises(ModelError, match=named) as caught:
            Dynamics(pushed.compile(), **options).simulate(0.1, 0.01)
        t = float(re.search(named, str(caught.value)).group(1))
        assert t == first if first is not None else 0.052 < t <= 0.06
    # HHT at 1 ms: sqrt of a tiny negative number, no zero divisor: the NaN reaches compiled
    # LAPACK in the velocity projection, which raises LinAlgError
    with pytest.raises(ModelError, match=re.escape("'sqrt(0.052 - t)' is not finite")):
        Dynamics(pushed.compile(), method="index3").simulate(0.1, 0.001)


def test_the_embedded_method_names_an_undefined_function_too():
    """The generated symbolic kernels divide as IEEE does (0/0 is NaN, no error) and report a
    failed step at its end: the functions are checked over that step and the one before."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.models.planar import four_bar
    pushed = four_bar()
    push = "0.1*sin(t - 0.05)/(t - 0.05)"
    pushed.add_force("push", "point", body="crank", point="B", force=[push, "0"])
    with pytest.raises(ModelError, match=re.escape(f"'{push}' divides by zero at t = 0.05 s")):
        Dynamics(pushed.compile(), method="embedded").simulate(0.1, 0.01)
