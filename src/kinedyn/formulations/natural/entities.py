"""Linear expressions of natural coordinates ("entities").

Every geometric quantity natural coordinates need - a body point, a body vector, a frame
direction, the difference of two points - is an *affine* function of the coordinate blocks:

    e = c + sum_b (alpha_b I + beta_b J) x_b

where ``x_b`` is a coordinate block (a basic point or unit vector, ``dim`` consecutive entries of
q), ``J`` the planar rotation by +90 deg (``beta`` is only ever non-zero in 2-D, where a body's
second axis is ``J`` times its first) and ``c`` a constant (ground geometry). Constraint
equations are then at most cubic in q and every Jacobian row is a short sparse combination of
entity gradients.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

J2 = np.array([[0.0, -1.0], [1.0, 0.0]])


@dataclass
class Entity:
    """``const + sum_b (alpha I + beta J) x_b`` with terms ``{block: (alpha, beta)}``."""
    const: np.ndarray
    terms: dict[int, tuple[float, float]] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return len(self.const)

    @staticmethod
    def constant(value) -> "Entity":
        return Entity(np.array(value, float))

    @staticmethod
    def block(b: int, dim: int) -> "Entity":
        return Entity(np.zeros(dim), {b: (1.0, 0.0)})

    def is_constant(self) -> bool:
        return not self.terms

    def __add__(self, other: "Entity") -> "Entity":
        terms = dict(self.terms)
        for b, (a, c) in other.terms.items():
            a0, c0 = terms.get(b, (0.0, 0.0))
            terms[b] = (a0 + a, c0 + c)
        return Entity(self.const + other.const, _clean(terms))

    def __neg__(self) -> "Entity":
        return self * -1.0

    def __sub__(self, other: "Entity") -> "Entity":
        return self + (-other)

    def __mul__(self, s: float) -> "Entity":
        return Entity(self.const * s, _clean({b: (a * s, c * s) for b, (a, c) in self.terms.items()}))

    __rmul__ = __mul__

    def perp(self) -> "Entity":
        """``J e`` (2-D only): J(aI + bJ) = -b I + a J."""
        return Entity(J2 @ self.const, {b: (-c, a) for b, (a, c) in self.terms.items()})

    def value(self, q: np.ndarray) -> np.ndarray:
        d = self.dim
        out = self.const.copy()
        for b, (a, c) in self.terms.items():
            x = q[d * b:d * b + d]
            out += a * x
            if c:
                out += c * (J2 @ x)
        return out

    def key(self) -> tuple:
        """Hashable identity (rounded), to share equal entities and drop duplicate equations."""
        return (tuple(np.round(self.const, 12)),
                tuple(sorted((b, round(a, 12), round(c, 12)) for b, (a, c) in self.terms.items())))


def _clean(terms):
    return {b: (a, c) for b, (a, c) in terms.items() if abs(a) > 1e-15 or abs(c) > 1e-15}


def combination(coeffs, elements: list[Entity]) -> Entity:
    """``sum_i coeffs[i] * elements[i]``."""
    out = Entity(np.zeros(elements[0].dim))
    for c, e in zip(coeffs, elements):
        if c != 0.0:
            out = out + e * float(c)
    return out
