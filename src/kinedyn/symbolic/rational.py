"""Rationalisation of floating-point model data before Groebner bases (thesis section 3.2.2).

Exact arithmetic needs exact coefficients. As Maple's ``convert/rational`` does for the thesis,
a float with few digits becomes its exact decimal fraction, any other number the rational with
the smallest denominator within a tolerance -- read as the exact measurement of a physically
indistinguishable mechanism (e.g. sqrt(3) ~ 362/209 for the 3-RRR robot).
"""
from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

from ..errors import ModelError, check_number


def rationalise(x: float, tol: float = 1e-12) -> sp.Rational:
    """The rational with the smallest denominator within ``tol`` (absolute) of ``x``.

    Exact decimals (``0.3``, ``2.12``) come back exactly (3/10, 53/25); other numbers get the
    smallest denominator meeting the tolerance (Stern-Brocot search via continued fractions).
    """
    if not math.isfinite(x):
        raise ModelError(f"cannot rationalise the non-finite number {x!r}")
    check_number("tol", tol)  # (a NaN tolerance is met by any fraction; a negative one never)
    scale = max(1.0, abs(x))
    for digits in range(0, 13):  # short decimals first: 0.3 -> 3/10, not 0.29999...
        f = Fraction(round(x, digits)).limit_denominator(10 ** digits)
        if abs(float(f) - x) <= 4 * math.ulp(x) + 1e-15 * scale:
            return sp.Rational(f.numerator, f.denominator)
    hi = 1
    while abs(float(Fraction(x).limit_denominator(hi)) - x) > tol:
        hi *= 2
    lo = hi // 2  # smallest denominator bound meeting tol (the error falls with the bound)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if abs(float(Fraction(x).limit_denominator(mid)) - x) > tol:
            lo = mid
        else:
            hi = mid
    f = Fraction(x).limit_denominator(hi)
    return sp.Rational(f.numerator, f.denominator)


def rationalise_expr(expr: sp.Expr, tol: float = 1e-12) -> sp.Expr:
    """Every Float in ``expr`` replaced by :func:`rationalise` of it."""
    floats = {f: rationalise(float(f), tol) for f in expr.atoms(sp.Float)}
    return expr.xreplace(floats) if floats else expr
