"""Mobility from the constraint Jacobian: the instantaneous degrees of freedom.

Gruebler-Kutzbach (:class:`kinedyn.topology.Mobility`) counts equations and is blind to
geometry: a parallelogram with a third parallel crank counts 0 but moves with 1. The dimension
of the null space of ``phi_q`` at an assembled configuration, ``n_q - rank(phi_q)``, is the true
(instantaneous) mobility; the difference to Gruebler's count is the number of redundant
constraints (Group Equations paper, section 2: redundant equations of the global formulation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AssemblyError
from ..formulations.natural.layout import NaturalLayout
from .analysis import formulation_for
from .assembly import POSE_TIME, assemble


@dataclass(frozen=True)
class JacobianMobility:
    """``dof = n_q - rank`` of ``phi_q`` (drivers included) at the assembled configuration.

    ``assembled`` is False when the initial configuration could not be assembled and the rank
    was taken at the initial guess. For the mechanism's own mobility, compile the system
    without its drivers (:func:`mechanism_mobility`).
    """
    n_q: int
    n_c: int
    rank: int
    dof: int
    assembled: bool


#: Most natural coordinates whose Jacobian rank is taken by default: a dense SVD, 13 s at 4002
#: (a 2000-link chain, `kinedyn info` in all 21 s), 40 s at 6002: the cube of the size.
MAX_COORDINATES = 4096


class TooLargeForRank(ValueError):
    """The model has more coordinates than the rank check takes (``n_q``, ``limit``)."""

    def __init__(self, n_q: int, limit: int):
        self.n_q, self.limit = n_q, limit
        super().__init__(f"{n_q} natural coordinates, more than the {limit} a dense SVD of the "
                         "constraint Jacobian takes in seconds")


def jacobian_mobility(model, t: float = 0.0, tol: float = 1e-9,
                      max_coordinates: int | None = MAX_COORDINATES) -> JacobianMobility:
    """Instantaneous mobility of a compiled model (natural coordinates) at time ``t``; a
    :class:`TooLargeForRank` beyond ``max_coordinates`` (None: no limit)."""
    if max_coordinates is not None:  # (the layout alone: the formulation's mass is dense)
        n_q = NaturalLayout(model).n_q
        if n_q > max_coordinates:
            raise TooLargeForRank(n_q, max_coordinates)
    f = formulation_for(model)
    q, assembled = f.q0, True
    if f.n_c and np.abs(f.reference_phi(q, t)).max() > 1e-10:  # (the NumPy reference: no JIT)
        try:
            q = assemble(f, f.q0, t, pose_time=POSE_TIME)
        except AssemblyError:
            assembled = False
    J = f.reference_phi_q(q, t)
    rank = _rank(J, tol)
    return JacobianMobility(f.n_q, f.n_c, rank, f.n_q - rank, assembled)


def mechanism_mobility(system, parameters=None, t: float = 0.0,
                       max_coordinates: int | None = MAX_COORDINATES) -> JacobianMobility:
    """Jacobian mobility of a :class:`~kinedyn.model.System` with its drivers removed."""
    free = system.copy()
    free.drivers = []
    return jacobian_mobility(free.compile(parameters), t, max_coordinates=max_coordinates)


def _rank(J: np.ndarray, tol: float) -> int:
    if J.size == 0:
        return 0
    s = np.linalg.svd(J, compute_uv=False)
    return int(np.sum(s > tol * max(1.0, s[0])))
