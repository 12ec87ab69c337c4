"""Model inputs and step-by-step runs (kinedyn.dynamics.stepper): a stepper equals simulate bit
for bit, an input acts as the load it stands for, closed forms with inputs switched between
steps, errors."""
import time

import numpy as np
import pytest

import kinedyn
from kinedyn.dynamics import Dynamics
from kinedyn.errors import ModelError, UnknownNameError

I_O = 1.0 / 3.0  # a uniform 1 m, 1 kg rod about its end


def pendulum(gravity=-9.81, torque="torque", value=0.0):
    """A uniform rod on a pin at its end; a joint torque ``torque`` (an expression) that may
    read the input ``torque`` (value ``value`` until set)."""
    s = kinedyn.System("pendulum", dim=2, gravity=[0, gravity])
    s.add_point("ground", "O", [0, 0])
    s.add_body("link", mass=1.0, inertia=1 / 12, com=[0.5, 0], points={"O": [0, 0]})
    s.add_joint("pin", "revolute", "ground", "link", point_a="O", point_b="O")
    s.add_input("torque", value, "motor torque, N m")
    s.add_force("motor", "joint", joint="pin", function=torque)
    return s


def pin(dyn, q, qd):
    """The pin joint's angle and rate at one state (the formulation's observables)."""
    obs = dyn.f.observables(q[None], qd[None], np.zeros((1, len(q))))
    return obs["joint.pin.angle"][0], obs["joint.pin.angle_d"][0]


@pytest.mark.parametrize("method, integrator", [("projection", "rk4"), ("partitioning", "rk4"),
                                                ("augmented", "semi-implicit-euler"),
                                                ("index3", "rk4")])
def test_steps_equal_simulate_bit_for_bit(method, integrator):
    """The four-bar (free, under gravity) stepped 1, 7 and 92 steps at a time equals one
    simulate call record for record, and a reset starts again from the initial state."""
    dyn = Dynamics(kinedyn.models.get("four-bar").compile(), method=method,
                   integrator=integrator)
    res = dyn.simulate(t_end=0.1, dt=1e-3)
    st = dyn.stepper(1e-3)
    assert st.t == 0.0 and np.array_equal(st.q, res.q[0]) and np.array_equal(st.qd, res.qd[0])
    for n, k in ((1, 1), (7, 8), (92, 100)):
        assert st.step(n) == pytest.approx(k * 1e-3, abs=1e-15)
        assert np.array_equal(st.q, res.q[k]) and np.array_equal(st.qd, res.qd[k]), (n, k)
    st.reset()
    st.step(5)
    assert st.steps == 5 and np.array_equal(st.q, res.q[5])
    everything = st.observe()  # a few channels (computed alone) equal those of all of them
    some = [n for n in everything if not n.endswith("_dd")][::5]  # (those are NaN)
    assert len(some) > 5 and st.observe(*some) == {n: everything[n] for n in some}
    timing = st.timing()
    assert timing["calls"] == 1 and timing["median_us"] > 0 and timing["dt_us"] == 1000.0
    again = dyn.simulate(t_end=0.1, dt=1e-3)  # a later run starts from the initial state too
    assert np.array_equal(again.q, res.q)
    with pytest.raises(ModelError, match="started again by a later simulate"):
        st.step()  # its state is gone: not silently continued from the other run's
    st.reset()
    st.step(5)
    assert np.array_equal(st.q, res.q[5])


def test_an_input_acts_as_the_value_written_in_the_model():
    """A constant input equals the same number written as the load, bit for bit; set on the
    compiled model, every analysis built on it reads it at its next evaluation."""
    m = pendulum().compile()
    assert m.input_names == ("torque",) and m.inputs == {"torque": 0.0}
    dyn = Dynamics(m, method="projection", integrator="rk4")
    m.set_inputs(torque=2.0)
    with_input = dyn.simulate(t_end=0.2, dt=1e-3)
    written = Dynamics(pendulum(torque="2.0").compile(), method="projection",
                       integrator="rk4").simulate(t_end=0.2, dt=1e-3)
    assert np.array_equal(with_input.q, written.q)
    by_default = Dynamics(pendulum(value=2.0).compile(), method="projection",
                          integrator="rk4").simulate(t_end=0.2, dt=1e-3)
    assert np.array_equal(by_default.q, written.q)
    m.set_inputs({"torque": 0.0})
    assert not np.array_equal(dyn.simulate(t_end=0.2, dt=1e-3).q, written.q)


