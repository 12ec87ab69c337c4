"""Symbolic pipeline (Uchida thesis): constraints in joint/mixed coordinates, sine-cosine
polynomialisation, pure-lex Groebner bases, triangular and block-triangular position solvers,
generated kernels, embedding.

>>> import kinedyn
>>> from kinedyn.symbolic import planar_coordinates, make_plan
>>> eqs = planar_coordinates(kinedyn.models.get("slider-crank-driven").compile())
>>> make_plan(eqs).fully_triangular
True
"""
from .equations import ConstraintSystem, Coordinate, planar_coordinates
from .groebner import groebner_basis, polynomialise
from .rational import rationalise
from .triangular import Plan, make_plan

__all__ = ["ConstraintSystem", "Coordinate", "planar_coordinates", "groebner_basis",
           "polynomialise", "rationalise", "Plan", "make_plan"]
