"""Thesis chapter 2-4 algebra: the bases and triangular systems stated in the text."""
import math

import numpy as np
import sympy as sp

from kinedyn.symbolic.triangular import unclamp as _unclamp


def unclamp(e):
    """The square roots' argument without the max(d, 0) guard."""
    return _unclamp(e)

from kinedyn.symbolic.groebner import groebner_basis, polynomialise
from kinedyn.symbolic.rational import rationalise
from kinedyn.symbolic.triangular import extract_triangular

R = sp.Rational


def syms(names):
    return sp.symbols(names, real=True)


def same_basis(got, expected):
    """Equal as sets up to a nonzero rational factor per polynomial."""
    got = [sp.Poly(g, *sorted(g.free_symbols, key=str)).monic().as_expr() for g in got]
    exp = [sp.Poly(e, *sorted(e.free_symbols, key=str)).monic().as_expr() for e in expected]
    return sorted(map(str, got)) == sorted(map(str, exp))


def test_rationalise_thesis_examples():
    assert rationalise(0.3) == R(3, 10) and rationalise(2.12) == R(53, 25)
    assert rationalise(-1.374) == R(-687, 500)          # Tsai's data converted exactly (4.34)
    assert rationalise(math.sqrt(3), 1e-5) == R(362, 209)  # 3-RRR, section 4.2.4
    r = rationalise(math.pi, 1e-7)
    assert abs(float(r) - math.pi) <= 1e-7 and r.q < 40000  # 355/113 territory, not huge


def test_buchberger_example_H():
    """(2.57)-(2.77): plex x > y basis {8x - 6y + 43, 2y^2 - 17y + 8}."""
    x, y = syms("x y")
    res = groebner_basis([4 * x**2 * y + 9 * x * y + 4 * x - 7 * y - 4, x * y - y + 3], [x, y], 30)
    assert same_basis(res.basis, [8 * x - 6 * y + 43, 2 * y**2 - 17 * y + 8])
    steps = extract_triangular(res.basis, [x, y])
    assert [s.var for s in steps] == [y, x] and [s.degree for s in steps] == [2, 1]
    roots = sorted(float(r) for r in steps[0].roots())
    assert np.allclose(roots, sorted(np.roots([2, -17, 8])))


def test_ellipsoid_plex_basis_and_real_solutions():
    """(2.79): univariate quartic in z; real solutions (1, -1, 4) and (4, 2, -4)."""
    x, y, z = syms("x y z")
    F = [x**2 + y**2 + z**2 - 8 * x + 2 * y - 8, 3 * x**2 - 2 * x * y - y**2 + 2 * y * z + 2 * z - 4,
         2 * x - 10 * y - 3 * z]
    res = groebner_basis(F, [x, y, z], 30)
    expected = [34953 * z**4 - 28960 * z**3 - 508448 * z**2 + 463360 * z - 812800,
                272676096 * y + 803919 * z**3 - 11291792 * z**2 + 89390832 * z + 44330624,
                272676096 * x + 4019595 * z**3 - 56458960 * z**2 + 37940016 * z + 221653120]
    assert same_basis(res.basis, expected)
    steps = extract_triangular(res.basis, [x, y, z])
    assert isinstance(steps, str) and "degree 4" in steps  # quartic: not closed-form here


def slider_crank_system():
    """(3.49)-(3.52) with l1 = 3/10, l2 = 2/5."""
    s, st, ct, sb, cb = syms("s s_t c_t s_b c_b")
    F = [R(3, 10) * ct + R(2, 5) * sb - s, R(3, 10) * st - R(2, 5) * cb,
         st**2 + ct**2 - 1, sb**2 + cb**2 - 1]
    return F, (s, st, ct, sb, cb)