def test_an_input_switched_between_steps_is_held_over_each_step():
    """Euler evaluates the loads at each step's start, so an input set from step k on equals a
    load 2 step(t - t_k + dt/2) written in the model, bit for bit."""
    dt, k = 1e-3, 37
    dyn = Dynamics(pendulum().compile(), method="projection", integrator="euler")
    st = dyn.stepper(dt)
    st.set_inputs(torque=0.0)
    st.step(k)
    st.set_inputs(torque=2.0)
    st.step(63)
    switched = pendulum(torque=f"2*step(t - {(k - 0.5) * dt})").compile()
    ref = Dynamics(switched, method="projection", integrator="euler").simulate(0.1, dt)
    assert np.array_equal(st.q, ref.q[-1]) and np.array_equal(st.qd, ref.qd[-1])


def test_torque_steps_give_the_closed_form_parabolas():
    """Without gravity a rod driven by a torque tau turns by tau t^2 / (2 I_O). Torque +tau
    for 0.3 s, then -tau: the angle follows the two parabolas (RK4 on the projection method:
    1e-9 rad), the rate tau t / I_O."""
    tau, dt = 0.6, 1e-3
    dyn = Dynamics(pendulum(gravity=0.0).compile(), method="projection", integrator="rk4")
    st = dyn.stepper(dt)
    st.set_inputs(torque=tau)
    theta, rate = [], []
    for k in range(500):
        if k == 300:
            st.set_inputs(torque=-tau)
        st.step()
        now = st.observe("joint.pin.angle", "joint.pin.angle_d")
        theta.append(now["joint.pin.angle"])
        rate.append(now["joint.pin.angle_d"])
    assert (theta[-1], rate[-1]) == pin(dyn, st.q, st.qd)
    with pytest.raises(UnknownNameError, match="unknown channel 'joint.pin.angel'"):
        st.observe("joint.pin.angel")
    assert np.isnan(st.observe()["joint.pin.angle_dd"])
    t, t1, a = dt * np.arange(1, 501), 0.3, tau / I_O
    first = t <= t1 + 1e-12
    assert np.allclose(theta, np.where(first, 0.5 * a * t ** 2, 0.5 * a * t1 ** 2
                                       + a * t1 * (t - t1) - 0.5 * a * (t - t1) ** 2),
                       atol=1e-9, rtol=0)
    assert np.allclose(rate, np.where(first, a * t, a * t1 - a * (t - t1)), atol=1e-9, rtol=0)
    assert st.t == pytest.approx(0.5, abs=1e-15)


def test_the_joint_coordinate_dynamics_read_inputs():
    """The relative formulation: the pendulum's angular acceleration changes by dtau / I_O."""
    from kinedyn.dynamics.relative import RelativeDynamics
    from kinedyn.formulations.relative import Relative
    m = pendulum().compile()
    dyn = RelativeDynamics(Relative(m))
    q, qd = dyn.q_initial, np.zeros(1)
    before = dyn.accelerations(q, qd)[0]
    m.set_inputs(torque=1.5)
    after = dyn.accelerations(q, qd)[0]
    assert after[0] - before[0] == pytest.approx(1.5 / I_O, rel=1e-12)


def test_a_realtime_stepper_keeps_to_the_wall_clock():
    dyn = Dynamics(pendulum().compile(), method="projection", integrator="rk4")
    st = dyn.stepper(2e-3, realtime=True)
    start = time.perf_counter()
    for _ in range(20):
        st.step()
    assert time.perf_counter() - start >= 0.04 - 1e-4
    assert 0 <= st.timing()["overruns"] <= 20


