"""Triangular plans of library models: thesis equations, residuals, Newton and natural-coordinate
kinematics on the selected branch along whole trajectories."""
import numpy as np
import pytest
import sympy as sp

from kinedyn.symbolic.triangular import unclamp as _unclamp


def unclamp(e):
    """The square roots' argument without the max(d, 0) guard."""
    return _unclamp(e)

import kinedyn
from kinedyn.kinematics import Kinematics
from kinedyn.symbolic.equations import T, planar_coordinates
from kinedyn.symbolic.triangular import make_plan


@pytest.fixture(scope="module")
def slider():
    eqs = planar_coordinates(kinedyn.models.get("slider-crank-driven").compile())
    return eqs, make_plan(eqs, time_limit=30, track=False)


def test_slider_crank_plan_is_thesis_hand_solution(slider):
    """(3.57) with the rod angle r = beta - pi/2 (c_r = s_beta, s_r = -c_beta):
    c_beta = l1/l2 s_theta, s_beta = +-1/l2 sqrt(l1^2 c_theta^2 - l1^2 + l2^2), s = l1 c + l2 s_beta."""
    eqs, plan = slider
    assert plan.fully_triangular and len(plan.blocks) == 2
    rod, slide = plan.blocks
    st, ct = sp.Symbol("s_crank_angle", real=True), sp.Symbol("c_crank_angle", real=True)
    s_r, c_r = rod.poly.trig[eqs.coordinates[eqs.index("rod.angle")].symbol]
    val = {s.var: s for s in rod.steps}
    assert sp.simplify(val[s_r].expr + sp.Rational(3, 4) * st) == 0          # -c_beta
    hand = sp.sqrt(sp.Rational(9, 100) * ct**2 - sp.Rational(9, 100) + sp.Rational(4, 25)) / sp.Rational(2, 5)
    got = unclamp(val[c_r].expr).subs(st**2, 1 - ct**2)
    assert sp.simplify(got**2 - hand**2) == 0 and val[c_r].degree == 2
    # plain ints: the plan's report prints them on every simulate() (a SymPy Integer's str
    # cost 8 us each, half of a short Gough-Stewart call)
    assert all(type(s.degree) is int for b in plan.blocks for s in b.steps)
    assert "step degrees 2" in plan.report()[0]
    assert val[c_r].branch == 1   # the model's piston is right of the crank: s_beta > 0
    (step,) = slide.steps
    assert sp.simplify(step.expr - (sp.Rational(3, 10) * ct + sp.Rational(2, 5) * c_r)) == 0


def _trajectory(eqs, plan, times):
    """Triangular solution and warm-started Newton along the driven trajectory."""
    q_tri, q_nr = [], []
    q = eqs.q0.copy()
    for t in times:
        for i, f in eqs.inputs.items():
            q[i] = float(f.subs(T, t))
        q_tri.append(plan.solve(q, t))
        q = eqs.solve_newton(q, t)[0]
        q_nr.append(q.copy())
    return np.array(q_tri), np.array(q_nr)


@pytest.mark.parametrize("name, sine_first", [("slider-crank-driven", ()),
                                              ("four-bar-driven", ("rocker.angle",))])