def test_slider_crank_bases_and_triangular_systems():
    F, (s, st, ct, sb, cb) = slider_crank_system()
    # (3.53), order s > ct > st > cb > sb, giving Delta3 (3.54)
    b = groebner_basis(F, [s, ct, st, cb, sb], 30).basis
    assert same_basis(b, [sb**2 + cb**2 - 1, 3 * st - 4 * cb, 9 * ct**2 - 16 * sb**2 + 7,
                          10 * s - 3 * ct - 4 * sb])
    steps = {x.var: x for x in extract_triangular(b, [s, ct, st])}
    assert sp.simplify(steps[st].expr - R(4, 3) * cb) == 0
    ct_roots = {sp.simplify(unclamp(r)) for r in steps[ct].roots()}
    assert ct_roots == {sp.sqrt(16 * sb**2 - 7) / 3, -sp.sqrt(16 * sb**2 - 7) / 3}
    assert sp.simplify(steps[s].expr - (R(3, 10) * ct + R(2, 5) * sb)) == 0
    # Delta4 (3.56), order s > sb > cb > st > ct: cb = 3/4 st, sb = +-1/4 sqrt(9 ct^2 + 7)
    b = groebner_basis(F, [s, sb, cb, st, ct], 30).basis
    steps = {x.var: x for x in extract_triangular(b, [s, sb, cb])}
    assert sp.simplify(steps[cb].expr - R(3, 4) * st) == 0
    assert {sp.simplify(unclamp(r)) for r in steps[sb].roots()} == {sp.sqrt(9 * ct**2 + 7) / 4,
                                                           -sp.sqrt(9 * ct**2 + 7) / 4}
    assert sp.simplify(steps[s].expr - (R(3, 10) * ct + R(2, 5) * sb)) == 0
    # Delta5 (3.58), order sb > cb > st > ct > s (qi = s): ct = (100 s^2 - 7)/(60 s)
    b = groebner_basis(F, [sb, cb, st, ct, s], 30).basis
    steps = {x.var: x for x in extract_triangular(b, [sb, cb, st, ct])}
    assert sp.simplify(steps[ct].expr - (100 * s**2 - 7) / (60 * s)) == 0
    assert steps[st].degree == 2  # from the identity: the branch is elbow up/down
    assert sp.simplify(steps[cb].expr - R(3, 4) * st) == 0
    assert sp.simplify(steps[sb].expr - (R(-3, 4) * ct + R(5, 2) * s)) == 0


def four_bar_equations(b0=0):
    """Spatial four-bar (4.12)-(4.14), Lc = 1.5, Lr = 4, Lf = 2, Lg = 5."""
    b1, b2, b3, b4 = syms("b1 b2 b3 b4")
    Lc, Lr, Lf, Lg = R(3, 2), 4, 2, 5
    s0, c0 = sp.sin(b0), sp.cos(b0)
    phi = [Lc * sp.sin(b1) - Lr * (s0 * sp.cos(b3) * sp.cos(b4) + c0 * sp.sin(b4)),
           Lc * sp.cos(b1) - Lf * sp.cos(b2) - Lr * s0 * sp.sin(b2) * sp.sin(b4)
           + Lr * sp.cos(b4) * (c0 * sp.sin(b2) * sp.cos(b3) - sp.cos(b2) * sp.sin(b3)),
           Lg - Lf * sp.sin(b2) + Lr * s0 * sp.cos(b2) * sp.sin(b4)
           - Lr * sp.cos(b4) * (c0 * sp.cos(b2) * sp.cos(b3) + sp.sin(b2) * sp.sin(b3))]
    return phi, (b1, b2, b3, b4)