def test_inputs_in_model_files_round_trip(tmp_path):
    text = """
name: pendulum
dim: 2
gravity: [0, -9.81]
parameters: {arm: 0.5}
inputs:
- {name: torque, value: 0.25*arm, description: motor torque}
- {name: push}
ground: {points: {O: [0, 0]}}
bodies:
- {name: link, mass: 1, inertia: 1/12, com: [arm, 0], points: {O: [0, 0], E: [1, 0]}}
joints:
- {name: pin, type: revolute, body_a: ground, body_b: link, point_a: O, point_b: O}
forces:
- {name: motor, kind: joint, joint: pin, function: 2*torque + sin(t)}
- {name: tip, kind: point, body: link, point: E, force: [0, push]}
"""
    path = tmp_path / "pendulum.yaml"
    path.write_text(text)
    s = kinedyn.load(path)
    m = s.compile()
    assert m.inputs == {"torque": 0.125, "push": 0.0}
    m.set_inputs(push=3.0)
    t = 0.7
    values = m.functions.evaluate(t)
    assert values[0] == pytest.approx([0.25 + np.sin(t), np.cos(t), -np.sin(t)], rel=1e-15)
    assert np.array_equal(values[2], [3.0, 0.0, 0.0])
    kinedyn.save(s, tmp_path / "again.yaml")
    again = kinedyn.load(tmp_path / "again.yaml")
    assert [(u.name, u.value, u.description) for u in again.inputs] == [
        ("torque", "0.25*arm", "motor torque"), ("push", 0.0, None)]
    for bad, where in (("- {name: push}", "- {name: push, gain: 2}"),
                       ("- {name: push}", "- {name: push, description: 3}"),
                       ("- {name: push}", "- {value: 2}")):
        path.write_text(text.replace(*(bad, where)))
        with pytest.raises(ModelError, match=r"pendulum.yaml: inputs\[1\]"):
            kinedyn.load(path)
    path.write_text(text.replace("name: push}", "name: 2push}"))
    with pytest.raises(ModelError, match=r"inputs\[1\].name: input name '2push' is not a valid"):
        kinedyn.load(path).compile()


@pytest.mark.parametrize("change, message", [
    (lambda s: s.add_driver("turn", "joint", joint="pin", function="torque*t"),
     "a driver cannot read inputs (torque"),
    (lambda s: s.add_input("torque"), "input 'torque' has the name of another input"),
    (lambda s: s.add_parameter("torque", 1.0), "input 'torque' has the name of a parameter"),
    (lambda s: s.add_input("sin"), "input name 'sin' is not a valid identifier"),
    (lambda s: s.add_input("gain", "1/0"), "inputs[1].value"),
])
def test_bad_inputs_in_a_model(change, message):
    s = pendulum()
    change(s)
    with pytest.raises(ModelError, match=message.replace("(", r"\(").replace("[", r"\[")):
        s.compile()


def test_bad_input_values_and_stepper_settings():
    m = pendulum().compile()
    with pytest.raises(UnknownNameError, match="unknown input 'torq'; known: torque"):
        m.set_inputs(torq=1.0)
    for bad in (float("nan"), np.inf, "fast", True, None):
        with pytest.raises(ModelError, match="input 'torque' of 'pendulum' must be a finite"):
            m.set_inputs(torque=bad)
    assert m.inputs == {"torque": 0.0}  # nothing changed
    dyn = Dynamics(m, method="projection", integrator="rk4")
    for dt in (0.0, -1e-3, float("nan")):
        with pytest.raises(ModelError, match="dt must be a finite number above 0"):
            dyn.stepper(dt)
    st = dyn.stepper(1e-3)
    for n in (0, 1.5, -2):
        with pytest.raises(ModelError, match="n must be a finite whole number of at least 1"):
            st.step(n)
    with pytest.raises(ModelError, match="'reference' integrator is adaptive"):
        Dynamics(m, method="partitioning", integrator="reference").stepper(1e-3)


