"""Coordinate numbering of a tree of joint coordinates (sparse-relative paper, section 3).

The mass matrix of relative coordinates couples two coordinates exactly when one lies below the
other in the tree (a(q)_ij != 0 iff i is an ancestor of j or j of i), so its pattern, and the
work of a sparse factorisation, depend only on how the coordinates are numbered:

* ``tree``   breadth-first, as the spanning tree is grown (coordinates of one depth together);
* ``branch`` the paper's rule: the root, then sequentially along the body of each branch
  (depth-first pre-order), giving the bordered block pattern of Figs. 3(b) and 6(a);
* ``rcm``    reverse Cuthill-McKee (SciPy) on the coupling graph: minimum bandwidth.

Each returns ``coord`` with ``coord[link] = coordinate number``; links are in base-to-tip order
(``parent[k] < k``).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ..errors import UnknownNameError

NUMBERINGS = ("branch", "tree", "rcm")


def ancestors(parent, k: int) -> list[int]:
    out = []
    while k >= 0:
        out.append(k)
        k = int(parent[k])
    return out


def coupling(parent) -> np.ndarray:
    """(n, n) booleans: the non-zero pattern of the mass matrix in link order."""
    n = len(parent)
    C = np.zeros((n, n), bool)
    for k in range(n):
        for a in ancestors(parent, k):
            C[k, a] = C[a, k] = True
    return C


def number_coordinates(parent, method: str = "branch") -> np.ndarray:
    parent = np.asarray(parent, np.int64)
    n = len(parent)
    if method == "tree":
        return np.arange(n, dtype=np.int64)
    if method == "branch":
        children = [[] for _ in range(n)]
        roots = []
        for k in range(n):
            (children[parent[k]] if parent[k] >= 0 else roots).append(k)
        order, stack = [], list(reversed(roots))
        while stack:                                   # depth-first pre-order
            k = stack.pop()
            order.append(k)
            stack.extend(reversed(children[k]))
        coord = np.empty(n, np.int64)
        coord[np.array(order, np.int64)] = np.arange(n)
        return coord
    if method == "rcm":
        perm = reverse_cuthill_mckee(sps.csr_matrix(coupling(parent)), symmetric_mode=True)
        coord = np.empty(n, np.int64)
        coord[perm] = np.arange(n)
        return coord
    raise UnknownNameError("coordinate numbering", method, NUMBERINGS)


def bandwidth(pattern: np.ndarray) -> int:
    i, j = np.nonzero(pattern)
    return int(np.abs(i - j).max()) if len(i) else 0