def test_spatial_four_bar_beta4_first_matches_4_20():
    """Order s2 > c2 > s3 > c3 > s4 > c4 (> s1 > c1) gives (4.19) and the system (4.20)."""
    phi, (b1, b2, b3, b4) = four_bar_equations()
    P = polynomialise(phi, [b2, b3, b4], [], [b1])
    s1, c1 = P.trig[b1]
    (s2, c2), (s3, c3), (s4, c4) = P.trig[b2], P.trig[b3], P.trig[b4]
    # (4.16) also carries s1^2 + c1^2 - 1 for the driven angle
    res = groebner_basis(P.polys + (s1**2 + c1**2 - 1,), [s2, c2, s3, c3, s4, c4, s1, c1], 60)
    assert any(sp.expand(g - (9 * c1**2 - 64 * c4**2 + 55)) == 0 or
               sp.expand(g + (9 * c1**2 - 64 * c4**2 + 55)) == 0 for g in res.basis)
    steps = extract_triangular(res.basis, [s2, c2, s3, c3, s4, c4])
    by = {x.var: x for x in steps}
    assert [x.var for x in steps] == [c4, s4, c3, s3, c2, s2]
    z1 = 9 * c1**2 + 55
    assert {sp.simplify(unclamp(r)) for r in by[c4].roots()} == {sp.sqrt(z1) / 8, -sp.sqrt(z1) / 8}
    assert sp.simplify(by[s4].expr - R(3, 8) * s1) == 0
    assert [x.degree for x in steps] == [2, 1, 2, 1, 1, 1]   # two square roots (Table 4.1)
    # every branch satisfies (4.12)-(4.14) over the crank revolution (4 sign combinations)
    f = sp.lambdify([b1, b2, b3, b4], phi)
    for sign4 in (1, -1):
        for sign3 in (1, -1):
            by[c4].branch, by[c3].branch = sign4, sign3
            for beta1 in np.linspace(0, 2 * np.pi, 37):
                val = {s1: np.sin(beta1), c1: np.cos(beta1)}
                for x in steps:
                    val[x.var] = float(x.expr.evalf(subs=val))
                ang = [math.atan2(val[s], val[c]) for s, c in ((s2, c2), (s3, c3), (s4, c4))]
                assert np.abs(f(beta1, *ang)).max() <= 1e-13


def test_spatial_four_bar_beta2_first_quadratic_in_c2():
    """Order s4 > c4 > s3 > c3 > s2 > c2 (4.17): c2 from a quadratic, as (4.18)."""
    phi, (b1, b2, b3, b4) = four_bar_equations()
    P = polynomialise(phi, [b4, b3, b2], [], [b1])
    s1, c1 = P.trig[b1]
    res = groebner_basis(P.polys + (s1**2 + c1**2 - 1,), list(P.unknowns) + [s1, c1], 60)
    steps = extract_triangular(res.basis, P.unknowns)
    c2 = P.trig[b2][1]
    assert steps[0].var == c2 and steps[0].degree == 2
    # (4.18): c2 = (183/8 c1 +- 10 sqrt(9 c1^2 + 100 - 3721/64)) / (9 c1^2 + 100)
    z1 = 9 * c1**2 + 100
    expected = {(R(183, 8) * c1 + sgn * 10 * sp.sqrt(z1 - R(3721, 64))) / z1 for sgn in (1, -1)}
    for beta1 in (0.3, 1.7, 4.0):
        got = sorted(float(unclamp(r).subs(c1, math.cos(beta1))) for r in steps[0].roots())
        exp = sorted(float(e.subs(c1, math.cos(beta1))) for e in expected)
        assert np.allclose(got, exp, atol=1e-14)


def test_time_limit_gives_clear_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    phi, (b1, b2, b3, b4) = four_bar_equations(b0=sp.Rational(3, 10))  # beta0 != 0: harder
    P = polynomialise(phi, [b2, b3, b4], [], [b1], tol=1e-6)
    res = groebner_basis(P.polys, P.unknowns + P.knowns, time_limit=0.05)
    assert not res.ok and res.seconds < 5
    again = groebner_basis(P.polys, P.unknowns + P.knowns, time_limit=0.05)
    assert again.cached and not again.ok   # the time-out is remembered for this limit


def test_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    F, gens = slider_crank_system()
    a = groebner_basis(F, gens, 30)
    b = groebner_basis(F, gens, 30)
    assert not a.cached and b.cached and a.key == b.key and a.basis == b.basis
    assert len(list(tmp_path.rglob("*.json"))) == 1