def test_a_load_that_turns_nan_is_named_with_its_time():
    dyn = Dynamics(pendulum(torque="sqrt(torque)", value=1.0).compile(), method="projection",
                   integrator="rk4")
    st = dyn.stepper(1e-3)
    st.step(3)
    st.set_inputs(torque=-1.0)
    with pytest.raises(ModelError, match=r"'sqrt\(torque\)' is not finite \(value nan.* at "
                                         r"t = 0.003 s with the input\(s\) torque = -1"):
        st.step()


def test_realtime_command_times_each_call(tmp_path, capsys):
    """``kinedyn realtime``: one step per call, the stepped states equal the whole run's."""
    import json
    from kinedyn.cli import main
    assert main(["realtime", "four-bar", "--dt", "2e-3", "--duration", "0.1", "--no-progress",
                 "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["steps"] == 50 and s["max_difference_from_whole_run"] == 0.0
    assert 0 < s["compiled_us"]["median"] <= s["call_us"]["p99"]
    assert s["headroom"] == pytest.approx(2000.0 / s["call_us"]["p99"])
    assert (tmp_path / "step_times.png").stat().st_size > 10_000
    out = capsys.readouterr().out
    assert "one per call" in out and "headroom" in out and "equal the whole run's to 0.0e+00" in out


def test_inputs_on_the_command_line(tmp_path, capsys):
    """``--input NAME=VALUE`` sets an input for the run (a model file with one); an unknown
    input or a value that is not a number is one line naming the option."""
    import json
    from kinedyn.cli import main
    s = pendulum(gravity=0.0)
    kinedyn.save(s, tmp_path / "pendulum.yaml")
    model = str(tmp_path / "pendulum.yaml")
    assert main(["simulate", model, "--input", "torque=0.6", "--t-end", "0.1", "--dt", "1e-3",
                 "--plot", "joint.pin.angle", "--no-progress", "--out", str(tmp_path / "a")]) == 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["inputs"] == {"torque": 0.6}
    angle = np.load(tmp_path / "a" / "results.npz")["joint.pin.angle"]
    assert angle[-1] == pytest.approx(0.5 * 0.6 / I_O * 0.1 ** 2, abs=1e-9)  # tau t^2/(2 I_O)
    capsys.readouterr()
    assert main(["simulate", model, "--input", "torq=1", "--t-end", "0.1", "--dt", "1e-3"]) == 2
    assert "--input: unknown input 'torq'; known: torque" in capsys.readouterr().err
    assert main(["realtime", model, "--input", "torque=fast"]) == 2
    assert "--input torque: 'fast' is not a number" in capsys.readouterr().err


def test_the_leg_control_example_extends_every_leg():
    """examples/stewart_leg_control.py: a PID loop through the six leg-force inputs of the
    Gough-Stewart platform (under gravity) extends every leg by 10 mm along a 0.3-s profile,
    to 0.1 mm at 0.6 s (2e-5 m here), while the projection method keeps the joints closed."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "examples" / "stewart_leg_control.py"
    spec = importlib.util.spec_from_file_location("stewart_leg_control", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    t, extension, st = example.run(extend=0.01, t_end=0.6)
    assert t[-1] == pytest.approx(0.6) and extension.shape == (600, 6)
    assert np.abs(extension[-1] - 0.01).max() < 1e-4
    assert np.abs(extension[:20]).max() < 2e-3  # it starts at rest, held
    from kinedyn.kinematics.assembly import constraint_values
    assert np.abs(constraint_values(st.dyn.f, st.q, st.t)).max() < 1e-10


def test_a_stepper_of_an_lapack_method_holds_one_blas_thread_until_closed():
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    before = blas_threads()
    with Dynamics(pendulum().compile(), method="index3").stepper(1e-3) as st:
        st.step(3)
        assert set(blas_threads()) <= {1}
    assert blas_threads() == before
    st.close()  # (again: nothing to give back)
    projection = Dynamics(pendulum().compile(), method="projection").stepper(1e-3)
    assert blas_threads() == before
    projection.close()
