"""Settings of a run checked before it starts (times, Newton's tolerance and iterations,
threads, Baumgarte factors), and drivers that contradict each other found after it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from kinedyn import ModelError
from kinedyn.errors import AssemblyError, check_iteration_settings, run_steps


@pytest.mark.parametrize("t0, t_end, dt, message", [
    (0.0, float("inf"), 0.01, "t_end must be a finite number, got inf"),
    (float("nan"), 1.0, 0.01, "t0 must be a finite number, got nan"),
    (0.0, 1.0, float("nan"), "dt must be a finite number, got nan"),
    (0.0, 1.0, -0.01, "need dt > 0 and t_end > t0"),
    (1.0, 1.0, 0.01, "need dt > 0 and t_end > t0"),
    (0.0, 1.0, 3.0, "dt (3) is longer than the simulated interval"),
    (0.0, 1e300, 1e-300, "gives inf steps"),
    (0.0, 1.0, 1e-12, "gives 1e+12 steps (limit 1e+09)"),
])
def test_bad_run_times_are_named(t0, t_end, dt, message):
    with pytest.raises(ModelError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("+", r"\+")):
        run_steps(t0, t_end, dt)


def test_run_steps_counts_and_warns_when_dt_does_not_divide_the_interval():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_steps(0.0, 1.0, 0.01) == 100          # rounding noise is not a remainder
        assert run_steps(np.int64(1), np.float64(3.5), 0.25) == 10
    with pytest.warns(UserWarning, match=r"takes 2 whole steps and ends at t = 1.2 s"):
        assert run_steps(0.0, 1.0, 0.6) == 2


@pytest.mark.parametrize("tol, max_iter, message", [
    (float("nan"), 10, "tol must be a finite number above 0, got nan"),
    (-1.0, 10, "tol must be a finite number above 0, got -1.0"),
    (1e-10, 0, "max_iter must be a finite whole number of at least 1, got 0"),
    (1e-10, 2.5, "max_iter must be a finite whole number of at least 1, got 2.5"),
])
def test_bad_newton_settings_are_named(tol, max_iter, message):
    with pytest.raises(ModelError, match=message):
        check_iteration_settings(tol, max_iter)


def test_analyses_refuse_bad_settings_before_running():
    from kinedyn.dynamics import Dynamics
    from kinedyn.kinematics import Kinematics
    from kinedyn.models import get
    driven = get("four-bar-driven").compile()
    with pytest.raises(ModelError, match="tol must be"):
        Kinematics(driven, tol=float("nan"))
    with pytest.raises(ModelError, match="max_iter must be"):
        Kinematics(driven, max_iter=0)
    with pytest.raises(ModelError, match="at most 64 outer threads"):
        Kinematics(driven, strategy="groups", threads=100)
    with pytest.raises(ModelError, match="t0 must be a finite number, got nan"):
        Kinematics(driven, t0=float("nan"))
    kin = Kinematics(driven)
    with pytest.raises(ModelError, match="t_end must be a finite number"):
        kin.simulate(float("inf"), 0.01)
    with pytest.raises(ModelError, match="t must be a finite number, got nan"):
        kin.solve(float("nan"))
    with pytest.raises(ModelError,
                       match=r"q_guess needs 4 finite numbers \(crank.B=coupler.A.x, "):
        kin.solve(0.1, [0.0, 0.0])
    with pytest.raises(ModelError, match=r"q_guess needs 4 .* with non-finite entries"):
        kin.solve(0.1, [0.0, float("nan"), 0.0, 0.0])  # (was a failed Newton iteration)
    with pytest.raises(ModelError, match=r"q_guess needs 4 finite numbers .* got 'abc'"):
        kin.solve(0.1, "abc")  # (was a bare ValueError from NumPy)
    with pytest.raises(ModelError, match=r"initial guess of the coordinates needs 4 finite "
                                         r"numbers .* got shape \(2,\)"):
        Kinematics(driven, q_guess=[0.0, 0.0])
    with pytest.raises(ModelError, match="with non-finite entries"):
        Kinematics(driven, q_guess=[float("nan")] * 4)
    free = get("four-bar").compile()
    with pytest.raises(ModelError,
                       match="baumgarte alpha must be a finite number of at least 0, got nan"):
        Dynamics(free, baumgarte=(float("nan"), 1.0))
    with pytest.raises(ModelError, match="max_iter must be"):
        Dynamics(free, max_iter=0)
    with pytest.raises(ModelError, match=r"qd0 needs 4 finite numbers .* got shape \(2,\)"):
        Dynamics(free, qd0=[1.0, 2.0])
    with pytest.raises(ModelError, match="record_every must be a finite whole number of at "
                                         "least 1, got 0"):
        Dynamics(free).simulate(0.1, 0.01, record_every=0)
    with pytest.raises(ModelError, match=r"penalty: unknown setting\(s\) 'Rho'"):
        Dynamics(free, method="penalty", penalty={"Rho": 10.0})
    with pytest.raises(ModelError, match="penalty rho must be a finite number above 0, got -1"):
        Dynamics(free, method="penalty", penalty={"rho": -1})
    with pytest.raises(ModelError, match="penalty iterations must be a finite whole number"):
        Dynamics(free, method="penalty", penalty={"iterations": 2.7})
    with pytest.raises(ModelError, match="influence_limit must be a finite number above 1"):
        Dynamics(free, method="partitioning", influence_limit=float("nan"))
    with pytest.raises(ModelError, match="outer threads must be a finite whole number"):
        Kinematics(driven, strategy="groups", threads=2.7)
    with pytest.raises(ModelError, match=r"threads is OUTER or \(OUTER, INNER\)"):
        Kinematics(driven, strategy="groups", threads=(2, 1, 3))
    with pytest.warns(UserWarning, match=r"record_every = 3 does not divide the run's 5 steps: "
                                         r"the last record is at t = 0.03 s"):
        Dynamics(free).simulate(0.05, 0.01, record_every=3)


@pytest.mark.parametrize("method, options, named", [
    ("hdca", {"baumgarte": (1.0, 2.0)}, "baumgarte=(1.0, 2.0) (read by augmented, projection, "
                                        "partitioning)"),
    ("hdca", {"solver": "sparse"}, "solver='sparse'"),
    ("projection", {"penalty": {"rho": 10.0}}, "penalty="),
    ("augmented", {"hht_alpha": -0.5}, "hht_alpha=-0.5 (read by index3)"),
    ("index3", {"integrator": "bogus"}, "integrator='bogus'"),
    ("index3", {"solver": "dense"}, "solver='dense'"),
    ("embedded", {"influence_limit": 3.0}, "influence_limit=3.0 (read by partitioning)"),
])
def test_an_option_the_method_does_not_read_is_an_error(method, options, named):
    """A run would silently go without it (Baumgarte factors on HDCA, a solver for index3)."""
    from kinedyn.dynamics import Dynamics
    from kinedyn.models import get
    with pytest.raises(ModelError, match=f"method '{method}' does not use "
                       + named.replace("(", r"\(").replace(")", r"\)")):
        Dynamics(get("four-bar").compile(), method=method, **options)


def test_the_options_a_method_reads_and_its_defaults_are_accepted():
    from kinedyn.dynamics import Dynamics
    from kinedyn.models import get
    four_bar = get("four-bar").compile()
    run = Dynamics(four_bar, method="index3", integrator="hht", baumgarte=[0, 0],
                   hht_alpha=-0.2).simulate(0.01, 0.001)
    assert run.summary["solver"] == "dense LU (HHT Newton iteration)"  # its own, not 'schur'
    assert Dynamics(four_bar, method="partitioning", influence_limit=2.0, solver="dense",
                    baumgarte=(1.0, 1.0)).simulate(0.01, 0.001).summary["solver"] == "dense"


@pytest.mark.parametrize("record_every", [0, 0.5, 2.7, -1, "3"])
def test_every_run_refuses_a_record_interval_that_is_not_a_whole_number(record_every):
    """HDCA and joint-coordinate runs check ``record_every`` as the natural-coordinate runs do
    (they used to take ``max(1, int(record_every))``: 2.7 recorded every 2nd step, "3" every
    3rd, -1 every step)."""
    from kinedyn.dynamics.hdca import HDCA
    from kinedyn.dynamics.relative import RelativeDynamics
    from kinedyn.formulations.relative import Relative
    from kinedyn.models import get
    pendulum = get("double-pendulum").compile()
    for run in (HDCA(pendulum), RelativeDynamics(Relative(pendulum))):
        with pytest.raises(ModelError, match="record_every must be a finite whole number of at "
                                             f"least 1, got {record_every!r}"):
            run.simulate(0.1, 0.01, record_every=record_every)
        with pytest.warns(UserWarning, match="record_every = 3 does not divide the run's 10 "
                                             "steps: the last record is at t = 0.09 s"):
            assert run.simulate(0.1, 0.01, record_every=3).time[-1] == pytest.approx(0.09)


def test_drivers_that_contradict_each_other_later_are_an_error():
    """Two drivers of one joint agree at t = 0 (so the second is redundant there and ignored)
    and disagree after: the run would satisfy only the first. The error names the ignored
    one and the first step where they part; a driver that agrees with the first at all times
    passes."""
    from kinedyn.kinematics import Kinematics
    from kinedyn.models.planar import four_bar
    for second, fails in (("crank_angle + 2*t", True), ("crank_angle + crank_speed*t", False)):
        m = four_bar(speed=1.0)
        m.add_driver("second", "joint", joint="A", function=second)
        with pytest.warns(UserWarning, match="1 redundant constraint"):
            kin = Kinematics(m.compile())
        if not fails:
            res = kin.simulate(0.5, 0.01)
            assert res.residuals[:, 0].max() < 1e-9
            continue
        with pytest.raises(AssemblyError, match="contradict the others from here on") as caught:
            kin.simulate(0.5, 0.01)
        assert caught.value.constraints[0].startswith("driver second")
        assert caught.value.time == pytest.approx(0.01)  # the first step: they part at once


def test_switches_are_true_or_false_and_counts_are_ints():
    """A switch given as "no" was read as true (fixed iterations ran when the user said no);
    a float where a count is meant is named as such."""
    import kinedyn
    from kinedyn.dynamics import Dynamics
    from kinedyn.dynamics.hdca import HDCA
    from kinedyn.kinematics import Kinematics
    driven = kinedyn.models.get("four-bar-driven").compile()
    with pytest.raises(ModelError, match="fixed_iterations is True or False, got 'no'"):
        Kinematics(driven, fixed_iterations="no")
    with pytest.raises(ModelError, match="retune is True or False, got 1"):
        Kinematics(driven, retune=1)
    with pytest.raises(ModelError, match="extrapolate is True or False, got None"):
        Kinematics(driven).simulate(0.01, 1e-3, extrapolate=None)
    with pytest.raises(ModelError, match="parallel is True or False, got 'yes'"):
        HDCA(kinedyn.models.get("double-pendulum").compile(), parallel="yes")
    with pytest.raises(ModelError, match=r"outer threads must be a finite whole number of at "
                                         r"least 1, got 1.0 \(a float: give an int\)"):
        Kinematics(driven, strategy="groups", threads=(1.0, 1.5))
    with pytest.raises(ModelError, match="symbolic repartition is True or False, got 'no'"):
        Dynamics(kinedyn.models.get("four-bar").compile(), method="embedded",
                 symbolic={"repartition": "no"})
    assert Kinematics(driven, fixed_iterations=np.bool_(False)).fixed is False
