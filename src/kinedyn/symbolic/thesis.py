"""Constraint systems written directly from the thesis's equations (for mechanisms whose
geometry survives only as equations, or spatial ones the planar derivation does not cover)."""
from __future__ import annotations

import numpy as np
import sympy as sp

from .equations import T, ConstraintSystem, Coordinate


def spatial_four_bar(beta0: float = 0.0, speed: float = 2 * np.pi, upright: bool = True) -> ConstraintSystem:
    """Spatial four-bar, eqs. (4.12)-(4.14): crank Lc = 1.5, rod Lr = 4, follower Lf = 2,
    ground Lg = 5; crank angle b1 = speed * t driven (Table 4.3 run: 2 pi t); b2 follower,
    b3, b4 universal-joint angles; ``beta0`` the follower twist. ``upright`` picks the
    assembly of Fig. 4.3 (follower above the XY-plane)."""
    b = [sp.Symbol(f"b{k}", real=True) for k in range(1, 5)]
    b1, b2, b3, b4 = b
    Lc, Lr, Lf, Lg = sp.Rational(3, 2), 4, 2, 5
    s0, c0 = sp.sin(sp.nsimplify(beta0)), sp.cos(sp.nsimplify(beta0))
    phi = (Lc * sp.sin(b1) - Lr * (s0 * sp.cos(b3) * sp.cos(b4) + c0 * sp.sin(b4)),
           Lc * sp.cos(b1) - Lf * sp.cos(b2) - Lr * s0 * sp.sin(b2) * sp.sin(b4)
           + Lr * sp.cos(b4) * (c0 * sp.sin(b2) * sp.cos(b3) - sp.cos(b2) * sp.sin(b3)),
           Lg - Lf * sp.sin(b2) + Lr * s0 * sp.cos(b2) * sp.sin(b4)
           - Lr * sp.cos(b4) * (c0 * sp.cos(b2) * sp.cos(b3) + sp.sin(b2) * sp.sin(b3)))
    coords = tuple(Coordinate(f"beta{k}", s, True) for k, s in enumerate(b, 1))
    system = ConstraintSystem("spatial-four-bar", coords, phi, ("(4.12)", "(4.13)", "(4.14)"),
                              (0,), {0: sp.nsimplify(speed) * T if speed != 2 * np.pi else 2 * sp.pi * T})
    # assemble from a guess in the wanted mode (follower up: sin b2 > 0 side)
    guess = np.array([0.0, 1.2 if upright else -1.9, 0.3, 0.0])
    system.q0 = system.solve_newton(guess)[0]
    return system