def test_triangular_equals_newton_and_natural_kinematics(name, sine_first):
    model = kinedyn.models.get(name).compile()
    eqs = planar_coordinates(model)
    plan = make_plan(eqs, time_limit=60, sine_first=sine_first, track=False)
    assert plan.fully_triangular, plan.report()
    times = np.linspace(0, 1, 41)  # includes crank angles pi/2 + k pi/2 exactly
    q_tri, q_nr = _trajectory(eqs, plan, times)
    for q in q_tri:
        assert np.abs(eqs.residual(q)).max() <= 1e-12
    wrap = lambda a: (a + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
    diff = q_tri - q_nr
    ang = [i for i, c in enumerate(eqs.coordinates) if c.angle]
    diff[:, ang] = wrap(diff[:, ang])
    assert np.abs(diff).max() <= 1e-10   # same branch all along, no jump
    res = Kinematics(model, tol=1e-12).simulate(1.0, 0.025)
    for i, c in enumerate(eqs.coordinates):
        body, comp = c.name.split(".")
        if comp == "angle":
            nat = res.channel(f"body.{body}.angle")
            assert np.abs(wrap(q_tri[:, i] - nat)).max() <= 1e-8, c.name


def test_3rrr_mixed_coordinates_one_block_per_leg():
    """Section 4.2.4: end-effector pose independent -> three independent per-leg systems."""
    eqs = planar_coordinates(kinedyn.models.get("3-rrr").compile(), absolute=["platform"])
    assert [eqs.coordinates[i].name for i in eqs.independent] == ["platform.angle", "platform.x",
                                                                 "platform.y"]
    plan = make_plan(eqs, time_limit=60)
    assert plan.fully_triangular and [len(b.unknowns) for b in plan.blocks] == [2, 2, 2]
    rng = np.random.default_rng(1)
    for _ in range(10):
        q = eqs.q0.copy()
        q[list(eqs.independent)] += rng.uniform(-0.03, 0.03, 3)
        sol = plan.solve(q)
        assert np.abs(eqs.residual(sol)).max() <= 1e-12
        nr = eqs.solve_newton(np.where(np.isin(np.arange(eqs.n_q), eqs.independent), q, eqs.q0))[0]
        assert np.allclose(sol, nr, atol=1e-10)


def test_block_triangular_fallback_when_basis_times_out(tmp_path, monkeypatch):
    """3-RRR in joint coordinates with the motor angles independent: the two coupled loops'
    basis does not finish within the limit, so the plan iterates on that block only (Newton;
    tearing off here: the six-bar tests cover it, and its search on this block's sub-blocks
    took 20 s of fresh bases)."""
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    eqs = planar_coordinates(kinedyn.models.get("3-rrr-driven").compile())
    plan = make_plan(eqs, time_limit=0.5, tear=False)
    assert "newton" in [b.kind for b in plan.blocks]
    text = "\n".join(plan.report())
    assert "did not finish in 0.5 s" in text and "fall-back: Newton" in text
    q = eqs.q0.copy()
    q[list(eqs.dependent)] += 0.01
    sol = plan.solve(q)
    assert np.abs(eqs.residual(sol)).max() <= 1e-12


def test_other_branch_is_the_other_assembly_mode(slider):
    """Flipping the square-root sign gives the mirrored piston (s_beta -> -s_beta)."""
    eqs, plan = slider
    rod = plan.blocks[0]
    step = next(s for s in rod.steps if s.degree == 2)
    q = eqs.q0.copy()
    a = plan.solve(q)
    step.branch = -step.branch
    rod._fn = None
    try:
        b = plan.solve(q)
    finally:
        step.branch = -step.branch
        rod._fn = None
    i = eqs.index("piston.slide")
    assert np.abs(eqs.residual(b)).max() <= 1e-12
    l1c = 0.3 * np.cos(q[0])
    assert np.isclose(a[i] - l1c, -(b[i] - l1c))   # mirrored about the crank pin's x


def test_fixed_sign_on_a_mode_blind_unknown_jumps_branch():
    """Motivating example: with the rocker *cosine* from the quadratic, the two assembly modes
    share its value at crank angle pi (mirror images about the ground line), so a fixed sign
    swaps modes there; solving the sine first keeps one mode over the whole revolution."""
    eqs = planar_coordinates(kinedyn.models.get("four-bar-driven").compile())
    i = eqs.index("rocker.angle")
    for sine_first, jumps in (((), True), (("rocker.angle",), False)):
        plan = make_plan(eqs, time_limit=60, sine_first=sine_first, track=False)
        q = eqs.q0.copy()
        rocker = []
        for th in np.linspace(np.pi / 2, 2.5 * np.pi, 200):
            q[0] = th
            q = plan.solve(q)
            assert np.abs(eqs.residual(q)).max() <= 1e-12
            rocker.append(q[i])
        step = np.abs(np.diff(np.unwrap(rocker))).max()
        assert (step > 0.5) == jumps


def test_automatic_branch_choice_picks_the_mode_telling_unknown():
    """Without ``sine_first`` the planner tries both orders of the rocker's s, c and keeps the
    one whose two roots are farther apart at the initial configuration: the four-bar's rocker
    sine (the mirror line pivot-crank pin is near horizontal, so the cosines nearly coincide);
    with fixed signs it then stays on one assembly mode over the whole revolution. An explicit
    list (even empty) overrides."""
    eqs = planar_coordinates(kinedyn.models.get("four-bar-driven").compile())
    i = eqs.index("rocker.angle")
    rocker = eqs.coordinates[i].symbol
    auto = make_plan(eqs, time_limit=60, track=False)
    forced = make_plan(eqs, time_limit=60, track=False, sine_first=())
    (blk,), (blk_forced,) = auto.blocks, forced.blocks
    assert blk.sine_first == {rocker} and blk_forced.sine_first == set()
    assert blk.separation > 2 * blk_forced.separation
    q = eqs.q0.copy()
    path = []
    for th in np.linspace(np.pi / 2, 2.5 * np.pi, 200):
        q[0] = th
        q = auto.solve(q)
        assert np.abs(eqs.residual(q)).max() <= 1e-12
        path.append(q[i])
    assert np.abs(np.diff(np.unwrap(path))).max() < 0.1


def test_tracking_compares_sine_cosine_pairs_where_the_roots_cross():
    """With the rocker cosine from the quadratic (``sine_first=()``) the two assembly modes
    share it at crank angle pi (mirror images about the ground line): their cosines cross
    there. One step from pi - 0.3 to pi + 0.02 lands where the other mode's cosine is the one
    nearer the previous value, so a root chosen by its value alone would swap modes; the plan
    compares (sine, cosine) pairs and stays on its mode."""
    eqs = planar_coordinates(kinedyn.models.get("four-bar-driven").compile())
    plan = make_plan(eqs, time_limit=60, sine_first=())
    i, j = eqs.index("rocker.angle"), eqs.index("coupler.angle")
    q = eqs.q0.copy()
    for th in np.linspace(q[0], np.pi - 0.3, 40):
        q[0] = th
        q = plan.solve(q)
    c_prev = np.cos(q[i])
    q[0] = np.pi + 0.02
    same = eqs.solve_newton(q)[0]
    mirror = q.copy()
    mirror[i], mirror[j] = -same[i], -same[j]     # the loop reflected about the ground line
    other = eqs.solve_newton(mirror)[0]
    assert abs(np.angle(np.exp(1j * (other[i] - same[i])))) > 0.1        # the other mode
    assert abs(np.cos(other[i]) - c_prev) < abs(np.cos(same[i]) - c_prev)
    sol = plan.solve(q)
    assert np.abs(eqs.residual(sol)).max() <= 1e-12
    assert abs(sol[i] - same[i]) <= 1e-9 and abs(sol[j] - same[j]) <= 1e-9


def _follow(eqs, plan, times):
    """Plan solution and warm-started Newton along the driven trajectory (max deviations)."""
    q = eqs.q0.copy()
    worst, dev = 0.0, 0.0
    for t in times:
        for i, f in eqs.inputs.items():
            q[i] = float(f.subs(T, t))
        sol = plan.solve(q, t)
        q = eqs.solve_newton(q, t)[0]
        worst = max(worst, np.abs(eqs.residual(sol, t)).max())
        d = sol - q
        ang = [k for k, c in enumerate(eqs.coordinates) if c.angle]
        d[ang] = (d[ang] + np.pi) % (2 * np.pi) - np.pi
        dev = max(dev, np.abs(d).max())
    return worst, dev


@pytest.mark.parametrize("driven, blocks", [("theta1", [("triangular", 2), ("triangular", 2)]),
                                            ("beta1", [("torn", 4)])])
def test_stephenson3_solution_flow(driven, blocks):
    """Thesis section 4.2.2 in joint coordinates q = (beta1..beta4, theta1), loops closed as
    in the thesis: driving theta1 solves the floating four-bar L_theta first (triangular, a
    quadratic) and leaves L_beta with beta2, beta3 known, triangular too (a quadratic) once
    its known coefficients are reduced (the plain basis times out) -- fully triangular, as
    Fig. 4.8; driving beta1 couples both loops (4 unknowns, no basis in 10 s), and the plan
    tears them as the thesis's Fig. 4.7: the secant on beta2 alone, with L_theta (beta3,
    theta1) and one closure of L_beta (beta4) in closed form inside. Each loop's equations are
    written in the frame of its middle body, so L_theta involves only (beta2, beta3, theta1).
    Along the thesis's trajectory the plan equals Newton and satisfies the constraints to
    round-off."""
    from kinedyn.models.sixbar import STEPHENSON3_CUT
    eqs = planar_coordinates(kinedyn.models.get(f"stephenson3-{driven}").compile(),
                             joint_angles=True, cut=STEPHENSON3_CUT)
    names = [c.name for c in eqs.coordinates]
    assert sorted(names) == sorted(f"joint.{n}" for n in ("beta1", "beta2", "beta3", "beta4", "theta1"))
    theta = [k for k, n in enumerate(eqs.constraint_names) if "theta_close" in n]
    for k in theta:
        assert {s.name for s in eqs.phi[k].free_symbols} == {"joint_beta2", "joint_beta3", "joint_theta1"}
    plan = make_plan(eqs, time_limit=10)
    assert [(b.kind, len(b.unknowns)) for b in plan.blocks] == blocks, plan.report()
    if driven == "beta1":
        torn = plan.blocks[0]
        assert names[torn.tear] == "joint.beta2"
        assert [sorted(names[i] for i in b.unknowns) for b in torn.inner] == [
            ["joint.beta3", "joint.theta1"], ["joint.beta4"]]
        assert "secant on joint.beta2 alone" in plan.report()[0]
        assert "as a whole: Groebner basis did not finish in 10 s" in plan.report()[0]
    worst, dev = _follow(eqs, plan, np.linspace(0, 1, 21))
    assert worst <= 1e-12 and dev <= 1e-10


def test_torn_block_falls_back_to_newton():
    """The beta1-driven Stephenson-III's torn block from a tear value 0.5 rad off: L_theta has
    no real solution there, the secant stops and Newton on the whole block, from where the
    call started, finds the configuration; the compiled secant does the same. Without
    tearing the block is Newton's. Along a 1-s run (h = 1 ms, tol 1e-12) the compiled secant
    gives Newton's positions, and from the third step on its first step, with the slope
    predicted from the last two steps' secants, converges: two closed-form evaluations per
    step (three with the plain second point)."""
    from kinedyn.models.sixbar import STEPHENSON3_CUT
    from kinedyn.symbolic.analysis import TriangularKinematics
    model = kinedyn.models.get("stephenson3-beta1").compile()
    eqs = planar_coordinates(model, joint_angles=True, cut=STEPHENSON3_CUT)
    plan = make_plan(eqs, time_limit=10)
    torn = plan.blocks[0]
    q0 = plan.solve(eqs.q0.copy(), 0.0)
    start = q0.copy()
    start[torn.tear] -= 0.5
    q = start.copy()
    assert plan._torn_block(torn, q, 0.0, 1e-12, 30) is None      # fell back
    assert np.abs(q - q0).max() <= 1e-10 and np.abs(eqs.residual(q, 0.0)).max() <= 1e-12
    kin = TriangularKinematics(model, plan=plan, joint_angles=True, cut=STEPHENSON3_CUT)
    qc = start.copy()
    module = kin.generated.module
    assert module.torn_0(qc, 0.0, 1e-12, 30, module.position_workspace()) >= 1
    assert np.abs(qc - q0).max() <= 1e-10
    kin.tol = 1e-12
    torn = kin.simulate(1.0, 1e-3)
    evaluations = torn.channel("iterations")
    assert torn.channel("residual.position").max() <= 1e-11
    assert evaluations[1] == 3 and (evaluations[3:] == 2).mean() >= 0.99
    kin.position_solver = "newton"
    newton = kin.simulate(1.0, 1e-3)
    for c in ("beta2", "beta3", "beta4", "theta1"):
        assert np.abs(torn.channel(f"coordinate.joint.{c}")
                      - newton.channel(f"coordinate.joint.{c}")).max() <= 1e-10
    assert [b.kind for b in make_plan(eqs, time_limit=10, tear=False).blocks] == ["newton"]


def test_reduced_retry_reported_when_it_also_times_out():
    """The Stephenson-III's L_beta with beta2, beta3 known (two known angles): with a time
    limit too short for either basis the block falls back to Newton (tearing off: it would tear
    the 2-unknown block), and the report says that the retry with the known coefficients
    reduced did not finish either."""
    from kinedyn.models.sixbar import STEPHENSON3_CUT
    eqs = planar_coordinates(kinedyn.models.get("stephenson3-theta1").compile(),
                             joint_angles=True, cut=STEPHENSON3_CUT)
    plan = make_plan(eqs, time_limit=0.2, use_cache=False, tear=False)
    assert plan.blocks[1].kind == "newton"
    assert plan.report()[1].endswith("with the known coefficients reduced: did not finish either")


def test_landing_gear_constraints_are_the_thesis_equations():
    """(4.26)-(4.29) with the thesis's theta_D = -(our drag-strut joint angle) and the data in
    drawing units: our closures at C (written in the main strut's frame, the middle of loop
    ABCD) rotated to the fuselage frame, and at E, are those four polynomials up to sign at
    random configurations; the two loops couple all four dependent angles (one 4-unknown
    block, SymPy's basis does not finish -- the digest's 30-min check), which the plan tears
    (secant on one angle), and it follows Newton through the retraction."""
    from kinedyn.models.sixbar import LANDING_GEAR_CUT
    model = kinedyn.models.landing_gear(driven=True, unit=1.0).compile()
    eqs = planar_coordinates(model, joint_angles=True, cut=LANDING_GEAR_CUT)
    order = [eqs.index(n) for n in ("joint.A", "joint.B", "joint.D", "joint.F", "cylinder.stroke")]
    names = list(eqs.constraint_names)
    rng = np.random.default_rng(3)
    for _ in range(5):
        A, B, D, F = rng.uniform(-np.pi, np.pi, 4)
        p = rng.uniform(150, 300)
        q = np.zeros(eqs.n_q)
        q[order] = A, B, -D, F, p
        r = dict(zip(names, eqs.residual(q)))
        cx, cy = r["joint C: x"], r["joint C: y"]
        upper = np.array([[np.cos(A), -np.sin(A)], [np.sin(A), np.cos(A)]]) @ [cx, cy]
        lower = np.array([r["joint E: x"], r["joint E: y"]])
        sA, cA, sB, cB, sD, cD, sF, cF = (np.sin(A), np.cos(A), np.sin(B), np.cos(B), np.sin(D),
                                          np.cos(D), np.sin(F), np.cos(F))
        thesis = np.array([sA * sB * p - cA * cB * p + 62 * sA - 42 * cA + 16.97 * sD + 6.08 * cD + 231,
                           sA * cB * p + cA * sB * p + 42 * sA + 62 * cA + 6.08 * sD - 16.97 * cD - 62,
                           178.4 * sA * sF - 178.4 * cA * cF - 212 * sA - 25 * cA - 164.4 * cD + 231,
                           178.4 * sA * cF + 178.4 * cA * sF + 25 * sA - 212 * cA - 164.4 * sD - 62])
        ours = np.r_[upper, lower]
        assert np.allclose(np.abs(ours), np.abs(thesis), atol=1e-9) and np.abs(thesis).min() > 1e-3
    plan = make_plan(eqs, time_limit=5)
    assert [(b.kind, len(b.unknowns)) for b in plan.blocks] == [("torn", 4)]
    assert "did not finish in 5 s" in plan.report()[0]
    # torn where the inner roots lie farthest apart at the start: at D (1.36), not at B
    # (0.011, where the secant failed in a third of the steps)
    assert [c.name for c in eqs.coordinates][plan.blocks[0].tear] == "joint.D"
    worst, dev = _follow(eqs, plan, np.linspace(0, 1, 11))
    assert worst <= 1e-9 and dev <= 1e-10


def test_redundant_constraints_are_named_as_such():
    """The parallelogram's third bar makes one of its closure equations redundant: the error
    says so (it used to count degrees of freedom and blame the 'drivers' of a free model)."""
    from kinedyn.errors import ModelError
    with pytest.raises(ModelError, match=r"parallelogram: 1 of its \d+ constraints in symbolic "
                                         r"coordinates are redundant .*\(rank \d+"):
        planar_coordinates(kinedyn.models.get("parallelogram").compile())
